// shmem_ops_test.cpp - pto_rt_put / pto_rt_get / pto_rt_clear called directly from World::run:
// strided blocks, dtype conversion, atomic ADD under contention, bounds and PE checks.
#include "pto/error.h"
#include "pto/runtime/world.h"

#include "support/runtime_harness.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

using pto::runtime::World;
using support::rt_barrier;
using support::rt_kernel;

namespace {
// PyPTO dtype ordinals.
constexpr int32_t kI8 = 1, kI16 = 2, kI32 = 3, kI64 = 4, kF16 = 6, kF32 = 7, kBF16 = 8, kU8 = 11,
                  kBool = 15, kF64 = 16;
constexpr int64_t kSignalAt = 4096; // a signal slot past the data in the tests' heaps
constexpr int64_t kHeap = 8192;

template <class T> T read_heap(pto_ctx *ctx, int pe, int64_t offset_bytes) {
  T v;
  std::memcpy(&v, static_cast<const char *>(pto_rt_heap_base(ctx, 0, pe)) + offset_bytes, sizeof v);
  return v;
}
} // namespace

TEST_CASE("shmem_put: a strided 2-D block lands at the right offsets on the next PE") {
  constexpr int n = 4, src_cols = 6, rows = 3, cols = 4, dst_row_stride = 8;
  constexpr int64_t dst_offset = 2 * 8 * 4; // row 2 of an [8, 8] int32 object
  World world(n);
  std::vector<std::vector<int32_t>> got(n);
  world.run([&](int pe) {
    std::vector<int32_t> src(rows * src_cols);
    for (int i = 0; i < rows * src_cols; ++i)
      src[size_t(i)] = pe * 1000 + i;
    rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const pto_block b = support::rt_block_2d(rows, cols, src_cols, dst_row_stride);
      int32_t st = pto_rt_put(ctx, 0, (pe + 1) % n, PTO_ATOMIC_SET, src.data(), kI32, dst_offset,
                              8 * 8 * 4, kI32, &b, -1);
      if (st == PTO_OK)
        st = rt_barrier(ctx, kSignalAt);
      got[size_t(pe)].resize(64);
      std::memcpy(got[size_t(pe)].data(), pto_rt_heap_base(ctx, 0, pe), 64 * 4);
      return st;
    });
  });
  for (int pe = 0; pe < n; ++pe) {
    const int from = (pe + n - 1) % n;
    std::vector<int32_t> want(64, 0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        want[size_t(2 * 8 + r * dst_row_stride + c)] = from * 1000 + r * src_cols + c;
    CAPTURE(pe);
    CHECK(got[size_t(pe)] == want);
  }
}

TEST_CASE("shmem_put: ADD from 8 PEs into one region loses no update") {
  constexpr int n = 8;
  World world(n);
  // Each PE adds `reps` times a row of 17 ones (17: not a multiple of any vector width).
  auto run_add = [&](int32_t src_dt, const void *one, int32_t dst_dt, int reps) {
    // Source stride 0: the one scalar is added into all 17 words.
    const pto_block b{{1, 1, 1, 17}, {0, 0, 0, 0}, {0, 0, 17, 1}};
    world.run([&](int) {
      rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
        int32_t st = PTO_OK;
        for (int r = 0; r < reps && st == PTO_OK; ++r)
          st = pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, one, src_dt, 0, 4096, dst_dt, &b, -1);
        return st ? st : rt_barrier(ctx, kSignalAt);
      });
    });
  };
  // Read PE 0's heap after the run: heaps live until the next kernel entry.
  auto result = [&](auto zero, int i) {
    decltype(zero) v;
    std::memcpy(&v,
                static_cast<const char *>(pto_rt_heap_base(world.context(0), 0, 0)) + i * sizeof v,
                sizeof v);
    return v;
  };
  SUBCASE("int32") {
    const int32_t one = 1;
    run_add(kI32, &one, kI32, 1000);
    for (int i = 0; i < 17; ++i)
      CHECK(result(int32_t{}, i) == 8 * 1000);
  }
  SUBCASE("int64") {
    const int64_t big = int64_t(1) << 40;
    run_add(kI64, &big, kI64, 500);
    for (int i = 0; i < 17; ++i)
      CHECK(result(int64_t{}, i) == 8 * 500 * (int64_t(1) << 40));
  }
  SUBCASE("int8") {
    const int8_t one = 1;
    run_add(kI8, &one, kI8, 15); // 8 * 15 = 120 <= 127
    for (int i = 0; i < 17; ++i)
      CHECK(result(int8_t{}, i) == 120);
  }
  SUBCASE("int16 and uint8") {
    const int16_t three = 3;
    run_add(kI16, &three, kI16, 1000); // 24000 <= 32767
    for (int i = 0; i < 17; ++i)
      CHECK(result(int16_t{}, i) == 24000);
    const uint8_t one = 1;
    run_add(kU8, &one, kU8, 31); // 248 <= 255
    for (int i = 0; i < 17; ++i)
      CHECK(result(uint8_t{}, i) == 248);
  }
  SUBCASE("fp32") {
    const float one = 1.0f;
    run_add(kF32, &one, kF32, 1000); // every partial sum is an integer <= 2^24: exact
    for (int i = 0; i < 17; ++i)
      CHECK(result(float{}, i) == 8000.0f);
  }
  SUBCASE("fp64") {
    const double half = 0.5;
    run_add(kF64, &half, kF64, 1000);
    for (int i = 0; i < 17; ++i)
      CHECK(result(double{}, i) == 4000.0);
  }
  SUBCASE("fp16 and bf16 sources into fp32 data") {
    const uint16_t fp16_half = 0x3800; // 0.5 in IEEE binary16
    run_add(kF16, &fp16_half, kF32, 100);
    for (int i = 0; i < 17; ++i)
      CHECK(result(float{}, i) == 400.0f); // 8 * 100 * 0.5
    const uint16_t bf16_one = 0x3f80;      // 1.0 in bfloat16 (the top half of fp32 0x3f800000)
    run_add(kBF16, &bf16_one, kF32, 100);
    for (int i = 0; i < 17; ++i)
      CHECK(result(float{}, i) == 800.0f);
  }
  SUBCASE("fp16 and bf16 data, added in fp32") {
    const uint16_t fp16_one = 0x3c00; // 1.0
    run_add(kF16, &fp16_one, kF16, 64);
    for (int i = 0; i < 17; ++i)
      CHECK(result(uint16_t{}, i) == 0x6000); // 512 = 2^9: exponent 9+15=24 -> 24 << 10
    const uint16_t bf16_one = 0x3f80;
    run_add(kBF16, &bf16_one, kBF16, 32);
    for (int i = 0; i < 17; ++i)
      CHECK(result(uint16_t{}, i) == 0x4380); // 256 = 2^8: fp32 0x43800000, top half
  }
}

TEST_CASE("shmem_get: reads the next PE's data, converting fp32 to bf16, int32 and fp64") {
  constexpr int n = 4, len = 33;
  World world(n);
  std::mutex m;
  int mismatches = 0;
  world.run([&](int pe) {
    // Values k/4 with |k| < 256 are exact in bf16, so the expected bf16 bits are the fp32 bits'
    // top half and the int32 value is the truncation toward zero.
    std::vector<float> mine(len);
    for (int i = 0; i < len; ++i)
      mine[size_t(i)] = float(pe * 40 + i - 60) / 4.0f;
    std::vector<uint16_t> as_bf16(len);
    std::vector<int32_t> as_i32(len);
    std::vector<double> as_f64(len);
    rt_kernel({{"world", n, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const pto_block b = support::rt_block_1d(len);
      int32_t st = pto_rt_put(ctx, 0, pe, PTO_ATOMIC_SET, mine.data(), kF32, 256, 256 + 4 * len,
                              kF32, &b, -1);
      st = st ? st : rt_barrier(ctx, kSignalAt);
      const int from = (pe + 1) % n;
      st = st ? st
              : pto_rt_get(ctx, 0, from, 256, 256 + 4 * len, kF32, as_bf16.data(), kBF16, &b, -1);
      st =
          st ? st : pto_rt_get(ctx, 0, from, 256, 256 + 4 * len, kF32, as_i32.data(), kI32, &b, -1);
      st =
          st ? st : pto_rt_get(ctx, 0, from, 256, 256 + 4 * len, kF32, as_f64.data(), kF64, &b, -1);
      return st;
    });
    int bad = 0;
    const int from = (pe + 1) % n;
    for (int i = 0; i < len; ++i) {
      const float v = float(from * 40 + i - 60) / 4.0f;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bad += as_bf16[size_t(i)] != uint16_t(bits >> 16);
      bad += as_i32[size_t(i)] != int32_t(v);
      bad += as_f64[size_t(i)] != double(v);
    }
    std::lock_guard lock(m);
    mismatches += bad;
  });
  CHECK(mismatches == 0);
}

TEST_CASE("shmem_put: SET with conversion into int8, bool and fp16 data") {
  World world(1);
  const float src[6] = {1.5f, -2.75f, 300.0f, -300.0f, 0.0f, 65519.0f};
  std::vector<int8_t> i8(6);
  std::vector<uint8_t> b8(6);
  std::vector<uint16_t> h(6);
  world.run([&](int) {
    rt_kernel({{"world", 1, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const pto_block b = support::rt_block_1d(6);
      int32_t st = pto_rt_put(ctx, 0, 0, PTO_ATOMIC_SET, src, kF32, 0, 64, kI8, &b, -1);
      st = st ? st : pto_rt_put(ctx, 0, 0, PTO_ATOMIC_SET, src, kF32, 64, 128, kBool, &b, -1);
      st = st ? st : pto_rt_put(ctx, 0, 0, PTO_ATOMIC_SET, src, kF32, 128, 192, kF16, &b, -1);
      std::memcpy(i8.data(), pto_rt_heap_base(ctx, 0, 0), 6);
      std::memcpy(b8.data(), static_cast<char *>(pto_rt_heap_base(ctx, 0, 0)) + 64, 6);
      std::memcpy(h.data(), static_cast<char *>(pto_rt_heap_base(ctx, 0, 0)) + 128, 12);
      return st;
    });
  });
  // Truncation toward zero, saturating at [-128, 127].
  CHECK(i8 == std::vector<int8_t>{1, -2, 127, -128, 0, 127});
  CHECK(b8 == std::vector<uint8_t>{1, 1, 1, 1, 0, 1});
  // fp16: 1.5 = 0x3e00, -2.75 = 0xc180, 300 = 0x5cb0, -300 = 0xdcb0, 0, 65519 rounds to 65504
  // (0x7bff) because 65520 is the midpoint to the next (infinite) step.
  CHECK(h == std::vector<uint16_t>{0x3e00, 0xc180, 0x5cb0, 0xdcb0, 0x0000, 0x7bff});
}

TEST_CASE("shmem_put: a dst_pe outside the group is a DistributedError at the user's site") {
  World world(8);
  const std::vector<std::string> sites = {"moe.cpp:42: shmem_put"};
  std::atomic<int> released{0};
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    const int32_t v = 0;
    const pto_block b = support::rt_block_1d(1);
    try {
      rt_kernel(
          {{"world", 8, kHeap}},
          [&](pto_ctx *ctx) -> int32_t {
            if (pe == 5)
              return pto_rt_put(ctx, 0, 9, PTO_ATOMIC_SET, &v, kI32, 0, 64, kI32, &b, 0);
            // The others wait for a signal that never comes, with the 30 s default
            // timeout: they must be released by PE 5's failure, not by the timeout.
            return pto_rt_wait_until(ctx, 0, kSignalAt, PTO_CMP_EQ, 1, 0, 7, -1);
          },
          42, &sites);
    } catch (const pto::DistributedError &e) {
      if (std::string(e.what()).find("released because PE 5 failed") != std::string::npos)
        released.fetch_add(1);
      throw;
    }
  }),
                       "moe.cpp:42: shmem_put: dst_pe 9 is out of range [0, 8) for group 'world'",
                       pto::DistributedError);
  CHECK(released.load() == 7);
}

TEST_CASE("shmem_put / shmem_get: blocks outside the object or the heap are DistributedErrors") {
  World world(2);
  auto put_at = [&](int64_t offset, int64_t limit, pto_block b) {
    std::vector<float> src(64, 1.0f);
    world.run([&](int pe) {
      rt_kernel({{"world", 2, 1024}}, [&](pto_ctx *ctx) -> int32_t {
        if (pe != 0) // one writer: two PEs storing to the same words would race
          return PTO_OK;
        return pto_rt_put(ctx, 0, 1, PTO_ATOMIC_SET, src.data(), kF32, offset, limit, kF32, &b, -1);
      });
    });
  };
  const pto_block row16 = support::rt_block_1d(16);
  // The last element of 16 fp32 at offset 960 ends at byte 1023: inside a 1024-byte heap.
  CHECK_NOTHROW(put_at(960, 1024, row16));
  // One element further reaches byte 1024.
  CHECK_THROWS_WITH_AS(put_at(964, 1024, row16),
                       doctest::Contains("shmem_put: offsets out of bounds: the block spans bytes "
                                         "[964, 1027] of PE 1's heap for group 'world'"),
                       pto::DistributedError);
  // Within the heap but past the object's end (an object of 64 bytes at offset 0).
  CHECK_THROWS_WITH_AS(put_at(4, 64, row16), doctest::Contains("object ends at byte 64"),
                       pto::DistributedError);
  CHECK_THROWS_AS(put_at(-64, 1024, row16), pto::DistributedError);
  CHECK_THROWS_WITH_AS(put_at(2, 1024, row16), doctest::Contains("not a multiple of the element"),
                       pto::DistributedError);
  // A 2-D block whose rows stride past the end: rows of 16 with a row stride of 64 fp32 (256
  // bytes); 4 rows end at byte 3 * 256 + 63 = 831, 5 rows at 1087.
  CHECK_NOTHROW(put_at(0, 1024, support::rt_block_2d(4, 16, 16, 64)));
  CHECK_THROWS_WITH_AS(put_at(0, 1024, support::rt_block_2d(5, 16, 16, 64)),
                       doctest::Contains("spans bytes [0, 1087]"), pto::DistributedError);
  // An empty block touches nothing and is fine anywhere.
  CHECK_NOTHROW(put_at(1 << 20, 1024, support::rt_block_1d(0)));

  CHECK_THROWS_WITH_AS(world.run([&](int) {
    float dst[4];
    const pto_block b = support::rt_block_1d(4);
    rt_kernel({{"world", 2, 1024}}, [&](pto_ctx *ctx) -> int32_t {
      return pto_rt_get(ctx, 0, 0, 1016, 1024, kF32, dst, kF32, &b, -1);
    });
  }),
                       doctest::Contains("shmem_get: offsets out of bounds"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(world.run([&](int) {
    float dst[1];
    const pto_block b = support::rt_block_1d(1);
    rt_kernel({{"world", 2, 1024}}, [&](pto_ctx *ctx) -> int32_t {
      return pto_rt_get(ctx, 0, -1, 0, 1024, kF32, dst, kF32, &b, -1);
    });
  }),
                       doctest::Contains("src_pe -1 is out of range [0, 2) for group 'world'"),
                       pto::DistributedError);
}

TEST_CASE("shmem_put: ADD into bool data is a DTypeError") {
  World world(1);
  const uint8_t t = 1;
  const pto_block b = support::rt_block_1d(1);
  CHECK_THROWS_AS(world.run([&](int) {
    rt_kernel({{"world", 1, 64}}, [&](pto_ctx *ctx) -> int32_t {
      return pto_rt_put(ctx, 0, 0, PTO_ATOMIC_ADD, &t, kBool, 0, 64, kBool, &b, -1);
    });
  }),
                  pto::DTypeError);
}

TEST_CASE("shmem_clear_data: zeroes exactly the block of the local heap") {
  World world(1);
  std::vector<int16_t> after(8 * 8);
  world.run([&](int) {
    rt_kernel({{"world", 1, 256}}, [&](pto_ctx *ctx) -> int32_t {
      auto *base = static_cast<int16_t *>(pto_rt_heap_base(ctx, 0, 0));
      for (int i = 0; i < 64; ++i)
        base[i] = int16_t(i + 1);
      // Rows 1..2, columns 3..7 of an [8, 8] int16 object; dst_stride is the heap side.
      const pto_block b{{1, 1, 2, 5}, {0, 0, 0, 0}, {0, 0, 8, 1}};
      const int32_t st = pto_rt_clear(ctx, 0, (1 * 8 + 3) * 2, 128, kI16, &b, -1);
      std::memcpy(after.data(), base, 128);
      return st;
    });
  });
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      const bool cleared = (r == 1 || r == 2) && c >= 3;
      CAPTURE(r);
      CAPTURE(c);
      CHECK(after[size_t(r * 8 + c)] == (cleared ? 0 : r * 8 + c + 1));
    }
}

// A wait with clear subtracts what it saw from its slot; every int32 is a signal value,
// INT32_MIN too, whose negation must wrap as the slot's atomic add does (no signed overflow: the
// CI's UBSan stage would stop here). Twice, the second time after a barrier.
TEST_CASE("shmem_wait_until: clearing a slot that holds INT32_MIN leaves it 0") {
  World world(2);
  std::vector<int32_t> after(4, -1);
  world.run([&](int pe) {
    rt_kernel({{"world", 2, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      const int32_t peer = 1 - pe, lowest = INT32_MIN;
      for (int round = 0; round < 2; ++round) {
        if (pto_rt_signal(ctx, 0, peer, kSignalAt, PTO_ATOMIC_SET, lowest, -1) != PTO_OK ||
            pto_rt_wait_until(ctx, 0, kSignalAt, PTO_CMP_EQ, lowest, 1, 0, -1) != PTO_OK)
          return PTO_ERR;
        after[2 * size_t(round) + size_t(pe)] = read_heap<int32_t>(ctx, pe, kSignalAt);
        if (rt_barrier(ctx, kSignalAt + 32) != PTO_OK) // both read their slot before round 2
          return PTO_ERR;
      }
      return PTO_OK;
    });
  });
  CHECK(after == std::vector<int32_t>{0, 0, 0, 0});
}
