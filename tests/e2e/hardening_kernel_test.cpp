// hardening_kernel_test.cpp - pto::jit's kernel cache and entry (issue 8): bounded JIT memory
// for kernels created and dropped in a loop, compile-once across World::run calls, calls made
// while a kernel is being traced, kernel-entry and argument mismatch messages, JitOptions::specs
// checks, the PTO_RUN_MODE / PTO_DUMP / PTO_JIT_CACHE_MB variables, dump file names, and the
// user's file:line on errors raised away from an op. Expected values are plain loops here.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/env_var.h"
#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdlib.h>
#include <string>
#include <typeinfo>
#include <unistd.h>
#include <vector>

namespace dist = pto::distributed;
namespace fs = std::filesystem;
using doctest::Contains;
using support::EnvVar;
using support::thrown;

namespace {

/// "hardening_kernel_test.cpp:LINE", as messages start.
std::string at(int line) { return "hardening_kernel_test.cpp:" + std::to_string(line); }

/// Restores the compile cache's default bound at the end of the scope.
struct CacheLimit {
  explicit CacheLimit(std::optional<int64_t> bytes) { pto::set_jit_cache_limit(bytes); }
  ~CacheLimit() { pto::set_jit_cache_limit(std::nullopt); }
};

/// A fresh empty directory under the system temp dir, removed with its contents at the end of
/// the scope.
class TempDir {
public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "pto_hardening_XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

pto::HostTensor ramp(std::vector<int64_t> shape, double scale = 0.5) {
  pto::HostTensor t(pto::DT_FP32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(i) * scale);
  return t;
}

/// Every y[i] == x[i] + c.
bool is_x_plus(const pto::HostTensor &x, const pto::HostTensor &y, double c) {
  for (int64_t i = 0; i < x.numel(); ++i)
    if (y.get(i) != x.get(i) + c)
      return false;
  return true;
}

/// y = x + c, one kernel per call (c is a constant: each value is a distinct program).
auto add_kernel(const std::string &name, pto::JitOptions opts = {}) {
  return pto::jit(
      name,
      [](pto::Tensor x, pto::Tensor y, double c) {
        pto::set_vec_tile_shapes(4, 8);
        pto::assemble(pto::add(x, c), {0, 0}, y);
      },
      std::move(opts));
}

int64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

/// Runs `fn` with stderr going to a file; returns what was written.
std::string capture_stderr(const std::function<void()> &fn) {
  TempDir dir;
  const fs::path file = dir.path() / "stderr.txt";
  std::fflush(stderr);
  const int saved = dup(2);
  const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  dup2(fd, 2);
  try {
    fn();
  } catch (...) {
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    throw;
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
    ++n;
  return n;
}

} // namespace

// ---- compile cache: bounded, and code freed when nothing holds it -------------------------
// JIT only: the interpreter holds no machine code.

TEST_CASE("hardening kernel: a moved-from Kernel is an ArgumentError at the call, not a crash") {
  auto x = ramp({4, 8});
  pto::HostTensor y(pto::DT_FP32, {4, 8});
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    auto k = add_kernel("moved_kernel", support::opts(m));
    auto copy = k; // copies share the specializations
    copy(x, y, 1.0);
    auto moved = std::move(k);
    CHECK(k.stats().traces == 0); // NOLINT(bugprone-use-after-move)
    CHECK(k.last_ir().empty());   // NOLINT(bugprone-use-after-move)
    const int line = __LINE__ + 1;
    auto call = [&] { k(x, y, 1.0); }; // NOLINT(bugprone-use-after-move)
    support::expect_error<pto::ArgumentError>(call, "hardening_kernel_test.cpp", line, "jit",
                                              "this pto::Kernel was moved from");
    moved(x, y, 2.0);
    CHECK(is_x_plus(x, y, 2.0));
    CHECK(moved.stats().traces == 2); // 1.0 (through the copy) and 2.0
    k = std::move(moved);             // a moved-from Kernel can be assigned again
    k(x, y, 3.0);
    CHECK(is_x_plus(x, y, 3.0));
  }
}

TEST_CASE("hardening kernel: 300 distinct short-lived kernels keep JIT memory bounded") {
  // Nothing cached at the start: what is alive then belongs to kernels other tests keep.
  CacheLimit limit(0);
  const auto base = pto::jit_cache_stats();
  constexpr int64_t kLimit = int64_t{1} << 20;
  pto::set_jit_cache_limit(kLimit);
  auto x = ramp({4, 8});
  pto::HostTensor y(pto::DT_FP32, {4, 8});
  int64_t rss_warm = 0, most_entries = 0;
  for (int i = 0; i < 300; ++i) {
    {
      auto k = add_kernel("short_lived", support::opts(pto::RunMode::Jit));
      k(x, y, double(i));
      REQUIRE(is_x_plus(x, y, double(i)));
    } // the kernel is gone: only the cache may hold its code
    const auto s = pto::jit_cache_stats();
    CAPTURE(i);
    REQUIRE(s.bytes <= kLimit);
    REQUIRE(s.live_programs <= base.live_programs + s.entries);
    REQUIRE(s.live_code_bytes <= base.live_code_bytes + s.bytes);
    REQUIRE(s.live_mappings <= base.live_mappings + s.entries);
    most_entries = std::max(most_entries, s.entries);
    if (i == 30) // allocator pools and LLVM's tables have grown by now
      rss_warm = resident_bytes();
  }
  const auto full = pto::jit_cache_stats();
  CHECK(most_entries > 0);                                      // the cache did cache
  CHECK(full.evictions - base.evictions >= 300 - most_entries); // and stayed within its bound
  // The old engine kept ~640 KB per program: 270 more programs would add ~170 MB. Under ASan or
  // valgrind freed memory is quarantined, not returned, so resident size measures nothing there
  // (the live_* counters above still check that code is freed).
  if (!support::alloc_failure_aborts())
    CHECK(resident_bytes() - rss_warm < (int64_t{32} << 20));
  // With no cache, every program's code is freed.
  pto::set_jit_cache_limit(0);
  const auto none = pto::jit_cache_stats();
  CHECK(none.entries == 0);
  CHECK(none.live_programs == base.live_programs);
  CHECK(none.live_code_bytes == base.live_code_bytes);
  CHECK(none.live_mappings == base.live_mappings);
}

TEST_CASE("hardening kernel: PEs compiling and dropping kernels at once leave no code behind") {
  CacheLimit limit(0); // every drop frees code while other PEs compile
  const auto base = pto::jit_cache_stats();
  const int n = 4;
  std::vector<int> wrong(n, 0);
  pto::runtime::World world(n);
  world.run([&](int pe) {
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    for (int i = 0; i < 8; ++i) {
      auto k = add_kernel("concurrent", support::opts(pto::RunMode::Jit));
      const double c = 100.0 * pe + i; // a distinct program per PE and round
      k(x, y, c);
      wrong[size_t(pe)] += is_x_plus(x, y, c) ? 0 : 1;
    }
  });
  CHECK(wrong == std::vector<int>(n, 0));
  const auto after = pto::jit_cache_stats();
  CHECK(after.live_programs == base.live_programs);
  CHECK(after.live_code_bytes == base.live_code_bytes);
}

TEST_CASE("hardening kernel: a program evicted while its kernel lives keeps running") {
  CacheLimit limit(std::nullopt);
  auto x = ramp({4, 8});
  pto::HostTensor y(pto::DT_FP32, {4, 8});
  auto k = add_kernel("evicted_alive", support::opts(pto::RunMode::Jit));
  k(x, y, 1.0);
  REQUIRE(is_x_plus(x, y, 1.0));
  const auto before = pto::jit_cache_stats();
  REQUIRE(before.live_programs >= 1);
  pto::set_jit_cache_limit(0); // evicts everything, including k's program
  const auto evicted = pto::jit_cache_stats();
  CHECK(evicted.entries == 0);
  CHECK(evicted.live_programs >= 1); // k still holds it
  k(x, y, 1.0);
  CHECK(is_x_plus(x, y, 1.0));
  CHECK(k.stats().traces == 1);
  CHECK(k.stats().compiles == 1);
  const int64_t alive = pto::jit_cache_stats().live_programs;
  {
    auto gone = std::move(k); // dropping the last holder frees the code
  }
  CHECK(pto::jit_cache_stats().live_programs == alive - 1);
}

TEST_CASE("hardening kernel: equal programs from two kernel objects compile once") {
  CacheLimit limit(std::nullopt);
  auto x = ramp({4, 8});
  pto::HostTensor y(pto::DT_FP32, {4, 8});
  const int64_t hits = pto::jit_cache_stats().hits;
  std::vector<pto::KernelStats> stats;
  for (int i = 0; i < 2; ++i) { // same function, same lines: the same program
    auto k = add_kernel("twin", support::opts(pto::RunMode::Jit));
    k(x, y, 2.5);
    CHECK(is_x_plus(x, y, 2.5));
    stats.push_back(k.stats());
  }
  CHECK(stats[0].traces == 1);
  CHECK(stats[0].compiles == 1);
  CHECK(stats[1].traces == 1);
  CHECK(stats[1].compiles == 0); // a cache hit is not a compile
  CHECK(pto::jit_cache_stats().hits == hits + 1);
}

TEST_CASE("hardening kernel: PTO_JIT_CACHE_MB bounds the cache; bad values are ArgumentErrors") {
  CacheLimit limit(std::nullopt); // the environment rules
  auto x = ramp({4, 8});
  pto::HostTensor y(pto::DT_FP32, {4, 8});
  {
    EnvVar mb("PTO_JIT_CACHE_MB", "3");
    auto k = add_kernel("cache_env", support::opts(pto::RunMode::Jit));
    k(x, y, 7.0);
    CHECK(is_x_plus(x, y, 7.0));
    CHECK(pto::jit_cache_stats().limit_bytes == int64_t{3} << 20);
  }
  for (const char *bad : {"lots", "-1", "12MB", "99999999999999999999"}) {
    CAPTURE(std::string(bad));
    EnvVar mb("PTO_JIT_CACHE_MB", bad);
    auto k = add_kernel("cache_env_bad", support::opts(pto::RunMode::Jit));
    const int line = __LINE__ + 1;
    std::string msg = thrown<pto::ArgumentError>([&] { k(x, y, 1.0); });
    CHECK(msg.find(at(line) + ": PTO_JIT_CACHE_MB: '" + bad + "' is ") == 0);
    CHECK_MESSAGE(msg.find("kernel 'cache_env_bad'") != std::string::npos, msg);
  }
  const int line = __LINE__ + 1;
  std::string msg = thrown<pto::ArgumentError>([] { pto::set_jit_cache_limit(-5); });
  CHECK(msg.find(at(line) + ": set_jit_cache_limit: limit must be >= 0") == 0);
}

// ---- compile once: a shmem kernel in a second World::run ------------------------------------

TEST_CASE("hardening kernel: a shmem kernel traces and compiles once across World::run calls") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "ar_twice",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(dist::allreduce(x, dist::Reduction::SUM), {0, 0}, y);
        },
        support::opts(mode));
    const int n = 3;
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.push_back(ramp({4, 8}, 1.0 + p));
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
    }
    auto check_sum = [&] {
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < 32; ++i) // sum over PEs of i * (1 + p) = i * (1 + 2 + 3)
          REQUIRE(ys[size_t(p)].get(i) == double(i) * 6);
    };
    pto::runtime::World world(n);
    for (int run = 0; run < 3; ++run) {
      world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
      check_sum();
    }
    pto::runtime::World other(n); // another World of the same size runs the same program
    other.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    check_sum();
    CHECK(k.stats().traces == 1);
    CHECK(k.stats().compiles == (mode == pto::RunMode::Jit ? 1 : 0));
    CHECK(k.stats().calls == 4 * n);
  }
}

TEST_CASE("hardening kernel: a program is reused only while the group sizes it read hold") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    // The trace reads the size of group "pair" (and no shmem tensor records it): y = x * size.
    auto k = pto::jit(
        "group_size",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::mul(x, double(dist::n_pes("pair"))), {0, 0}, y);
        },
        support::opts(mode));
    auto x = ramp({4, 8});
    std::vector<pto::HostTensor> ys;
    for (int p = 0; p < 4; ++p)
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
    auto run = [&](const std::vector<int> &pair, bool extra_group, double factor) {
      pto::runtime::World world(4);
      world.create_group("pair", pair);
      if (extra_group)
        world.create_group("other", {3});
      world.run([&](int pe) { k(x, ys[size_t(pe)]); });
      for (auto &y : ys)
        for (int64_t i = 0; i < 32; ++i)
          REQUIRE(y.get(i) == x.get(i) * factor);
    };
    run({0, 1}, false, 2);
    CHECK(k.stats().traces == 1);
    run({0, 1, 2}, false, 3); // "pair" has another size: a new program
    CHECK(k.stats().traces == 2);
    run({2, 3}, true, 2); // same size again, plus a group the trace never read: reused
    CHECK(k.stats().traces == 2);
  }
}

// ---- calls while a kernel is being traced ---------------------------------------------------

TEST_CASE("hardening kernel: a kernel that calls itself while traced is an ArgumentError") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    bool recurse = true;
    int line = 0;
    std::function<void()> again;
    auto k = pto::jit(
        "self_caller",
        [&](pto::Tensor a, pto::Tensor b) {
          if (recurse)
            again();
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::add(a, 1.0), {0, 0}, b);
        },
        support::opts(mode));
    again = [&] {
      line = __LINE__ + 1;
      k(x, y);
    };
    std::string msg = thrown<pto::ArgumentError>([&] { k(x, y); });
    CHECK(msg.find(at(line) + ": self_caller: kernel 'self_caller' is called while it is being "
                              "traced") == 0);
    // The kernel is usable afterwards (its lock was released, nothing half-traced was kept).
    recurse = false;
    k(x, y);
    CHECK(is_x_plus(x, y, 1.0));
    CHECK(k.stats().traces == 1);
  }
}

TEST_CASE("hardening kernel: a kernel called from another kernel's trace is an ArgumentError") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    auto plus_one = [](pto::Tensor a, pto::Tensor b) {
      pto::set_vec_tile_shapes(4, 8);
      pto::assemble(pto::add(a, 1.0), {0, 0}, b);
    };
    auto inner = pto::jit("inner", plus_one, support::opts(mode));
    int line = 0;
    auto outer = pto::jit(
        "outer",
        [&](pto::Tensor, pto::Tensor) {
          line = __LINE__ + 1;
          inner(x, y);
        },
        support::opts(mode));
    std::string msg = thrown<pto::ArgumentError>([&] { outer(x, y); });
    CHECK(msg.find(at(line) + ": inner: kernel 'inner' is called while kernel 'outer' is being "
                              "traced") == 0);
    CHECK(inner.stats().calls == 0); // nothing ran at trace time
    // As documented: calling the function itself traces its ops into the caller.
    auto inlined = pto::jit("outer_inlined", plus_one, support::opts(mode));
    inlined(x, y);
    CHECK(is_x_plus(x, y, 1.0));
  }
}

// ---- kernel entry and argument mismatches ---------------------------------------------------

TEST_CASE("hardening kernel: PEs with different shmem tensors get shapes, dtypes and the call") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    int create_line = 0;
    auto k = pto::jit(
        "ragged_entry",
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 8);
          auto rows = x.shape()[0].concrete(); // PE 1 has 3 rows, the others 2
          create_line = __LINE__ + 1;
          auto s = dist::create_shmem_tensor("world", 2, x.dtype(), {rows, 8});
          auto me = dist::my_symbolic_pe("world");
          auto put = dist::shmem_put(x, {0, 0}, s, me);
          pto::assemble(dist::shmem_get(s, me, {.pred = {put}}), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < 2; ++p) {
      xs.push_back(ramp({p == 1 ? 3 : 2, 8}));
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{p == 1 ? 3 : 2, 8});
    }
    pto::runtime::World world(2, {.deadlock_timeout_ms = 10000});
    const int call_line = __LINE__ + 3;
    std::string msg = thrown<pto::DistributedError>([&] {
      world.run([&](int pe) {
        k(xs[size_t(pe)], ys[size_t(pe)]); // every PE reports its own call
      });
    });
    CHECK_MESSAGE(msg.find(at(call_line) + ": ragged_entry: PEs 0 and 1 of group 'world' declared "
                                           "different shmem tensors (shmem tensor 0 is DT_FP32 "
                                           "[2, 8]") == 0,
                  msg);
    CHECK_MESSAGE(msg.find("on PE 0 (created at " + at(create_line) + ") but DT_FP32 [3, 8]") !=
                      std::string::npos,
                  msg);
    CHECK(msg.find("layouts 0x") == std::string::npos); // no hashes
  }
}

TEST_CASE("hardening kernel: arguments that contradict a spec show both shapes") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = add_kernel("fixed_cols", support::opts(mode, {{{pto::DYNAMIC, 8}}, {}}));
    auto x = ramp({4, 9});
    pto::HostTensor y(pto::DT_FP32, {4, 9});
    const int line = __LINE__ + 1;
    std::string msg = thrown<pto::ArgumentError>([&] { k(x, y, 1.0); });
    CHECK(msg == at(line) + ": fixed_cols: tensor argument 0 has shape [4, 9], the kernel "
                            "declares [DYNAMIC, 8]: dim 1 is 9, the kernel fixes it to 8");
  }
}

TEST_CASE("hardening kernel: JitOptions::specs with more entries than tensors is rejected") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    // The message starts at add_kernel's pto::jit line (where the specs were given).
    auto k = add_kernel("too_many_specs", support::opts(mode, {{}, {}, {{4, 8}}}));
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    const int line = __LINE__ + 1;
    std::string msg = thrown<pto::ArgumentError>([&] { k(x, y, 1.0); });
    CHECK_MESSAGE(msg.find("hardening_kernel_test.cpp:") == 0, msg);
    CHECK(msg.find(": too_many_specs: JitOptions::specs has 3 entries, but the call at " +
                   at(line) + " passes 2 tensor arguments") != std::string::npos);
    CHECK(k.stats().traces == 0);
  }
}

// ---- environment ----------------------------------------------------------------------------

TEST_CASE("hardening kernel: an unknown PTO_RUN_MODE is an ArgumentError listing the modes") {
  auto x = ramp({4, 8});
  pto::HostTensor y(pto::DT_FP32, {4, 8});
  {
    EnvVar mode("PTO_RUN_MODE", "interpreter");
    auto k = add_kernel("run_mode_env");
    const int line = __LINE__ + 1;
    std::string msg = thrown<pto::ArgumentError>([&] { k(x, y, 1.0); });
    CHECK(msg == at(line) + ": PTO_RUN_MODE: 'interpreter' is not a known value (tracing kernel "
                            "'run_mode_env'); expected one of: jit, interpret");
    // A kernel that chooses its mode still reports the typo.
    for (auto m : support::run_modes()) {
      auto chosen = add_kernel("run_mode_env_chosen", support::opts(m));
      CHECK_THROWS_AS(chosen(x, y, 1.0), pto::ArgumentError);
    }
  }
  for (const char *value : {"interpret", "jit"}) {
    CAPTURE(std::string(value));
    EnvVar mode("PTO_RUN_MODE", value);
    auto k = add_kernel("run_mode_env_ok");
    k(x, y, 2.0);
    CHECK(is_x_plus(x, y, 2.0));
    CHECK(k.stats().compiles == (std::string(value) == "jit" ? 1 : 0)); // interpret: no LLVM
  }
}

TEST_CASE("hardening kernel: an unknown PTO_DUMP stage is an ArgumentError listing the stages") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    EnvVar dump("PTO_DUMP", "ir,tile");
    auto k = add_kernel("dump_env", support::opts(mode));
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    const int line = __LINE__ + 1;
    std::string msg = thrown<pto::ArgumentError>([&] { k(x, y, 1.0); });
    CHECK(msg == at(line) + ": PTO_DUMP: 'ir,tile' names 'tile', which is not a known value "
                            "(tracing kernel 'dump_env'); expected a comma-separated list of: "
                            "sharding, ir, tiles, plan, llvm, asm, or all");
  }
}

TEST_CASE("hardening kernel: dump files stay in PTO_DUMP_DIR, one set per specialization") {
  TempDir tmp;
  const fs::path &root = tmp.path();
  const fs::path dir = root / "dumps";
  EnvVar dump("PTO_DUMP", "ir,llvm");
  EnvVar dump_dir("PTO_DUMP_DIR", dir.c_str());
  // A kernel name is user text: "../x" and "/" must not leave the directory.
  const std::string name = "../evil/k";
  auto k = add_kernel(name, support::opts(pto::RunMode::Jit));
  for (int64_t rows : {4, 2}) { // two specializations
    auto x = ramp({rows, 8});
    pto::HostTensor y(pto::DT_FP32, {rows, 8});
    k(x, y, 1.0);
    CHECK(is_x_plus(x, y, 1.0));
  }
  CHECK(k.stats().traces == 2);
  CHECK(!fs::exists(root / "evil"));
  std::map<std::string, std::set<std::string>> by_spec; // stem -> extensions
  for (const auto &f : fs::directory_iterator(dir)) {
    const std::string file = f.path().filename().string();
    CAPTURE(file);
    const std::string prefix = "%2E%2E%2Fevil%2Fk."; // the name, escaped
    REQUIRE(file.rfind(prefix, 0) == 0);
    const auto dot = file.find('.', prefix.size());
    REQUIRE(dot == prefix.size() + 8); // 8 hex digits tell the specializations apart
    by_spec[file.substr(0, dot)].insert(file.substr(dot + 1));
    if (file.substr(dot + 1) == "ir") { // the IR keeps the name as written
      std::ifstream in(f.path());
      std::string first;
      std::getline(in, first);
      CHECK(first == "kernel ../evil/k");
    }
  }
  CHECK(by_spec.size() == 2);
  for (const auto &[stem, exts] : by_spec)
    CHECK(exts == std::set<std::string>{"ir", "ll"});
}

TEST_CASE("hardening kernel: PTO_DUMP=all writes every stage; both executors dump one plan") {
  TempDir tmp;
  std::map<pto::RunMode, std::map<std::string, std::string>> files; // mode -> ext -> text
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    const fs::path dir = tmp.path() / support::mode_name(mode);
    EnvVar dump("PTO_DUMP", "all");
    EnvVar dump_dir("PTO_DUMP_DIR", dir.c_str());
    auto k = add_kernel("dump_all", support::opts(mode));
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    k(x, y, 1.0);
    CHECK(is_x_plus(x, y, 1.0));
    for (const auto &f : fs::directory_iterator(dir)) {
      const std::string file = f.path().filename().string();
      const std::string stem = "dump_all.";
      REQUIRE(file.rfind(stem, 0) == 0);
      std::ifstream in(f.path());
      std::stringstream text;
      text << in.rdbuf();
      files[mode][file.substr(stem.size() + 9)] = text.str(); // after "<8 hex digits>."
    }
    std::set<std::string> exts;
    for (const auto &[ext, text] : files[mode])
      exts.insert(ext);
    // The pipeline writes ir, tiles and plan for both executors; only the JIT has LLVM stages.
    if (mode == pto::RunMode::Jit)
      CHECK(exts == std::set<std::string>{"ir", "tiles", "plan", "ll", "s"});
    else
      CHECK(exts == std::set<std::string>{"ir", "tiles", "plan"});
    CHECK(files[mode]["ir"].rfind("kernel dump_all\n", 0) == 0);
    CHECK(files[mode]["tiles"].rfind("tiles of kernel dump_all\n", 0) == 0);
    CHECK(files[mode]["plan"] == "fusion plan of kernel dump_all\n"
                                 "region kernel:\n"
                                 "  group 0 (ops 0-1)\n"
                                 "group 0: space [4, 8] tile [4, 8], 2 ops in 1 row pass\n"
                                 "  pass 0:\n"
                                 "    op 0 %t2 = add(%arg0, scalar 1)\n"
                                 "    op 1 assemble(%t2) -> %t3 (%arg1 @[0, 0])\n"
                                 "  scratch: none\n"
                                 "  stores: none\n"
                                 "storage: none\n");
  }
  if (files.size() == 2)
    for (const char *ext : {"ir", "tiles", "plan"})
      CHECK(files[pto::RunMode::Jit][ext] == files[pto::RunMode::Interpret][ext]);
}

TEST_CASE("hardening kernel: an unwritable PTO_DUMP_DIR warns once and the kernels run") {
  TempDir tmp;
  const fs::path &root = tmp.path();
  std::ofstream(root / "a_file") << "not a directory";
  EnvVar dump("PTO_DUMP", "ir");
  EnvVar dump_dir("PTO_DUMP_DIR", (root / "a_file" / "sub").c_str());
  auto k = add_kernel("dump_nowhere", support::opts(pto::RunMode::Jit));
  std::string err = capture_stderr([&] {
    for (int64_t rows : {4, 2}) {
      auto x = ramp({rows, 8});
      pto::HostTensor y(pto::DT_FP32, {rows, 8});
      k(x, y, 3.0);
      CHECK(is_x_plus(x, y, 3.0));
    }
  });
  CHECK_MESSAGE(count(err, "ptojit: warning: PTO_DUMP: cannot write") == 1, err);
  CHECK(k.stats().traces == 2);
}

// ---- errors raised away from an op carry the user's line ------------------------------------

TEST_CASE("hardening kernel: a tensor kept from an earlier trace is a ShapeError at the use") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    pto::Tensor kept;
    auto k = pto::jit(
        "keeper",
        [&](pto::Tensor x, pto::Tensor y) {
          kept = x;
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::add(x, 1.0), {0, 0}, y);
        },
        support::opts(mode));
    auto x = ramp({4, 8});
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    k(x, y);
    int line = __LINE__ + 1;
    std::string msg = thrown<pto::ShapeError>([&] { (void)kept.shape(); });
    CHECK(msg.find(at(line) + ": shape: tensor %t0 is used outside the trace of the kernel that "
                              "created it") == 0);
    // Inside another kernel's trace it is just as stale.
    auto other = pto::jit(
        "user_of_kept",
        [&](pto::Tensor, pto::Tensor) {
          line = __LINE__ + 1;
          (void)kept.dtype();
        },
        support::opts(mode));
    msg = thrown<pto::ShapeError>([&] { other(x, y); });
    CHECK(msg.find(at(line) + ": dtype: tensor %t0 is used outside the trace") == 0);
  }
}

TEST_CASE("hardening kernel: scratch memory that cannot be allocated names the op's line" *
          doctest::skip(support::alloc_failure_aborts())) {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    int line = 0;
    auto k = pto::jit(
        "huge_local",
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          // 2^45 rows of 8 fp32 per input row: 2^50 bytes, past any address space.
          line = __LINE__ + 1;
          auto big = pto::full({x.shape()[0] * (int64_t{1} << 45), 8}, 3.0, pto::DT_FP32);
          auto s = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {1, 8});
          auto put = dist::shmem_put(pto::view(big, {1, 8}, {0, 0}), {0, 0}, s, 0);
          pto::assemble(dist::shmem_get(s, 0, {.pred = {put}}), {0, 0}, y);
        },
        support::opts(mode, {{{pto::DYNAMIC, 8}}, {}}));
    auto x = ramp({1, 8});
    pto::HostTensor y(pto::DT_FP32, {1, 8});
    std::string msg = thrown<pto::RuntimeError>([&] { k(x, y); });
    CHECK_MESSAGE(msg.find(at(line) + ": full: cannot allocate ") == 0, msg);
    CHECK(msg.find("bytes of scratch memory for a local tensor") != std::string::npos);
  }
}

TEST_CASE("hardening kernel: parse_reduction names the caller's line") {
  const int line = __LINE__ + 1;
  std::string msg = thrown<pto::ArgumentError>([] { (void)dist::parse_reduction("avg"); });
  CHECK(msg == at(line) + ": parse_reduction: expected sum, max, min or prod, got 'avg'");
}
