// gen_ops_doc.cpp - Writes docs/ops.md and docs/sharding_ops.md from the op registry.
//
//   gen_ops_doc [SOURCE_DIR]      (default: the source tree this build was configured from)
//
// Exits 1, after writing, when the registry has problems (planned rows, untested ops, a header
// that does not declare its op; see registry::problems) and lists them: the docs then mark
// those rows rather than claim them.
#include "op_registry.h"

#include <cstdio>
#include <fstream>
#include <string>

namespace {

bool write(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "gen_ops_doc: cannot write %s\n", path.c_str());
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  namespace reg = pto::registry;
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    std::fprintf(stderr, "usage: gen_ops_doc [SOURCE_DIR]\n");
    return 2;
  }
  const std::string dir = argc == 2 ? argv[1] : reg::source_dir();
  if (!write(dir + "/docs/ops.md", reg::render_ops_md()) ||
      !write(dir + "/docs/sharding_ops.md", reg::render_sharding_md()))
    return 1;
  const auto problems = reg::problems(dir);
  for (const auto &p : problems)
    std::fprintf(stderr, "gen_ops_doc: %s\n", p.c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "gen_ops_doc: %zu problem(s); the docs mark these rows\n",
                 problems.size());
    return 1;
  }
  return 0;
}
