// hardening_runtime_test.cpp - Issue 8, runtime side: the deadlock detector tells "stuck" from
// "slow" (any progress anywhere restarts its clock, in waits and in kernel entry/exit
// barriers), write_trace survives kernel names that are not UTF-8 and names unwritable paths,
// World's errors and errors without a call site of their own start with the user's file:line,
// and nothing but a pto::Error leaves a runtime entry point.
#include "pto/error.h"
#include "pto/runtime/context.h"
#include "pto/runtime/world.h"

#include "boundary.h"
#include "support/expect_error.h"
#include "support/runtime_harness.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using doctest::Contains;
using pto::runtime::World;
using support::rt_kernel;

namespace {
constexpr int32_t kI32 = 3;   // pto_dtype of int32
constexpr int64_t kSlotA = 0; // signal slots: 32 bytes apart, at the start of the heap
constexpr int64_t kSlotB = 32;
constexpr int64_t kHeap = 4096;
constexpr int64_t kTimeoutMs = 200; // small, so that a real deadlock ends the test soon
constexpr auto kStep = std::chrono::milliseconds(50); // a slow PE's pause between steps

// This file's name, as messages print it.
constexpr const char *kFile = "hardening_runtime_test.cpp:";

// A call-site table whose one entry is `op` at the caller's line of this file.
std::vector<std::string> site_here(const std::string &op,
                                   std::source_location loc = std::source_location::current()) {
  return {pto::format_location(loc) + ": " + op};
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

using support::thrown;

// `msg` starts with this file's name and contains `part`.
bool at_this_file(const std::string &msg, const std::string &part) {
  return msg.rfind(kFile, 0) == 0 && msg.find(part) != std::string::npos;
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
} // namespace

TEST_CASE("deadlock detector: a real deadlock is a DeadlockError naming PE, slot, expected and "
          "current value, soon after the timeout") {
  // Each PE waits for the other's signal before sending its own: nobody can ever move. The first
  // PE to time out is the root cause; the other is released (or times out just as well).
  World world(2, {.deadlock_timeout_ms = kTimeoutMs});
  const auto sites = site_here("shmem_wait_until");
  const auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  try {
    world.run([&](int pe) {
      rt_kernel(
          {{"world", 2, kHeap}},
          [&](pto_ctx *ctx) -> int32_t {
            int32_t st = pto_rt_wait_until(ctx, 0, kSlotA, PTO_CMP_EQ, 1, 0, /*slot_number=*/0,
                                           /*site=*/0);
            return st ? st : pto_rt_signal(ctx, 0, 1 - pe, kSlotA, PTO_ATOMIC_SET, 1, 0);
          },
          42, &sites);
    });
  } catch (const pto::DeadlockError &e) {
    msg = e.what();
  }
  const double elapsed_ms = ms_since(t0);
  CAPTURE(msg);
  CHECK(msg.find(kFile) == 0);
  CHECK(msg.find("shmem_wait_until: PE ") != std::string::npos);
  CHECK(msg.find("timed out after 200 ms without progress on any PE, waiting for signal slot 0 "
                 "(group 'world') to be == 1; current value 0") != std::string::npos);
  // Never before the timeout; after it by at most a sampling slice (50 ms) plus scheduling. The
  // upper bound is loose (sanitizers, a loaded machine): it only catches a detector that does
  // not fire at all or keeps extending itself.
  CHECK(elapsed_ms >= double(kTimeoutMs));
  CHECK(elapsed_ms < 20.0 * double(kTimeoutMs));
}

TEST_CASE("deadlock detector: a wait far longer than the timeout passes while another PE makes "
          "progress") {
  // PE 1 sends 10 signals 50 ms apart (500 ms in all, 2.5 timeouts); PE 0 waits for all of
  // them in one shmem_wait_until, then for PE 1 at the kernel exit barrier while PE 1 puts into
  // its own heap 10 more times, 50 ms apart (longer than the barrier's 400 ms).
  constexpr int32_t kSteps = 10;
  World world(2, {.deadlock_timeout_ms = kTimeoutMs});
  int32_t seen = -1;
  CHECK_NOTHROW(world.run([&](int pe) {
    rt_kernel({{"world", 2, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
      if (pe == 0) {
        int32_t st = pto_rt_wait_until(ctx, 0, kSlotA, PTO_CMP_EQ, kSteps, 0, 0, -1);
        if (st == PTO_OK)
          seen = *static_cast<const int32_t *>(pto_rt_heap_base(ctx, 0, 0));
        return st;
      }
      const int32_t one = 1;
      const pto_block b = support::rt_block_1d(1);
      for (int32_t i = 0; i < 2 * kSteps; ++i) {
        std::this_thread::sleep_for(kStep);
        const int32_t st = i < kSteps ? pto_rt_signal(ctx, 0, 0, kSlotA, PTO_ATOMIC_ADD, 1, -1)
                                      : pto_rt_put(ctx, 0, 1, PTO_ATOMIC_SET, &one, kI32, kSlotB,
                                                   kHeap, kI32, &b, -1);
        if (st != PTO_OK)
          return st;
      }
      return PTO_OK;
    });
  }));
  CHECK(seen == kSteps);
}

TEST_CASE("deadlock detector: a kernel entry barrier waits out PEs that are slow in another "
          "group") {
  // PE 0 enters a kernel on group "pair" = {0, 1} at once. PE 1 first runs a kernel on group
  // "other" = {1, 2} with PE 2 that takes 12 steps of 50 ms (600 ms, longer than the barrier's
  // 400 ms), signalling PE 2 at each step; then it joins PE 0.
  constexpr int32_t kSteps = 12;
  World world(3, {.deadlock_timeout_ms = kTimeoutMs});
  world.create_group("pair", {0, 1});
  world.create_group("other", {1, 2});
  std::atomic<int> paired{0};
  CHECK_NOTHROW(world.run([&](int pe) {
    if (pe >= 1)
      rt_kernel({{"other", 2, kHeap}}, [&](pto_ctx *ctx) -> int32_t {
        for (int32_t i = 0; i < kSteps; ++i) {
          if (pe == 1) {
            std::this_thread::sleep_for(kStep);
            if (int32_t st = pto_rt_signal(ctx, 0, 1, kSlotA, PTO_ATOMIC_ADD, 1, -1))
              return st;
          } else if (int32_t st = pto_rt_wait_until(ctx, 0, kSlotA, PTO_CMP_GE, 1, 1, 0, -1)) {
            return st; // PE 2 consumes one signal per step
          }
        }
        return PTO_OK;
      });
    if (pe <= 1)
      rt_kernel({{"pair", 2, kHeap}}, [&](pto_ctx *) -> int32_t {
        paired.fetch_add(1);
        return PTO_OK;
      });
  }));
  CHECK(paired.load() == 2);
}

TEST_CASE("deadlock detector: a barrier timeout names the kernel and the line that called it") {
  World world(2, {.deadlock_timeout_ms = kTimeoutMs});
  std::atomic<bool> release{false};
  const auto call_loc = std::source_location::current();
  CHECK_THROWS_WITH_AS(world.run([&](int pe) {
    if (pe == 1) { // blocked outside the runtime (no progress) until PE 0 has failed
      release.wait(false);
      return;
    }
    try {
      rt_kernel(
          {{"world", 2, kHeap}}, [](pto_ctx *) -> int32_t { return PTO_OK; }, 42, nullptr,
          "my_kernel", call_loc);
    } catch (...) {
      release.store(true);
      release.notify_all();
      throw;
    }
  }),
                       Contains((pto::format_location(call_loc) +
                                 ": my_kernel: PE 0 timed out after 400 ms (twice the deadlock "
                                 "timeout) without progress on any PE at the kernel entry barrier "
                                 "of group 'world': 1 of 2 PEs arrived, missing PEs [1]")
                                    .c_str()),
                       pto::DeadlockError);
}

TEST_CASE("write_trace: a kernel name that is not UTF-8 is written with U+FFFD, as valid JSON") {
  World world(1);
  world.enable_trace();
  const char *bad_name = "bad\xff\xfe_name"; // 0xff and 0xfe never occur in UTF-8
  world.run([&](int) {
    rt_kernel({}, [](pto_ctx *) -> int32_t { return PTO_OK; }, 42, nullptr, bad_name);
  });
  const std::string path = "hardening_runtime_trace.json";
  REQUIRE_NOTHROW(world.write_trace(path));
  const std::string text = slurp(path);
  std::remove(path.c_str());
  // U+FFFD is EF BF BD in UTF-8 (Unicode 15, table 3-7).
  CHECK(text.find("bad\xEF\xBF\xBD") != std::string::npos);
  CHECK(text.find("_name") != std::string::npos);
  const auto doc = nlohmann::json::parse(text); // throws if the file is not valid JSON
  bool found = false;
  for (const auto &e : doc.at("traceEvents"))
    found = found || (e.value("cat", "") == "kernel" &&
                      e.at("name").get<std::string>().rfind("bad\xEF\xBF\xBD", 0) == 0);
  CHECK(found);
}

TEST_CASE("write_trace: an unwritable or empty path is a typed error naming it at the caller") {
  World world(1);
  CHECK(
      at_this_file(thrown<pto::RuntimeError>([&] { world.write_trace("/nonexistent-dir/t.json"); }),
                   "World::write_trace: cannot write trace file '/nonexistent-dir/t.json': No "
                   "such file or directory"));
  CHECK(at_this_file(thrown<pto::ArgumentError>([&] { world.write_trace(""); }),
                     "World::write_trace: the trace file path is empty"));
}

TEST_CASE("World: constructor errors start with the caller's file:line") {
  CHECK(at_this_file(thrown<pto::DistributedError>([] { World w(0); }),
                     "World: n_pes must be in [1, 4096], got 0"));
  CHECK(at_this_file(thrown<pto::DistributedError>([] { World w(2, {.deadlock_timeout_ms = -5}); }),
                     "World: deadlock_timeout_ms must be in [1, 31536000000] (one year), got -5"));
  CHECK(at_this_file(thrown<pto::DistributedError>([] { World w(2, {}, nullptr); }),
                     "World: the backend is null"));
  ::setenv("PTO_DEADLOCK_TIMEOUT_MS", "-1", 1);
  CHECK(at_this_file(
      thrown<pto::ArgumentError>([] { World w(2); }),
      "PTO_DEADLOCK_TIMEOUT_MS: '-1' is not a decimal integer (creating a World); expected a "
      "decimal integer in [1, 31536000000]"));
  ::unsetenv("PTO_DEADLOCK_TIMEOUT_MS");
  World world(2);
  CHECK(at_this_file(thrown<pto::DistributedError>([&] { world.context(2); }),
                     "World::context: PE 2 is out of range [0, 2)"));
}

TEST_CASE("World::run: a nested or concurrent run is a DistributedError at the caller's line") {
  World outer(2), inner(1);
  std::atomic<int> nested{0}, concurrent{0};
  outer.run([&](int pe) {
    try {
      inner.run([](int) {});
    } catch (const pto::DistributedError &e) {
      const std::string msg = e.what();
      nested += msg.find(kFile) == 0 && msg.find("World::run: called from inside PE " +
                                                 std::to_string(pe)) != std::string::npos;
    }
    if (pe != 0)
      return;
    // Another host thread (not a PE) runs the same world while it is running.
    std::thread t([&] {
      try {
        outer.run([](int) {});
      } catch (const pto::DistributedError &e) {
        const std::string msg = e.what();
        concurrent +=
            msg.find(kFile) == 0 && msg.find("this world is already running") != std::string::npos;
      }
    });
    t.join();
  });
  CHECK(nested.load() == 2);
  CHECK(concurrent.load() == 1);
}

TEST_CASE("pto_rt_alloc: scratch memory that cannot be had names the kernel and its caller") {
  const auto call_loc = std::source_location::current();
  CHECK_THROWS_WITH_AS(
      rt_kernel(
          {},
          [](pto_ctx *c) -> int32_t { return pto_rt_alloc(c, INT64_MAX, -1) ? PTO_OK : PTO_ERR; },
          42, nullptr, "alloc_kernel", call_loc),
      Contains((pto::format_location(call_loc) +
                ": alloc_kernel: cannot allocate 9223372036854775807 bytes of "
                "scratch memory")
                   .c_str()),
      pto::RuntimeError);
}

TEST_CASE("end_call: a non-pto exception an entry point caught leaves as a RuntimeError") {
  // abi_boundary is what every C ABI entry point runs its body in: a C++ exception must not
  // cross generated code, so it is recorded, and end_call wraps it at the kernel's caller.
  const auto call_loc = std::source_location::current();
  CHECK_THROWS_WITH_AS(rt_kernel(
                           {},
                           [](pto_ctx *c) -> int32_t {
                             return pto::runtime::detail::abi_boundary(c, []() -> int32_t {
                               throw std::length_error("vector too long");
                             });
                           },
                           42, nullptr, "wrapped_kernel", call_loc),
                       Contains((pto::format_location(call_loc) +
                                 ": wrapped_kernel: while running the kernel: vector too long")
                                    .c_str()),
                       pto::RuntimeError);
  // A pto::Error passes unchanged.
  CHECK_THROWS_WITH_AS(rt_kernel(
                           {},
                           [](pto_ctx *c) -> int32_t {
                             return pto::runtime::detail::abi_boundary(c, []() -> int32_t {
                               throw pto::ShapeError("k.cpp:1", "view", "out of range");
                             });
                           },
                           42, nullptr, "k", call_loc),
                       "k.cpp:1: view: out of range", pto::ShapeError);
}
