// jit_engine.h - LLVM ORC LLJIT for the host CPU: O3 with the new pass manager, runtime and SLEEF
// symbols bound explicitly (no -rdynamic needed), optional .ll/.s dumps.
#pragma once

#include "stage_dump.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

namespace pto::codegen {

/// Host CPU facts used by lowering.
struct HostTarget {
  std::string cpu;
  std::string features; ///< "+avx2,+fma,..." as LLVM target features
  bool avx512f = false;
  std::unique_ptr<llvm::TargetMachine> tm;
};
/// The host target (created once per process). Throws CompileError if LLVM lacks the target.
HostTarget &host_target();

/// A JIT-compiled module that owns its LLJIT instance.
class JitModule {
public:
  ~JitModule();
  void *lookup(const std::string &name) const;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Optimizes `m` at O3 for the host, dumps .ll/.s if requested, and compiles it with LLJIT.
/// Throws CompileError on failure (naming the dump path when one was written).
std::unique_ptr<JitModule> jit_compile(std::unique_ptr<llvm::LLVMContext> ctx,
                                       std::unique_ptr<llvm::Module> m, const StageDump &dump);

} // namespace pto::codegen
