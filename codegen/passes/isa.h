// isa.h - The instruction set the JIT compiles for: the host CPU's own (PTO_ISA=native, the
// default) or an x86-64 level capped below it (PTO_ISA=avx512|avx2|sse4|sse2), so that one machine
// can run the code paths of smaller ones (an AVX-512 host testing what an AVX2-only one runs).
// The levels and the rule are here (pure, no LLVM); the host's features, the process's target and
// the SLEEF functions of each level are the LLVM backend's (llvm/host_isa.h).
#pragma once

#include <map>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

namespace pto::codegen {

/// The x86-64 vector levels, lowest first: the psABI's x86-64 (SSE2), x86-64-v2 (SSE4.2),
/// x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512 F/BW/CD/DQ/VL).
enum class Isa { Sse2, Sse4, Avx2, Avx512 };
/// Every level, lowest first.
inline constexpr Isa kIsas[] = {Isa::Sse2, Isa::Sse4, Isa::Avx2, Isa::Avx512};

/// What the JIT compiles for.
struct JitTarget {
  std::string request;  ///< the PTO_ISA value ("native" when unset or empty)
  Isa isa = Isa::Sse2;  ///< the vector level: which SLEEF variant the lowering calls
  std::string cpu;      ///< LLVM CPU: the host's for native, else the level's `x86-64-vN`
  std::string features; ///< LLVM target features, "+avx2,-avx512f,...", as passed to LLVM
};

/// Why a PTO_ISA value was refused.
struct IsaRefusal {
  std::string problem;               ///< "unknown value 'avx3'", "'avx512' needs CPU features ..."
  std::vector<std::string> accepted; ///< the values this host accepts, as isa_names() orders them
};

/// The values PTO_ISA accepts, "native" first, then the levels from the highest.
const std::vector<std::string> &isa_names();

/// The target for PTO_ISA value `request` ("" is native) on a host whose LLVM CPU is `host_cpu`
/// and whose LLVM features are `host_features` (name -> present, as llvm::sys::
/// getHostCPUFeatures). Pure. native: the host's CPU and features, and the highest level all of
/// whose features (and those of the levels below) the host has. A level: its generic CPU and
/// the host's features, every one outside the level and those below turned off. Refused when
/// `request` is none of isa_names() or names a level that needs features the host lacks.
std::variant<JitTarget, IsaRefusal>
resolve_jit_target(const std::string &request, const std::string &host_cpu,
                   const std::map<std::string, bool> &host_features);

/// "<problem><context>; expected one of: <accepted>", the detail of PTO_ISA's ArgumentError;
/// `context` is " (tracing kernel 'k')" or "".
std::string isa_refusal_message(const IsaRefusal &r, const std::string &context);

/// Checks PTO_ISA for the kernel `kernel` traced at `loc` (CompileOptions::from_env). Throws
/// ArgumentError at `loc`, op "PTO_ISA", naming the value, the kernel and the accepted values,
/// when the value is none of isa_names() or, with the LLVM backend (llvm/host_isa.cpp), needs
/// CPU features this host lacks or differs from the value the process's JIT target was fixed
/// with (PTO_ISA is read once per process, at the first kernel trace). Without the backend
/// (nojit/no_jit.cpp) only the name is checked: there is no JIT to cap.
void check_isa_env(const std::source_location &loc, const std::string &kernel);

} // namespace pto::codegen
