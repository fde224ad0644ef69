// compile.cpp - The codegen driver: options from the environment, the call-site table, the
// in-memory kernel cache, stage dumps.
#include "pto/codegen/compile.h"

#include "pto/error.h"
#include "pto/ir/printer.h"
#include "stage_dump.h"
#include "lower_llvm.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

namespace pto::codegen {

CompileOptions CompileOptions::from_env() {
  CompileOptions o;
  if (const char *d = std::getenv("PTO_DUMP")) {
    std::stringstream ss(d);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty())
        o.dump.insert(item);
  }
  if (const char *dir = std::getenv("PTO_DUMP_DIR"))
    o.dump_dir = dir;
  return o;
}

namespace {
void collect_sites(const std::vector<ir::Op> &ops, std::vector<std::string> &out) {
  for (auto &op : ops) {
    out.push_back(format_location(op.where) + ": " +
                  (op.user_op ? op.user_op : ir::op_info(op.kind).name));
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

std::shared_ptr<const Executable> compile_jit(const ir::Program &p, const CompileOptions &opts) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Executable>> cache;
  std::string printed = ir::print(p);
  StageDump dump(opts, p.name);
  dump("ir", "ir", printed);
  // Key: the structural form plus the options that change code. Call sites are kept per program
  // (they only name locations in messages), so the key includes them too.
  std::string key = printed + fmt::format("|lanes={}|", opts.vector_lanes);
  for (auto &s : site_table(p))
    key += s + ";";
  std::lock_guard lk(mu);
  auto it = cache.find(key);
  if (it != cache.end() && opts.dump.empty())
    return it->second;
  auto exe = build_llvm_executable(p, opts, dump);
  cache[key] = exe;
  return exe;
}

} // namespace pto::codegen
