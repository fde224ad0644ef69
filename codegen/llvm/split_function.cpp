// split_function.cpp - See split_function.h.
#include "llvm/split_function.h"

#include <llvm/IR/Instructions.h>
#include <llvm/Transforms/Utils/CodeExtractor.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace pto::codegen {

namespace {

/// The blocks of `c` now: those reachable from c.begin without passing through c.end or the
/// function's return block `ret`, begin first (CodeExtractor wants the entry first).
std::vector<llvm::BasicBlock *> blocks_of(const Chunk &c, llvm::BasicBlock *ret) {
  std::vector<llvm::BasicBlock *> out{c.begin}, stack{c.begin};
  std::unordered_set<llvm::BasicBlock *> seen{c.begin, c.end, ret};
  while (!stack.empty()) {
    llvm::BasicBlock *b = stack.back();
    stack.pop_back();
    for (llvm::BasicBlock *s : llvm::successors(b))
      if (seen.insert(s).second) {
        out.push_back(s);
        stack.push_back(s);
      }
  }
  return out;
}

/// Makes every `ret` of `f` a branch to one return block (a phi of the values returned), so that
/// a chunk has two exits (the next chunk, the return) instead of one per failure path.
llvm::BasicBlock *unify_returns(llvm::Function &f) {
  std::vector<llvm::ReturnInst *> rets;
  for (llvm::BasicBlock &b : f)
    if (auto *r = llvm::dyn_cast<llvm::ReturnInst>(b.getTerminator()))
      rets.push_back(r);
  if (rets.size() < 2)
    return rets.empty() ? nullptr : rets.front()->getParent();
  auto *ret = llvm::BasicBlock::Create(f.getContext(), "ret", &f);
  auto *phi =
      llvm::PHINode::Create(f.getReturnType(), static_cast<unsigned>(rets.size()), "status", ret);
  llvm::ReturnInst::Create(f.getContext(), phi, ret);
  for (llvm::ReturnInst *r : rets) {
    phi->addIncoming(r->getReturnValue(), r->getParent());
    llvm::BranchInst::Create(ret, r->getParent());
    r->eraseFromParent();
  }
  return ret;
}

} // namespace

int outline_chunks(llvm::Function &f, std::vector<Chunk> chunks) {
  if (chunks.empty())
    return 0;
  llvm::BasicBlock *ret = unify_returns(f);
  std::stable_sort(chunks.begin(), chunks.end(),
                   [](const Chunk &a, const Chunk &b) { return a.depth > b.depth; });
  int made = 0;
  // The analysis cache scans all of `f`: built once per nesting level, not once per chunk (that
  // was quadratic in the program's size). Extraction keeps it valid for the chunks of the same
  // level (they are disjoint); a level's extractions add call blocks the next (outer) level must
  // see, so the cache is rebuilt when the level changes.
  std::optional<llvm::CodeExtractorAnalysisCache> cache;
  int cache_depth = -1;
  for (const Chunk &c : chunks) {
    const auto blocks = blocks_of(c, ret);
    llvm::CodeExtractor ce(blocks, /*DT=*/nullptr, /*AggregateArgs=*/false, nullptr, nullptr,
                           nullptr, false, false, nullptr, "chunk");
    if (!ce.isEligible())
      continue;
    if (!cache || cache_depth != c.depth) {
      cache.emplace(f);
      cache_depth = c.depth;
    }
    if (llvm::Function *out = ce.extractCodeRegion(*cache)) {
      out->addFnAttr(llvm::Attribute::NoInline);
      out->addFnAttr(llvm::Attribute::NoUnwind);
      ++made;
    }
  }
  return made;
}

} // namespace pto::codegen
