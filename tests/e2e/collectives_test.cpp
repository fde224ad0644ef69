// collectives_test.cpp - The DSL collectives (collectives.h) on several PEs, against plain loops
// over every PE's input: every reduction, both allreduce algorithms, sizes that do not divide by
// the PE count, several dtypes, sub-groups.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

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

std::vector<pto::HostTensor> make(int n, pto::DataType dt, const std::vector<int64_t> &shape,
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

TEST_CASE("allreduce: every reduction, every algorithm, rows not divisible by the PE count") {
  const int n = 4;
  const std::vector<int64_t> shape{10, 7};
  for (auto mode : support::run_modes())
    for (auto algo : {dist::AllreduceAlgorithm::ONE_SHOT, dist::AllreduceAlgorithm::TWO_SHOT,
                      dist::AllreduceAlgorithm::RS_AG})
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
                // RS_AG in 1-row chunks: several chunks per block, and a tail.
                pto::assemble(dist::allreduce(x, op, {.algorithm = algo, .chunk_bytes = 1}), {0, 0},
                              y);
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
        [](pto::Tensor x, pto::Tensor y, const std::string &group) {
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

// ---- allreduce fusion (collectives.h, "Fusion"): fused calls are one packed exchange --------

namespace {

/// How many times `what` occurs in `text`.
int occurrences(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}
/// Puts in a kernel's printed IR: every allreduce exchange here is one-shot (64 KiB or less),
/// which puts once to each PE (reference §7.4), so n_pes puts per exchange.
int puts(const std::string &ir) { return occurrences(ir, " = shmem_put("); }

/// Element i of input t on PE p: small integers, exact in every dtype and every partial result
/// (sums of 8 stay within [-72, 72]); for prod +-1 with a few 2s (|product| <= 4 on 8 PEs).
double fused_input(int t, int p, int64_t i, Reduction op) {
  if (op == Reduction::PROD)
    return (i + 3 * p + t) % 7 == 0 ? 2.0 : ((i + p + t) % 2 ? 1.0 : -1.0);
  return static_cast<double>((i * 5 + p * 3 + t * 7) % 19 - 9);
}

/// One tensor per PE, filled with fused_input(t, ...).
std::vector<pto::HostTensor> fused_inputs(int t, int n, pto::DataType dt,
                                          const std::vector<int64_t> &shape, Reduction op) {
  std::vector<pto::HostTensor> v;
  for (int p = 0; p < n; ++p) {
    v.emplace_back(dt, shape);
    for (int64_t i = 0; i < v.back().numel(); ++i)
      v.back().set(i, fused_input(t, p, i, op));
  }
  return v;
}

/// One tensor per PE, every element `fill`.
std::vector<pto::HostTensor> filled(int n, pto::DataType dt, const std::vector<int64_t> &shape,
                                    double fill) {
  std::vector<pto::HostTensor> v;
  for (int p = 0; p < n; ++p) {
    v.emplace_back(dt, shape);
    v.back().fill(fill);
  }
  return v;
}

/// The reduction over PEs 0..n-1 of fused_input(t, p, i), in plain double arithmetic.
double fused_want(int t, int n, int64_t i, Reduction op) {
  double v = fused_input(t, 0, i, op);
  for (int q = 1; q < n; ++q)
    v = combine(op, v, fused_input(t, q, i, op));
  return v;
}

} // namespace

TEST_CASE("allreduce fusion 2: calls sharing a fusion_id are one exchange, results unchanged") {
  // Four calls: A [3, 5], B a [2, 3, 8] view valid [2, 2, 5] (packed as [6, 8]), C a [4, 8]
  // view valid [3, 6] (so the packed buffer has padding and partly valid blocks) in fusion_id 7,
  // and D [5, 16] in fusion_id 9, called between them. Fused: 2 exchanges; unfused: 4. The
  // first case of each PE count also runs unfused (JIT compiles dominate the time) and must
  // match it bit for bit.
  const std::vector<std::vector<int64_t>> shapes{{3, 5}, {2, 3, 8}, {4, 8}, {5, 16}};
  struct Case {
    int n;
    pto::DataType dt;
    Reduction op;
  };
  const std::vector<Case> cases{
      {2, pto::DT_FP32, Reduction::SUM},   {2, pto::DT_INT32, Reduction::MAX},
      {2, pto::DT_INT16, Reduction::MIN},  {2, pto::DT_FP16, Reduction::PROD},
      {4, pto::DT_BF16, Reduction::SUM},   {4, pto::DT_INT64, Reduction::MAX},
      {4, pto::DT_DOUBLE, Reduction::MIN}, {4, pto::DT_INT8, Reduction::PROD},
      {8, pto::DT_FP32, Reduction::SUM},   {8, pto::DT_INT8, Reduction::MAX},
      {8, pto::DT_BF16, Reduction::MIN},   {8, pto::DT_INT32, Reduction::PROD}};
  const double kUntouched = -5; // outputs outside B's and C's valid regions keep it
  for (auto mode : support::run_modes())
    for (const Case &c : cases) {
      const bool with_unfused = &c == &cases.front() || c.n != (&c - 1)->n;
      CAPTURE(std::string(support::mode_name(mode)));
      CAPTURE(c.n);
      CAPTURE(pto::name(c.dt));
      CAPTURE(std::string(dist::name(c.op)));
      // What the trace saw of the deferred results (read on the host after the run).
      std::vector<int64_t> b_shape, b_valid, c_valid;
      pto::DataType a_dtype = pto::DT_BOTTOM;
      const Reduction op = c.op;
      auto k = pto::jit(
          "fused_ids",
          [&, op](pto::Tensor xa, pto::Tensor xb, pto::Tensor xc, pto::Tensor xd, pto::Tensor ya,
                  pto::Tensor yb, pto::Tensor yc, pto::Tensor yd, int fusion) {
            pto::set_vec_tile_shapes(4, 16);
            const dist::AllreduceOptions o7{.fusion = fusion, .fusion_id = 7};
            const dist::AllreduceOptions o9{.fusion = fusion, .fusion_id = 9};
            auto bv = pto::view(xb, {2, 3, 8}, {0, 0, 0}, {.valid_shape = {{2, 2, 5}}});
            auto cv = pto::view(xc, {4, 8}, {0, 0}, {.valid_shape = {{3, 6}}});
            auto ra = dist::allreduce(xa, op, o7);
            auto rd = dist::allreduce(xd, op, o9);
            auto rb = dist::allreduce(bv, op, o7);
            auto rc = dist::allreduce(cv, op, o7);
            a_dtype = ra.dtype();
            b_shape.clear();
            for (auto &d : rb.shape())
              b_shape.push_back(d.concrete());
            b_valid.clear();
            for (auto &d : rb.valid_shape())
              b_valid.push_back(d.concrete());
            c_valid.clear();
            for (auto &d : rc.valid_shape())
              c_valid.push_back(d.concrete());
            pto::assemble(ra, {0, 0}, ya);
            pto::assemble(rc, {0, 0}, yc);
            pto::assemble(rd, {0, 0}, yd);
            pto::set_vec_tile_shapes(2, 3, 8);
            pto::assemble(rb, {0, 0, 0}, yb);
          },
          support::opts(mode));
      std::vector<std::vector<pto::HostTensor>> xs, fused, unfused;
      for (int t = 0; t < 4; ++t) {
        xs.push_back(fused_inputs(t, c.n, c.dt, shapes[size_t(t)], c.op));
        fused.push_back(filled(c.n, c.dt, shapes[size_t(t)], kUntouched));
        unfused.push_back(filled(c.n, c.dt, shapes[size_t(t)], kUntouched));
      }
      pto::runtime::World world(c.n);
      auto run = [&](std::vector<std::vector<pto::HostTensor>> &ys, int fusion) {
        world.run([&](int pe) {
          auto p = size_t(pe);
          k(xs[0][p], xs[1][p], xs[2][p], xs[3][p], ys[0][p], ys[1][p], ys[2][p], ys[3][p], fusion);
        });
        return puts(k.last_ir());
      };
      if (with_unfused)
        CHECK(run(unfused, 0) == 4 * c.n);
      CHECK(run(fused, 2) == 2 * c.n); // one exchange per fusion_id
      CHECK(a_dtype == c.dt);
      CHECK(b_shape == std::vector<int64_t>{2, 3, 8});
      CHECK(b_valid == std::vector<int64_t>{2, 2, 5});
      CHECK(c_valid == std::vector<int64_t>{3, 6});
      for (int t = 0; t < 4; ++t) {
        for (int p = 0; p < c.n; ++p) {
          const pto::HostTensor &got = fused[size_t(t)][size_t(p)];
          const pto::HostTensor &ref = unfused[size_t(t)][size_t(p)];
          if (with_unfused)
            REQUIRE(std::memcmp(got.data(), ref.data(), size_t(got.size_bytes())) == 0);
          for (int64_t i = 0; i < got.numel(); ++i) {
            bool valid = t == 1   ? (i / 8) % 3 < 2 && i % 8 < 5
                         : t == 2 ? i / 8 < 3 && i % 8 < 6
                                  : true;
            double want = valid ? fused_want(t, c.n, i, c.op) : kUntouched;
            REQUIRE(got.get(i) == want); // small integers: exact in every dtype
          }
        }
      }
    }
}

TEST_CASE("allreduce fusion 1: size buckets, and every point that ends a bucket") {
  // Three [4, 16] fp32 inputs (256 B each); y1..y3 start at 0. Per scenario: the exchanges the
  // IR must hold, and what y_t holds as a multiple of allreduce(x_t) (0: untouched).
  enum Scenario { Bucket2, Full, Alone, Consumed, Barrier, Overwrite, InLoop, Keys, Unused };
  struct Case {
    Scenario s;
    const char *what;
    int exchanges;
    std::array<double, 3> times;
  };
  const std::vector<Case> cases{
      {Bucket2, "x3 would overflow the 600 B bucket of x1, x2", 2, {1, 1, 1}},
      {Full, "x1, x2 fill a 512 B bucket exactly", 2, {1, 1, 1}},
      {Alone, "each call alone fills a 200 B bucket: not deferred", 3, {1, 1, 1}},
      {Consumed, "an op reads r1 before x2, x3 are called", 2, {2, 1, 1}},
      {Barrier, "a barrier between x1 and x2, x3", 2, {1, 1, 1}},
      {Overwrite, "x1 is overwritten by x2 after its call", 2, {1, 1, 1}},
      {InLoop, "x1, x2 in a 3-iteration loop, x3 after it", 2, {3, 3, 1}},
      {Keys, "x2 has another reduction: its own bucket", 2, {1, 1, 1}},
      {Unused, "a result nobody reads is exchanged at the end", 1, {0, 0, 0}},
  };
  const int n = 4;
  const std::vector<int64_t> shape{4, 16};
  for (auto mode : support::run_modes())
    for (const Case &c : cases) {
      CAPTURE(std::string(support::mode_name(mode)));
      CAPTURE(std::string(c.what));
      const Scenario s = c.s;
      auto k = pto::jit(
          "fused_buckets",
          [s](pto::Tensor x1, pto::Tensor x2, pto::Tensor x3, pto::Tensor y1, pto::Tensor y2,
              pto::Tensor y3) {
            pto::set_vec_tile_shapes(4, 16);
            int64_t cap = s == Full ? 512 : s == Alone ? 200 : 600;
            const dist::AllreduceOptions o{.fusion = 1, .fusion_bucket_bytes = cap};
            auto ar = [&](const pto::Tensor &x) { return dist::allreduce(x, Reduction::SUM, o); };
            if (s == InLoop) {
              for (auto i : pto::loop(0, 3)) {
                (void)i;
                auto r1 = ar(x1), r2 = ar(x2);
                pto::assemble(pto::view(y1, {4, 16}, {0, 0}) + r1, {0, 0}, y1);
                pto::assemble(pto::view(y2, {4, 16}, {0, 0}) + r2, {0, 0}, y2);
              }
              pto::assemble(ar(x3), {0, 0}, y3);
              return;
            }
            if (s == Unused) {
              ar(x1);
              return;
            }
            auto r1 = ar(x1);
            if (s == Consumed)
              r1 = r1 + r1;
            if (s == Barrier)
              dist::barrier();
            if (s == Overwrite)
              pto::assemble(x2, {0, 0}, x1);
            auto r2 =
                s == Keys ? dist::allreduce(x2, Reduction::MAX, o) : ar(s == Overwrite ? x1 : x2);
            auto r3 = ar(x3);
            pto::assemble(r1, {0, 0}, y1);
            pto::assemble(r2, {0, 0}, y2);
            pto::assemble(r3, {0, 0}, y3);
          },
          support::opts(mode));
      std::vector<std::vector<pto::HostTensor>> xs, ys;
      for (int t = 0; t < 3; ++t) {
        xs.push_back(fused_inputs(t, n, pto::DT_FP32, shape, Reduction::SUM));
        ys.push_back(filled(n, pto::DT_FP32, shape, 0));
      }
      pto::runtime::World world(n);
      world.run([&](int pe) {
        auto p = size_t(pe);
        k(xs[0][p], xs[1][p], xs[2][p], ys[0][p], ys[1][p], ys[2][p]);
      });
      CHECK(puts(k.last_ir()) == c.exchanges * n);
      for (int t = 0; t < 3; ++t)
        for (int p = 0; p < n; ++p)
          for (int64_t i = 0; i < 64; ++i) {
            // Overwrite: y2 is the allreduce of x1 after x2 was copied into it.
            Reduction op = s == Keys && t == 1 ? Reduction::MAX : Reduction::SUM;
            double want = c.times[size_t(t)] * fused_want(t, n, i, op);
            REQUIRE(ys[size_t(t)][size_t(p)].get(i) == want);
          }
    }
}

TEST_CASE("allreduce fusion: bad options are typed errors at the caller's line") {
  auto trace = [](const std::function<void(pto::Tensor)> &body) {
    auto k = pto::jit("fusion_bad", [body](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      body(x);
    });
    pto::HostTensor x(pto::DT_FP32, {2, 8});
    k(x);
  };
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor x) {
                         dist::allreduce(x, Reduction::SUM, {.fusion = 2, .fusion_id = 3});
                         dist::allreduce(x, Reduction::MAX, {.fusion = 2, .fusion_id = 3});
                       }),
                       doctest::Contains("fusion_id 3 was first used at collectives_test.cpp:"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor x) {
                         dist::allreduce(x, Reduction::SUM, {.fusion = 2, .fusion_id = 3});
                         dist::allreduce(pto::cast(x, pto::DT_BF16), Reduction::SUM,
                                         {.fusion = 2, .fusion_id = 3});
                       }),
                       doctest::Contains("dtype fp32"), pto::DistributedError);
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor x) { dist::allreduce(x, Reduction::SUM, {.fusion = 2}); }),
      doctest::Contains("fusion 2 needs a fusion_id >= 0, got -1"), pto::DistributedError);
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor x) { dist::allreduce(x, Reduction::SUM, {.fusion = 3}); }),
      doctest::Contains("fusion must be 0, 1 or 2, got 3"), pto::DistributedError);
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor x) {
        dist::allreduce(x, Reduction::SUM, {.fusion = 1, .fusion_bucket_bytes = 0});
      }),
      doctest::Contains("fusion_bucket_bytes must be > 0, got 0"), pto::DistributedError);
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor x) { dist::allreduce(x, Reduction::SUM, {.chunk_bytes = -1}); }),
      doctest::Contains("collectives_test.cpp:"), pto::DistributedError);
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor x) { dist::allreduce(x, Reduction::SUM, {.chunk_bytes = -1}); }),
      doctest::Contains("allreduce: chunk_bytes must be >= 0, got -1"), pto::DistributedError);
  CHECK_THROWS_WITH_AS(
      trace([](pto::Tensor x) { dist::allreduce(pto::ne(x, x), Reduction::SUM, {.fusion = 1}); }),
      doctest::Contains("dtype must be one of"), pto::DTypeError);
}

// ---- determinism and exact traffic shape of the SET-put algorithms ---------------------------

namespace {

/// Seeded fp32 values with full mantissas, so that the order of a sum shows in its bits.
std::vector<pto::HostTensor> random_inputs(int n, pto::DataType dt,
                                           const std::vector<int64_t> &shape, uint64_t seed) {
  std::vector<pto::HostTensor> v;
  uint64_t s = seed;
  auto next = [&s] { // splitmix64
    s += 0x9e3779b97f4a7c15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (int p = 0; p < n; ++p) {
    v.emplace_back(dt, shape);
    for (int64_t i = 0; i < v.back().numel(); ++i)
      v.back().set(i, static_cast<double>(next() >> 11) / 9007199254740992.0 * 200.0 - 100.0);
  }
  return v;
}

/// The host reference: element i summed over PE 0, 1, ..., n-1 in that order, in float (the
/// accumulation dtype of fp32, fp16 and bf16 sums), then stored in the output dtype.
pto::HostTensor ordered_sum(const std::vector<pto::HostTensor> &xs) {
  pto::HostTensor want(xs[0].dtype(), xs[0].shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    float acc = static_cast<float>(xs[0].get(i));
    for (size_t q = 1; q < xs.size(); ++q)
      acc += static_cast<float>(xs[q].get(i));
    want.set(i, static_cast<double>(acc));
  }
  return want;
}

bool same_bits(const pto::HostTensor &a, const pto::HostTensor &b) {
  return a.size_bytes() == b.size_bytes() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size_bytes())) == 0;
}

} // namespace

TEST_CASE("allreduce ONE_SHOT, RS_AG and AUTO: the same bits every run, as an ordered host sum") {
  // Sums of full-mantissa floats depend on the order; these algorithms add in PE order, so two
  // runs, the algorithms and a host sum in that order must agree bit for bit. RS_AG runs in
  // several chunk sizes (the chunking must not change a bit), AUTO past its one-shot threshold.
  using Algo = dist::AllreduceAlgorithm;
  struct Case {
    int n;
    pto::DataType dt;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases{{3, pto::DT_FP32, {13, 24}},
                                {4, pto::DT_BF16, {9, 2, 8}},
                                {2, pto::DT_FP32, {4200, 4}}}; // 67 KB: AUTO is RS_AG
  for (auto mode : support::run_modes())
    for (const Case &c : cases) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(c.n);
      CAPTURE(pto::name(c.dt));
      const auto xs = random_inputs(c.n, c.dt, c.shape, 42 + uint64_t(c.n));
      const auto want = ordered_sum(xs);
      pto::runtime::World world(c.n);
      const std::vector<std::pair<Algo, int64_t>> runs{{Algo::ONE_SHOT, 0},
                                                       {Algo::RS_AG, 0},
                                                       {Algo::RS_AG, 1},
                                                       {Algo::RS_AG, 100},
                                                       {Algo::AUTO, 0}};
      for (auto [algo, chunk] : runs) {
        CAPTURE(static_cast<int>(algo));
        CAPTURE(chunk);
        const size_t rank = c.shape.size();
        auto k = pto::jit(
            "ordered",
            [algo, chunk, rank](pto::Tensor x, pto::Tensor y) {
              if (rank == 2)
                pto::set_vec_tile_shapes(8, 8);
              else
                pto::set_vec_tile_shapes(4, 2, 8);
              auto r =
                  dist::allreduce(x, Reduction::SUM, {.algorithm = algo, .chunk_bytes = chunk});
              pto::assemble(r, std::vector<pto::SymbolicScalar>(rank, 0), y);
            },
            support::opts(mode));
        for (int rep = 0; rep < 2; ++rep) {
          std::vector<pto::HostTensor> ys;
          for (int p = 0; p < c.n; ++p)
            ys.emplace_back(c.dt, c.shape);
          world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
          for (int p = 0; p < c.n; ++p)
            REQUIRE(same_bits(ys[size_t(p)], want));
        }
      }
    }
}

TEST_CASE("allreduce RS_AG and TWO_SHOT: partial valid shapes in chunks, in a loop, sub-groups") {
  // x is a [11, 6] view valid [vr, 5] with vr a run-time value (rows of a size tensor); RS_AG
  // runs in 1-row chunks, so blocks, chunks and the valid edge cut through each other. Three
  // loop passes reuse the buffers. Outside the valid region y keeps its sentinel.
  using Algo = dist::AllreduceAlgorithm;
  const int n = 4;
  pto::runtime::World world(n);
  world.create_group("trio", {3, 0, 1});
  for (auto mode : support::run_modes())
    for (auto algo : {Algo::RS_AG, Algo::TWO_SHOT, Algo::ONE_SHOT})
      for (int64_t vr : {1, 7, 11}) // 1: the blocks of PEs 1.. are wholly invalid
        for (const std::string group : {"world", "trio"}) {
          CAPTURE(support::mode_name(mode));
          CAPTURE(static_cast<int>(algo));
          CAPTURE(vr);
          CAPTURE(group);
          auto k = pto::jit(
              "valid_chunks",
              [algo](pto::Tensor x, pto::Tensor rows, pto::Tensor y, const std::string &g) {
                pto::set_vec_tile_shapes(4, 8);
                auto v = pto::view(x, {11, 6}, {0, 0}, {.valid_shape = {{rows.shape(0), 5}}});
                for (auto i : pto::loop(0, 3)) {
                  (void)i;
                  auto r = dist::allreduce(v, Reduction::SUM,
                                           {.group = g, .algorithm = algo, .chunk_bytes = 1});
                  pto::assemble(r, {0, 0}, y);
                }
              },
              support::opts(mode, {{}, {{pto::DYNAMIC, 1}}}));
          auto xs = make(n, pto::DT_INT32, {11, 6}, Reduction::SUM);
          std::vector<pto::HostTensor> ys;
          for (int p = 0; p < n; ++p) {
            ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{11, 6});
            ys.back().fill(-1000);
          }
          pto::HostTensor rows(pto::DT_FP32, {vr, 1});
          const std::vector<int> members =
              group == "world" ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{3, 0, 1};
          world.run([&](int pe) {
            if (std::find(members.begin(), members.end(), pe) != members.end())
              k(xs[size_t(pe)], rows, ys[size_t(pe)], group);
          });
          for (int p : members)
            for (int64_t r = 0; r < 11; ++r)
              for (int64_t col = 0; col < 6; ++col) {
                double want = -1000;
                if (r < vr && col < 5) {
                  want = 0;
                  for (int q : members)
                    want += xs[size_t(q)].get(r * 6 + col);
                }
                REQUIRE(ys[size_t(p)].get(r * 6 + col) == want);
              }
        }
}

TEST_CASE("allreduce: bytes the program copies (no clears, no block fetched twice)") {
  // Counted in the traced IR: ONE_SHOT puts and gets n windows of x; RS_AG puts x's blocks,
  // gets n slots of its block, puts its block n times and gets the result once; neither clears.
  using Algo = dist::AllreduceAlgorithm;
  const int n = 4;
  for (auto algo : {Algo::ONE_SHOT, Algo::RS_AG, Algo::TWO_SHOT}) {
    CAPTURE(static_cast<int>(algo));
    auto k = pto::jit("traffic", [algo](pto::Tensor x, pto::Tensor y) {
      pto::set_vec_tile_shapes(4, 8);
      pto::assemble(dist::allreduce(x, Reduction::SUM, {.algorithm = algo}), {0, 0}, y);
    });
    auto xs = make(n, pto::DT_FP32, {16, 8}, Reduction::SUM);
    auto ys = make(n, pto::DT_FP32, {16, 8}, Reduction::SUM);
    pto::runtime::World world(n);
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    const std::string ir = k.last_ir();
    CHECK(occurrences(ir, " = shmem_clear_data(") == 0);
    CHECK(occurrences(ir, " = shmem_barrier") == 0); // kernel body: fresh buffers, no barrier
    const int gets = occurrences(ir, " = shmem_get(");
    const int puts = occurrences(ir, " = shmem_put(");
    if (algo == Algo::ONE_SHOT) {
      CHECK(puts == n);
      CHECK(gets == n);
    } else if (algo == Algo::RS_AG) { // one chunk per block here
      CHECK(puts == 2 * n);
      CHECK(gets == n + 1);
    } else {
      CHECK(puts == 2 * n);
      CHECK(gets == 2); // the accumulator, then the gathered result
    }
  }
}
