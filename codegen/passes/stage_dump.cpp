// stage_dump.cpp - See stage_dump.h.
#include "passes/stage_dump.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace pto::codegen {

StageDump::StageDump(const CompileOptions &opts, const std::string &kernel, uint64_t spec_hash)
    : opts_(opts),
      stem_(pto::escape_file_name(kernel) + fmt::format(".{:08x}", uint32_t(spec_hash))) {}

void StageDump::operator()(const std::string &stage, const std::string &ext,
                           const std::string &text) const {
  if (!wants(stage))
    return;
  std::error_code ec;
  std::filesystem::create_directories(opts_.dump_dir, ec);
  std::ofstream f(path(ext));
  f << text;
  f.close();
  if (f)
    return;
  // Dumps are a debugging aid: an unwritable directory must not fail the user's kernel.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr,
                 "ptojit: warning: PTO_DUMP: cannot write %s%s%s; stage dumps are skipped "
                 "(check PTO_DUMP_DIR)\n",
                 path(ext).c_str(), ec ? ": " : "", ec ? ec.message().c_str() : "");
}

} // namespace pto::codegen
