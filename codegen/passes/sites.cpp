// sites.cpp - See sites.h.
#include "passes/sites.h"

#include "pto/error.h"

#include <fmt/format.h>

namespace pto::codegen {

SiteTable::SiteTable(const ir::Program &p) : n_reads_(p.element_reads.size()) {
  number(p.body, RegionId{});
  for (const auto &loc : p.element_reads)
    names_.push_back(format_location(loc) + ": at");
}

int SiteTable::read_site(int64_t read, int fallback) const {
  if (read < 0 || static_cast<uint64_t>(read) >= n_reads_)
    return fallback;
  return static_cast<int>(ops_.size() + static_cast<size_t>(read));
}

void SiteTable::number(const std::vector<ir::Op> &ops, RegionId region) {
  regions_[region] = &ops;
  region_ids_[&ops] = region;
  for (const ir::Op &op : ops) {
    const OpId id = static_cast<OpId>(ops_.size());
    ops_.push_back(&op);
    names_.push_back(format_location(op.where) + ": " + ir::site_name(op));
    ids_[&op] = id;
    for (ir::ValueId v : op.outputs)
      def_site_.try_emplace(v, id);
    if (op.kind == ir::OpKind::Loop || !op.body.empty())
      number(op.body, RegionId{id, 0});
    for (size_t k = 0; k < op.paths.size(); ++k)
      number(op.paths[k].body, RegionId{id, static_cast<int>(k)});
  }
}

OpId SiteTable::of(const ir::Op &op) const {
  auto it = ids_.find(&op);
  if (it == ids_.end())
    throw InternalError("<codegen>", ir::op_info(op.kind).name,
                        "op is not part of the numbered program (a ptojit bug)");
  return it->second;
}

const ir::Op &SiteTable::op(OpId id) const {
  if (id < 0 || static_cast<size_t>(id) >= ops_.size())
    throw InternalError(
        "<codegen>", "sites",
        fmt::format("op id {} out of range [0, {}) (a ptojit bug)", id, ops_.size()));
  return *ops_[static_cast<size_t>(id)];
}

OpId SiteTable::def_site(ir::ValueId v) const {
  auto it = def_site_.find(v);
  return it == def_site_.end() ? kNoOp : it->second;
}

RegionId SiteTable::region_of(const std::vector<ir::Op> &body) const {
  auto it = region_ids_.find(&body);
  if (it == region_ids_.end())
    throw InternalError("<codegen>", "sites",
                        "op list is not a region of the numbered program (a ptojit bug)");
  return it->second;
}

const std::vector<ir::Op> &SiteTable::region(RegionId r) const {
  auto it = regions_.find(r);
  if (it == regions_.end())
    throw InternalError(
        "<codegen>", "sites",
        fmt::format("no region {{op {}, path {}}} (a ptojit bug)", r.owner, r.path));
  return *it->second;
}

std::vector<RegionId> SiteTable::regions() const {
  std::vector<RegionId> out;
  for (auto &[id, ops] : regions_)
    out.push_back(id);
  return out;
}

std::string region_name(const SiteTable &sites, RegionId r) {
  if (r.owner == kNoOp)
    return "kernel";
  const ir::Op &owner = sites.op(r.owner);
  if (owner.kind == ir::OpKind::Loop)
    return fmt::format("loop i{} (op {})", owner.loop_id, r.owner);
  return fmt::format("path {} of op {}", r.path, r.owner);
}

} // namespace pto::codegen
