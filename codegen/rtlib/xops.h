// xops.h - Library ops (ir::OpFamily::Library: indexing, sort and selection, special functions):
// precompiled C++ routines that generated code calls through `pto_rt_xop` and that the reference
// interpreter calls too. Each op sees its tensors as strided windows (XTensor): inputs first,
// then outputs, in the op's order. Data-dependent work (sorting, scattering by index) gains
// nothing from being re-emitted as LLVM IR per kernel; tests check these routines against
// independent plain C++ (tests/codegen), not against the interpreter.
#pragma once

#include "pto/dtype.h"
#include "pto/ir/program.h"
#include "pto/runtime/abi.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pto::codegen {

inline constexpr int kXMaxRank = 8;

/// One tensor operand of a library op: the window's element 0, its dtype, its shape, its valid
/// extents (clamped to [0, shape]) and the element strides of its storage.
struct XTensor {
  void *base;
  int64_t dtype; ///< pto::DataType ordinal
  int64_t rank;
  int64_t shape[kXMaxRank];
  int64_t valid[kXMaxRank];
  int64_t strides[kXMaxRank];
};

/// One call of a library op. Layout is fixed: generated code builds it on the stack.
struct XCall {
  pto_ctx *ctx;
  int64_t site;     ///< for pto_rt_fail
  int64_t kind;     ///< ir::OpKind ordinal
  int64_t n_inputs; ///< tensors[0 .. n_inputs) are inputs, the rest outputs
  int64_t n_tensors;
  const XTensor *tensors;
  int64_t axis;    ///< ir::Op::axis
  int64_t keepdim; ///< ir::Op::keepdim
  int64_t n_ints;
  const int64_t *ints; ///< ir::Op::ints
  int64_t n_reals;
  const double *reals; ///< ir::Op::reals, then the op's scalar (as a double) when it has one
  int64_t has_scalar;
  int64_t scalar_i; ///< the scalar's integer value (is_int) or its value truncated
};

// The layouts generated code builds (llvm/abi_decls.cpp derives the LLVM types from these
// fields and checks them against offsetof): fixed here so that a change is a deliberate ABI
// change, not a silent one.
static_assert(std::is_standard_layout_v<XTensor> && std::is_standard_layout_v<XCall>);
static_assert(sizeof(XTensor) == 24 + 3 * 8 * kXMaxRank && alignof(XTensor) == 8 &&
                  offsetof(XTensor, base) == 0 && offsetof(XTensor, dtype) == 8 &&
                  offsetof(XTensor, rank) == 16 && offsetof(XTensor, shape) == 24 &&
                  offsetof(XTensor, valid) == 24 + 8 * kXMaxRank &&
                  offsetof(XTensor, strides) == 24 + 16 * kXMaxRank,
              "XTensor layout changed");
static_assert(sizeof(XCall) == 112 && alignof(XCall) == 8 && offsetof(XCall, ctx) == 0 &&
                  offsetof(XCall, site) == 8 && offsetof(XCall, kind) == 16 &&
                  offsetof(XCall, n_inputs) == 24 && offsetof(XCall, n_tensors) == 32 &&
                  offsetof(XCall, tensors) == 40 && offsetof(XCall, axis) == 48 &&
                  offsetof(XCall, keepdim) == 56 && offsetof(XCall, n_ints) == 64 &&
                  offsetof(XCall, ints) == 72 && offsetof(XCall, n_reals) == 80 &&
                  offsetof(XCall, reals) == 88 && offsetof(XCall, has_scalar) == 96 &&
                  offsetof(XCall, scalar_i) == 104,
              "XCall layout changed");

/// XCall::scalar_i of a floating scalar: truncated, 0 when not finite or out of int64 range.
inline int64_t xop_scalar_int(double f) {
  return f == f && f > -9.2e18 && f < 9.2e18 ? static_cast<int64_t>(f) : 0;
}

/// Runs a library op. Returns PTO_OK, or PTO_ERR with the error recorded through pto_rt_fail
/// (e.g. kind 2 "index a out of range [0, b)").
extern "C" int32_t pto_rt_xop(const XCall *call);

/// Element access shared by the routines: loads widen exactly (floats to double, ints to
/// int64), stores round floats to nearest even (fp16/bf16 once) and wrap ints.
double x_load_f(const XTensor &t, int64_t lin);
int64_t x_load_i(const XTensor &t, int64_t lin);
void x_store_f(const XTensor &t, int64_t lin, double v);
void x_store_i(const XTensor &t, int64_t lin, int64_t v);
/// Byte address of element `idx` (rank entries) of `t`.
void *x_addr(const XTensor &t, const int64_t *idx);
/// Linear element offset of index `idx` in `t`'s storage.
int64_t x_lin(const XTensor &t, const int64_t *idx);

// One routine per library kind (ir::LibraryKind), which pto_rt_xop picks by `call.kind`; the
// semantics are the kind's (op_kinds.def) and its DSL function's. xops_index.cpp:
int32_t xop_gather(const XCall &call);
int32_t xop_index_select(const XCall &call);
int32_t xop_scatter(const XCall &call);
int32_t xop_index_add(const XCall &call);
int32_t xop_index_put(const XCall &call);
int32_t xop_one_hot(const XCall &call);
int32_t xop_segment_reduce(const XCall &call);
// xops_sort.cpp:
int32_t xop_sort(const XCall &call);
int32_t xop_topk(const XCall &call);
int32_t xop_unique(const XCall &call);
// xops_special.cpp:
int32_t xop_bessel_i0e(const XCall &call);
int32_t xop_bessel_i1e(const XCall &call);

} // namespace pto::codegen
