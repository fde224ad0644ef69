// compile_jit.cpp - The LLVM backend's entry: the process-wide kernel cache (kernel_cache.h), then
// the on-disk cache (kernel_cache_disk.h), in front of lowering and ORC.
#include "pto/error.h"

#include "llvm/kernel_cache.h"
#include "llvm/kernel_cache_disk.h"
#include "llvm/lower_llvm.h"
#include "passes/compile.h"
#include "passes/pipeline.h"

#include <chrono>
#include <fmt/format.h>
#include <mutex>

namespace pto::codegen {

namespace {
/// The program of `pp`: linked from the on-disk cache when it holds a valid entry (and no dump
/// asks for the LLVM stages), else lowered, optimized and compiled, then stored there.
std::shared_ptr<const Executable> build(const PlannedProgram &pp, const CompileOptions &opts,
                                        const StageDump &dump, const std::string &key,
                                        bool must_build) {
  const auto t0 = std::chrono::steady_clock::now();
  auto done = [&](std::shared_ptr<Executable> exe) {
    exe->compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return exe;
  };
  DiskCache &disk = DiskCache::get();
  const bool use_disk = opts.disk_cache && !opts.disk_cache_dir.empty();
  const std::string disk_key = use_disk ? DiskCache::full_key(key) : std::string();
  if (use_disk && !must_build)
    if (auto object = disk.load(opts, disk_key)) {
      try {
        return done(link_llvm_executable(pp, *object));
      } catch (const CompileError &) {
        disk.reject(opts, disk_key); // an object JITLink refuses is rebuilt, like a corrupt file
      }
    }
  const std::string object = build_llvm_object(pp, opts, dump);
  auto exe = link_llvm_executable(pp, object);
  if (use_disk)
    disk.store(opts, disk_key, object);
  return done(std::move(exe));
}
} // namespace

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
  // The LLVM stages are dumped only by a build, so a dump asking for them bypasses both caches
  // (the object it builds is still stored on disk).
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
    exe = build(pp, opts, dump, key, must_build);
    // Inserted before the lock is released, so that a thread waiting for it finds this build.
    cache.insert(key, exe);
  }
  if (compiled)
    *compiled = true;
  return exe;
}

} // namespace pto::codegen
