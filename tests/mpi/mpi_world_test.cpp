// mpi_world_test.cpp - A World on the MPI backend, driven through the ABI as generated code
// calls it: a DeadlockError on PE 0 is reported there and releases every other rank (blocked at
// the kernel exit barrier) with a DistributedError naming PE 0 and carrying its message, and the
// failed World then runs again; progress on another rank is not a deadlock; a World whose size
// differs from the number of ranks is refused.
#include "pto/error.h"
#include "pto/runtime/context.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "transport/mpi/mpi_session.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

using namespace pto::runtime;

namespace {
// Enters a kernel with one 128-byte heap in group "world" (as generated code does).
int32_t enter(pto_ctx *ctx, int n) {
  const uint64_t hash = 7;
  const int64_t bytes = 128;
  const char *names[] = {"world"};
  return pto_rt_kernel_enter(ctx, &hash, 1, &bytes, &n, names, nullptr, nullptr);
}
} // namespace

TEST_CASE("World on mpi: a deadlock on PE 0 is reported on every rank, nobody hangs") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = 300}, make_mpi_backend(n));
  CHECK(std::string(world.backend_name()) == "mpi");
  std::string what;
  bool deadlock = false;
  try {
    world.run([&](int pe) {
      CHECK(pe == s.rank());
      pto_ctx *ctx = current_ctx();
      begin_call(ctx, nullptr, "deadlock_test");
      if (enter(ctx, n) == PTO_OK) {
        if (pe == 0) // nobody signals slot 0: a deadlock
          pto_rt_wait_until(ctx, 0, 0, PTO_CMP_EQ, 1, 0, 0, -1);
        else
          pto_rt_kernel_exit(ctx);
      }
      end_call(ctx);
    });
  } catch (const pto::DeadlockError &e) {
    deadlock = true;
    what = e.what();
  } catch (const pto::DistributedError &e) {
    what = e.what();
  }
  if (s.rank() == 0) {
    CHECK(deadlock);
    CHECK(what.find("signal slot 0") != std::string::npos);
    CHECK(what.find("current value 0") != std::string::npos);
  } else {
    CHECK_FALSE(deadlock);
    // The root cause as PE 0 reported it, carried by the abort (Host::remote_failed).
    CHECK(what.find("PE 0 (another process) failed") != std::string::npos);
    CHECK(what.find("signal slot 0") != std::string::npos);
  }
  // The failed world runs again (World::run's begin_run clears every rank's abort and renews
  // the group communicators): a kernel that signals the next PE and waits for the previous one.
  int passed = 0;
  world.run([&](int pe) {
    pto_ctx *ctx = current_ctx();
    begin_call(ctx, nullptr, "rerun_test");
    if (enter(ctx, n) == PTO_OK &&
        pto_rt_signal(ctx, 0, (pe + 1) % n, 0, PTO_ATOMIC_ADD, 1, -1) == PTO_OK &&
        pto_rt_wait_until(ctx, 0, 0, PTO_CMP_EQ, 1, 1, 0, -1) == PTO_OK &&
        pto_rt_kernel_exit(ctx) == PTO_OK)
      passed = 1;
    end_call(ctx);
  });
  CHECK(passed == 1);
}

// The deadlock detector counts progress in every process: PE 0 waits for the last PE, which
// first spends 1 s signalling itself (progress only in its own process); a detector that saw
// only PE 0's process would report a deadlock after 300 ms.
TEST_CASE("World on mpi: progress on another rank is no deadlock") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = 300}, make_mpi_backend(n));
  int ok = 0;
  world.run([&](int pe) {
    pto_ctx *ctx = current_ctx();
    begin_call(ctx, nullptr, "remote_progress_test");
    if (enter(ctx, n) != PTO_OK) {
      end_call(ctx);
      return;
    }
    int32_t st = PTO_OK;
    if (pe == n - 1) {
      const auto t0 = std::chrono::steady_clock::now();
      while (st == PTO_OK && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
        st = pto_rt_signal(ctx, 0, pe, 64, PTO_ATOMIC_ADD, 1, -1);
        if (st == PTO_OK)
          st = pto_rt_wait_until(ctx, 0, 64, PTO_CMP_EQ, 1, 1, 1, -1);
      }
    }
    if (st == PTO_OK && pe == n - 1)
      st = pto_rt_signal(ctx, 0, 0, 0, PTO_ATOMIC_SET, 1, -1);
    if (st == PTO_OK && pe == 0)
      st = pto_rt_wait_until(ctx, 0, 0, PTO_CMP_EQ, 1, 0, 0, -1);
    if (st == PTO_OK)
      st = pto_rt_kernel_exit(ctx);
    ok = st == PTO_OK;
    end_call(ctx);
  });
  CHECK(ok == 1);
}

// --trace on MPI: write_trace is collective and the rank of PE 0 writes one file with a lane for
// every PE, each with its kernel call and barriers.
TEST_CASE("World on mpi: write_trace merges every rank's lane into one file") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {}, make_mpi_backend(n));
  world.enable_trace();
  world.run([&](int) {
    pto_ctx *ctx = current_ctx();
    begin_call(ctx, nullptr, "trace_test");
    if (enter(ctx, n) == PTO_OK)
      pto_rt_kernel_exit(ctx);
    end_call(ctx);
  });
  const std::string path = "/tmp/ptojit_mpi_trace_test.json";
  if (s.rank() == 0)
    std::remove(path.c_str());
  REQUIRE(s.barrier(s.world(), 30000) == mpi::WaitOutcome::Done);
  world.write_trace(path);
  REQUIRE(s.barrier(s.world(), 30000) == mpi::WaitOutcome::Done);
  if (s.rank() == 0) {
    std::ifstream f(path);
    REQUIRE(f.good());
    const auto doc = nlohmann::json::parse(f);
    std::set<int> lanes, with_events;
    for (const auto &e : doc["traceEvents"]) {
      if (e["ph"] == "M")
        lanes.insert(e["tid"].get<int>());
      else if (e["name"] == "trace_test")
        with_events.insert(e["tid"].get<int>());
    }
    CHECK(int(lanes.size()) == n);
    CHECK(int(with_events.size()) == n); // every PE's kernel call, from its own rank
    std::remove(path.c_str());
  }
  REQUIRE(s.barrier(s.world(), 30000) == mpi::WaitOutcome::Done);
}

TEST_CASE("make_mpi_backend refuses a World size other than the number of ranks") {
  const int n = mpi::session().size();
  try {
    make_mpi_backend(n + 1);
    FAIL("no error");
  } catch (const pto::DistributedError &e) {
    const std::string m = e.what();
    CHECK(m.find("mpi_world_test.cpp:") != std::string::npos);
    CHECK(m.find("mpirun started " + std::to_string(n)) != std::string::npos);
  }
}
