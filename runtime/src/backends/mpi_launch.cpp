// mpi_launch.cpp - launched_by_mpirun (pto/runtime/mpi.h): built with or without MPI, so a
// program can tell "not under mpirun" from "no MPI support" before choosing a backend.
#include "pto/runtime/mpi.h"

#include <cstdlib>

namespace pto::runtime {

bool launched_by_mpirun() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v))
      return true;
  return false;
}

} // namespace pto::runtime
