// sign_edges_test.cpp - Ops whose results hang on the signs of zeros and NaNs, checked bit for
// bit in each run mode against naive loops (the C++ library, NumPy's definition written out):
// copysign (magnitude of a, sign bit of b) and heaviside on every pair of edge values,
// tensor-tensor and with a scalar on either side.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace {

const pto::DataType kFloatTypes[] = {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_DOUBLE};

/// Every dtype holds these exactly: NaNs of both signs, infinities, signed zeros, a value that is
/// subnormal in fp16 (not in bf16/fp32), ordinary values and one near fp16's largest.
const std::vector<double> kEdges = {NAN,  -NAN,    INFINITY, -INFINITY, 0.0,
                                    -0.0, 0x1p-20, 2.5,      -2.5,      0x1p15};

/// `got` is `want` bit for bit up to NaN payloads: both NaN with the same sign bit, or equal
/// with the same sign bit (so -0 is not +0).
bool same_bits(double got, double want) {
  if (std::signbit(got) != std::signbit(want))
    return false;
  return std::isnan(want) ? std::isnan(got) : got == want;
}

/// [1, n] tensors a and b holding every pair (kEdges[i], kEdges[j]); fails the case when `dt`
/// does not store an edge exactly (sign of NaN included), since the references assume it does.
std::pair<pto::HostTensor, pto::HostTensor> edge_pairs(pto::DataType dt) {
  const auto n = static_cast<int64_t>(kEdges.size() * kEdges.size());
  pto::HostTensor a(dt, {1, n}), b(dt, {1, n});
  for (size_t i = 0; i < kEdges.size(); ++i)
    for (size_t j = 0; j < kEdges.size(); ++j) {
      const auto k = static_cast<int64_t>(i * kEdges.size() + j);
      a.set(k, kEdges[i]);
      b.set(k, kEdges[j]);
      REQUIRE(same_bits(a.get(k), kEdges[i]));
      REQUIRE(same_bits(b.get(k), kEdges[j]));
    }
  return {a, b};
}

using Binary = std::function<pto::Tensor(const pto::Tensor &, const pto::Tensor &)>;

/// ys[i] = fs[i](a, b), all in one kernel under a [1, 16] tile (n is not a multiple of 16).
std::vector<pto::HostTensor> run(pto::RunMode m, const pto::HostTensor &a, const pto::HostTensor &b,
                                 const std::vector<Binary> &fs) {
  std::vector<pto::HostTensor> ys;
  for (size_t i = 0; i < fs.size(); ++i)
    ys.emplace_back(a.dtype(), a.shape());
  auto k = pto::jit(
      "sign_edges",
      [&](pto::Tensor ta, pto::Tensor tb, pto::Tensor y0, pto::Tensor y1, pto::Tensor y2) {
        pto::set_vec_tile_shapes(1, 16);
        const pto::Tensor outs[] = {y0, y1, y2};
        for (size_t i = 0; i < fs.size(); ++i)
          pto::assemble(fs[i](ta, tb), {0, 0}, outs[i]);
      },
      support::opts(m));
  REQUIRE(fs.size() == 3);
  k(a, b, ys[0], ys[1], ys[2]);
  return ys;
}

/// Checks ys[f] against want[f](a, b) element by element.
void check_all(const std::vector<pto::HostTensor> &ys, const pto::HostTensor &a,
               const pto::HostTensor &b,
               const std::vector<std::function<double(double, double)>> &want) {
  for (size_t f = 0; f < ys.size(); ++f)
    for (int64_t k = 0; k < a.numel(); ++k) {
      CAPTURE(f);
      CAPTURE(a.get(k));
      CAPTURE(b.get(k));
      CAPTURE(ys[f].get(k));
      CHECK(same_bits(ys[f].get(k), want[f](a.get(k), b.get(k))));
    }
}

} // namespace

TEST_CASE("copysign: |a| with b's sign bit for NaN, -0 and infinities, scalars on either side") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kFloatTypes) {
        CAPTURE(pto::name(dt));
        auto [a, b] = edge_pairs(dt);
        auto ys = run(m, a, b,
                      {[](auto &x, auto &y) { return pto::copysign(x, y); },
                       [](auto &x, auto &) { return pto::copysign(x, -0.0); },
                       [](auto &, auto &y) { return pto::copysign(3.0, y); }});
        check_all(ys, a, b,
                  {[](double x, double y) { return std::copysign(x, y); },
                   [](double x, double) { return std::copysign(x, -0.0); },
                   [](double, double y) { return std::copysign(3.0, y); }});
      }
    }
  }
}

namespace {
/// NumPy's heaviside(x1, x2), written out.
double heaviside_ref(double x, double v) {
  if (std::isnan(x))
    return x;
  if (x < 0)
    return 0;
  return x > 0 ? 1 : v;
}
} // namespace

TEST_CASE("heaviside: 0, b or 1 by the sign of a; -0 picks b, a NaN a stays NaN; ints too") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kFloatTypes) {
        CAPTURE(pto::name(dt));
        auto [a, b] = edge_pairs(dt);
        auto ys = run(m, a, b,
                      {[](auto &x, auto &y) { return pto::heaviside(x, y); },
                       [](auto &x, auto &) { return pto::heaviside(x, 0.5); },
                       [](auto &, auto &y) { return pto::heaviside(-0.0, y); }});
        check_all(ys, a, b,
                  {[](double x, double y) { return heaviside_ref(x, y); },
                   [](double x, double) { return heaviside_ref(x, 0.5); },
                   [](double, double y) { return heaviside_ref(-0.0, y); }});
      }
      for (auto dt : {pto::DT_INT8, pto::DT_INT32, pto::DT_INT64, pto::DT_UINT8}) {
        CAPTURE(pto::name(dt));
        const bool uns = dt == pto::DT_UINT8;
        const std::vector<double> xs = {uns ? 0.0 : -7.0, uns ? 3.0 : -1.0, 0.0, 1.0, 100.0};
        const std::vector<double> vs = {0.0, 2.0, uns ? 255.0 : -3.0};
        const auto n = static_cast<int64_t>(xs.size() * vs.size());
        pto::HostTensor a(dt, {1, n}), b(dt, {1, n});
        for (int64_t k = 0; k < n; ++k) {
          a.set(k, xs[static_cast<size_t>(k) / vs.size()]);
          b.set(k, vs[static_cast<size_t>(k) % vs.size()]);
        }
        auto ys = run(m, a, b,
                      {[](auto &x, auto &y) { return pto::heaviside(x, y); },
                       [](auto &x, auto &) { return pto::heaviside(x, 5); },
                       [](auto &, auto &y) { return pto::heaviside(0, y); }});
        check_all(ys, a, b,
                  {[](double x, double y) { return heaviside_ref(x, y); },
                   [](double x, double) { return heaviside_ref(x, 5); },
                   [](double, double y) { return heaviside_ref(0, y); }});
      }
    }
  }
}

TEST_CASE("heaviside: DT_BOOL operands are a DTypeError at the call site") {
  pto::HostTensor a(pto::DT_BOOL, {1, 4}), y(pto::DT_BOOL, {1, 4});
  int line = 0;
  auto k = pto::jit("heaviside_bool", [&](pto::Tensor x, pto::Tensor out) {
    pto::set_vec_tile_shapes(1, 4);
    line = __LINE__ + 1;
    pto::assemble(pto::heaviside(x, x), {0, 0}, out);
  });
  support::expect_error<pto::DTypeError>([&] { k(a, y); }, "sign_edges_test.cpp", line, "heaviside",
                                         "arithmetic on DT_BOOL is not defined");
}
