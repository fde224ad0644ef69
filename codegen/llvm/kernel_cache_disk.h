// kernel_cache_disk.h - The on-disk cache of compiled kernels: one file per program, holding the
// ELF object LLVM emitted for it (jit_engine.h), so that a new process links the object instead
// of lowering and optimizing again. Where it lives and its bound come from CompileOptions
// (PTO_CACHE, PTO_CACHE_DIR, PTO_CACHE_MAX_MB; README.md, "Environment").
//
// Key: the in-memory cache's key (the printed program, its site table, the options that change
// code) plus what the machine code depends on beyond it: the JIT target (LLVM CPU, features and
// the PTO_ISA request), the LLVM version, ptojit's version and the build of the ptojit code in
// this process (its ELF build id), and the entry format. The file is named by a 64-bit hash of
// the key and holds the whole key: a file whose key differs (a collision, another build) is a miss.
//
// File: a header (magic, format version, sizes, key hash, a checksum of header and payload), the
// key, the object. Every read checks all of it; an entry that fails (truncated, corrupt, stale,
// another format) is counted as rejected, deleted and rebuilt, never linked. Writes go to a
// temporary file in the directory, then rename(2) over the entry: a reader sees a whole old or a
// whole new file, and two processes storing the same program at once both succeed. A read hit
// touches the file's mtime; after a store, files are removed oldest mtime first until the
// directory is within PTO_CACHE_MAX_MB (LRU by mtime), with temporary files left by a crashed
// process older than an hour. The directory is created with mode 0700; one that is not owned by
// this user or is writable by group or others is not used (the cache holds code this process
// runs). Any I/O failure (unwritable directory, full disk) warns once on stderr and the compile
// goes on without the cache: the cache never fails a kernel call.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace pto::codegen {

struct CompileOptions;

/// The current format of a cache file (in its header; a file of another format is rejected).
inline constexpr uint32_t kDiskCacheFormat = 1;

/// Counters of the on-disk cache in this process (pto::JitCacheStats reports them).
struct DiskCacheCounters {
  int64_t hits = 0;      ///< programs linked from a cache file
  int64_t misses = 0;    ///< lookups that found no file
  int64_t rejected = 0;  ///< files found but refused (corrupt, truncated, stale key or format)
  int64_t writes = 0;    ///< files stored
  int64_t evictions = 0; ///< files removed to stay within the bound
  int64_t errors = 0;    ///< I/O failures (the cache was skipped for that lookup or store)
};

class DiskCache {
public:
  /// The process's on-disk cache front (created on first use, never destroyed).
  static DiskCache &get();

  /// The disk key of a program whose in-memory key is `mem_key`: `mem_key` plus the target,
  /// version and build parts (see the header comment).
  static std::string full_key(const std::string &mem_key);
  /// The file an entry of `key` lives in, under directory `dir`.
  static std::string entry_path(const std::string &dir, const std::string &key);

  /// The object stored under `key` in `opts.disk_cache_dir`, after checking the whole file; the
  /// file's mtime is touched. nullopt when the cache is off, the file is absent (a miss) or is
  /// refused (rejected: the file is deleted).
  std::optional<std::string> load(const CompileOptions &opts, const std::string &key);
  /// Stores `object` under `key` (temporary file + rename), then evicts oldest files past
  /// opts.disk_cache_max_bytes. Failures warn once and are otherwise ignored.
  void store(const CompileOptions &opts, const std::string &key, std::string_view object);
  /// Counts a file load() returned but JITLink refused (it is deleted, like a corrupt one).
  void reject(const CompileOptions &opts, const std::string &key);

  DiskCacheCounters counters();

private:
  /// Whether `dir` may be used: created (0700) if absent, owned by this user, not writable by
  /// group or others. Warns once when not.
  bool usable_dir(const std::string &dir, bool create);
  void evict(const std::string &dir, int64_t max_bytes);
  void warn(const std::string &what);

  std::mutex mu_;
  DiskCacheCounters c_;
  bool warned_ = false;
};

} // namespace pto::codegen
