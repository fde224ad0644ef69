// litmus_test.cpp - Litmus tests of the memory model of docs/distributed.md ("Memory model"), in
// both run modes and on both transports (threads here; test_mpi compiles this file too and runs
// it on the MPI backend, one PE per rank: support/pe_world.h): message passing (data then
// signal: put_signal, and put + signal with the put's token), put-fence-put to one PE, quiet
// before a signal to another PE, and store buffering with quiet. PE p's partner is
// p + n/2 (mod n), so the pairwise tests run on any even PE count. Each runs PTO_LITMUS_ITERS
// iterations inside one kernel (default 200 to keep CI short; the acceptance run is
// PTO_LITMUS_ITERS=100000) and counts the forbidden outcomes, which must be 0. The values
// written in iteration i are i + 1, so a stale read is recognisable.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {

constexpr pto::runtime::WorldOptions kWorldOpts{.deadlock_timeout_ms = 20000};

int64_t iterations() { return int64_t(support::env_u64("PTO_LITMUS_ITERS", 200)); }

/// [iters, 8] int32 with row i holding i + 1 (what iteration i writes).
pto::HostTensor rows(int64_t iters) {
  pto::HostTensor t(pto::DT_INT32, {iters, 8});
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t row = i / 8;
    t.set(i, double(row + 1));
  }
  return t;
}

std::vector<pto::HostTensor> outputs(int n, int64_t iters) {
  std::vector<pto::HostTensor> v;
  for (int i = 0; i < n; ++i)
    v.emplace_back(pto::DT_INT32, std::vector<int64_t>{iters, 8});
  return v;
}

/// The PE count of the pairwise tests: 2 on threads, the number of ranks on MPI; 0 (the test
/// is skipped, with a message) for an odd rank count, which cannot be paired.
int pair_pes() {
  const int n = support::world_pes(2);
  if (n % 2 != 0)
    MESSAGE("skipped: the pairwise litmus tests need an even number of PEs, got ", n);
  return n % 2 == 0 ? n : 0;
}

/// Row i of iteration i's view of `x` ([1, 8]).
pto::Tensor row_of(const pto::Tensor &x, const pto::SymbolicScalar &i) {
  return pto::view(x, {1, 8}, {i, 0});
}

} // namespace

TEST_CASE("litmus MP: data then signal, the signal is never seen before the data") {
  const int64_t iters = iterations();
  for (auto mode : support::run_modes()) {
    for (bool one_op : {true, false}) {
      const std::string mode_name = support::mode_name(mode);
      CAPTURE(mode_name);
      CAPTURE(one_op);
      // Both PEs send to each other at once: the data (row i) and its signal, as one put_signal
      // or as a put and a signal ordered by the put's token; the receiver waits, reads, acks.
      auto k = pto::jit(
          "litmus_mp",
          [one_op](pto::Tensor x, pto::Tensor y, int pes) {
            pto::set_vec_tile_shapes(1, 8);
            auto buf = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
            auto ack = dist::create_shmem_signal("world", pes);
            auto me = dist::my_symbolic_pe("world");
            auto peer = (me + pes / 2) % pes;
            for (auto i : pto::loop(x.shape()[0])) {
              auto sent = one_op
                              ? dist::shmem_put_signal(row_of(x, i), {0, 0}, buf, peer, 1)
                              : dist::shmem_signal(
                                    buf, peer, 1, peer,
                                    {.pred = {dist::shmem_put(row_of(x, i), {0, 0}, buf, peer)}});
              auto got = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true});
              auto [tok, data] = dist::shmem_get_with_token(buf, me, {.pred = {got}});
              pto::assemble(data, {i, 0}, y);
              auto acked = dist::shmem_signal(ack, peer, 1, peer, {.pred = {tok}});
              dist::shmem_wait_until(ack, me, 1, {.clear_signal = true, .pred = {acked, sent}});
            }
          },
          support::opts(mode));
      pto::HostTensor x = rows(iters);
      const int n = pair_pes();
      if (n == 0)
        return;
      auto ys = outputs(n, iters);
      auto world = support::make_world(n, kWorldOpts);
      world->run([&](int pe) { k(x, ys[size_t(pe)], n); });
      support::share(ys);
      int64_t violations = 0;
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < x.numel(); ++i)
          violations += ys[size_t(p)].get(i) != x.get(i) ? 1 : 0;
      CHECK(violations == 0);
    }
  }
}

TEST_CASE("litmus put-fence-put: two puts to one PE, fenced, arrive in order") {
  const int64_t iters = iterations();
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Each PE puts A then (fence) B into its peer while reading its own B then A. Forbidden:
    // B of this iteration seen with A of an older one.
    auto k = pto::jit(
        "litmus_fence",
        [](pto::Tensor x, pto::Tensor ya, pto::Tensor yb, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto a = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
          auto b = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
          auto bar = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          auto peer = (me + pes / 2) % pes;
          for (auto i : pto::loop(x.shape()[0])) {
            auto pa = dist::shmem_put(row_of(x, i), {0, 0}, a, peer);
            auto f = dist::shmem_fence({.pred = {pa}});
            auto pb = dist::shmem_put(row_of(x, i), {0, 0}, b, peer, {.pred = {f}});
            auto [tb, rb] = dist::shmem_get_with_token(b, me);
            auto [ta, ra] = dist::shmem_get_with_token(a, me, {.pred = {tb}});
            pto::assemble(rb, {i, 0}, yb);
            pto::assemble(ra, {i, 0}, ya);
            dist::shmem_barrier_all(bar, {.pred = {pb, ta, ya, yb}});
          }
        },
        support::opts(mode));
    pto::HostTensor x = rows(iters);
    const int n = pair_pes();
    if (n == 0)
      return;
    auto ya = outputs(n, iters), yb = outputs(n, iters);
    auto world = support::make_world(n, kWorldOpts);
    world->run([&](int pe) { k(x, ya[size_t(pe)], yb[size_t(pe)], n); });
    support::share(ya);
    support::share(yb);
    int64_t violations = 0;
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < iters; ++i)
        violations += ya[size_t(p)].get(i * 8) < yb[size_t(p)].get(i * 8) ? 1 : 0;
    CHECK(violations == 0);
  }
}

TEST_CASE("litmus quiet: data to one PE, quiet, then a signal to another PE") {
  const int64_t iters = iterations();
  const int n = support::world_pes(3);
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // A ring: PE p puts row i into D on PE p + 1, quiets, then signals PE p + 2, which reads D
    // from PE p + 1. Forbidden: PE p + 2 reading an older row.
    auto k = pto::jit(
        "litmus_quiet",
        [](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto d = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
          auto flag = dist::create_shmem_signal("world", pes);
          auto bar = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          for (auto i : pto::loop(x.shape()[0])) {
            auto put = dist::shmem_put(row_of(x, i), {0, 0}, d, (me + 1) % pes);
            auto q = dist::shmem_quiet({.pred = {put}});
            auto s = dist::shmem_signal(flag, (me + 2) % pes, 1, (me + 2) % pes, {.pred = {q}});
            auto w = dist::shmem_wait_until(flag, me, 1, {.clear_signal = true});
            auto [tok, data] = dist::shmem_get_with_token(d, (me + pes - 1) % pes, {.pred = {w}});
            pto::assemble(data, {i, 0}, y);
            dist::shmem_barrier_all(bar, {.pred = {s, tok, y}});
          }
        },
        support::opts(mode));
    pto::HostTensor x = rows(iters);
    auto ys = outputs(n, iters);
    auto world = support::make_world(n, kWorldOpts);
    world->run([&](int pe) { k(x, ys[size_t(pe)], n); });
    support::share(ys);
    int64_t violations = 0;
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < x.numel(); ++i)
        violations += ys[size_t(p)].get(i) != x.get(i) ? 1 : 0;
    CHECK(violations == 0);
  }
}

TEST_CASE("litmus SB: put, quiet, read: the two PEs never both read the old value") {
  const int64_t iters = iterations();
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Store buffering: each PE puts row i into X on its peer, quiets, then reads its own X.
    // Forbidden: both PEs reading an older row in the same iteration.
    auto k = pto::jit(
        "litmus_sb",
        [](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto xs = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
          auto bar = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          for (auto i : pto::loop(x.shape()[0])) {
            auto put = dist::shmem_put(row_of(x, i), {0, 0}, xs, (me + pes / 2) % pes);
            auto q = dist::shmem_quiet({.pred = {put}});
            auto [tok, r] = dist::shmem_get_with_token(xs, me, {.pred = {q}});
            pto::assemble(r, {i, 0}, y);
            dist::shmem_barrier_all(bar, {.pred = {tok, y}});
          }
        },
        support::opts(mode));
    pto::HostTensor x = rows(iters);
    const int n = pair_pes();
    if (n == 0)
      return;
    auto ys = outputs(n, iters);
    auto world = support::make_world(n, kWorldOpts);
    world->run([&](int pe) { k(x, ys[size_t(pe)], n); });
    support::share(ys);
    int64_t violations = 0;
    for (int p = 0; p < n / 2; ++p) // the pair (p, p + n/2)
      for (int64_t i = 0; i < iters; ++i)
        violations += ys[size_t(p)].get(i * 8) != double(i + 1) &&
                              ys[size_t(p) + size_t(n / 2)].get(i * 8) != double(i + 1)
                          ? 1
                          : 0;
    CHECK(violations == 0);
  }
}
