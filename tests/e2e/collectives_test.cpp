// collectives_test.cpp - The DSL collectives (collectives.h) on several PEs, against plain loops
// over every PE's input: every reduction, both allreduce algorithms, sizes that do not divide by
// the PE count, several dtypes, sub-groups.
#include "pto/pto.h"
#include "pto/runtime/world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>

namespace dist = pto::distributed;
using dist::Reduction;

namespace {

/// Input element i of PE p: small integers (exact in every dtype, products stay small).
double input(int p, int64_t i, Reduction op) {
  if (op == Reduction::PROD)
    return static_cast<double>(((i + p) % 3) - 1 + ((i * 7 + p) % 2 ? 2 : 0)); // -1..2
  return static_cast<double>((i * 5 + p * 3) % 19 - 9);
}

double combine(Reduction op, double a, double b) {
  switch (op) {
  case Reduction::SUM: return a + b;
  case Reduction::MAX: return std::max(a, b);
  case Reduction::MIN: return std::min(a, b);
  case Reduction::PROD: return a * b;
  }
  return a;
}

std::vector<pto::HostTensor> make(int n, pto::DataType dt, std::vector<int64_t> shape,
                                  Reduction op) {
  std::vector<pto::HostTensor> v;
  for (int p = 0; p < n; ++p) {
    v.emplace_back(dt, shape);
    for (int64_t i = 0; i < v.back().numel(); ++i)
      v.back().set(i, input(p, i, op));
  }
  return v;
}

} // namespace

TEST_CASE("allreduce: every reduction, both algorithms, rows not divisible by the PE count") {
  const int n = 4;
  const std::vector<int64_t> shape{10, 7};
  for (auto mode : support::run_modes())
    for (auto algo : {dist::AllreduceAlgorithm::ONE_SHOT, dist::AllreduceAlgorithm::TWO_SHOT})
      for (auto op : {Reduction::SUM, Reduction::MAX, Reduction::MIN, Reduction::PROD})
        for (auto dt : {pto::DT_INT32, pto::DT_FP32, pto::DT_BF16, pto::DT_INT8, pto::DT_DOUBLE}) {
          CAPTURE(support::mode_name(mode));
          CAPTURE(static_cast<int>(algo));
          CAPTURE(dist::name(op));
          CAPTURE(pto::name(dt));
          auto k = pto::jit(
              "allreduce",
              [op, algo](pto::Tensor x, pto::Tensor y) {
                pto::set_vec_tile_shapes(4, 8);
                pto::assemble(dist::allreduce(x, op, {.algorithm = algo}), {0, 0}, y);
              },
              support::opts(mode));
          auto xs = make(n, dt, shape, op), ys = make(n, dt, shape, op);
          pto::runtime::World world(n);
          world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
          for (int p = 0; p < n; ++p)
            for (int64_t i = 0; i < 70; ++i) {
              double want = xs[0].get(i);
              for (int q = 1; q < n; ++q)
                want = combine(op, want, xs[size_t(q)].get(i));
              REQUIRE(ys[size_t(p)].get(i) == want); // small integers: exact in every dtype
            }
        }
}

TEST_CASE("allreduce on 64 PEs (more PEs than cores)") {
  const int n = 64;
  auto k = pto::jit("allreduce64", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(2, 16);
    pto::assemble(dist::allreduce(x, Reduction::SUM), {0, 0}, y);
  });
  auto xs = make(n, pto::DT_FP32, {2, 16}, Reduction::SUM);
  auto ys = make(n, pto::DT_FP32, {2, 16}, Reduction::SUM);
  pto::runtime::World world(n);
  world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
  for (int64_t i = 0; i < 32; ++i) {
    double want = 0;
    for (int q = 0; q < n; ++q)
      want += input(q, i, Reduction::SUM);
    for (int p = 0; p < n; ++p)
      REQUIRE(ys[size_t(p)].get(i) == want);
  }
}

TEST_CASE("allgather, reduce_scatter, broadcast and all_to_all") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    pto::runtime::World world(n);
    auto xs = make(n, pto::DT_INT32, {5, 4}, Reduction::SUM);

    auto ag = pto::jit(
        "allgather",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(5, 4);
          pto::assemble(dist::allgather(x), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> gathered;
    for (int p = 0; p < n; ++p)
      gathered.emplace_back(pto::DT_INT32, std::vector<int64_t>{15, 4});
    world.run([&](int pe) { ag(xs[size_t(pe)], gathered[size_t(pe)]); });
    for (int p = 0; p < n; ++p)
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < 20; ++i)
          REQUIRE(gathered[size_t(p)].get(q * 20 + i) == xs[size_t(q)].get(i));

    // reduce_scatter: B = ceil(5 / 3) = 2 rows per PE; PE 2 gets row 4 only.
    auto rs = pto::jit(
        "reduce_scatter",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(5, 4);
          pto::assemble(dist::reduce_scatter(x, Reduction::MAX), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> parts;
    for (int p = 0; p < n; ++p) {
      parts.emplace_back(pto::DT_INT32, std::vector<int64_t>{2, 4});
      parts.back().fill(-1000); // rows past the valid ones stay untouched
    }
    world.run([&](int pe) { rs(xs[size_t(pe)], parts[size_t(pe)]); });
    for (int p = 0; p < n; ++p)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < 4; ++c) {
          int64_t row = p * 2 + r;
          double want = -1000;
          if (row < 5) {
            want = xs[0].get(row * 4 + c);
            for (int q = 1; q < n; ++q)
              want = std::max(want, xs[size_t(q)].get(row * 4 + c));
          }
          REQUIRE(parts[size_t(p)].get(r * 4 + c) == want);
        }

    auto bc = pto::jit(
        "broadcast",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(5, 4);
          pto::assemble(dist::broadcast(x, 2), {0, 0}, y);
        },
        support::opts(mode));
    auto outs = make(n, pto::DT_INT32, {5, 4}, Reduction::SUM);
    world.run([&](int pe) { bc(xs[size_t(pe)], outs[size_t(pe)]); });
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < 20; ++i)
        REQUIRE(outs[size_t(p)].get(i) == xs[2].get(i));

    // all_to_all with per-peer counts: counts[i][j] rows from PE i to PE j.
    const std::vector<std::vector<int64_t>> counts{{1, 2, 0}, {2, 0, 2}, {0, 1, 1}};
    auto a2a = pto::jit(
        "all_to_all",
        [&counts](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(5, 4);
          auto r = dist::all_to_all(x, counts);
          pto::assemble(pto::view(r, {3, 4}, {0, 0}), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> recv;
    for (int p = 0; p < n; ++p) {
      recv.emplace_back(pto::DT_INT32, std::vector<int64_t>{3, 4});
      recv.back().fill(-7);
    }
    world.run([&](int pe) { a2a(xs[size_t(pe)], recv[size_t(pe)]); });
    for (int j = 0; j < n; ++j) {
      int64_t row = 0;
      for (int i = 0; i < n; ++i) {
        int64_t send_off = 0;
        for (int k = 0; k < j; ++k)
          send_off += counts[size_t(i)][size_t(k)];
        for (int64_t r = 0; r < counts[size_t(i)][size_t(j)]; ++r, ++row)
          for (int64_t c = 0; c < 4; ++c)
            REQUIRE(recv[size_t(j)].get(row * 4 + c) == xs[size_t(i)].get((send_off + r) * 4 + c));
      }
      for (; row < 3; ++row) // rows past the received ones are untouched
        REQUIRE(recv[size_t(j)].get(row * 4) == -7);
    }
  }
}

TEST_CASE("collectives in sub-groups and in a traced loop") {
  const int n = 4;
  pto::runtime::World world(n);
  world.create_group("even", {0, 2});
  world.create_group("odd", {1, 3});
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    // Three iterations of y += allreduce(x) within my parity group: the collective's buffers
    // are reused across iterations.
    auto k = pto::jit(
        "group_loop",
        [](pto::Tensor x, pto::Tensor y, std::string group) {
          pto::set_vec_tile_shapes(2, 8);
          for (auto i : pto::loop(0, 3)) {
            auto s = dist::allreduce(x, Reduction::SUM, {.group = group});
            pto::assemble(pto::view(y, {2, 8}, {0, 0}) + s, {0, 0}, y);
            (void)i;
          }
        },
        support::opts(mode));
    auto xs = make(n, pto::DT_FP32, {2, 8}, Reduction::SUM);
    std::vector<pto::HostTensor> ys;
    for (int p = 0; p < n; ++p)
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{2, 8});
    world.run([&](int pe) {
      k(xs[size_t(pe)], ys[size_t(pe)], std::string(pe % 2 == 0 ? "even" : "odd"));
    });
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < 16; ++i) {
        double want = 3 * (input(p % 2, i, Reduction::SUM) + input(p % 2 + 2, i, Reduction::SUM));
        REQUIRE(ys[size_t(p)].get(i) == want);
      }
  }
}

TEST_CASE("collectives: bad input") {
  auto k = pto::jit("bad_root", [](pto::Tensor x) {
    pto::set_vec_tile_shapes(2, 8);
    dist::broadcast(x, 5);
  });
  pto::HostTensor x(pto::DT_FP32, {2, 8});
  CHECK_THROWS_WITH_AS(k(x), doctest::Contains("root 5 is out of range [0, 1)"),
                       pto::DistributedError);
  auto rank1 = pto::jit("rank1", [](pto::Tensor v) {
    pto::set_vec_tile_shapes(8);
    dist::allreduce(v, Reduction::SUM);
  });
  pto::HostTensor v(pto::DT_FP32, {8});
  CHECK_THROWS_AS(rank1(v), pto::ShapeError);
  CHECK_THROWS_AS(dist::parse_reduction("avg"), pto::Error);
}

TEST_CASE("a collective over tensors of different shapes on different PEs is detected") {
  auto k = pto::jit("ragged", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(2, 8);
    pto::assemble(dist::allreduce(x, Reduction::SUM), {0, 0}, y);
  });
  std::vector<pto::HostTensor> xs, ys;
  for (int p = 0; p < 3; ++p) {
    int64_t rows = p == 1 ? 3 : 2; // PE 1 disagrees
    xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{rows, 8});
    ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{rows, 8});
  }
  pto::runtime::World world(3, {.deadlock_timeout_ms = 5000});
  CHECK_THROWS_WITH_AS(world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }),
                       doctest::Contains("declared different shmem tensors"),
                       pto::DistributedError);
}
