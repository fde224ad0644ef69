// pipelining_test.cpp - Reference §6.4: a signal whose pred is the put before it fires per tile
// (put tile 0, signal tile 0, put tile 1, ...), and a get after its wait reads each tile once
// that tile's slot is satisfied. Observed through the runtime's timeline.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dist = pto::distributed;

TEST_CASE("put -> signal and wait -> get interleave per tile in generated code") {
  auto k = pto::jit("pipelined", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(2, 8); // 4 tiles of [2, 8]
    auto buf = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {8, 8});
    auto me = dist::my_symbolic_pe("world");
    auto other = 1 - me;
    auto put = dist::shmem_put(x, {0, 0}, buf, other);
    dist::shmem_signal(buf, other, 1, other, {.pred = {put}});
    auto ready = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true});
    pto::assemble(dist::shmem_get(buf, me, {.pred = {ready}}), {0, 0}, y);
  });
  std::vector<pto::HostTensor> xs, ys;
  for (int p = 0; p < 2; ++p) {
    xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{8, 8});
    xs.back().fill(p + 1);
    ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{8, 8});
  }
  pto::runtime::World world(2);
  world.enable_trace();
  world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
  for (int p = 0; p < 2; ++p)
    CHECK(ys[size_t(p)].get(63) == 2 - p); // the other PE's value
  std::string path = "pipelining_trace.json";
  world.write_trace(path);
  auto doc = nlohmann::json::parse(std::ifstream(path));
  std::remove(path.c_str());
  std::string pe0;
  int compute_events = 0;
  for (auto &e : doc["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == 0) {
      std::string cat = e["cat"];
      if (cat == "op")
        ++compute_events; // the assemble of the result, traced by generated code
      if (cat == "put" || cat == "signal" || cat == "wait" || cat == "get")
        pe0 += cat[0]; // p, s, w, g
    }
  CHECK(pe0 == "psps"
               "psps"
               "wgwg"
               "wgwg");
  CHECK(compute_events == 1);
}
