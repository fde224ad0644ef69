// signal.cpp - Linux futex wait/wake on a 32-bit word (private to this process).
#include "pto/runtime/signal.h"

#include <climits>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace pto::runtime {

void futex_wait(int32_t *word, int32_t expected, int64_t timeout_ms) {
  timespec ts{};
  ts.tv_sec = time_t(timeout_ms / 1000);
  ts.tv_nsec = long(timeout_ms % 1000) * 1000000L;
  // EAGAIN (the word changed), EINTR and ETIMEDOUT all mean "re-check": the caller loops.
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake_all(int32_t *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void futex_wake_one(int32_t *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

} // namespace pto::runtime
