// kernel_cache.cpp - See kernel_cache.h.
#include "llvm/kernel_cache.h"

#include "llvm/jit_engine.h"
#include "llvm/kernel_cache_disk.h"

namespace pto::codegen {

namespace {
/// What a program costs beyond its linked sections and key: ORC's bookkeeping (its JITDylib,
/// symbol tables and resource tracker), the Executable and allocator slack. Measured with LLVM 19
/// as resident memory per cached program minus the counted bytes over 6000 small kernels
/// (~10.7 KiB); without it a 64 MiB bound let the process grow ~2.3x past it.
constexpr int64_t kProgramOverhead = 12 * 1024;

/// What an entry costs: the JIT memory of its program, plus the key and site table kept for it,
/// plus kProgramOverhead.
int64_t entry_bytes(const std::string &key, const Executable &exe) {
  int64_t n = exe.code_bytes + static_cast<int64_t>(key.size()) + kProgramOverhead;
  for (const auto &s : exe.sites())
    n += static_cast<int64_t>(s.size());
  return n;
}
} // namespace

KernelCache &KernelCache::get() {
  // Never destroyed: entries freed during exit would reach the JIT engine in an unknown order.
  static KernelCache *c = new KernelCache;
  return *c;
}

std::shared_ptr<const Executable> KernelCache::find(const std::string &key) {
  std::lock_guard lk(mu_);
  auto it = index_.find(key);
  if (it == index_.end())
    return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return it->second->exe;
}

void KernelCache::insert(const std::string &key, std::shared_ptr<const Executable> exe) {
  std::vector<std::shared_ptr<const Executable>> dropped;
  {
    std::lock_guard lk(mu_);
    ++misses_;
    if (auto it = index_.find(key); it != index_.end()) {
      bytes_ -= it->second->bytes;
      dropped.push_back(std::move(it->second->exe));
      lru_.erase(it->second);
      index_.erase(it);
    }
    const int64_t bytes = entry_bytes(key, *exe);
    lru_.push_front(Entry{key, std::move(exe), bytes});
    index_[key] = lru_.begin();
    bytes_ += bytes;
    evict(dropped);
  }
}

void KernelCache::set_env_limit(std::optional<int64_t> bytes) {
  std::vector<std::shared_ptr<const Executable>> dropped;
  std::lock_guard lk(mu_);
  env_limit_ = bytes;
  evict(dropped);
}

void KernelCache::set_limit(std::optional<int64_t> bytes) {
  std::vector<std::shared_ptr<const Executable>> dropped;
  std::lock_guard lk(mu_);
  api_limit_ = bytes;
  evict(dropped);
}

void KernelCache::evict(std::vector<std::shared_ptr<const Executable>> &dropped) {
  while (!lru_.empty() && bytes_ > limit()) {
    Entry &e = lru_.back();
    bytes_ -= e.bytes;
    dropped.push_back(std::move(e.exe));
    index_.erase(e.key);
    lru_.pop_back();
    ++evictions_;
  }
}

JitCacheStats KernelCache::stats() {
  JitCacheStats s;
  {
    std::lock_guard lk(mu_);
    s.entries = static_cast<int64_t>(lru_.size());
    s.bytes = bytes_;
    s.limit_bytes = limit();
    s.hits = hits_;
    s.misses = misses_;
    s.evictions = evictions_;
  }
  const JitMemory m = jit_memory();
  s.live_programs = m.modules;
  s.live_code_bytes = m.bytes;
  s.live_mappings = m.mappings;
  const DiskCacheCounters d = DiskCache::get().counters();
  s.disk_hits = d.hits;
  s.disk_misses = d.misses;
  s.disk_rejected = d.rejected;
  s.disk_writes = d.writes;
  s.disk_evictions = d.evictions;
  s.disk_errors = d.errors;
  return s;
}

} // namespace pto::codegen

namespace pto {

JitCacheStats jit_cache_stats() { return codegen::KernelCache::get().stats(); }

void set_jit_cache_limit(std::optional<int64_t> bytes, std::source_location loc) {
  if (bytes && *bytes < 0)
    throw ArgumentError(loc, "set_jit_cache_limit",
                        "limit must be >= 0 bytes (or std::nullopt for the default), got " +
                            std::to_string(*bytes));
  codegen::KernelCache::get().set_limit(bytes);
}

} // namespace pto
