// lower_fused.h - LLVM IR for the fused groups of the fusion plan (passes/fuse.h): tile loops over
// the group's row dims, then per row its passes over the valid columns as explicit <W x T> vector
// code (full vectors, then one masked tail). Reductions over the last axis accumulate in vector
// registers and become per-row ("uniform") values for the later passes; values needed across
// passes live in a row scratch buffer. Elementwise ops come from lower_elementwise.h, the
// reduction steps from lower_reduce.h.
#pragma once

#include "llvm/kernel_builder.h"
#include "llvm/parallel_outline.h"
#include "passes/fuse.h"

#include <map>
#include <utility>

namespace pto::codegen {

/// The row scratch buffers: (group index, value) -> one row in the value's compute type, one copy
/// per pool worker (pto/runtime/pool.h): worker w's row is at base + w * stride bytes.
struct FusedScratch {
  std::map<std::pair<int, ir::ValueId>, llvm::Value *> base; ///< worker 0's row
  std::map<llvm::Value *, llvm::Value *> stride;             ///< base -> i64 bytes per worker
  llvm::Value *workers = nullptr; ///< i32 pto_rt_workers() at kernel entry: the copies
  [[nodiscard]] llvm::Value *at(const std::pair<int, ir::ValueId> &k) const { return base.at(k); }
};

/// Allocates the row scratch of every group of `plan` (pto_rt_alloc at the builder's insertion
/// point, the kernel's entry: once per call), one row per pool worker. A row of the compute type
/// (8 bytes an element at most) plus one vector of slack whose size passes the 2^62-byte limit
/// fails the call with a ShapeError at the value's defining op; a refused allocation returns its
/// status.
FusedScratch alloc_fused_scratch(KernelBuilder &kb, const FusionPlan &plan);

/// Emits group `gi` of `plan` at the builder's insertion point. A group of rank >= 2 has its
/// outer row-tile loop emitted as a region of `regions` (parallel_outline.h), to be run on the
/// pool after lowering: its rows are independent, so any split of them gives the same bits.
void lower_fused_group(KernelBuilder &kb, const FusionPlan &plan, int gi,
                       const FusedScratch &scratch, std::vector<ParRegion> &regions);

} // namespace pto::codegen
