// world.h - A World of N PEs (OpenSHMEM processing elements) that run one SPMD function
// together, their communication groups and symmetric heaps. The host-side entry point of the
// runtime: `World(8).run([](int pe) { kernel(...); })`.
#pragma once

#include "pto/runtime/abi.h"
#include "pto/runtime/backend.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

namespace pto::runtime {

namespace detail {
struct WorldState;
}

/// Options of a World.
struct WorldOptions {
  /// The default deadlock timeout. The environment variable PTO_DEADLOCK_TIMEOUT_MS (a positive
  /// integer, milliseconds; empty means unset) replaces it when `deadlock_timeout_ms` is left at
  /// this default.
  static constexpr int64_t kDefaultDeadlockTimeoutMs = 30000;
  /// The largest accepted deadlock timeout (and PTO_DEADLOCK_TIMEOUT_MS): one year in
  /// milliseconds, so that the barrier's doubled timeout and every deadline computed from it
  /// (steady_clock nanoseconds) fit in int64.
  static constexpr int64_t kMaxDeadlockTimeoutMs = 365LL * 24 * 3600 * 1000;
  /// The deadlock detector's timeout in milliseconds, in [1, kMaxDeadlockTimeoutMs]. A blocked
  /// wait (shmem_wait_until) fails with pto::DeadlockError once no PE of the world has made
  /// progress for this long, and a kernel entry/exit barrier after twice as long. Progress is any
  /// signal, put, get, clear, completed wait, barrier arrival, kernel call start or end, or a PE
  /// returning from its function, so a slow run (many PEs on few cores) never times out while
  /// some PE still gets on. The error comes between the timeout and the timeout plus one
  /// sampling slice (50 ms for waits, an eighth of the timeout for barriers) after the last
  /// progress. A PE that computes longer than this without calling the runtime looks stuck;
  /// conversely, a wait that can never complete is reported only once every other PE has
  /// stopped making progress too (returned, or blocked itself).
  int64_t deadlock_timeout_ms = kDefaultDeadlockTimeoutMs;
};

/// N PEs that run SPMD functions together. Owns the PE contexts, the group table and the
/// symmetric heaps (kept between runs and reused while large enough).
///
/// Errors: every function here throws only pto::Error subclasses, with messages that start with
/// the caller's `file:line` (from the defaulted `loc` parameter); a failure below the API
/// (out of memory, a thread that cannot start) is a pto::RuntimeError saying what was being
/// done. Exceptions thrown by the user's own `fn` in run() are rethrown unchanged.
class World {
public:
  /// Creates a world of `n_pes` PEs on the threads backend. Throws pto::DistributedError if
  /// n_pes is outside [1, 4096] or if `opts.deadlock_timeout_ms` is outside [1,
  /// kMaxDeadlockTimeoutMs]; pto::ArgumentError (as for every bad environment value) if
  /// PTO_DEADLOCK_TIMEOUT_MS is set and not empty (empty means unset) but is not an integer in
  /// [1, kMaxDeadlockTimeoutMs]; pto::RuntimeError if the PE contexts cannot be allocated.
  explicit World(int n_pes, WorldOptions opts = {},
                 std::source_location loc = std::source_location::current());
  /// As above on the given backend (must not be null: pto::DistributedError).
  World(int n_pes, WorldOptions opts, std::unique_ptr<Backend> backend,
        std::source_location loc = std::source_location::current());
  ~World();
  World(const World &) = delete;
  World &operator=(const World &) = delete;

  /// Number of PEs.
  int n_pes() const;
  /// The effective deadlock timeout in milliseconds (after PTO_DEADLOCK_TIMEOUT_MS).
  int64_t deadlock_timeout_ms() const;
  /// The backend's name ("threads").
  const char *backend_name() const;
  /// The context of PE `pe` in [0, n_pes()) (tests and backends; kernels use current_ctx()).
  /// Throws pto::DistributedError for a PE out of range or one that lives in another process.
  pto_ctx *context(int pe, std::source_location loc = std::source_location::current());

  /// Declares communication group `name` whose group-local PE i is world PE `pes[i]` (as an
  /// HCCL communicator). Kernels name groups in create_shmem_tensor: "world" is always the
  /// group of every PE; any other name must be created here first. Any number of groups; a PE
  /// may belong to several. Creating an existing group again with the same PEs is a no-op.
  /// Throws pto::DistributedError (naming the caller's line) for a name outside 1-127 bytes or
  /// "world", no PEs, a PE out of range or repeated, a different member list for an existing
  /// name, or a running world; pto::RuntimeError if out of memory.
  void create_group(const std::string &name, const std::vector<int> &pes,
                    std::source_location loc = std::source_location::current());

  /// Starts (or stops) recording a timeline: kernel calls, puts and gets (with byte counts),
  /// signals, waits and kernel entry/exit barriers, per PE. Recording costs a clock read and a
  /// vector append per runtime call; off by default. Never throws.
  void enable_trace(bool on = true);
  /// Writes the recorded timeline as Chrome trace JSON (open it in Perfetto or chrome://tracing):
  /// one lane per PE, times in microseconds since the World was created. Kernel and op names
  /// that are not valid UTF-8 are written with U+FFFD in place of the invalid bytes. Throws
  /// pto::ArgumentError for an empty path, pto::RuntimeError naming the path (and the system's
  /// reason) when the file cannot be written, pto::DistributedError while the world is running.
  /// On a world spanning processes (the MPI backend) it is collective: every process calls it
  /// with the same path, and the process of PE 0 writes one file with every PE's lane (times on
  /// its clock); the others write nothing.
  void write_trace(const std::string &path,
                   std::source_location loc = std::source_location::current()) const;
  /// Number of events recorded so far (all PEs).
  size_t trace_events() const;

  /// Runs `fn(pe)` on every PE of this process concurrently (SPMD) and returns when all have
  /// returned. Inside `fn`, current_ctx() is that PE's context, so kernels called there run as
  /// that PE. On the threads backend PE 0 runs on the calling thread and every other PE on a
  /// thread of the world that is made at the first run and reused by every later one.
  /// If any PE threw, rethrows the root cause: the error of the PE that failed first, preferring
  /// a primary error over the secondary pto::DistributedError ("released because PE k failed")
  /// that PEs blocked in waits and barriers get once another PE has failed.
  /// After a failure the world stays aborted until run() returns; the next run starts clean.
  /// A PE of another process that fails is reported as a pto::DistributedError naming it and
  /// its error, unless a local PE failed first.
  /// Throws pto::DistributedError (at the caller's line) if called from inside a PE of any
  /// world (worlds do not nest) or while another run() of this world is active, or if the
  /// backend cannot start every PE; pto::ArgumentError (at the caller's line) for an empty `fn`.
  void run(const std::function<void(int pe)> &fn,
           std::source_location loc = std::source_location::current());

private:
  std::unique_ptr<detail::WorldState> state_;
  std::unique_ptr<Backend> backend_;
  std::atomic<bool> running_{false};
};

} // namespace pto::runtime
