// host_isa.cpp - See pto/codegen/host_isa.h. The x86-64 levels, PTO_ISA, and the SLEEF functions
// the lowering calls at each level.
#include "pto/codegen/host_isa.h"

#include "pto/error.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <mutex>
#include <set>
#include <variant>

// Every SLEEF function the lowering may call, as (name, accuracy suffix). A macro, not a table,
// because each entry must name SLEEF's symbols at every level by token pasting: a missing one is
// then a link error, not a JIT lookup failure at run time.
// clang-format off
#define PTO_SLEEF_FUNCTIONS(X)                                                                     \
  X(exp, u10) X(log, u10) X(exp2, u10) X(expm1, u10) X(log2, u10) X(log10, u10) X(log1p, u10)      \
  X(sin, u10) X(cos, u10) X(tan, u10) X(asin, u10) X(acos, u10) X(atan, u10) X(sinh, u10)          \
  X(cosh, u10) X(tanh, u10) X(asinh, u10) X(acosh, u10) X(atanh, u10) X(erf, u10) X(cbrt, u10)     \
  X(pow, u10) X(atan2, u10) X(erfc, u15) X(hypot, u05) X(fmod, )

// Float and double at each level (lanes and SLEEF's variant suffix), lowest level first.
#define PTO_SLEEF_VARIANTS(X, fn, acc)                                                             \
  X(fn##f4_##acc##sse2) X(fn##d2_##acc##sse2) X(fn##f4_##acc##sse4) X(fn##d2_##acc##sse4)          \
  X(fn##f8_##acc##avx2) X(fn##d4_##acc##avx2) X(fn##f16_##acc##avx512f) X(fn##d8_##acc##avx512f)
// clang-format on

// Declared opaquely: only their addresses are taken here; generated code calls them with the
// right vector types.
#define PTO_SLEEF_DECLARE_ONE(name) void Sleef_##name();
#define PTO_SLEEF_DECLARE(fn, acc) PTO_SLEEF_VARIANTS(PTO_SLEEF_DECLARE_ONE, fn, acc)
extern "C" {
PTO_SLEEF_FUNCTIONS(PTO_SLEEF_DECLARE)
}

namespace pto::codegen {

namespace {

/// One level: its PTO_ISA name, LLVM's generic CPU for it, SLEEF's variant suffix, the features
/// it needs from the host, and the features it may use (beyond those of the levels below).
struct Level {
  Isa isa;
  const char *name;
  const char *cpu;
  const char *sleef_variant;
  std::vector<const char *> needs;
  std::vector<const char *> adds;
};

const std::vector<Level> &levels() {
  static const std::vector<Level> l{
      {Isa::Sse2,
       "sse2",
       "x86-64",
       "sse2",
       {"sse2"},
       {"64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "x87"}},
      {Isa::Sse4,
       "sse4",
       "x86-64-v2",
       "sse4",
       {"sse3", "ssse3", "sse4.1", "sse4.2"},
       {"cx16", "sahf", "popcnt", "sse3", "ssse3", "sse4.1", "sse4.2", "crc32"}},
      {Isa::Avx2,
       "avx2",
       "x86-64-v3",
       "avx2",
       {"avx", "avx2", "fma"},
       {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}},
      {Isa::Avx512,
       "avx512",
       "x86-64-v4",
       "avx512f",
       {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
       {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "evex512"}},
  };
  return l;
}

const Level &level_of(Isa isa) { return levels()[static_cast<size_t>(isa)]; }

/// The features level `top` needs that the host lacks (those of every level up to it).
std::vector<std::string> missing(const Level &top, const std::map<std::string, bool> &host) {
  std::vector<std::string> out;
  for (const Level &l : levels()) {
    for (const char *f : l.needs)
      if (auto it = host.find(f); it == host.end() || !it->second)
        out.emplace_back(f);
    if (l.isa == top.isa)
      break;
  }
  return out;
}

/// "+f" for each host feature in levels up to `top`, "-f" for every other one.
std::string capped_features(const Level &top, const std::map<std::string, bool> &host) {
  std::set<std::string> allowed;
  for (const Level &l : levels()) {
    allowed.insert(l.adds.begin(), l.adds.end());
    if (l.isa == top.isa)
      break;
  }
  std::vector<std::string> out;
  for (const auto &[f, present] : host)
    out.push_back((present && allowed.count(f) ? "+" : "-") + f);
  return fmt::format("{}", fmt::join(out, ","));
}

/// The accepted values this host can run ("native" and the levels it has every feature of).
std::vector<std::string> host_names(const std::map<std::string, bool> &host) {
  std::vector<std::string> out{"native"};
  for (auto it = levels().rbegin(); it != levels().rend(); ++it)
    if (missing(*it, host).empty())
      out.emplace_back(it->name);
  return out;
}

const std::map<std::string, bool> &host_features() {
  static const std::map<std::string, bool> f = [] {
    std::map<std::string, bool> m;
    for (auto &e : llvm::sys::getHostCPUFeatures())
      m[e.first().str()] = e.second;
    return m;
  }();
  return f;
}

/// PTO_ISA on this host.
std::variant<JitTarget, IsaRefusal> resolve_env() {
  const char *v = std::getenv("PTO_ISA");
  return resolve_jit_target(v ? v : "", llvm::sys::getHostCPUName().str(), host_features());
}

/// `r`'s message; `context` (" (tracing kernel 'k')" or "") follows the problem.
std::string refusal_message(const IsaRefusal &r, const std::string &context) {
  return fmt::format("{}{}; expected one of: {}", r.problem, context, fmt::join(r.accepted, ", "));
}

std::mutex g_mu;
std::optional<JitTarget> g_target; ///< fixed once, never reset: references to it stay valid

} // namespace

const std::vector<std::string> &isa_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n{"native"};
    for (auto it = levels().rbegin(); it != levels().rend(); ++it)
      n.emplace_back(it->name);
    return n;
  }();
  return names;
}

std::variant<JitTarget, IsaRefusal>
resolve_jit_target(const std::string &request, const std::string &host_cpu,
                   const std::map<std::string, bool> &host_features) {
  JitTarget t;
  t.request = request.empty() ? "native" : request;
  if (t.request == "native") {
    t.cpu = host_cpu;
    std::vector<std::string> all;
    for (const auto &[f, present] : host_features)
      all.push_back((present ? "+" : "-") + f);
    t.features = fmt::format("{}", fmt::join(all, ","));
    for (const Level &l : levels())
      if (missing(l, host_features).empty())
        t.isa = l.isa;
    return t;
  }
  auto it = std::find_if(levels().begin(), levels().end(),
                         [&](const Level &l) { return t.request == l.name; });
  if (it == levels().end())
    return IsaRefusal{fmt::format("unknown value '{}'", t.request), host_names(host_features)};
  if (auto lack = missing(*it, host_features); !lack.empty())
    return IsaRefusal{fmt::format("'{}' needs CPU features this host lacks ({})", t.request,
                                  fmt::join(lack, ", ")),
                      host_names(host_features)};
  t.isa = it->isa;
  t.cpu = it->cpu;
  t.features = capped_features(*it, host_features);
  return t;
}

const JitTarget &jit_target() {
  std::lock_guard lk(g_mu);
  if (!g_target) {
    auto r = resolve_env();
    if (auto *no = std::get_if<IsaRefusal>(&r))
      throw ArgumentError("<codegen>", "PTO_ISA", refusal_message(*no, ""));
    g_target = std::get<JitTarget>(std::move(r));
  }
  return *g_target;
}

void check_isa_env(const std::source_location &loc, const std::string &kernel) {
  const std::string context = fmt::format(" (tracing kernel '{}')", kernel);
  auto r = resolve_env();
  if (auto *no = std::get_if<IsaRefusal>(&r))
    throw ArgumentError(loc, "PTO_ISA", refusal_message(*no, context));
  auto &t = std::get<JitTarget>(r);
  std::lock_guard lk(g_mu);
  if (!g_target)
    g_target = std::move(t);
  else if (g_target->request != t.request)
    throw ArgumentError(loc, "PTO_ISA",
                        fmt::format("'{}' differs from '{}', which this process's JIT was set up "
                                    "with{}; PTO_ISA is read once per process, at the first "
                                    "kernel trace",
                                    t.request, g_target->request, context));
}

const std::vector<SleefFunction> &sleef_functions() {
#define PTO_SLEEF_ENTRY(fn, acc) SleefFunction{#fn, #acc},
  static const std::vector<SleefFunction> f{PTO_SLEEF_FUNCTIONS(PTO_SLEEF_ENTRY)};
#undef PTO_SLEEF_ENTRY
  return f;
}

unsigned sleef_lanes(Isa isa, bool dbl) {
  unsigned f = isa == Isa::Avx512 ? 16 : isa == Isa::Avx2 ? 8 : 4;
  return dbl ? f / 2 : f;
}

std::string sleef_name(const std::string &fn, const std::string &acc, bool dbl, Isa isa) {
  const auto &all = sleef_functions();
  if (std::none_of(all.begin(), all.end(),
                   [&](const SleefFunction &s) { return fn == s.fn && acc == s.acc; }))
    throw InternalError("<codegen>", "lower_llvm",
                        fmt::format("SLEEF function '{}' with accuracy '{}' is not in "
                                    "sleef_functions() (a ptojit bug)",
                                    fn, acc));
  return fmt::format("Sleef_{}{}{}_{}{}", fn, dbl ? "d" : "f", sleef_lanes(isa, dbl), acc,
                     level_of(isa).sleef_variant);
}

std::vector<std::pair<std::string, void *>> sleef_symbols() {
  std::vector<std::pair<std::string, void *>> out;
#define PTO_SLEEF_BIND_ONE(name)                                                                   \
  out.emplace_back("Sleef_" #name, reinterpret_cast<void *>(&Sleef_##name));
#define PTO_SLEEF_BIND(fn, acc) PTO_SLEEF_VARIANTS(PTO_SLEEF_BIND_ONE, fn, acc)
  PTO_SLEEF_FUNCTIONS(PTO_SLEEF_BIND)
#undef PTO_SLEEF_BIND
#undef PTO_SLEEF_BIND_ONE
  return out;
}

} // namespace pto::codegen
