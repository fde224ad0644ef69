// disk_cache_test.cpp - The on-disk cache of compiled kernels (codegen/llvm/kernel_cache_disk.h;
// PTO_CACHE, PTO_CACHE_DIR, PTO_CACHE_MAX_MB): a miss stores an entry and a later process-level
// miss links it; a corrupt, truncated or stale entry is refused, deleted and rebuilt; two
// processes compiling the same kernel into one directory at once; PTO_CACHE=0; an unusable
// directory warns and goes on; eviction to the size bound; PTO_DUMP with a hit. Every case runs
// with the in-memory cache bounded to 0 bytes, so that a new kernel object misses it and reaches
// the disk. Results are checked against values computed here, in both executors (the
// interpreter never touches the disk cache).
#include "pto/pto.h"

#include "support/env_var.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <spawn.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ; // NOLINT(readability-redundant-declaration): posix_spawn's environment

using support::EnvVar;
namespace fs = std::filesystem;

namespace {

/// A fresh directory under the system's temporary one, removed with the object.
class TempDir {
public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ptojit-disk-cache-test.XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Bounds the in-memory cache to 0 bytes for the scope: a new kernel object compiles (or loads).
class NoMemoryCache {
public:
  NoMemoryCache() { pto::set_jit_cache_limit(0); }
  ~NoMemoryCache() { pto::set_jit_cache_limit(std::nullopt); }
  NoMemoryCache(const NoMemoryCache &) = delete;
  NoMemoryCache &operator=(const NoMemoryCache &) = delete;
};

/// The cache files (*.ptoc) and temporary files in `dir`.
std::vector<fs::path> entries(const std::string &dir, bool temporaries = false) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool tmp = name.find(".tmp.") != std::string::npos;
    if (tmp == temporaries && name.find(".ptoc") != std::string::npos)
      out.push_back(e.path());
  }
  return out;
}

std::string read_all(const fs::path &p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path &p, const std::string &s) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << s;
}

/// y = x * 2 + 3 over an [8, 16] fp32 tensor, in a new kernel object each time.
auto affine(pto::RunMode m) {
  return pto::jit(
      "disk_cache_affine",
      [](pto::Tensor x, pto::Tensor y) {
        pto::set_vec_tile_shapes(8, 16);
        pto::assemble(x * 2.0 + 3.0, {0, 0}, y);
      },
      support::opts(m));
}

/// Runs a new affine kernel in mode `m` and checks every element against x * 2 + 3 computed here.
void run_affine(pto::RunMode m) {
  pto::HostTensor x(pto::DT_FP32, {8, 16}), y(pto::DT_FP32, {8, 16});
  auto *xs = static_cast<float *>(x.data());
  for (int i = 0; i < 128; ++i)
    xs[i] = static_cast<float>(i % 17) - 8.5F;
  auto k = affine(m);
  k(x, y);
  const auto *ys = static_cast<const float *>(y.data());
  int wrong = 0;
  for (int i = 0; i < 128; ++i)
    wrong += ys[i] != xs[i] * 2.0F + 3.0F;
  CHECK(wrong == 0);
}

void run_both() {
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    run_affine(m);
  }
}

bool jit_available() {
  const auto modes = support::run_modes();
  return std::find(modes.begin(), modes.end(), pto::RunMode::Jit) != modes.end();
}

/// Runs this test binary's case `test_case` in a child process with `env` added; returns the
/// child's pid.
pid_t spawn_self(const std::string &test_case, const std::vector<std::string> &env) {
  std::vector<std::string> envs(env);
  for (char **e = environ; *e; ++e) {
    const std::string var = *e;
    const std::string name = var.substr(0, var.find('='));
    if (std::none_of(env.begin(), env.end(),
                     [&](const std::string &s) { return s.rfind(name + "=", 0) == 0; }))
      envs.push_back(var);
  }
  std::vector<char *> envp;
  for (auto &s : envs)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--test-case=" + test_case;
  std::string quiet = "--no-version=true";
  std::vector<char *> argv{exe.data(), filter.data(), quiet.data(), nullptr};
  pid_t pid = -1;
  REQUIRE(::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()) == 0);
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

} // namespace

TEST_CASE("disk cache: a miss stores the object, a later miss in memory links it") {
  if (!jit_available())
    return;
  TempDir dir;
  EnvVar d("PTO_CACHE_DIR", dir.path().c_str());
  EnvVar on("PTO_CACHE", nullptr);
  NoMemoryCache no_mem;
  const auto s0 = pto::jit_cache_stats();
  run_both();
  const auto s1 = pto::jit_cache_stats();
  CHECK(s1.disk_misses == s0.disk_misses + 1);
  CHECK(s1.disk_writes == s0.disk_writes + 1);
  CHECK(s1.disk_hits == s0.disk_hits);
  REQUIRE(entries(dir.path()).size() == 1);
  CHECK(entries(dir.path(), true).empty()); // no temporary file left
  // The directory is private: the cache holds code this process runs.
  struct stat st{};
  REQUIRE(::stat(dir.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 022) == 0);
  run_both();
  const auto s2 = pto::jit_cache_stats();
  CHECK(s2.disk_hits == s1.disk_hits + 1);
  CHECK(s2.disk_writes == s1.disk_writes);
  CHECK(s2.disk_rejected == s1.disk_rejected);
  CHECK(entries(dir.path()).size() == 1);
}

TEST_CASE("disk cache: a corrupt, truncated or stale entry is refused and rebuilt") {
  if (!jit_available())
    return;
  TempDir dir;
  EnvVar d("PTO_CACHE_DIR", dir.path().c_str());
  NoMemoryCache no_mem;
  run_affine(pto::RunMode::Jit);
  REQUIRE(entries(dir.path()).size() == 1);
  const fs::path file = entries(dir.path())[0];
  const std::string good = read_all(file);
  REQUIRE(good.size() > 100);
  struct Damage {
    const char *what;
    std::string bytes;
  };
  std::string flipped = good;
  flipped[flipped.size() - 7] = static_cast<char>(flipped[flipped.size() - 7] ^ 0x40);
  std::string stale = good;
  stale[8] = static_cast<char>(stale[8] + 1); // the header's format version
  std::string other_key = good;
  other_key[60] = static_cast<char>(other_key[60] ^ 1); // in the stored key
  const std::vector<Damage> damages{
      {"one bit of the object flipped", flipped},  {"truncated", good.substr(0, good.size() / 2)},
      {"header only", good.substr(0, 20)},         {"empty", ""},
      {"another format version", stale},           {"another key", other_key},
      {"not a cache file", std::string(4096, 'x')}};
  for (const auto &dmg : damages) {
    CAPTURE(std::string(dmg.what));
    write_all(file, dmg.bytes);
    const auto s0 = pto::jit_cache_stats();
    run_both();
    const auto s1 = pto::jit_cache_stats();
    CHECK(s1.disk_rejected == s0.disk_rejected + 1);
    CHECK(s1.disk_hits == s0.disk_hits);
    CHECK(s1.disk_writes == s0.disk_writes + 1);
    CHECK(read_all(file) == good); // rebuilt: the same object again
  }
  const auto s0 = pto::jit_cache_stats();
  run_affine(pto::RunMode::Jit);
  CHECK(pto::jit_cache_stats().disk_hits == s0.disk_hits + 1);
}

TEST_CASE("disk cache: a FIFO in place of an entry is refused at once, not waited on") {
  if (!jit_available())
    return;
  TempDir dir;
  EnvVar d("PTO_CACHE_DIR", dir.path().c_str());
  NoMemoryCache no_mem;
  run_affine(pto::RunMode::Jit);
  REQUIRE(entries(dir.path()).size() == 1);
  const fs::path file = entries(dir.path())[0];
  const std::string good = read_all(file);
  fs::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0); // no writer: a blocking open would never return
  run_both();
  CHECK(fs::is_regular_file(file)); // replaced by the rebuilt entry
  CHECK(read_all(file) == good);
}

TEST_CASE("disk cache: PTO_CACHE=0 neither reads nor writes") {
  if (!jit_available())
    return;
  TempDir dir;
  EnvVar d("PTO_CACHE_DIR", dir.path().c_str());
  NoMemoryCache no_mem;
  run_affine(pto::RunMode::Jit); // stored
  EnvVar off("PTO_CACHE", "0");
  const auto s0 = pto::jit_cache_stats();
  std::error_code ec;
  fs::remove(entries(dir.path())[0], ec);
  run_both();
  const auto s1 = pto::jit_cache_stats();
  CHECK(s1.disk_hits == s0.disk_hits);
  CHECK(s1.disk_misses == s0.disk_misses);
  CHECK(s1.disk_writes == s0.disk_writes);
  CHECK(entries(dir.path()).empty());
}

TEST_CASE("disk cache: an unusable directory warns and the call goes on") {
  if (!jit_available())
    return;
  TempDir dir;
  NoMemoryCache no_mem;
  // Under a regular file: the directory cannot be created.
  write_all(fs::path(dir.path()) / "file", "x");
  const std::string under_file = dir.path() + "/file/cache";
  // Writable by others: refused (the cache holds code this process runs).
  const std::string shared = dir.path() + "/shared";
  REQUIRE(::mkdir(shared.c_str(), 0777) == 0);
  REQUIRE(::chmod(shared.c_str(), 0777) == 0);
  for (const std::string &bad : {under_file, shared}) {
    CAPTURE(bad);
    EnvVar d("PTO_CACHE_DIR", bad.c_str());
    const auto s0 = pto::jit_cache_stats();
    run_both();
    const auto s1 = pto::jit_cache_stats();
    CHECK(s1.disk_errors > s0.disk_errors);
    CHECK(s1.disk_writes == s0.disk_writes);
    CHECK(s1.disk_hits == s0.disk_hits);
  }
  CHECK(entries(shared).empty());
}

TEST_CASE("disk cache: files past PTO_CACHE_MAX_MB are evicted oldest first") {
  if (!jit_available())
    return;
  TempDir dir;
  EnvVar d("PTO_CACHE_DIR", dir.path().c_str());
  EnvVar mb("PTO_CACHE_MAX_MB", "1");
  NoMemoryCache no_mem;
  // Three old entries of 400 KiB each (their content is never read: eviction goes by size and
  // mtime), the oldest first; then a store must bring the directory under 1 MiB.
  const std::vector<std::string> names{"00000000000000a1.ptoc", "00000000000000a2.ptoc",
                                       "00000000000000a3.ptoc"};
  for (size_t i = 0; i < names.size(); ++i) {
    const fs::path p = fs::path(dir.path()) / names[i];
    write_all(p, std::string(400 << 10, 'o'));
    const timespec t[2] = {{1000000000 + static_cast<time_t>(i) * 100, 0},
                           {1000000000 + static_cast<time_t>(i) * 100, 0}};
    REQUIRE(::utimensat(AT_FDCWD, p.c_str(), t, 0) == 0);
  }
  // A temporary file a crashed writer left long ago is removed too.
  const fs::path stale_tmp = fs::path(dir.path()) / "00000000000000a9.ptoc.tmp.1.0";
  write_all(stale_tmp, "partial");
  const timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  REQUIRE(::utimensat(AT_FDCWD, stale_tmp.c_str(), old, 0) == 0);
  const auto s0 = pto::jit_cache_stats();
  run_affine(pto::RunMode::Jit);
  const auto s1 = pto::jit_cache_stats();
  CHECK(s1.disk_writes == s0.disk_writes + 1);
  CHECK(s1.disk_evictions == s0.disk_evictions + 1); // the oldest, a1
  CHECK(!fs::exists(fs::path(dir.path()) / names[0]));
  CHECK(fs::exists(fs::path(dir.path()) / names[1]));
  CHECK(fs::exists(fs::path(dir.path()) / names[2]));
  CHECK(!fs::exists(stale_tmp));
  CHECK(entries(dir.path()).size() == 3);
  // The new entry survives and is used.
  run_affine(pto::RunMode::Jit);
  CHECK(pto::jit_cache_stats().disk_hits == s1.disk_hits + 1);
}

TEST_CASE("disk cache: PTO_DUMP with a cache hit") {
  if (!jit_available())
    return;
  TempDir dir, dumps;
  EnvVar d("PTO_CACHE_DIR", dir.path().c_str());
  EnvVar dd("PTO_DUMP_DIR", dumps.path().c_str());
  NoMemoryCache no_mem;
  run_affine(pto::RunMode::Jit); // stored
  auto count = [&](const std::string &ext) {
    int n = 0;
    for (const auto &e : fs::directory_iterator(dumps.path()))
      n += e.path().string().size() > ext.size() &&
           e.path().string().compare(e.path().string().size() - ext.size(), ext.size(), ext) == 0;
    return n;
  };
  {
    // The pipeline's stages are written before the backend: a hit writes them too.
    EnvVar dump("PTO_DUMP", "ir,plan");
    const auto s0 = pto::jit_cache_stats();
    run_affine(pto::RunMode::Jit);
    CHECK(pto::jit_cache_stats().disk_hits == s0.disk_hits + 1);
    CHECK(count(".ir") == 1);
    CHECK(count(".plan") == 1);
  }
  {
    // The LLVM stages need a build: the cache is not read, the object is stored again.
    EnvVar dump("PTO_DUMP", "llvm,asm");
    const auto s0 = pto::jit_cache_stats();
    run_affine(pto::RunMode::Jit);
    const auto s1 = pto::jit_cache_stats();
    CHECK(s1.disk_hits == s0.disk_hits);
    CHECK(s1.disk_writes == s0.disk_writes + 1);
    CHECK(count(".ll") == 1);
    CHECK(count(".s") == 1);
  }
}

// A child process of the case below (runs only when it sets PTO_TEST_DISK_CACHE_CHILD): one run
// of the kernel; PTO_TEST_DISK_CACHE_CHILD=hit also requires that it was linked from the disk.
TEST_CASE("disk cache child") {
  const char *role = std::getenv("PTO_TEST_DISK_CACHE_CHILD");
  if (!role)
    return;
  run_affine(pto::RunMode::Jit);
  const auto s = pto::jit_cache_stats();
  CHECK(s.disk_rejected == 0);
  CHECK(s.disk_errors == 0);
  if (std::string(role) == "hit")
    CHECK(s.disk_hits == 1);
  else
    CHECK(s.disk_hits + s.disk_writes == 1);
}

TEST_CASE("disk cache: two processes compiling one kernel into one directory at once" *
          doctest::test_suite("slow")) {
  if (!jit_available())
    return;
  TempDir dir;
  const std::string env_dir = "PTO_CACHE_DIR=" + dir.path();
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    std::error_code ec;
    for (const auto &e : entries(dir.path()))
      fs::remove(e, ec);
    const pid_t a = spawn_self("disk cache child", {env_dir, "PTO_TEST_DISK_CACHE_CHILD=1"});
    const pid_t b = spawn_self("disk cache child", {env_dir, "PTO_TEST_DISK_CACHE_CHILD=1"});
    CHECK(wait_exit(a) == 0);
    CHECK(wait_exit(b) == 0);
    CHECK(entries(dir.path()).size() == 1);
    CHECK(entries(dir.path(), true).empty());
    const pid_t c = spawn_self("disk cache child", {env_dir, "PTO_TEST_DISK_CACHE_CHILD=hit"});
    CHECK(wait_exit(c) == 0);
  }
}
