// stage_dump.h - Writes compilation stages to PTO_DUMP_DIR when PTO_DUMP names them
// (`PTO_DUMP=ir,tiles,plan,llvm,asm` writes NAME.HASH.ir, .tiles, .plan, .ll, .s: NAME is the
// kernel name escaped for a file name, HASH tells one specialization of the kernel from
// another). The pipeline (pipeline.h) writes ir, tiles and plan; the JIT llvm and asm.
#pragma once

#include "passes/compile.h"

#include <cstdint>
#include <string>

namespace pto::codegen {

/// `name` as one file-name component: bytes outside [A-Za-z0-9_-] become %XX (so '/', '.',
/// "..", spaces and non-UTF-8 bytes cannot leave the directory or hide the file); injective,
/// cut to 128 bytes (the hash in the dump name keeps cut names apart).
std::string escape_file_name(const std::string &name);

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
