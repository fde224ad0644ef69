// onednn.h - oneDNN (Debian libdnnl-dev) as bench/compare's library peer: one primitive bound to
// its buffers (row-major, as ptojit's tensors), run on a chosen number of OpenMP threads.
// oneDNN picks its own kernels for the CPU (ONEDNN_MAX_CPU_ISA caps them, as documented by
// oneDNN); isa() names what it picked.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace peer::onednn {

class Op {
public:
  /// Row softmax of x [rows, cols] into y; fp32, or bf16 (raw bits) in and out.
  static Op softmax(bool bf16, int64_t rows, int64_t cols, const void *x, void *y);
  /// Row layer norm of fp32 x [rows, cols] into y (no scale or shift), epsilon `eps`.
  static Op layer_norm(int64_t rows, int64_t cols, const float *x, float *y, float eps);
  /// c [m, n] fp32 = a [m, k] @ b [k, n]; a and b fp32, or bf16 (raw bits).
  static Op matmul(bool bf16, int64_t m, int64_t k, int64_t n, const void *a, const void *b,
                   float *c);
  /// z = x + y over fp32 [rows, cols] (the binary add primitive).
  static Op add(int64_t rows, int64_t cols, const float *x, const float *y, float *z);

  /// Executes once on `threads` OpenMP threads and waits for it.
  void run(int threads) const;

  struct Impl;

private:
  std::shared_ptr<Impl> impl_;
};

/// The instruction set oneDNN dispatches to on this CPU ("avx512_core_amx", ...).
std::string isa();

} // namespace peer::onednn
