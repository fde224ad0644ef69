// vector_math.cpp - See vector_math.h.
#include "llvm/vector_math.h"

#include "pto/error.h"
#include "pto/ir/program.h"

#include <fmt/format.h>
#include <iterator>
#include <string_view>

// The table: every SLEEF function the lowering may call, as (name, accuracy suffix). A macro,
// because each row must also name SLEEF's symbols at every level by token pasting: that is what
// turns a variant missing from the library into a link error.
// clang-format off
#define PTO_SLEEF_FUNCTIONS(X)                                                                     \
  X(exp, u10) X(log, u10) X(exp2, u10) X(expm1, u10) X(log2, u10) X(log10, u10) X(log1p, u10)      \
  X(sin, u10) X(cos, u10) X(tan, u10) X(asin, u10) X(acos, u10) X(atan, u10) X(sinh, u10)          \
  X(cosh, u10) X(tanh, u10) X(asinh, u10) X(acosh, u10) X(atanh, u10) X(erf, u10) X(cbrt, u10)     \
  X(pow, u10) X(atan2, u10) X(erfc, u15) X(hypot, u05) X(fmod, )

// Float and double at each level of kIsas (lanes, SLEEF's variant suffix), lowest first.
#define PTO_SLEEF_VARIANTS(X, fn, acc)                                                             \
  X(fn##f4_##acc##sse2) X(fn##d2_##acc##sse2) X(fn##f4_##acc##sse4) X(fn##d2_##acc##sse4)          \
  X(fn##f8_##acc##avx2) X(fn##d4_##acc##avx2) X(fn##f16_##acc##avx512f) X(fn##d8_##acc##avx512f)
// clang-format on

// Declared opaquely: only their addresses are taken here; generated code calls them with the
// vector types of the lowering.
#define PTO_SLEEF_DECLARE_ONE(name) void Sleef_##name();
#define PTO_SLEEF_DECLARE(fn, acc) PTO_SLEEF_VARIANTS(PTO_SLEEF_DECLARE_ONE, fn, acc)
extern "C" {
PTO_SLEEF_FUNCTIONS(PTO_SLEEF_DECLARE)
}
#undef PTO_SLEEF_DECLARE
#undef PTO_SLEEF_DECLARE_ONE

namespace pto::codegen {

namespace {
/// SLEEF's suffix for the level (its "extension" names).
const char *sleef_variant(Isa isa) {
  switch (isa) {
  case Isa::Sse2:
    return "sse2";
  case Isa::Sse4:
    return "sse4";
  case Isa::Avx2:
    return "avx2";
  case Isa::Avx512:
    return "avx512f";
  }
  throw InternalError("<codegen>", "vector_math", "not an Isa (a ptojit bug)");
}

#define PTO_SLEEF_ROW(fn, acc) SleefFunction{#fn, #acc},
constexpr SleefFunction kSleefFunctions[] = {PTO_SLEEF_FUNCTIONS(PTO_SLEEF_ROW)};
#undef PTO_SLEEF_ROW

constexpr bool in_table(std::string_view fn, std::string_view acc) {
  for (const SleefFunction &s : kSleefFunctions)
    if (fn == s.fn && acc == s.acc)
      return true;
  return false;
}

/// True when every op whose facts name a SLEEF function (op_kinds.def vec_fn, vec_acc) finds
/// it in the table: a new op's function that the table lacks fails the build, not a kernel.
constexpr bool op_functions_in_table() {
  for (const ir::OpInfo &r : ir::kOpInfo)
    if (r.vec_fn && !in_table(r.vec_fn, r.vec_acc))
      return false;
  return true;
}
static_assert(op_functions_in_table(),
              "an op's vec_fn/vec_acc (op_kinds.def) is not in PTO_SLEEF_FUNCTIONS");
} // namespace

const std::vector<SleefFunction> &sleef_functions() {
  static const std::vector<SleefFunction> f(std::begin(kSleefFunctions), std::end(kSleefFunctions));
  return f;
}

unsigned sleef_lanes(Isa isa, bool dbl) {
  const unsigned f = isa == Isa::Avx512 ? 16 : isa == Isa::Avx2 ? 8 : 4;
  return dbl ? f / 2 : f;
}

std::string sleef_name(const std::string &fn, const std::string &acc, bool dbl, Isa isa) {
  if (!in_table(fn, acc))
    throw InternalError("<codegen>", "lower_llvm",
                        fmt::format("SLEEF function '{}' at accuracy '{}' is not in "
                                    "sleef_functions() (llvm/vector_math.cpp); a ptojit bug",
                                    fn, acc));
  return fmt::format("Sleef_{}{}{}_{}{}", fn, dbl ? "d" : "f", sleef_lanes(isa, dbl), acc,
                     sleef_variant(isa));
}

std::vector<std::pair<std::string, void *>> sleef_symbols() {
  std::vector<std::pair<std::string, void *>> out;
#define PTO_SLEEF_BIND_ONE(name)                                                                   \
  out.emplace_back("Sleef_" #name, reinterpret_cast<void *>(&Sleef_##name));
#define PTO_SLEEF_BIND(fn, acc) PTO_SLEEF_VARIANTS(PTO_SLEEF_BIND_ONE, fn, acc)
  PTO_SLEEF_FUNCTIONS(PTO_SLEEF_BIND)
#undef PTO_SLEEF_BIND
#undef PTO_SLEEF_BIND_ONE
  return out;
}

} // namespace pto::codegen
