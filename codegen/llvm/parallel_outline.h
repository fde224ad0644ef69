// parallel_outline.h - Runs loops of the kernel on the worker pool (pto/runtime/pool.h). The
// lowering emits a loop over [lo, hi) as a region (a fused group's outer row-tile loop); after
// lowering, outline_parallel moves the region into a function of its own (LLVM's CodeExtractor,
// as split_function.h does for chunks), wraps it in a pto_par_body trampoline that reads the
// region's captured values from an environment struct, and replaces the region with
// pto_rt_parallel_for(ctx, trampoline, env, lo, hi, grain, workers). A region that can fail
// (returns from the kernel), makes a runtime call (pto_rt_*: a worker has no PE of its own) or
// shares a stack slot with the rest of the kernel stays inline and runs on the PE's thread.
#pragma once

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>

#include <cstdint>
#include <map>
#include <vector>

namespace pto::codegen {

/// A parallel fused group gets ranges of at least this many elements per thread.
inline constexpr int64_t kParallelGrainElems = 32768;

/// A loop to run on the pool: the code from `begin` up to (not including) `end`, which every path
/// from `begin` reaches; its iterations are [lo, hi), lo and hi loaded before `begin` (so they
/// are inputs of the region), and any split of them computes the same values.
struct ParRegion {
  llvm::BasicBlock *begin = nullptr;
  llvm::BasicBlock *end = nullptr;
  llvm::LoadInst *lo = nullptr, *hi = nullptr;
  llvm::Value *grain = nullptr;   ///< i64, the fewest iterations a thread is given
  llvm::Value *workers = nullptr; ///< i32, the copies of per-worker scratch
  llvm::Value *ctx = nullptr;     ///< the kernel's pto_ctx
  /// Per-worker scratch: a buffer the region uses -> i64 bytes between the workers' copies.
  std::map<llvm::Value *, llvm::Value *> strides;
};

/// Outlines every region of `f` that can run on the pool (see the file comment); returns how
/// many. The others stay as they are (a correct loop on the PE's thread).
int outline_parallel(llvm::Function &f, const std::vector<ParRegion> &regions);

} // namespace pto::codegen
