// isa.cpp - See isa.h: the x86-64 levels and what PTO_ISA resolves to on a given host.
#include "passes/isa.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace pto::codegen {

namespace {

/// One level: its PTO_ISA name, LLVM's generic CPU for it, the features it needs from the host,
/// and the features it may use (beyond those of the levels below).
struct Level {
  Isa isa;
  const char *name;
  const char *cpu;
  std::vector<const char *> needs;
  std::vector<const char *> adds;
};

const std::vector<Level> &levels() {
  static const std::vector<Level> l{
      {Isa::Sse2,
       "sse2",
       "x86-64",
       {"sse2"},
       {"64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "x87"}},
      {Isa::Sse4,
       "sse4",
       "x86-64-v2",
       {"sse3", "ssse3", "sse4.1", "sse4.2"},
       {"cx16", "sahf", "popcnt", "sse3", "ssse3", "sse4.1", "sse4.2", "crc32"}},
      {Isa::Avx2,
       "avx2",
       "x86-64-v3",
       {"avx", "avx2", "fma"},
       {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"}},
      {Isa::Avx512,
       "avx512",
       "x86-64-v4",
       {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
       {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "evex512"}},
  };
  return l;
}

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

/// "+f" for each host feature in the levels up to `top`, "-f" for every other one.
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

/// The values this host accepts: "native" and the levels it has every feature of.
std::vector<std::string> host_names(const std::map<std::string, bool> &host) {
  std::vector<std::string> out{"native"};
  for (auto it = levels().rbegin(); it != levels().rend(); ++it)
    if (missing(*it, host).empty())
      out.emplace_back(it->name);
  return out;
}

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

std::string isa_refusal_message(const IsaRefusal &r, const std::string &context) {
  return fmt::format("{}{}; expected one of: {}", r.problem, context, fmt::join(r.accepted, ", "));
}

} // namespace pto::codegen
