// llvm_loops.h - The counted loop every lowering emits: for (i = start; i < end; i += step),
// an i64 phi in a head block (signed compare), the body built by a callback.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <string>

namespace pto::codegen {

/// Emits the loop at B's insertion point and leaves B at the loop's exit block.
inline void emit_for_loop(llvm::IRBuilder<> &B, llvm::Function *F, llvm::Value *start,
                          llvm::Value *end, llvm::Value *step,
                          const std::function<void(llvm::Value *)> &body, const char *name) {
  auto &C = B.getContext();
  auto *pre = B.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(C, std::string(name) + ".head", F);
  auto *bb = llvm::BasicBlock::Create(C, std::string(name) + ".body", F);
  auto *exit = llvm::BasicBlock::Create(C, std::string(name) + ".exit", F);
  B.CreateBr(head);
  B.SetInsertPoint(head);
  auto *phi = B.CreatePHI(B.getInt64Ty(), 2, name);
  phi->addIncoming(start, pre);
  B.CreateCondBr(B.CreateICmpSLT(phi, end), bb, exit);
  B.SetInsertPoint(bb);
  body(phi);
  phi->addIncoming(B.CreateAdd(phi, step), B.GetInsertBlock());
  B.CreateBr(head);
  B.SetInsertPoint(exit);
}

} // namespace pto::codegen
