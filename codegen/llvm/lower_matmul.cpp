// lower_matmul.cpp - See lower_matmul.h. Numerics match interpreter_matmul.cpp: fp32 (or wrapping
// int32) accumulation, bias, relu, one rounding to the output dtype; only the summation order
// within a dot product differs (FMA, no intermediate rounding of the products).
#include "llvm/lower_matmul.h"

#include "pto/error.h"
#include "pto/runtime/abi.h"

#include "llvm/dtype_codec.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <functional>
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
  MatmulLowering(KernelBuilder &kb, const ir::Op &op)
      : kb_(kb), B(kb.builder()), p_(kb.program()), op_(op), va_(p_.value(op.inputs[0])),
        vb_(p_.value(op.inputs[1])), vc_(p_.value(op.outputs[0])) {}

  void run() {
    choose_blocks();
    alloc_scratch();
    bind_operands();
    // Batch dims (row-major over the output's valid batch region); size-1 operand dims broadcast.
    const size_t r = vc_.shape.size();
    for (size_t d = 0; d + 2 < r; ++d)
      bvalid_.push_back(clamp(vc_.valid[d], vc_.shape[d]));
    idx_.resize(r - 2);
    batch(0);
  }

private:
  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Program &p_;
  const ir::Op &op_;
  const ir::Value &va_, &vb_, &vc_;
  DataType in_dt_ = DT_FP32, out_dt_ = DT_FP32;
  bool int_ = false, avx2_ = false, has_bias_ = false;
  int64_t kg_ = 1; ///< k elements per packed group (2: int16 pairs for vpmaddwd)
  int64_t m_l1_ = 0, k_l1_ = 0, n_l1_ = 0; ///< block sizes: mL1 (rounded to kMR), kL1, nL1
  LV *Ap_ = nullptr, *Bp_ = nullptr, *Cbuf_ = nullptr, *bias_ = nullptr;
  Addr aa_, ab_, ac_;
  LV *M_ = nullptr, *N_ = nullptr, *K_ = nullptr;
  LV *a_si_ = nullptr, *a_sk_ = nullptr, *b_sk_ = nullptr, *b_sj_ = nullptr, *c_si_ = nullptr;
  std::vector<LV *> bvalid_, idx_; ///< valid batch extents, the current batch index

  // ---- setup ---------------------------------------------------------------------------------
  void choose_blocks() {
    in_dt_ = va_.dtype;
    out_dt_ = vc_.dtype;
    int_ = in_dt_ == DT_INT8;
    kg_ = int_ ? 2 : 1;
    avx2_ = kb_.isa() >= Isa::Avx2;
    const auto &cube = op_.tile.cube;
    m_l1_ = round_up(cube[1], kMR);
    k_l1_ = round_up(std::min(cube[3], cube[4]), kg_);
    n_l1_ = round_up(cube[6], kNR);
  }

  /// Scratch, once per call: packed A and B chunks and the partial-sum block (at most
  /// kMaxCubeScratchBytes plus the rounding above: set_cube_tile_shapes bounds the blocks). A
  /// refused allocation (its RuntimeError recorded) returns before the first write.
  void alloc_scratch() {
    Ap_ = alloc(m_l1_ * k_l1_ * pack_bytes());
    Bp_ = alloc(n_l1_ * k_l1_ * pack_bytes());
    Cbuf_ = alloc(m_l1_ * n_l1_ * 4);
    return_if_null({Ap_, Bp_, Cbuf_});
  }

  /// Addresses of the operands, the valid M, N, K and the strides the loops walk.
  void bind_operands() {
    const size_t r = vc_.shape.size();
    aa_ = kb_.addr(va_.id);
    ab_ = kb_.addr(vb_.id);
    ac_ = kb_.addr(vc_.id);
    has_bias_ = op_.inputs.size() == 3;
    if (has_bias_)
      bias_ = kb_.addr(op_.inputs[2]).base;
    const size_t am = op_.a_trans ? r - 1 : r - 2, ak = op_.a_trans ? r - 2 : r - 1;
    const size_t bk = op_.b_trans ? r - 1 : r - 2, bn = op_.b_trans ? r - 2 : r - 1;
    M_ = clamp(vc_.valid[r - 2], vc_.shape[r - 2]);
    N_ = clamp(vc_.valid[r - 1], vc_.shape[r - 1]);
    K_ = kb_.smin(clamp(va_.valid[ak], va_.shape[ak]), clamp(vb_.valid[bk], vb_.shape[bk]));
    a_si_ = aa_.strides[am];
    a_sk_ = aa_.strides[ak];
    b_sk_ = ab_.strides[bk];
    b_sj_ = ab_.strides[bn];
    c_si_ = ac_.strides[r - 2];
  }

  /// A valid extent clamped to [0, dim].
  LV *clamp(const SymbolicScalar &valid, const SymbolicScalar &dim) {
    return kb_.smin(kb_.smax(kb_.sym(valid), kb_.i64(0)), kb_.sym(dim));
  }

  /// The batch loops from dim `d`, then one GEMM per batch element.
  void batch(size_t d) {
    const size_t r = vc_.shape.size();
    if (d + 2 < r) {
      kb_.for_loop(
          kb_.i64(0), bvalid_[d], kb_.i64(1),
          [&](LV *i) {
            idx_[d] = i;
            batch(d + 1);
          },
          "mm.batch");
      return;
    }
    LV *oa = kb_.i64(0), *ob = kb_.i64(0), *oc = kb_.i64(0);
    for (size_t e = 0; e + 2 < r; ++e) {
      auto one = [&](const ir::Value &v) {
        return v.shape[e].is_concrete() && v.shape[e].concrete() == 1;
      };
      if (!one(va_))
        oa = B.CreateAdd(oa, B.CreateMul(idx_[e], aa_.strides[e]));
      if (!one(vb_))
        ob = B.CreateAdd(ob, B.CreateMul(idx_[e], ab_.strides[e]));
      oc = B.CreateAdd(oc, B.CreateMul(idx_[e], ac_.strides[e]));
    }
    gemm(B.CreateGEP(storage_type(B, in_dt_), aa_.base, oa),
         B.CreateGEP(storage_type(B, in_dt_), ab_.base, ob),
         B.CreateGEP(storage_type(B, out_dt_), ac_.base, oc));
  }

  // ---- helpers -------------------------------------------------------------------------------
  int64_t pack_bytes() const { return int_ ? 2 : 4; }
  llvm::Type *pack_elem() { return int_ ? B.getInt16Ty() : B.getFloatTy(); }
  llvm::Type *acc_elem() { return int_ ? B.getInt32Ty() : B.getFloatTy(); }
  llvm::VectorType *vec(llvm::Type *e, unsigned n = kLanes) {
    return llvm::FixedVectorType::get(e, n);
  }
  /// Scratch of `bytes`, allocated in the entry block (once per call). Site -1: a failure points
  /// at the user's call of the kernel.
  LV *alloc(int64_t bytes) {
    return kb_.call_rt_in_entry(RtFn::Alloc, {kb_.ctx_arg(), kb_.i64(bytes), B.getInt32(-1)});
  }

  /// Returns PTO_ERR from the kernel when any of `ptrs` is null.
  void return_if_null(std::initializer_list<LV *> ptrs) {
    LV *bad = B.getFalse();
    for (LV *p : ptrs)
      bad = B.CreateOr(bad, B.CreateIsNull(p));
    auto *fail = kb_.block("mm.nomem");
    auto *cont = kb_.block("mm.mem");
    B.CreateCondBr(bad, fail, cont);
    B.SetInsertPoint(fail);
    B.CreateRet(B.getInt32(PTO_ERR));
    B.SetInsertPoint(cont);
  }

  /// Storage element(s) of the inputs -> the pack type: fp32 (int16 for int8).
  LV *widen_in(LV *raw) {
    if (in_dt_ == DT_INT8)
      return B.CreateSExt(raw, raw->getType()->getWithNewType(B.getInt16Ty()));
    return widen(B, raw, in_dt_);
  }

  /// One input element at `ptr` -> the pack type. Widened as a <1 x T> vector: the O3 output of
  /// the packing loops depends on that form (a scalar widen there changes the bf16 kernels' code).
  LV *load_scalar(LV *ptr) {
    LV *raw = B.CreateLoad(storage_type(B, in_dt_), ptr);
    LV *v = B.CreateInsertElement(llvm::PoisonValue::get(vec(storage_type(B, in_dt_), 1)), raw,
                                  uint64_t{0});
    return B.CreateExtractElement(widen_in(v), uint64_t{0});
  }

  // ---- packing -------------------------------------------------------------------------------
  /// The offset in a packed panel `width` wide of element (k, lane): [k / kg][lane][k % kg].
  LV *packed_index(LV *k, LV *lane, int64_t width) {
    return B.CreateAdd(B.CreateMul(B.CreateSDiv(k, kb_.i64(kg_)), kb_.i64(width * kg_)),
                       B.CreateAdd(B.CreateMul(lane, kb_.i64(kg_)), B.CreateSRem(k, kb_.i64(kg_))));
  }

  /// The element at ptr() in the pack type when `live`, else 0 (nothing is loaded), in blocks
  /// `prefix`.ld / .z / .j.
  LV *load_or_zero(LV *live, const std::function<LV *()> &ptr, const std::string &prefix) {
    llvm::Type *pe = pack_elem();
    LV *v = nullptr;
    llvm::BasicBlock *ld = nullptr, *z = nullptr;
    kb_.if_else(
        live,
        [&] {
          ld = B.GetInsertBlock();
          v = load_scalar(ptr());
        },
        [&] { z = B.GetInsertBlock(); }, prefix + ".ld", prefix + ".z", prefix + ".j");
    auto *phi = B.CreatePHI(pe, 2);
    phi->addIncoming(v, ld);
    phi->addIncoming(llvm::Constant::getNullValue(pe), z);
    return phi;
  }

  /// Packs one row of A (one column of B) into lane `lane` of a panel `width` wide at `dst0`:
  /// element k from src + k * `k_stride`, zero where `live_line` is false or k >= kc, for
  /// k < kcp (kc rounded up to whole k groups). `prefix` and `loop` name the blocks.
  void pack_line(LV *dst0, LV *lane, int64_t width, LV *live_line, LV *src, LV *k_stride, LV *kc,
                 LV *kcp, const char *prefix, const char *loop) {
    llvm::Type *se = storage_type(B, in_dt_), *pe = pack_elem();
    kb_.for_loop(
        kb_.i64(0), kcp, kb_.i64(1),
        [&](LV *k) {
          LV *dst = B.CreateGEP(pe, dst0, packed_index(k, lane, width));
          LV *live = B.CreateAnd(live_line, B.CreateICmpSLT(k, kc));
          LV *v = load_or_zero(
              live, [&] { return B.CreateGEP(se, src, B.CreateMul(k, k_stride)); }, prefix);
          B.CreateStore(v, dst);
        },
        loop);
  }

  /// Ap[panel][k / kg][row in panel][k % kg] = A(i0 + row, p0 + k), zero past `rows` or `kc`.
  void pack_a(LV *a, LV *i0, LV *rows, LV *p0, LV *kc, LV *kcp) {
    llvm::Type *se = storage_type(B, in_dt_), *pe = pack_elem();
    LV *rows_p =
        B.CreateMul(B.CreateSDiv(B.CreateAdd(rows, kb_.i64(kMR - 1)), kb_.i64(kMR)), kb_.i64(kMR));
    kb_.for_loop(
        kb_.i64(0), rows_p, kb_.i64(1),
        [&](LV *i) {
          LV *panel = B.CreateSDiv(i, kb_.i64(kMR)), *ip = B.CreateSRem(i, kb_.i64(kMR));
          LV *dst0 = B.CreateGEP(pe, Ap_, B.CreateMul(panel, B.CreateMul(kcp, kb_.i64(kMR))));
          LV *live_row = B.CreateICmpSLT(i, rows);
          LV *src_row = B.CreateGEP(
              se, a, B.CreateAdd(B.CreateMul(B.CreateAdd(i0, i), a_si_), B.CreateMul(p0, a_sk_)));
          pack_line(dst0, ip, kMR, live_row, src_row, a_sk_, kc, kcp, "pa", "pa.k");
        },
        "pa.i");
  }

  /// Bp[panel][k / kg][col in panel][k % kg] = B(p0 + k, j0 + col), zero past `cols` or `kc`.
  void pack_b(LV *b, LV *p0, LV *kc, LV *kcp, LV *j0, LV *cols) {
    llvm::Type *se = storage_type(B, in_dt_), *pe = pack_elem();
    LV *panels = B.CreateSDiv(B.CreateAdd(cols, kb_.i64(kNR - 1)), kb_.i64(kNR));
    LV *origin = B.CreateGEP(se, b, B.CreateAdd(B.CreateMul(p0, b_sk_), B.CreateMul(j0, b_sj_)));
    kb_.for_loop(
        kb_.i64(0), panels, kb_.i64(1),
        [&](LV *jp) {
          LV *dst0 = B.CreateGEP(pe, Bp_, B.CreateMul(jp, B.CreateMul(kcp, kb_.i64(kNR))));
          LV *c0 = B.CreateMul(jp, kb_.i64(kNR));
          LV *ncols = kb_.smin(B.CreateSub(cols, c0), kb_.i64(kNR));
          LV *src_panel = B.CreateGEP(se, origin, B.CreateMul(c0, b_sj_));
          if (op_.b_trans)
            pack_b_columns(src_panel, dst0, ncols, kc, kcp);
          else
            pack_b_rows(src_panel, dst0, ncols, kc, kcp);
        },
        "pb.panel");
  }

  /// One panel of B from rows of 16 contiguous elements: one masked vector load and widen per k.
  void pack_b_rows(LV *src_panel, LV *dst0, LV *ncols, LV *kc, LV *kcp) {
    llvm::Type *se = storage_type(B, in_dt_), *pe = pack_elem();
    LV *lane = llvm::ConstantVector::get([&] {
      std::vector<llvm::Constant *> l;
      for (int64_t j = 0; j < kNR; ++j)
        l.push_back(B.getInt64(static_cast<uint64_t>(j)));
      return l;
    }());
    LV *mask = B.CreateICmpSLT(lane, B.CreateVectorSplat(kNR, ncols));
    auto *svt = vec(se, kNR);
    kb_.for_loop(
        kb_.i64(0), kcp, kb_.i64(1),
        [&](LV *k) {
          LV *live = B.CreateICmpSLT(k, kc);
          LV *m = B.CreateAnd(mask, B.CreateVectorSplat(kNR, live));
          LV *raw = B.CreateMaskedLoad(svt, B.CreateGEP(se, src_panel, B.CreateMul(k, b_sk_)),
                                       llvm::Align(1), m, llvm::Constant::getNullValue(svt));
          LV *w = widen_in(raw);
          if (kg_ == 1) {
            B.CreateStore(w, B.CreateGEP(pe, dst0, B.CreateMul(k, kb_.i64(kNR))));
            return;
          }
          // Interleave into pairs: element (k, j) at (k / 2) * 32 + j * 2 + k % 2.
          LV *base = B.CreateAdd(B.CreateMul(B.CreateSDiv(k, kb_.i64(2)), kb_.i64(kNR * 2)),
                                 B.CreateSRem(k, kb_.i64(2)));
          for (int64_t j = 0; j < kNR; ++j)
            B.CreateStore(B.CreateExtractElement(w, static_cast<uint64_t>(j)),
                          B.CreateGEP(pe, dst0, B.CreateAdd(base, kb_.i64(j * 2))));
        },
        "pb.k");
  }

  /// One panel of transposed B: B(k, j) is contiguous along k; walk columns, then k.
  void pack_b_columns(LV *src_panel, LV *dst0, LV *ncols, LV *kc, LV *kcp) {
    llvm::Type *se = storage_type(B, in_dt_);
    kb_.for_loop(
        kb_.i64(0), kb_.i64(kNR), kb_.i64(1),
        [&](LV *j) {
          LV *live_col = B.CreateICmpSLT(j, ncols);
          LV *src_col = B.CreateGEP(se, src_panel, B.CreateMul(j, b_sj_));
          pack_line(dst0, j, kNR, live_col, src_col, b_sk_, kc, kcp, "pb", "pbt.k");
        },
        "pbt.j");
  }

  // ---- the blocked loops ---------------------------------------------------------------------
  void gemm(LV *a, LV *b, LV *c) {
    // At least one K chunk, so that K == 0 still writes bias (or zeros).
    LV *chunks =
        kb_.smax(B.CreateSDiv(B.CreateAdd(K_, kb_.i64(k_l1_ - 1)), kb_.i64(k_l1_)), kb_.i64(1));
    kb_.for_loop(
        kb_.i64(0), N_, kb_.i64(n_l1_),
        [&](LV *jc) {
          LV *nc = kb_.smin(kb_.i64(n_l1_), B.CreateSub(N_, jc));
          kb_.for_loop(
              kb_.i64(0), M_, kb_.i64(m_l1_),
              [&](LV *ic) {
                LV *mc = kb_.smin(kb_.i64(m_l1_), B.CreateSub(M_, ic));
                kb_.for_loop(
                    kb_.i64(0), chunks, kb_.i64(1),
                    [&](LV *q) {
                      LV *pc = B.CreateMul(q, kb_.i64(k_l1_));
                      LV *kc = kb_.smax(kb_.smin(kb_.i64(k_l1_), B.CreateSub(K_, pc)), kb_.i64(0));
                      LV *kcp =
                          B.CreateMul(B.CreateSDiv(B.CreateAdd(kc, kb_.i64(kg_ - 1)), kb_.i64(kg_)),
                                      kb_.i64(kg_));
                      LV *first = B.CreateICmpEQ(q, kb_.i64(0));
                      LV *last = B.CreateICmpEQ(q, B.CreateSub(chunks, kb_.i64(1)));
                      pack_a(a, ic, mc, pc, kc, kcp);
                      pack_b(b, pc, kc, kcp, jc, nc);
                      register_blocks(c, ic, jc, mc, nc, kcp, first, last);
                    },
                    "mm.pc");
              },
              "mm.ic");
        },
        "mm.jc");
  }

  /// The register blocks of one (mc x nc) block of C over one packed K chunk.
  void register_blocks(LV *c, LV *ic, LV *jc, LV *mc, LV *nc, LV *kcp, LV *first, LV *last) {
    kb_.for_loop(
        kb_.i64(0), nc, kb_.i64(kNR),
        [&](LV *jr) {
          LV *bp = B.CreateGEP(pack_elem(), Bp_, B.CreateMul(jr, kcp));
          LV *ncols = kb_.smin(kb_.i64(kNR), B.CreateSub(nc, jr));
          kb_.for_loop(
              kb_.i64(0), mc, kb_.i64(kMR),
              [&](LV *ir) {
                LV *ap = B.CreateGEP(pack_elem(), Ap_, B.CreateMul(ir, kcp));
                LV *nrows = kb_.smin(kb_.i64(kMR), B.CreateSub(mc, ir));
                LV *cbuf = B.CreateGEP(B.getFloatTy(), Cbuf_,
                                       B.CreateAdd(B.CreateMul(ir, kb_.i64(n_l1_)), jr));
                LV *crow0 = B.CreateGEP(
                    storage_type(B, out_dt_), c,
                    B.CreateAdd(B.CreateMul(B.CreateAdd(ic, ir), c_si_), B.CreateAdd(jc, jr)));
                LV *bias = has_bias_
                               ? B.CreateGEP(storage_type(B, out_dt_), bias_, B.CreateAdd(jc, jr))
                               : nullptr;
                micro_kernel(ap, bp, kcp, cbuf, first, last, crow0, nrows, ncols, bias);
              },
              "mm.ir");
        },
        "mm.jr");
  }

  // ---- the micro-kernel ----------------------------------------------------------------------
  /// C[6 x 16] (+)= Ap[6 x kcp] * Bp[kcp x 16]; then to Cbuf, or (last chunk) the epilogue.
  void micro_kernel(LV *ap, LV *bp, LV *kcp, LV *cbuf, LV *first, LV *last, LV *crow0, LV *nrows,
                    LV *ncols, LV *bias) {
    std::vector<LV *> res = k_loop(ap, bp, kcp, load_accumulators(cbuf, first));
    auto *partial = kb_.block("uk.partial");
    auto *epi = kb_.block("uk.epilogue");
    auto *done = kb_.block("uk.done");
    B.CreateCondBr(last, epi, partial);
    B.SetInsertPoint(partial);
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h)
        B.CreateAlignedStore(res[static_cast<size_t>(i * 2 + h)],
                             B.CreateGEP(acc_elem(), cbuf, kb_.i64(i * n_l1_ + h * 8)),
                             llvm::Align(4));
    B.CreateBr(done);
    B.SetInsertPoint(epi);
    epilogue(res, crow0, nrows, ncols, bias);
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  /// Accumulators: zero on the first chunk, else the partial sums (Cbuf is always allocated, so
  /// the load is in bounds; its value is discarded on the first chunk).
  std::vector<LV *> load_accumulators(LV *cbuf, LV *first) {
    llvm::Type *ae = acc_elem();
    auto *avt = vec(ae);
    std::vector<LV *> acc(static_cast<size_t>(kMR * 2));
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        LV *ld = B.CreateAlignedLoad(avt, B.CreateGEP(ae, cbuf, kb_.i64(i * n_l1_ + h * 8)),
                                     llvm::Align(4));
        acc[static_cast<size_t>(i * 2 + h)] =
            B.CreateSelect(first, llvm::Constant::getNullValue(avt), ld);
      }
    return acc;
  }

  /// The k loop over the packed chunk, the accumulators carried in phis; returns their values
  /// at the exit.
  std::vector<LV *> k_loop(LV *ap, LV *bp, LV *kcp, const std::vector<LV *> &acc) {
    LV *steps = B.CreateSDiv(kcp, kb_.i64(kg_));
    auto *pre = B.GetInsertBlock();
    auto *head = kb_.block("uk.head");
    auto *body = kb_.block("uk.body");
    auto *exit = kb_.block("uk.exit");
    B.CreateBr(head);
    B.SetInsertPoint(head);
    auto *kphi = B.CreatePHI(B.getInt64Ty(), 2, "uk.k");
    kphi->addIncoming(kb_.i64(0), pre);
    std::vector<llvm::PHINode *> phis;
    for (LV *v : acc) {
      auto *ph = B.CreatePHI(vec(acc_elem()), 2);
      ph->addIncoming(v, pre);
      phis.push_back(ph);
    }
    B.CreateCondBr(B.CreateICmpSLT(kphi, steps), body, exit);
    B.SetInsertPoint(body);
    std::vector<LV *> next(phis.begin(), phis.end());
    if (!int_)
      fma_step(ap, bp, kphi, next);
    else
      madd_step(ap, bp, kphi, next);
    LV *knext = B.CreateAdd(kphi, kb_.i64(1));
    auto *latch = B.GetInsertBlock();
    kphi->addIncoming(knext, latch);
    for (size_t s = 0; s < phis.size(); ++s)
      phis[s]->addIncoming(next[s], latch);
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    return std::vector<LV *>(phis.begin(), phis.end());
  }

  /// One k of the fp32 micro-kernel: per row one broadcast of A and two FMAs.
  void fma_step(LV *ap, LV *bp, LV *k, std::vector<LV *> &acc) {
    llvm::Type *f32 = B.getFloatTy();
    auto *vt = vec(f32);
    LV *brow = B.CreateGEP(f32, bp, B.CreateMul(k, kb_.i64(kNR)));
    LV *b0 = B.CreateAlignedLoad(vt, brow, llvm::Align(4));
    LV *b1 = B.CreateAlignedLoad(vt, B.CreateConstGEP1_64(f32, brow, 8), llvm::Align(4));
    LV *arow = B.CreateGEP(f32, ap, B.CreateMul(k, kb_.i64(kMR)));
    for (int64_t i = 0; i < kMR; ++i) {
      LV *av = B.CreateVectorSplat(
          kLanes, B.CreateLoad(f32, B.CreateConstGEP1_64(f32, arow, static_cast<uint64_t>(i))));
      for (int64_t h = 0; h < 2; ++h) {
        auto s = static_cast<size_t>(i * 2 + h);
        acc[s] = B.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {av, h ? b1 : b0, acc[s]});
      }
    }
  }

  /// One k pair of the int8 micro-kernel: B holds (k, k+1) int16 pairs per column, A one pair
  /// per row (as an i32).
  void madd_step(LV *ap, LV *bp, LV *k, std::vector<LV *> &acc) {
    llvm::Type *i16 = B.getInt16Ty();
    auto *v16 = vec(i16, 16);
    LV *brow = B.CreateGEP(i16, bp, B.CreateMul(k, kb_.i64(kNR * 2)));
    LV *b0 = B.CreateAlignedLoad(v16, brow, llvm::Align(2));
    LV *b1 = B.CreateAlignedLoad(v16, B.CreateConstGEP1_64(i16, brow, 16), llvm::Align(2));
    LV *arow = B.CreateGEP(i16, ap, B.CreateMul(k, kb_.i64(kMR * 2)));
    for (int64_t i = 0; i < kMR; ++i) {
      LV *pair = B.CreateAlignedLoad(B.getInt32Ty(),
                                     B.CreateConstGEP1_64(i16, arow, static_cast<uint64_t>(i * 2)),
                                     llvm::Align(2));
      LV *av = B.CreateBitCast(B.CreateVectorSplat(kLanes, pair), v16);
      for (int64_t h = 0; h < 2; ++h) {
        auto s = static_cast<size_t>(i * 2 + h);
        acc[s] = B.CreateAdd(acc[s], madd_pairs(av, h ? b1 : b0));
      }
    }
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

  // ---- the epilogue --------------------------------------------------------------------------
  /// The last chunk: bias, relu and the rounding to the output dtype, stored row by row (rows
  /// past `nrows` skipped, the column tail masked).
  void epilogue(const std::vector<LV *> &res, LV *crow0, LV *nrows, LV *ncols, LV *bias) {
    llvm::Type *oe = storage_type(B, out_dt_);
    auto *ovt = vec(oe);
    std::vector<llvm::Constant *> l0, l1;
    for (unsigned j = 0; j < kLanes; ++j) {
      l0.push_back(B.getInt64(j));
      l1.push_back(B.getInt64(j + kLanes));
    }
    LV *nsplat = B.CreateVectorSplat(kLanes, ncols);
    LV *mask[2] = {B.CreateICmpSLT(llvm::ConstantVector::get(l0), nsplat),
                   B.CreateICmpSLT(llvm::ConstantVector::get(l1), nsplat)};
    LV *full = B.CreateICmpSGE(ncols, kb_.i64(kNR));
    LV *bv[2] = {nullptr, nullptr};
    if (bias)
      for (int h = 0; h < 2; ++h)
        bv[h] =
            widen(B,
                  B.CreateMaskedLoad(ovt, B.CreateConstGEP1_64(oe, bias, h * kLanes),
                                     llvm::Align(1), mask[h], llvm::Constant::getNullValue(ovt)),
                  out_dt_);
    for (int64_t i = 0; i < kMR; ++i) {
      kb_.if_then(
          B.CreateICmpSLT(kb_.i64(i), nrows),
          [&] {
            LV *row = B.CreateGEP(oe, crow0, B.CreateMul(kb_.i64(i), c_si_));
            LV *out[2];
            for (int h = 0; h < 2; ++h)
              out[h] = finish(res[static_cast<size_t>(i * 2 + h)], bv[h]);
            kb_.if_else(
                full,
                [&] {
                  for (int h = 0; h < 2; ++h)
                    B.CreateAlignedStore(out[h], B.CreateConstGEP1_64(oe, row, h * kLanes),
                                         llvm::Align(1));
                },
                [&] {
                  for (int h = 0; h < 2; ++h)
                    B.CreateMaskedStore(out[h], B.CreateConstGEP1_64(oe, row, h * kLanes),
                                        llvm::Align(1), mask[h]);
                },
                "ep.full", "ep.tail", "ep.join");
          },
          "ep.row.then", "ep.row.end");
    }
  }

  /// An accumulator vector plus the bias vector `bias` (null: none), relu'd when the op asks,
  /// as output storage bits.
  LV *finish(LV *v, LV *bias) {
    if (bias)
      v = int_ ? B.CreateAdd(v, bias) : B.CreateFAdd(v, bias);
    if (op_.relu) {
      LV *zero = llvm::Constant::getNullValue(v->getType());
      v = int_ ? B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, zero)
               : B.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, v, zero);
    }
    return narrow(B, v, out_dt_);
  }
};

} // namespace

void lower_matmul(KernelBuilder &kb, const ir::Op &op) {
  if (op.tile.cube.size() != 7)
    throw InternalError(op.where, "matmul", "no cube tile captured (a ptojit bug; PTO_DUMP=ir)");
  MatmulLowering(kb, op).run();
}

} // namespace pto::codegen
