// fuse_print.cpp - The fusion plan as text (print_plan in fuse.h; the PTO_DUMP=plan stage).
#include "pto/ir/printer.h"

#include "passes/fuse.h"

#include <fmt/format.h>

namespace pto::codegen {

namespace {

using ir::Op;
using ir::OpKind;
using ir::ValueId;

std::string value_names(const ir::Program &p, const std::vector<ValueId> &ids) {
  std::vector<std::string> n;
  for (ValueId id : ids)
    n.push_back("%" + p.value(id).name);
  return n.empty() ? "none" : fmt::format("{}", fmt::join(n, ", "));
}

/// `op <id> <head>`; an assemble also names where it writes: `-> %view (%base @[offsets])`;
/// a loop its index and bounds, a paths op its number of paths (their regions follow).
std::string member_text(const ir::Program &p, OpId id, const Op &op) {
  if (op.kind == OpKind::Assemble) {
    const ir::Value &w = p.value(op.outputs[0]);
    return fmt::format("op {} assemble(%{}) -> %{} (%{} @{})", id, p.value(op.inputs[0]).name,
                       w.name, p.value(w.base).name, str(w.offsets));
  }
  if (op.kind == OpKind::Loop)
    return fmt::format("op {} loop i{} = {} to {} step {}", id, op.loop_id, op.start.str(),
                       op.stop.str(), op.step.str());
  if (op.kind == OpKind::Paths)
    return fmt::format("op {} paths ({} paths)", id, op.paths.size());
  return fmt::format("op {} {}", id, ir::print_op_head(p, op));
}

/// What becomes of a member's value: "  [row value from pass K]" (a reduction's per-row value),
/// "  [row value]" (another per-row value), "  [scratch]", "  [store]" (its own storage, read
/// outside the group); "" for a value that lives in registers only.
std::string member_notes(const FusedGroup &g, const Op &op) {
  if (op.kind == OpKind::Assemble)
    return "";
  const FusedValue &fv = g.values.at(op.outputs[0]);
  std::vector<std::string> notes;
  if (fv.uniform)
    notes.push_back(ir::op_info(op.kind).family == ir::OpFamily::Reduce
                        ? fmt::format("row value from pass {}", fv.level)
                        : "row value");
  if (fv.scratch)
    notes.push_back("scratch");
  if (fv.store)
    notes.push_back("store");
  return notes.empty() ? "" : fmt::format("  [{}]", fmt::join(notes, ", "));
}

/// "ops 3-7" for members with consecutive ids (the usual case: a group is a run of one
/// region's ops), else "ops 3, 5, 6".
std::string op_range(const std::vector<OpId> &ops) {
  bool consecutive = true;
  for (size_t i = 1; i < ops.size(); ++i)
    consecutive = consecutive && ops[i] == ops[i - 1] + 1;
  if (ops.size() == 1)
    return fmt::format("op {}", ops[0]);
  if (consecutive)
    return fmt::format("ops {}-{}", ops.front(), ops.back());
  return fmt::format("ops {}", fmt::join(ops, ", "));
}

std::string space_text(const FusedGroup &g) {
  std::vector<SymbolicScalar> shape(g.row_shape), valid(g.row_valid);
  shape.push_back(g.cols);
  valid.push_back(g.cols_valid);
  std::string s = "space " + str(shape);
  bool same = true;
  for (size_t d = 0; d < shape.size(); ++d)
    same = same && shape[d].same_as(valid[d]);
  if (!same)
    s += " valid " + str(valid);
  return s + fmt::format(" tile [{}]", fmt::join(g.tile, ", "));
}

void print_group(const ir::Program &p, const SiteTable &sites, const FusedGroup &g, size_t gi,
                 std::string &out) {
  out += fmt::format("group {}: {}, {} op{} in {} row pass{}\n", gi, space_text(g), g.ops.size(),
                     g.ops.size() == 1 ? "" : "s", g.passes, g.passes == 1 ? "" : "es");
  std::vector<ValueId> scratch, stores;
  for (auto &[v, fv] : g.values) {
    if (fv.scratch)
      scratch.push_back(v);
    if (fv.store)
      stores.push_back(v);
  }
  for (int pass = 0; pass < g.passes; ++pass) {
    out += fmt::format("  pass {}:\n", pass);
    for (OpId id : g.ops) {
      const Op &op = sites.op(id);
      if (member_pass(g, op) == pass)
        out += "    " + member_text(p, id, op) + member_notes(g, op) + "\n";
    }
  }
  // Per-row values computed once per row after the last pass (none read them in a pass).
  for (OpId id : g.ops) {
    const Op &op = sites.op(id);
    if (member_pass(g, op) >= g.passes)
      out += "  after the passes: " + member_text(p, id, op) + member_notes(g, op) + "\n";
  }
  out += "  scratch: " + value_names(p, scratch) + "\n";
  out += "  stores: " + value_names(p, stores) + "\n";
}

} // namespace

std::string print_plan(const ir::Program &p, const SiteTable &sites, const FusionPlan &plan) {
  std::string out = "fusion plan of kernel " + p.name + "\n";
  for (const auto &[rid, items] : plan.regions) {
    out += "region " + region_name(sites, rid) + ":\n";
    if (items.empty())
      out += "  (empty)\n";
    for (const RegionItem &it : items) {
      if (it.group >= 0) {
        const FusedGroup &g = plan.groups[static_cast<size_t>(it.group)];
        out += fmt::format("  group {} ({})\n", it.group, op_range(g.ops));
      } else {
        out += "  " + member_text(p, it.op, sites.op(it.op)) + "\n";
      }
    }
  }
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    print_group(p, sites, plan.groups[gi], gi, out);
  out += "storage: " +
         value_names(p, std::vector<ValueId>(plan.materialized.begin(), plan.materialized.end())) +
         "\n";
  return out;
}

} // namespace pto::codegen
