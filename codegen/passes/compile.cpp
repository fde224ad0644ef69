// compile.cpp - Compile options from the environment and the call-site table.
#include "passes/compile.h"
#include "passes/isa.h"

#include "pto/error.h"
#include "pto/ir/printer.h"


#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <sstream>

namespace pto::codegen {

const std::vector<std::string> &CompileOptions::dump_stages() {
  static const std::vector<std::string> stages{"ir", "llvm", "asm"};
  return stages;
}

CompileOptions CompileOptions::from_env(const std::source_location &loc,
                                        const std::string &kernel) {
  CompileOptions o;
  const auto &stages = dump_stages();
  if (const char *d = std::getenv("PTO_DUMP")) {
    std::stringstream ss(d);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) {
        if (std::find(stages.begin(), stages.end(), item) == stages.end())
          throw ArgumentError(loc, "PTO_DUMP",
                              fmt::format("unknown stage '{}' (tracing kernel '{}'); expected a "
                                          "comma-separated list of: {}",
                                          item, kernel, fmt::join(stages, ", ")));
        o.dump.insert(item);
      }
  }
  if (const char *dir = std::getenv("PTO_DUMP_DIR"); dir && *dir)
    o.dump_dir = dir;
  if (const char *mb = std::getenv("PTO_JIT_CACHE_MB"); mb && *mb) {
    constexpr int64_t kMaxMb = int64_t{1} << 40;
    int64_t v = -1;
    auto [end, ec] = std::from_chars(mb, mb + std::strlen(mb), v);
    if (ec != std::errc() || *end != '\0' || v < 0 || v >= kMaxMb)
      throw ArgumentError(loc, "PTO_JIT_CACHE_MB",
                          fmt::format("'{}' is not a size in MiB (tracing kernel '{}'); expected "
                                      "an integer in [0, {}), 0 to keep no unused code",
                                      mb, kernel, kMaxMb));
    o.cache_limit_bytes = v << 20;
  }
  check_isa_env(loc, kernel); // read once per process: not an option, not in the cache key
  return o;
}

namespace {
void collect_sites(const std::vector<ir::Op> &ops, std::vector<std::string> &out) {
  for (auto &op : ops) {
    out.push_back(format_location(op.where) + ": " + ir::site_name(op));
    collect_sites(op.body, out);
    for (auto &path : op.paths)
      collect_sites(path.body, out);
  }
}
} // namespace

std::vector<std::string> site_table(const ir::Program &p) {
  std::vector<std::string> s;
  collect_sites(p.body, s);
  return s;
}

} // namespace pto::codegen
