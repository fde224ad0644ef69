// transport_test.cpp - The shared-memory transport's mechanisms (runtime/src/transport/): PE
// threads that persist across runs (also after failed ones), waits that poll and then sleep
// (still detecting deadlocks), ADD puts that lose no update under contention, and heaps that are
// zero at kernel entry although only the chunks written since are cleared.
#include "pto/error.h"
#include "pto/runtime/symmetric_heap.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/runtime_harness.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

using pto::runtime::World;
using support::rt_barrier;
using support::rt_kernel;

namespace {
constexpr int32_t kI32 = 3, kI64 = 4, kF32 = 7, kBF16 = 8;

// The thread each PE ran on in one run.
std::vector<std::thread::id> pe_threads(World &world) {
  std::vector<std::thread::id> ids(size_t(world.n_pes()));
  world.run([&](int pe) { ids[size_t(pe)] = std::this_thread::get_id(); });
  return ids;
}
} // namespace

TEST_CASE("World::run reuses its PE threads across runs, also after a run that failed") {
  constexpr int n = 4;
  World world(n);
  const auto first = pe_threads(world);
  CHECK(std::set<std::thread::id>(first.begin(), first.end()).size() == size_t(n));
  CHECK(first[0] == std::this_thread::get_id()); // PE 0 runs on the caller's thread
  CHECK(pe_threads(world) == first);
  // A PE that throws (its peers released from a barrier), then a kernel that fails.
  CHECK_THROWS_AS(world.run([&](int pe) {
    if (pe == 2)
      throw std::runtime_error("boom");
    rt_kernel({{"world", n, 256}}, [](pto_ctx *ctx) { return rt_barrier(ctx, 0); });
  }),
                  std::runtime_error);
  CHECK(pe_threads(world) == first);
  CHECK_THROWS_AS(world.run([&](int pe) {
    rt_kernel({{"world", n, 256}}, [&](pto_ctx *ctx) {
      return pe == 1 ? pto_rt_signal(ctx, 0, 99, 0, PTO_ATOMIC_SET, 1, -1) : rt_barrier(ctx, 0);
    });
  }),
                  pto::DistributedError);
  CHECK(pe_threads(world) == first);
  // The next run starts clean: barriers and heaps work again.
  std::atomic<int> ok{0};
  world.run([&](int) {
    rt_kernel({{"world", n, 256}}, [&](pto_ctx *ctx) {
      const int32_t st = rt_barrier(ctx, 0);
      if (st == PTO_OK)
        ok.fetch_add(1);
      return st;
    });
  });
  CHECK(ok.load() == n);
}

TEST_CASE("waits that are satisfied while polling and then block still end in DeadlockError") {
  constexpr int64_t kTimeoutMs = 200;
  World world(2, {.deadlock_timeout_ms = kTimeoutMs});
  std::string msg;
  try {
    world.run([&](int pe) {
      rt_kernel({{"world", 2, 256}}, [&](pto_ctx *ctx) {
        // Rounds 1..100 hand over (each wait is satisfied, mostly while polling); then PE 1
        // waits for round 101, which PE 0 never signals: PE 0 has returned.
        for (int32_t r = 1; r <= 100; ++r) {
          if (pe == 1 && pto_rt_wait_until(ctx, 0, 0, PTO_CMP_EQ, r, 0, 7, -1) != PTO_OK)
            return int32_t(PTO_ERR);
          if (pto_rt_signal(ctx, 0, 1 - pe, 0, PTO_ATOMIC_SET, r, -1) != PTO_OK)
            return int32_t(PTO_ERR);
          if (pe == 0 && pto_rt_wait_until(ctx, 0, 0, PTO_CMP_EQ, r, 0, 7, -1) != PTO_OK)
            return int32_t(PTO_ERR);
        }
        return pe == 1 ? pto_rt_wait_until(ctx, 0, 0, PTO_CMP_EQ, 101, 0, 7, -1) : int32_t(PTO_OK);
      });
    });
    FAIL("no DeadlockError");
  } catch (const pto::DeadlockError &e) {
    msg = e.what();
  }
  CHECK(msg.find("PE 1 timed out after 200 ms") != std::string::npos);
  CHECK(msg.find("signal slot 7") != std::string::npos);
  CHECK(msg.find("to be == 101; current value 100") != std::string::npos);
}

TEST_CASE("ADD puts from many PEs into one tile lose no update (int exact, float exact)") {
  constexpr int n = 12, rounds = 50, len = 3000; // len: stripes and vector tails both
  World world(n);
  constexpr int64_t kI32Bytes = len * 4, kI64Off = kI32Bytes, kF32Off = kI64Off + len * 8;
  constexpr int64_t kHeap = kF32Off + len * 4 + 64;
  std::vector<int32_t> i32(len);
  std::vector<int64_t> i64(len);
  std::vector<float> f32(len);
  world.run([&](int pe) {
    std::vector<int32_t> a(len);
    std::vector<int64_t> b(len);
    std::vector<float> c(len);
    std::vector<uint16_t> h(len); // bf16: 1 + pe, exact
    for (int i = 0; i < len; ++i) {
      a[size_t(i)] = pe + 1 + i;
      b[size_t(i)] = (int64_t(1) << 40) + pe;
      c[size_t(i)] = float(pe + 1);
      const float v = float(pe + 1);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      h[size_t(i)] = uint16_t(bits >> 16);
    }
    rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const pto_block blk = support::rt_block_1d(len);
      for (int r = 0; r < rounds; ++r) {
        int32_t st =
            pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, a.data(), kI32, 0, kI32Bytes, kI32, &blk, -1);
        st = st ? st
                : pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, b.data(), kI64, kI64Off, kF32Off, kI64,
                             &blk, -1);
        // fp32 and bf16 -> fp32 ADDs into the same words, alternating.
        st = st ? st
                : (r % 2 ? pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, c.data(), kF32, kF32Off, kHeap,
                                      kF32, &blk, -1)
                         : pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, h.data(), kBF16, kF32Off, kHeap,
                                      kF32, &blk, -1));
        if (st)
          return st;
      }
      int32_t st = rt_barrier(ctx, kHeap - 32);
      if (st == PTO_OK && pe == 0) {
        const pto_block b1 = support::rt_block_1d(len);
        st = pto_rt_get(ctx, 0, 0, 0, kI32Bytes, kI32, i32.data(), kI32, &b1, -1);
        st = st ? st : pto_rt_get(ctx, 0, 0, kI64Off, kF32Off, kI64, i64.data(), kI64, &b1, -1);
        st = st ? st : pto_rt_get(ctx, 0, 0, kF32Off, kHeap, kF32, f32.data(), kF32, &b1, -1);
      }
      return st;
    });
  });
  // Independent sums: sum over PEs of (pe + 1 + i), of 2^40 + pe, of (pe + 1), times rounds.
  const int64_t pes_sum = int64_t(n) * (n + 1) / 2;
  int bad = 0;
  for (int i = 0; i < len; ++i) {
    bad += i32[size_t(i)] != int32_t(rounds * (pes_sum + int64_t(n) * i));
    bad += i64[size_t(i)] != rounds * (n * (int64_t(1) << 40) + pes_sum - n);
    bad += f32[size_t(i)] != float(rounds * pes_sum);
  }
  CHECK(bad == 0);
}

TEST_CASE("SymmetricHeap: a reused buffer is zero again after clearing only what was written") {
  pto::runtime::SymmetricHeap heap(2);
  constexpr int64_t kBytes = 1 << 20;
  heap.prepare(0, kBytes);
  CHECK(heap.last_zeroed_bytes(0) == 0); // freshly mapped: zero without a memset
  std::byte *base = heap.base(0);
  std::memset(base + 5000, 0xab, 10); // chunk 1
  heap.mark_written(0, 5000, 10);
  std::memset(base + 600000, 0xcd, 9000); // chunks 146-148
  heap.mark_written(0, 600000, 9000);
  heap.mark_written(1, 0, 100); // another PE's buffer (not mapped yet): ignored
  heap.prepare(0, kBytes);
  CHECK(heap.base(0) == base); // kept
  CHECK(heap.last_zeroed_bytes(0) == 4 * pto::runtime::SymmetricHeap::kChunkBytes);
  int nonzero = 0;
  for (int64_t i = 0; i < kBytes; ++i)
    nonzero += base[i] != std::byte{0};
  CHECK(nonzero == 0);
  heap.prepare(0, kBytes); // nothing written since
  CHECK(heap.last_zeroed_bytes(0) == 0);
}

TEST_CASE("SymmetricHeap: a zero limit clears only below it and keeps the rest for later") {
  pto::runtime::SymmetricHeap heap(1);
  constexpr int64_t kChunk = pto::runtime::SymmetricHeap::kChunkBytes, kBytes = 64 * kChunk;
  heap.prepare(0, kBytes);
  std::byte *base = heap.base(0);
  std::memset(base + 2 * kChunk, 0x11, 10); // below the limit
  heap.mark_written(0, 2 * kChunk, 10);
  std::memset(base + 40 * kChunk, 0x22, 10); // past it
  heap.mark_written(0, 40 * kChunk, 10);
  heap.prepare(0, kBytes, 10 * kChunk + 512); // chunk 10 meets the limit
  CHECK(heap.last_zeroed_bytes(0) == kChunk);
  CHECK(base[2 * kChunk] == std::byte{0});
  CHECK(base[40 * kChunk] == std::byte{0x22}); // kept as it was
  heap.prepare(0, kBytes); // a kernel that needs it all zero: the kept chunk is still marked
  CHECK(heap.last_zeroed_bytes(0) == kChunk);
  CHECK(base[40 * kChunk] == std::byte{0});
}

TEST_CASE("kernel entry: data and signals a kernel left behind are zero in the next kernel") {
  constexpr int n = 3;
  constexpr int64_t kHeap = 256 << 10, kFar = 200 << 10; // data far into a large heap
  World world(n);
  std::vector<std::vector<int32_t>> seen(n, std::vector<int32_t>(64, -1));
  for (int call = 0; call < 2; ++call)
    world.run([&](int pe) {
      rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
        const pto_block b = support::rt_block_1d(64);
        if (call == 0) { // dirty: a put into the next PE, a signal and an ADD into PE 0
          std::vector<int32_t> v(64, 7 + pe);
          int32_t st = pto_rt_put(ctx, 0, (pe + 1) % n, PTO_ATOMIC_SET, v.data(), kI32, kFar, kHeap,
                                  kI32, &b, -1);
          st =
              st ? st : pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, v.data(), kI32, 0, 256, kI32, &b, -1);
          st = st ? st : pto_rt_signal(ctx, 0, -1, kHeap - 64, PTO_ATOMIC_ADD, 5, -1);
          return st ? st : rt_barrier(ctx, kHeap - 32);
        }
        // The next kernel: everything reads as zero, read with get (not through heap_base).
        std::vector<int32_t> far(64), near(64), sig(8);
        const pto_block s8 = support::rt_block_1d(8);
        int32_t st = pto_rt_get(ctx, 0, pe, kFar, kHeap, kI32, far.data(), kI32, &b, -1);
        st = st ? st : pto_rt_get(ctx, 0, pe, 0, 256, kI32, near.data(), kI32, &b, -1);
        st = st ? st : pto_rt_get(ctx, 0, pe, kHeap - 64, kHeap, kI32, sig.data(), kI32, &s8, -1);
        for (int i = 0; i < 64; ++i)
          seen[size_t(pe)][size_t(i)] = far[size_t(i)] | near[size_t(i)] | sig[size_t(i % 8)];
        return st;
      });
    });
  for (int pe = 0; pe < n; ++pe)
    CHECK(seen[size_t(pe)] == std::vector<int32_t>(64, 0));
}
