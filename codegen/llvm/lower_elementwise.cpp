// lower_elementwise.cpp - See lower_elementwise.h: one exhaustive switch per family and dtype
// class (floating / integer) over the op kinds of op_kinds.def, built from the blocks of
// elementwise_blocks.h. Each op mirrors the scalar semantics of interp/scalar_ops.h
// operation for operation, so both executors round alike.
#include "llvm/lower_elementwise.h"

#include "pto/error.h"

#include "llvm/dtype_codec.h"
#include "llvm/elementwise_blocks.h"
#include "llvm/vector_math.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <string>

namespace pto::codegen {

using LV = llvm::Value;
using namespace vec;

LV *sleef_call(KernelBuilder &kb, const char *fn, const char *acc, const std::vector<LV *> &args) {
  auto &B = kb.builder();
  auto *vt = llvm::cast<llvm::FixedVectorType>(args[0]->getType());
  bool dbl = vt->getElementType()->isDoubleTy();
  unsigned native = sleef_lanes(kb.isa(), dbl);
  std::string name = sleef_name(fn, acc, dbl, kb.isa()); // the names the JIT binds (vector_math.h)
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

namespace {

using U = ir::UnaryKind;
using Bk = ir::BinaryKind;

/// The op's own SLEEF function (op_kinds.def `vec_fn`), for the kinds lowered by that call alone.
LV *own_vec_fn(KernelBuilder &kb, const ir::Op &op, const std::vector<LV *> &args) {
  const ir::OpInfo &info = ir::op_info(op.kind);
  if (!info.vec_fn)
    throw InternalError(op.where, info.name, "op_kinds.def names no vector function for it");
  return sleef_call(kb, info.vec_fn, info.vec_acc, args);
}

/// A floating unary op on `x` (compute type float or double). Bool results are i8 0/1 vectors.
LV *unary_fp(KernelBuilder &kb, const ir::Op &op, U k, LV *x) {
  auto &B = kb.builder();
  namespace I = llvm::Intrinsic;
  auto s10 = [&](const char *fn) { return sleef_call(kb, fn, "u10", {x}); };
  LV *zero = llvm::Constant::getNullValue(x->getType());
  const double attr = op.scalar ? op.scalar->f : 0.0;
  switch (k) {
  case U::Log:
  case U::Exp2:
  case U::Expm1:
  case U::Log2:
  case U::Log10:
  case U::Sin:
  case U::Cos:
  case U::Tan:
  case U::Asin:
  case U::Acos:
  case U::Atan:
  case U::Tanh:
  case U::Atanh:
  case U::Erf:
  case U::Erfc:
  case U::Cbrt:
    return own_vec_fn(kb, op, {x});
  case U::Neg:
    return B.CreateFNeg(x);
  case U::Abs:
    return intrinsic1(kb, I::fabs, x);
  case U::Sqrt:
    return intrinsic1(kb, I::sqrt, x);
  case U::Rsqrt:
    return B.CreateFDiv(cf(x, 1.0), intrinsic1(kb, I::sqrt, x));
  case U::Reciprocal:
    return B.CreateFDiv(cf(x, 1.0), x);
  case U::Exp:
    return exp_full_range(kb, x);
  case U::Log1p: {
    // Sleef_log1p is inf above 1e38 (fp32) / 1e307 (fp64); above 1e18, log1p(x) = log(x) to
    // far below one ULP (they differ by ~1/x).
    LV *big = B.CreateFCmpOGT(x, cf(x, 1e18));
    return patch_rare_lanes(kb, big, s10("log1p"), [&] { return s10("log"); }, "log1p");
  }
  case U::Sinh:
  case U::Cosh: {
    // SLEEF's sinh/cosh overflow where e^|x| does (|x| = 88.72 fp32, 709.78 fp64), though the
    // results are finite up to 89.4 / 710.5; past |x| = 88 / 709 they are +-e^|x| / 2.
    const bool sinh = k == U::Sinh;
    LV *big = B.CreateFCmpOGT(intrinsic1(kb, I::fabs, x), cf(x, is_double(x) ? 709 : 88));
    return patch_rare_lanes(
        kb, big, s10(sinh ? "sinh" : "cosh"),
        [&] {
          LV *h = half_exp_abs(kb, x);
          return sinh ? B.CreateBinaryIntrinsic(I::copysign, h, x) : h;
        },
        sinh ? "sinh" : "cosh");
  }
  case U::Asinh:
  case U::Acosh: {
    // SLEEF's asinh/acosh overflow to inf above sqrt(FLT_MAX); there asinh |x| = acosh |x| =
    // log|x| + ln 2 (the next term, 1 / 4x^2, is far below one ULP).
    LV *ax = intrinsic1(kb, I::fabs, x);
    LV *big = B.CreateFCmpOGT(k == U::Asinh ? ax : x, cf(x, 1e10)); // acosh(<1) NaN
    LV *tail = B.CreateFAdd(sleef_call(kb, "log", "u10", {ax}), cf(x, kLn2));
    if (k == U::Asinh)
      tail = B.CreateBinaryIntrinsic(I::copysign, tail, x);
    return B.CreateSelect(big, tail, s10(k == U::Asinh ? "asinh" : "acosh"));
  }
  case U::Sigmoid:
    return sigmoid(kb, x);
  case U::Softplus: {
    LV *sp = sleef_call(kb, "log1p", "u10", {s10("exp")});
    return B.CreateSelect(B.CreateFCmpOGT(x, cf(x, 20)), x, sp);
  }
  case U::Softsign:
    return B.CreateFDiv(x, B.CreateFAdd(cf(x, 1), intrinsic1(kb, I::fabs, x)));
  case U::Elu:
    return B.CreateSelect(B.CreateFCmpOGT(x, zero), x, B.CreateFMul(cf(x, attr), s10("expm1")));
  case U::Gelu:
    return gelu(kb, x);
  case U::GeluTanh: {
    LV *cube = B.CreateFMul(B.CreateFMul(B.CreateFMul(cf(x, 0.044715), x), x), x);
    LV *u = B.CreateFMul(cf(x, 0.79788456080286535588), B.CreateFAdd(x, cube));
    return B.CreateFMul(x, sigmoid(kb, B.CreateFMul(cf(x, 2), u)));
  }
  case U::Lrelu:
    return B.CreateSelect(B.CreateFCmpOGE(x, zero), x, B.CreateFMul(x, cf(x, attr)));
  case U::Relu:
    return B.CreateBinaryIntrinsic(I::maximum, x, zero);
  case U::Relu6:
    return B.CreateBinaryIntrinsic(I::minimum, B.CreateBinaryIntrinsic(I::maximum, x, zero),
                                   cf(x, 6));
  case U::Sign:
    return B.CreateSelect(B.CreateFCmpOGT(x, zero), cf(x, 1),
                          B.CreateSelect(B.CreateFCmpOLT(x, zero), cf(x, -1), x));
  case U::Signbit: {
    LV *bits = B.CreateBitCast(x, like(x, B.getIntNTy(x->getType()->getScalarSizeInBits())));
    return to_bool(kb, B.CreateICmpSLT(bits, llvm::Constant::getNullValue(bits->getType())));
  }
  case U::Ceil:
    return intrinsic1(kb, I::ceil, x);
  case U::Floor:
    return intrinsic1(kb, I::floor, x);
  case U::Trunc:
    return intrinsic1(kb, I::trunc, x);
  case U::Round:
    return intrinsic1(kb, I::roundeven, x);
  case U::IsFinite:
    return to_bool(kb, B.CreateFCmpOLT(intrinsic1(kb, I::fabs, x), cf(x, INFINITY)));
  case U::IsNan:
    return to_bool(kb, B.CreateFCmpUNO(x, x));
  case U::IsInf:
    return to_bool(kb, B.CreateFCmpOEQ(intrinsic1(kb, I::fabs, x), cf(x, INFINITY)));
  case U::LogicalNot:
    return to_bool(kb, B.CreateFCmpOEQ(x, zero));
  case U::Square:
    return B.CreateFMul(x, x);
  case U::Clone:
    return x;
  case U::Cast:       // lower_unary
  case U::BitwiseNot: // ints and bool only
    break;
  }
  throw InternalError(op.where, ir::op_info(k).name, "no floating vector lowering (a ptojit bug)");
}

/// An integer (or DT_BOOL) unary op on `x` of dtype `dt`.
LV *unary_int(KernelBuilder &kb, const ir::Op &op, U k, LV *x, DataType dt) {
  auto &B = kb.builder();
  namespace I = llvm::Intrinsic;
  const bool uns = is_unsigned(dt);
  LV *zero = llvm::Constant::getNullValue(x->getType());
  LV *i8_0 = llvm::Constant::getNullValue(like(x, B.getInt8Ty()));
  switch (k) {
  case U::Neg:
    return B.CreateNeg(x);
  case U::Abs:
    return B.CreateBinaryIntrinsic(I::abs, x, B.getFalse());
  case U::Relu:
    return uns ? x : B.CreateBinaryIntrinsic(I::smax, x, zero);
  case U::Relu6:
    return uns ? B.CreateBinaryIntrinsic(I::umin, x, ci(x, 6))
               : B.CreateBinaryIntrinsic(I::smin, B.CreateBinaryIntrinsic(I::smax, x, zero),
                                         ci(x, 6));
  case U::Sign:
    if (uns)
      return B.CreateZExt(B.CreateICmpNE(x, zero), x->getType());
    return B.CreateSelect(B.CreateICmpSGT(x, zero), ci(x, 1),
                          B.CreateSelect(B.CreateICmpSLT(x, zero), ci(x, -1), zero));
  case U::Signbit:
    return uns ? i8_0 : to_bool(kb, B.CreateICmpSLT(x, zero));
  case U::Ceil:
  case U::Floor:
  case U::Trunc:
  case U::Round:
  case U::Clone:
    return x;
  case U::IsFinite:
    return llvm::ConstantInt::get(i8_0->getType(), 1);
  case U::IsNan:
  case U::IsInf:
    return i8_0;
  case U::LogicalNot:
    return to_bool(kb, B.CreateICmpEQ(x, zero));
  case U::BitwiseNot:
    return dt == DT_BOOL ? B.CreateXor(x, ci(x, 1)) : B.CreateNot(x);
  case U::Square:
    return B.CreateMul(x, x);
  // Floating only (op_kinds.def accepts Float), and Cast (lower_unary).
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
    break;
  }
  throw InternalError(op.where, ir::op_info(k).name,
                      "no vector lowering for dtype " + name(dt) + " (a ptojit bug)");
}

/// A floating binary op on `a`, `b` (compute type float or double); compares give i8 0/1.
LV *binary_fp(KernelBuilder &kb, const ir::Op &op, Bk k, LV *a, LV *b) {
  auto &B = kb.builder();
  using P = llvm::CmpInst::Predicate;
  auto cmp = [&](P p) { return to_bool(kb, B.CreateFCmp(p, a, b)); };
  LV *zero = cf(a, 0);
  auto logic = [&](llvm::Instruction::BinaryOps bop) { // operands are true when != 0 (NaN too)
    LV *ta = B.CreateFCmpUNE(a, zero);
    LV *tb = B.CreateFCmpUNE(b, zero);
    return to_bool(kb, B.CreateBinOp(bop, ta, tb));
  };
  switch (k) {
  case Bk::Hypot:
  case Bk::Atan2:
    return own_vec_fn(kb, op, {a, b});
  case Bk::Add:
    return B.CreateFAdd(a, b);
  case Bk::Sub:
    return B.CreateFSub(a, b);
  case Bk::Mul:
    return B.CreateFMul(a, b);
  case Bk::Div:
    return B.CreateFDiv(a, b);
  case Bk::Maximum:
  case Bk::Minimum:
    return fp_max_min(kb, a, b, k == Bk::Maximum);
  case Bk::Pow:
    return fp_pow(kb, a, b);
  case Bk::Copysign:
    return B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a, b);
  case Bk::Heaviside: { // a itself for NaN, as the interpreter
    LV *neg = B.CreateFCmpOLT(a, zero), *pos = B.CreateFCmpOGT(a, zero);
    LV *at_zero = B.CreateSelect(B.CreateFCmpOEQ(a, zero), b, a);
    return B.CreateSelect(neg, zero, B.CreateSelect(pos, cf(a, 1), at_zero));
  }
  case Bk::Fmod:
    return exact_fmod(kb, a, b);
  case Bk::Remainder: {
    LV *mod = exact_fmod(kb, a, b);
    LV *adj = B.CreateAnd(B.CreateFCmpUNE(mod, zero),
                          B.CreateXor(B.CreateFCmpOLT(b, zero), B.CreateFCmpOLT(mod, zero)));
    return B.CreateSelect(adj, B.CreateFAdd(mod, b), mod);
  }
  case Bk::FloorDiv:
    return floor_div_fp(kb, a, b);
  case Bk::LogicalAnd:
    return logic(llvm::Instruction::And);
  case Bk::LogicalOr:
    return logic(llvm::Instruction::Or);
  case Bk::LogicalXor:
    return logic(llvm::Instruction::Xor);
  case Bk::Eq:
    return cmp(P::FCMP_OEQ);
  case Bk::Ne:
    return cmp(P::FCMP_UNE);
  case Bk::Lt:
    return cmp(P::FCMP_OLT);
  case Bk::Le:
    return cmp(P::FCMP_OLE);
  case Bk::Gt:
    return cmp(P::FCMP_OGT);
  case Bk::Ge:
    return cmp(P::FCMP_OGE);
  case Bk::Gcd: // ints (and bool) only
  case Bk::BitwiseAnd:
  case Bk::BitwiseOr:
  case Bk::BitwiseXor:
  case Bk::ShiftLeft:
  case Bk::ShiftRight:
    break;
  }
  throw InternalError(op.where, ir::op_info(k).name, "no floating vector lowering (a ptojit bug)");
}

/// An integer (or DT_BOOL) binary op on operands of dtype `dt`; `mask` marks live lanes (null:
/// all) for the zero-divisor check.
LV *binary_int(KernelBuilder &kb, const ir::Op &op, Bk k, LV *a, LV *b, DataType dt, LV *mask) {
  auto &B = kb.builder();
  namespace I = llvm::Intrinsic;
  using P = llvm::CmpInst::Predicate;
  const bool uns = is_unsigned(dt);
  auto cmp = [&](P p) { return to_bool(kb, B.CreateICmp(p, a, b)); };
  LV *zero = llvm::Constant::getNullValue(a->getType());
  auto logic = [&](llvm::Instruction::BinaryOps bop) {
    LV *ta = B.CreateICmpNE(a, zero);
    LV *tb = B.CreateICmpNE(b, zero);
    return to_bool(kb, B.CreateBinOp(bop, ta, tb));
  };
  switch (k) {
  case Bk::Add:
    return B.CreateAdd(a, b);
  case Bk::Sub:
    return B.CreateSub(a, b);
  case Bk::Mul:
    return B.CreateMul(a, b);
  case Bk::Div:
    return int_div(kb, a, b, dt, mask);
  case Bk::Maximum:
    return B.CreateBinaryIntrinsic(uns ? I::umax : I::smax, a, b);
  case Bk::Minimum:
    return B.CreateBinaryIntrinsic(uns ? I::umin : I::smin, a, b);
  case Bk::FloorDiv:
    return int_division(kb, IntDivision::Floor, a, b, dt, mask);
  case Bk::Remainder:
    return int_division(kb, IntDivision::Remainder, a, b, dt, mask);
  case Bk::Fmod:
    return int_division(kb, IntDivision::Fmod, a, b, dt, mask);
  case Bk::Heaviside: {
    LV *step = B.CreateSelect(B.CreateICmpEQ(a, zero), b, ci(a, 1));
    return uns ? step : B.CreateSelect(B.CreateICmpSLT(a, zero), zero, step);
  }
  case Bk::BitwiseAnd:
    return B.CreateAnd(a, b);
  case Bk::BitwiseOr:
    return B.CreateOr(a, b);
  case Bk::BitwiseXor:
    return B.CreateXor(a, b);
  case Bk::ShiftLeft:
  case Bk::ShiftRight:
    return shift(kb, k == Bk::ShiftLeft, a, b, dt);
  case Bk::Pow:
    return int_pow(kb, a, b, dt, mask);
  case Bk::Gcd:
    return int_gcd(kb, a, b, dt, mask);
  case Bk::LogicalAnd:
    return logic(llvm::Instruction::And);
  case Bk::LogicalOr:
    return logic(llvm::Instruction::Or);
  case Bk::LogicalXor:
    return logic(llvm::Instruction::Xor);
  case Bk::Eq:
    return cmp(P::ICMP_EQ);
  case Bk::Ne:
    return cmp(P::ICMP_NE);
  case Bk::Lt:
    return cmp(uns ? P::ICMP_ULT : P::ICMP_SLT);
  case Bk::Le:
    return cmp(uns ? P::ICMP_ULE : P::ICMP_SLE);
  case Bk::Gt:
    return cmp(uns ? P::ICMP_UGT : P::ICMP_SGT);
  case Bk::Ge:
    return cmp(uns ? P::ICMP_UGE : P::ICMP_SGE);
  case Bk::Hypot: // floats only
  case Bk::Atan2:
  case Bk::Copysign:
    break;
  }
  throw InternalError(op.where, ir::op_info(k).name,
                      "no vector lowering for dtype " + name(dt) + " (a ptojit bug)");
}

} // namespace

LV *lower_unary(KernelBuilder &kb, const ir::Op &op, LV *x, DataType in_dt, DataType out_dt) {
  const U k = ir::kind_as<U>(op.kind);
  if (k == U::Cast)
    return convert(kb.builder(), x, in_dt, out_dt);
  return is_float(in_dt) ? unary_fp(kb, op, k, x) : unary_int(kb, op, k, x, in_dt);
}

LV *lower_binary(KernelBuilder &kb, const ir::Op &op, LV *a, LV *b, DataType dt, LV *mask) {
  const Bk k = ir::kind_as<Bk>(op.kind);
  return is_float(dt) ? binary_fp(kb, op, k, a, b) : binary_int(kb, op, k, a, b, dt, mask);
}

} // namespace pto::codegen
