// tile_expand.cpp - See tile_expand.h.
#include "passes/tile_expand.h"

#include "pto/error.h"

#include <algorithm>
#include <fmt/format.h>

namespace pto::codegen {

std::vector<TileRange> tile_expand(const std::vector<int64_t> &shape,
                                   const std::vector<int64_t> &tile) {
  size_t r = shape.size();
  std::vector<TileRange> out;
  for (auto s : shape)
    if (s <= 0)
      return out;
  // Tile entry i tiles dim i (the op's tile has rank >= the output rank; PyPTO uses the
  // leading entries).
  std::vector<int64_t> t(tile.begin(), tile.begin() + static_cast<long>(r));
  std::vector<int64_t> off(r, 0);
  while (true) {
    TileRange tr;
    tr.offset = off;
    for (size_t d = 0; d < r; ++d)
      tr.size.push_back(std::min(shape[d] - off[d], t[d]));
    out.push_back(std::move(tr));
    size_t d = r;
    while (d > 0) {
      --d;
      off[d] += t[d];
      if (off[d] < shape[d])
        break;
      off[d] = 0;
      if (d == 0)
        return out;
    }
    if (r == 0)
      return out;
  }
}

} // namespace pto::codegen

// ---- the tile plan (compile time) --------------------------------------------------------------

namespace pto::codegen {

namespace {

using ir::OpFamily;

std::vector<SymbolicScalar> symbolic(const std::vector<int64_t> &dims) {
  return {dims.begin(), dims.end()};
}

/// The space `op` walks and its valid extents; false for an op that is not tiled.
bool space_of(const ir::Program &p, const ir::Op &op, TiledOp &t) {
  const ir::Value *v = nullptr;
  switch (ir::op_info(op.kind).family) {
  case OpFamily::Unary:
  case OpFamily::Binary:
  case OpFamily::Select:
  case OpFamily::Create:
    v = &p.value(op.outputs[0]);
    break;
  case OpFamily::Reduce:
  case OpFamily::Move:
    v = &p.value(op.inputs[0]);
    break;
  case OpFamily::Shmem:
    if (op.view_shape.empty()) // nop, clear_signal, signals of a signal-only tensor
      return false;
    t.space = symbolic(op.view_shape);
    t.valid = op.view_valid.size() == op.view_shape.size() ? op.view_valid : t.space;
    return true;
  case OpFamily::Control:
  case OpFamily::Matmul:
  case OpFamily::Standalone:
  case OpFamily::Library:
  case OpFamily::Check:
    return false;
  }
  if (!v)
    return false;
  t.space = v->shape;
  t.valid = v->valid;
  return true;
}

void expand_region(const ir::Program &p, const SiteTable &sites, const std::vector<ir::Op> &ops,
                   TilePlan &plan) {
  for (const ir::Op &op : ops) {
    expand_region(p, sites, op.body, plan);
    for (auto &path : op.paths)
      expand_region(p, sites, path.body, plan);
    TiledOp t;
    if (!space_of(p, op, t))
      continue;
    const size_t r = t.space.size();
    if (op.tile.vec.size() < r)
      throw InternalError(op.where, ir::op_info(op.kind).name,
                          fmt::format("tile expansion: a vec tile of {} entries for a space of "
                                      "rank {} (a ptojit bug; rerun with PTO_DUMP=ir)",
                                      op.tile.vec.size(), r));
    t.tile.assign(op.tile.vec.begin(), op.tile.vec.begin() + static_cast<long>(r));
    for (size_t d = 0; d < r; ++d)
      t.grid.push_back((t.space[d] + SymbolicScalar(t.tile[d] - 1)) / SymDivisor(t.tile[d]));
    plan.ops.emplace(sites.of(op), std::move(t));
  }
}

bool same(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](auto &x, auto &y) { return x.same_as(y); });
}

} // namespace

const TiledOp &TilePlan::at(OpId id) const {
  auto it = ops.find(id);
  if (it == ops.end())
    throw InternalError("<codegen>", "tile plan",
                        fmt::format("op {} has no tiles (a ptojit bug)", id));
  return it->second;
}

TilePlan expand_tiles(const ir::Program &p, const SiteTable &sites) {
  TilePlan plan;
  expand_region(p, sites, p.body, plan);
  return plan;
}

std::string print_tiles(const ir::Program &p, const SiteTable &sites, const TilePlan &tiles) {
  std::string out = "tiles of kernel " + p.name + "\n";
  for (const auto &[id, t] : tiles.ops) {
    out +=
        fmt::format("  op {} {}: space {}", id, ir::op_info(sites.op(id).kind).name, str(t.space));
    if (!same(t.valid, t.space))
      out += " valid " + str(t.valid);
    out += fmt::format(" tile [{}] grid {}", fmt::join(t.tile, ", "), str(t.grid));
    bool concrete = true, tails = false;
    int64_t n = 1;
    std::vector<std::string> last;
    for (size_t d = 0; d < t.space.size(); ++d) {
      concrete = concrete && t.grid[d].is_concrete();
      if (!t.space[d].is_concrete()) {
        last.push_back("?");
        continue;
      }
      // The last tile's size; a tail when it is a smaller tile after full ones (a space
      // smaller than its tile is one clipped tile, not a tail).
      const int64_t s = t.space[d].concrete(), rem = s % t.tile[d];
      tails = tails || (s > t.tile[d] && rem != 0);
      last.push_back(std::to_string(s > t.tile[d] ? (rem != 0 ? rem : t.tile[d]) : s));
    }
    if (concrete) {
      for (auto &g : t.grid)
        n *= g.concrete();
      out += fmt::format(" = {} tile{}", n, n == 1 ? "" : "s");
    }
    if (tails)
      out += fmt::format(" tails [{}]", fmt::join(last, ", "));
    out += "\n";
  }
  return out;
}

} // namespace pto::codegen
