// host_isa.h - The instruction set the JIT compiles for: the host CPU's own (PTO_ISA=native, the
// default) or an x86-64 level capped below it (PTO_ISA=avx512|avx2|sse4|sse2), so that one machine
// can run the code paths of smaller ones (an AVX-512 host testing what an AVX2-only one runs). The
// SLEEF vector functions the lowering calls follow the same level, and so does every name the JIT
// binds for them.
#pragma once

#include <map>
#include <source_location>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pto::codegen {

/// The x86-64 vector levels, lowest first: the psABI's x86-64 (SSE2), x86-64-v2 (SSE4.2),
/// x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512 F/BW/CD/DQ/VL).
enum class Isa { Sse2, Sse4, Avx2, Avx512 };

/// What the JIT compiles for.
struct JitTarget {
  std::string request;  ///< the PTO_ISA value ("native" when unset or empty)
  Isa isa = Isa::Sse2;  ///< the vector level: which SLEEF variant the lowering calls
  std::string cpu;      ///< LLVM CPU: the host's for native, else the level's `x86-64-vN`
  std::string features; ///< LLVM target features, "+avx2,-avx512f,...", as passed to LLVM
};

/// The values PTO_ISA accepts, "native" first, then the levels from the highest.
const std::vector<std::string> &isa_names();

/// Why a PTO_ISA value was refused.
struct IsaRefusal {
  std::string problem;               ///< "unknown value 'avx3'", "'avx512' needs CPU features ..."
  std::vector<std::string> accepted; ///< the values this host accepts, as isa_names() orders them
};

/// The target for PTO_ISA value `request` ("" is native) on a host whose LLVM CPU is `host_cpu`
/// and whose LLVM features are `host_features` (name -> present, as llvm::sys::
/// getHostCPUFeatures). Pure. native: the host's CPU and features, and the highest level all of
/// whose features (and those of the levels below) the host has. A level: its generic CPU and
/// the host's features, every one outside the level and those below turned off. Refused when
/// `request` is none of isa_names() or names a level that needs features the host lacks.
std::variant<JitTarget, IsaRefusal>
resolve_jit_target(const std::string &request, const std::string &host_cpu,
                   const std::map<std::string, bool> &host_features);

/// The process's JIT target on this host. PTO_ISA is read once per process: the first call of
/// this or check_isa_env fixes the target; later values of PTO_ISA do not change it (and
/// check_isa_env rejects them). Throws ArgumentError (where "<codegen>") for a bad PTO_ISA when
/// nothing checked it first.
const JitTarget &jit_target();

/// Checks PTO_ISA for the kernel `kernel` traced at `loc` (CompileOptions::from_env), fixing the
/// process's target on the first call. Throws ArgumentError at `loc`, op "PTO_ISA", naming the
/// value, the kernel and the accepted values, when the value is none of isa_names(), needs CPU
/// features this host lacks, or differs from the value the target was fixed with.
void check_isa_env(const std::source_location &loc, const std::string &kernel);

/// One SLEEF function the lowering may call: its name and accuracy suffix ("u10", "u15", "u05",
/// or "" for exact functions such as fmod).
struct SleefFunction {
  const char *fn;
  const char *acc;
};
/// Every SLEEF function the lowering may call (lower_elementwise.cpp).
const std::vector<SleefFunction> &sleef_functions();
/// Lanes of SLEEF's vectors at `isa`: 4/2 (SSE), 8/4 (AVX2), 16/8 (AVX-512) for float/double.
unsigned sleef_lanes(Isa isa, bool dbl);
/// SLEEF's `Sleef_<fn><f|d><lanes>_<acc><variant>` at `isa` (variant sse2, sse4, avx2, avx512f).
/// Throws InternalError (a ptojit bug) when (fn, acc) is not in sleef_functions().
std::string sleef_name(const std::string &fn, const std::string &acc, bool dbl, Isa isa);
/// Every SLEEF function of sleef_functions() at every level, float and double, by sleef_name,
/// with its address: what the JIT binds.
std::vector<std::pair<std::string, void *>> sleef_symbols();

/// The address the JIT binds `name` to for generated code (its runtime and SLEEF symbols), or
/// null when it binds none. Creates the JIT on first use. (For tests; jit_engine.cpp.)
void *jit_symbol_address(const std::string &name);

} // namespace pto::codegen
