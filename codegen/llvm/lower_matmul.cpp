// lower_matmul.cpp - See lower_matmul.h. Numerics match interpreter_matmul.cpp: fp32 (or wrapping
// int32) accumulation, bias, relu, one rounding to the output dtype; only the summation order
// within a dot product differs (FMA, no intermediate rounding of the products). fp32 partial
// sums cross K chunks unrounded, so the blocking does not change a result. vdpbf16ps (bf16 where
// the target has AVX512_BF16 and no AMX, see matmul_geometry) adds each k pair's products to the
// lane in the order k+1, k and treats fp32 denormals (inputs and results) as zero, as Intel
// documents it.
#include "llvm/lower_matmul.h"

#include "pto/error.h"
#include "pto/runtime/abi.h"

#include "llvm/dtype_codec.h"
#include "llvm/host_target.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace pto::codegen {

using LV = llvm::Value;

namespace {

/// Copies of the per-worker scratch at most (so at most this many threads share one matmul).
constexpr int32_t kMaxCopies = 64;

} // namespace

namespace {

class MatmulLowering {
public:
  MatmulLowering(KernelBuilder &kb, const ir::Op &op, std::vector<ParRegion> &regions)
      : kb_(kb), B(kb.builder()), p_(kb.program()), op_(op), va_(p_.value(op.inputs[0])),
        vb_(p_.value(op.inputs[1])), vc_(p_.value(op.outputs[0])), regions_(regions) {}

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
  std::vector<ParRegion> &regions_;
  DataType in_dt_ = DT_FP32, out_dt_ = DT_FP32;
  MatmulGeometry g_;
  unsigned W = 8;
  bool int_ = false, has_bias_ = false;
  bool direct_ = true; ///< fp32/int32 output: partial sums live in C; else in Cbuf_
  LV *Ap_ = nullptr, *Bp_ = nullptr, *Cbuf_ = nullptr, *bias_ = nullptr;
  /// Per-worker scratch (the row blocks on the pool): copies_ (i32) copies, `stride_` bytes apart.
  LV *copies_ = nullptr;
  std::map<LV *, LV *> stride_;
  bool parallel_ = false; ///< the row blocks may run on the pool (not known to be too small)
  Addr aa_, ab_, ac_;
  LV *M_ = nullptr, *N_ = nullptr, *K_ = nullptr;
  LV *a_si_ = nullptr, *a_sk_ = nullptr, *b_sk_ = nullptr, *b_sj_ = nullptr, *c_si_ = nullptr;
  std::vector<LV *> bvalid_, idx_; ///< valid batch extents, the current batch index

  // ---- setup ---------------------------------------------------------------------------------
  /// A concrete extent of `v`'s dim `d`, or 0.
  static int64_t concrete(const ir::Value &v, size_t d) {
    return v.shape[d].is_concrete() ? v.shape[d].concrete() : 0;
  }

  void choose_blocks() {
    in_dt_ = va_.dtype;
    out_dt_ = vc_.dtype;
    int_ = in_dt_ == DT_INT8;
    direct_ = out_dt_ == DT_FP32 || out_dt_ == DT_INT32;
    const size_t r = vc_.shape.size();
    g_ = matmul_geometry(in_dt_, concrete(vc_, r - 2), concrete(va_, op_.a_trans ? r - 2 : r - 1),
                         concrete(vc_, r - 1));
    W = g_.lanes;
    if (W == 16) { // zmm vectors stay whole even where the CPU prefers 256-bit code
      llvm::Function *f = kb_.function();
      unsigned have = 0;
      if (f->hasFnAttribute("min-legal-vector-width"))
        f->getFnAttribute("min-legal-vector-width").getValueAsString().getAsInteger(10, have);
      if (have < 512)
        f->addFnAttr("min-legal-vector-width", "512");
    }
  }

  /// Scratch, once per call: the packed A and B blocks and (fp16/bf16 outputs) the partial-sum
  /// block, a few MiB at most (matmul_geometry), one copy per pool worker of what a row block
  /// writes (A's panels; with fp16/bf16 outputs B's and the partial sums too: their B block is
  /// packed per row block), at most kMaxCopies copies, in the entry block (site -1: a failure
  /// points at the user's call of the kernel). pto_rt_alloc keeps freed blocks, so a
  /// steady state of calls allocates nothing. A refused allocation (its RuntimeError recorded)
  /// returns before the first write.
  void alloc_scratch() {
    parallel_ = !too_small_to_split();
    llvm::IRBuilder<> eb(kb_.function()->getEntryBlock().getTerminator());
    copies_ = parallel_ ? eb.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                                   kb_.call_rt_in_entry(RtFn::Workers, {}),
                                                   eb.getInt32(kMaxCopies))
                        : eb.getInt32(1);
    LV *n = eb.CreateZExt(copies_, eb.getInt64Ty());
    auto buffer = [&](int64_t bytes, bool per_worker) {
      const int64_t stride = (bytes + 63) / 64 * 64;
      LV *buf = kb_.call_rt_in_entry(
          RtFn::Alloc,
          {kb_.ctx_arg(), per_worker ? eb.CreateMul(n, eb.getInt64(stride)) : eb.getInt64(stride),
           eb.getInt32(-1)});
      if (per_worker)
        stride_[buf] = kb_.i64(stride);
      return buf;
    };
    Ap_ = buffer(g_.mc * g_.kcu * 4, true);
    Bp_ = buffer(g_.nc * g_.kcu * 4, !direct_);
    Cbuf_ = direct_ ? Ap_ : buffer(g_.mc * g_.nc * 4, true);
    return_if_null({Ap_, Bp_, Cbuf_});
  }

  /// Whether M, N and K are known at compile time to make too little work to split (fewer than
  /// two ranges of kMatmulGrainMacs): then the row blocks are not outlined (no call, no
  /// compile cost) and the scratch has one copy.
  [[nodiscard]] bool too_small_to_split() const {
    const size_t r = vc_.shape.size();
    const int64_t m = concrete(vc_, r - 2), n = concrete(vc_, r - 1),
                  k = concrete(va_, op_.a_trans ? r - 2 : r - 1);
    if (m == 0 || n == 0 || k == 0)
      return false;
    if (m <= g_.mr)
      return true;
    const auto macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    return macs < 2.0 * static_cast<double>(kMatmulGrainMacs);
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
  llvm::Type *i32() { return B.getInt32Ty(); }
  llvm::Type *acc_elem() { return int_ ? B.getInt32Ty() : B.getFloatTy(); }
  llvm::FixedVectorType *vec(llvm::Type *e, unsigned n) { return llvm::FixedVectorType::get(e, n); }
  /// <0, 1, ..., n-1> as i64.
  LV *iota(unsigned n, int64_t from = 0) {
    std::vector<llvm::Constant *> l;
    for (unsigned j = 0; j < n; ++j)
      l.push_back(B.getInt64(static_cast<uint64_t>(from + j)));
    return llvm::ConstantVector::get(l);
  }
  /// Lanes j < `n` of an n-wide mask: (from + j) < limit.
  LV *lanes_below(unsigned n, LV *from, LV *limit) {
    return B.CreateICmpSLT(B.CreateAdd(iota(n), B.CreateVectorSplat(n, from)),
                           B.CreateVectorSplat(n, limit));
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

  /// `n` input elements from `base` at element stride `stride`, lanes off in `mask` zero (and
  /// not read): a masked load where the stride is 1, else a masked gather.
  LV *load_run(LV *base, LV *stride, unsigned n, LV *mask) {
    llvm::Type *se = storage_type(B, in_dt_);
    auto *vt = vec(se, n);
    LV *zero = llvm::Constant::getNullValue(vt);
    if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(stride); c && c->isOne())
      return B.CreateMaskedLoad(vt, base, llvm::Align(1), mask, zero);
    LV *ptrs = B.CreateGEP(se, base, B.CreateMul(iota(n), B.CreateVectorSplat(n, stride)));
    return B.CreateMaskedGather(vt, ptrs, llvm::Align(1), mask, zero);
  }

  /// Input storage elements -> 16-bit pair halves: int8 sign-extended, bf16 as its bits.
  LV *to_i16(LV *raw) {
    return int_ ? B.CreateSExt(raw, raw->getType()->getWithNewType(B.getInt16Ty())) : raw;
  }

  /// n * kg input storage elements -> n 32-bit packed units (fp32 widened, or 16-bit pairs).
  LV *to_units(LV *raw, unsigned n) {
    LV *w = g_.kg == 1 ? widen(B, raw, in_dt_) : to_i16(raw);
    return B.CreateBitCast(w, vec(i32(), n));
  }

  // ---- packing -------------------------------------------------------------------------------
  /// Packs `lines` lines (rows of A, or columns of transposed B) whose K runs along memory into
  /// panels `width` lines wide at `dst`: unit u of line l of panel p at
  /// dst[(p * kcu + u) * width + l]. Line l starts at src + l * line_stride; its k elements are
  /// k_stride apart, those past `kc` and the lines past `lines` are zero. Per W units of k, W
  /// lines are loaded as vectors and transposed in registers.
  void pack_transposed(LV *dst, int64_t width, LV *lines, LV *src, LV *line_stride, LV *k_stride,
                       LV *kc, LV *kcu, const char *name) {
    llvm::Type *se = storage_type(B, in_dt_);
    const auto nk = static_cast<unsigned>(W * g_.kg);
    LV *panels = B.CreateSDiv(B.CreateAdd(lines, kb_.i64(width - 1)), kb_.i64(width));
    kb_.for_loop(
        kb_.i64(0), panels, kb_.i64(1),
        [&](LV *p) {
          LV *pdst = B.CreateGEP(i32(), dst, B.CreateMul(p, B.CreateMul(kcu, kb_.i64(width))));
          kb_.for_loop(
              kb_.i64(0), kcu, kb_.i64(W),
              [&](LV *u0) {
                LV *k0 = B.CreateMul(u0, kb_.i64(g_.kg));
                LV *kmask = lanes_below(nk, k0, kc);
                LV *full = B.CreateICmpSLE(B.CreateAdd(u0, kb_.i64(W)), kcu);
                for (int64_t g0 = 0; g0 < width; g0 += W) {
                  const auto R = static_cast<unsigned>(std::min<int64_t>(W, width - g0));
                  std::vector<LV *> rows(W, llvm::Constant::getNullValue(vec(i32(), W)));
                  for (unsigned t = 0; t < R; ++t) {
                    LV *line = B.CreateAdd(B.CreateMul(p, kb_.i64(width)), kb_.i64(g0 + t));
                    LV *live = B.CreateICmpSLT(line, lines);
                    LV *at = B.CreateGEP(
                        se, src,
                        B.CreateAdd(B.CreateMul(line, line_stride), B.CreateMul(k0, k_stride)));
                    LV *m = B.CreateAnd(kmask, B.CreateVectorSplat(nk, live));
                    rows[t] = to_units(load_run(at, k_stride, nk, m), W);
                  }
                  std::vector<LV *> cols = transpose(rows);
                  auto store = [&](unsigned t) {
                    LV *at = B.CreateGEP(
                        i32(), pdst,
                        B.CreateAdd(B.CreateMul(B.CreateAdd(u0, kb_.i64(t)), kb_.i64(width)),
                                    kb_.i64(g0)));
                    store_lanes(cols[t], at, R);
                  };
                  kb_.if_else(
                      full,
                      [&] {
                        for (unsigned t = 0; t < W; ++t)
                          store(t);
                      },
                      [&] {
                        for (unsigned t = 0; t < W; ++t)
                          kb_.if_then(
                              B.CreateICmpSLT(B.CreateAdd(u0, kb_.i64(t)), kcu), [&] { store(t); },
                              std::string(name) + ".tail", std::string(name) + ".tail.end");
                      },
                      std::string(name) + ".full", std::string(name) + ".part",
                      std::string(name) + ".join");
                }
              },
              (std::string(name) + ".u").c_str());
        },
        (std::string(name) + ".panel").c_str());
  }

  /// The transpose of W vectors of W lanes (row r lane c -> row c lane r): log2(W) rounds of
  /// interleaving row r with row r + W/2.
  std::vector<LV *> transpose(std::vector<LV *> rows) {
    std::vector<int> lo, hi;
    for (unsigned j = 0; j < W / 2; ++j) {
      lo.insert(lo.end(), {static_cast<int>(j), static_cast<int>(j + W)});
      hi.insert(hi.end(), {static_cast<int>(j + W / 2), static_cast<int>(j + W / 2 + W)});
    }
    for (unsigned s = 1; s < W; s *= 2) {
      std::vector<LV *> next(W);
      for (unsigned i = 0; i < W / 2; ++i) {
        next[2 * i] = B.CreateShuffleVector(rows[i], rows[i + W / 2], lo);
        next[2 * i + 1] = B.CreateShuffleVector(rows[i], rows[i + W / 2], hi);
      }
      rows = std::move(next);
    }
    return rows;
  }

  /// Stores lanes [0, n) of a W-lane vector at `at`.
  void store_lanes(LV *v, LV *at, unsigned n) {
    if (n == W) {
      B.CreateAlignedStore(v, at, llvm::Align(4));
      return;
    }
    std::vector<llvm::Constant *> m;
    for (unsigned j = 0; j < W; ++j)
      m.push_back(B.getInt1(j < n));
    B.CreateMaskedStore(v, at, llvm::Align(4), llvm::ConstantVector::get(m));
  }

  /// Packs `lines` lines whose elements run along memory at `line_stride` apart (rows of
  /// transposed A, columns of B), K at `k_stride`, into the layout of pack_transposed: per k
  /// unit one load of `width` elements per k (two interleaved for pairs).
  void pack_direct(LV *dst, int64_t width, LV *lines, LV *src, LV *line_stride, LV *k_stride,
                   LV *kc, LV *kcu, const char *name) {
    const auto wn = static_cast<unsigned>(width);
    LV *panels = B.CreateSDiv(B.CreateAdd(lines, kb_.i64(width - 1)), kb_.i64(width));
    kb_.for_loop(
        kb_.i64(0), panels, kb_.i64(1),
        [&](LV *p) {
          LV *l0 = B.CreateMul(p, kb_.i64(width));
          LV *lmask = lanes_below(wn, l0, lines);
          LV *pdst = B.CreateGEP(i32(), dst, B.CreateMul(l0, kcu));
          LV *psrc = B.CreateGEP(storage_type(B, in_dt_), src, B.CreateMul(l0, line_stride));
          kb_.for_loop(
              kb_.i64(0), kcu, kb_.i64(1),
              [&](LV *u) {
                auto row = [&](LV *k, LV *mask) {
                  return load_run(
                      B.CreateGEP(storage_type(B, in_dt_), psrc, B.CreateMul(k, k_stride)),
                      line_stride, wn, mask);
                };
                LV *units = nullptr;
                if (g_.kg == 1) {
                  units = to_units(row(u, lmask), wn);
                } else {
                  LV *k0 = B.CreateMul(u, kb_.i64(2)), *k1 = B.CreateAdd(k0, kb_.i64(1));
                  LV *m1 = B.CreateAnd(lmask, B.CreateVectorSplat(wn, B.CreateICmpSLT(k1, kc)));
                  std::vector<int> inter;
                  for (unsigned j = 0; j < wn; ++j)
                    inter.insert(inter.end(), {static_cast<int>(j), static_cast<int>(j + wn)});
                  LV *pairs =
                      B.CreateShuffleVector(to_i16(row(k0, lmask)), to_i16(row(k1, m1)), inter);
                  units = B.CreateBitCast(pairs, vec(i32(), wn));
                }
                B.CreateAlignedStore(units,
                                     B.CreateGEP(i32(), pdst, B.CreateMul(u, kb_.i64(width))),
                                     llvm::Align(4));
              },
              (std::string(name) + ".u").c_str());
        },
        (std::string(name) + ".panel").c_str());
  }

  /// The rows [i0, i0 + rows) x K [p0, p0 + kc) of A into Ap_.
  void pack_a(LV *a, LV *i0, LV *rows, LV *p0, LV *kc, LV *kcu) {
    LV *src = B.CreateGEP(storage_type(B, in_dt_), a,
                          B.CreateAdd(B.CreateMul(i0, a_si_), B.CreateMul(p0, a_sk_)));
    if (op_.a_trans)
      pack_direct(Ap_, g_.mr, rows, src, a_si_, a_sk_, kc, kcu, "pa");
    else
      pack_transposed(Ap_, g_.mr, rows, src, a_si_, a_sk_, kc, kcu, "pa");
  }

  /// K [p0, p0 + kc) x the columns [j0, j0 + cols) of B into Bp_.
  void pack_b(LV *b, LV *p0, LV *kc, LV *kcu, LV *j0, LV *cols) {
    LV *src = B.CreateGEP(storage_type(B, in_dt_), b,
                          B.CreateAdd(B.CreateMul(p0, b_sk_), B.CreateMul(j0, b_sj_)));
    if (op_.b_trans)
      pack_transposed(Bp_, g_.nr, cols, src, b_sj_, b_sk_, kc, kcu, "pb");
    else
      pack_direct(Bp_, g_.nr, cols, src, b_sj_, b_sk_, kc, kcu, "pb");
  }

  // ---- the blocked loops ---------------------------------------------------------------------
  void gemm(LV *a, LV *b, LV *c) {
    const int64_t kce = g_.kcu * g_.kg; // k elements per chunk
    // At least one K chunk, so that K == 0 still writes bias (or zeros).
    LV *chunks =
        kb_.smax(B.CreateSDiv(B.CreateAdd(K_, kb_.i64(kce - 1)), kb_.i64(kce)), kb_.i64(1));
    // One K chunk: its element range, its units, whether it is the first or last.
    struct Chunk {
      LV *pc, *kc, *kcu, *first, *last;
    };
    auto chunk = [&](LV *q) {
      Chunk k;
      k.pc = B.CreateMul(q, kb_.i64(kce));
      k.kc = kb_.smax(kb_.smin(kb_.i64(kce), B.CreateSub(K_, k.pc)), kb_.i64(0));
      k.kcu = B.CreateSDiv(B.CreateAdd(k.kc, kb_.i64(g_.kg - 1)), kb_.i64(g_.kg));
      k.first = B.CreateICmpEQ(q, kb_.i64(0));
      k.last = B.CreateICmpEQ(q, B.CreateSub(chunks, kb_.i64(1)));
      return k;
    };
    kb_.for_loop(
        kb_.i64(0), N_, kb_.i64(g_.nc),
        [&](LV *jc) {
          LV *nc = kb_.smin(kb_.i64(g_.nc), B.CreateSub(N_, jc));
          if (direct_) {
            // B once per K chunk (shared by the workers); the row blocks accumulate into C.
            kb_.for_loop(
                kb_.i64(0), chunks, kb_.i64(1),
                [&](LV *q) {
                  Chunk k = chunk(q);
                  pack_b(b, k.pc, k.kc, k.kcu, jc, nc);
                  row_ranges(B.CreateMul(nc, kb_.smax(k.kc, kb_.i64(1))), [&](LV *r0, LV *r1) {
                    row_blocks(r0, r1, [&](LV *ic, LV *mc) {
                      pack_a(a, ic, mc, k.pc, k.kc, k.kcu);
                      register_blocks(c, ic, jc, mc, nc, k.kcu, k.first, k.last);
                    });
                  });
                },
                "mm.pc");
          } else {
            // The partial sums of one row block live in Cbuf_ across the chunks.
            row_ranges(B.CreateMul(nc, kb_.smax(K_, kb_.i64(1))), [&](LV *r0, LV *r1) {
              row_blocks(r0, r1, [&](LV *ic, LV *mc) {
                kb_.for_loop(
                    kb_.i64(0), chunks, kb_.i64(1),
                    [&](LV *q) {
                      Chunk k = chunk(q);
                      pack_b(b, k.pc, k.kc, k.kcu, jc, nc);
                      pack_a(a, ic, mc, k.pc, k.kc, k.kcu);
                      register_blocks(c, ic, jc, mc, nc, k.kcu, k.first, k.last);
                    },
                    "mm.pc");
              });
            });
          }
        },
        "mm.jc");
  }

  /// The rows [r0, r1) in blocks of mc: body(ic, rows).
  void row_blocks(LV *r0, LV *r1, const std::function<void(LV *, LV *)> &body) {
    kb_.for_loop(
        r0, r1, kb_.i64(g_.mc),
        [&](LV *ic) { body(ic, kb_.smin(kb_.i64(g_.mc), B.CreateSub(r1, ic))); }, "mm.ic");
  }

  /// body(r0, r1) over the rows of C in ranges of whole mr-row panels, on the pool
  /// (parallel_outline.h) when it is worth it: each panel is computed by one thread with the
  /// same instructions and the same K order, so the result has the same bits for any split.
  /// `macs_per_row` (i64): the work of one row in the region, for the grain.
  void row_ranges(LV *macs_per_row, const std::function<void(LV *, LV *)> &body) {
    if (!parallel_) {
      body(kb_.i64(0), M_);
      return;
    }
    ParRegion r;
    auto *lo_slot = kb_.entry_alloca(B.getInt64Ty(), "mm.par.lo");
    auto *hi_slot = kb_.entry_alloca(B.getInt64Ty(), "mm.par.hi");
    B.CreateStore(kb_.i64(0), lo_slot);
    B.CreateStore(B.CreateSDiv(B.CreateAdd(M_, kb_.i64(g_.mr - 1)), kb_.i64(g_.mr)), hi_slot);
    r.lo = B.CreateLoad(B.getInt64Ty(), lo_slot, "mm.par.lo");
    r.hi = B.CreateLoad(B.getInt64Ty(), hi_slot, "mm.par.hi");
    LV *per_panel = kb_.smax(B.CreateMul(macs_per_row, kb_.i64(g_.mr)), kb_.i64(1));
    r.grain = kb_.smax(B.CreateSDiv(kb_.i64(kMatmulGrainMacs), per_panel), kb_.i64(1));
    r.workers = copies_;
    r.ctx = kb_.ctx_arg();
    r.strides = stride_;
    r.begin = kb_.block("mm.par");
    r.end = kb_.block("mm.par.end");
    B.CreateBr(r.begin);
    B.SetInsertPoint(r.begin);
    body(B.CreateMul(r.lo, kb_.i64(g_.mr)), kb_.smin(B.CreateMul(r.hi, kb_.i64(g_.mr)), M_));
    B.CreateBr(r.end);
    B.SetInsertPoint(r.end);
    regions_.push_back(r);
  }

  /// The register blocks of one (mc x nc) block of C over one packed K chunk of kcu units.
  void register_blocks(LV *c, LV *ic, LV *jc, LV *mc, LV *nc, LV *kcu, LV *first, LV *last) {
    llvm::Type *oe = storage_type(B, out_dt_);
    kb_.for_loop(
        kb_.i64(0), mc, kb_.i64(g_.mr),
        [&](LV *ir) {
          LV *ap = B.CreateGEP(i32(), Ap_, B.CreateMul(ir, kcu));
          LV *nrows = kb_.smin(kb_.i64(g_.mr), B.CreateSub(mc, ir));
          kb_.for_loop(
              kb_.i64(0), nc, kb_.i64(g_.nr),
              [&](LV *jr) {
                LV *bp = B.CreateGEP(i32(), Bp_, B.CreateMul(jr, kcu));
                LV *ncols = kb_.smin(kb_.i64(g_.nr), B.CreateSub(nc, jr));
                LV *crow0 = B.CreateGEP(
                    oe, c,
                    B.CreateAdd(B.CreateMul(B.CreateAdd(ic, ir), c_si_), B.CreateAdd(jc, jr)));
                Tile out{crow0, c_si_, nrows, ncols};
                Tile part =
                    direct_ ? out
                            : Tile{B.CreateGEP(B.getFloatTy(), Cbuf_,
                                               B.CreateAdd(B.CreateMul(ir, kb_.i64(g_.nc)), jr)),
                                   kb_.i64(g_.nc), nullptr, nullptr};
                LV *bias = has_bias_ ? B.CreateGEP(oe, bias_, B.CreateAdd(jc, jr)) : nullptr;
                micro_kernel(ap, bp, kcu, part, out, first, last, bias);
              },
              "mm.jr");
        },
        "mm.ir");
  }

  // ---- the micro-kernel ----------------------------------------------------------------------
  /// An mr x nr window of C or of the partial sums: row i at ptr + i * stride; rows past
  /// `nrows` and columns past `ncols` are outside (null: the window is whole, in scratch).
  struct Tile {
    LV *ptr, *stride, *nrows, *ncols;
  };

  /// The lanes of vector v (of 2) inside the tile's columns, for row i: all true when whole.
  LV *tile_mask(const Tile &t, int64_t i, int64_t v) {
    LV *m = lanes_below(W, kb_.i64(v * W), t.ncols);
    return B.CreateAnd(m, B.CreateVectorSplat(W, B.CreateICmpSLT(kb_.i64(i), t.nrows)));
  }

  LV *tile_ptr(const Tile &t, llvm::Type *e, int64_t i, int64_t v) {
    return B.CreateGEP(e, t.ptr, B.CreateAdd(B.CreateMul(kb_.i64(i), t.stride), kb_.i64(v * W)));
  }

  /// C[mr x nr] (+)= Ap[mr x kcu] * Bp[kcu x nr]: on the last chunk the epilogue into C, else
  /// the partial sums back to where they came from.
  void micro_kernel(LV *ap, LV *bp, LV *kcu, const Tile &part, const Tile &out, LV *first, LV *last,
                    LV *bias) {
    std::vector<LV *> res = k_loop(ap, bp, kcu, load_accumulators(part, first));
    auto *partial = kb_.block("uk.partial");
    auto *epi = kb_.block("uk.epilogue");
    auto *done = kb_.block("uk.done");
    B.CreateCondBr(last, epi, partial);
    B.SetInsertPoint(partial);
    store_tile(part, res, acc_elem());
    B.CreateBr(done);
    B.SetInsertPoint(epi);
    epilogue(res, out, bias);
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }

  /// Accumulators: zero on the first chunk, else the partial sums (masked loads: nothing
  /// outside the tile is read).
  std::vector<LV *> load_accumulators(const Tile &part, LV *first) {
    llvm::Type *ae = acc_elem();
    auto *avt = vec(ae, W);
    LV *zero = llvm::Constant::getNullValue(avt);
    std::vector<LV *> acc(static_cast<size_t>(g_.mr * 2), zero);
    auto *pre = B.GetInsertBlock();
    auto *ld = kb_.block("uk.load");
    auto *join = kb_.block("uk.loaded");
    B.CreateCondBr(first, join, ld);
    B.SetInsertPoint(ld);
    std::vector<LV *> got;
    for (int64_t i = 0; i < g_.mr; ++i)
      for (int64_t v = 0; v < 2; ++v) {
        LV *p = tile_ptr(part, ae, i, v);
        got.push_back(part.nrows ? static_cast<LV *>(B.CreateMaskedLoad(
                                       avt, p, llvm::Align(4), tile_mask(part, i, v), zero))
                                 : B.CreateAlignedLoad(avt, p, llvm::Align(4)));
      }
    auto *ld_end = B.GetInsertBlock();
    B.CreateBr(join);
    B.SetInsertPoint(join);
    for (size_t s = 0; s < acc.size(); ++s) {
      auto *phi = B.CreatePHI(avt, 2);
      phi->addIncoming(zero, pre);
      phi->addIncoming(got[s], ld_end);
      acc[s] = phi;
    }
    return acc;
  }

  /// Stores the tile's vectors `vals` (elements `e`): unmasked when the tile is whole, else
  /// rows past nrows skipped and the column tail masked.
  void store_tile(const Tile &t, const std::vector<LV *> &vals, llvm::Type *e) {
    auto plain = [&] {
      for (int64_t i = 0; i < g_.mr; ++i)
        for (int64_t v = 0; v < 2; ++v)
          B.CreateAlignedStore(vals[static_cast<size_t>(i * 2 + v)], tile_ptr(t, e, i, v),
                               llvm::Align(e->getPrimitiveSizeInBits() / 8));
    };
    if (!t.nrows) {
      plain();
      return;
    }
    LV *whole = B.CreateAnd(B.CreateICmpEQ(t.nrows, kb_.i64(g_.mr)),
                            B.CreateICmpEQ(t.ncols, kb_.i64(g_.nr)));
    kb_.if_else(
        whole, plain,
        [&] {
          for (int64_t i = 0; i < g_.mr; ++i)
            kb_.if_then(
                B.CreateICmpSLT(kb_.i64(i), t.nrows),
                [&] {
                  for (int64_t v = 0; v < 2; ++v)
                    B.CreateMaskedStore(vals[static_cast<size_t>(i * 2 + v)], tile_ptr(t, e, i, v),
                                        llvm::Align(1), tile_mask(t, i, v));
                },
                "ep.row", "ep.row.end");
        },
        "ep.full", "ep.tail", "ep.join");
  }

  /// The k loop over the packed chunk, the accumulators carried in phis; returns their values
  /// at the exit.
  std::vector<LV *> k_loop(LV *ap, LV *bp, LV *kcu, const std::vector<LV *> &acc) {
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
      auto *ph = B.CreatePHI(vec(acc_elem(), W), 2);
      ph->addIncoming(v, pre);
      phis.push_back(ph);
    }
    B.CreateCondBr(B.CreateICmpSLT(kphi, kcu), body, exit);
    B.SetInsertPoint(body);
    std::vector<LV *> next(phis.begin(), phis.end());
    k_step(ap, bp, kphi, next);
    LV *knext = B.CreateAdd(kphi, kb_.i64(1));
    auto *latch = B.GetInsertBlock();
    kphi->addIncoming(knext, latch);
    for (size_t s = 0; s < phis.size(); ++s)
      phis[s]->addIncoming(next[s], latch);
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    return std::vector<LV *>(phis.begin(), phis.end());
  }

  /// One k unit: two vectors of B, per row one broadcast unit of A and two multiply-adds.
  void k_step(LV *ap, LV *bp, LV *u, std::vector<LV *> &acc) {
    auto *vt = vec(i32(), W);
    LV *brow = B.CreateGEP(i32(), bp, B.CreateMul(u, kb_.i64(g_.nr)));
    LV *bv[2] = {B.CreateAlignedLoad(vt, brow, llvm::Align(4)),
                 B.CreateAlignedLoad(vt, B.CreateConstGEP1_64(i32(), brow, W), llvm::Align(4))};
    LV *arow = B.CreateGEP(i32(), ap, B.CreateMul(u, kb_.i64(g_.mr)));
    for (int64_t i = 0; i < g_.mr; ++i) {
      llvm::Type *ae = int_ || g_.dpbf16 ? i32() : B.getFloatTy();
      LV *a = B.CreateVectorSplat(
          W, B.CreateAlignedLoad(ae, B.CreateConstGEP1_64(i32(), arow, static_cast<uint64_t>(i)),
                                 llvm::Align(4)));
      for (int64_t v = 0; v < 2; ++v) {
        auto s = static_cast<size_t>(i * 2 + v);
        acc[s] = multiply_add(acc[s], a, bv[v]);
      }
    }
  }

  /// acc + a * b on W lanes of units: fp32 FMA, int16 pairs (vpmaddwd) or bf16 pairs
  /// (vdpbf16ps).
  LV *multiply_add(LV *acc, LV *a, LV *b) {
    if (g_.dpbf16) {
      auto *bf = vec(B.getBFloatTy(), 2 * W);
      return B.CreateIntrinsic(W == 16 ? llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512
                                       : llvm::Intrinsic::x86_avx512bf16_dpbf16ps_256,
                               {}, {acc, B.CreateBitCast(a, bf), B.CreateBitCast(b, bf)});
    }
    if (int_) {
      auto *v16 = vec(B.getInt16Ty(), 2 * W);
      return B.CreateAdd(acc, madd_pairs(B.CreateBitCast(a, v16), B.CreateBitCast(b, v16)));
    }
    auto *vf = vec(B.getFloatTy(), W);
    return B.CreateIntrinsic(llvm::Intrinsic::fma, {vf}, {a, B.CreateBitCast(b, vf), acc});
  }

  /// Sum of adjacent int16 products into int32 lanes (vpmaddwd).
  LV *madd_pairs(LV *a, LV *b) {
    if (W == 16)
      return B.CreateIntrinsic(llvm::Intrinsic::x86_avx512_pmaddw_d_512, {}, {a, b});
    if (kb_.isa() >= Isa::Avx2)
      return B.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {}, {a, b});
    auto *wide = vec(B.getInt32Ty(), 2 * W);
    LV *prod = B.CreateMul(B.CreateSExt(a, wide), B.CreateSExt(b, wide));
    std::vector<int> even, odd;
    for (unsigned j = 0; j < W; ++j) {
      even.push_back(static_cast<int>(2 * j));
      odd.push_back(static_cast<int>(2 * j + 1));
    }
    return B.CreateAdd(B.CreateShuffleVector(prod, even), B.CreateShuffleVector(prod, odd));
  }

  // ---- the epilogue --------------------------------------------------------------------------
  /// The last chunk: bias, relu and the rounding to the output dtype, stored into C.
  void epilogue(const std::vector<LV *> &res, const Tile &out, LV *bias) {
    llvm::Type *oe = storage_type(B, out_dt_);
    auto *ovt = vec(oe, W);
    LV *bv[2] = {nullptr, nullptr};
    if (bias)
      for (int64_t v = 0; v < 2; ++v)
        bv[v] = widen(B,
                      B.CreateMaskedLoad(ovt, B.CreateConstGEP1_64(oe, bias, v * W), llvm::Align(1),
                                         lanes_below(W, kb_.i64(v * W), out.ncols),
                                         llvm::Constant::getNullValue(ovt)),
                      out_dt_);
    std::vector<LV *> vals;
    for (size_t s = 0; s < res.size(); ++s)
      vals.push_back(finish(res[s], bv[s % 2]));
    store_tile(out, vals, oe);
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

void lower_matmul(KernelBuilder &kb, const ir::Op &op, std::vector<ParRegion> &regions) {
  if (op.tile.cube.size() != 7)
    throw InternalError(op.where, "matmul", "no cube tile captured (a ptojit bug; PTO_DUMP=ir)");
  MatmulLowering(kb, op, regions).run();
}

} // namespace pto::codegen
