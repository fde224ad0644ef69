// loops.cpp - The hand-written peers (loops.h), plain loops the compiler vectorizes as it can.
// Built twice by bench/CMakeLists.txt with PTO_PEER_NS = strict or fast (the latter -ffast-math).
#include "peers/loops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#ifndef PTO_PEER_NS
#error "PTO_PEER_NS must name the peer variant (strict or fast)"
#endif

namespace peer::PTO_PEER_NS {

namespace {

float bf16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN, by its bits: -ffast-math folds std::isnan to false
    return static_cast<uint16_t>((u >> 16) | 0x40); // stay a (quiet) NaN
  u += 0x7fffu + ((u >> 16) & 1u);                  // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

} // namespace

void softmax_fp32(const float *x, float *y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float m = std::numeric_limits<float>::lowest(); // no infinity under -ffast-math
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, xr[c]);
    float s = 0;
    for (int64_t c = 0; c < cols; ++c) {
      float e = std::exp(xr[c] - m);
      yr[c] = e;
      s += e;
    }
    float inv = 1.0f / s;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] *= inv;
  }
}

void softmax_bf16(const uint16_t *x, uint16_t *y, int64_t rows, int64_t cols) {
  std::vector<float> e(static_cast<size_t>(cols)); // one fp32 row, so exp runs once per element
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t *xr = x + r * cols;
    uint16_t *yr = y + r * cols;
    float m = std::numeric_limits<float>::lowest(); // no infinity under -ffast-math
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, bf16_to_float(xr[c]));
    float s = 0;
    for (int64_t c = 0; c < cols; ++c) {
      float v = std::exp(bf16_to_float(xr[c]) - m);
      e[static_cast<size_t>(c)] = v;
      s += v;
    }
    float inv = 1.0f / s;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = float_to_bf16(e[static_cast<size_t>(c)] * inv);
  }
}

void fused_chain(const float *x, float *y, int64_t n, float a, float b, float c) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = std::exp(x[i] * a + b) - x[i] / c;
}

void row_sum(const float *x, float *y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    for (int64_t c = 0; c < cols; ++c)
      s += x[r * cols + c];
    y[r] = s;
  }
}

void row_amax(const float *x, float *y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float m = std::numeric_limits<float>::lowest(); // no infinity under -ffast-math
    for (int64_t c = 0; c < cols; ++c)
      m = std::max(m, x[r * cols + c]);
    y[r] = m;
  }
}

void fused_chain_bf16(const uint16_t *x, uint16_t *y, int64_t n, float a, float b, float c) {
  for (int64_t i = 0; i < n; ++i) {
    float v = bf16_to_float(x[i]);
    y[i] = float_to_bf16(std::exp(v * a + b) - v / c);
  }
}

void copy(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i];
}

void scale(const float *x, float *y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * s;
}

void sum_inputs(const float *const *xs, int n_inputs, float *y, int64_t n) {
  // Chunks of 2048 floats (8 KiB) keep the partial sum in L1 while the inputs stream past.
  constexpr int64_t kChunk = 2048;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    int64_t len = std::min(kChunk, n - i0);
    float *yc = y + i0;
    const float *x0 = xs[0] + i0;
    for (int64_t i = 0; i < len; ++i)
      yc[i] = x0[i];
    for (int p = 1; p < n_inputs; ++p) {
      const float *xp = xs[p] + i0;
      for (int64_t i = 0; i < len; ++i)
        yc[i] += xp[i];
    }
  }
}

} // namespace peer::PTO_PEER_NS
