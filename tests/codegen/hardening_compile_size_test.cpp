// hardening_compile_size_test.cpp - JIT compile time stays linear in program size (issue 8): a
// long region is cut into chunks of kChunkItems items, each outlined into a function of its own
// before O3 (codegen/llvm/split_function.h), so no LLVM function of a long program grows with it
// (LLVM's loop and SCEV passes cost more than linear time in one function's size). Counted in
// the lowered module (codegen::lowered_llvm_ir, before O3): no timed assertion. A slow case runs
// a 2000-op program in both executors.
#include "pto/pto.h"

#include "llvm/lower_llvm.h"
#include "llvm/split_function.h"
#include "passes/planned.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using passes_test::plan;

namespace {

using Args = std::vector<pto::Tensor>;

/// The instruction count of each function defined in `ir` (lines inside a `define ... {`).
std::vector<size_t> function_sizes(const std::string &ir) {
  std::vector<size_t> out;
  std::istringstream in(ir);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("define ", 0) == 0) {
      inside = true;
      out.push_back(0);
    } else if (inside && line == "}") {
      inside = false;
    } else if (inside && line.rfind("  ", 0) == 0) {
      ++out.back();
    }
  }
  return out;
}

std::string lowered(const pto::codegen::Compiled &c) {
  return pto::codegen::lowered_llvm_ir(*c.planned, pto::codegen::CompileOptions{});
}

/// 2000 reshapes (each a standalone copy into a local) at the top level.
void reshapes(const Args &a, int n) {
  pto::set_vec_tile_shapes(4, 8);
  pto::Tensor t = pto::add(a[0], 1.0);
  for (int i = 0; i < n; ++i)
    t = i % 2 ? pto::reshape(t, {4, 8}) : pto::reshape(t, {8, 4});
  pto::assemble(t, {0, 0}, a[1]);
}

/// `n` loops of one iteration at the top level, or nested in one loop.
void loops(const Args &a, int n, bool nested) {
  pto::set_vec_tile_shapes(4, 8);
  auto body = [&] {
    for (int i = 0; i < n; ++i)
      for (auto j : pto::loop(0, 1)) {
        (void)j;
        pto::assemble(pto::add(a[0], double(i)), {0, 0}, a[1]);
      }
  };
  if (!nested) {
    body();
    return;
  }
  for (auto k : pto::loop(0, 1)) {
    (void)k;
    body();
  }
}

} // namespace

TEST_CASE("hardening compile size: a long program is lowered into many small functions") {
  const std::vector<pto::codegen::Compiled> programs = [] {
    std::vector<pto::codegen::Compiled> v;
    v.push_back(plan("reshapes", {{pto::DT_FP32, {4, 8}}, {pto::DT_FP32, {4, 8}}},
                     [](const Args &a) { reshapes(a, 2000); }));
    v.push_back(plan("loops", {{pto::DT_FP32, {4, 8}}, {pto::DT_FP32, {4, 8}}},
                     [](const Args &a) { loops(a, 1000, false); }));
    v.push_back(plan("nested_loops", {{pto::DT_FP32, {4, 8}}, {pto::DT_FP32, {4, 8}}},
                     [](const Args &a) { loops(a, 1000, true); }));
    return v;
  }();
  for (const auto &c : programs) {
    CAPTURE(c.planned->program.name);
    const auto sizes = function_sizes(lowered(c));
    // At least one function per kChunkItems items of the long region, and none of them (the
    // kernel's own included) anywhere near the size of the whole program.
    CHECK(sizes.size() >= 1000 / pto::codegen::kChunkItems);
    size_t total = 0;
    for (size_t s : sizes)
      total += s;
    const size_t largest = *std::max_element(sizes.begin(), sizes.end());
    CAPTURE(total);
    CAPTURE(largest);
    CHECK(largest * 20 < total);
  }
}

TEST_CASE("hardening compile size: a short program stays one function") {
  auto c = plan("short", {{pto::DT_FP32, {4, 8}}, {pto::DT_FP32, {4, 8}}},
                [](const Args &a) { loops(a, int(pto::codegen::kChunkItems), false); });
  CHECK(function_sizes(lowered(c)).size() == 1);
}

TEST_CASE("hardening compile size: a 2000-op program compiles and runs in both executors" *
          doctest::test_suite("slow")) {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "long_program", [](pto::Tensor x, pto::Tensor y) { reshapes({x, y}, 2000); },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    for (int64_t i = 0; i < 32; ++i)
      x.set(i, double(i));
    k(x, y);
    for (int64_t i = 0; i < 32; ++i)
      REQUIRE(y.get(i) == double(i) + 1);
  }
}
