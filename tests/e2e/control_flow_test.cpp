// control_flow_test.cpp - Tensor-element reads (Tensor::at), pto::cond path enumeration,
// is_loop_begin/end, loop_unroll and nested loops, through whole kernels in both run modes.
// Expected values are plain C++ loops over the inputs; every documented error has a case.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dist = pto::distributed;
using doctest::Contains;

namespace {

/// Counts occurrences of `what` in `s`.
int count(const std::string &s, const std::string &what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
    ++n;
  return n;
}

/// x[r, c] = r * 100 + c + 0.5 (exact in fp32).
void fill_rows(pto::HostTensor &x, int64_t cols) {
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t r = i / cols, c = i % cols;
    x.set(i, static_cast<double>(r * 100 + c) + 0.5);
  }
}

} // namespace

TEST_CASE("a loop whose trip count is read from an INT32 input runs that many iterations") {
  const int64_t rows = 7, cols = 13; // cols: a tail after one 8-wide tile
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "data_count",
        [](pto::Tensor counts, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(counts.at({0})))
            pto::assemble(pto::view(x, {1, 13}, {i, 0}) * 2.0, {i, 0}, y);
          // The same count read through a local copy (the read happens after its producer).
          auto twice = counts + counts;
          for (auto i : pto::loop(twice.at({1}) - counts.at({1})))
            pto::assemble(pto::view(x, {1, 13}, {i, 0}) + 1000.0, {i, 0}, y);
        },
        support::opts(mode));
    for (int64_t n : {0, 1, 5, 7}) {
      CAPTURE(n);
      pto::HostTensor counts(pto::DT_INT32, {2}), x(pto::DT_FP32, {rows, cols}),
          y(pto::DT_FP32, {rows, cols});
      counts.set(0, static_cast<double>(n));
      counts.set(1, static_cast<double>(rows - n)); // the second loop covers rows [0, rows - n)
      fill_rows(x, cols);
      y.fill(-1);
      k(counts, x, y);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          double xv = x.get(r * cols + c);
          double want = r < rows - n ? xv + 1000.0 : (r < n ? xv * 2.0 : -1.0);
          REQUIRE(y.get(r * cols + c) == want);
        }
    }
    CHECK(k.stats().traces == 1);
  }
}

TEST_CASE("at() reads every integer dtype and bool with its sign, width and value") {
  // Each element places a 1 at column (value - bias + 4) of its row; a truncated, sign-flipped
  // or zero-extended read lands elsewhere or leaves the row (a ShapeError).
  struct Case {
    pto::DataType dt;
    double value;
    int64_t bias;
  };
  const std::vector<Case> cases = {
      {pto::DT_INT8, -3, 0},                           // col 1: sign extended
      {pto::DT_INT16, 258, 0},                         // col 262: more than 8 bits
      {pto::DT_INT32, (1 << 20) + 9, 1 << 20},         // col 13: more than 16 bits
      {pto::DT_INT64, 1099511627787.0, 1099511627776}, // 2^40 + 11 -> col 15
      {pto::DT_UINT8, 250, 0},                         // col 254: zero extended
      {pto::DT_BOOL, 1, 0},                            // col 5
  };
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "at_dtypes",
        [&](pto::Tensor a, pto::Tensor b, pto::Tensor c, pto::Tensor d, pto::Tensor e,
            pto::Tensor f, pto::Tensor out) {
          pto::set_vec_tile_shapes(1, 8);
          auto one = pto::full({1, 1}, 1.0, pto::DT_FP32);
          std::vector<pto::Tensor> ins = {a, b, c, d, e, f};
          for (size_t r = 0; r < ins.size(); ++r) // element 1 of a [2] tensor; 0 is a decoy
            pto::assemble(one, {static_cast<int64_t>(r), ins[r].at({1}) - cases[r].bias + 4}, out);
          // bool false at index 0: column 4 of row 6.
          pto::assemble(one, {6, f.at({0}) + 4}, out);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> ins;
    for (auto &c : cases) {
      ins.emplace_back(c.dt, std::vector<int64_t>{2});
      ins.back().set(0, 0);
      ins.back().set(1, c.value);
    }
    pto::HostTensor out(pto::DT_FP32, {7, 264});
    k(ins[0], ins[1], ins[2], ins[3], ins[4], ins[5], out);
    const int64_t want_col[7] = {1, 262, 13, 15, 254, 5, 4};
    for (int64_t r = 0; r < 7; ++r)
      for (int64_t c = 0; c < 264; ++c)
        REQUIRE(out.get(r * 264 + c) == (c == want_col[r] ? 1.0 : 0.0));
  }
}

TEST_CASE("cond: per-row if / else-if / else with a nested cond, one paths op") {
  const int64_t rows = 9, cols = 13;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "cond_rows",
        [](pto::Tensor mask, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(9)) {
            auto row = pto::view(x, {1, 13}, {i, 0});
            if (pto::cond(mask.at({i}) == 1)) {
              if (pto::cond(pto::is_loop_begin(i)))
                pto::assemble(row * 10.0, {i, 0}, y);
              else
                pto::assemble(row * 2.0, {i, 0}, y);
            } else if (pto::cond(mask.at({i}) == 2)) {
              pto::assemble(row - 3.0, {i, 0}, y);
            } else {
              pto::assemble(row + 1.0, {i, 0}, y);
            }
          }
        },
        support::opts(mode));
    for (int variant = 0; variant < 2; ++variant) {
      CAPTURE(variant);
      pto::HostTensor mask(pto::DT_INT32, {rows}), x(pto::DT_FP32, {rows, cols}),
          y(pto::DT_FP32, {rows, cols});
      for (int64_t r = 0; r < rows; ++r)
        mask.set(r, static_cast<double>((r * (variant + 2) + variant) % 4)); // 0..3, 3 = else
      fill_rows(x, cols);
      y.fill(-7);
      k(mask, x, y);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t m = static_cast<int64_t>(mask.get(r));
        for (int64_t c = 0; c < cols; ++c) {
          double xv = x.get(r * cols + c);
          double want = m == 1 ? (r == 0 ? xv * 10.0 : xv * 2.0) : m == 2 ? xv - 3.0 : xv + 1.0;
          REQUIRE(y.get(r * cols + c) == want);
        }
      }
    }
    // One paths op with the 4 outcome combinations (nested cond under mask == 1 only).
    std::string ir = k.last_ir();
    CHECK(count(ir, "paths {") == 1);
    CHECK(count(ir, "  if ") == 4);
    CHECK(ir.find("if ((arg0[i0] == 1) & is_loop_begin(i0)) {") != std::string::npos);
  }
}

TEST_CASE("a loop body without a run-time cond stays a plain loop; a concrete cond adds no path") {
  auto k = pto::jit("no_paths", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    for (auto i : pto::loop(4)) {
      if (pto::cond(1)) // decided at trace time
        pto::assemble(pto::view(x, {1, 8}, {i, 0}) + 1.0, {i, 0}, y);
      if (pto::cond(pto::SymbolicScalar(3) < 2))
        pto::assemble(pto::view(x, {1, 8}, {i, 0}) * 5.0, {i, 0}, y);
    }
  });
  pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
  fill_rows(x, 8);
  k(x, y);
  for (int64_t i = 0; i < 32; ++i)
    REQUIRE(y.get(i) == x.get(i) + 1.0);
  CHECK(k.last_ir().find("paths {") == std::string::npos);
  CHECK(count(k.last_ir(), "assemble(") == 1);
}

TEST_CASE("cond reads mask elements of every integer dtype and bool") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    for (pto::DataType dt :
         {pto::DT_INT8, pto::DT_INT16, pto::DT_INT64, pto::DT_UINT8, pto::DT_BOOL}) {
      CAPTURE(pto::name(dt));
      auto k = pto::jit(
          "cond_dtype",
          [](pto::Tensor mask, pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(1, 16);
            for (auto i : pto::loop(x.shape(0))) {
              if (pto::cond(mask.at({i})))
                pto::assemble(pto::view(x, {1, 17}, {i, 0}) * 3.0, {i, 0}, y);
              else
                pto::assemble(pto::view(x, {1, 17}, {i, 0}) - 1.0, {i, 0}, y);
            }
          },
          support::opts(mode));
      pto::HostTensor mask(dt, {5}), x(pto::DT_FP32, {5, 17}), y(pto::DT_FP32, {5, 17});
      const double m[5] = {1, 0, dt == pto::DT_BOOL ? 1.0 : 200.0, 0, 1};
      for (int r = 0; r < 5; ++r)
        mask.set(r, dt == pto::DT_INT8 && m[r] == 200.0 ? -56.0 : m[r]);
      fill_rows(x, 17);
      k(mask, x, y);
      for (int64_t i = 0; i < 5 * 17; ++i) {
        double xv = x.get(i);
        REQUIRE(y.get(i) == (m[i / 17] != 0 ? xv * 3.0 : xv - 1.0));
      }
    }
  }
}

TEST_CASE("is_loop_begin / is_loop_end: an accumulation initialized on the first iteration") {
  const int64_t cols = 19;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    // Rows 1, 3, 5, ... < R are summed into acc (its 100s must never show), then y = 2 * acc on
    // the last iteration; R is dynamic, so one compile covers every trip count.
    auto k = pto::jit(
        "begin_end",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto acc = pto::full({1, 19}, 100.0, pto::DT_FP32);
          for (auto i : pto::loop(1, x.shape(0), 2)) {
            auto row = pto::view(x, {1, 19}, {i, 0});
            if (pto::cond(pto::is_loop_begin(i)))
              pto::assemble(row, {0, 0}, acc);
            else
              pto::assemble(acc + row, {0, 0}, acc);
            if (pto::cond(pto::is_loop_end(i)))
              pto::assemble(acc * 2.0, {0, 0}, y);
          }
        },
        support::opts(mode, {{{pto::DYNAMIC, 19}}}));
    for (int64_t rows : {1, 2, 3, 8, 9}) {
      CAPTURE(rows);
      pto::HostTensor x(pto::DT_FP32, {rows, cols}), y(pto::DT_FP32, {1, cols});
      fill_rows(x, cols);
      y.fill(7);
      k(x, y);
      for (int64_t c = 0; c < cols; ++c) {
        double want = 0;
        for (int64_t r = 1; r < rows; r += 2)
          want += x.get(r * cols + c);
        REQUIRE(y.get(c) == (rows > 1 ? 2.0 * want : 7.0));
      }
    }
    CHECK(k.stats().traces == 1);
    CHECK(count(k.last_ir(), "  if ") == 4);
  }
}

TEST_CASE("loop_unroll visits every item once with its factor, at sizes that are not multiples") {
  const int64_t cols = 9;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    // y[r] = x[r] + 100 * (the factor of the sub-loop that handled row r); rows never handled
    // keep -1. The second kernel steps by 3 over the rows.
    auto k = pto::jit(
        "unroll",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          for (auto [idx, kf] : pto::loop_unroll(0, x.shape(0), 1, {2, 4, 2}))
            pto::assemble(pto::view(x, {kf, 9}, {idx, 0}) + 100.0 * static_cast<double>(kf),
                          {idx, 0}, y);
        },
        support::opts(mode, {{{pto::DYNAMIC, 9}}, {{pto::DYNAMIC, 9}}}));
    auto k3 = pto::jit(
        "unroll_step",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto [idx, kf] : pto::loop_unroll(1, x.shape(0), 3, {2}))
            for (int64_t j = 0; j < kf; ++j)
              pto::assemble(pto::view(x, {1, 9}, {idx + 3 * j, 0}) +
                                100.0 * static_cast<double>(kf),
                            {idx + 3 * j, 0}, y);
        },
        support::opts(mode, {{{pto::DYNAMIC, 9}}, {{pto::DYNAMIC, 9}}}));
    for (int64_t rows : {1, 3, 4, 7, 11, 16}) {
      CAPTURE(rows);
      pto::HostTensor x(pto::DT_FP32, {rows, cols}), y(pto::DT_FP32, {rows, cols}),
          y3(pto::DT_FP32, {rows, cols});
      fill_rows(x, cols);
      y.fill(-1);
      y3.fill(-1);
      k(x, y);
      k3(x, y3);
      // The documented schedule, as plain loops: for each factor k (descending), indices from
      // the current start s below stop - (stop - s) % (step * k), step * k (k = 1: below stop).
      auto factor_of = [rows](int64_t start, int64_t step, const std::vector<int64_t> &ks) {
        std::vector<double> f(static_cast<size_t>(rows), -1);
        int64_t s = start;
        for (int64_t kf : ks) {
          int64_t end = kf == 1 ? rows : rows - (rows - s) % (step * kf);
          for (int64_t idx = s; idx < end; idx += step * kf)
            for (int64_t j = 0; j < kf; ++j) {
              REQUIRE(f[static_cast<size_t>(idx + j * step)] == -1); // each item once
              f[static_cast<size_t>(idx + j * step)] = static_cast<double>(kf);
            }
          s = end;
        }
        return f;
      };
      auto f1 = factor_of(0, 1, {4, 2, 1}), f3 = factor_of(1, 3, {2, 1});
      for (int64_t r = 0; r < rows; ++r) {
        CHECK(f1[static_cast<size_t>(r)] > 0); // step 1 covers every row
        CHECK((f3[static_cast<size_t>(r)] > 0) == (r >= 1 && (r - 1) % 3 == 0));
        for (int64_t c = 0; c < cols; ++c) {
          double xv = x.get(r * cols + c);
          double k1 = f1[static_cast<size_t>(r)], k3 = f3[static_cast<size_t>(r)];
          REQUIRE(y.get(r * cols + c) == xv + 100.0 * k1);
          REQUIRE(y3.get(r * cols + c) == (k3 < 0 ? -1.0 : xv + 100.0 * k3));
        }
      }
    }
    CHECK(k.stats().traces == 1);
  }
}

TEST_CASE("loop_unroll factors are de-duplicated, sorted descending, with 1 added; "
          "LoopOptions.unroll_list gives the plain loop's results") {
  CHECK(pto::loop_unroll(0, 10, {2, 8, 2, 4}).factors() == std::vector<int64_t>{8, 4, 2, 1});
  CHECK(pto::loop_unroll(10, {1}).factors() == std::vector<int64_t>{1});
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "loop_opts",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(0, 5, {.name = "rows", .unroll_list = {4, 2}}))
            pto::assemble(pto::view(x, {1, 8}, {i, 0}) * 4.0, {i, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {5, 8}), y(pto::DT_FP32, {5, 8});
    fill_rows(x, 8);
    k(x, y);
    for (int64_t i = 0; i < 40; ++i)
      REQUIRE(y.get(i) == x.get(i) * 4.0);
  }
}

TEST_CASE("nested loops: inner bounds from the outer index and from tensor data; at() in a "
          "valid shape") {
  const int64_t rows = 6, cols = 21;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "nested",
        [](pto::Tensor lens, pto::Tensor x, pto::Tensor y, pto::Tensor z, pto::Tensor w) {
          pto::set_vec_tile_shapes(1, 8);
          auto one = pto::full({1, 1}, 1.0, pto::DT_FP32);
          for (auto i : pto::loop(6)) {
            for (auto j : pto::loop(lens.at({i}))) // data-dependent inner count
              pto::assemble(pto::view(x, {1, 1}, {i, j}) + 1.0, {i, j}, y);
            for (auto j : pto::loop(i, 21, 4)) // inner start from the outer index
              pto::assemble(one, {i, j}, z);
            // Row i of x restricted to its first lens[i] columns.
            auto row =
                pto::view(x, {1, 21}, {i, 0},
                          {.valid_shape = std::vector<pto::SymbolicScalar>{1, lens.at({i})}});
            pto::assemble(row * 3.0, {i, 0}, w);
          }
        },
        support::opts(mode));
    pto::HostTensor lens(pto::DT_INT32, {rows}), x(pto::DT_FP32, {rows, cols}),
        y(pto::DT_FP32, {rows, cols}), z(pto::DT_FP32, {rows, cols}), w(pto::DT_FP32, {rows, cols});
    const int l[6] = {0, 1, 7, 8, 9, 21};
    for (int r = 0; r < rows; ++r)
      lens.set(r, l[r]);
    fill_rows(x, cols);
    y.fill(-1);
    w.fill(-1);
    k(lens, x, y, z, w);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        double xv = x.get(r * cols + c);
        REQUIRE(y.get(r * cols + c) == (c < l[r] ? xv + 1.0 : -1.0));
        REQUIRE(z.get(r * cols + c) == (c >= r && (c - r) % 4 == 0 ? 1.0 : 0.0));
        REQUIRE(w.get(r * cols + c) == (c < l[r] ? xv * 3.0 : -1.0));
      }
  }
}

TEST_CASE("a loop over a count and a cond on a mask, as the MoE sample uses them") {
  // recv_counts[0] rows are processed; per row t, active rows (mask[t] == 1) are scaled and the
  // others copied; a row counter elsewhere is written through a data-dependent offset.
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "moe_like",
        [](pto::Tensor recv_counts, pto::Tensor mask, pto::Tensor dest, pto::Tensor x,
           pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 16);
          for (auto t : pto::loop(recv_counts.at({0}))) {
            auto row = pto::view(x, {1, 33}, {t, 0});
            if (pto::cond(mask.at({t}) == 1))
              pto::assemble(row * 0.5, {dest.at({t}), 0}, y);
            else
              pto::assemble(row, {dest.at({t}), 0}, y);
          }
        },
        support::opts(mode));
    pto::HostTensor counts(pto::DT_INT32, {1}), mask(pto::DT_INT32, {8}), dest(pto::DT_INT64, {8}),
        x(pto::DT_FP32, {8, 33}), y(pto::DT_FP32, {8, 33});
    counts.set(0, 6);
    for (int t = 0; t < 8; ++t) {
      mask.set(t, t % 3 == 0 ? 1 : 0);
      dest.set(t, 7 - t); // rows land reversed
    }
    fill_rows(x, 33);
    y.fill(-2);
    k(counts, mask, dest, x, y);
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t c = 0; c < 33; ++c) {
        int64_t t = 7 - r;
        double xv = x.get(t * 33 + c);
        double want = t < 6 ? (t % 3 == 0 ? xv * 0.5 : xv) : -2.0;
        REQUIRE(y.get(r * 33 + c) == want);
      }
  }
}

TEST_CASE("a shmem put's destination PE read from tensor data") {
  const int n = 2;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "pe_from_data",
        [](pto::Tensor x, pto::Tensor dst, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto s = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {2, 8});
          auto sig = dist::create_shmem_signal("world", 2);
          auto me = dist::my_symbolic_pe("world");
          auto put = dist::shmem_put(x, {me, 0}, s, dst.at({0}));
          auto done = dist::shmem_barrier_all(sig, {.pred = {put}});
          pto::assemble(dist::shmem_get(s, me, {.pred = {done}}), {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> xs, ds, ys;
    for (int p = 0; p < n; ++p) {
      xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{1, 8});
      xs.back().fill(10.0 + p);
      ds.emplace_back(pto::DT_INT32, std::vector<int64_t>{1});
      ds.back().set(0, 1 - p); // each PE sends to the other
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{2, 8});
    }
    pto::runtime::World world(n);
    world.run([&](int pe) {
      auto p = static_cast<size_t>(pe);
      k(xs[p], ds[p], ys[p]);
    });
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < 16; ++i) // row q holds PE q's x when PE q sent here
        REQUIRE(ys[static_cast<size_t>(p)].get(i) == (i / 8 == 1 - p ? 10.0 + (1 - p) : 0.0));
  }
}

TEST_CASE("& short-circuits: a guarded read past the end is never made") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "guarded_read",
        [](pto::Tensor mask, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(6)) { // mask has 4 elements
            if (pto::cond((i < 4) & (mask.at({i}) == 1)))
              pto::assemble(pto::view(x, {1, 8}, {i, 0}) * 2.0, {i, 0}, y);
            else
              pto::assemble(pto::view(x, {1, 8}, {i, 0}), {i, 0}, y);
          }
        },
        support::opts(mode));
    pto::HostTensor mask(pto::DT_INT32, {4}), x(pto::DT_FP32, {6, 8}), y(pto::DT_FP32, {6, 8});
    for (int i = 0; i < 4; ++i)
      mask.set(i, i % 2);
    fill_rows(x, 8);
    k(mask, x, y);
    for (int64_t i = 0; i < 48; ++i)
      REQUIRE(y.get(i) == (i / 8 < 4 && (i / 8) % 2 == 1 ? x.get(i) * 2.0 : x.get(i)));
  }
}

// ---- errors ----------------------------------------------------------------------------------

TEST_CASE("an element index out of range at run time is a RuntimeError naming the op's line") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto k = pto::jit(
        "oob",
        [&](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(4)) {
            auto row = pto::view(x, {1, 8}, {i, 0});
            if (pto::cond(idx.at({i}) >= 0)) {
              pto::assemble(row, {i, 0}, y);
            } else { // the error is in the second path's body: its site must be named
              line = __LINE__ + 1;
              pto::assemble(row, {idx.at({i + 1}) + 10, 0}, y);
            }
          }
        },
        support::opts(mode));
    pto::HostTensor idx(pto::DT_INT32, {4}), x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    idx.set(0, 0);
    idx.set(1, 0);
    idx.set(2, 0);
    idx.set(3, -1); // row 3 takes the else path and reads idx[4]
    CHECK_THROWS_WITH_AS(k(idx, x, y), Contains("index 4 is out of range [0, 4)"),
                         pto::RuntimeError);
    // The error points at the at() call and names the op that read it (the same line here).
    const std::string site = "control_flow_test.cpp:" + std::to_string(line) +
                             ": at: index 4 is out of range [0, 4) in dim 0 of tensor 'arg0' "
                             "(read at run time for `assemble` at control_flow_test.cpp:" +
                             std::to_string(line) + ")";
    CHECK_THROWS_WITH_AS(k(idx, x, y), Contains(site.c_str()), pto::RuntimeError);
    // A read through a view is checked against the viewed tensor too: at i = 3 the tail
    // [3, 5) has one valid element inside idx (so the view is legal), and its element 1 is
    // idx[4].
    auto kv = pto::jit(
        "oob_view",
        [](pto::Tensor idx, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(2, 4)) {
            auto tail = pto::view(idx, {2}, {i}, {.valid_shape = {{1}}});
            for (auto j : pto::loop(tail.at({1})))
              pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {j, 0}, y);
          }
        },
        support::opts(mode));
    pto::HostTensor y2(pto::DT_FP32, {4, 8});
    CHECK_THROWS_WITH_AS(
        kv(idx, y2), Contains("index 4 (the view's offset plus the index) is out of range [0, 4)"),
        pto::RuntimeError);
  }
}

TEST_CASE("at(): float elements, tokens and shmem data are DTypeErrors; rank and concrete "
          "indices are checked; shapes may not depend on elements") {
  auto trace = [](auto body, pto::DataType dt = pto::DT_FP32) {
    auto k = pto::jit("at_errors", [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(1, 8);
      body(x);
    });
    pto::HostTensor x(dt, {4, 8});
    k(x);
  };
  for (pto::DataType dt : {pto::DT_FP16, pto::DT_BF16, pto::DT_FP32, pto::DT_DOUBLE}) {
    CAPTURE(pto::name(dt));
    const std::string want =
        "reads int8, int16, int32, int64, uint8 and bool elements, got " + pto::name(dt);
    CHECK_THROWS_WITH_AS(trace([](pto::Tensor x) { (void)x.at({0, 0}); }, dt),
                         Contains(want.c_str()), pto::DTypeError);
  }
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor) {
                         auto s = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {4, 8});
                         (void)s.data.at({0, 0});
                       }),
                       Contains("shmem data"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor x) { (void)x.at({0}); }, pto::DT_INT32),
                       Contains("has rank 2, got 1 indices"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor x) { (void)x.at({4, 0}); }, pto::DT_INT32),
                       Contains("index 4 is out of range [0, 4) in dim 0"), pto::ShapeError);
  // A negative concrete index counts from the end (as PyPTO): x[-1, -8] is x[3, 0].
  CHECK_NOTHROW(trace([](pto::Tensor x) { (void)x.at({-1, -8}); }, pto::DT_INT32));
  CHECK_THROWS_WITH_AS(trace([](pto::Tensor x) { (void)x.at({0, -9}); }, pto::DT_INT32),
                       Contains("index -9 is out of range"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(trace(
                           [](pto::Tensor x) {
                             auto t = pto::full({x.at({0, 0}), 8}, 1.0, pto::DT_FP32);
                             pto::assemble(t, {0, 0}, x);
                           },
                           pto::DT_INT32),
                       Contains("depends on a tensor element"), pto::ShapeError);
}

TEST_CASE("cond on a run-time value outside any pto::loop is a SymbolicError naming the fix") {
  auto k = pto::jit("cond_outside", [](pto::Tensor m, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    if (pto::cond(m.at({0}) == 1))
      pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {0, 0}, y);
  });
  pto::HostTensor m(pto::DT_INT32, {1}), y(pto::DT_FP32, {1, 8});
  CHECK_THROWS_WITH_AS(k(m, y), Contains("pto::loop(1)"), pto::SymbolicError);
}

TEST_CASE("is_loop_begin / is_loop_end of anything but an enclosing loop's index is an "
          "ArgumentError 'not loop index'") {
  auto run = [](auto body) {
    auto k = pto::jit("not_index", [&](pto::Tensor x) {
      pto::set_vec_tile_shapes(1, 8);
      body(x);
    });
    pto::HostTensor x(pto::DT_INT32, {4, 8});
    k(x);
  };
  CHECK_THROWS_WITH_AS(run([](pto::Tensor) {
                         for (auto i : pto::loop(4))
                           (void)pto::is_loop_begin(i + 1);
                       }),
                       Contains("not loop index"), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([](pto::Tensor x) { (void)pto::is_loop_end(x.at({0, 0})); }),
                       Contains("not loop index"), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([](pto::Tensor) { (void)pto::is_loop_end(3); }),
                       Contains("not loop index"), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([](pto::Tensor) {
                         pto::SymbolicScalar keep;
                         for (auto i : pto::loop(4))
                           keep = i;
                         (void)pto::is_loop_begin(keep); // its loop is closed
                       }),
                       Contains("not loop index"), pto::ArgumentError);
}

TEST_CASE("more than kMaxCondPaths paths in one loop body is a CompileError at the first cond") {
  // A size limit, as kMaxNestedCondPaths, kMaxLoopDepth and PTO_MAX_OPS (control.h): the same
  // type, so catching CompileError catches "program too big".
  static_assert(pto::kMaxCondPaths == 64);
  int line = 0;
  auto k = pto::jit("many_paths", [&](pto::Tensor m, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    for (auto i : pto::loop(2)) {
      pto::SymbolicScalar col = 0;
      for (int b = 0; b < 7; ++b) { // 2^7 = 128 paths
        if (b == 0)
          line = __LINE__ + 1;
        if (pto::cond(m.at({b}) == 1))
          col = col + (int64_t{1} << b) % 8;
      }
      pto::assemble(pto::full({1, 1}, 1.0, pto::DT_FP32), {i, col}, y);
    }
  });
  pto::HostTensor m(pto::DT_INT32, {7}), y(pto::DT_FP32, {2, 8});
  support::expect_error<pto::CompileError>([&] { k(m, y); }, "control_flow_test.cpp", line, "cond",
                                           "the loop body has more than 64 paths");
}

TEST_CASE("a cond that depends on what its own iteration computes is a SymbolicError") {
  auto run = [](auto body) {
    auto k = pto::jit("cond_dep", [&](pto::Tensor m, pto::Tensor y) {
      pto::set_vec_tile_shapes(1, 8);
      body(m, y);
    });
    pto::HostTensor m(pto::DT_INT32, {4}), y(pto::DT_INT32, {4, 8});
    k(m, y);
  };
  // A tensor computed in the body.
  CHECK_THROWS_WITH_AS(run([](pto::Tensor m, pto::Tensor y) {
                         for (auto i : pto::loop(4)) {
                           auto t = m + 1;
                           if (pto::cond(t.at({i}) == 1))
                             pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {i, 0}, y);
                         }
                       }),
                       Contains("is computed in this loop body"), pto::SymbolicError);
  // A tensor written earlier in the body.
  CHECK_THROWS_WITH_AS(run([](pto::Tensor m, pto::Tensor y) {
                         for (auto i : pto::loop(4)) {
                           pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {i, 0}, y);
                           if (pto::cond(y.at({i, 0}) == 1))
                             pto::assemble(pto::view(m, {1}, {0}) + 1, {i}, m);
                         }
                       }),
                       Contains("is written by an op earlier in this loop body"),
                       pto::SymbolicError);
}

TEST_CASE("a body that traces differently when re-run for the next path is a SymbolicError") {
  int pass = 0;
  auto k = pto::jit("unstable", [&](pto::Tensor m, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    for (auto i : pto::loop(4)) {
      if (pto::cond(m.at({pass++ % 4}) == 1)) // host state changes between passes
        pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {i, 0}, y);
    }
  });
  pto::HostTensor m(pto::DT_INT32, {4}), y(pto::DT_INT32, {4, 8});
  CHECK_THROWS_WITH_AS(k(m, y), Contains("when re-run for the next path"), pto::SymbolicError);
}

TEST_CASE("a shmem tensor created in a body with cond paths is a DistributedError") {
  auto k = pto::jit("shmem_in_paths", [](pto::Tensor m, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    for (auto i : pto::loop(4)) {
      auto s = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {1, 8});
      if (pto::cond(m.at({i}) == 1))
        pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {i, 0}, y);
      (void)s;
    }
  });
  pto::HostTensor m(pto::DT_INT32, {4}), y(pto::DT_FP32, {4, 8});
  CHECK_THROWS_WITH_AS(k(m, y), Contains("put the pto::cond in an inner pto::loop(1)"),
                       pto::DistributedError);
}

TEST_CASE("break out of a traced loop body, and scalars used outside their loop, are "
          "SymbolicErrors") {
  auto run = [](auto body) {
    auto k = pto::jit("escape", [&](pto::Tensor m, pto::Tensor y) {
      pto::set_vec_tile_shapes(1, 8);
      body(m, y);
    });
    pto::HostTensor m(pto::DT_INT32, {4}), y(pto::DT_INT32, {4, 8});
    k(m, y);
  };
  CHECK_THROWS_WITH_AS(run([](pto::Tensor, pto::Tensor y) {
                         for (auto i : pto::loop(4)) {
                           pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {i, 0}, y);
                           break;
                         }
                       }),
                       Contains("left early"), pto::SymbolicError);
  CHECK_THROWS_WITH_AS(run([](pto::Tensor, pto::Tensor y) {
                         pto::SymbolicScalar keep;
                         for (auto i : pto::loop(4))
                           keep = i;
                         pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {keep, 0}, y);
                       }),
                       Contains("use a loop's index only inside its body"), pto::SymbolicError);
  CHECK_THROWS_WITH_AS(run([](pto::Tensor m, pto::Tensor y) {
                         pto::SymbolicScalar keep;
                         for (auto i : pto::loop(4)) {
                           auto t = m * 2;
                           keep = t.at({i});
                         }
                         pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {keep, 0}, y);
                       }),
                       Contains("element read of tensor"), pto::SymbolicError);
}

TEST_CASE("an element read kept from another kernel's trace is a SymbolicError") {
  pto::SymbolicScalar keep;
  auto k1 = pto::jit("keeps_read", [&](pto::Tensor m) { keep = m.at({0}); });
  auto k2 = pto::jit("uses_read", [&](pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    for (auto i : pto::loop(keep))
      pto::assemble(pto::full({1, 8}, 1, pto::DT_INT32), {i, 0}, y);
  });
  pto::HostTensor m(pto::DT_INT32, {1}), y(pto::DT_INT32, {4, 8});
  k1(m);
  CHECK_THROWS_WITH_AS(k2(y), Contains("another kernel's trace"), pto::SymbolicError);
}

TEST_CASE("unroll factors <= 0 are ArgumentErrors") {
  CHECK_THROWS_AS(pto::loop_unroll(0, 8, {4, 0}), pto::ArgumentError);
  CHECK_THROWS_AS(pto::loop(8, {.unroll_list = {-2}}), pto::ArgumentError);
}
