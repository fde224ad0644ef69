// compile.h - What the pipeline (pipeline.h) is configured by and ends in: compile options, and
// the two executors of a planned program, JIT-compiled through LLVM (llvm/) or the reference
// interpreter (interp/), behind one Executable interface.
#pragma once

#include "pto/ir/program.h"
#include "pto/runtime/abi.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <vector>

namespace pto::codegen {

struct CompileOptions {
  int vector_lanes = 16;      ///< fp32 lanes per vector op (<16 x float>)
  std::string dump_dir = "."; ///< PTO_DUMP_DIR
  std::set<std::string> dump; ///< stages to write, of dump_stages() (PTO_DUMP)
  /// The compile cache's bound from PTO_JIT_CACHE_MB, in bytes; nullopt when unset.
  std::optional<int64_t> cache_limit_bytes;
  /// The on-disk cache of compiled objects (llvm/kernel_cache_disk.h): off with PTO_CACHE=0 or
  /// when no directory is known. Neither it nor the fields below change code: not in any key.
  bool disk_cache = true;
  /// PTO_CACHE_DIR, else $XDG_CACHE_HOME/ptojit (an absolute XDG_CACHE_HOME), else
  /// $HOME/.cache/ptojit; empty (the cache off) when none is set.
  std::string disk_cache_dir;
  /// PTO_CACHE_MAX_MB in bytes, default 1 GiB: the bound the directory's files are evicted to.
  int64_t disk_cache_max_bytes = int64_t{1024} << 20;
  /// The stages PTO_DUMP may name, in pipeline order: "sharding" (pto::parallel's layouts and
  /// inserted collectives, NAME.HASH.sharding; only for kernels that use pto::parallel), "ir"
  /// (the verified program, NAME.HASH.ir),
  /// "tiles" (the tile plan, .tiles), "plan" (the fusion plan, .plan), "llvm" (the optimized
  /// module, .ll; the unoptimized one too, .unopt.ll, when LLVM rejects it), "asm" (.s). The
  /// first four are written for both executors, the last two by the JIT. PTO_DUMP=all names
  /// every one.
  static const std::vector<std::string> &dump_stages();
  /// Reads PTO_DUMP, PTO_DUMP_DIR, PTO_JIT_CACHE_MB, PTO_CACHE, PTO_CACHE_DIR and
  /// PTO_CACHE_MAX_MB (unset or empty: the defaults), and checks PTO_ISA (check_isa_env,
  /// passes/isa.h). Throws ArgumentError at `loc` naming the variable and the kernel `kernel`
  /// for a PTO_DUMP stage that does not exist (listing those that do), a PTO_JIT_CACHE_MB that
  /// is not an integer in [0, 2^40), a PTO_CACHE other than 0 or 1, a PTO_CACHE_MAX_MB that is
  /// not an integer in [1, 2^40), or a bad PTO_ISA.
  static CompileOptions from_env(const std::source_location &loc, const std::string &kernel);
};

/// A compiled program, callable on one PE. `args` are the tensor parameters' data pointers in
/// order, `dims` their shapes concatenated (row-major, contiguous tensors). Returns a pto_status;
/// on PTO_ERR the error is recorded in `ctx`.
class Executable {
public:
  virtual ~Executable() = default;
  virtual int32_t run(pto_ctx *ctx, void *const *args, const int64_t *dims) const = 0;
  /// "file:line: op" per call site, indexed by the `site` argument of runtime calls.
  const std::vector<std::string> &sites() const { return sites_; }
  /// Milliseconds spent compiling (0 for the interpreter).
  double compile_ms = 0;
  /// JIT memory the program holds (code and data, page-rounded; 0 for the interpreter).
  int64_t code_bytes = 0;

protected:
  std::vector<std::string> sites_;
};

struct PlannedProgram; // pipeline.h
class StageDump;       // stage_dump.h

/// The JIT backend: lowers the planned program `pp` to LLVM IR (its fusion plan and site table
/// as given), optimizes it at O3 and compiles it for the host CPU (LLVM ORC LLJIT). Results are
/// cached in memory by the printed program, its site table and the options, in a process-wide
/// cache bounded by an LRU on bytes (kernel_cache.h); `*compiled` (when given) says whether this
/// call compiled or the cache answered. The "llvm" and "asm" dumps always compile, so that their
/// files are written (through `dump`). Throws CompileError (with the dump path) when LLVM
/// fails, InternalError on a codegen bug. Defined in llvm/ (pto_llvm), or by pto_nojit, which
/// throws CompileError.
std::shared_ptr<const Executable> compile_jit(const PlannedProgram &pp, const CompileOptions &opts,
                                              const StageDump &dump, bool *compiled = nullptr);
/// The interpreter backend: the reference interpreter over `pp` (scalar C++ semantics, the
/// same runtime calls, the same site table), which it keeps alive. Defined in interp/.
std::shared_ptr<const Executable> make_interpreter(std::shared_ptr<const PlannedProgram> pp);

} // namespace pto::codegen
