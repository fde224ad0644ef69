// jit_engine.h - LLVM ORC for the host CPU: O3 with the new pass manager, an object file from the
// host TargetMachine, linked by one process-wide LLJIT (JITLink) in which every compiled program
// has its own JITDylib (freed with the program). Runtime and SLEEF symbols are bound explicitly (no
// -rdynamic needed); optional .ll/.s dumps; counters of the JIT memory in use.
#pragma once

#include "llvm/host_target.h"
#include "passes/stage_dump.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace pto::codegen {

/// One compiled module: its JITDylib in the process-wide LLJIT. Destroying it removes the
/// JITDylib, which frees the module's code and data (thread-safe; any thread may do it).
class JitModule {
public:
  struct Impl;
  /// Made by jit_compile: `impl` owns the JITDylib, `entry` is its `pto_kernel`.
  JitModule(std::unique_ptr<Impl> impl, void *entry, int64_t code_bytes);
  JitModule(const JitModule &) = delete;
  JitModule &operator=(const JitModule &) = delete;
  ~JitModule();
  /// The address of the module's entry function `pto_kernel`.
  void *entry() const { return entry_; }
  /// JIT memory the module holds (code, data and their page rounding), in bytes.
  int64_t code_bytes() const { return code_bytes_; }

private:
  std::unique_ptr<Impl> impl_;
  void *entry_ = nullptr;
  int64_t code_bytes_ = 0;
};

/// Optimizes `m` at O3 for the host, dumps .ll/.s if requested, and emits its machine code as an
/// ELF relocatable object (the bytes the on-disk cache stores, kernel_cache_disk.h). Not
/// thread-safe: callers serialize (the host TargetMachine is shared). Throws CompileError when
/// LLVM fails, InternalError (after dumping .unopt.ll when PTO_DUMP names llvm) for invalid IR.
std::string jit_emit_object(std::unique_ptr<llvm::LLVMContext> ctx, std::unique_ptr<llvm::Module> m,
                            const StageDump &dump);

/// Links the object `object` (from jit_emit_object, in this process or an earlier one) into a
/// new JITDylib named after `name` and resolves its `pto_kernel`. Thread-safe. Throws
/// CompileError when JITLink refuses the object or it defines no `pto_kernel`.
std::unique_ptr<JitModule> jit_link_object(std::string_view object, const std::string &name);

/// jit_emit_object, then jit_link_object.
std::unique_ptr<JitModule> jit_compile(std::unique_ptr<llvm::LLVMContext> ctx,
                                       std::unique_ptr<llvm::Module> m, const StageDump &dump);

/// The address the JIT binds `name` to for generated code (its runtime and SLEEF symbols, in the
/// JITDylib every module links against first), or null when it binds no such symbol. Creates the
/// JIT on first use. For tests of the bindings.
void *jit_symbol_address(const std::string &name);

/// The JIT memory in use by every module alive, all threads.
struct JitMemory {
  int64_t modules = 0;  ///< JitModules alive
  int64_t bytes = 0;    ///< code and data, page-rounded
  int64_t mappings = 0; ///< allocations (mmap calls) holding them, one per linked object
};
JitMemory jit_memory();

} // namespace pto::codegen
