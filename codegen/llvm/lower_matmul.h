// lower_matmul.h - LLVM IR for OpKind::Matmul (pto/matmul.h): a packed, register-blocked GEMM
// blocked by the op's cube tile. Called by lower_llvm's emit_region for each matmul op (always
// standalone: fuse.cpp never groups it, so its operands and result have storage).
//
// Blocking (GotoBLAS order, per batch element): output columns in nL1 blocks, rows in mL1 blocks
// (rounded up to the 6-row register block), K in kL1 chunks. Per (row block, K chunk) the A and
// B chunks are packed into contiguous panels (fp16/bf16 widened to fp32, int8 to int16 pairs,
// transposes resolved, tails zero-padded), then a 6 x 16 micro-kernel keeps the C block in 12
// <8 x float> (or <8 x i32>) registers: per k one broadcast of A and two FMAs per row (int8:
// vpmaddwd on k pairs). Partial sums of a multi-chunk K live in an fp32/int32 block buffer; the
// last chunk applies bias, relu and the rounding to the output dtype in the store, masked on the
// column tail and skipped past the row tail.
#pragma once

#include "pto/ir/program.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <vector>

namespace pto::codegen {

/// Element 0 of a value's window and its root's row-major element strides.
struct MatmulAddr {
  llvm::Value *base = nullptr;
  std::vector<llvm::Value *> strides;
};

/// What the matmul lowering needs from the function being built.
struct MatmulEnv {
  llvm::IRBuilder<> &B;
  llvm::Module &M;
  llvm::Function *F;
  llvm::Value *ctx;                 ///< the kernel's pto_ctx* (for pto_rt_alloc)
  llvm::Instruction *entry_point;   ///< where once-per-call scratch allocations go
  std::function<MatmulAddr(ir::ValueId)> addr;             ///< checks view bounds as it goes
  std::function<llvm::Value *(const SymbolicScalar &)> sym; ///< i64 value of a symbolic scalar
};

/// Emits `op` (OpKind::Matmul of program `p`) at the builder's insertion point.
void lower_matmul(MatmulEnv &env, const ir::Program &p, const ir::Op &op);

} // namespace pto::codegen
