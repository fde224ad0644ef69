// dropout_test.cpp - DropoutGenMask / DropoutDoMask (the seed table's pair) and OneHot's index
// check with a split class dim: the sharded result against the 1-PE oracle and against the
// unsharded pto::dropout (bitwise), on uneven splits, repeated computation and a 2x2 mesh, and
// every pairing error as its exact StrategyError.
#include "pto/parallel.h"

#include "parallel/sharded.h"
#include "support/expect_error.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>

namespace par = pto::parallel;
using pto::Tensor;

namespace {

const char *const kFile = "dropout_test.cpp";
constexpr double kP = 0.375;
constexpr uint64_t kKey = 0x1234'5678'9ABCull, kCounter = 7;

/// Writes the whole [9, 7] result r into y (every PE alike).
void write(const par::DTensor &r, const Tensor &y) {
  pto::assemble(par::full_tensor(r), {0, 0}, y);
}

/// pto::dropout(x) on one PE: the unsharded op, independent of every rule.
pto::HostTensor unsharded(const pto::HostTensor &x) {
  auto k = pto::jit("dropout_whole", [](Tensor xt, Tensor y) {
    pto::set_vec_tile_shapes(1, 1, 8, 8);
    pto::assemble(pto::dropout(xt, kP, kKey, kCounter), {0, 0}, y);
  });
  std::vector<pto::HostTensor> in{x};
  pto::runtime::World one(1);
  return sharded::run<1>(one, 1, k, in, {9, 7}, true)[0];
}

} // namespace

TEST_CASE("parallel: DropoutGenMask / DoMask equal one PE bitwise on every split") {
  const auto x = sharded::data({9, 7}, 3); // 9 and 7: uneven on 2, 3 and 4 PEs
  const auto whole = unsharded(x);
  int64_t dropped = 0;
  for (int64_t i = 0; i < whole.numel(); ++i)
    dropped += whole.get(i) == 0 ? 1 : 0;
  CHECK(dropped > 5); // p = 0.375 of 63 elements: the mask is not all ones (nor all zeros)
  CHECK(dropped < 58);
  const support::Tolerance exact{0, 0};
  using S = par::Strategy;
  struct Case {
    const char *name;
    int n;
    std::vector<int64_t> mesh;
    std::function<par::DTensor(Tensor)> f;
  };
  std::vector<Case> cases;
  for (int n : {2, 3, 4}) {
    cases.push_back({"rows", n, {n}, [n](Tensor t) {
                       const par::Mesh m({n}, {"x"});
                       auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, S{{n, 1}});
                       return par::dropout_do_mask(par::shard(t, m, {"x", {}}), mask, kP);
                     }});
    cases.push_back({"cols", n, {n}, [n](Tensor t) {
                       const par::Mesh m({n}, {"x"});
                       auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, S{{1, n}});
                       return par::dropout_do_mask(t, mask, kP); // a whole x, sliced as its mask
                     }});
    cases.push_back({"dropout", n, {n}, [n](Tensor t) {
                       const par::Mesh m({n}, {"x"});
                       return par::dropout(par::shard(t, m, {{}, "x"}), kP, kKey, kCounter);
                     }});
  }
  // Repeated computation: 2 parts on 4 PEs; and both dims split on a 2x2 mesh.
  cases.push_back({"repeated", 4, {2, 2}, [](Tensor t) {
                     const par::Mesh m({2, 2}, {"a", "b"});
                     auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, S{{2, 1}});
                     return par::dropout_do_mask(t, mask, kP);
                   }});
  cases.push_back({"mesh_2x2", 4, {2, 2}, [](Tensor t) {
                     const par::Mesh m({2, 2}, {"a", "b"});
                     auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, {{"b", "a"}});
                     return par::dropout_do_mask(par::shard(t, m, {"b", "a"}), mask, kP);
                   }});
  cases.push_back({"dropout_2x2", 4, {2, 2}, [](Tensor t) {
                     const par::Mesh m({2, 2}, {"a", "b"});
                     return par::dropout(par::shard(t, m, {"a", "b"}), kP, kKey, kCounter);
                   }});
  for (const auto &c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.n);
    auto body = [&](Tensor t, Tensor y) {
      pto::set_vec_tile_shapes(1, 1, 8, 8);
      write(c.f(t), y);
    };
    sharded::against_oracle(c.name, c.n, body, {x}, {9, 7}, exact);
    auto k = pto::jit(c.name, body);
    auto world = support::make_world(c.n);
    std::vector<pto::HostTensor> in{x};
    sharded::check_all(sharded::run<1>(*world, c.n, k, in, {9, 7}), whole, exact);
  }
}

namespace {
/// Traces `body(x [9, 7])` on one PE (every check runs on the oracle too).
void trace(const std::function<void(Tensor)> &body) {
  auto k = pto::jit("dropout_errors", [&](Tensor x, Tensor y) {
    pto::set_vec_tile_shapes(1, 1, 8, 8);
    body(x);
    pto::assemble(pto::full({9, 7}, 0.0, pto::DT_FP32), {0, 0}, y);
  });
  std::vector<pto::HostTensor> in{sharded::data({9, 7}, 1)};
  pto::runtime::World one(1);
  sharded::run<1>(one, 1, k, in, {9, 7}, true);
}
} // namespace

TEST_CASE("parallel errors: DropoutGenMask / DoMask pairing") {
  const par::Mesh m({2, 4}, {"dp", "mp"});
  int line = 0;
  const char *do_mask = "parallel::dropout_do_mask";
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x) {
          auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, {{2, 4}});
          line = __LINE__ + 1;
          par::dropout_do_mask(par::shard(x, m, {"dp", "mp"}), mask, kP, {{2, 4}, {2, 4}});
        });
      },
      kFile, line, do_mask,
      "DropoutDoMask takes no strategy (the seed table: none may be configured; 2 tuples given): "
      "it follows its mask, so give the split to parallel::dropout_gen_mask; nearest valid "
      "strategy: none here, and ((2, 4)) on dropout_gen_mask");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x) {
          line = __LINE__ + 1;
          par::dropout_do_mask(par::shard(x, m, {"dp", {}}),
                               pto::dropout_gen_mask({9, 7}, kP, 1, 2), kP);
        });
      },
      kFile, line, do_mask,
      "operand 1 (mask) is a whole pto::Tensor, but DropoutDoMask must be used with "
      "DropoutGenMask");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x) {
          auto mask = par::dropout_gen_mask(m, {9, 8}, kP, kKey, kCounter);
          line = __LINE__ + 1;
          par::dropout_do_mask(par::shard(x, m, {"dp", {}}), mask, kP);
        });
      },
      kFile, line, do_mask,
      "operand 1 (mask) has the global shape [9, 8] but operand 0 (x) [9, 7] (they differ at dim "
      "1)");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x) {
          auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, {{1, 4}});
          line = __LINE__ + 1;
          par::dropout_do_mask(par::shard(x, m, {"dp", "mp"}), mask, kP);
        });
      },
      kFile, line, do_mask,
      "operand 1 (mask) dim 0 is not split, but operand 0 (x) dim 0 is split 2 (axis 'dp'): "
      "DropoutDoMask must be used with the DropoutGenMask of x's layout (both split alike on "
      "every dim); nearest valid strategy: ((2, 4)) on dropout_gen_mask");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x) {
          auto mask = par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, {{2, 4}});
          line = __LINE__ + 1;
          par::dropout_do_mask(par::shard(x, m, {"dp", {}}), mask, kP);
        });
      },
      kFile, line, do_mask,
      "operand 1 (mask) dim 1 is split 4 (axis 'mp'), but operand 0 (x) dim 1 is not split");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor) {
          line = __LINE__ + 1;
          par::dropout_gen_mask(m, {9, 7}, kP, kKey, kCounter, {{2}});
        });
      },
      kFile, line, "parallel::dropout_gen_mask",
      "operand 0 has rank 2 ([9, 7]) but its strategy has 1 entries; nearest valid strategy: "
      "((2, 1))");
  support::expect_error<pto::ArgumentError>(
      [&] {
        trace([&](Tensor) {
          line = __LINE__ + 1;
          par::dropout_gen_mask(m, {9, 7}, 1.5, kKey, kCounter);
        });
      },
      kFile, line, "dropout_gen_mask");
}

TEST_CASE("parallel: OneHot with the class dim split throws one PE's RuntimeError") {
  pto::HostTensor idx(pto::DT_INT32, {6});
  for (int64_t i = 0; i < 6; ++i)
    idx.set(i, double((i * 3) % 5));
  for (int bad : {5, -1}) {
    CAPTURE(bad);
    idx.set(4, bad);
    for (int n : {1, 2, 3}) {
      CAPTURE(n);
      auto k = pto::jit("one_hot_oob", [n](Tensor i, Tensor y) {
        pto::set_vec_tile_shapes(1, 1, 8, 8);
        const par::Mesh m({n}, {"x"});
        auto r = par::one_hot(par::shard(i, m, {{}}), 5, {{1, n}, {}, {}});
        pto::assemble(pto::cast(par::full_tensor(r), pto::DT_FP32), {0, 0}, y);
      });
      std::vector<pto::HostTensor> in{idx};
      auto world = support::make_world(n);
      const std::string msg = support::thrown<pto::RuntimeError>(
          [&] { sharded::run<1>(*world, n, k, in, {6, 5}, true); });
      CHECK_MESSAGE(msg.find(std::to_string(bad) + " at ") != std::string::npos, msg);
      CHECK_MESSAGE(msg.find("is out of range [0, 5)") != std::string::npos, msg);
    }
  }
}
