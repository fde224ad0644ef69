// collective_barrier.h - The barrier behind kernel entry and exit: blocks on a condition variable
// (never spins), gives up when no PE has made progress for the timeout (progress.h), and lets go
// early when the world aborts or when a PE that has not arrived has already returned (so it
// never will).
#pragma once

#include "progress.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace pto::runtime::detail {

class CollectiveBarrier {
public:
  using Clock = std::chrono::steady_clock;
  enum class Outcome { Passed, Aborted, TimedOut, PeerGone };
  struct Result {
    Outcome outcome = Outcome::Passed;
    std::vector<int> missing; ///< PEs not arrived (TimedOut, PeerGone)
    int arrived = 0;          ///< how many had arrived (TimedOut, PeerGone)
  };

  /// Starts afresh for `n_parties` PEs (between runs; no PE may be waiting).
  void reset(int n_parties);
  /// PE `pe` arrives and waits for all. The last to arrive runs `completion` under the lock
  /// before anyone is released (it may read every PE's proposal). `aborted()` and
  /// `gone(pe)` are re-checked on every wake-up (see wake_all()); TimedOut once `watch` says
  /// that no PE has made progress for its timeout (the caller counts its own arrival).
  Result arrive_and_wait(int pe, ProgressWatch &watch, const std::function<bool()> &aborted,
                         const std::function<bool(int pe)> &gone,
                         const std::function<void()> &completion);
  /// Wakes every waiter to re-check abort and gone PEs.
  void wake_all();

private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int n_ = 0;
  int count_ = 0;
  uint64_t generation_ = 0;
  std::vector<uint64_t> arrived_in_; ///< per PE: generation of its last arrival + 1 (0 = never)
};

} // namespace pto::runtime::detail
