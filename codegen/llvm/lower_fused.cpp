// lower_fused.cpp - See lower_fused.h. A group is lowered by one GroupLowering: tile loops and
// row loops (run), the passes of one row (row_passes), and the value of an op at a column vector
// (value_at / eval_op), with loads and stores converted between storage and compute types by
// dtype_codec.h.
#include "llvm/lower_fused.h"

#include "pto/element.h"
#include "pto/error.h"

#include "llvm/dtype_codec.h"
#include "llvm/lower_elementwise.h"
#include "llvm/lower_reduce.h"
#include "passes/run_checks.h"

#include <algorithm>
#include <functional>
#include <set>

namespace pto::codegen {

using ir::Op;
using ir::OpFamily;
using ir::OpKind;
using ir::ValueId;
using LV = llvm::Value;

namespace {

/// Accumulators per row of an Amax/Amin in a fused pass (independent chains of llvm.maximum).
constexpr int kMinMaxAccs = 4;

class GroupLowering {
public:
  GroupLowering(KernelBuilder &kb, const FusionPlan &plan, int gi, const FusedScratch &scratch,
                std::vector<ParRegion> &regions)
      : kb_(kb), B(kb.builder()), p_(kb.program()), g_(plan.groups[static_cast<size_t>(gi)]),
        gi_(gi), scratch_(scratch), regions_(regions) {
    for (OpId id : g_.ops)
      members_.push_back(&kb.op(id));
  }

  void run();

private:
  /// The state of one row of the group.
  struct RowCtx {
    std::vector<LV *> row;                   ///< row indices (R-1)
    LV *c_begin = nullptr, *c_end = nullptr; ///< the row's columns
    std::map<ValueId, LV *> uniform;         ///< per-row values (splat vectors)
    std::map<ValueId, LV *> row_base;        ///< element pointer of (row, col 0) per leaf/store
    std::map<const Op *, LV *> acc_slot;     ///< accumulator of each reduction
    /// Amax/Amin: kMinMaxAccs - 1 more accumulators, for independent chains of llvm.maximum
    /// (exact in any order, so combined once per row).
    std::map<const Op *, std::vector<LV *>> acc_more;
    std::set<ValueId> done_uniform; ///< uniforms computed so far
  };
  using Bounds = std::vector<std::pair<LV *, LV *>>;

  KernelBuilder &kb_;
  llvm::IRBuilder<> &B;
  const ir::Program &p_;
  const FusedGroup &g_;
  std::vector<const Op *> members_; ///< g_.ops, resolved
  const int gi_;
  const FusedScratch &scratch_;
  std::vector<ParRegion> &regions_;
  std::vector<LV *> rvalid_; ///< valid extent of each row dim
  LV *cols_valid_ = nullptr;

  bool too_small_to_split() const;
  void parallel_tiles(std::vector<LV *> &row);
  void tile_rows(size_t d, const Bounds &bounds, std::vector<LV *> &row);
  void rows(size_t k, const Bounds &bounds, std::vector<LV *> &row);
  void row_passes(const std::vector<LV *> &row, LV *c_begin, LV *c_end);
  void prepare_leaves(RowCtx &rc);
  void compute_uniforms(RowCtx &rc, int upto);
  std::vector<const Op *> start_reductions(RowCtx &rc, int pass);
  void pass_body(RowCtx &rc, const std::vector<const Op *> &reds, int pass, LV *c, LV *mask, int k);
  void vector_columns(LV *begin, LV *end, int unroll,
                      const std::function<void(LV *, LV *, int)> &body);
  LV *value_at(ValueId id, RowCtx &rc, LV *c, LV *mask, int pass, std::map<ValueId, LV *> &memo);
  LV *eval_op(const Op &op, RowCtx &rc, LV *c, int pass, LV *mask, std::map<ValueId, LV *> *memo);

  LV *row_ptr(ValueId id, RowCtx &rc, bool for_store);
  bool leaf_uniform(ValueId id) const;
  void load_uniform(ValueId id, LV *base, RowCtx &rc);
  int level_of(ValueId v) const;
  LV *load_vec(LV *ptr, DataType dt, LV *mask);
  void store_vec(LV *v, LV *ptr, DataType dt, LV *mask);
  LV *scalar_const(const ir::Scalar &scalar, DataType dt);
};

void GroupLowering::run() {
  kb_.set_current_site(g_.ops.front());
  for (auto &s : g_.row_valid)
    rvalid_.push_back(kb_.sym(s));
  cols_valid_ = kb_.smin(kb_.sym(g_.cols_valid), kb_.sym(g_.cols));
  if (g_.rank == 0)
    return;
  std::vector<LV *> row(g_.rank - 1);
  if (g_.rank >= 2 && !too_small_to_split())
    parallel_tiles(row);
  else
    tile_rows(0, {}, row);
}

/// A group whose space is known at compile time to hold fewer than two ranges' worth of elements
/// (kParallelGrainElems): it would never be split, so it is not outlined (no call, no compile
/// cost).
bool GroupLowering::too_small_to_split() const {
  if (!g_.cols.is_concrete())
    return false;
  int64_t n = std::max<int64_t>(g_.cols.concrete(), 1);
  for (const auto &d : g_.row_shape) {
    if (!d.is_concrete())
      return false;
    n = std::min<int64_t>(n * std::max<int64_t>(d.concrete(), 1), kParallelGrainElems * 2);
  }
  return n < 2 * kParallelGrainElems;
}

/// The outer row-tile loop over rows [lo, hi) of dim 0, lo and hi loaded from slots holding 0
/// and the valid extent, so that they are values the region takes from outside (its range once
/// outlined); the region is [par.body, par.end). Inside, tiles of g_.tile[0] rows from lo.
void GroupLowering::parallel_tiles(std::vector<LV *> &row) {
  ParRegion r;
  auto *lo_slot = kb_.entry_alloca(B.getInt64Ty(), "par.lo");
  auto *hi_slot = kb_.entry_alloca(B.getInt64Ty(), "par.hi");
  B.CreateStore(kb_.i64(0), lo_slot);
  B.CreateStore(rvalid_[0], hi_slot);
  r.lo = B.CreateLoad(B.getInt64Ty(), lo_slot, "par.lo");
  r.hi = B.CreateLoad(B.getInt64Ty(), hi_slot, "par.hi");
  // Elements per dim-0 row (the inner row dims times the columns): ranges of at least
  // kParallelGrainElems elements, so a small group stays on one thread.
  LV *per_row = kb_.smax(cols_valid_, kb_.i64(1));
  for (size_t d = 1; d + 1 < g_.rank; ++d)
    per_row = B.CreateMul(per_row, kb_.smax(rvalid_[d], kb_.i64(1)), "", false, true);
  r.grain = kb_.smax(B.CreateSDiv(kb_.i64(kParallelGrainElems), per_row), kb_.i64(1));
  r.workers = scratch_.workers;
  r.ctx = kb_.ctx_arg();
  for (const auto &[key, base] : scratch_.base)
    if (key.first == gi_)
      r.strides[base] = scratch_.stride.at(base);
  r.begin = kb_.block("par.body");
  r.end = kb_.block("par.end");
  B.CreateBr(r.begin);
  B.SetInsertPoint(r.begin);
  const int64_t t = g_.tile[0];
  LV *hi = r.hi;
  kb_.for_loop(
      r.lo, hi, kb_.i64(t),
      [&](LV *t0) { tile_rows(1, {{t0, kb_.smin(B.CreateAdd(t0, kb_.i64(t)), hi)}}, row); },
      "tile");
  B.CreateBr(r.end);
  B.SetInsertPoint(r.end);
  regions_.push_back(r);
}

/// Row-dim tile loops: for each row dim, an outer tile loop; then the row loops (rows).
void GroupLowering::tile_rows(size_t d, const Bounds &bounds, std::vector<LV *> &row) {
  if (d + 1 >= g_.rank) {
    rows(0, bounds, row);
    return;
  }
  int64_t t = g_.tile[d];
  kb_.for_loop(
      kb_.i64(0), rvalid_[d], kb_.i64(t),
      [&](LV *t0) {
        auto b2 = bounds;
        b2.push_back({t0, kb_.smin(B.CreateAdd(t0, kb_.i64(t)), rvalid_[d])});
        tile_rows(d + 1, b2, row);
      },
      "tile");
}

/// The row loops inside one tile, then the row's column tiles (one unless the group has a tile
/// narrower than its columns and no reduction).
void GroupLowering::rows(size_t k, const Bounds &bounds, std::vector<LV *> &row) {
  if (k == bounds.size()) {
    const size_t r = g_.rank;
    int64_t tc = g_.has_reduce ? 0 : g_.tile[r - 1];
    if (tc <= 0 || (g_.cols.is_concrete() && tc >= g_.cols.concrete())) {
      row_passes(row, kb_.i64(0), cols_valid_);
    } else {
      kb_.for_loop(
          kb_.i64(0), cols_valid_, kb_.i64(tc),
          [&](LV *c0) { row_passes(row, c0, kb_.smin(B.CreateAdd(c0, kb_.i64(tc)), cols_valid_)); },
          "ctile");
    }
    return;
  }
  kb_.for_loop(
      bounds[k].first, bounds[k].second, kb_.i64(1),
      [&](LV *i) {
        row[k] = i;
        rows(k + 1, bounds, row);
      },
      "row");
}

/// One row: uniform leaves, then the passes.
void GroupLowering::row_passes(const std::vector<LV *> &row, LV *c_begin, LV *c_end) {
  RowCtx rc;
  rc.row = row;
  rc.c_begin = c_begin;
  rc.c_end = c_end;
  prepare_leaves(rc);
  for (int pass = 0; pass < g_.passes; ++pass) {
    compute_uniforms(rc, pass);
    std::vector<const Op *> reds = start_reductions(rc, pass);
    const bool minmax = std::any_of(reds.begin(), reds.end(),
                                    [&](const Op *op) { return rc.acc_more.count(op) > 0; });
    const int unroll = minmax ? kMinMaxAccs : 1;
    vector_columns(c_begin, c_end, unroll,
                   [&](LV *c, LV *mask, int k) { pass_body(rc, reds, pass, c, mask, k); });
  }
  compute_uniforms(rc, g_.passes + 1);
}

/// Row pointers and uniform leaves first, so every later block is dominated by them.
void GroupLowering::prepare_leaves(RowCtx &rc) {
  for (const Op *op : members_) {
    for (ValueId in : op->inputs)
      if (!g_.values.count(in)) {
        LV *base = row_ptr(in, rc, false);
        if (leaf_uniform(in) && !rc.uniform.count(in))
          load_uniform(in, base, rc);
      }
    if (op->kind == OpKind::Assemble || g_.values.at(op->outputs[0]).store)
      row_ptr(op->outputs[0], rc, true);
  }
}

/// The uniform values available from pass `upto` not computed yet: reductions finished
/// horizontally, other ops evaluated once per row; stored when used outside the group.
void GroupLowering::compute_uniforms(RowCtx &rc, int upto) {
  for (const Op *op : members_) {
    if (op->kind == OpKind::Assemble)
      continue;
    ValueId out = op->outputs[0];
    const FusedValue &fv = g_.values.at(out);
    if (!fv.uniform || fv.level > upto || rc.done_uniform.count(out))
      continue;
    DataType dt = p_.value(out).dtype;
    LV *val;
    if (ir::op_info(op->kind).family == OpFamily::Reduce) {
      DataType in_dt = p_.value(op->inputs[0]).dtype;
      auto *vt = kb_.vec_type(compute_type(B, in_dt));
      LV *acc = B.CreateLoad(vt, rc.acc_slot.at(op));
      if (auto more = rc.acc_more.find(op); more != rc.acc_more.end())
        for (LV *slot : more->second)
          acc = reduce_step(kb_, op->kind, acc, B.CreateLoad(vt, slot), in_dt);
      val = empty_sum_is_plus_zero(kb_, op->kind, in_dt, rc.c_end, rc.c_begin,
                                   reduce_horizontal(kb_, op->kind, acc, in_dt));
      val = round_to(B, kb_.splat(val), dt);
    } else {
      val = eval_op(*op, rc, nullptr, /*pass=*/-1, nullptr, nullptr);
    }
    rc.uniform[out] = val;
    rc.done_uniform.insert(out);
    if (fv.store) {
      LV *ptr = row_ptr(out, rc, true);
      LV *lane0 = B.CreateExtractElement(narrow(B, val, dt), uint64_t{0});
      B.CreateStore(lane0, ptr);
    }
  }
}

/// The accumulators of the reductions fed in `pass`, set to their identity.
std::vector<const Op *> GroupLowering::start_reductions(RowCtx &rc, int pass) {
  std::vector<const Op *> reds;
  for (const Op *op : members_)
    if (ir::op_info(op->kind).family == OpFamily::Reduce && g_.values.at(op->outputs[0]).uniform &&
        level_of(op->inputs[0]) == pass) {
      DataType in_dt = p_.value(op->inputs[0]).dtype;
      LV *slot = kb_.entry_alloca(kb_.vec_type(compute_type(B, in_dt)), "acc");
      B.CreateStore(reduce_identity(kb_, op->kind, in_dt), slot);
      rc.acc_slot[op] = slot;
      if (op->kind == OpKind::Amax || op->kind == OpKind::Amin)
        for (int k = 1; k < kMinMaxAccs; ++k) {
          LV *more = kb_.entry_alloca(kb_.vec_type(compute_type(B, in_dt)), "acc.more");
          B.CreateStore(reduce_identity(kb_, op->kind, in_dt), more);
          rc.acc_more[op].push_back(more);
        }
      reds.push_back(op);
    }
  return reds;
}

/// Columns [c, c+W) of one pass: reduction steps, then the stores and scratch writes of the
/// values computed in this pass.
void GroupLowering::pass_body(RowCtx &rc, const std::vector<const Op *> &reds, int pass, LV *c,
                              LV *mask, int k) {
  std::map<ValueId, LV *> memo;
  for (const Op *op : reds) {
    DataType in_dt = p_.value(op->inputs[0]).dtype;
    LV *v = value_at(op->inputs[0], rc, c, mask, pass, memo);
    if (mask)
      v = B.CreateSelect(mask, v, reduce_identity(kb_, op->kind, in_dt));
    auto more = rc.acc_more.find(op);
    LV *slot = k > 0 && more != rc.acc_more.end() ? more->second[static_cast<size_t>(k - 1)]
                                                  : rc.acc_slot.at(op);
    LV *acc = B.CreateLoad(v->getType(), slot);
    B.CreateStore(reduce_step(kb_, op->kind, acc, v, in_dt), slot);
  }
  for (const Op *op : members_) {
    if (op->kind == OpKind::Assemble) {
      ValueId x = op->inputs[0];
      if (level_of(x) != pass)
        continue;
      LV *v = value_at(x, rc, c, mask, pass, memo);
      DataType dt = p_.value(x).dtype;
      LV *ptr = B.CreateGEP(storage_type(B, dt), row_ptr(op->outputs[0], rc, true), c);
      store_vec(v, ptr, dt, mask);
      continue;
    }
    ValueId out = op->outputs[0];
    const FusedValue &fv = g_.values.at(out);
    if (fv.uniform || fv.level != pass || (!fv.store && !fv.scratch))
      continue;
    LV *v = value_at(out, rc, c, mask, pass, memo);
    DataType dt = p_.value(out).dtype;
    if (fv.store) {
      LV *ptr = B.CreateGEP(storage_type(B, dt), row_ptr(out, rc, true), c);
      store_vec(v, ptr, dt, mask);
    }
    if (fv.scratch) {
      LV *sp = B.CreateGEP(compute_type(B, dt), scratch_.at({gi_, out}), c);
      B.CreateAlignedStore(v, sp, llvm::Align(4)); // scratch has a full vector of slack
    }
  }
}

/// With unroll > 1: for (c = begin; c + unroll*W <= end; c += unroll*W) body(c + k*W, null, k)
/// for k < unroll; then for (; c + W <= end; c += W) body(c, null, 0); then one masked tail
/// (k = 0).
void GroupLowering::vector_columns(LV *begin, LV *end, int unroll,
                                   const std::function<void(LV *, LV *, int)> &body) {
  const int W = kb_.lanes();
  LV *cslot = kb_.entry_alloca(B.getInt64Ty(), "c");
  B.CreateStore(begin, cslot);
  if (unroll > 1)
    kb_.for_loop(
        begin, B.CreateSub(end, kb_.i64(int64_t{unroll} * W - 1)), kb_.i64(int64_t{unroll} * W),
        [&](LV *c) {
          for (int k = 0; k < unroll; ++k)
            body(B.CreateAdd(c, kb_.i64(int64_t{k} * W)), nullptr, k);
          B.CreateStore(B.CreateAdd(c, kb_.i64(int64_t{unroll} * W)), cslot);
        },
        "vecu");
  LV *last_full = B.CreateSub(end, kb_.i64(W - 1));
  kb_.for_loop(
      B.CreateLoad(B.getInt64Ty(), cslot), last_full, kb_.i64(W),
      [&](LV *c) {
        body(c, nullptr, 0);
        B.CreateStore(B.CreateAdd(c, kb_.i64(W)), cslot);
      },
      "vec");
  LV *c = B.CreateLoad(B.getInt64Ty(), cslot);
  auto *tail = kb_.block("tail");
  auto *done = kb_.block("tail.done");
  B.CreateCondBr(B.CreateICmpSLT(c, end), tail, done);
  B.SetInsertPoint(tail);
  std::vector<llvm::Constant *> iota;
  for (int i = 0; i < W; ++i)
    iota.push_back(B.getInt64(static_cast<uint64_t>(i)));
  LV *lanes = B.CreateAdd(kb_.splat(c), llvm::ConstantVector::get(iota));
  LV *mask = B.CreateICmpSLT(lanes, kb_.splat(end));
  body(c, mask, 0);
  B.CreateBr(done);
  B.SetInsertPoint(done);
}

/// The value of `id` at columns [c, c+W) of the current row, in pass `pass`. Iterative over the
/// group's producers (each value's inputs first, from an explicit stack), so a chain of any
/// length lowers without deep recursion; eval_op then finds its inputs in `memo`.
LV *GroupLowering::value_at(ValueId id, RowCtx &rc, LV *c, LV *mask, int pass,
                            std::map<ValueId, LV *> &memo) {
  auto known = [&](ValueId v) -> LV * {
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    if (auto it = rc.uniform.find(v); it != rc.uniform.end())
      return it->second;
    return nullptr;
  };
  std::vector<ValueId> todo{id};
  while (!todo.empty()) {
    const ValueId v = todo.back();
    if (known(v)) {
      todo.pop_back();
      continue;
    }
    auto gv = g_.values.find(v);
    if (gv == g_.values.end()) { // a leaf
      todo.pop_back();
      const ir::Value &val = p_.value(v);
      LV *base = row_ptr(v, rc, false);
      if (leaf_uniform(v))
        load_uniform(v, base, rc);
      else
        memo[v] = load_vec(B.CreateGEP(storage_type(B, val.dtype), base, c), val.dtype, mask);
      continue;
    }
    if (gv->second.level < pass && gv->second.scratch) {
      todo.pop_back();
      llvm::Type *ct = compute_type(B, p_.value(v).dtype);
      memo[v] = B.CreateAlignedLoad(kb_.vec_type(ct), B.CreateGEP(ct, scratch_.at({gi_, v}), c),
                                    llvm::Align(4));
      continue;
    }
    const Op *op = &kb_.op(g_.producers.at(v));
    bool ready = true;
    for (size_t i = op->inputs.size(); i-- > 0;) // inputs in order: in(0) is emitted first
      if (!known(op->inputs[i])) {
        todo.push_back(op->inputs[i]);
        ready = false;
      }
    if (!ready)
      continue;
    todo.pop_back();
    memo[v] = eval_op(*op, rc, c, pass, mask, &memo);
  }
  return known(id);
}

LV *GroupLowering::eval_op(const Op &op, RowCtx &rc, LV *c, int pass, LV *mask,
                           std::map<ValueId, LV *> *memo) {
  std::map<ValueId, LV *> local;
  auto &m = memo ? *memo : local;
  const int group_site = kb_.current_site();
  DataType out_dt = p_.value(op.outputs[0]).dtype;
  auto in = [&](size_t i) { return value_at(op.inputs[i], rc, c, mask, pass, m); };
  LV *v = nullptr;
  switch (ir::op_info(op.kind).family) {
  case OpFamily::Unary: {
    LV *a = in(0);
    kb_.set_current_site(kb_.site_of(op)); // a failure inside names this op, not the group's
    v = lower_unary(kb_, op, a, p_.value(op.inputs[0]).dtype, out_dt);
    break;
  }
  case OpFamily::Binary: {
    DataType dt = p_.value(op.inputs[0]).dtype;
    LV *a, *b;
    if (op.scalar) {
      LV *s = scalar_const(*op.scalar, dt);
      a = op.scalar_first ? s : in(0);
      b = op.scalar_first ? in(0) : s;
    } else {
      a = in(0);
      b = in(1);
    }
    kb_.set_current_site(kb_.site_of(op)); // e.g. an integer division by zero names this op
    v = lower_binary(kb_, op, a, b, dt, mask);
    break;
  }
  case OpFamily::Select: {
    LV *cond = in(0);
    v = B.CreateSelect(B.CreateICmpNE(cond, llvm::Constant::getNullValue(cond->getType())), in(1),
                       in(2));
    break;
  }
  case OpFamily::Create:
    v = scalar_const(ir::scalar_of(op), out_dt);
    break;
  case OpFamily::Reduce:
    v = in(0);
    break; // a reduction over one column is the identity
  case OpFamily::Move:
  case OpFamily::Shmem:
  case OpFamily::Control:
  case OpFamily::Matmul:
  case OpFamily::Standalone:
  case OpFamily::Library:
  case OpFamily::Check:
    throw InternalError(op.where, ir::op_info(op.kind).name, "cannot evaluate in a fused group");
  }
  kb_.set_current_site(group_site);
  return round_to(B, v, out_dt);
}

// ---- memory ----------------------------------------------------------------------------------
/// Element pointer of (row, col 0) of value `id` broadcast into the group space.
LV *GroupLowering::row_ptr(ValueId id, RowCtx &rc, bool for_store) {
  auto it = rc.row_base.find(id);
  if (it != rc.row_base.end())
    return it->second;
  const ir::Value &v = p_.value(id);
  Addr a = kb_.addr(id);
  size_t r = g_.rank, vr = v.shape.size();
  LV *lin = kb_.i64(0);
  for (size_t d = 0; d + 1 < vr; ++d) { // right-aligned (numpy); the last dim is the column
    size_t gd = d + (r - vr);
    bool bc = v.shape[d].is_concrete() && v.shape[d].concrete() == 1 &&
              !(g_.row_shape[gd].is_concrete() && g_.row_shape[gd].concrete() == 1);
    if (!bc || for_store)
      lin = B.CreateAdd(lin, B.CreateMul(rc.row[gd], a.strides[d]));
  }
  LV *p = B.CreateGEP(storage_type(B, v.dtype), a.base, lin);
  rc.row_base[id] = p;
  return p;
}

/// A leaf with one column in a group with more: one value per row.
bool GroupLowering::leaf_uniform(ValueId id) const {
  const ir::Value &v = p_.value(id);
  bool single = g_.cols.is_concrete() && g_.cols.concrete() == 1;
  return !single && v.shape.back().is_concrete() && v.shape.back().concrete() == 1 &&
         v.shape.size() <= g_.rank;
}

/// Loads uniform leaf `id` at `base` once and splats it.
void GroupLowering::load_uniform(ValueId id, LV *base, RowCtx &rc) {
  DataType dt = p_.value(id).dtype;
  LV *sc = B.CreateLoad(storage_type(B, dt), base);
  rc.uniform[id] = widen(B, kb_.splat(sc), dt);
}

int GroupLowering::level_of(ValueId v) const {
  auto it = g_.values.find(v);
  return it == g_.values.end() ? 0 : it->second.level;
}

/// Loads W (or masked) storage elements at `ptr` and converts them to the compute type.
LV *GroupLowering::load_vec(LV *ptr, DataType dt, LV *mask) {
  auto *vt = kb_.vec_type(storage_type(B, dt));
  LV *raw = mask ? static_cast<LV *>(B.CreateMaskedLoad(vt, ptr, llvm::Align(1), mask,
                                                        llvm::Constant::getNullValue(vt)))
                 : static_cast<LV *>(B.CreateAlignedLoad(vt, ptr, llvm::Align(1)));
  return widen(B, raw, dt);
}

void GroupLowering::store_vec(LV *v, LV *ptr, DataType dt, LV *mask) {
  LV *raw = narrow(B, v, dt);
  if (mask)
    B.CreateMaskedStore(raw, ptr, llvm::Align(1), mask);
  else
    B.CreateAlignedStore(raw, ptr, llvm::Align(1));
}

/// A scalar operand or fill value, splat in the compute type of `dt`.
LV *GroupLowering::scalar_const(const ir::Scalar &scalar, DataType dt) {
  auto *vt = kb_.vec_type(compute_type(B, dt));
  const ir::Scalar s = ir::as_element(scalar, dt);
  if (is_float(dt)) {
    // The scalar is an element of the tensor's dtype: rounded once, on the host, as the
    // interpreter rounds it.
    return llvm::ConstantFP::get(vt, element::round_scalar(s.f, dt));
  }
  return llvm::ConstantInt::get(vt, static_cast<uint64_t>(s.i), true);
}

} // namespace

FusedScratch alloc_fused_scratch(KernelBuilder &kb, const FusionPlan &plan) {
  auto &B = kb.builder();
  FusedScratch scratch;
  scratch.workers = kb.call_rt(RtFn::Workers, {});
  LV *copies = B.CreateZExt(scratch.workers, B.getInt64Ty());
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    auto &grp = plan.groups[g];
    for (auto &[id, fv] : grp.values) {
      if (!fv.scratch)
        continue;
      // One row of the compute type (8 bytes), rounded up to whole vectors: cols is a checked
      // dim, but 8 bytes per element can still pass the limit.
      LV *bytes = kb.checked_bytes({grp.cols + kb.lanes()}, 8, result_size_overflow(kb.value(id)),
                                   kb.def_site(id));
      // One row per worker, each 64-byte aligned; a product past INT64_MAX asks for INT64_MAX
      // bytes, which pto_rt_alloc refuses (a RuntimeError at the group).
      LV *stride = B.CreateAnd(B.CreateAdd(bytes, kb.i64(63)), kb.i64(~int64_t{63}));
      LV *prod = B.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, stride, copies);
      LV *total = B.CreateSelect(B.CreateExtractValue(prod, 1), kb.i64(INT64_MAX),
                                 B.CreateExtractValue(prod, 0));
      LV *buf = kb.call_rt(RtFn::Alloc, {kb.ctx_arg(), total, B.getInt32(grp.ops.front())});
      kb.ret_if_error(B.CreateZExt(B.CreateIsNull(buf), B.getInt32Ty()));
      scratch.base[{static_cast<int>(g), id}] = buf;
      scratch.stride[buf] = stride;
    }
  }
  return scratch;
}

void lower_fused_group(KernelBuilder &kb, const FusionPlan &plan, int gi,
                       const FusedScratch &scratch, std::vector<ParRegion> &regions) {
  GroupLowering(kb, plan, gi, scratch, regions).run();
}

} // namespace pto::codegen
