// hardening_collective_group_test.cpp - Issue 8 (found by the fuzz target, collective/group-bad):
// a collective given an unknown group is a DistributedError naming the collective the user
// called, at the user's line, in both executors (it used to name the internal 'n_pes').
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

using doctest::Contains;
namespace dist = pto::distributed;

TEST_CASE("collectives: an unknown group is a DistributedError naming the collective") {
  using Call = std::function<pto::Tensor(const pto::Tensor &)>;
  const dist::CollectiveOptions bad{.group = "nope"};
  const std::vector<std::pair<std::string, Call>> calls{
      {"allreduce",
       [](const pto::Tensor &x) {
         return dist::allreduce(x, dist::Reduction::SUM, {.group = "nope"});
       }},
      {"allgather", [&](const pto::Tensor &x) { return dist::allgather(x, bad); }},
      {"reduce_scatter",
       [&](const pto::Tensor &x) { return dist::reduce_scatter(x, dist::Reduction::SUM, bad); }},
      {"broadcast", [&](const pto::Tensor &x) { return dist::broadcast(x, 0, bad); }},
      {"all_to_all", [&](const pto::Tensor &x) { return dist::all_to_all(x, bad); }},
  };
  for (auto m : support::run_modes())
    for (const auto &[name, call] : calls) {
      CAPTURE(support::mode_name(m));
      CAPTURE(name);
      auto k = pto::jit(
          "group_bad_" + name,
          [&call = call](pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(4, 8);
            pto::assemble(call(x), {0, 0}, y);
          },
          support::opts(m));
      pto::runtime::World world(2);
      std::vector<pto::HostTensor> xs(2, pto::HostTensor(pto::DT_FP32, {4, 8}));
      std::vector<pto::HostTensor> ys(2, pto::HostTensor(pto::DT_FP32, {8, 8}));
      auto run = [&] { world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }); };
      const std::string want = name + ": unknown group 'nope'";
      CHECK_THROWS_WITH_AS(run(), Contains(want.c_str()), pto::DistributedError);
      CHECK_THROWS_WITH_AS(run(), Contains("hardening_collective_group_test.cpp:"),
                           pto::DistributedError);
    }
}
