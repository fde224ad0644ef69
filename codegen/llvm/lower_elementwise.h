// lower_elementwise.h - Vector code for the elementwise ops (ir::OpFamily Unary and Binary): the
// arithmetic, transcendentals through SLEEF's vector functions, composite activations, rounding,
// predicates, compares, logical/bitwise ops, shifts and the floored/truncated remainders. Used by
// the fused row passes (lower_fused.h); values are <W x T> in the compute type (dtype_codec.h:
// float for fp16/bf16, i8 0/1 for DT_BOOL).
#pragma once

#include "llvm/kernel_builder.h"

#include <vector>

namespace pto::codegen {

/// Calls SLEEF function `fn` at accuracy `acc` (a row of sleef_functions(), vector_math.h) on
/// float or double vectors of any width, split into calls of the target level's native width
/// and rejoined. The name is sleef_name()'s, which the JIT binds; (fn, acc) outside the table
/// throws InternalError.
llvm::Value *sleef_call(KernelBuilder &kb, const char *fn, const char *acc,
                        const std::vector<llvm::Value *> &args);

/// Unary op `op` on `x` (compute type of `in_dt`); the result is in the compute type of `out_dt`
/// (Cast) or `in_dt`; bool results are i8 0/1 vectors.
llvm::Value *lower_unary(KernelBuilder &kb, const ir::Op &op, llvm::Value *x, DataType in_dt,
                         DataType out_dt);

/// Binary op `op` on operands of dtype `dt`. `mask` marks live lanes (null: all); a zero integer
/// divisor in a live lane fails the call (PTO_FAIL_DIV_ZERO).
llvm::Value *lower_binary(KernelBuilder &kb, const ir::Op &op, llvm::Value *a, llvm::Value *b,
                          DataType dt, llvm::Value *mask);

} // namespace pto::codegen
