// lower_elementwise.h - Vector code for the elementwise ops of the op catalogue (ir::OpKind Exp2
// .. Ge): transcendentals through SLEEF's vector functions, composite activations, rounding,
// predicates, compares, logical/bitwise ops, shifts and the floored/truncated remainders. Used by
// lower_llvm's fused row passes; values are <W x T> in the compute type (float for fp16/bf16,
// i8 0/1 for DT_BOOL).
#pragma once

#include "pto/ir/program.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <vector>

namespace pto::codegen {

/// What the elementwise lowering needs from the function being built.
struct VecMath {
  llvm::IRBuilder<> &B;
  llvm::Module &M;
  bool avx512 = false; ///< host has AVX-512F: SLEEF's f16/d8 variants, else avx2 f8/d4
  /// Emits "fail the call with an integer division by zero unless `ok`" (pto_rt_fail kind 1).
  std::function<void(llvm::Value *ok)> fail_div_zero_unless;
};

/// Calls SLEEF function `fn` at accuracy `acc` (a row of sleef_functions(), vector_math.h) on
/// float or double vectors of any width, split into calls of the host level's native width and
/// rejoined. The name is sleef_name()'s, which the JIT binds; (fn, acc) outside the table throws
/// InternalError.
llvm::Value *sleef_call(VecMath &vm, const char *fn, const char *acc,
                        const std::vector<llvm::Value *> &args);

/// A catalogue unary op on `x` (compute type of `in_dt`). Bool results are i8 0/1 vectors.
llvm::Value *lower_unary_ext(VecMath &vm, const ir::Op &op, llvm::Value *x, DataType in_dt);

/// A catalogue binary op on operands of dtype `dt`. `mask` marks live lanes (null: all); a
/// zero integer divisor in a live lane fails the call.
llvm::Value *lower_binary_ext(VecMath &vm, const ir::Op &op, llvm::Value *a, llvm::Value *b,
                              DataType dt, llvm::Value *mask);

} // namespace pto::codegen
