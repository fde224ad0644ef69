// fuse.h - Groups consecutive compute ops that walk the same row space into one fused region,
// so each row of a tile is loaded once and intermediates stay in registers or a row scratch.
//
// Model: a group iterates the tiles of an [rows..., L] space (reference §3.2 order); within a
// tile, row by row, it runs P passes over the row's valid columns. A reduction over the last
// axis accumulates in the pass of its input and yields a per-row ("uniform") value usable from
// the next pass on; a full-width value computed in pass k and needed in a later pass is kept in
// a row scratch buffer. Softmax is 3 passes: amax | exp(x - m), sum | e / s and store.
//
// The plan is data keyed by op ids and region ids (sites.h), so it is equal for copies of a
// program and can be printed (print_plan, the PTO_DUMP=plan stage) and compared in tests.
#pragma once

#include "pto/ir/program.h"

#include "passes/sites.h"
#include "passes/tile_expand.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace pto::codegen {

struct FusedValue {
  int level = 0;        ///< pass in which the value is computed (uniforms: available from)
  bool uniform = false; ///< one value per row (last dim 1 in a space with L != 1)
  bool scratch = false; ///< full-width, kept in a row scratch buffer for later passes
  bool store = false;   ///< written to its own storage (used outside the group)
};

struct FusedGroup {
  std::vector<OpId> ops;                 ///< members, in program order
  size_t rank = 0;                       ///< R (rank of the iteration space)
  std::vector<SymbolicScalar> row_shape; ///< R-1 dims
  std::vector<SymbolicScalar> row_valid;
  SymbolicScalar cols, cols_valid; ///< L and its valid extent
  std::vector<int64_t> tile;       ///< R entries
  bool has_reduce = false;
  int passes = 1;
  std::map<ir::ValueId, FusedValue> values; ///< values produced inside the group
  std::map<ir::ValueId, OpId> producers;    ///< the member computing each of `values`
};

/// One item of a lowered region: a fused group, or a single op lowered on its own (shmem ops,
/// loops, reductions over a non-last axis, matmul, standalone and library ops).
struct RegionItem {
  OpId op = kNoOp; ///< set for an op lowered on its own
  int group = -1;  ///< index into FusionPlan::groups otherwise
  bool operator==(const RegionItem &) const = default;
};

struct FusionPlan {
  std::vector<FusedGroup> groups;
  std::map<RegionId, std::vector<RegionItem>> regions; ///< every region, items in program order
  std::set<ir::ValueId> materialized;                  ///< Local values that need their own storage

  /// The items of region `r` (InternalError for a region the plan does not have).
  const std::vector<RegionItem> &items(RegionId r) const;
};

/// Plans fusion for the whole program (all loop bodies), from its op ids and its tile plan (the
/// space and tile of every compute op). Pure.
FusionPlan plan_fusion(const ir::Program &p, const SiteTable &sites, const TilePlan &tiles);

/// The row pass in which member `op` of `g` runs: a full-width value's level; a reduction's
/// input's level (it accumulates there; its per-row value is ready from the next pass); a
/// per-row (uniform) value's level (computed once per row before that pass's columns); an
/// assemble's input's level.
int member_pass(const FusedGroup &g, const ir::Op &op);

/// The plan as text (the PTO_DUMP=plan stage): each region's items in order, then each group
/// with its space, tile and row passes, its members one per line (the op, its pass, and what
/// becomes of its value: row value, scratch, store), and the values with their own storage.
/// Deterministic; golden tests compare it (tests/passes/golden).
std::string print_plan(const ir::Program &p, const SiteTable &sites, const FusionPlan &plan);

} // namespace pto::codegen
