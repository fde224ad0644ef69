// lower_matmul.cpp - See lower_matmul.h. Numerics match interpreter_matmul.cpp: fp32 (or wrapping
// int32) accumulation, bias, relu, one rounding to the output dtype; only the summation order
// within a dot product differs (FMA, no intermediate rounding of the products).
#include "llvm/llvm_loops.h"
#include "llvm/lower_matmul.h"

#include "llvm/jit_engine.h"
#include "pto/error.h"
#include "pto/runtime/abi.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <string>

namespace pto::codegen {

using LV = llvm::Value;

namespace {

constexpr int64_t kMR = 6;  ///< rows of the register block
constexpr int64_t kNR = 16; ///< columns of the register block (two 8-lane vectors)
constexpr unsigned kLanes = 8;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

class MatmulLowering {
public:
  MatmulLowering(MatmulEnv &env, const ir::Program &p, const ir::Op &op)
      : env_(env), B(env.B), C(env.B.getContext()), p_(p), op_(op) {}

  void run() {
    const ir::Value &va = p_.value(op_.inputs[0]);
    const ir::Value &vb = p_.value(op_.inputs[1]);
    const ir::Value &vc = p_.value(op_.outputs[0]);
    in_dt_ = va.dtype;
    out_dt_ = vc.dtype;
    int_ = in_dt_ == DT_INT8;
    kg_ = int_ ? 2 : 1;
    std::string f = "," + host_target().features + ",";
    avx2_ = f.find(",+avx2,") != std::string::npos;
    const auto &cube = op_.tile.cube;
    mb_ = round_up(cube[1], kMR);
    kb_ = round_up(std::min(cube[3], cube[4]), kg_);
    nb_ = round_up(cube[6], kNR);

    // Scratch, once per call: packed A and B chunks and the partial-sum block (at most
    // kMaxCubeScratchBytes plus the rounding above: set_cube_tile_shapes bounds the blocks). A
    // refused allocation (its RuntimeError recorded) returns before the first write.
    Ap_ = alloc(mb_ * kb_ * pack_bytes());
    Bp_ = alloc(nb_ * kb_ * pack_bytes());
    Cbuf_ = alloc(mb_ * nb_ * 4);
    return_if_null({Ap_, Bp_, Cbuf_});

    const size_t r = vc.shape.size();
    MatmulAddr aa = env_.addr(va.id), ab = env_.addr(vb.id), ac = env_.addr(vc.id);
    has_bias_ = op_.inputs.size() == 3;
    if (has_bias_) {
      MatmulAddr abias = env_.addr(op_.inputs[2]);
      bias_ = abias.base;
    }
    auto clamp = [&](const SymbolicScalar &valid, const SymbolicScalar &dim) {
      return smin(smax(env_.sym(valid), i64(0)), env_.sym(dim));
    };
    const size_t am = op_.a_trans ? r - 1 : r - 2, ak = op_.a_trans ? r - 2 : r - 1;
    const size_t bk = op_.b_trans ? r - 1 : r - 2, bn = op_.b_trans ? r - 2 : r - 1;
    M_ = clamp(vc.valid[r - 2], vc.shape[r - 2]);
    N_ = clamp(vc.valid[r - 1], vc.shape[r - 1]);
    K_ = smin(clamp(va.valid[ak], va.shape[ak]), clamp(vb.valid[bk], vb.shape[bk]));
    a_si_ = aa.strides[am];
    a_sk_ = aa.strides[ak];
    b_sk_ = ab.strides[bk];
    b_sj_ = ab.strides[bn];
    c_si_ = ac.strides[r - 2];

    // Batch dims (row-major over the output's valid batch region); size-1 operand dims broadcast.
    std::vector<LV *> bvalid;
    for (size_t d = 0; d + 2 < r; ++d)
      bvalid.push_back(clamp(vc.valid[d], vc.shape[d]));
    std::vector<LV *> idx(r - 2);
    std::function<void(size_t)> batch = [&](size_t d) {
      if (d + 2 == r) {
        LV *oa = i64(0), *ob = i64(0), *oc = i64(0);
        for (size_t e = 0; e + 2 < r; ++e) {
          auto one = [&](const ir::Value &v) {
            return v.shape[e].is_concrete() && v.shape[e].concrete() == 1;
          };
          if (!one(va))
            oa = B.CreateAdd(oa, B.CreateMul(idx[e], aa.strides[e]));
          if (!one(vb))
            ob = B.CreateAdd(ob, B.CreateMul(idx[e], ab.strides[e]));
          oc = B.CreateAdd(oc, B.CreateMul(idx[e], ac.strides[e]));
        }
        gemm(B.CreateGEP(storage(in_dt_), aa.base, oa), B.CreateGEP(storage(in_dt_), ab.base, ob),
             B.CreateGEP(storage(out_dt_), ac.base, oc));
        return;
      }
      for_loop(i64(0), bvalid[d], i64(1), [&](LV *i) {
        idx[d] = i;
        batch(d + 1);
      }, "mm.batch");
    };
    batch(0);
  }

private:
  MatmulEnv &env_;
  llvm::IRBuilder<> &B;
  llvm::LLVMContext &C;
  const ir::Program &p_;
  const ir::Op &op_;
  DataType in_dt_ = DT_FP32, out_dt_ = DT_FP32;
  bool int_ = false, avx2_ = false, has_bias_ = false;
  int64_t kg_ = 1;               ///< k elements per packed group (2: int16 pairs for vpmaddwd)
  int64_t mb_ = 0, kb_ = 0, nb_ = 0; ///< block sizes: mL1 (rounded to kMR), kL1, nL1
  LV *Ap_ = nullptr, *Bp_ = nullptr, *Cbuf_ = nullptr, *bias_ = nullptr;
  LV *M_ = nullptr, *N_ = nullptr, *K_ = nullptr;
  LV *a_si_ = nullptr, *a_sk_ = nullptr, *b_sk_ = nullptr, *b_sj_ = nullptr, *c_si_ = nullptr;

  // ---- helpers -------------------------------------------------------------------------------
  LV *i64(int64_t v) { return B.getInt64(static_cast<uint64_t>(v)); }
  LV *smin(LV *a, LV *b) { return B.CreateSelect(B.CreateICmpSLT(a, b), a, b); }
  LV *smax(LV *a, LV *b) { return B.CreateSelect(B.CreateICmpSGT(a, b), a, b); }
  int64_t pack_bytes() const { return int_ ? 2 : 4; }
  llvm::Type *pack_elem() { return int_ ? B.getInt16Ty() : B.getFloatTy(); }
  llvm::Type *acc_elem() { return int_ ? B.getInt32Ty() : B.getFloatTy(); }
  llvm::VectorType *vec(llvm::Type *e, unsigned n = kLanes) {
    return llvm::FixedVectorType::get(e, n);
  }
  llvm::Type *storage(DataType dt) {
    switch (dt) {
    case DT_FP16:
    case DT_BF16: return B.getInt16Ty();
    case DT_FP32: return B.getFloatTy();
    case DT_INT32: return B.getInt32Ty();
    default: return B.getInt8Ty();
    }
  }

  LV *alloc(int64_t bytes) {
    llvm::IRBuilder<> eb(env_.entry_point);
    auto callee = env_.M.getOrInsertFunction(
        "pto_rt_alloc",
        llvm::FunctionType::get(eb.getPtrTy(), {eb.getPtrTy(), eb.getInt64Ty(), eb.getInt32Ty()},
                                false));
    // Site -1: a failure points at the user's call of the kernel.
    return eb.CreateCall(callee,
                         {env_.ctx, eb.getInt64(static_cast<uint64_t>(bytes)), eb.getInt32(-1)});
  }

  /// Returns PTO_ERR from the kernel when any of `ptrs` is null.
  void return_if_null(std::initializer_list<LV *> ptrs) {
    LV *bad = B.getFalse();
    for (LV *p : ptrs)
      bad = B.CreateOr(bad, B.CreateIsNull(p));
    auto *fail = llvm::BasicBlock::Create(C, "mm.nomem", env_.F);
    auto *cont = llvm::BasicBlock::Create(C, "mm.mem", env_.F);
    B.CreateCondBr(bad, fail, cont);
    B.SetInsertPoint(fail);
    B.CreateRet(B.getInt32(PTO_ERR));
    B.SetInsertPoint(cont);
  }

  /// for (i = start; i < end; i += step) body(i)
  void for_loop(LV *start, LV *end, LV *step, const std::function<void(LV *)> &body,
                const char *name) {
    emit_for_loop(B, env_.F, start, end, step, body, name);
  }

  /// if (cond) then()
  void if_then(LV *cond, const std::function<void()> &then, const char *name) {
    auto *yes = llvm::BasicBlock::Create(C, std::string(name) + ".then", env_.F);
    auto *done = llvm::BasicBlock::Create(C, std::string(name) + ".end", env_.F);
    B.CreateCondBr(cond, yes, done);
    B.SetInsertPoint(yes);
    then();
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  /// Storage element(s) -> fp32 (or int16 for int8). `raw` is a vector of the storage type.
  LV *widen(LV *raw) {
    auto n = llvm::cast<llvm::VectorType>(raw->getType())->getElementCount();
    switch (in_dt_) {
    case DT_FP16:
      return B.CreateFPExt(B.CreateBitCast(raw, llvm::VectorType::get(B.getHalfTy(), n)),
                           llvm::VectorType::get(B.getFloatTy(), n));
    case DT_BF16:
      return B.CreateBitCast(B.CreateShl(B.CreateZExt(raw, llvm::VectorType::get(B.getInt32Ty(), n)),
                                         16),
                             llvm::VectorType::get(B.getFloatTy(), n));
    case DT_INT8: return B.CreateSExt(raw, llvm::VectorType::get(B.getInt16Ty(), n));
    default: return raw;
    }
  }
  /// One storage element at `ptr` (null when `live` is false: a zero-padded tail) -> pack type.
  LV *load_scalar(LV *ptr) {
    LV *raw = B.CreateLoad(storage(in_dt_), ptr);
    LV *v = B.CreateInsertElement(llvm::PoisonValue::get(vec(storage(in_dt_), 1)), raw,
                                  uint64_t{0});
    return B.CreateExtractElement(widen(v), uint64_t{0});
  }

  // ---- packing ---------------------------------------------------------------------------------
  /// Ap[panel][k / kg][row in panel][k % kg] = A(i0 + row, p0 + k), zero past `rows` or `kc`.
  void pack_a(LV *a, LV *i0, LV *rows, LV *p0, LV *kc, LV *kcp) {
    llvm::Type *se = storage(in_dt_), *pe = pack_elem();
    LV *zero = llvm::Constant::getNullValue(pe);
    LV *rows_p = B.CreateMul(B.CreateSDiv(B.CreateAdd(rows, i64(kMR - 1)), i64(kMR)), i64(kMR));
    for_loop(i64(0), rows_p, i64(1), [&](LV *i) {
      LV *panel = B.CreateSDiv(i, i64(kMR)), *ip = B.CreateSRem(i, i64(kMR));
      LV *dst0 = B.CreateGEP(pe, Ap_, B.CreateMul(panel, B.CreateMul(kcp, i64(kMR))));
      LV *live_row = B.CreateICmpSLT(i, rows);
      LV *src_row = B.CreateGEP(se, a, B.CreateAdd(B.CreateMul(B.CreateAdd(i0, i), a_si_),
                                                   B.CreateMul(p0, a_sk_)));
      for_loop(i64(0), kcp, i64(1), [&](LV *k) {
        LV *dst = B.CreateGEP(
            pe, dst0,
            B.CreateAdd(B.CreateMul(B.CreateSDiv(k, i64(kg_)), i64(kMR * kg_)),
                        B.CreateAdd(B.CreateMul(ip, i64(kg_)), B.CreateSRem(k, i64(kg_)))));
        LV *live = B.CreateAnd(live_row, B.CreateICmpSLT(k, kc));
        auto *ld = llvm::BasicBlock::Create(C, "pa.ld", env_.F);
        auto *z = llvm::BasicBlock::Create(C, "pa.z", env_.F);
        auto *join = llvm::BasicBlock::Create(C, "pa.j", env_.F);
        B.CreateCondBr(live, ld, z);
        B.SetInsertPoint(ld);
        LV *v = load_scalar(B.CreateGEP(se, src_row, B.CreateMul(k, a_sk_)));
        B.CreateBr(join);
        B.SetInsertPoint(z);
        B.CreateBr(join);
        B.SetInsertPoint(join);
        auto *phi = B.CreatePHI(pe, 2);
        phi->addIncoming(v, ld);
        phi->addIncoming(zero, z);
        B.CreateStore(phi, dst);
      }, "pa.k");
    }, "pa.i");
  }

  /// Bp[panel][k / kg][col in panel][k % kg] = B(p0 + k, j0 + col), zero past `cols` or `kc`.
  void pack_b(LV *b, LV *p0, LV *kc, LV *kcp, LV *j0, LV *cols) {
    llvm::Type *se = storage(in_dt_), *pe = pack_elem();
    LV *panels = B.CreateSDiv(B.CreateAdd(cols, i64(kNR - 1)), i64(kNR));
    LV *origin = B.CreateGEP(se, b, B.CreateAdd(B.CreateMul(p0, b_sk_), B.CreateMul(j0, b_sj_)));
    for_loop(i64(0), panels, i64(1), [&](LV *jp) {
      LV *dst0 = B.CreateGEP(pe, Bp_, B.CreateMul(jp, B.CreateMul(kcp, i64(kNR))));
      LV *c0 = B.CreateMul(jp, i64(kNR));
      LV *ncols = smin(B.CreateSub(cols, c0), i64(kNR));
      LV *src_panel = B.CreateGEP(se, origin, B.CreateMul(c0, b_sj_));
      if (!op_.b_trans) {
        // Rows of 16 contiguous elements: one masked vector load and widen per k.
        LV *lane = llvm::ConstantVector::get([&] {
          std::vector<llvm::Constant *> l;
          for (int64_t j = 0; j < kNR; ++j)
            l.push_back(B.getInt64(static_cast<uint64_t>(j)));
          return l;
        }());
        LV *mask = B.CreateICmpSLT(lane, B.CreateVectorSplat(kNR, ncols));
        auto *svt = vec(se, kNR);
        for_loop(i64(0), kcp, i64(1), [&](LV *k) {
          LV *live = B.CreateICmpSLT(k, kc);
          LV *m = B.CreateAnd(mask, B.CreateVectorSplat(kNR, live));
          LV *raw = B.CreateMaskedLoad(svt, B.CreateGEP(se, src_panel, B.CreateMul(k, b_sk_)),
                                       llvm::Align(1), m, llvm::Constant::getNullValue(svt));
          LV *w = widen(raw);
          if (kg_ == 1) {
            B.CreateStore(w, B.CreateGEP(pe, dst0, B.CreateMul(k, i64(kNR))));
          } else {
            // Interleave into pairs: element (k, j) at (k / 2) * 32 + j * 2 + k % 2.
            LV *base = B.CreateAdd(B.CreateMul(B.CreateSDiv(k, i64(2)), i64(kNR * 2)),
                                   B.CreateSRem(k, i64(2)));
            for (int64_t j = 0; j < kNR; ++j)
              B.CreateStore(B.CreateExtractElement(w, static_cast<uint64_t>(j)),
                            B.CreateGEP(pe, dst0, B.CreateAdd(base, i64(j * 2))));
          }
        }, "pb.k");
        return;
      }
      // b_trans: B(k, j) is contiguous along k; walk columns, then k.
      LV *zero = llvm::Constant::getNullValue(pe);
      for_loop(i64(0), i64(kNR), i64(1), [&](LV *j) {
        LV *live_col = B.CreateICmpSLT(j, ncols);
        LV *src_col = B.CreateGEP(se, src_panel, B.CreateMul(j, b_sj_));
        for_loop(i64(0), kcp, i64(1), [&](LV *k) {
          LV *dst = B.CreateGEP(
              pe, dst0,
              B.CreateAdd(B.CreateMul(B.CreateSDiv(k, i64(kg_)), i64(kNR * kg_)),
                          B.CreateAdd(B.CreateMul(j, i64(kg_)), B.CreateSRem(k, i64(kg_)))));
          LV *live = B.CreateAnd(live_col, B.CreateICmpSLT(k, kc));
          auto *ld = llvm::BasicBlock::Create(C, "pb.ld", env_.F);
          auto *z = llvm::BasicBlock::Create(C, "pb.z", env_.F);
          auto *join = llvm::BasicBlock::Create(C, "pb.j", env_.F);
          B.CreateCondBr(live, ld, z);
          B.SetInsertPoint(ld);
          LV *v = load_scalar(B.CreateGEP(se, src_col, B.CreateMul(k, b_sk_)));
          B.CreateBr(join);
          B.SetInsertPoint(z);
          B.CreateBr(join);
          B.SetInsertPoint(join);
          auto *phi = B.CreatePHI(pe, 2);
          phi->addIncoming(v, ld);
          phi->addIncoming(zero, z);
          B.CreateStore(phi, dst);
        }, "pbt.k");
      }, "pbt.j");
    }, "pb.panel");
  }

  // ---- the blocked loops ---------------------------------------------------------------------
  void gemm(LV *a, LV *b, LV *c) {
    // At least one K chunk, so that K == 0 still writes bias (or zeros).
    LV *chunks = smax(B.CreateSDiv(B.CreateAdd(K_, i64(kb_ - 1)), i64(kb_)), i64(1));
    for_loop(i64(0), N_, i64(nb_), [&](LV *jc) {
      LV *nc = smin(i64(nb_), B.CreateSub(N_, jc));
      for_loop(i64(0), M_, i64(mb_), [&](LV *ic) {
        LV *mc = smin(i64(mb_), B.CreateSub(M_, ic));
        for_loop(i64(0), chunks, i64(1), [&](LV *q) {
          LV *pc = B.CreateMul(q, i64(kb_));
          LV *kc = smax(smin(i64(kb_), B.CreateSub(K_, pc)), i64(0));
          LV *kcp = B.CreateMul(B.CreateSDiv(B.CreateAdd(kc, i64(kg_ - 1)), i64(kg_)), i64(kg_));
          LV *first = B.CreateICmpEQ(q, i64(0));
          LV *last = B.CreateICmpEQ(q, B.CreateSub(chunks, i64(1)));
          pack_a(a, ic, mc, pc, kc, kcp);
          pack_b(b, pc, kc, kcp, jc, nc);
          for_loop(i64(0), nc, i64(kNR), [&](LV *jr) {
            LV *bp = B.CreateGEP(pack_elem(), Bp_, B.CreateMul(jr, kcp));
            LV *ncols = smin(i64(kNR), B.CreateSub(nc, jr));
            for_loop(i64(0), mc, i64(kMR), [&](LV *ir) {
              LV *ap = B.CreateGEP(pack_elem(), Ap_, B.CreateMul(ir, kcp));
              LV *nrows = smin(i64(kMR), B.CreateSub(mc, ir));
              LV *cbuf = B.CreateGEP(B.getFloatTy(), Cbuf_, B.CreateAdd(B.CreateMul(ir, i64(nb_)), jr));
              LV *crow0 = B.CreateGEP(storage(out_dt_), c,
                                      B.CreateAdd(B.CreateMul(B.CreateAdd(ic, ir), c_si_),
                                                  B.CreateAdd(jc, jr)));
              LV *bias = has_bias_ ? B.CreateGEP(storage(out_dt_), bias_, B.CreateAdd(jc, jr))
                                   : nullptr;
              micro_kernel(ap, bp, kcp, cbuf, first, last, crow0, nrows, ncols, bias);
            }, "mm.ir");
          }, "mm.jr");
        }, "mm.pc");
      }, "mm.ic");
    }, "mm.jc");
  }

  // ---- the micro-kernel ----------------------------------------------------------------------
  /// C[6 x 16] (+)= Ap[6 x kcp] * Bp[kcp x 16]; then to Cbuf, or (last chunk) the epilogue.
  void micro_kernel(LV *ap, LV *bp, LV *kcp, LV *cbuf, LV *first, LV *last, LV *crow0, LV *nrows,
                    LV *ncols, LV *bias) {
    llvm::Type *ae = acc_elem();
    auto *avt = vec(ae);
    // Accumulators: zero on the first chunk, else the partial sums (Cbuf is always allocated, so
    // the load is in bounds; its value is discarded on the first chunk).
    std::vector<LV *> acc(static_cast<size_t>(kMR * 2));
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        LV *ld = B.CreateAlignedLoad(avt, B.CreateGEP(ae, cbuf, i64(i * nb_ + h * 8)),
                                     llvm::Align(4));
        acc[static_cast<size_t>(i * 2 + h)] =
            B.CreateSelect(first, llvm::Constant::getNullValue(avt), ld);
      }
    // The k loop, accumulators carried in phis.
    LV *steps = B.CreateSDiv(kcp, i64(kg_));
    auto *pre = B.GetInsertBlock();
    auto *head = llvm::BasicBlock::Create(C, "uk.head", env_.F);
    auto *body = llvm::BasicBlock::Create(C, "uk.body", env_.F);
    auto *exit = llvm::BasicBlock::Create(C, "uk.exit", env_.F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    auto *kphi = B.CreatePHI(B.getInt64Ty(), 2, "uk.k");
    kphi->addIncoming(i64(0), pre);
    std::vector<llvm::PHINode *> phis;
    for (LV *v : acc) {
      auto *ph = B.CreatePHI(avt, 2);
      ph->addIncoming(v, pre);
      phis.push_back(ph);
    }
    B.CreateCondBr(B.CreateICmpSLT(kphi, steps), body, exit);
    B.SetInsertPoint(body);
    std::vector<LV *> next(phis.begin(), phis.end());
    if (!int_) {
      auto *vt = vec(B.getFloatTy());
      LV *brow = B.CreateGEP(B.getFloatTy(), bp, B.CreateMul(kphi, i64(kNR)));
      LV *b0 = B.CreateAlignedLoad(vt, brow, llvm::Align(4));
      LV *b1 = B.CreateAlignedLoad(vt, B.CreateConstGEP1_64(B.getFloatTy(), brow, 8), llvm::Align(4));
      LV *arow = B.CreateGEP(B.getFloatTy(), ap, B.CreateMul(kphi, i64(kMR)));
      for (int64_t i = 0; i < kMR; ++i) {
        LV *av = B.CreateVectorSplat(kLanes, B.CreateLoad(B.getFloatTy(),
                                                          B.CreateConstGEP1_64(B.getFloatTy(), arow,
                                                                               static_cast<uint64_t>(i))));
        for (int64_t h = 0; h < 2; ++h) {
          auto s = static_cast<size_t>(i * 2 + h);
          next[s] = B.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {av, h ? b1 : b0, next[s]});
        }
      }
    } else {
      // k pairs: B holds (k, k+1) int16 pairs per column, A one pair per row (as an i32).
      auto *v16 = vec(B.getInt16Ty(), 16);
      LV *brow = B.CreateGEP(B.getInt16Ty(), bp, B.CreateMul(kphi, i64(kNR * 2)));
      LV *b0 = B.CreateAlignedLoad(v16, brow, llvm::Align(2));
      LV *b1 = B.CreateAlignedLoad(v16, B.CreateConstGEP1_64(B.getInt16Ty(), brow, 16), llvm::Align(2));
      LV *arow = B.CreateGEP(B.getInt16Ty(), ap, B.CreateMul(kphi, i64(kMR * 2)));
      for (int64_t i = 0; i < kMR; ++i) {
        LV *pair = B.CreateAlignedLoad(B.getInt32Ty(),
                                       B.CreateConstGEP1_64(B.getInt16Ty(), arow,
                                                            static_cast<uint64_t>(i * 2)),
                                       llvm::Align(2));
        LV *av = B.CreateBitCast(B.CreateVectorSplat(kLanes, pair), v16);
        for (int64_t h = 0; h < 2; ++h) {
          auto s = static_cast<size_t>(i * 2 + h);
          next[s] = B.CreateAdd(next[s], madd_pairs(av, h ? b1 : b0));
        }
      }
    }
    LV *knext = B.CreateAdd(kphi, i64(1));
    auto *latch = B.GetInsertBlock();
    kphi->addIncoming(knext, latch);
    for (size_t s = 0; s < phis.size(); ++s)
      phis[s]->addIncoming(next[s], latch);
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    std::vector<LV *> res(phis.begin(), phis.end());

    auto *partial = llvm::BasicBlock::Create(C, "uk.partial", env_.F);
    auto *epi = llvm::BasicBlock::Create(C, "uk.epilogue", env_.F);
    auto *done = llvm::BasicBlock::Create(C, "uk.done", env_.F);
    B.CreateCondBr(last, epi, partial);
    B.SetInsertPoint(partial);
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h)
        B.CreateAlignedStore(res[static_cast<size_t>(i * 2 + h)],
                             B.CreateGEP(ae, cbuf, i64(i * nb_ + h * 8)), llvm::Align(4));
    B.CreateBr(done);
    B.SetInsertPoint(epi);
    epilogue(res, crow0, nrows, ncols, bias);
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  /// Sum of adjacent int16 products into int32 lanes (vpmaddwd).
  LV *madd_pairs(LV *a, LV *b) {
    if (avx2_)
      return B.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}, {a, b});
    auto *v16i32 = vec(B.getInt32Ty(), 16);
    LV *prod = B.CreateMul(B.CreateSExt(a, v16i32), B.CreateSExt(b, v16i32));
    std::vector<int> even, odd;
    for (int j = 0; j < 8; ++j) {
      even.push_back(2 * j);
      odd.push_back(2 * j + 1);
    }
    return B.CreateAdd(B.CreateShuffleVector(prod, even), B.CreateShuffleVector(prod, odd));
  }

  /// Accumulator (fp32 or int32) -> output storage bits, rounded to nearest even.
  LV *narrow(LV *v) {
    if (out_dt_ == DT_FP16)
      return B.CreateBitCast(B.CreateFPTrunc(v, vec(B.getHalfTy())), vec(B.getInt16Ty()));
    if (out_dt_ == DT_BF16) {
      auto *i32v = vec(B.getInt32Ty());
      LV *u = B.CreateBitCast(v, i32v);
      LV *lsb = B.CreateAnd(B.CreateLShr(u, 16), llvm::ConstantInt::get(i32v, 1));
      LV *r = B.CreateLShr(B.CreateAdd(B.CreateAdd(u, llvm::ConstantInt::get(i32v, 0x7fff)), lsb),
                           16);
      LV *nanr = B.CreateOr(B.CreateLShr(u, 16), llvm::ConstantInt::get(i32v, 0x40));
      return B.CreateTrunc(B.CreateSelect(B.CreateFCmpUNO(v, v), nanr, r), vec(B.getInt16Ty()));
    }
    return v;
  }
  /// Output storage bits -> accumulator type (for the bias).
  LV *widen_out(LV *raw) {
    if (out_dt_ == DT_FP16)
      return B.CreateFPExt(B.CreateBitCast(raw, vec(B.getHalfTy())), vec(B.getFloatTy()));
    if (out_dt_ == DT_BF16)
      return B.CreateBitCast(B.CreateShl(B.CreateZExt(raw, vec(B.getInt32Ty())), 16),
                             vec(B.getFloatTy()));
    return raw;
  }

  void epilogue(const std::vector<LV *> &res, LV *crow0, LV *nrows, LV *ncols, LV *bias) {
    llvm::Type *oe = storage(out_dt_);
    auto *ovt = vec(oe);
    std::vector<llvm::Constant *> l0, l1;
    for (unsigned j = 0; j < kLanes; ++j) {
      l0.push_back(B.getInt64(j));
      l1.push_back(B.getInt64(j + kLanes));
    }
    LV *nsplat = B.CreateVectorSplat(kLanes, ncols);
    LV *mask[2] = {B.CreateICmpSLT(llvm::ConstantVector::get(l0), nsplat),
                   B.CreateICmpSLT(llvm::ConstantVector::get(l1), nsplat)};
    LV *full = B.CreateICmpSGE(ncols, i64(kNR));
    LV *bv[2] = {nullptr, nullptr};
    if (bias)
      for (int h = 0; h < 2; ++h)
        bv[h] = widen_out(B.CreateMaskedLoad(ovt, B.CreateConstGEP1_64(oe, bias, h * kLanes),
                                             llvm::Align(1), mask[h],
                                             llvm::Constant::getNullValue(ovt)));
    for (int64_t i = 0; i < kMR; ++i) {
      if_then(B.CreateICmpSLT(i64(i), nrows), [&] {
        LV *row = B.CreateGEP(oe, crow0, B.CreateMul(i64(i), c_si_));
        LV *out[2];
        for (int h = 0; h < 2; ++h) {
          LV *v = res[static_cast<size_t>(i * 2 + h)];
          if (bias)
            v = int_ ? B.CreateAdd(v, bv[h]) : B.CreateFAdd(v, bv[h]);
          if (op_.relu)
            v = int_ ? B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v,
                                               llvm::Constant::getNullValue(v->getType()))
                     : B.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, v,
                                               llvm::Constant::getNullValue(v->getType()));
          out[h] = narrow(v);
        }
        auto *whole = llvm::BasicBlock::Create(C, "ep.full", env_.F);
        auto *tail = llvm::BasicBlock::Create(C, "ep.tail", env_.F);
        auto *join = llvm::BasicBlock::Create(C, "ep.join", env_.F);
        B.CreateCondBr(full, whole, tail);
        B.SetInsertPoint(whole);
        for (int h = 0; h < 2; ++h)
          B.CreateAlignedStore(out[h], B.CreateConstGEP1_64(oe, row, h * kLanes), llvm::Align(1));
        B.CreateBr(join);
        B.SetInsertPoint(tail);
        for (int h = 0; h < 2; ++h)
          B.CreateMaskedStore(out[h], B.CreateConstGEP1_64(oe, row, h * kLanes), llvm::Align(1),
                              mask[h]);
        B.CreateBr(join);
        B.SetInsertPoint(join);
      }, "ep.row");
    }
  }
};

} // namespace

void lower_matmul(MatmulEnv &env, const ir::Program &p, const ir::Op &op) {
  if (op.tile.cube.size() != 7)
    throw InternalError(op.where, "matmul", "no cube tile captured (a ptojit bug; PTO_DUMP=ir)");
  MatmulLowering(env, p, op).run();
}

} // namespace pto::codegen
