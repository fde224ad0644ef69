// hardening_scalar_test.cpp - Floating scalars the user writes (operands, Element, full, pad,
// addcmul, arange bounds) of any magnitude, inf and NaN: their integer companion
// (ir::Scalar::i) is computed without undefined behaviour, truncated toward zero and saturated
// to int64 (UBSan's float-cast-overflow found 1e30 in pto::Element and -inf in pad under
// scripts/asan_tests.sh; these cases fail there if a plain cast comes back).
#include "pto/pto.h"

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
    CHECK(o.scalar->i == pto::ir::trunc_saturate_int64(v));
    pto::Element e(pto::DT_FP32, v);
    CHECK(e.scalar.i == pto::ir::trunc_saturate_int64(v));
    pto::ArangeValue a(v);
    CHECK(a.i == pto::ir::trunc_saturate_int64(v));
  }
  // The integer-tensor paths that take a double (full, pad, addcmul): traced and run. Where the
  // value lands past int32 it is multiplied by 0 or viewed away: this checks that tracing and
  // running are defined, not how an integral double past the dtype's range converts.
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "huge_int_scalars",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 16);
          auto padded = pto::view(pto::pad(x, {0, 8}, 1e30), {2, 8}, {0, 0});
          auto zero = pto::full({2, 8}, 1e30, pto::DT_INT32) * 0;
          pto::assemble(padded + pto::addcmul(zero, zero, x, 1e30), {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_INT32, {2, 8}), y(pto::DT_INT32, {2, 8});
    x.fill(5);
    k(x, y);
    for (int64_t i = 0; i < 16; ++i)
      CHECK(y.get(i) == 5);
  }
}
