// lower_elementwise.cpp - See lower_elementwise.h. Each op mirrors the scalar semantics of
// interpreter_compute.cpp operation for operation, so both executors round alike.
#include "lower_elementwise.h"

#include "pto/error.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <string>

namespace pto::codegen {

using ir::OpKind;
using LV = llvm::Value;

namespace {

bool is_unsigned_dt(DataType dt) { return dt == DT_UINT8 || dt == DT_BOOL; }

/// The same-width vector type with element `elem`.
llvm::Type *like(LV *v, llvm::Type *elem) {
  return llvm::VectorType::get(elem, llvm::cast<llvm::VectorType>(v->getType())->getElementCount());
}
LV *cf(LV *like_v, double c) { return llvm::ConstantFP::get(like_v->getType(), c); }
LV *ci(LV *like_v, int64_t c) {
  return llvm::ConstantInt::get(like_v->getType(), static_cast<uint64_t>(c), true);
}
/// i1 vector -> i8 0/1 (the DT_BOOL compute type).
LV *to_bool(VecMath &vm, LV *i1) { return vm.B.CreateZExt(i1, like(i1, vm.B.getInt8Ty())); }

LV *intrinsic1(VecMath &vm, llvm::Intrinsic::ID id, LV *x) {
  return vm.B.CreateUnaryIntrinsic(id, x);
}

/// The integer divisor with masked-off lanes set to 1, after failing on any live zero.
LV *checked_divisor(VecMath &vm, LV *b, LV *mask) {
  auto &B = vm.B;
  LV *one = ci(b, 1);
  LV *bs = mask ? B.CreateSelect(mask, b, one) : b;
  LV *any_zero = B.CreateOrReduce(B.CreateICmpEQ(bs, llvm::Constant::getNullValue(b->getType())));
  vm.fail_div_zero_unless(B.CreateNot(any_zero));
  return bs;
}

/// PyTorch's div_floor_floating, lane-wise (see interpreter_compute.cpp floor_div_f).
LV *floor_div_fp(VecMath &vm, LV *a, LV *b) {
  auto &B = vm.B;
  LV *zero = cf(a, 0);
  LV *mod = sleef_call(vm, "fmod", "", {a, b});
  LV *div = B.CreateFDiv(B.CreateFSub(a, mod), b);
  LV *adj = B.CreateAnd(B.CreateFCmpUNE(mod, zero),
                        B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(mod, zero)));
  div = B.CreateSelect(adj, B.CreateFSub(div, cf(a, 1)), div);
  LV *fl = intrinsic1(vm, llvm::Intrinsic::floor, div);
  fl = B.CreateSelect(B.CreateFCmpOGT(B.CreateFSub(div, fl), cf(a, 0.5)),
                      B.CreateFAdd(fl, cf(a, 1)), fl);
  LV *q = B.CreateFDiv(a, b);
  LV *signed_zero = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, q);
  LV *res = B.CreateSelect(B.CreateFCmpOEQ(div, zero), signed_zero, fl);
  return B.CreateSelect(B.CreateFCmpOEQ(b, zero), q, res);
}

/// Integer floor_div / remainder / fmod with the zero-divisor check; INT_MIN / -1 wraps.
LV *int_division(VecMath &vm, OpKind k, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = vm.B;
  LV *bs = checked_divisor(vm, b, mask);
  LV *zero = llvm::Constant::getNullValue(a->getType());
  if (is_unsigned_dt(dt))
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

LV *shift(VecMath &vm, OpKind k, LV *a, LV *b, DataType dt) {
  auto &B = vm.B;
  unsigned bits = a->getType()->getScalarSizeInBits();
  LV *zero = llvm::Constant::getNullValue(a->getType());
  // In range: 0 <= b < bits (unsigned compare covers negative b for signed types too).
  LV *in_range = B.CreateICmpULT(b, ci(b, bits));
  LV *bsafe = B.CreateSelect(in_range, b, zero);
  if (k == OpKind::ShiftLeft)
    return B.CreateSelect(in_range, B.CreateShl(a, bsafe), zero);
  if (is_unsigned_dt(dt))
    return B.CreateSelect(in_range, B.CreateLShr(a, bsafe), zero);
  return B.CreateSelect(in_range, B.CreateAShr(a, bsafe), B.CreateAShr(a, ci(a, bits - 1)));
}

LV *compare(VecMath &vm, OpKind k, LV *a, LV *b, bool fp, bool uns) {
  auto &B = vm.B;
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
  return to_bool(vm, fp ? B.CreateFCmp(p, a, b) : B.CreateICmp(p, a, b));
}

} // namespace

LV *sleef_call(VecMath &vm, const char *fn, const char *acc, const std::vector<LV *> &args) {
  auto &B = vm.B;
  auto *vt = llvm::cast<llvm::FixedVectorType>(args[0]->getType());
  bool dbl = vt->getElementType()->isDoubleTy();
  unsigned native = vm.avx512 ? (dbl ? 8u : 16u) : (dbl ? 4u : 8u);
  std::string name = std::string("Sleef_") + fn + (dbl ? "d" : "f") + std::to_string(native) + "_" +
                     acc + (vm.avx512 ? "avx512f" : "avx2");
  auto *nt = llvm::FixedVectorType::get(vt->getElementType(), native);
  std::vector<llvm::Type *> params(args.size(), nt);
  auto callee = vm.M.getOrInsertFunction(name, llvm::FunctionType::get(nt, params, false));
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

LV *lower_unary_ext(VecMath &vm, const ir::Op &op, LV *x, DataType in_dt) {
  auto &B = vm.B;
  namespace I = llvm::Intrinsic;
  const bool fp = is_float(in_dt), uns = is_unsigned_dt(in_dt);
  auto s10 = [&](const char *fn) { return sleef_call(vm, fn, "u10", {x}); };
  LV *zero = llvm::Constant::getNullValue(x->getType());
  const double attr = op.scalar ? op.scalar->f : 0.0;
  if (fp) {
    switch (op.kind) {
    case OpKind::Exp2:
      return s10("exp2");
    case OpKind::Expm1:
      return s10("expm1");
    case OpKind::Log2:
      return s10("log2");
    case OpKind::Log10:
      return s10("log10");
    case OpKind::Log1p:
      return s10("log1p");
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
      return s10("sinh");
    case OpKind::Cosh:
      return s10("cosh");
    case OpKind::Tanh:
      return s10("tanh");
    case OpKind::Asinh:
    case OpKind::Acosh: {
      // SLEEF's asinh/acosh overflow to inf above sqrt(FLT_MAX); there asinh |x| = acosh |x| =
      // log|x| + ln 2 (the next term, 1 / 4x^2, is far below one ULP).
      LV *ax = intrinsic1(vm, I::fabs, x);
      LV *big = B.CreateFCmpOGT(op.kind == OpKind::Asinh ? ax : x, cf(x, 1e10)); // acosh(<1) NaN
      LV *tail = B.CreateFAdd(sleef_call(vm, "log", "u10", {ax}), cf(x, 0.69314718055994530942));
      if (op.kind == OpKind::Asinh)
        tail = B.CreateBinaryIntrinsic(I::copysign, tail, x);
      return B.CreateSelect(big, tail, s10(op.kind == OpKind::Asinh ? "asinh" : "acosh"));
    }
    case OpKind::Atanh:
      return s10("atanh");
    case OpKind::Erf:
      return s10("erf");
    case OpKind::Erfc:
      return sleef_call(vm, "erfc", "u15", {x});
    case OpKind::Cbrt:
      return s10("cbrt");
    case OpKind::Sigmoid: {
      LV *e = sleef_call(vm, "exp", "u10", {B.CreateFNeg(x)});
      return B.CreateFDiv(cf(x, 1), B.CreateFAdd(cf(x, 1), e));
    }
    case OpKind::Softplus: {
      LV *sp = sleef_call(vm, "log1p", "u10", {s10("exp")});
      return B.CreateSelect(B.CreateFCmpOGT(x, cf(x, 20)), x, sp);
    }
    case OpKind::Softsign:
      return B.CreateFDiv(x, B.CreateFAdd(cf(x, 1), intrinsic1(vm, I::fabs, x)));
    case OpKind::Elu:
      return B.CreateSelect(B.CreateFCmpOGT(x, zero), x, B.CreateFMul(cf(x, attr), s10("expm1")));
    case OpKind::Gelu: {
      LV *t = sleef_call(vm, "erfc", "u15", {B.CreateFMul(x, cf(x, -0.70710678118654752440))});
      return B.CreateFMul(B.CreateFMul(cf(x, 0.5), x), t);
    }
    case OpKind::GeluTanh: {
      LV *cube = B.CreateFMul(B.CreateFMul(B.CreateFMul(cf(x, 0.044715), x), x), x);
      LV *u = B.CreateFMul(cf(x, 0.79788456080286535588), B.CreateFAdd(x, cube));
      LV *e = sleef_call(vm, "exp", "u10", {B.CreateFMul(cf(x, -2), u)});
      return B.CreateFDiv(x, B.CreateFAdd(cf(x, 1), e));
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
      return to_bool(vm, B.CreateICmpSLT(bits, llvm::Constant::getNullValue(bits->getType())));
    }
    case OpKind::Ceil:
      return intrinsic1(vm, I::ceil, x);
    case OpKind::Floor:
      return intrinsic1(vm, I::floor, x);
    case OpKind::Trunc:
      return intrinsic1(vm, I::trunc, x);
    case OpKind::Round:
      return intrinsic1(vm, I::roundeven, x);
    case OpKind::IsFinite:
      return to_bool(vm, B.CreateFCmpOLT(intrinsic1(vm, I::fabs, x), cf(x, INFINITY)));
    case OpKind::IsNan:
      return to_bool(vm, B.CreateFCmpUNO(x, x));
    case OpKind::IsInf:
      return to_bool(vm, B.CreateFCmpOEQ(intrinsic1(vm, I::fabs, x), cf(x, INFINITY)));
    case OpKind::LogicalNot:
      return to_bool(vm, B.CreateFCmpOEQ(x, zero));
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
      return uns ? i8_0 : to_bool(vm, B.CreateICmpSLT(x, zero));
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
      return to_bool(vm, B.CreateICmpEQ(x, zero));
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

LV *lower_binary_ext(VecMath &vm, const ir::Op &op, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = vm.B;
  const bool fp = is_float(dt), uns = is_unsigned_dt(dt);
  const OpKind k = op.kind;
  switch (k) {
  case OpKind::Eq:
  case OpKind::Ne:
  case OpKind::Lt:
  case OpKind::Le:
  case OpKind::Gt:
  case OpKind::Ge:
    return compare(vm, k, a, b, fp, uns);
  case OpKind::LogicalAnd:
  case OpKind::LogicalOr:
  case OpKind::LogicalXor: {
    LV *za = llvm::Constant::getNullValue(a->getType());
    LV *ta = fp ? B.CreateFCmpUNE(a, za) : B.CreateICmpNE(a, za);
    LV *tb = fp ? B.CreateFCmpUNE(b, za) : B.CreateICmpNE(b, za);
    LV *r = k == OpKind::LogicalAnd  ? B.CreateAnd(ta, tb)
            : k == OpKind::LogicalOr ? B.CreateOr(ta, tb)
                                     : B.CreateXor(ta, tb);
    return to_bool(vm, r);
  }
  default:
    break;
  }
  if (fp) {
    switch (k) {
    case OpKind::Pow:
      return sleef_call(vm, "pow", "u10", {a, b});
    case OpKind::Hypot:
      return sleef_call(vm, "hypot", "u05", {a, b});
    case OpKind::Atan2:
      return sleef_call(vm, "atan2", "u10", {a, b});
    case OpKind::Copysign:
      return B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a, b);
    case OpKind::Fmod:
      return sleef_call(vm, "fmod", "", {a, b});
    case OpKind::Remainder: {
      LV *zero = cf(a, 0);
      LV *mod = sleef_call(vm, "fmod", "", {a, b});
      LV *adj = B.CreateAnd(B.CreateFCmpUNE(mod, zero),
                            B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(mod, zero)));
      return B.CreateSelect(adj, B.CreateFAdd(mod, b), mod);
    }
    case OpKind::FloorDiv:
      return floor_div_fp(vm, a, b);
    default:
      break;
    }
  } else {
    switch (k) {
    case OpKind::FloorDiv:
    case OpKind::Remainder:
    case OpKind::Fmod:
      return int_division(vm, k, a, b, dt, mask);
    case OpKind::BitwiseAnd:
      return B.CreateAnd(a, b);
    case OpKind::BitwiseOr:
      return B.CreateOr(a, b);
    case OpKind::BitwiseXor:
      return B.CreateXor(a, b);
    case OpKind::ShiftLeft:
    case OpKind::ShiftRight:
      return shift(vm, k, a, b, dt);
    default:
      break;
    }
  }
  throw InternalError(op.where, ir::op_info(k).name,
                      "no vector lowering for dtype " + name(dt) + " (a ptojit bug)");
}

} // namespace pto::codegen
