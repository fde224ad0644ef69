// trace_checks.h - Operand checks and result values shared by the op tracing files of
// shape_ops.cpp and reduce_ops.cpp (internal to dsl/). Errors name the op and the caller's line.
#pragma once

#include "pto/ir/recorder.h"
#include "pto/ops.h"
#include "pto/size_math.h"

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <source_location>
#include <string>
#include <vector>

namespace pto::trace {

using SrcLoc = std::source_location;

/// The scalar of an operand that is not a tensor (the caller checked Operand::is_tensor()).
/// Throws InternalError when it is a tensor (a ptojit bug).
inline const ir::Scalar &scalar_of(const Operand &o, const char *op) {
  if (!o.scalar)
    throw InternalError("<trace>", op, "the operand is a tensor, not a scalar");
  return *o.scalar;
}

inline void check_dtype_supported(DataType dt, const char *op, const SrcLoc &loc) {
  if (!is_supported(dt))
    throw DTypeError(loc, op, "dtype " + name(dt) + " is not supported by ptojit");
}

/// The value of a data operand: not a token, not shmem data, rank 1..4, a supported dtype.
inline const ir::Value &data_operand(ir::Recorder &r, const Tensor &t, const char *op,
                                     const SrcLoc &loc) {
  ir::ValueId id = r.use(t, op, loc);
  const ir::Value &v = r.program().value(id);
  if (v.kind == ir::ValueKind::Token)
    throw DTypeError(
        loc, op, "tensor '" + v.name + "' is a dependency token; pass it as `pred`, not as data");
  if (v.shmem >= 0)
    throw DTypeError(loc, op,
                     "tensor '" + v.name +
                         "' is shmem data; read it with pto::distributed::shmem_get first");
  if (v.shape.empty() || v.shape.size() > 4)
    throw ShapeError(
        loc, op,
        fmt::format("tensor '{}' has rank {}; ops take rank 1 to 4", v.name, v.shape.size()));
  check_dtype_supported(v.dtype, op, loc);
  return v;
}

/// Checks that a result of `shape` and `dt` fits the size limit (pto/size_math.h: at most 2^62
/// bytes, zero dims counted as 1): over its static dims at trace time (ShapeError naming `op`);
/// dynamic dims are checked when the kernel runs and sizes the result.
inline void check_result_size(const std::vector<SymbolicScalar> &shape, DataType dt, const char *op,
                              const SrcLoc &loc) {
  std::vector<int64_t> known;
  for (auto &d : shape)
    if (d.is_concrete() && d.concrete() >= 0)
      known.push_back(d.concrete());
  if (!dense_bytes(known, bytes_of(dt)))
    throw ShapeError(loc, op,
                     "result shape " + str(shape) + " of " + name(dt) + " needs more than " +
                         std::to_string(kMaxExtent) +
                         " bytes (2^62, the largest tensor ptojit supports; counting zero dims "
                         "as 1)");
}

/// `a * b` and `a + b` for a result dim (`what` names it, e.g. "dim 0"): checked when both are
/// concrete (ShapeError naming `op` past 2^62); the symbolic expression otherwise, whose value is
/// checked when the kernel runs and sizes the result.
inline SymbolicScalar dim_mul(const SymbolicScalar &a, const SymbolicScalar &b, const char *what,
                              const char *op, const SrcLoc &loc) {
  if (a.is_concrete() && b.is_concrete())
    return checked_extent_mul(a.concrete(), b.concrete(), what, op, loc);
  return a * b;
}
inline SymbolicScalar dim_add(const SymbolicScalar &a, const SymbolicScalar &b, const char *what,
                              const char *op, const SrcLoc &loc) {
  if (a.is_concrete() && b.is_concrete())
    return checked_extent_add(a.concrete(), b.concrete(), what, op, loc);
  return a + b;
}

/// A new local value (the op's result).
inline Tensor make_local(ir::Recorder &r, DataType dt, std::vector<SymbolicScalar> shape,
                         std::vector<SymbolicScalar> valid) {
  ir::Value v;
  v.kind = ir::ValueKind::Local;
  v.dtype = dt;
  v.shape = std::move(shape);
  v.valid = std::move(valid);
  return r.tensor(r.add_value(std::move(v)));
}

/// `axis` normalized to [0, rank) (negative counts from the end); ShapeError otherwise.
inline int norm_axis(int axis, size_t rank, const char *op, const SrcLoc &loc,
                     const char *what = "axis") {
  int r = static_cast<int>(rank);
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw ShapeError(loc, op, fmt::format("{} {} is out of range for rank {}", what, axis, r));
  return a;
}

/// The scalar rule of ops.h: a scalar that becomes an element of an integer dtype (an integer
/// operand taking the tensor's dtype, the value of full/pad/...) must be representable there.
/// `v` (the value as written, after truncation toward zero) outside the range of `dt` (int8,
/// int16, int32, uint8; int64 takes every int64), or not finite, is a DTypeError naming `op`,
/// never a wrapped or saturated element. Floating dtypes and DT_BOOL (x != 0) take any value.
inline void check_int_element(double v, DataType dt, const char *op, const SrcLoc &loc) {
  int64_t lo = 0, hi = 0;
  switch (dt) {
  case DT_INT8:
    lo = INT8_MIN, hi = INT8_MAX;
    break;
  case DT_INT16:
    lo = INT16_MIN, hi = INT16_MAX;
    break;
  case DT_INT32:
    lo = INT32_MIN, hi = INT32_MAX;
    break;
  case DT_UINT8:
    lo = 0, hi = UINT8_MAX;
    break;
  case DT_INT64:
    lo = INT64_MIN, hi = INT64_MAX;
    break;
  default:
    return;
  }
  // -2^63 and 2^63 are exact doubles; every int64 bound below is exactly representable or
  // rounds to one of them, so the comparison in double is exact for the integral t.
  const double t = std::trunc(v);
  if (!std::isfinite(v) || t < static_cast<double>(lo) ||
      (dt == DT_INT64 ? t >= 0x1p63 : t > static_cast<double>(hi)))
    throw DTypeError(loc, op,
                     fmt::format("scalar {} does not fit {} (range [{}, {}]); cast the tensor "
                                 "to a wider dtype or use a value in range",
                                 v, name(dt), lo, hi));
}
/// The same for an integer scalar (exact for every int64).
inline void check_int_element(int64_t v, DataType dt, const char *op, const SrcLoc &loc) {
  if (dt == DT_INT64)
    return;
  check_int_element(static_cast<double>(v), dt, op, loc);
}

inline bool is_one(const SymbolicScalar &s) { return s.is_concrete() && s.concrete() == 1; }

/// pto::full reported as `op` (zeros, ones, full): checks and traces one Full op.
/// pto::assemble, its errors naming `op` (set_tensor_data stores through it).
void assemble_as(const char *op, const Tensor &x, const std::vector<SymbolicScalar> &offsets,
                 const Tensor &out, const SrcLoc &loc);
Tensor full_as(const char *op, const std::vector<SymbolicScalar> &shape, Element value,
               FullOptions opts, const SrcLoc &loc);
Tensor full_as(const char *op, const std::vector<SymbolicScalar> &shape, double value,
               DataType dtype, FullOptions opts, const SrcLoc &loc);

/// A one-element tensor [1] of floating dtype `dt` holding the run-time integer `n` (an arange
/// op with start n and step 0, cast): how mean and var divide by a run-time element count.
Tensor count_tensor(const SymbolicScalar &n, DataType dt, const SrcLoc &loc);

} // namespace pto::trace
