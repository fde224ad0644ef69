// scalar_ops.h - The reference semantics of the elementwise ops and reductions, one element at
// a time: one exhaustive switch per family and dtype class over the kinds of op_kinds.def
// (unary_f / binary_f for floats, computed in C = float for fp16/bf16/fp32 and double for fp64;
// unary_i / binary_i for ints and bool, in int64 that the store wraps). The LLVM lowering
// (codegen/llvm/lower_elementwise.cpp) mirrors each operation for operation. Used by
// interpreter_compute.cpp's tile loops.
#pragma once

#include "pto/error.h"
#include "pto/ir/program.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace pto::codegen::interp::scalar {

using U = ir::UnaryKind;
using B = ir::BinaryKind;
using R = ir::ReduceKind;

inline int64_t int_min(DataType dt) {
  switch (dt) {
  case DT_INT8:
    return std::numeric_limits<int8_t>::min();
  case DT_INT16:
    return std::numeric_limits<int16_t>::min();
  case DT_INT32:
    return std::numeric_limits<int32_t>::min();
  case DT_UINT8:
  case DT_BOOL:
    return 0;
  case DT_INT64:
  case DT_FP16:
  case DT_BF16:
  case DT_FP32:
  case DT_DOUBLE:
  PTO_CASE_UNSUPPORTED_DTYPES:
    break;
  }
  return std::numeric_limits<int64_t>::min();
}
inline int64_t int_max(DataType dt) {
  switch (dt) {
  case DT_INT8:
    return std::numeric_limits<int8_t>::max();
  case DT_INT16:
    return std::numeric_limits<int16_t>::max();
  case DT_INT32:
    return std::numeric_limits<int32_t>::max();
  case DT_UINT8:
    return std::numeric_limits<uint8_t>::max();
  case DT_BOOL:
    return 1;
  case DT_INT64:
  case DT_FP16:
  case DT_BF16:
  case DT_FP32:
  case DT_DOUBLE:
  PTO_CASE_UNSUPPORTED_DTYPES:
    break;
  }
  return std::numeric_limits<int64_t>::max();
}

// IEEE 754 maximum / minimum, as elementwise_blocks.h fp_max_min: NaN propagates, -0 < +0.
template <class C> C nan_max(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class C> C nan_min(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 (as elementwise_blocks.h sigmoid).
template <class C> C sigmoid_f(C x) {
  const C e = std::exp(-std::fabs(x));
  return (x < C(0) ? e : C(1)) / (C(1) + e);
}

/// x/2 erfc(-x / sqrt 2) with the tail correction of elementwise_blocks.h gelu.
template <class C> C gelu_f(C x) {
  constexpr bool dbl = sizeof(C) == 8;
  const C c_hi = dbl ? C(-0x1.6a09e667f3bcdp-1) : C(-0x1.6a09e6p-1f);
  const C c_lo = dbl ? C(0x1.bdd3413b26456p-55) : C(-0x1.9fcef4p-27f);
  const C z = x * c_hi;
  const C d = std::fma(x, c_lo, std::fma(x, c_hi, -z));
  const C g = C(2) * z + C(1) / (z + C(0.9));
  const C corr = z > C(0) && z < C(64) ? std::fma(-g, d, C(1)) : C(1);
  return C(0.5) * x * std::erfc(z) * corr;
}

/// A floating unary op in compute type C (float for fp16/bf16/fp32, double for DT_DOUBLE).
/// Bool results are 1 or 0. Composite activations are computed in C and rounded once. `attr`:
/// the op's scalar attribute (Elu's alpha, Lrelu's slope).
template <class C> C unary_f(U k, C x, C attr) {
  switch (k) {
  case U::Neg:
    return -x;
  case U::Abs:
    return std::fabs(x);
  case U::Exp:
    return std::exp(x);
  case U::Log:
    return std::log(x);
  case U::Sqrt:
    return std::sqrt(x);
  case U::Rsqrt:
    return C(1) / std::sqrt(x);
  case U::Reciprocal:
    return C(1) / x;
  case U::Exp2:
    return std::exp2(x);
  case U::Expm1:
    return std::expm1(x);
  case U::Log2:
    return std::log2(x);
  case U::Log10:
    return std::log10(x);
  case U::Log1p:
    return std::log1p(x);
  case U::Sin:
    return std::sin(x);
  case U::Cos:
    return std::cos(x);
  case U::Tan:
    return std::tan(x);
  case U::Asin:
    return std::asin(x);
  case U::Acos:
    return std::acos(x);
  case U::Atan:
    return std::atan(x);
  case U::Sinh:
    return std::sinh(x);
  case U::Cosh:
    return std::cosh(x);
  case U::Tanh:
    return std::tanh(x);
  case U::Asinh:
    return std::asinh(x);
  case U::Acosh:
    return std::acosh(x);
  case U::Atanh:
    return std::atanh(x);
  case U::Erf:
    return std::erf(x);
  case U::Erfc:
    return std::erfc(x);
  case U::Cbrt:
    return std::cbrt(x);
  case U::Sigmoid:
    return sigmoid_f(x);
  case U::Softplus:
    return x > C(20) ? x : std::log1p(std::exp(x));
  case U::Softsign:
    return x / (C(1) + std::fabs(x));
  case U::Elu:
    return x > C(0) ? x : attr * std::expm1(x);
  case U::Gelu:
    return gelu_f(x);
  case U::GeluTanh: {
    C u = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
    return x * sigmoid_f(C(2) * u);
  }
  case U::Lrelu:
    return x >= C(0) ? x : x * attr;
  case U::Relu:
    return nan_max(x, C(0));
  case U::Relu6:
    return nan_min(nan_max(x, C(0)), C(6));
  case U::Sign:
    return x > C(0) ? C(1) : x < C(0) ? C(-1) : x;
  case U::Signbit:
    return std::signbit(x) ? C(1) : C(0);
  case U::Ceil:
    return std::ceil(x);
  case U::Floor:
    return std::floor(x);
  case U::Trunc:
    return std::trunc(x);
  case U::Round:
    return std::nearbyint(x); // the default rounding mode: ties to even
  case U::IsFinite:
    return std::isfinite(x) ? C(1) : C(0);
  case U::IsNan:
    return std::isnan(x) ? C(1) : C(0);
  case U::IsInf:
    return std::isinf(x) ? C(1) : C(0);
  case U::LogicalNot:
    return x == C(0) ? C(1) : C(0);
  case U::Square:
    return x * x;
  case U::Clone:
    return x;
  case U::Cast:
  case U::BitwiseNot:
    break; // not floating unary ops (Cast is run by Run::unary)
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a floating unary op");
}

/// PyTorch's div_floor_floating: floor(a / b) computed from the exact fmod.
template <class C> C floor_div_f(C a, C b) {
  if (b == C(0))
    return a / b;
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0)))
    div -= C(1);
  if (div == C(0))
    return std::copysign(C(0), a / b);
  C fl = std::floor(div);
  return div - fl > C(0.5) ? fl + C(1) : fl;
}

/// A floating binary op in compute type C; bool results are 1 or 0.
template <class C> C binary_f(B k, C a, C b) {
  auto b01 = [](bool v) { return v ? C(1) : C(0); };
  switch (k) {
  case B::Add:
    return a + b;
  case B::Sub:
    return a - b;
  case B::Mul:
    return a * b;
  case B::Div:
    return a / b;
  case B::Maximum:
    return nan_max(a, b);
  case B::Minimum:
    return nan_min(a, b);
  case B::Pow:
    return std::pow(a, b);
  case B::Hypot:
    return std::hypot(a, b);
  case B::Atan2:
    return std::atan2(a, b);
  case B::Copysign:
    return std::copysign(a, b);
  case B::Heaviside:
    return std::isnan(a) ? a : a < C(0) ? C(0) : a > C(0) ? C(1) : b;
  case B::Fmod:
    return std::fmod(a, b);
  case B::Remainder: {
    C mod = std::fmod(a, b);
    return mod != C(0) && (b < C(0)) != (mod < C(0)) ? mod + b : mod;
  }
  case B::FloorDiv:
    return floor_div_f(a, b);
  case B::LogicalAnd:
    return b01(a != C(0) && b != C(0));
  case B::LogicalOr:
    return b01(a != C(0) || b != C(0));
  case B::LogicalXor:
    return b01((a != C(0)) != (b != C(0)));
  case B::Eq:
    return b01(a == b);
  case B::Ne:
    return b01(a != b);
  case B::Lt:
    return b01(a < b);
  case B::Le:
    return b01(a <= b);
  case B::Gt:
    return b01(a > b);
  case B::Ge:
    return b01(a >= b);
  case B::Gcd:
  case B::BitwiseAnd:
  case B::BitwiseOr:
  case B::BitwiseXor:
  case B::ShiftLeft:
  case B::ShiftRight:
    break; // integer-only ops
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}

inline int64_t wrap(uint64_t u) { return static_cast<int64_t>(u); }

/// An integer (or bool) unary op in int64; the store wraps to the output dtype.
inline int64_t unary_i(U k, int64_t x, DataType dt) {
  auto ux = static_cast<uint64_t>(x);
  switch (k) {
  case U::Neg:
    return wrap(0 - ux);
  case U::Abs:
    return x < 0 ? wrap(0 - ux) : x;
  case U::Relu:
    return x > 0 ? x : 0;
  case U::Relu6:
    return x < 0 ? 0 : x > 6 ? 6 : x;
  case U::Sign:
    return (x > 0) - (x < 0);
  case U::Signbit:
    return x < 0;
  case U::Ceil:
  case U::Floor:
  case U::Trunc:
  case U::Round:
  case U::Clone:
    return x;
  case U::IsFinite:
    return 1;
  case U::IsNan:
  case U::IsInf:
    return 0;
  case U::LogicalNot:
    return x == 0;
  case U::BitwiseNot:
    return dt == DT_BOOL ? x == 0 : wrap(~ux);
  case U::Square:
    return wrap(ux * ux);
  case U::Exp:
  case U::Log:
  case U::Sqrt:
  case U::Rsqrt:
  case U::Reciprocal:
  case U::Cast:
  case U::Exp2:
  case U::Expm1:
  case U::Log2:
  case U::Log10:
  case U::Log1p:
  case U::Sin:
  case U::Cos:
  case U::Tan:
  case U::Asin:
  case U::Acos:
  case U::Atan:
  case U::Sinh:
  case U::Cosh:
  case U::Tanh:
  case U::Asinh:
  case U::Acosh:
  case U::Atanh:
  case U::Erf:
  case U::Erfc:
  case U::Cbrt:
  case U::Sigmoid:
  case U::Softplus:
  case U::Softsign:
  case U::Elu:
  case U::Gelu:
  case U::GeluTanh:
  case U::Lrelu:
    break; // floating-only ops (Cast is run by Run::unary)
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not an integer unary op");
}

/// An integer binary op in int64 (wrapping; operands of dtype `dt`); false for a zero divisor.
inline bool binary_i(B k, int64_t a, int64_t b, DataType dt, int64_t &r) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const int64_t bits = 8 * bytes_of(dt);
  switch (k) {
  case B::Add:
    r = wrap(ua + ub);
    return true;
  case B::Sub:
    r = wrap(ua - ub);
    return true;
  case B::Mul:
    r = wrap(ua * ub);
    return true;
  case B::Div:
    if (b == 0)
      return false;
    r = b == -1 ? wrap(0 - ua) : a / b; // INT64_MIN / -1 wraps instead of trapping
    return true;
  case B::Maximum:
    r = a > b ? a : b;
    return true;
  case B::Minimum:
    r = a < b ? a : b;
    return true;
  case B::FloorDiv:
    if (b == 0)
      return false;
    if (b == -1) {
      r = wrap(0 - ua);
      return true;
    }
    r = a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
    return true;
  case B::Remainder:
  case B::Fmod:
    if (b == 0)
      return false;
    r = b == -1 ? 0 : a % b;
    if (k == B::Remainder && r != 0 && (r < 0) != (b < 0))
      r += b;
    return true;
  case B::Pow: {
    // PyTorch's integral pow: square-and-multiply (wrapping); negative exponents truncate 1/a^-b.
    if (b < 0) {
      r = a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;
      return true;
    }
    uint64_t acc = 1, base = ua;
    for (uint64_t e = ub; e != 0; e >>= 1) {
      if ((e & 1) != 0)
        acc *= base;
      base *= base;
    }
    r = wrap(acc);
    return true;
  }
  case B::Gcd: {
    // Euclid on the magnitudes (|INT_MIN| as unsigned); the store wraps it like the vector code.
    uint64_t x = a < 0 ? 0 - ua : ua, y = b < 0 ? 0 - ub : ub;
    while (y != 0) {
      uint64_t t = x % y;
      x = y;
      y = t;
    }
    r = wrap(x);
    return true;
  }
  case B::LogicalAnd:
    r = a != 0 && b != 0;
    return true;
  case B::LogicalOr:
    r = a != 0 || b != 0;
    return true;
  case B::LogicalXor:
    r = (a != 0) != (b != 0);
    return true;
  case B::Heaviside:
    r = a < 0 ? 0 : a > 0 ? 1 : b;
    return true;
  case B::BitwiseAnd:
    r = a & b;
    return true;
  case B::BitwiseOr:
    r = a | b;
    return true;
  case B::BitwiseXor:
    r = a ^ b;
    return true;
  case B::ShiftLeft:
    r = b < 0 || b >= bits ? 0 : wrap(ua << b);
    return true;
  case B::ShiftRight:
    r = b < 0 || b >= bits ? (a < 0 ? -1 : 0) : a >> b;
    return true;
  case B::Eq:
    r = a == b;
    return true;
  case B::Ne:
    r = a != b;
    return true;
  case B::Lt:
    r = a < b;
    return true;
  case B::Le:
    r = a <= b;
    return true;
  case B::Gt:
    r = a > b;
    return true;
  case B::Ge:
    r = a >= b;
    return true;
  case B::Hypot:
  case B::Atan2:
  case B::Copysign:
    break; // floating-only ops
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}

/// The start of floating reduction `k` over `n` elements. A float sum starts at -0, the identity
/// that keeps every addend (-0 + -0 = -0, as IEEE 754 and NumPy sum only -0 to -0); an empty one
/// is +0 (reduce_ops.h).
template <class C> C reduce_init_f(R k, int64_t n) {
  switch (k) {
  case R::Sum:
    return n > 0 ? -C(0) : C(0);
  case R::Prod:
    return C(1);
  case R::Amax:
    return -std::numeric_limits<C>::infinity();
  case R::Amin:
    return std::numeric_limits<C>::infinity();
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a reduction");
}
template <class C> C reduce_step_f(R k, C acc, C v) {
  switch (k) {
  case R::Sum:
    return acc + v;
  case R::Prod:
    return acc * v;
  case R::Amax:
    return nan_max(acc, v);
  case R::Amin:
    return nan_min(acc, v);
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a reduction");
}
/// Integer reductions of dtype `dt` in int64 (sums and products wrap).
inline int64_t reduce_init_i(R k, DataType dt) {
  switch (k) {
  case R::Sum:
    return 0;
  case R::Prod:
    return 1;
  case R::Amax:
    return int_min(dt);
  case R::Amin:
    return int_max(dt);
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a reduction");
}
inline int64_t reduce_step_i(R k, int64_t acc, int64_t v) {
  switch (k) {
  case R::Sum:
    return wrap(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
  case R::Prod:
    return wrap(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
  case R::Amax:
    return v > acc ? v : acc;
  case R::Amin:
    return v < acc ? v : acc;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a reduction");
}

} // namespace pto::codegen::interp::scalar
