// element.h - One element of a tensor in memory, read and written by its storage dtype: the
// conversion rules every executor, the library routines, the runtime's put/get and the host
// share (saturation, wrap, rounding once). The typed core (storage types, convert<S, D>,
// with_element_type) is header-only so the runtime's element loops stay inlined and
// vectorizable; load_f/load_i/store_f/store_i are the same rules behind a dtype switch.
// Rules:
// - float -> float and int -> float: round once to nearest even (fp64 and int64 -> fp16/bf16
//   correctly rounded, no double rounding); NaN stays NaN, overflow goes to inf.
// - float -> int: truncate toward zero, saturate at the type's range, NaN -> 0 (C++ leaves these
//   undefined; saturation is what numpy-like users expect least surprise from).
// - int -> int: two's-complement wrap. Anything -> bool: value != 0.
#pragma once

#include "pto/dtype.h"
#include "pto/half.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace pto::element {

/// Storage of the 16-bit floats and of bool: distinct types, so that templates over element
/// types tell them from uint16_t and uint8_t.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool8 {
  uint8_t v;
};

/// True for the floating storage types (float, double, F16, BF16).
template <class T>
inline constexpr bool is_floating_v =
    std::is_floating_point_v<T> || std::is_same_v<T, F16> || std::is_same_v<T, BF16>;

/// Value of a floating element as double (exact).
template <class T> inline double to_double(T x) {
  if constexpr (std::is_same_v<T, F16>)
    return fp16_to_fp32(x.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return bf16_to_fp32(x.bits);
  else
    return static_cast<double>(x);
}

/// Value of an integer or bool element as int64 (bool: 0 or 1).
template <class T> inline int64_t to_int64(T x) {
  if constexpr (std::is_same_v<T, Bool8>)
    return x.v != 0;
  else
    return static_cast<int64_t>(x);
}

/// `d` as element type D: floats round to nearest even once; integers truncate and saturate
/// (NaN -> 0); bool is d != 0.
template <class D> inline D from_double(double d) {
  if constexpr (std::is_same_v<D, F16>)
    return F16{fp64_to_fp16(d)};
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{fp64_to_bf16(d)};
  else if constexpr (std::is_same_v<D, Bool8>)
    return Bool8{static_cast<uint8_t>(d != 0.0)};
  else if constexpr (std::is_floating_point_v<D>)
    return static_cast<D>(d);
  else {
    if (d != d)
      return D(0);
    // 2^digits is exact in double; anything at or beyond it saturates.
    constexpr double hi = static_cast<double>(std::numeric_limits<D>::max()) + 1.0;
    constexpr double lo = static_cast<double>(std::numeric_limits<D>::min());
    if (d >= hi)
      return std::numeric_limits<D>::max();
    if (d <= lo)
      return std::numeric_limits<D>::min();
    return static_cast<D>(d);
  }
}

/// `i` as element type D: integers wrap, floats round to nearest even once (fp16/bf16 not
/// through fp32 or fp64), bool is i != 0.
template <class D> inline D from_int64(int64_t i) {
  if constexpr (std::is_same_v<D, Bool8>)
    return Bool8{static_cast<uint8_t>(i != 0)};
  else if constexpr (std::is_floating_point_v<D>)
    return static_cast<D>(i); // one rounding, to nearest even
  else if constexpr (std::is_same_v<D, F16>)
    return F16{int64_to_fp16(i)};
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{int64_to_bf16(i)};
  else
    return static_cast<D>(i);
}

/// Converts one element from S to D by the rules above.
template <class S, class D> inline D convert(S s) {
  if constexpr (std::is_same_v<S, D>)
    return s;
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, F16>)
    return F16{fp32_to_fp16(s)};
  else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, BF16>)
    return BF16{fp32_to_bf16(s)};
  else if constexpr (std::is_same_v<S, F16> && std::is_same_v<D, float>)
    return fp16_to_fp32(s.bits);
  else if constexpr (std::is_same_v<S, BF16> && std::is_same_v<D, float>)
    return bf16_to_fp32(s.bits);
  else if constexpr (is_floating_v<S>)
    return from_double<D>(to_double(s));
  else
    return from_int64<D>(to_int64(s));
}

/// Calls `f(T{})` with T the storage type of `dt` (int8_t .. int64_t, uint8_t, F16, float, BF16,
/// double, Bool8). Returns false, without calling `f`, when `dt` is not is_supported().
template <class F> inline bool with_element_type(DataType dt, F &&f) {
  switch (dt) {
  case DT_INT8:
    f(int8_t{});
    return true;
  case DT_INT16:
    f(int16_t{});
    return true;
  case DT_INT32:
    f(int32_t{});
    return true;
  case DT_INT64:
    f(int64_t{});
    return true;
  case DT_FP16:
    f(F16{});
    return true;
  case DT_FP32:
    f(float{});
    return true;
  case DT_BF16:
    f(BF16{});
    return true;
  case DT_UINT8:
    f(uint8_t{});
    return true;
  case DT_BOOL:
    f(Bool8{});
    return true;
  case DT_DOUBLE:
    f(double{});
    return true;
  PTO_CASE_UNSUPPORTED_DTYPES:
    return false;
  }
  return false; // an ordinal outside the enum
}

/// The floating element of dtype `dt` (FP16, BF16, FP32, DOUBLE) at `p`, widened exactly to
/// double. Throws InternalError for another dtype.
double load_f(const uint8_t *p, DataType dt);
/// The integer element of dtype `dt` (INT8..INT64, UINT8, BOOL as 0/1) at `p`, widened to int64.
/// Throws InternalError for another dtype.
int64_t load_i(const uint8_t *p, DataType dt);
/// Stores `v` as dtype `dt` at `p` (from_double): FP32 and FP64 round to nearest even once;
/// FP16 and BF16 are correctly rounded from `v`; integers truncate toward zero and saturate
/// (NaN -> 0); BOOL is v != 0. Throws InternalError for an unsupported dtype.
void store_f(uint8_t *p, DataType dt, double v);
/// Stores `v` as dtype `dt` at `p` (from_int64): integers wrap (two's complement), floats round
/// to nearest even once (not through fp32 or fp64), BOOL is v != 0. Throws InternalError for an
/// unsupported dtype.
void store_i(uint8_t *p, DataType dt, int64_t v);
/// `v` rounded to dtype `dt` once (FP16, BF16, FP32 to nearest even) and widened back; other
/// dtypes return `v`.
double round_scalar(double v, DataType dt);
/// The integer `v` as an element of floating dtype `dt` (FP16, BF16, FP32, DOUBLE: rounded
/// once to nearest even, not through fp64 or fp32) widened back to double; for other dtypes
/// `v` as a double.
double round_int(int64_t v, DataType dt);

} // namespace pto::element
