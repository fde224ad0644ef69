// compile_jit.cpp - The LLVM backend's entry: the process-wide kernel cache (kernel_cache.h)
// in front of lowering and ORC.
#include "llvm/kernel_cache.h"
#include "llvm/lower_llvm.h"
#include "passes/compile.h"
#include "passes/pipeline.h"

#include <fmt/format.h>
#include <mutex>

namespace pto::codegen {

std::shared_ptr<const Executable> compile_jit(const PlannedProgram &pp, const CompileOptions &opts,
                                              const StageDump &dump, bool *compiled) {
  // Key: the structural form plus the options that change code. Call sites are kept per program
  // (they only name locations in messages), so the key includes them too.
  std::string key = pp.printed + fmt::format("|lanes={}|", opts.vector_lanes);
  for (auto &s : pp.sites.names())
    key += s + ";";
  KernelCache &cache = KernelCache::get();
  cache.set_env_limit(opts.cache_limit_bytes);
  if (compiled)
    *compiled = false;
  // The LLVM stages are dumped only by a build, so a dump asking for them bypasses the cache.
  const bool must_build = dump.wants("llvm") || dump.wants("asm");
  if (!must_build)
    if (auto exe = cache.find(key))
      return exe;
  std::shared_ptr<const Executable> exe;
  {
    // One build at a time: lowering and O3 share the host TargetMachine. A thread that waited
    // here may find the program another one just built.
    static std::mutex build_mu;
    std::lock_guard lk(build_mu);
    if (!must_build)
      if (auto hit = cache.find(key))
        return hit;
    exe = build_llvm_executable(pp, opts, dump);
    // Inserted before the lock is released, so that a thread waiting for it finds this build.
    cache.insert(key, exe);
  }
  if (compiled)
    *compiled = true;
  return exe;
}

} // namespace pto::codegen
