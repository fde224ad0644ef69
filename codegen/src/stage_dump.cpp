// stage_dump.cpp - See stage_dump.h.
#include "stage_dump.h"

#include "pto/error.h"

#include <filesystem>
#include <fstream>

namespace pto::codegen {

void StageDump::operator()(const std::string &stage, const std::string &ext,
                           const std::string &text) const {
  if (!wants(stage))
    return;
  std::error_code ec;
  std::filesystem::create_directories(opts_.dump_dir, ec);
  std::ofstream f(path(ext));
  f << text;
  if (!f)
    throw CompileError("<codegen>", "PTO_DUMP", "cannot write " + path(ext));
}

} // namespace pto::codegen
