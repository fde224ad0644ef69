// no_jit.cpp - The LLVM backend's entry points for a build without LLVM (pto_nojit): the
// interpreter-only test binary links this instead of pto_llvm, so that the interpreter, the
// passes and the library routines are built, sanitized and tested with no LLVM in the process.
// A kernel that asks for the JIT gets a CompileError saying so.
#include "pto/env.h"
#include "pto/error.h"
#include "pto/jit.h"

#include "passes/compile.h"
#include "passes/isa.h"
#include "passes/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <string>

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

void check_isa_env(const std::source_location &loc, const std::string &kernel) {
  // No JIT to cap: only a value that names no level is an error (resolved on a host with no
  // features, any level would be refused as missing them).
  const std::string request = env::raw(env::var("PTO_ISA")).value_or("");
  const auto &names = isa_names();
  if (request.empty() || std::find(names.begin(), names.end(), request) != names.end())
    return;
  throw ArgumentError(loc, "PTO_ISA",
                      isa_refusal_message({"unknown value '" + request + "'", names},
                                          " (tracing kernel '" + kernel + "')"));
}

} // namespace codegen

JitCacheStats jit_cache_stats() { return {}; }

void set_jit_cache_limit(std::optional<int64_t>, std::source_location) {}

} // namespace pto
