// lower_llvm.h - ir::Program -> one LLVM module with explicit <W x T> vector code, then machine
// code through jit_engine. Compute ops are grouped into fused row passes (fuse.h), shmem ops
// become runtime calls (pto/runtime/abi.h), loops become LLVM loops.
#pragma once

#include "passes/compile.h"
#include "passes/stage_dump.h"

#include <memory>
#include <string>

namespace pto::codegen {

/// Lowers `pp` by its fusion plan and site table, optimizes and JIT-compiles it. Throws
/// CompileError/InternalError.
std::shared_ptr<const Executable>
build_llvm_executable(const PlannedProgram &pp, const CompileOptions &opts, const StageDump &dump);

/// The module build_llvm_executable lowers `pp` to, before O3 (LLVM's textual IR): what the
/// lowering itself wrote, for the golden IR tests (tests/codegen/llvm_ir_test.cpp). Throws what
/// the lowering throws.
std::string lowered_llvm_ir(const PlannedProgram &pp, const CompileOptions &opts);

} // namespace pto::codegen
