// memory_amo.h - Internal: an atomic memory operation (transport::Amo) on one word this process
// can address directly (the shared-memory transport's heaps, MPI shared windows). Sequentially
// consistent; integer FetchAdd wraps (two's complement), as ADD puts do.
#pragma once

#include "pto/dtype.h"
#include "pto/runtime/abi.h"

#include "transport/transport.h"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace pto::runtime::transport {

/// `op` on the T at `w`; `operand`/`compare` point to a T (null when the op takes none), the old
/// value is copied to `old` when it is not null.
template <class T>
void memory_amo(std::byte *w, Amo op, const void *operand, const void *compare, void *old) {
  std::atomic_ref<T> a(*reinterpret_cast<T *>(w));
  T v{}, c{}, o{};
  if (operand)
    std::memcpy(&v, operand, sizeof v);
  if (compare)
    std::memcpy(&c, compare, sizeof c);
  switch (op) {
  case Amo::FetchAdd:
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      o = T(std::atomic_ref<U>(*reinterpret_cast<U *>(w)).fetch_add(U(v)));
    } else {
      o = a.fetch_add(v);
    }
    break;
  case Amo::Swap:
    o = a.exchange(v);
    break;
  case Amo::CompareSwap:
    o = c;
    a.compare_exchange_strong(o, v);
    break;
  case Amo::Fetch:
    o = a.load();
    break;
  }
  if (old)
    std::memcpy(old, &o, sizeof o);
}

/// As above on a word of dtype `dt`: DT_INT32, DT_INT64 or DT_FP32 (the caller checked it; any
/// other code does nothing).
inline void memory_amo(std::byte *w, Amo op, pto_dtype dt, const void *operand, const void *compare,
                       void *old) {
  switch (static_cast<DataType>(dt)) {
  case DT_INT32:
    memory_amo<int32_t>(w, op, operand, compare, old);
    break;
  case DT_INT64:
    memory_amo<int64_t>(w, op, operand, compare, old);
    break;
  case DT_FP32:
    memory_amo<float>(w, op, operand, compare, old);
    break;
  default:
    break;
  }
}

} // namespace pto::runtime::transport
