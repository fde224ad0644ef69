// mpi_world_xrank_test.cpp - Ranks that misbehave differently (each case branches on the rank):
// a PE that returns or throws without entering the kernel, a PE that calls a kernel once more
// than the others, a PE that computes past the timeout at a barrier, groups and settings that
// differ per rank, mpi_share_host_buffers with bad or differing counts, write_trace and
// World::run called on one rank only. Each ends in a typed error on every rank involved, never a
// hang; short deadlock timeouts. The last two cases leave a communicator of the session abandoned
// on one rank: they are in the test suite "abandons", which mpi_main.cpp runs after every other
// case.
#include "pto/error.h"
#include "pto/runtime/context.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "transport/mpi/mpi_session.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace pto::runtime;

namespace {
constexpr int64_t kTimeoutMs = 300;

// Enters a kernel with one 128-byte heap in group `group` of `n` PEs (as generated code does).
int32_t enter(pto_ctx *ctx, int n, const char *group = "world") {
  const uint64_t hash = 7;
  const int64_t bytes = 128;
  const char *names[] = {group};
  return pto_rt_kernel_enter(ctx, &hash, 1, &bytes, &n, names, nullptr, nullptr);
}

// One kernel call: entry, exit.
void kernel(int n, const char *group = "world") {
  pto_ctx *ctx = current_ctx();
  begin_call(ctx, nullptr, "xrank_kernel");
  if (enter(ctx, n, group) == PTO_OK)
    pto_rt_kernel_exit(ctx);
  end_call(ctx);
}

// The message of what `f` throws as a pto::Error ("" when it returns).
template <class F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const pto::Error &e) {
    return e.what();
  }
  return "";
}

bool has(const std::string &m, const std::string &part) {
  if (m.find(part) != std::string::npos)
    return true;
  MESSAGE("'", part, "' is not in: ", m);
  return false;
}

// A run every rank completes: the world is healthy again (begin_run cleared the aborts).
void run_ok(World &w) {
  const int n = w.n_pes();
  const std::string m = error_of([&] { w.run([&](int) { kernel(n); }); });
  REQUIRE_MESSAGE(m.empty(), m);
}

void meet(mpi::Session &s) {
  REQUIRE(s.barrier(s.world(), 30000, /*stop_on_abort=*/false) == mpi::WaitOutcome::Done);
}
/// "1, 2, 3": the ranks but rank 0 of an n-rank job.
std::string other_ranks(int n) {
  std::string r;
  for (int i = 1; i < n; ++i)
    r += (i > 1 ? ", " : "") + std::to_string(i);
  return r;
}

} // namespace

TEST_CASE("mpi: a PE returning without entering the kernel is named on every other rank") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  const std::string m = error_of([&] {
    world.run([&](int pe) {
      if (pe != 1)
        kernel(n);
    });
  });
  if (s.rank() == 1) {
    CHECK(m.empty());
  } else {
    CHECK(has(m, "PE 1 returned from its function without reaching the kernel entry barrier of "
                 "group 'world'"));
  }
  run_ok(world);
}

TEST_CASE("mpi: a PE throwing a non-pto exception before the kernel is named on every rank") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  std::string m;
  bool user = false;
  try {
    world.run([&](int pe) {
      if (pe == 1)
        throw std::runtime_error("user bug on rank 1");
      kernel(n);
    });
  } catch (const std::runtime_error &e) {
    m = e.what();
    user = dynamic_cast<const pto::Error *>(&e) == nullptr;
  }
  if (s.rank() == 1) {
    CHECK(user);
    CHECK(m == "user bug on rank 1");
  } else {
    CHECK(has(m, "PE 1 (another process) failed"));
    CHECK(has(m, "user bug on rank 1"));
  }
  run_ok(world);
}

// A failed run abandons the kernel entry's allgather on the ranks that entered it; with three
// or more ranks those go on with it among themselves and MPI completes it later, inside some
// later MPI call (the World's teardown, the next barrier). Its buffers must still be there then:
// into freed memory, it overwrote the very error the user was holding (seen with 3 ranks).
TEST_CASE("mpi: a failed run's error is intact after its World is gone and MPI goes on") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  for (int rep = 0; rep < 6; ++rep) {
    CAPTURE(rep);
    const size_t retained = s.retained();
    std::string held, after;
    try {
      try {
        World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
        world.run([&](int pe) {
          if (pe == 1)
            throw std::runtime_error("user bug on rank 1");
          kernel(n);
        });
      } catch (const std::exception &e) {
        held = e.what();
        throw;
      }
    } catch (const std::exception &e) {
      meet(s); // more MPI calls: an abandoned request completes here at the latest
      after = e.what();
    }
    CHECK(!held.empty());
    CHECK(after == held);
    // The mechanism: the ranks that entered the kernel abandoned its entry allgather and kept
    // its buffers (Session::retain), rank 1 never started one.
    if (s.rank() == 1)
      CHECK(s.retained() == retained);
    else
      CHECK(s.retained() > retained);
  }
}

TEST_CASE("mpi: a kernel called once more on PE 0 names a PE that returned, not '0 missing'") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  const std::string m = error_of([&] {
    world.run([&](int pe) {
      kernel(n);
      if (pe == 0)
        kernel(n);
    });
  });
  if (s.rank() == 0)
    CHECK(has(m, "PE 1 returned from its function without reaching the kernel entry barrier"));
  else
    CHECK(m.empty());
  run_ok(world);
}

// PE 1 computes past twice the timeout before the exit barrier: the others' barriers time out
// and say who is missing (the arrival counts of this barrier, not of an earlier one).
TEST_CASE("mpi: a barrier timeout names the PE that has not arrived") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  if (const char *p = std::getenv("PTO_MPI_PROGRESS"); p && std::string(p) == "0") {
    MESSAGE("skipped: without a progress thread a PE that computes holds its peers' RMA reads "
            "(of its arrival count) until it calls MPI again, by design");
    return;
  }
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  const std::string m = error_of([&] {
    world.run([&](int pe) {
      pto_ctx *ctx = current_ctx();
      begin_call(ctx, nullptr, "late_kernel");
      if (enter(ctx, n) == PTO_OK) {
        if (pe == 1) { // no MPI call, no progress: 4x the timeout
          const auto t0 = std::chrono::steady_clock::now();
          while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(4 * kTimeoutMs))
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        pto_rt_kernel_exit(ctx);
      }
      end_call(ctx);
    });
  });
  // The rank that timed out first reports it; the others carry its message.
  CHECK(has(m, fmt::format("{} of {} PEs arrived, missing PEs [1]", n - 1, n)));
  meet(s); // PE 1 may still sleep: the next run's start would time out
  run_ok(world);
}

TEST_CASE("mpi: PEs launching different kernels with the same shmem layout fail on every rank") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  const std::string m = error_of([&] {
    world.run([&](int pe) {
      pto_ctx *ctx = current_ctx();
      begin_call(ctx, nullptr, pe == 1 ? "kernel_max" : "kernel_sum");
      if (enter(ctx, n) == PTO_OK)
        pto_rt_kernel_exit(ctx);
      end_call(ctx);
    });
  });
  CHECK(has(m, "launch different kernels at once: PE 0 runs kernel 'kernel_sum', PE 1 kernel "
               "'kernel_max'"));
  run_ok(world);
}

TEST_CASE("mpi: groups defined differently per rank are a DistributedError on every rank") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  world.create_group("g", s.rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 0});
  std::string m;
  try {
    world.run([&](int) { kernel(n); });
  } catch (const pto::DistributedError &e) {
    m = e.what();
  }
  CHECK(has(m, "mpi_world_xrank_test.cpp:"));
  CHECK(has(m, "World::run"));
  CHECK(has(m, "rank 0: 'g' with PEs [0, 1]"));
  CHECK(has(m, n == 2 ? std::string("rank 1: 'g' with PEs [1, 0]")
                      : fmt::format("ranks {}: 'g' with PEs [1, 0]", other_ranks(n))));
  // A group on one rank only.
  World w2(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  if (s.rank() == 0)
    w2.create_group("h", {0, 1});
  m.clear();
  try {
    w2.run([&](int) { kernel(n); });
  } catch (const pto::DistributedError &e) {
    m = e.what();
  }
  CHECK(has(m, "define different groups"));
  CHECK(has(m, "rank 0: 'h' with PEs [0, 1]"));
  CHECK(has(m, n == 2 ? std::string("rank 1: unset")
                      : fmt::format("ranks {}: unset", other_ranks(n))));
}

// The agreement the session makes on PTO_MPI_SHARED and PTO_MPI_PROGRESS at start (the value
// differs on rank 0).
TEST_CASE("mpi: Session::differences names the ranks whose setting differs") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  CHECK(s.differences(s.host_comm(), "'1'", 30000, "test").empty());
  const std::string d = s.differences(s.host_comm(), s.rank() == 0 ? "'0'" : "", 30000, "test");
  CHECK(d == (n == 2 ? std::string("rank 0: '0'; rank 1: unset")
                     : fmt::format("rank 0: '0'; ranks {}: unset", other_ranks(n))));
  CHECK(s.setup_error().empty());
}

TEST_CASE("mpi_share_host_buffers: bad and differing counts are typed errors, no hang") {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  std::vector<char> buf(64 * size_t(n));
  std::vector<std::pair<void *, int64_t>> bufs;
  for (int p = 0; p < n; ++p)
    bufs.emplace_back(buf.data() + 64 * p, 64);
  auto expect = [&](auto &&bad, const char *part, bool argument) {
    try {
      mpi_share_host_buffers(bad);
      FAIL("no error");
    } catch (const pto::ArgumentError &e) {
      CHECK(argument);
      CHECK(has(e.what(), "mpi_world_xrank_test.cpp:"));
      CHECK(has(e.what(), part));
    } catch (const pto::DistributedError &e) {
      CHECK_FALSE(argument);
      CHECK(has(e.what(), "mpi_world_xrank_test.cpp:"));
      CHECK(has(e.what(), part));
    }
  };
  auto negative = bufs;
  if (s.rank() == n - 1) // one rank's bad count fails every rank
    negative[0].second = -5;
  expect(negative, fmt::format("rank {} passes -5 bytes for buffer 0", n - 1).c_str(), true);
  auto null = bufs;
  if (s.rank() == 1)
    null[size_t(n - 1)].first = nullptr;
  expect(null, fmt::format("rank 1 passes a null address for buffer {} of 64 bytes", n - 1).c_str(),
         true);
  auto differ = bufs;
  if (s.rank() == 1)
    differ[0].second = 32;
  expect(differ, "buffer 0 has 64 bytes on rank 0 but 32 on rank 1", false);
  // The good call still works: every rank gets rank p's bytes in buffer p.
  for (int i = 0; i < 64; ++i)
    buf[64 * size_t(s.rank()) + size_t(i)] = char(s.rank() * 3 + i);
  mpi_share_host_buffers(bufs);
  for (int p = 0; p < n; ++p)
    CHECK(buf[64 * size_t(p) + 5] == char(p * 3 + 5));
}

// From here on a communicator of the session is abandoned on one rank (by design: a collective
// one rank gave up on must never be matched again); every rank clears its abort word after. Test
// suite "abandons": run after every other case of test_mpi (mpi_main.cpp).
TEST_CASE("mpi: write_trace on one rank only is a DistributedError there, no hang" *
          doctest::test_suite("abandons")) {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  world.enable_trace();
  run_ok(world);
  if (s.rank() == 0) {
    std::string m;
    try {
      world.write_trace("/tmp/ptojit_mpi_xrank_trace.json");
    } catch (const pto::DistributedError &e) {
      m = e.what();
    }
    CHECK(has(m, "mpi_world_xrank_test.cpp:"));
    CHECK(has(m, "the MPI ranks did not all call World::write_trace"));
    // Later host collectives on this rank refuse at once instead of matching the old one.
    std::vector<std::pair<void *, int64_t>> none(size_t(n), {nullptr, 0});
    try {
      mpi_share_host_buffers(none);
      FAIL("no error");
    } catch (const pto::DistributedError &e) {
      CHECK(has(e.what(), "cannot run"));
    }
  }
  meet(s);
  s.clear_abort();
  meet(s);
}

TEST_CASE("mpi: World::run on one rank only is a DistributedError there; the job stays sane" *
          doctest::test_suite("abandons")) {
  mpi::Session &s = mpi::session();
  const int n = s.size();
  World world(n, {.deadlock_timeout_ms = kTimeoutMs}, make_mpi_backend(n));
  run_ok(world);
  if (s.rank() == 1) {
    const std::string m = error_of([&] { world.run([](int) {}); });
    CHECK(has(m, "mpi_world_xrank_test.cpp:"));
    CHECK(has(m, "the MPI ranks did not all call World::run"));
    // Never matched by a later run: refused at once.
    CHECK(has(error_of([&] { world.run([](int) {}); }), "cannot run World::run"));
  }
  meet(s);
  s.clear_abort();
  meet(s);
}
