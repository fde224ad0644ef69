// tile_expand.h - How an op is split into tiles (reference §3.2-3.3): a row-major nest over the
// output dims (dim 0 outermost); in dim d the offsets are 0, T[d], 2T[d], ... below S[d], each
// tile's size is min(S[d] - offset, T[d]) (tails are simply smaller), and each tile carries a
// run-time valid extent min(max(valid[d] - offset, 0), size).
#pragma once

#include <cstdint>
#include <vector>

namespace pto::codegen {

struct TileRange {
  std::vector<int64_t> offset; ///< per dim, elements
  std::vector<int64_t> size;   ///< per dim, elements (the static tile shape; tails smaller)
};

/// The tiles of an output of `shape` under vec tile `tile`, in execution order. `tile` must have
/// at least shape.size() entries, every one > 0; entry i tiles dim i (extra trailing entries are
/// unused). A zero-size dim gives no tiles.
std::vector<TileRange> tile_expand(const std::vector<int64_t> &shape,
                                   const std::vector<int64_t> &tile);

/// The run-time valid extent of a tile in one dim: min(max(valid - offset, 0), size).
inline int64_t tile_valid(int64_t valid, int64_t offset, int64_t size) {
  int64_t v = valid - offset;
  if (v < 0)
    v = 0;
  return v < size ? v : size;
}

} // namespace pto::codegen
