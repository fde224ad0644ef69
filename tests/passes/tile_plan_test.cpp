// tile_plan_test.cpp - Tile expansion as a compile-time stage (expand_tiles, print_tiles in
// passes/tile_expand.h): which ops are tiled, over which space, and their grids, against
// examples worked by hand (reference §3.2-3.3: tiles of size T per dim, the last one smaller).
#include "pto/pto.h"

#include "passes/planned.h"

#include <doctest/doctest.h>

#include <vector>

using passes_test::plan;
using pto::codegen::TiledOp;

namespace {
constexpr pto::DataType F32 = pto::DT_FP32;

std::vector<int64_t> concrete(const std::vector<pto::SymbolicScalar> &dims) {
  std::vector<int64_t> out;
  for (auto &d : dims)
    out.push_back(d.concrete());
  return out;
}
} // namespace

TEST_CASE("tile plan: x [50, 200] under tile [16, 64] is a 4 x 4 grid with tails [2, 8]") {
  auto c =
      plan("tails", {{F32, {50, 200}}, {F32, {50, 200}}}, [](const std::vector<pto::Tensor> &a) {
        pto::set_vec_tile_shapes(16, 64);
        pto::assemble(pto::exp(a[0]), {0, 0}, a[1]);
      });
  const auto &pp = *c.planned;
  REQUIRE(pp.tiles.ops.size() == 2); // exp and assemble
  const TiledOp &t = pp.tiles.at(0);
  CHECK(concrete(t.space) == std::vector<int64_t>{50, 200});
  CHECK(t.tile == std::vector<int64_t>{16, 64});
  CHECK(concrete(t.grid) == std::vector<int64_t>{4, 4}); // ceil(50/16), ceil(200/64)
  CHECK(print_tiles(pp.program, pp.sites, pp.tiles) ==
        "tiles of kernel tails\n"
        "  op 0 exp: space [50, 200] tile [16, 64] grid [4, 4] = 16 tiles tails [2, 8]\n"
        "  op 1 assemble: space [50, 200] tile [16, 64] grid [4, 4] = 16 tiles tails [2, 8]\n");
}

TEST_CASE("tile plan: a reduction walks its input; extra tile entries are dropped") {
  auto c = plan("reduce", {{F32, {8, 100}}, {F32, {8, 1}}}, [](const std::vector<pto::Tensor> &a) {
    pto::set_vec_tile_shapes(8, 32, 4); // the third entry tiles nothing at rank 2
    pto::assemble(pto::amax(a[0], 1, {.keepdim = true}), {0, 0}, a[1]);
  });
  const auto &pp = *c.planned;
  const TiledOp &red = pp.tiles.at(0);
  CHECK(concrete(red.space) == std::vector<int64_t>{8, 100}); // the input, not [8, 1]
  CHECK(red.tile == std::vector<int64_t>{8, 32});
  CHECK(concrete(red.grid) == std::vector<int64_t>{1, 4});
  const TiledOp &as = pp.tiles.at(1);
  CHECK(concrete(as.space) == std::vector<int64_t>{8, 1});
  CHECK(concrete(as.grid) == std::vector<int64_t>{1, 1});
}

TEST_CASE("tile plan: a run-time dim gives a grid expression, and no count or tails") {
  auto c = plan("dynamic", {{F32, {pto::DYNAMIC, 64}}, {F32, {pto::DYNAMIC, 64}}},
                [](const std::vector<pto::Tensor> &a) {
                  pto::set_vec_tile_shapes(16, 64);
                  pto::assemble(pto::neg(a[0]), {0, 0}, a[1]);
                });
  const auto &pp = *c.planned;
  // op 0 is the assemble's run-time window check (not tiled), op 1 the neg, op 2 the assemble.
  REQUIRE(pp.sites.op(0).kind == pto::ir::OpKind::Check);
  CHECK(pp.tiles.ops.count(0) == 0);
  const TiledOp &t = pp.tiles.at(1);
  CHECK(!t.grid[0].is_concrete());
  CHECK(t.grid[0].str() == "((arg0.shape[0] + 15) / 16)"); // ceil(rows / 16)
  CHECK(t.grid[1].concrete() == 1);
  CHECK(print_tiles(pp.program, pp.sites, pp.tiles) ==
        "tiles of kernel dynamic\n"
        "  op 1 neg: space [arg0.shape[0], 64] tile [16, 64] grid [((arg0.shape[0] + 15) / 16), "
        "1]\n"
        "  op 2 assemble: space [arg0.shape[0], 64] tile [16, 64] grid [((arg0.shape[0] + 15) / "
        "16), 1]\n");
}

TEST_CASE("tile plan: a valid extent smaller than the space is printed beside it") {
  auto c = plan("valid", {{F32, {8, 64}}, {F32, {8, 64}}}, [](const std::vector<pto::Tensor> &a) {
    pto::set_vec_tile_shapes(4, 64);
    auto v = pto::view(a[0], {8, 64}, {0, 0}, {.valid_shape = {{5, 64}}});
    pto::assemble(pto::exp(v), {0, 0}, a[1]);
  });
  const auto &pp = *c.planned;
  CHECK(print_tiles(pp.program, pp.sites, pp.tiles) ==
        "tiles of kernel valid\n"
        "  op 0 exp: space [8, 64] valid [5, 64] tile [4, 64] grid [2, 1] = 2 tiles\n"
        "  op 1 assemble: space [8, 64] valid [5, 64] tile [4, 64] grid [2, 1] = 2 tiles\n");
}

TEST_CASE("tile plan: matmul, standalone ops and loops have no vec tiles") {
  auto c = plan("untiled", {{F32, {16, 16}}, {F32, {16, 16}}, {F32, {16, 16}}},
                [](const std::vector<pto::Tensor> &a) {
                  pto::set_vec_tile_shapes(16, 16);
                  pto::set_cube_tile_shapes({16, 16}, {16, 16}, {16, 16});
                  auto m = pto::matmul(a[0], a[1], pto::DT_FP32); // op 0: cube tiles
                  auto t = pto::permute(m, {1, 0});               // op 1: standalone
                  pto::assemble(t, {0, 0}, a[2]);                 // op 2
                });
  const auto &pp = *c.planned;
  REQUIRE(pp.tiles.ops.size() == 1);
  CHECK(pp.tiles.ops.begin()->first == 2);
  CHECK_THROWS_AS(pp.tiles.at(0), pto::InternalError);
}
