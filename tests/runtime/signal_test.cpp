// signal_test.cpp - pto_rt_signal / pto_rt_wait_until: put-then-signal ordering, barriers made of
// signal_all + wait, more PEs than cores, comparisons, and deadlocks that end in DeadlockError.
#include "pto/error.h"
#include "pto/runtime/world.h"

#include "support/runtime_harness.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

using pto::runtime::World;
using support::rt_barrier;
using support::rt_kernel;

namespace {
constexpr int32_t kI32 = 3;
constexpr int64_t kDataBytes = 4096;
constexpr int64_t kSlot = kDataBytes;        // the first signal slot, after the data
constexpr int64_t kBarrierSlot = kSlot + 32; // the next 32-byte slot
constexpr int64_t kHeap = kDataBytes + 256;
} // namespace

TEST_CASE("shmem_signal after shmem_put: a waiter that sees the signal sees the data") {
  constexpr int n = 8, len = 1024, rounds = 40;
  World world(n);
  std::atomic<int> wrong{0};
  world.run([&](int pe) {
    std::vector<int32_t> src(len), seen(len);
    rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const pto_block b = support::rt_block_1d(len);
      const int to = (pe + 1) % n, from = (pe + n - 1) % n;
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < len; ++i)
          src[size_t(i)] = pe * 1000000 + r * 1000 + i;
        int32_t st =
            pto_rt_put(ctx, 0, to, PTO_ATOMIC_SET, src.data(), kI32, 0, kDataBytes, kI32, &b, -1);
        st = st ? st : pto_rt_signal(ctx, 0, to, kSlot, PTO_ATOMIC_SET, 1, -1);
        st = st ? st : pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, 1, /*clear=*/1, 0, -1);
        if (st)
          return st;
        std::memcpy(seen.data(), pto_rt_heap_base(ctx, 0, pe), len * 4);
        for (int i = 0; i < len; ++i)
          if (seen[size_t(i)] != from * 1000000 + r * 1000 + i)
            wrong.fetch_add(1);
        // The sender may overwrite the data only after everyone has read this round's.
        st = rt_barrier(ctx, kBarrierSlot);
        if (st)
          return st;
      }
      return PTO_OK;
    });
  });
  CHECK(wrong.load() == 0);
}

TEST_CASE("shmem_barrier_all pattern: signal_all ADD 1 + wait == n_pes holds every PE back") {
  constexpr int n = 8, rounds = 200;
  World world(n);
  std::atomic<int> arrivals{0};
  std::atomic<int> early{0};
  world.run([&](int) {
    rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      for (int r = 0; r < rounds; ++r) {
        arrivals.fetch_add(1);
        if (int32_t st = rt_barrier(ctx, kBarrierSlot))
          return st;
        // Past barrier r, all n PEs have arrived r + 1 times.
        if (arrivals.load() < n * (r + 1))
          early.fetch_add(1);
      }
      return PTO_OK;
    });
  });
  CHECK(early.load() == 0);
  CHECK(arrivals.load() == n * rounds);
}

TEST_CASE("shmem_signal: 64 PEs on 2 cores pass a token around a ring") {
  constexpr int n = 64, laps = 3;
  World world(n);
  std::atomic<int> hops{0};
  world.run([&](int pe) {
    rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const int next = (pe + 1) % n;
      for (int lap = 0; lap < laps; ++lap) {
        if (pe == 0) {
          int32_t st = pto_rt_signal(ctx, 0, next, kSlot, PTO_ATOMIC_ADD, 1, -1);
          st = st ? st : pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, 1, 1, 0, -1);
          if (st)
            return st;
        } else {
          int32_t st = pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, 1, 1, 0, -1);
          st = st ? st : pto_rt_signal(ctx, 0, next, kSlot, PTO_ATOMIC_ADD, 1, -1);
          if (st)
            return st;
        }
        hops.fetch_add(1);
      }
      return PTO_OK;
    });
  });
  CHECK(hops.load() == n * laps);
}

TEST_CASE("shmem_wait_until: every comparison, and clear resets the slot") {
  World world(1);
  struct Case {
    int32_t cmp, value;
  };
  // The slot holds 5; each of these is satisfied by 5.
  const Case cases[] = {{PTO_CMP_EQ, 5}, {PTO_CMP_NE, 4}, {PTO_CMP_LT, 6},
                        {PTO_CMP_LE, 5}, {PTO_CMP_GT, 4}, {PTO_CMP_GE, 5}};
  int32_t after_clear = -1;
  world.run([&](int) {
    rt_kernel({{"world", 1, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      int32_t st = pto_rt_signal(ctx, 0, 0, kSlot, PTO_ATOMIC_SET, 5, -1);
      for (const Case &c : cases)
        st = st ? st : pto_rt_wait_until(ctx, 0, kSlot, c.cmp, c.value, 0, 0, -1);
      st = st ? st : pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, 5, /*clear=*/1, 0, -1);
      std::memcpy(&after_clear, static_cast<char *>(pto_rt_heap_base(ctx, 0, 0)) + kSlot, 4);
      return st;
    });
  });
  CHECK(after_clear == 0);
}

TEST_CASE("shmem_wait_until: a wait that never completes is a DeadlockError naming the slot") {
  constexpr int n = 4;
  World world(n, {.deadlock_timeout_ms = 200});
  std::string pe3_message;
  std::mutex m;
  std::vector<std::string> others;
  std::atomic<bool> pe3_failed{false};
  const std::vector<std::string> sites = {"allreduce.cpp:31: shmem_wait_until"};
  // PE 3 waits for 8 ADDs but only 7 arrive. The others hold (outside the runtime) until PE 3
  // has failed, so only PE 3 can time out; then their kernel exit must release them.
  CHECK_THROWS_AS(world.run([&](int pe) {
    try {
      rt_kernel(
          {{"world", n, kHeap}},
          [&](pto_ctx *ctx) -> int32_t {
            if (pe != 3) {
              pe3_failed.wait(false);
              return PTO_OK;
            }
            int32_t st = pto_rt_signal(ctx, 0, 3, kSlot, PTO_ATOMIC_ADD, 7, -1);
            return st ? st
                      : pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, 8, 0,
                                          /*slot_number=*/5, 0);
          },
          42, &sites);
    } catch (const pto::Error &e) {
      if (pe == 3) {
        pe3_message = e.what();
        pe3_failed.store(true);
        pe3_failed.notify_all();
      } else {
        std::lock_guard lock(m);
        others.push_back(e.what());
      }
      throw;
    }
  }),
                  pto::DeadlockError);
  CHECK(pe3_message == "allreduce.cpp:31: shmem_wait_until: PE 3 timed out after 200 ms without "
                       "progress on any PE, waiting for signal slot 5 (group 'world') to be == 8; "
                       "current value 7; raise PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately "
                       "computes that long without communicating");
  REQUIRE(others.size() == 3);
  for (const auto &msg : others) {
    CAPTURE(msg);
    CHECK(msg.find("released because PE 3 failed") != std::string::npos);
  }
}

TEST_CASE("shmem_signal: a target_pe outside the group is a DistributedError") {
  World world(2);
  CHECK_THROWS_WITH_AS(world.run([&](int) {
    rt_kernel({{"world", 2, kHeap}}, [](pto_ctx *ctx) -> int32_t {
      return pto_rt_signal(ctx, 0, 2, kSlot, PTO_ATOMIC_SET, 1, -1);
    });
  }),
                       doctest::Contains("shmem_signal: target_pe 2 is out of range [0, 2) for "
                                         "group 'world'"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(world.run([&](int) {
    rt_kernel({{"world", 2, kHeap}}, [](pto_ctx *ctx) -> int32_t {
      return pto_rt_signal(ctx, 0, 0, kHeap - 2, PTO_ATOMIC_SET, 1, -1);
    });
  }),
                       doctest::Contains("signal slot offset"), pto::DistributedError);
}
