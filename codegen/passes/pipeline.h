// pipeline.h - The compiler as one list of stages (compile_program in pipeline.cpp reads top to
// bottom, the way Halide's Lower.cpp does):
//
//   trace (driver/trace.h)            pto::Tensor calls -> ir::Program
//     deferred allreduce fusion       at trace time: the recorder flushes it (recorder.h)
//   layout_shmem (ir/program.h)       ir::Program -> ir::Program, heap offsets set
//   verify (ir/verifier.h)            ir::Program, checked
//   print                             -> PlannedProgram::printed       PTO_DUMP=ir
//   SiteTable (sites.h)               -> PlannedProgram::sites, numbered once
//   expand_tiles (tile_expand.h)      -> PlannedProgram::tiles          PTO_DUMP=tiles
//   plan_fusion (fuse.h)              -> PlannedProgram::plan           PTO_DUMP=plan
//   [later passes: sharding, communication lowering, scheduling]
//   backend                           PlannedProgram -> Executable
//     compile_jit (llvm/)             LLVM lowering -> O3 -> ORC     PTO_DUMP=llvm,asm
//     make_interpreter (interp/)      the reference interpreter
//
// Both executors consume the same PlannedProgram: one print, one site numbering, one plan.
#pragma once

#include "passes/compile.h"
#include "passes/fuse.h"
#include "passes/sites.h"
#include "passes/stage_dump.h"
#include "passes/tile_expand.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pto::codegen {

/// A program with what every stage after planning reads. Its members are filled in pipeline
/// order by compile_program and never change afterwards. Not copyable or movable: `sites` points
/// into `program`, and everything else names ops by their ids in it.
struct PlannedProgram {
  explicit PlannedProgram(ir::Program p) : program(std::move(p)) {}
  PlannedProgram(const PlannedProgram &) = delete;
  PlannedProgram &operator=(const PlannedProgram &) = delete;

  ir::Program program; ///< shmem laid out, verified
  std::string printed; ///< ir::print(program): the "ir" dump, the kernel cache's key, last_ir
  uint64_t hash = 0;   ///< ir::text_hash(printed): tells specializations apart in dump names
  SiteTable sites;     ///< op ids and the call-site table, numbered once
  TilePlan tiles;      ///< the tiles of every tiled op
  FusionPlan plan;     ///< which ops fuse, and how

  /// The plan's items for `region`, an op list of `program` (the kernel body, a loop body or a
  /// path body).
  const std::vector<RegionItem> &items(const std::vector<ir::Op> &region) const {
    return plan.items(sites.region_of(region));
  }
};

/// The last stage: an executor for the planned program (compile_jit or make_interpreter, both
/// in compile.h). `dump` writes the backend's own stages.
using Backend = std::function<std::shared_ptr<const Executable>(
    std::shared_ptr<const PlannedProgram> pp, const StageDump &dump)>;

struct Compiled {
  std::shared_ptr<const PlannedProgram> planned;
  std::shared_ptr<const Executable> exe; ///< null when no backend was given
};

/// Runs the pipeline on a traced program (the list at the top of this file), writing the stage
/// dumps `opts.dump` names, and ends in `backend` (none: stop after planning, for tests and
/// tools). Throws what the stages throw: InternalError from layout_shmem, verify and the
/// planners (a ptojit bug), the backend's errors.
Compiled compile_program(ir::Program traced, const CompileOptions &opts,
                         const Backend &backend = {});

} // namespace pto::codegen
