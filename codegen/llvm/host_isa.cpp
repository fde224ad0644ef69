// host_isa.cpp - See host_isa.h: the host's features (LLVM), the process's target and PTO_ISA's
// check with the backend.
#include "llvm/host_isa.h"

#include "pto/env.h"
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
  return resolve_jit_target(env::raw(env::var("PTO_ISA")).value_or(""),
                            llvm::sys::getHostCPUName().str(), host_features());
}

std::mutex g_mu;
std::optional<JitTarget> g_target; ///< fixed once, never reset: references to it stay valid

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

bool target_has_feature(const JitTarget &t, const std::string &feature) {
  const std::string f = "," + t.features + ",";
  return f.find(",+" + feature + ",") != std::string::npos;
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

} // namespace pto::codegen
