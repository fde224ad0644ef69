// hardening_collective_valid_test.cpp - Issue 8 (F2): every PE of a collective must pass the same
// valid shape. When it is known only at run time, PEs that differ get a DistributedError naming
// the collective, the user's line, the PEs and both valid shapes, on every PE (never a hang or a
// result); with a concrete valid shape that differs between PEs (different traces) kernel entry
// reports it. Same valid shapes: the result against a plain loop over every PE's input.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dist = pto::distributed;
using Algo = dist::AllreduceAlgorithm;

namespace {

using Call = std::function<pto::Tensor(const pto::Tensor &)>;

/// The collectives under test, each on a [8, 6] int32 input: name, call, whether dim 0 may
/// differ between PEs (all_to_all).
struct Case {
  std::string name;
  Call call;
  bool rows_may_differ = false;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto [algo, name] : {std::pair{Algo::ONE_SHOT, "one_shot"},
                            {Algo::TWO_SHOT, "two_shot"},
                            {Algo::RS_AG, "rs_ag"},
                            {Algo::AUTO, "auto"}})
    out.push_back({std::string("allreduce_") + name, [algo = algo](const pto::Tensor &x) {
                     return dist::allreduce(x, dist::Reduction::SUM, {.algorithm = algo});
                   }});
  out.push_back({"allreduce_fusion", [](const pto::Tensor &x) {
                   return dist::allreduce(x, dist::Reduction::SUM, {.fusion = 1});
                 }});
  out.push_back({"reduce_scatter", [](const pto::Tensor &x) {
                   return dist::reduce_scatter(x, dist::Reduction::SUM);
                 }});
  out.push_back({"allgather", [](const pto::Tensor &x) { return dist::allgather(x); }});
  out.push_back({"broadcast", [](const pto::Tensor &x) { return dist::broadcast(x, 1); }});
  out.push_back({"all_to_all", [](const pto::Tensor &x) { return dist::all_to_all(x); }, true});
  return out;
}

/// Element i of PE p's input.
int32_t input(int p, int64_t i) { return static_cast<int32_t>((i * 7 + p * 3) % 23 - 11); }

/// What each PE caught: the message of a DistributedError, or "other" / "none".
std::vector<std::string> run_all(int n, const std::function<void(int)> &call) {
  std::vector<std::string> got(static_cast<size_t>(n), "none");
  pto::runtime::World world(n, {.deadlock_timeout_ms = 20000});
  world.run([&](int pe) {
    try {
      call(pe);
    } catch (const pto::DistributedError &e) {
      got[size_t(pe)] = e.what();
    } catch (const std::exception &e) {
      got[size_t(pe)] = std::string("other: ") + e.what();
    }
  });
  return got;
}

} // namespace

TEST_CASE("collectives: PEs passing different run-time valid shapes fail alike on every PE") {
  const int n = 4;
  for (auto m : support::run_modes())
    for (const auto &c : cases()) {
      CAPTURE(support::mode_name(m));
      CAPTURE(c.name);
      // The dynamic extent is dim 1 for all_to_all (whose dim 0 may differ), else dim 0.
      const bool cols = c.rows_may_differ;
      auto k = pto::jit(
          "valid_differs_" + c.name,
          [&call = c.call, cols](pto::Tensor x, pto::Tensor ext, pto::Tensor y) {
            pto::set_vec_tile_shapes(8, 8);
            auto v =
                pto::view(x, {8, 6}, {0, 0},
                          {.valid_shape = {{cols ? 8 : ext.shape(0), cols ? ext.shape(0) : 6}}});
            pto::assemble(call(v), {0, 0}, y);
          },
          support::opts(m, {{}, {{pto::DYNAMIC, 1}}}));
      std::vector<pto::HostTensor> xs, ys;
      for (int p = 0; p < n; ++p) {
        xs.emplace_back(pto::DT_INT32, std::vector<int64_t>{8, 6});
        xs.back().fill(1);
        ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{32, 6});
        ys.back().fill(-7);
      }
      auto got = run_all(n, [&](int pe) {
        pto::HostTensor ext(pto::DT_INT32, {pe == 2 ? 3 : 5, 1}); // PE 2 disagrees
        k(xs[size_t(pe)], ext, ys[size_t(pe)]);
      });
      const std::string theirs =
          cols ? "[*, 3] but PE 0 passes [*, 5]" : "[3, 6] but PE 0 passes [5, 6]";
      for (int p = 0; p < n; ++p) {
        CAPTURE(p);
        INFO(got[size_t(p)]);
        const std::string name = c.name.starts_with("allreduce") ? "allreduce" : c.name;
        CHECK(got[size_t(p)].find("hardening_collective_valid_test.cpp") != std::string::npos);
        CHECK(got[size_t(p)].find(name) != std::string::npos);
        CHECK(got[size_t(p)].find("PE 2 of group 'world' passes x with valid shape " + theirs) !=
              std::string::npos);
        for (int64_t i = 0; i < 32 * 6; ++i) // no result written
          REQUIRE(ys[size_t(p)].get(i) == -7);
      }
    }
}

TEST_CASE("collectives: many PEs (looped exchange) with different run-time valid shapes") {
  const int n = 17; // above the 16 PEs that are unrolled
  for (auto m : support::run_modes())
    for (auto algo : {Algo::ONE_SHOT, Algo::RS_AG}) {
      CAPTURE(support::mode_name(m));
      CAPTURE(static_cast<int>(algo));
      auto k = pto::jit(
          "valid_differs_many",
          [algo](pto::Tensor x, pto::Tensor ext, pto::Tensor y) {
            pto::set_vec_tile_shapes(8, 8);
            auto v = pto::view(x, {8, 6}, {0, 0}, {.valid_shape = {{ext.shape(0), 6}}});
            pto::assemble(dist::allreduce(v, dist::Reduction::SUM, {.algorithm = algo}), {0, 0}, y);
          },
          support::opts(m, {{}, {{pto::DYNAMIC, 1}}}));
      std::vector<pto::HostTensor> xs, ys;
      for (int p = 0; p < n; ++p) {
        xs.emplace_back(pto::DT_INT32, std::vector<int64_t>{8, 6});
        xs.back().fill(1);
        ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{8, 6});
        ys.back().fill(-7);
      }
      auto got = run_all(n, [&](int pe) {
        pto::HostTensor ext(pto::DT_INT32, {pe == 16 ? 2 : 4, 1});
        k(xs[size_t(pe)], ext, ys[size_t(pe)]);
      });
      for (int p = 0; p < n; ++p) {
        CAPTURE(p);
        INFO(got[size_t(p)]);
        CHECK(got[size_t(p)].find("PE 16 of group 'world' passes x with valid shape [2, 6] but "
                                  "PE 0 passes [4, 6]") != std::string::npos);
        for (int64_t i = 0; i < 8 * 6; ++i)
          REQUIRE(ys[size_t(p)].get(i) == -7);
      }
    }
}

TEST_CASE("collectives: the same run-time valid shape on every PE gives the reference result") {
  const int n = 4;
  const int64_t vr = 5;
  for (auto m : support::run_modes())
    for (const auto &c : cases()) {
      if (c.name == "reduce_scatter" || c.name == "all_to_all")
        continue; // their result geometry differs; covered by collectives_test.cpp
      CAPTURE(support::mode_name(m));
      CAPTURE(c.name);
      auto k = pto::jit(
          "valid_same_" + c.name,
          [&call = c.call](pto::Tensor x, pto::Tensor ext, pto::Tensor y) {
            pto::set_vec_tile_shapes(8, 8);
            auto v = pto::view(x, {8, 6}, {0, 0}, {.valid_shape = {{ext.shape(0), 6}}});
            pto::assemble(call(v), {0, 0}, y);
          },
          support::opts(m, {{}, {{pto::DYNAMIC, 1}}}));
      std::vector<pto::HostTensor> xs, ys;
      for (int p = 0; p < n; ++p) {
        xs.emplace_back(pto::DT_INT32, std::vector<int64_t>{8, 6});
        for (int64_t i = 0; i < 48; ++i)
          xs.back().set(i, input(p, i));
        ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{32, 6});
        ys.back().fill(-1000);
      }
      auto got = run_all(n, [&](int pe) {
        pto::HostTensor ext(pto::DT_INT32, {vr, 1});
        k(xs[size_t(pe)], ext, ys[size_t(pe)]);
      });
      for (int p = 0; p < n; ++p) {
        CAPTURE(p);
        INFO(got[size_t(p)]);
        REQUIRE(got[size_t(p)] == "none");
        for (int64_t r = 0; r < 32; ++r)
          for (int64_t col = 0; col < 6; ++col) {
            int64_t want = -1000;
            if (c.name == "allgather") { // PE q's valid rows at [q*vr, (q+1)*vr)
              if (r < n * vr)
                want = input(static_cast<int>(r / vr), (r % vr) * 6 + col);
            } else if (c.name == "broadcast") {
              if (r < vr)
                want = input(1, r * 6 + col);
            } else if (r < vr) {
              want = 0;
              for (int q = 0; q < n; ++q)
                want += input(q, r * 6 + col);
            }
            REQUIRE(ys[size_t(p)].get(r * 6 + col) == want);
          }
      }
    }
}

TEST_CASE("collectives: concrete valid shapes that differ between PEs fail at kernel entry") {
  // One kernel, two specializations (x has 5 rows on PE 1, 8 elsewhere): the valid shapes are
  // concrete and differ, the shmem tensors do not.
  const int n = 3;
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    auto k = pto::jit(
        "valid_concrete_differs",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 8);
          auto v = pto::view(x, {8, 6}, {0, 0}, {.valid_shape = {{x.shape(0), 6}}});
          pto::assemble(dist::allreduce(v, dist::Reduction::SUM), {0, 0}, y);
        },
        support::opts(m));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.emplace_back(pto::DT_INT32, std::vector<int64_t>{p == 1 ? 5 : 8, 8});
      ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{8, 6});
      ys.back().fill(-7);
    }
    auto got = run_all(n, [&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      CHECK(got[size_t(p)].find("PE 0 passes valid shape [8, 6] to allreduce at ") !=
            std::string::npos);
      CHECK(got[size_t(p)].find("PE 1 passes valid shape [5, 6] to allreduce") !=
            std::string::npos);
      for (int64_t i = 0; i < 48; ++i)
        REQUIRE(ys[size_t(p)].get(i) == -7);
    }
  }
}

TEST_CASE("collectives: PEs calling different collectives at one point are told so") {
  // Two kernels with the same shmem layout but a different collective: the message names both
  // collectives and their short file:line, not a valid-shape difference.
  const int n = 2;
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    auto reduce = pto::jit(
        "differs_allreduce",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 8);
          pto::assemble(dist::allreduce(x, dist::Reduction::SUM), {0, 0}, y);
        },
        support::opts(m));
    auto gather = pto::jit(
        "differs_allgather",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(8, 8);
          pto::assemble(dist::allgather(x), {0, 0}, y);
        },
        support::opts(m));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.emplace_back(pto::DT_INT32, std::vector<int64_t>{8, 6});
      xs.back().fill(1);
      ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{16, 6});
      ys.back().fill(-7);
    }
    auto got = run_all(n, [&](int pe) {
      if (pe == 0)
        reduce(xs[0], ys[0]);
      else
        gather(xs[1], ys[1]);
    });
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      INFO(got[size_t(p)]);
      const auto &e = got[size_t(p)];
      CHECK(e.find("PE 0 calls allreduce at hardening_collective_valid_test.cpp:") !=
            std::string::npos);
      CHECK(e.find("where PE 1 calls allgather at hardening_collective_valid_test.cpp:") !=
            std::string::npos);
      CHECK(e.find("valid shape") == std::string::npos);
      CHECK(e.find('/') == std::string::npos); // short locations only
      for (int64_t i = 0; i < 16 * 6; ++i)
        REQUIRE(ys[size_t(p)].get(i) == -7);
    }
  }
}
