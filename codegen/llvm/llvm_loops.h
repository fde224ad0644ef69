// llvm_loops.h - The counted loop every lowering emits: for (i = start; i < end; i += step),
// with the trip count computed up front so the index never wraps: an i64 counter k over
// [0, trips) in a head block and i = start + k * step, the body built by a callback. Also the
// join of two paths (emit_join_phi), which every branching lowering ends with.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <functional>
#include <string>

namespace pto::codegen {

/// The number of iterations of for (i = start; i < end; i += step): 0 when start >= end or
/// step <= 0, else ceil((end - start) / step) in unsigned arithmetic, which is exact for every
/// int64 start < end and step > 0 (end - start fits uint64) and so never overflows, however
/// close the bounds are to INT64_MIN / INT64_MAX. The interpreter's Run::loop counts the same.
inline llvm::Value *emit_trip_count(llvm::IRBuilder<> &B, llvm::Value *start, llvm::Value *end,
                                    llvm::Value *step) {
  auto *zero = B.getInt64(0), *one = B.getInt64(1);
  llvm::Value *runs = B.CreateAnd(B.CreateICmpSLT(start, end), B.CreateICmpSGT(step, zero));
  llvm::Value *span = B.CreateSub(end, start);        // (end - start) as uint64
  llvm::Value *div = B.CreateSelect(runs, step, one); // no division by <= 0
  llvm::Value *n = B.CreateAdd(B.CreateUDiv(B.CreateSub(span, one), div), one);
  return B.CreateSelect(runs, n, zero);
}

/// Ends B's block with a branch to `join` and returns, at the start of `join`, the phi of `a`
/// (coming from `from`) and `b` (coming from the block B was in).
inline llvm::PHINode *emit_join_phi(llvm::IRBuilder<> &B, llvm::BasicBlock *join, llvm::Value *a,
                                    llvm::BasicBlock *from, llvm::Value *b) {
  auto *end = B.GetInsertBlock();
  B.CreateBr(join);
  B.SetInsertPoint(join);
  auto *phi = B.CreatePHI(a->getType(), 2);
  phi->addIncoming(a, from);
  phi->addIncoming(b, end);
  return phi;
}

/// Emits the loop at B's insertion point and leaves B at the loop's exit block. A step <= 0 runs
/// no iteration.
inline void emit_for_loop(llvm::IRBuilder<> &B, llvm::Function *F, llvm::Value *start,
                          llvm::Value *end, llvm::Value *step,
                          const std::function<void(llvm::Value *)> &body, const char *name) {
  auto &C = B.getContext();
  llvm::Value *trips = emit_trip_count(B, start, end, step);
  auto *pre = B.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(C, std::string(name) + ".head", F);
  auto *bb = llvm::BasicBlock::Create(C, std::string(name) + ".body", F);
  auto *exit = llvm::BasicBlock::Create(C, std::string(name) + ".exit", F);
  B.CreateBr(head);
  B.SetInsertPoint(head);
  auto *k = B.CreatePHI(B.getInt64Ty(), 2, std::string(name) + ".k");
  auto *phi = B.CreatePHI(B.getInt64Ty(), 2, name);
  k->addIncoming(B.getInt64(0), pre);
  phi->addIncoming(start, pre);
  B.CreateCondBr(B.CreateICmpULT(k, trips), bb, exit);
  B.SetInsertPoint(bb);
  body(phi);
  // After the last iteration i + step may pass INT64_MAX; it is never used (the count ends
  // the loop), so the add wraps harmlessly.
  phi->addIncoming(B.CreateAdd(phi, step), B.GetInsertBlock());
  k->addIncoming(B.CreateAdd(k, B.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true),
                 B.GetInsertBlock());
  B.CreateBr(head);
  B.SetInsertPoint(exit);
}

} // namespace pto::codegen
