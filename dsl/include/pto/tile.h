// tile.h - Tile shapes, as PyPTO `set_vec_tile_shapes` (reference §3.1). Every op captures the
// vec tile current when it is created; changing it later does not affect recorded ops.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <vector>

namespace pto {

/// Sets the vec tile for the ops traced after this call, one entry per dim (at most 4; entry i
/// tiles dim i). Throws TileShapeError for an empty list, more than 4 entries, or an entry <= 0.
/// Unlike Ascend UB tiles, no 32-byte alignment is required: tails are masked.
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
/// The current vec tile (empty when none is set).
std::vector<int64_t> get_vec_tile_shapes();

} // namespace pto
