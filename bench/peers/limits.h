// limits.h - The physical limits bench/compare measures in its own run: STREAM-style memory
// bandwidth (read, copy, triad) on 1 or more threads, and the per-core peak of the vector
// multiply-adds (fp32 FMA on zmm and ymm, bf16 vdpbf16ps), each only where the CPU has it
// (checked at run time: limits.cpp is built with -march=native, its AVX-512 code behind target
// attributes).
#pragma once

#include <cstdint>

namespace peer::limits {

/// Returns the sum of x[0, n), split over `threads` threads (the STREAM "read" kernel).
float read(const float *x, int64_t n, int threads);
/// y = x over n elements on `threads` threads (STREAM copy).
void copy(const float *x, float *y, int64_t n, int threads);
/// a = b + s * c over n elements on `threads` threads (STREAM triad).
void triad(float *a, const float *b, const float *c, float s, int64_t n, int threads);

/// Which peaks this CPU can run (cpuid).
bool has_avx512f();
bool has_avx2_fma();
bool has_avx512_bf16();
/// FLOP/s of one core running independent fp32 FMAs on zmm (16 lanes) or ymm (8 lanes), and
/// bf16 vdpbf16ps on zmm (64 FLOP per instruction); 0 where the CPU lacks the instructions.
/// Each runs about `seconds`.
double fma_peak_zmm(double seconds);
double fma_peak_ymm(double seconds);
double dpbf16_peak_zmm(double seconds);

} // namespace peer::limits
