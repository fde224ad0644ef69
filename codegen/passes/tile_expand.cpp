// tile_expand.cpp - See tile_expand.h.
#include "passes/tile_expand.h"

#include <algorithm>

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
