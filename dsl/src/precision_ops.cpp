// precision_ops.cpp - The PrecisionType overloads of ops.h (PyPTO's `precision_type=`): each
// checks the enumerator and calls the op without it, which already computes at its documented
// accuracy.
#include "pto/error.h"
#include "pto/ops.h"

#include <fmt/format.h>

namespace pto {

namespace {

/// ArgumentError naming `op` unless `p` is one of PrecisionType's enumerators.
void check_precision(PrecisionType p, const char *op, const SrcLoc &loc) {
  if (p != PrecisionType::INTRINSIC && p != PrecisionType::HIGH_PRECISION)
    throw ArgumentError(loc, op,
                        fmt::format("precision_type must be PrecisionType::INTRINSIC (0) or "
                                    "PrecisionType::HIGH_PRECISION (1), got {}",
                                    static_cast<int>(p)));
}

} // namespace

#define PTO_PRECISION_UNARY(name)                                                                  \
  Tensor name(const Tensor &x, PrecisionType precision_type, SrcLoc loc) {                         \
    check_precision(precision_type, #name, loc);                                                   \
    return name(x, loc);                                                                           \
  }
#define PTO_PRECISION_BINARY(name)                                                                 \
  Tensor name(const Operand &a, const Operand &b, PrecisionType precision_type, SrcLoc loc) {      \
    check_precision(precision_type, #name, loc);                                                   \
    return name(a, b, loc);                                                                        \
  }

PTO_PRECISION_UNARY(exp)
PTO_PRECISION_UNARY(log)
PTO_PRECISION_UNARY(log2)
PTO_PRECISION_UNARY(log10)
PTO_PRECISION_UNARY(sqrt)
PTO_PRECISION_UNARY(rsqrt)
PTO_PRECISION_UNARY(reciprocal)
PTO_PRECISION_BINARY(div)
PTO_PRECISION_BINARY(pow)
PTO_PRECISION_BINARY(fmod)
PTO_PRECISION_BINARY(remainder)

#undef PTO_PRECISION_UNARY
#undef PTO_PRECISION_BINARY

} // namespace pto
