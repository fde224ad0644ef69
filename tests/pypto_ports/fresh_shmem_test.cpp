// fresh_shmem_test.cpp - Issue 13 item 9: a shmem tensor created inside a loop body is fresh in
// every iteration, as in PyPTO. The kernel ports PyPTO's multi-communication-group test
// (reference §7.9) literally, written fresh: per 8-row block, each PE creates one fp32 shmem
// tensor per group, ADD-puts its block into every PE of the group, ADD-signals them, waits until
// the slot equals the group size (no clear, no barrier between iterations) and gets the sum;
// first within its parity group, then within its half. Expected values are plain C++ sums of
// the inputs. Which loops get the protocol: tests/passes/fresh_shmem_protocol_test.cpp.
#include "pto/pto.h"
#include "pto/runtime/world.h"
#include "pto/shmem_inline.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {

constexpr int64_t kBlock = 8;

/// One all-reduce stage of the PyPTO test: ADD-put `in` into every PE of `group`, ADD-signal
/// each, wait until my slot equals the group's size, get the sum (valid rows `rows`).
pto::Tensor stage(const pto::Tensor &in, const std::string &group, int n,
                  const pto::SymbolicScalar &rows, int64_t hidden) {
  auto buf = dist::create_shmem_tensor(group, n, pto::DT_FP32, {kBlock, hidden});
  std::vector<pto::Tensor> sent;
  for (int p = 0; p < n; ++p) {
    auto put = dist::shmem_put(in, {0, 0}, buf, p, {.put_op = dist::AtomicType::ADD});
    sent.push_back(
        dist::shmem_signal(buf, 0, 1, p, {.sig_op = dist::AtomicType::ADD, .pred = {put}}));
  }
  auto ready = dist::shmem_wait_until(buf, 0, n, {.pred = sent});
  return dist::shmem_get(buf, dist::my_symbolic_pe(group), {kBlock, hidden}, {0, 0},
                         {.valid_shape = {{rows, hidden}}, .pred = {ready}});
}

double input(int pe, int64_t i) { return static_cast<double>((i * 5 + pe * 11) % 17 - 8); }

} // namespace

TEST_CASE("fresh shmem: PyPTO's multi-group allreduce ported literally, no clear or barrier") {
  const int n = support::world_pes(4);
  if (n != 4)
    return; // the groups are for 4 PEs
  const int64_t batch = 13, hidden = 16;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "multi_group_literal",
        [](pto::Tensor x, pto::Tensor y, const std::string &group_a, const std::string &group_b) {
          const int64_t rows_total = x.shape(0).concrete(), h = x.shape(1).concrete();
          pto::set_vec_tile_shapes(kBlock, h);
          for (auto i : pto::loop(0, (rows_total + kBlock - 1) / kBlock)) {
            auto rows = pto::min(pto::SymbolicScalar(rows_total) - i * kBlock, kBlock);
            auto xb = pto::view(x, {kBlock, h}, {i * kBlock, 0}, {.valid_shape = {{rows, h}}});
            auto a = stage(xb, group_a, 2, rows, h);
            auto b = stage(a, group_b, 2, rows, h);
            pto::assemble(b, {i * kBlock, 0}, y);
          }
        },
        support::opts(mode));
    auto xs = support::tensors(n, pto::DT_FP32, {batch, hidden});
    auto ys = support::tensors(n, pto::DT_FP32, {batch, hidden});
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < batch * hidden; ++i)
        xs[size_t(p)].set(i, input(p, i));
    auto world = support::make_world(n, {.deadlock_timeout_ms = 10000});
    world->create_group("A_even", {0, 2});
    world->create_group("A_odd", {1, 3});
    world->create_group("B_low", {0, 1});
    world->create_group("B_high", {2, 3});
    for (int rep = 0; rep < 2; ++rep) { // a second call sees fresh tensors too
      for (auto &y : ys)
        y.fill(-1);
      world->run([&](int pe) {
        k(xs[size_t(pe)], ys[size_t(pe)], std::string(pe % 2 ? "A_odd" : "A_even"),
          std::string(pe < 2 ? "B_low" : "B_high"));
      });
      support::share(ys);
      // Stage A sums over the parity group, stage B over the half: every PE ends with the sum
      // of all four inputs (halves {0,1} and {2,3} each hold one PE of each parity).
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < batch * hidden; ++i) {
          CAPTURE(p);
          CAPTURE(i);
          REQUIRE(ys[size_t(p)].get(i) == input(0, i) + input(1, i) + input(2, i) + input(3, i));
        }
    }
  }
}
