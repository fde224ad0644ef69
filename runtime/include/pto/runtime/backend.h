// backend.h - How a World runs its PEs and which transport moves their bytes. The threads backend
// (default) runs every PE as a persistent thread of this process over shared memory; an MPI
// backend runs one PE per process under mpirun over MPI-3 RMA (runtime/src/transport/mpi/).
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace pto::runtime {

namespace transport {
class Transport; // runtime/src/transport/transport.h (internal)
class Host;
} // namespace transport

/// Runs the PEs of a World and makes the transport they talk through. One Backend belongs to
/// one World (it may keep threads between runs).
class Backend {
public:
  virtual ~Backend() = default;
  /// The backend's name as `--backend` spells it ("threads").
  virtual const char *name() const = 0;
  /// The world PEs that live in this process, ascending: every PE of [0, n_pes) for threads,
  /// this rank's PE for MPI. Contexts exist, and World::run calls its function, only for these.
  virtual std::vector<int> local_pes(int n_pes) const = 0;
  /// The transport of a world of `n_pes` PEs (called once, by the World's constructor), which
  /// reports events from other processes to `host` (the World's state, which outlives it). Throws
  /// pto::DistributedError if the backend cannot host that many PEs (MPI: a different number of
  /// ranks).
  virtual std::unique_ptr<transport::Transport> make_transport(int n_pes,
                                                               transport::Host &host) = 0;
  /// Runs `body(pe)` for every local PE concurrently and returns once every call has returned.
  /// `body` never throws (World wraps it). If the backend cannot start every local PE it calls
  /// `abort()` (which releases the PEs already started from their collectives), waits for the
  /// started ones, and throws pto::DistributedError.
  virtual void run(int n_pes, const std::function<void(int pe)> &body,
                   const std::function<void()> &abort) = 0;
};

/// The default backend: PE 0 runs on the thread that calls World::run, every other PE on a
/// thread of this process that is created at the first run and parked between runs (it polls
/// for the next run for a few microseconds, then sleeps in a futex). Many more PEs than cores is
/// fine: waits poll only while the PEs fit on the cores, and otherwise sleep at once.
std::unique_ptr<Backend> make_threads_backend();

} // namespace pto::runtime
