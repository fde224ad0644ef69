// elementwise_test.cpp - The op catalogue's elementwise ops (ops.h: math, activations, rounding,
// predicates, compares, logical/bitwise ops, shifts, remainders, where, clip), run as kernels in
// each run mode (support::run_modes) against naive double / int64 loops. To keep JIT time low,
// one kernel runs many ops: slice i of a stacked input [K, R, C] feeds op i, whose result goes
// to slice i of the output. R x C covers tails under the [1, 2, 16] tile, size-1 dims and
// broadcasting; float inputs include NaN, +-inf, +-0, a subnormal, ties and a huge value.
#include "pto/pto.h"

#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

using naive::Array;
using support::OpClass;

namespace {

using UnaryFn = std::function<pto::Tensor(const pto::Tensor &)>;
using BinaryFn = std::function<pto::Tensor(const pto::Tensor &, const pto::Tensor &)>;

const std::vector<int64_t> kTile{1, 2, 16};
/// [R, C] per slice: tails in both dims, a single row, a single column, one exact vector.
const std::vector<std::vector<int64_t>> kSlices = {{5, 37}, {1, 37}, {5, 1}, {2, 16}};

const pto::DataType kFloatTypes[] = {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_DOUBLE};
const pto::DataType kIntTypes[] = {pto::DT_INT8, pto::DT_INT16, pto::DT_INT32, pto::DT_INT64,
                                   pto::DT_UINT8};

/// Float edge inputs, written into the first elements of each slice.
const double kSpecials[] = {NAN, INFINITY, -INFINITY, 0.0,  -0.0, 1e-40,
                            2.5, -2.5,     0.5,       -0.5, 1e30, -1e30};

/// y[i] = fs[i](x[i]) for every slice i, in one kernel.
pto::HostTensor run_stacked(pto::RunMode m, const pto::HostTensor &x, pto::DataType out_dt,
                            const std::vector<UnaryFn> &fs) {
  const auto &shape = x.shape();
  pto::HostTensor y(out_dt, shape);
  auto k = pto::jit(
      "stacked_unary",
      [&](pto::Tensor tx, pto::Tensor ty) {
        pto::set_vec_tile_shapes(kTile);
        for (size_t i = 0; i < fs.size(); ++i) {
          auto xi = pto::view(tx, {1, shape[1], shape[2]}, {static_cast<int64_t>(i), 0, 0});
          pto::assemble(fs[i](xi), {static_cast<int64_t>(i), 0, 0}, ty);
        }
      },
      support::opts(m));
  k(x, y);
  return y;
}

/// y[i] = fs[i](a[i], b[i]) for every slice i (b's slices broadcast), in one kernel.
pto::HostTensor run_stacked2(pto::RunMode m, const pto::HostTensor &a, const pto::HostTensor &b,
                             pto::DataType out_dt, const std::vector<BinaryFn> &fs) {
  const auto &sa = a.shape();
  const auto &sb = b.shape();
  pto::HostTensor y(out_dt, sa);
  auto k = pto::jit(
      "stacked_binary",
      [&](pto::Tensor ta, pto::Tensor tb, pto::Tensor ty) {
        pto::set_vec_tile_shapes(kTile);
        for (size_t i = 0; i < fs.size(); ++i) {
          pto::SymbolicScalar s = static_cast<int64_t>(i);
          auto ai = pto::view(ta, {1, sa[1], sa[2]}, {s, 0, 0});
          auto bi = pto::view(tb, {1, sb[1], sb[2]}, {s, 0, 0});
          pto::assemble(fs[i](ai, bi), {s, 0, 0}, ty);
        }
      },
      support::opts(m));
  k(a, b, y);
  return y;
}

/// Slice i of a stacked tensor, as its own [1, R, C] tensor.
pto::HostTensor slice(const pto::HostTensor &t, size_t i) {
  auto s = t.shape();
  s[0] = 1;
  pto::HostTensor out(t.dtype(), s);
  for (int64_t j = 0; j < out.numel(); ++j)
    out.set(j, t.get(static_cast<int64_t>(i) * out.numel() + j));
  return out;
}

/// A stacked input: slice i uniform in ranges[i] (seeded), plus the float specials when asked.
pto::HostTensor stacked_input(pto::DataType dt, const std::vector<int64_t> &rc,
                              const std::vector<std::pair<double, double>> &ranges, uint64_t seed,
                              bool specials) {
  int64_t n = rc[0] * rc[1];
  pto::HostTensor x(dt, {static_cast<int64_t>(ranges.size()), rc[0], rc[1]});
  for (size_t i = 0; i < ranges.size(); ++i) {
    auto r = naive::random_tensor(dt, rc, seed + i, ranges[i].first, ranges[i].second);
    for (int64_t j = 0; j < n; ++j)
      x.set(static_cast<int64_t>(i) * n + j, r.get(j));
    if (specials && pto::is_float(dt))
      for (int64_t j = 0; j < n && j < static_cast<int64_t>(std::size(kSpecials)); ++j)
        x.set(static_cast<int64_t>(i) * n + j, kSpecials[j]);
  }
  return x;
}

/// Expected slice i: want(element) rounded to `out_dt`.
Array expect(const pto::HostTensor &x, size_t i, pto::DataType out_dt,
             const std::function<double(double)> &want) {
  Array ax = naive::from(slice(x, i));
  return naive::map(ax, [&](double v) {
    double w = want(v);
    return pto::is_float(out_dt) ? naive::round_to(w, out_dt) : w;
  });
}

double b01(bool v) { return v ? 1.0 : 0.0; }
/// Round half to even, written out (independent of the FPU rounding mode).
double round_half_even(double v) {
  if (!std::isfinite(v))
    return v;
  double f = std::floor(v), d = v - f;
  if (d > 0.5 || (d == 0.5 && std::fmod(f, 2.0) != 0))
    return f + 1;
  return f;
}
int64_t floor_div_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int bits_of(pto::DataType dt) { return 8 * pto::bytes_of(dt); }

struct UOp {
  const char *name;
  UnaryFn f;
  std::function<double(double)> want;
  double lo, hi;
  OpClass cls;
};

} // namespace

TEST_CASE("elementwise unary float math matches naive double, edge values included") {
  const double kSqrt1_2 = 0.70710678118654752440, kSqrt2_Pi = 0.79788456080286535588;
  const auto T = OpClass::Transcendental, Bc = OpClass::Basic;
  const std::vector<UOp> ops = {
      {"exp2", [](auto &x) { return pto::exp2(x); }, [](double v) { return std::exp2(v); }, -10, 10,
       T},
      {"expm1", [](auto &x) { return pto::expm1(x); }, [](double v) { return std::expm1(v); }, -5,
       5, T},
      {"log2", [](auto &x) { return pto::log2(x); }, [](double v) { return std::log2(v); }, 0.01,
       100, T},
      {"log10", [](auto &x) { return pto::log10(x); }, [](double v) { return std::log10(v); }, 0.01,
       100, T},
      {"log1p", [](auto &x) { return pto::log1p(x); }, [](double v) { return std::log1p(v); }, -0.9,
       10, T},
      {"sin", [](auto &x) { return pto::sin(x); }, [](double v) { return std::sin(v); }, -3, 3, T},
      {"cos", [](auto &x) { return pto::cos(x); }, [](double v) { return std::cos(v); }, -3, 3, T},
      {"tan", [](auto &x) { return pto::tan(x); }, [](double v) { return std::tan(v); }, -1.4, 1.4,
       T},
      {"asin", [](auto &x) { return pto::asin(x); }, [](double v) { return std::asin(v); }, -1, 1,
       T},
      {"acos", [](auto &x) { return pto::acos(x); }, [](double v) { return std::acos(v); }, -1, 1,
       T},
      {"atan", [](auto &x) { return pto::atan(x); }, [](double v) { return std::atan(v); }, -10, 10,
       T},
      {"sinh", [](auto &x) { return pto::sinh(x); }, [](double v) { return std::sinh(v); }, -5, 5,
       T},
      {"cosh", [](auto &x) { return pto::cosh(x); }, [](double v) { return std::cosh(v); }, -5, 5,
       T},
      {"tanh", [](auto &x) { return pto::tanh(x); }, [](double v) { return std::tanh(v); }, -5, 5,
       T},
      {"asinh", [](auto &x) { return pto::asinh(x); }, [](double v) { return std::asinh(v); }, -10,
       10, T},
      {"acosh", [](auto &x) { return pto::acosh(x); }, [](double v) { return std::acosh(v); }, 1,
       10, T},
      {"atanh", [](auto &x) { return pto::atanh(x); }, [](double v) { return std::atanh(v); },
       -0.95, 0.95, T},
      {"erf", [](auto &x) { return pto::erf(x); }, [](double v) { return std::erf(v); }, -3, 3, T},
      // SLEEF erfc is u15 (1.5 ULP): the basic bound.
      {"erfc", [](auto &x) { return pto::erfc(x); }, [](double v) { return std::erfc(v); }, -3, 3,
       Bc},
      {"cbrt", [](auto &x) { return pto::cbrt(x); }, [](double v) { return std::cbrt(v); }, -10, 10,
       T},
      {"sigmoid", [](auto &x) { return pto::sigmoid(x); },
       [](double v) { return 1 / (1 + std::exp(-v)); }, -10, 10, Bc},
      {"softplus", [](auto &x) { return pto::softplus(x); },
       [](double v) { return v > 20 ? v : std::log(1 + std::exp(v)); }, -25, 25, Bc},
      {"softsign", [](auto &x) { return pto::softsign(x); },
       [](double v) { return v / (1 + std::fabs(v)); }, -10, 10, Bc},
      {"elu", [](auto &x) { return pto::elu(x, 1.5); },
       [](double v) { return v > 0 ? v : 1.5 * std::expm1(v); }, -5, 5, Bc},
      {"gelu", [&](auto &x) { return pto::gelu(x); },
       [&](double v) { return 0.5 * v * std::erfc(-v * kSqrt1_2); }, -5, 5, Bc},
      {"gelu_tanh", [](auto &x) { return pto::gelu_tanh(x); },
       [&](double v) { return 0.5 * v * (1 + std::tanh(kSqrt2_Pi * (v + 0.044715 * v * v * v))); },
       -5, 5, Bc},
      {"lrelu", [](auto &x) { return pto::lrelu(x, 0.2); },
       [](double v) { return v >= 0 ? v : 0.2 * v; }, -5, 5, Bc},
      {"relu", [](auto &x) { return pto::relu(x); },
       [](double v) { return std::isnan(v) ? v
                             : v > 0       ? v
                                           : 0.0; }, -5, 5, Bc},
      {"relu6", [](auto &x) { return pto::relu6(x); },
       [](double v) { return std::isnan(v) ? v : std::min(std::max(v, 0.0), 6.0); }, -8, 8, Bc},
      {"sign", [](auto &x) { return pto::sign(x); },
       [](double v) { return v > 0   ? 1.0
                             : v < 0 ? -1.0
                                     : v; }, -2, 2, Bc},
      {"ceil", [](auto &x) { return pto::ceil(x); }, [](double v) { return std::ceil(v); }, -5, 5,
       Bc},
      {"floor", [](auto &x) { return pto::floor(x); }, [](double v) { return std::floor(v); }, -5,
       5, Bc},
      {"trunc", [](auto &x) { return pto::trunc(x); }, [](double v) { return std::trunc(v); }, -5,
       5, Bc},
      {"round", [](auto &x) { return pto::round(x); }, round_half_even, -5, 5, Bc},
      {"square", [](auto &x) { return pto::square(x); }, [](double v) { return v * v; }, -5, 5, Bc},
      {"clone", [](auto &x) { return pto::clone(x); }, [](double v) { return v; }, -5, 5, Bc},
  };
  std::vector<UnaryFn> fs;
  std::vector<std::pair<double, double>> ranges;
  for (auto &op : ops) {
    fs.push_back(op.f);
    ranges.emplace_back(op.lo, op.hi);
  }
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kFloatTypes)
        for (const auto &rc : kSlices) {
          CAPTURE(pto::name(dt));
          CAPTURE(rc[0]);
          CAPTURE(rc[1]);
          auto x = stacked_input(dt, rc, ranges, /*seed=*/rc[0] * 100 + rc[1], true);
          auto y = run_stacked(m, x, dt, fs);
          for (size_t i = 0; i < ops.size(); ++i) {
            CAPTURE(ops[i].name);
            CHECK(support::mismatch(slice(y, i), expect(x, i, dt, ops[i].want),
                                    support::tolerance(dt, ops[i].cls)) == "");
          }
        }
    }
  }
}

TEST_CASE("round is half to even; sign and signbit keep the sign of zero") {
  pto::HostTensor x(pto::DT_FP32, {1, 1, 8});
  const double in[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 0.0};
  for (int i = 0; i < 8; ++i)
    x.set(i, in[i]);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto r = run_stacked(m, x, pto::DT_FP32, {[](auto &t) { return pto::round(t); }});
      const double want[] = {0, 2, 2, -0.0, -2, -2, -0.0, 0}; // ties go to the even neighbour
      for (int i = 0; i < 8; ++i) {
        CAPTURE(i);
        CHECK(r.get(i) == want[i]);
        CHECK(std::signbit(r.get(i)) == std::signbit(want[i]));
      }
      auto s = run_stacked(m, x, pto::DT_FP32, {[](auto &t) { return pto::sign(t); }});
      CHECK(std::signbit(s.get(6))); // sign(-0) = -0
      auto sb = run_stacked(m, x, pto::DT_BOOL, {[](auto &t) { return pto::signbit(t); }});
      CHECK(sb.get(6) == 1); // the sign bit of -0 is set
      CHECK(sb.get(7) == 0);
    }
  }
}

TEST_CASE("bool-valued unary predicates on floats and ints") {
  struct P {
    const char *name;
    UnaryFn f;
    std::function<double(double)> want;
  };
  const std::vector<P> ops = {
      {"signbit", [](auto &x) { return pto::signbit(x); },
       [](double v) { return b01(std::signbit(v)); }},
      {"isfinite", [](auto &x) { return pto::isfinite(x); },
       [](double v) { return b01(std::isfinite(v)); }},
      {"isnan", [](auto &x) { return pto::isnan(x); }, [](double v) { return b01(std::isnan(v)); }},
      {"isinf", [](auto &x) { return pto::isinf(x); }, [](double v) { return b01(std::isinf(v)); }},
      {"logical_not", [](auto &x) { return pto::logical_not(x); },
       [](double v) { return b01(v == 0); }},
  };
  std::vector<UnaryFn> fs;
  for (auto &op : ops)
    fs.push_back(op.f);
  std::vector<pto::DataType> dts(std::begin(kFloatTypes), std::end(kFloatTypes));
  dts.insert(dts.end(), std::begin(kIntTypes), std::end(kIntTypes));
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : dts) {
        CAPTURE(pto::name(dt));
        std::vector<int64_t> rc{5, 37};
        auto x = stacked_input(dt, rc, std::vector<std::pair<double, double>>(ops.size(), {-3, 3}),
                               /*seed=*/11, true);
        auto y = run_stacked(m, x, pto::DT_BOOL, fs);
        for (size_t i = 0; i < ops.size(); ++i) {
          CAPTURE(ops[i].name);
          CHECK(support::mismatch(slice(y, i), expect(x, i, pto::DT_BOOL, ops[i].want), {}) == "");
        }
      }
    }
  }
}

TEST_CASE("unary ops on integer dtypes: relu, relu6, sign, rounding, square, clone, bitwise_not") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kIntTypes) {
        CAPTURE(pto::name(dt));
        const bool uns = dt == pto::DT_UINT8;
        auto w = [dt](int64_t v) { return naive::wrap_int(v, dt); };
        const std::vector<UOp> ops = {
            {"relu",
             [](auto &x) { return pto::relu(x); },
             [](double v) { return std::max(v, 0.0); },
             0,
             0,
             {}},
            {"relu6",
             [](auto &x) { return pto::relu6(x); },
             [](double v) { return std::min(std::max(v, 0.0), 6.0); },
             0,
             0,
             {}},
            {"sign",
             [](auto &x) { return pto::sign(x); },
             [](double v) { return v > 0   ? 1.0
                                   : v < 0 ? -1.0
                                           : 0.0; },
             0,
             0,
             {}},
            {"ceil", [](auto &x) { return pto::ceil(x); }, [](double v) { return v; }, 0, 0, {}},
            {"floor", [](auto &x) { return pto::floor(x); }, [](double v) { return v; }, 0, 0, {}},
            {"trunc", [](auto &x) { return pto::trunc(x); }, [](double v) { return v; }, 0, 0, {}},
            {"round", [](auto &x) { return pto::round(x); }, [](double v) { return v; }, 0, 0, {}},
            {"clone", [](auto &x) { return pto::clone(x); }, [](double v) { return v; }, 0, 0, {}},
            {"square",
             [](auto &x) { return pto::square(x); },
             [&](double v) {
               auto u = static_cast<uint64_t>(static_cast<int64_t>(v));
               return w(static_cast<int64_t>(u * u));
             },
             0,
             0,
             {}},
            {"bitwise_not",
             [](auto &x) { return pto::bitwise_not(x); },
             [&](double v) { return w(~static_cast<int64_t>(v)); },
             0,
             0,
             {}},
        };
        std::vector<UnaryFn> fs;
        for (auto &op : ops)
          fs.push_back(op.f);
        double lo = uns                  ? 0
                    : dt == pto::DT_INT8 ? -128
                                         : -1000000,
               hi = uns                  ? 255
                    : dt == pto::DT_INT8 ? 127
                                         : 1000000;
        if (dt == pto::DT_INT16)
          lo = -32768, hi = 32767;
        auto x =
            stacked_input(dt, {5, 37}, std::vector<std::pair<double, double>>(ops.size(), {lo, hi}),
                          /*seed=*/21, false);
        auto y = run_stacked(m, x, dt, fs);
        for (size_t i = 0; i < ops.size(); ++i) {
          CAPTURE(ops[i].name);
          CHECK(support::mismatch(slice(y, i), expect(x, i, dt, ops[i].want), {}) == "");
        }
      }
    }
  }
}

TEST_CASE("binary float ops (pow, hypot, atan2, copysign, fmod, remainder, floor_div) broadcast") {
  struct BOp {
    const char *name;
    BinaryFn f;
    std::function<double(double, double)> want;
    std::pair<double, double> ra, rb;
    OpClass cls;
  };
  const auto T = OpClass::Transcendental, Bc = OpClass::Basic;
  const std::vector<BOp> ops = {
      {"pow",
       [](auto &a, auto &b) { return pto::pow(a, b); },
       [](double a, double b) { return std::pow(a, b); },
       {0.1, 4},
       {-3, 3},
       T},
      {"hypot",
       [](auto &a, auto &b) { return pto::hypot(a, b); },
       [](double a, double b) { return std::hypot(a, b); },
       {-5, 5},
       {-5, 5},
       Bc},
      {"atan2",
       [](auto &a, auto &b) { return pto::atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); },
       {-5, 5},
       {-5, 5},
       T},
      {"copysign",
       [](auto &a, auto &b) { return pto::copysign(a, b); },
       [](double a, double b) { return std::copysign(a, b); },
       {-5, 5},
       {-5, 5},
       Bc},
      {"fmod",
       [](auto &a, auto &b) { return pto::fmod(a, b); },
       [](double a, double b) { return a - b * std::trunc(a / b); },
       {-10, 10},
       {-3, 3},
       Bc},
      {"remainder",
       [](auto &a, auto &b) { return pto::remainder(a, b); },
       [](double a, double b) { return a - b * std::floor(a / b); },
       {-10, 10},
       {-3, 3},
       Bc},
      {"floor_div",
       [](auto &a, auto &b) { return pto::floor_div(a, b); },
       [](double a, double b) { return std::floor(a / b); },
       {-10, 10},
       {-3, 3},
       Bc},
  };
  std::vector<BinaryFn> fs;
  std::vector<std::pair<double, double>> ra, rb;
  for (auto &op : ops) {
    fs.push_back(op.f);
    ra.push_back(op.ra);
    rb.push_back(op.rb);
  }
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{5, 37}, {5, 37}}, {{5, 37}, {5, 1}}, {{5, 37}, {1, 37}}, {{1, 37}, {1, 1}}};
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kFloatTypes)
        for (const auto &[sa, sb] : shapes) {
          CAPTURE(pto::name(dt));
          CAPTURE(sa[0]);
          CAPTURE(sb[0]);
          CAPTURE(sb[1]);
          auto a = stacked_input(dt, sa, ra, 31, false);
          auto b = stacked_input(dt, sb, rb, 41, false);
          for (int64_t j = 0; j < b.numel(); ++j) // no zero divisors here (edges tested below)
            if (std::fabs(b.get(j)) < 0.25)
              b.set(j, 0.75);
          auto y = run_stacked2(m, a, b, dt, fs);
          for (size_t i = 0; i < ops.size(); ++i) {
            CAPTURE(ops[i].name);
            Array want = naive::zip(
                naive::from(slice(a, i)), naive::from(slice(b, i)),
                [&](double u, double v) { return naive::round_to(ops[i].want(u, v), dt); });
            CHECK(support::mismatch(slice(y, i), want, support::tolerance(dt, ops[i].cls)) == "");
          }
        }
    }
  }
}

TEST_CASE("fmod, remainder and floor_div: signs and IEEE edges, by hand") {
  // (a, b) -> fmod (sign of a), remainder (sign of b), floor_div; PyTorch/Python values.
  struct E {
    double a, b, fmod, rem, fdiv;
  };
  const std::vector<E> cases = {{5, 3, 2, 2, 1},
                                {-5, 3, -2, 1, -2},
                                {5, -3, 2, -1, -2},
                                {-5, -3, -2, -2, 1},
                                {6, 3, 0, 0, 2},
                                {-6, 3, -0.0, 0, -2},
                                {1, 0, NAN, NAN, INFINITY},
                                {-1, 0, NAN, NAN, -INFINITY},
                                {INFINITY, 2, NAN, NAN, NAN},
                                {2, INFINITY, 2, 2, 0},
                                {-2, INFINITY, -2, INFINITY, -1},
                                {NAN, 1, NAN, NAN, NAN},
                                {0.0, -3, 0.0, 0.0, -0.0}};
  const int64_t n = static_cast<int64_t>(cases.size());
  pto::HostTensor a(pto::DT_FP32, {3, 1, n}), b(pto::DT_FP32, {3, 1, n});
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t j = 0; j < n; ++j) {
      a.set(s * n + j, cases[static_cast<size_t>(j)].a);
      b.set(s * n + j, cases[static_cast<size_t>(j)].b);
    }
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto y = run_stacked2(m, a, b, pto::DT_FP32,
                            {[](auto &x, auto &z) { return pto::fmod(x, z); },
                             [](auto &x, auto &z) { return pto::remainder(x, z); },
                             [](auto &x, auto &z) { return pto::floor_div(x, z); }});
      for (int64_t j = 0; j < n; ++j) {
        const E &e = cases[static_cast<size_t>(j)];
        CAPTURE(e.a);
        CAPTURE(e.b);
        const double want[3] = {e.fmod, e.rem, e.fdiv};
        for (int64_t s = 0; s < 3; ++s) {
          CAPTURE(s);
          double got = y.get(s * n + j);
          CHECK(((std::isnan(got) && std::isnan(want[s])) || got == want[s]));
        }
      }
    }
  }
}

TEST_CASE("binary integer ops: floored division and remainders, bitwise ops, shifts") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kIntTypes) {
        CAPTURE(pto::name(dt));
        const bool uns = dt == pto::DT_UINT8;
        const int bits = bits_of(dt);
        auto w = [dt](int64_t v) { return naive::wrap_int(v, dt); };
        auto I = [](double v) { return static_cast<int64_t>(v); };
        struct IOp {
          const char *name;
          BinaryFn f;
          std::function<double(double, double)> want;
          std::pair<double, double> ra, rb;
        };
        const double lo = uns ? 0 : -100, hi = 100;
        const std::vector<IOp> ops = {
            {"floor_div",
             [](auto &a, auto &b) { return pto::floor_div(a, b); },
             [&](double a, double b) { return w(floor_div_i(I(a), I(b))); },
             {lo, hi},
             {uns ? 1.0 : -9.0, 9.0}},
            {"remainder",
             [](auto &a, auto &b) { return pto::remainder(a, b); },
             [&](double a, double b) { return w(I(a) - I(b) * floor_div_i(I(a), I(b))); },
             {lo, hi},
             {uns ? 1.0 : -9.0, 9.0}},
            {"fmod",
             [](auto &a, auto &b) { return pto::fmod(a, b); },
             [&](double a, double b) { return w(I(a) % I(b)); },
             {lo, hi},
             {uns ? 1.0 : -9.0, 9.0}},
            {"bitwise_and",
             [](auto &a, auto &b) { return pto::bitwise_and(a, b); },
             [&](double a, double b) { return w(I(a) & I(b)); },
             {lo, hi},
             {lo, hi}},
            {"bitwise_or",
             [](auto &a, auto &b) { return pto::bitwise_or(a, b); },
             [&](double a, double b) { return w(I(a) | I(b)); },
             {lo, hi},
             {lo, hi}},
            {"bitwise_xor",
             [](auto &a, auto &b) { return pto::bitwise_xor(a, b); },
             [&](double a, double b) { return w(I(a) ^ I(b)); },
             {lo, hi},
             {lo, hi}},
            {"bitwise_left_shift",
             [](auto &a, auto &b) { return pto::bitwise_left_shift(a, b); },
             [&](double a, double b) {
               if (b < 0 || b >= bits)
                 return 0.0;
               return w(static_cast<int64_t>(static_cast<uint64_t>(I(a)) << I(b)));
             },
             {lo, hi},
             {uns ? 0.0 : -2.0, bits + 2.0}},
            {"bitwise_right_shift",
             [](auto &a, auto &b) { return pto::bitwise_right_shift(a, b); },
             [&](double a, double b) {
               if (b < 0 || b >= bits)
                 return a < 0 ? -1.0 : 0.0;
               return std::floor(a / std::ldexp(1.0, static_cast<int>(b)));
             },
             {lo, hi},
             {uns ? 0.0 : -2.0, bits + 2.0}},
        };
        std::vector<BinaryFn> fs;
        std::vector<std::pair<double, double>> ra, rb;
        for (auto &op : ops) {
          fs.push_back(op.f);
          ra.push_back(op.ra);
          rb.push_back(op.rb);
        }
        for (const auto &sb : {std::vector<int64_t>{5, 37}, std::vector<int64_t>{5, 1}}) {
          CAPTURE(sb[1]);
          auto a = stacked_input(dt, {5, 37}, ra, 51, false);
          auto b = stacked_input(dt, sb, rb, 61, false);
          for (int64_t j = 0; j < sb[0] * sb[1] * 3; ++j) // divisor slices 0..2: no zeros
            if (b.get(j) == 0)
              b.set(j, 7);
          if (!uns && dt != pto::DT_INT64) // INT_MIN floor_div -1 wraps
            a.set(0, dt == pto::DT_INT8    ? -128
                     : dt == pto::DT_INT16 ? -32768
                                           : -2147483648.0),
                b.set(0, -1);
          auto y = run_stacked2(m, a, b, dt, fs);
          for (size_t i = 0; i < ops.size(); ++i) {
            CAPTURE(ops[i].name);
            Array want =
                naive::zip(naive::from(slice(a, i)), naive::from(slice(b, i)), ops[i].want);
            CHECK(support::mismatch(slice(y, i), want, {}) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("compares and logical ops give DT_BOOL; NaN compares false except ne") {
  struct COp {
    const char *name;
    BinaryFn f;
    std::function<bool(double, double)> want;
  };
  const std::vector<COp> ops = {
      {"eq", [](auto &a, auto &b) { return pto::eq(a, b); },
       [](double a, double b) { return a == b; }},
      {"ne", [](auto &a, auto &b) { return pto::ne(a, b); },
       [](double a, double b) { return a != b; }},
      {"lt", [](auto &a, auto &b) { return pto::lt(a, b); },
       [](double a, double b) { return a < b; }},
      {"le", [](auto &a, auto &b) { return pto::le(a, b); },
       [](double a, double b) { return a <= b; }},
      {"gt", [](auto &a, auto &b) { return pto::gt(a, b); },
       [](double a, double b) { return a > b; }},
      {"ge", [](auto &a, auto &b) { return pto::ge(a, b); },
       [](double a, double b) { return a >= b; }},
      {"logical_and", [](auto &a, auto &b) { return pto::logical_and(a, b); },
       [](double a, double b) { return a != 0 && b != 0; }},
      {"logical_or", [](auto &a, auto &b) { return pto::logical_or(a, b); },
       [](double a, double b) { return a != 0 || b != 0; }},
      {"logical_xor", [](auto &a, auto &b) { return pto::logical_xor(a, b); },
       [](double a, double b) { return (a != 0) != (b != 0); }},
  };
  std::vector<BinaryFn> fs;
  for (auto &op : ops)
    fs.push_back(op.f);
  std::vector<pto::DataType> dts(std::begin(kFloatTypes), std::end(kFloatTypes));
  dts.insert(dts.end(), std::begin(kIntTypes), std::end(kIntTypes));
  dts.push_back(pto::DT_BOOL);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : dts)
        for (const auto &sb : {std::vector<int64_t>{5, 37}, std::vector<int64_t>{1, 37}}) {
          CAPTURE(pto::name(dt));
          CAPTURE(sb[0]);
          // Few distinct values, so equal pairs are common; floats get the specials too.
          double lo = dt == pto::DT_BOOL || dt == pto::DT_UINT8 ? 0 : -2,
                 hi = dt == pto::DT_BOOL ? 1 : 2;
          std::vector<std::pair<double, double>> r(ops.size(), {lo, hi});
          auto a = stacked_input(dt, {5, 37}, r, 71, true);
          auto b = stacked_input(dt, sb, r, 81, false);
          if (pto::is_float(dt)) {
            for (int64_t j = 0; j < a.numel(); ++j)
              a.set(j, std::round(a.get(j)));
            for (int64_t j = 0; j < b.numel(); ++j)
              b.set(j, std::round(b.get(j)));
          }
          auto y = run_stacked2(m, a, b, pto::DT_BOOL, fs);
          for (size_t i = 0; i < ops.size(); ++i) {
            CAPTURE(ops[i].name);
            Array want = naive::zip(naive::from(slice(a, i)), naive::from(slice(b, i)),
                                    [&](double u, double v) { return b01(ops[i].want(u, v)); });
            CHECK(support::mismatch(slice(y, i), want, {}) == "");
          }
        }
    }
  }
}

TEST_CASE("where selects with broadcasting and scalar branches; clip clamps and keeps NaN") {
  const int64_t R = 5, C = 37;
  auto x = naive::random_tensor(pto::DT_FP32, {R, C}, 91, -3, 3);
  x.set(3, NAN);
  auto lo_t = naive::random_tensor(pto::DT_FP32, {R, 1}, 92, -2, 0);
  auto hi_t = naive::random_tensor(pto::DT_FP32, {1, C}, 93, 0, 2);
  Array ax = naive::from(x), alo = naive::from(lo_t), ahi = naive::from(hi_t);
  auto xi = naive::random_tensor(pto::DT_INT32, {R, C}, 94, -50, 50);
  Array axi = naive::from(xi);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      pto::HostTensor y1(pto::DT_FP32, {R, C}), y2(pto::DT_FP32, {R, C}), y3(pto::DT_FP32, {R, C}),
          y4(pto::DT_FP32, {R, C}), y5(pto::DT_INT32, {R, C}), y6(pto::DT_INT32, {R, C});
      auto k = pto::jit(
          "where_clip",
          [](pto::Tensor tx, pto::Tensor tlo, pto::Tensor thi, pto::Tensor txi, pto::Tensor o1,
             pto::Tensor o2, pto::Tensor o3, pto::Tensor o4, pto::Tensor o5, pto::Tensor o6) {
            pto::set_vec_tile_shapes(2, 16);
            // A masked activation: one fused chain of compare, where and math.
            auto pos = pto::gt(tx, 0.0);
            pto::assemble(pto::where(pos, pto::sigmoid(tx), pto::gelu(tx)), {0, 0}, o1);
            // Tensor branches of other shapes (broadcast), cond of [R, 1].
            pto::assemble(pto::where(pto::lt(tlo, -1.0), tlo, thi), {0, 0}, o2);
            pto::assemble(pto::where(pos, 1.5, tx), {0, 0}, o3); // a scalar branch
            pto::assemble(pto::clip(tx, tlo, thi), {0, 0}, o4);
            pto::assemble(pto::clip(txi, -10, 20), {0, 0}, o5);
            pto::assemble(pto::where(pto::ne(txi, 0), 7, -7), {0, 0}, o6); // two scalars
          },
          support::opts(m));
      k(x, lo_t, hi_t, xi, y1, y2, y3, y4, y5, y6);
      Array w1{{R, C}, {}}, w2 = w1, w3 = w1, w4 = w1, w5 = w1, w6 = w1;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) {
          double v = ax.v[static_cast<size_t>(r * C + c)], lo = alo.v[static_cast<size_t>(r)],
                 hi = ahi.v[static_cast<size_t>(c)], vi = axi.v[static_cast<size_t>(r * C + c)];
          w1.v.push_back(v > 0 ? 1 / (1 + std::exp(-v)) : 0.5 * v * std::erfc(-v / std::sqrt(2.0)));
          w2.v.push_back(lo < -1 ? lo : hi);
          w3.v.push_back(v > 0 ? 1.5 : v);
          w4.v.push_back(std::isnan(v) ? v : std::min(std::max(v, lo), hi));
          w5.v.push_back(std::min(std::max(vi, -10.0), 20.0));
          w6.v.push_back(vi != 0 ? 7 : -7);
        }
      const auto tol = support::tolerance(pto::DT_FP32);
      CHECK(support::mismatch(y1, w1, tol) == "");
      CHECK(support::mismatch(y2, w2, {}) == "");
      CHECK(support::mismatch(y3, w3, {}) == "");
      CHECK(support::mismatch(y4, w4, {}) == "");
      CHECK(support::mismatch(y5, w5, {}) == "");
      CHECK(support::mismatch(y6, w6, {}) == "");
    }
  }
}

TEST_CASE("integer floor_div, remainder and fmod by a zero at run time are a RuntimeError") {
  pto::HostTensor a(pto::DT_INT32, {2, 20}), b(pto::DT_INT32, {2, 20}), y(pto::DT_INT32, {2, 20});
  a.fill(5);
  b.fill(2);
  b.set(37, 0); // in the masked tail of the second row
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (int which = 0; which < 3; ++which) {
        CAPTURE(which);
        auto k = pto::jit(
            "div0",
            [which](pto::Tensor ta, pto::Tensor tb, pto::Tensor ty) {
              pto::set_vec_tile_shapes(2, 16);
              auto r = which == 0   ? pto::floor_div(ta, tb)
                       : which == 1 ? pto::remainder(ta, tb)
                                    : pto::fmod(ta, tb);
              pto::assemble(r, {0, 0}, ty);
            },
            support::opts(m));
        CHECK_THROWS_AS(k(a, b, y), pto::RuntimeError);
      }
    }
  }
}

TEST_CASE("elementwise ops reject dtypes they do not define, and bad attributes") {
  auto run1 = [](auto fn, pto::DataType dt) {
    pto::HostTensor x(dt, {4, 8});
    auto k = pto::jit("bad", fn, support::opts(pto::RunMode::Interpret));
    k(x);
  };
  auto tiled = [](auto op) {
    return [op](pto::Tensor x) {
      pto::set_vec_tile_shapes(4, 8);
      op(x);
    };
  };
  using doctest::Contains;
  CHECK_THROWS_WITH_AS(run1(tiled([](auto &x) { pto::sin(x); }), pto::DT_INT32),
                       Contains("sin: expected a floating dtype"), pto::DTypeError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::sigmoid(x); }), pto::DT_INT8), pto::DTypeError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::pow(x, 2.5); }), pto::DT_INT32), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run1(tiled([](auto &x) { pto::bitwise_and(x, x); }), pto::DT_FP32),
                       Contains("bitwise_and: expected an integer dtype or DT_BOOL"),
                       pto::DTypeError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::bitwise_not(x); }), pto::DT_FP16), pto::DTypeError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::bitwise_left_shift(x, 1); }), pto::DT_BOOL),
                  pto::DTypeError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::relu(x); }), pto::DT_BOOL), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run1(tiled([](auto &x) { pto::where(x, x, x); }), pto::DT_FP32),
                       Contains("where: cond has dtype"), pto::DTypeError);
  CHECK_THROWS_AS(
      run1(tiled([](auto &x) { pto::where(pto::gt(x, 0), x, pto::cast(x, pto::DT_FP16)); }),
           pto::DT_FP32),
      pto::DTypeError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::where(pto::gt(x, 0), x, 0.5); }), pto::DT_INT32),
                  pto::DTypeError); // a float scalar with an int tensor
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::lrelu(x, -0.1); }), pto::DT_FP32),
                  pto::ArgumentError);
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::floor_div(x, 0); }), pto::DT_INT32),
                  pto::RuntimeError); // a literal zero divisor fails at trace time
  CHECK_THROWS_AS(run1(tiled([](auto &x) { pto::clip(x, 0, x); }), pto::DT_INT32), pto::DTypeError);
  // Defined on ints (PyTorch): no error.
  CHECK_NOTHROW(run1(tiled([](auto &x) { pto::isnan(x); }), pto::DT_INT32));
  CHECK_NOTHROW(run1(tiled([](auto &x) { pto::logical_not(x); }), pto::DT_BOOL));
}
