// parallel_outline.cpp - See parallel_outline.h.
#include "llvm/parallel_outline.h"

#include "llvm/abi_decls.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/CodeExtractor.h>

#include <optional>
#include <unordered_set>

namespace pto::codegen {

namespace {

/// The blocks reachable from r.begin without passing r.end, begin first; empty when one of them
/// returns from the kernel or calls the runtime (a worker has no PE context of its own).
std::vector<llvm::BasicBlock *> region_blocks(const ParRegion &r) {
  std::vector<llvm::BasicBlock *> out{r.begin}, stack{r.begin};
  std::unordered_set<llvm::BasicBlock *> seen{r.begin, r.end};
  while (!stack.empty()) {
    llvm::BasicBlock *b = stack.back();
    stack.pop_back();
    if (llvm::isa<llvm::ReturnInst>(b->getTerminator()))
      return {};
    for (llvm::Instruction &i : *b)
      if (auto *call = llvm::dyn_cast<llvm::CallBase>(&i)) {
        const llvm::Function *callee = call->getCalledFunction();
        if (!callee || callee->getName().starts_with("pto_rt_"))
          return {};
      }
    for (llvm::BasicBlock *s : llvm::successors(b))
      if (seen.insert(s).second) {
        out.push_back(s);
        stack.push_back(s);
      }
  }
  return out;
}

/// Replaces the call `call` of outlined region `body` by pto_rt_parallel_for over a trampoline.
void dispatch(llvm::Function &f, llvm::Function &body, llvm::CallInst *call, const ParRegion &r) {
  llvm::LLVMContext &c = f.getContext();
  llvm::Module &m = *f.getParent();
  auto *i64 = llvm::Type::getInt64Ty(c);
  auto *ptr = llvm::PointerType::getUnqual(c);
  const unsigned n = call->arg_size();

  // Stack slots of the kernel that only the region uses become the body's own (one per thread);
  // a slot shared with the rest of the kernel keeps the region on one thread.
  bool shared_slot = false;
  std::vector<bool> own(n, false);
  llvm::IRBuilder<> E(&*body.getEntryBlock().getFirstInsertionPt());
  for (unsigned i = 0; i < n; ++i)
    if (auto *slot = llvm::dyn_cast<llvm::AllocaInst>(call->getArgOperand(i))) {
      if (!slot->hasOneUser()) {
        shared_slot = true;
        continue;
      }
      own[i] = true;
      body.getArg(i)->replaceAllUsesWith(
          E.CreateAlloca(slot->getAllocatedType(), slot->getArraySize(), slot->getName()));
    }

  // The environment: every argument of the call, then the strides of the per-worker scratch.
  std::vector<llvm::Type *> fields;
  std::vector<llvm::Value *> stride_of(n, nullptr);
  for (unsigned i = 0; i < n; ++i)
    fields.push_back(call->getArgOperand(i)->getType());
  for (unsigned i = 0; i < n; ++i)
    if (auto it = r.strides.find(call->getArgOperand(i)); it != r.strides.end()) {
      stride_of[i] = it->second;
      fields.push_back(i64);
    }
  auto *env_ty = llvm::StructType::get(c, fields);

  // void tramp(ptr env, i64 b, i64 e, i32 w): body(env's fields, with [b, e) and worker w's
  // scratch).
  auto *tramp_ty = llvm::FunctionType::get(llvm::Type::getVoidTy(c),
                                           {ptr, i64, i64, llvm::Type::getInt32Ty(c)}, false);
  auto *tramp = llvm::Function::Create(tramp_ty, llvm::GlobalValue::InternalLinkage,
                                       body.getName() + ".par", m);
  tramp->addFnAttr(llvm::Attribute::NoUnwind);
  {
    llvm::IRBuilder<> T(llvm::BasicBlock::Create(c, "entry", tramp));
    llvm::Value *env = tramp->getArg(0);
    llvm::Value *w = T.CreateZExt(tramp->getArg(3), i64);
    std::vector<llvm::Value *> args;
    unsigned next_stride = n;
    for (unsigned i = 0; i < n; ++i) {
      llvm::Value *a = call->getArgOperand(i);
      if (a == r.lo) {
        args.push_back(tramp->getArg(1));
      } else if (a == r.hi) {
        args.push_back(tramp->getArg(2));
      } else if (own[i]) {
        args.push_back(llvm::PoisonValue::get(a->getType()));
      } else {
        llvm::Value *v = T.CreateLoad(a->getType(), T.CreateStructGEP(env_ty, env, i));
        if (stride_of[i]) {
          llvm::Value *s = T.CreateLoad(i64, T.CreateStructGEP(env_ty, env, next_stride++));
          v = T.CreateGEP(T.getInt8Ty(), v, T.CreateMul(w, s));
        }
        args.push_back(v);
      }
    }
    T.CreateCall(&body, args);
    T.CreateRetVoid();
  }

  // At the call: fill the environment, then pto_rt_parallel_for.
  llvm::IRBuilder<> A(&*f.getEntryBlock().getFirstInsertionPt());
  llvm::Value *env = A.CreateAlloca(env_ty, nullptr, "par.env");
  llvm::IRBuilder<> B(call);
  unsigned next_stride = n;
  for (unsigned i = 0; i < n; ++i) {
    B.CreateStore(call->getArgOperand(i), B.CreateStructGEP(env_ty, env, i));
    if (stride_of[i])
      B.CreateStore(stride_of[i], B.CreateStructGEP(env_ty, env, next_stride++));
  }
  llvm::Value *grain = shared_slot ? B.getInt64(INT64_MAX) : r.grain;
  call_rt(B, RtFn::ParallelFor, {r.ctx, tramp, env, r.lo, r.hi, grain, r.workers});
  call->eraseFromParent();
}

} // namespace

int outline_parallel(llvm::Function &f, const std::vector<ParRegion> &regions) {
  int made = 0;
  std::optional<llvm::CodeExtractorAnalysisCache> cache;
  for (const ParRegion &r : regions) {
    const auto blocks = region_blocks(r);
    if (blocks.empty())
      continue;
    llvm::CodeExtractor ce(blocks, /*DT=*/nullptr, /*AggregateArgs=*/false, nullptr, nullptr,
                           nullptr, false, false, nullptr, "par");
    if (!ce.isEligible())
      continue;
    if (!cache)
      cache.emplace(f); // regions are disjoint: one cache serves them all (split_function.cpp)
    llvm::Function *body = ce.extractCodeRegion(*cache);
    if (!body)
      continue;
    body->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::CallInst *call = nullptr;
    for (llvm::User *u : body->users())
      call = llvm::dyn_cast<llvm::CallInst>(u);
    if (!call || !body->getReturnType()->isVoidTy() || !body->hasOneUse())
      continue; // an output or an exit code: keep the plain call (one thread)
    dispatch(f, *body, call, r);
    ++made;
  }
  return made;
}

} // namespace pto::codegen
