// examples_test.cpp - Ports of three of PyPTO's public examples, written fresh in C++ from their
// semantics (not their text), in the spellings issue 13 added, in both executors:
//  - beginner elementwise: y = relu(x * a + b) over row tiles of a STATIC [N, C] input, with the
//    tail tile narrowed by valid_shape (the tiling loop of PyPTO's "add" / "tiling" examples);
//  - intermediate softmax along the last dim: exp(x - max) / sum;
//  - layer norm: (x - mean) * rsqrt(var + eps) * gamma + beta, per row.
// References are long double loops over the inputs.
#include "pto/pto.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace {

void fill(pto::HostTensor &t, double scale, double shift) {
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, scale * double((i * 7) % 23) + shift);
}

bool close(double got, long double want, long double rel) {
  return std::fabs(static_cast<long double>(got) - want) <= rel * (1.0L + std::fabs(want));
}

} // namespace

TEST_CASE("port: elementwise tiled relu(x * a + b) with a tail tile") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    const int64_t tile = 4;
    auto k = pto::jit(
        "elementwise_tiled",
        [tile](pto::Tensor x, pto::Tensor y, double a, double b) {
          const auto n = x.shape(0), c = x.shape(1);
          pto::set_vec_tile_shapes(tile, c);
          for (auto i : pto::loop(0, (n + tile - 1) / tile, 1, {.idx_name = "row_tile"})) {
            auto rows = pto::min(n - i * tile, tile);
            auto t = pto::view(x, {tile, c}, {i * tile, 0}, {.valid_shape = {{rows, c}}});
            pto::assemble(pto::relu(t * a + b), {i * tile, 0}, y);
          }
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {10, 16}), y(pto::DT_FP32, {10, 16});
    fill(x, 0.5, -4.0);
    k(x, y, 1.5, 0.25);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const long double v = static_cast<long double>(float(x.get(i) * 1.5)) + 0.25L;
      REQUIRE(close(y.get(i), v > 0 ? v : 0.0L, 1e-6L));
    }
  }
}

TEST_CASE("port: softmax along the last dim") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "softmax_port",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(x.shape(0), x.shape(1));
          auto m = pto::amax(x, -1, {.keepdim = true});
          auto e = pto::exp(x - m);
          pto::assemble(e / pto::sum(e, -1, {.keepdim = true}), {0, 0}, y);
        },
        support::opts(mode));
    const int64_t r = 6, c = 24;
    pto::HostTensor x(pto::DT_FP32, {r, c}), y(pto::DT_FP32, {r, c});
    fill(x, 0.3, -3.0);
    k(x, y);
    for (int64_t i = 0; i < r; ++i) {
      long double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < c; ++j)
        mx = std::max<long double>(mx, x.get(i * c + j));
      for (int64_t j = 0; j < c; ++j)
        s += std::exp(static_cast<long double>(x.get(i * c + j)) - mx);
      for (int64_t j = 0; j < c; ++j)
        REQUIRE(close(y.get(i * c + j),
                      std::exp(static_cast<long double>(x.get(i * c + j)) - mx) / s, 1e-5L));
    }
  }
}

TEST_CASE("port: layer norm per row with gamma and beta") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "layer_norm_port",
        [](pto::Tensor x, pto::Tensor gamma, pto::Tensor beta, pto::Tensor y, double eps) {
          pto::set_vec_tile_shapes(x.shape(0), x.shape(1));
          auto mean = pto::mean(x, -1, {.keepdim = true});
          auto d = x - mean;
          auto var = pto::mean(d * d, -1, {.keepdim = true});
          pto::assemble(d * pto::rsqrt(var + eps) * gamma + beta, {0, 0}, y);
        },
        support::opts(mode));
    const int64_t r = 5, c = 32;
    pto::HostTensor x(pto::DT_FP32, {r, c}), y(pto::DT_FP32, {r, c});
    pto::HostTensor g(pto::DT_FP32, {1, c}), b(pto::DT_FP32, {1, c});
    fill(x, 0.4, -2.0);
    fill(g, 0.05, 0.5);
    fill(b, -0.1, 1.0);
    const double eps = 1e-5;
    k(x, g, b, y, eps);
    for (int64_t i = 0; i < r; ++i) {
      long double mu = 0, var = 0;
      for (int64_t j = 0; j < c; ++j)
        mu += x.get(i * c + j);
      mu /= c;
      for (int64_t j = 0; j < c; ++j)
        var += (x.get(i * c + j) - mu) * (x.get(i * c + j) - mu);
      var /= c;
      for (int64_t j = 0; j < c; ++j) {
        const long double want = (x.get(i * c + j) - mu) / std::sqrt(var + eps) * g.get(j) +
                                 static_cast<long double>(b.get(j));
        REQUIRE(close(y.get(i * c + j), want, 1e-5L));
      }
    }
  }
}
