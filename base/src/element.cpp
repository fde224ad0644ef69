// element.cpp - Loads and stores of one element of any storage dtype (element.h).
#include "pto/element.h"

#include "pto/error.h"
#include "pto/half.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pto::element {

double load_f(const uint8_t *p, DataType dt) {
  switch (dt) {
  case DT_FP32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DT_DOUBLE: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case DT_FP16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
  }
  case DT_BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16_to_fp32(h);
  }
  default:
    break;
  }
  throw InternalError("<element>", "load", "not a floating dtype: " + name(dt));
}

int64_t load_i(const uint8_t *p, DataType dt) {
  switch (dt) {
  case DT_INT8:
    return static_cast<int8_t>(*p);
  case DT_UINT8:
    return *p;
  case DT_BOOL:
    return *p != 0;
  case DT_INT16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case DT_INT32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DT_INT64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default:
    break;
  }
  throw InternalError("<element>", "load", "not an integer dtype: " + name(dt));
}

namespace {
template <class T> T saturate(double v) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (t >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

template <class T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }
} // namespace

/// `v` as an element of `dt` (fp16/bf16/fp32 rounded to nearest even once; fp64 as is).
double round_scalar(double v, DataType dt) {
  switch (dt) {
  case DT_FP16:
    return fp16_to_fp32(fp64_to_fp16(v));
  case DT_BF16:
    return bf16_to_fp32(fp64_to_bf16(v));
  case DT_FP32:
    return static_cast<float>(v);
  default:
    return v;
  }
}

void store_f(uint8_t *p, DataType dt, double v) {
  switch (dt) {
  case DT_FP32:
    put(p, static_cast<float>(v));
    return;
  case DT_DOUBLE:
    put(p, v);
    return;
  case DT_FP16:
    put(p, fp32_to_fp16(fp64_to_fp32_round_to_odd(v)));
    return;
  case DT_BF16:
    put(p, fp32_to_bf16(fp64_to_fp32_round_to_odd(v)));
    return;
  case DT_INT8:
    put(p, saturate<int8_t>(v));
    return;
  case DT_INT16:
    put(p, saturate<int16_t>(v));
    return;
  case DT_INT32:
    put(p, saturate<int32_t>(v));
    return;
  case DT_INT64:
    put(p, saturate<int64_t>(v));
    return;
  case DT_UINT8:
    put(p, saturate<uint8_t>(v));
    return;
  case DT_BOOL:
    put(p, static_cast<uint8_t>(v != 0));
    return;
  default:
    break;
  }
  throw InternalError("<element>", "store", "unsupported dtype " + name(dt));
}

/// Stores an integer value: ints wrap (two's complement), floats round to nearest even, bool
/// is v != 0.
void store_i(uint8_t *p, DataType dt, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  switch (dt) {
  case DT_INT8:
    put(p, static_cast<int8_t>(static_cast<uint8_t>(u)));
    return;
  case DT_UINT8:
    put(p, static_cast<uint8_t>(u));
    return;
  case DT_INT16:
    put(p, static_cast<int16_t>(static_cast<uint16_t>(u)));
    return;
  case DT_INT32:
    put(p, static_cast<int32_t>(static_cast<uint32_t>(u)));
    return;
  case DT_INT64:
    put(p, v);
    return;
  case DT_BOOL:
    put(p, static_cast<uint8_t>(v != 0));
    return;
  case DT_FP32:
    put(p, static_cast<float>(v));
    return; // one rounding, nearest even
  case DT_DOUBLE:
    put(p, static_cast<double>(v));
    return;
  case DT_FP16:
    put(p, int64_to_fp16(v));
    return; // one rounding (not through fp32 or fp64)
  case DT_BF16:
    put(p, int64_to_bf16(v));
    return;
  default:
    break;
  }
  throw InternalError("<element>", "store", "unsupported dtype " + name(dt));
}

} // namespace pto::element
