// split_function.h - Keeps the LLVM function of a long program small: the lowering marks runs of
// consecutive region items ("chunks"), and outline_chunks moves each into a function of its own
// (LLVM's CodeExtractor; noinline) before O3. Passes such as loop rotation, induction-variable
// simplification and SCEV's guard queries cost more than linear time in the size of one function
// (a walk up the dominator tree per loop), so one function of 2000 ops took minutes to compile;
// chunks of a bounded number of items keep the whole compile linear in the program's size.
#pragma once

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>

#include <cstddef>
#include <vector>

namespace pto::codegen {

/// A region's items from one chunk boundary to the next: the code from `begin` up to (not
/// including) `end`, which every path from `begin` reaches unless it returns. `depth` is the
/// region's nesting (0 for the kernel body): inner chunks are outlined first.
struct Chunk {
  llvm::BasicBlock *begin = nullptr;
  llvm::BasicBlock *end = nullptr;
  int depth = 0;
};

/// Regions with more items than this are cut into chunks of this many items.
inline constexpr size_t kChunkItems = 16;

/// Outlines every chunk of `f` into a noinline function (innermost first); a chunk LLVM cannot
/// extract stays inline. Returns how many functions were made.
int outline_chunks(llvm::Function &f, std::vector<Chunk> chunks);

} // namespace pto::codegen
