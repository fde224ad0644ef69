// host_isa.h - The LLVM backend's side of PTO_ISA (passes/isa.h): the host CPU's features, the
// process's JIT target, and the SLEEF vector functions the lowering calls at each level, every
// one of which the JIT binds. No LLVM types: tests include it.
#pragma once

#include "passes/isa.h"

#include <string>
#include <utility>
#include <vector>

namespace pto::codegen {

/// The process's JIT target on this host (resolve_jit_target of PTO_ISA against the host's LLVM
/// CPU and features). PTO_ISA is read once per process: the first call of this or
/// check_isa_env fixes the target; later values of PTO_ISA do not change it (check_isa_env
/// rejects them). Throws ArgumentError (where "<codegen>") for a bad PTO_ISA when nothing
/// checked it first.
const JitTarget &jit_target();

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
