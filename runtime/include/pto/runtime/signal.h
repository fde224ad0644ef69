// signal.h - Blocking on, and waking, a 32-bit signal word without burning a core (Linux futex).
// With many more PEs than cores, a spinning waiter would starve the PE it waits for.
#pragma once

#include "pto/runtime/abi.h"

#include <cstdint>

namespace pto::runtime {

/// Blocks while `*word == expected`, for at most `timeout_ms` milliseconds (> 0). Returns early
/// on a wake-up, a spurious wake-up or if the word already differs: callers re-check in a loop.
void futex_wait(int32_t *word, int32_t expected, int64_t timeout_ms);
/// Wakes every thread blocked in futex_wait on `word`.
void futex_wake_all(int32_t *word);
/// Wakes at most one thread blocked in futex_wait on `word`.
void futex_wake_one(int32_t *word);

/// `value cmp target` for a pto_cmp (EQ, NE, LT, LE, GT, GE).
inline bool signal_compare(int32_t value, int32_t cmp, int32_t target) {
  switch (cmp) {
  case PTO_CMP_EQ:
    return value == target;
  case PTO_CMP_NE:
    return value != target;
  case PTO_CMP_LT:
    return value < target;
  case PTO_CMP_LE:
    return value <= target;
  case PTO_CMP_GT:
    return value > target;
  case PTO_CMP_GE:
    return value >= target;
  default: // not a pto_cmp: the callers reject it before they wait
    return false;
  }
}

/// The comparison's spelling for messages ("==", "!=", "<", "<=", ">", ">="; "?" if invalid).
inline const char *signal_compare_name(int32_t cmp) {
  switch (cmp) {
  case PTO_CMP_EQ:
    return "==";
  case PTO_CMP_NE:
    return "!=";
  case PTO_CMP_LT:
    return "<";
  case PTO_CMP_LE:
    return "<=";
  case PTO_CMP_GT:
    return ">";
  case PTO_CMP_GE:
    return ">=";
  default:
    return "?";
  }
}

} // namespace pto::runtime
