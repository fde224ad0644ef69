// no_jit.cpp - The LLVM backend's entry points for a build without LLVM (pto_nojit): the
// interpreter-only test binary links this instead of pto_llvm, so that the interpreter, the
// passes and the library routines are built, sanitized and tested with no LLVM in the process.
// A kernel that asks for the JIT gets a CompileError saying so.
#include "passes/pipeline.h"

#include "pto/error.h"
#include "pto/jit.h"

namespace pto {
namespace codegen {

std::shared_ptr<const Executable> compile_jit(const PlannedProgram &pp, const CompileOptions &,
                                              const StageDump &, bool *compiled) {
  if (compiled)
    *compiled = false;
  throw CompileError("<codegen>", pp.program.name,
                     "this program was linked without the LLVM backend (pto_nojit); run kernels "
                     "with RunMode::Interpret or PTO_RUN_MODE=interpret, or link pto::pto");
}

} // namespace codegen

JitCacheStats jit_cache_stats() { return {}; }

void set_jit_cache_limit(std::optional<int64_t>, std::source_location) {}

} // namespace pto
