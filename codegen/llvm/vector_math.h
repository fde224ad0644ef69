// vector_math.h - The SLEEF vector functions generated code calls: one table of {function,
// accuracy}, the vector widths of each x86-64 level, and the one function that names a variant.
// The lowering calls the names sleef_name() gives (lower_elementwise.cpp sleef_call), and the JIT
// binds exactly the symbols sleef_symbols() lists, which are the same names at every level. An
// op's SLEEF function in its facts (op_kinds.def vec_fn, vec_acc) must be a row of the table:
// vector_math.cpp checks that at compile time.
#pragma once

#include "llvm/host_target.h"

#include <string>
#include <utility>
#include <vector>

namespace pto::codegen {

/// One SLEEF function the lowering may call: its name ("exp") and accuracy suffix ("u10", "u15",
/// "u05" in ULPs x 10, or "" for functions SLEEF computes exactly, such as fmod).
struct SleefFunction {
  const char *fn;
  const char *acc;
};

/// Every SLEEF function the lowering may call, each at the one accuracy it is called with.
const std::vector<SleefFunction> &sleef_functions();

/// Lanes of SLEEF's native vectors at `isa`: 4/2 (SSE2, SSE4), 8/4 (AVX2), 16/8 (AVX-512) for
/// float/double.
unsigned sleef_lanes(Isa isa, bool dbl);

/// SLEEF's symbol `Sleef_<fn><f|d><lanes>_<acc><variant>` for float (dbl false) or double at
/// `isa`, where variant is sse2, sse4, avx2 or avx512f ("Sleef_expf16_u10avx512f"). Throws
/// InternalError (a ptojit bug) when (fn, acc) is not a row of sleef_functions().
std::string sleef_name(const std::string &fn, const std::string &acc, bool dbl, Isa isa);

/// Every function of sleef_functions() at every level of kIsas, float and double, as
/// {sleef_name, address}: what the JIT binds. The addresses are taken by name at build time, so a
/// variant the library lacks is a link error, not a failed lookup on some other CPU.
std::vector<std::pair<std::string, void *>> sleef_symbols();

} // namespace pto::codegen
