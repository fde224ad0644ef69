// fuse.h - Groups consecutive compute ops that walk the same row space into one fused region,
// so each row of a tile is loaded once and intermediates stay in registers or a row scratch.
//
// Model: a group iterates the tiles of an [rows..., L] space (reference §3.2 order); within a
// tile, row by row, it runs P passes over the row's valid columns. A reduction over the last
// axis accumulates in the pass of its input and yields a per-row ("uniform") value usable from
// the next pass on; a full-width value computed in pass k and needed in a later pass is kept in
// a row scratch buffer. Softmax is 3 passes: amax | exp(x - m), sum | e / s and store.
#pragma once

#include "pto/ir/program.h"

#include <map>
#include <set>
#include <vector>

namespace pto::codegen {

struct FusedValue {
  int level = 0;        ///< pass in which the value is computed (uniforms: available from)
  bool uniform = false; ///< one value per row (last dim 1 in a space with L != 1)
  bool scratch = false; ///< full-width, kept in a row scratch buffer for later passes
  bool store = false;   ///< written to its own storage (used outside the group)
};

struct FusedGroup {
  std::vector<const ir::Op *> ops;
  size_t rank = 0;                          ///< R (rank of the iteration space)
  std::vector<SymbolicScalar> row_shape;    ///< R-1 dims
  std::vector<SymbolicScalar> row_valid;
  SymbolicScalar cols, cols_valid;          ///< L and its valid extent
  std::vector<int64_t> tile;                ///< R entries
  bool has_reduce = false;
  int passes = 1;
  std::map<ir::ValueId, FusedValue> values; ///< values produced inside the group
  std::map<ir::ValueId, const ir::Op *> producers; ///< the member computing each of `values`
};

/// One item of a lowered region: a fused group, or a single op lowered on its own (shmem ops,
/// loops, reductions over a non-last axis).
struct RegionItem {
  const ir::Op *op = nullptr; ///< set for a standalone op
  int group = -1;             ///< index into FusionPlan::groups otherwise
};

struct FusionPlan {
  std::vector<FusedGroup> groups;
  std::map<const std::vector<ir::Op> *, std::vector<RegionItem>> regions;
  std::set<ir::ValueId> materialized; ///< Local values that need their own storage
};

/// Plans fusion for the whole program (all loop bodies). Pure.
FusionPlan plan_fusion(const ir::Program &p);

} // namespace pto::codegen
