// collectives_many_pes_test.cpp - allreduce above the PE count whose per-PE loops are unrolled
// (collectives_allreduce.cpp kUnrolledPes = 16): one-shot and RS_AG then run their puts and their
// PE-order reductions as pto::loops. Checked against an independent long-double reduction, bit
// for bit against each other and against RS_AG in 1-row chunks (still unrolled), with x's valid
// rows honoured (full, partial and empty blocks), and nested in a pto::loop (buffers reused
// across passes), in both executors.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace dist = pto::distributed;
using dist::Reduction;

namespace {

constexpr int kPes = 20; // > kUnrolledPes

/// Input element i of PE p: non-integers for SUM (so the order of the additions shows in the
/// bits), small values for MAX and PROD (products stay in range).
double input(int p, int64_t i, Reduction op) {
  if (op == Reduction::PROD)
    return 1.0 + static_cast<double>((i * 3 + p * 7) % 5 - 2) / 64.0;
  return static_cast<double>((i * 37 + p * 101) % 997) / 97.0 - 5.0;
}

long double combine(Reduction op, long double a, long double b) {
  switch (op) {
  case Reduction::SUM:
    return a + b;
  case Reduction::MAX:
    return std::max(a, b);
  case Reduction::MIN:
    return std::min(a, b);
  case Reduction::PROD:
    return a * b;
  }
  return a;
}

} // namespace

TEST_CASE("allreduce on 20 PEs: looped one-shot = looped RS_AG = chunked RS_AG, bit for bit") {
  const int n = kPes;
  const int64_t C = 24;
  // 5 rows: 1-row blocks, PEs 5..19 own none; 47 rows: 3-row blocks, PE 15's has 2, 16..19 none.
  for (auto [R, valid_rows] : {std::pair<int64_t, int64_t>{5, 3}, {47, 45}})
    for (auto mode : support::run_modes())
      for (auto op : {Reduction::SUM, Reduction::MAX, Reduction::PROD})
        for (auto dt : {pto::DT_FP32, pto::DT_BF16}) {
          CAPTURE(R);
          CAPTURE(support::mode_name(mode));
          CAPTURE(dist::name(op));
          CAPTURE(pto::name(dt));
          auto k = pto::jit(
              "allreduce_many",
              [op, R, valid_rows](pto::Tensor x, pto::Tensor y1, pto::Tensor y2, pto::Tensor y3) {
                pto::set_vec_tile_shapes(4, 8);
                auto xv = pto::view(x, {R, C}, {0, 0}, {.valid_shape = {{valid_rows, C}}});
                pto::assemble(
                    dist::allreduce(xv, op, {.algorithm = dist::AllreduceAlgorithm::ONE_SHOT}),
                    {0, 0}, y1);
                pto::assemble(
                    dist::allreduce(xv, op, {.algorithm = dist::AllreduceAlgorithm::RS_AG}), {0, 0},
                    y2);
                pto::assemble(
                    dist::allreduce(
                        xv, op, {.algorithm = dist::AllreduceAlgorithm::RS_AG, .chunk_bytes = 1}),
                    {0, 0}, y3);
              },
              support::opts(mode));
          auto xs = support::tensors(n, dt, {R, C});
          auto y1 = support::tensors(n, dt, {R, C}), y2 = support::tensors(n, dt, {R, C});
          auto y3 = support::tensors(n, dt, {R, C});
          for (int p = 0; p < n; ++p) {
            for (int64_t i = 0; i < R * C; ++i)
              xs[size_t(p)].set(i, input(p, i, op));
            y1[size_t(p)].fill(-3);
            y2[size_t(p)].fill(-3);
            y3[size_t(p)].fill(-3);
          }
          auto world = support::make_world(n);
          world->run(
              [&](int pe) { k(xs[size_t(pe)], y1[size_t(pe)], y2[size_t(pe)], y3[size_t(pe)]); });
          for (int p = 0; p < n; ++p) {
            CAPTURE(p);
            REQUIRE(std::memcmp(y1[size_t(p)].data(), y2[size_t(p)].data(),
                                size_t(y1[size_t(p)].size_bytes())) == 0);
            REQUIRE(std::memcmp(y1[size_t(p)].data(), y3[size_t(p)].data(),
                                size_t(y1[size_t(p)].size_bytes())) == 0);
            REQUIRE(std::memcmp(y1[size_t(p)].data(), y1[0].data(),
                                size_t(y1[0].size_bytes())) == 0); // the same bits on every PE
            for (int64_t i = 0; i < R * C; ++i) {
              if (i >= valid_rows * C) {
                REQUIRE(y1[size_t(p)].get(i) == -3); // outside x's valid rows: untouched
                continue;
              }
              long double want = xs[0].get(i);
              for (int q = 1; q < n; ++q)
                want = combine(op, want, xs[size_t(q)].get(i));
              const double tol = dt == pto::DT_BF16 ? 0.02 * std::max(1.0L, std::abs(want)) + 0.1
                                                    : 1e-5 * std::max(1.0L, std::abs(want));
              REQUIRE(std::abs(static_cast<long double>(y1[size_t(p)].get(i)) - want) <= tol);
            }
          }
        }
}

TEST_CASE("allreduce on 20 PEs inside a pto::loop: the looped algorithms reuse their buffers") {
  const int n = kPes;
  for (auto algo : {dist::AllreduceAlgorithm::ONE_SHOT, dist::AllreduceAlgorithm::RS_AG})
    for (auto mode : support::run_modes()) {
      CAPTURE(static_cast<int>(algo));
      CAPTURE(support::mode_name(mode));
      auto k = pto::jit(
          "allreduce_many_loop",
          [algo](pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(2, 8);
            for (auto i : pto::loop(0, 3)) {
              auto s = dist::allreduce(x, Reduction::SUM, {.algorithm = algo});
              pto::assemble(pto::view(y, {2, 8}, {0, 0}) + s, {0, 0}, y);
              (void)i;
            }
          },
          support::opts(mode));
      auto xs = support::tensors(n, pto::DT_INT32, {2, 8});
      auto ys = support::tensors(n, pto::DT_INT32, {2, 8});
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < 16; ++i)
          xs[size_t(p)].set(i, static_cast<double>((i * 5 + p * 3) % 19 - 9));
      auto world = support::make_world(n);
      world->run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < 16; ++i) {
          int64_t want = 0;
          for (int q = 0; q < n; ++q)
            want += 3 * static_cast<int64_t>(xs[size_t(q)].get(i));
          REQUIRE(ys[size_t(p)].get(i) == static_cast<double>(want)); // integers: exact
        }
    }
}
