// spin.cpp - The spin budget of spin.h.
#include "spin.h"

#include <sched.h>

namespace pto::runtime::detail {

int usable_cpus() {
  static const int n = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
      return 1;
    const int c = CPU_COUNT(&set);
    return c < 1 ? 1 : c;
  }();
  return n;
}

std::chrono::nanoseconds spin_budget(int threads) {
  // About the cost of one futex round trip here: spinning that long before sleeping costs at
  // most twice the better choice (competitive spinning).
  constexpr std::chrono::nanoseconds kBudget = std::chrono::microseconds(30);
  return threads <= usable_cpus() ? kBudget : std::chrono::nanoseconds(0);
}

} // namespace pto::runtime::detail
