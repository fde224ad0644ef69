// lookup_range_test.cpp - Sharded lookups (index_select, embedding, one_hot) with an index
// outside the dim: the run throws pto::RuntimeError at the user's line on n PEs as on the 1-PE
// oracle, with the same message (the global index and range, not a PE's local ones), also for
// int64 indices beyond 2^31 and 2^32, which must never wrap into a valid row (session 13's
// attack, F1 and F2). Expected outcome: the 1-PE oracle's, found by running it.
#include "pto/parallel.h"

#include "parallel/sharded.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>

namespace par = pto::parallel;
using pto::HostTensor;
using pto::Tensor;

namespace {

HostTensor ids(const std::vector<int64_t> &v) {
  HostTensor t(pto::DT_INT64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.set(int64_t(i), double(v[i]));
  return t;
}

/// Runs `k(x, index, y)` on `n` PEs; returns the error's message, or "" when it ran.
template <class K>
std::string run(K &k, int n, const HostTensor &x, const HostTensor &index,
                const std::vector<int64_t> &out_shape, pto::DataType out_dt) {
  std::vector<HostTensor> xs(size_t(n), x), is(size_t(n), index);
  auto ys = support::tensors(n, out_dt, out_shape);
  pto::runtime::World world(n);
  try {
    world.run([&](int pe) { k(xs[size_t(pe)], is[size_t(pe)], ys[size_t(pe)]); });
  } catch (const pto::RuntimeError &e) {
    return e.what();
  }
  return "";
}

const std::vector<int64_t> kBad{7,
                                -1,
                                (int64_t(1) << 32) + 3,
                                (int64_t(1) << 31) + 1,
                                -(int64_t(1) << 32) + 1,
                                int64_t(1) << 40,
                                INT64_MIN};

} // namespace

TEST_CASE("parallel lookups: an index outside the dim throws on n PEs as on 1 PE") {
  const par::Mesh m4({4}, {"a"}), m2({2}, {"a"});
  int line_is = 0, line_emb = 0, line_oh = 0;
  auto is = pto::jit("range_index_select", [&](Tensor x, Tensor w, Tensor y) {
    sharded::tiles();
    line_is = __LINE__ + 1;
    auto r = par::index_select(par::shard(x, m4, {"a", {}}), 0, w);
    pto::assemble(par::full_tensor(r), {0, 0}, y);
  });
  auto emb = pto::jit("range_embedding", [&](Tensor x, Tensor w, Tensor y) {
    sharded::tiles();
    line_emb = __LINE__ + 1;
    auto r = par::embedding(par::shard(x, m2, {"a", {}}), w);
    pto::assemble(par::full_tensor(r), {0, 0}, y);
  });
  auto oh = pto::jit("range_one_hot", [&](Tensor x, Tensor w, Tensor y) {
    sharded::tiles();
    (void)w;
    line_oh = __LINE__ + 1;
    auto r = par::one_hot(par::shard(x, m2, {{}}), 7, {{1, 2}});
    pto::assemble(par::full_tensor(r), {0, 0}, y);
  });
  const HostTensor x = sharded::data({7, 6}, 1);
  for (int64_t bad : kBad) {
    CAPTURE(bad);
    const HostTensor index = ids({1, bad, 2});
    for (int n : {1, 4}) {
      CAPTURE(n);
      const std::string e = run(is, n, x, index, {3, 6}, pto::DT_FP32);
      CHECK(e.find("lookup_range_test.cpp:" + std::to_string(line_is)) != std::string::npos);
      CHECK(e.find("index_select: index " + std::to_string(bad) +
                   " at index[1] is out of range [0, 7)") != std::string::npos);
    }
    for (int n : {1, 2}) {
      CAPTURE(n);
      const std::string e = run(emb, n, x, index, {3, 6}, pto::DT_FP32);
      CHECK(e.find("lookup_range_test.cpp:" + std::to_string(line_emb)) != std::string::npos);
      CHECK(e.find("embedding: id " + std::to_string(bad) + " at ids[1] is out of range [0, 7)") !=
            std::string::npos);
    }
  }
  // One_hot with the class dim split: a class value beyond 2^32 must not light class 3.
  const std::string one =
      run(oh, 1, ids({1, (int64_t(1) << 32) + 3, 2}), ids({0}), {3, 7}, pto::DT_INT64);
  CHECK(one.find("lookup_range_test.cpp:" + std::to_string(line_oh)) != std::string::npos);
  CHECK(one.find("one_hot") != std::string::npos);
  const std::string two =
      run(oh, 2, ids({1, (int64_t(1) << 32) + 3, 2}), ids({0}), {3, 7}, pto::DT_INT64);
  CHECK(two.find("lookup_range_test.cpp:" + std::to_string(line_oh)) != std::string::npos);
  CHECK(two.find("is out of range [0, 7)") != std::string::npos);
}
