// layout_test.cpp - pto::parallel's host-side arithmetic: Mesh coordinates, balanced uneven
// chunks and Layout local shapes / offsets against an independent computation (dealing the
// elements out one at a time), and the Mesh / Layout errors.
#include "pto/parallel.h"

#include "support/expect_error.h"

#include <doctest/doctest.h>

#include <functional>
#include <numeric>
#include <vector>

namespace par = pto::parallel;

namespace {

/// Sizes of n elements dealt to `parts` parts round-robin: the first n % parts get one more.
std::vector<int64_t> dealt(int64_t n, int64_t parts) {
  std::vector<int64_t> s(size_t(parts), 0);
  for (int64_t e = 0; e < n; ++e)
    ++s[size_t(e % parts)];
  return s;
}

} // namespace

TEST_CASE("parallel: balanced chunks of uneven splits against dealing the elements out") {
  for (int64_t n : {0, 1, 2, 3, 7, 10, 16, 17, 31})
    for (int64_t parts : {1, 2, 3, 4, 5, 8}) {
      auto sizes = dealt(n, parts);
      int64_t offset = 0;
      for (int64_t i = 0; i < parts; ++i) {
        CAPTURE(n);
        CAPTURE(parts);
        CAPTURE(i);
        auto c = par::balanced_chunk(n, parts, i);
        CHECK(c.size == sizes[size_t(i)]);
        CHECK(c.offset == offset);
        offset += sizes[size_t(i)];
      }
      CHECK(offset == n);
    }
}

TEST_CASE("parallel: mesh coordinates are row-major") {
  par::Mesh m({2, 3, 2}, {"a", "b", "c"});
  CHECK(m.n_pes() == 12);
  CHECK(m.stride(0) == 6);
  CHECK(m.stride(1) == 2);
  CHECK(m.stride(2) == 1);
  for (int64_t p = 0; p < 12; ++p) {
    auto c = m.coords(p);
    CHECK(c[0] * 6 + c[1] * 2 + c[2] == p);
    CHECK(c[0] < 2);
    CHECK(c[1] < 3);
    CHECK(c[2] < 2);
  }
  CHECK(m.find_axis("b") == 1);
  CHECK(m.find_axis("z") == -1);
  CHECK(m.to_string() == "a=2, b=3, c=2");
}

TEST_CASE("parallel: layout local shapes and offsets, uneven and multi-axis splits") {
  // [10, 7, 5] on mesh a=2, b=3: dim 0 split by a (major) and b, dim 1 split by nothing, dim 2
  // replicated; expected from dealing dim 0's 10 rows to 6 parts in (a, b) order.
  par::Mesh m({2, 3}, {"a", "b"});
  par::Layout l(m, {10, 7, 5}, {par::Placement::split(0), par::Placement::split(0)});
  CHECK(l.parts(0) == 6);
  CHECK(l.parts(1) == 1);
  CHECK(l.first_uneven_dim() == 0);
  auto sizes = dealt(10, 6);
  std::vector<int64_t> offsets(6, 0);
  std::partial_sum(sizes.begin(), sizes.end() - 1, offsets.begin() + 1);
  for (int64_t p = 0; p < 6; ++p) {
    auto c = m.coords(p);
    const int64_t part = c[0] * 3 + c[1];
    CHECK(l.part_index(0, c) == part);
    CHECK(l.local_shape(c) == std::vector<int64_t>{sizes[size_t(part)], 7, 5});
    CHECK(l.local_offset(c) == std::vector<int64_t>{offsets[size_t(part)], 0, 0});
  }
  CHECK(l.max_local_shape() == std::vector<int64_t>{2, 7, 5});
  CHECK(l.to_string() == "[10@a,b, 7, 5]");

  // Size-1 and size-0 dims: 1 row into 2 parts gives one empty part.
  par::Layout small(m, {1, 4}, {par::Placement::split(0), par::Placement::split(1)});
  CHECK(small.local_shape({0, 0}) == std::vector<int64_t>{1, 2});
  CHECK(small.local_shape({1, 2}) == std::vector<int64_t>{0, 1});
  CHECK(small.local_offset({1, 2}) == std::vector<int64_t>{1, 3});

  par::Layout partial(m, {4, 4},
                      {par::Placement::partial(par::PartialOp::MAX), par::Placement::split(1)});
  CHECK(partial.has_partial());
  CHECK(partial.to_string() == "[4, 4@b] {P(max)@a}");
  CHECK(partial.local_shape({1, 1}) == std::vector<int64_t>{4, dealt(4, 3)[1]});
}

TEST_CASE("parallel: Mesh and Layout errors") {
  int line = 0;
  auto mesh = [&](std::vector<int64_t> s, std::vector<std::string> n) {
    line = __LINE__ + 1;
    par::Mesh m(std::move(s), std::move(n));
  };
  support::expect_error<pto::StrategyError>([&] { mesh({2, 4}, {"dp"}); }, "layout_test.cpp", line,
                                            "parallel::Mesh", "2 axis sizes but 1 axis names");
  support::expect_error<pto::StrategyError>([&] { mesh({2, 0}, {"a", "b"}); }, "layout_test.cpp",
                                            line, "parallel::Mesh", "axis 1 ('b') has size 0");
  support::expect_error<pto::StrategyError>([&] { mesh({2, 2}, {"a", "a"}); }, "layout_test.cpp",
                                            line, "parallel::Mesh", "'a' is used twice");
  support::expect_error<pto::StrategyError>([&] { mesh({1 << 16, 1 << 16}, {"a", "b"}); },
                                            "layout_test.cpp", line, "parallel::Mesh",
                                            "more than 2^31 PEs");
  par::Mesh m({2}, {"a"});
  support::expect_error<pto::StrategyError>(
      [&] {
        line = __LINE__ + 1;
        par::Layout l(m, {4}, {par::Placement::split(1)});
      },
      "layout_test.cpp", line, "parallel::Layout", "axis 'a' splits dim 1 of a rank-1 tensor");
  support::expect_error<pto::StrategyError>(
      [&] {
        line = __LINE__ + 1;
        par::balanced_chunk(4, 2, 2);
      },
      "layout_test.cpp", line, "parallel::balanced_chunk", "index = 2");
}

TEST_CASE("parallel: Mesh and Layout accessors refuse points and axes outside the mesh") {
  // Each throws a StrategyError at this file's line naming the accessor, never reads past a
  // vector (session 12 attacker: local_shape({}) crashed, coords(-7) mapped inside the mesh).
  int line = 0;
  const par::Mesh m({2, 3}, {"a", "b"});
  const par::Layout l(m, {8, 9}, {par::Placement::split(0), par::Placement::split(0)});
  auto expect = [&](const std::function<void()> &f, const char *op, const char *what) {
    support::expect_error<pto::StrategyError>(f, "layout_test.cpp", line, op, what);
  };
  // clang-format off
  expect([&] { line = __LINE__; (void)l.local_shape({}); }, "parallel::Layout::local_shape", "mesh coordinates [] are not a point of mesh (a=2, b=3)");
  expect([&] { line = __LINE__; (void)l.local_offset({1, 3}); }, "parallel::Layout::local_offset", "[1, 3] are not a point");
  expect([&] { line = __LINE__; (void)l.local_shape({-1, 0}); }, "parallel::Layout::local_shape", "[-1, 0] are not a point");
  expect([&] { line = __LINE__; (void)l.part_index(0, {0}); }, "parallel::Layout::part_index", "[0] are not a point");
  expect([&] { line = __LINE__; (void)l.part_index(2, {0, 0}); }, "parallel::Layout::part_index", "dim 2 is outside [0, 2)");
  expect([&] { line = __LINE__; (void)l.parts(-1); }, "parallel::Layout::parts", "dim -1 is outside [0, 2)");
  expect([&] { line = __LINE__; (void)l.split_axes(99); }, "parallel::Layout::split_axes", "dim 99 is outside [0, 2)");
  expect([&] { line = __LINE__; (void)m.size(5); }, "parallel::Mesh::size", "axis 5 is outside [0, 2)");
  expect([&] { line = __LINE__; (void)m.axis_name(-1); }, "parallel::Mesh::axis_name", "axis -1 is outside");
  expect([&] { line = __LINE__; (void)m.stride(2); }, "parallel::Mesh::stride", "axis 2 is outside");
  expect([&] { line = __LINE__; (void)m.coords(-7); }, "parallel::Mesh::coords", "PE -7 is outside [0, 6)");
  expect([&] { line = __LINE__; (void)m.coords(6); }, "parallel::Mesh::coords", "PE 6 is outside");
  expect([&] { line = __LINE__; par::Layout bad(m, {8}, {par::Placement{par::Placement::Kind(7)}, {}}); }, "parallel::Layout", "kind value 7");
  expect([&] { line = __LINE__; par::Layout bad(m, {8}, {par::Placement::partial(par::PartialOp(9)), {}}); }, "parallel::Layout", "op value 9");
  // clang-format on
  // In range: the right coordinates (row-major) and slices.
  CHECK(m.coords(5) == std::vector<int64_t>{1, 2});
  CHECK(l.local_shape({1, 2}) == std::vector<int64_t>{1, 9}); // part 5 of 6 of 8 rows
  CHECK(l.local_offset({1, 2}) == std::vector<int64_t>{7, 0});
}
