// env.cpp - See env.h. No fmt here: base depends on the standard library only.
#include "pto/env.h"

#include "pto/error.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>

extern char **environ; // POSIX

namespace pto::env {

namespace {

constexpr int64_t kOneYearMs = int64_t{31536000000};

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string accepted(const Var &v) {
  switch (v.kind) {
  case Kind::Choice:
    return "one of: " + join(v.values);
  case Kind::List:
    return "a comma-separated list of: " + join(v.values) + (v.all_ok ? ", or all" : "");
  case Kind::Integer:
    return "a decimal integer in [" + std::to_string(v.lo) + ", " + std::to_string(v.hi) + "]";
  case Kind::Text:
    break;
  }
  return "any text";
}

[[noreturn]] void reject(const Var &v, const std::string &value, const std::string &why,
                         const std::source_location &loc, const std::string &context) {
  throw ArgumentError(loc, v.name,
                      "'" + value + "' " + why + context + "; expected " + accepted(v));
}

void expect_kind(const Var &v, Kind k) {
  if (v.kind != k)
    throw InternalError("<env>", v.name, "read as the wrong kind (a ptojit bug)");
}

} // namespace

const std::vector<Var> &variables() {
  static const std::vector<Var> vars{
      {"PTO_RUN_MODE",
       Kind::Choice,
       {"jit", "interpret"},
       0,
       0,
       false,
       "the executor of every kernel; default jit"},
      {"PTO_DUMP",
       Kind::List,
       {"sharding", "ir", "tiles", "plan", "llvm", "asm"},
       0,
       0,
       true,
       "the pipeline stages to write"},
      {"PTO_DUMP_DIR", Kind::Text, {}, 0, 0, false, "where the dumps go; default ."},
      {"PTO_JIT_CACHE_MB",
       Kind::Integer,
       {},
       0,
       (int64_t{1} << 40) - 1,
       false,
       "bound of the compile cache in MiB, 0 to keep no unused code; default 64"},
      {"PTO_CACHE",
       Kind::Choice,
       {"0", "1"},
       0,
       0,
       false,
       "0: no on-disk cache of compiled kernels (neither read nor written); default 1"},
      {"PTO_CACHE_DIR",
       Kind::Text,
       {},
       0,
       0,
       false,
       "directory of the on-disk kernel cache; default $XDG_CACHE_HOME/ptojit, else "
       "$HOME/.cache/ptojit"},
      {"PTO_CACHE_MAX_MB",
       Kind::Integer,
       {},
       1,
       (int64_t{1} << 40) - 1,
       false,
       "bound of the on-disk kernel cache in MiB (oldest files removed first); default 1024"},
      {"PTO_ISA",
       Kind::Choice,
       {"native", "avx512", "avx2", "sse4", "sse2"},
       0,
       0,
       false,
       "the instruction set the JIT compiles for; default native"},
      {"PTO_MAX_OPS",
       Kind::Integer,
       {},
       1,
       int64_t{1} << 30,
       false,
       "ops one kernel may trace; default 50000 (pto::kMaxKernelOps)"},
      {"PTO_SHMEM_DIRECT",
       Kind::Choice,
       {"0", "1"},
       0,
       0,
       false,
       "0: every put and get goes through the runtime; default 1"},
      {"PTO_DEADLOCK_TIMEOUT_MS",
       Kind::Integer,
       {},
       1,
       kOneYearMs,
       false,
       "milliseconds with no progress before a DeadlockError; default 30000"},
      {"PTO_NUM_THREADS",
       Kind::Integer,
       {},
       1,
       1024,
       false,
       "threads of this process that run kernel code at once; default the CPUs it may use"},
      {"PTO_HOST_TENSOR_GUARD",
       Kind::Choice,
       {"none", "canary", "pages"},
       0,
       0,
       false,
       "what surrounds a new HostTensor's data; default none"},
      {"PTO_MPI_SHARED",
       Kind::Choice,
       {"0", "1"},
       0,
       0,
       false,
       "MPI transport: 0 never uses shared-memory windows; default 1"},
      {"PTO_MPI_PROGRESS",
       Kind::Choice,
       {"0", "1"},
       0,
       0,
       false,
       "MPI transport: 0 runs no progress thread; default 1"},
  };
  return vars;
}

const Var &var(const char *name) {
  const auto &vars = variables();
  auto it = std::find_if(vars.begin(), vars.end(),
                         [&](const Var &v) { return std::string(v.name) == name; });
  if (it == vars.end())
    throw InternalError("<env>", name, "not in the table of PTO_* variables (a ptojit bug)");
  return *it;
}

std::optional<std::string> raw(const Var &v) {
  const char *s = std::getenv(v.name);
  if (!s || !*s)
    return std::nullopt;
  return std::string(s);
}

std::optional<std::string> read_choice(const Var &v, const std::source_location &loc,
                                       const std::string &context) {
  expect_kind(v, Kind::Choice);
  auto s = raw(v);
  if (s && std::find(v.values.begin(), v.values.end(), *s) == v.values.end())
    reject(v, *s, "is not a known value", loc, context);
  return s;
}

std::optional<std::vector<std::string>> read_list(const Var &v, const std::source_location &loc,
                                                  const std::string &context) {
  expect_kind(v, Kind::List);
  auto s = raw(v);
  if (!s)
    return std::nullopt;
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = s->find(',', at);
    const std::string item = s->substr(at, comma == std::string::npos ? comma : comma - at);
    if (item.empty())
      reject(v, *s, "has an empty item", loc, context);
    if (v.all_ok && item == "all")
      out.insert(out.end(), v.values.begin(), v.values.end());
    else if (std::find(v.values.begin(), v.values.end(), item) != v.values.end())
      out.push_back(item);
    else
      reject(v, *s, "names '" + item + "', which is not a known value", loc, context);
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

std::optional<int64_t> read_integer(const Var &v, const std::source_location &loc,
                                    const std::string &context) {
  expect_kind(v, Kind::Integer);
  auto s = raw(v);
  if (!s)
    return std::nullopt;
  // Digits only, accumulated with an overflow check: no sign, space, base prefix or suffix.
  int64_t x = 0;
  for (char c : *s) {
    if (c < '0' || c > '9')
      reject(v, *s, "is not a decimal integer", loc, context);
    if (x > (v.hi - (c - '0')) / 10)
      reject(v, *s, "is out of range", loc, context);
    x = x * 10 + (c - '0');
  }
  if (x < v.lo || x > v.hi)
    reject(v, *s, "is out of range", loc, context);
  return x;
}

std::optional<std::string> read_text(const Var &v) {
  expect_kind(v, Kind::Text);
  return raw(v);
}

namespace {
// The prefixes of the variables ptojit's own test suites, benchmarks and scripts read (tests/,
// bench/, scripts/: PTO_TIDY).
constexpr std::string_view kSuitePrefixes[] = {
    "PTO_FUZZ_",   "PTO_PROPERTY_", "PTO_COMPARE_", "PTO_STRESS_", "PTO_LITMUS_", "PTO_ULP_",
    "PTO_GOLDEN_", "PTO_TEST_",     "PTO_PEER_",    "PTO_STALL_",  "PTO_BENCH_",  "PTO_TIDY"};

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
} // namespace

std::vector<std::string> unknown_names() {
  std::vector<std::string> out;
  for (char **e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    const std::string_view name = entry.substr(0, eq);
    if (name.substr(0, 4) != "PTO_" || eq == std::string_view::npos)
      continue;
    if (std::any_of(variables().begin(), variables().end(),
                    [&](const Var &v) { return name == v.name; }) ||
        std::any_of(std::begin(kSuitePrefixes), std::end(kSuitePrefixes),
                    [&](std::string_view p) { return name.substr(0, p.size()) == p; }))
      continue;
    const Var *best = nullptr;
    size_t best_d = SIZE_MAX;
    for (const Var &v : variables())
      if (const size_t d = edit_distance(name, v.name); d < best_d) {
        best_d = d;
        best = &v;
      }
    std::string text(name);
    if (best && best_d <= 3)
      text += std::string(" (did you mean ") + best->name + "?)";
    out.push_back(std::move(text));
  }
  return out;
}

void check_all(const std::source_location &loc, const std::string &context) {
  {
    static std::mutex mu;
    static std::set<std::string> warned;
    const std::vector<std::string> unknown = unknown_names();
    std::lock_guard lock(mu);
    for (const auto &u : unknown)
      if (warned.insert(u).second)
        std::fprintf(stderr,
                     "ptojit: warning: %s is not a ptojit variable; it has no effect (the "
                     "README's \"Environment\" lists them)\n",
                     u.c_str());
  }
  for (const Var &v : variables())
    switch (v.kind) {
    case Kind::Choice:
      read_choice(v, loc, context);
      break;
    case Kind::List:
      read_list(v, loc, context);
      break;
    case Kind::Integer:
      read_integer(v, loc, context);
      break;
    case Kind::Text:
      break;
    }
}

} // namespace pto::env
