// tile_expand.h - How an op is split into tiles (reference §3.2-3.3): a row-major nest over the
// output dims (dim 0 outermost); in dim d the offsets are 0, T[d], 2T[d], ... below S[d], each
// tile's size is min(S[d] - offset, T[d]) (tails are simply smaller), and each tile carries a
// run-time valid extent min(max(valid[d] - offset, 0), size).
//
// Two forms: the tile plan (expand_tiles, a pipeline stage, pipeline.h) gives each tiled op its
// space, tile and grid symbolically, at compile time; the fusion planner groups ops by it.
// tile_expand enumerates the concrete tiles of an evaluated shape, at run time (the interpreter).
#pragma once

#include "pto/ir/program.h"

#include "passes/sites.h"

#include <cstdint>
#include <map>
#include <string>
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

/// How one op is split into tiles, at compile time.
struct TiledOp {
  /// The space the op walks: its output's shape; for a reduction or an assemble its input's (the
  /// rows the fused model walks, fuse.h); for a shmem op its view. Symbolic where dims are.
  std::vector<SymbolicScalar> space;
  std::vector<SymbolicScalar> valid; ///< the run-time valid extent of each dim of `space`
  std::vector<int64_t> tile;         ///< the op's vec tile, one entry per dim of `space`
  std::vector<SymbolicScalar> grid;  ///< tiles per dim: ceil(space / tile)
};

/// The tiled ops of a program by op id: the compute ops that fuse (unary, binary, select,
/// reduce, full, assemble) and the shmem ops with a view (put, get, signal, wait_until,
/// clear_data). Matmul (cube tiles), standalone, library, control and check ops are not tiled
/// by a vec tile and have no entry.
struct TilePlan {
  std::map<OpId, TiledOp> ops;
  /// The entry of op `id`; InternalError when it has none.
  const TiledOp &at(OpId id) const;
};

/// Tile expansion: the tile plan of `p` (numbered by `sites`). Pure. Requires a verified program
/// (every tiled op has a vec tile with at least as many entries as its space has dims).
TilePlan expand_tiles(const ir::Program &p, const SiteTable &sites);

/// The tile plan as text, one line per tiled op in op id order (the PTO_DUMP=tiles stage):
///   `op 3 exp: space [64, 256] tile [16, 256] grid [4, 1] = 4 tiles`
/// with ` valid [...]` after the space when a valid extent differs from it, ` tails [...]` when
/// a concrete dim spans several tiles and is not a multiple of its tile (the last tile's size
/// per dim, `?` for a dim known only at run time), and for a dim known only at run time the
/// grid's expression and no count.
std::string print_tiles(const ir::Program &p, const SiteTable &sites, const TilePlan &tiles);

/// The run-time valid extent of a tile in one dim: min(max(valid - offset, 0), size).
inline int64_t tile_valid(int64_t valid, int64_t offset, int64_t size) {
  int64_t v = valid - offset;
  if (v < 0)
    v = 0;
  return v < size ? v : size;
}

} // namespace pto::codegen
