// lower_llvm.h - ir::Program -> one LLVM module with explicit <W x T> vector code, then machine
// code through jit_engine. Compute ops are grouped into fused row passes (fuse.h), shmem ops
// become runtime calls (pto/runtime/abi.h), loops become LLVM loops.
#pragma once

#include "passes/compile.h"
#include "passes/stage_dump.h"

#include <memory>
#include <string>
#include <string_view>

namespace pto::codegen {

/// Lowers `pp` by its fusion plan and site table, optimizes and JIT-compiles it. Throws
/// CompileError/InternalError.
std::shared_ptr<const Executable>
build_llvm_executable(const PlannedProgram &pp, const CompileOptions &opts, const StageDump &dump);

/// Lowers `pp` and optimizes it; returns its machine code as an ELF relocatable object (what the
/// on-disk cache stores). Writes the llvm/asm dumps `dump` asks for. Not thread-safe (callers
/// serialize builds). Throws CompileError/InternalError.
std::string build_llvm_object(const PlannedProgram &pp, const CompileOptions &opts,
                              const StageDump &dump);

/// The Executable of `object` (from build_llvm_object, in this process or an earlier one, of a
/// program with `pp`'s key) with `pp`'s site table; compile_ms is left 0. Thread-safe. Throws
/// CompileError when the object cannot be linked.
std::shared_ptr<Executable> link_llvm_executable(const PlannedProgram &pp, std::string_view object);

/// The module build_llvm_executable lowers `pp` to, before O3 (LLVM's textual IR): what the
/// lowering itself wrote, for the golden IR tests (tests/codegen/llvm_ir_test.cpp). Throws what
/// the lowering throws.
std::string lowered_llvm_ir(const PlannedProgram &pp, const CompileOptions &opts);

} // namespace pto::codegen
