// host_tensor.h - pto::HostTensor: a contiguous, row-major buffer on the host, the argument
// type of kernel calls (the caller allocates every output, as in PyPTO). A HostTensor is a
// handle: copies share the same buffer (like torch.Tensor); the buffer lives while any copy does.
#pragma once

#include "pto/dtype.h"

#include <cstdint>
#include <memory>
#include <source_location>
#include <vector>

namespace pto {

class HostTensor {
public:
  HostTensor() = default;
  /// A zero-filled tensor. Throws DTypeError for an unsupported dtype, ShapeError for a negative
  /// dim or rank above 8.
  HostTensor(DataType dtype, std::vector<int64_t> shape,
             std::source_location loc = std::source_location::current());

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int64_t size_bytes() const { return numel_ * bytes_of(dtype_); }
  void *data() { return data_.get(); }
  const void *data() const { return data_.get(); }
  template <class T> T *data_as() { return static_cast<T *>(data()); }
  template <class T> const T *data_as() const { return static_cast<const T *>(data()); }

  /// Element `i` (flat, row-major) as double: fp16/bf16 widened exactly, ints converted.
  double get(int64_t i) const;
  /// Stores `v` into element `i`, converted to the dtype (floats round to nearest even, ints
  /// truncate toward zero).
  void set(int64_t i, double v);
  /// Fills with `v` (converted as by set).
  void fill(double v);

private:
  DataType dtype_ = DT_FP32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t[]> data_;
};

} // namespace pto
