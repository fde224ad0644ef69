// spin.h - Internal: the bounded polling phase of every blocking wait on shared memory (signal
// waits, barriers, the PE threads' hand-off). A waiter polls with plain acquire loads for a few
// microseconds before it sleeps in a futex: on this kind of VM a futex hand-off costs ~20 us one
// way, a poll ~0.1 us. It polls only while the threads that may be runnable fit on the cores, so
// that many more PEs than cores never burn them (the PE they wait for may not be running).
#pragma once

#include <chrono>
#include <cstdint>

namespace pto::runtime::detail {

/// The CPUs this process may run on (sched_getaffinity; at least 1), read once.
int usable_cpus();

/// How long a waiter among `threads` busy threads of this process polls before it sleeps: a
/// few microseconds when they fit on the usable CPUs, else 0 (sleep at once).
std::chrono::nanoseconds spin_budget(int threads);

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

} // namespace pto::runtime::detail
