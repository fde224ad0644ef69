// allreduce_registered_test.cpp - AUTO's allreduce past the one-shot threshold: registered user
// buffers (pto_rt_allreduce: each PE reduces its block straight from every PE's x into every
// PE's y on shared memory). Against a host reduction in PE order, bit for bit: 2, 3, 4 and 8
// PEs, rows that do not divide by the PE count, fp32 / bf16 / int32, every reduction, in place,
// views, run-time valid shapes, handles that share a buffer, loops and sub-groups; both
// executors.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace dist = pto::distributed;
using dist::Reduction;

namespace {

/// Seeded values: full-mantissa floats in [-100, 100) (the order of a sum shows in the bits),
/// or integers in [-1000, 1000) for integer dtypes.
std::vector<pto::HostTensor> inputs(int n, pto::DataType dt, const std::vector<int64_t> &shape,
                                    uint64_t seed) {
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
      v.back().set(i, pto::is_float(dt)
                          ? static_cast<double>(next() >> 11) / 9007199254740992.0 * 200.0 - 100.0
                          : static_cast<double>(int64_t(next() % 2000) - 1000));
  }
  return v;
}

/// Element i of the reduction of xs in PE order: floats accumulate in float (fp32, and the fp32
/// sums of bf16), integers wrap in 32 bits.
double reference(Reduction op, const std::vector<pto::HostTensor> &xs, int64_t i) {
  if (!pto::is_float(xs[0].dtype())) {
    auto acc = static_cast<uint32_t>(static_cast<int32_t>(xs[0].get(i)));
    for (size_t q = 1; q < xs.size(); ++q) {
      const auto v = static_cast<uint32_t>(static_cast<int32_t>(xs[q].get(i)));
      const auto a = static_cast<int32_t>(acc), b = static_cast<int32_t>(v);
      acc = op == Reduction::SUM    ? acc + v
            : op == Reduction::PROD ? acc * v
            : op == Reduction::MAX  ? static_cast<uint32_t>(std::max(a, b))
                                    : static_cast<uint32_t>(std::min(a, b));
    }
    return static_cast<double>(static_cast<int32_t>(acc));
  }
  auto acc = static_cast<float>(xs[0].get(i));
  for (size_t q = 1; q < xs.size(); ++q) {
    const auto v = static_cast<float>(xs[q].get(i));
    acc = op == Reduction::SUM   ? acc + v
          : op == Reduction::MAX ? std::max(acc, v)
                                 : std::min(acc, v);
  }
  return static_cast<double>(acc); // stored in the dtype: one rounding (bf16)
}

/// The host reference of every element, as a tensor of x's dtype and shape.
pto::HostTensor want_of(Reduction op, const std::vector<pto::HostTensor> &xs) {
  pto::HostTensor want(xs[0].dtype(), xs[0].shape());
  for (int64_t i = 0; i < want.numel(); ++i)
    want.set(i, reference(op, xs, i));
  return want;
}

/// A tensor of its own with t's contents (HostTensor copies share the buffer).
pto::HostTensor copy_of(const pto::HostTensor &t) {
  pto::HostTensor c(t.dtype(), t.shape());
  std::memcpy(c.data(), t.data(), static_cast<size_t>(t.size_bytes()));
  return c;
}

bool same_bits(const pto::HostTensor &a, const pto::HostTensor &b) {
  return a.size_bytes() == b.size_bytes() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size_bytes())) == 0;
}

} // namespace

TEST_CASE("allreduce AUTO, large: 2-8 PEs, uneven rows, dtypes and reductions, bit for bit") {
  struct Case {
    int n;
    pto::DataType dt;
    std::vector<int64_t> shape; // past kAllreduceOneShotMaxBytes: AUTO registers the buffers
    Reduction op;
  };
  const std::vector<Case> cases{{2, pto::DT_FP32, {4099, 5}, Reduction::SUM},
                                {3, pto::DT_FP32, {4099, 5}, Reduction::SUM},
                                {4, pto::DT_BF16, {4099, 9}, Reduction::SUM},
                                {8, pto::DT_FP32, {4099, 5}, Reduction::SUM},
                                {3, pto::DT_INT32, {3001, 7}, Reduction::SUM},
                                {4, pto::DT_FP32, {4099, 5}, Reduction::MAX},
                                {2, pto::DT_BF16, {4099, 9}, Reduction::MAX},
                                {8, pto::DT_INT32, {3001, 7}, Reduction::MIN},
                                {4, pto::DT_INT32, {3001, 7}, Reduction::PROD},
                                {3, pto::DT_FP32, {9, 37, 70}, Reduction::SUM}};
  for (auto mode : support::run_modes())
    for (const Case &c : cases) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(c.n);
      CAPTURE(pto::name(c.dt));
      CAPTURE(dist::name(c.op));
      const size_t rank = c.shape.size();
      auto k = pto::jit(
          "registered",
          [&c, rank](pto::Tensor x, pto::Tensor y) {
            if (rank == 2)
              pto::set_vec_tile_shapes(64, 16);
            else
              pto::set_vec_tile_shapes(4, 8, 16);
            pto::assemble(dist::allreduce(x, c.op), std::vector<pto::SymbolicScalar>(rank, 0), y);
          },
          support::opts(mode));
      const auto xs = inputs(c.n, c.dt, c.shape, 7 + uint64_t(c.n));
      const auto want = want_of(c.op, xs);
      pto::runtime::World world(c.n);
      for (int rep = 0; rep < 2; ++rep) { // the same bits every run
        auto ys = support::tensors(c.n, c.dt, c.shape);
        world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
        for (int p = 0; p < c.n; ++p)
          REQUIRE(same_bits(ys[size_t(p)], want));
      }
    }
}

TEST_CASE("allreduce AUTO, large: in place, a view argument, run-time valid shape, in a loop") {
  const int n = 3;
  const std::vector<int64_t> shape{4100, 6};
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    pto::runtime::World world(n);
    SUBCASE("in place: x is the output") {
      auto k = pto::jit(
          "in_place",
          [](pto::Tensor x) {
            pto::set_vec_tile_shapes(64, 8);
            pto::assemble(dist::allreduce(x, Reduction::SUM), {0, 0}, x);
          },
          support::opts(mode));
      const auto orig = inputs(n, pto::DT_FP32, shape, 3);
      const auto want = want_of(Reduction::SUM, orig);
      std::vector<pto::HostTensor> xs;
      for (const auto &o : orig)
        xs.push_back(copy_of(o));
      world.run([&](int pe) { k(xs[size_t(pe)]); });
      for (int p = 0; p < n; ++p)
        REQUIRE(same_bits(xs[size_t(p)], want));
    }
    SUBCASE("a strided view of an argument, valid rows from a run-time shape, 3 loop passes") {
      for (int64_t vr : {1, 2999, 4096}) {
        CAPTURE(vr);
        auto k = pto::jit(
            "view_valid",
            [](pto::Tensor x, pto::Tensor rows, pto::Tensor y) {
              pto::set_vec_tile_shapes(64, 8);
              auto v = pto::view(x, {4096, 6}, {3, 1}, {.valid_shape = {{rows.shape(0), 5}}});
              for (auto i : pto::loop(0, 3)) {
                (void)i;
                pto::assemble(dist::allreduce(v, Reduction::SUM), {0, 0}, y);
              }
            },
            support::opts(mode, {{}, {{pto::DYNAMIC, 1}}}));
        const auto xs = inputs(n, pto::DT_FP32, {4100, 8}, 11);
        auto ys = support::tensors(n, pto::DT_FP32, {4096, 6});
        for (auto &y : ys)
          y.fill(-1000);
        pto::HostTensor rows(pto::DT_FP32, {vr, 1});
        world.run([&](int pe) { k(xs[size_t(pe)], rows, ys[size_t(pe)]); });
        for (int64_t r = 0; r < 4096; ++r)
          for (int64_t col = 0; col < 6; ++col) {
            double want = -1000;
            if (r < vr && col < 5) {
              float acc = static_cast<float>(xs[0].get((r + 3) * 8 + col + 1));
              for (int q = 1; q < n; ++q)
                acc += static_cast<float>(xs[size_t(q)].get((r + 3) * 8 + col + 1));
              want = acc;
            }
            for (int p = 0; p < n; ++p)
              REQUIRE(ys[size_t(p)].get(r * 6 + col) == want);
          }
      }
    }
  }
}

TEST_CASE("allreduce AUTO, large: handles that share one buffer, and a sub-group") {
  const std::vector<int64_t> shape{5000, 4};
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    pto::runtime::World world(4);
    world.create_group("trio", {3, 0, 1});
    auto k = pto::jit(
        "shared",
        [](pto::Tensor x, pto::Tensor y, const std::string &g) {
          pto::set_vec_tile_shapes(64, 8);
          pto::assemble(dist::allreduce(x, Reduction::SUM, {.group = g}), {0, 0}, y);
        },
        support::opts(mode));
    auto k_in_place = pto::jit(
        "shared_in_place",
        [](pto::Tensor x) {
          pto::set_vec_tile_shapes(64, 8);
          pto::assemble(dist::allreduce(x, Reduction::SUM), {0, 0}, x);
        },
        support::opts(mode));
    const auto one = inputs(1, pto::DT_FP32, shape, 5);
    SUBCASE("every PE passes the same x handle; outputs of their own") {
      const std::vector<pto::HostTensor> xs(4, one[0]);
      const auto want = want_of(Reduction::SUM, xs);
      auto ys = support::tensors(4, pto::DT_FP32, shape);
      world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], "world"); });
      for (int p = 0; p < 4; ++p)
        REQUIRE(same_bits(ys[size_t(p)], want));
    }
    SUBCASE("every PE passes the same handle as x and y (in place, one buffer)") {
      const auto want = want_of(Reduction::SUM, std::vector<pto::HostTensor>(4, one[0]));
      pto::HostTensor buf = copy_of(one[0]);
      world.run([&](int) { k_in_place(buf); });
      REQUIRE(same_bits(buf, want));
    }
    SUBCASE("a sub-group whose members are not in world order") {
      const auto xs = inputs(4, pto::DT_FP32, shape, 9);
      const std::vector<pto::HostTensor> members{xs[3], xs[0], xs[1]}; // group order
      const auto want = want_of(Reduction::SUM, members);
      auto ys = support::tensors(4, pto::DT_FP32, shape);
      world.run([&](int pe) {
        if (pe != 2)
          k(xs[size_t(pe)], ys[size_t(pe)], "trio");
      });
      for (int p : {3, 0, 1})
        REQUIRE(same_bits(ys[size_t(p)], want));
    }
  }
}
