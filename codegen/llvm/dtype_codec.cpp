// dtype_codec.cpp - See dtype_codec.h.
#include "llvm/dtype_codec.h"

#include <llvm/IR/Intrinsics.h>

namespace pto::codegen {

using LV = llvm::Value;

namespace {
/// `elem` in the shape of `v` (scalar, or as many lanes).
llvm::Type *like(LV *v, llvm::Type *elem) { return v->getType()->getWithNewType(elem); }
} // namespace

bool is_unsigned(DataType dt) { return dt == DT_UINT8 || dt == DT_BOOL; }

llvm::Type *storage_type(llvm::IRBuilderBase &B, DataType dt) {
  switch (dt) {
  case DT_FP16:
  case DT_BF16:
  case DT_INT16:
    return B.getInt16Ty();
  case DT_FP32:
    return B.getFloatTy();
  case DT_DOUBLE:
    return B.getDoubleTy();
  case DT_INT32:
    return B.getInt32Ty();
  case DT_INT64:
    return B.getInt64Ty();
  case DT_INT8:
  case DT_UINT8:
  case DT_BOOL:
  PTO_CASE_UNSUPPORTED_DTYPES: // never reach the lowering
    break;
  }
  return B.getInt8Ty();
}

llvm::Type *compute_type(llvm::IRBuilderBase &B, DataType dt) {
  switch (dt) {
  case DT_FP16:
  case DT_BF16:
  case DT_FP32:
    return B.getFloatTy();
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_BOOL:
  case DT_DOUBLE:
  PTO_CASE_UNSUPPORTED_DTYPES:
    break;
  }
  return storage_type(B, dt);
}

LV *widen(llvm::IRBuilderBase &B, LV *raw, DataType dt) {
  if (dt == DT_FP16)
    return B.CreateFPExt(B.CreateBitCast(raw, like(raw, B.getHalfTy())), like(raw, B.getFloatTy()));
  if (dt == DT_BF16)
    return B.CreateBitCast(B.CreateShl(B.CreateZExt(raw, like(raw, B.getInt32Ty())), 16),
                           like(raw, B.getFloatTy()));
  return raw;
}

LV *narrow(llvm::IRBuilderBase &B, LV *v, DataType dt) {
  if (dt == DT_FP16)
    return B.CreateBitCast(B.CreateFPTrunc(v, like(v, B.getHalfTy())), like(v, B.getInt16Ty()));
  if (dt == DT_BF16) {
    llvm::Type *i32 = like(v, B.getInt32Ty());
    LV *u = B.CreateBitCast(v, i32);
    LV *lsb = B.CreateAnd(B.CreateLShr(u, 16), llvm::ConstantInt::get(i32, 1));
    LV *r = B.CreateLShr(B.CreateAdd(B.CreateAdd(u, llvm::ConstantInt::get(i32, 0x7fff)), lsb), 16);
    LV *nanr = B.CreateOr(B.CreateLShr(u, 16), llvm::ConstantInt::get(i32, 0x40));
    LV *isnan = B.CreateFCmpUNO(v, v);
    return B.CreateTrunc(B.CreateSelect(isnan, nanr, r), like(v, B.getInt16Ty()));
  }
  return v;
}

LV *round_to(llvm::IRBuilderBase &B, LV *v, DataType dt) {
  if (dt != DT_FP16 && dt != DT_BF16)
    return v;
  return widen(B, narrow(B, v, dt), dt);
}

LV *round_to_odd_f32(llvm::IRBuilderBase &B, LV *d) {
  llvm::Type *fv = like(d, B.getFloatTy());
  llvm::Type *iv = like(d, B.getInt32Ty());
  LV *f = B.CreateFPTrunc(d, fv);
  LV *back = B.CreateFPExt(f, d->getType());
  LV *inexact = B.CreateFCmpONE(back, d);
  LV *over = B.CreateFCmpOGT(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                             B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  LV *bits = B.CreateBitCast(f, iv);
  LV *toward0 = B.CreateSelect(over, B.CreateSub(bits, llvm::ConstantInt::get(iv, 1)), bits);
  LV *odd = B.CreateOr(toward0, llvm::ConstantInt::get(iv, 1));
  return B.CreateBitCast(B.CreateSelect(inexact, odd, bits), fv);
}

LV *int_to_f32_round_to_odd(llvm::IRBuilderBase &B, LV *x, bool is_signed) {
  llvm::Type *iv = like(x, B.getInt64Ty());
  llvm::Type *i32v = like(x, B.getInt32Ty());
  llvm::Type *fv = like(x, B.getFloatTy());
  auto c64 = [&](int64_t c) { return llvm::ConstantInt::get(iv, static_cast<uint64_t>(c)); };
  LV *v = B.CreateIntCast(x, iv, is_signed);
  LV *neg = is_signed ? B.CreateICmpSLT(v, c64(0)) : nullptr;
  LV *m = neg ? B.CreateSelect(neg, B.CreateNeg(v), v) : v; // |INT64_MIN| = 2^63, unsigned
  LV *lz = B.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, m, B.getFalse());
  LV *drop = B.CreateSub(c64(40), lz); // 64 - lz - 24 bits below the top 24
  drop = B.CreateSelect(B.CreateICmpSGT(drop, c64(0)), drop, c64(0));
  LV *kept = B.CreateLShr(m, drop);
  LV *lost = B.CreateAnd(m, B.CreateSub(B.CreateShl(c64(1), drop), c64(1)));
  kept = B.CreateOr(kept, B.CreateZExt(B.CreateICmpNE(lost, c64(0)), iv));
  LV *f = B.CreateSIToFP(B.CreateTrunc(kept, i32v), fv); // exact: kept < 2^24
  LV *scale = B.CreateBitCast(B.CreateShl(B.CreateTrunc(B.CreateAdd(drop, c64(127)), i32v), 23),
                              fv); // 2^drop, exact
  f = B.CreateFMul(f, scale);
  return neg ? B.CreateSelect(neg, B.CreateFNeg(f), f) : f;
}

LV *from_double(llvm::IRBuilderBase &B, LV *d, DataType dt) {
  if (dt == DT_DOUBLE)
    return d;
  if (dt == DT_FP32)
    return B.CreateFPTrunc(d, like(d, B.getFloatTy()));
  return narrow(B, round_to_odd_f32(B, d), dt);
}

LV *to_i64(llvm::IRBuilderBase &B, LV *raw, DataType dt) {
  return B.CreateIntCast(raw, like(raw, B.getInt64Ty()), !is_unsigned(dt));
}

LV *convert(llvm::IRBuilderBase &B, LV *x, DataType from, DataType to) {
  llvm::Type *dst = like(x, compute_type(B, to));
  if (to == DT_BOOL) {
    LV *nz = is_float(from) ? B.CreateFCmpUNE(x, llvm::Constant::getNullValue(x->getType()))
                            : B.CreateICmpNE(x, llvm::Constant::getNullValue(x->getType()));
    return B.CreateZExt(nz, dst);
  }
  if (from == DT_DOUBLE && (to == DT_FP16 || to == DT_BF16))
    return round_to_odd_f32(B, x); // one rounding overall: the caller rounds to fp16/bf16 next
  if (is_float(from) && is_float(to)) {
    if (x->getType() == dst)
      return x;
    return x->getType()->getScalarSizeInBits() < dst->getScalarSizeInBits()
               ? B.CreateFPExt(x, dst)
               : B.CreateFPTrunc(x, dst);
  }
  if (is_float(from)) // truncate toward zero, NaN -> 0, saturating
    return B.CreateIntrinsic(is_unsigned(to) ? llvm::Intrinsic::fptoui_sat
                                             : llvm::Intrinsic::fptosi_sat,
                             {dst, x->getType()}, {x});
  if ((to == DT_FP16 || to == DT_BF16) && x->getType()->getScalarSizeInBits() > 24)
    return int_to_f32_round_to_odd(B, x, !is_unsigned(from)); // the caller rounds it next
  if (is_float(to))
    return is_unsigned(from) ? B.CreateUIToFP(x, dst) : B.CreateSIToFP(x, dst);
  return B.CreateIntCast(x, dst, !is_unsigned(from));
}

} // namespace pto::codegen
