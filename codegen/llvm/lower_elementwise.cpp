// lower_elementwise.cpp - See lower_elementwise.h. Each op mirrors the scalar semantics of
// interpreter_compute.cpp operation for operation, so both executors round alike.
#include "llvm/lower_elementwise.h"

#include "llvm/dtype_codec.h"
#include "llvm/vector_math.h"
#include "pto/error.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <cmath>
#include <string>

namespace pto::codegen {

using ir::OpKind;
using LV = llvm::Value;

namespace {

/// The same-width vector type with element `elem`.
llvm::Type *like(LV *v, llvm::Type *elem) {
  return llvm::VectorType::get(elem, llvm::cast<llvm::VectorType>(v->getType())->getElementCount());
}
LV *cf(LV *like_v, double c) { return llvm::ConstantFP::get(like_v->getType(), c); }
LV *ci(LV *like_v, int64_t c) {
  return llvm::ConstantInt::get(like_v->getType(), static_cast<uint64_t>(c), true);
}
/// i1 vector -> i8 0/1 (the DT_BOOL compute type).
LV *to_bool(KernelBuilder &kb, LV *i1) { return kb.builder().CreateZExt(i1, like(i1, kb.builder().getInt8Ty())); }

LV *intrinsic1(KernelBuilder &kb, llvm::Intrinsic::ID id, LV *x) {
  return kb.builder().CreateUnaryIntrinsic(id, x);
}

constexpr double kLn2 = 0.69314718055994530942;

LV *fma(KernelBuilder &kb, LV *a, LV *b, LV *c) {
  return kb.builder().CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, b, c});
}
bool is_double(LV *v) { return v->getType()->getScalarType()->isDoubleTy(); }
LV *is_inf(KernelBuilder &kb, LV *x) {
  return kb.builder().CreateFCmpOEQ(intrinsic1(kb, llvm::Intrinsic::fabs, x), cf(x, INFINITY));
}

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
  auto *slow_end = B.GetInsertBlock();
  B.CreateBr(join);
  B.SetInsertPoint(join);
  auto *phi = B.CreatePHI(base->getType(), 2);
  phi->addIncoming(base, pre);
  phi->addIncoming(fixed, slow_end);
  return phi;
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
  LV *a_wins =
      is_max ? B.CreateICmpSGT(key(ai), key(bi)) : B.CreateICmpSLT(key(ai), key(bi));
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
  LV *bad = B.CreateAnd(B.CreateFCmpUNO(r, r),
                        B.CreateAnd(B.CreateFCmpOLT(intrinsic1(kb, llvm::Intrinsic::fabs, a),
                                                    cf(a, INFINITY)),
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
/// stays accurate down to the subnormals). Mirrors interpreter_compute.cpp sigmoid_f.
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
/// interpreter_compute.cpp gelu_f.
LV *gelu(KernelBuilder &kb, LV *x) {
  auto &B = kb.builder();
  const bool dbl = is_double(x);
  LV *c_hi = cf(x, dbl ? -0x1.6a09e667f3bcdp-1 : static_cast<double>(-0x1.6a09e6p-1f));
  LV *c_lo = cf(x, dbl ? 0x1.bdd3413b26456p-55 : static_cast<double>(-0x1.9fcef4p-27f));
  LV *z = B.CreateFMul(x, c_hi);
  LV *d = fma(kb, x, c_lo, fma(kb, x, c_hi, B.CreateFNeg(z)));
  LV *g = B.CreateFAdd(B.CreateFMul(cf(x, 2), z),
                       B.CreateFDiv(cf(x, 1), B.CreateFAdd(z, cf(x, 0.9))));
  // Only where erfc(z) > 0 and g is finite (z < 64; erfc underflows from z = 27).
  LV *tail = B.CreateAnd(B.CreateFCmpOGT(z, cf(x, 0)), B.CreateFCmpOLT(z, cf(x, 64)));
  LV *corr = B.CreateSelect(tail, fma(kb, B.CreateFNeg(g), d, cf(x, 1)), cf(x, 1));
  LV *t = sleef_call(kb, "erfc", "u15", {z});
  return B.CreateFMul(B.CreateFMul(B.CreateFMul(cf(x, 0.5), x), t), corr);
}

/// The integer divisor with masked-off lanes set to 1, after failing on any live zero.
LV *checked_divisor(KernelBuilder &kb, LV *b, LV *mask) {
  auto &B = kb.builder();
  LV *one = ci(b, 1);
  LV *bs = mask ? B.CreateSelect(mask, b, one) : b;
  LV *any_zero = B.CreateOrReduce(B.CreateICmpEQ(bs, llvm::Constant::getNullValue(b->getType())));
  kb.fail_unless(B.CreateNot(any_zero), PTO_FAIL_DIV_ZERO, kb.i64(0), kb.i64(0));
  return bs;
}

/// PyTorch's div_floor_floating, lane-wise (see interpreter_compute.cpp floor_div_f).
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

/// Integer floor_div / remainder / fmod with the zero-divisor check; INT_MIN / -1 wraps.
LV *int_division(KernelBuilder &kb, OpKind k, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  LV *bs = checked_divisor(kb, b, mask);
  LV *zero = llvm::Constant::getNullValue(a->getType());
  if (is_unsigned(dt))
    return k == OpKind::FloorDiv ? B.CreateUDiv(a, bs) : B.CreateURem(a, bs);
  LV *m1 = B.CreateICmpEQ(bs, llvm::Constant::getAllOnesValue(b->getType()));
  LV *safe = B.CreateSelect(m1, ci(b, 1), bs);
  LV *r = B.CreateSelect(m1, zero, B.CreateSRem(a, safe));
  // The truncated remainder and the divisor differ in sign: floor is one lower, mod one b up.
  LV *adj = B.CreateAnd(B.CreateICmpNE(r, zero), B.CreateICmpSLT(B.CreateXor(r, bs), zero));
  switch (k) {
  case OpKind::FloorDiv: {
    LV *q = B.CreateSelect(m1, B.CreateNeg(a), B.CreateSDiv(a, safe));
    return B.CreateSelect(adj, B.CreateSub(q, ci(q, 1)), q);
  }
  case OpKind::Remainder:
    return B.CreateSelect(adj, B.CreateAdd(r, bs), r);
  default:
    return r; // Fmod
  }
}

LV *shift(KernelBuilder &kb, OpKind k, LV *a, LV *b, DataType dt) {
  auto &B = kb.builder();
  unsigned bits = a->getType()->getScalarSizeInBits();
  LV *zero = llvm::Constant::getNullValue(a->getType());
  // In range: 0 <= b < bits (unsigned compare covers negative b for signed types too).
  LV *in_range = B.CreateICmpULT(b, ci(b, bits));
  LV *bsafe = B.CreateSelect(in_range, b, zero);
  if (k == OpKind::ShiftLeft)
    return B.CreateSelect(in_range, B.CreateShl(a, bsafe), zero);
  if (is_unsigned(dt))
    return B.CreateSelect(in_range, B.CreateLShr(a, bsafe), zero);
  return B.CreateSelect(in_range, B.CreateAShr(a, bsafe), B.CreateAShr(a, ci(a, bits - 1)));
}

/// A loop at B's insertion point that runs `step` while any lane of `live(state)` is true;
/// `state` starts as `init` (one vector per entry). Leaves B at the exit; returns the final state.
std::vector<LV *> while_any(llvm::IRBuilder<> &B, std::vector<LV *> init,
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

LV *compare(KernelBuilder &kb, OpKind k, LV *a, LV *b, bool fp, bool uns) {
  auto &B = kb.builder();
  using P = llvm::CmpInst::Predicate;
  P p = P::ICMP_EQ;
  switch (k) {
  case OpKind::Eq:
    p = fp ? P::FCMP_OEQ : P::ICMP_EQ;
    break;
  case OpKind::Ne:
    p = fp ? P::FCMP_UNE : P::ICMP_NE;
    break;
  case OpKind::Lt:
    p = fp ? P::FCMP_OLT : uns ? P::ICMP_ULT : P::ICMP_SLT;
    break;
  case OpKind::Le:
    p = fp ? P::FCMP_OLE : uns ? P::ICMP_ULE : P::ICMP_SLE;
    break;
  case OpKind::Gt:
    p = fp ? P::FCMP_OGT : uns ? P::ICMP_UGT : P::ICMP_SGT;
    break;
  case OpKind::Ge:
    p = fp ? P::FCMP_OGE : uns ? P::ICMP_UGE : P::ICMP_SGE;
    break;
  default:
    break;
  }
  return to_bool(kb, fp ? B.CreateFCmp(p, a, b) : B.CreateICmp(p, a, b));
}

} // namespace

LV *sleef_call(KernelBuilder &kb, const char *fn, const char *acc, const std::vector<LV *> &args) {
  auto &B = kb.builder();
  auto *vt = llvm::cast<llvm::FixedVectorType>(args[0]->getType());
  bool dbl = vt->getElementType()->isDoubleTy();
  const Isa isa = kb.isa();
  unsigned native = sleef_lanes(isa, dbl);
  std::string name = sleef_name(fn, acc, dbl, isa); // the names the JIT binds (vector_math.h)
  auto *nt = llvm::FixedVectorType::get(vt->getElementType(), native);
  std::vector<llvm::Type *> params(args.size(), nt);
  auto callee = kb.module().getOrInsertFunction(name, llvm::FunctionType::get(nt, params, false));
  unsigned n = vt->getNumElements();
  if (n == native)
    return B.CreateCall(callee, args);
  std::vector<LV *> parts;
  for (unsigned off = 0; off < n; off += native) {
    std::vector<int> idx;
    for (unsigned i = 0; i < native; ++i)
      idx.push_back(static_cast<int>(off + i));
    std::vector<LV *> part_args;
    for (LV *a : args)
      part_args.push_back(B.CreateShuffleVector(a, idx));
    parts.push_back(B.CreateCall(callee, part_args));
  }
  while (parts.size() > 1) {
    std::vector<LV *> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      unsigned m = llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements();
      std::vector<int> idx;
      for (unsigned k = 0; k < 2 * m; ++k)
        idx.push_back(static_cast<int>(k));
      next.push_back(B.CreateShuffleVector(parts[i], parts[i + 1], idx));
    }
    parts = next;
  }
  return parts[0];
}

LV *lower_unary_ext(KernelBuilder &kb, const ir::Op &op, LV *x, DataType in_dt) {
  auto &B = kb.builder();
  namespace I = llvm::Intrinsic;
  const bool fp = is_float(in_dt), uns = is_unsigned(in_dt);
  auto s10 = [&](const char *fn) { return sleef_call(kb, fn, "u10", {x}); };
  LV *zero = llvm::Constant::getNullValue(x->getType());
  const double attr = op.scalar ? op.scalar->f : 0.0;
  if (fp) {
    switch (op.kind) {
    case OpKind::Exp:
      return exp_full_range(kb, x);
    case OpKind::Exp2:
      return s10("exp2");
    case OpKind::Expm1:
      return s10("expm1");
    case OpKind::Log2:
      return s10("log2");
    case OpKind::Log10:
      return s10("log10");
    case OpKind::Log1p: {
      // Sleef_log1p is inf above 1e38 (fp32) / 1e307 (fp64); above 1e18, log1p(x) = log(x) to
      // far below one ULP (they differ by ~1/x).
      LV *big = B.CreateFCmpOGT(x, cf(x, 1e18));
      return patch_rare_lanes(kb, big, s10("log1p"), [&] { return s10("log"); }, "log1p");
    }
    case OpKind::Sin:
      return s10("sin");
    case OpKind::Cos:
      return s10("cos");
    case OpKind::Tan:
      return s10("tan");
    case OpKind::Asin:
      return s10("asin");
    case OpKind::Acos:
      return s10("acos");
    case OpKind::Atan:
      return s10("atan");
    case OpKind::Sinh:
    case OpKind::Cosh: {
      // SLEEF's sinh/cosh overflow where e^|x| does (|x| = 88.72 fp32, 709.78 fp64), though the
      // results are finite up to 89.4 / 710.5; past |x| = 88 / 709 they are +-e^|x| / 2.
      const bool sinh = op.kind == OpKind::Sinh;
      LV *big = B.CreateFCmpOGT(intrinsic1(kb, I::fabs, x), cf(x, is_double(x) ? 709 : 88));
      return patch_rare_lanes(
          kb, big, s10(sinh ? "sinh" : "cosh"),
          [&] {
            LV *h = half_exp_abs(kb, x);
            return sinh ? B.CreateBinaryIntrinsic(I::copysign, h, x) : h;
          },
          sinh ? "sinh" : "cosh");
    }
    case OpKind::Tanh:
      return s10("tanh");
    case OpKind::Asinh:
    case OpKind::Acosh: {
      // SLEEF's asinh/acosh overflow to inf above sqrt(FLT_MAX); there asinh |x| = acosh |x| =
      // log|x| + ln 2 (the next term, 1 / 4x^2, is far below one ULP).
      LV *ax = intrinsic1(kb, I::fabs, x);
      LV *big = B.CreateFCmpOGT(op.kind == OpKind::Asinh ? ax : x, cf(x, 1e10)); // acosh(<1) NaN
      LV *tail = B.CreateFAdd(sleef_call(kb, "log", "u10", {ax}), cf(x, 0.69314718055994530942));
      if (op.kind == OpKind::Asinh)
        tail = B.CreateBinaryIntrinsic(I::copysign, tail, x);
      return B.CreateSelect(big, tail, s10(op.kind == OpKind::Asinh ? "asinh" : "acosh"));
    }
    case OpKind::Atanh:
      return s10("atanh");
    case OpKind::Erf:
      return s10("erf");
    case OpKind::Erfc:
      return sleef_call(kb, "erfc", "u15", {x});
    case OpKind::Cbrt:
      return s10("cbrt");
    case OpKind::Sigmoid:
      return sigmoid(kb, x);
    case OpKind::Softplus: {
      LV *sp = sleef_call(kb, "log1p", "u10", {s10("exp")});
      return B.CreateSelect(B.CreateFCmpOGT(x, cf(x, 20)), x, sp);
    }
    case OpKind::Softsign:
      return B.CreateFDiv(x, B.CreateFAdd(cf(x, 1), intrinsic1(kb, I::fabs, x)));
    case OpKind::Elu:
      return B.CreateSelect(B.CreateFCmpOGT(x, zero), x, B.CreateFMul(cf(x, attr), s10("expm1")));
    case OpKind::Gelu:
      return gelu(kb, x);
    case OpKind::GeluTanh: {
      LV *cube = B.CreateFMul(B.CreateFMul(B.CreateFMul(cf(x, 0.044715), x), x), x);
      LV *u = B.CreateFMul(cf(x, 0.79788456080286535588), B.CreateFAdd(x, cube));
      return B.CreateFMul(x, sigmoid(kb, B.CreateFMul(cf(x, 2), u)));
    }
    case OpKind::Lrelu:
      return B.CreateSelect(B.CreateFCmpOGE(x, zero), x, B.CreateFMul(x, cf(x, attr)));
    case OpKind::Relu:
      return B.CreateBinaryIntrinsic(I::maximum, x, zero);
    case OpKind::Relu6:
      return B.CreateBinaryIntrinsic(I::minimum, B.CreateBinaryIntrinsic(I::maximum, x, zero),
                                     cf(x, 6));
    case OpKind::Sign:
      return B.CreateSelect(B.CreateFCmpOGT(x, zero), cf(x, 1),
                            B.CreateSelect(B.CreateFCmpOLT(x, zero), cf(x, -1), x));
    case OpKind::Signbit: {
      LV *bits = B.CreateBitCast(x, like(x, B.getIntNTy(x->getType()->getScalarSizeInBits())));
      return to_bool(kb, B.CreateICmpSLT(bits, llvm::Constant::getNullValue(bits->getType())));
    }
    case OpKind::Ceil:
      return intrinsic1(kb, I::ceil, x);
    case OpKind::Floor:
      return intrinsic1(kb, I::floor, x);
    case OpKind::Trunc:
      return intrinsic1(kb, I::trunc, x);
    case OpKind::Round:
      return intrinsic1(kb, I::roundeven, x);
    case OpKind::IsFinite:
      return to_bool(kb, B.CreateFCmpOLT(intrinsic1(kb, I::fabs, x), cf(x, INFINITY)));
    case OpKind::IsNan:
      return to_bool(kb, B.CreateFCmpUNO(x, x));
    case OpKind::IsInf:
      return to_bool(kb, B.CreateFCmpOEQ(intrinsic1(kb, I::fabs, x), cf(x, INFINITY)));
    case OpKind::LogicalNot:
      return to_bool(kb, B.CreateFCmpOEQ(x, zero));
    case OpKind::Square:
      return B.CreateFMul(x, x);
    case OpKind::Clone:
      return x;
    default:
      break;
    }
  } else {
    LV *i8_0 = llvm::Constant::getNullValue(like(x, B.getInt8Ty()));
    switch (op.kind) {
    case OpKind::Relu:
      return uns ? x : B.CreateBinaryIntrinsic(I::smax, x, zero);
    case OpKind::Relu6:
      return uns ? B.CreateBinaryIntrinsic(I::umin, x, ci(x, 6))
                 : B.CreateBinaryIntrinsic(I::smin, B.CreateBinaryIntrinsic(I::smax, x, zero),
                                           ci(x, 6));
    case OpKind::Sign:
      if (uns)
        return B.CreateZExt(B.CreateICmpNE(x, zero), x->getType());
      return B.CreateSelect(B.CreateICmpSGT(x, zero), ci(x, 1),
                            B.CreateSelect(B.CreateICmpSLT(x, zero), ci(x, -1), zero));
    case OpKind::Signbit:
      return uns ? i8_0 : to_bool(kb, B.CreateICmpSLT(x, zero));
    case OpKind::Ceil:
    case OpKind::Floor:
    case OpKind::Trunc:
    case OpKind::Round:
    case OpKind::Clone:
      return x;
    case OpKind::IsFinite:
      return llvm::ConstantInt::get(i8_0->getType(), 1);
    case OpKind::IsNan:
    case OpKind::IsInf:
      return i8_0;
    case OpKind::LogicalNot:
      return to_bool(kb, B.CreateICmpEQ(x, zero));
    case OpKind::BitwiseNot:
      return in_dt == DT_BOOL ? B.CreateXor(x, ci(x, 1)) : B.CreateNot(x);
    case OpKind::Square:
      return B.CreateMul(x, x);
    default:
      break;
    }
  }
  throw InternalError(op.where, ir::op_info(op.kind).name,
                      "no vector lowering for dtype " + name(in_dt) + " (a ptojit bug)");
}

LV *lower_binary_ext(KernelBuilder &kb, const ir::Op &op, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  const bool fp = is_float(dt), uns = is_unsigned(dt);
  const OpKind k = op.kind;
  switch (k) {
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::Lt:
  case OpKind::Le:
  case OpKind::Gt:
  case OpKind::Ge:
    return compare(kb, k, a, b, fp, uns);
  case OpKind::LogicalAnd:
  case OpKind::LogicalOr:
  case OpKind::LogicalXor: {
    LV *za = llvm::Constant::getNullValue(a->getType());
    LV *ta = fp ? B.CreateFCmpUNE(a, za) : B.CreateICmpNE(a, za);
    LV *tb = fp ? B.CreateFCmpUNE(b, za) : B.CreateICmpNE(b, za);
    LV *r = k == OpKind::LogicalAnd  ? B.CreateAnd(ta, tb)
            : k == OpKind::LogicalOr ? B.CreateOr(ta, tb)
                                     : B.CreateXor(ta, tb);
    return to_bool(kb, r);
  }
  default:
    break;
  }
  if (fp) {
    switch (k) {
    case OpKind::Maximum:
    case OpKind::Minimum:
      return fp_max_min(kb, a, b, k == OpKind::Maximum);
    case OpKind::Pow: {
      LV *r = sleef_call(kb, "pow", "u10", {a, b});
      if (!is_double(a))
        return r;
      // Sleef_powd*_u10 is +-inf where |a^b| lies in (e^709.78271115, DBL_MAX] (its exp's
      // overflow threshold): lanes with an infinite result from finite nonzero operands go to
      // libm's pow (true overflows too, which are as rare).
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
    case OpKind::Hypot:
      return sleef_call(kb, "hypot", "u05", {a, b});
    case OpKind::Atan2:
      return sleef_call(kb, "atan2", "u10", {a, b});
    case OpKind::Copysign:
      return B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a, b);
    case OpKind::Fmod:
      return exact_fmod(kb, a, b);
    case OpKind::Remainder: {
      LV *zero = cf(a, 0);
      LV *mod = exact_fmod(kb, a, b);
      LV *adj = B.CreateAnd(B.CreateFCmpUNE(mod, zero),
                            B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(mod, zero)));
      return B.CreateSelect(adj, B.CreateFAdd(mod, b), mod);
    }
    case OpKind::FloorDiv:
      return floor_div_fp(kb, a, b);
    default:
      break;
    }
  } else {
    switch (k) {
    case OpKind::FloorDiv:
    case OpKind::Remainder:
    case OpKind::Fmod:
      return int_division(kb, k, a, b, dt, mask);
    case OpKind::BitwiseAnd:
      return B.CreateAnd(a, b);
    case OpKind::BitwiseOr:
      return B.CreateOr(a, b);
    case OpKind::BitwiseXor:
      return B.CreateXor(a, b);
    case OpKind::ShiftLeft:
    case OpKind::ShiftRight:
      return shift(kb, k, a, b, dt);
    case OpKind::Pow:
      return int_pow(kb, a, b, dt, mask);
    case OpKind::Gcd:
      return int_gcd(kb, a, b, dt, mask);
    default:
      break;
    }
  }
  throw InternalError(op.where, ir::op_info(k).name,
                      "no vector lowering for dtype " + name(dt) + " (a ptojit bug)");
}

LV *lower_unary(KernelBuilder &kb, const ir::Op &op, LV *x, DataType in_dt, DataType out_dt) {
  auto &B = kb.builder();
  bool fp = is_float(in_dt);
  switch (op.kind) {
  case OpKind::Neg: return fp ? B.CreateFNeg(x) : B.CreateNeg(x);
  case OpKind::Abs:
    return fp ? B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)
              : B.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, B.getFalse());
  case OpKind::Log: return sleef_call(kb, "log", "u10", {x});
  case OpKind::Sqrt: return B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
  case OpKind::Rsqrt:
    return B.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0),
                        B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
  case OpKind::Reciprocal: return B.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), x);
  case OpKind::Cast: return convert(B, x, in_dt, out_dt);
  default: break;
  }
  return lower_unary_ext(kb, op, x, in_dt); // the catalogue ops
}

LV *lower_binary(KernelBuilder &kb, const ir::Op &op, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  bool fp = is_float(dt);
  switch (op.kind) {
  case OpKind::Add: return fp ? B.CreateFAdd(a, b) : B.CreateAdd(a, b);
  case OpKind::Sub: return fp ? B.CreateFSub(a, b) : B.CreateSub(a, b);
  case OpKind::Mul: return fp ? B.CreateFMul(a, b) : B.CreateMul(a, b);
  case OpKind::Div: {
    if (fp)
      return B.CreateFDiv(a, b);
    // Masked-off lanes divide by 1; a zero divisor in a live lane fails the call.
    LV *one = llvm::ConstantInt::get(b->getType(), 1);
    LV *bs = mask ? B.CreateSelect(mask, b, one) : b;
    LV *zero = B.CreateICmpEQ(bs, llvm::Constant::getNullValue(b->getType()));
    LV *any = B.CreateOrReduce(zero);
    kb.fail_unless(B.CreateNot(any), PTO_FAIL_DIV_ZERO, kb.i64(0), kb.i64(0));
    if (is_unsigned(dt))
      return B.CreateUDiv(a, bs);
    // INT_MIN / -1 wraps (two's complement) instead of trapping.
    LV *m1 = B.CreateICmpEQ(bs, llvm::Constant::getAllOnesValue(b->getType()));
    LV *safe = B.CreateSelect(m1, one, bs);
    return B.CreateSelect(m1, B.CreateNeg(a), B.CreateSDiv(a, safe));
  }
  case OpKind::Maximum:
    if (fp)
      break; // lower_binary_ext, which avoids llvm.maximum (see fp_max_min)
    return B.CreateBinaryIntrinsic(is_unsigned(dt) ? llvm::Intrinsic::umax : llvm::Intrinsic::smax,
                                   a, b);
  case OpKind::Minimum:
    if (fp)
      break;
    return B.CreateBinaryIntrinsic(is_unsigned(dt) ? llvm::Intrinsic::umin : llvm::Intrinsic::smin,
                                   a, b);
  default: break;
  }
  return lower_binary_ext(kb, op, a, b, dt, mask); // the catalogue ops
}

} // namespace pto::codegen
