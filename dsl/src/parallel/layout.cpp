// layout.cpp - Mesh, Placement, balanced chunks and Layout (pto/parallel.h): the host-side
// arithmetic of where each PE's slice lies. No tracing here.
#include "pto/error.h"
#include "pto/parallel.h"
#include "pto/size_math.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace pto::parallel {

const char *name(PartialOp op) {
  switch (op) {
  case PartialOp::SUM:
    return "sum";
  case PartialOp::MAX:
    return "max";
  case PartialOp::MIN:
    return "min";
  case PartialOp::PROD:
    return "prod";
  }
  return "?";
}

Mesh::Mesh(std::vector<int64_t> shape, std::vector<std::string> axis_names, SrcLoc loc)
    : shape_(std::move(shape)), names_(std::move(axis_names)) {
  const char *op = "parallel::Mesh";
  if (shape_.empty())
    throw StrategyError(loc, op, "a mesh needs at least one axis, got none");
  if (names_.size() != shape_.size())
    throw StrategyError(loc, op,
                        fmt::format("{} axis sizes but {} axis names: give one name per axis",
                                    shape_.size(), names_.size()));
  std::set<std::string> seen;
  for (size_t a = 0; a < shape_.size(); ++a) {
    if (shape_[a] < 1)
      throw StrategyError(
          loc, op,
          fmt::format("axis {} ('{}') has size {}: sizes must be >= 1", a, names_[a], shape_[a]));
    if (names_[a].empty())
      throw StrategyError(loc, op, fmt::format("axis {} has an empty name", a));
    if (!seen.insert(names_[a]).second)
      throw StrategyError(loc, op, fmt::format("axis name '{}' is used twice", names_[a]));
    auto p = mul_checked(n_pes_, shape_[a]);
    if (!p || *p > (int64_t{1} << 31))
      throw StrategyError(loc, op,
                          fmt::format("the mesh {} spans more than 2^31 PEs", dims_str(shape_)));
    n_pes_ = *p;
  }
}

int Mesh::find_axis(const std::string &name) const {
  for (size_t a = 0; a < names_.size(); ++a)
    if (names_[a] == name)
      return static_cast<int>(a);
  return -1;
}

namespace {
void check_axis(const Mesh &m, int axis, const char *op, const SrcLoc &loc) {
  if (axis < 0 || axis >= m.n_axes())
    throw StrategyError(
        loc, op,
        fmt::format("axis {} is outside [0, {}) of mesh ({})", axis, m.n_axes(), m.to_string()));
}
} // namespace

int64_t Mesh::size(int axis, SrcLoc loc) const {
  check_axis(*this, axis, "parallel::Mesh::size", loc);
  return shape_[static_cast<size_t>(axis)];
}

const std::string &Mesh::axis_name(int axis, SrcLoc loc) const {
  check_axis(*this, axis, "parallel::Mesh::axis_name", loc);
  return names_[static_cast<size_t>(axis)];
}

int64_t Mesh::stride(int axis, SrcLoc loc) const {
  check_axis(*this, axis, "parallel::Mesh::stride", loc);
  int64_t s = 1;
  for (size_t a = static_cast<size_t>(axis) + 1; a < shape_.size(); ++a)
    s *= shape_[a];
  return s;
}

std::vector<int64_t> Mesh::coords(int64_t pe, SrcLoc loc) const {
  if (pe < 0 || pe >= n_pes_)
    throw StrategyError(
        loc, "parallel::Mesh::coords",
        fmt::format("PE {} is outside [0, {}) of mesh ({})", pe, n_pes_, to_string()));
  std::vector<int64_t> c(shape_.size());
  for (size_t a = shape_.size(); a-- > 0;) {
    c[a] = pe % shape_[a];
    pe /= shape_[a];
  }
  return c;
}

std::string Mesh::to_string() const {
  std::string s;
  for (size_t a = 0; a < shape_.size(); ++a)
    s += fmt::format("{}{}={}", a ? ", " : "", names_[a], shape_[a]);
  return s;
}

std::string Placement::to_string() const {
  switch (kind) {
  case Kind::REPLICATE:
    return "R";
  case Kind::SPLIT:
    return fmt::format("S({})", dim);
  case Kind::PARTIAL:
    return fmt::format("P({})", name(op));
  }
  return "?";
}

Chunk balanced_chunk(int64_t n, int64_t parts, int64_t index, SrcLoc loc) {
  if (n < 0 || parts < 1 || index < 0 || index >= parts)
    throw StrategyError(loc, "parallel::balanced_chunk",
                        fmt::format("needs n >= 0, parts >= 1 and 0 <= index < parts; got n = {}, "
                                    "parts = {}, index = {}",
                                    n, parts, index));
  const int64_t base = n / parts, extra = n % parts;
  // index * base <= n and min(index, extra) < parts: no overflow.
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

Layout::Layout(Mesh mesh, std::vector<int64_t> global_shape, std::vector<Placement> placements,
               SrcLoc loc)
    : mesh_(std::move(mesh)), shape_(std::move(global_shape)), placements_(std::move(placements)) {
  const char *op = "parallel::Layout";
  if (placements_.size() != static_cast<size_t>(mesh_.n_axes()))
    throw StrategyError(loc, op,
                        fmt::format("{} placements for a mesh of {} axes ({}): give one per axis",
                                    placements_.size(), mesh_.n_axes(), mesh_.to_string()));
  for (size_t d = 0; d < shape_.size(); ++d)
    if (shape_[d] < 0)
      throw StrategyError(loc, op, fmt::format("dim {} has size {}", d, shape_[d]));
  for (size_t a = 0; a < placements_.size(); ++a) {
    const Placement &p = placements_[a];
    const auto kind = static_cast<int>(p.kind);
    const auto pop = static_cast<int>(p.op);
    if (kind < 0 || kind > static_cast<int>(Placement::Kind::PARTIAL))
      throw StrategyError(loc, op,
                          fmt::format("placement {} has kind value {}, not REPLICATE, SPLIT or "
                                      "PARTIAL",
                                      a, kind));
    if (p.kind == Placement::Kind::PARTIAL && (pop < 0 || pop > static_cast<int>(PartialOp::PROD)))
      throw StrategyError(loc, op,
                          fmt::format("placement {} is a partial of op value {}, not SUM, MAX, "
                                      "MIN or PROD",
                                      a, pop));
  }
  for (size_t a = 0; a < placements_.size(); ++a)
    if (placements_[a].kind == Placement::Kind::SPLIT &&
        (placements_[a].dim < 0 || placements_[a].dim >= rank()))
      throw StrategyError(loc, op,
                          fmt::format("axis '{}' splits dim {} of a rank-{} tensor",
                                      mesh_.axis_name(static_cast<int>(a)), placements_[a].dim,
                                      rank()));
}

std::vector<int> Layout::split_axes(int dim, SrcLoc loc) const {
  if (dim < 0 || dim >= rank())
    throw StrategyError(loc, "parallel::Layout::split_axes",
                        fmt::format("dim {} is outside [0, {})", dim, rank()));
  std::vector<int> axes;
  for (size_t a = 0; a < placements_.size(); ++a)
    if (placements_[a].kind == Placement::Kind::SPLIT && placements_[a].dim == dim)
      axes.push_back(static_cast<int>(a));
  return axes;
}

int64_t Layout::parts(int dim, SrcLoc loc) const {
  if (dim < 0 || dim >= rank())
    throw StrategyError(loc, "parallel::Layout::parts",
                        fmt::format("dim {} is outside [0, {})", dim, rank()));
  int64_t p = 1;
  for (int a : split_axes(dim, loc))
    p *= mesh_.size(a);
  return p;
}

int64_t Layout::part_index(int dim, const std::vector<int64_t> &coord, SrcLoc loc) const {
  const char *op = "parallel::Layout::part_index";
  if (dim < 0 || dim >= rank())
    throw StrategyError(loc, op, fmt::format("dim {} is outside [0, {})", dim, rank()));
  check_coord(coord, op, loc);
  int64_t idx = 0;
  for (int a : split_axes(dim))
    idx = idx * mesh_.size(a) + coord[static_cast<size_t>(a)];
  return idx;
}

void Layout::check_coord(const std::vector<int64_t> &coord, const char *op,
                         const SrcLoc &loc) const {
  bool ok = coord.size() == static_cast<size_t>(mesh_.n_axes());
  for (size_t a = 0; ok && a < coord.size(); ++a)
    ok = coord[a] >= 0 && coord[a] < mesh_.shape()[a];
  if (!ok)
    throw StrategyError(loc, op,
                        fmt::format("mesh coordinates [{}] are not a point of mesh ({}): give one "
                                    "coordinate per axis, each in [0, axis size)",
                                    fmt::join(coord, ", "), mesh_.to_string()));
}

std::vector<int64_t> Layout::local_shape(const std::vector<int64_t> &coord, SrcLoc loc) const {
  check_coord(coord, "parallel::Layout::local_shape", loc);
  std::vector<int64_t> s(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) {
    int dim = static_cast<int>(d);
    s[d] = balanced_chunk(shape_[d], parts(dim), part_index(dim, coord)).size;
  }
  return s;
}

std::vector<int64_t> Layout::local_offset(const std::vector<int64_t> &coord, SrcLoc loc) const {
  check_coord(coord, "parallel::Layout::local_offset", loc);
  std::vector<int64_t> s(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) {
    int dim = static_cast<int>(d);
    s[d] = balanced_chunk(shape_[d], parts(dim), part_index(dim, coord)).offset;
  }
  return s;
}

std::vector<int64_t> Layout::max_local_shape() const {
  std::vector<int64_t> s(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) {
    int64_t p = parts(static_cast<int>(d));
    s[d] = shape_[d] / p + (shape_[d] % p ? 1 : 0);
  }
  return s;
}

int Layout::first_uneven_dim() const {
  for (size_t d = 0; d < shape_.size(); ++d)
    if (shape_[d] % parts(static_cast<int>(d)) != 0)
      return static_cast<int>(d);
  return -1;
}

bool Layout::has_partial() const {
  return std::any_of(placements_.begin(), placements_.end(),
                     [](const Placement &p) { return p.kind == Placement::Kind::PARTIAL; });
}

std::string Layout::to_string() const {
  std::string s = "[";
  for (size_t d = 0; d < shape_.size(); ++d) {
    s += fmt::format("{}{}", d ? ", " : "", shape_[d]);
    auto axes = split_axes(static_cast<int>(d));
    for (size_t i = 0; i < axes.size(); ++i)
      s += fmt::format("{}{}", i ? "," : "@", mesh_.axis_name(axes[i]));
  }
  s += "]";
  std::string partials;
  for (size_t a = 0; a < placements_.size(); ++a)
    if (placements_[a].kind == Placement::Kind::PARTIAL)
      partials += fmt::format("{}{}@{}", partials.empty() ? "" : ", ", placements_[a].to_string(),
                              mesh_.axis_name(static_cast<int>(a)));
  if (!partials.empty())
    s += " {" + partials + "}";
  return s;
}

} // namespace pto::parallel
