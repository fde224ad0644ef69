// mpi_transport_test.cpp - The MPI transport (runtime/src/transport/mpi/) under mpirun:
// strided put/get, exact ADDs from every rank (int32, fp32, fp16, bf16), message passing (data
// then signal), AMOs (fetch-add, CAS), the abort word and its message, and the progress stall test.
// Expected values are computed here from the inputs alone. Run: mpirun -np 4 build/tests/test_mpi
// (PTO_MPI_SHARED=0 for the RMA path; --mca osc pt2pt|rdma|sm to force a component).
#include "pto/element.h"

#include "transport/mpi/mpi_session.h"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

using namespace pto::runtime::mpi;

namespace {
constexpr int64_t kTimeoutMs = 30000;

Layout rows(int64_t r, int64_t c, int64_t row_stride) {
  Layout l;
  l.n = 2;
  l.extent[0] = r;
  l.extent[1] = c;
  l.stride[0] = row_stride;
  l.stride[1] = 1;
  return l;
}

Layout flat(int64_t n) {
  Layout l;
  l.n = 1;
  l.extent[0] = n;
  l.stride[0] = 1;
  return l;
}

void barrier(Session &s, MPI_Comm c) { REQUIRE(s.barrier(c, kTimeoutMs) == WaitOutcome::Done); }
} // namespace

TEST_CASE("strided put then get by a third PE sees every element, nothing else") {
  Session &s = session();
  const int n = s.size(), me = s.rank();
  auto heap = s.map_heap(s.world(), 4096);
  // A 3x5 int32 block into rows of 8 at byte 64 of the next PE's heap.
  std::vector<int32_t> src(15);
  for (int i = 0; i < 15; ++i)
    src[size_t(i)] = me * 100 + i;
  heap->put((me + 1) % n, 64, rows(3, 5, 8), MPI_INT32_T, src.data());
  barrier(s, s.world());
  // Read PE (me + 2)'s heap: written by PE me + 1.
  const int target = (me + 2) % n, writer = (me + 1) % n;
  std::vector<int32_t> got(24, -1);
  heap->get(target, 64, flat(24), MPI_INT32_T, got.data());
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 8; ++c)
      CHECK(got[size_t(r * 8 + c)] == (c < 5 ? writer * 100 + r * 5 + c : 0));
  barrier(s, s.world());
}

TEST_CASE("ADD from every PE into PE 0 loses no update (int32, fp32, fp16, bf16)") {
  Session &s = session();
  const int n = s.size(), me = s.rank();
  auto heap = s.map_heap(s.world(), 4096);
  constexpr int kElems = 64, kRounds = 50;
  std::vector<int32_t> vi(kElems);
  std::vector<float> vf(kElems);
  std::vector<float> vh(kElems, 1.0f), vb(kElems, 1.0f); // halves ADD fp32 values
  for (int i = 0; i < kElems; ++i) {
    vi[size_t(i)] = me + i;
    vf[size_t(i)] = float((me + i) % 3); // small integers: every partial sum is exact
  }
  for (int r = 0; r < kRounds; ++r) {
    heap->add(0, 0, flat(kElems), MPI_INT32_T, pto_dtype(pto::DT_INT32), vi.data());
    heap->add(0, 256, flat(kElems), MPI_FLOAT, pto_dtype(pto::DT_FP32), vf.data());
    heap->add(0, 512, flat(kElems), MPI_UINT16_T, pto_dtype(pto::DT_FP16), vh.data());
    heap->add(0, 640, flat(kElems), MPI_UINT16_T, pto_dtype(pto::DT_BF16), vb.data());
  }
  barrier(s, s.world());
  if (me == 0) {
    std::vector<int32_t> gi(kElems);
    std::vector<float> gf(kElems);
    std::vector<uint16_t> gh(kElems), gb(kElems);
    heap->get(0, 0, flat(kElems), MPI_INT32_T, gi.data());
    heap->get(0, 256, flat(kElems), MPI_FLOAT, gf.data());
    heap->get(0, 512, flat(kElems), MPI_UINT16_T, gh.data());
    heap->get(0, 640, flat(kElems), MPI_UINT16_T, gb.data());
    for (int i = 0; i < kElems; ++i) {
      int64_t wi = 0;
      double wf = 0;
      for (int p = 0; p < n; ++p) {
        wi += int64_t(p + i) * kRounds;
        wf += double((p + i) % 3) * kRounds;
      }
      CHECK(gi[size_t(i)] == wi);
      CHECK(gf[size_t(i)] == float(wf));
      CHECK(pto::fp16_to_fp32(gh[size_t(i)]) == float(n * kRounds)); // <= 2048: exact in fp16
      CHECK(pto::bf16_to_fp32(gb[size_t(i)]) == float(n * kRounds)); // <= 256: exact in bf16
    }
  }
  barrier(s, s.world());
}

TEST_CASE("int8 and int16 ADDs from every PE wrap, as on threads, and lose no update") {
  // Values chosen so the sums pass the type's range many times: a saturating MPI_SUM (Open MPI
  // 4.1.4's for 8/16-bit integers here) would stop at 127 / 32767.
  Session &s = session();
  const int n = s.size(), me = s.rank();
  auto heap = s.map_heap(s.world(), 4096);
  constexpr int kElems = 48, kRounds = 40;
  std::vector<int8_t> v8(kElems);
  std::vector<int16_t> v16(kElems);
  for (int i = 0; i < kElems; ++i) {
    v8[size_t(i)] = static_cast<int8_t>(100 - 7 * ((me + i) % 30));
    v16[size_t(i)] = static_cast<int16_t>(30000 - 1000 * ((me * 3 + i) % 60));
  }
  for (int r = 0; r < kRounds; ++r) {
    heap->add(0, 0, flat(kElems), MPI_INT8_T, pto_dtype(pto::DT_INT8), v8.data());
    heap->add(0, 128, flat(kElems), MPI_INT16_T, pto_dtype(pto::DT_INT16), v16.data());
  }
  barrier(s, s.world());
  if (me == 0) {
    std::vector<int8_t> g8(kElems);
    std::vector<int16_t> g16(kElems);
    heap->get(0, 0, flat(kElems), MPI_INT8_T, g8.data());
    heap->get(0, 128, flat(kElems), MPI_INT16_T, g16.data());
    for (int i = 0; i < kElems; ++i) {
      int64_t w8 = 0, w16 = 0;
      for (int p = 0; p < n; ++p) {
        w8 += int64_t(100 - 7 * ((p + i) % 30)) * kRounds;
        w16 += int64_t(30000 - 1000 * ((p * 3 + i) % 60)) * kRounds;
      }
      CHECK(g8[size_t(i)] == static_cast<int8_t>(static_cast<uint8_t>(w8 & 0xff)));
      CHECK(g16[size_t(i)] == static_cast<int16_t>(static_cast<uint16_t>(w16 & 0xffff)));
    }
  }
  barrier(s, s.world());
}

TEST_CASE("message passing: data put then signal; the waiter sees the data, 2000 rounds") {
  Session &s = session();
  const int n = s.size(), me = s.rank();
  auto heap = s.map_heap(s.world(), 4096);
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  int64_t violations = 0;
  for (int32_t round = 1; round <= 2000; ++round) {
    const int64_t data = int64_t(me) << 32 | round;
    heap->put(to, 8, flat(1), MPI_INT64_T, &data);
    heap->signal(to, 0, PTO_ATOMIC_SET, round);
    while (heap->load_signal(0) < round)
      REQUIRE_FALSE(s.poll());
    int64_t got = 0;
    heap->get(me, 8, flat(1), MPI_INT64_T, &got);
    violations += got != (int64_t(from) << 32 | round);
    // The sender may not overwrite slot 8 before this round's read: wait for its ack.
    heap->signal(from, 4, PTO_ATOMIC_SET, round);
    while (heap->load_signal(4) < round)
      REQUIRE_FALSE(s.poll());
  }
  CHECK(violations == 0);
  barrier(s, s.world());
}

TEST_CASE("AMOs from every PE on PE 0 lose no update: fetch-add int64 and fp32, CAS counter") {
  using pto::runtime::transport::Amo;
  Session &s = session();
  const int n = s.size();
  auto heap = s.map_heap(s.world(), 4096);
  constexpr int kRounds = 40;
  const int64_t one64 = 1;
  const float onef = 1.0f;
  int64_t cas_failures = 0;
  for (int r = 0; r < kRounds; ++r) {
    heap->atomic(0, 0, Amo::FetchAdd, pto_dtype(pto::DT_INT64), &one64, nullptr, nullptr);
    heap->atomic(0, 8, Amo::FetchAdd, pto_dtype(pto::DT_FP32), &onef, nullptr, nullptr);
    // A counter incremented by compare-and-swap only: every failed CAS retries.
    for (;;) {
      int32_t seen = 0, old = 0;
      heap->atomic(0, 16, Amo::Fetch, pto_dtype(pto::DT_INT32), nullptr, nullptr, &seen);
      const int32_t next = seen + 1;
      heap->atomic(0, 16, Amo::CompareSwap, pto_dtype(pto::DT_INT32), &next, &seen, &old);
      if (old == seen)
        break;
      ++cas_failures;
    }
  }
  barrier(s, s.world());
  int64_t i64 = 0;
  float f32 = 0;
  int32_t i32 = 0;
  heap->atomic(0, 0, Amo::Fetch, pto_dtype(pto::DT_INT64), nullptr, nullptr, &i64);
  heap->atomic(0, 8, Amo::Fetch, pto_dtype(pto::DT_FP32), nullptr, nullptr, &f32);
  heap->atomic(0, 16, Amo::Fetch, pto_dtype(pto::DT_INT32), nullptr, nullptr, &i32);
  CHECK(i64 == int64_t(n) * kRounds);
  CHECK(f32 == float(n * kRounds)); // small integers: exact in fp32
  CHECK(i32 == n * kRounds);
  MESSAGE("CAS retries on this PE: ", cas_failures);
  barrier(s, s.world());
}

// compare_swap and fetch_add on the same word are atomic with respect to each other:
// on RMA windows CAS is a fetch and a conditional replace, so fetch_add and swap take the same
// per-PE lock (else an add landing between the CAS's read and its replace would be lost).
TEST_CASE("AMOs mixed on one word: CAS increments and fetch-adds lose no update") {
  using pto::runtime::transport::Amo;
  Session &s = session();
  const int n = s.size();
  auto heap = s.map_heap(s.world(), 4096);
  constexpr int kRounds = 200;
  const int64_t one = 1;
  for (int r = 0; r < kRounds; ++r) {
    heap->atomic(0, 32, Amo::FetchAdd, pto_dtype(pto::DT_INT64), &one, nullptr, nullptr);
    for (;;) {
      int64_t seen = 0, old = 0;
      heap->atomic(0, 32, Amo::Fetch, pto_dtype(pto::DT_INT64), nullptr, nullptr, &seen);
      const int64_t next = seen + 1;
      heap->atomic(0, 32, Amo::CompareSwap, pto_dtype(pto::DT_INT64), &next, &seen, &old);
      if (old == seen)
        break;
    }
    heap->atomic(0, 32, Amo::FetchAdd, pto_dtype(pto::DT_INT64), &one, nullptr, nullptr);
  }
  barrier(s, s.world());
  int64_t total = 0;
  heap->atomic(0, 32, Amo::Fetch, pto_dtype(pto::DT_INT64), nullptr, nullptr, &total);
  CHECK(total == int64_t(3) * n * kRounds);
  barrier(s, s.world());
}

TEST_CASE("a failed PE's abort reaches every PE's poll") {
  Session &s = session();
  REQUIRE(s.size() >= 2);
  // Not stopped by the abort: PE 1 may abort before the others have left this barrier.
  REQUIRE(s.barrier(s.world(), kTimeoutMs, /*stop_on_abort=*/false) == WaitOutcome::Done);
  if (s.rank() == 1)
    s.abort_all(1, "PE 1 failed: boom");
  while (!s.poll()) {
  }
  CHECK(s.aborted_by() == 1);
  CHECK(s.abort_message() == "PE 1 failed: boom");
  REQUIRE(s.barrier(s.world(), kTimeoutMs, /*stop_on_abort=*/false) == WaitOutcome::Done);
  s.clear_abort();
  REQUIRE(s.barrier(s.world(), kTimeoutMs, false) == WaitOutcome::Done);
  CHECK(s.aborted_by() == -1);
}

// Issue 10's stall test: PE 0 computes for 2 s without calling MPI; every other PE puts to it,
// signals, and must see its calls complete long before PE 0's compute ends (a transport without
// target progress would hold them until PE 0 calls MPI again).
TEST_CASE("a PE computing for seconds never stalls its peers' puts") {
  Session &s = session();
  const int me = s.rank();
  auto heap = s.map_heap(s.world(), 1 << 17);
  if (!heap->is_shared() && !s.progress_thread()) {
    MESSAGE("skipped: no progress thread (PTO_MPI_PROGRESS=0) on a non-shared window: "
            "PE 0's compute stalls its peers by design");
    return;
  }
  barrier(s, s.world());
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  constexpr double kComputeS = 2.0;
  double peer_done_s = 0;
  if (me == 0) {
    volatile double x = 0;
    while (std::chrono::duration<double>(Clock::now() - t0).count() < kComputeS)
      x = x + 1.0; // no MPI call in here
    while (heap->load_signal(0) < s.size() - 1)
      REQUIRE_FALSE(s.poll());
  } else {
    std::vector<float> block(4096, float(me));
    for (int i = 0; i < 8; ++i) // 128 KiB of puts and ADDs
      heap->put(0, 4096 + int64_t(me % 4) * 16384, flat(4096), MPI_FLOAT, block.data());
    heap->add(0, 4, flat(1), MPI_INT32_T, pto_dtype(pto::DT_INT32), &me);
    heap->signal(0, 0, PTO_ATOMIC_ADD, 1);
    peer_done_s = std::chrono::duration<double>(Clock::now() - t0).count();
    CHECK_MESSAGE(peer_done_s < kComputeS / 2, "PE ", me, "'s puts completed only after ",
                  peer_done_s, " s");
  }
  barrier(s, s.world());
}

// Kernel entry on MPI zeroes only the heap prefix the program reads before it writes
// (Group::map_heap_zeroing): written chunks below the limit become zero, written chunks past it
// keep their bytes and their marks, so that a later call without a limit still zeroes them.
TEST_CASE("zero_written(limit) zeroes the written chunks below the limit, keeps the rest") {
  Session &s = session();
  const int n = s.size(), me = s.rank();
  constexpr int64_t kChunk = MpiHeap::kDirtyChunk;
  auto heap = s.map_heap(s.world(), 4 * kChunk);
  barrier(s, s.world());
  // Every PE writes one int32 into chunks 0, 1 and 3 of the next PE's heap.
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  const int32_t v = 1000 + me;
  for (int64_t c : {0, 1, 3}) {
    heap->mark_written(to, c * kChunk + 8, c * kChunk + 12); // as the transport's put does
    heap->put(to, c * kChunk + 8, flat(1), MPI_INT32_T, &v);
  }
  heap->quiet();
  barrier(s, s.world());
  auto word = [&](int64_t c) {
    int32_t got = -1;
    heap->get(me, c * kChunk + 8, flat(1), MPI_INT32_T, &got);
    return got;
  };
  for (int64_t c : {0, 1, 3})
    REQUIRE(word(c) == 1000 + from);
  // Chunk 1 meets [0, kChunk + 1): chunks 0 and 1 are zeroed, chunk 3 keeps its word.
  CHECK(heap->zero_written(kChunk + 1) == 2 * kChunk);
  CHECK(word(0) == 0);
  CHECK(word(1) == 0);
  CHECK(word(3) == 1000 + from);
  CHECK(heap->zero_written(0) == 0);
  CHECK(heap->zero_written() == kChunk); // chunk 3's mark was kept
  CHECK(word(3) == 0);
  barrier(s, s.world());
}
