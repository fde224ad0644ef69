// value.h - The few IR handles the user API carries: a traced value's id and a scalar operand's
// value. The IR itself (ir::Program, its ops and values, the recorder, printer and verifier) is
// internal to ptojit: dsl/internal/pto/ir/, on no user's include path.
#pragma once

#include "pto/dtype.h"
#include "pto/element.h"

#include <cstdint>

namespace pto::ir {

/// The traced program a Tensor belongs to (internal: pto/ir/program.h).
struct Program;

/// A value's index in its program's values.
using ValueId = int32_t;
/// The id of no value (an empty Tensor).
inline constexpr ValueId kNoValue = -1;

/// A typed scalar operand (PyPTO `Element`). `dtype` DT_BOTTOM means "the tensor's dtype".
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_int = false;
  DataType dtype = DT_BOTTOM;
};

/// `v` truncated toward zero and saturated to int64, NaN -> 0: the integer companion `i` of a
/// floating scalar the user wrote (a plain static_cast is undefined behaviour for 1e30, inf or
/// NaN). The rule of a float -> int64 store (pto/element.h).
inline int64_t trunc_saturate_int64(double v) { return element::from_double<int64_t>(v); }

} // namespace pto::ir
