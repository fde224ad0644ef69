// static_dims.cpp - Concrete SymbolicScalars where ptojit takes integers (issue 13, item 2):
// StaticDims, the SymbolicScalar overloads of set_vec_tile_shapes, and the Operand built from a
// SymbolicScalar.
#include "pto/static_dims.h"

#include "pto/error.h"
#include "pto/tensor.h"
#include "pto/tile.h"

#include <fmt/format.h>

namespace pto {

std::vector<int64_t> StaticDims::resolve(const char *op, std::source_location loc) const {
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (!dims_[i].is_concrete())
      throw ShapeError(
          loc, op,
          fmt::format("shape entry {} is not static ({}); a tile's shape is fixed when "
                      "the kernel is compiled: give the run-time extent as "
                      ".valid_shape",
                      i, dims_[i].str()));
    out.push_back(dims_[i].concrete());
  }
  return out;
}

namespace {
int64_t tile_entry(const SymbolicScalar &s, int i, std::source_location loc) {
  if (!s.is_concrete())
    throw TileShapeError(loc, "set_vec_tile_shapes",
                         fmt::format("entry {} is not static ({}); a tile size is fixed when the "
                                     "kernel is compiled",
                                     i, s.str()));
  return s.concrete();
}
} // namespace

void set_vec_tile_shapes(const SymbolicScalar &d0, std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{tile_entry(d0, 0, loc)}, loc);
}
void set_vec_tile_shapes(const SymbolicScalar &d0, const SymbolicScalar &d1,
                         std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{tile_entry(d0, 0, loc), tile_entry(d1, 1, loc)}, loc);
}
void set_vec_tile_shapes(const SymbolicScalar &d0, const SymbolicScalar &d1,
                         const SymbolicScalar &d2, std::source_location loc) {
  set_vec_tile_shapes(
      std::vector<int64_t>{tile_entry(d0, 0, loc), tile_entry(d1, 1, loc), tile_entry(d2, 2, loc)},
      loc);
}
void set_vec_tile_shapes(const SymbolicScalar &d0, const SymbolicScalar &d1,
                         const SymbolicScalar &d2, const SymbolicScalar &d3,
                         std::source_location loc) {
  set_vec_tile_shapes(std::vector<int64_t>{tile_entry(d0, 0, loc), tile_entry(d1, 1, loc),
                                           tile_entry(d2, 2, loc), tile_entry(d3, 3, loc)},
                      loc);
}

Operand::Operand(const SymbolicScalar &s, std::source_location l) : loc(l) {
  if (!s.is_concrete())
    throw ArgumentError(l, "scalar operand",
                        fmt::format("a run-time SymbolicScalar ({}) cannot be a tensor op's "
                                    "operand; only a concrete one (a static dim) can",
                                    s.str()));
  const int64_t v = s.concrete();
  scalar = ir::Scalar{static_cast<double>(v), v, true, DT_BOTTOM};
}

} // namespace pto
