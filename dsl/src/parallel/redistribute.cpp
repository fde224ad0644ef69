// redistribute.cpp - Moving slices between layouts with the collectives of pto/collectives.h
// (docs/sharding.md, "Redistribution"), and the public shard / redistribute / full_tensor /
// assemble.
#include "pto/collectives.h"
#include "pto/distributed.h"
#include "pto/error.h"
#include "pto/ir/recorder.h"
#include "pto/nn_ops.h"
#include "pto/ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"

#include "parallel_internal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pto::parallel::detail {

namespace dist = pto::distributed;

bool mesh_active(const Mesh &mesh, const char *op, SrcLoc loc) {
  const int n = dist::n_pes("world", loc);
  if (n == 1)
    return false;
  if (n != mesh.n_pes())
    throw StrategyError(loc, op,
                        fmt::format("the mesh ({}) spans {} PEs but the world has {}: a mesh must "
                                    "span the world (or the world be 1 PE, the oracle)",
                                    mesh.to_string(), mesh.n_pes(), n));
  return true;
}

SymbolicScalar my_coord(const Mesh &mesh, int axis, SrcLoc loc) {
  auto me = dist::my_symbolic_pe("world", loc);
  return (me / SymbolicScalar(mesh.stride(axis))) % SymbolicScalar(mesh.size(axis));
}

std::vector<int64_t> static_shape(const Tensor &t, const char *op, int operand, SrcLoc loc) {
  std::vector<int64_t> s;
  for (int d = 0; d < t.dim(loc); ++d) {
    auto v = t.shape(d, loc);
    if (!v.is_concrete())
      throw StrategyError(loc, op,
                          fmt::format("operand {} dim {} is dynamic: sharded tensors need static "
                                      "shapes",
                                      operand, d));
    s.push_back(v.concrete());
  }
  return s;
}

Layout replicated(const Mesh &mesh, const std::vector<int64_t> &global_shape, SrcLoc loc) {
  return {mesh, global_shape,
          std::vector<Placement>(static_cast<size_t>(mesh.n_axes()), Placement::replicate()), loc};
}

std::string strategy_str(const std::vector<std::vector<int64_t>> &counts) {
  std::string s = "(";
  for (size_t i = 0; i < counts.size(); ++i) {
    s += i ? ", (" : "(";
    for (size_t d = 0; d < counts[i].size(); ++d)
      s += fmt::format("{}{}", d ? ", " : "", counts[i][d]);
    s += counts[i].size() == 1 ? ",)" : ")";
  }
  return s + ")";
}

std::vector<int> map_count(const Mesh &mesh, int64_t parts, const std::vector<bool> &used) {
  for (int start = 0; start < mesh.n_axes(); ++start) {
    if (mesh.size(start) == 1)
      continue; // a run starts at a real split
    int64_t p = 1;
    for (int a = start; a < mesh.n_axes() && !used[static_cast<size_t>(a)]; ++a) {
      p *= mesh.size(a);
      if (p == parts) {
        std::vector<int> axes;
        for (int b = start; b <= a; ++b)
          axes.push_back(b);
        return axes;
      }
      if (p > parts)
        break;
    }
  }
  return {};
}

Layout layout_from_spec(const Mesh &mesh, const std::vector<int64_t> &global_shape,
                        const Spec &spec, const char *op, SrcLoc loc) {
  if (spec.size() != global_shape.size())
    throw StrategyError(loc, op,
                        fmt::format("the spec has {} entries for a tensor of rank {} ({}): give "
                                    "one per dim",
                                    spec.size(), global_shape.size(), dims_str(global_shape)));
  std::vector<Placement> pl(static_cast<size_t>(mesh.n_axes()));
  std::vector<bool> used(static_cast<size_t>(mesh.n_axes()), false);
  for (size_t d = 0; d < spec.size(); ++d) {
    const int dim = static_cast<int>(d);
    std::vector<int> axes;
    if (!spec[d].axis.empty()) {
      int a = mesh.find_axis(spec[d].axis);
      if (a < 0)
        throw StrategyError(loc, op,
                            fmt::format("dim {} names axis '{}', which the mesh ({}) does not have",
                                        d, spec[d].axis, mesh.to_string()));
      if (used[static_cast<size_t>(a)])
        throw StrategyError(loc, op,
                            fmt::format("dim {} names axis '{}', already used", d, spec[d].axis));
      axes = {a};
    } else if (spec[d].parts < 1) {
      throw StrategyError(loc, op,
                          fmt::format("dim {} is split {}: counts must be >= 1", d, spec[d].parts));
    } else if (spec[d].parts > 1) {
      axes = map_count(mesh, spec[d].parts, used);
      if (axes.empty())
        throw StrategyError(loc, op,
                            fmt::format("dim {} is split {}, which no unused mesh axis (or run of "
                                        "consecutive axes) of the mesh ({}) has",
                                        d, spec[d].parts, mesh.to_string()));
    }
    for (int a : axes) {
      used[static_cast<size_t>(a)] = true;
      if (mesh.size(a) > 1) // a split over one PE is the whole dim
        pl[static_cast<size_t>(a)] = Placement::split(dim);
    }
  }
  Layout l(mesh, global_shape, pl, loc);
  check_uneven(l, op, loc);
  return l;
}

void check_uneven(const Layout &l, const char *op, SrcLoc loc) {
  for (int d = 0; d < l.rank(); ++d)
    if (l.global_shape()[static_cast<size_t>(d)] % l.parts(d) != 0 && l.split_axes(d).size() > 1)
      throw StrategyError(loc, op,
                          fmt::format("dim {} of size {} is split {} over {} mesh axes: an uneven "
                                      "split must use one mesh axis (planned: several)",
                                      d, l.global_shape()[static_cast<size_t>(d)], l.parts(d),
                                      l.split_axes(d).size()));
}

SymChunk my_chunk(const Layout &l, int dim, SrcLoc loc) {
  const int64_t n = l.global_shape()[static_cast<size_t>(dim)], p = l.parts(dim);
  const int64_t base = n / p, extra = n % p;
  SymbolicScalar idx(0);
  for (int a : l.split_axes(dim))
    idx = idx * SymbolicScalar(l.mesh().size(a)) + my_coord(l.mesh(), a, loc);
  if (extra == 0)
    return {idx * SymbolicScalar(base), SymbolicScalar(base), base};
  // Balanced (OneFlow): part i has base + (i < extra) elements at i * base + min(i, extra).
  return {idx * SymbolicScalar(base) + idx.min(SymbolicScalar(extra)),
          SymbolicScalar(base) + (SymbolicScalar(extra) - idx).max(SymbolicScalar(0)).min(1),
          base + 1};
}

/// A view of `x` (whole along the dims in `reslice`, which take this PE's chunk of `target`;
/// the other dims keep x's extents), with a valid shape where a chunk is uneven.
Tensor reslice(const Tensor &x, const Layout &target, const std::vector<bool> &dims, SrcLoc loc) {
  std::vector<int64_t> shape;
  std::vector<SymbolicScalar> offsets, valid;
  bool uneven = false, any = false;
  for (int d = 0; d < target.rank(); ++d) {
    if (!dims[static_cast<size_t>(d)]) {
      shape.push_back(x.shape(d, loc).concrete(loc));
      offsets.emplace_back(0);
      valid.push_back(x.valid_shape(loc)[static_cast<size_t>(d)]);
      continue;
    }
    auto c = my_chunk(target, d, loc);
    shape.push_back(c.max);
    offsets.push_back(c.offset);
    valid.push_back(c.size);
    uneven = uneven || target.global_shape()[static_cast<size_t>(d)] % target.parts(d) != 0;
    any = true;
  }
  if (!any)
    return x;
  ViewOptions o;
  if (uneven)
    o.valid_shape = valid;
  return pto::view(x, shape, offsets, o, loc);
}

Tensor slice_whole(const Tensor &whole, const Layout &target, bool active, SrcLoc loc) {
  if (!active)
    return whole;
  std::vector<bool> dims(static_cast<size_t>(target.rank()));
  for (int d = 0; d < target.rank(); ++d)
    dims[static_cast<size_t>(d)] = target.parts(d) > 1;
  return reslice(whole, target, dims, loc);
}

namespace {

/// x as a tensor of rank >= 2 (a rank-1 [n] as [1, n]), for the collectives' row exchange.
Tensor as_rows(const Tensor &x, SrcLoc loc) {
  if (x.dim(loc) >= 2)
    return x;
  return pto::reshape(x, {SymbolicScalar(1), x.shape(0, loc)}, {}, loc);
}

/// Piece j (j in [0, size(axis))) of every PE that differs from this one only in its
/// coordinate on `axis`: an allgather over the world, then views at symbolic row offsets. The
/// collectives move no bool: bools travel as int8 0/1 and come back as bool (exact).
std::vector<Tensor> axis_pieces(const Tensor &rows, const Mesh &mesh, int axis, SrcLoc loc) {
  const bool as_int8 = rows.dtype(loc) == DT_BOOL;
  auto g = dist::allgather(as_int8 ? pto::cast(rows, DT_INT8, loc) : rows, {}, loc);
  const int64_t r = rows.shape(0, loc).concrete();
  std::vector<int64_t> shape;
  for (int d = 0; d < rows.dim(loc); ++d)
    shape.push_back(rows.shape(d, loc).concrete());
  auto me = dist::my_symbolic_pe("world", loc);
  auto c = my_coord(mesh, axis, loc);
  std::vector<Tensor> pieces;
  for (int64_t j = 0; j < mesh.size(axis); ++j) {
    SymbolicScalar q = me + (SymbolicScalar(j) - c) * SymbolicScalar(mesh.stride(axis));
    std::vector<SymbolicScalar> off(shape.size(), SymbolicScalar(0));
    off[0] = q * SymbolicScalar(r);
    Tensor piece = pto::view(g, shape, off, {}, loc);
    pieces.push_back(as_int8 ? pto::cast(piece, DT_BOOL, loc) : piece);
  }
  return pieces;
}

Tensor combine(PartialOp op, const Tensor &a, const Tensor &b, SrcLoc loc) {
  switch (op) {
  case PartialOp::SUM:
    return pto::add(a, b, loc);
  case PartialOp::MAX:
    return pto::maximum(a, b, loc);
  case PartialOp::MIN:
    return pto::minimum(a, b, loc);
  case PartialOp::PROD:
    return pto::mul(a, b, loc);
  }
  throw InternalError(loc, "parallel", "unknown PartialOp");
}

dist::Reduction reduction(PartialOp op) {
  switch (op) {
  case PartialOp::SUM:
    return dist::Reduction::SUM;
  case PartialOp::MAX:
    return dist::Reduction::MAX;
  case PartialOp::MIN:
    return dist::Reduction::MIN;
  case PartialOp::PROD:
    return dist::Reduction::PROD;
  }
  return dist::Reduction::SUM;
}

Tensor back_to_rank(const Tensor &rows, const Tensor &like, SrcLoc loc) {
  if (like.dim(loc) >= 2)
    return rows;
  return pto::reshape(rows, {rows.shape(1, loc)}, {}, loc);
}

/// x with its valid shape `valid` again (after a collective over padded, fully valid data).
Tensor revalid(const Tensor &x, const std::vector<SymbolicScalar> &valid, SrcLoc loc) {
  std::vector<int64_t> shape;
  for (int d = 0; d < x.dim(loc); ++d)
    shape.push_back(x.shape(d, loc).concrete(loc));
  bool full = true;
  for (size_t d = 0; d < valid.size(); ++d)
    full = full && valid[d].is_concrete() && valid[d].concrete(loc) == shape[d];
  if (full)
    return x;
  return pto::view(x, shape, std::vector<SymbolicScalar>(shape.size(), SymbolicScalar(0)),
                   {.valid_shape = valid}, loc);
}

bool partly_valid(const Tensor &x, SrcLoc loc) {
  for (int d = 0; d < x.dim(loc); ++d) {
    const auto &v = x.valid_shape(loc)[static_cast<size_t>(d)];
    if (!v.is_concrete() || v.concrete(loc) != x.shape(d, loc).concrete(loc))
      return true;
  }
  return false;
}

/// The concatenation along `dim` of the pieces of every PE along `axis`, in coordinate order:
/// the dim's global chunks `sizes` (balanced), whatever each piece's padded extent.
Tensor allgather_axis(const Tensor &x, const Mesh &mesh, int axis, int dim,
                      const std::vector<int64_t> &sizes, SrcLoc loc) {
  const auto valid = x.valid_shape(loc);
  Tensor padded = partly_valid(x, loc) ? pto::fillpad(x, 0, loc) : x;
  auto rows = as_rows(padded, loc);
  const int rdim = x.dim(loc) >= 2 ? dim : dim + 1;
  auto pieces = axis_pieces(rows, mesh, axis, loc);
  std::vector<Tensor> kept; // a split into more parts than elements leaves empty pieces
  for (size_t j = 0; j < pieces.size(); ++j) {
    if (sizes[j] == 0)
      continue;
    std::vector<int64_t> shape;
    for (int d = 0; d < rows.dim(loc); ++d)
      shape.push_back(rows.shape(d, loc).concrete(loc));
    if (shape[static_cast<size_t>(rdim)] != sizes[j]) {
      shape[static_cast<size_t>(rdim)] = sizes[j];
      pieces[j] = pto::view(pieces[j], shape,
                            std::vector<SymbolicScalar>(shape.size(), SymbolicScalar(0)), {}, loc);
    }
    kept.push_back(pieces[j]);
  }
  auto out = kept.size() == 1 ? kept[0] : pto::concat(kept, rdim, loc);
  if (x.dim(loc) < 2)
    out = pto::reshape(out, {out.shape(1, loc)}, {}, loc);
  auto v = valid;
  int64_t n = 0;
  for (int64_t sz : sizes)
    n += sz;
  v[static_cast<size_t>(dim)] = SymbolicScalar(n);
  return revalid(out, v, loc);
}

} // namespace

Tensor allreduce_axis(const Tensor &x, const Mesh &mesh, int axis, PartialOp op, SrcLoc loc) {
  const auto valid = x.valid_shape(loc);
  auto rows = as_rows(partly_valid(x, loc) ? pto::fillpad(x, 0, loc) : x, loc);
  Tensor acc;
  if (mesh.size(axis) == mesh.n_pes()) {
    acc = dist::allreduce(rows, reduction(op), {}, loc);
  } else {
    auto pieces = axis_pieces(rows, mesh, axis, loc);
    acc = pieces[0];
    for (size_t j = 1; j < pieces.size(); ++j)
      acc = combine(op, acc, pieces[j], loc);
  }
  return revalid(back_to_rank(acc, x, loc), valid, loc);
}

void record(const std::string &line, SrcLoc loc) {
  ir::Recorder::current("parallel", loc).program().sharding.push_back(line);
}

int64_t local_bytes(const Tensor &x, SrcLoc loc) {
  int64_t n = bytes_of(x.dtype(loc));
  for (int d = 0; d < x.dim(loc); ++d)
    n = checked_extent_mul(n, x.shape(d, loc).concrete(loc), "the bytes of a slice", "parallel",
                           loc);
  return n;
}

Tensor redistribute_local(const Tensor &local, const Layout &from, const Layout &target,
                          bool active, SrcLoc loc) {
  if (!active || from == target)
    return local;
  const Mesh &mesh = from.mesh();
  std::vector<Placement> cur = from.placements();
  Tensor x = local;
  // 1. Pending partials that the target does not keep: allreduce over their axis, or
  //    reduce_scatter when the target splits dim 0 over the whole world.
  for (int a = 0; a < mesh.n_axes(); ++a) {
    const auto &c = cur[static_cast<size_t>(a)];
    const auto &t = target.placements()[static_cast<size_t>(a)];
    if (c.kind != Placement::Kind::PARTIAL)
      continue;
    if (t == c)
      continue;
    if (t.kind == Placement::Kind::SPLIT && t.dim == 0 && mesh.size(a) == mesh.n_pes() &&
        x.dim(loc) >= 2 && from.global_shape()[0] % mesh.size(a) == 0 && !partly_valid(x, loc)) {
      // P -> S(0) over the whole world: one reduce_scatter (each PE reduces only its rows).
      record(fmt::format("  reduce_scatter({}) over {}: {} -> {}, {} B per PE in", name(c.op),
                         mesh.axis_name(a), from.to_string(), target.to_string(),
                         local_bytes(x, loc)),
             loc);
      x = dist::reduce_scatter(x, reduction(c.op), {}, loc);
      cur[static_cast<size_t>(a)] = t;
      continue;
    }
    record(fmt::format("  allreduce({}) over {}{}: resolves P({}) of {}, {} B per PE", name(c.op),
                       mesh.axis_name(a),
                       mesh.size(a) == mesh.n_pes() ? "" : " (a world allgather, then a fold)",
                       name(c.op), from.to_string(), local_bytes(x, loc)),
           loc);
    x = allreduce_axis(x, mesh, a, c.op, loc);
    cur[static_cast<size_t>(a)] = Placement::replicate();
  }
  // 2. Dims whose split axes change: gather them whole (minor axis first).
  Layout now(mesh, from.global_shape(), cur, loc);
  std::vector<bool> whole(static_cast<size_t>(from.rank()), false);
  for (int d = 0; d < from.rank(); ++d) {
    auto axes = now.split_axes(d);
    if (axes == target.split_axes(d))
      continue;
    const int64_t n = from.global_shape()[static_cast<size_t>(d)];
    for (size_t i = axes.size(); i-- > 0;) {
      const int64_t k = mesh.size(axes[i]);
      std::vector<int64_t> sizes(static_cast<size_t>(k), x.shape(d, loc).concrete(loc));
      if (n % now.parts(d) != 0) // uneven: one axis only (check_uneven), balanced chunks
        for (int64_t j = 0; j < k; ++j)
          sizes[static_cast<size_t>(j)] = balanced_chunk(n, k, j, loc).size;
      record(fmt::format("  allgather over {}{} of dim {}: {} -> {}, {} B per PE in",
                         mesh.axis_name(axes[i]),
                         mesh.size(axes[i]) == mesh.n_pes() ? "" : " (a world allgather)", d,
                         now.to_string(), target.to_string(), local_bytes(x, loc)),
             loc);
      x = allgather_axis(x, mesh, axes[i], d, sizes, loc);
      cur[static_cast<size_t>(axes[i])] = Placement::replicate();
    }
    whole[static_cast<size_t>(d)] = true;
  }
  // 3. Slice the dims that were gathered (or never split) to the target's split.
  std::vector<bool> dims(static_cast<size_t>(from.rank()));
  for (int d = 0; d < from.rank(); ++d)
    dims[static_cast<size_t>(d)] = whole[static_cast<size_t>(d)] && target.parts(d) > 1;
  return reslice(x, target, dims, loc);
}

} // namespace pto::parallel::detail

namespace pto::parallel {

using namespace detail;

DTensor::DTensor(const Tensor &local, Layout layout, SrcLoc loc)
    : local_(local), layout_(std::move(layout)) {
  const char *op = "parallel::DTensor";
  const bool active = mesh_active(layout_.mesh(), op, loc);
  const auto want = active ? layout_.max_local_shape() : layout_.global_shape();
  std::vector<int64_t> got;
  bool same = local_.dim(loc) == layout_.rank();
  for (int d = 0; d < local_.dim(loc); ++d) {
    auto v = local_.shape(d, loc);
    got.push_back(v.is_concrete() ? v.concrete() : -1);
    same = same && v.is_concrete() && v.concrete() == want[static_cast<size_t>(d)];
  }
  if (!same)
    throw StrategyError(
        loc, op,
        fmt::format("the local tensor has shape [{}] but the layout {} gives this PE a slice of "
                    "shape [{}] on a {}-PE world ({}; a dynamic dim is shown as -1)",
                    fmt::join(got, ", "), layout_.to_string(), fmt::join(want, ", "),
                    active ? layout_.mesh().n_pes() : 1,
                    active ? "the largest part of each split dim; the valid shape narrows an "
                             "uneven part"
                           : "the oracle holds the whole tensor"));
}

DTensor shard(const Tensor &x, const Mesh &mesh, const Spec &spec, SrcLoc loc) {
  const char *op = "parallel::shard";
  bool active = mesh_active(mesh, op, loc);
  auto l = layout_from_spec(mesh, static_shape(x, op, 0, loc), spec, op, loc);
  return {slice_whole(x, l, active, loc), l};
}

DTensor redistribute(const DTensor &x, const Spec &spec, SrcLoc loc) {
  const char *op = "parallel::redistribute";
  bool active = mesh_active(x.mesh(), op, loc);
  auto l = layout_from_spec(x.mesh(), x.layout().global_shape(), spec, op, loc);
  return {redistribute_local(x.local(), x.layout(), l, active, loc), l};
}

Tensor full_tensor(const DTensor &x, SrcLoc loc) {
  const char *op = "parallel::full_tensor";
  bool active = mesh_active(x.mesh(), op, loc);
  return redistribute_local(x.local(), x.layout(),
                            replicated(x.mesh(), x.layout().global_shape(), loc), active, loc);
}

void assemble(const DTensor &x, const std::vector<SymbolicScalar> &offsets, const Tensor &out,
              SrcLoc loc) {
  const char *op = "parallel::assemble";
  bool active = mesh_active(x.mesh(), op, loc);
  const Layout &l = x.layout();
  if (offsets.size() != static_cast<size_t>(l.rank()))
    throw StrategyError(
        loc, op, fmt::format("{} offsets for a tensor of rank {}", offsets.size(), l.rank()));
  // Resolve partials, keep the splits: each PE writes its own slice.
  std::vector<Placement> pl = l.placements();
  for (auto &p : pl)
    if (p.kind == Placement::Kind::PARTIAL)
      p = Placement::replicate();
  Layout target(x.mesh(), l.global_shape(), pl, loc);
  Tensor local = redistribute_local(x.local(), l, target, active, loc);
  std::vector<SymbolicScalar> at = offsets;
  if (active)
    for (int d = 0; d < l.rank(); ++d)
      if (target.parts(d) > 1)
        at[static_cast<size_t>(d)] = at[static_cast<size_t>(d)] + my_chunk(target, d, loc).offset;
  pto::assemble(local, at, out, loc);
}

} // namespace pto::parallel
