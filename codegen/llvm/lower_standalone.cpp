// lower_standalone.cpp - See lower_standalone.h. Mirrors interpreter_standalone.cpp loop for
// loop: movement ops copy storage elements (a source outside its input's valid region reads as
// 0, behind a branch so nothing outside it is ever loaded), reductions and scans compute in fp32
// for fp16/bf16 (double for fp64, i64 for ints) and round once per stored element.
#include "llvm/llvm_loops.h"
#include "llvm/lower_standalone.h"

#include "pto/error.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>

namespace pto::codegen {

using ir::Op;
using ir::OpKind;
using LV = llvm::Value;

namespace {

bool is_unsigned_dt(DataType dt) { return dt == DT_UINT8 || dt == DT_BOOL; }

class Emitter {
public:
  Emitter(StandaloneEnv &env, const ir::Program &p)
      : E(env), B(env.B), C(env.B.getContext()), p_(p) {}

  void run(const Op &op);

private:
  StandaloneEnv &E;
  llvm::IRBuilder<> &B;
  llvm::LLVMContext &C;
  const ir::Program &p_;

  using Index = std::vector<LV *>;

  LV *i64(int64_t v) { return B.getInt64(static_cast<uint64_t>(v)); }

  LV *alloca_of(llvm::Type *t, const char *name) {
    llvm::IRBuilder<> eb(E.entry_point);
    return eb.CreateAlloca(t, nullptr, name);
  }

  /// for (i = start; i < end; ++i) body(i)
  void for_loop(LV *start, LV *end, const std::function<void(LV *)> &body, const char *name) {
    emit_for_loop(B, E.F, start, end, i64(1), body, name);
  }

  /// body(idx) for every idx of the box [0, ext), row-major.
  void for_box(const Index &ext, const std::function<void(const Index &)> &body) {
    Index idx(ext.size());
    std::function<void(size_t)> rec = [&](size_t d) {
      if (d == ext.size()) {
        body(idx);
        return;
      }
      for_loop(
          i64(0), ext[d],
          [&](LV *i) {
            idx[d] = i;
            rec(d + 1);
          },
          "sl");
    };
    rec(0);
  }

  /// if (cond) then() else otherwise()
  void branch(LV *cond, const std::function<void()> &then, const std::function<void()> &otherwise) {
    auto *t = llvm::BasicBlock::Create(C, "sl.then", E.F);
    auto *f = llvm::BasicBlock::Create(C, "sl.else", E.F);
    auto *j = llvm::BasicBlock::Create(C, "sl.join", E.F);
    B.CreateCondBr(cond, t, f);
    B.SetInsertPoint(t);
    then();
    B.CreateBr(j);
    B.SetInsertPoint(f);
    otherwise();
    B.CreateBr(j);
    B.SetInsertPoint(j);
  }

  // ---- elements ------------------------------------------------------------------------------
  llvm::Type *storage_elem(DataType dt) {
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
    default:
      return B.getInt8Ty();
    }
  }

  /// The scalar type values are computed in: float for fp16/bf16/fp32, double, i64 for ints.
  llvm::Type *compute_elem(DataType dt) {
    if (dt == DT_DOUBLE)
      return B.getDoubleTy();
    return is_float(dt) ? B.getFloatTy() : B.getInt64Ty();
  }

  std::vector<LV *> valid_of(ir::ValueId id) {
    const ir::Value &v = p_.value(id);
    std::vector<LV *> out;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      LV *s = E.sym(v.shape[d]), *val = E.sym(v.valid[d]);
      LV *c = B.CreateSelect(B.CreateICmpSLT(val, s), val, s);
      out.push_back(B.CreateSelect(B.CreateICmpSLT(c, i64(0)), i64(0), c));
    }
    return out;
  }

  LV *elem_ptr(const StandaloneAddr &a, DataType dt, const Index &idx) {
    LV *lin = i64(0);
    for (size_t d = 0; d < idx.size(); ++d)
      lin = B.CreateAdd(lin, B.CreateMul(idx[d], a.strides[d]));
    return B.CreateGEP(storage_elem(dt), a.base, lin);
  }

  LV *all_below(const Index &idx, const std::vector<LV *> &bound) {
    LV *ok = B.getTrue();
    for (size_t d = 0; d < idx.size(); ++d)
      ok = B.CreateAnd(ok, B.CreateICmpSLT(idx[d], bound[d]));
    return ok;
  }

  /// Storage bits -> compute scalar (float for fp16/bf16/fp32, double, or the int type).
  LV *widen(LV *raw, DataType dt) {
    if (dt == DT_FP16)
      return B.CreateFPExt(B.CreateBitCast(raw, B.getHalfTy()), B.getFloatTy());
    if (dt == DT_BF16)
      return B.CreateBitCast(B.CreateShl(B.CreateZExt(raw, B.getInt32Ty()), 16), B.getFloatTy());
    return raw;
  }
  /// float -> fp16/bf16 storage bits, nearest even; other dtypes pass through.
  LV *narrow(LV *v, DataType dt) {
    if (dt == DT_FP16)
      return B.CreateBitCast(B.CreateFPTrunc(v, B.getHalfTy()), B.getInt16Ty());
    if (dt == DT_BF16) {
      LV *u = B.CreateBitCast(v, B.getInt32Ty());
      LV *lsb = B.CreateAnd(B.CreateLShr(u, 16), B.getInt32(1));
      LV *r = B.CreateLShr(B.CreateAdd(B.CreateAdd(u, B.getInt32(0x7fff)), lsb), 16);
      LV *nanr = B.CreateOr(B.CreateLShr(u, 16), B.getInt32(0x40));
      return B.CreateTrunc(B.CreateSelect(B.CreateFCmpUNO(v, v), nanr, r), B.getInt16Ty());
    }
    return v;
  }
  /// A double rounded once to floating dtype `dt`, as storage bits (round to odd on the way to
  /// float, so fp16/bf16 see a single rounding, as the interpreter's store_f).
  LV *from_double(LV *d, DataType dt) {
    if (dt == DT_DOUBLE)
      return d;
    LV *f = B.CreateFPTrunc(d, B.getFloatTy());
    if (dt == DT_FP32)
      return f;
    LV *back = B.CreateFPExt(f, B.getDoubleTy());
    LV *inexact = B.CreateFCmpONE(back, d);
    LV *over = B.CreateFCmpOGT(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                               B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
    LV *bits = B.CreateBitCast(f, B.getInt32Ty());
    LV *toward0 = B.CreateSelect(over, B.CreateSub(bits, B.getInt32(1)), bits);
    LV *odd = B.CreateOr(toward0, B.getInt32(1));
    return narrow(B.CreateBitCast(B.CreateSelect(inexact, odd, bits), B.getFloatTy()), dt);
  }
  LV *to_i64(LV *raw, DataType dt) {
    return is_unsigned_dt(dt) ? B.CreateZExt(raw, B.getInt64Ty())
                              : B.CreateSExtOrBitCast(raw, B.getInt64Ty());
  }

  // ---- ops -----------------------------------------------------------------------------------
  void gather(const Op &op, const std::function<Index(const Index &)> &src_of);
  void arg_reduce(const Op &op);
  void scan(const Op &op);
  void arange(const Op &op);
  void random(const Op &op);
  void concat(const Op &op);
  void pad(const Op &op);
  void triangle(const Op &op);
};

void Emitter::run(const Op &op) {
  switch (op.kind) {
  case OpKind::Argmax:
  case OpKind::Argmin:
    arg_reduce(op);
    return;
  case OpKind::Cumsum:
  case OpKind::Cumprod:
    scan(op);
    return;
  case OpKind::Arange:
    arange(op);
    return;
  case OpKind::Uniform:
  case OpKind::Normal:
    random(op);
    return;
  case OpKind::Concat:
    concat(op);
    return;
  case OpKind::Pad:
    pad(op);
    return;
  case OpKind::Tril:
  case OpKind::Triu:
    triangle(op);
    return;
  case OpKind::Reshape: {
    const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
    auto full_strides = [&](const std::vector<SymbolicScalar> &shape) {
      std::vector<LV *> s(shape.size());
      LV *acc = i64(1);
      for (size_t d = shape.size(); d-- > 0;) {
        s[d] = acc;
        acc = B.CreateMul(acc, E.sym(shape[d]));
      }
      return s;
    };
    auto ys = full_strides(y.shape), xs = full_strides(x.shape);
    std::vector<LV *> xdim;
    for (auto &d : x.shape)
      xdim.push_back(E.sym(d));
    gather(op, [&, ys, xs, xdim](const Index &o) {
      LV *lin = i64(0);
      for (size_t d = 0; d < o.size(); ++d)
        lin = B.CreateAdd(lin, B.CreateMul(o[d], ys[d]));
      Index i;
      for (size_t d = 0; d < xs.size(); ++d)
        i.push_back(B.CreateSRem(B.CreateSDiv(lin, xs[d]), xdim[d]));
      return i;
    });
    return;
  }
  case OpKind::Expand:
  case OpKind::Tile: {
    const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
    size_t off = y.shape.size() - x.shape.size();
    std::vector<LV *> xdim;
    for (auto &d : x.shape)
      xdim.push_back(E.sym(d));
    bool expand = op.kind == OpKind::Expand;
    gather(op, [&, off, xdim, expand](const Index &o) {
      Index i;
      for (size_t d = 0; d < xdim.size(); ++d) {
        if (expand)
          i.push_back(B.CreateSelect(B.CreateICmpEQ(xdim[d], i64(1)), i64(0), o[d + off]));
        else
          i.push_back(B.CreateSRem(o[d + off], xdim[d]));
      }
      return i;
    });
    return;
  }
  case OpKind::Permute:
    gather(op, [&](const Index &o) {
      Index i(o.size());
      for (size_t d = 0; d < o.size(); ++d)
        i[static_cast<size_t>(op.perm[d])] = o[d];
      return i;
    });
    return;
  default:
    break;
  }
  throw InternalError(op.where, ir::op_info(op.kind).name,
                      "no standalone lowering for this op (a ptojit bug)");
}

/// y[o] = x[src_of(o)] over y's valid region; 0 where the source is outside x's valid region.
void Emitter::gather(const Op &op, const std::function<Index(const Index &)> &src_of) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  StandaloneAddr ax = E.addr(x.id), ay = E.addr(y.id);
  auto xv = valid_of(x.id), yv = valid_of(y.id);
  llvm::Type *st = storage_elem(y.dtype);
  for_box(yv, [&](const Index &o) {
    Index i = src_of(o);
    LV *dst = elem_ptr(ay, y.dtype, o);
    branch(
        all_below(i, xv), [&] { B.CreateStore(B.CreateLoad(st, elem_ptr(ax, x.dtype, i)), dst); },
        [&] { B.CreateStore(llvm::Constant::getNullValue(st), dst); });
  });
}

void Emitter::arg_reduce(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  StandaloneAddr ax = E.addr(x.id), ay = E.addr(y.id);
  auto xv = valid_of(x.id), yv = valid_of(y.id);
  const size_t axis = static_cast<size_t>(op.axis), xr = x.shape.size();
  const bool fp = is_float(x.dtype), is_max = op.kind == OpKind::Argmax;
  llvm::Type *ct = compute_elem(x.dtype);
  LV *best_slot = alloca_of(ct, "arg.best");
  LV *idx_slot = alloca_of(B.getInt64Ty(), "arg.idx");
  LV *done_slot = alloca_of(B.getInt1Ty(), "arg.done");
  for_box(yv, [&](const Index &o) {
    Index i;
    if (op.keepdim)
      i = o;
    else if (xr == 1)
      i = {i64(0)};
    else {
      i = o;
      i.insert(i.begin() + static_cast<long>(axis), i64(0));
    }
    B.CreateStore(llvm::Constant::getNullValue(ct), best_slot);
    B.CreateStore(i64(-1), idx_slot);
    B.CreateStore(B.getFalse(), done_slot);
    for_loop(
        i64(0), xv[axis],
        [&](LV *k) {
          Index ik = i;
          ik[axis] = k;
          LV *raw = B.CreateLoad(storage_elem(x.dtype), elem_ptr(ax, x.dtype, ik));
          LV *v = fp ? widen(raw, x.dtype) : to_i64(raw, x.dtype);
          LV *best = B.CreateLoad(ct, best_slot);
          LV *bi = B.CreateLoad(B.getInt64Ty(), idx_slot);
          LV *done = B.CreateLoad(B.getInt1Ty(), done_slot);
          LV *better = fp ? (is_max ? B.CreateFCmpOGT(v, best) : B.CreateFCmpOLT(v, best))
                          : (is_max ? B.CreateICmpSGT(v, best) : B.CreateICmpSLT(v, best));
          LV *nan = fp ? B.CreateFCmpUNO(v, v) : B.getFalse();
          LV *take = B.CreateAnd(B.CreateNot(done),
                                 B.CreateOr(B.CreateOr(B.CreateICmpSLT(bi, i64(0)), better), nan));
          B.CreateStore(B.CreateSelect(take, v, best), best_slot);
          B.CreateStore(B.CreateSelect(take, k, bi), idx_slot);
          B.CreateStore(B.CreateOr(done, nan), done_slot);
        },
        "argk");
    LV *res = B.CreateTrunc(B.CreateLoad(B.getInt64Ty(), idx_slot), storage_elem(y.dtype));
    B.CreateStore(res, elem_ptr(ay, y.dtype, o));
  });
}

void Emitter::scan(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  StandaloneAddr ax = E.addr(x.id), ay = E.addr(y.id);
  auto xv = valid_of(x.id);
  const size_t axis = static_cast<size_t>(op.axis);
  const bool fp = is_float(x.dtype), sum = op.kind == OpKind::Cumsum;
  llvm::Type *ct = compute_elem(x.dtype);
  LV *acc_slot = alloca_of(ct, "scan.acc");
  auto outer = xv;
  LV *n = xv[axis];
  outer[axis] = B.CreateSelect(B.CreateICmpSGT(n, i64(0)), i64(1), i64(0));
  for_box(outer, [&](const Index &o) {
    // -0 keeps the first element's sign (cumsum([-0]) = -0), as the interpreter.
    B.CreateStore(fp ? llvm::ConstantFP::get(ct, sum ? -0.0 : 1.0)
                     : static_cast<LV *>(i64(sum ? 0 : 1)),
                  acc_slot);
    for_loop(
        i64(0), n,
        [&](LV *k) {
          Index i = o;
          i[axis] = k;
          LV *raw = B.CreateLoad(storage_elem(x.dtype), elem_ptr(ax, x.dtype, i));
          LV *v = fp ? widen(raw, x.dtype) : to_i64(raw, x.dtype);
          LV *acc = B.CreateLoad(ct, acc_slot);
          acc = fp ? (sum ? B.CreateFAdd(acc, v) : B.CreateFMul(acc, v))
                   : (sum ? B.CreateAdd(acc, v) : B.CreateMul(acc, v));
          B.CreateStore(acc, acc_slot);
          B.CreateStore(fp ? narrow(acc, y.dtype) : acc, elem_ptr(ay, y.dtype, i));
        },
        "scank");
  });
}

void Emitter::arange(const Op &op) {
  const ir::Value &y = p_.value(op.outputs[0]);
  StandaloneAddr ay = E.addr(y.id);
  auto yv = valid_of(y.id);
  bool fp = is_float(y.dtype);
  LV *start = fp ? nullptr : E.sym(op.start);
  LV *step = fp ? nullptr : E.sym(op.step);
  for_loop(
      i64(0), yv[0],
      [&](LV *i) {
        LV *v;
        if (fp) {
          LV *d =
              B.CreateFAdd(llvm::ConstantFP::get(B.getDoubleTy(), op.reals.at(0)),
                           B.CreateFMul(B.CreateSIToFP(i, B.getDoubleTy()),
                                        llvm::ConstantFP::get(B.getDoubleTy(), op.reals.at(1))));
          v = from_double(d, y.dtype);
        } else {
          v = B.CreateTrunc(B.CreateAdd(start, B.CreateMul(i, step)), storage_elem(y.dtype));
        }
        B.CreateStore(v, elem_ptr(ay, y.dtype, {i}));
      },
      "arange");
}

void Emitter::random(const Op &op) {
  const ir::Value &y = p_.value(op.outputs[0]);
  StandaloneAddr ay = E.addr(y.id);
  auto yv = valid_of(y.id);
  llvm::Type *i32 = B.getInt32Ty(), *i64t = B.getInt64Ty(), *dbl = B.getDoubleTy();
  // The key schedule and the counter's high words are compile-time constants.
  auto k0 = static_cast<uint32_t>(op.rng_key), k1 = static_cast<uint32_t>(op.rng_key >> 32);
  auto c2 = static_cast<uint32_t>(op.rng_counter), c3 = static_cast<uint32_t>(op.rng_counter >> 32);
  auto mulhilo = [&](uint32_t m, LV *a, LV *&hi, LV *&lo) {
    LV *p = B.CreateMul(B.CreateZExt(a, i64t), B.getInt64(m));
    hi = B.CreateTrunc(B.CreateLShr(p, 32), i32);
    lo = B.CreateTrunc(p, i32);
  };
  for_box(yv, [&](const Index &o) {
    LV *flat = i64(0);
    for (size_t d = 0; d < o.size(); ++d)
      flat = B.CreateAdd(flat, B.CreateMul(o[d], ay.strides[d])); // y is a local: row-major
    LV *b = B.CreateLShr(flat, 2);
    LV *lane = B.CreateTrunc(B.CreateAnd(flat, i64(3)), i32);
    LV *w[4] = {B.CreateTrunc(b, i32), B.CreateTrunc(B.CreateLShr(b, 32), i32), B.getInt32(c2),
                B.getInt32(c3)};
    uint32_t key0 = k0, key1 = k1;
    for (int round = 0; round < 10; ++round) {
      LV *hi0, *lo0, *hi1, *lo1;
      mulhilo(0xD2511F53u, w[0], hi0, lo0);
      mulhilo(0xCD9E8D57u, w[2], hi1, lo1);
      LV *n0 = B.CreateXor(B.CreateXor(hi1, w[1]), B.getInt32(key0));
      LV *n2 = B.CreateXor(B.CreateXor(hi0, w[3]), B.getInt32(key1));
      w[0] = n0;
      w[1] = lo1;
      w[2] = n2;
      w[3] = lo0;
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    auto unit24 = [&](LV *word) { // (word >> 8) * 2^-24
      return B.CreateFMul(B.CreateUIToFP(B.CreateLShr(word, 8), dbl),
                          llvm::ConstantFP::get(dbl, 0x1p-24));
    };
    auto pick = [&](LV *l, LV *a0, LV *a1, LV *a2, LV *a3) {
      LV *lo = B.CreateSelect(B.CreateICmpEQ(l, B.getInt32(0)), a0, a1);
      LV *hi = B.CreateSelect(B.CreateICmpEQ(l, B.getInt32(2)), a2, a3);
      return B.CreateSelect(B.CreateICmpULT(l, B.getInt32(2)), lo, hi);
    };
    LV *a = llvm::ConstantFP::get(dbl, op.reals.at(0));
    LV *c = llvm::ConstantFP::get(dbl, op.reals.at(1));
    LV *v;
    if (op.kind == OpKind::Uniform) {
      LV *u = unit24(pick(lane, w[0], w[1], w[2], w[3]));
      v = B.CreateFAdd(a, B.CreateFMul(B.CreateFSub(c, a), u));
    } else {
      LV *first = B.CreateICmpULT(lane, B.getInt32(2));
      LV *we = B.CreateSelect(first, w[0], w[2]), *wo = B.CreateSelect(first, w[1], w[3]);
      LV *u1 = B.CreateFMul(
          B.CreateFAdd(B.CreateUIToFP(B.CreateLShr(we, 8), dbl), llvm::ConstantFP::get(dbl, 1.0)),
          llvm::ConstantFP::get(dbl, 0x1p-24));
      LV *u2 = unit24(wo);
      LV *r = B.CreateUnaryIntrinsic(
          llvm::Intrinsic::sqrt, B.CreateFMul(llvm::ConstantFP::get(dbl, -2.0),
                                              B.CreateUnaryIntrinsic(llvm::Intrinsic::log, u1)));
      LV *t = B.CreateFMul(llvm::ConstantFP::get(dbl, 6.283185307179586), u2);
      LV *odd = B.CreateICmpEQ(B.CreateAnd(lane, B.getInt32(1)), B.getInt32(1));
      LV *trig = B.CreateSelect(odd, B.CreateUnaryIntrinsic(llvm::Intrinsic::sin, t),
                                B.CreateUnaryIntrinsic(llvm::Intrinsic::cos, t));
      v = B.CreateFAdd(a, B.CreateFMul(c, B.CreateFMul(r, trig)));
    }
    B.CreateStore(from_double(v, y.dtype), elem_ptr(ay, y.dtype, o));
  });
}

void Emitter::concat(const Op &op) {
  const ir::Value &y = p_.value(op.outputs[0]);
  StandaloneAddr ay = E.addr(y.id);
  const size_t axis = static_cast<size_t>(op.axis);
  llvm::Type *st = storage_elem(y.dtype);
  LV *start = i64(0);
  for (ir::ValueId in : op.inputs) {
    const ir::Value &x = p_.value(in);
    StandaloneAddr ax = E.addr(in);
    auto xv = valid_of(in);
    LV *s = start;
    for_box(xv, [&](const Index &i) {
      Index o = i;
      o[axis] = B.CreateAdd(o[axis], s);
      B.CreateStore(B.CreateLoad(st, elem_ptr(ax, x.dtype, i)), elem_ptr(ay, y.dtype, o));
    });
    start = B.CreateAdd(start, E.sym(x.shape[axis]));
  }
}

void Emitter::pad(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  StandaloneAddr ax = E.addr(x.id), ay = E.addr(y.id);
  auto xv = valid_of(x.id), yv = valid_of(y.id);
  llvm::Type *st = storage_elem(y.dtype);
  const ir::Scalar &s = *op.scalar;
  LV *fill;
  if (is_float(y.dtype))
    fill = from_double(llvm::ConstantFP::get(B.getDoubleTy(), s.f), y.dtype);
  else if (y.dtype == DT_BOOL)
    fill = B.getInt8(s.i != 0 ? 1 : 0);
  else
    fill = llvm::ConstantInt::get(st, static_cast<uint64_t>(s.i), true);
  for_box(yv, [&](const Index &o) {
    LV *dst = elem_ptr(ay, y.dtype, o);
    branch(
        all_below(o, xv), [&] { B.CreateStore(B.CreateLoad(st, elem_ptr(ax, x.dtype, o)), dst); },
        [&] { B.CreateStore(fill, dst); });
  });
}

void Emitter::triangle(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  StandaloneAddr ax = E.addr(x.id), ay = E.addr(y.id);
  auto yv = valid_of(y.id);
  llvm::Type *st = storage_elem(y.dtype);
  LV *diag = E.sym(op.diagonal);
  const size_t r = yv.size();
  for_box(yv, [&](const Index &o) {
    LV *cmr = B.CreateSub(o[r - 1], o[r - 2]);
    LV *keep = op.kind == OpKind::Tril ? B.CreateICmpSLE(cmr, diag) : B.CreateICmpSGE(cmr, diag);
    LV *v = B.CreateLoad(st, elem_ptr(ax, x.dtype, o));
    B.CreateStore(B.CreateSelect(keep, v, llvm::Constant::getNullValue(st)),
                  elem_ptr(ay, y.dtype, o));
  });
}

} // namespace

void lower_standalone(StandaloneEnv &env, const ir::Program &p, const ir::Op &op) {
  Emitter(env, p).run(op);
}

} // namespace pto::codegen
