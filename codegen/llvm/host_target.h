// host_target.h - Host CPU facts the LLVM backend compiles for: the CPU name and features passed
// to LLVM, the x86-64 vector level (which SLEEF variants the lowering calls, vector_math.h), and
// the target machine. The lowering and the JIT engine both read them from here.
#pragma once

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace pto::codegen {

/// The x86-64 vector levels, lowest first: the psABI's x86-64 (SSE2), x86-64-v2 (SSE4.2),
/// x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512).
enum class Isa { Sse2, Sse4, Avx2, Avx512 };
/// Every level, lowest first.
inline constexpr Isa kIsas[] = {Isa::Sse2, Isa::Sse4, Isa::Avx2, Isa::Avx512};

/// What the backend compiles for.
struct HostTarget {
  HostTarget();
  ~HostTarget();
  std::string cpu;      ///< LLVM CPU name ("skylake-avx512")
  std::string features; ///< "+avx2,+fma,..." as LLVM target features
  Isa isa = Isa::Sse2;  ///< the highest level whose features `features` has
  std::unique_ptr<llvm::TargetMachine> tm;
};

/// The host target, created once per process (initializes LLVM's native target on first use).
/// Throws CompileError if LLVM lacks the target or cannot create its target machine.
HostTarget &host_target();

} // namespace pto::codegen
