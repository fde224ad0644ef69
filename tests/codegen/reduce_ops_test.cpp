// reduce_ops_test.cpp - The reductions of reduce_ops.h (prod, mean, var, argmax/argmin,
// cumsum/cumprod, the axis-list forms), run as kernels in each run mode against naive double /
// int64 loops written here. One kernel per dtype family runs every case (support/multi_op.h).
// Shapes [5, 37] under a [2, 16] tile give tails in both dims; cases cover the fused last-axis
// path, the standalone non-last-axis path, ties, NaN, empty valid extents, length-1 axes and a
// run-time (DYNAMIC) element count.
#include "pto/pto.h"

#include "support/multi_op.h"
#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

using naive::Array;
using support::Case;

namespace {

using Values = std::vector<double>;
using Fold = std::function<double(const Values &)>;

const std::vector<int64_t> kTile{2, 16};

/// Applies `f` to the elements of every lane over `axes` (all axes when empty). keepdim keeps
/// them as size 1; a result without dims is [1].
Array reduce_axes(const Array &a, std::vector<int> axes, bool keepdim, const Fold &f) {
  size_t r = a.shape.size();
  if (axes.empty())
    for (size_t d = 0; d < r; ++d)
      axes.push_back(static_cast<int>(d));
  std::vector<bool> red(r, false);
  for (int ax : axes)
    red[static_cast<size_t>(ax < 0 ? ax + static_cast<int>(r) : ax)] = true;
  Array out;
  for (size_t d = 0; d < r; ++d)
    if (!red[d] || keepdim)
      out.shape.push_back(red[d] ? 1 : a.shape[d]);
  if (out.shape.empty())
    out.shape = {1};
  int64_t n_out = 1;
  for (auto d : out.shape)
    n_out *= d;
  std::vector<Values> groups(static_cast<size_t>(n_out));
  for (int64_t i = 0; i < a.numel(); ++i) {
    int64_t rem = i, key = 0, mul = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % a.shape[d];
      rem /= a.shape[d];
      if (!red[d]) {
        key += idx * mul;
        mul *= a.shape[d];
      }
    }
    groups[static_cast<size_t>(key)].push_back(a.v[static_cast<size_t>(i)]);
  }
  for (auto &g : groups)
    out.v.push_back(f(g));
  return out;
}

/// Inclusive scan along `axis` with `step`.
Array scan(const Array &a, int axis, double init,
           const std::function<double(double, double)> &step) {
  Array out = a;
  size_t ax = static_cast<size_t>(axis);
  int64_t inner = 1;
  for (size_t d = ax + 1; d < a.shape.size(); ++d)
    inner *= a.shape[d];
  int64_t n = a.shape[ax], outer = a.numel() / (n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = init;
      for (int64_t k = 0; k < n; ++k) {
        size_t at = static_cast<size_t>((o * n + k) * inner + i);
        acc = step(acc, a.v[at]);
        out.v[at] = acc;
      }
    }
  return out;
}

double fsum(const Values &v) {
  double s = 0;
  for (double x : v)
    s += x;
  return s;
}
double fprod(const Values &v) {
  double s = 1;
  for (double x : v)
    s *= x;
  return s;
}
double fmean(const Values &v) { return fsum(v) / static_cast<double>(v.size()); }
Fold fvar(double correction) {
  return [correction](const Values &v) {
    double m = fmean(v), s = 0;
    for (double x : v)
      s += (x - m) * (x - m);
    return s / std::max(static_cast<double>(v.size()) - correction, 0.0);
  };
}
/// First index of the max (min); a NaN wins at its first position; -1 when empty.
Fold farg(bool is_max) {
  return [is_max](const Values &v) {
    int64_t best = -1;
    for (size_t k = 0; k < v.size(); ++k) {
      if (std::isnan(v[k]))
        return static_cast<double>(k);
      if (best < 0 ||
          (is_max ? v[k] > v[static_cast<size_t>(best)] : v[k] < v[static_cast<size_t>(best)]))
        best = static_cast<int64_t>(k);
    }
    return static_cast<double>(best);
  };
}
double max_nan(const Values &v) {
  double m = -INFINITY;
  for (double x : v)
    if (std::isnan(x) || x > m)
      m = x;
  return m;
}
double min_nan(const Values &v) {
  double m = INFINITY;
  for (double x : v)
    if (std::isnan(x) || x < m)
      m = x;
  return m;
}

/// Columns [c, c + w) of a 2-D array.
Array cols(const Array &a, int64_t c, int64_t w) {
  Array out;
  out.shape = {a.shape[0], w};
  for (int64_t i = 0; i < a.shape[0]; ++i)
    for (int64_t j = 0; j < w; ++j)
      out.v.push_back(a.v[static_cast<size_t>(i * a.shape[1] + c + j)]);
  return out;
}
Array rows(const Array &a, int64_t n) {
  Array out;
  out.shape = {n, a.shape[1]};
  out.v.assign(a.v.begin(), a.v.begin() + n * a.shape[1]);
  return out;
}
Array filled(std::vector<int64_t> shape, double v) {
  Array out;
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  out.shape = std::move(shape);
  out.v.assign(static_cast<size_t>(n), v);
  return out;
}
/// The product of small integers, wrapped to `dt` (two's complement) before it leaves int64.
Fold fprod_wrapped(pto::DataType dt) {
  return [dt](const Values &v) {
    uint64_t p = 1;
    for (double x : v)
      p *= static_cast<uint64_t>(static_cast<int64_t>(x));
    return naive::wrap_int(static_cast<int64_t>(p), dt);
  };
}
Array wrapped(Array a, pto::DataType dt) {
  for (auto &x : a.v)
    x = naive::wrap_int(static_cast<int64_t>(x), dt);
  return a;
}

void check_all(const pto::HostTensor &a, const pto::HostTensor &b, const std::vector<Case> &cases,
               const std::vector<pto::TensorSpec> &specs = {}) {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      CHECK_MESSAGE(support::run_cases(m, a, b, cases, kTile, specs) == "", "mode ",
                    support::mode_name(m));
    }
  }
}

using T = pto::Tensor;

} // namespace

TEST_CASE("fp32 reductions match naive double loops (fused and standalone paths, ties, NaN, "
          "empty and length-1 axes)") {
  // a: ties and NaN for the arg-reductions; b: clean values in [0.5, 1.5] for the arithmetic.
  auto a = naive::random_tensor(pto::DT_FP32, {5, 37}, 11, -2, 2);
  a.set(2 * 37 + 5, 3.0); // row 2: the max twice, the first at 5
  a.set(2 * 37 + 30, 3.0);
  a.set(1 * 37 + 7, -3.0); // row 1: the min twice, the first at 7
  a.set(1 * 37 + 8, -3.0);
  a.set(3 * 37 + 10, NAN); // row 3: NaN twice, the first at 10
  a.set(3 * 37 + 20, NAN);
  a.set(4 * 37 + 36, 5.0); // row 4: the max in the last (tail) column
  auto b = naive::random_tensor(pto::DT_FP32, {5, 37}, 12, 0.5, 1.5);
  Array A = naive::from(a), Bv = naive::from(b);
  auto tol = support::tolerance(pto::DT_FP32);
  support::Tolerance exact{};
  auto empty = [](const T &x) { // valid extent 0 on the last axis
    return pto::view(x, {5, 37}, {0, 0}, {.valid_shape = std::vector<pto::SymbolicScalar>{5, 0}});
  };
  auto col3 = [](const T &x) { return pto::view(x, {5, 1}, {0, 3}); };
  Array C3 = cols(Bv, 3, 1);
  std::vector<Case> cases = {
      {"prod last keepdim (fused)", [](T, T y) { return pto::prod(y, -1, {.keepdim = true}); },
       reduce_axes(Bv, {1}, true, fprod), tol},
      {"prod axis 0", [](T, T y) { return pto::prod(y, 0); }, reduce_axes(Bv, {0}, false, fprod),
       tol},
      {"prod last no keepdim", [](T, T y) { return pto::prod(y, 1); },
       reduce_axes(Bv, {1}, false, fprod), tol},
      {"mean 1", [](T, T y) { return pto::mean(y, 1); }, reduce_axes(Bv, {1}, false, fmean), tol},
      {"mean 0 keepdim", [](T, T y) { return pto::mean(y, 0, {.keepdim = true}); },
       reduce_axes(Bv, {0}, true, fmean), tol},
      {"mean {0,1}", [](T, T y) { return pto::mean(y, std::vector<int>{0, 1}); },
       reduce_axes(Bv, {0, 1}, false, fmean), tol},
      {"mean {} keepdim",
       [](T, T y) { return pto::mean(y, std::vector<int>{}, {.keepdim = true}); },
       reduce_axes(Bv, {}, true, fmean), tol},
      {"var 1", [](T, T y) { return pto::var(y, 1); }, reduce_axes(Bv, {1}, false, fvar(1)), tol},
      {"var {0,1} correction 0",
       [](T, T y) { return pto::var(y, std::vector<int>{0, 1}, {.correction = 0}); },
       reduce_axes(Bv, {0, 1}, false, fvar(0)), tol},
      {"var 0 correction 2 keepdim",
       [](T, T y) { return pto::var(y, 0, {.correction = 2, .keepdim = true}); },
       reduce_axes(Bv, {0}, true, fvar(2)), tol},
      {"argmax 1", [](T x, T) { return pto::argmax(x, 1); }, reduce_axes(A, {1}, false, farg(true)),
       exact},
      {"argmin 1", [](T x, T) { return pto::argmin(x, -1); },
       reduce_axes(A, {1}, false, farg(false)), exact},
      {"argmax 0 keepdim", [](T x, T) { return pto::argmax(x, 0, {.keepdim = true}); },
       reduce_axes(A, {0}, true, farg(true)), exact},
      {"argmin 0", [](T x, T) { return pto::argmin(x, 0); },
       reduce_axes(A, {0}, false, farg(false)), exact},
      {"cumsum 1", [](T, T y) { return pto::cumsum(y, 1); },
       scan(Bv, 1, 0, [](double s, double v) { return s + v; }), tol},
      {"cumsum 0", [](T, T y) { return pto::cumsum(y, 0); },
       scan(Bv, 0, 0, [](double s, double v) { return s + v; }), tol},
      {"cumprod 1", [](T, T y) { return pto::cumprod(y, -1); },
       scan(Bv, 1, 1, [](double s, double v) { return s * v; }), tol},
      {"cumprod 0 NaN", [](T x, T) { return pto::cumprod(x, 0); },
       scan(A, 0, 1, [](double s, double v) { return s * v; }), tol},
      {"sum {0,1}", [](T, T y) { return pto::sum(y, std::vector<int>{0, 1}); },
       reduce_axes(Bv, {0, 1}, false, fsum), tol},
      {"sum {-1,0} keepdim", [](T, T y) { return pto::sum(y, {-1, 0}, {.keepdim = true}); },
       reduce_axes(Bv, {0, 1}, true, fsum), tol},
      {"amax {} NaN", [](T x, T) { return pto::amax(x, std::vector<int>{}); },
       reduce_axes(A, {}, false, max_nan), exact},
      {"amin {1, 0}", [](T, T y) { return pto::amin(y, {1, 0}); },
       reduce_axes(Bv, {}, false, min_nan), exact},
      {"prod {0,1} of 2 rows",
       [](T, T y) { return pto::prod(pto::view(y, {2, 37}, {0, 0}), std::vector<int>{0, 1}); },
       reduce_axes(rows(Bv, 2), {}, false, fprod), tol},
      // Empty valid extents (the documented rule) and length-1 axes (the identity).
      {"empty sum", [&](T, T y) { return pto::sum(empty(y), 1, {.keepdim = true}); },
       filled({5, 1}, 0), exact},
      {"empty prod", [&](T, T y) { return pto::prod(empty(y), 1, {.keepdim = true}); },
       filled({5, 1}, 1), exact},
      {"empty prod axis 1 standalone", [&](T, T y) { return pto::prod(empty(y), 1); },
       filled({5}, 1), exact},
      {"empty amax", [&](T, T y) { return pto::amax(empty(y), 1); }, filled({5}, -INFINITY), exact},
      {"empty amin", [&](T, T y) { return pto::amin(empty(y), 1, {.keepdim = true}); },
       filled({5, 1}, INFINITY), exact},
      {"empty argmax", [&](T, T y) { return pto::argmax(empty(y), 1); }, filled({5}, -1), exact},
      {"empty mean", [&](T, T y) { return pto::mean(empty(y), 1); }, filled({5}, NAN), exact},
      {"length-1 prod", [&](T, T y) { return pto::prod(col3(y), 1, {.keepdim = true}); }, C3,
       exact},
      {"length-1 prod standalone", [&](T, T y) { return pto::prod(col3(y), 1); },
       reduce_axes(C3, {1}, false, fprod), exact},
      {"length-1 mean", [&](T, T y) { return pto::mean(col3(y), -1, {.keepdim = true}); }, C3,
       exact},
      {"length-1 argmin", [&](T, T y) { return pto::argmin(col3(y), 1); }, filled({5}, 0), exact},
      {"length-1 var correction 0", [&](T, T y) { return pto::var(col3(y), 1, {.correction = 0}); },
       filled({5}, 0), exact},
      {"length-1 var correction 1 is NaN", [&](T, T y) { return pto::var(col3(y), 1); },
       filled({5}, NAN), exact},
  };
  check_all(a, b, cases);
}

TEST_CASE("integer reductions: prod wraps, arg-reductions take the first tie, cumsum and "
          "cumprod give INT64") {
  for (pto::DataType dt : {pto::DT_INT32, pto::DT_INT8}) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, {5, 37}, 21, -3, 3); // ties everywhere
      auto b = naive::random_tensor(dt, {5, 37}, 22, -3, 3);
      Array A = naive::from(a);
      support::Tolerance exact{};
      std::vector<Case> cases = {
          {"prod last keepdim", [](T x, T) { return pto::prod(x, 1, {.keepdim = true}); },
           reduce_axes(A, {1}, true, fprod_wrapped(dt)), exact}, // 3^37 wraps int32 and int8
          {"prod 0", [](T x, T) { return pto::prod(x, 0); },
           reduce_axes(A, {0}, false, fprod_wrapped(dt)), exact},
          {"argmax 1", [](T x, T) { return pto::argmax(x, 1); },
           reduce_axes(A, {1}, false, farg(true)), exact},
          {"argmin 0", [](T x, T) { return pto::argmin(x, 0); },
           reduce_axes(A, {0}, false, farg(false)), exact},
          {"cumsum 1 int64", [](T x, T) { return pto::cumsum(x, 1); },
           scan(A, 1, 0, [](double s, double v) { return s + v; }), exact},
          {"cumprod 0 int64", [](T x, T) { return pto::cumprod(x, 0); },
           scan(A, 0, 1, [](double s, double v) { return s * v; }), exact},
          {"sum {0,1}", [](T x, T) { return pto::sum(x, std::vector<int>{0, 1}); },
           wrapped(reduce_axes(A, {}, false, fsum), dt), exact},
      };
      check_all(a, b, cases);
    }
  }
}

TEST_CASE("fp16 and bf16 reductions accumulate in fp32 and round once") {
  for (pto::DataType dt : {pto::DT_FP16, pto::DT_BF16}) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, {5, 37}, 31, 0.5, 1.5);
      Array A = naive::from(a);
      auto tol = support::tolerance(dt);
      std::vector<Case> cases = {
          {"prod 1 keepdim", [](T x, T) { return pto::prod(x, 1, {.keepdim = true}); },
           reduce_axes(A, {1}, true, fprod), tol},
          {"sum {0,1}", [](T x, T) { return pto::sum(x, std::vector<int>{0, 1}); },
           reduce_axes(A, {}, false, fsum), tol},
          {"mean 1", [](T x, T) { return pto::mean(x, 1); }, reduce_axes(A, {1}, false, fmean),
           tol},
          {"var 0", [](T x, T) { return pto::var(x, 0); }, reduce_axes(A, {0}, false, fvar(1)),
           tol},
          {"cumsum 1", [](T x, T) { return pto::cumsum(x, 1); },
           scan(A, 1, 0, [](double s, double v) { return s + v; }), tol},
          {"argmax 1",
           [](T x, T) { return pto::argmax(x, 1); },
           reduce_axes(A, {1}, false, farg(true)),
           {}},
      };
      check_all(a, a, cases);
    }
  }
}

TEST_CASE("mean and var divide by a run-time element count for DYNAMIC dims") {
  auto a = naive::random_tensor(pto::DT_FP32, {7, 37}, 41, 0.5, 1.5);
  Array A = naive::from(a);
  auto tol = support::tolerance(pto::DT_FP32);
  std::vector<Case> cases = {
      {"mean 0", [](T x, T) { return pto::mean(x, 0); }, reduce_axes(A, {0}, false, fmean), tol},
      {"var 0", [](T x, T) { return pto::var(x, 0); }, reduce_axes(A, {0}, false, fvar(1)), tol},
      {"var 0 correction 0", [](T x, T) { return pto::var(x, 0, {.correction = 0}); },
       reduce_axes(A, {0}, false, fvar(0)), tol},
  };
  check_all(a, a, cases, {{{pto::DYNAMIC, 37}}, {{pto::DYNAMIC, 37}}});
}

TEST_CASE("reduce_ops: bad axes and dtypes are typed errors naming the call site") {
  auto run = [](auto fn, pto::DataType dt) {
    pto::HostTensor x(dt, {4, 8});
    auto k = pto::jit(
        "bad",
        [&](pto::Tensor t) {
          pto::set_vec_tile_shapes(4, 8);
          fn(t);
        },
        support::opts(pto::RunMode::Interpret));
    k(x);
  };
  using doctest::Contains;
  const auto f32 = pto::DT_FP32;
  CHECK_THROWS_WITH_AS(run([](T t) { pto::prod(t, 2); }, f32), Contains("reduce_ops_test.cpp:"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::prod(t, 2); }, f32),
                       Contains("prod: axis 2 is out of range for rank 2"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::sum(t, {0, -2}); }, f32),
                       Contains("sum: axis -2 appears twice"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::amax(t, {0, 5}); }, f32),
                       Contains("amax: axis 5 is out of range"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::mean(t, 0); }, pto::DT_INT32),
                       Contains("reduce_ops_test.cpp:"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::var(t, 0); }, pto::DT_INT32),
                       Contains("var: expected a floating dtype"), pto::DTypeError);
  CHECK_THROWS_AS(run([](T t) { pto::var(t, std::vector<int>{3}); }, f32), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::argmax(t, 0); }, pto::DT_BOOL),
                       Contains("argmax: reductions over DT_BOOL"), pto::DTypeError);
  CHECK_THROWS_AS(run([](T t) { pto::argmin(t, -3); }, f32), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::cumsum(t, 2); }, f32),
                       Contains("cumsum: axis 2 is out of range"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t) { pto::cumprod(t, 0); }, pto::DT_BOOL), pto::DTypeError);
  CHECK_THROWS_AS(run([](T t) { pto::prod(t, 0); }, pto::DT_BOOL), pto::DTypeError);
}
