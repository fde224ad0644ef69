// hardening_names_test.cpp - Errors name the op as the user wrote it (issue 8: floor_mod by zero
// reported "remainder", ceil_div "div", because composites are traced from inner ops), at trace
// time and at run time, in both run modes; and a run-time view-window error names an index that
// really lies outside the dim.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>

using doctest::Contains;

namespace {

/// An int32 kernel applying `op` to (a, b) into y, with DYNAMIC dims.
template <class Op> auto int_kernel(const char *name, pto::RunMode mode, Op op) {
  return pto::jit(
      name,
      [op](pto::Tensor a, pto::Tensor b, pto::Tensor y) {
        pto::set_vec_tile_shapes(4, 8);
        pto::assemble(op(a, b), {0, 0}, y);
      },
      support::opts(mode));
}

} // namespace

TEST_CASE("a composite's run-time integer division by zero names the composite") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    pto::HostTensor a(pto::DT_INT32, {4, 8}), b(pto::DT_INT32, {4, 8}), y(pto::DT_INT32, {4, 8});
    a.fill(7);
    b.fill(2);
    b.set(13, 0); // one zero divisor
    auto fm =
        int_kernel("names_floor_mod", mode, [](auto x, auto z) { return pto::floor_mod(x, z); });
    auto cd =
        int_kernel("names_ceil_div", mode, [](auto x, auto z) { return pto::ceil_div(x, z); });
    auto md = int_kernel("names_mod", mode, [](auto x, auto z) { return pto::mod(x, z); });
    CHECK_THROWS_WITH_AS(fm(a, b, y), Contains("floor_mod: integer division by zero"),
                         pto::RuntimeError);
    CHECK_THROWS_WITH_AS(cd(a, b, y), Contains("ceil_div: integer division by zero"),
                         pto::RuntimeError);
    CHECK_THROWS_WITH_AS(md(a, b, y), Contains(": mod: integer division by zero"),
                         pto::RuntimeError);
    for (const std::string &m : {support::thrown<pto::RuntimeError>([&] { fm(a, b, y); }),
                                 support::thrown<pto::RuntimeError>([&] { cd(a, b, y); })})
      CHECK(m.find("hardening_names_test.cpp") != std::string::npos);
    // The primitive itself keeps its own name.
    auto rm =
        int_kernel("names_remainder", mode, [](auto x, auto z) { return pto::remainder(x, z); });
    CHECK_THROWS_WITH_AS(rm(a, b, y), Contains("remainder: integer division by zero"),
                         pto::RuntimeError);
  }
}

TEST_CASE("a composite's trace-time error names the composite, not the inner op") {
  auto trace = [](auto body) {
    auto k = pto::jit("names_trace", [body](pto::Tensor a, pto::Tensor b, pto::Tensor y) {
      pto::set_vec_tile_shapes(4, 8);
      pto::assemble(body(a, b), {0, 0}, y);
    });
    pto::HostTensor a(pto::DT_INT32, {4, 8}), b(pto::DT_INT32, {4, 5}), y(pto::DT_INT32, {4, 8});
    k(a, b, y);
  };
  // A literal zero divisor, caught while tracing.
  CHECK_THROWS_WITH_AS(trace([](auto x, auto) { return pto::floor_mod(x, 0); }),
                       Contains("floor_mod: integer division by a zero scalar"), pto::RuntimeError);
  CHECK_THROWS_WITH_AS(trace([](auto x, auto) { return pto::floor_mod(x, 0); }),
                       Contains("hardening_names_test.cpp"), pto::RuntimeError);
  CHECK_THROWS_WITH_AS(trace([](auto x, auto) { return pto::ceil_div(x, 0); }),
                       Contains("ceil_div: integer division by a zero scalar"), pto::RuntimeError);
  // Shapes that do not broadcast ([4, 8] and [4, 5]), found by the inner div / remainder.
  CHECK_THROWS_WITH_AS(trace([](auto x, auto z) { return pto::ceil_div(x, z); }),
                       Contains("ceil_div: "), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace([](auto x, auto z) { return pto::floor_mod(x, z); }),
                       Contains("floor_mod: "), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace([](auto x, auto z) { return pto::ceil_div(x, z); }),
                       Contains("hardening_names_test.cpp"), pto::ShapeError);
  // Nested composites: the outermost public op wins (zeros_like is built from full_like).
  CHECK_THROWS_WITH_AS(trace([](auto, auto) { return pto::zeros_like(pto::Tensor{}); }),
                       Contains("zeros_like: tensor operand is empty"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace([](auto, auto) { return pto::full_like(pto::Tensor{}, 1.0); }),
                       Contains("full_like: tensor operand is empty"), pto::ShapeError);
}

TEST_CASE("a run-time view window past its tensor names the window and the dim") {
  // The window [0, 8) of rows of a tensor that has 4 rows at run time (the JIT once named the
  // window's first row, 0, which is inside): the view's run-time window check reports it.
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "names_window",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 8);
          auto v = pto::view(x, {8, 8}, {0, 0}, {.valid_shape = {{8, 8}}});
          pto::assemble(v + 1.0, {0, 0}, y);
        },
        support::opts(mode, {{{pto::DYNAMIC, 8}}, {{8, 8}}}));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {8, 8});
    const std::string m = support::thrown<pto::ShapeError>([&] { k(x, y); });
    CAPTURE(m);
    CHECK(m.find("hardening_names_test.cpp") != std::string::npos);
    CHECK(m.find("view: window [0, 8) of dim 0 exceeds the size 4") != std::string::npos);
    CHECK(m.find("index 0 ") == std::string::npos);
  }
}
