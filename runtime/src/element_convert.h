// element_convert.h - Internal: the element types of shmem data (by PyPTO dtype ordinal), value
// conversion between them, and the atomic add of one element. Conversion rules:
// - float -> float and int -> float: round once to nearest even (fp64 and int64 -> fp16/bf16
//   correctly rounded, no double rounding); NaN stays NaN, overflow goes to inf.
// - float -> int: truncate toward zero, saturate at the type's range, NaN -> 0 (C++ leaves these
//   undefined; saturation is what numpy-like users expect least surprise from).
// - int -> int: two's-complement wrap (C++20 static_cast). Any -> bool: value != 0.
#pragma once

#include "pto/half.h"

#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace pto::runtime::detail {

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool8 {
  uint8_t v;
};

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
    return double(x);
}

/// Value of an integer or bool element as int64.
template <class T> inline int64_t to_int64(T x) {
  if constexpr (std::is_same_v<T, Bool8>)
    return x.v != 0;
  else
    return int64_t(x);
}

template <class D> inline D from_double(double d) {
  if constexpr (std::is_same_v<D, F16>)
    return F16{fp64_to_fp16(d)};
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{fp64_to_bf16(d)};
  else if constexpr (std::is_same_v<D, Bool8>)
    return Bool8{uint8_t(d != 0.0)};
  else if constexpr (std::is_floating_point_v<D>)
    return D(d);
  else {
    if (d != d)
      return D(0);
    // 2^digits is exact in double; anything at or beyond it saturates.
    constexpr double hi = double(std::numeric_limits<D>::max()) + 1.0;
    constexpr double lo = double(std::numeric_limits<D>::min());
    if (d >= hi)
      return std::numeric_limits<D>::max();
    if (d <= lo)
      return std::numeric_limits<D>::min();
    return D(d);
  }
}

template <class D> inline D from_int64(int64_t i) {
  if constexpr (std::is_same_v<D, Bool8>)
    return Bool8{uint8_t(i != 0)};
  else if constexpr (std::is_same_v<D, float> || std::is_same_v<D, double>)
    return D(i); // one rounding, to nearest even
  else if constexpr (std::is_same_v<D, F16>)
    return F16{int64_to_fp16(i)}; // one rounding (not through fp32 or fp64)
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{int64_to_bf16(i)};
  else
    return static_cast<D>(i);
}

/// Converts one element from S to D.
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

/// Calls `f(T{})` with T the element type of PyPTO dtype ordinal `dt`; false if unsupported.
template <class F> inline bool with_element_type(int32_t dt, F &&f) {
  switch (dt) {
  case 1:
    f(int8_t{});
    return true;
  case 2:
    f(int16_t{});
    return true;
  case 3:
    f(int32_t{});
    return true;
  case 4:
    f(int64_t{});
    return true;
  case 6:
    f(F16{});
    return true;
  case 7:
    f(float{});
    return true;
  case 8:
    f(BF16{});
    return true;
  case 11:
    f(uint8_t{});
    return true;
  case 15:
    f(Bool8{});
    return true;
  case 16:
    f(double{});
    return true;
  }
  return false;
}

/// Bytes per element of dtype `dt`, 0 if unsupported.
inline int64_t element_size(int32_t dt) {
  int64_t size = 0;
  with_element_type(dt, [&](auto t) { size = int64_t(sizeof(t)); });
  return size;
}

/// The dtype's name for messages ("fp32"), "dtype <n>" if unsupported.
inline const char *element_name(int32_t dt) {
  switch (dt) {
  case 1:
    return "int8";
  case 2:
    return "int16";
  case 3:
    return "int32";
  case 4:
    return "int64";
  case 6:
    return "fp16";
  case 7:
    return "fp32";
  case 8:
    return "bf16";
  case 11:
    return "uint8";
  case 15:
    return "bool";
  case 16:
    return "fp64";
  }
  return "unsupported dtype";
}

} // namespace pto::runtime::detail
