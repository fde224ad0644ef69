// elementwise_blocks.cpp - See elementwise_blocks.h.
#include "llvm/elementwise_blocks.h"

#include "llvm/dtype_codec.h"
#include "llvm/llvm_loops.h"
#include "llvm/lower_elementwise.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <string>

namespace pto::codegen::vec {

using LV = llvm::Value;

namespace {

/// The integer divisor with masked-off lanes set to 1, after failing on any live zero.
LV *checked_divisor(KernelBuilder &kb, LV *b, LV *mask) {
  auto &B = kb.builder();
  LV *one = ci(b, 1);
  LV *bs = mask ? B.CreateSelect(mask, b, one) : b;
  LV *any_zero = B.CreateOrReduce(B.CreateICmpEQ(bs, llvm::Constant::getNullValue(b->getType())));
  kb.fail_unless(B.CreateNot(any_zero), PTO_FAIL_DIV_ZERO, kb.i64(0), kb.i64(0));
  return bs;
}

/// A loop at B's insertion point that runs `step` while any lane of `live(state)` is true;
/// `state` starts as `init` (one vector per entry). Leaves B at the exit; returns the final state.
std::vector<LV *> while_any(llvm::IRBuilder<> &B, const std::vector<LV *> &init,
                            const std::function<LV *(const std::vector<LV *> &)> &live,
                            const std::function<std::vector<LV *>(const std::vector<LV *> &)> &step,
                            const char *name) {
  auto &C = B.getContext();
  llvm::Function *F = B.GetInsertBlock()->getParent();
  auto *pre = B.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(C, std::string(name) + ".head", F);
  auto *body = llvm::BasicBlock::Create(C, std::string(name) + ".body", F);
  auto *exit = llvm::BasicBlock::Create(C, std::string(name) + ".exit", F);
  B.CreateBr(head);
  B.SetInsertPoint(head);
  std::vector<LV *> state;
  std::vector<llvm::PHINode *> phis;
  for (LV *v : init) {
    auto *phi = B.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, pre);
    phis.push_back(phi);
    state.push_back(phi);
  }
  B.CreateCondBr(B.CreateOrReduce(live(state)), body, exit);
  B.SetInsertPoint(body);
  std::vector<LV *> next = step(state);
  for (size_t i = 0; i < phis.size(); ++i)
    phis[i]->addIncoming(next[i], B.GetInsertBlock());
  B.CreateBr(head);
  B.SetInsertPoint(exit);
  return state;
}

} // namespace

/// `base`, with the lanes where `rare` holds replaced by `fix()`. The fix is emitted behind a
/// branch taken only when some lane needs it, so the common path pays one or-reduce.
LV *patch_rare_lanes(KernelBuilder &kb, LV *rare, LV *base, const std::function<LV *()> &fix,
                     const char *name) {
  auto &B = kb.builder();
  auto &C = B.getContext();
  llvm::Function *F = B.GetInsertBlock()->getParent();
  auto *pre = B.GetInsertBlock();
  auto *slow = llvm::BasicBlock::Create(C, std::string(name) + ".rare", F);
  auto *join = llvm::BasicBlock::Create(C, std::string(name) + ".join", F);
  B.CreateCondBr(B.CreateOrReduce(rare), slow, join,
                 llvm::MDBuilder(C).createBranchWeights(1, 1000));
  B.SetInsertPoint(slow);
  LV *fixed = B.CreateSelect(rare, fix(), base);
  return emit_join_phi(B, join, base, pre, fixed);
}

/// `base`, with the lanes where `rare` holds replaced by `scalar(lane values of args)`, one
/// lane at a time in a loop behind a branch taken only when some lane needs it. For results
/// the vector library gets wrong on rare inputs, recomputed by libm (frem, llvm.pow).
LV *scalar_rare_lanes(KernelBuilder &kb, LV *rare, LV *base, const std::vector<LV *> &args,
                      const std::function<LV *(const std::vector<LV *> &)> &scalar,
                      const char *name) {
  auto &B = kb.builder();
  auto &C = B.getContext();
  return patch_rare_lanes(
      kb, rare, base,
      [&] {
        llvm::Function *F = B.GetInsertBlock()->getParent();
        auto *pre = B.GetInsertBlock();
        auto *head = llvm::BasicBlock::Create(C, std::string(name) + ".lane", F);
        auto *call = llvm::BasicBlock::Create(C, std::string(name) + ".call", F);
        auto *latch = llvm::BasicBlock::Create(C, std::string(name) + ".next", F);
        auto *exit = llvm::BasicBlock::Create(C, std::string(name) + ".done", F);
        const auto n = llvm::cast<llvm::FixedVectorType>(base->getType())->getNumElements();
        B.CreateBr(head);
        B.SetInsertPoint(head);
        auto *i = B.CreatePHI(B.getInt32Ty(), 2);
        auto *acc = B.CreatePHI(base->getType(), 2);
        i->addIncoming(B.getInt32(0), pre);
        acc->addIncoming(base, pre);
        B.CreateCondBr(B.CreateExtractElement(rare, i), call, latch);
        B.SetInsertPoint(call);
        std::vector<LV *> lane;
        for (LV *a : args)
          lane.push_back(B.CreateExtractElement(a, i));
        LV *with = B.CreateInsertElement(acc, scalar(lane), i);
        B.CreateBr(latch);
        B.SetInsertPoint(latch);
        auto *next_acc = B.CreatePHI(base->getType(), 2);
        next_acc->addIncoming(acc, head);
        next_acc->addIncoming(with, call);
        LV *next_i = B.CreateAdd(i, B.getInt32(1));
        i->addIncoming(next_i, latch);
        acc->addIncoming(next_acc, latch);
        B.CreateCondBr(B.CreateICmpULT(next_i, B.getInt32(n)), head, exit);
        B.SetInsertPoint(exit);
        return static_cast<LV *>(next_acc);
      },
      name);
}

/// IEEE 754 maximum / minimum: NaN propagates (a's first, quieted), -0 < +0. On the integer
/// bits, not llvm.maximum: for fp16 (fpext'ed half) InstCombine narrows llvm.maximum to half,
/// which LLVM 19 scalarizes on AVX2 and gets wrong for (+0, NaN).
LV *fp_max_min(KernelBuilder &kb, LV *a, LV *b, bool is_max) {
  auto &B = kb.builder();
  const unsigned bits = a->getType()->getScalarSizeInBits();
  llvm::Type *it = like(a, B.getIntNTy(bits));
  LV *ai = B.CreateBitCast(a, it), *bi = B.CreateBitCast(b, it);
  // Flipping the magnitude bits of negatives orders the patterns like the values (signed).
  auto key = [&](LV *v) {
    return B.CreateXor(v, B.CreateLShr(B.CreateAShr(v, ci(v, bits - 1)), ci(v, 1)));
  };
  LV *a_wins = is_max ? B.CreateICmpSGT(key(ai), key(bi)) : B.CreateICmpSLT(key(ai), key(bi));
  LV *r = B.CreateSelect(a_wins, ai, bi);
  LV *abs_mask = llvm::ConstantInt::get(it, llvm::APInt::getSignedMaxValue(bits));
  LV *inf_bits = B.CreateBitCast(cf(a, INFINITY), it);
  LV *quiet = llvm::ConstantInt::get(it, llvm::APInt::getOneBitSet(bits, bits == 64 ? 51 : 22));
  auto is_nan = [&](LV *v) { return B.CreateICmpUGT(B.CreateAnd(v, abs_mask), inf_bits); };
  r = B.CreateSelect(is_nan(bi), B.CreateOr(bi, quiet), r);
  r = B.CreateSelect(is_nan(ai), B.CreateOr(ai, quiet), r);
  return B.CreateBitCast(r, a->getType());
}

/// C fmod, exact. Sleef_fmod is exact but NaN where |a / b| overflows the dtype (or b is
/// subnormal and |a| large); those lanes (finite a, nonzero b, NaN result) go to libm's fmod.
LV *exact_fmod(KernelBuilder &kb, LV *a, LV *b) {
  auto &B = kb.builder();
  LV *r = sleef_call(kb, "fmod", "", {a, b});
  LV *bad = B.CreateAnd(
      B.CreateFCmpUNO(r, r),
      B.CreateAnd(B.CreateFCmpOLT(intrinsic1(kb, llvm::Intrinsic::fabs, a), cf(a, INFINITY)),
                  B.CreateFCmpONE(b, cf(b, 0))));
  return scalar_rare_lanes(
      kb, bad, r, {a, b}, [&](const std::vector<LV *> &s) { return B.CreateFRem(s[0], s[1]); },
      "fmod");
}

/// e^x. Sleef_expd*_u10 returns inf above 709.78271115 though e^x is finite up to ln DBL_MAX =
/// 709.78271289; there e^x = e^x0 (1 + expm1(t)), t = x - x0 exact for x0 = 709.78125, e^x0
/// in two doubles, expm1 by its Taylor series to t^5 (t < 0.0015: the t^6 term is below 2^-63).
/// Past ln DBL_MAX the final add overflows to inf as it should.
LV *exp_full_range(KernelBuilder &kb, LV *x) {
  auto &B = kb.builder();
  LV *r = sleef_call(kb, "exp", "u10", {x});
  if (!is_double(x))
    return r;
  constexpr double kX0 = 709.78125;
  LV *big = B.CreateFCmpOGT(x, cf(x, kX0));
  return patch_rare_lanes(
      kb, big, r,
      [&] {
        LV *t = B.CreateFSub(x, cf(x, kX0));
        LV *p = cf(x, 1.0 / 120);
        for (double c : {1.0 / 24, 1.0 / 6, 0.5, 1.0})
          p = fma(kb, p, t, cf(x, c));
        LV *m = B.CreateFMul(p, t);
        LV *hi = cf(x, 0x1.ff40655482d39p+1023), *lo = cf(x, 0x1.c3d018ea0ae29p+968);
        return B.CreateFAdd(hi, fma(kb, hi, m, lo));
      },
      "exp");
}

/// e^|x| / 2, where e^-|x| is negligible (|x| > 88 fp32, > 709 fp64): sinh and cosh there.
/// fp32 in double (one rounding); fp64 as e^(|x| - L1) (1 - L2), ln 2 = L1 + L2 with L1 a
/// multiple of 2^-43, so |x| - L1 is exact for |x| < 1024.
LV *half_exp_abs(KernelBuilder &kb, LV *x) {
  auto &B = kb.builder();
  LV *ax = intrinsic1(kb, llvm::Intrinsic::fabs, x);
  if (!is_double(x)) {
    LV *d = B.CreateFPExt(ax, like(x, B.getDoubleTy()));
    LV *e = sleef_call(kb, "exp", "u10", {B.CreateFSub(d, cf(d, kLn2))});
    return B.CreateFPTrunc(e, x->getType());
  }
  LV *e = exp_full_range(kb, B.CreateFSub(ax, cf(x, 0x1.62e42fefa38p-1)));
  LV *r = fma(kb, e, cf(x, -0x1.ef35793c7673p-45), e);
  return B.CreateSelect(is_inf(kb, e), e, r); // inf * -L2 + inf would be NaN
}

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 so that e^-x never overflows (the result
/// stays accurate down to the subnormals). Mirrors interp/scalar_ops.h sigmoid_f.
LV *sigmoid(KernelBuilder &kb, LV *x) {
  auto &B = kb.builder();
  LV *e = sleef_call(kb, "exp", "u10", {B.CreateFNeg(intrinsic1(kb, llvm::Intrinsic::fabs, x))});
  LV *num = B.CreateSelect(B.CreateFCmpOLT(x, cf(x, 0)), e, cf(x, 1));
  return B.CreateFDiv(num, B.CreateFAdd(cf(x, 1), e));
}

/// x/2 erfc(z), z = -x / sqrt 2. For x < 0 the rounding error d of z is amplified by the
/// tail's slope, erfc(z + d) ~ erfc(z) (1 - g d) with g = -erfc'(z) / erfc(z) ~ 2z + 1/z; d is
/// recovered by fma (with the constant's own error), and g approximated as
/// 2z + 1 / (z + 0.9) (within 7% for z >= 0, enough for a correction of a few ULP). Mirrors
/// interp/scalar_ops.h gelu_f.
LV *gelu(KernelBuilder &kb, LV *x) {
  auto &B = kb.builder();
  const bool dbl = is_double(x);
  LV *c_hi = cf(x, dbl ? -0x1.6a09e667f3bcdp-1 : static_cast<double>(-0x1.6a09e6p-1f));
  LV *c_lo = cf(x, dbl ? 0x1.bdd3413b26456p-55 : static_cast<double>(-0x1.9fcef4p-27f));
  LV *z = B.CreateFMul(x, c_hi);
  LV *d = fma(kb, x, c_lo, fma(kb, x, c_hi, B.CreateFNeg(z)));
  LV *g =
      B.CreateFAdd(B.CreateFMul(cf(x, 2), z), B.CreateFDiv(cf(x, 1), B.CreateFAdd(z, cf(x, 0.9))));
  // Only where erfc(z) > 0 and g is finite (z < 64; erfc underflows from z = 27).
  LV *tail = B.CreateAnd(B.CreateFCmpOGT(z, cf(x, 0)), B.CreateFCmpOLT(z, cf(x, 64)));
  LV *corr = B.CreateSelect(tail, fma(kb, B.CreateFNeg(g), d, cf(x, 1)), cf(x, 1));
  LV *t = sleef_call(kb, "erfc", "u15", {z});
  return B.CreateFMul(B.CreateFMul(B.CreateFMul(cf(x, 0.5), x), t), corr);
}

/// PyTorch's div_floor_floating, lane-wise (see interp/scalar_ops.h floor_div_f).
LV *floor_div_fp(KernelBuilder &kb, LV *a, LV *b) {
  auto &B = kb.builder();
  LV *zero = cf(a, 0);
  LV *mod = exact_fmod(kb, a, b);
  LV *div = B.CreateFDiv(B.CreateFSub(a, mod), b);
  LV *adj = B.CreateAnd(B.CreateFCmpUNE(mod, zero),
                        B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(mod, zero)));
  div = B.CreateSelect(adj, B.CreateFSub(div, cf(a, 1)), div);
  LV *fl = intrinsic1(kb, llvm::Intrinsic::floor, div);
  fl = B.CreateSelect(B.CreateFCmpOGT(B.CreateFSub(div, fl), cf(a, 0.5)),
                      B.CreateFAdd(fl, cf(a, 1)), fl);
  LV *q = B.CreateFDiv(a, b);
  LV *signed_zero = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, q);
  LV *res = B.CreateSelect(B.CreateFCmpOEQ(div, zero), signed_zero, fl);
  return B.CreateSelect(B.CreateFCmpOEQ(b, zero), q, res);
}

/// Integer division with the zero-divisor check; INT_MIN / -1 wraps (two's complement).
LV *int_div(KernelBuilder &kb, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  LV *bs = checked_divisor(kb, b, mask);
  if (is_unsigned(dt))
    return B.CreateUDiv(a, bs);
  LV *m1 = B.CreateICmpEQ(bs, llvm::Constant::getAllOnesValue(b->getType()));
  LV *safe = B.CreateSelect(m1, ci(b, 1), bs);
  return B.CreateSelect(m1, B.CreateNeg(a), B.CreateSDiv(a, safe));
}

/// Integer floor_div / remainder / fmod with the zero-divisor check; INT_MIN / -1 wraps.
LV *int_division(KernelBuilder &kb, IntDivision k, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  LV *bs = checked_divisor(kb, b, mask);
  LV *zero = llvm::Constant::getNullValue(a->getType());
  if (is_unsigned(dt))
    return k == IntDivision::Floor ? B.CreateUDiv(a, bs) : B.CreateURem(a, bs);
  LV *m1 = B.CreateICmpEQ(bs, llvm::Constant::getAllOnesValue(b->getType()));
  LV *safe = B.CreateSelect(m1, ci(b, 1), bs);
  LV *r = B.CreateSelect(m1, zero, B.CreateSRem(a, safe));
  // The truncated remainder and the divisor differ in sign: floor is one lower, mod one b up.
  LV *adj = B.CreateAnd(B.CreateICmpNE(r, zero), B.CreateICmpSLT(B.CreateXor(r, bs), zero));
  switch (k) {
  case IntDivision::Floor: {
    LV *q = B.CreateSelect(m1, B.CreateNeg(a), B.CreateSDiv(a, safe));
    return B.CreateSelect(adj, B.CreateSub(q, ci(q, 1)), q);
  }
  case IntDivision::Remainder:
    return B.CreateSelect(adj, B.CreateAdd(r, bs), r);
  case IntDivision::Fmod:
    return r;
  }
  return r;
}

/// a << b (left) or a >> b (arithmetic; logical for unsigned), with the out-of-range rules of
/// op_kinds.def.
LV *shift(KernelBuilder &kb, bool left, LV *a, LV *b, DataType dt) {
  auto &B = kb.builder();
  unsigned bits = a->getType()->getScalarSizeInBits();
  LV *zero = llvm::Constant::getNullValue(a->getType());
  // In range: 0 <= b < bits (unsigned compare covers negative b for signed types too).
  LV *in_range = B.CreateICmpULT(b, ci(b, bits));
  LV *bsafe = B.CreateSelect(in_range, b, zero);
  if (left)
    return B.CreateSelect(in_range, B.CreateShl(a, bsafe), zero);
  if (is_unsigned(dt))
    return B.CreateSelect(in_range, B.CreateLShr(a, bsafe), zero);
  return B.CreateSelect(in_range, B.CreateAShr(a, bsafe), B.CreateAShr(a, ci(a, bits - 1)));
}

/// Integer a^b by square-and-multiply over the bits of b (wrapping), looping while any live lane
/// has exponent bits left; negative exponents give 1 (a = 1), +-1 (a = -1) or 0, as PyTorch.
LV *int_pow(KernelBuilder &kb, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  LV *zero = llvm::Constant::getNullValue(b->getType());
  LV *neg = is_unsigned(dt) ? nullptr : B.CreateICmpSLT(b, zero);
  LV *e = neg ? B.CreateSelect(neg, zero, b) : b;
  if (mask)
    e = B.CreateSelect(mask, e, zero);
  auto state = while_any(
      B, {ci(a, 1), a, e}, [&](const std::vector<LV *> &s) { return B.CreateICmpNE(s[2], zero); },
      [&](const std::vector<LV *> &s) {
        LV *bit = B.CreateICmpNE(B.CreateAnd(s[2], ci(b, 1)), zero);
        return std::vector<LV *>{B.CreateSelect(bit, B.CreateMul(s[0], s[1]), s[0]),
                                 B.CreateMul(s[1], s[1]), B.CreateLShr(s[2], ci(b, 1))};
      },
      "ipow");
  if (!neg)
    return state[0];
  LV *odd = B.CreateICmpNE(B.CreateAnd(b, ci(b, 1)), zero);
  LV *minus = B.CreateSelect(odd, ci(a, -1), ci(a, 1));
  LV *inv = B.CreateSelect(B.CreateICmpEQ(a, ci(a, 1)), ci(a, 1),
                           B.CreateSelect(B.CreateICmpEQ(a, ci(a, -1)), minus, zero));
  return B.CreateSelect(neg, inv, state[0]);
}

/// gcd of the magnitudes (unsigned Euclid, so |INT_MIN| stays exact and wraps on the store).
LV *int_gcd(KernelBuilder &kb, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  LV *zero = llvm::Constant::getNullValue(b->getType());
  auto mag = [&](LV *v) {
    return is_unsigned(dt) ? v : B.CreateBinaryIntrinsic(llvm::Intrinsic::abs, v, B.getFalse());
  };
  LV *y = mag(b);
  if (mask)
    y = B.CreateSelect(mask, y, zero);
  auto state = while_any(
      B, {mag(a), y}, [&](const std::vector<LV *> &s) { return B.CreateICmpNE(s[1], zero); },
      [&](const std::vector<LV *> &s) {
        LV *nz = B.CreateICmpNE(s[1], zero);
        LV *r = B.CreateURem(s[0], B.CreateSelect(nz, s[1], ci(b, 1)));
        return std::vector<LV *>{B.CreateSelect(nz, s[1], s[0]), B.CreateSelect(nz, r, s[1])};
      },
      "gcd");
  return state[0];
}

/// C pow through SLEEF. Sleef_powd*_u10 is +-inf where |a^b| lies in (e^709.78271115, DBL_MAX]
/// (its exp's overflow threshold): fp64 lanes with an infinite result from finite nonzero
/// operands go to libm's pow (true overflows too, which are as rare).
LV *fp_pow(KernelBuilder &kb, LV *a, LV *b) {
  auto &B = kb.builder();
  LV *r = sleef_call(kb, "pow", "u10", {a, b});
  if (!is_double(a))
    return r;
  LV *fin_a = B.CreateFCmpOLT(intrinsic1(kb, llvm::Intrinsic::fabs, a), cf(a, INFINITY));
  LV *fin_b = B.CreateFCmpOLT(intrinsic1(kb, llvm::Intrinsic::fabs, b), cf(b, INFINITY));
  LV *bad = B.CreateAnd(B.CreateAnd(is_inf(kb, r), B.CreateFCmpONE(a, cf(a, 0))),
                        B.CreateAnd(fin_a, fin_b));
  return scalar_rare_lanes(
      kb, bad, r, {a, b},
      [&](const std::vector<LV *> &s) {
        return B.CreateBinaryIntrinsic(llvm::Intrinsic::pow, s[0], s[1]);
      },
      "pow");
}

} // namespace pto::codegen::vec
