// compile.cpp - Compile options from the environment.
#include "passes/compile.h"

#include "pto/env.h"
#include "pto/error.h"

#include "passes/isa.h"

#include <cstdlib>
#include <fmt/format.h>

namespace pto::codegen {

const std::vector<std::string> &CompileOptions::dump_stages() {
  return env::var("PTO_DUMP").values;
}

CompileOptions CompileOptions::from_env(const std::source_location &loc,
                                        const std::string &kernel) {
  CompileOptions o;
  const std::string context = fmt::format(" (tracing kernel '{}')", kernel);
  env::check_all(loc, context); // every PTO_* variable, also those this run does not read
  if (auto stages = env::read_list(env::var("PTO_DUMP"), loc, context))
    o.dump.insert(stages->begin(), stages->end());
  if (auto dir = env::read_text(env::var("PTO_DUMP_DIR")))
    o.dump_dir = *dir;
  if (auto mb = env::read_integer(env::var("PTO_JIT_CACHE_MB"), loc, context))
    o.cache_limit_bytes = *mb << 20;
  o.disk_cache = env::read_choice(env::var("PTO_CACHE"), loc, context) != "0";
  if (auto dir = env::read_text(env::var("PTO_CACHE_DIR")))
    o.disk_cache_dir = *dir;
  else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
    o.disk_cache_dir = std::string(xdg) + "/ptojit";
  else if (const char *home = std::getenv("HOME"); home && *home)
    o.disk_cache_dir = std::string(home) + "/.cache/ptojit";
  if (auto mb = env::read_integer(env::var("PTO_CACHE_MAX_MB"), loc, context))
    o.disk_cache_max_bytes = *mb << 20;
  check_isa_env(loc, kernel); // read once per process: not an option, not in the cache key
  return o;
}

} // namespace pto::codegen
