// mpi_main.cpp - The entry point of test_mpi (run under mpirun): initializes the MPI session,
// runs the doctest cases on every rank, and exits non-zero on every rank if any rank failed. The
// cases of the test suite "abandons" leave a communicator of the session abandoned on one rank
// (mpi_world_xrank_test.cpp), so they run after every other case, whatever the file order.
#define DOCTEST_CONFIG_IMPLEMENT
#include "pto/error.h"

#include "transport/mpi/mpi_session.h"

#include <doctest/doctest.h>

#include <cstdio>

int main(int argc, char **argv) {
  pto::runtime::mpi::Session *sp = nullptr;
  try {
    sp = &pto::runtime::mpi::session();
  } catch (const pto::Error &e) { // e.g. settings that differ across the ranks
    std::printf("test_mpi: error: %s\n", e.what());
    return 1;
  }
  auto &s = *sp;
  int failed = 0, any = 0;
  for (const char *filter : {"test-suite-exclude", "test-suite"}) {
    doctest::Context ctx(argc, argv);
    ctx.addFilter(filter, "abandons");
    failed |= ctx.run() != 0 ? 1 : 0;
    if (ctx.shouldExit())
      break; // --help, --list-test-cases and the like: once is enough
  }
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, s.world());
  if (s.rank() == 0)
    std::printf("test_mpi: %d ranks, %s: %s\n", s.size(), s.describe().c_str(),
                any ? "FAILED" : "all passed");
  return any;
}
