// lower_reduce.h - Reductions (OpKind Sum, Prod, Amax, Amin): the vector steps the fused row
// passes accumulate with (identity, one step, the horizontal finish), and the standalone lowering
// of a reduction over a non-last axis (scalar loops over the kept dims, an inner loop over the
// axis). fp16/bf16 accumulate in fp32, as the interpreter does; an empty float sum is +0.
#pragma once

#include "llvm/kernel_builder.h"

namespace pto::codegen {

/// The identity of reduction `k` over `dt`, splat in W lanes of the compute type: -0 for a float
/// sum (-0 + x is x for every x), 1, or -inf/+inf (the dtype's min/max for ints).
llvm::Value *reduce_identity(KernelBuilder &kb, ir::OpKind k, DataType dt);

/// One step acc = acc (op) v, lane-wise (Amax/Amin of floats propagate NaN: llvm.maximum).
llvm::Value *reduce_step(KernelBuilder &kb, ir::OpKind k, llvm::Value *acc, llvm::Value *v,
                         DataType dt);

/// The lanes of `acc` reduced to one scalar (float sum and product reassociated).
llvm::Value *reduce_horizontal(KernelBuilder &kb, ir::OpKind k, llvm::Value *acc, DataType dt);

/// A float sum accumulates from -0 (reduce_identity: only -0 addends sum to -0, as IEEE 754 and
/// NumPy), but an empty one is +0 (reduce_ops.h; the interpreter's rule too): `v` (a sum's scalar
/// value), or +0 when end <= begin. Other reductions and ints: `v`.
llvm::Value *empty_sum_is_plus_zero(KernelBuilder &kb, ir::OpKind k, DataType dt, llvm::Value *end,
                                    llvm::Value *begin, llvm::Value *v);

/// Emits reduction `op` over its axis `op.axis` (not the last, or not fused) at the builder's
/// insertion point: one output element per kept index, rounded once to the output dtype.
void lower_reduce_axis(KernelBuilder &kb, const ir::Op &op);

} // namespace pto::codegen
