// shmem_sync_test.cpp - The rest of the OpenSHMEM 1.5 model (pto/distributed.h) through whole
// kernels on 1-4 PEs in both run modes: fetching AMOs (every old value exactly once, swap chains,
// one compare_swap winner), put_signal with wait_until_all over multi-tile windows, the wait
// sets with status masks and empty sets, test (never blocks), fence and quiet tokens, then the
// typed errors. Expected values come from counting and set arithmetic on the host.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace dist = pto::distributed;
using dist::AtomicType;

namespace {

constexpr pto::runtime::WorldOptions kWorldOpts{.deadlock_timeout_ms = 10000};

using support::tensors;

} // namespace

TEST_CASE("shmem_atomic_fetch_add: PEs adding 1 to one word get every old value exactly once") {
  const int n = 4, k = 40;
  for (auto mode : support::run_modes()) {
    for (auto dt : {pto::DT_INT32, pto::DT_INT64, pto::DT_FP32}) {
      const std::string mode_name = support::mode_name(mode), dt_name = pto::name(dt);
      CAPTURE(mode_name);
      CAPTURE(dt_name);
      // Every PE adds 1 k times to word [0, 3] of PE 0 and keeps each old value; after a
      // barrier every PE reads the word. fp32 counts exactly (n * k < 2^24).
      auto kern = pto::jit(
          "fetch_add",
          [dt](pto::Tensor olds, pto::Tensor final_value, int pes) {
            pto::set_vec_tile_shapes(1, 8);
            auto w = dist::create_shmem_tensor("world", pes, dt, {1, 8});
            auto bar = dist::create_shmem_signal("world", pes);
            std::vector<pto::Tensor> done;
            for (auto i : pto::loop(k)) {
              auto r = dist::shmem_atomic_fetch_add(w, {0, 3}, 1, 0);
              pto::assemble(r.old, {i, 0}, olds);
            }
            auto b = dist::shmem_barrier_all(bar, {.pred = {olds}});
            pto::assemble(dist::shmem_get(w, 0, {.pred = {b}}), {0, 0}, final_value);
          },
          support::opts(mode));
      auto olds = tensors(n, dt, {k, 1}), finals = tensors(n, dt, {1, 8});
      pto::runtime::World world(n, kWorldOpts);
      world.run([&](int pe) { kern(olds[size_t(pe)], finals[size_t(pe)], n); });
      std::multiset<double> seen;
      for (int p = 0; p < n; ++p) {
        for (int64_t i = 0; i < k; ++i)
          seen.insert(olds[size_t(p)].get(i));
        // One PE's own old values increase (its adds are in program order).
        for (int64_t i = 1; i < k; ++i)
          CHECK(olds[size_t(p)].get(i) > olds[size_t(p)].get(i - 1));
        CHECK(finals[size_t(p)].get(3) == double(n * k));
        CHECK(finals[size_t(p)].get(0) == 0);
      }
      std::multiset<double> want;
      for (int v = 0; v < n * k; ++v)
        want.insert(double(v));
      CHECK(seen == want);
    }
  }
}

TEST_CASE("shmem_atomic_swap and compare_swap: a swap chain and exactly one winner") {
  const int n = 4;
  for (auto mode : support::run_modes()) {
    for (auto dt : {pto::DT_INT32, pto::DT_INT64, pto::DT_FP32}) {
      const std::string mode_name = support::mode_name(mode), dt_name = pto::name(dt);
      CAPTURE(mode_name);
      CAPTURE(dt_name);
      const bool cswap = dt != pto::DT_FP32;
      // Swap: PE p swaps p + 1 into word [1, 2] of PE 1; the old values and the final value are
      // then 0, 1, ..., n, each once (a chain). compare_swap: PE p tries 0 -> p + 1 on word
      // [0, 0] of PE 0: exactly one PE sees 0, the others see the winner's value.
      auto kern = pto::jit(
          "swaps",
          [dt, cswap](pto::Tensor out, int pes) {
            pto::set_vec_tile_shapes(2, 4);
            auto w = dist::create_shmem_tensor("world", pes, dt, {2, 4});
            auto bar = dist::create_shmem_signal("world", pes);
            auto me = dist::my_symbolic_pe("world");
            auto s = dist::shmem_atomic_swap(w, {1, 2}, me + 1, 1);
            pto::assemble(s.old, {0, 0}, out);
            std::vector<pto::Tensor> toks = {s.token};
            if (cswap) {
              auto c = dist::shmem_atomic_compare_swap(w, {0, 0}, 0, me + 1, 0);
              pto::assemble(c.old, {0, 1}, out);
              toks.push_back(c.token);
            }
            auto b = dist::shmem_barrier_all(bar, {.pred = {dist::nop(toks), out}});
            auto fin1 = dist::shmem_get(w, 1, {.pred = {b}});
            pto::assemble(pto::view(fin1, {1, 1}, {1, 2}), {0, 2}, out);
            auto fin0 = dist::shmem_get(w, 0, {.pred = {b}});
            pto::assemble(pto::view(fin0, {1, 1}, {0, 0}), {0, 3}, out);
          },
          support::opts(mode));
      auto outs = tensors(n, dt, {1, 4});
      pto::runtime::World world(n, kWorldOpts);
      for (int rep = 0; rep < 3; ++rep) {
        world.run([&](int pe) { kern(outs[size_t(pe)], n); });
        std::multiset<double> chain;
        for (int p = 0; p < n; ++p)
          chain.insert(outs[size_t(p)].get(0));
        chain.insert(outs[0].get(2));
        std::multiset<double> want;
        for (int v = 0; v <= n; ++v)
          want.insert(double(v));
        CHECK(chain == want);
        if (cswap) {
          int winners = 0;
          const double won = outs[0].get(3);
          CHECK(won >= 1);
          CHECK(won <= n);
          for (int p = 0; p < n; ++p) {
            const double old = outs[size_t(p)].get(1);
            winners += old == 0 ? 1 : 0;
            if (old == 0)
              CHECK(double(p + 1) == won); // the winner's value is the final one
            else
              CHECK(old == won);
            CHECK(outs[size_t(p)].get(3) == won);
          }
          CHECK(winners == 1);
        }
      }
    }
  }
}

TEST_CASE("AMOs on signal words: tickets land on the slot a wait sees, one lock winner") {
  const int n = 4;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Every PE takes a ticket (fetch_add 1 on row 0 of `count` on PE 0) and tries to take the
    // lock (compare_swap 0 -> me + 1 on row 1 of `count` on PE 0, then swap it back to
    // itself); PE 0's wait for n tickets on that very slot must complete (AMOs wake waiters).
    auto kern = pto::jit(
        "signal_amo",
        [](pto::Tensor out, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto count = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          auto ticket = dist::shmem_atomic_fetch_add({count, 0}, 1, 0);
          pto::assemble(ticket.old, {0, 0}, out);
          auto lock = dist::shmem_atomic_compare_swap({count, 1}, 0, me + 1, 0);
          pto::assemble(lock.old, {0, 1}, out);
          for (auto _ : pto::loop(1)) {
            (void)_;
            if (pto::cond(me == 0)) {
              auto all = dist::shmem_wait_until(count, 0, pes, {.pred = {ticket.token}});
              auto peek = dist::shmem_atomic_fetch_add({count, 1}, 0, 0, {.pred = {all}});
              pto::assemble(peek.old, {0, 2}, out);
            }
          }
        },
        support::opts(mode));
    auto outs = tensors(n, pto::DT_INT32, {1, 3});
    pto::runtime::World world(n, kWorldOpts);
    world.run([&](int pe) { kern(outs[size_t(pe)], n); });
    std::set<double> tickets;
    int winners = 0;
    for (int p = 0; p < n; ++p) {
      tickets.insert(outs[size_t(p)].get(0));
      winners += outs[size_t(p)].get(1) == 0 ? 1 : 0;
    }
    CHECK(tickets == std::set<double>{0, 1, 2, 3});
    CHECK(winners == 1);
    const double owner = outs[0].get(2); // the lock word holds the winner's me + 1
    for (int p = 0; p < n; ++p)
      CHECK(outs[size_t(p)].get(1) == (double(p + 1) == owner ? 0.0 : owner));
  }
}

TEST_CASE("shmem_put_signal + shmem_wait_until_all: an allgather over multi-tile windows") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // PE me put_signals rows [0, valid) of x (valid = me + 1 of 3; tile (1, 8): 3 tiles per
    // block, the empty ones only signal) into block me of every PE p, row p. Every PE waits for
    // all blocks with one wait_until_all, then reads them; rows past a block's valid part stay 0.
    auto kern = pto::jit(
        "put_signal_allgather",
        [](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {3 * pes, 8});
          auto me = dist::my_symbolic_pe("world");
          auto src = pto::view(x, {3, 8}, {0, 0},
                               {.valid_shape = std::vector<pto::SymbolicScalar>{me + 1, 8}});
          std::vector<pto::Tensor> sent;
          for (int p = 0; p < pes; ++p)
            sent.push_back(dist::shmem_put_signal(src, {me * 3, 0}, buf, p, 1));
          std::vector<dist::SignalSlot> blocks;
          for (int q = 0; q < pes; ++q)
            blocks.push_back({dist::shmem_view(buf, {3, 8}, {3 * q, 0}), me});
          auto all = dist::shmem_wait_until_all(blocks, 1, {.pred = {dist::nop(sent)}});
          pto::assemble(dist::shmem_get(buf, me, {.pred = {all}}), {0, 0}, y);
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_FP32, {3, 8}), ys = tensors(n, pto::DT_FP32, {3 * n, 8});
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < 24; ++i)
        xs[size_t(p)].set(i, 100.0 * p + double(i) + 1);
    pto::runtime::World world(n, kWorldOpts);
    for (int rep = 0; rep < 2; ++rep) {
      world.run([&](int pe) { kern(xs[size_t(pe)], ys[size_t(pe)], n); });
      for (int p = 0; p < n; ++p)
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < 24; ++i) {
            const double want = i / 8 < q + 1 ? 100.0 * q + double(i) + 1 : 0.0;
            REQUIRE(ys[size_t(p)].get(q * 24 + i) == want);
          }
    }
  }
}

TEST_CASE("shmem_wait_until_any/some/all: status masks, empty sets, clear; shmem_test") {
  const int n = 4;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Every PE p SETs 1 into row p of `flags` on every PE. Then, on every PE (out columns):
    //  0  any, rows 0 and 1 excluded            -> 2
    //  1  some, row 1 excluded: count           -> 3, indices 2-4 -> 0, 2, 3, col 5 -> -1
    //  6  any, every row excluded               -> -1 (at once)
    //  7  some, every row excluded: count       -> 0 (at once); all of them excluded returns
    //  8  any over no element                   -> -1;  9  some over no element: count -> 0
    //  10 test row 0 == 1 -> 1;  11 test row 0 == 2 -> 0 (never blocks); 12 test of a signal
    //     object nobody signals -> 0
    //  13 any with clear, rows 0, 1 excluded     -> 2, then 14 test row 2 == 0 -> 1 (consumed)
    //     and 15 test row 3 == 1 -> 1 (kept)
    auto kern = pto::jit(
        "wait_sets",
        [](pto::Tensor masks, pto::Tensor out, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto flags = dist::create_shmem_signal("world", pes);
          auto quiet = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          auto mask = [&](int j) { return pto::view(masks, {1, 4}, {j, 0}); };
          auto rows = dist::signal_rows(flags);
          auto sig = dist::shmem_signal_all(flags, me, 1);
          auto all = dist::shmem_wait_until_all(rows, 1, {.pred = {sig}});
          auto any = dist::shmem_wait_until_any(rows, 1, {.status = mask(0), .pred = {all}});
          pto::assemble(any.index, {0, 0}, out);
          auto some = dist::shmem_wait_until_some(rows, 1, {.status = mask(1), .pred = {all}});
          pto::assemble(some.count, {0, 1}, out);
          pto::assemble(some.indices, {0, 2}, out);
          auto none = dist::shmem_wait_until_any(rows, 1, {.status = mask(2)});
          pto::assemble(none.index, {0, 6}, out);
          auto some0 = dist::shmem_wait_until_some(rows, 1, {.status = mask(2)});
          pto::assemble(some0.count, {0, 7}, out);
          dist::shmem_wait_until_all(rows, 7, {.status = mask(2)});
          pto::assemble(dist::shmem_wait_until_any({}, 1).index, {0, 8}, out);
          pto::assemble(dist::shmem_wait_until_some({}, 1).count, {0, 9}, out);
          dist::shmem_wait_until_all({}, 1);
          pto::assemble(dist::shmem_test(flags, 0, 1).holds, {0, 10}, out);
          pto::assemble(dist::shmem_test(flags, 0, 2).holds, {0, 11}, out);
          pto::assemble(dist::shmem_test(quiet, 0, 1).holds, {0, 12}, out);
          auto taken = dist::shmem_wait_until_any(
              rows, 1, {.clear_signal = true, .status = mask(0), .pred = {some.token}});
          pto::assemble(taken.index, {0, 13}, out);
          pto::assemble(dist::shmem_test(flags, 2, 0, {.pred = {taken.token}}).holds, {0, 14}, out);
          pto::assemble(dist::shmem_test(flags, 3, 1, {.pred = {taken.token}}).holds, {0, 15}, out);
        },
        support::opts(mode));
    pto::HostTensor masks(pto::DT_INT32, {3, 4});
    const int m[3][4] = {{1, 5, 0, 0}, {0, -1, 0, 0}, {1, 1, 1, 1}};
    for (int j = 0; j < 3; ++j)
      for (int c = 0; c < 4; ++c)
        masks.set(j * 4 + c, m[j][c]);
    auto outs = tensors(n, pto::DT_INT32, {1, 16});
    pto::runtime::World world(n, kWorldOpts);
    const std::vector<double> want = {2, 3, 0, 2, 3, -1, -1, 0, -1, 0, 1, 0, 0, 2, 1, 1};
    for (int rep = 0; rep < 2; ++rep) {
      world.run([&](int pe) { kern(masks, outs[size_t(pe)], n); });
      for (int p = 0; p < n; ++p) {
        CAPTURE(p);
        std::vector<double> got;
        for (int64_t i = 0; i < 16; ++i)
          got.push_back(outs[size_t(p)].get(i));
        CHECK(got == want);
      }
    }
  }
}

TEST_CASE("shmem_test_all/any/some: one look, never blocking; status masks, empty sets, clear") {
  const int n = 4;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Every PE p SETs 1 into row p of `flags` on every PE and waits for all rows. Then (out
    // columns): 0 test_all == 1 -> 1;  1 test_all == 2 -> 0;  2 test_all == 2, every row
    // excluded -> 1;  3 test_all over no element -> 1;  4 test_any == 2 -> -1;  5 test_any,
    // rows 0 and 1 excluded -> 2;  6 test_any over no element -> -1;  7 test_some, row 1
    // excluded: count -> 3, 8-11 indices -> 0, 2, 3, -1;  12 test_some == 2: count -> 0,
    // 13 its first index -> -1;  14 test_any of an object nobody signals -> -1;  15 test_any
    // with clear, rows 0, 1 excluded -> 2, then 16 shmem_test row 2 == 0 -> 1 (consumed) and
    // 17 row 3 == 1 -> 1 (kept).
    auto kern = pto::jit(
        "test_sets",
        [](pto::Tensor masks, pto::Tensor out, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto flags = dist::create_shmem_signal("world", pes);
          auto quiet = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          auto mask = [&](int j) { return pto::view(masks, {1, 4}, {j, 0}); };
          auto rows = dist::signal_rows(flags);
          auto sig = dist::shmem_signal_all(flags, me, 1);
          auto all = dist::shmem_wait_until_all(rows, 1, {.pred = {sig}});
          pto::assemble(dist::shmem_test_all(rows, 1, {.pred = {all}}).holds, {0, 0}, out);
          pto::assemble(dist::shmem_test_all(rows, 2, {.pred = {all}}).holds, {0, 1}, out);
          pto::assemble(dist::shmem_test_all(rows, 2, {.status = mask(2)}).holds, {0, 2}, out);
          pto::assemble(dist::shmem_test_all({}, 1).holds, {0, 3}, out);
          pto::assemble(dist::shmem_test_any(rows, 2, {.pred = {all}}).index, {0, 4}, out);
          pto::assemble(dist::shmem_test_any(rows, 1, {.status = mask(0), .pred = {all}}).index,
                        {0, 5}, out);
          pto::assemble(dist::shmem_test_any({}, 1).index, {0, 6}, out);
          auto some = dist::shmem_test_some(rows, 1, {.status = mask(1), .pred = {all}});
          pto::assemble(some.count, {0, 7}, out);
          pto::assemble(some.indices, {0, 8}, out);
          auto none = dist::shmem_test_some(rows, 2, {.pred = {all}});
          pto::assemble(none.count, {0, 12}, out);
          pto::assemble(pto::view(none.indices, {1, 1}, {0, 0}), {0, 13}, out);
          pto::assemble(dist::shmem_test_any(dist::signal_rows(quiet), 1).index, {0, 14}, out);
          auto taken = dist::shmem_test_any(
              rows, 1, {.clear_signal = true, .status = mask(0), .pred = {some.token, all}});
          pto::assemble(taken.index, {0, 15}, out);
          pto::assemble(dist::shmem_test(flags, 2, 0, {.pred = {taken.token}}).holds, {0, 16}, out);
          pto::assemble(dist::shmem_test(flags, 3, 1, {.pred = {taken.token}}).holds, {0, 17}, out);
        },
        support::opts(mode));
    pto::HostTensor masks(pto::DT_INT32, {3, 4});
    const int m[3][4] = {{1, 5, 0, 0}, {0, -1, 0, 0}, {1, 1, 1, 1}};
    for (int j = 0; j < 3; ++j)
      for (int c = 0; c < 4; ++c)
        masks.set(j * 4 + c, m[j][c]);
    auto outs = tensors(n, pto::DT_INT32, {1, 18});
    pto::runtime::World world(n, kWorldOpts);
    const std::vector<double> want = {1, 0, 1, 1, -1, 2, -1, 3, 0, 2, 3, -1, 0, -1, -1, 2, 1, 1};
    world.run([&](int pe) { kern(masks, outs[size_t(pe)], n); });
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      std::vector<double> got;
      for (int64_t i = 0; i < 18; ++i)
        got.push_back(outs[size_t(p)].get(i));
      CHECK(got == want);
    }
  }
}

TEST_CASE("shmem_wait_until_some reports every element that holds; fence and quiet tokens") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // PE p puts its id + 1 into word p of PE 0's `box`, fences, ADDs 1 to row p on PE 0, and
    // quiets. PE 0 loops: some over the rows not yet seen (status = rows seen), marking the rows
    // it got, until every row was seen; every row is reported exactly once, after its data.
    auto kern = pto::jit(
        "some_loop",
        [](pto::Tensor x, pto::Tensor seen, pto::Tensor got, int pes) {
          auto box = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
          auto flags = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          pto::set_vec_tile_shapes(1, 1);
          auto put = dist::shmem_put(x, {0, me}, box, 0);
          auto f = dist::shmem_fence({.pred = {put}});
          auto s = dist::shmem_signal(flags, me, 1, 0, {.sig_op = AtomicType::ADD, .pred = {f}});
          dist::shmem_quiet({.pred = {s}});
          for (auto _ : pto::loop(1)) {
            (void)_;
            if (pto::cond(me == 0)) {
              for (auto round : pto::loop(pes)) {
                (void)round;
                auto r = dist::shmem_wait_until_some(dist::signal_rows(flags), 1,
                                                     {.clear_signal = true, .status = seen});
                for (auto i : pto::loop(r.count.at({0, 0}))) {
                  auto row = r.indices.at({0, i});
                  pto::assemble(pto::full({1, 1}, 1, pto::DT_INT32), {0, row}, seen);
                  pto::assemble(dist::shmem_get(dist::shmem_view(box, {1, 1}, {0, row}), 0),
                                {0, row}, got);
                }
              }
            }
          }
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_INT32, {1, 1}), seen = tensors(n, pto::DT_INT32, {1, n}),
         got = tensors(n, pto::DT_INT32, {1, n});
    for (int p = 0; p < n; ++p)
      xs[size_t(p)].set(0, p + 1);
    pto::runtime::World world(n, kWorldOpts);
    world.run([&](int pe) { kern(xs[size_t(pe)], seen[size_t(pe)], got[size_t(pe)], n); });
    for (int q = 0; q < n; ++q) {
      CHECK(seen[0].get(q) == 1);
      CHECK(got[0].get(q) == q + 1);
    }
  }
}

namespace {

constexpr const char *kFile = "shmem_sync_test.cpp";

/// Traces and runs `fn` on one PE (trace-time errors surface here).
template <class F> void run1(pto::RunMode mode, F fn, pto::HostTensor x) {
  auto k = pto::jit("bad", fn, support::opts(mode));
  k(x);
}

} // namespace

TEST_CASE("shmem AMOs: typed errors name the op and the user's line") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor x(pto::DT_INT32, {1, 8});
    int line = 0;
    auto amo_on = [&](pto::DataType dt, int which) {
      return [&line, dt, which](pto::Tensor) {
        // clang-format off
        auto w = dist::create_shmem_tensor("world", 1, dt, {1, 8});
        auto s = dist::create_shmem_signal("world", 1);
        line = __LINE__ + 2 + which; // the line of case `which`
        switch (which) {
        case 0: dist::shmem_atomic_compare_swap(w, {0, 0}, 0, 1, 0); break;
        case 1: dist::shmem_atomic_fetch_add(w, {0, 0}, 1, 0); break;
        case 2: dist::shmem_atomic_fetch_add(w, {0, 0}, 1.5, 0); break;
        case 3: dist::shmem_atomic_swap(w, {0, 0}, int64_t(1) << 40, 0); break;
        case 4: dist::shmem_atomic_fetch_add(w, {0, 0}, 1, 1); break;
        case 5: dist::shmem_atomic_swap(w, {0, 8}, 1, 0); break;
        case 6: dist::shmem_atomic_swap(w, {0}, 1, 0); break;
        default: dist::shmem_atomic_swap(s, {0, 0}, 1, 0); break;
        }
        // clang-format on
      };
    };
    support::expect_error<pto::DTypeError>([&] { run1(mode, amo_on(pto::DT_FP32, 0), x); }, kFile,
                                           line, "shmem_atomic_compare_swap",
                                           "must be int32 or int64, got");
    support::expect_error<pto::DTypeError>([&] { run1(mode, amo_on(pto::DT_FP16, 1), x); }, kFile,
                                           line, "shmem_atomic_fetch_add",
                                           "must be int32, int64 or fp32, got");
    support::expect_error<pto::DTypeError>([&] { run1(mode, amo_on(pto::DT_INT32, 2), x); }, kFile,
                                           line, "shmem_atomic_fetch_add", "value 1.5 is floating");
    support::expect_error<pto::ArgumentError>([&] { run1(mode, amo_on(pto::DT_INT32, 3), x); },
                                              kFile, line, "shmem_atomic_swap",
                                              "does not fit the int32 word");
    support::expect_error<pto::DistributedError>([&] { run1(mode, amo_on(pto::DT_INT64, 4), x); },
                                                 kFile, line, "shmem_atomic_fetch_add",
                                                 "pe 1 is out of range [0, 1)");
    support::expect_error<pto::DistributedError>([&] { run1(mode, amo_on(pto::DT_INT32, 5), x); },
                                                 kFile, line, "shmem_atomic_swap",
                                                 "window [8, 9) of dim 1 exceeds");
    support::expect_error<pto::ShapeError>([&] { run1(mode, amo_on(pto::DT_INT32, 6), x); }, kFile,
                                           line, "shmem_atomic_swap", "index needs 2 entries");
    support::expect_error<pto::DistributedError>([&] { run1(mode, amo_on(pto::DT_INT32, 7), x); },
                                                 kFile, line, "shmem_atomic_swap",
                                                 "signal-only object");
    CHECK_NOTHROW(run1(mode, amo_on(pto::DT_FP32, 1), x)); // fp32 fetch_add is allowed
  }
}

TEST_CASE("wait sets, test, put_signal: typed errors name the op and the user's line") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor x(pto::DT_INT32, {1, 8});
    pto::HostTensor f(pto::DT_FP32, {1, 8});
    int line = 0;
    auto bad_status = [&line](pto::Tensor s) {
      pto::set_vec_tile_shapes(1, 8);
      auto flags = dist::create_shmem_signal("world", 1);
      line = __LINE__ + 1;
      dist::shmem_wait_until_any(dist::signal_rows(flags), 1, {.status = s});
    };
    support::expect_error<pto::DTypeError>([&] { run1(mode, bad_status, f); }, kFile, line,
                                           "shmem_wait_until_any", "status must be DT_INT32");
    support::expect_error<pto::ShapeError>([&] { run1(mode, bad_status, x); }, kFile, line,
                                           "shmem_wait_until_any", "status must have shape [1]");
    auto bad_test_status = [&line](pto::Tensor s) {
      pto::set_vec_tile_shapes(1, 8);
      auto flags = dist::create_shmem_signal("world", 1);
      line = __LINE__ + 1;
      dist::shmem_test_some(dist::signal_rows(flags), 1, {.status = s});
    };
    support::expect_error<pto::DTypeError>([&] { run1(mode, bad_test_status, f); }, kFile, line,
                                           "shmem_test_some", "status must be DT_INT32");
    auto test_two_tensors = [&line](pto::Tensor) {
      auto a = dist::create_shmem_signal("world", 1), b = dist::create_shmem_signal("world", 1);
      line = __LINE__ + 1;
      dist::shmem_test_all({{a, 0}, {b, 0}}, 1);
    };
    support::expect_error<pto::DistributedError>([&] { run1(mode, test_two_tensors, x); }, kFile,
                                                 line, "shmem_test_all", "another shmem tensor");
    auto test_bad_row = [&line](pto::Tensor) {
      auto a = dist::create_shmem_signal("world", 1);
      line = __LINE__ + 1;
      dist::shmem_test_any({{a, 0}, {a, 5}}, 1);
    };
    support::expect_error<pto::DistributedError>([&] { run1(mode, test_bad_row, x); }, kFile, line,
                                                 "shmem_test_any",
                                                 "src_pe 5 is out of range [0, 1)");
    auto two_tensors = [&line](pto::Tensor) {
      auto a = dist::create_shmem_signal("world", 1), b = dist::create_shmem_signal("world", 1);
      line = __LINE__ + 1;
      dist::shmem_wait_until_all({{a, 0}, {b, 0}}, 1);
    };
    support::expect_error<pto::DistributedError>([&] { run1(mode, two_tensors, x); }, kFile, line,
                                                 "shmem_wait_until_all", "another shmem tensor");
    auto bad_row = [&line](pto::Tensor) {
      auto a = dist::create_shmem_signal("world", 1);
      line = __LINE__ + 1;
      dist::shmem_wait_until_some({{a, 0}, {a, 5}}, 1);
    };
    support::expect_error<pto::DistributedError>([&] { run1(mode, bad_row, x); }, kFile, line,
                                                 "shmem_wait_until_some",
                                                 "src_pe 5 is out of range [0, 1)");
    auto incongruent = [&line](pto::Tensor) {
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {4, 8});
      pto::set_vec_tile_shapes(2, 8);
      dist::shmem_wait_until(d, 0, 0);
      pto::set_vec_tile_shapes(1, 8);
      line = __LINE__ + 1;
      dist::shmem_test(d, 0, 0);
    };
    support::expect_error<pto::DistributedError>([&] { run1(mode, incongruent, x); }, kFile, line,
                                                 "shmem_test", "is not congruent");
    auto put_dtype = [&line](pto::Tensor s) {
      pto::set_vec_tile_shapes(1, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {2, 8});
      line = __LINE__ + 1;
      dist::shmem_put_signal(s, {0, 0}, d, 0, 1);
    };
    support::expect_error<pto::DTypeError>([&] { run1(mode, put_dtype, f); }, kFile, line,
                                           "shmem_put_signal", "must match");
    auto put_unaligned = [&line](pto::Tensor s) {
      pto::set_vec_tile_shapes(1, 4);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {2, 16});
      line = __LINE__ + 1;
      dist::shmem_put_signal(pto::view(s, {1, 4}, {0, 0}), {0, 2}, d, 0, 1);
    };
    support::expect_error<pto::DistributedError>([&] { run1(mode, put_unaligned, x); }, kFile, line,
                                                 "shmem_put_signal", "is not aligned");
  }
}

TEST_CASE("shmem AMOs and wait sets: run-time PEs and windows out of range fail the call") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::runtime::World world(2, {.deadlock_timeout_ms = 2000});
    auto xs = tensors(2, pto::DT_INT32, {1, 8});
    int line = 0;
    auto pe = pto::jit(
        "amo_pe",
        [&line](pto::Tensor x) {
          auto w = dist::create_shmem_tensor("world", 2, pto::DT_INT32, {1, 8});
          line = __LINE__ + 1;
          auto r = dist::shmem_atomic_fetch_add(w, {0, 0}, 1, dist::my_symbolic_pe("world") + 1);
          pto::set_vec_tile_shapes(1, 8);
          pto::assemble(r.old, {0, 0}, pto::view(x, {1, 1}, {0, 0}));
        },
        support::opts(mode));
    support::expect_error<pto::DistributedError>(
        [&] { world.run([&](int p) { pe(xs[size_t(p)]); }); }, kFile, line,
        "shmem_atomic_fetch_add", "out of range [0, 2)");
    auto index = pto::jit(
        "amo_index",
        [&line](pto::Tensor x) {
          auto w = dist::create_shmem_tensor("world", 2, pto::DT_INT32, {1, 8});
          line = __LINE__ + 1;
          auto r = dist::shmem_atomic_swap(w, {0, dist::my_symbolic_pe("world") * 8}, 1, 0);
          pto::set_vec_tile_shapes(1, 8);
          pto::assemble(r.old, {0, 0}, pto::view(x, {1, 1}, {0, 0}));
        },
        support::opts(mode));
    support::expect_error<pto::DistributedError>(
        [&] { world.run([&](int p) { index(xs[size_t(p)]); }); }, kFile, line, "shmem_atomic_swap",
        "window [8, 9) of dim 1 exceeds the size 8");
    auto row = pto::jit(
        "set_row",
        [&line](pto::Tensor x) {
          auto flags = dist::create_shmem_signal("world", 2);
          line = __LINE__ + 1;
          auto r = dist::shmem_wait_until_any({{flags, dist::my_symbolic_pe("world") + 1}}, 1);
          pto::set_vec_tile_shapes(1, 8);
          pto::assemble(r.index, {0, 0}, pto::view(x, {1, 1}, {0, 0}));
        },
        support::opts(mode));
    support::expect_error<pto::DistributedError>(
        [&] { world.run([&](int p) { row(xs[size_t(p)]); }); }, kFile, line, "shmem_wait_until_any",
        "out of range [0, 2)");
  }
}
