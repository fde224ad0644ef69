// interpreter.h - Internal to the reference interpreter (interpreter*.cpp): the per-call state
// `Run` and the element addressing it shares between the op families. See interpreter.cpp for
// the semantics the interpreter (and the LLVM lowering) implement.
#pragma once

#include "pto/element.h"
#include "pto/ir/program.h"
#include "pto/runtime/abi.h"

#include "passes/compile.h"
#include "passes/sites.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace pto::codegen::interp {

/// Row-major element strides of a concrete shape.
inline std::vector<int64_t> row_major(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t dot(const std::vector<int64_t> &idx, const std::vector<int64_t> &strides) {
  int64_t s = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    s += idx[i] * strides[i];
  return s;
}

/// Where a value's elements are during one op: its root storage, row-major root strides, and
/// for views the evaluated window offsets.
struct Ref {
  uint8_t *root = nullptr;
  DataType dt = DT_FP32;
  int64_t esize = 0;
  std::vector<int64_t> shape;      ///< the value's own shape, evaluated
  std::vector<int64_t> root_shape; ///< the root's shape
  std::vector<int64_t> strides;    ///< root strides, elements
  std::vector<int64_t> offsets;    ///< views only (empty otherwise)
  int64_t lin0 = 0;                ///< linear element offset of the window origin

  uint8_t *at(const std::vector<int64_t> &idx) const {
    return root + (lin0 + dot(idx, strides)) * esize;
  }
};

// Element conversions (pto/element.h).
using element::load_f;
using element::load_i;
using element::round_scalar;
using element::store_f;
using element::store_i;

/// The state of one call on one PE. Everything mutable lives here, so many PEs may run one
/// interpreter at the same time. Every member returns a pto_status; a fault is recorded in the
/// context through the ABI first.
class Run {
public:
  /// A call of `p`, whose ops `sites` numbers (PlannedProgram::sites).
  Run(const ir::Program &p, const SiteTable &sites, pto_ctx *ctx, void *const *args,
      const int64_t *dims);
  /// Runs `ops` in program order; stops at the first failing op.
  int32_t exec(const std::vector<ir::Op> &ops);
  /// The site of the op running (or that ran last).
  int32_t site() const { return site_; }

private:
  int32_t exec_op(const ir::Op &op);
  /// Evaluates `s`; with `overflow`, also sets *overflow when its arithmetic overflowed int64.
  int32_t eval(const SymbolicScalar &s, int64_t &out, bool *overflow = nullptr);
  int32_t eval_all(const std::vector<SymbolicScalar> &s, std::vector<int64_t> &out);
  /// Resolves the storage of value `id`, allocating (zeroed) locals on first use.
  int32_t ref(ir::ValueId id, Ref &out);
  /// Allocates the zeroed storage of local `root` (its shape checked, see run_checks.h).
  int32_t allocate(const ir::Value &root);
  /// Clamped valid extents of value `id` whose shape is `shape`.
  int32_t valid_of(ir::ValueId id, const std::vector<int64_t> &shape, std::vector<int64_t> &out);
  /// Fails (PTO_FAIL_VIEW_BOUNDS) when a view's window of extents `ext` lies outside its root.
  int32_t check_window(const Ref &r, const std::vector<int64_t> &ext);
  /// Records fault `kind` at the running op's site (pto_rt_fail) and returns its status.
  int32_t fail(pto_fail_kind kind, int64_t a, int64_t b) {
    return pto_rt_fail(ctx_, kind, site_, a, b);
  }

  // interpreter_compute.cpp
  int32_t unary(const ir::Op &op);
  int32_t binary(const ir::Op &op);
  int32_t select(const ir::Op &op);
  int32_t reduce(const ir::Op &op);
  int32_t full(const ir::Op &op);
  int32_t assemble(const ir::Op &op);
  // interpreter_standalone.cpp
  int32_t standalone(const ir::Op &op);
  // interpreter_shmem.cpp
  int32_t shmem_put(const ir::Op &op);
  int32_t shmem_get(const ir::Op &op);
  int32_t shmem_signal_wait(const ir::Op &op);
  int32_t shmem_clear(const ir::Op &op);
  /// Evaluates the PE and view offsets of shmem put/get `op` into `s`, checking the PE is in the
  /// group (kind 3) and the window lies inside the data (kind 4).
  int32_t shmem_target(const ir::Op &op, const ir::ShmemInfo &s, int64_t &pe,
                       std::vector<int64_t> &offs);
  int32_t check_shmem_window(const std::vector<int64_t> &data, const std::vector<int64_t> &offs,
                             const std::vector<int64_t> &shape);
  int32_t shmem_clear_signal(const ir::Op &op);
  /// Evaluates the window offsets `offs` and slot row `row` of a signal/wait over geometry `g` of
  /// `s` and checks them: the window inside the data (kind 4), the row a PE (kind 3), the window
  /// tile-aligned (kind 6).
  int32_t check_slots(const ir::ShmemInfo &s, const ir::SlotGeometry &g,
                      const std::vector<SymbolicScalar> &offs_sym, const SymbolicScalar &row_sym,
                      std::vector<int64_t> &offs, int64_t &row);
  int32_t shmem_put_signal(const ir::Op &op);
  int32_t shmem_wait_set(const ir::Op &op);
  int32_t shmem_atomic(const ir::Op &op);
  // interpreter_matmul.cpp
  int32_t matmul(const ir::Op &op);
  // interpreter.cpp
  int32_t loop(const ir::Op &op);
  int32_t paths(const ir::Op &op);
  int32_t check(const ir::Op &op);
  /// The value of a SymKind::TensorElement symbol at evaluated indices `idx` (bounds-checked:
  /// PTO_FAIL_INDEX when out of range).
  int32_t read_element(const SymExpr &e, const std::vector<int64_t> &idx, int64_t &out);
  int32_t library(const ir::Op &op);

  const ir::Program &p_;
  const SiteTable &sites_;
  pto_ctx *ctx_;
  void *const *args_;
  const int64_t *dims_;
  std::vector<int64_t> dim_base_; ///< per param index: first entry in dims_
  std::vector<int64_t> loop_idx_;
  /// Per loop id, the bounds evaluated when the loop last started (is_loop_begin/end).
  std::vector<int64_t> loop_start_, loop_stop_, loop_step_;
  std::vector<std::vector<uint8_t>> local_; ///< per value id: local storage
  std::vector<std::vector<int64_t>> local_shape_;
  std::vector<char> allocated_;
  SymbolEnv env_;
  ElementEnv elements_;
  int32_t site_ = -1;
};

} // namespace pto::codegen::interp
