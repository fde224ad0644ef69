// pipeline.cpp - The pipeline, stage by stage (see pipeline.h).
#include "passes/pipeline.h"

#include "pto/ir/printer.h"
#include "pto/ir/verifier.h"

namespace pto::codegen {

Compiled compile_program(ir::Program program, const CompileOptions &opts, const Backend &backend) {
  // Tracing (driver/trace.h) made `program`; deferred allreduce fusion ran at the trace's end.
  ir::layout_shmem(program);
  ir::verify(program);

  auto pp = std::make_shared<PlannedProgram>(std::move(program));
  pp->printed = ir::print(pp->program);
  pp->hash = ir::text_hash(pp->printed);
  const StageDump dump(opts, pp->program.name, pp->hash);
  if (!pp->program.sharding.empty()) {
    std::string text;
    for (const auto &line : pp->program.sharding)
      text += line + "\n";
    dump("sharding", "sharding", text);
  }
  dump("ir", "ir", pp->printed);

  pp->sites = SiteTable(pp->program);

  pp->tiles = expand_tiles(pp->program, pp->sites);
  dump("tiles", "tiles", print_tiles(pp->program, pp->sites, pp->tiles));

  pp->plan = plan_fusion(pp->program, pp->sites, pp->tiles);
  dump("plan", "plan", print_plan(pp->program, pp->sites, pp->plan));

  // Later passes slot in here, each reading what the stages above made and adding its own
  // representation to PlannedProgram, with its dump: sharding, communication lowering,
  // scheduling.

  if (!backend)
    return {pp, nullptr};
  auto exe = backend(pp, dump);
  return {std::move(pp), std::move(exe)};
}

} // namespace pto::codegen
