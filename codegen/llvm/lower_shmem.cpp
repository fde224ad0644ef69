// lower_shmem.cpp - See lower_shmem.h. Mirrors interp/interpreter_shmem.cpp: the same window
// checks, at the same points (once per op, or once per tile), with the same failure kinds.
#include "llvm/lower_shmem.h"

#include "pto/runtime/abi.h"

#include "llvm/abi_decls.h"
#include "llvm/dtype_codec.h"
#include "llvm/lower_shmem_direct.h"
#include "passes/tile_expand.h"
#include "rtlib/abi_codes.h"

#include <algorithm>
#include <functional>
#include <type_traits>

namespace pto::codegen {

using ir::Op;
using ir::OpKind;
using LV = llvm::Value;

namespace {

using Index = std::vector<LV *>;
/// The body of a tile loop: the tile's offsets and sizes in the window.
using TileBody = std::function<void(const Index &, const Index &)>;

class ShmemLowering {
public:
  explicit ShmemLowering(KernelBuilder &kb) : kb_(kb), B(kb.builder()), p_(kb.program()) {}

  /// Nested tile loops over a static `shape` with tile `tile` (row-major, tails smaller).
  void for_tiles(const std::vector<int64_t> &shape, const std::vector<int64_t> &tile,
                 const TileBody &body);
  TileBody prepare_put(const Op &op);
  TileBody prepare_get(const Op &op);
  bool borrow_get(const Op &op);
  bool written_later(ir::ValueId id) const;
  TileBody prepare_signal_wait(const Op &op);
  void clear(const Op &op);
  void clear_signal(const Op &op);
  TileBody prepare_put_signal(const Op &op);
  void wait_set(const Op &op);
  void atomic_op(const Op &op);

private:
  /// A tile clipped to a valid region: its extent per dim, its element offset in the local
  /// window, and whether any element remains.
  struct ClippedTile {
    Index ext;
    LV *lin = nullptr;
    LV *nonempty = nullptr;
  };

  /// What every tile of a put or get needs: the shmem, the local value and its window, the
  /// local valid extents, the PE (i32) and the heap side's strides.
  struct Transfer {
    const ir::ShmemInfo *s = nullptr;
    const ir::Value *local = nullptr;
    Addr a;
    Index valid;
    LV *pe = nullptr;
    Index heap_strides;
    LV *base = nullptr; ///< the direct path's heap base of `pe` (null at run time: the runtime)
  };
  /// The runtime call of one non-empty tile; returns its status.
  using TransferCall =
      std::function<LV *(const Transfer &, const ClippedTile &, const Index &tile_off)>;

  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Program &p_;

  /// The heap base of PE `pe` (i32) of `s`'s group from this kernel entry's table: null when
  /// the table has none (another transport, PTO_SHMEM_DIRECT=0, a trace) or `pe` is outside the
  /// group (the runtime call then reports it). Null (a constant) when the op may not take the
  /// direct path: an ADD, or a dtype conversion.
  LV *direct_base(const ir::ShmemInfo &s, LV *pe, bool eligible);
  /// Copies the tile of extents `ext` between `dst` and `src` (same dtype, `esize` bytes, each
  /// side's row-major element strides `ds` / `ss`, innermost stride 1): one memcpy per row of the
  /// last dim, or per block of the last two dims when both sides hold it contiguously.
  void copy_tile(LV *dst, const Index &ds, LV *src, const Index &ss, const Index &ext,
                 int64_t esize);
  /// Runs `direct` when `t.base` is non-null, else `runtime` (a call returning a status).
  void direct_or_runtime(const Transfer &t, const char *name, const std::function<void()> &direct,
                         const std::function<LV *()> &runtime);

  /// Evaluates what `op`'s tiles share (once per op) and checks the whole window.
  Transfer begin_transfer(const Op &op, ir::ValueId local,
                          const std::vector<SymbolicScalar> &valid);
  /// Per tile: the tile clipped to the local valid region, and `call` when it is non-empty.
  TileBody per_tile(Transfer t, const char *name, TransferCall call);

  const ir::ShmemInfo &shmem_of(const Op &op) const {
    return p_.shmems[static_cast<size_t>(op.shmem)];
  }
  LV *make_block(const Index &ext, const Index &ss, const Index &ds);
  static std::vector<int64_t> shmem_strides(const ir::ShmemInfo &s);
  Index constants(const std::vector<int64_t> &v);
  Index syms(const std::vector<SymbolicScalar> &v);
  /// Each dim of the window [O + toff, + ext) inside the data (O: the evaluated view offsets).
  void check_shmem_window(const ir::ShmemInfo &s, const Index &O, const Index &toff,
                          const Index &ext);
  void check_whole_window(const ir::ShmemInfo &s, const Op &op);
  LV *heap_offset(const ir::ShmemInfo &s, const Op &op, const Index &toff);
  ClippedTile clip(const Index &valid, const Index &strides, const Index &off, const Index &size);
  void if_nonempty(LV *nonempty, const char *name, const std::function<void()> &then);
  void check_slots(const ir::ShmemInfo &s, const ir::SlotGeometry &g, LV *row, const Index &O);
  LV *slot_of(const ir::SlotGeometry &g, const Index &O, const Index &off, LV *row);
  LV *atomic(const Op &op) { return B.getInt32(abi_atomic(op.atomic)); }
  /// The signal word of the tile at `off`: its byte offset in the heap.
  LV *slot_offset(const ir::ShmemInfo &s, LV *slot) {
    return B.CreateAdd(kb_.i64(s.signal_offset_bytes), B.CreateMul(slot, kb_.i64(32)));
  }
  /// A stack element of dtype `dt` (int32, int64, fp32) holding the AMO operand `v` (an integer,
  /// or the floating literal `real` when `is_real`), for pto_rt_atomic.
  LV *amo_operand(DataType dt, const SymbolicScalar &v, bool is_real, double real,
                  const char *name);
  /// The int32 element 0 of value `id`'s window, and its last-dim stride.
  LV *int32_out(ir::ValueId id, LV **stride);
};

void ShmemLowering::for_tiles(const std::vector<int64_t> &shape, const std::vector<int64_t> &tile,
                              const TileBody &body) {
  size_t r = shape.size();
  Index off(r), size(r);
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == r) {
      body(off, size);
      return;
    }
    int64_t t = tile[d];
    kb_.for_loop(
        kb_.i64(0), kb_.i64(shape[d]), kb_.i64(t),
        [&](LV *o) {
          off[d] = o;
          size[d] = kb_.smin(kb_.i64(t), B.CreateSub(kb_.i64(shape[d]), o));
          rec(d + 1);
        },
        "st");
  };
  rec(0);
}

/// Fills a pto_block {extent, src_stride, dst_stride} (leading dims padded with extent 1).
LV *ShmemLowering::make_block(const Index &ext, const Index &ss, const Index &ds) {
  llvm::StructType *ty = block_type(kb_.context());
  LV *blk = kb_.entry_alloca(ty, "block");
  constexpr size_t kDims = std::extent_v<decltype(pto_block::extent)>;
  auto store = [&](BlockField f, size_t k, LV *v) {
    llvm::Type *array = ty->getElementType(field_index(f));
    B.CreateStore(v, B.CreateConstGEP2_64(array, field_ptr(B, ty, blk, f), 0, k));
  };
  const size_t r = ext.size();
  for (size_t k = 0; k < kDims; ++k) {
    const bool pad = k < kDims - r;
    const size_t d = pad ? 0 : k - (kDims - r);
    store(BlockField::extent, k, pad ? kb_.i64(1) : ext[d]);
    store(BlockField::src_stride, k, pad ? kb_.i64(0) : ss[d]);
    store(BlockField::dst_stride, k, pad ? kb_.i64(0) : ds[d]);
  }
  return blk;
}

std::vector<int64_t> ShmemLowering::shmem_strides(const ir::ShmemInfo &s) {
  std::vector<int64_t> st(s.shape.size(), 1);
  for (size_t d = s.shape.size(); d-- > 1;)
    st[d - 1] = st[d] * s.shape[d];
  return st;
}

Index ShmemLowering::constants(const std::vector<int64_t> &v) {
  Index out;
  for (auto x : v)
    out.push_back(kb_.i64(x));
  return out;
}

Index ShmemLowering::syms(const std::vector<SymbolicScalar> &v) {
  Index out;
  for (auto &x : v)
    out.push_back(kb_.sym(x));
  return out;
}

/// Each dim of the window [view_offsets + toff, + ext) must lie inside the shmem data (checked
/// once per tile, like the interpreter): otherwise the call fails with a DistributedError before
/// the runtime touches memory.
void ShmemLowering::check_shmem_window(const ir::ShmemInfo &s, const Index &O, const Index &toff,
                                       const Index &ext) {
  for (size_t d = 0; d < s.shape.size(); ++d) {
    // o <= shape - ext, not o + ext <= shape: a huge offset must not wrap the window's end.
    LV *o = B.CreateAdd(O[d], toff[d]);
    LV *shape = kb_.i64(s.shape[d]);
    LV *ok =
        B.CreateAnd(B.CreateICmpSGE(o, kb_.i64(0)), B.CreateICmpSLE(o, B.CreateSub(shape, ext[d])));
    LV *last = B.CreateSelect(B.CreateICmpSLE(o, shape),
                              B.CreateSub(B.CreateAdd(o, ext[d]), kb_.i64(1)), o);
    LV *bad_index = B.CreateSelect(B.CreateICmpSLT(o, kb_.i64(0)), o, last);
    kb_.fail_unless(ok, PTO_FAIL_OFFSET, bad_index, kb_.i64(s.shape[d]));
  }
}

/// The op's whole window (view_offsets + view_shape) inside the data, checked once per op.
void ShmemLowering::check_whole_window(const ir::ShmemInfo &s, const Op &op) {
  Index zero(op.view_shape.size(), kb_.i64(0));
  check_shmem_window(s, syms(op.view_offsets), zero, constants(op.view_shape));
}

/// Byte offset in the heap of element (view_offsets + tile_off) of shmem `s`.
LV *ShmemLowering::heap_offset(const ir::ShmemInfo &s, const Op &op, const Index &toff) {
  auto st = shmem_strides(s);
  LV *lin = kb_.i64(0);
  for (size_t d = 0; d < st.size(); ++d)
    lin = B.CreateAdd(
        lin, B.CreateMul(B.CreateAdd(kb_.sym(op.view_offsets[d]), toff[d]), kb_.i64(st[d])));
  return B.CreateAdd(kb_.i64(s.data_offset_bytes), B.CreateMul(lin, kb_.i64(bytes_of(s.dtype))));
}

ShmemLowering::ClippedTile ShmemLowering::clip(const Index &valid, const Index &strides,
                                               const Index &off, const Index &size) {
  ClippedTile t;
  t.lin = kb_.i64(0);
  t.nonempty = B.getTrue();
  for (size_t d = 0; d < off.size(); ++d) {
    LV *e = kb_.smin(kb_.smax(B.CreateSub(valid[d], off[d]), kb_.i64(0)), size[d]);
    t.ext.push_back(e);
    t.nonempty = B.CreateAnd(t.nonempty, B.CreateICmpSGT(e, kb_.i64(0)));
    t.lin = B.CreateAdd(t.lin, B.CreateMul(off[d], strides[d]));
  }
  return t;
}

/// if (nonempty) then(), in blocks `name` and `name.skip`.
void ShmemLowering::if_nonempty(LV *nonempty, const char *name, const std::function<void()> &then) {
  kb_.if_then(nonempty, then, name, std::string(name) + ".skip");
}

LV *ShmemLowering::direct_base(const ir::ShmemInfo &s, LV *pe, bool eligible) {
  LV *null = llvm::ConstantPointerNull::get(B.getPtrTy());
  LV *table = kb_.heap_table(s.group_index);
  if (!eligible || !table)
    return null;
  LV *p = B.CreateSExt(pe, B.getInt64Ty());
  LV *in = B.CreateAnd(B.CreateICmpSGE(p, kb_.i64(0)), B.CreateICmpSLT(p, kb_.i64(s.n_pes)));
  auto *ty = llvm::ArrayType::get(B.getPtrTy(), static_cast<uint64_t>(s.n_pes));
  LV *slot = B.CreateGEP(ty, table, {kb_.i64(0), B.CreateSelect(in, p, kb_.i64(0))});
  return B.CreateSelect(in, B.CreateLoad(B.getPtrTy(), slot, "heap.base"), null);
}

void ShmemLowering::copy_tile(LV *dst, const Index &ds, LV *src, const Index &ss, const Index &ext,
                              int64_t esize) {
  const size_t r = ext.size(); // 2 to 4 (shmem ranks)
  auto at = [&](LV *base, LV *elems) {
    return B.CreateGEP(B.getInt8Ty(), base, B.CreateMul(elems, kb_.i64(esize)));
  };
  auto copy = [&](LV *d_lin, LV *s_lin, LV *elems) {
    B.CreateMemCpy(at(dst, d_lin), llvm::MaybeAlign(esize), at(src, s_lin), llvm::MaybeAlign(esize),
                   B.CreateMul(elems, kb_.i64(esize)));
  };
  // Element offsets of the outer index tuple so far, on each side.
  std::function<void(size_t, LV *, LV *)> rec = [&](size_t d, LV *dl, LV *sl) {
    if (d + 2 < r) {
      kb_.for_loop(
          kb_.i64(0), ext[d], kb_.i64(1),
          [&](LV *i) {
            rec(d + 1, B.CreateAdd(dl, B.CreateMul(i, ds[d])),
                B.CreateAdd(sl, B.CreateMul(i, ss[d])));
          },
          "direct.outer");
      return;
    }
    // The last two dims: one block when both sides hold the rows back to back.
    LV *flat = B.CreateAnd(B.CreateICmpEQ(ds[d], ext[d + 1]), B.CreateICmpEQ(ss[d], ext[d + 1]));
    kb_.if_else(
        flat, [&] { copy(dl, sl, B.CreateMul(ext[d], ext[d + 1])); },
        [&] {
          kb_.for_loop(
              kb_.i64(0), ext[d], kb_.i64(1),
              [&](LV *i) {
                copy(B.CreateAdd(dl, B.CreateMul(i, ds[d])), B.CreateAdd(sl, B.CreateMul(i, ss[d])),
                     ext[d + 1]);
              },
              "direct.row");
        },
        "direct.block", "direct.rows", "direct.end");
  };
  rec(0, kb_.i64(0), kb_.i64(0));
}

void ShmemLowering::direct_or_runtime(const Transfer &t, const char *name,
                                      const std::function<void()> &direct,
                                      const std::function<LV *()> &runtime) {
  if (llvm::isa<llvm::ConstantPointerNull>(t.base)) {
    kb_.ret_if_error(runtime());
    return;
  }
  kb_.if_else(
      B.CreateIsNotNull(t.base), direct, [&] { kb_.ret_if_error(runtime()); },
      std::string(name) + ".direct", std::string(name) + ".runtime", std::string(name) + ".done");
}

ShmemLowering::Transfer ShmemLowering::begin_transfer(const Op &op, ir::ValueId local,
                                                      const std::vector<SymbolicScalar> &valid) {
  Transfer t;
  t.s = &shmem_of(op);
  t.local = &p_.value(local);
  t.a = kb_.addr(local);
  t.valid = syms(valid);
  t.pe = B.CreateTrunc(kb_.sym(op.pe), B.getInt32Ty());
  t.heap_strides = constants(shmem_strides(*t.s));
  check_whole_window(*t.s, op);
  const bool same_dtype = t.local->dtype == t.s->dtype;
  const bool set = op.kind == OpKind::ShmemGet || op.atomic == ir::Atomic::Set;
  t.base = direct_base(*t.s, t.pe, same_dtype && set);
  return t;
}

TileBody ShmemLowering::per_tile(Transfer t, const char *name, TransferCall call) {
  return [=, this](const Index &off, const Index &size) {
    ClippedTile c = clip(t.valid, t.a.strides, off, size);
    if_nonempty(c.nonempty, name, [&] { kb_.ret_if_error(call(t, c, off)); });
  };
}

/// Per tile: the direct path (loads and stores straight into the peer's heap, the window checked
/// above) when the table has the PE's base, else pto_rt_put.
TileBody ShmemLowering::prepare_put(const Op &op) {
  const ir::Value &src = p_.value(op.inputs[0]);
  return per_tile(begin_transfer(op, src.id, src.valid), "put",
                  [this, &op](const Transfer &t, const ClippedTile &c, const Index &off) {
                    const ir::ShmemInfo &s = *t.s;
                    LV *sp = B.CreateGEP(storage_type(B, t.local->dtype), t.a.base, c.lin);
                    direct_or_runtime(
                        t, "put",
                        [&] {
                          LV *dp = B.CreateGEP(B.getInt8Ty(), t.base, heap_offset(s, op, off));
                          copy_tile(dp, t.heap_strides, sp, t.a.strides, c.ext, bytes_of(s.dtype));
                        },
                        [&] {
                          LV *blk = make_block(c.ext, t.a.strides, t.heap_strides);
                          return kb_.call_rt(
                              RtFn::Put,
                              {kb_.ctx_arg(), B.getInt32(s.group_index), t.pe, atomic(op), sp,
                               B.getInt32(t.local->dtype), heap_offset(s, op, off),
                               kb_.i64(s.data_offset_bytes + s.data_bytes), B.getInt32(s.dtype),
                               blk, B.getInt32(kb_.current_site())});
                        });
                    return B.getInt32(PTO_OK);
                  });
}

TileBody ShmemLowering::prepare_get(const Op &op) {
  return per_tile(begin_transfer(op, op.outputs[1], op.view_valid), "get",
                  [this, &op](const Transfer &t, const ClippedTile &c, const Index &off) {
                    const ir::ShmemInfo &s = *t.s;
                    LV *dp = B.CreateGEP(storage_type(B, t.local->dtype), t.a.base, c.lin);
                    direct_or_runtime(
                        t, "get",
                        [&] {
                          LV *sp = B.CreateGEP(B.getInt8Ty(), t.base, heap_offset(s, op, off));
                          copy_tile(dp, t.a.strides, sp, t.heap_strides, c.ext, bytes_of(s.dtype));
                        },
                        [&] {
                          // pto_block: "src" is the heap side, "dst" the local side, as
                          // pto_rt_get documents.
                          LV *blk = make_block(c.ext, t.heap_strides, t.a.strides);
                          return kb_.call_rt(RtFn::Get,
                                             {kb_.ctx_arg(), B.getInt32(s.group_index), t.pe,
                                              heap_offset(s, op, off),
                                              kb_.i64(s.data_offset_bytes + s.data_bytes),
                                              B.getInt32(s.dtype), dp, B.getInt32(t.local->dtype),
                                              blk, B.getInt32(kb_.current_site())});
                        });
                    return B.getInt32(PTO_OK);
                  });
}

/// True when some op writes into the storage of local `id` (an assemble into it, or any op whose
/// output is a view of it): a borrowed result must never write into a heap.
bool ShmemLowering::written_later(ir::ValueId id) const {
  std::function<bool(const std::vector<Op> &)> any = [&](const std::vector<Op> &ops) {
    for (const Op &o : ops) {
      if (any(o.body))
        return true;
      for (const auto &path : o.paths)
        if (any(path.body))
          return true;
      for (ir::ValueId v : o.outputs)
        if (v != ir::kNoValue && p_.value(v).kind == ir::ValueKind::View && p_.root(v).id == id)
          return true;
    }
    return false;
  };
  return any(p_.body);
}

/// A borrowed get (ir::Op::borrow) on the direct path: the result's storage becomes the heap
/// window itself, when the window's rows are whole rows of the shmem data (so its dense strides
/// are the heap's) and no conversion is asked for; otherwise (and on the runtime path) the copy
/// of prepare_get into the result's own buffer. The window is checked either way.
bool ShmemLowering::borrow_get(const Op &op) {
  const ir::ShmemInfo &s = shmem_of(op);
  const ir::Value &out = p_.value(op.outputs[1]);
  if (!op.borrow || s.zero_data || out.dtype != s.dtype || out.kind != ir::ValueKind::Local ||
      !std::equal(op.view_shape.begin() + 1, op.view_shape.end(), s.shape.begin() + 1,
                  s.shape.end()) ||
      !kb_.heap_table(s.group_index) || written_later(out.id))
    return false;
  Transfer t = begin_transfer(op, op.outputs[1], op.view_valid);
  LV *own = t.a.base;
  LV *window = B.CreateGEP(B.getInt8Ty(), t.base,
                           heap_offset(s, op, Index(s.shape.size(), kb_.i64(0))), "borrowed");
  LV *direct = B.CreateIsNotNull(t.base);
  kb_.set_storage(out.id, B.CreateSelect(direct, window, own));
  kb_.if_then(
      B.CreateNot(direct),
      [&] {
        t.base = llvm::ConstantPointerNull::get(B.getPtrTy());
        t.a.base = own;
        for_tiles(
            op.view_shape, op.tile.vec,
            per_tile(
                t, "get", [this, &op](const Transfer &tt, const ClippedTile &c, const Index &off) {
                  const ir::ShmemInfo &ss = *tt.s;
                  LV *blk = make_block(c.ext, tt.heap_strides, tt.a.strides);
                  LV *dp = B.CreateGEP(storage_type(B, tt.local->dtype), tt.a.base, c.lin);
                  return kb_.call_rt(
                      RtFn::Get,
                      {kb_.ctx_arg(), B.getInt32(ss.group_index), tt.pe, heap_offset(ss, op, off),
                       kb_.i64(ss.data_offset_bytes + ss.data_bytes), B.getInt32(ss.dtype), dp,
                       B.getInt32(tt.local->dtype), blk, B.getInt32(kb_.current_site())});
                }));
      },
      "get.copy", "get.borrowed");
  return true;
}

/// The slot row must be a PE of the group, and the window (view offsets `O`) tile-aligned
/// within its view (reference §6.3: otherwise two windows alias the same slots).
void ShmemLowering::check_slots(const ir::ShmemInfo &s, const ir::SlotGeometry &g, LV *row,
                                const Index &O) {
  kb_.fail_unless(
      B.CreateAnd(B.CreateICmpSGE(row, kb_.i64(0)), B.CreateICmpSLT(row, kb_.i64(s.n_pes))),
      PTO_FAIL_PE, row, kb_.i64(s.n_pes));
  for (size_t d = 0; d < g.data_shape.size(); ++d) {
    LV *within = B.CreateSRem(O[d], kb_.i64(g.view_shape[d]));
    kb_.fail_unless(B.CreateICmpEQ(B.CreateSRem(within, kb_.i64(g.tile[d])), kb_.i64(0)),
                    PTO_FAIL_SLOT_ALIGN, within, kb_.i64(g.tile[d]));
  }
}

/// The slot of the tile at `off` of the window at view offsets `O`, in slot row `row`
/// (reference §6.3): tileIndex = Σ tileIdx_d·Π_{e<d} ceil(V_e/T_e) + viewTileNum·Σ
/// viewIdx_d·Π_{e<d}(R_e/V_e), slot = row·totalTileNum + tileIndex.
LV *ShmemLowering::slot_of(const ir::SlotGeometry &g, const Index &O, const Index &off, LV *row) {
  LV *tile_part = kb_.i64(0), *view_part = kb_.i64(0);
  int64_t tmul = 1, vmul = 1;
  for (size_t d = 0; d < g.data_shape.size(); ++d) {
    LV *vi = B.CreateSDiv(O[d], kb_.i64(g.view_shape[d]));
    LV *ti = B.CreateSDiv(B.CreateAdd(B.CreateSRem(O[d], kb_.i64(g.view_shape[d])), off[d]),
                          kb_.i64(g.tile[d]));
    tile_part = B.CreateAdd(tile_part, B.CreateMul(ti, kb_.i64(tmul)));
    view_part = B.CreateAdd(view_part, B.CreateMul(vi, kb_.i64(vmul)));
    tmul *= (g.view_shape[d] + g.tile[d] - 1) / g.tile[d];
    vmul *= g.data_shape[d] / g.view_shape[d];
  }
  LV *tile_index = B.CreateAdd(tile_part, B.CreateMul(view_part, kb_.i64(g.view_tile_num)));
  return B.CreateAdd(B.CreateMul(row, kb_.i64(g.total_tile_num)), tile_index);
}

TileBody ShmemLowering::prepare_signal_wait(const Op &op) {
  const auto &s = shmem_of(op);
  const ir::SlotGeometry &g = ir::slots_of(op);
  LV *row = kb_.sym(op.pe);
  Index O = syms(g.view_offsets), zero(g.data_shape.size(), kb_.i64(0));
  if (!s.shape.empty())
    check_shmem_window(s, syms(op.view_offsets), zero, constants(g.view_shape));
  check_slots(s, g, row, O);
  LV *target = op.kind == OpKind::ShmemSignal && !op.target_all
                   ? B.CreateTrunc(kb_.sym(op.target_pe), B.getInt32Ty())
                   : B.getInt32(-1);
  return [=, this, &s, &g, &op](const Index &off, const Index &) {
    LV *slot = slot_of(g, O, off, row);
    LV *slot_off = B.CreateAdd(kb_.i64(s.signal_offset_bytes), B.CreateMul(slot, kb_.i64(32)));
    if (op.kind == OpKind::ShmemSignal) {
      auto runtime = [&] {
        return kb_.call_rt(RtFn::Signal,
                           {kb_.ctx_arg(), B.getInt32(s.group_index), target, slot_off, atomic(op),
                            B.getInt32(op.signal), B.getInt32(kb_.current_site())});
      };
      if (op.target_all)
        kb_.ret_if_error(runtime());
      else
        emit_direct_signal(kb_, s, target, slot_off, abi_atomic(op.atomic), op.signal, runtime);
    } else {
      emit_direct_wait(kb_, s, slot_off, abi_cmp(op.cmp), op.signal, op.clear, [&] {
        return kb_.call_rt(RtFn::WaitUntil,
                           {kb_.ctx_arg(), B.getInt32(s.group_index), slot_off,
                            B.getInt32(abi_cmp(op.cmp)), B.getInt32(op.signal),
                            B.getInt32(op.clear ? 1 : 0), slot, B.getInt32(kb_.current_site())});
      });
    }
  };
}

void ShmemLowering::clear_signal(const Op &op) {
  const auto &s = shmem_of(op);
  LV *blk = make_block({kb_.i64(s.signal_bytes / 4)}, {kb_.i64(1)}, {kb_.i64(1)});
  LV *status = kb_.call_rt(
      RtFn::Clear, {kb_.ctx_arg(), B.getInt32(s.group_index), kb_.i64(s.signal_offset_bytes),
                    kb_.i64(s.signal_offset_bytes + s.signal_bytes), B.getInt32(DT_INT32), blk,
                    B.getInt32(kb_.current_site())});
  kb_.ret_if_error(status);
}

void ShmemLowering::clear(const Op &op) {
  const auto &s = shmem_of(op);
  // Per dim, as the interpreter: a window that leaves a dim can still lie inside the heap
  // block, where the runtime's byte-limit check would let it zero the neighbouring rows.
  check_whole_window(s, op);
  Index ds = constants(shmem_strides(s));
  for_tiles(op.view_shape, op.tile.vec, [&](const Index &off, const Index &size) {
    LV *blk = make_block(size, ds, ds);
    LV *status =
        kb_.call_rt(RtFn::Clear, {kb_.ctx_arg(), B.getInt32(s.group_index), heap_offset(s, op, off),
                                  kb_.i64(s.data_offset_bytes + s.data_bytes), B.getInt32(s.dtype),
                                  blk, B.getInt32(kb_.current_site())});
    kb_.ret_if_error(status);
  });
}

// Per tile: the tile's data (when any of it is valid) then its slot, in one pto_rt_put_signal;
// a tile with no valid data only signals (the receiver waits on every tile's slot).
TileBody ShmemLowering::prepare_put_signal(const Op &op) {
  const ir::Value &src = p_.value(op.inputs[0]);
  const auto &s = shmem_of(op);
  const ir::SlotGeometry &g = ir::slots_of(op);
  Transfer t = begin_transfer(op, src.id, src.valid);
  LV *row = kb_.sym(op.target_pe);
  Index O = syms(g.view_offsets);
  check_slots(s, g, row, O);
  return [=, this, &s, &g, &op](const Index &off, const Index &size) {
    ClippedTile c = clip(t.valid, t.a.strides, off, size);
    LV *slot_off = slot_offset(s, slot_of(g, O, off, row));
    LV *site = B.getInt32(kb_.current_site());
    LV *sig_op = B.getInt32(abi_atomic(op.sig_atomic)), *value = B.getInt32(op.signal);
    auto signal = [&] { // the signal alone: in generated code where the table allows
      emit_direct_signal(kb_, s, t.pe, slot_off, abi_atomic(op.sig_atomic), op.signal, [&] {
        return kb_.call_rt(RtFn::Signal, {kb_.ctx_arg(), B.getInt32(s.group_index), t.pe, slot_off,
                                          sig_op, value, site});
      });
    };
    kb_.if_else(
        c.nonempty,
        [&] {
          LV *sp = B.CreateGEP(storage_type(B, t.local->dtype), t.a.base, c.lin);
          direct_or_runtime(
              t, "putsig",
              [&] { // the data straight into the peer's heap, then the signal (release)
                LV *dp = B.CreateGEP(B.getInt8Ty(), t.base, heap_offset(s, op, off));
                copy_tile(dp, t.heap_strides, sp, t.a.strides, c.ext, bytes_of(s.dtype));
                signal();
              },
              [&] {
                LV *blk = make_block(c.ext, t.a.strides, t.heap_strides);
                return kb_.call_rt(RtFn::PutSignal,
                                   {kb_.ctx_arg(), B.getInt32(s.group_index), t.pe, atomic(op), sp,
                                    B.getInt32(t.local->dtype), heap_offset(s, op, off),
                                    kb_.i64(s.data_offset_bytes + s.data_bytes),
                                    B.getInt32(s.dtype), blk, slot_off, sig_op, value, site});
              });
        },
        signal, "putsig", "putsig.empty", "putsig.end");
  };
}

LV *ShmemLowering::int32_out(ir::ValueId id, LV **stride) {
  Addr a = kb_.addr(id);
  if (stride)
    *stride = a.strides.back();
  return a.base;
}

// The slots of every element, in a stack array (element-major), then one runtime call.
void ShmemLowering::wait_set(const Op &op) {
  const size_t n = op.set_rows.size();
  LV *group = B.getInt32(0), *base = kb_.i64(0), *slots = nullptr;
  int64_t per_elem = 1;
  if (n > 0) {
    const auto &s = shmem_of(op);
    const ir::SlotGeometry &g = ir::slots_of(op);
    const auto tiles = tile_expand(g.view_shape, g.tile);
    per_elem = static_cast<int64_t>(tiles.size());
    group = B.getInt32(s.group_index);
    base = kb_.i64(s.signal_offset_bytes);
    auto *ty = llvm::ArrayType::get(B.getInt64Ty(), static_cast<uint64_t>(n) * tiles.size());
    slots = kb_.entry_alloca(ty, "wait_set");
    Index zero(g.data_shape.size(), kb_.i64(0));
    for (size_t i = 0; i < n; ++i) {
      Index O = syms(op.set_offsets[i]);
      LV *row = kb_.sym(op.set_rows[i]);
      if (!s.shape.empty())
        check_shmem_window(s, O, zero, constants(g.view_shape));
      check_slots(s, g, row, O);
      for (size_t k = 0; k < tiles.size(); ++k)
        B.CreateStore(slot_offset(s, slot_of(g, O, constants(tiles[k].offset), row)),
                      B.CreateConstGEP2_64(ty, slots, 0, i * tiles.size() + k));
    }
  } else {
    slots = kb_.entry_alloca(B.getInt64Ty(), "wait_set");
  }
  LV *status = llvm::ConstantPointerNull::get(B.getPtrTy()), *status_stride = kb_.i64(0),
     *status_valid = kb_.i64(0);
  if (!op.inputs.empty()) {
    const ir::Value &v = p_.value(op.inputs[0]);
    status = int32_out(op.inputs[0], &status_stride);
    status_valid = kb_.sym(v.valid.back());
    for (size_t d = 0; d + 1 < v.valid.size(); ++d) // nothing valid: every element included
      status_valid = B.CreateSelect(B.CreateICmpSLE(kb_.sym(v.valid[d]), kb_.i64(0)), kb_.i64(0),
                                    status_valid);
  }
  LV *null = llvm::ConstantPointerNull::get(B.getPtrTy());
  LV *out = null, *count = null, *out_stride = kb_.i64(0);
  if (op.kind == OpKind::ShmemWaitUntilAny) {
    out = int32_out(op.outputs.at(1), nullptr);
  } else if (op.kind == OpKind::ShmemWaitUntilSome) {
    out = int32_out(op.outputs.at(1), &out_stride);
    count = int32_out(op.outputs.at(2), nullptr);
    const int64_t len = p_.value(op.outputs[1]).shape.back().concrete();
    LV *stride = out_stride;
    kb_.for_loop(kb_.i64(0), kb_.i64(len), kb_.i64(1), [&](LV *i) { // entries past the count
      B.CreateStore(B.getInt32(-1), B.CreateGEP(B.getInt32Ty(), out, B.CreateMul(i, stride)));
    });
  } else if (op.kind == OpKind::ShmemTest) {
    count = int32_out(op.outputs.at(1), nullptr);
  }
  kb_.ret_if_error(kb_.call_rt(
      RtFn::WaitUntilSet,
      {kb_.ctx_arg(), group, B.getInt32(abi_wait_mode(op.kind)), B.getInt32(abi_wait_blocks(op)),
       slots, B.getInt32(static_cast<int32_t>(n)), B.getInt32(static_cast<int32_t>(per_elem)), base,
       status, status_stride, status_valid, B.getInt32(abi_cmp(op.cmp)), B.getInt32(op.signal),
       B.getInt32(op.clear ? 1 : 0), out, out_stride, count, B.getInt32(kb_.current_site())}));
}

LV *ShmemLowering::amo_operand(DataType dt, const SymbolicScalar &v, bool is_real, double real,
                               const char *name) {
  LV *slot = kb_.entry_alloca(B.getInt64Ty(), name); // 8 bytes: wide enough for each dtype
  LV *x;
  if (dt == DT_FP32)
    x = is_real ? static_cast<LV *>(llvm::ConstantFP::get(B.getFloatTy(), real))
                : B.CreateSIToFP(kb_.sym(v), B.getFloatTy());
  else if (dt == DT_INT32)
    x = B.CreateTrunc(kb_.sym(v), B.getInt32Ty());
  else
    x = kb_.sym(v);
  B.CreateStore(x, slot);
  return slot;
}

void ShmemLowering::atomic_op(const Op &op) {
  const auto &s = shmem_of(op);
  const DataType dt = op.slots ? DT_INT32 : s.dtype;
  LV *offset = nullptr, *limit = nullptr;
  if (op.slots) { // a signal word: the slot of the window's one tile
    const ir::SlotGeometry &g = *op.slots;
    Index O = syms(op.set_offsets.at(0)), zero(g.data_shape.size(), kb_.i64(0));
    LV *row = kb_.sym(op.set_rows.at(0));
    if (!s.shape.empty())
      check_shmem_window(s, O, zero, constants(g.view_shape));
    check_slots(s, g, row, O);
    offset = slot_offset(s, slot_of(g, O, zero, row));
    limit = kb_.i64(s.signal_offset_bytes + s.signal_bytes);
  } else {
    check_whole_window(s, op);
    offset = heap_offset(s, op, Index(s.shape.size(), kb_.i64(0)));
    limit = kb_.i64(s.data_offset_bytes + s.data_bytes);
  }
  LV *value = amo_operand(dt, op.amo_value, op.amo_is_real, op.amo_real, "amo_value");
  LV *cond = op.kind == OpKind::ShmemAtomicCompareSwap
                 ? amo_operand(dt, op.amo_cond, false, 0, "amo_cond")
                 : static_cast<LV *>(llvm::ConstantPointerNull::get(B.getPtrTy()));
  LV *old = int32_out(op.outputs.at(1), nullptr);
  kb_.ret_if_error(kb_.call_rt(RtFn::Atomic, {kb_.ctx_arg(), B.getInt32(s.group_index),
                                              B.CreateTrunc(kb_.sym(op.pe), B.getInt32Ty()),
                                              B.getInt32(abi_amo(op.kind)), B.getInt32(dt), offset,
                                              limit, value, cond, old, B.getInt32(op.slots ? 1 : 0),
                                              B.getInt32(kb_.current_site())}));
}

} // namespace

void lower_sync(KernelBuilder &kb, const Op &op) {
  auto &B = kb.builder();
  kb.ret_if_error(kb.call_rt(op.kind == OpKind::ShmemFence ? RtFn::Fence : RtFn::Quiet,
                             {kb.ctx_arg(), B.getInt32(kb.current_site())}));
}

void lower_put_signal(KernelBuilder &kb, const Op &op) {
  ShmemLowering sl(kb);
  sl.for_tiles(op.view_shape, op.tile.vec, sl.prepare_put_signal(op));
}

void lower_wait_set(KernelBuilder &kb, const Op &op) { ShmemLowering(kb).wait_set(op); }

void lower_atomic(KernelBuilder &kb, const Op &op) { ShmemLowering(kb).atomic_op(op); }

void lower_put(KernelBuilder &kb, const Op &op) {
  ShmemLowering sl(kb);
  sl.for_tiles(op.view_shape, op.tile.vec, sl.prepare_put(op));
}

void lower_get(KernelBuilder &kb, const Op &op) {
  ShmemLowering sl(kb);
  if (!sl.borrow_get(op))
    sl.for_tiles(op.view_shape, op.tile.vec, sl.prepare_get(op));
}

void lower_signal_wait(KernelBuilder &kb, const Op &op) {
  ShmemLowering sl(kb);
  const ir::SlotGeometry &g = ir::slots_of(op);
  sl.for_tiles(g.view_shape, g.tile, sl.prepare_signal_wait(op));
}

void lower_clear(KernelBuilder &kb, const Op &op) { ShmemLowering(kb).clear(op); }

void lower_clear_signal(KernelBuilder &kb, const Op &op) { ShmemLowering(kb).clear_signal(op); }

bool shmem_pipelines(const Op &first, const Op &second) {
  bool pair = (first.kind == OpKind::ShmemPut && second.kind == OpKind::ShmemSignal) ||
              (first.kind == OpKind::ShmemWaitUntil && second.kind == OpKind::ShmemGet);
  if (!pair || first.shmem != second.shmem || second.preds.size() != 1 ||
      second.preds[0] != first.outputs[0] || first.view_shape != second.view_shape ||
      first.view_offsets.size() != second.view_offsets.size())
    return false;
  for (size_t d = 0; d < first.view_offsets.size(); ++d)
    if (!first.view_offsets[d].same_as(second.view_offsets[d]))
      return false;
  const Op &sw = first.kind == OpKind::ShmemPut ? second : first;
  const Op &data = first.kind == OpKind::ShmemPut ? first : second;
  size_t r = data.view_shape.size();
  return sw.slots &&
         std::equal(sw.slots->tile.begin(), sw.slots->tile.end(), data.tile.vec.begin()) &&
         sw.slots->tile.size() == r;
}

void lower_shmem_pipelined(KernelBuilder &kb, const Op &first, const Op &second) {
  ShmemLowering sl(kb);
  auto body = [&](const Op &op) {
    kb.set_current_site(kb.site_of(op));
    return op.kind == OpKind::ShmemPut   ? sl.prepare_put(op)
           : op.kind == OpKind::ShmemGet ? sl.prepare_get(op)
                                         : sl.prepare_signal_wait(op);
  };
  TileBody a = body(first), b = body(second);
  int sa = kb.site_of(first), sb = kb.site_of(second);
  sl.for_tiles(first.view_shape, first.kind == OpKind::ShmemPut ? first.tile.vec : second.tile.vec,
               [&](const Index &off, const Index &size) {
                 kb.set_current_site(sa);
                 a(off, size);
                 kb.set_current_site(sb);
                 b(off, size);
               });
}

} // namespace pto::codegen
