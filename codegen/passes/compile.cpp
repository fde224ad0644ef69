// compile.cpp - Compile options from the environment.
#include "passes/compile.h"

#include "pto/error.h"

#include "passes/isa.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <sstream>

namespace pto::codegen {

const std::vector<std::string> &CompileOptions::dump_stages() {
  static const std::vector<std::string> stages{"ir", "tiles", "plan", "llvm", "asm"};
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
        if (item == "all")
          o.dump.insert(stages.begin(), stages.end());
        else if (std::find(stages.begin(), stages.end(), item) == stages.end())
          throw ArgumentError(loc, "PTO_DUMP",
                              fmt::format("unknown stage '{}' (tracing kernel '{}'); expected a "
                                          "comma-separated list of: {}, or all",
                                          item, kernel, fmt::join(stages, ", ")));
        else
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

} // namespace pto::codegen
