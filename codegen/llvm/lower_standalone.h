// lower_standalone.h - LLVM IR for the standalone ops (ir::OpFamily::Standalone of program.h:
// argmax/argmin, cumsum/cumprod, arange, uniform/normal, reshape, expand, permute, concat, tile,
// pad, tril/triu). Each becomes scalar loop nests over its output's valid region (LLVM's loop
// vectorizer takes what it can), with exactly the semantics of interpreter_standalone.cpp.
// Called by lower_llvm's emit_region; fuse.cpp never groups these ops, so their operands and
// result have storage.
#pragma once

#include "pto/ir/program.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <vector>

namespace pto::codegen {

/// Element 0 of a value's window and its root's row-major element strides (i64).
struct StandaloneAddr {
  llvm::Value *base = nullptr;
  std::vector<llvm::Value *> strides;
};

/// What the standalone lowering needs from the function being built.
struct StandaloneEnv {
  llvm::IRBuilder<> &B;
  llvm::Module &M;
  llvm::Function *F;
  llvm::Instruction *entry_point;                  ///< allocas go before it (in the entry block)
  std::function<StandaloneAddr(ir::ValueId)> addr; ///< checks view bounds as it goes
  std::function<llvm::Value *(const SymbolicScalar &)> sym; ///< i64 value of a symbolic scalar
};

/// Emits `op` (a Standalone-family op of program `p`) at the builder's insertion point.
void lower_standalone(StandaloneEnv &env, const ir::Program &p, const ir::Op &op);

} // namespace pto::codegen
