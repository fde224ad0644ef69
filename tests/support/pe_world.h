// pe_world.h - The World a distributed kernel test runs on, so that one test file runs on both
// transports: in test_e2e (and every other test binary) the threads backend with the PE count
// the test asks for; compiled into test_mpi (PTO_TEST_MPI, run under mpirun by scripts/test.sh's
// mpi stage) the MPI backend, one PE per rank, with as many PEs as ranks. After a run, share()
// gives every process every PE's outputs, so the checks read them as on threads.
#pragma once

#include "pto/host_tensor.h"
#include "pto/runtime/world.h"

#ifdef PTO_TEST_MPI
#include "pto/runtime/mpi.h"
#endif

#include <memory>
#include <vector>

namespace support {

/// True in test_mpi: PEs are MPI ranks.
constexpr bool kOnMpi =
#ifdef PTO_TEST_MPI
    true;
#else
    false;
#endif

/// One [shape] HostTensor of dtype `dt` per PE (n of them, zero-filled), for a World::run's
/// per-PE inputs and outputs.
inline std::vector<pto::HostTensor> tensors(int n, pto::DataType dt,
                                            const std::vector<int64_t> &shape) {
  std::vector<pto::HostTensor> v;
  for (int i = 0; i < n; ++i)
    v.emplace_back(dt, shape);
  return v;
}

/// The number of PEs a test runs: `threads_pes` on threads, the number of ranks on MPI.
inline int world_pes(int threads_pes) {
#ifdef PTO_TEST_MPI
  (void)threads_pes;
  return pto::runtime::mpi_size();
#else
  return threads_pes;
#endif
}

/// A World of `n` PEs (world_pes) on this binary's transport.
inline std::unique_ptr<pto::runtime::World> make_world(int n,
                                                       pto::runtime::WorldOptions opts = {}) {
#ifdef PTO_TEST_MPI
  return std::make_unique<pto::runtime::World>(n, opts, pto::runtime::make_mpi_backend(n));
#else
  return std::make_unique<pto::runtime::World>(n, opts);
#endif
}

/// After World::run: on MPI, PE p's tensor per_pe[p] is copied from rank p to every rank
/// (collective); nothing to do on threads.
inline void share(std::vector<pto::HostTensor> &per_pe) {
#ifdef PTO_TEST_MPI
  std::vector<std::pair<void *, int64_t>> bufs;
  for (auto &t : per_pe)
    bufs.emplace_back(t.data(), t.size_bytes());
  pto::runtime::mpi_share_host_buffers(bufs);
#else
  (void)per_pe;
#endif
}

} // namespace support
