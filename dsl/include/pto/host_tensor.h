// host_tensor.h - pto::HostTensor: a contiguous, row-major buffer on the host, the argument
// type of kernel calls (the caller allocates every output, as in PyPTO). A HostTensor is a
// handle: copies share the same buffer (like torch.Tensor); the buffer lives while any copy does.
//
// Sizes: a tensor's size in bytes, counting zero dims as 1 (so every stride fits too), is at
// most 2^62 (kMaxExtent, pto/size_math.h); larger shapes are a ShapeError, never a wrapped size.
//
// Guards, for tests that must prove no kernel writes outside a buffer: the environment variable
// PTO_HOST_TENSOR_GUARD (read at the first HostTensor construction; HostTensor::
// set_default_guard overrides it) picks what every new tensor gets around its data:
//   (unset), `none`  nothing: a 64-byte aligned buffer (the default; no extra cost)
//   `canary`         64 bytes of a known pattern before the data and at least 64 after it;
//                    guard_intact() / guard_damage() test them (call them after each run)
//   `pages`          the data ends exactly at a PROT_NONE page, so the first byte written or
//                    read past the end faults (SIGSEGV) at once; a canary precedes the data.
//                    The data is then only element-aligned, and each tensor costs >= 2 pages.
#pragma once

#include "pto/dtype.h"

#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace pto {

/// The dtypes ptojit computes with (pto::is_supported), as the DTypeError for another of PyPTO's
/// enum members (INT4, FP8 variants, HF4/HF8, UINT16/32/64, FP4) lists them.
inline constexpr const char *kSupportedDtypes =
    "DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_FP16, DT_BF16, DT_FP32, DT_DOUBLE, "
    "DT_BOOL";

/// What surrounds a HostTensor's data (see the file comment and PTO_HOST_TENSOR_GUARD).
enum class HostTensorGuard : uint8_t {
  None,   ///< nothing: 64-byte aligned data
  Canary, ///< pattern bytes before and after the data, tested by guard_intact()
  Pages,  ///< the data ends at a PROT_NONE page (an overrun faults); a canary before it
};

class HostTensor {
public:
  HostTensor() = default;
  /// A zero-filled tensor with the default guard (default_guard()). Throws DTypeError for an
  /// unsupported dtype; ShapeError for a negative dim, rank above 8, or a size above 2^62 bytes
  /// (counting zero dims as 1); RuntimeError when the memory cannot be allocated; ArgumentError
  /// when PTO_HOST_TENSOR_GUARD has a value other than none, canary or pages.
  HostTensor(DataType dtype, std::vector<int64_t> shape,
             std::source_location loc = std::source_location::current());
  /// The same, with an explicit guard (tests use HostTensorGuard::Canary whatever the
  /// environment says).
  HostTensor(DataType dtype, std::vector<int64_t> shape, HostTensorGuard guard,
             std::source_location loc = std::source_location::current());
  /// Copies share the data (as the kernel arguments they are passed as do).
  HostTensor(const HostTensor &) = default;
  HostTensor &operator=(const HostTensor &) = default;
  /// Moves leave `o` equal to HostTensor(): no data, rank 0, numel 0 (so get/set on it are a
  /// ShapeError, never a read through a null pointer).
  HostTensor(HostTensor &&o) noexcept { swap(o); }
  HostTensor &operator=(HostTensor &&o) noexcept {
    HostTensor taken(std::move(o));
    swap(taken);
    return *this;
  }
  ~HostTensor() = default;

  DataType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// Elements (product of the dims; 0 for a default-constructed tensor).
  int64_t numel() const { return numel_; }
  /// numel() * bytes per element (never overflows: checked at construction).
  int64_t size_bytes() const { return numel_ * bytes_of(dtype_); }
  void *data() { return data_.get(); }
  const void *data() const { return data_.get(); }
  template <class T> T *data_as() { return static_cast<T *>(data()); }
  template <class T> const T *data_as() const { return static_cast<const T *>(data()); }

  /// Element `i` (flat, row-major) as double: fp16/bf16 widened exactly, ints converted. Throws
  /// ShapeError naming the index and the range [0, numel()) when `i` is outside it.
  double get(int64_t i, std::source_location loc = std::source_location::current()) const;
  /// Stores `v` into element `i`, converted to the dtype (floats round to nearest even, ints
  /// truncate toward zero and saturate, NaN gives 0). Throws ShapeError as get does.
  void set(int64_t i, double v, std::source_location loc = std::source_location::current());
  /// Fills with `v` (converted as by set).
  void fill(double v);

  /// The guard this tensor was allocated with.
  HostTensorGuard guard() const { return guard_; }
  /// True unless a canary byte before or after the data was overwritten (always true for
  /// HostTensorGuard::None, and after the data for Pages, where an overrun faults instead).
  bool guard_intact() const { return guard_damage().empty(); }
  /// "" when the guard is intact; otherwise what was overwritten, e.g. "2 canary bytes after the
  /// data of a [4, 8] DT_FP32 tensor overwritten (first at data + 128)".
  std::string guard_damage() const;

  /// The guard new tensors get: PTO_HOST_TENSOR_GUARD (read once), unless set_default_guard was
  /// called. Throws ArgumentError (at `loc`) for an unknown value of the variable.
  static HostTensorGuard default_guard(std::source_location loc = std::source_location::current());
  /// Sets the guard of tensors constructed from now on, in every thread (overrides the
  /// environment). Tensors already allocated keep theirs.
  static void set_default_guard(HostTensorGuard guard);

private:
  /// Exchanges every field with `o` (the one place that lists them for the moves).
  void swap(HostTensor &o) noexcept {
    std::swap(dtype_, o.dtype_);
    shape_.swap(o.shape_);
    std::swap(numel_, o.numel_);
    std::swap(guard_, o.guard_);
    std::swap(before_bytes_, o.before_bytes_);
    std::swap(after_bytes_, o.after_bytes_);
    data_.swap(o.data_);
  }
  void allocate(int64_t bytes, const std::source_location &loc);
  double load(int64_t i) const;
  void store(int64_t i, double v);
  void check_index(int64_t i, const char *op, const std::source_location &loc) const;

  DataType dtype_ = DT_FP32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  HostTensorGuard guard_ = HostTensorGuard::None;
  int64_t before_bytes_ = 0; ///< canary bytes right before the data
  int64_t after_bytes_ = 0;  ///< canary bytes right after the data (Canary only)
  std::shared_ptr<uint8_t[]> data_;
};

} // namespace pto
