// progress.h - The deadlock detector's notion of time: a wait gives up only when no PE of the
// world has made progress for the whole deadlock timeout, so PEs that are merely slow (many PEs
// sharing few cores) are never mistaken for stuck ones. Progress is any state change a blocked
// PE could be waiting for: a signal, put, get or clear, a wait that completes, a barrier
// arrival, a kernel call starting or ending, a PE returning from its function.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace pto::runtime::detail {

/// The world's progress epoch. bump() is one relaxed atomic add: a waiter only asks "did it
/// change?", never what changed, so no ordering is needed. The count is sharded by thread (one
/// cache line per shard), so PEs that bump on every put, signal and wait do not bounce one line
/// between their cores; load() sums the shards (each only grows, so the sum changes exactly
/// when some shard does). Waiters load only when they are about to sleep or sample.
class ProgressCounter {
public:
  static constexpr int kShards = 64;
  void bump() { shards_[shard()].n.fetch_add(1, std::memory_order_relaxed); }
  /// The calling thread's shard: generated code bumps it with a relaxed atomic add.
  std::atomic<uint64_t> *mine() { return &shards_[shard()].n; }
  uint64_t load() const {
    uint64_t sum = 0;
    for (const Shard &s : shards_)
      sum += s.n.load(std::memory_order_relaxed);
    return sum;
  }

private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> n{0};
  };
  /// This thread's shard: threads take shards round robin at their first bump.
  static int shard() {
    static std::atomic<int> next{0};
    thread_local const int mine = next.fetch_add(1, std::memory_order_relaxed) % kShards;
    return mine;
  }
  Shard shards_[kShards];
};

/// One blocked waiter's view of the epoch. The timeout runs from the last time this waiter saw
/// the epoch change (at first, from the start of the wait). A waiter samples at least every
/// `slice`, so a real deadlock is reported between `timeout` and `timeout + slice` after the
/// last progress anywhere.
class ProgressWatch {
public:
  using Clock = std::chrono::steady_clock;
  ProgressWatch(const ProgressCounter &counter, std::chrono::milliseconds timeout,
                Clock::duration slice)
      : counter_(&counter), timeout_(timeout), slice_(slice), seen_(counter.load()),
        since_(Clock::now()) {}

  /// Samples the epoch at `now`, plus `remote` (the other processes' progress,
  /// Transport::remote_progress); true once neither has changed for the whole timeout.
  bool stalled(Clock::time_point now, uint64_t remote = 0) {
    if (const uint64_t e = counter_->load() + remote; e != seen_) {
      seen_ = e;
      since_ = now;
    }
    return now - since_ >= timeout_;
  }
  /// When to sample next: when the timeout would expire without progress, or one slice from
  /// `now` if that is sooner.
  Clock::time_point next_sample(Clock::time_point now) const {
    return std::min(since_ + timeout_, now + slice_);
  }
  /// The longest time between two samples.
  Clock::duration slice() const { return slice_; }
  /// The timeout in milliseconds, for messages.
  int64_t timeout_ms() const { return timeout_.count(); }

private:
  const ProgressCounter *counter_;
  std::chrono::milliseconds timeout_;
  Clock::duration slice_;
  uint64_t seen_;
  Clock::time_point since_;
};

} // namespace pto::runtime::detail
