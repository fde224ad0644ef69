// spin.cpp - The spin budget of spin.h.
#include "spin.h"

#include <atomic>
#include <cstdio>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

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

bool machine_overloaded() {
  static std::atomic<int64_t> next_sample{0};
  static std::atomic<bool> overloaded{false};
  const int64_t now = now_ns();
  int64_t next = next_sample.load(std::memory_order_relaxed);
  if (now >= next &&
      next_sample.compare_exchange_strong(next, now + 20000000, std::memory_order_relaxed)) {
    // "0.50 0.40 0.30 3/456 789": the fourth field is running/total scheduling entities.
    char buf[128];
    bool over = false;
    if (const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC); fd >= 0) {
      const ssize_t n = ::read(fd, buf, sizeof buf - 1);
      ::close(fd);
      if (n > 0) {
        buf[n] = '\0';
        double a = 0, b = 0, c = 0;
        int running = 0;
        if (std::sscanf(buf, "%lf %lf %lf %d/", &a, &b, &c, &running) == 4)
          over = running > usable_cpus();
      }
    }
    overloaded.store(over, std::memory_order_relaxed);
  }
  return overloaded.load(std::memory_order_relaxed);
}

std::chrono::nanoseconds spin_budget(int threads) {
  // The most any waiter polls (AdaptiveSpin polls for about what sleeping costs it): a bit
  // more than a futex hand-off costs on an idle VM.
  constexpr std::chrono::nanoseconds kBudget = std::chrono::microseconds(30);
  return threads <= usable_cpus() ? kBudget : std::chrono::nanoseconds(0);
}

} // namespace pto::runtime::detail
