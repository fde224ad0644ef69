// hardening_scalar_test.cpp - Floating scalars the user writes (operands, Element, full, pad,
// addcmul, arange bounds) of any magnitude, inf and NaN: their integer companion
// (ir::Scalar::i) is computed without undefined behaviour, truncated toward zero and saturated
// to int64 (UBSan's float-cast-overflow found 1e30 in pto::Element and -inf in pad under
// scripts/asan_tests.sh; these cases fail there if a plain cast comes back).
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

TEST_CASE("a floating scalar's integer companion truncates, saturates and maps NaN to 0") {
  using pto::ir::trunc_saturate_int64;
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  constexpr int64_t min = std::numeric_limits<int64_t>::min();
  CHECK(trunc_saturate_int64(2.9) == 2);
  CHECK(trunc_saturate_int64(-2.9) == -2);
  CHECK(trunc_saturate_int64(-0.0) == 0);
  CHECK(trunc_saturate_int64(9007199254740993.0) == 9007199254740992);       // the double's value
  CHECK(trunc_saturate_int64(9223372036854774784.0) == 9223372036854774784); // 2^63 - 1024
  CHECK(trunc_saturate_int64(9223372036854775808.0) == max);                 // 2^63
  CHECK(trunc_saturate_int64(-9223372036854775808.0) == min);                // -2^63
  CHECK(trunc_saturate_int64(1e30) == max);
  CHECK(trunc_saturate_int64(-1e30) == min);
  CHECK(trunc_saturate_int64(INFINITY) == max);
  CHECK(trunc_saturate_int64(-INFINITY) == min);
  CHECK(trunc_saturate_int64(NAN) == 0);
}

TEST_CASE("huge, infinite and NaN scalars build operands, Elements and full tensors") {
  for (double v : {1e30, -1e300, double(INFINITY), double(-INFINITY), double(NAN)}) {
    CAPTURE(v);
    pto::Operand o(v);
    CHECK((o.scalar && o.scalar->i == pto::ir::trunc_saturate_int64(v)));
    pto::Element e(pto::DT_FP32, v);
    CHECK(e.scalar.i == pto::ir::trunc_saturate_int64(v));
    pto::ArangeValue a(v);
    CHECK(a.i == pto::ir::trunc_saturate_int64(v));
  }
  // The integer-tensor paths that take a double (full, pad, addcmul) are traced and run; a
  // value past the dtype's range is a DTypeError there (the next case).
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "huge_int_scalars",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 16);
          auto padded = pto::view(pto::pad(x, {0, 8}, 7), {2, 8}, {0, 0});
          auto zero = pto::full({2, 8}, 2147483647.9, pto::DT_INT32) * 0;
          pto::assemble(padded + pto::addcmul(zero, zero, x, -2147483648.0), {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_INT32, {2, 8}), y(pto::DT_INT32, {2, 8});
    x.fill(5);
    k(x, y);
    for (int64_t i = 0; i < 16; ++i)
      CHECK(y.get(i) == 5);
  }
}

// Issue 8, silent wrong results: a scalar that becomes an element of an integer dtype and does
// not fit it (full(300, int8), x_int8 + 1000, pad with 1e30, clip bounds) was wrapped (300 ->
// 44) or saturated, differently in the JIT and the interpreter (clip(100, -1000, 1000) gave -24
// in one and 100 in the other). One rule (trace_checks.h check_int_element): a DTypeError at
// the user's line naming the op as written, as PyTorch's "value cannot be converted to type
// int8_t without overflow".
TEST_CASE("an integer scalar outside its tensor's dtype range is a DTypeError naming the op") {
  using E = pto::DTypeError;
  const std::string f = "hardening_scalar_test.cpp";
  int line = 0;
  auto trace = [](auto body, pto::DataType dt) {
    auto k = pto::jit("scalar_range", [&](pto::Tensor x, pto::Tensor y) {
      pto::set_vec_tile_shapes(2, 16);
      body(x, y);
    });
    pto::HostTensor x(dt, {2, 8}), y(dt, {2, 8});
    k(x, y);
  };
  using T = pto::Tensor;
  auto fits = "does not fit DT_INT8 (range [-128, 127])";
  support::expect_error<E>(
      [&] {
        trace(
            [&](T, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::full({2, 8}, 300.0, pto::DT_INT8), {0, 0}, y);
            },
            pto::DT_INT8);
      },
      f, line, "full", std::string("scalar 300 ") + fits);
  support::expect_error<E>(
      [&] {
        trace(
            [&](T, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::full({2, 8}, 1e30, pto::DT_INT8), {0, 0}, y);
            },
            pto::DT_INT8);
      },
      f, line, "full", std::string("scalar 1e+30 ") + fits);
  support::expect_error<E>(
      [&] {
        trace(
            [&](T, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::full({2, 8}, NAN, pto::DT_INT32), {0, 0}, y);
            },
            pto::DT_INT32);
      },
      f, line, "full", "scalar nan does not fit DT_INT32");
  support::expect_error<E>(
      [&] {
        trace(
            [&](T, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::full({2, 8}, pto::Element(pto::DT_INT8, 300.0)), {0, 0}, y);
            },
            pto::DT_INT8);
      },
      f, line, "full", std::string("scalar 300 ") + fits);
  support::expect_error<E>(
      [&] {
        trace(
            [&](T x, T y) {
              line = __LINE__ + 1;
              pto::assemble(x + 1000, {0, 0}, y);
            },
            pto::DT_INT8);
      },
      f, line, "add", std::string("scalar 1000 ") + fits);
  support::expect_error<E>(
      [&] {
        trace(
            [&](T x, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::clip(x, -1000, 1000), {0, 0}, y);
            },
            pto::DT_INT8);
      },
      f, line, "clip", std::string("scalar -1000 ") + fits);
  support::expect_error<E>(
      [&] {
        trace(
            [&](T x, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::view(pto::pad(x, {0, 8}, 1000), {2, 8}, {0, 0}), {0, 0}, y);
            },
            pto::DT_INT8);
      },
      f, line, "pad", std::string("scalar 1000 ") + fits);
  support::expect_error<E>(
      [&] {
        trace(
            [&](T x, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::full_like(x, -1), {0, 0}, y);
            },
            pto::DT_UINT8);
      },
      f, line, "full_like", "scalar -1 does not fit DT_UINT8 (range [0, 255])");
  support::expect_error<E>(
      [&] {
        trace(
            [&](T x, T y) {
              line = __LINE__ + 1;
              pto::assemble(pto::addcmul(x, x, x, 1e30), {0, 0}, y);
            },
            pto::DT_INT32);
      },
      f, line, "addcmul", "scalar 1e+30 does not fit DT_INT32");

  // The ends of each range fit, and both executors store them exactly.
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    struct End {
      pto::DataType dt;
      int64_t lo, hi;
    };
    for (End e : {End{pto::DT_INT8, -128, 127}, End{pto::DT_UINT8, 0, 255},
                  End{pto::DT_INT16, -32768, 32767}, End{pto::DT_INT32, INT32_MIN, INT32_MAX},
                  End{pto::DT_INT64, INT64_MIN, INT64_MAX}}) {
      CAPTURE(pto::name(e.dt));
      auto k = pto::jit(
          "scalar_ends",
          [e](pto::Tensor lo, pto::Tensor hi) {
            pto::set_vec_tile_shapes(1, 4);
            pto::assemble(pto::full({1, 4}, pto::Element(e.dt, e.lo)), {0, 0}, lo);
            pto::assemble(pto::clip(pto::full({1, 4}, pto::Element(e.dt, e.hi)), e.lo, e.hi),
                          {0, 0}, hi);
          },
          support::opts(mode));
      pto::HostTensor lo(e.dt, {1, 4}), hi(e.dt, {1, 4});
      k(lo, hi);
      for (int64_t i = 0; i < 4; ++i) {
        CHECK(lo.get(i) == static_cast<double>(e.lo));
        CHECK(hi.get(i) == static_cast<double>(e.hi));
      }
      if (e.dt == pto::DT_INT64) {
        CHECK(lo.data_as<int64_t>()[0] == INT64_MIN);
        CHECK(hi.data_as<int64_t>()[0] == INT64_MAX);
      }
    }
  }
}
