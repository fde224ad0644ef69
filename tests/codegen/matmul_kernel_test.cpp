// matmul_kernel_test.cpp - the JIT's CPU matmul kernel at the edges of its blocking
// (lower_matmul_geometry.h): shapes that cross this host's K chunk, row block and column block,
// and bf16 on both of its paths (vdpbf16ps and fp32 FMAs on widened operands), in each run mode
// against naive::matmul; and its row panels on the worker pool (pto/runtime/pool.h): the same
// bits with 1, 2 and 3 threads. JIT-only (it asks the LLVM backend for its geometry), so it is not
// in test_interp.
#include "pto/runtime/pool.h"

#include "llvm/lower_matmul_geometry.h"
#include "matmul_check.h"

#include <doctest/doctest.h>

#include <cstring>
#include <optional>

using namespace matmul_check;

TEST_CASE("matmul kernel: past every cache block (K chunks, row blocks, column blocks)") {
  // The blocks this host's kernel uses, so each case crosses one block boundary with a tail
  // that is a multiple of nothing: K > 2 chunks (accumulating in C, or in scratch for a bf16
  // output), M past the row block, N past the column block.
  for (auto mode : support::run_modes())
    for (auto [in, out] : kKernelPairs) {
      auto g = pto::codegen::matmul_geometry(in, 0, 0, 0);
      const int64_t kce = g.kcu * g.kg;
      CAPTURE(support::mode_name(mode));
      CAPTURE(pair_name(in, out));
      CAPTURE(kce);
      CAPTURE(g.mc);
      CAPTURE(g.nc);
      CHECK(check(kernel_case(in, out, 9, 2 * kce + 3, 37, false, false), mode, 81) == "");
      CHECK(check(kernel_case(in, out, 19, 2 * kce + 5, 21, true, true), mode, 82) == "");
      CHECK(check(kernel_case(in, out, g.mc + 5, 7, 35, false, true), mode, 83) == "");
      CHECK(check(kernel_case(in, out, 5, 3, g.nc + 19, true, false), mode, 84) == "");
    }
}

TEST_CASE("matmul kernel: bf16 on vdpbf16ps and on fp32 FMAs, whichever the host would pick") {
  // Both bf16 paths where the target has AVX512_BF16 (elsewhere both runs take the FMA path).
  // Shapes no other case compiles, so the JIT cache holds no program built under the other
  // setting.
  struct Reset {
    ~Reset() { pto::codegen::set_matmul_dpbf16_for_tests(std::nullopt); }
  } reset;
  for (bool dp : {true, false}) {
    pto::codegen::set_matmul_dpbf16_for_tests(dp);
    auto g = pto::codegen::matmul_geometry(pto::DT_BF16, 0, 0, 0);
    const int64_t kce = g.kcu * g.kg, d = dp ? 0 : 1;
    for (auto out : {pto::DT_FP32, pto::DT_BF16})
      for (auto mode : support::run_modes()) {
        CAPTURE(dp);
        CAPTURE(pto::name(out));
        CAPTURE(support::mode_name(mode));
        CHECK(check(kernel_case(pto::DT_BF16, out, 23 + d, 2 * kce + 7, 29, false, false), mode,
                    91) == "");
        CHECK(check(kernel_case(pto::DT_BF16, out, 15, 31 + d, 47, true, true), mode, 92) == "");
      }
  }
}

TEST_CASE("matmul kernel: the same bits with 1, 2 and 3 pool threads, tails in M, K and N") {
  // Large enough to be split over the pool (kMatmulGrainMacs per range), row counts no multiple
  // of the register block, K past two chunks, N past the column block; bias and relu (the fused
  // epilogue) on one case.
  struct Shape {
    int64_t m, k, n;
    bool at, bt;
    int bias;
    bool relu;
  };
  const int saved = pto::runtime::pool_threads();
  struct Restore {
    int n;
    ~Restore() { pto::runtime::set_pool_threads(n); }
  } restore{saved};
  for (auto [in, out] : kKernelPairs) {
    auto g = pto::codegen::matmul_geometry(in, 0, 0, 0);
    const int64_t kce = g.kcu * g.kg;
    const Shape shapes[] = {{301, 2 * kce + 3, 100, false, false, 0, false},
                            {g.mc + 5, 2 * kce + 3, 67, true, false, 1, true},
                            {200, 96, g.nc + 19, false, true, 2, false}};
    for (const Shape &s : shapes) {
      Case c = kernel_case(in, out, s.m, s.k, s.n, s.at, s.bt);
      c.bias_rank = s.bias;
      c.relu = s.relu;
      CAPTURE(pair_name(in, out));
      CAPTURE(s.m);
      CAPTURE(s.k);
      CAPTURE(s.n);
      pto::HostTensor first;
      for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        pto::runtime::set_pool_threads(threads);
        const uint64_t lent = pto::runtime::pool_ranges_lent();
        pto::HostTensor got;
        CHECK(check(c, pto::RunMode::Jit, 95, &got) == "");
        if (threads == 1) {
          first = got;
          continue;
        }
        REQUIRE(got.size_bytes() == first.size_bytes());
        CHECK(std::memcmp(got.data(), first.data(), got.size_bytes()) == 0);
        // On a machine with one CPU a worker may still be lent: this proves only that the
        // split ran when it could.
        CHECK(pto::runtime::pool_ranges_lent() > lent);
      }
    }
  }
}
