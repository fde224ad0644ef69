// trace_checks.h - Operand checks and result values shared by the op tracing files of
// shape_ops.cpp and reduce_ops.cpp (internal to dsl/). Errors name the op and the caller's line.
#pragma once

#include "pto/ir/recorder.h"

#include <fmt/format.h>
#include <source_location>
#include <string>
#include <vector>

namespace pto::trace {

using SrcLoc = std::source_location;

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

inline bool is_one(const SymbolicScalar &s) { return s.is_concrete() && s.concrete() == 1; }

/// A one-element tensor [1] of floating dtype `dt` holding the run-time integer `n` (an arange
/// op with start n and step 0, cast): how mean and var divide by a run-time element count.
Tensor count_tensor(const SymbolicScalar &n, DataType dt, const SrcLoc &loc);

} // namespace pto::trace
