// hardening_offset_overflow_test.cpp - Run-time window and valid-shape checks (Check ops) whose
// arithmetic overflows int64 fail the call with ShapeError instead of passing on a wrapped value
// that lands back in range (issue 8: silent wrong results). Both executors.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>

namespace {

constexpr int64_t k2to62 = int64_t{1} << 62;

void check_untouched(const pto::HostTensor &y, double v) {
  for (int64_t i = 0; i < y.numel(); ++i)
    REQUIRE(y.get(i) == v);
}

} // namespace

TEST_CASE("a loop-index view offset that wraps past INT64_MAX is a ShapeError, not a row") {
  // i = 2^62: i * 4 + 5 is 2^64 + 5, which wraps to 5 (a row inside x).
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "wrap_loop_offset",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 16);
          for (auto i : pto::loop(k2to62, k2to62 + 1))
            pto::assemble(pto::view(x, {1, 16}, {i * 4 + 5, 0}), {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {8, 16}), y(pto::DT_FP32, {8, 16});
    x.fill(1.0);
    y.fill(-7.0);
    const std::string m = support::thrown<pto::ShapeError>([&] { k(x, y); });
    CAPTURE(m);
    CHECK(m.find("hardening_offset_overflow_test.cpp") == 0);
    CHECK(m.find("view") != std::string::npos);
    CHECK(m.find("overflows int64") != std::string::npos);
    check_untouched(y, -7.0);
  }
}

TEST_CASE("a tensor-element offset and valid size that wrap are ShapeErrors") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto offset = pto::jit(
        "wrap_element_offset",
        [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 16);
          for (auto j : pto::loop(1)) {
            (void)j;
            pto::assemble(pto::view(x, {1, 16}, {n.at({0}) * 4 + 1, 0}), {0, 0}, y);
          }
        },
        support::opts(mode));
    auto valid = pto::jit(
        "wrap_element_valid",
        [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 16);
          for (auto j : pto::loop(1)) {
            (void)j;
            auto v = pto::view(x, {8, 16}, {0, 0}, {.valid_shape = {{n.at({0}) * 4 + 2, 16}}});
            pto::assemble(v, {0, 0}, y);
          }
        },
        support::opts(mode));
    pto::HostTensor n(pto::DT_INT64, {1}), x(pto::DT_FP32, {8, 16}), y(pto::DT_FP32, {8, 16});
    n.set(0, static_cast<double>(k2to62)); // 2^62 * 4 wraps to 0
    x.fill(1.0);
    y.fill(-7.0);
    auto expect_wrap_error = [&](auto &k) {
      const std::string m = support::thrown<pto::ShapeError>([&] { k(n, x, y); });
      CAPTURE(m);
      CHECK(m.find("hardening_offset_overflow_test.cpp") == 0);
      CHECK(m.find("view") != std::string::npos);
      CHECK(m.find("overflows int64") != std::string::npos);
      check_untouched(y, -7.0);
    };
    expect_wrap_error(offset);
    expect_wrap_error(valid);
    // In range, the same kernels run: n = 1 reads row 5 / 6 valid rows.
    n.set(0, 1.0);
    offset(n, x, y);
    CHECK(y.get(0) == 1.0);
  }
}
