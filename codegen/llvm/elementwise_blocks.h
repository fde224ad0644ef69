// elementwise_blocks.h - The vector building blocks of the elementwise lowering
// (lower_elementwise.cpp): constants, lane patches for the rare inputs the vector library gets
// wrong, and the multi-instruction pieces of ops (exact fmod, full-range exp, sigmoid, gelu, the
// integer divisions, shifts, pow and gcd). Each mirrors the scalar semantics of
// interp/scalar_ops.h operation for operation, so both executors round alike. Values
// are <W x T> in the compute type (dtype_codec.h).
#pragma once

#include "llvm/kernel_builder.h"

#include <llvm/IR/IRBuilder.h>

#include <cmath>
#include <functional>
#include <vector>

namespace pto::codegen::vec {

/// The same-width vector type with element `elem`.
inline llvm::Type *like(llvm::Value *v, llvm::Type *elem) {
  return llvm::VectorType::get(elem, llvm::cast<llvm::VectorType>(v->getType())->getElementCount());
}
/// Splat constants of `like_v`'s type.
inline llvm::Value *cf(llvm::Value *like_v, double c) {
  return llvm::ConstantFP::get(like_v->getType(), c);
}
inline llvm::Value *ci(llvm::Value *like_v, int64_t c) {
  return llvm::ConstantInt::get(like_v->getType(), static_cast<uint64_t>(c), true);
}
/// i1 vector -> i8 0/1 (the DT_BOOL compute type).
inline llvm::Value *to_bool(KernelBuilder &kb, llvm::Value *i1) {
  return kb.builder().CreateZExt(i1, like(i1, kb.builder().getInt8Ty()));
}

/// A one-operand intrinsic (fabs, sqrt, ceil, ...) on `x`.
inline llvm::Value *intrinsic1(KernelBuilder &kb, llvm::Intrinsic::ID id, llvm::Value *x) {
  return kb.builder().CreateUnaryIntrinsic(id, x);
}

/// ln 2.
inline constexpr double kLn2 = 0.69314718055994530942;

/// a * b + c, rounded once.
inline llvm::Value *fma(KernelBuilder &kb, llvm::Value *a, llvm::Value *b, llvm::Value *c) {
  return kb.builder().CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, b, c});
}
/// Whether `v` holds fp64 lanes; lanes of `x` that are +-inf.
inline bool is_double(llvm::Value *v) { return v->getType()->getScalarType()->isDoubleTy(); }
inline llvm::Value *is_inf(KernelBuilder &kb, llvm::Value *x) {
  return kb.builder().CreateFCmpOEQ(intrinsic1(kb, llvm::Intrinsic::fabs, x), cf(x, INFINITY));
}

/// `base`, with the lanes where `rare` holds replaced by `fix()`. The fix is emitted behind a
/// branch taken only when some lane needs it, so the common path pays one or-reduce.
llvm::Value *patch_rare_lanes(KernelBuilder &kb, llvm::Value *rare, llvm::Value *base,
                              const std::function<llvm::Value *()> &fix, const char *name);

/// `base`, with the lanes where `rare` holds replaced by `scalar(lane values of args)`, one
/// lane at a time in a loop behind a branch taken only when some lane needs it. For results
/// the vector library gets wrong on rare inputs, recomputed by libm (frem, llvm.pow).
llvm::Value *
scalar_rare_lanes(KernelBuilder &kb, llvm::Value *rare, llvm::Value *base,
                  const std::vector<llvm::Value *> &args,
                  const std::function<llvm::Value *(const std::vector<llvm::Value *> &)> &scalar,
                  const char *name);

/// IEEE 754 maximum / minimum: NaN propagates (a's first, quieted), -0 < +0. On the integer
/// bits, not llvm.maximum: for fp16 (fpext'ed half) InstCombine narrows llvm.maximum to half,
/// which LLVM 19 scalarizes on AVX2 and gets wrong for (+0, NaN).
llvm::Value *fp_max_min(KernelBuilder &kb, llvm::Value *a, llvm::Value *b, bool is_max);

/// C fmod, exact. Sleef_fmod is exact but NaN where |a / b| overflows the dtype (or b is
/// subnormal and |a| large); those lanes (finite a, nonzero b, NaN result) go to libm's fmod.
llvm::Value *exact_fmod(KernelBuilder &kb, llvm::Value *a, llvm::Value *b);

/// e^x. Sleef_expd*_u10 returns inf above 709.78271115 though e^x is finite up to ln DBL_MAX =
/// 709.78271289; there e^x = e^x0 (1 + expm1(t)), t = x - x0 exact for x0 = 709.78125, e^x0
/// in two doubles, expm1 by its Taylor series to t^5 (t < 0.0015: the t^6 term is below 2^-63).
/// Past ln DBL_MAX the final add overflows to inf as it should.
llvm::Value *exp_full_range(KernelBuilder &kb, llvm::Value *x);

/// e^|x| / 2, where e^-|x| is negligible (|x| > 88 fp32, > 709 fp64): sinh and cosh there.
/// fp32 in double (one rounding); fp64 as e^(|x| - L1) (1 - L2), ln 2 = L1 + L2 with L1 a
/// multiple of 2^-43, so |x| - L1 is exact for |x| < 1024.
llvm::Value *half_exp_abs(KernelBuilder &kb, llvm::Value *x);

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 so that e^-x never overflows (the result
/// stays accurate down to the subnormals). Mirrors interp/scalar_ops.h sigmoid_f.
llvm::Value *sigmoid(KernelBuilder &kb, llvm::Value *x);

/// x/2 erfc(z), z = -x / sqrt 2. For x < 0 the rounding error d of z is amplified by the
/// tail's slope, erfc(z + d) ~ erfc(z) (1 - g d) with g = -erfc'(z) / erfc(z) ~ 2z + 1/z; d is
/// recovered by fma (with the constant's own error), and g approximated as
/// 2z + 1 / (z + 0.9) (within 7% for z >= 0, enough for a correction of a few ULP). Mirrors
/// interp/scalar_ops.h gelu_f.
llvm::Value *gelu(KernelBuilder &kb, llvm::Value *x);

/// PyTorch's div_floor_floating, lane-wise (see interp/scalar_ops.h floor_div_f).
llvm::Value *floor_div_fp(KernelBuilder &kb, llvm::Value *a, llvm::Value *b);

/// Integer division with the zero-divisor check; INT_MIN / -1 wraps (two's complement).
llvm::Value *int_div(KernelBuilder &kb, llvm::Value *a, llvm::Value *b, DataType dt,
                     llvm::Value *mask);

/// Which integer division int_division computes (the divisor's sign rules of op_kinds.def).
enum class IntDivision { Floor, Remainder, Fmod };

/// Integer floor_div / remainder / fmod with the zero-divisor check; INT_MIN / -1 wraps.
llvm::Value *int_division(KernelBuilder &kb, IntDivision k, llvm::Value *a, llvm::Value *b,
                          DataType dt, llvm::Value *mask);

/// a << b (left) or a >> b (arithmetic; logical for unsigned), with the out-of-range rules of
/// op_kinds.def.
llvm::Value *shift(KernelBuilder &kb, bool left, llvm::Value *a, llvm::Value *b, DataType dt);

/// Integer a^b by square-and-multiply over the bits of b (wrapping), looping while any live lane
/// has exponent bits left; negative exponents give 1 (a = 1), +-1 (a = -1) or 0, as PyTorch.
llvm::Value *int_pow(KernelBuilder &kb, llvm::Value *a, llvm::Value *b, DataType dt,
                     llvm::Value *mask);

/// gcd of the magnitudes (unsigned Euclid, so |INT_MIN| stays exact and wraps on the store).
llvm::Value *int_gcd(KernelBuilder &kb, llvm::Value *a, llvm::Value *b, DataType dt,
                     llvm::Value *mask);

/// C pow through SLEEF. Sleef_powd*_u10 is +-inf where |a^b| lies in (e^709.78271115, DBL_MAX]
/// (its exp's overflow threshold): fp64 lanes with an infinite result from finite nonzero
/// operands go to libm's pow (true overflows too, which are as rare).
llvm::Value *fp_pow(KernelBuilder &kb, llvm::Value *a, llvm::Value *b);

} // namespace pto::codegen::vec
