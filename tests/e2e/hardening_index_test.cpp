// hardening_index_test.cpp - Run-time index errors of Tensor::at (issue 8): an element read
// whose index is only known at run time and lies outside the tensor fails the call with a
// RuntimeError that points at the Tensor::at call, names the op "at", the tensor, the dim, the
// index and the bounds, and the op that evaluated the read; the same text in both executors.
// Expected messages are written out here.
#include "pto/pto.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>

namespace {

std::string at(int line) { return "hardening_index_test.cpp:" + std::to_string(line); }

/// The message each executor gives for `k(args...)`, which must throw RuntimeError.
template <class Make, class... Args>
std::map<std::string, std::string> messages(Make make, Args &...args) {
  std::map<std::string, std::string> out;
  for (auto mode : support::run_modes()) {
    auto k = make(mode);
    out[support::mode_name(mode)] = support::thrown<pto::RuntimeError>([&] { k(args...); });
  }
  return out;
}

void same_in_both(const std::map<std::string, std::string> &m, const std::string &want) {
  for (auto &[mode, msg] : m) {
    CAPTURE(mode);
    CHECK(msg == want);
  }
}

} // namespace

TEST_CASE("hardening index: a run-time index outside a dim names the at() call in both "
          "executors") {
  pto::HostTensor idx(pto::DT_INT32, {4}), y(pto::DT_FP32, {4, 8});
  for (int i = 0; i < 4; ++i)
    idx.set(i, i);
  int loop_line = 0, at_line = 0;
  SUBCASE("read by a cond: the index is a loop index") {
    auto make = [&](pto::RunMode mode) {
      return pto::jit(
          "at_cond",
          [&](pto::Tensor n, pto::Tensor out) {
            pto::set_vec_tile_shapes(1, 8);
            for (auto i : pto::loop(5)) {
              at_line = loop_line = __LINE__ + 1;
              if (pto::cond(n.at({i}) >= 0))
                pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {0, 0}, out);
            }
          },
          support::opts(mode));
    };
    const auto m = messages(make, idx, y);
    same_in_both(m, at(at_line) +
                        ": at: index 4 is out of range [0, 4) in dim 0 of tensor 'arg0' "
                        "(read at run time for `cond` at " +
                        at(loop_line) + ")");
  }
  SUBCASE("read by a loop bound: a negative index read from the tensor itself") {
    idx.set(1, -3);
    auto make = [&](pto::RunMode mode) {
      return pto::jit(
          "at_loop",
          [&](pto::Tensor n, pto::Tensor out) {
            pto::set_vec_tile_shapes(1, 8);
            at_line = __LINE__ + 1;
            auto bad = n.at({n.at({1})});
            loop_line = __LINE__ + 1;
            for (auto i : pto::loop(bad))
              pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {i, 0}, out);
          },
          support::opts(mode));
    };
    const auto m = messages(make, idx, y);
    same_in_both(m, at(at_line) +
                        ": at: index -3 is out of range [0, 4) in dim 0 of tensor 'arg0' "
                        "(read at run time for `loop` at " +
                        at(loop_line) + ")");
  }
  SUBCASE("read through a view: the view's offset plus the index against the viewed tensor") {
    auto make = [&](pto::RunMode mode) {
      return pto::jit(
          "at_view",
          [&](pto::Tensor n, pto::Tensor out) {
            pto::set_vec_tile_shapes(1, 8);
            for (auto i : pto::loop(2, 4)) {
              auto tail = pto::view(n, {2}, {i}, {.valid_shape = {{1}}});
              at_line = __LINE__ + 1;
              auto count = tail.at({1});
              loop_line = __LINE__ + 1;
              for (auto j : pto::loop(count))
                pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {j, 0}, out);
            }
          },
          support::opts(mode));
    };
    const auto m = messages(make, idx, y);
    for (auto &[mode, msg] : m) {
      CAPTURE(mode);
      CAPTURE(msg);
      CHECK(msg.find(at(at_line) + ": at: index 4 (the view's offset plus the index) is out of "
                                   "range [0, 4) in dim 0 of tensor 'arg0', read through view '") ==
            0);
      CHECK(msg.find("(read at run time for `loop` at " + at(loop_line) + ")") !=
            std::string::npos);
    }
    CHECK(m.begin()->second == m.rbegin()->second);
  }
  SUBCASE("read in a view offset of an assemble, in dim 1 of a 2-d tensor") {
    pto::HostTensor pos(pto::DT_INT64, {2, 3});
    for (int i = 0; i < 6; ++i)
      pos.set(i, 0);
    pos.set(1, 7); // pos[0, 1] = 7: used as a column index into pos itself
    auto make = [&](pto::RunMode mode) {
      return pto::jit(
          "at_assemble",
          [&](pto::Tensor p, pto::Tensor out) {
            pto::set_vec_tile_shapes(1, 8);
            at_line = loop_line = __LINE__ + 1;
            pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {p.at({0, p.at({0, 1})}), 0}, out);
          },
          support::opts(mode));
    };
    const auto m = messages(make, pos, y);
    same_in_both(m, at(at_line) +
                        ": at: index 7 is out of range [0, 3) in dim 1 of tensor 'arg0' "
                        "(read at run time for `assemble` at " +
                        at(loop_line) + ")");
  }
}
