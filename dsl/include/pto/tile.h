// tile.h - Tile shapes, as PyPTO `set_vec_tile_shapes` (reference §3.1). Every op captures the
// vec tile current when it is created; changing it later does not affect recorded ops.
#pragma once

#include "pto/symbolic.h"

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <vector>

namespace pto {

/// Sets the vec tile for the ops traced after this call, one entry per dim (at most 4; entry i
/// tiles dim i). Throws TileShapeError for an empty list, more than 4 entries, or an entry
/// outside [1, 2^62]: 2^62 is the largest extent of any dim (kMaxExtent, pto/size_math.h), so a
/// tile offset plus an entry never overflows. A CPU tile needs no scratch of its own (fused ops
/// keep one row of the result's columns), so no tighter budget applies; entries past a dim are
/// clamped to it. Unlike Ascend UB tiles, no 32-byte alignment is required: tails are masked.
void set_vec_tile_shapes(std::vector<int64_t> dims,
                         std::source_location loc = std::source_location::current());
/// The same, one argument per dim: `set_vec_tile_shapes(16, 64)`.
void set_vec_tile_shapes(int64_t d0, std::source_location loc = std::source_location::current());
void set_vec_tile_shapes(int64_t d0, int64_t d1,
                         std::source_location loc = std::source_location::current());
void set_vec_tile_shapes(int64_t d0, int64_t d1, int64_t d2,
                         std::source_location loc = std::source_location::current());
void set_vec_tile_shapes(int64_t d0, int64_t d1, int64_t d2, int64_t d3,
                         std::source_location loc = std::source_location::current());
/// The same with SymbolicScalar entries (PyPTO passes `x.shape[0]` as a tile size): each must
/// be concrete (TileShapeError "set_vec_tile_shapes: entry 0 is not static (N)" otherwise), then
/// the int rules above apply. Integer arguments pick the overloads above.
void set_vec_tile_shapes(const SymbolicScalar &d0,
                         std::source_location loc = std::source_location::current());
void set_vec_tile_shapes(const SymbolicScalar &d0, const SymbolicScalar &d1,
                         std::source_location loc = std::source_location::current());
void set_vec_tile_shapes(const SymbolicScalar &d0, const SymbolicScalar &d1,
                         const SymbolicScalar &d2,
                         std::source_location loc = std::source_location::current());
void set_vec_tile_shapes(const SymbolicScalar &d0, const SymbolicScalar &d1,
                         const SymbolicScalar &d2, const SymbolicScalar &d3,
                         std::source_location loc = std::source_location::current());
/// The current vec tile (empty when none is set).
std::vector<int64_t> get_vec_tile_shapes();

} // namespace pto
