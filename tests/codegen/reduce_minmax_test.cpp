// reduce_minmax_test.cpp - Row amax/amin of fused groups accumulate in several independent
// vector chains (lower_fused.cpp, kMinMaxAccs) combined once per row: the result must be the
// interpreter's, bit for bit, with NaN anywhere in the row (the unrolled part, the one-vector
// remainder, the masked tail), signed zeros, infinities, and rows shorter than one unrolled step.
// Expected values come from a plain loop here (NaN propagates; +0 > -0, IEEE 754 maximum).
#include "pto/pto.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using T = pto::Tensor;
constexpr int64_t kRows = 9;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// IEEE 754-2019 maximum / minimum: NaN propagates, -0 < +0.
float ieee_max(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return kNaN;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float ieee_min(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return kNaN;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// Rows of `cols` floats: random, then NaN at a start / middle / end column, all signed zeros
/// (+0 once), all -inf, +inf once, equal values.
std::vector<float> rows_of(int64_t cols) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  std::vector<float> x(static_cast<size_t>(kRows * cols));
  for (auto &v : x)
    v = u(rng);
  auto at = [&](int64_t r, int64_t c) -> float & { return x[static_cast<size_t>(r * cols + c)]; };
  at(1, 0) = kNaN;
  at(2, cols / 2) = kNaN;
  at(3, cols - 1) = kNaN;
  for (int64_t c = 0; c < cols; ++c) {
    at(4, c) = -0.0f;
    at(5, c) = -kInf;
    at(6, c) = 2.5f;
  }
  at(4, cols - 1 - cols / 3) = 0.0f;
  at(5, cols / 3) = kInf;
  at(7, cols - 1) = 1e30f; // the largest in the masked tail
  at(8, cols / 2) = -1e30f;
  return x;
}

bool same(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

} // namespace

TEST_CASE("reduce minmax: several accumulators give the interpreter's bits") {
  for (int64_t cols : {5, 16, 63, 64, 203, 1000}) {
    const std::vector<float> x = rows_of(cols);
    pto::HostTensor xt(pto::DT_FP32, {kRows, cols});
    std::memcpy(xt.data(), x.data(), x.size() * sizeof(float));
    for (bool is_max : {true, false}) {
      std::vector<float> want(kRows);
      for (int64_t r = 0; r < kRows; ++r) {
        float acc = is_max ? -kInf : kInf;
        for (int64_t c = 0; c < cols; ++c)
          acc = (is_max ? ieee_max : ieee_min)(acc, x[static_cast<size_t>(r * cols + c)]);
        want[static_cast<size_t>(r)] = acc;
      }
      std::vector<std::vector<float>> got;
      for (pto::RunMode m : support::run_modes()) {
        pto::HostTensor y(pto::DT_FP32, {kRows, 1});
        auto k = pto::jit(
            is_max ? "minmax_amax" : "minmax_amin",
            [&](T a, T b) {
              pto::set_vec_tile_shapes(4, cols);
              pto::assemble(is_max ? pto::amax(a, -1, {.keepdim = true})
                                   : pto::amin(a, -1, {.keepdim = true}),
                            {0, 0}, b);
            },
            support::opts(m));
        k(xt, y);
        std::vector<float> out(kRows);
        std::memcpy(out.data(), y.data(), sizeof(float) * kRows);
        for (int64_t r = 0; r < kRows; ++r) {
          CAPTURE(cols);
          CAPTURE(is_max);
          CAPTURE(r);
          CAPTURE(std::string(support::mode_name(m)));
          CHECK(same(out[static_cast<size_t>(r)], want[static_cast<size_t>(r)]));
        }
        got.push_back(out);
      }
      for (size_t i = 1; i < got.size(); ++i)
        for (int64_t r = 0; r < kRows; ++r)
          CHECK(same(got[i][static_cast<size_t>(r)], got[0][static_cast<size_t>(r)]));
    }
  }
}
