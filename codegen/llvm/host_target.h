// host_target.h - Host CPU facts the LLVM backend compiles for: the CPU name and features passed
// to LLVM and the x86-64 vector level (which SLEEF variants the lowering calls, vector_math.h),
// as PTO_ISA chose them (host_isa.h), and the target machine. The lowering and the JIT engine
// both read them from here.
#pragma once

#include "llvm/host_isa.h"

#include <memory>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace pto::codegen {

/// What the backend compiles for: the process's JIT target (jit_target(): the host CPU, capped
/// by PTO_ISA) and the target machine for it.
struct HostTarget : JitTarget {
  HostTarget();
  ~HostTarget();
  std::unique_ptr<llvm::TargetMachine> tm;
};

/// The host target, created once per process (initializes LLVM's native target on first use).
/// Throws CompileError if LLVM lacks the target or cannot create its target machine,
/// ArgumentError for a bad PTO_ISA (jit_target()).
HostTarget &host_target();

} // namespace pto::codegen
