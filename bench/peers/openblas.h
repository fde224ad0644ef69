// openblas.h - OpenBLAS (Debian libopenblas-dev) sgemm as bench/compare's fp32 GEMM peer.
// OpenBLAS chooses its kernels when it loads, from OPENBLAS_CORETYPE or its own CPU detection;
// bench/compare probes the candidates in child processes and keeps the fastest correct one.
#pragma once

#include <cstdint>
#include <string>

namespace peer::openblas {

/// c [m, n] = a [m, k] @ b [k, n], row-major fp32, on `threads` threads.
void sgemm(int64_t m, int64_t k, int64_t n, const float *a, const float *b, float *c, int threads);

/// The core type OpenBLAS runs its kernels for ("SkylakeX", "Haswell", ...).
std::string core();

} // namespace peer::openblas
