// tile_expand_test.cpp - Tile expansion (reference §3.2-3.3), per-tile valid extents, and the
// signal slot numbering of reference §6.3, against examples worked out by hand.
#include "passes/slots.h"
#include "passes/tile_expand.h"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

using pto::codegen::slot_number;
using pto::codegen::tile_expand;
using pto::codegen::tile_valid;

TEST_CASE("tile_expand: the reference §3.3 example, x [50, 200] under tile [16, 64]") {
  auto tiles = tile_expand({50, 200}, {16, 64});
  // dim 0: offsets 0, 16, 32, 48 (tail 2); dim 1: 0, 64, 128, 192 (tail 8) -> 4 x 4 tiles.
  REQUIRE(tiles.size() == 16);
  const std::vector<std::pair<int64_t, int64_t>> first = {
      {0, 0}, {0, 64}, {0, 128}, {0, 192}, {16, 0}}; // row-major, dim 0 outermost
  for (size_t i = 0; i < first.size(); ++i) {
    CAPTURE(i);
    CHECK(tiles[i].offset == std::vector<int64_t>{first[i].first, first[i].second});
  }
  CHECK(tiles[0].size == std::vector<int64_t>{16, 64});
  CHECK(tiles[3].size == std::vector<int64_t>{16, 8}); // column tail: 200 - 192
  CHECK(tiles[12].offset == std::vector<int64_t>{48, 0});
  CHECK(tiles[12].size == std::vector<int64_t>{2, 64}); // row tail: 50 - 48
  CHECK(tiles[15].offset == std::vector<int64_t>{48, 192});
  CHECK(tiles[15].size == std::vector<int64_t>{2, 8});
}

TEST_CASE("tile_expand: exact multiples, tiles larger than the shape, extra tile entries") {
  auto exact = tile_expand({32, 128}, {16, 64});
  REQUIRE(exact.size() == 4);
  CHECK(exact[3].offset == std::vector<int64_t>{16, 64});
  CHECK(exact[3].size == std::vector<int64_t>{16, 64});

  auto big = tile_expand({5, 37}, {8, 1024}); // one tile, clipped to the shape
  REQUIRE(big.size() == 1);
  CHECK(big[0].size == std::vector<int64_t>{5, 37});

  auto extra = tile_expand({10}, {4, 99}); // only the leading entry tiles a rank-1 shape
  REQUIRE(extra.size() == 3);
  CHECK(extra[2].offset == std::vector<int64_t>{8});
  CHECK(extra[2].size == std::vector<int64_t>{2});

  CHECK(tile_expand({0, 16}, {4, 4}).empty()); // a zero-size dim has no tiles
}

TEST_CASE("tile_valid: min(max(valid - offset, 0), size)") {
  CHECK(tile_valid(50, 48, 2) == 2);    // whole tail tile valid
  CHECK(tile_valid(49, 48, 2) == 1);    // one row of the tail
  CHECK(tile_valid(40, 48, 2) == 0);    // tile past the valid region: empty
  CHECK(tile_valid(100, 16, 16) == 16); // valid beyond the tile is clipped to its size
  CHECK(tile_valid(20, 16, 16) == 4);
  CHECK(tile_valid(-3, 0, 16) == 0);
}

TEST_CASE("slot_number: reference §6.3 worked by hand") {
  // R = [8, 64], V = [4, 32], T = [2, 16]:
  //   view_tile_num = ceil(4/2) * ceil(32/16) = 4; views = (8/4) * (64/32) = 4; total = 16.
  pto::ir::SlotGeometry g;
  g.data_shape = {8, 64};
  g.view_shape = {4, 32};
  g.tile = {2, 16};
  g.view_tile_num = 4;
  g.total_tile_num = 16;
  // First view, first tile, row 0: slot 0.
  CHECK(slot_number(g, {0, 0}, {0, 0}, 0) == 0);
  // Dim 0 varies fastest: the tile below is 1, the tile to the right is ceil(4/2) = 2.
  CHECK(slot_number(g, {0, 0}, {2, 0}, 0) == 1);
  CHECK(slot_number(g, {0, 0}, {0, 16}, 0) == 2);
  // Views: the one below is view 1 (slots 4..7), the one to the right is view R0/V0 = 2 (8..11).
  CHECK(slot_number(g, {4, 0}, {0, 0}, 0) == 4);
  CHECK(slot_number(g, {0, 32}, {0, 0}, 0) == 8);
  // View (1, 1), tile (1, 1): tileIndex = 1 + 1*2 + 4*(1 + 1*2) = 15; row 3: 3*16 + 15 = 63.
  CHECK(slot_number(g, {4, 32}, {2, 16}, 3) == 63);
  // An offset inside a view: O0 = 2 -> viewIdx 0, tileIdx0 = (2 % 4 + 0) / 2 = 1.
  CHECK(slot_number(g, {2, 0}, {0, 0}, 0) == 1);
}
