// mpi_world_test.cpp - A World on the MPI backend, driven through the ABI as generated code
// calls it: a DeadlockError on PE 0 is reported there and releases every other rank (blocked at
// the kernel exit barrier) with a DistributedError naming PE 0 and carrying its message; a World
// whose size differs from the number of ranks is refused.
#include "pto/error.h"
#include "pto/runtime/context.h"
#include "pto/runtime/mpi.h"
#include "pto/runtime/world.h"

#include "transport/mpi/mpi_session.h"

#include <doctest/doctest.h>

#include <string>

using namespace pto::runtime;

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
      const uint64_t hash = 7;
      const int64_t bytes = 64;
      const char *names[] = {"world"};
      if (pto_rt_kernel_enter(ctx, &hash, 1, &bytes, &n, names, nullptr, nullptr) == PTO_OK) {
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
  // Make the session usable again for the cases after this one.
  REQUIRE(s.barrier(s.world(), 30000, /*stop_on_abort=*/false) == mpi::WaitOutcome::Done);
  s.clear_abort();
  REQUIRE(s.barrier(s.world(), 30000, false) == mpi::WaitOutcome::Done);
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
