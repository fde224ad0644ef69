// element.cpp - Loads and stores of one element of any storage dtype (element.h), by the typed
// rules of element.h behind a dtype switch.
#include "pto/element.h"

#include "pto/error.h"

#include <cstring>

namespace pto::element {

namespace {
template <class T> T get(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }
} // namespace

double load_f(const uint8_t *p, DataType dt) {
  double out = 0;
  bool floating = false;
  with_element_type(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (is_floating_v<T>) {
      out = to_double(get<T>(p));
      floating = true;
    }
  });
  if (!floating)
    throw InternalError("<element>", "load", "not a floating dtype: " + name(dt));
  return out;
}

int64_t load_i(const uint8_t *p, DataType dt) {
  int64_t out = 0;
  bool integral = false;
  with_element_type(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (!is_floating_v<T>) {
      out = to_int64(get<T>(p));
      integral = true;
    }
  });
  if (!integral)
    throw InternalError("<element>", "load", "not an integer dtype: " + name(dt));
  return out;
}

double round_scalar(double v, DataType dt) {
  switch (dt) {
  case DT_FP16:
    return to_double(from_double<F16>(v));
  case DT_BF16:
    return to_double(from_double<BF16>(v));
  case DT_FP32:
    return static_cast<float>(v);
  case DT_DOUBLE:
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_BOOL:
  PTO_CASE_UNSUPPORTED_DTYPES:
    return v;
  }
  return v;
}

double round_int(int64_t v, DataType dt) {
  auto out = static_cast<double>(v);
  with_element_type(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (is_floating_v<T>)
      out = to_double(from_int64<T>(v));
  });
  return out;
}

void store_f(uint8_t *p, DataType dt, double v) {
  if (!with_element_type(dt, [&](auto t) { put(p, from_double<decltype(t)>(v)); }))
    throw InternalError("<element>", "store", "unsupported dtype " + name(dt));
}

void store_i(uint8_t *p, DataType dt, int64_t v) {
  if (!with_element_type(dt, [&](auto t) { put(p, from_int64<decltype(t)>(v)); }))
    throw InternalError("<element>", "store", "unsupported dtype " + name(dt));
}

} // namespace pto::element
