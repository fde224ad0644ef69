// kernel_call_cache_test.cpp - A kernel call's fast path (codegen/driver/kernel.cpp: the recent
// calls of each thread, matched on kernel, world and groups, argument dtypes and shapes, and
// constants) must never run a program traced for other arguments: shapes, dtypes and constants
// that alternate, more signatures than the per-thread list holds, a kernel destroyed and another
// made in its place, Worlds made one after another and PEs that call with different shapes at
// once. Expected values are plain loops over the inputs.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using Fn2 = std::function<void(pto::Tensor, pto::Tensor)>;

pto::HostTensor filled(pto::DataType dt, std::vector<int64_t> shape, double scale) {
  pto::HostTensor t(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(i % 17) * scale);
  return t;
}

/// y == x * factor at every element (exact: small integers times small integers).
bool scaled(const pto::HostTensor &x, const pto::HostTensor &y, double factor) {
  if (x.numel() != y.numel())
    return false;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (y.get(i) != x.get(i) * factor)
      return false;
  return true;
}

Fn2 times(double factor) {
  return [factor](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    pto::assemble(pto::mul(x, factor), {0, 0}, y);
  };
}

} // namespace

TEST_CASE("kernel call cache: alternating shapes, dtypes and constants each get their program") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "scale_by",
        [](pto::Tensor x, pto::Tensor y, int64_t f) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::mul(x, f), {0, 0}, y);
        },
        support::opts(mode));
    // Six signatures: more than the per-thread list of recent calls holds.
    struct Case {
      pto::DataType dt;
      std::vector<int64_t> shape;
      int64_t f;
    };
    const std::vector<Case> cases = {{pto::DT_FP32, {4, 8}, 2},  {pto::DT_FP32, {8, 8}, 2},
                                     {pto::DT_FP32, {4, 8}, 3},  {pto::DT_INT32, {4, 8}, 2},
                                     {pto::DT_FP32, {4, 16}, 2}, {pto::DT_FP32, {12, 8}, 5}};
    for (int round = 0; round < 3; ++round)
      for (size_t c = 0; c < cases.size(); ++c) {
        CAPTURE(round);
        CAPTURE(c);
        auto x = filled(cases[c].dt, cases[c].shape, 1 + double(round));
        pto::HostTensor y(cases[c].dt, cases[c].shape);
        k(x, y, cases[c].f);
        REQUIRE(scaled(x, y, double(cases[c].f)));
      }
    CHECK(k.stats().traces == int(cases.size()));
    CHECK(k.stats().calls == int64_t(3 * cases.size()));
  }
}

TEST_CASE("kernel call cache: a kernel made where a destroyed one lived runs its own program") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto x = filled(pto::DT_FP32, {4, 8}, 1);
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    std::optional<pto::Kernel<Fn2>> k;
    for (int i = 1; i <= 6; ++i) {
      // Same name, same arguments, same thread: only the kernel object differs (and may reuse
      // the storage and the core's address of the one before).
      k.emplace(pto::jit("replaced", times(double(i)), support::opts(mode)));
      (*k)(x, y);
      REQUIRE(scaled(x, y, double(i)));
      (*k)(x, y);
      REQUIRE(scaled(x, y, double(i)));
      k.reset();
    }
  }
}

TEST_CASE("kernel call cache: Worlds of other sizes and PEs with other shapes at once") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    // y = x * (number of PEs): the program depends on the world's size.
    auto k = pto::jit(
        "by_world",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::mul(x, double(pto::distributed::n_pes())), {0, 0}, y);
        },
        support::opts(mode));
    for (int n : {2, 3, 2, 4, 3}) {
      CAPTURE(n);
      pto::runtime::World world(n);
      // Odd PEs pass [8, 8], even ones [4, 8]: two signatures in flight in one run.
      std::vector<pto::HostTensor> xs, ys;
      for (int pe = 0; pe < n; ++pe) {
        const std::vector<int64_t> shape =
            pe % 2 ? std::vector<int64_t>{8, 8} : std::vector<int64_t>{4, 8};
        xs.push_back(filled(pto::DT_FP32, shape, 1 + pe));
        ys.emplace_back(pto::DT_FP32, shape);
      }
      for (int rep = 0; rep < 3; ++rep) {
        world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
        for (int pe = 0; pe < n; ++pe)
          REQUIRE(scaled(xs[size_t(pe)], ys[size_t(pe)], double(n)));
      }
    }
  }
}
