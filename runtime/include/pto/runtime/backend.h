// backend.h - How a World runs its PEs. The threads backend (default) runs every PE as a thread
// of this process; an MPI backend (one PE per process, MPI-3 RMA windows) can implement the same
// interface later.
#pragma once

#include <functional>
#include <memory>

namespace pto::runtime {

/// Runs the PEs of a World. Implementations hold no per-run state between calls to run().
class Backend {
public:
  virtual ~Backend() = default;
  /// The backend's name as `--backend` spells it ("threads").
  virtual const char *name() const = 0;
  /// Runs `body(pe)` for every pe in [0, n_pes) concurrently and returns once every call has
  /// returned. `body` never throws (World wraps it). If the backend cannot start every PE it
  /// calls `abort()` (which releases the PEs already started from their collectives), waits for
  /// the started ones, and throws pto::DistributedError.
  virtual void run(int n_pes, const std::function<void(int pe)> &body,
                   const std::function<void()> &abort) = 0;
};

/// The default backend: one std::thread per PE, all in this process. Many more PEs than cores is
/// fine: every wait blocks in the kernel (futex / condition variable) instead of spinning.
std::unique_ptr<Backend> make_threads_backend();

} // namespace pto::runtime
