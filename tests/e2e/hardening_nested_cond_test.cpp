// hardening_nested_cond_test.cpp - Nested pto::loop bodies with run-time cond paths (issue 8,
// F17): each path of an outer body traces the inner loops again, so the passes multiply down
// the nest. Past kMaxNestedCondPaths passes of the innermost body the trace stops with a
// CompileError at the innermost body's first cond (never minutes of tracing and compiling
// bounded only by the op cap); a nest just under the bound still runs and agrees with a naive
// loop in both executors.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using doctest::Contains;

namespace {

/// A nest of `depth` loops of 2 iterations; each body has `conds` run-time conds on m (so
/// 2^conds paths per body). The innermost body adds 1 to y[i_0, c] where c is the sum of the
/// taken bits of every level (mod 8). Returns y (shape [2, 8]).
std::vector<double> run_nest(pto::RunMode mode, int depth, int conds, const pto::HostTensor &m) {
  auto k =
      pto::jit("nested_cond_" + std::to_string(depth) + "_" + std::to_string(conds),
               [depth, conds](pto::Tensor mt, pto::Tensor y) {
                 pto::set_vec_tile_shapes(1, 8);
                 std::vector<pto::SymbolicScalar> idx;
                 auto level = [&](auto &self, int d, const pto::SymbolicScalar &col) -> void {
                   for (auto i : pto::loop(2)) {
                     idx.push_back(i);
                     pto::SymbolicScalar c = col;
                     for (int b = 0; b < conds; ++b)
                       if (pto::cond(mt.at({d * conds + b}) == 1))
                         c = c + 1;
                     if (d + 1 < depth)
                       self(self, d + 1, c);
                     else
                       pto::assemble(pto::full({1, 1}, 1.0, pto::DT_FP32), {idx.front(), c % 8}, y);
                     idx.pop_back();
                   }
                 };
                 level(level, 0, pto::SymbolicScalar(0));
               },
               {.run_mode = mode});
  pto::HostTensor y(pto::DT_FP32, {2, 8});
  y.fill(0);
  k(m, y);
  std::vector<double> out;
  for (int64_t i = 0; i < y.numel(); ++i)
    out.push_back(y.get(i));
  return out;
}

} // namespace

TEST_CASE("nested cond paths past kMaxNestedCondPaths are a CompileError at the cond") {
  // 3 levels of 2^3 = 8 paths: 512 passes of the innermost body > 256.
  pto::HostTensor m(pto::DT_INT32, {9});
  m.fill(1);
  for (auto mode : support::run_modes()) {
    CAPTURE(mode);
    CHECK_THROWS_WITH_AS(run_nest(mode, 3, 3, m), Contains("hardening_nested_cond_test.cpp:"),
                         pto::CompileError);
    CHECK_THROWS_WITH_AS(run_nest(mode, 3, 3, m),
                         Contains("cond: 3 nested pto::loop bodies with run-time cond paths "
                                  "would trace the innermost body more than 256 times"),
                         pto::CompileError);
  }
}

TEST_CASE("nested cond paths under the bound run and agree with a naive loop") {
  // 2 levels of 2^3 = 8 paths: 64 passes. m's bits: level 0 takes 2 of 3, level 1 takes 1.
  pto::HostTensor m(pto::DT_INT32, {6});
  const std::vector<int> bits{1, 0, 1, 0, 1, 0};
  for (size_t b = 0; b < bits.size(); ++b)
    m.set(static_cast<int64_t>(b), bits[b]);
  // Naive: every inner iteration writes 1 at [i0, (taken bits of both levels) % 8].
  std::vector<double> want(16, 0.0);
  const int col = (bits[0] + bits[1] + bits[2] + bits[3] + bits[4] + bits[5]) % 8;
  for (int i0 = 0; i0 < 2; ++i0)
    want[(static_cast<size_t>(i0) * 8) + static_cast<size_t>(col)] = 1.0;
  for (auto mode : support::run_modes()) {
    CAPTURE(mode);
    CHECK(run_nest(mode, 2, 3, m) == want);
  }
}
