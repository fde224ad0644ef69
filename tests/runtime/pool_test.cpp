// pool_test.cpp - The worker pool (pto/runtime/pool.h) through its C entry point, as generated
// code calls it: every iteration runs exactly once, worker indices stay below max_threads and no
// two ranges run with the same index at once, small ranges stay on the caller, and several PE
// threads calling at once share the pool (the thread budget is never exceeded). Run under TSan by
// scripts/tsan_runtime.sh.
#include "pto/error.h"
#include "pto/runtime/pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

struct Env {
  std::vector<std::atomic<int>> hits;      ///< per iteration: how many times it ran
  std::vector<std::atomic<int>> by_worker; ///< per worker index: ranges it ran
  std::vector<std::atomic<int>> active;    ///< per worker index: ranges running now
  std::atomic<int> running{0}, most{0};    ///< bodies running at once, and the most seen
  std::atomic<int> bad_worker{0};
  int32_t max_threads = 1;
  explicit Env(int64_t n, int32_t mt)
      : hits(static_cast<size_t>(n)), by_worker(1024), active(1024), max_threads(mt) {}
};

/// Bodies running at once in the whole process, and the most seen.
std::atomic<int> g_running{0}, g_most{0};

void note_max(std::atomic<int> &most, int now) {
  for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
  }
}

void body(void *p, int64_t b, int64_t e, int32_t w) {
  auto &env = *static_cast<Env *>(p);
  note_max(g_most, g_running.fetch_add(1) + 1);
  note_max(env.most, env.running.fetch_add(1) + 1);
  const bool ok = w >= 0 && w < env.max_threads;
  if (!ok || env.active[static_cast<size_t>(w)].fetch_add(1) != 0)
    env.bad_worker.fetch_add(1); // out of range, or in use by another range at the same time
  if (ok)
    env.by_worker[static_cast<size_t>(w)].fetch_add(1);
  for (int64_t i = b; i < e; ++i)
    env.hits[static_cast<size_t>(i)].fetch_add(1);
  if (ok)
    env.active[static_cast<size_t>(w)].fetch_sub(1);
  env.running.fetch_sub(1);
  g_running.fetch_sub(1);
}

/// Restores the pool size on scope exit.
struct PoolThreads {
  int saved = pto::runtime::pool_threads();
  explicit PoolThreads(int n) { pto::runtime::set_pool_threads(n); }
  ~PoolThreads() { pto::runtime::set_pool_threads(saved); }
  PoolThreads(const PoolThreads &) = delete;
  PoolThreads &operator=(const PoolThreads &) = delete;
};

bool each_once(const Env &env) {
  for (const auto &h : env.hits)
    if (h.load() != 1)
      return false;
  return true;
}

} // namespace

TEST_CASE("pool: every iteration runs once, on distinct workers below max_threads") {
  for (int threads : {1, 2, 3}) {
    const PoolThreads pool(threads);
    const pto::runtime::PoolSeat seat; // as a PE inside a kernel call
    for (int64_t n : {0, 1, 7, 1000, 4097}) {
      Env env(n, 2);
      pto_rt_parallel_for(nullptr, body, &env, 0, n, 16, 2);
      CHECK(each_once(env));
      CHECK(env.bad_worker.load() == 0);
      CHECK(env.most.load() <= std::min(threads, 2));
    }
  }
}

TEST_CASE("pool: a range below two grains runs on the caller alone") {
  const PoolThreads pool(2);
  const pto::runtime::PoolSeat seat;
  Env env(31, 2);
  const uint64_t lent = pto::runtime::pool_ranges_lent();
  pto_rt_parallel_for(nullptr, body, &env, 0, 31, 16, 2);
  CHECK(each_once(env));
  CHECK(env.by_worker[0].load() == 1);
  CHECK(pto::runtime::pool_ranges_lent() == lent);
}

TEST_CASE("pool: PEs calling at once share the pool without passing its thread budget") {
  const PoolThreads pool(3);
  constexpr int kPes = 2; // two seats taken: one worker to share between them
  g_most = 0;
  std::vector<std::thread> pes;
  std::atomic<int> failures{0};
  for (int pe = 0; pe < kPes; ++pe)
    pes.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        const pto::runtime::PoolSeat seat;
        Env env(2000, 3);
        pto_rt_parallel_for(nullptr, body, &env, 0, 2000, 8, 3);
        if (!each_once(env) || env.bad_worker.load() != 0)
          failures.fetch_add(1);
      }
    });
  for (auto &t : pes)
    t.join();
  CHECK(failures.load() == 0);
  CHECK(g_most.load() <= 3);
}

TEST_CASE("pool: a thread count outside [1, 1024] is an ArgumentError") {
  CHECK_THROWS_AS(pto::runtime::set_pool_threads(0), pto::ArgumentError);
  CHECK_THROWS_AS(pto::runtime::set_pool_threads(1025), pto::ArgumentError);
}
