// hardening_loops_test.cpp - Trip counts and run-time sizes never wrap (issue 8), in both
// executors: loops whose bounds sit at the ends of int64 run exactly ceil((stop - start) / step)
// iterations; a run-time step <= 0 is a RuntimeError (control.h); bounds and result shapes whose
// run-time arithmetic overflows fail the call with a typed error at the user's line; outputs
// written by kernels keep their canaries intact.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/guard.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

constexpr const char *kFile = "hardening_loops_test.cpp";

/// Iteration k of loop(start, stop, step) marks marks[k] = 1 and adds 1 to count[0] (k is the
/// count so far, read at run time, so no index arithmetic can wrap; a fifth iteration fails the
/// call on the marks window instead of running on). `symbolic`: start, stop and step are read
/// from a DT_INT64 [3] tensor at run time, else traced as constants.
struct LoopProbe {
  int64_t start, stop, step;

  /// Runs the probe in `mode`; returns the 4 marks, then the count.
  std::vector<double> run(pto::RunMode mode, bool symbolic) const {
    auto k = pto::jit(
        symbolic ? "loop_probe_sym" : "loop_probe",
        [this, symbolic](pto::Tensor bounds, pto::Tensor marks, pto::Tensor count) {
          pto::set_vec_tile_shapes(1, 1);
          pto::SymbolicScalar a = start, b = stop, s = step;
          if (symbolic) {
            a = bounds.at({0});
            b = bounds.at({1});
            s = bounds.at({2});
          }
          auto one = pto::full({1, 1}, 1.0, pto::DT_FP32);
          for (auto i : pto::loop(a, b, s)) {
            (void)i;
            pto::assemble(one, {count.at({0}), 0}, marks);
            pto::assemble(pto::view(count, {1}, {0}) + 1, {0}, count);
          }
        },
        support::opts(mode));
    pto::HostTensor bounds(pto::DT_INT64, {3});
    auto marks = support::guarded(pto::DT_FP32, {4, 1});
    auto count = support::guarded(pto::DT_INT32, {1});
    // int64 elements beyond 2^53 cannot pass through HostTensor::set (double): write them raw.
    bounds.data_as<int64_t>()[0] = start;
    bounds.data_as<int64_t>()[1] = stop;
    bounds.data_as<int64_t>()[2] = step;
    support::run_guarded(k, bounds, marks, count);
    return {marks.get(0), marks.get(1), marks.get(2), marks.get(3), count.get(0)};
  }
};

} // namespace

TEST_CASE("loop: bounds at the ends of int64 run ceil((stop - start) / step) iterations, the "
          "index never wraps") {
  struct Case {
    int64_t start, stop, step;
    int trips; // ceil((stop - start) / step), worked out by hand
  };
  const Case cases[] = {
      {INT64_MAX - 2, INT64_MAX, 4, 1},         // i = MAX-2; MAX-2+4 would wrap
      {INT64_MAX - 9, INT64_MAX, 3, 3},         // MAX-9, MAX-6, MAX-3
      {INT64_MIN, INT64_MAX, INT64_MAX, 3},     // MIN, -1, MAX-1: a span of 2^64 - 1
      {INT64_MIN, INT64_MIN + 3, 1, 3},         // the low end
      {INT64_MAX - 1, INT64_MAX, INT64_MAX, 1}, // a step past the whole remaining range
      {5, 5, 1, 0},                             // empty
      {7, 3, 1, 0},                             // start past stop
  };
  for (auto mode : support::run_modes()) {
    for (bool symbolic : {false, true}) {
      for (const Case &c : cases) {
        CAPTURE(support::mode_name(mode));
        CAPTURE(symbolic);
        CAPTURE(c.start);
        CAPTURE(c.stop);
        CAPTURE(c.step);
        auto got = LoopProbe{c.start, c.stop, c.step}.run(mode, symbolic);
        for (int k = 0; k < 4; ++k)
          CHECK(got[static_cast<size_t>(k)] == (k < c.trips ? 1.0 : 0.0));
        CHECK(got[4] == c.trips);
      }
    }
  }
}

TEST_CASE("loop: a run-time step <= 0 is a RuntimeError at the loop; a concrete one is a "
          "SymbolicError") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto k = pto::jit(
        "rt_step",
        [&](pto::Tensor s, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          line = __LINE__ + 1;
          for (auto i : pto::loop(0, 4, s.at({0})))
            pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {i, 0}, y);
        },
        support::opts(mode));
    for (int64_t step : {int64_t{0}, int64_t{-1}, INT64_MIN, int64_t{1}, int64_t{3}}) {
      CAPTURE(step);
      pto::HostTensor s(pto::DT_INT64, {1});
      s.data_as<int64_t>()[0] = step; // INT64_MIN is not a double: written raw
      auto y = support::guarded(pto::DT_FP32, {4, 8});
      for (int64_t e = 0; e < y.numel(); ++e)
        y.set(e, 7.0);
      if (step > 0) { // rows 0, step, 2 step, ... < 4 are written
        support::run_guarded(k, s, y);
        for (int64_t e = 0; e < y.numel(); ++e)
          CHECK(y.get(e) == ((e / 8) % step == 0 ? 1.0 : 7.0));
        continue;
      }
      auto msg = support::expect_error<pto::RuntimeError>(
          [&] { k(s, y); }, kFile, line, "loop",
          "` is " + std::to_string(step) + " at run time: a loop step must be > 0");
      CHECK(msg.find("step `") != std::string::npos);
      for (int64_t e = 0; e < y.numel(); ++e)
        CHECK(y.get(e) == 7.0); // no iteration ran, no result written
    }
    auto bad = [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(1, 8);
      line = __LINE__ + 1;
      for (auto i : pto::loop(0, 4, -1))
        pto::assemble(pto::view(x, {1, 8}, {i, 0}) + 1.0, {i, 0}, x);
    };
    auto kc = pto::jit("neg_step", bad, support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    support::expect_error<pto::SymbolicError>([&] { kc(x); }, kFile, line, "loop",
                                              "step must be > 0, got -1");
  }
}

TEST_CASE("loop: bounds whose run-time arithmetic overflows int64 are a RuntimeError at the "
          "loop's line") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto k = pto::jit(
        "bound_overflow",
        [&](pto::Tensor n, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto one = pto::full({1, 8}, 1.0, pto::DT_FP32);
          line = __LINE__ + 1;
          for (auto i : pto::loop(0, n.at({0}) * (int64_t{1} << 62)))
            pto::assemble(one, {i, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor n(pto::DT_INT32, {1}), y(pto::DT_FP32, {4, 8});
    n.set(0, 4); // 4 * 2^62 wraps to 0: a wrapping count would silently run nothing
    auto msg =
        support::expect_error<pto::RuntimeError>([&] { k(n, y); }, kFile, line, "loop", "stop `");
    CHECK(msg.find("overflows int64 at run time") != std::string::npos);
    for (int64_t i = 0; i < y.numel(); ++i) // failed before the body ran
      CHECK(y.get(i) == 0);
    // In range the same kernel runs: 0 * 2^62 = 0 iterations.
    n.set(0, 0);
    k(n, y);
    CHECK(y.get(0) == 0);
  }
}

TEST_CASE("results whose dynamic dims overflow at run time are a ShapeError at the op's line") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    // The last dim is DYNAMIC: N + pad is known only when the kernel runs.
    auto k = pto::jit(
        "dyn_pad",
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          line = __LINE__ + 1;
          auto p = pto::pad(x, {0, INT64_MAX - 4});
          pto::assemble(pto::view(p, {4, 8}, {0, 0}), {0, 0}, y);
        },
        support::opts(mode, {{{4, pto::DYNAMIC}}}));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    // 8 + (2^63 - 5) overflows int64.
    auto msg =
        support::expect_error<pto::ShapeError>([&] { k(x, y); }, kFile, line, "pad", "overflows");
    CHECK(msg.find("at run time") != std::string::npos);
    // 2 + (2^63 - 5) fits int64 but is far past 2^62 bytes.
    pto::HostTensor x2(pto::DT_FP32, {4, 2});
    support::expect_error<pto::ShapeError>([&] { k(x2, y); }, kFile, line, "pad", "2^62");
  }
}

TEST_CASE("kernels write only inside their outputs: canaries intact after tails and views") {
  // Shapes with tails after every tile and lane count (W = 16 fp32 lanes), written whole and
  // through a window.
  for (auto mode : support::run_modes()) {
    for (int64_t cols : {1, 15, 16, 17, 33}) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(cols);
      auto k = pto::jit(
          "guarded_writes",
          [](pto::Tensor x, pto::Tensor y, pto::Tensor z) {
            pto::set_vec_tile_shapes(4, 8);
            pto::assemble(pto::exp(x) + 1.0, {0, 0}, y);
            pto::assemble(pto::sum(x, -1, {.keepdim = true}), {1, 0}, z);
          },
          support::opts(mode));
      auto x = support::guarded(pto::DT_FP32, {5, cols});
      auto y = support::guarded(pto::DT_FP32, {5, cols}),
           z = support::guarded(pto::DT_FP32, {6, 1});
      for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, static_cast<double>(i % 3)); // 0, 1, 2
      support::run_guarded(k, x, y, z);
      for (int64_t r = 0; r < 5; ++r) {
        double want_sum = 0;
        for (int64_t c = 0; c < cols; ++c) {
          double v = static_cast<double>((r * cols + c) % 3);
          want_sum += v;
          double want = std::exp(v) + 1.0;
          CHECK(std::abs(y.get(r * cols + c) - want) <= 1e-5 * want);
        }
        CHECK(z.get(r + 1) == want_sum); // small integers: exact
      }
      CHECK(z.get(0) == 0); // above the window: untouched
    }
  }
}

TEST_CASE("loop_unroll: bounds spanning all of int64 handle every item exactly once") {
  struct Case {
    int64_t start, stop, step, factor;
    int items; // ceil((stop - start) / step): each item handled once, by some factor's loop
  };
  const Case cases[] = {
      {INT64_MIN, INT64_MAX, int64_t{1} << 61, 8, 8},  // step * 8 = 2^64: only the k = 1 loop
      {INT64_MIN, INT64_MAX, int64_t{1} << 60, 2, 16}, // 7 pairs, then 2 singles
      {INT64_MAX - 7, INT64_MAX, 1, 4, 7},             // one step of 4, then 3 singles
  };
  for (auto mode : support::run_modes()) {
    for (const Case &c : cases) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(c.start);
      CAPTURE(c.step);
      auto k = pto::jit(
          "unroll_probe",
          [&c](pto::Tensor count) {
            pto::set_vec_tile_shapes(1);
            for (auto [idx, n] : pto::loop_unroll(c.start, c.stop, c.step, {c.factor})) {
              (void)idx;
              pto::assemble(pto::view(count, {1}, {0}) + static_cast<int>(n), {0}, count);
            }
          },
          support::opts(mode));
      auto count = support::guarded(pto::DT_INT32, {1});
      support::run_guarded(k, count);
      CHECK(count.get(0) == c.items);
    }
  }
}
