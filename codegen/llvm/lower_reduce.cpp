// lower_reduce.cpp - See lower_reduce.h.
#include "llvm/lower_reduce.h"

#include "llvm/dtype_codec.h"

#include <llvm/IR/Intrinsics.h>

#include <functional>

namespace pto::codegen {

using ir::OpKind;
using LV = llvm::Value;

LV *reduce_identity(KernelBuilder &kb, OpKind k, DataType dt) {
  auto &B = kb.builder();
  llvm::Type *t = kb.vec_type(compute_type(B, dt));
  if (is_float(dt)) {
    if (k == OpKind::Sum)
      return llvm::ConstantFP::getNegativeZero(t);
    if (k == OpKind::Prod)
      return llvm::ConstantFP::get(t, 1.0);
    return llvm::ConstantFP::getInfinity(t, k == OpKind::Amax);
  }
  unsigned bits = compute_type(B, dt)->getIntegerBitWidth();
  if (k == OpKind::Sum)
    return llvm::Constant::getNullValue(t);
  if (k == OpKind::Prod)
    return llvm::ConstantInt::get(t, 1);
  const bool uns = is_unsigned(dt);
  llvm::APInt v =
      k == OpKind::Amax
          ? (uns ? llvm::APInt::getMinValue(bits) : llvm::APInt::getSignedMinValue(bits))
          : (uns ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getSignedMaxValue(bits));
  return llvm::ConstantInt::get(t, v);
}

LV *empty_sum_is_plus_zero(KernelBuilder &kb, OpKind k, DataType dt, LV *end, LV *begin, LV *v) {
  if (k != OpKind::Sum || !is_float(dt))
    return v;
  auto &B = kb.builder();
  return B.CreateSelect(B.CreateICmpSGT(end, begin), v, llvm::ConstantFP::get(v->getType(), 0.0));
}

LV *reduce_step(KernelBuilder &kb, OpKind k, LV *acc, LV *v, DataType dt) {
  auto &B = kb.builder();
  bool fp = is_float(dt);
  if (k == OpKind::Sum)
    return fp ? B.CreateFAdd(acc, v) : B.CreateAdd(acc, v);
  if (k == OpKind::Prod)
    return fp ? B.CreateFMul(acc, v) : B.CreateMul(acc, v);
  if (fp)
    return B.CreateBinaryIntrinsic(
        k == OpKind::Amax ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, acc, v);
  auto id = k == OpKind::Amax ? (is_unsigned(dt) ? llvm::Intrinsic::umax : llvm::Intrinsic::smax)
                              : (is_unsigned(dt) ? llvm::Intrinsic::umin : llvm::Intrinsic::smin);
  return B.CreateBinaryIntrinsic(id, acc, v);
}

LV *reduce_horizontal(KernelBuilder &kb, OpKind k, LV *acc, DataType dt) {
  auto &B = kb.builder();
  // A float sum or product in any order (the interpreter's order differs anyway).
  auto reassociated = [&](const std::function<LV *()> &reduce) {
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    B.setFastMathFlags(fmf);
    LV *r = reduce();
    B.clearFastMathFlags();
    return r;
  };
  if (is_float(dt)) {
    llvm::Type *ct = compute_type(B, dt);
    if (k == OpKind::Sum)
      return reassociated(
          [&] { return B.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(ct), acc); });
    if (k == OpKind::Prod)
      return reassociated([&] { return B.CreateFMulReduce(llvm::ConstantFP::get(ct, 1.0), acc); });
    return k == OpKind::Amax ? B.CreateFPMaximumReduce(acc) : B.CreateFPMinimumReduce(acc);
  }
  if (k == OpKind::Sum)
    return B.CreateAddReduce(acc);
  if (k == OpKind::Prod)
    return B.CreateMulReduce(acc);
  if (k == OpKind::Amax)
    return B.CreateIntMaxReduce(acc, !is_unsigned(dt));
  return B.CreateIntMinReduce(acc, !is_unsigned(dt));
}

namespace {

class AxisReduction {
public:
  AxisReduction(KernelBuilder &kb, const ir::Op &op)
      : kb_(kb), B(kb.builder()), op_(op), x_(kb.value(op.inputs[0])), y_(kb.value(op.outputs[0])),
        axis_(static_cast<size_t>(op.axis)) {}

  void run() {
    ax_ = kb_.addr(x_.id);
    ay_ = kb_.addr(y_.id);
    for (auto &s : x_.valid)
      xvalid_.push_back(kb_.sym(s));
    acc_slot_ = kb_.entry_alloca(compute_type(B, x_.dtype), "racc");
    idx_.resize(x_.shape.size());
    outer(0);
  }

private:
  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Op &op_;
  const ir::Value &x_, &y_;
  const size_t axis_;
  Addr ax_, ay_;
  std::vector<LV *> xvalid_, idx_;
  LV *acc_slot_ = nullptr;

  /// Scalar loops over the kept dims (LLVM may vectorize the inner one).
  void outer(size_t d) {
    if (d == idx_.size()) {
      reduce_one();
      return;
    }
    if (d == axis_) {
      idx_[d] = kb_.i64(0);
      outer(d + 1);
      return;
    }
    kb_.for_loop(
        kb_.i64(0), xvalid_[d], kb_.i64(1),
        [&](LV *i) {
          idx_[d] = i;
          outer(d + 1);
        },
        "r");
  }

  /// The loop over the axis at the kept index idx_, and the store of its result.
  void reduce_one() {
    const OpKind k = op_.kind;
    const DataType dt = x_.dtype;
    llvm::Type *ct = compute_type(B, dt);
    LV *ident = B.CreateExtractElement(reduce_identity(kb_, k, dt), uint64_t{0});
    B.CreateStore(empty_sum_is_plus_zero(kb_, k, dt, xvalid_[axis_], kb_.i64(0), ident), acc_slot_);
    kb_.for_loop(
        kb_.i64(0), xvalid_[axis_], kb_.i64(1),
        [&](LV *kk) {
          std::vector<LV *> at = idx_;
          at[axis_] = kk;
          LV *raw = B.CreateLoad(storage_type(B, dt), kb_.elem_ptr(ax_, dt, at));
          LV *v = B.CreateExtractElement(widen(B, kb_.splat(raw), dt), uint64_t{0});
          LV *a = B.CreateLoad(ct, acc_slot_);
          LV *sa = kb_.splat(a), *sv = kb_.splat(v);
          B.CreateStore(B.CreateExtractElement(reduce_step(kb_, k, sa, sv, dt), uint64_t{0}),
                        acc_slot_);
        },
        "k");
    LV *res = round_to(B, kb_.splat(B.CreateLoad(ct, acc_slot_)), y_.dtype);
    LV *lin = kb_.i64(0);
    size_t yd = 0; // y's dim of x's dim e (the axis is dropped, or kept as 0 with keepdim)
    for (size_t e = 0; e < idx_.size(); ++e) {
      if (e == axis_) {
        if (op_.keepdim)
          ++yd;
        continue;
      }
      lin = B.CreateAdd(lin, B.CreateMul(idx_[e], ay_.strides[yd++]));
    }
    B.CreateStore(B.CreateExtractElement(narrow(B, res, y_.dtype), uint64_t{0}),
                  B.CreateGEP(storage_type(B, y_.dtype), ay_.base, lin));
  }
};

} // namespace

void lower_reduce_axis(KernelBuilder &kb, const ir::Op &op) { AxisReduction(kb, op).run(); }

} // namespace pto::codegen
