// stage_dump.h - Writes compilation stages to PTO_DUMP_DIR when PTO_DUMP names them
// (`PTO_DUMP=ir,llvm,asm` writes <kernel>.ir, <kernel>.ll, <kernel>.s).
#pragma once

#include "pto/codegen/compile.h"

#include <string>

namespace pto::codegen {

class StageDump {
public:
  StageDump(const CompileOptions &opts, std::string kernel) : opts_(opts), kernel_(std::move(kernel)) {}
  bool wants(const std::string &stage) const { return opts_.dump.count(stage) > 0; }
  /// Writes `text` to `<dump_dir>/<kernel>.<ext>` if `stage` is requested. Throws CompileError
  /// when the file cannot be written.
  void operator()(const std::string &stage, const std::string &ext, const std::string &text) const;
  std::string path(const std::string &ext) const { return opts_.dump_dir + "/" + kernel_ + "." + ext; }

private:
  const CompileOptions &opts_;
  std::string kernel_;
};

} // namespace pto::codegen
