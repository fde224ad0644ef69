// parallel_pool_test.cpp - The worker pool inside a PE (pto/runtime/pool.h): fused groups of
// every family it runs on several threads (elementwise with exp, row sum, row amax, softmax with
// its per-worker row scratch, a rank-3 group) give the same bits with 1 and 2 pool threads, and
// match plain double loops (naive.h) in every run mode. The shapes are large enough to be split
// (kParallelGrainElems elements per range) and their row counts are no multiple of the tile.
#include "pto/pto.h"
#include "pto/runtime/pool.h"

#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using T = pto::Tensor;

/// Restores the pool size on scope exit.
struct PoolThreads {
  int saved = pto::runtime::pool_threads();
  explicit PoolThreads(int n) { pto::runtime::set_pool_threads(n); }
  ~PoolThreads() { pto::runtime::set_pool_threads(saved); }
  PoolThreads(const PoolThreads &) = delete;
  PoolThreads &operator=(const PoolThreads &) = delete;
};

struct Family {
  const char *name;
  std::vector<int64_t> out_shape;                         ///< of the result, for the input's shape
  std::function<T(T)> op;                                 ///< the kernel's computation
  std::function<naive::Array(const naive::Array &)> want; ///< its double model
  support::OpClass cls = support::OpClass::Basic;
  double lo = -4.0; ///< inputs in [lo, lo + 8): sums get positive ones (no cancellation)
};

/// Runs `f` on x in mode `m` with `threads` pool threads; returns the result.
pto::HostTensor run(const Family &f, const pto::HostTensor &x, pto::RunMode m, int threads) {
  const PoolThreads pool(threads);
  pto::HostTensor y(pto::DT_FP32, f.out_shape);
  auto k = pto::jit(
      std::string("par_") + f.name,
      [&](T xt, T yt) {
        if (xt.shape().size() == 3)
          pto::set_vec_tile_shapes(1, 8, 256);
        else
          pto::set_vec_tile_shapes(8, 256);
        std::vector<pto::SymbolicScalar> at(xt.shape().size(), pto::SymbolicScalar(0));
        pto::assemble(f.op(xt), at, yt);
      },
      support::opts(m));
  k(x, y);
  return y;
}

void check_family(const Family &f, const std::vector<int64_t> &shape) {
  const auto x = naive::random_tensor(pto::DT_FP32, shape, 11, f.lo, f.lo + 8.0);
  const naive::Array want = f.want(naive::from(x));
  for (pto::RunMode m : support::run_modes()) {
    SUBCASE((std::string(f.name) + " " + support::mode_name(m)).c_str()) {
      const pto::HostTensor one = run(f, x, m, 1);
      const uint64_t lent = pto::runtime::pool_ranges_lent();
      const pto::HostTensor two = run(f, x, m, 2);
      const std::string bad = support::mismatch(two, want, support::tolerance(pto::DT_FP32, f.cls));
      CHECK_MESSAGE(bad.empty(), bad);
      REQUIRE(one.size_bytes() == two.size_bytes());
      CHECK(std::memcmp(one.data(), two.data(), one.size_bytes()) == 0);
      // The JIT split the rows over the pool (the interpreter never does): on a machine with one
      // CPU a worker may still be lent, so this proves only that the path ran when it could.
      if (m == pto::RunMode::Jit)
        CHECK(pto::runtime::pool_ranges_lent() > lent);
    }
  }
}

} // namespace

TEST_CASE("pool: fused groups give the same bits with 1 and 2 threads") {
  const std::vector<int64_t> s{301, 1000};
  const std::vector<int64_t> rows{301, 1};
  using naive::Reduce;
  check_family({"exp_chain", s, [](T x) { return pto::exp(x * 0.5f + 0.25f) - x / 3.0f; },
                [](const naive::Array &a) {
                  return naive::map(a, [](double v) {
                    return naive::round_to(
                        std::exp(naive::round_to(naive::round_to(v * 0.5, pto::DT_FP32) + 0.25,
                                                 pto::DT_FP32)) -
                            naive::round_to(v / 3.0, pto::DT_FP32),
                        pto::DT_FP32);
                  });
                },
                support::OpClass::Transcendental},
               s);
  check_family({"row_sum", rows, [](T x) { return pto::sum(x, -1, {.keepdim = true}); },
                [](const naive::Array &a) { return naive::reduce(a, 1, true, Reduce::Sum); },
                support::OpClass::Basic, 0.0},
               s);
  check_family({"row_amax", rows, [](T x) { return pto::amax(x, -1, {.keepdim = true}); },
                [](const naive::Array &a) { return naive::reduce(a, 1, true, Reduce::Max); }},
               s);
  check_family({"softmax", s, [](T x) { return pto::softmax(x, -1); },
                [](const naive::Array &a) { return naive::softmax_rows(a); },
                support::OpClass::Transcendental},
               s);
  const std::vector<int64_t> s3{3, 50, 700};
  check_family({"rank3_sum",
                {3, 50, 1},
                [](T x) { return pto::sum(x, -1, {.keepdim = true}); },
                [](const naive::Array &a) { return naive::reduce(a, 2, true, Reduce::Sum); },
                support::OpClass::Basic,
                0.0},
               s3);
}

TEST_CASE("pool: a thread count outside [1, 1024] is an ArgumentError") {
  CHECK_THROWS_WITH_AS(pto::runtime::set_pool_threads(0),
                       doctest::Contains("set_pool_threads: expected a thread count in [1, 1024], "
                                         "got 0"),
                       pto::ArgumentError);
}
