// kernel_cache_disk.cpp - See kernel_cache_disk.h.
#include "llvm/kernel_cache_disk.h"

#include "llvm/host_target.h"
#include "passes/compile.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/Support/xxhash.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#ifndef PTO_VERSION_STRING
#define PTO_VERSION_STRING "unknown"
#endif

namespace pto::codegen {

namespace {

constexpr char kMagic[8] = {'P', 'T', 'O', 'J', 'I', 'T', 'O', 'C'};
constexpr const char *kSuffix = ".ptoc";
/// Temporary files of a crashed writer older than this are removed by eviction (seconds).
constexpr int64_t kStaleTempSeconds = 3600;

/// The fixed part of a cache file; the key and the object follow it.
struct Header {
  char magic[8];
  uint32_t format;
  uint32_t reserved;
  uint64_t key_hash;
  uint64_t key_bytes;
  uint64_t object_bytes;
  uint64_t checksum; ///< xxh3 of the header (this field zero), then of the key and object
};
static_assert(sizeof(Header) == 48);

uint64_t checksum_of(Header h, std::string_view key, std::string_view object) {
  h.checksum = 0;
  const uint64_t a =
      llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(&h), sizeof(h)));
  const uint64_t b = llvm::xxh3_64bits(llvm::StringRef(key.data(), key.size()));
  const uint64_t c = llvm::xxh3_64bits(llvm::StringRef(object.data(), object.size()));
  return a ^ (b * 0x9E3779B97F4A7C15ULL) ^ ((c << 1) | (c >> 63));
}

/// The ELF build id of the module (executable or shared library) holding this code, as hex;
/// failing that, its path, size and mtime. Distinguishes one build of ptojit from another,
/// whose lowering may emit different code for the same program.
std::string build_identity() {
  struct Search {
    uintptr_t addr;
    std::string id;
    std::string path;
  } s{reinterpret_cast<uintptr_t>(&build_identity), {}, {}};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) -> int {
        auto &s = *static_cast<Search *>(data);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum && !mine; ++i) {
          const auto &ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          mine = ph.p_type == PT_LOAD && s.addr >= lo && s.addr < lo + ph.p_memsz;
        }
        if (!mine)
          return 0;
        s.path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto &ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE)
            continue;
          // The loader reports segments as addresses: the note is mapped memory of this process.
          // NOLINTNEXTLINE(performance-no-int-to-ptr)
          const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
          const char *end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) n;
            std::memcpy(&n, p, sizeof(n));
            const char *name = p + sizeof(n);
            const char *desc = name + ((n.n_namesz + 3) & ~3U);
            if (desc + n.n_descsz > end)
              break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              for (uint32_t k = 0; k < n.n_descsz; ++k)
                s.id += fmt::format("{:02x}", static_cast<unsigned char>(desc[k]));
              return 1;
            }
            p = desc + ((n.n_descsz + 3) & ~3U);
          }
        }
        return 1;
      },
      &s);
  if (!s.id.empty())
    return s.id;
  struct stat st{};
  if (!s.path.empty() && ::stat(s.path.c_str(), &st) == 0)
    return fmt::format("{}:{}:{}.{}", s.path, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  return "no-build-id";
}

const std::string &key_suffix() {
  static const std::string s = [] {
    const HostTarget &ht = host_target();
    return fmt::format("|disk|format={}|cpu={}|features={}|isa={}|llvm={}|ptojit={}|build={}|O3",
                       kDiskCacheFormat, ht.cpu, ht.features, ht.request, LLVM_VERSION_STRING,
                       PTO_VERSION_STRING, build_identity());
  }();
  return s;
}

/// Reads all of `path`; nullopt when it cannot be opened (absent) or read.
std::optional<std::string> read_file(const std::string &path, bool &io_error) {
  io_error = false;
  // O_NONBLOCK: a FIFO put in place of an entry must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    io_error = errno != ENOENT;
    return std::nullopt;
  }
  std::optional<std::string> out;
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    std::string buf(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < buf.size()) {
      const ssize_t r = ::read(fd, buf.data() + got, buf.size() - got);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      got += static_cast<size_t>(r);
    }
    buf.resize(got); // a file that shrank while read fails the size check
    out = std::move(buf);
  } else {
    io_error = true;
  }
  ::close(fd);
  return out;
}

/// Writes all of `data` to `fd`; false on failure.
bool write_all(int fd, std::string_view data) {
  size_t put = 0;
  while (put < data.size()) {
    const ssize_t w = ::write(fd, data.data() + put, data.size() - put);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    put += static_cast<size_t>(w);
  }
  return true;
}

bool ends_with(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

DiskCache &DiskCache::get() {
  static DiskCache *c = new DiskCache; // never destroyed, like the in-memory cache
  return *c;
}

std::string DiskCache::full_key(const std::string &mem_key) { return mem_key + key_suffix(); }

std::string DiskCache::entry_path(const std::string &dir, const std::string &key) {
  return fmt::format("{}/{:016x}{}", dir, llvm::xxh3_64bits(key), kSuffix);
}

void DiskCache::warn(const std::string &what) {
  // Caller holds mu_.
  ++c_.errors;
  if (warned_)
    return;
  warned_ = true;
  std::fprintf(stderr,
               "ptojit: warning: on-disk kernel cache: %s; compiling without it (set "
               "PTO_CACHE_DIR to a writable directory, or PTO_CACHE=0)\n",
               what.c_str());
}

bool DiskCache::usable_dir(const std::string &dir, bool create) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    if (!create)
      return false; // nothing stored yet: a plain miss
    // mkdir -p, each new level 0700.
    for (size_t at = 1; at <= dir.size(); ++at) {
      if (at != dir.size() && dir[at] != '/')
        continue;
      const std::string part = dir.substr(0, at);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
        warn(fmt::format("cannot create {}: {}", part, std::strerror(errno)));
        return false;
      }
    }
    if (::stat(dir.c_str(), &st) != 0) {
      warn(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
      return false;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    warn(fmt::format("{} is not a directory", dir));
    return false;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    warn(fmt::format("{} is not owned by this user or is writable by others (mode {:o}): it "
                     "would run code others can change",
                     dir, st.st_mode & 0777));
    return false;
  }
  return true;
}

std::optional<std::string> DiskCache::load(const CompileOptions &opts, const std::string &key) {
  if (!opts.disk_cache || opts.disk_cache_dir.empty())
    return std::nullopt;
  std::lock_guard lk(mu_);
  if (!usable_dir(opts.disk_cache_dir, false)) {
    ++c_.misses;
    return std::nullopt;
  }
  const std::string path = entry_path(opts.disk_cache_dir, key);
  bool io_error = false;
  auto file = read_file(path, io_error);
  if (!file) {
    if (io_error)
      warn(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    ++c_.misses;
    return std::nullopt;
  }
  auto refuse = [&] {
    ++c_.rejected;
    ::unlink(path.c_str()); // rebuilt and stored again by the caller
    return std::nullopt;
  };
  Header h{};
  if (file->size() < sizeof(h))
    return refuse();
  std::memcpy(&h, file->data(), sizeof(h));
  // Sizes first (each bounded by the file's size, so that the sum cannot overflow).
  const uint64_t rest = file->size() - sizeof(h);
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.format != kDiskCacheFormat ||
      h.key_bytes != key.size() || h.key_bytes > rest || h.object_bytes != rest - h.key_bytes ||
      h.key_hash != llvm::xxh3_64bits(key))
    return refuse();
  const std::string_view body(*file);
  const std::string_view stored_key = body.substr(sizeof(h), h.key_bytes);
  const std::string_view object = body.substr(sizeof(h) + h.key_bytes);
  if (stored_key != key || checksum_of(h, stored_key, object) != h.checksum)
    return refuse();
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); // most recently used (best effort)
  ++c_.hits;
  return std::string(object);
}

void DiskCache::reject(const CompileOptions &opts, const std::string &key) {
  std::lock_guard lk(mu_);
  --c_.hits;
  ++c_.rejected;
  ::unlink(entry_path(opts.disk_cache_dir, key).c_str());
}

void DiskCache::store(const CompileOptions &opts, const std::string &key, std::string_view object) {
  if (!opts.disk_cache || opts.disk_cache_dir.empty())
    return;
  std::lock_guard lk(mu_);
  const std::string &dir = opts.disk_cache_dir;
  if (!usable_dir(dir, true))
    return;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.format = kDiskCacheFormat;
  h.key_hash = llvm::xxh3_64bits(key);
  h.key_bytes = key.size();
  h.object_bytes = object.size();
  h.checksum = checksum_of(h, key, object);
  const std::string path = entry_path(dir, key);
  static std::atomic<uint64_t> serial{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), serial.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    warn(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
    return;
  }
  const bool ok = write_all(fd, std::string_view(reinterpret_cast<const char *>(&h), sizeof(h))) &&
                  write_all(fd, key) && write_all(fd, object);
  const int saved = errno;
  if (::close(fd) != 0 || !ok) {
    warn(fmt::format("cannot write {}: {}", tmp, std::strerror(ok ? errno : saved)));
    ::unlink(tmp.c_str());
    return;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    warn(fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(errno)));
    ::unlink(tmp.c_str());
    return;
  }
  ++c_.writes;
  evict(dir, opts.disk_cache_max_bytes);
}

void DiskCache::evict(const std::string &dir, int64_t max_bytes) {
  // Caller holds mu_. Other processes may evict at the same time: a file already gone is fine.
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  struct File {
    std::string path;
    int64_t bytes;
    timespec mtime;
  };
  std::vector<File> files;
  int64_t total = 0;
  const time_t now = ::time(nullptr);
  while (const dirent *e = ::readdir(d)) {
    const std::string name = e->d_name;
    const bool entry = ends_with(name, kSuffix);
    const bool temp = name.find(std::string(kSuffix) + ".tmp.") != std::string::npos;
    if (!entry && !temp)
      continue;
    std::string path = dir;
    path += '/';
    path += name;
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (temp) {
      if (now - st.st_mtim.tv_sec > kStaleTempSeconds)
        ::unlink(path.c_str());
      continue;
    }
    files.push_back({path, static_cast<int64_t>(st.st_size), st.st_mtim});
    total += static_cast<int64_t>(st.st_size);
  }
  ::closedir(d);
  if (total <= max_bytes)
    return;
  std::sort(files.begin(), files.end(), [](const File &a, const File &b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const File &f : files) {
    if (total <= max_bytes)
      break;
    if (::unlink(f.path.c_str()) == 0)
      ++c_.evictions;
    total -= f.bytes;
  }
}

DiskCacheCounters DiskCache::counters() {
  std::lock_guard lk(mu_);
  return c_;
}

} // namespace pto::codegen
