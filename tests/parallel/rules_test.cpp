// rules_test.cpp - Each rule of pto::parallel's table (dsl/src/parallel/rules.cpp) on 2 and 4 PEs
// (1-D and 2-D meshes, sub-axis collectives, pending partials) against the same kernel on one
// PE (the oracle). Results are made whole with full_tensor, so every PE's output is the oracle's:
// bitwise for movement and max, within sharded::kSumTolerance where a split factor is summed.
#include "pto/parallel.h"

#include "parallel/sharded.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace par = pto::parallel;
using pto::Tensor;

namespace {

constexpr support::Tolerance kExact{0, 0};
const par::Mesh kMesh2x2({2, 2}, {"a", "b"});
const par::Mesh kMesh4({4}, {"x"});

} // namespace

TEST_CASE("parallel: matmul with m, n and k split, on 1-D and 2-D meshes") {
  auto x = sharded::data({8, 32}, 1), w = sharded::data({32, 16}, 2);
  // m on a, n on b: no communication until full_tensor; each element is one PE's dot product.
  sharded::against_oracle(
      "mm_mn", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto h = par::matmul(par::shard(a, kMesh2x2, {"a", {}}), b, {{2, 1}, {1, 2}});
        pto::assemble(par::full_tensor(h), {0, 0}, y);
      },
      {x, w}, {8, 16}, sharded::kSumTolerance);
  // k split on the whole 1-D mesh: Partial(sum), resolved by a world allreduce.
  sharded::against_oracle(
      "mm_k", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto h = par::matmul(par::shard(a, kMesh4, {{}, "x"}), b, {{1, 4}, {4, 1}});
        CHECK(h.layout().to_string() == "[8, 16] {P(sum)@x}");
        auto rows = par::redistribute(h, {"x", {}}); // P(sum) -> S(0): a reduce_scatter
        CHECK(rows.layout().to_string() == "[8@x, 16]");
        pto::assemble(par::full_tensor(rows), {0, 0}, y);
      },
      {x, w}, {8, 16}, sharded::kSumTolerance);
  // m on a, k on b: the partial is over a sub-axis (the allgather-and-fold path).
  sharded::against_oracle(
      "mm_mk", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto h = par::matmul(par::shard(a, kMesh2x2, {"a", "b"}), b, {{2, 2}, {2, 1}});
        CHECK(h.layout().to_string() == "[8@a, 16] {P(sum)@b}");
        pto::assemble(par::full_tensor(h), {0, 0}, y);
      },
      {x, w}, {8, 16}, sharded::kSumTolerance);
  // b_trans: b stored [n, k]; k and n split.
  auto wt = sharded::data({16, 32}, 3);
  sharded::against_oracle(
      "mm_bt", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto h =
            par::matmul(par::shard(a, kMesh2x2, {{}, "a"}), b, {{1, 2}, {2, 2}}, {.b_trans = true});
        pto::assemble(par::full_tensor(h), {0, 0}, y);
      },
      {x, wt}, {8, 16}, sharded::kSumTolerance);
}

TEST_CASE("parallel: pending partials stay pending through linear ops, resolve before others") {
  auto x = sharded::data({8, 32}, 4), w = sharded::data({32, 16}, 5),
       bias = sharded::data({1, 16}, 6);
  // P(sum) + P(sum) stays P(sum) (one allreduce); P(sum) * replicated stays P(sum);
  // P(sum) + replicated bias resolves first (DTensor #163193: the bias is added once).
  sharded::against_oracle(
      "partials", 4,
      [](Tensor a, Tensor b, Tensor c, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh4, {{}, "x"});
        auto h = par::matmul(xs, b, {{1, 4}, {4, 1}});
        auto h2 = par::add(h, h);
        CHECK(h2.layout().to_string() == "[8, 16] {P(sum)@x}");
        auto h3 = par::mul(h2, c);
        CHECK(h3.layout().to_string() == "[8, 16] {P(sum)@x}");
        auto h4 = par::add(h3, c);
        CHECK(h4.layout().to_string() == "[8, 16]");
        auto h5 = par::gelu(par::sub(h4, par::neg(h)));
        pto::assemble(par::full_tensor(h5), {0, 0}, y);
      },
      {x, w, bias}, {8, 16}, sharded::kSumTolerance);
}

TEST_CASE("parallel: elementwise ops with broadcasting, unary ops, maximum of partials") {
  auto x = sharded::data({8, 16}, 7), row = sharded::data({1, 16}, 8);
  sharded::against_oracle(
      "elementwise", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        // b [1, 16] broadcasts over rows: its dim 0 is no factor, its dim 1 follows x's split.
        auto s = par::add(xs, b);
        CHECK(s.layout().to_string() == "[8@a, 16@b]");
        auto t = par::div(par::mul(par::exp(s), par::sigmoid(xs)), pto::add(pto::abs(b), 1.5));
        auto u = par::maximum(par::tanh(t), par::relu(par::sub(xs, b)));
        auto v = par::minimum(u, par::sqrt(par::abs(xs)));
        pto::assemble(par::full_tensor(v), {0, 0}, y);
      },
      {x, row}, {8, 16}, kExact);
  // An explicit strategy that splits the broadcast operand's kept dim.
  sharded::against_oracle(
      "broadcast_strategy", 2,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        const par::Mesh m({2}, {"x"});
        auto s = par::sub(par::shard(a, m, {{}, {}}), b, {{1, 2}, {1, 2}});
        CHECK(s.layout().to_string() == "[8, 16@x]");
        pto::assemble(par::full_tensor(s), {0, 0}, y);
      },
      {x, row}, {8, 16}, kExact);
}

TEST_CASE("parallel: row reductions over split and unsplit axes") {
  auto x = sharded::data({8, 16}, 9);
  sharded::against_oracle(
      "reduce_max", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        auto m = par::amax(xs, 1, true); // split axis: P(max) on b, exact
        CHECK(m.layout().to_string() == "[8@a, 1] {P(max)@b}");
        auto m0 = par::amax(xs, 0, true); // split on a
        pto::assemble(par::full_tensor(m), {0, 0}, y);
        pto::assemble(par::full_tensor(m0), {0, 1}, y);
      },
      {x}, {8, 17}, kExact);
  sharded::against_oracle(
      "reduce_sum", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        auto s = par::sum(xs, -1); // rank 1 [8], P(sum) on b
        CHECK(s.layout().to_string() == "[8@a] {P(sum)@b}");
        auto s2 = par::sum(par::redistribute(xs, {"a", {}}), 1, true); // unsplit axis
        pto::assemble(pto::reshape(par::full_tensor(s), {8, 1}), {0, 0}, y);
        pto::assemble(par::full_tensor(s2), {0, 1}, y);
      },
      {x}, {8, 2}, sharded::kSumTolerance);
}

TEST_CASE("parallel: softmax over a split axis (exact recipe) and an unsplit one") {
  auto x = sharded::data({8, 16}, 10);
  sharded::against_oracle(
      "softmax", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        auto s1 = par::softmax(xs, -1); // split axis on the sub-axis b
        CHECK(s1.layout().to_string() == "[8@a, 16@b]");
        auto s0 = par::softmax(xs, 0);                                 // split axis on a
        auto s2 = par::softmax(par::shard(a, kMesh2x2, {"a", {}}), 1); // unsplit
        pto::assemble(par::full_tensor(s1), {0, 0}, y);
        pto::assemble(par::full_tensor(s0), {8, 0}, y);
        pto::assemble(par::full_tensor(s2), {16, 0}, y);
      },
      {x}, {24, 16}, sharded::kSumTolerance);
  // The whole 1-D mesh splits the softmax axis: world allreduces.
  sharded::against_oracle(
      "softmax_1d", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto s = par::softmax(par::shard(a, kMesh4, {{}, "x"}), 1);
        pto::assemble(par::full_tensor(s), {0, 0}, y);
      },
      {x}, {8, 16}, sharded::kSumTolerance);
}

TEST_CASE("parallel: transpose, reshape of kept dims, redistribution between splits") {
  auto x = sharded::data({8, 12}, 11);
  sharded::against_oracle(
      "movement", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        auto t = par::permute(xs, {1, 0});
        CHECK(t.layout().to_string() == "[12@b, 8@a]");
        pto::assemble(par::full_tensor(t), {0, 0}, y);
        // [8, 12] -> [8, 3, 4]: dim 0 kept (split on a), dim 1 split into two (whole).
        pto::set_vec_tile_shapes(4, 4, 8);
        auto r = par::reshape(par::redistribute(xs, {"a", {}}), {8, 3, 4});
        CHECK(r.layout().to_string() == "[8@a, 3, 4]");
        pto::assemble(pto::reshape(par::full_tensor(r), {8, 12}), {12, 0}, y);
        pto::set_vec_tile_shapes(8, 16);
        // S(0)@a S(1)@b -> S(1)@a: allgather, then a new slice.
        auto z = par::redistribute(xs, {{}, "a"});
        CHECK(z.layout().to_string() == "[8, 12@a]");
        pto::assemble(par::full_tensor(z), {20, 0}, y);
      },
      {x}, {28, 12}, kExact);
}

TEST_CASE("parallel: repeated computation: a strategy that uses fewer parts than PEs") {
  // 8 PEs, rows split 4 ways on axis "a"; axis "r" is unused, so each slice is computed by two
  // PEs (MindSpore's repeated calculation), and the k split 2 ways on "r" in the second matmul.
  auto x = sharded::data({8, 32}, 12), w = sharded::data({32, 16}, 13);
  sharded::against_oracle(
      "repeated", 8,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        const par::Mesh m({4, 2}, {"a", "r"});
        auto h = par::matmul(par::shard(a, m, {{}, {}}), b, {{4, 1}, {1, 1}});
        CHECK(h.layout().to_string() == "[8@a, 16]");
        auto o =
            par::matmul(par::relu(h), par::full_tensor(h), {{4, 2}, {1, 2}}, {.b_trans = true});
        CHECK(o.layout().to_string() == "[8@a, 8] {P(sum)@r}");
        pto::assemble(par::full_tensor(par::softmax(o, 1)), {0, 0}, y);
      },
      {x, w}, {8, 8}, sharded::kSumTolerance);
}

TEST_CASE("parallel: BatchMatMul, ReduceMin, ReduceMean and LogSoftmax with split axes") {
  auto x = sharded::data({2, 8, 16}, 14), w = sharded::data({1, 16, 8}, 15);
  sharded::against_oracle(
      "batch_reductions", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        pto::set_vec_tile_shapes(2, 8, 16);
        // batch on a, k on b; b's batch dim has size 1 (broadcast), so its strategy entry is 1.
        auto h = par::matmul(par::shard(a, kMesh2x2, {"a", {}, {}}), b, {{2, 1, 2}, {1, 2, 1}});
        CHECK(h.layout().to_string() == "[2@a, 8, 8] {P(sum)@b}");
        auto hs = par::redistribute(h, {"a", {}, "b"});
        auto mn = par::amin(hs, 2, true);  // split axis: P(min), exact
        auto me = par::mean(hs, 2, true);  // split axis: local sum / 8, P(sum)
        auto ls = par::log_softmax(hs, 2); // split axis: the recipe
        auto me0 = par::mean(hs, 1, true); // unsplit axis
        pto::assemble(par::full_tensor(mn), {0, 0, 0}, y);
        pto::assemble(par::full_tensor(me), {0, 0, 1}, y);
        pto::assemble(par::full_tensor(ls), {0, 0, 2}, y);
        pto::assemble(par::full_tensor(me0), {0, 8, 0}, y);
      },
      {x, w}, {2, 9, 10}, sharded::kSumTolerance);
}

TEST_CASE("parallel: uneven splits (balanced) through every rule, on 3 PEs and a 2 x 3 mesh") {
  // 10 rows and 7 columns into 3 parts: 4/3/3 and 3/2/2 (OneFlow's balanced split).
  auto x = sharded::data({10, 7}, 16), w = sharded::data({7, 5}, 17);
  const par::Mesh m3({3}, {"x"});
  sharded::against_oracle(
      "uneven_1d", 3,
      [m3](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto rows = par::shard(a, m3, {"x", {}});
        auto cols = par::shard(a, m3, {{}, "x"});
        auto h = par::matmul(par::gelu(rows), b);         // m uneven
        auto hk = par::matmul(cols, b, {{1, 3}, {3, 1}}); // k uneven: Partial(sum)
        CHECK(hk.layout().to_string() == "[10, 5] {P(sum)@x}");
        auto s = par::softmax(cols, 1);     // softmax axis uneven
        auto me = par::mean(cols, 1, true); // local sums / 7
        auto mx = par::amax(rows, 0, true); // reduced axis uneven
        auto t = par::permute(par::add(rows, rows), {1, 0});
        pto::assemble(par::full_tensor(h), {0, 0}, y);
        pto::assemble(par::full_tensor(hk), {0, 5}, y);
        pto::assemble(par::full_tensor(s), {10, 0}, y);
        pto::assemble(par::full_tensor(me), {10, 7}, y);
        pto::assemble(par::full_tensor(mx), {20, 0}, y);
        pto::assemble(par::full_tensor(t), {21, 0}, y);
      },
      {x, w}, {28, 10}, sharded::kSumTolerance);
  // 2 x 3 mesh: columns 7 into 2 on a (4/3), rows 10 into 3 on b (4/3/3); the partial and
  // the gathers run over sub-axes whose groups hold slices of different sizes.
  const par::Mesh m23({2, 3}, {"a", "b"});
  sharded::against_oracle(
      "uneven_2d", 6,
      [m23](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, m23, {"b", "a"});
        auto h = par::matmul(xs, b, {{3, 2}, {2, 1}}); // m on b, k on a: P(sum)@a
        CHECK(h.layout().to_string() == "[10@b, 5] {P(sum)@a}");
        auto s = par::softmax(par::add(xs, xs), 1);
        pto::assemble(par::full_tensor(h), {0, 0}, y);
        pto::assemble(par::full_tensor(s), {10, 0}, y);
        pto::assemble(par::full_tensor(par::sum(xs, 0, true)), {20, 0}, y);
      },
      {x, w}, {21, 7}, sharded::kSumTolerance);
}

TEST_CASE("parallel: assemble writes each PE's uneven slice at its balanced offset") {
  auto x = sharded::data({10, 7}, 18);
  const par::Mesh m3({3}, {"x"});
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "uneven_assemble",
        [m3](Tensor a, Tensor y) {
          sharded::tiles();
          par::assemble(par::exp(par::shard(a, m3, {"x", {}})), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> in{x};
    pto::runtime::World one(1), three(3);
    auto oracle = sharded::run<1>(one, 1, k, in, {10, 7}, true)[0];
    auto outs = sharded::run<1>(three, 3, k, in, {10, 7}, true);
    // Rows dealt to 3 parts one at a time: 4, 3, 3, at offsets 0, 4, 7.
    const int64_t first[] = {0, 4, 7, 10};
    for (int p = 0; p < 3; ++p)
      for (int64_t i = 0; i < 70; ++i) {
        const int64_t r = i / 7;
        const double want = r >= first[p] && r < first[p + 1] ? oracle.get(i) : 0.0;
        CHECK(outs[size_t(p)].get(i) == want);
      }
  }
}

TEST_CASE("parallel: every elementwise rule of the seed table, split on both mesh axes") {
  // x in (-0.9, 0.9) (asin, acos, atanh defined), p = 1.25 + |x| (acosh, log, sqrt, rsqrt,
  // reciprocal defined), row [1, 16] broadcast over rows; every value exact in fp32.
  auto x = sharded::data({8, 16}, 21), p = sharded::data({8, 16}, 22),
       row = sharded::data({1, 16}, 23);
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.set(i, x.get(i) * 0.875);
    p.set(i, 1.25 + std::fabs(p.get(i)));
  }
  for (int64_t i = 0; i < row.numel(); ++i)
    row.set(i, row.get(i) == 0 ? 0.5 : row.get(i));
  sharded::against_oracle(
      "elementwise_all", 4,
      [](Tensor a, Tensor b, Tensor r, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        auto ps = par::shard(b, kMesh2x2, {"a", "b"});
        // Floats: one sum of every unary op on its domain and every float binary op.
        std::vector<par::DTensor> f = {
            par::acos(xs),          par::asin(xs),          par::atanh(xs),
            par::atan(xs),          par::asinh(xs),         par::cos(xs),
            par::sin(xs),           par::tan(xs),           par::cosh(xs),
            par::sinh(xs),          par::erf(xs),           par::erfc(xs),
            par::expm1(xs),         par::log1p(ps),         par::log(ps),
            par::acosh(ps),         par::rsqrt(ps),         par::reciprocal(ps),
            par::square(xs),        par::softplus(xs),      par::softsign(xs),
            par::bessel_i0e(xs),    par::bessel_i1e(xs),    par::ceil(xs),
            par::floor(xs),         par::round(xs),         par::sign(xs),
            par::relu6(xs),         par::elu(xs, 0.5),      par::atan2(xs, ps),
            par::div_no_nan(xs, r), par::floor_div(xs, ps), par::remainder(xs, ps),
            par::fmod(xs, ps),      par::pow(ps, xs)};
        par::DTensor acc = f[0];
        for (size_t i = 1; i < f.size(); ++i)
          acc = par::add(acc, f[i]);
        CHECK(acc.layout().to_string() == "[8@a, 16@b]");
        // Bools: comparisons and logic, each weighted by its own power of two.
        std::vector<par::DTensor> c = {par::lt(xs, r),
                                       par::le(xs, r),
                                       par::gt(xs, r),
                                       par::ge(xs, r),
                                       par::eq(par::floor(xs), r),
                                       par::ne(xs, r)};
        c.push_back(par::logical_and(c[0], c[5]));
        c.push_back(par::logical_or(c[2], c[4]));
        c.push_back(par::logical_not(c[1]));
        Tensor out = par::full_tensor(acc);
        for (size_t i = 0; i < c.size(); ++i)
          out = pto::add(out, pto::mul(pto::cast(par::full_tensor(c[i]), pto::DT_FP32),
                                       double(int64_t(1) << (i + 4))));
        pto::assemble(out, {0, 0}, y);
      },
      {x, p, row}, {8, 16}, kExact);
}

TEST_CASE("parallel: non-decreasing unary ops keep a pending max or min, bitwise") {
  // Values with ties, signed zeros and halves: floor, ceil, round, sign and relu6 commute with
  // max and min exactly (-0 < +0, NaN to NaN), so their pending partial is not resolved first.
  pto::HostTensor x(pto::DT_FP32, {4, 16});
  const double v[] = {-0.0, 0.0, -0.5, 0.5, 2.5, -2.5, -1.0, 7.5, -0.25, 0.25, 1.5, -6.5};
  for (int64_t i = 0; i < x.numel(); ++i)
    x.set(i, v[(i * 7 + i / 16) % 12]);
  sharded::against_oracle(
      "monotone_partials", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto xs = par::shard(a, kMesh4, {{}, "x"});
        auto mx = par::amax(xs, 1, true), mn = par::amin(xs, 1, true);
        CHECK(mx.layout().to_string() == "[4, 1] {P(max)@x}");
        std::vector<par::DTensor> kept = {par::floor(mx), par::ceil(mn), par::round(mx),
                                          par::sign(mn), par::relu6(mx)};
        for (const auto &k : kept)
          CHECK(k.layout().to_string().find("P(m") != std::string::npos);
        Tensor out = par::full_tensor(kept[0]);
        for (size_t i = 1; i < kept.size(); ++i)
          out = pto::concat({out, par::full_tensor(kept[i])}, 1);
        pto::assemble(out, {0, 0}, y);
      },
      {x}, {4, 5}, kExact);
}

TEST_CASE("parallel: Cast, OnesLike, ZerosLike, BiasAdd, BroadcastTo, ExpandDims, Squeeze") {
  auto x = sharded::data({8, 16}, 31), bias = sharded::data({16}, 32),
       w = sharded::data({16, 16}, 33);
  sharded::against_oracle(
      "movement_rules", 4,
      [](Tensor a, Tensor b, Tensor c, Tensor y) {
        sharded::tiles();
        pto::set_vec_tile_shapes(1, 8, 16); // the rank-3 ops need a rank-3 tile
        auto xs = par::shard(a, kMesh2x2, {"a", "b"});
        auto u = par::unsqueeze(xs, 1);
        CHECK(u.layout().to_string() == "[8@a, 1, 16@b]");
        auto q = par::squeeze(u, {1});
        CHECK(q.layout().to_string() == "[8@a, 16@b]");
        auto bt = par::broadcast_to(par::unsqueeze(xs, 0), {3, 8, 16});
        CHECK(bt.layout().to_string() == "[3, 8@a, 16@b]");
        auto ba = par::bias_add(xs, b, pto::DataFormat::NHWC);
        CHECK(ba.layout().to_string() == "[8@a, 16@b]");
        auto ct = par::cast(par::cast(xs, pto::DT_BF16), pto::DT_FP32);
        auto ones = par::ones_like(xs), zeros = par::zeros_like(xs);
        // A pending P(sum) passes through ExpandDims / Squeeze and resolves at full_tensor.
        auto h = par::matmul(par::shard(a, kMesh2x2, {{}, "b"}), c, {{1, 2}, {2, 1}});
        auto hu = par::squeeze(par::unsqueeze(h, 0));
        CHECK(hu.layout().to_string().find("P(sum)") != std::string::npos);
        Tensor out = pto::add(par::full_tensor(q), pto::sum(par::full_tensor(bt), 0));
        out = pto::add(out, pto::mul(par::full_tensor(ba), 0.5));
        out = pto::add(out, pto::mul(par::full_tensor(ct), 0.25));
        out = pto::add(out, pto::add(par::full_tensor(ones), par::full_tensor(zeros)));
        out = pto::add(out, par::full_tensor(hu));
        pto::assemble(out, {0, 0}, y);
      },
      {x, bias, w}, {8, 16}, sharded::kSumTolerance);
}

TEST_CASE("parallel: PTO_DUMP=sharding records layouts and each inserted collective") {
  const std::string dir = "/tmp/pto_sharding_dump_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::setenv("PTO_DUMP", "sharding", 1);
  ::setenv("PTO_DUMP_DIR", dir.c_str(), 1);
  auto x = sharded::data({8, 32}, 51), w = sharded::data({32, 16}, 52);
  sharded::against_oracle("dump_sharding", 4,
                          [](Tensor a, Tensor b, Tensor y) {
                            sharded::tiles();
                            auto h =
                                par::matmul(par::shard(a, kMesh4, {{}, "x"}), b, {{1, 4}, {4, 1}});
                            pto::assemble(par::full_tensor(par::relu(h)), {0, 0}, y);
                          },
                          {x, w}, {8, 16}, sharded::kSumTolerance, {pto::RunMode::Interpret});
  ::unsetenv("PTO_DUMP");
  ::unsetenv("PTO_DUMP_DIR");
  std::string all;
  for (const auto &e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path());
    all += std::string(std::istreambuf_iterator<char>(f), {});
  }
  std::filesystem::remove_all(dir);
  CHECK(all.find("parallel::matmul([8, 32@x], whole) -> [8, 16] {P(sum)@x}\n") !=
        std::string::npos);
  // relu does not keep a P(sum): the allreduce is inserted for it, 8 x 16 fp32 per PE.
  CHECK(
      all.find("  allreduce(sum) over x: resolves P(sum) of [8, 16] {P(sum)@x}, 512 B per PE\n") !=
      std::string::npos);
  CHECK(all.find("(1 PE: whole tensors, no collective)") != std::string::npos);
}

TEST_CASE("parallel: the seed table's remaining ops with explicit strategies, on 4 PEs") {
  auto x = sharded::data({8, 14}, 21), w = sharded::data({6, 14}, 22);
  // PReLU: x's channels (dim 1) and the weight [14] split alike over b; rows over a.
  sharded::against_oracle(
      "prelu", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto weight = pto::reshape(pto::view(b, {1, 14}, {0, 0}), {14});
        auto r = par::prelu(par::shard(a, kMesh2x2, {{}, {}}), weight, {{2, 2}, {2}});
        CHECK(r.layout().to_string() == "[8@a, 14@b]");
        pto::assemble(par::full_tensor(r), {0, 0}, y);
      },
      {x, w}, {8, 14}, kExact);
  // Concat along a split axis (uneven: 14 rows into 4), then Split along it: bitwise.
  sharded::against_oracle(
      "concat_split", 4,
      [](Tensor a, Tensor b, Tensor y) {
        sharded::tiles();
        auto c = par::concat({par::shard(a, kMesh4, {{}, {}}), b}, 0, {{4, 1}, {4, 1}});
        CHECK(c.layout().to_string() == "[14@x, 14]");
        auto p = par::split(c, {6, 8}, 0);
        CHECK(p[1].layout().to_string() == "[8@x, 14]");
        pto::assemble(par::full_tensor(p[1]), {0, 0}, y);
        pto::assemble(pto::mul(par::full_tensor(p[0]), 2.0), {8, 0}, y);
      },
      {x, w}, {14, 14}, kExact);
  // L2Normalize with its axis split over a sub-axis (b of 2x2), rows over a.
  sharded::against_oracle(
      "l2n", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto r = par::l2_normalize(par::shard(a, kMesh2x2, {{}, {}}), 1, 1e-4, {{2, 2}});
        CHECK(r.layout().to_string() == "[8@a, 14@b]");
        pto::assemble(par::full_tensor(r), {0, 0}, y);
      },
      {x}, {8, 14}, sharded::kSumTolerance);
  // Tile: the repeated dim 1 (multiple 4) split 2 (each PE tiles 2 copies), dim 0 kept whole;
  // Slice and StridedSlice of the whole split dim 1 keep its split.
  sharded::against_oracle(
      "tile_slice", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        auto t = par::tile(par::shard(a, kMesh2x2, {{}, {}}), {1, 4}, {{1, 2}});
        CHECK(t.layout().to_string() == "[8, 56@a]");
        auto s = par::slice(t, {2, 0}, {4, -1}, {{1, 2}});
        CHECK(s.layout().to_string() == "[4, 56@a]");
        auto ss = par::strided_slice(s, {0, 0}, {4, 56}, {1, 1}, {{2, 2}});
        CHECK(ss.layout().to_string() == "[4@a, 56@b]"); // counts take the mesh axes in order
        pto::assemble(par::full_tensor(ss), {0, 0}, y);
        auto every2 =
            par::strided_slice(par::shard(a, kMesh2x2, {{}, "b"}), {1, 0}, {8, 14}, {3, 1});
        CHECK(every2.layout().to_string() == "[3, 14@b]");
        pto::assemble(par::full_tensor(every2), {4, 0}, y);
      },
      {x}, {7, 56}, kExact);
}

TEST_CASE("parallel: ArgMaxWithValue / ArgMinWithValue with the reduced axis split: ties, NaN") {
  auto x = sharded::data({8, 14}, 23);
  // Values in {-2, .., 2} (many ties, -0 and +0 among them) split unevenly over 4 PEs and over a
  // sub-axis: the lowest global index wins, bitwise; rows 0 and 5 get NaNs (NaN wins).
  sharded::against_oracle(
      "argmax_ties", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        Tensor t = pto::round(pto::mul(a, 2.0));
        Tensor rows = pto::reshape(pto::arange(int64_t{0}, int64_t{8}), {8, 1});
        Tensor cols = pto::reshape(pto::arange(int64_t{0}, int64_t{14}), {1, 14});
        Tensor nan_at =
            pto::logical_or(pto::logical_and(pto::eq(rows, int64_t{0}), pto::eq(cols, int64_t{9})),
                            pto::logical_and(pto::eq(rows, int64_t{5}), pto::ge(cols, int64_t{6})));
        Tensor v = pto::where(nan_at, std::nan(""), t);
        auto mx = par::argmax_with_value(par::shard(v, kMesh4, {{}, "x"}), 1);
        CHECK(mx.index.layout().to_string() == "[8]");
        auto mn = par::argmin_with_value(par::shard(v, kMesh2x2, {"a", "b"}), 1, true);
        CHECK(mn.values.layout().to_string() == "[8@a, 1]");
        auto col = [](const par::DTensor &d) {
          return pto::reshape(pto::cast(par::full_tensor(d), pto::DT_FP32), {8, 1});
        };
        pto::assemble(col(mx.index), {0, 0}, y);
        pto::assemble(col(mx.values), {0, 1}, y);
        pto::assemble(col(mn.index), {0, 2}, y);
        pto::assemble(col(mn.values), {0, 3}, y);
      },
      {x}, {8, 4}, kExact);
}

TEST_CASE("parallel: TopK with the last dim split: ties, sorted and unsorted, largest and not") {
  auto x = sharded::data({8, 14}, 24);
  sharded::against_oracle(
      "topk", 4,
      [](Tensor a, Tensor y) {
        sharded::tiles();
        Tensor t = pto::round(pto::mul(a, 3.0)); // values in {-3, .., 3}: ties in every row
        auto big = par::topk(par::shard(t, kMesh4, {{}, {}}), 3, true, true, {{1, 4}});
        CHECK(big.indices.layout().to_string() == "[8, 3]");
        auto small = par::topk(par::shard(t, kMesh2x2, {"a", "b"}), 3, false, false);
        CHECK(small.values.layout().to_string() == "[8@a, 3]");
        auto f = [](const par::DTensor &d) { return pto::cast(par::full_tensor(d), pto::DT_FP32); };
        pto::assemble(f(big.values), {0, 0}, y);
        pto::assemble(f(big.indices), {0, 3}, y);
        pto::assemble(f(small.values), {0, 6}, y);
        pto::assemble(f(small.indices), {0, 9}, y);
      },
      {x}, {8, 12}, kExact);
}
