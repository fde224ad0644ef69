// run_checks.h - The run-time size checks both executors make (the interpreter and the LLVM
// lowering), with one wording: loop bounds whose evaluation overflows int64, and results whose
// run-time shape overflows or needs more than 2^62 bytes (pto/size_math.h). Messages are built at
// compile time from the traced expressions, so both executors report the same text.
#pragma once

#include "pto/dtype.h"
#include "pto/ir/program.h"
#include "pto/runtime/abi.h"
#include "pto/size_math.h"

#include <string>

namespace pto::codegen {

/// The detail of the RuntimeError when a loop bound (`which`: "start", "stop" or "step") is
/// evaluated at run time and a `+`, `-`, `*` or unary `-` in it overflows int64.
inline std::string loop_bound_overflow(const char *which, const SymbolicScalar &s) {
  return std::string(which) + " `" + s.str() + "` overflows int64 at run time";
}

/// The message (ir::format_check: `{}` is the step's value) of the RuntimeError when a loop's
/// run-time step `step` is <= 0 at loop entry (pto/control.h; no iteration runs). A concrete
/// step <= 0 is a SymbolicError when the loop is traced.
inline std::string loop_step_message(const SymbolicScalar &step) {
  return "step `" + ir::escape_check(step.str()) +
         "` is {} at run time: a loop step must be > 0 (a step <= 0 would run no iteration)";
}

/// The detail of the ShapeError when the run-time shape of result `v` overflows int64 or needs
/// more than 2^62 bytes (zero dims counted as 1, as at trace time).
inline std::string result_size_overflow(const ir::Value &v) {
  return "result shape " + str(v.shape) + " of " + name(v.dtype) +
         " overflows int64 or needs more than " + std::to_string(kMaxExtent) +
         " bytes at run time (2^62, the largest tensor ptojit supports)";
}

/// The detail of the ShapeError when the condition `holds` of a run-time Check op (a window or
/// valid-shape rule, dsl/src/shape_rules.h) overflows int64 while it is evaluated: a wrapped
/// offset or extent could otherwise land back in range and pass the check.
inline std::string check_overflow(const SymbolicScalar &holds) {
  return "the run-time check `" + holds.str() +
         "` overflows int64 (an offset, extent or valid size past 2^63)";
}

/// The message (ir::format_check: `{}` is the index, then the bound) of the RuntimeError when
/// element read `e` (Tensor::at of value `e.a` of `p`) finds its index in dim `d` out of range
/// at run time: against the value's dim, or, `through_view`, the view's offset plus the index
/// against the viewed tensor's dim. `evaluated_by` is the site name ("file:line: op") of the op
/// whose scalar read the element. The error itself points at the Tensor::at call
/// (SiteTable::read_site). The wording is that of the trace-time error of a concrete index.
inline std::string element_index_message(const ir::Program &p, const SymExpr &e, size_t d,
                                         bool through_view, const std::string &evaluated_by) {
  const ir::Value &v = p.value(static_cast<ir::ValueId>(e.a));
  std::string by = evaluated_by;
  if (auto cut = by.rfind(": "); cut != std::string::npos)
    by = "`" + by.substr(cut + 2) + "` at " + by.substr(0, cut);
  std::string msg = through_view ? "index {} (the view's offset plus the index) is out of range "
                                   "[0, {}) in dim " +
                                       std::to_string(d) + " of tensor '" +
                                       ir::escape_check(p.root(v.id).name) +
                                       "', read through view '" + ir::escape_check(v.name) + "'"
                                 : "index {} is out of range [0, {}) in dim " + std::to_string(d) +
                                       " of tensor '" + ir::escape_check(v.name) + "'";
  return by.empty() ? msg : msg + " (read at run time for " + ir::escape_check(by) + ")";
}

/// The pto_error_class a failing Check op raises, for its message and for check_overflow
/// (ir::Op::check_error: ShapeError, or DistributedError for shmem windows and PEs).
inline int32_t check_error_class(const ir::Op &check) {
  switch (check.check_error) {
  case ir::CheckError::Shape:
    break;
  case ir::CheckError::Distributed:
    return PTO_ERROR_DISTRIBUTED;
  case ir::CheckError::Agreed:
    return PTO_ERROR_DISTRIBUTED_AGREED;
  }
  return PTO_ERROR_SHAPE;
}

} // namespace pto::codegen
