// compile.h - The codegen driver: a verified ir::Program in, an Executable out, either
// JIT-compiled through LLVM (lower_llvm.h, jit_engine.h) or the reference interpreter.
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
  int vector_lanes = 16;       ///< fp32 lanes per vector op (<16 x float>)
  std::string dump_dir = ".";  ///< PTO_DUMP_DIR
  std::set<std::string> dump;  ///< stages to write: "ir", "llvm", "asm" (PTO_DUMP)
  /// The compile cache's bound from PTO_JIT_CACHE_MB, in bytes; nullopt when unset.
  std::optional<int64_t> cache_limit_bytes;
  /// The stages PTO_DUMP may name.
  static const std::vector<std::string> &dump_stages();
  /// Reads PTO_DUMP, PTO_DUMP_DIR and PTO_JIT_CACHE_MB (unset or empty: the defaults), and
  /// checks PTO_ISA (check_isa_env, passes/isa.h). Throws ArgumentError at `loc`
  /// naming the variable and the kernel `kernel` for a PTO_DUMP stage that does not exist
  /// (listing those that do), a PTO_JIT_CACHE_MB that is not an integer in [0, 2^40), or a bad
  /// PTO_ISA.
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

/// Compiles `p` to machine code for the host CPU (LLVM ORC LLJIT, O3). Results are cached in
/// memory by the structural form of `p` plus options, in a process-wide cache bounded by an LRU
/// on bytes (kernel_cache.h); `*compiled` (when given) says whether this call compiled or the
/// cache answered. Stage dumps (opts.dump) always compile, so that the files are written.
/// Throws CompileError (with the dump path) when LLVM fails, InternalError on a codegen bug.
std::shared_ptr<const Executable> compile_jit(const ir::Program &p, const CompileOptions &opts,
                                              bool *compiled = nullptr);
/// The reference interpreter over `p`: scalar C++ semantics, the same runtime calls.
std::shared_ptr<const Executable> make_interpreter(const ir::Program &p);

/// The site table of `p`: one entry per op in pre-order (loop bodies after their loop op, the
/// bodies of a paths op after it, path by path), "file:line: op" with the op as the user called
/// it (ir::Op::user_op for the inner ops of a composite).
std::vector<std::string> site_table(const ir::Program &p);

} // namespace pto::codegen
