// collective_barrier.cpp - A generation-counting barrier on a mutex and condition variable.
#include "collective_barrier.h"

namespace pto::runtime::detail {

void CollectiveBarrier::reset(int n_parties) {
  std::lock_guard lock(mutex_);
  n_ = n_parties;
  count_ = 0;
  generation_ = 0;
  arrived_in_.assign(size_t(n_parties), 0);
}

void CollectiveBarrier::wake_all() {
  // Taking the lock orders the wake-up after any waiter's predicate check (no lost wake-up).
  std::lock_guard lock(mutex_);
  cv_.notify_all();
}

CollectiveBarrier::Result CollectiveBarrier::arrive_and_wait(
    int pe, ProgressWatch &watch, const std::function<bool()> &aborted,
    const std::function<bool(int pe)> &gone, const std::function<void()> &completion) {
  std::unique_lock lock(mutex_);
  const uint64_t my_generation = generation_;
  arrived_in_[size_t(pe)] = my_generation + 1;
  if (++count_ == n_) {
    completion();
    count_ = 0;
    ++generation_;
    cv_.notify_all();
    return {};
  }
  auto missing = [&] {
    Result r;
    for (int p = 0; p < n_; ++p)
      if (arrived_in_[size_t(p)] != my_generation + 1)
        r.missing.push_back(p);
    r.arrived = n_ - int(r.missing.size());
    return r;
  };
  for (;;) {
    if (generation_ != my_generation)
      return {};
    if (aborted())
      return {Outcome::Aborted, {}, 0};
    Result r = missing();
    for (int p : r.missing)
      if (gone(p)) {
        r.outcome = Outcome::PeerGone;
        r.missing = {p};
        return r;
      }
    const auto now = Clock::now();
    if (watch.stalled(now)) {
      r.outcome = Outcome::TimedOut;
      return r;
    }
    cv_.wait_until(lock, watch.next_sample(now));
  }
}

} // namespace pto::runtime::detail
