// spin.h - Internal: the bounded polling phase of every blocking wait on shared memory (signal
// waits, barriers, the PE threads' hand-off). A waiter polls with plain acquire loads for a few
// microseconds before it sleeps in a futex: on this kind of VM a futex hand-off costs ~20 us one
// way, a poll ~0.1 us. It polls only while the threads that may be runnable fit on the cores, so
// that many more PEs than cores never burn them (the PE they wait for may not be running).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace pto::runtime::detail {

/// The CPUs this process may run on (sched_getaffinity; at least 1), read once.
int usable_cpus();

/// How long a waiter among `threads` busy threads of this process polls before it sleeps: a
/// few microseconds when they fit on the usable CPUs, else 0 (sleep at once).
std::chrono::nanoseconds spin_budget(int threads);

/// True while more threads are runnable on the machine than this process has CPUs (the
/// running count of /proc/loadavg, sampled at most every 20 ms by whichever waiter asks first;
/// false if it cannot be read). Then a peer being waited for is likely not running, and polling
/// would only take a core from it: waiters sleep at once.
bool machine_overloaded();

/// Polls `ready()` (plain loads, no PAUSE: measured faster on this machine) until it is true or
/// `budget` has passed (the clock is read every 64 polls). Returns ready()'s last value.
template <class Ready> bool spin_until(Ready &&ready, std::chrono::nanoseconds budget) {
  if (ready())
    return true;
  if (budget.count() <= 0)
    return false;
  const auto end = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i)
      if (ready())
        return true;
    if (std::chrono::steady_clock::now() >= end)
      return ready();
  }
}

/// A waiter's own spin budget: about what sleeping costs it (competitive spinning: polling that
/// long before sleeping costs at most twice the better choice), capped by spin_budget(). What
/// sleeping costs is measured: the waker stamps the time it rang (now_ns()), the waiter measures
/// how long it took to get going again. On an idle VM that is ~20 us (a CPU leaving idle); on a
/// loaded machine, where spinning only takes the core from the PE being waited for, ~1-2 us.
/// Used only by its own thread.
class AdaptiveSpin {
public:
  using ns = std::chrono::nanoseconds;
  explicit AdaptiveSpin(ns cap = ns(0)) { set_cap(cap); }
  void set_cap(ns cap) {
    cap_ = cap.count();
    wake_ = cap_ / 2;
  }
  ns budget() const { return machine_overloaded() ? ns(0) : ns(std::min(cap_, wake_)); }
  /// A sleep ended `latency` ns after the waker rang.
  void woke(int64_t latency) {
    if (latency >= 0)
      wake_ += (std::min<int64_t>(latency, 1000000) - wake_) / 4;
  }

private:
  int64_t cap_ = 0, wake_ = 0;
};

/// Monotonic nanoseconds, for AdaptiveSpin's stamps.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace pto::runtime::detail
