// stage_dump.h - Writes compilation stages to PTO_DUMP_DIR when PTO_DUMP names them
// (`PTO_DUMP=ir,tiles,plan,llvm,asm` writes NAME.HASH.ir, .tiles, .plan, .ll, .s: NAME is the
// kernel name escaped for a file name, HASH tells one specialization of the kernel from
// another). The pipeline (pipeline.h) writes ir, tiles and plan; the JIT llvm and asm.
#pragma once

#include "pto/file_name.h" // escape_file_name

#include "passes/compile.h"

#include <cstdint>
#include <string>

namespace pto::codegen {

class StageDump {
public:
  /// Dumps of kernel `kernel`'s specialization whose program has structural hash `spec_hash`.
  StageDump(const CompileOptions &opts, const std::string &kernel, uint64_t spec_hash);
  bool wants(const std::string &stage) const { return opts_.dump.count(stage) > 0; }
  /// Writes `text` to path(ext) if `stage` is requested. A file that cannot be written is
  /// skipped with a warning on stderr (once per process); the compile goes on.
  void operator()(const std::string &stage, const std::string &ext, const std::string &text) const;
  /// `<dump_dir>/<escaped kernel>.<8 hex digits of spec_hash>.<ext>`.
  std::string path(const std::string &ext) const {
    return opts_.dump_dir + "/" + stem_ + "." + ext;
  }

private:
  const CompileOptions &opts_;
  std::string stem_;
};

} // namespace pto::codegen
