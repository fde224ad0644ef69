// fuse.cpp - See fuse.h.
#include "passes/fuse.h"

#include "pto/error.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>

namespace pto::codegen {

using ir::Op;
using ir::OpFamily;
using ir::OpKind;
using ir::ValueId;

namespace {

/// The most ops one fused group takes: a group is one basic block per row pass, and LLVM's
/// machine scheduler is quadratic in a block's size, so a longer chain is split into groups
/// (each stores its result once) and compile time stays linear in the chain's length.
constexpr size_t kMaxGroupOps = 1024;

bool is_one(const SymbolicScalar &s) { return s.is_concrete() && s.concrete() == 1; }

/// Calls `fn` on every SymbolicScalar attribute of `op` itself (not its operands or bodies).
void for_each_attr(const Op &op, const std::function<void(const SymbolicScalar &)> &fn) {
  for (const SymbolicScalar *s :
       {&op.pe, &op.target_pe, &op.diagonal, &op.start, &op.stop, &op.step})
    fn(*s);
  for (auto &s : op.view_offsets)
    fn(s);
  for (auto &s : op.view_valid)
    fn(s);
  if (op.slots)
    for (auto &s : op.slots->view_offsets)
      fn(s);
  for (auto &path : op.paths)
    fn(path.guard);
  fn(op.holds);
  for (auto &s : op.args)
    fn(s);
}

/// True when `op`'s attributes or its operands' valid shapes and view offsets read a tensor
/// element (Tensor::at): such an op starts a fused group of its own, so the element is read
/// after every earlier op has stored its results.
bool reads_elements(const ir::Program &p, const Op &op) {
  bool found = false;
  auto look = [&](const SymbolicScalar &s) {
    found = found || (!s.is_concrete() && mentions(s, SymKind::TensorElement));
  };
  for_each_attr(op, look);
  for (const auto *ids : {&op.inputs, &op.outputs})
    for (ValueId id : *ids) {
      for (auto &s : p.value(id).valid)
        look(s);
      for (auto &s : p.value(id).offsets)
        look(s);
    }
  return found;
}

/// The values (and their storage roots) whose elements run-time scalars read anywhere in `ops`
/// (and, for the kernel body, in any value's valid shape or view offsets): they need storage.
void collect_element_reads(const ir::Program &p, const std::vector<Op> &ops,
                           std::set<ValueId> &out) {
  auto note = [&](const SymbolicScalar &s) {
    if (s.is_concrete())
      return;
    for_each_symbol(s, [&](const SymExpr &e) {
      if (e.sym == SymKind::TensorElement) {
        out.insert(static_cast<ValueId>(e.a));
        out.insert(p.root(static_cast<ValueId>(e.a)).id);
      }
    });
  };
  for (const Op &op : ops) {
    for_each_attr(op, note);
    collect_element_reads(p, op.body, out);
    for (auto &path : op.paths)
      collect_element_reads(p, path.body, out);
  }
  if (&ops == &p.body)
    for (auto &v : p.values) {
      for (auto &s : v.valid)
        note(s);
      for (auto &s : v.offsets)
        note(s);
    }
}

bool same_dims(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i]))
      return false;
  return true;
}

bool groupable(const ir::Program &p, const Op &op) {
  switch (ir::op_info(op.kind).family) {
  case OpFamily::Unary:
  case OpFamily::Binary:
  case OpFamily::Select: // three inputs; fits() and the levels consider every input
  case OpFamily::Create:
  case OpFamily::Move:
    return true;
  case OpFamily::Reduce: {
    // Last-axis reductions fuse as per-row values; without keepdim only at rank 1 (a rank R-1
    // result would broadcast along columns, numpy-style, not along rows).
    const ir::Value &in = p.value(op.inputs[0]);
    int rank = static_cast<int>(in.shape.size());
    // Over one column a fused reduction is the identity, computed in the column loop: only
    // right when that column is surely valid (an empty one must still give the empty result,
    // so it is lowered on its own).
    if (is_one(in.shape.back()) && !is_one(in.valid.back()))
      return false;
    return op.axis == rank - 1 && (op.keepdim || rank == 1);
  }
  case OpFamily::Shmem:
  case OpFamily::Control:
  case OpFamily::Matmul:
  case OpFamily::Standalone: // standalone and library: inputs and outputs get storage
  case OpFamily::Library:
  case OpFamily::Check:
    return false;
  }
  return false;
}

/// The window of storage value `id` covers: its view offsets (zeros for a whole value) and
/// shape.
struct Window {
  std::vector<SymbolicScalar> offsets, shape;
};
Window window_of(const ir::Program &p, ValueId id) {
  const ir::Value &v = p.value(id);
  if (v.kind == ir::ValueKind::View)
    return {v.offsets, v.shape};
  return {std::vector<SymbolicScalar>(v.shape.size(), SymbolicScalar(0)), v.shape};
}
bool same_window(const Window &a, const Window &b) {
  return same_dims(a.offsets, b.offsets) && same_dims(a.shape, b.shape);
}
/// True when the windows share no element for sure (concrete and apart in some dim).
bool disjoint(const Window &a, const Window &b) {
  for (size_t d = 0; d < a.offsets.size() && d < b.offsets.size(); ++d) {
    const SymbolicScalar *s[] = {&a.offsets[d], &a.shape[d], &b.offsets[d], &b.shape[d]};
    if (!std::all_of(std::begin(s), std::end(s), [](auto *x) { return x->is_concrete(); }))
      continue;
    if (a.offsets[d].concrete() + a.shape[d].concrete() <= b.offsets[d].concrete() ||
        b.offsets[d].concrete() + b.shape[d].concrete() <= a.offsets[d].concrete())
      return true;
  }
  return false;
}

/// What planning reads: the program, its op ids and its tile plan (the [rows..., L] space each
/// compute op walks, its valid extents and its tile).
struct Ctx {
  const ir::Program &p;
  const SiteTable &sites;
  const TilePlan &tiles;
  const TiledOp &tiled(const Op &op) const { return tiles.at(sites.of(op)); }
};

/// What storage_hazard and fits need to know about the members of the open group, kept up to
/// date as members join (so planning a chain of n ops takes O(n log n), not O(n^2)).
struct GroupState {
  std::set<ValueId> computed;                       ///< outputs of non-assemble members
  std::map<ValueId, const Op *> producer;           ///< of each computed value
  bool one_pass = true;                             ///< no reduction member
  std::map<ValueId, std::vector<Window>> assembled; ///< per storage root: windows assembled into
  /// Per storage root: (member, input) pairs of members reading it.
  std::map<ValueId, std::vector<std::pair<const Op *, ValueId>>> reads;

  void add(const ir::Program &p, const Op &op) {
    if (op.kind == OpKind::Assemble) {
      assembled[p.root(op.outputs[0]).id].push_back(window_of(p, op.outputs[0]));
    } else {
      computed.insert(op.outputs[0]);
      producer[op.outputs[0]] = &op;
      one_pass = one_pass && ir::op_info(op.kind).family != OpFamily::Reduce;
    }
    for (ValueId in : op.inputs)
      reads[p.root(in).id].emplace_back(&op, in);
  }
};

/// A group runs its members row by row: values flow in registers, and each row is stored (or
/// assembled) as soon as it is computed. An assemble writes into the storage of its output's
/// base, so `op` must start a group of its own when, inside the group, it would
/// - read storage an assemble member writes (it must see every row written, not only rows done);
/// - assemble into a value a member computes (members read that value's registers, not the
///   assembled data, and the producer's store could land after the assemble's);
/// - assemble into storage a member reads, unless every such read is this window, feeds this
///   assemble and the group has one pass (an in-place update: each row is loaded, then stored);
/// - assemble into storage an assemble member writes, unless the windows are equal or apart
///   (overlapping windows at other offsets, written row by row, would interleave).
bool storage_hazard(const ir::Program &p, const GroupState &g, const Op &op) {
  for (ValueId in : op.inputs)
    if (g.assembled.count(p.root(in).id))
      return true;
  if (op.kind != OpKind::Assemble)
    return false;
  const ValueId dst = p.root(op.outputs[0]).id;
  const Window w = window_of(p, op.outputs[0]);
  if (g.computed.count(dst))
    return true;
  if (auto it = g.assembled.find(dst); it != g.assembled.end())
    for (const Window &mw : it->second)
      if (!same_window(mw, w) && !disjoint(mw, w))
        return true;
  auto reads = g.reads.find(dst);
  if (reads == g.reads.end())
    return false;
  // The members this assemble's input is computed from (in-place reads must be among them).
  std::set<ValueId> cone;
  std::vector<ValueId> todo{op.inputs[0]};
  while (!todo.empty()) {
    ValueId v = todo.back();
    todo.pop_back();
    auto it = g.producer.find(v);
    if (it == g.producer.end() || !cone.insert(v).second)
      continue;
    todo.insert(todo.end(), it->second->inputs.begin(), it->second->inputs.end());
  }
  for (auto [m, in] : reads->second) {
    if (g.computed.count(in))
      continue;
    bool in_place = g.one_pass && m->kind != OpKind::Assemble && cone.count(m->outputs[0]) &&
                    same_window(window_of(p, in), w);
    if (!in_place)
      return true;
  }
  return false;
}

/// Can `op` join `g` (whose space is set)? Its space must be g's, or a uniform (last dim 1)
/// variant of it; tiles must agree; leaves must broadcast into the space.
bool fits(const Ctx &c, const FusedGroup &g, const GroupState &gs, const Op &op) {
  const ir::Program &p = c.p;
  const TiledOp &s = c.tiled(op);
  if (s.space.size() != g.rank)
    return false;
  size_t r = g.rank;
  std::vector<SymbolicScalar> rows(s.space.begin(), s.space.end() - 1);
  std::vector<SymbolicScalar> rvalid(s.valid.begin(), s.valid.end() - 1);
  if (!same_dims(rows, g.row_shape) || !same_dims(rvalid, g.row_valid))
    return false;
  bool full = s.space[r - 1].same_as(g.cols);
  if (full && !s.valid[r - 1].same_as(g.cols_valid))
    return false;
  if (!full && !is_one(s.space[r - 1]))
    return false;
  if (!full && op.kind == OpKind::Assemble)
    return false;
  // A reduction over a one-column (uniform) input is the identity; in a wider group it would
  // accumulate the row value once per column.
  if (!full && ir::op_info(op.kind).family == OpFamily::Reduce)
    return false;
  if (g.tile != s.tile)
    return false;
  if (storage_hazard(p, gs, op))
    return false;
  for (ValueId in : op.inputs) {
    const ir::Value &v = p.value(in);
    // A view of a value this group computes reads other rows and tiles of it: the value must be
    // stored first, so the reader starts a group of its own.
    if (v.kind == ir::ValueKind::View && gs.computed.count(v.base))
      return false;
    if (v.shape.size() > r)
      return false;
    size_t off = r - v.shape.size();
    for (size_t d = 0; d < v.shape.size(); ++d) {
      const SymbolicScalar &gd = d + off == r - 1 ? g.cols : g.row_shape[d + off];
      if (!v.shape[d].same_as(gd) && !is_one(v.shape[d]))
        return false;
    }
  }
  return true;
}

FusedGroup start_group(const Ctx &c, const Op &op) {
  FusedGroup g;
  const TiledOp &s = c.tiled(op);
  g.rank = s.space.size();
  g.row_shape.assign(s.space.begin(), s.space.end() - 1);
  g.row_valid.assign(s.valid.begin(), s.valid.end() - 1);
  g.cols = s.space.back();
  g.cols_valid = s.valid.back();
  g.tile = s.tile;
  return g;
}

/// Levels, uniformity and scratch needs once the membership is fixed. Values in `element_reads`
/// are stored (run-time scalars read them).
void finish_group(const Ctx &c, FusedGroup &g, const std::map<ValueId, std::vector<OpId>> &users,
                  const std::set<ValueId> &element_reads) {
  const ir::Program &p = c.p;
  bool single_col = is_one(g.cols);
  std::set<OpId> members(g.ops.begin(), g.ops.end());
  auto level_of = [&](ValueId v) { // leaves are level 0
    auto it = g.values.find(v);
    return it == g.values.end() ? 0 : it->second.level;
  };
  int max_pass = 0;
  for (OpId id : g.ops) {
    const Op *op = &c.sites.op(id);
    if (op->kind == OpKind::Assemble) {
      max_pass = std::max(max_pass, level_of(op->inputs[0]));
      continue;
    }
    FusedValue fv;
    if (ir::op_info(op->kind).family == OpFamily::Reduce) {
      g.has_reduce = true;
      int in_level = level_of(op->inputs[0]);
      if (single_col) {
        fv.level = in_level; // a reduction over one column is the identity
      } else {
        fv.level = in_level + 1;
        fv.uniform = true;
        max_pass = std::max(max_pass, in_level);
      }
    } else {
      for (ValueId in : op->inputs)
        fv.level = std::max(fv.level, level_of(in));
      // One value per row exactly when the result has one column in a wider space (a `full`
      // of [1, C] has no inputs but is full-width).
      const auto &out_shape = p.value(op->outputs[0]).shape;
      fv.uniform = !single_col && is_one(out_shape.back());
      if (!fv.uniform)
        max_pass = std::max(max_pass, fv.level);
    }
    ValueId out = op->outputs[0];
    auto it = users.find(out);
    if (it != users.end())
      for (OpId u : it->second)
        if (!members.count(u))
          fv.store = true;
    if (element_reads.count(out))
      fv.store = true;
    g.values[out] = fv;
    g.producers[out] = id;
  }
  g.passes = max_pass + 1;
  // A full value read by a full consumer computed in a later pass is kept in a row scratch.
  for (OpId id : g.ops) {
    const Op *op = &c.sites.op(id);
    if (op->kind == OpKind::Assemble || ir::op_info(op->kind).family == OpFamily::Reduce)
      continue;
    auto &cv = g.values[op->outputs[0]];
    if (cv.uniform)
      continue;
    for (ValueId in : op->inputs) {
      auto it = g.values.find(in);
      if (it != g.values.end() && !it->second.uniform && it->second.level < cv.level)
        it->second.scratch = true;
    }
  }
}

/// Who reads each value. An op that reads or writes through a view uses the viewed value too
/// (so a value read only through views is still stored).
void collect_users(const Ctx &c, const std::vector<Op> &ops,
                   std::map<ValueId, std::vector<OpId>> &users) {
  const ir::Program &p = c.p;
  for (const Op &op : ops) {
    const OpId id = c.sites.of(op);
    auto note = [&](ValueId v) {
      users[v].push_back(id);
      if (p.value(v).kind == ir::ValueKind::View)
        users[p.value(v).base].push_back(id);
    };
    for (ValueId v : op.inputs)
      note(v);
    for (ValueId v : op.outputs)
      if (p.value(v).kind == ir::ValueKind::View) // assemble writes into a view's base
        users[p.value(v).base].push_back(id);
    collect_users(c, op.body, users);
    for (auto &path : op.paths)
      collect_users(c, path.body, users);
  }
}

void plan_region(const Ctx &c, const std::vector<Op> &ops, FusionPlan &plan) {
  const ir::Program &p = c.p;
  auto &items = plan.regions[c.sites.region_of(ops)];
  int open = -1;
  GroupState state; // of the open group
  for (const Op &op : ops) {
    if (op.kind == OpKind::Loop)
      plan_region(c, op.body, plan);
    for (auto &path : op.paths)
      plan_region(c, path.body, plan);
    if (reads_elements(p, op))
      open = -1;
    if (!groupable(p, op)) {
      open = -1;
      items.push_back(RegionItem{c.sites.of(op), -1});
      continue;
    }
    if (open >= 0 && plan.groups[static_cast<size_t>(open)].ops.size() < kMaxGroupOps &&
        fits(c, plan.groups[static_cast<size_t>(open)], state, op)) {
      plan.groups[static_cast<size_t>(open)].ops.push_back(c.sites.of(op));
      state.add(p, op);
      continue;
    }
    plan.groups.push_back(start_group(c, op));
    open = static_cast<int>(plan.groups.size() - 1);
    plan.groups.back().ops.push_back(c.sites.of(op));
    state = GroupState{};
    state.add(p, op);
    items.push_back(RegionItem{kNoOp, open});
  }
}

} // namespace

FusionPlan plan_fusion(const ir::Program &p, const SiteTable &sites, const TilePlan &tiles) {
  const Ctx c{p, sites, tiles};
  FusionPlan plan;
  std::map<ValueId, std::vector<OpId>> users;
  collect_users(c, p.body, users);
  std::set<ValueId> element_reads;
  collect_element_reads(p, p.body, element_reads);
  plan_region(c, p.body, plan);
  for (auto &g : plan.groups) {
    finish_group(c, g, users, element_reads);
    for (auto &[id, fv] : g.values)
      if (fv.store)
        plan.materialized.insert(id);
  }
  // Outputs of standalone ops (non-last-axis reductions, gets) always have storage.
  for (auto &[region, items] : plan.regions)
    for (auto &it : items)
      if (it.op != kNoOp)
        for (ValueId v : sites.op(it.op).outputs)
          if (p.value(v).kind == ir::ValueKind::Local)
            plan.materialized.insert(v);
  // Locals whose elements run-time scalars read (Tensor::at) are stored.
  for (ValueId v : element_reads)
    if (p.value(v).kind == ir::ValueKind::Local)
      plan.materialized.insert(v);
  return plan;
}

const std::vector<RegionItem> &FusionPlan::items(RegionId r) const {
  auto it = regions.find(r);
  if (it == regions.end())
    throw InternalError(
        "<codegen>", "fusion plan",
        fmt::format("no region {{op {}, path {}}} (a ptojit bug)", r.owner, r.path));
  return it->second;
}

int member_pass(const FusedGroup &g, const Op &op) {
  auto level_of = [&](ValueId v) {
    auto it = g.values.find(v);
    return it == g.values.end() ? 0 : it->second.level;
  };
  if (op.kind == OpKind::Assemble)
    return level_of(op.inputs[0]);
  const FusedValue &fv = g.values.at(op.outputs[0]);
  if (ir::op_info(op.kind).family == OpFamily::Reduce && fv.uniform)
    return level_of(op.inputs[0]);
  return fv.level;
}

} // namespace pto::codegen
