// host_tensor.cpp - Owning host buffers with dtype-aware element access.
#include "pto/host_tensor.h"

#include "pto/error.h"
#include "pto/half.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace pto {

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape, std::source_location loc)
    : dtype_(dtype), shape_(std::move(shape)) {
  if (!is_supported(dtype))
    throw DTypeError(loc, "HostTensor", "dtype " + name(dtype) + " is not supported");
  if (shape_.size() > 8)
    throw ShapeError(loc, "HostTensor", fmt::format("rank {} is above 8", shape_.size()));
  numel_ = 1;
  for (auto d : shape_) {
    if (d < 0)
      throw ShapeError(loc, "HostTensor", fmt::format("negative dim {}", d));
    numel_ *= d;
  }
  size_t bytes = static_cast<size_t>(numel_ * bytes_of(dtype));
  // 64-byte aligned and zeroed; one extra cache line keeps zero-size tensors non-null.
  size_t alloc = (bytes + 64 + 63) / 64 * 64;
  auto *p = static_cast<uint8_t *>(std::aligned_alloc(64, alloc));
  if (!p)
    throw Error(loc, "HostTensor", fmt::format("out of memory allocating {} bytes", alloc));
  std::memset(p, 0, alloc);
  data_ = std::shared_ptr<uint8_t[]>(p, [](uint8_t *q) { std::free(q); });
}

double HostTensor::get(int64_t i) const {
  const uint8_t *b = data_.get();
  switch (dtype_) {
  case DT_INT8: return reinterpret_cast<const int8_t *>(b)[i];
  case DT_INT16: return reinterpret_cast<const int16_t *>(b)[i];
  case DT_INT32: return reinterpret_cast<const int32_t *>(b)[i];
  case DT_INT64: return static_cast<double>(reinterpret_cast<const int64_t *>(b)[i]);
  case DT_UINT8: return b[i];
  case DT_BOOL: return b[i] != 0;
  case DT_FP16: return fp16_to_fp32(reinterpret_cast<const uint16_t *>(b)[i]);
  case DT_BF16: return bf16_to_fp32(reinterpret_cast<const uint16_t *>(b)[i]);
  case DT_FP32: return reinterpret_cast<const float *>(b)[i];
  case DT_DOUBLE: return reinterpret_cast<const double *>(b)[i];
  default: return 0;
  }
}

namespace {
template <class T> T to_int(double v) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (t >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}
} // namespace

void HostTensor::set(int64_t i, double v) {
  uint8_t *b = data_.get();
  switch (dtype_) {
  case DT_INT8: reinterpret_cast<int8_t *>(b)[i] = to_int<int8_t>(v); break;
  case DT_INT16: reinterpret_cast<int16_t *>(b)[i] = to_int<int16_t>(v); break;
  case DT_INT32: reinterpret_cast<int32_t *>(b)[i] = to_int<int32_t>(v); break;
  case DT_INT64: reinterpret_cast<int64_t *>(b)[i] = to_int<int64_t>(v); break;
  case DT_UINT8: b[i] = to_int<uint8_t>(v); break;
  case DT_BOOL: b[i] = v != 0; break;
  // One rounding from double (round-to-odd through fp32, then nearest even).
  case DT_FP16: reinterpret_cast<uint16_t *>(b)[i] = fp64_to_fp16(v); break;
  case DT_BF16: reinterpret_cast<uint16_t *>(b)[i] = fp64_to_bf16(v); break;
  case DT_FP32: reinterpret_cast<float *>(b)[i] = static_cast<float>(v); break;
  case DT_DOUBLE: reinterpret_cast<double *>(b)[i] = v; break;
  default: break;
  }
}

void HostTensor::fill(double v) {
  for (int64_t i = 0; i < numel_; ++i)
    set(i, v);
}

} // namespace pto
