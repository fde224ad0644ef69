// kernel_cache.h - The process-wide cache of JIT-compiled programs: keyed by a program's
// structural form, bounded by an LRU on bytes (pto::set_jit_cache_limit, PTO_JIT_CACHE_MB).
// Entries and live kernels share each Executable: an entry evicted while a kernel still holds
// its program only drops the cache's reference, and the code is freed with the last one.
#pragma once

#include "pto/jit.h"

#include "passes/compile.h"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace pto::codegen {

/// The default bound of the cache, in bytes (64 MiB).
inline constexpr int64_t kDefaultJitCacheBytes = int64_t{64} << 20;

class KernelCache {
public:
  /// The process's cache (created on first use, never destroyed).
  static KernelCache &get();

  /// The program cached under `key`, now the most recently used; null when absent.
  std::shared_ptr<const Executable> find(const std::string &key);
  /// Caches `exe` under `key` (replacing an entry with that key) and evicts least recently used
  /// entries until the cache is within its bound; `exe` itself is not kept when it alone is
  /// larger than the bound. Counts one miss (a program compiled).
  void insert(const std::string &key, std::shared_ptr<const Executable> exe);
  /// The bound from the environment (PTO_JIT_CACHE_MB, parsed by CompileOptions::from_env);
  /// nullopt: the default. Ignored while a limit set by set_limit is in force.
  void set_env_limit(std::optional<int64_t> bytes);
  /// The bound set by the API (pto::set_jit_cache_limit); nullopt returns to the environment's
  /// or the default. Evicts at once.
  void set_limit(std::optional<int64_t> bytes);
  JitCacheStats stats();

private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Executable> exe;
    int64_t bytes = 0;
  };
  int64_t limit() const { return api_limit_.value_or(env_limit_.value_or(kDefaultJitCacheBytes)); }
  /// Unlinks entries past the bound into `dropped` (released by the caller, unlocked: a last
  /// reference frees JIT code, which takes the engine's lock).
  void evict(std::vector<std::shared_ptr<const Executable>> &dropped);

  std::mutex mu_;
  std::list<Entry> lru_; ///< most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  int64_t bytes_ = 0;
  std::optional<int64_t> env_limit_, api_limit_;
  int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

} // namespace pto::codegen
