// lower_standalone.cpp - See lower_standalone.h. Mirrors interpreter_standalone.cpp loop for
// loop: movement ops copy storage elements (a source outside its input's valid region reads as
// 0, behind a branch so nothing outside it is ever loaded), reductions and scans compute in fp32
// for fp16/bf16 (double for fp64, i64 for ints) and round once per stored element.
#include "llvm/lower_standalone.h"

#include "pto/error.h"

#include "llvm/dtype_codec.h"

#include <llvm/IR/Intrinsics.h>

#include <array>
#include <cmath>

namespace pto::codegen {

using ir::Op;
using ir::OpKind;
using LV = llvm::Value;

namespace {

class StandaloneLowering {
public:
  explicit StandaloneLowering(KernelBuilder &kb) : kb_(kb), B(kb.builder()), p_(kb.program()) {}

  void run(const Op &op);

private:
  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Program &p_;

  using Index = std::vector<LV *>;

  /// for (i = start; i < end; ++i) body(i)
  void for_loop(LV *start, LV *end, const std::function<void(LV *)> &body, const char *name) {
    kb_.for_loop(start, end, kb_.i64(1), body, name);
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
          kb_.i64(0), ext[d],
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
    kb_.if_else(cond, then, otherwise, "sl.then", "sl.else", "sl.join");
  }

  // ---- elements ------------------------------------------------------------------------------
  /// The scalar type reductions and scans accumulate in: the compute type for floats (float for
  /// fp16/bf16/fp32, double), i64 for ints.
  llvm::Type *accum_type(DataType dt) {
    return is_float(dt) ? compute_type(B, dt) : B.getInt64Ty();
  }

  std::vector<LV *> valid_of(ir::ValueId id) {
    const ir::Value &v = p_.value(id);
    std::vector<LV *> out;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      LV *s = kb_.sym(v.shape[d]), *val = kb_.sym(v.valid[d]);
      out.push_back(kb_.clamp_valid(val, s));
    }
    return out;
  }

  LV *all_below(const Index &idx, const std::vector<LV *> &bound) {
    LV *ok = B.getTrue();
    for (size_t d = 0; d < idx.size(); ++d)
      ok = B.CreateAnd(ok, B.CreateICmpSLT(idx[d], bound[d]));
    return ok;
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
  void reshape(const Op &op);
  void broadcast(const Op &op);
  void permute(const Op &op);
  std::array<LV *, 4> philox(const Op &op, LV *block);
  LV *unit24(LV *word);
  LV *uniform(const std::array<LV *, 4> &w, LV *lane, LV *a, LV *c);
  LV *normal(const std::array<LV *, 4> &w, LV *lane, LV *a, LV *c);
  Index dims_of(const ir::Value &v);
};

void StandaloneLowering::run(const Op &op) {
  using S = ir::StandaloneKind;
  switch (ir::kind_as<S>(op.kind)) {
  case S::Argmax:
  case S::Argmin:
    arg_reduce(op);
    return;
  case S::Cumsum:
  case S::Cumprod:
    scan(op);
    return;
  case S::Arange:
    arange(op);
    return;
  case S::Uniform:
  case S::Normal:
    random(op);
    return;
  case S::Concat:
    concat(op);
    return;
  case S::Pad:
    pad(op);
    return;
  case S::Tril:
  case S::Triu:
    triangle(op);
    return;
  case S::Reshape:
    reshape(op);
    return;
  case S::Expand:
  case S::Tile:
    broadcast(op);
    return;
  case S::Permute:
    permute(op);
    return;
  }
  throw InternalError(op.where, ir::op_info(op.kind).name,
                      "no standalone lowering for this op (a ptojit bug)");
}

StandaloneLowering::Index StandaloneLowering::dims_of(const ir::Value &v) {
  Index dims;
  for (auto &d : v.shape)
    dims.push_back(kb_.sym(d));
  return dims;
}

/// y[o] = x[the same row-major position], both dense.
void StandaloneLowering::reshape(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  Index ys = kb_.strides_of(y.shape), xs = kb_.strides_of(x.shape);
  Index xdim = dims_of(x);
  gather(op, [&, ys, xs, xdim](const Index &o) {
    LV *lin = kb_.i64(0);
    for (size_t d = 0; d < o.size(); ++d)
      lin = B.CreateAdd(lin, B.CreateMul(o[d], ys[d]));
    Index i;
    for (size_t d = 0; d < xs.size(); ++d)
      i.push_back(B.CreateSRem(B.CreateSDiv(lin, xs[d]), xdim[d]));
    return i;
  });
}

/// Expand (a size-1 dim repeats its element) and Tile (x repeats whole), right-aligned.
void StandaloneLowering::broadcast(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  size_t off = y.shape.size() - x.shape.size();
  Index xdim = dims_of(x);
  bool expand = op.kind == OpKind::Expand;
  gather(op, [&, off, xdim, expand](const Index &o) {
    Index i;
    for (size_t d = 0; d < xdim.size(); ++d) {
      if (expand)
        i.push_back(B.CreateSelect(B.CreateICmpEQ(xdim[d], kb_.i64(1)), kb_.i64(0), o[d + off]));
      else
        i.push_back(B.CreateSRem(o[d + off], xdim[d]));
    }
    return i;
  });
}

/// y[o] = x[o permuted back]: output dim d is input dim perm[d].
void StandaloneLowering::permute(const Op &op) {
  gather(op, [&](const Index &o) {
    Index i(o.size());
    for (size_t d = 0; d < o.size(); ++d)
      i[static_cast<size_t>(op.perm[d])] = o[d];
    return i;
  });
}

/// y[o] = x[src_of(o)] over y's valid region; 0 where the source is outside x's valid region.
void StandaloneLowering::gather(const Op &op, const std::function<Index(const Index &)> &src_of) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  Addr ax = kb_.addr(x.id), ay = kb_.addr(y.id);
  auto xv = valid_of(x.id), yv = valid_of(y.id);
  llvm::Type *st = storage_type(B, y.dtype);
  for_box(yv, [&](const Index &o) {
    Index i = src_of(o);
    LV *dst = kb_.elem_ptr(ay, y.dtype, o);
    branch(
        all_below(i, xv),
        [&] { B.CreateStore(B.CreateLoad(st, kb_.elem_ptr(ax, x.dtype, i)), dst); },
        [&] { B.CreateStore(llvm::Constant::getNullValue(st), dst); });
  });
}

void StandaloneLowering::arg_reduce(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  Addr ax = kb_.addr(x.id), ay = kb_.addr(y.id);
  auto xv = valid_of(x.id), yv = valid_of(y.id);
  const size_t axis = static_cast<size_t>(op.axis), xr = x.shape.size();
  const bool fp = is_float(x.dtype), is_max = op.kind == OpKind::Argmax;
  llvm::Type *ct = accum_type(x.dtype);
  LV *best_slot = kb_.entry_alloca(ct, "arg.best");
  LV *idx_slot = kb_.entry_alloca(B.getInt64Ty(), "arg.idx");
  LV *done_slot = kb_.entry_alloca(B.getInt1Ty(), "arg.done");
  for_box(yv, [&](const Index &o) {
    Index i;
    if (op.keepdim)
      i = o;
    else if (xr == 1)
      i = {kb_.i64(0)};
    else {
      i = o;
      i.insert(i.begin() + static_cast<long>(axis), kb_.i64(0));
    }
    B.CreateStore(llvm::Constant::getNullValue(ct), best_slot);
    B.CreateStore(kb_.i64(-1), idx_slot);
    B.CreateStore(B.getFalse(), done_slot);
    for_loop(
        kb_.i64(0), xv[axis],
        [&](LV *k) {
          Index ik = i;
          ik[axis] = k;
          LV *raw = B.CreateLoad(storage_type(B, x.dtype), kb_.elem_ptr(ax, x.dtype, ik));
          LV *v = fp ? widen(B, raw, x.dtype) : to_i64(B, raw, x.dtype);
          LV *best = B.CreateLoad(ct, best_slot);
          LV *bi = B.CreateLoad(B.getInt64Ty(), idx_slot);
          LV *done = B.CreateLoad(B.getInt1Ty(), done_slot);
          LV *better = fp ? (is_max ? B.CreateFCmpOGT(v, best) : B.CreateFCmpOLT(v, best))
                          : (is_max ? B.CreateICmpSGT(v, best) : B.CreateICmpSLT(v, best));
          LV *nan = fp ? B.CreateFCmpUNO(v, v) : B.getFalse();
          LV *take =
              B.CreateAnd(B.CreateNot(done),
                          B.CreateOr(B.CreateOr(B.CreateICmpSLT(bi, kb_.i64(0)), better), nan));
          B.CreateStore(B.CreateSelect(take, v, best), best_slot);
          B.CreateStore(B.CreateSelect(take, k, bi), idx_slot);
          B.CreateStore(B.CreateOr(done, nan), done_slot);
        },
        "argk");
    LV *res = B.CreateTrunc(B.CreateLoad(B.getInt64Ty(), idx_slot), storage_type(B, y.dtype));
    B.CreateStore(res, kb_.elem_ptr(ay, y.dtype, o));
  });
}

void StandaloneLowering::scan(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  Addr ax = kb_.addr(x.id), ay = kb_.addr(y.id);
  auto xv = valid_of(x.id);
  const size_t axis = static_cast<size_t>(op.axis);
  const bool fp = is_float(x.dtype), sum = op.kind == OpKind::Cumsum;
  llvm::Type *ct = accum_type(x.dtype);
  LV *acc_slot = kb_.entry_alloca(ct, "scan.acc");
  auto outer = xv;
  LV *n = xv[axis];
  outer[axis] = B.CreateSelect(B.CreateICmpSGT(n, kb_.i64(0)), kb_.i64(1), kb_.i64(0));
  for_box(outer, [&](const Index &o) {
    // -0 keeps the first element's sign (cumsum([-0]) = -0), as the interpreter.
    B.CreateStore(fp ? llvm::ConstantFP::get(ct, sum ? -0.0 : 1.0)
                     : static_cast<LV *>(kb_.i64(sum ? 0 : 1)),
                  acc_slot);
    for_loop(
        kb_.i64(0), n,
        [&](LV *k) {
          Index i = o;
          i[axis] = k;
          LV *raw = B.CreateLoad(storage_type(B, x.dtype), kb_.elem_ptr(ax, x.dtype, i));
          LV *v = fp ? widen(B, raw, x.dtype) : to_i64(B, raw, x.dtype);
          LV *acc = B.CreateLoad(ct, acc_slot);
          acc = fp ? (sum ? B.CreateFAdd(acc, v) : B.CreateFMul(acc, v))
                   : (sum ? B.CreateAdd(acc, v) : B.CreateMul(acc, v));
          B.CreateStore(acc, acc_slot);
          B.CreateStore(fp ? narrow(B, acc, y.dtype) : acc, kb_.elem_ptr(ay, y.dtype, i));
        },
        "scank");
  });
}

void StandaloneLowering::arange(const Op &op) {
  const ir::Value &y = p_.value(op.outputs[0]);
  Addr ay = kb_.addr(y.id);
  auto yv = valid_of(y.id);
  bool fp = is_float(y.dtype);
  LV *start = fp ? nullptr : kb_.sym(op.start);
  LV *step = fp ? nullptr : kb_.sym(op.step);
  for_loop(
      kb_.i64(0), yv[0],
      [&](LV *i) {
        LV *v;
        if (fp) {
          LV *d =
              B.CreateFAdd(llvm::ConstantFP::get(B.getDoubleTy(), op.reals.at(0)),
                           B.CreateFMul(B.CreateSIToFP(i, B.getDoubleTy()),
                                        llvm::ConstantFP::get(B.getDoubleTy(), op.reals.at(1))));
          v = from_double(B, d, y.dtype);
        } else {
          v = B.CreateTrunc(B.CreateAdd(start, B.CreateMul(i, step)), storage_type(B, y.dtype));
        }
        B.CreateStore(v, kb_.elem_ptr(ay, y.dtype, {i}));
      },
      "arange");
}

/// Philox4x32-10 of counter (block, rng_counter) under the op's key: the four random words of
/// element `block` * 4 .. + 3 (the key schedule and the counter's high words are constants).
std::array<LV *, 4> StandaloneLowering::philox(const Op &op, LV *block) {
  llvm::Type *i32 = B.getInt32Ty(), *i64t = B.getInt64Ty();
  auto k0 = static_cast<uint32_t>(op.rng_key), k1 = static_cast<uint32_t>(op.rng_key >> 32);
  auto c2 = static_cast<uint32_t>(op.rng_counter), c3 = static_cast<uint32_t>(op.rng_counter >> 32);
  auto mulhilo = [&](uint32_t m, LV *a, LV *&hi, LV *&lo) {
    LV *p = B.CreateMul(B.CreateZExt(a, i64t), B.getInt64(m));
    hi = B.CreateTrunc(B.CreateLShr(p, 32), i32);
    lo = B.CreateTrunc(p, i32);
  };
  std::array<LV *, 4> w = {B.CreateTrunc(block, i32), B.CreateTrunc(B.CreateLShr(block, 32), i32),
                           B.getInt32(c2), B.getInt32(c3)};
  uint32_t key0 = k0, key1 = k1;
  for (int round = 0; round < 10; ++round) {
    LV *hi0, *lo0, *hi1, *lo1;
    mulhilo(0xD2511F53u, w[0], hi0, lo0);
    mulhilo(0xCD9E8D57u, w[2], hi1, lo1);
    LV *n0 = B.CreateXor(B.CreateXor(hi1, w[1]), B.getInt32(key0));
    LV *n2 = B.CreateXor(B.CreateXor(hi0, w[3]), B.getInt32(key1));
    w = {n0, lo1, n2, lo0};
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  return w;
}

/// (word >> 8) * 2^-24, in [0, 1).
LV *StandaloneLowering::unit24(LV *word) {
  llvm::Type *dbl = B.getDoubleTy();
  return B.CreateFMul(B.CreateUIToFP(B.CreateLShr(word, 8), dbl),
                      llvm::ConstantFP::get(dbl, 0x1p-24));
}

/// uniform(low = a, high = c): word `lane` of the block, scaled.
LV *StandaloneLowering::uniform(const std::array<LV *, 4> &w, LV *lane, LV *a, LV *c) {
  auto pick = [&](LV *l, LV *a0, LV *a1, LV *a2, LV *a3) {
    LV *lo = B.CreateSelect(B.CreateICmpEQ(l, B.getInt32(0)), a0, a1);
    LV *hi = B.CreateSelect(B.CreateICmpEQ(l, B.getInt32(2)), a2, a3);
    return B.CreateSelect(B.CreateICmpULT(l, B.getInt32(2)), lo, hi);
  };
  LV *u = unit24(pick(lane, w[0], w[1], w[2], w[3]));
  return B.CreateFAdd(a, B.CreateFMul(B.CreateFSub(c, a), u));
}

/// normal(mean = a, std = c) by Box-Muller: lanes 0, 1 use words 0, 1 (cos, sin), lanes 2, 3
/// words 2, 3.
LV *StandaloneLowering::normal(const std::array<LV *, 4> &w, LV *lane, LV *a, LV *c) {
  llvm::Type *dbl = B.getDoubleTy();
  LV *first = B.CreateICmpULT(lane, B.getInt32(2));
  LV *we = B.CreateSelect(first, w[0], w[2]), *wo = B.CreateSelect(first, w[1], w[3]);
  LV *u1 = B.CreateFMul(
      B.CreateFAdd(B.CreateUIToFP(B.CreateLShr(we, 8), dbl), llvm::ConstantFP::get(dbl, 1.0)),
      llvm::ConstantFP::get(dbl, 0x1p-24));
  LV *u2 = unit24(wo);
  LV *r = B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                 B.CreateFMul(llvm::ConstantFP::get(dbl, -2.0),
                                              B.CreateUnaryIntrinsic(llvm::Intrinsic::log, u1)));
  LV *t = B.CreateFMul(llvm::ConstantFP::get(dbl, 6.283185307179586), u2);
  LV *odd = B.CreateICmpEQ(B.CreateAnd(lane, B.getInt32(1)), B.getInt32(1));
  LV *trig = B.CreateSelect(odd, B.CreateUnaryIntrinsic(llvm::Intrinsic::sin, t),
                            B.CreateUnaryIntrinsic(llvm::Intrinsic::cos, t));
  return B.CreateFAdd(a, B.CreateFMul(c, B.CreateFMul(r, trig)));
}

/// Uniform and Normal: element i (row-major in y) is lane i % 4 of Philox block i / 4, as the
/// interpreter's philox4x32.
void StandaloneLowering::random(const Op &op) {
  const ir::Value &y = p_.value(op.outputs[0]);
  Addr ay = kb_.addr(y.id);
  auto yv = valid_of(y.id);
  for_box(yv, [&](const Index &o) {
    LV *flat = kb_.i64(0);
    for (size_t d = 0; d < o.size(); ++d)
      flat = B.CreateAdd(flat, B.CreateMul(o[d], ay.strides[d])); // y is a local: row-major
    LV *b = B.CreateLShr(flat, 2);
    LV *lane = B.CreateTrunc(B.CreateAnd(flat, kb_.i64(3)), B.getInt32Ty());
    std::array<LV *, 4> w = philox(op, b);
    LV *a = llvm::ConstantFP::get(B.getDoubleTy(), op.reals.at(0));
    LV *c = llvm::ConstantFP::get(B.getDoubleTy(), op.reals.at(1));
    LV *v = op.kind == OpKind::Uniform ? uniform(w, lane, a, c) : normal(w, lane, a, c);
    B.CreateStore(from_double(B, v, y.dtype), kb_.elem_ptr(ay, y.dtype, o));
  });
}

void StandaloneLowering::concat(const Op &op) {
  const ir::Value &y = p_.value(op.outputs[0]);
  Addr ay = kb_.addr(y.id);
  const size_t axis = static_cast<size_t>(op.axis);
  llvm::Type *st = storage_type(B, y.dtype);
  LV *start = kb_.i64(0);
  for (ir::ValueId in : op.inputs) {
    const ir::Value &x = p_.value(in);
    Addr ax = kb_.addr(in);
    auto xv = valid_of(in);
    LV *s = start;
    for_box(xv, [&](const Index &i) {
      Index o = i;
      o[axis] = B.CreateAdd(o[axis], s);
      B.CreateStore(B.CreateLoad(st, kb_.elem_ptr(ax, x.dtype, i)), kb_.elem_ptr(ay, y.dtype, o));
    });
    start = B.CreateAdd(start, kb_.sym(x.shape[axis]));
  }
}

void StandaloneLowering::pad(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  Addr ax = kb_.addr(x.id), ay = kb_.addr(y.id);
  auto xv = valid_of(x.id), yv = valid_of(y.id);
  llvm::Type *st = storage_type(B, y.dtype);
  const ir::Scalar &s = ir::scalar_of(op);
  LV *fill;
  if (is_float(y.dtype))
    fill = from_double(B, llvm::ConstantFP::get(B.getDoubleTy(), s.f), y.dtype);
  else if (y.dtype == DT_BOOL)
    fill = B.getInt8(s.i != 0 ? 1 : 0);
  else
    fill = llvm::ConstantInt::get(st, static_cast<uint64_t>(s.i), true);
  for_box(yv, [&](const Index &o) {
    LV *dst = kb_.elem_ptr(ay, y.dtype, o);
    branch(
        all_below(o, xv),
        [&] { B.CreateStore(B.CreateLoad(st, kb_.elem_ptr(ax, x.dtype, o)), dst); },
        [&] { B.CreateStore(fill, dst); });
  });
}

void StandaloneLowering::triangle(const Op &op) {
  const ir::Value &x = p_.value(op.inputs[0]), &y = p_.value(op.outputs[0]);
  Addr ax = kb_.addr(x.id), ay = kb_.addr(y.id);
  auto yv = valid_of(y.id);
  llvm::Type *st = storage_type(B, y.dtype);
  LV *diag = kb_.sym(op.diagonal);
  const size_t r = yv.size();
  for_box(yv, [&](const Index &o) {
    LV *cmr = B.CreateSub(o[r - 1], o[r - 2]);
    LV *keep = op.kind == OpKind::Tril ? B.CreateICmpSLE(cmr, diag) : B.CreateICmpSGE(cmr, diag);
    LV *v = B.CreateLoad(st, kb_.elem_ptr(ax, x.dtype, o));
    B.CreateStore(B.CreateSelect(keep, v, llvm::Constant::getNullValue(st)),
                  kb_.elem_ptr(ay, y.dtype, o));
  });
}

} // namespace

void lower_standalone(KernelBuilder &kb, const ir::Op &op) { StandaloneLowering(kb).run(op); }

} // namespace pto::codegen
