// world_test.cpp - pto::runtime::World: SPMD runs, root-cause errors, the release of blocked PEs,
// the deadlock timeout setting, kernel entry checks, and the implicit 1-PE world.
#include "pto/error.h"
#include "pto/runtime/context.h"
#include "pto/runtime/world.h"

#include "support/runtime_harness.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <stdexcept>

using pto::runtime::World;
using pto::runtime::WorldOptions;
using support::rt_kernel;

TEST_CASE("World: run calls fn once on every PE, all inside the same kernel at once") {
  constexpr int n = 8;
  World world(n);
  CHECK(world.n_pes() == n);
  CHECK(std::string(world.backend_name()) == "threads");
  std::atomic<int> calls[n] = {};
  std::atomic<int> bad_ctx{0};
  world.run([&](int pe) {
    calls[pe].fetch_add(1);
    pto_ctx *ctx = pto::runtime::current_ctx();
    if (pto::runtime::my_pe(ctx) != pe || pto::runtime::n_pes(ctx) != n)
      bad_ctx.fetch_add(1);
    // kernel entry is collective: it only returns once all 8 PEs are in it together.
    rt_kernel({{"world", n, 256}}, [&](pto_ctx *c) -> int32_t {
      if (pto_rt_my_pe(c, 0) != pe || pto_rt_n_pes(c, 0) != n)
        bad_ctx.fetch_add(1);
      return PTO_OK;
    });
  });
  for (int pe = 0; pe < n; ++pe)
    CHECK(calls[pe].load() == 1);
  CHECK(bad_ctx.load() == 0);
}

TEST_CASE("World: run of an empty std::function is an ArgumentError at the caller's line") {
  World world(2);
  const int line = __LINE__ + 1;
  CHECK_THROWS_WITH_AS(world.run(std::function<void(int)>{}),
                       ("world_test.cpp:" + std::to_string(line) +
                        ": World::run: the function to run on every PE is empty")
                           .c_str(),
                       pto::ArgumentError);
  int ran = 0; // the world still runs
  world.run([&](int pe) {
    if (pe == 0)
      ran = 1;
  });
  CHECK(ran == 1);
}

// Heuristic overcommit (vm.overcommit_memory 0, the default) refuses one mapping larger than
// the machine's memory and swap; with 1 ("always") it would succeed, so the case is skipped.
namespace {
bool overcommit_always() {
  std::ifstream f("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  return f >> mode && mode == 1;
}
} // namespace

TEST_CASE("kernel entry: a symmetric heap the host refuses is a RuntimeError" *
          doctest::skip(overcommit_always())) {
  World world(1);
  CHECK_THROWS_WITH_AS(
      world.run([](int) {
        rt_kernel({{"world", 1, int64_t{1} << 39}}, [](pto_ctx *) { return int32_t(PTO_OK); });
      }),
      doctest::Contains("cannot allocate a symmetric heap of 549755813888 bytes on each of 1 PEs "
                        "for group 'world'"),
      pto::RuntimeError);
}

TEST_CASE("World: n_pes outside [1, 4096] is a DistributedError") {
  for (int n : {0, -1, 4097}) {
    CAPTURE(n);
    CHECK_THROWS_WITH_AS(World{n}, doctest::Contains("n_pes must be in [1, 4096]"),
                         pto::DistributedError);
  }
  CHECK(World(4096).n_pes() == 4096);
  CHECK_THROWS_AS(World(2, {.deadlock_timeout_ms = 0}), pto::DistributedError);
}

TEST_CASE("World: PTO_DEADLOCK_TIMEOUT_MS replaces the default timeout only") {
  ::setenv("PTO_DEADLOCK_TIMEOUT_MS", "1234", 1);
  CHECK(World(2).deadlock_timeout_ms() == 1234);
  CHECK(World(2, {.deadlock_timeout_ms = 200}).deadlock_timeout_ms() == 200);
  ::setenv("PTO_DEADLOCK_TIMEOUT_MS", "12ms", 1);
  CHECK_THROWS_WITH_AS(World(2), doctest::Contains("PTO_DEADLOCK_TIMEOUT_MS: '12ms'"),
                       pto::ArgumentError);
  ::unsetenv("PTO_DEADLOCK_TIMEOUT_MS");
  CHECK(World(2).deadlock_timeout_ms() == WorldOptions::kDefaultDeadlockTimeoutMs);
}

TEST_CASE("World: the root cause is rethrown and PEs blocked in kernel entry are released") {
  World world(4); // default 30 s timeout: a missing release would show as a 30 s test, not pass
  std::mutex m;
  std::vector<std::string> others;
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    if (pe == 2)
      throw std::logic_error("boom on PE 2");
    try {
      rt_kernel({{"world", 4, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
    } catch (const pto::DistributedError &e) {
      std::lock_guard lock(m);
      others.push_back(e.what());
      throw;
    }
  }),
                       "boom on PE 2", std::logic_error);
  REQUIRE(others.size() == 3);
  for (const auto &msg : others) {
    CAPTURE(msg);
    // Either released by the abort, or noticed PE 2 is gone; both name PE 2.
    CHECK(msg.find("PE 2") != std::string::npos);
  }
  // The world is usable again after a failed run.
  std::atomic<int> ok{0};
  world.run([&](int) {
    rt_kernel({{"world", 4, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
    ok.fetch_add(1);
  });
  CHECK(ok.load() == 4);
}

TEST_CASE("World: a PE that returns without entering the kernel is reported, not waited for") {
  World world(3);
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    if (pe != 1)
      rt_kernel({{"world", 3, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
  }),
                       doctest::Contains("PE 1 returned from its function without reaching "
                                         "the kernel entry barrier"),
                       pto::DistributedError);
}

TEST_CASE("World: a PE that never arrives at kernel entry is a DeadlockError naming it") {
  World world(2, {.deadlock_timeout_ms = 200});
  std::atomic<bool> release{false};
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    if (pe == 1) { // blocked outside the runtime until PE 0 has failed
      release.wait(false);
      return;
    }
    try {
      rt_kernel({{"world", 2, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
    } catch (...) {
      release.store(true);
      release.notify_all();
      throw;
    }
  }),
                       // Entry barriers wait twice the deadlock timeout (see world_state.h).
                       doctest::Contains("timed out after 400 ms (twice the deadlock timeout) "
                                         "without progress on any PE at the kernel entry "
                                         "barrier of group 'world': 1 of 2 PEs arrived, missing "
                                         "PEs [1]"),
                       pto::DeadlockError);
}

TEST_CASE("kernel_enter: a group that was never created is a DistributedError") {
  World world(8);
  CHECK_THROWS_WITH_AS(world.run([&](int) {
    rt_kernel({{"g", 4, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
  }),
                       doctest::Contains("unknown group 'g'"), pto::DistributedError);
}

TEST_CASE("kernel_enter: n_pes that differs from a created group is a DistributedError") {
  World world(4);
  world.create_group("pair", {0, 1});
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    if (pe < 2)
      rt_kernel({{"pair", 4, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
  }),
                       doctest::Contains("n_pes mismatch for group 'pair': the kernel says 4, "
                                         "the group has 2 PEs"),
                       pto::DistributedError);
}

TEST_CASE("kernel_enter: a PE outside a group cannot use it") {
  World world(4);
  world.create_group("even", {0, 2});
  // PE 2 (a member that never calls the kernel) returns only after PE 1 has failed: otherwise
  // PE 0 could see it gone first, and "PE 2 returned without reaching the barrier" would be
  // just as true a root cause.
  std::atomic<bool> pe1_failed{false};
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    if (pe >= 2) {
      pe1_failed.wait(false);
      return;
    }
    try {
      rt_kernel({{"even", 2, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
    } catch (...) {
      if (pe == 1) {
        pe1_failed.store(true);
        pe1_failed.notify_all();
      }
      throw;
    }
  }),
                       doctest::Contains("PE 1 is not a member of group 'even' (PEs [0, 2])"),
                       pto::DistributedError);
}

TEST_CASE("kernel_enter: PEs that declare different shmem layouts for a group get a "
          "DistributedError") {
  World world(4);
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    rt_kernel(
        {{"world", 4, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; },
        /*layout_hash=*/pe == 3 ? 0xbad : 0x600d);
  }),
                       doctest::Contains("PEs 0 and 3 of group 'world' declared different shmem "
                                         "tensors"),
                       pto::DistributedError);
}

TEST_CASE("kernel_enter: PEs launching different kernels with one shmem layout get a "
          "DistributedError naming both") {
  World world(3);
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    rt_kernel(
        {{"world", 3, 64}}, [](pto_ctx *) -> int32_t { return PTO_OK; }, 0x600d, nullptr,
        pe == 2 ? "kernel_max" : "kernel_sum");
  }),
                       doctest::Contains("launch different kernels at once: PE 0 runs kernel "
                                         "'kernel_sum', PE 2 kernel 'kernel_max'"),
                       pto::DistributedError);
}

TEST_CASE("kernel_enter: different heap sizes for one group are a DistributedError") {
  World world(2);
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    rt_kernel({{"world", 2, pe == 0 ? 64 : 128}}, [](pto_ctx *) -> int32_t { return PTO_OK; });
  }),
                       doctest::Contains("(64 and 128 heap bytes"), pto::DistributedError);
}

TEST_CASE("sub-groups: group-local PE numbers, separate heaps, overlapping groups") {
  // 4 PEs; "even" = {0, 2}, "odd" = {1, 3}, "low" = {0, 1}, "high" = {2, 3}. Each PE puts its
  // world number into slot 0 of every member of both its groups and reads them back.
  World world(4);
  world.create_group("even", {0, 2});
  world.create_group("odd", {1, 3});
  world.create_group("low", {0, 1});
  world.create_group("high", {2, 3});
  std::vector<std::vector<int32_t>> seen(4);
  world.run([&](int pe) {
    std::string a = pe % 2 == 0 ? "even" : "odd", b = pe < 2 ? "low" : "high";
    rt_kernel({{a, 2, 64}, {b, 2, 64}}, [&](pto_ctx *ctx) -> int32_t {
      for (int32_t g = 0; g < 2; ++g) {
        int32_t me = pto_rt_my_pe(ctx, g);
        int32_t v = pe;
        pto_block blk = support::rt_block_1d(1);
        for (int32_t dst = 0; dst < 2; ++dst)
          if (int32_t st = pto_rt_put(ctx, g, dst, PTO_ATOMIC_SET, &v, 3, 4 * me, 64, 3, &blk, -1))
            return st;
        for (int32_t dst = 0; dst < 2; ++dst)
          if (int32_t st = pto_rt_signal(ctx, g, dst, 32, PTO_ATOMIC_ADD, 1, -1))
            return st;
        if (int32_t st = pto_rt_wait_until(ctx, g, 32, PTO_CMP_EQ, 2, 1, 8, -1))
          return st;
        for (int32_t src = 0; src < 2; ++src) {
          int32_t got = -1;
          if (int32_t st = pto_rt_get(ctx, g, me, 4 * src, 64, 3, &got, 3, &blk, -1))
            return st;
          seen[size_t(pe)].push_back(got);
        }
      }
      return PTO_OK;
    });
  });
  // Group-local member i of each group is the i-th world PE listed at creation.
  CHECK(seen[0] == std::vector<int32_t>{0, 2, 0, 1});
  CHECK(seen[1] == std::vector<int32_t>{1, 3, 0, 1});
  CHECK(seen[2] == std::vector<int32_t>{0, 2, 2, 3});
  CHECK(seen[3] == std::vector<int32_t>{1, 3, 2, 3});
}

TEST_CASE("World::create_group: bad input is a DistributedError") {
  World world(4);
  CHECK_THROWS_AS(world.create_group("", {0}), pto::DistributedError);
  CHECK_THROWS_WITH_AS(world.create_group("world", {0, 1}), doctest::Contains("reserved"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(world.create_group("g", {}), doctest::Contains("world_test.cpp:"),
                       pto::DistributedError);
  CHECK_THROWS_AS(world.create_group(std::string(128, 'g'), {0}), pto::DistributedError);
  CHECK_THROWS_AS(world.create_group("g", {}), pto::DistributedError);
  CHECK_THROWS_AS(world.create_group("g", {0, 4}), pto::DistributedError);
  CHECK_THROWS_AS(world.create_group("g", {1, 1}), pto::DistributedError);
  world.create_group("g", {0, 1});
  world.create_group("g", {0, 1}); // the same again is fine
  CHECK_THROWS_WITH_AS(world.create_group("g", {0, 2}), doctest::Contains("already exists"),
                       pto::DistributedError);
}

TEST_CASE("kernel_enter: heaps are zeroed at every kernel entry, on every PE") {
  constexpr int n = 4;
  World world(n);
  std::atomic<int> nonzero{0};
  world.run([&](int) {
    rt_kernel({{"world", n, 1024}}, [](pto_ctx *ctx) -> int32_t {
      std::memset(pto_rt_heap_base(ctx, 0, pto_rt_my_pe(ctx, 0)), 0xab, 1024);
      return PTO_OK;
    });
    rt_kernel({{"world", n, 1000}}, [&](pto_ctx *ctx) -> int32_t {
      for (int p = 0; p < n; ++p) {
        auto *bytes = static_cast<const unsigned char *>(pto_rt_heap_base(ctx, 0, p));
        for (int i = 0; i < 1000; ++i)
          if (bytes[i] != 0)
            nonzero.fetch_add(1);
      }
      return PTO_OK;
    });
  });
  CHECK(nonzero.load() == 0);
}

TEST_CASE("World: run does not nest") {
  World outer(2);
  std::atomic<int> nested_errors{0};
  outer.run([&](int) {
    World inner(1);
    try {
      inner.run([](int) {});
    } catch (const pto::DistributedError &) {
      nested_errors.fetch_add(1);
    }
  });
  CHECK(nested_errors.load() == 2);
}

TEST_CASE("current_ctx: outside a World a kernel runs on an implicit 1-PE world") {
  pto_ctx *ctx = pto::runtime::current_ctx();
  CHECK(pto::runtime::my_pe(ctx) == 0);
  CHECK(pto::runtime::n_pes(ctx) == 1);
  // A failing call throws the typed error from end_call, with the site's location...
  const std::vector<std::string> sites = {"main.cpp:7: shmem_put"};
  int32_t v = 1;
  const pto_block b = support::rt_block_1d(1);
  CHECK_THROWS_WITH_AS(rt_kernel(
                           {{"world", 1, 64}},
                           [&](pto_ctx *c) -> int32_t {
                             return pto_rt_put(c, 0, 1, PTO_ATOMIC_SET, &v, 3, 0, 64, 3, &b, 0);
                           },
                           42, &sites),
                       "main.cpp:7: shmem_put: dst_pe 1 is out of range [0, 1) for group 'world'",
                       pto::DistributedError);
  // ...and the implicit world is usable again afterwards.
  int32_t got = 0;
  rt_kernel({{"world", 1, 64}}, [&](pto_ctx *c) -> int32_t {
    int32_t st = pto_rt_put(c, 0, 0, PTO_ATOMIC_SET, &v, 3, 8, 64, 3, &b, 0);
    return st ? st : pto_rt_get(c, 0, 0, 8, 64, 3, &got, 3, &b, 0);
  });
  CHECK(got == 1);
}

TEST_CASE("pto_rt_fail: kinds map to typed errors with the site's location") {
  const std::vector<std::string> sites = {"k.cpp:3: div", "k.cpp:4: gather"};
  auto fail_with = [&](int32_t kind, int32_t site, int64_t a, int64_t b) {
    rt_kernel(
        {}, [&](pto_ctx *c) -> int32_t { return pto_rt_fail(c, kind, site, a, b); }, 1, &sites);
  };
  CHECK_THROWS_WITH_AS(fail_with(1, 0, 0, 0), "k.cpp:3: div: integer division by zero",
                       pto::RuntimeError);
  CHECK_THROWS_WITH_AS(fail_with(2, 1, 7, 4), "k.cpp:4: gather: index 7 out of range [0, 4)",
                       pto::RuntimeError);
  CHECK_THROWS_WITH_AS(fail_with(3, 5, 9, 8), "<runtime>: PE 9 out of range [0, 8)",
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(fail_with(4, 1, 100, 64),
                       "k.cpp:4: gather: offset 100 out of bounds [0, 64)", pto::DistributedError);
  CHECK_THROWS_WITH_AS(fail_with(5, 1, 9, 8),
                       "k.cpp:4: gather: view window out of bounds at run time: index 9 is "
                       "outside dim [0, 8) of the viewed tensor",
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(fail_with(6, 1, 3, 4),
                       "k.cpp:4: gather: signal/wait window offset 3 (within its view) is not a "
                       "multiple of the vec tile size 4; windows that are not tile-aligned would "
                       "share signal slots",
                       pto::DistributedError);
  // The codes are the ABI's: generated code passes these numbers.
  CHECK(PTO_FAIL_DIV_ZERO == 1);
  CHECK(PTO_FAIL_SLOT_ALIGN == 6);
  CHECK_THROWS_WITH_AS(fail_with(7, 0, 0, 0), "k.cpp:3: div: pto_rt_fail: unknown error kind 7",
                       pto::InternalError);
}

TEST_CASE("pto_rt_alloc: 64-byte aligned scratch that the call may use fully") {
  rt_kernel({}, [](pto_ctx *c) -> int32_t {
    for (int64_t bytes : {1, 63, 64, 65, 100000}) {
      auto *p = static_cast<unsigned char *>(pto_rt_alloc(c, bytes, /*site=*/-1));
      REQUIRE(p != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
      std::memset(p, 1, size_t(bytes));
    }
    return PTO_OK;
  });
}
