// compile_jit.cpp - The LLVM backend's entry: the process-wide kernel cache (kernel_cache.h)
// in front of lowering and ORC, with the IR stage dump.
#include "passes/compile.h"

#include "pto/ir/printer.h"

#include "llvm/kernel_cache.h"
#include "llvm/lower_llvm.h"
#include "passes/stage_dump.h"

#include <fmt/format.h>
#include <mutex>

namespace pto::codegen {

std::shared_ptr<const Executable> compile_jit(const ir::Program &p, const CompileOptions &opts,
                                              bool *compiled) {
  std::string printed = ir::print(p);
  // Key: the structural form plus the options that change code. Call sites are kept per program
  // (they only name locations in messages), so the key includes them too.
  std::string key = printed + fmt::format("|lanes={}|", opts.vector_lanes);
  for (auto &s : site_table(p))
    key += s + ";";
  StageDump dump(opts, p.name, ir::structural_hash(p));
  dump("ir", "ir", printed);
  KernelCache &cache = KernelCache::get();
  cache.set_env_limit(opts.cache_limit_bytes);
  if (compiled)
    *compiled = false;
  if (opts.dump.empty())
    if (auto exe = cache.find(key))
      return exe;
  std::shared_ptr<const Executable> exe;
  {
    // One build at a time: lowering and O3 share the host TargetMachine. A thread that waited
    // here may find the program another one just built.
    static std::mutex build_mu;
    std::lock_guard lk(build_mu);
    if (opts.dump.empty())
      if (auto hit = cache.find(key))
        return hit;
    exe = build_llvm_executable(p, opts, dump);
  }
  if (compiled)
    *compiled = true;
  cache.insert(key, exe);
  return exe;
}

} // namespace pto::codegen
