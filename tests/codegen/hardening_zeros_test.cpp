// hardening_zeros_test.cpp - Signed zeros and empty extents in reductions and scans (issue 8: a
// float sum over an empty axis, or over only -0.0, gave -0 in the JIT and +0 in the
// interpreter). The rule (IEEE 754 and NumPy; reduce_ops.h): a sum of only -0 is -0, any +0
// makes it +0, an empty sum is +0; prod, amax, amin, mean, cumsum and cumprod follow from it.
// Both run modes, over the last axis (fused row reductions) and axis 0 (standalone loops), every
// float dtype, row lengths around the 16-lane vector; expected bits from plain C++ loops.
#include "pto/pto.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using pto::DataType;

const std::vector<DataType> kFloats = {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_DOUBLE};

/// The reductions and scans under test, by name.
enum class R { Sum, Prod, Amax, Amin, Mean, Cumsum, Cumprod };
const std::vector<R> kAll = {R::Sum, R::Prod, R::Amax, R::Amin, R::Mean, R::Cumsum, R::Cumprod};
const char *name(R r) {
  switch (r) {
  case R::Sum:
    return "sum";
  case R::Prod:
    return "prod";
  case R::Amax:
    return "amax";
  case R::Amin:
    return "amin";
  case R::Mean:
    return "mean";
  case R::Cumsum:
    return "cumsum";
  case R::Cumprod:
    return "cumprod";
  }
  return "?";
}
bool is_scan(R r) { return r == R::Cumsum || r == R::Cumprod; }

pto::Tensor apply(R r, const pto::Tensor &x, int axis) {
  const pto::ReduceOptions keep{.keepdim = true};
  switch (r) {
  case R::Sum:
    return pto::sum(x, axis, keep);
  case R::Prod:
    return pto::prod(x, axis, keep);
  case R::Amax:
    return pto::amax(x, axis, keep);
  case R::Amin:
    return pto::amin(x, axis, keep);
  case R::Mean:
    return pto::mean(x, axis, keep);
  case R::Cumsum:
    return pto::cumsum(x, axis);
  case R::Cumprod:
    return pto::cumprod(x, axis);
  }
  return x;
}

/// IEEE maximum / minimum on doubles: -0 < +0 (no NaN in these inputs).
double ieee_max(double a, double b) { return a == b ? (std::signbit(a) ? b : a) : a > b ? a : b; }
double ieee_min(double a, double b) { return a == b ? (std::signbit(a) ? a : b) : a < b ? a : b; }

/// The reduction of `v` (one line along the axis) as NumPy defines it: the first element starts
/// the accumulation, an empty line gives the identity (sum +0, prod 1, amax -inf, amin +inf,
/// mean NaN). Every input here is +-0 or +-1, so double arithmetic is exact.
double reduce_line(R r, const std::vector<double> &v) {
  if (v.empty()) {
    switch (r) {
    case R::Sum:
      return 0.0;
    case R::Prod:
      return 1.0;
    case R::Amax:
      return -std::numeric_limits<double>::infinity();
    case R::Amin:
      return std::numeric_limits<double>::infinity();
    default:
      return std::numeric_limits<double>::quiet_NaN();
    }
  }
  double acc = v[0];
  for (size_t i = 1; i < v.size(); ++i)
    acc = r == R::Prod   ? acc * v[i]
          : r == R::Amax ? ieee_max(acc, v[i])
          : r == R::Amin ? ieee_min(acc, v[i])
                         : acc + v[i];
  return r == R::Mean ? acc / static_cast<double>(v.size()) : acc;
}
/// Inclusive scan of `v`, the first element as is.
std::vector<double> scan_line(R r, const std::vector<double> &v) {
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(i == 0 ? v[0] : r == R::Cumprod ? out.back() * v[i] : out.back() + v[i]);
  return out;
}

/// Same value and same sign bit (NaN matches NaN).
bool same(double got, double want) {
  if (std::isnan(want))
    return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

/// The results of every op of kAll over the last axis and axis 0 of one input, in one kernel
/// per (run mode, dtype): dims are DYNAMIC, so one compiled kernel serves every size, empty
/// ones included.
auto zeros_kernel(pto::RunMode mode) {
  return pto::jit(
      "zeros",
      [](pto::Tensor x, pto::Tensor y0, pto::Tensor y1, pto::Tensor y2, pto::Tensor y3,
         pto::Tensor y4, pto::Tensor y5, pto::Tensor y6, pto::Tensor y7, pto::Tensor y8,
         pto::Tensor y9, pto::Tensor y10, pto::Tensor y11, pto::Tensor y12, pto::Tensor y13) {
        pto::set_vec_tile_shapes(4, 16);
        const pto::Tensor ys[] = {y0, y1, y2, y3, y4, y5, y6, y7, y8, y9, y10, y11, y12, y13};
        size_t j = 0;
        for (R r : kAll)
          for (int axis : {1, 0})
            pto::assemble(apply(r, x, axis), {0, 0}, ys[j++]);
      },
      support::opts(
          mode, std::vector<pto::TensorSpec>(15, pto::TensorSpec{{pto::DYNAMIC, pto::DYNAMIC}})));
}

class Runner {
public:
  explicit Runner(pto::RunMode mode) : k_(zeros_kernel(mode)) {}

  /// Runs every op on `x` and checks each result element against the plain loops above.
  void check(const pto::HostTensor &x) {
    const int64_t rows = x.shape()[0], cols = x.shape()[1];
    CAPTURE(rows);
    CAPTURE(cols);
    std::vector<pto::HostTensor> ys;
    for (R r : kAll)
      for (int axis : {1, 0}) {
        std::vector<int64_t> shape = {rows, cols};
        if (!is_scan(r))
          shape[static_cast<size_t>(axis)] = 1;
        ys.emplace_back(x.dtype(), shape);
      }
    k_(x, ys[0], ys[1], ys[2], ys[3], ys[4], ys[5], ys[6], ys[7], ys[8], ys[9], ys[10], ys[11],
       ys[12], ys[13]);
    size_t j = 0;
    for (R r : kAll)
      for (int axis : {1, 0}) {
        const std::string op = name(r);
        CAPTURE(op);
        CAPTURE(axis);
        check_one(r, axis, x, ys[j++]);
      }
  }

private:
  static void check_one(R r, int axis, const pto::HostTensor &x, const pto::HostTensor &y) {
    const int64_t rows = x.shape()[0], cols = x.shape()[1];
    const int64_t lines = axis == 1 ? rows : cols, len = axis == 1 ? cols : rows;
    for (int64_t l = 0; l < lines; ++l) {
      CAPTURE(l);
      std::vector<double> line;
      for (int64_t i = 0; i < len; ++i)
        line.push_back(x.get(axis == 1 ? l * cols + i : i * cols + l));
      if (!is_scan(r)) {
        CHECK(same(y.get(l), reduce_line(r, line)));
        continue;
      }
      const auto want = scan_line(r, line);
      for (int64_t i = 0; i < len; ++i) {
        CAPTURE(i);
        CHECK(same(y.get(axis == 1 ? l * cols + i : i * cols + l), want[static_cast<size_t>(i)]));
      }
    }
  }
  decltype(zeros_kernel(pto::RunMode::Jit)) k_;
};

/// Runs `body(run, dt)` in each run mode for each float dtype, with a fresh Runner each time.
void for_each_mode_and_float(const std::function<void(Runner &, DataType)> &body) {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    for (DataType dt : kFloats) {
      const std::string dtype = pto::short_name(dt);
      CAPTURE(dtype);
      Runner run(mode);
      body(run, dt);
    }
  }
}

/// A [rows, cols] tensor of dtype `dt` with element i = f(i).
pto::HostTensor make(DataType dt, int64_t rows, int64_t cols,
                     const std::function<double(int64_t)> &f) {
  pto::HostTensor t(dt, {rows, cols});
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, f(i));
  return t;
}

} // namespace

TEST_CASE("reductions and scans of only -0: sum, mean, amax, amin -0; prod, cumprod by parity") {
  for_each_mode_and_float([](Runner &run, DataType dt) {
    for (int64_t n : {1, 2, 15, 16, 17, 33}) // around one 16-lane vector
      for (int64_t rows : {1, 3})
        run.check(make(dt, rows, n, [](int64_t) { return -0.0; }));
  });
}

TEST_CASE("reductions and scans of -0 and +0 mixed: a +0 makes the sum +0") {
  for_each_mode_and_float([](Runner &run, DataType dt) {
    for (int64_t n : {2, 17}) {
      // Row r has its one +0 at column r (row 2 at the last column); the rest -0.
      run.check(make(dt, 3, n, [n](int64_t i) {
        const int64_t r = i / n, c = i % n;
        return c == (r == 2 ? n - 1 : r) ? 0.0 : -0.0;
      }));
    }
    // +-1 alternating along rows of even length: 1 + -1 = +0 (IEEE), so the row sums cancel to
    // +0 (means +0 / n); columns are +-4 (means +-1), all exact.
    for (int64_t n : {2, 16, 18})
      run.check(make(dt, 4, n, [](int64_t i) { return i % 2 ? -1.0 : 1.0; }));
  });
}

TEST_CASE("empty reductions: sum +0, prod 1, amax -inf, amin +inf, mean NaN") {
  for_each_mode_and_float([](Runner &run, DataType dt) {
    for (int64_t n : {1, 16, 17}) {
      run.check(make(dt, n, 0, [](int64_t) { return 0.0; })); // an empty last axis
      run.check(make(dt, 0, n, [](int64_t) { return 0.0; })); // an empty axis 0
    }
  });
}

TEST_CASE("static shapes: an empty or -0 valid extent, one column or many, fused or not") {
  // A one-column input makes a fused reduction the identity; a valid extent below the shape
  // masks lanes (filled with the identity); a static empty extent takes no vector pass at all.
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    for (DataType dt : {pto::DT_FP32, pto::DT_BF16}) {
      const std::string dtype = pto::short_name(dt);
      CAPTURE(dtype);
      for (int64_t cols : {1, 17})
        for (int64_t valid : {int64_t{0}, int64_t{1}, cols}) {
          CAPTURE(cols);
          CAPTURE(valid);
          auto k = pto::jit(
              "zeros_static",
              [cols, valid](pto::Tensor x, pto::Tensor y0, pto::Tensor y1, pto::Tensor y2,
                            pto::Tensor y3) {
                pto::set_vec_tile_shapes(4, 16);
                auto v = pto::view(x, {3, cols}, {0, 0}, {.valid_shape = {{3, valid}}});
                pto::assemble(pto::sum(v, -1, {.keepdim = true}), {0, 0}, y0);
                pto::assemble(pto::mean(v, -1, {.keepdim = true}), {0, 0}, y1);
                pto::assemble(pto::amax(v, -1, {.keepdim = true}), {0, 0}, y2);
                pto::assemble(pto::sum(v, 0, {.keepdim = true}) + 0.0, {0, 0}, y3); // -0 + +0
              },
              support::opts(mode));
          pto::HostTensor x(dt, {3, cols}), y0(dt, {3, 1}), y1(dt, {3, 1}), y2(dt, {3, 1}),
              y3(dt, {1, cols});
          x.fill(-0.0);
          for (auto *y : {&y0, &y1, &y2, &y3})
            y->fill(7.0); // every element below is written: the sentinel must go
          k(x, y0, y1, y2, y3);
          const double inf = std::numeric_limits<double>::infinity();
          for (int64_t r = 0; r < 3; ++r) {
            CHECK(same(y0.get(r), valid ? -0.0 : 0.0));
            CHECK(same(y1.get(r), valid ? -0.0 : std::numeric_limits<double>::quiet_NaN()));
            CHECK(same(y2.get(r), valid ? -0.0 : -inf));
          }
          for (int64_t c = 0; c < valid; ++c) // -0 + 0.0 is +0 (IEEE)
            CHECK(same(y3.get(c), 0.0));
        }
    }
  }
}
