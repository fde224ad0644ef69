// hardening_valid_shape_test.cpp - Issue 8: one valid-shape rule and one window rule
// (dsl/src/shape_rules.h) for every op that takes a valid shape or a window: checked at trace
// time when concrete and by the kernel call when known only at run time, with the same error
// type and text in both executors, before any memory is touched; and every collective honouring
// its input's valid shape (collectives.h) for every algorithm, on 2 and 4 PEs.
//
// The run-time cases trace one kernel body twice: with STATIC specs the size `n` (the rows of a
// helper tensor) is baked in and the rule fails at trace time; with DYNAMIC specs the same line
// fails in the call. The two errors must be identical (type, op, line, detail). Outputs are
// prefilled with a sentinel and verified in full, also after a failed call, so a write past a
// window or a valid region would show (outputs whose window is smaller than the HostTensor).
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

using doctest::Contains;
namespace dist = pto::distributed;

namespace {

constexpr double kSentinel = -777; // never a value any kernel below computes
const std::string kFile = "hardening_valid_shape_test.cpp:";

using Body = std::function<void(pto::Tensor, pto::Tensor, pto::Tensor)>;

pto::HostTensor filled(std::vector<int64_t> shape, double v) {
  pto::HostTensor t(pto::DT_FP32, std::move(shape));
  t.fill(v);
  return t;
}
/// Element i is i + 1 (exact in fp32 for these sizes).
pto::HostTensor counting(std::vector<int64_t> shape) {
  pto::HostTensor t(pto::DT_FP32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, static_cast<double>(i + 1));
  return t;
}
/// A helper tensor whose row count stands for a run-time size.
pto::HostTensor size_tensor(int64_t rows) { return pto::HostTensor(pto::DT_FP32, {rows, 1}); }

/// The pto::ShapeError `call` throws. Fails the test when it throws nothing; another exception
/// type propagates to doctest and fails it too.
template <class F> pto::ShapeError shape_error(F &&call) {
  try {
    call();
  } catch (const pto::ShapeError &e) {
    return e;
  }
  FAIL("expected a pto::ShapeError");
  throw std::logic_error("unreachable");
}

/// Specs making the listed tensor parameters' dims all DYNAMIC (rank 2).
pto::JitOptions dyn_opts(pto::RunMode m, const std::vector<int> &dynamic_params) {
  std::vector<pto::TensorSpec> specs(3);
  for (int p : dynamic_params)
    specs[size_t(p)].dims = {pto::DYNAMIC, pto::DYNAMIC};
  return support::opts(m, specs);
}

/// Every element of `t` equals `want(i)`.
void check_all(const pto::HostTensor &t, const std::function<double(int64_t)> &want) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    CAPTURE(i);
    REQUIRE(t.get(i) == want(i));
  }
}

/// One rule broken by `body`: with the size tensor's rows `bad`, tracing with STATIC specs and
/// calling with DYNAMIC ones give the same ShapeError naming `op`, `detail` and this file, and
/// the failed call leaves y untouched. With rows `good` the DYNAMIC kernel runs and y must
/// match `want` (the expected output for that size).
struct RuleCase {
  const char *name;
  const char *op;
  Body body;
  std::vector<int64_t> x_shape, y_shape;
  int64_t good, bad;
  std::string detail;
  std::function<double(int64_t rows, int64_t i)> want;
  std::vector<int> dynamic = {0}; ///< parameters with DYNAMIC dims in the run-time variant
};

void check_rule(const RuleCase &c) {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    CAPTURE(c.name);
    auto stat = pto::jit(std::string("vs_static_") + c.name, c.body, support::opts(m));
    auto dyn = pto::jit(std::string("vs_dynamic_") + c.name, c.body, dyn_opts(m, c.dynamic));
    auto x = counting(c.x_shape);
    // x's rows follow the size when x is the dynamic parameter.
    auto x_rows = [&](int64_t rows) {
      auto s = c.x_shape;
      s[0] = rows;
      return counting(s);
    };
    // When x carries the size, n keeps one shape (a STATIC dim that changed would retrace).
    const bool x_sized = c.dynamic.size() == 1 && c.dynamic[0] == 1;
    auto n_bad = size_tensor(c.bad), n_good = x_sized ? n_bad : size_tensor(c.good);
    auto x_bad = x_sized ? x_rows(c.bad) : x, x_good = x_sized ? x_rows(c.good) : x;
    auto y = filled(c.y_shape, kSentinel);
    CHECK_THROWS_AS(stat(n_bad, x_bad, y), pto::ShapeError);
    const pto::ShapeError at_trace = shape_error([&] { stat(n_bad, x_bad, y); });
    CHECK(at_trace.op() == c.op);
    CHECK(at_trace.detail() == c.detail);
    CHECK_MESSAGE(at_trace.where().rfind(kFile, 0) == 0, at_trace.what());

    dyn(n_good, x_good, y);
    check_all(y, [&](int64_t i) { return c.want(c.good, i); });
    auto y2 = filled(c.y_shape, kSentinel);
    CHECK_THROWS_AS(dyn(n_bad, x_bad, y2), pto::ShapeError);
    const pto::ShapeError at_run = shape_error([&] { dyn(n_bad, x_bad, y2); });
    CHECK(dyn.stats().traces == 1); // the second size ran the same code: a run-time check
    CHECK(std::string(at_run.what()) == at_trace.what());
    check_all(y2, [](int64_t) { return kSentinel; }); // checked before memory is touched
  }
}

/// Row r (of `cols` columns) of the counting tensor: element (r, c) is r * cols + c + 1.
double counted(int64_t r, int64_t c, int64_t cols) { return static_cast<double>(r * cols + c + 1); }

} // namespace

TEST_CASE("valid_shape: entries outside [0, shape] are a ShapeError of full, reshape and view, "
          "the same at trace time and at run time") {
  // The examples first: all concrete, so all at trace time, in both executors.
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    auto y = filled({4, 8}, kSentinel);
    auto full = pto::jit(
        "vs_full_64",
        [](pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::full({4, 8}, 3.0, pto::DT_FP32, {.valid_shape = {{64, 64}}}), {0, 0},
                        y);
        },
        support::opts(m));
    CHECK_THROWS_WITH_AS(full(y), Contains("full: valid_shape[0] = 64 is outside [0, 4]"),
                         pto::ShapeError);
    CHECK_THROWS_WITH_AS(full(y), Contains(kFile.c_str()), pto::ShapeError);
    auto negative = pto::jit(
        "vs_full_neg",
        [](pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::full({4, 8}, 3.0, pto::DT_FP32, {.valid_shape = {{4, -1}}}), {0, 0},
                        y);
        },
        support::opts(m));
    CHECK_THROWS_WITH_AS(negative(y),
                         Contains("full: valid_shape[1] = -1 is outside [0, 8], the size of dim 1"),
                         pto::ShapeError);
    auto rank = pto::jit(
        "vs_full_rank",
        [](pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::full({4, 8}, 3.0, pto::DT_FP32, {.valid_shape = {{4}}}), {0, 0}, y);
        },
        support::opts(m));
    CHECK_THROWS_WITH_AS(rank(y), Contains("full: valid_shape needs 2 entries"), pto::ShapeError);
    auto reshape = pto::jit(
        "vs_reshape_100",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 4);
          pto::assemble(pto::reshape(x, {8, 4}, {.valid_shape = {{100, 100}}}), {0, 0}, y);
        },
        support::opts(m));
    auto x = counting({4, 8});
    auto y84 = filled({8, 4}, kSentinel);
    CHECK_THROWS_WITH_AS(reshape(x, y84),
                         Contains("reshape: valid_shape[0] = 100 is outside [0, 8]"),
                         pto::ShapeError);
    check_all(y, [](int64_t) { return kSentinel; });
    check_all(y84, [](int64_t) { return kSentinel; });
  }

  // Each op with the entry known only at run time (n = the size tensor's rows): too large,
  // then negative.
  auto full_body = [](int64_t bias) -> Body {
    return [bias](pto::Tensor n, pto::Tensor, pto::Tensor y) {
      pto::set_vec_tile_shapes(4, 8);
      auto v = n.shape(0) - bias;
      pto::assemble(pto::full({4, 8}, 3.0, pto::DT_FP32, {.valid_shape = {{v, 8}}}), {0, 0}, y);
    };
  };
  auto reshape_body = [](int64_t bias) -> Body {
    return [bias](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
      pto::set_vec_tile_shapes(8, 4);
      auto v = n.shape(0) - bias;
      pto::assemble(pto::reshape(x, {8, 4}, {.valid_shape = {{v, 4}}}), {0, 0}, y);
    };
  };
  auto view_body = [](int64_t bias) -> Body {
    return [bias](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
      pto::set_vec_tile_shapes(4, 8);
      auto v = n.shape(0) - bias;
      pto::assemble(pto::view(x, {4, 8}, {0, 0}, {.valid_shape = {{4, v}}}) + 1.0, {0, 0}, y);
    };
  };
  // Rows below v hold the op's values, the rest keeps the sentinel.
  auto full_want = [](int64_t v) {
    return [v](int64_t, int64_t i) { return i / 8 < v ? 3.0 : kSentinel; };
  };
  const std::vector<RuleCase> cases{
      {"full_large",
       "full",
       full_body(0),
       {4, 8},
       {4, 8},
       3,
       64,
       "valid_shape[0] = 64 is outside [0, 4], the size of dim 0",
       full_want(3)},
      {"full_negative",
       "full",
       full_body(10),
       {4, 8},
       {4, 8},
       13,
       3,
       "valid_shape[0] = -7 is outside [0, 4], the size of dim 0",
       full_want(3)},
      {"reshape_large",
       "reshape",
       reshape_body(0),
       {4, 8},
       {8, 4},
       5,
       9,
       "valid_shape[0] = 9 is outside [0, 8], the size of dim 0",
       [](int64_t v, int64_t i) { return i / 4 < v ? static_cast<double>(i + 1) : kSentinel; }},
      {"reshape_negative",
       "reshape",
       reshape_body(4),
       {4, 8},
       {8, 4},
       9,
       1,
       "valid_shape[0] = -3 is outside [0, 8], the size of dim 0",
       [](int64_t rows, int64_t i) {
         return i / 4 < rows - 4 ? static_cast<double>(i + 1) : kSentinel;
       }},
      {"view_large",
       "view",
       view_body(0),
       {4, 8},
       {4, 8},
       5,
       9,
       "valid_shape[1] = 9 is outside [0, 8], the size of dim 1",
       [](int64_t v, int64_t i) { return i % 8 < v ? counted(i / 8, i % 8, 8) + 1 : kSentinel; }},
      {"view_negative",
       "view",
       view_body(2),
       {4, 8},
       {4, 8},
       8,
       1,
       "valid_shape[1] = -1 is outside [0, 8], the size of dim 1",
       [](int64_t rows, int64_t i) {
         return i % 8 < rows - 2 ? counted(i / 8, i % 8, 8) + 1 : kSentinel;
       }},
  };
  for (const auto &c : cases)
    check_rule(c);
}

TEST_CASE("valid_shape: shmem_view entries outside [0, shape] are a ShapeError, also when only "
          "known at run time, and shmem_get never copies past its window") {
  // Each PE puts its x into its own window, then gets it back through a view with valid rows v.
  auto body = [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    auto s = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
    auto me = dist::my_symbolic_pe("world");
    auto put = dist::shmem_put(x, {0, 0}, s, me);
    auto w = dist::shmem_view(s, {4, 8}, {0, 0}, {.valid_shape = {{n.shape(0), 8}}});
    pto::assemble(dist::shmem_get(w, me, {.pred = {put}}), {0, 0}, y);
  };
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    pto::runtime::World world(2);
    auto stat = pto::jit("vs_shmem_static", body, support::opts(m));
    auto dyn = pto::jit("vs_shmem_dynamic", body, dyn_opts(m, {0}));
    std::vector<pto::HostTensor> xs{counting({4, 8}), counting({4, 8})};
    std::vector<pto::HostTensor> ys{filled({4, 8}, kSentinel), filled({4, 8}, kSentinel)};
    auto bad = size_tensor(64), good = size_tensor(3);
    auto run = [&](auto &k, pto::HostTensor &n) {
      world.run([&](int pe) { k(n, xs[size_t(pe)], ys[size_t(pe)]); });
    };
    const pto::ShapeError at_trace = shape_error([&] { run(stat, bad); });
    CHECK(at_trace.op() == "shmem_view");
    CHECK(at_trace.detail() == "valid_shape[0] = 64 is outside [0, 4], the size of dim 0");
    run(dyn, good);
    for (const auto &y : ys)
      check_all(y, [](int64_t i) { return i / 8 < 3 ? static_cast<double>(i + 1) : kSentinel; });
    for (auto &y : ys)
      y.fill(kSentinel);
    const pto::ShapeError at_run = shape_error([&] { run(dyn, bad); });
    CHECK(std::string(at_run.what()) == at_trace.what());
    for (const auto &y : ys)
      check_all(y, [](int64_t) { return kSentinel; });
  }
}

TEST_CASE("valid_shape: a ShmemTensor view edited by hand is checked by shmem_get too") {
  // ShmemTensor's view fields are public; shmem_get re-applies the rule to what it is given.
  auto edited = [](const std::vector<pto::SymbolicScalar> &valid,
                   const std::vector<int64_t> &shape) {
    return [valid, shape](pto::Tensor y) {
      pto::set_vec_tile_shapes(4, 8);
      auto s = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
      s.view_valid = valid;
      s.view_shape = shape;
      pto::assemble(dist::shmem_get(s, 0), {0, 0}, y);
    };
  };
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    auto y = filled({4, 8}, kSentinel);
    auto large = pto::jit("vs_edited_valid", edited({64, 64}, {4, 8}), support::opts(m));
    CHECK_THROWS_WITH_AS(large(y),
                         Contains("shmem_get: valid_shape[0] = 64 is outside [0, 4], the size of "
                                  "dim 0"),
                         pto::ShapeError);
    CHECK_THROWS_WITH_AS(large(y), Contains(kFile.c_str()), pto::ShapeError);
    auto rank = pto::jit("vs_edited_rank", edited({4, 8}, {4}), support::opts(m));
    CHECK_THROWS_WITH_AS(rank(y),
                         Contains("shmem_get: the view has 1 shape, 2 offset and 2 "
                                  "valid_shape entries for shmem data of rank 2"),
                         pto::ShapeError);
    check_all(y, [](int64_t) { return kSentinel; });
  }
}

TEST_CASE("view windows: outside the tensor is the same ShapeError whether the offset, the dim "
          "or the valid size is concrete or known only at run time") {
  // x is [8, 8] (or [n, 8] when its rows are the run-time size); y is [4, 8].
  auto want_rows_from = [](int64_t first_row) {
    return [first_row](int64_t, int64_t i) { return counted(first_row + i / 8, i % 8, 8); };
  };
  const std::vector<RuleCase> cases{
      {"offset",
       "view",
       [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         pto::assemble(pto::view(x, {4, 8}, {n.shape(0), 0}), {0, 0}, y);
       },
       {8, 8},
       {4, 8},
       4,
       6,
       "window [6, 10) of dim 0 exceeds the size 8 of 'arg1'; pass a valid_shape to view a tail "
       "that runs past the end",
       [](int64_t rows, int64_t i) { return counted(rows + i / 8, i % 8, 8); }},
      {"negative_offset",
       "view",
       [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         pto::assemble(pto::view(x, {4, 8}, {n.shape(0) - 5, 0}), {0, 0}, y);
       },
       {8, 8},
       {4, 8},
       6,
       3,
       "offset -2 of dim 0 is negative",
       [](int64_t rows, int64_t i) { return counted(rows - 5 + i / 8, i % 8, 8); }},
      {"valid_size",
       "view",
       [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         auto v = pto::view(x, {8, 8}, {4, 0}, {.valid_shape = {{n.shape(0), 8}}});
         pto::assemble(pto::view(v, {4, 8}, {0, 0}), {0, 0}, y);
       },
       {8, 8},
       {4, 8},
       4,
       6,
       "window [4, 10) of dim 0 exceeds the size 8 of 'arg1'",
       want_rows_from(4)},
      {"dim",
       "view",
       [](pto::Tensor, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         pto::assemble(pto::view(x, {4, 8}, {0, 0}), {0, 0}, y);
       },
       {8, 8},
       {4, 8},
       5,
       3,
       "window [0, 4) of dim 0 exceeds the size 3 of 'arg1'; pass a valid_shape to view a tail "
       "that runs past the end",
       want_rows_from(0),
       {1}},
      {"view_of_valid_view",
       "view",
       [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         // The inner window's valid rows must lie in the outer view's valid rows.
         auto outer = pto::view(x, {8, 8}, {0, 0}, {.valid_shape = {{n.shape(0), 8}}});
         auto inner = pto::view(outer, {4, 8}, {2, 0}, {.valid_shape = {{4, 8}}});
         pto::assemble(inner, {0, 0}, y);
       },
       {8, 8},
       {4, 8},
       7,
       5,
       "window [2, 6) of dim 0 exceeds the valid size 5 of the view [8, 8] of 'arg1'",
       want_rows_from(2)},
  };
  for (const auto &c : cases)
    check_rule(c);

  // A window moved by a loop index: the concrete window [8, 12) and the third iteration's give
  // the same error.
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    auto concrete = pto::jit(
        "vs_loop_concrete",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::view(x, {4, 8}, {8, 0}), {0, 0}, y);
        },
        support::opts(m));
    auto looped = pto::jit(
        "vs_loop_index",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          for (auto i : pto::loop(3))
            pto::assemble(pto::view(x, {4, 8}, {i * 4, 0}), {0, 0}, y);
        },
        support::opts(m));
    auto x = counting({8, 8});
    auto y = filled({4, 8}, kSentinel);
    const auto a = shape_error([&] { concrete(x, y); });
    const auto b = shape_error([&] { looped(x, y); });
    CHECK(a.op() == "view");
    CHECK(b.op() == "view");
    CHECK(a.detail() == "window [8, 12) of dim 0 exceeds the size 8 of 'arg0'; pass a "
                        "valid_shape to view a tail that runs past the end");
    CHECK(b.detail() == a.detail());

    // A window moved by a tensor element (read where the view is traced): the same error too.
    auto element = pto::jit(
        "vs_element_offset",
        [](pto::Tensor x, pto::Tensor y, pto::Tensor at) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::view(x, {4, 8}, {at.at({0}) + 2, 0}), {0, 0}, y);
        },
        support::opts(m));
    pto::HostTensor at(pto::DT_INT32, {1});
    at.set(0, 2);
    element(x, y, at); // rows [4, 8)
    check_all(y, [](int64_t i) { return counted(4 + i / 8, i % 8, 8); });
    at.set(0, 6);
    y.fill(kSentinel);
    const auto c = shape_error([&] { element(x, y, at); });
    CHECK(c.op() == "view");
    CHECK(c.detail() == "window [8, 12) of dim 0 exceeds the size 8 of 'arg0'; pass a "
                        "valid_shape to view a tail that runs past the end");
    CHECK_MESSAGE(c.where().rfind(kFile, 0) == 0, c.what());
    check_all(y, [](int64_t) { return kSentinel; });
  }
}

TEST_CASE("view and assemble: a tail whose valid part fits is legal, concrete or not, and "
          "nothing past its valid region is written") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    // Static: 20 rows in tiles of 16; the second tile's static window [16, 32) passes the end,
    // its valid rows [16, 20) do not. y is [24, 8], the kernel's output its first 20 rows.
    auto fixed = pto::jit(
        "vs_tail_static",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(16, 8);
          auto out = pto::view(y, {20, 8}, {0, 0});
          for (int64_t r0 : {0, 16}) {
            auto tile = pto::view(x, {16, 8}, {r0, 0},
                                  {.valid_shape = {{std::min<int64_t>(16, 20 - r0), 8}}});
            pto::assemble(tile + 1.0, {r0, 0}, out);
          }
        },
        support::opts(m));
    auto x = counting({20, 8});
    auto y = filled({24, 8}, kSentinel);
    fixed(x, y);
    check_all(y, [](int64_t i) { return i < 160 ? static_cast<double>(i + 2) : kSentinel; });

    // The same along columns: 20 columns in tiles of 16 into the first 20 of y's 24 columns.
    auto cols = pto::jit(
        "vs_tail_cols",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 16);
          auto out = pto::view(y, {4, 20}, {0, 0});
          for (int64_t c0 : {0, 16}) {
            auto tile = pto::view(x, {4, 16}, {0, c0},
                                  {.valid_shape = {{4, std::min<int64_t>(16, 20 - c0)}}});
            pto::assemble(tile + 1.0, {0, c0}, out);
          }
        },
        support::opts(m));
    auto xc = counting({4, 20});
    auto yc = filled({4, 24}, kSentinel);
    cols(xc, yc);
    check_all(yc,
              [](int64_t i) { return i % 24 < 20 ? counted(i / 24, i % 24, 20) + 1 : kSentinel; });

    // Dynamic: the PyPTO loop of reference §3.3 over N rows, into a y of N + 4 rows.
    auto dynamic = pto::jit(
        "vs_tail_dynamic",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(16, 8);
          auto n = x.shape(0);
          for (auto i : pto::loop((n + 15) / 16)) {
            auto rows = pto::min(n - i * 16, 16);
            auto tile = pto::view(x, {16, 8}, {i * 16, 0}, {.valid_shape = {{rows, 8}}});
            pto::assemble(tile + 1.0, {i * 16, 0}, y);
          }
        },
        support::opts(m, {{{pto::DYNAMIC, 8}}, {{pto::DYNAMIC, 8}}}));
    for (int64_t rows : {1, 16, 21}) {
      CAPTURE(rows);
      auto xd = counting({rows, 8});
      auto yd = filled({rows + 4, 8}, kSentinel);
      dynamic(xd, yd);
      check_all(
          yd, [rows](int64_t i) { return i < rows * 8 ? static_cast<double>(i + 2) : kSentinel; });
    }
    CHECK(dynamic.stats().traces == 1);
    // What is provable costs nothing: no check in the static kernel; in the loop only the two
    // facts a trace cannot know (the tail's valid rows are >= 0, y has room for them), first in
    // the body, before the ops that touch memory.
    auto count = [](const std::string &ir, const std::string &what) {
      size_t n = 0;
      for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1))
        ++n;
      return n;
    };
    CHECK(count(fixed.last_ir(), "check ") == 0);
    const std::string ir = dynamic.last_ir();
    CHECK(count(ir, "check ") == 2);
    CHECK(ir.find("{\n    check view") != std::string::npos);
    CHECK(ir.find("check assemble") < ir.find(" = add("));
  }
}

TEST_CASE("assemble windows: outside the output is the same ShapeError whether the offset or "
          "the input's size is concrete or known only at run time") {
  const std::vector<RuleCase> cases{
      {"assemble_offset",
       "assemble",
       [](pto::Tensor n, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         pto::assemble(x + 1.0, {n.shape(0), 0}, y);
       },
       {4, 8},
       {8, 8},
       4,
       6,
       "window [6, 10) of dim 0 exceeds the size 8 of 'arg2'",
       [](int64_t rows, int64_t i) {
         return i / 8 >= rows ? static_cast<double>(i - rows * 8 + 2) : kSentinel;
       }},
      {"assemble_input_size",
       "assemble",
       [](pto::Tensor, pto::Tensor x, pto::Tensor y) {
         pto::set_vec_tile_shapes(4, 8);
         pto::assemble(x + 1.0, {0, 0}, y);
       },
       {6, 8},
       {5, 8},
       2,
       6,
       "window [0, 6) of dim 0 exceeds the size 5 of 'arg2'",
       [](int64_t rows, int64_t i) {
         return i / 8 < rows ? static_cast<double>(i + 2) : kSentinel;
       },
       {1}},
  };
  for (const auto &c : cases)
    check_rule(c);
}

namespace {

// ---- Collectives with a partly valid input -------------------------------------------------

using dist::Reduction;

/// PE p's element (r, c): small integers, exact in fp32 sums and products.
double input(int p, int64_t r, int64_t c) {
  return static_cast<double>((r * 5 + c * 3 + p * 7) % 19 - 9);
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

/// The reduction over PEs 0..n-1 of element (r, c).
double reduced(Reduction op, int n, int64_t r, int64_t c) {
  double v = input(0, r, c);
  for (int p = 1; p < n; ++p)
    v = combine(op, v, input(p, r, c));
  return v;
}

struct Coll {
  std::string name;
  /// The collective of x's partly valid view v.
  std::function<pto::Tensor(const pto::Tensor &v)> op;
  std::vector<int64_t> y_shape;
  /// PE pe's expected y element (r, c); kSentinel outside the result's valid shape.
  std::function<double(int pe, int64_t r, int64_t c)> want;
};

/// Runs `c` on n PEs: x is [rows, cols] with valid shape [vr, vc] (given to view), y prefilled
/// with the sentinel must read `want` everywhere.
void check_collective(const Coll &c, int n, int64_t rows, int64_t cols, int64_t vr, int64_t vc) {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    CAPTURE(c.name);
    CAPTURE(n);
    auto k = pto::jit(
        "vs_" + c.name,
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          auto v = pto::view(x, {rows, cols}, {0, 0}, {.valid_shape = {{vr, vc}}});
          pto::assemble(c.op(v), {0, 0}, y);
        },
        support::opts(m));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{rows, cols});
      for (int64_t i = 0; i < rows * cols; ++i)
        xs.back().set(i, input(p, i / cols, i % cols));
      ys.push_back(filled(c.y_shape, kSentinel));
    }
    pto::runtime::World world(n);
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    const int64_t ycols = c.y_shape[1];
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      check_all(ys[size_t(p)], [&](int64_t i) { return c.want(p, i / ycols, i % ycols); });
    }
  }
}

} // namespace

TEST_CASE("collectives honour a partly valid input for every algorithm, on 2 and 4 PEs") {
  const int64_t rows = 10, cols = 12, vr = 7, vc = 5; // rows not divisible by 4
  auto in_valid = [=](int64_t r, int64_t c) { return r < vr && c < vc; };
  for (int n : {2, 4}) {
    std::vector<Coll> cases;
    using Algo = dist::AllreduceAlgorithm;
    for (auto [algo, algo_name] :
         {std::pair{Algo::ONE_SHOT, "one_shot"}, std::pair{Algo::TWO_SHOT, "two_shot"}})
      for (auto op : {Reduction::SUM, Reduction::MAX}) {
        cases.push_back({std::string("allreduce_") + algo_name + "_" + dist::name(op),
                         [op, algo](const pto::Tensor &v) {
                           return dist::allreduce(v, op, {.algorithm = algo});
                         },
                         {rows, cols},
                         [=](int, int64_t r, int64_t c) {
                           return in_valid(r, c) ? reduced(op, n, r, c) : kSentinel;
                         }});
      }
    // Fusion 2: two calls packed into one exchange (AUTO).
    cases.push_back({"allreduce_fused",
                     [](const pto::Tensor &v) {
                       auto a = dist::allreduce(v, Reduction::SUM, {.fusion = 2, .fusion_id = 3});
                       auto b =
                           dist::allreduce(v * 2.0, Reduction::SUM, {.fusion = 2, .fusion_id = 3});
                       return a + b;
                     },
                     {rows, cols},
                     [=](int, int64_t r, int64_t c) {
                       return in_valid(r, c) ? 3 * reduced(Reduction::SUM, n, r, c) : kSentinel;
                     }});
    // allgather: PE q's valid block at rows [q*vr, (q+1)*vr).
    cases.push_back({"allgather",
                     [](const pto::Tensor &v) { return dist::allgather(v); },
                     {n * rows, cols},
                     [=](int, int64_t r, int64_t c) {
                       return r < n * vr && c < vc ? input(int(r / vr), r % vr, c) : kSentinel;
                     }});
    // reduce_scatter: PE p's block of B rows, valid where x is.
    const int64_t B = (rows + n - 1) / n;
    for (auto op : {Reduction::SUM, Reduction::MAX})
      cases.push_back({std::string("reduce_scatter_") + dist::name(op),
                       [op](const pto::Tensor &v) { return dist::reduce_scatter(v, op); },
                       {B, cols},
                       [=](int p, int64_t r, int64_t c) {
                         int64_t row = p * B + r;
                         return row < rows && in_valid(row, c) ? reduced(op, n, row, c) : kSentinel;
                       }});
    cases.push_back(
        {"broadcast",
         [](const pto::Tensor &v) { return dist::broadcast(v, 1); },
         {rows, cols},
         [=](int, int64_t r, int64_t c) { return in_valid(r, c) ? input(1, r, c) : kSentinel; }});
    // all_to_all with counts: PE i sends 1 row to each PE j (row j of its x, inside the valid
    // rows); PE j receives row j of every PE, in PE order.
    std::vector<std::vector<int64_t>> ones(size_t(n), std::vector<int64_t>(size_t(n), 1));
    cases.push_back(
        {"all_to_all",
         [ones](const pto::Tensor &v) { return dist::all_to_all(v, ones); },
         {n, cols},
         [=](int j, int64_t r, int64_t c) { return c < vc ? input(int(r), j, c) : kSentinel; }});
    for (const auto &c : cases)
      check_collective(c, n, rows, cols, vr, vc);
  }
}

TEST_CASE("allreduce: AUTO past its one-shot threshold (two-shot) keeps the valid shape, also "
          "when the valid rows are known only at run time") {
  // [40, 512] fp32 is 80 KiB per PE: AUTO runs two-shot. The valid rows vr come from a DYNAMIC
  // size tensor; rows past them must stay untouched.
  const int64_t rows = 40, cols = 512;
  for (int n : {2, 4})
    for (auto m : support::run_modes()) {
      CAPTURE(support::mode_name(m));
      CAPTURE(n);
      auto k = pto::jit(
          "vs_auto_two_shot",
          [](pto::Tensor nv, pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(8, 128);
            auto v = pto::view(x, {40, 512}, {0, 0}, {.valid_shape = {{nv.shape(0), 512}}});
            pto::assemble(dist::allreduce(v, Reduction::SUM), {0, 0}, y);
          },
          dyn_opts(m, {0}));
      std::vector<pto::HostTensor> xs, ys;
      for (int p = 0; p < n; ++p) {
        xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{rows, cols});
        for (int64_t i = 0; i < rows * cols; ++i)
          xs.back().set(i, input(p, i / cols, i % cols));
        ys.push_back(filled({rows, cols}, kSentinel));
      }
      pto::runtime::World world(n);
      for (int64_t vr : {int64_t{33}, rows}) {
        CAPTURE(vr);
        auto nv = size_tensor(vr);
        for (auto &y : ys)
          y.fill(kSentinel);
        world.run([&](int pe) { k(nv, xs[size_t(pe)], ys[size_t(pe)]); });
        for (int p = 0; p < n; ++p)
          check_all(ys[size_t(p)], [&](int64_t i) {
            return i / cols < vr ? reduced(Reduction::SUM, n, i / cols, i % cols) : kSentinel;
          });
      }
      // More valid rows than the view has: the valid-shape rule, at run time.
      auto too_many = size_tensor(41);
      CHECK_THROWS_WITH_AS(
          world.run([&](int pe) { k(too_many, xs[size_t(pe)], ys[size_t(pe)]); }),
          Contains("view: valid_shape[0] = 41 is outside [0, 40], the size of dim 0"),
          pto::ShapeError);
    }
}

TEST_CASE("all_to_all: rows sent from outside x's valid rows are a ShapeError at run time") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    const int n = 2;
    auto k = pto::jit(
        "vs_all_to_all_rows",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          auto v = pto::view(x, {4, 8}, {0, 0}, {.valid_shape = {{2, 8}}});
          pto::assemble(dist::all_to_all(v, {{2, 2}, {1, 1}}), {0, 0}, y);
        },
        support::opts(m));
    std::vector<pto::HostTensor> xs{counting({4, 8}), counting({4, 8})};
    std::vector<pto::HostTensor> ys{filled({3, 8}, kSentinel), filled({3, 8}, kSentinel)};
    pto::runtime::World world(n);
    // PE 0 sends 4 rows, but only 2 are valid; PE 1 sends 2.
    CHECK_THROWS_WITH_AS(world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }),
                         Contains("all_to_all: PE 0 sends 4 rows but x has 2 valid rows"),
                         pto::ShapeError);
  }
}
