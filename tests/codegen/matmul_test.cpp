// matmul_test.cpp - pto::matmul in each run mode (support::run_modes) against naive::matmul (a
// double triple loop): every dtype pair, shapes with tails in M, N and K under the cube tile and
// under the 6 x 16 register block, several K chunks, transposes, bias, relu, batch broadcasting at
// ranks 3 and 4; then every set_cube_tile_shapes / matmul check with its exact error type.
#include "pto/pto.h"

#include "matmul_check.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>

using doctest::Contains;

using namespace matmul_check;

TEST_CASE("matmul: every dtype pair matches a naive loop, with tails in M, K and N") {
  // M = 37, K = 70, N = 45 under a [16, 32] cube tile: 2 row blocks (tail 5), 2 column blocks
  // (tail 13), 3 K chunks (tail 6); 37 = 6 * 6 + 1 rows and 45 = 2 * 16 + 13 columns also leave
  // tails in the register block.
  for (auto [in, out] : kPairs)
    for (auto mode : support::run_modes()) {
      CAPTURE(pair_name(in, out));
      CAPTURE(support::mode_name(mode));
      Case c;
      c.in = in;
      c.out = out;
      c.a_shape = {37, 70};
      c.b_shape = {70, 45};
      CHECK(check(c, mode, 1) == "");
    }
}

TEST_CASE("matmul: sizes around the 6 x 16 register block and odd K") {
  for (auto mode : support::run_modes())
    for (auto dt : {pto::DT_FP32, pto::DT_INT8})
      for (auto [M, K, N] :
           {std::tuple{1, 1, 1}, {5, 3, 15}, {6, 16, 16}, {7, 17, 17}, {12, 33, 32}, {13, 2, 31}}) {
        CAPTURE(support::mode_name(mode));
        CAPTURE(pto::name(dt));
        CAPTURE(M);
        CAPTURE(K);
        CAPTURE(N);
        Case c;
        c.in = dt;
        c.out = dt == pto::DT_INT8 ? pto::DT_INT32 : pto::DT_FP32;
        c.a_shape = {M, K};
        c.b_shape = {K, N};
        CHECK(check(c, mode, 7) == "");
      }
}

TEST_CASE("matmul: a_trans and b_trans") {
  for (auto mode : support::run_modes())
    for (auto dt : {pto::DT_FP32, pto::DT_FP16, pto::DT_INT8})
      for (bool at : {false, true})
        for (bool bt : {false, true}) {
          CAPTURE(support::mode_name(mode));
          CAPTURE(pto::name(dt));
          CAPTURE(at);
          CAPTURE(bt);
          Case c;
          c.in = dt;
          c.out = dt == pto::DT_INT8 ? pto::DT_INT32 : pto::DT_FP32;
          c.a_trans = at;
          c.b_trans = bt;
          c.a_shape = at ? std::vector<int64_t>{35, 19} : std::vector<int64_t>{19, 35};
          c.b_shape = bt ? std::vector<int64_t>{41, 35} : std::vector<int64_t>{35, 41};
          CHECK(check(c, mode, 11) == "");
        }
}

TEST_CASE("matmul: bias [1, N] and [N], relu, and both") {
  for (auto mode : support::run_modes())
    for (auto [in, out] : kPairs)
      for (auto [bias_rank, relu] : {std::pair{2, false}, {1, true}, {0, true}}) {
        CAPTURE(support::mode_name(mode));
        CAPTURE(pair_name(in, out));
        CAPTURE(bias_rank);
        CAPTURE(relu);
        Case c;
        c.in = in;
        c.out = out;
        c.a_shape = {21, 40};
        c.b_shape = {40, 35};
        c.bias_rank = bias_rank;
        c.relu = relu;
        CHECK(check(c, mode, 23) == "");
      }
}

TEST_CASE("batch matmul: ranks 3 and 4 with broadcast batch dims") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    Case c3;
    c3.a_shape = {3, 13, 20};
    c3.b_shape = {1, 20, 18}; // b broadcasts over the batch
    CHECK(check(c3, mode, 31) == "");
    Case c3t = c3;
    c3t.a_shape = {1, 20, 13}; // a broadcasts, transposed
    c3t.a_trans = true;
    c3t.b_shape = {2, 18, 20};
    c3t.b_trans = true;
    c3t.bias_rank = 2;
    CHECK(check(c3t, mode, 37) == "");
    Case c4;
    c4.in = pto::DT_BF16;
    c4.out = pto::DT_BF16;
    c4.a_shape = {2, 1, 9, 24};
    c4.b_shape = {1, 3, 24, 17};
    c4.relu = true;
    CHECK(check(c4, mode, 41) == "");
    Case c4i = c4;
    c4i.in = pto::DT_INT8;
    c4i.out = pto::DT_INT32;
    CHECK(check(c4i, mode, 43) == "");
  }
}

TEST_CASE("matmul: larger blocks and a three-level k tile") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    Case c;
    c.a_shape = {100, 130};
    c.b_shape = {130, 90};
    c.m = {32, 64};
    c.k = {32, 64, 128}; // kAL1 = 64, kBL1 = 128
    c.n = {32, 64};
    CHECK(check(c, mode, 51) == "");
  }
}

TEST_CASE("matmul: operands computed by fused ops, result used by an elementwise op") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto a = naive::random_tensor(pto::DT_FP32, {20, 33}, 61);
    auto b = naive::random_tensor(pto::DT_FP32, {33, 19}, 62);
    pto::HostTensor y(pto::DT_FP32, {20, 19});
    auto k = pto::jit(
        "mm_chain",
        [](pto::Tensor ta, pto::Tensor tb, pto::Tensor ty) {
          pto::set_vec_tile_shapes(8, 16);
          pto::set_cube_tile_shapes({16, 16}, {16, 16}, {16, 16});
          auto c = pto::matmul(ta * 2.0, pto::exp(tb), pto::DT_FP32);
          pto::assemble(c + 1.0, {0, 0}, ty);
        },
        support::opts(mode));
    k(a, b, y);
    auto want = naive::matmul(naive::map(naive::from(a), [](double v) { return 2 * v; }),
                              naive::map(naive::from(b), [](double v) { return std::exp(v); }),
                              false, false);
    want = naive::map(want, [](double v) { return v + 1; });
    CHECK(support::mismatch(y, want, mm_tolerance(pto::DT_FP32, 33 * 3)) == "");
  }
}

TEST_CASE("matmul kernel: sizes 1 to 100 against the register block, every dtype, transposes") {
  // 1, 7, 17, 33 and 100 in every position: none is a multiple of the 14 x 32 (AVX-512) or
  // 6 x 16 register block or of the 16 or 8 k units one packing step transposes; odd K leaves
  // half a k pair for int8 and bf16. The transposes rotate so each size meets each layout.
  const std::tuple<int64_t, int64_t, int64_t> sizes[] = {
      {1, 1, 1},    {7, 17, 33},     {17, 33, 100}, {33, 100, 7},
      {100, 7, 17}, {100, 100, 100}, {1, 100, 33},  {33, 1, 100}};
  for (auto mode : support::run_modes())
    for (auto [in, out] : kKernelPairs)
      for (size_t s = 0; s < std::size(sizes); ++s) {
        auto [M, K, N] = sizes[s];
        const bool at = s % 2, bt = s / 2 % 2;
        CAPTURE(support::mode_name(mode));
        CAPTURE(pair_name(in, out));
        CAPTURE(M);
        CAPTURE(K);
        CAPTURE(N);
        CAPTURE(at);
        CAPTURE(bt);
        CHECK(check(kernel_case(in, out, M, K, N, at, bt), mode, 71 + s) == "");
      }
}

// ---- errors --------------------------------------------------------------------------------

namespace {

/// Traces a kernel that runs `body` on fp32 a [32, 64], b [64, 48].
void trace(const std::function<void(pto::Tensor, pto::Tensor)> &body,
           pto::DataType dt = pto::DT_FP32, const std::vector<int64_t> &b_shape = {64, 48}) {
  pto::HostTensor a(dt, {32, 64}), b(dt, b_shape);
  auto k = pto::jit(
      "mm_err", [&](pto::Tensor ta, pto::Tensor tb) { body(ta, tb); },
      support::opts(pto::RunMode::Interpret));
  k(a, b);
}

void cube(std::vector<int64_t> m, std::vector<int64_t> k, std::vector<int64_t> n) {
  trace([&](pto::Tensor, pto::Tensor) { pto::set_cube_tile_shapes(m, k, n); });
}

} // namespace

TEST_CASE("set_cube_tile_shapes: every PyPTO check is a TileShapeError naming the call site") {
  CHECK_NOTHROW(cube({16, 32}, {16, 32}, {16, 32}));
  CHECK_NOTHROW(cube({1, 1}, {16, 32, 64}, {16, 16}));
  CHECK_THROWS_WITH_AS(cube({16}, {16, 32}, {16, 32}), Contains("m needs 2 entries"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32, 64}, {16, 32}, {16, 32}), Contains("m needs 2 entries"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16}, {16, 32}), Contains("k needs 2 entries"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16, 32, 64, 128}, {16, 32}), Contains("k needs 2 entries"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16, 32}, {16}), Contains("n needs 2 entries"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({0, 32}, {16, 32}, {16, 32}), Contains("must be > 0"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16, -32}, {16, 32}), Contains("must be > 0"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({32, 16}, {16, 32}, {16, 32}), Contains("L0 32 exceeds L1 16"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {32, 64, 16}, {16, 32}), Contains("L0 32 exceeds L1 16"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 40}, {16, 32}, {16, 32}), Contains("not a multiple of L0 16"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16, 32, 40}, {16, 32}), Contains("not a multiple of L0"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16, 32}, {32, 48}), Contains("not a multiple of L0 32"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {8, 32}, {16, 32}), Contains("kL0 8 is not a multiple of 16"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 32}, {16, 32}, {24, 48}),
                       Contains("nL0 24 is not a multiple of 16"), pto::TileShapeError);
  CHECK_THROWS_WITH_AS(cube({16, 40}, {16, 32}, {16, 32}), Contains("matmul_test.cpp:"),
                       pto::TileShapeError);
}

TEST_CASE("get_cube_tile_shapes returns the tile as set") {
  trace([](pto::Tensor, pto::Tensor) {
    CHECK(pto::get_cube_tile_shapes().m.empty());
    pto::set_cube_tile_shapes({16, 32}, {16, 64}, {32, 64}, {.enable_split_k = true});
    auto t = pto::get_cube_tile_shapes();
    CHECK(t.m == std::vector<int64_t>{16, 32});
    CHECK(t.k == std::vector<int64_t>{16, 64});
    CHECK(t.n == std::vector<int64_t>{32, 64});
    CHECK(t.enable_split_k);
  });
}

TEST_CASE("matmul: bad input is the exact typed error naming matmul and the call site") {
  auto with_cube = [](const std::function<void(pto::Tensor, pto::Tensor)> &f) {
    return [f](pto::Tensor a, pto::Tensor b) {
      pto::set_cube_tile_shapes({16, 32}, {16, 32}, {16, 32});
      f(a, b);
    };
  };
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_FP32); }),
      Contains("matmul: no cube tile shape is set; call set_cube_tile_shapes first"),
      pto::TileShapeError);
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_FP32); }),
                       Contains("matmul_test.cpp:"), pto::TileShapeError);
  // dtype pairs
  CHECK_THROWS_WITH_AS(
      trace(with_cube([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_FP16); })),
      Contains("DT_FP32 x DT_FP32 -> DT_FP16 is not supported"), pto::DTypeError);
  CHECK_THROWS_AS(
      trace(with_cube([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_FP32); }),
            pto::DT_INT8),
      pto::DTypeError);
  CHECK_THROWS_AS(
      trace(with_cube([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_BF16); }),
            pto::DT_FP16),
      pto::DTypeError);
  CHECK_THROWS_AS(trace(with_cube([](pto::Tensor a, pto::Tensor b) {
                    pto::set_vec_tile_shapes(16, 16);
                    pto::matmul(a, pto::cast(b, pto::DT_FP16), pto::DT_FP32);
                  })),
                  pto::DTypeError);
  CHECK_THROWS_AS(
      trace(with_cube([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_INT32); }),
            pto::DT_INT32),
      pto::DTypeError);
  // shapes
  CHECK_THROWS_WITH_AS(
      trace(with_cube([](pto::Tensor a, pto::Tensor b) { pto::matmul(a, b, pto::DT_FP32); }),
            pto::DT_FP32, {48, 64}),
      Contains("K of a [32, 64] is 64 but K of b [48, 64] is 48"), pto::ShapeError);
  CHECK_NOTHROW(trace(with_cube([](pto::Tensor a, pto::Tensor b) {
                        pto::set_vec_tile_shapes(16, 16);
                        pto::matmul(a, b, pto::DT_FP32, {.b_trans = true});
                      }),
                      pto::DT_FP32, {48, 64}));
  CHECK_THROWS_WITH_AS(trace(with_cube([](pto::Tensor a, pto::Tensor b) {
                         pto::set_vec_tile_shapes(16, 16);
                         pto::matmul(pto::sum(a, 1), b, pto::DT_FP32);
                       })),
                       Contains("rank 1; matmul takes rank 2, 3 or 4"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace(with_cube([](pto::Tensor a, pto::Tensor) {
                         pto::set_vec_tile_shapes(1, 16, 16);
                         pto::Tensor b3 = pto::full({1, 64, 48}, 1.0, pto::DT_FP32);
                         pto::matmul(a, b3, pto::DT_FP32);
                       })),
                       Contains("need the same rank"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace(with_cube([](pto::Tensor, pto::Tensor) {
                         pto::set_vec_tile_shapes(1, 16, 16);
                         auto a3 = pto::full({2, 8, 16}, 1.0, pto::DT_FP32);
                         auto b3 = pto::full({3, 16, 8}, 1.0, pto::DT_FP32);
                         pto::matmul(a3, b3, pto::DT_FP32);
                       })),
                       Contains("do not broadcast"), pto::ShapeError);
  // bias
  CHECK_THROWS_WITH_AS(trace(with_cube([](pto::Tensor a, pto::Tensor b) {
                         pto::set_vec_tile_shapes(16, 16);
                         auto bias = pto::full({1, 47}, 0.0, pto::DT_FP32);
                         pto::matmul(a, b, pto::DT_FP32, {.bias = bias});
                       })),
                       Contains("expected [1, 48] or [48]"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace(with_cube([](pto::Tensor a, pto::Tensor b) {
                         pto::set_vec_tile_shapes(16, 16);
                         auto bias = pto::full({2, 48}, 0.0, pto::DT_FP32);
                         pto::matmul(a, b, pto::DT_FP32, {.bias = bias});
                       })),
                       Contains("expected [1, 48] or [48]"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace(with_cube([](pto::Tensor a, pto::Tensor b) {
                         pto::set_vec_tile_shapes(16, 16);
                         auto bias = pto::full({48}, 0.0, pto::DT_FP16);
                         pto::matmul(a, b, pto::DT_FP32, {.bias = bias});
                       })),
                       Contains("expected the output dtype DT_FP32"), pto::DTypeError);
  // split K
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor a, pto::Tensor b) {
                         pto::set_cube_tile_shapes({16, 32}, {16, 32}, {16, 32},
                                                   {.enable_split_k = true});
                         pto::matmul(a, b, pto::DT_FP32, {.relu = true});
                       }),
                       Contains("enable_split_k cannot be combined"), pto::TileShapeError);
}
