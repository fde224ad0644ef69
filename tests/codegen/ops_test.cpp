// ops_test.cpp - Every tensor op, run as a kernel in each run mode (support::run_modes), against
// naive double / int64 loops (support/naive.h). Shapes have tails ([5, 37] under a [2, 16] tile),
// size-1 dims and broadcasting; dtypes cover fp32, fp16, bf16, fp64 and the integer types.
#include "pto/pto.h"

#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

using naive::Array;
using support::OpClass;

namespace {

const std::vector<int64_t> kShape{5, 37}; // tails in both dims under kTile
const std::vector<int64_t> kTile{2, 16};

std::vector<pto::SymbolicScalar> zeros_at(int rank) {
  return std::vector<pto::SymbolicScalar>(static_cast<size_t>(rank), pto::SymbolicScalar(0));
}

using UnaryFn = std::function<pto::Tensor(const pto::Tensor &)>;
using BinaryFn = std::function<pto::Tensor(const pto::Tensor &, const pto::Tensor &)>;

/// Runs y = f(x) as a kernel with vec tile `tile`; y has `out_dt` and `out_shape`.
pto::HostTensor run_unary(pto::RunMode m, const pto::HostTensor &x, pto::DataType out_dt,
                          const std::vector<int64_t> &out_shape, const UnaryFn &f,
                          const std::vector<int64_t> &tile = kTile) {
  pto::HostTensor y(out_dt, out_shape);
  auto k = pto::jit(
      "unary",
      [&](pto::Tensor tx, pto::Tensor ty) {
        pto::set_vec_tile_shapes(tile);
        pto::assemble(f(tx), zeros_at(ty.dim()), ty);
      },
      support::opts(m));
  k(x, y);
  return y;
}

/// Runs y = f(a, b) as a kernel; y has a's dtype and `out_shape`.
pto::HostTensor run_binary(pto::RunMode m, const pto::HostTensor &a, const pto::HostTensor &b,
                           const std::vector<int64_t> &out_shape, const BinaryFn &f) {
  pto::HostTensor y(a.dtype(), out_shape);
  auto k = pto::jit(
      "binary",
      [&](pto::Tensor ta, pto::Tensor tb, pto::Tensor ty) {
        pto::set_vec_tile_shapes(kTile);
        pto::assemble(f(ta, tb), zeros_at(ty.dim()), ty);
      },
      support::opts(m));
  k(a, b, y);
  return y;
}

/// Value range of random integer inputs per dtype: the whole range for int8 (so that add/mul
/// wrap), and ranges whose products stay exact in double for the wider types.
std::pair<double, double> int_range(pto::DataType dt) {
  switch (dt) {
  case pto::DT_INT8:
    return {-128, 127};
  case pto::DT_INT32:
    return {-100000, 100000}; // products up to 1e10 wrap in int32
  default:
    return {-1000000, 1000000};
  }
}

const pto::DataType kFloatTypes[] = {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_DOUBLE};
const pto::DataType kIntTypes[] = {pto::DT_INT8, pto::DT_INT32, pto::DT_INT64};

} // namespace

TEST_CASE("unary float ops match naive double loops") {
  struct U {
    const char *name;
    UnaryFn f;
    std::function<double(double)> want;
    double lo, hi;
    OpClass cls;
  };
  const std::vector<U> ops = {
      {"neg", [](const pto::Tensor &x) { return pto::neg(x); }, [](double v) { return -v; }, -4, 4,
       OpClass::Basic},
      {"unary -", [](const pto::Tensor &x) { return -x; }, [](double v) { return -v; }, -4, 4,
       OpClass::Basic},
      {"abs", [](const pto::Tensor &x) { return pto::abs(x); },
       [](double v) { return std::fabs(v); }, -4, 4, OpClass::Basic},
      {"exp", [](const pto::Tensor &x) { return pto::exp(x); },
       [](double v) { return std::exp(v); }, -5, 5, OpClass::Transcendental},
      {"log", [](const pto::Tensor &x) { return pto::log(x); },
       [](double v) { return std::log(v); }, 0.01, 50, OpClass::Transcendental},
      {"sqrt", [](const pto::Tensor &x) { return pto::sqrt(x); },
       [](double v) { return std::sqrt(v); }, 0, 50, OpClass::Basic},
      {"rsqrt", [](const pto::Tensor &x) { return pto::rsqrt(x); },
       [](double v) { return 1 / std::sqrt(v); }, 0.01, 50, OpClass::Transcendental},
      {"reciprocal", [](const pto::Tensor &x) { return pto::reciprocal(x); },
       [](double v) { return 1 / v; }, 0.1, 20, OpClass::Basic},
  };
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (const auto &op : ops) {
        for (auto dt : kFloatTypes) {
          for (const auto &shape :
               {kShape, std::vector<int64_t>{1, 37}, std::vector<int64_t>{5, 1}}) {
            CAPTURE(op.name);
            CAPTURE(pto::name(dt));
            CAPTURE(shape[0]);
            CAPTURE(shape[1]);
            auto x = naive::random_tensor(dt, shape, /*seed=*/17, op.lo, op.hi);
            auto y = run_unary(m, x, dt, shape, op.f);
            CHECK(support::mismatch(y, naive::map(naive::from(x), op.want),
                                    support::tolerance(dt, op.cls)) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("unary float ops: special values (NaN, infinities, signed zero)") {
  // exp(-inf) = 0, exp(inf) = inf, log(0) = -inf, log(-1) = NaN, sqrt(-0) = -0, 1/-0 = -inf.
  const std::vector<double> in = {0.0, -0.0, INFINITY, -INFINITY, NAN, -1.0, 1.0};
  pto::HostTensor x(pto::DT_FP32, {1, static_cast<int64_t>(in.size())});
  for (size_t i = 0; i < in.size(); ++i)
    x.set(static_cast<int64_t>(i), in[i]);
  Array ax = naive::from(x);
  const auto tol = support::tolerance(pto::DT_FP32, OpClass::Transcendental);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      const auto &shape = x.shape();
      auto exp_y = run_unary(m, x, pto::DT_FP32, shape, [](auto &t) { return pto::exp(t); });
      CHECK(support::mismatch(exp_y, naive::map(ax, [](double v) { return std::exp(v); }), tol) ==
            "");
      auto log_y = run_unary(m, x, pto::DT_FP32, shape, [](auto &t) { return pto::log(t); });
      CHECK(support::mismatch(log_y, naive::map(ax, [](double v) { return std::log(v); }), tol) ==
            "");
      auto sqrt_y = run_unary(m, x, pto::DT_FP32, shape, [](auto &t) { return pto::sqrt(t); });
      CHECK(std::signbit(sqrt_y.get(1))); // sqrt(-0) = -0
      CHECK(support::mismatch(sqrt_y, naive::map(ax, [](double v) { return std::sqrt(v); }), tol) ==
            "");
      auto rec_y = run_unary(m, x, pto::DT_FP32, shape, [](auto &t) { return pto::reciprocal(t); });
      CHECK(support::mismatch(rec_y, naive::map(ax, [](double v) { return 1 / v; }), tol) == "");
    }
  }
}

TEST_CASE("unary int ops (neg, abs) wrap like two's complement") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kIntTypes) {
        CAPTURE(pto::name(dt));
        auto [lo, hi] = int_range(dt);
        auto x = naive::random_tensor(dt, kShape, /*seed=*/5, lo, hi);
        if (dt == pto::DT_INT8)
          x.set(0, -128); // -(-128) wraps to -128
        Array ax = naive::from(x);
        auto neg = run_unary(m, x, dt, kShape, [](auto &t) { return pto::neg(t); });
        CHECK(support::mismatch(
                  neg,
                  naive::map(
                      ax, [&](double v) { return naive::wrap_int(-static_cast<int64_t>(v), dt); }),
                  {}) == "");
        auto ab = run_unary(m, x, dt, kShape, [](auto &t) { return pto::abs(t); });
        CHECK(support::mismatch(ab,
                                naive::map(ax,
                                           [&](double v) {
                                             return naive::wrap_int(
                                                 std::llabs(static_cast<int64_t>(v)), dt);
                                           }),
                                {}) == "");
      }
    }
  }
}

TEST_CASE("binary ops match naive loops, with broadcasting") {
  struct B {
    const char *name;
    BinaryFn f;
    std::function<double(double, double)> want_f;
    std::function<int64_t(int64_t, int64_t)> want_i;
  };
  const std::vector<B> ops = {
      {"add", [](auto &a, auto &b) { return pto::add(a, b); }, std::plus<double>(),
       [](int64_t a, int64_t b) { return a + b; }},
      {"sub", [](auto &a, auto &b) { return pto::sub(a, b); }, std::minus<double>(),
       [](int64_t a, int64_t b) { return a - b; }},
      {"mul", [](auto &a, auto &b) { return pto::mul(a, b); }, std::multiplies<double>(),
       [](int64_t a, int64_t b) { return a * b; }},
      {"div", [](auto &a, auto &b) { return pto::div(a, b); }, std::divides<double>(),
       [](int64_t a, int64_t b) { return a / b; }}, // C++ truncates, as the op must
      {"maximum", [](auto &a, auto &b) { return pto::maximum(a, b); },
       [](double a, double b) { return std::max(a, b); },
       [](int64_t a, int64_t b) { return std::max(a, b); }},
      {"minimum", [](auto &a, auto &b) { return pto::minimum(a, b); },
       [](double a, double b) { return std::min(a, b); },
       [](int64_t a, int64_t b) { return std::min(a, b); }},
      {"operator+", [](auto &a, auto &b) { return a + b; }, std::plus<double>(),
       [](int64_t a, int64_t b) { return a + b; }},
      {"operator-", [](auto &a, auto &b) { return a - b; }, std::minus<double>(),
       [](int64_t a, int64_t b) { return a - b; }},
      {"operator*", [](auto &a, auto &b) { return a * b; }, std::multiplies<double>(),
       [](int64_t a, int64_t b) { return a * b; }},
      {"operator/", [](auto &a, auto &b) { return a / b; }, std::divides<double>(),
       [](int64_t a, int64_t b) { return a / b; }},
  };
  // (a shape, b shape): equal, column and row broadcasts, a rank-1 operand, size-1 dims.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{5, 37}, {5, 37}}, {{5, 37}, {5, 1}}, {{5, 37}, {1, 37}},
      {{5, 1}, {1, 37}},  {{5, 37}, {37}},   {{1, 37}, {1, 37}}};
  std::vector<pto::DataType> dts(std::begin(kFloatTypes), std::end(kFloatTypes));
  dts.insert(dts.end(), std::begin(kIntTypes), std::end(kIntTypes));
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (const auto &op : ops) {
        for (auto dt : dts) {
          for (const auto &[sa, sb] : shapes) {
            CAPTURE(op.name);
            CAPTURE(pto::name(dt));
            CAPTURE(sa.size());
            CAPTURE(sa[0]);
            CAPTURE(sb[0]);
            auto out_shape = naive::broadcast_shape(sa, sb);
            const bool fp = pto::is_float(dt);
            auto [lo, hi] = fp ? std::pair<double, double>{-4, 4} : int_range(dt);
            auto a = naive::random_tensor(dt, sa, /*seed=*/1, lo, hi);
            auto b = naive::random_tensor(dt, sb, /*seed=*/2, lo, hi);
            if (std::string(op.name).find("div") != std::string::npos ||
                std::string(op.name) == "operator/")
              for (int64_t i = 0; i < b.numel(); ++i) // no zero divisors (tested in errors_test)
                if (std::fabs(b.get(i)) < 0.25)
                  b.set(i, fp ? 0.5 : 3);
            auto y = run_binary(m, a, b, out_shape, op.f);
            Array want = naive::zip(naive::from(a), naive::from(b), [&](double x, double z) {
              if (fp)
                return op.want_f(x, z);
              auto r = static_cast<uint64_t>(
                  op.want_i(static_cast<int64_t>(x), static_cast<int64_t>(z)));
              return naive::wrap_int(static_cast<int64_t>(r), dt);
            });
            CHECK(support::mismatch(y, want, support::tolerance(dt)) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("binary ops with a scalar operand, on either side") {
  struct S {
    const char *name;
    UnaryFn f;
    std::function<double(double)> want;
  };
  const std::vector<S> float_ops = {
      {"x + 2.5", [](auto &x) { return x + 2.5; }, [](double v) { return v + 2.5; }},
      {"x - 2.5", [](auto &x) { return x - 2.5; }, [](double v) { return v - 2.5; }},
      {"2.0 - x", [](auto &x) { return 2.0 - x; }, [](double v) { return 2.0 - v; }},
      {"x * 3.0", [](auto &x) { return x * 3.0; }, [](double v) { return v * 3.0; }},
      {"x / 4.0", [](auto &x) { return x / 4.0; }, [](double v) { return v / 4.0; }},
      {"2.0 / x", [](auto &x) { return 2.0 / x; }, [](double v) { return 2.0 / v; }},
      {"maximum(x, 0.0)", [](auto &x) { return pto::maximum(x, 0.0); },
       [](double v) { return std::max(v, 0.0); }},
      {"minimum(0.5, x)", [](auto &x) { return pto::minimum(0.5, x); },
       [](double v) { return std::min(0.5, v); }},
      {"x + 1 (int scalar)", [](auto &x) { return x + 1; }, [](double v) { return v + 1; }},
  };
  const std::vector<S> int_ops = {
      {"x + 3", [](auto &x) { return x + 3; }, [](double v) { return v + 3; }},
      {"7 - x", [](auto &x) { return 7 - x; }, [](double v) { return 7 - v; }},
      {"x * -2", [](auto &x) { return x * -2; }, [](double v) { return v * -2; }},
      {"x / 3", [](auto &x) { return x / 3; }, [](double v) { return std::trunc(v / 3); }},
      {"-7 / x", [](auto &x) { return pto::div(-7, x); },
       [](double v) { return std::trunc(-7 / v); }},
  };
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : kFloatTypes)
        for (const auto &op : float_ops) {
          CAPTURE(op.name);
          CAPTURE(pto::name(dt));
          auto x = naive::random_tensor(dt, kShape, /*seed=*/3, 0.5, 4);
          auto y = run_unary(m, x, dt, kShape, op.f);
          CHECK(support::mismatch(y, naive::map(naive::from(x), op.want), support::tolerance(dt)) ==
                "");
        }
      for (auto dt : kIntTypes)
        for (const auto &op : int_ops) {
          CAPTURE(op.name);
          CAPTURE(pto::name(dt));
          auto x = naive::random_tensor(dt, kShape, /*seed=*/4, -100, 100);
          for (int64_t i = 0; i < x.numel(); ++i)
            if (x.get(i) == 0)
              x.set(i, 1);
          auto y = run_unary(m, x, dt, kShape, op.f);
          CHECK(support::mismatch(y,
                                  naive::map(naive::from(x),
                                             [&](double v) {
                                               return naive::wrap_int(
                                                   static_cast<int64_t>(op.want(v)), dt);
                                             }),
                                  {}) == "");
        }
    }
  }
}

TEST_CASE("maximum, minimum and amax propagate NaN") {
  pto::HostTensor a(pto::DT_FP32, {2, 3}), b(pto::DT_FP32, {2, 3});
  const double av[] = {NAN, 1, 2, 3, NAN, -1}, bv[] = {0, NAN, 5, -3, NAN, -2};
  for (int i = 0; i < 6; ++i) {
    a.set(i, av[i]);
    b.set(i, bv[i]);
  }
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto mx = run_binary(m, a, b, {2, 3}, [](auto &x, auto &y) { return pto::maximum(x, y); });
      auto mn = run_binary(m, a, b, {2, 3}, [](auto &x, auto &y) { return pto::minimum(x, y); });
      // Expected by hand: NaN wherever either operand is NaN.
      CHECK(support::mismatch(mx, Array{{2, 3}, {NAN, NAN, 5, 3, NAN, -1}}, {}) == "");
      CHECK(support::mismatch(mn, Array{{2, 3}, {NAN, NAN, 2, -3, NAN, -2}}, {}) == "");
      auto am = run_unary(m, a, pto::DT_FP32, {2, 1},
                          [](auto &x) { return pto::amax(x, 1, {.keepdim = true}); });
      CHECK(std::isnan(am.get(0))); // row 0 holds a NaN
      CHECK(std::isnan(am.get(1))); // row 1 holds a NaN
    }
  }
}

TEST_CASE("cast between dtypes: round to nearest even, truncate, saturate, wrap") {
  struct C {
    pto::DataType from, to;
    double lo, hi;
  };
  const std::vector<C> cases = {
      {pto::DT_FP32, pto::DT_FP16, -70000, 70000}, // includes overflow to inf
      {pto::DT_FP32, pto::DT_BF16, -100, 100},
      {pto::DT_FP16, pto::DT_FP32, -100, 100},
      {pto::DT_BF16, pto::DT_FP32, -100, 100},
      {pto::DT_FP32, pto::DT_DOUBLE, -100, 100},
      {pto::DT_DOUBLE, pto::DT_FP32, -100, 100},
      {pto::DT_DOUBLE, pto::DT_FP16, -100, 100},
      {pto::DT_FP32, pto::DT_INT32, -1000, 1000}, // truncation toward zero
      {pto::DT_FP32, pto::DT_INT8, -300, 300},    // saturation
      {pto::DT_FP16, pto::DT_INT8, -300, 300},
      {pto::DT_FP32, pto::DT_INT64, -1e6, 1e6},
      {pto::DT_INT32, pto::DT_FP32, -100000, 100000},
      {pto::DT_INT32, pto::DT_FP16, -3000, 3000},
      {pto::DT_INT32, pto::DT_INT8, -100000, 100000}, // wraps
      {pto::DT_INT8, pto::DT_INT64, -128, 127},
      {pto::DT_INT64, pto::DT_INT32, -1e6, 1e6},
      {pto::DT_FP32, pto::DT_BOOL, -2, 2},
      {pto::DT_INT32, pto::DT_BOOL, -2, 2},
      {pto::DT_BOOL, pto::DT_FP32, 0, 1},
      {pto::DT_BOOL, pto::DT_INT32, 0, 1},
  };
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (const auto &c : cases) {
        CAPTURE(pto::name(c.from));
        CAPTURE(pto::name(c.to));
        auto x = naive::random_tensor(c.from, kShape, /*seed=*/9, c.lo, c.hi);
        if (pto::is_float(c.from)) {
          x.set(0, 2.5); // ties and exact values
          x.set(1, -2.5);
          x.set(2, 0.0);
        }
        auto y = run_unary(m, x, c.to, kShape, [&](auto &t) { return pto::cast(t, c.to); });
        Array want = naive::map(naive::from(x), [&](double v) {
          if (c.to == pto::DT_BOOL)
            return v != 0 ? 1.0 : 0.0;
          if (pto::is_float(c.to))
            return naive::round_to(v, c.to);
          if (pto::is_float(c.from))
            return naive::saturate_int(v, c.to);
          return naive::wrap_int(static_cast<int64_t>(v), c.to);
        });
        CHECK(support::mismatch(y, want, {}) == "");
      }
      // NaN -> 0, +-inf saturate.
      pto::HostTensor s(pto::DT_FP32, {1, 3});
      s.set(0, NAN);
      s.set(1, INFINITY);
      s.set(2, -INFINITY);
      auto y = run_unary(m, s, pto::DT_INT32, {1, 3},
                         [](auto &t) { return pto::cast(t, pto::DT_INT32); });
      CHECK(y.get(0) == 0);
      CHECK(y.get(1) == 2147483647.0);
      CHECK(y.get(2) == -2147483648.0);
    }
  }
}

TEST_CASE("reductions (sum, amax, amin) over either axis, with and without keepdim") {
  struct R {
    const char *name;
    std::function<pto::Tensor(const pto::Tensor &, int, bool)> f;
    naive::Reduce kind;
  };
  const std::vector<R> ops = {
      {"sum", [](auto &x, int a, bool k) { return pto::sum(x, a, {.keepdim = k}); },
       naive::Reduce::Sum},
      {"amax", [](auto &x, int a, bool k) { return pto::amax(x, a, {.keepdim = k}); },
       naive::Reduce::Max},
      {"amin", [](auto &x, int a, bool k) { return pto::amin(x, a, {.keepdim = k}); },
       naive::Reduce::Min},
  };
  const pto::DataType dts[] = {pto::DT_FP32, pto::DT_FP16,  pto::DT_BF16, pto::DT_DOUBLE,
                               pto::DT_INT8, pto::DT_INT32, pto::DT_INT64};
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (const auto &op : ops)
        for (auto dt : dts)
          for (int axis : {-1, 0, 1})
            for (bool keep : {true, false})
              for (const auto &shape : {kShape, std::vector<int64_t>{1, 37}}) {
                CAPTURE(op.name);
                CAPTURE(pto::name(dt));
                CAPTURE(axis);
                CAPTURE(keep);
                CAPTURE(shape[0]);
                const bool fp = pto::is_float(dt);
                auto [lo, hi] = fp ? std::pair<double, double>{-4, 4} : int_range(dt);
                auto x = naive::random_tensor(dt, shape, /*seed=*/11, lo, hi);
                Array want = naive::reduce(naive::from(x), axis, keep, op.kind);
                if (!fp) // int sums wrap to the dtype (int8 rows of 37 overflow)
                  want = naive::map(
                      want, [&](double v) { return naive::wrap_int(static_cast<int64_t>(v), dt); });
                auto y =
                    run_unary(m, x, dt, want.shape, [&](auto &t) { return op.f(t, axis, keep); });
                CHECK(support::mismatch(y, want, support::tolerance(dt)) == "");
              }
    }
  }
}

TEST_CASE("reductions of a rank-1 tensor keep one element") {
  auto x = naive::random_tensor(pto::DT_FP32, {37}, /*seed=*/12);
  Array want = naive::reduce(naive::from(x), 0, false, naive::Reduce::Sum);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto y = run_unary(m, x, pto::DT_FP32, {1}, [](auto &t) { return pto::sum(t, 0); }, {16});
      CHECK(support::mismatch(y, want, support::tolerance(pto::DT_FP32)) == "");
    }
  }
}

TEST_CASE("full fills the valid region with the converted value") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt :
           {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_INT8, pto::DT_INT32, pto::DT_INT64}) {
        CAPTURE(pto::name(dt));
        pto::HostTensor y(dt, kShape);
        auto k = pto::jit(
            "full",
            [&](pto::Tensor ty) {
              pto::set_vec_tile_shapes(kTile);
              pto::assemble(pto::full({5, 37}, 2.7, dt), {0, 0}, ty);
            },
            support::opts(m));
        k(y);
        // Floats: 2.7 rounded to the dtype; ints: 2.7 truncated to 2.
        double v = pto::is_float(dt) ? naive::round_to(2.7, dt) : 2.0;
        CHECK(support::mismatch(y, Array{kShape, std::vector<double>(5 * 37, v)}, {}) == "");
      }
      // A valid shape smaller than the shape: only the valid region is written; assemble copies
      // only the valid region, so the rest of y keeps its sentinel.
      pto::HostTensor y(pto::DT_FP32, kShape);
      y.fill(-7);
      auto k = pto::jit(
          "full_valid",
          [&](pto::Tensor ty) {
            pto::set_vec_tile_shapes(kTile);
            pto::assemble(pto::full({5, 37}, 1.5, pto::DT_FP32, {.valid_shape = {{3, 20}}}), {0, 0},
                          ty);
          },
          support::opts(m));
      k(y);
      Array want{kShape, std::vector<double>(5 * 37, -7)};
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 20; ++c)
          want.v[static_cast<size_t>(r * 37 + c)] = 1.5;
      CHECK(support::mismatch(y, want, {}) == "");
    }
  }
}

TEST_CASE("view and assemble move windows; elements outside the valid region are untouched") {
  auto x = naive::random_tensor(pto::DT_FP32, {8, 45}, /*seed=*/21);
  Array ax = naive::from(x);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      // view [3, 20] at (1, 5) -> y
      pto::HostTensor y(pto::DT_FP32, {3, 20});
      auto kv = pto::jit(
          "view",
          [](pto::Tensor tx, pto::Tensor ty) {
            pto::set_vec_tile_shapes(2, 16);
            pto::assemble(pto::view(tx, {3, 20}, {1, 5}) * 2.0, {0, 0}, ty);
          },
          support::opts(m));
      kv(x, y);
      Array want{{3, 20}, {}};
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 20; ++c)
          want.v.push_back(2.0 * ax.v[static_cast<size_t>((r + 1) * 45 + c + 5)]);
      CHECK(support::mismatch(y, want, support::tolerance(pto::DT_FP32)) == "");

      // view with valid_shape [2, 7]: only that part is computed and assembled.
      pto::HostTensor z(pto::DT_FP32, {3, 20});
      z.fill(-7);
      auto kvv = pto::jit(
          "view_valid",
          [](pto::Tensor tx, pto::Tensor tz) {
            pto::set_vec_tile_shapes(2, 16);
            auto v = pto::view(tx, {3, 20}, {1, 5}, {.valid_shape = {{2, 7}}});
            pto::assemble(pto::exp(v), {0, 0}, tz);
          },
          support::opts(m));
      kvv(x, z);
      Array wantz{{3, 20}, std::vector<double>(60, -7)};
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < 7; ++c)
          wantz.v[static_cast<size_t>(r * 20 + c)] =
              std::exp(ax.v[static_cast<size_t>((r + 1) * 45 + c + 5)]);
      CHECK(support::mismatch(z, wantz,
                              support::tolerance(pto::DT_FP32, OpClass::Transcendental)) == "");

      // assemble [5, 37] into [8, 45] at (2, 3); the rest keeps its sentinel.
      auto s = naive::random_tensor(pto::DT_FP32, kShape, /*seed=*/22);
      pto::HostTensor out(pto::DT_FP32, {8, 45});
      out.fill(-7);
      auto ka = pto::jit(
          "assemble",
          [](pto::Tensor ts, pto::Tensor to) {
            pto::set_vec_tile_shapes(2, 16);
            pto::assemble(ts, {2, 3}, to);
          },
          support::opts(m));
      ka(s, out);
      Array wanto{{8, 45}, std::vector<double>(8 * 45, -7)};
      for (int64_t r = 0; r < 5; ++r)
        for (int64_t c = 0; c < 37; ++c)
          wanto.v[static_cast<size_t>((r + 2) * 45 + c + 3)] = s.get(r * 37 + c);
      CHECK(support::mismatch(out, wanto, {}) == "");
    }
  }
}

TEST_CASE("softmax kernel (the issue's spelling) matches a naive double softmax") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      for (auto dt : {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16}) {
        CAPTURE(pto::name(dt));
        auto x = naive::random_tensor(dt, {13, 1000}, /*seed=*/42, -3, 3);
        pto::HostTensor y(dt, {13, 1000});
        auto softmax = pto::jit(
            "softmax",
            [](pto::Tensor x, pto::Tensor y) {
              pto::set_vec_tile_shapes(8, 1024);
              auto m = pto::amax(x, -1, {.keepdim = true});
              auto e = pto::exp(x - m);
              pto::assemble(e / pto::sum(e, -1, {.keepdim = true}), {0, 0}, y);
            },
            support::opts(m));
        softmax(x, y);
        CHECK(support::mismatch(y, naive::softmax_rows(naive::from(x)), support::tolerance(dt)) ==
              "");
      }
    }
  }
}

TEST_CASE("loop over row blocks with view, valid_shape and assemble (reference §3.3)") {
  // N = 50 rows: blocks of 16, the last one has 2 valid rows.
  auto x = naive::random_tensor(pto::DT_FP32, {50, 200}, /*seed=*/33);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      pto::HostTensor y(pto::DT_FP32, {50, 200});
      auto k = pto::jit(
          "exp_blocks",
          [](pto::Tensor x, pto::Tensor out) {
            auto n = x.shape(0);
            for (auto i : pto::loop((n + 15) / 16)) {
              auto xv = pto::view(x, {16, 200}, {i * 16, 0},
                                  {.valid_shape = {{(n - i * 16).min(16), 200}}});
              pto::set_vec_tile_shapes(16, 64);
              pto::assemble(pto::exp(xv), {i * 16, 0}, out);
            }
          },
          support::opts(m));
      k(x, y);
      CHECK(support::mismatch(y, naive::map(naive::from(x), [](double v) { return std::exp(v); }),
                              support::tolerance(pto::DT_FP32, OpClass::Transcendental)) == "");
    }
  }
}

TEST_CASE("a DYNAMIC dim runs every size with one trace") {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      // Row sums of x [N, 40] into y [N, 1], 16 rows per loop iteration; N is a run-time value.
      auto k = pto::jit(
          "row_sum_dyn",
          [](pto::Tensor x, pto::Tensor y) {
            auto n = x.shape(0);
            for (auto i : pto::loop((n + 15) / 16)) {
              auto rows = (n - i * 16).min(16);
              auto xv = pto::view(x, {16, 40}, {i * 16, 0}, {.valid_shape = {{rows, 40}}});
              pto::set_vec_tile_shapes(8, 16);
              pto::assemble(pto::sum(xv, -1, {.keepdim = true}) + 1.0, {i * 16, 0}, y);
            }
          },
          support::opts(m, {{{pto::DYNAMIC, 40}}, {{pto::DYNAMIC, 1}}}));
      for (int64_t n : {37, 5}) {
        CAPTURE(n);
        auto x = naive::random_tensor(pto::DT_FP32, {n, 40}, /*seed=*/static_cast<uint64_t>(n));
        pto::HostTensor y(pto::DT_FP32, {n, 1});
        k(x, y);
        Array want = naive::map(naive::reduce(naive::from(x), -1, true, naive::Reduce::Sum),
                                [](double v) { return v + 1; });
        CHECK(support::mismatch(y, want, support::tolerance(pto::DT_FP32)) == "");
      }
      CHECK(k.stats().traces == 1);
      CHECK(k.stats().calls == 2);
    }
  }
}
