// host_isa.cpp - See host_isa.h: the host's features (LLVM), the process's target, PTO_ISA's
// check with the backend, and the SLEEF functions the lowering calls at each level.
#include "llvm/host_isa.h"

#include "pto/error.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <optional>
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

std::mutex g_mu;
std::optional<JitTarget> g_target; ///< fixed once, never reset: references to it stay valid

/// SLEEF's suffix for the variant of `isa`.
const char *sleef_variant(Isa isa) {
  switch (isa) {
  case Isa::Sse2:
    return "sse2";
  case Isa::Sse4:
    return "sse4";
  case Isa::Avx2:
    return "avx2";
  case Isa::Avx512:
    return "avx512f";
  }
  return "sse2";
}

} // namespace

const JitTarget &jit_target() {
  std::lock_guard lk(g_mu);
  if (!g_target) {
    auto r = resolve_env();
    if (auto *no = std::get_if<IsaRefusal>(&r))
      throw ArgumentError("<codegen>", "PTO_ISA", isa_refusal_message(*no, ""));
    g_target = std::get<JitTarget>(std::move(r));
  }
  return *g_target;
}

void check_isa_env(const std::source_location &loc, const std::string &kernel) {
  const std::string context = fmt::format(" (tracing kernel '{}')", kernel);
  auto r = resolve_env();
  if (auto *no = std::get_if<IsaRefusal>(&r))
    throw ArgumentError(loc, "PTO_ISA", isa_refusal_message(*no, context));
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
                     sleef_variant(isa));
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
