// mpi.h - The MPI backend: one PE per process under mpirun, symmetric heaps as MPI-3 RMA windows
// (shared-memory windows with load/store when every rank is on one node). Built when CMake finds
// MPI (PTO_WITH_MPI; PTO_HAVE_MPI is then defined for users of the runtime). See
// docs/distributed.md, "Running on MPI", for the commands and the environment variables
// (PTO_MPI_SHARED, PTO_MPI_PROGRESS).
#pragma once

#include "pto/runtime/backend.h"

#include <cstdint>
#include <memory>
#include <source_location>
#include <utility>
#include <vector>

namespace pto::runtime {

/// True when this process was started by mpirun / mpiexec (it sees Open MPI's, PMIx's or PMI's
/// environment). Never initializes MPI; never throws.
bool launched_by_mpirun();

#if PTO_HAVE_MPI
/// This process's rank in MPI_COMM_WORLD (its PE number under the MPI backend) and the number
/// of ranks. Initialize MPI on first use (MPI_Init_thread); MPI is finalized at exit. Throw
/// pto::DistributedError (at `loc`) outside mpirun, pto::RuntimeError if MPI fails to start.
int mpi_rank(std::source_location loc = std::source_location::current());
int mpi_size(std::source_location loc = std::source_location::current());

/// After World::run on the MPI backend, makes every process's copy of buffer p equal to the one
/// of the process that ran PE p (rank p): `bufs[p]` is {address, bytes}, with the same byte
/// counts on every rank, n_pes entries. Collective over all ranks (MPI_Ibcast from each rank in
/// turn, polled: a rank that does not call it within twice the default deadlock timeout fails
/// the others instead of hanging them). Lets a host program check every PE's output on every
/// rank. Every rank checks every rank's arguments first (an MPI_Iallgather of the counts), so
/// that each fails alike (at `loc`): pto::DistributedError when some rank's bufs.size() differs
/// from the number of ranks, a byte count differs between ranks, or the ranks do not all call
/// it; pto::ArgumentError for a negative count or a null address with a non-zero count;
/// pto::RuntimeError when MPI fails.
void mpi_share_host_buffers(const std::vector<std::pair<void *, int64_t>> &bufs,
                            std::source_location loc = std::source_location::current());

/// The MPI backend for a World of `n_pes` PEs: World(n_pes, opts, make_mpi_backend(n_pes)).
/// World::run then runs fn only for this process's PE (its rank); every other PE runs in its
/// own process. Kernels, groups and shmem operations are the same as on threads. Throws
/// pto::DistributedError (at `loc`) when n_pes differs from the number of MPI ranks or outside
/// mpirun; pto::RuntimeError when MPI fails to start. An error on one rank (including
/// DeadlockError) releases the waits and barriers of every rank, which then fail with a
/// DistributedError naming the failed PE. At exit the ranks finalize MPI together and exit with
/// the status the program returns; if they cannot all meet within 10 s the job ends with
/// MPI_Abort (non-zero), never a hang.
std::unique_ptr<Backend>
make_mpi_backend(int n_pes, std::source_location loc = std::source_location::current());
#endif

} // namespace pto::runtime
