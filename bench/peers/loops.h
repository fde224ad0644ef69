// loops.h - The peers of the bench suites: what a competent engineer writes by hand in plain C++
// (no intrinsics, no libraries). loops.cpp is compiled twice with -O3 -march=native: once as
// written (peer::strict, IEEE semantics: GCC keeps the float reductions and std::exp scalar) and
// once with -ffast-math (peer::fast: vectorized reductions, glibc libmvec expf).
#pragma once

#include <cstdint>

namespace peer {

#define PTO_PEER_DECLARE                                                                           \
  /** Row softmax of x [rows, cols] into y: max pass, exp pass (std::exp, sum), scale pass. */     \
  void softmax_fp32(const float *x, float *y, int64_t rows, int64_t cols);                         \
  /** The same on bf16 storage (raw uint16_t bits), computed in fp32, rounded to nearest even. */  \
  void softmax_bf16(const uint16_t *x, uint16_t *y, int64_t rows, int64_t cols);                   \
  /** y = exp(x * a + b) - x / c over n elements. */                                               \
  void fused_chain(const float *x, float *y, int64_t n, float a, float b, float c);                \
  /** y = x over n elements (STREAM copy). */                                                      \
  void copy(const float *x, float *y, int64_t n);                                                  \
  /** y = x * s over n elements (STREAM scale). */                                                 \
  void scale(const float *x, float *y, int64_t n, float s);                                        \
  /** y = sum over p < n_inputs of xs[p], n elements each (the allreduce's local sum). */          \
  void sum_inputs(const float *const *xs, int n_inputs, float *y, int64_t n);                      \
  /** y[r] = sum of row r of x [rows, cols]. */                                                    \
  void row_sum(const float *x, float *y, int64_t rows, int64_t cols);                              \
  /** y[r] = max of row r of x [rows, cols] (std::max: NaN handling as the compiler makes it). */  \
  void row_amax(const float *x, float *y, int64_t rows, int64_t cols);                             \
  /** fused_chain on bf16 storage (raw bits), computed in fp32, rounded to nearest even. */        \
  void fused_chain_bf16(const uint16_t *x, uint16_t *y, int64_t n, float a, float b, float c);

// The same declarations in both namespaces: the two builds of loops.cpp must not share symbols.
namespace strict {
PTO_PEER_DECLARE
}
namespace fast {
PTO_PEER_DECLARE
}
#undef PTO_PEER_DECLARE

} // namespace peer
