// tensor.h - pto::Tensor, the value-semantics handle the user manipulates while a kernel is
// traced (as PyPTO `Tensor`), and pto::Operand, a tensor or scalar operand of an op.
#pragma once

#include "pto/dtype.h"
#include "pto/symbolic.h"
#include "pto/value.h"

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace pto {

/// The deepest Tensor::at reads may nest (a read whose indices, or whose view's offsets, read
/// elements): one more is a SymbolicError at the read.
inline constexpr uint32_t kMaxReadNesting = 64;

/// A tensor inside a traced kernel: a kernel parameter, an op's result, or a view. Cheap to copy;
/// copies name the same value. Valid only while its kernel is being traced.
class Tensor {
public:
  /// An empty handle (`is_empty()`); using it in an op throws ShapeError.
  Tensor() = default;
  /// Value `id` of `prog` (made by the tracer).
  Tensor(const ir::Program *prog, ir::ValueId id);

  // The accessors below throw ShapeError at the caller's line for an empty handle, or for a
  // tensor used outside the trace that created it (kept from an earlier pto::jit call).

  /// Shape; dims of dynamic kernel parameters are run-time SymbolicScalars.
  const std::vector<SymbolicScalar> &
  shape(std::source_location loc = std::source_location::current()) const;
  /// Dim `i` (negative counts from the end). Throws ShapeError when out of range.
  SymbolicScalar shape(int i, std::source_location loc = std::source_location::current()) const;
  /// Valid shape: how much of the tensor holds real data (reference §2.4). Run-time values.
  const std::vector<SymbolicScalar> &
  valid_shape(std::source_location loc = std::source_location::current()) const;
  DataType dtype(std::source_location loc = std::source_location::current()) const;
  int dim(std::source_location loc = std::source_location::current()) const;
  const std::string &name(std::source_location loc = std::source_location::current()) const;
  bool is_empty() const { return id_ == ir::kNoValue; }
  ir::ValueId id() const { return id_; }
  const ir::Program *program() const { return prog_; }
  /// The trace this tensor belongs to (unique per trace in the process).
  uint64_t trace_id() const { return trace_; }

  /// One element, `t.at({i, j})`, as a run-time SymbolicScalar, as PyPTO `GetTensorData`
  /// (`t[i, j]`): usable wherever a SymbolicScalar is (loop bounds, view offsets and valid
  /// shapes, shmem PE arguments, pto::cond), but not in tensor shapes (ShapeError when an op's
  /// output shape depends on it). One index per dim; indices may be symbolic; a concrete negative
  /// index counts from the end of a static dim, as PyPTO. Dtypes: int8, int16, int32, int64,
  /// uint8 (widened to int64) and bool (0/1); float elements are a DTypeError (cast first). The
  /// tensor is a kernel parameter or a local (or a view of one); shmem data and tokens are a
  /// DTypeError. The read happens where the scalar is evaluated, in program order: by the op
  /// that uses it (a loop's bounds when the loop starts, a cond at its body's entry), so it sees
  /// the element as written by the ops traced before that use. Do not use it in an op that
  /// writes the same tensor. Errors: ShapeError for a wrong index count or a concrete index out
  /// of range; at run time an index outside [0, dim) (for a view, also outside the viewed
  /// tensor) fails the call with RuntimeError naming the op's site, before any memory is read.
  /// Reads nested more than kMaxReadNesting deep are a SymbolicError.
  SymbolicScalar at(const std::vector<SymbolicScalar> &indices,
                    std::source_location loc = std::source_location::current()) const;

private:
  const ir::Program *prog_ = nullptr;
  ir::ValueId id_ = ir::kNoValue;
  uint64_t trace_ = 0;
};

/// A scalar operand with an optional explicit dtype, as PyPTO `Element`. An integer scalar takes
/// the tensor's dtype in mixed ops; a floating one with an integer tensor is a DTypeError.
struct Element {
  Element(DataType dt, double v) : scalar{v, ir::trunc_saturate_int64(v), false, dt} {}
  Element(DataType dt, int64_t v) : scalar{static_cast<double>(v), v, true, dt} {}
  ir::Scalar scalar;
};

/// A tensor or a scalar operand; built implicitly, and remembers the user's source line.
struct Operand {
  Operand(const Tensor &t, std::source_location l = std::source_location::current())
      : tensor(t), loc(l) {}
  Operand(double v, std::source_location l = std::source_location::current())
      : scalar(ir::Scalar{v, ir::trunc_saturate_int64(v), false, DT_BOTTOM}), loc(l) {}
  Operand(float v, std::source_location l = std::source_location::current())
      : Operand(static_cast<double>(v), l) {}
  Operand(int v, std::source_location l = std::source_location::current())
      : scalar(ir::Scalar{static_cast<double>(v), v, true, DT_BOTTOM}), loc(l) {}
  Operand(int64_t v, std::source_location l = std::source_location::current())
      : scalar(ir::Scalar{static_cast<double>(v), v, true, DT_BOTTOM}), loc(l) {}
  Operand(const Element &e, std::source_location l = std::source_location::current())
      : scalar(e.scalar), loc(l) {}
  /// A concrete SymbolicScalar (a static dim, `x.shape(1)`) as an integer scalar, as PyPTO
  /// passes `x.shape[1]` to `mul` (issue 13). A run-time one (a DYNAMIC dim, a loop index, a
  /// tensor element) is an ArgumentError at `l`: tensor ops take no run-time scalars.
  Operand(const SymbolicScalar &s, std::source_location l = std::source_location::current());
  bool is_tensor() const { return !scalar.has_value(); }
  Tensor tensor;
  std::optional<ir::Scalar> scalar;
  std::source_location loc;
};

} // namespace pto
