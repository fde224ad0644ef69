// shmem_primitives_test.cpp - The shmem primitives the other e2e tests do not reach, through whole
// kernels on 2-4 PEs in both run modes: shmem_get_with_token, shmem_signal_all (SET and ADD),
// shmem_clear_data over strided views, shmem_clear_signal, shmem_store / shmem_load, nop and
// n_pes, then their documented error cases. Expected values are plain C++ on the inputs.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

namespace dist = pto::distributed;
using dist::AtomicType;
using doctest::Contains;

namespace {

using support::tensors;

/// Fills every element i of `t` with f(i).
void fill(pto::HostTensor &t, const std::function<double(int64_t)> &f) {
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, f(i));
}

std::vector<int64_t> dims(const std::vector<pto::SymbolicScalar> &s) {
  std::vector<int64_t> d;
  for (const auto &x : s)
    d.push_back(x.concrete());
  return d;
}

/// A deadlock timeout long enough for a loaded CI machine, short enough that a slot a broken op
/// left at the wrong value fails the test in seconds rather than hanging it.
constexpr pto::runtime::WorldOptions kWorldOpts{.deadlock_timeout_ms = 10000};

} // namespace

TEST_CASE("shmem_get_with_token: the token orders a later signal after the get; data converts") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    struct {
      std::vector<int64_t> token_shape;
      pto::DataType token_dtype = pto::DT_BOTTOM, data_dtype = pto::DT_BOTTOM;
    } seen;
    // Round 1: each PE puts x1 into the next PE's buffer. The receiver gets it and acknowledges
    // with a signal whose only dependency on the get is the get's token; the sender overwrites
    // the buffer with x2 only after the ack. Were the get not ordered before the ack, the
    // receiver could read x2 in round 1.
    auto k = pto::jit(
        "get_token",
        [&seen](pto::Tensor x1, pto::Tensor x2, pto::Tensor y1, pto::Tensor y2, int pes) {
          pto::set_vec_tile_shapes(2, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {4, 8});
          auto ack = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          auto next = (me + 1) % pes, prev = (me + pes - 1) % pes;
          auto put1 = dist::shmem_put(x1, {0, 0}, buf, next);
          auto sent1 = dist::shmem_signal(buf, next, 1, next, {.pred = {put1}});
          auto got1 = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true});
          auto [token, d1] =
              dist::shmem_get_with_token(buf, me, {.pred = {got1}, .dtype = pto::DT_FP32});
          auto acked = dist::shmem_signal(ack, prev, 1, prev, {.pred = {token}});
          auto may_send =
              dist::shmem_wait_until(ack, me, 1, {.clear_signal = true, .pred = {sent1}});
          auto put2 = dist::shmem_put(x2, {0, 0}, buf, next, {.pred = {may_send}});
          dist::shmem_signal(buf, next, 2, next, {.pred = {put2}});
          auto got2 = dist::shmem_wait_until(buf, me, 2, {.clear_signal = true, .pred = {acked}});
          pto::assemble(d1, {0, 0}, y1);
          pto::assemble(dist::shmem_get(buf, me, {.pred = {got2}}), {0, 0}, y2);
          seen.token_shape = dims(token.shape());
          seen.token_dtype = token.dtype();
          seen.data_dtype = d1.dtype();
        },
        support::opts(mode));
    auto x1 = tensors(n, pto::DT_INT32, {4, 8}), x2 = tensors(n, pto::DT_INT32, {4, 8});
    auto y1 = tensors(n, pto::DT_FP32, {4, 8}), y2 = tensors(n, pto::DT_INT32, {4, 8});
    for (int p = 0; p < n; ++p) {
      fill(x1[size_t(p)], [&](int64_t i) { return 100.0 * p + double(i); });
      fill(x2[size_t(p)], [&](int64_t i) { return -100.0 * p - double(i) - 1; });
    }
    pto::runtime::World world(n, kWorldOpts);
    for (int rep = 0; rep < 3; ++rep) {
      world.run(
          [&](int pe) { k(x1[size_t(pe)], x2[size_t(pe)], y1[size_t(pe)], y2[size_t(pe)], n); });
      for (int p = 0; p < n; ++p) {
        const int from = (p + n - 1) % n;
        for (int64_t i = 0; i < 32; ++i) {
          REQUIRE(y1[size_t(p)].get(i) == 100.0 * from + double(i));
          REQUIRE(y2[size_t(p)].get(i) == -100.0 * from - double(i) - 1);
        }
      }
    }
    // The token comes first and has the window's shape; the data has the requested dtype.
    CHECK(seen.token_shape == std::vector<int64_t>{4, 8});
    CHECK(seen.token_dtype == pto::DT_INT32);
    CHECK(seen.data_dtype == pto::DT_FP32);
  }
}

TEST_CASE("shmem_signal_all: SET and ADD land in the slot on every PE, and every PE's wait sees "
          "them") {
  const int n = 4;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // An allgather: PE q puts x into rows [2q, 2q + 2) of every PE, joins the puts with nop and
    // SETs 7 (twice) into slot row q of that window on every PE. Each PE waits for 7 on every
    // window, then reads it. Separately every PE ADDs 2 then 3 into row 0 of a signal object on
    // every PE, and every PE waits for 5 * n. SET taken as ADD leaves 14 (and ADD taken as SET
    // leaves 3): the waits then fail with a DeadlockError.
    auto k = pto::jit(
        "signal_all",
        [](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(1, 8); // each [2, 8] window has two tiles, so two slots
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {2 * pes, 8});
          auto count = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          std::vector<pto::Tensor> puts;
          for (int p = 0; p < pes; ++p)
            puts.push_back(dist::shmem_put(x, {me * 2, 0}, buf, p));
          auto mine = dist::shmem_view(buf, {2, 8}, {me * 2, 0});
          auto set1 = dist::shmem_signal_all(mine, me, 7, {.pred = {dist::nop(puts)}});
          auto set2 =
              dist::shmem_signal_all(mine, me, 7, {.sig_op = AtomicType::SET, .pred = {set1}});
          auto add1 =
              dist::shmem_signal_all(count, 0, 2, {.sig_op = AtomicType::ADD, .pred = {set2}});
          auto add2 =
              dist::shmem_signal_all(count, 0, 3, {.sig_op = AtomicType::ADD, .pred = {add1}});
          std::vector<pto::Tensor> checked;
          for (int q = 0; q < pes; ++q) {
            auto theirs = dist::shmem_view(buf, {2, 8}, {2 * q, 0});
            auto ready = dist::shmem_wait_until(theirs, q, 7);
            pto::assemble(dist::shmem_get(theirs, me, {.pred = {ready}}), {2 * q, 0}, y);
            // Nobody signalled another row of this window: its slot is still 0.
            checked.push_back(dist::shmem_wait_until(theirs, (q + 1) % pes, 0, {.pred = {ready}}));
          }
          checked.push_back(add2);
          dist::shmem_wait_until(count, 0, 5 * pes, {.pred = {dist::nop(checked)}});
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_FP32, {2, 8}), ys = tensors(n, pto::DT_FP32, {2 * n, 8});
    for (int p = 0; p < n; ++p)
      fill(xs[size_t(p)], [&](int64_t i) { return 10.0 * p + double(i) + 0.5; });
    pto::runtime::World world(n, kWorldOpts);
    for (int rep = 0; rep < 2; ++rep) {
      world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], n); });
      for (int p = 0; p < n; ++p)
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < 16; ++i)
            REQUIRE(ys[size_t(p)].get(q * 16 + i) == 10.0 * q + double(i) + 0.5);
    }
  }
}

TEST_CASE("shmem_clear_signal zeroes every slot row and tile, so waits on 0 and a fresh count "
          "work") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    auto k = pto::jit(
        "clear_signal",
        [](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          // Four [2, 8] windows of two tiles each: 8 slots per row, one row per PE.
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {4, 16});
          auto flags = dist::create_shmem_signal("world", pes);
          auto bar = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          auto put = dist::shmem_put(x, {0, 0}, buf, me); // data that must survive the clear
          std::vector<dist::ShmemTensor> windows;
          for (int r : {0, 2})
            for (int c : {0, 8})
              windows.push_back(dist::shmem_view(buf, {2, 8}, {r, c}));
          // Fill every slot: PE q ADDs 3 into row q of every window (and 5 into row q of
          // flags) on every PE; wait until all of them arrived, without clearing.
          std::vector<pto::Tensor> filled;
          for (const auto &w : windows) {
            auto s = dist::shmem_signal_all(w, me, 3, {.sig_op = AtomicType::ADD, .pred = {put}});
            for (int q = 0; q < pes; ++q)
              filled.push_back(dist::shmem_wait_until(w, q, 3, {.pred = {s}}));
          }
          auto f = dist::shmem_signal_all(flags, me, 5, {.sig_op = AtomicType::ADD});
          for (int q = 0; q < pes; ++q)
            filled.push_back(dist::shmem_wait_until(flags, q, 5, {.pred = {f}}));
          auto b1 = dist::shmem_barrier_all(bar, {.pred = {dist::nop(filled)}});
          auto c1 = dist::shmem_clear_signal(buf, {.pred = {b1}});
          auto c2 = dist::shmem_clear_signal(flags, {.pred = {b1}});
          // Every slot of both arrays is 0 now.
          std::vector<pto::Tensor> zero;
          for (const auto &w : windows)
            for (int q = 0; q < pes; ++q)
              zero.push_back(dist::shmem_wait_until(w, q, 0, {.pred = {c1}}));
          for (int q = 0; q < pes; ++q)
            zero.push_back(dist::shmem_wait_until(flags, q, 0, {.pred = {c2}}));
          // Nobody counts again before every PE has cleared.
          auto b2 = dist::shmem_barrier_all(bar, {.pred = {dist::nop(zero)}});
          // A fresh count from 0: exactly n after one ADD 1 per PE.
          auto s1 =
              dist::shmem_signal_all(windows[3], 0, 1, {.sig_op = AtomicType::ADD, .pred = {b2}});
          auto s2 =
              dist::shmem_signal_all(flags, pes - 1, 1, {.sig_op = AtomicType::ADD, .pred = {b2}});
          auto w1 =
              dist::shmem_wait_until(windows[3], 0, pes, {.clear_signal = true, .pred = {s1}});
          auto w2 =
              dist::shmem_wait_until(flags, pes - 1, pes, {.clear_signal = true, .pred = {s2}});
          pto::assemble(dist::shmem_get(buf, me, {.pred = {dist::nop({w1, w2})}}), {0, 0}, y);
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_INT32, {4, 16}), ys = tensors(n, pto::DT_INT32, {4, 16});
    for (int p = 0; p < n; ++p)
      fill(xs[size_t(p)], [&](int64_t i) { return 1000.0 * p + double(i) + 1; });
    pto::runtime::World world(n, kWorldOpts);
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], n); });
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < 64; ++i)
        REQUIRE(ys[size_t(p)].get(i) == 1000.0 * p + double(i) + 1); // data untouched
  }
}

TEST_CASE("shmem_clear_data zeroes exactly a strided view of rank-2, -3 and -4 shmem tensors") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Each PE fills its own data, clears windows whose offsets depend on its PE (so a clear
    // that touched another PE's data would show there), and reads everything back. The
    // windows are strided in the heap: a [3, 5] box of a [6, 16] tensor reached through a view
    // of a view, one column, a [2, 3, 3] box of a [3, 4, 10] tensor, a whole row of every plane,
    // and a [2, 2, 2, 3] box of an int16 [2, 3, 4, 5] tensor. The tiles leave tails.
    auto k = pto::jit(
        "clear_data",
        [](pto::Tensor a, pto::Tensor b, pto::Tensor c, pto::Tensor ya, pto::Tensor yb,
           pto::Tensor yc, int pes) {
          auto me = dist::my_symbolic_pe("world");
          pto::set_vec_tile_shapes(2, 4);
          auto sa = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {6, 16});
          auto pa = dist::shmem_put(a, {0, 0}, sa, me);
          auto outer = dist::shmem_view(sa, {5, 14}, {1, 1});
          auto box = dist::shmem_view(outer, {3, 5}, {me, me * 3 + 1}); // data [1+me, 2+3me)
          auto ca1 = dist::shmem_clear_data(box, {.pred = {pa}});
          auto ca2 = dist::shmem_clear_data(dist::shmem_view(sa, {6, 1}, {0, 15}), {.pred = {ca1}});
          pto::assemble(dist::shmem_get(sa, me, {.pred = {ca2}}), {0, 0}, ya);

          pto::set_vec_tile_shapes(2, 2, 4);
          auto sb = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {3, 4, 10});
          auto pb = dist::shmem_put(b, {0, 0, 0}, sb, me);
          auto cb1 = dist::shmem_clear_data(
              dist::shmem_view(sb, {2, 3, 3}, {1, 1, pto::SymbolicScalar(5) - me}), {.pred = {pb}});
          auto cb2 =
              dist::shmem_clear_data(dist::shmem_view(sb, {3, 1, 10}, {0, 2, 0}), {.pred = {cb1}});
          pto::assemble(dist::shmem_get(sb, me, {.pred = {cb2}}), {0, 0, 0}, yb);

          pto::set_vec_tile_shapes(1, 2, 2, 4);
          auto sc = dist::create_shmem_tensor("world", pes, pto::DT_INT16, {2, 3, 4, 5});
          auto pc = dist::shmem_put(c, {0, 0, 0, 0}, sc, me);
          auto cc = dist::shmem_clear_data(dist::shmem_view(sc, {2, 2, 2, 3}, {0, 1, me % 2, 1}),
                                           {.pred = {pc}});
          pto::assemble(dist::shmem_get(sc, me, {.pred = {cc}}), {0, 0, 0, 0}, yc);
        },
        support::opts(mode));
    auto as = tensors(n, pto::DT_INT32, {6, 16}), yas = tensors(n, pto::DT_INT32, {6, 16});
    auto bs = tensors(n, pto::DT_FP32, {3, 4, 10}), ybs = tensors(n, pto::DT_FP32, {3, 4, 10});
    auto cs = tensors(n, pto::DT_INT16, {2, 3, 4, 5}),
         ycs = tensors(n, pto::DT_INT16, {2, 3, 4, 5});
    auto value = [](int p, int64_t i) { return 1000.0 * (p + 1) + double(i) + 1; };
    for (int p = 0; p < n; ++p) {
      fill(as[size_t(p)], [&](int64_t i) { return value(p, i); });
      fill(bs[size_t(p)], [&](int64_t i) { return value(p, i); });
      fill(cs[size_t(p)], [&](int64_t i) { return value(p, i); });
    }
    pto::runtime::World world(n, kWorldOpts);
    world.run([&](int pe) {
      const auto i = size_t(pe);
      k(as[i], bs[i], cs[i], yas[i], ybs[i], ycs[i], n);
    });
    auto in = [](int64_t v, int64_t lo, int64_t len) { return v >= lo && v < lo + len; };
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      const auto i = size_t(p);
      for (int64_t r = 0; r < 6; ++r)
        for (int64_t col = 0; col < 16; ++col) {
          CAPTURE(r);
          CAPTURE(col);
          const bool cleared = (in(r, 1 + p, 3) && in(col, 2 + 3 * p, 5)) || col == 15;
          REQUIRE(yas[i].get(r * 16 + col) == (cleared ? 0.0 : value(p, r * 16 + col)));
        }
      for (int64_t d0 = 0; d0 < 3; ++d0)
        for (int64_t d1 = 0; d1 < 4; ++d1)
          for (int64_t d2 = 0; d2 < 10; ++d2) {
            CAPTURE(d0);
            CAPTURE(d1);
            CAPTURE(d2);
            const int64_t e = (d0 * 4 + d1) * 10 + d2;
            const bool cleared = (in(d0, 1, 2) && in(d1, 1, 3) && in(d2, 5 - p, 3)) || d1 == 2;
            REQUIRE(ybs[i].get(e) == (cleared ? 0.0 : value(p, e)));
          }
      for (int64_t e = 0; e < 2 * 3 * 4 * 5; ++e) {
        CAPTURE(e);
        const int64_t d1 = e / 20 % 3, d2 = e / 5 % 4, d3 = e % 5;
        const bool cleared = in(d1, 1, 2) && in(d2, p % 2, 2) && in(d3, 1, 3);
        REQUIRE(ycs[i].get(e) == (cleared ? 0.0 : value(p, e)));
      }
    }
  }
}

TEST_CASE("shmem_store / shmem_load round trip at run-time offsets with valid shapes, fp16 ADD "
          "into fp32 and a converting load") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // PE q stores the just-computed x * 2 + 1, of which only the first q + 1 rows are valid,
    // into rows [4q, 4q + 4) of every PE; every PE loads each block as fp16 (a shmem_view whose
    // valid shape is q + 1 rows, inside a traced loop over q) and feeds it to a multiply.
    // Separately every PE ADDs its fp16 h into an fp32 accumulator on every PE.
    auto k = pto::jit(
        "store_load",
        [](pto::Tensor x, pto::Tensor h, pto::Tensor y, pto::Tensor whole, pto::Tensor sum,
           int pes) {
          pto::set_vec_tile_shapes(2, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {4 * pes, 8});
          auto acc = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {4, 8});
          auto me = dist::my_symbolic_pe("world");
          auto t = pto::view(x * 2.0 + 1.0, {4, 8}, {0, 0}, {.valid_shape = {{me + 1, 8}}});
          auto mine = dist::shmem_view(buf, {4, 8}, {me * 4, 0});
          for (int p = 0; p < pes; ++p) {
            // src as its own pred (PyPTO drops it): only orders the store after t.
            auto st = dist::shmem_store(t, {me * 4, 0}, buf, p, {.pred = {t}});
            dist::shmem_signal(mine, p, 1, p, {.pred = {st}});
            auto add = dist::shmem_store(h, {0, 0}, acc, p, {.put_op = AtomicType::ADD});
            dist::shmem_signal(acc, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {add}});
          }
          for (auto q : pto::loop(0, pes)) {
            auto theirs = dist::shmem_view(buf, {4, 8}, {q * 4, 0}, {.valid_shape = {{q + 1, 8}}});
            auto ready = dist::shmem_wait_until(theirs, me, 1, {.clear_signal = true});
            auto v = dist::shmem_load(theirs, me, {.pred = {ready}, .dtype = pto::DT_FP16});
            pto::assemble(v * 3.0, {q * 4, 0}, y);
          }
          auto summed = dist::shmem_wait_until(acc, me, pes, {.clear_signal = true});
          pto::assemble(dist::shmem_load(acc, me, {.pred = {summed}}), {0, 0}, sum);
          pto::assemble(dist::shmem_load(buf, me, {.pred = {summed}}), {0, 0}, whole);
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_FP32, {4, 8}), hs = tensors(n, pto::DT_FP16, {4, 8});
    auto ys = tensors(n, pto::DT_FP16, {4 * n, 8}), wholes = tensors(n, pto::DT_FP32, {4 * n, 8});
    auto sums = tensors(n, pto::DT_FP32, {4, 8});
    auto xv = [](int q, int64_t i) { return double(i % 13) - 6 + q; };
    auto hv = [](int q, int64_t i) { return double(i % 7) * 0.25 + q; };
    for (int p = 0; p < n; ++p) {
      fill(xs[size_t(p)], [&](int64_t i) { return xv(p, i); });
      fill(hs[size_t(p)], [&](int64_t i) { return hv(p, i); });
      ys[size_t(p)].fill(-7); // rows outside a block's valid shape keep this
    }
    pto::runtime::World world(n, kWorldOpts);
    world.run([&](int pe) {
      const auto i = size_t(pe);
      k(xs[i], hs[i], ys[i], wholes[i], sums[i], n);
    });
    for (int p = 0; p < n; ++p) {
      CAPTURE(p);
      for (int q = 0; q < n; ++q)
        for (int64_t r = 0; r < 4; ++r)
          for (int64_t c = 0; c < 8; ++c) {
            CAPTURE(q);
            CAPTURE(r);
            const int64_t e = (q * 4 + r) * 8 + c;
            const bool valid = r < q + 1;
            const double stored = xv(q, r * 8 + c) * 2 + 1;
            REQUIRE(wholes[size_t(p)].get(e) == (valid ? stored : 0.0));
            REQUIRE(ys[size_t(p)].get(e) == (valid ? stored * 3 : -7.0));
          }
      for (int64_t i = 0; i < 32; ++i) {
        double want = 0;
        for (int q = 0; q < n; ++q)
          want += hv(q, i);
        REQUIRE(sums[size_t(p)].get(i) == want);
      }
    }
  }
}

TEST_CASE("nop joins several tokens (and data tensors) into one pred") {
  const int n = 2;
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    struct {
      std::vector<int64_t> nop_shape, signal_shape;
      pto::DataType dtype = pto::DT_BOTTOM;
    } seen;
    // Three puts of different rows into the next PE, one signal after all of them (a nop of a
    // nop, a put token and a data tensor). The receiver must see every row.
    auto k = pto::jit(
        "nop_join",
        [&seen](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(2, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {6, 8});
          auto me = dist::my_symbolic_pe("world");
          auto next = (me + 1) % pes;
          auto p0 = dist::shmem_put(pto::view(x, {2, 8}, {0, 0}), {0, 0}, buf, next);
          auto p1 = dist::shmem_put(pto::view(x, {2, 8}, {2, 0}), {2, 0}, buf, next);
          auto p2 = dist::shmem_put(pto::view(x, {2, 8}, {4, 0}), {4, 0}, buf, next);
          auto both = dist::nop({p0, p1});
          auto all = dist::nop({both, p2, x});
          auto s = dist::shmem_signal(buf, next, 1, next, {.pred = {all}});
          auto ready = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true, .pred = {s}});
          pto::assemble(dist::shmem_get(buf, me, {.pred = {dist::nop({ready})}}), {0, 0}, y);
          dist::nop({}); // joins nothing: a token that orders nothing
          seen.nop_shape = dims(all.shape());
          seen.signal_shape = dims(s.shape());
          seen.dtype = all.dtype();
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_INT32, {6, 8}), ys = tensors(n, pto::DT_INT32, {6, 8});
    for (int p = 0; p < n; ++p)
      fill(xs[size_t(p)], [&](int64_t i) { return 100.0 * p + double(i); });
    pto::runtime::World world(n, kWorldOpts);
    for (int rep = 0; rep < 3; ++rep) {
      world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], n); });
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < 48; ++i)
          REQUIRE(ys[size_t(p)].get(i) == 100.0 * ((p + n - 1) % n) + double(i));
    }
    CHECK(seen.nop_shape == std::vector<int64_t>{1, 1});
    CHECK(seen.signal_shape == std::vector<int64_t>{1, 1}); // a signal's token: its pred's shape
    CHECK(seen.dtype == pto::DT_INT32);
  }
}

TEST_CASE("n_pes of \"world\" and of a sub-group sizes a shmem tensor and bounds a traced loop") {
  pto::runtime::World world(4, kWorldOpts);
  world.create_group("trio", {3, 1, 2}); // group-local PE i is world PE {3, 1, 2}[i]
  world.create_group("solo", {0});
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // An allgather over `group` whose buffer has n_pes(group) rows and whose receive loop runs
    // n_pes(group) times; every value gets n_pes("world") added.
    auto k = pto::jit(
        "n_pes",
        [](pto::Tensor x, pto::Tensor y, const std::string &group) {
          const int n = dist::n_pes(group);
          const int all = dist::n_pes(); // "world"
          pto::set_vec_tile_shapes(1, 8);
          auto buf = dist::create_shmem_tensor(group, n, pto::DT_INT32, {n, 8});
          auto me = dist::my_symbolic_pe(group);
          auto mine = dist::shmem_view(buf, {1, 8}, {me, 0});
          for (auto p : pto::loop(0, n)) {
            auto put = dist::shmem_put(x, {me, 0}, buf, p);
            dist::shmem_signal(mine, p, 1, p, {.pred = {put}});
          }
          for (auto q : pto::loop(0, n)) {
            auto theirs = dist::shmem_view(buf, {1, 8}, {q, 0});
            auto ready = dist::shmem_wait_until(theirs, me, 1, {.clear_signal = true});
            pto::assemble(dist::shmem_get(theirs, me, {.pred = {ready}}) + all, {q, 0}, y);
          }
        },
        support::opts(mode));
    auto xs = tensors(4, pto::DT_INT32, {1, 8}), ys = tensors(4, pto::DT_INT32, {4, 8});
    for (int p = 0; p < 4; ++p)
      fill(xs[size_t(p)], [&](int64_t i) { return 10.0 * p + double(i); });
    auto check = [&](int p, const std::vector<int> &members) {
      CAPTURE(p);
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = 0; c < 8; ++c) {
          const bool row = r < int64_t(members.size());
          const double want = row ? 10.0 * members[size_t(r)] + double(c) + 4 : -1.0;
          REQUIRE(ys[size_t(p)].get(r * 8 + c) == want);
        }
    };
    for (auto &y : ys)
      y.fill(-1);
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], std::string("world")); });
    for (int p = 0; p < 4; ++p)
      check(p, {0, 1, 2, 3});
    for (auto &y : ys)
      y.fill(-1);
    world.run(
        [&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], std::string(pe == 0 ? "solo" : "trio")); });
    check(0, {0});
    for (int p = 1; p < 4; ++p)
      check(p, {3, 1, 2});
  }
}

// ---- documented error cases ------------------------------------------------------------------

namespace {

/// Traces and runs `fn` as a one-tensor kernel on the calling thread (one PE) in `mode`.
template <class F> void run1(pto::RunMode mode, F fn, pto::HostTensor x) {
  auto k = pto::jit("bad", fn, support::opts(mode));
  k(x);
}

} // namespace

TEST_CASE("shmem_get_with_token, shmem_load: bad sources, PEs, tiles and dtypes") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    auto signal_only = [](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      dist::shmem_get_with_token(dist::create_shmem_signal("world", 1), 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, signal_only, x),
                         Contains("cannot get from a signal-only object"), pto::DistributedError);
    auto pe = [](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      dist::shmem_get_with_token(dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, pe, x), Contains("src_pe 1 is out of range [0, 1)"),
                         pto::DistributedError);
    CHECK_THROWS_WITH_AS(run1(mode, pe, x), Contains("shmem_primitives_test.cpp:"),
                         pto::DistributedError);
    auto tile = [](pto::Tensor) {
      pto::set_vec_tile_shapes(1, 4, 8); // rank 3 for rank-2 data
      dist::shmem_get_with_token(dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 0);
    };
    CHECK_THROWS_WITH_AS(
        run1(mode, tile, x),
        Contains("dim of vectile shape (3) must be equal to the shmem data dim (2)"),
        pto::TileShapeError);
    auto to_bool = [](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      dist::shmem_load(dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 0,
                       {.dtype = pto::DT_BOOL});
    };
    CHECK_THROWS_WITH_AS(run1(mode, to_bool, x), Contains("cannot convert shmem data to"),
                         pto::DTypeError);
    auto load_signal_only = [](pto::Tensor) {
      pto::set_vec_tile_shapes(4, 8);
      dist::shmem_load(dist::create_shmem_signal("world", 1), 0);
    };
    CHECK_THROWS_AS(run1(mode, load_signal_only, x), pto::DistributedError);
  }
}

TEST_CASE("shmem_signal_all: bad rows, windows and tiles are DistributedErrors at trace time") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    auto row = [](pto::Tensor) {
      pto::set_vec_tile_shapes(2, 8);
      dist::shmem_signal_all(dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 2, 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, row, x), Contains("src_pe 2 is out of range [0, 1)"),
                         pto::DistributedError);
    auto indivisible = [](pto::Tensor) {
      pto::set_vec_tile_shapes(1, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
      dist::shmem_signal_all(dist::shmem_view(d, {3, 8}, {0, 0}), 0, 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, indivisible, x), Contains("must be divisible by the view"),
                         pto::DistributedError);
    auto unaligned = [](pto::Tensor) {
      pto::set_vec_tile_shapes(2, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
      dist::shmem_signal_all(dist::shmem_view(d, {2, 8}, {1, 0}), 0, 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, unaligned, x), Contains("is not aligned"),
                         pto::DistributedError);
    auto incongruent = [](pto::Tensor) {
      pto::set_vec_tile_shapes(2, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
      dist::shmem_signal_all(d, 0, 1);
      pto::set_vec_tile_shapes(1, 8);
      dist::shmem_wait_until(d, 0, 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, incongruent, x), Contains("is not congruent"),
                         pto::DistributedError);
    auto tile_rank = [](pto::Tensor) {
      pto::set_vec_tile_shapes(1, 2, 8);
      dist::shmem_signal_all(dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 0, 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, tile_rank, x), Contains("must equal the shmem data rank"),
                         pto::TileShapeError);
  }
}

TEST_CASE("shmem_clear_data, shmem_clear_signal: objects without data or from no kernel") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    auto no_data = [](pto::Tensor) {
      pto::set_vec_tile_shapes(2, 8);
      dist::shmem_clear_data(dist::create_shmem_signal("world", 1));
    };
    CHECK_THROWS_WITH_AS(run1(mode, no_data, x), Contains("a signal-only object has no data"),
                         pto::DistributedError);
    auto stray_data = [](pto::Tensor) { dist::shmem_clear_data(dist::ShmemTensor{}); };
    CHECK_THROWS_WITH_AS(run1(mode, stray_data, x), Contains("not a shmem tensor of this kernel"),
                         pto::DistributedError);
    auto stray_signal = [](pto::Tensor) { dist::shmem_clear_signal(dist::ShmemTensor{}); };
    CHECK_THROWS_WITH_AS(run1(mode, stray_signal, x), Contains("not a shmem tensor of this kernel"),
                         pto::DistributedError);
  }
}

TEST_CASE("shmem_store: the put rules (dtypes, sources, PEs, windows)") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor h(pto::DT_FP16, {2, 8}), i32(pto::DT_INT32, {2, 8}), f32(pto::DT_FP32, {2, 8});
    auto store_into_fp32 = [](AtomicType op) {
      return [op](pto::Tensor src) {
        pto::set_vec_tile_shapes(2, 8);
        auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
        dist::shmem_store(src, {0, 0}, d, 0, {.put_op = op});
      };
    };
    // fp16 may only ADD into fp32; other dtypes must match.
    CHECK_THROWS_WITH_AS(run1(mode, store_into_fp32(AtomicType::SET), h), Contains("must match"),
                         pto::DTypeError);
    CHECK_THROWS_WITH_AS(run1(mode, store_into_fp32(AtomicType::ADD), i32), Contains("must match"),
                         pto::DTypeError);
    CHECK_NOTHROW(run1(mode, store_into_fp32(AtomicType::ADD), h));
    auto token_src = [](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {2, 8});
      auto tok = dist::shmem_store(x, {0, 0}, d, 0);
      dist::shmem_store(tok, {0, 0}, d, 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, token_src, i32), Contains("src is a dependency token"),
                         pto::DTypeError);
    auto shmem_src = [](pto::Tensor) {
      pto::set_vec_tile_shapes(2, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
      dist::shmem_store(d.data, {0, 0}, d, 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, shmem_src, f32), Contains("src is shmem data"),
                         pto::DTypeError);
    auto rank = [](pto::Tensor x) {
      pto::set_vec_tile_shapes(1, 2, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {1, 2, 8});
      dist::shmem_store(x, {0, 0}, d, 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, rank, f32), Contains("differs from shmem data rank"),
                         pto::ShapeError);
    auto pe = [](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      dist::shmem_store(x, {0, 0}, dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 1);
    };
    CHECK_THROWS_WITH_AS(run1(mode, pe, f32), Contains("dst_pe 1 is out of range [0, 1)"),
                         pto::DistributedError);
    auto outside = [](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      dist::shmem_store(x, {3, 0}, dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8}), 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, outside, f32),
                         Contains("shmem_put: window [3, 5) of dim 0 exceeds the size 4"),
                         pto::DistributedError);
    auto too_big = [](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
      dist::shmem_store(x, {0, 0}, dist::shmem_view(d, {1, 8}, {0, 0}), 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, too_big, f32), Contains("does not fit the shmem view"),
                         pto::DistributedError);
    auto signal_only = [](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      dist::shmem_store(x, {0, 0}, dist::create_shmem_signal("world", 1), 0);
    };
    CHECK_THROWS_WITH_AS(run1(mode, signal_only, f32),
                         Contains("cannot put into a signal-only object"), pto::DistributedError);
  }
}

TEST_CASE("nop, n_pes: outside a kernel, empty handles and unknown groups") {
  CHECK_THROWS_WITH_AS(dist::nop({}), Contains("no kernel is being traced"), pto::Error);
  CHECK_THROWS_WITH_AS(dist::n_pes(), Contains("no kernel is being traced"), pto::Error);
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    auto empty = [](pto::Tensor) { dist::nop({pto::Tensor{}}); };
    CHECK_THROWS_WITH_AS(run1(mode, empty, x), Contains("tensor operand is empty"),
                         pto::ShapeError);
    auto unknown = [](pto::Tensor) { (void)dist::n_pes("nope"); };
    CHECK_THROWS_WITH_AS(run1(mode, unknown, x), Contains("unknown group 'nope'"),
                         pto::DistributedError);
    CHECK_THROWS_WITH_AS(run1(mode, unknown, x), Contains("shmem_primitives_test.cpp:"),
                         pto::DistributedError);
  }
}

TEST_CASE("run-time values out of range fail the call with a DistributedError in both modes") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::runtime::World world(2, {.deadlock_timeout_ms = 2000});
    std::vector<pto::HostTensor> xs = tensors(2, pto::DT_FP32, {2, 8});
    // shmem_load from PE me + 1: PE 1 has no successor.
    auto load = pto::jit(
        "load_pe",
        [](pto::Tensor x) {
          pto::set_vec_tile_shapes(2, 8);
          auto d = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {2, 8});
          pto::assemble(dist::shmem_load(d, dist::my_symbolic_pe("world") + 1), {0, 0}, x);
        },
        support::opts(mode));
    CHECK_THROWS_WITH_AS(world.run([&](int pe) { load(xs[size_t(pe)]); }),
                         Contains("out of range [0, 2)"), pto::DistributedError);
    // shmem_get_with_token from a window that leaves the data at run time (cols 8..11 of 8).
    auto get = pto::jit(
        "get_window",
        [](pto::Tensor x) {
          pto::set_vec_tile_shapes(2, 4);
          auto d = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {2, 8});
          auto me = dist::my_symbolic_pe("world");
          auto w = dist::shmem_view(d, {2, 4}, {0, me * 8});
          pto::assemble(dist::shmem_get_with_token(w, me).second, {0, 0}, x);
        },
        support::opts(mode));
    CHECK_THROWS_WITH_AS(world.run([&](int pe) { get(xs[size_t(pe)]); }),
                         Contains("shmem_view: window [8, 12) of dim 1 exceeds the size 8"),
                         pto::DistributedError);
    // shmem_signal_all over a window that is not tile-aligned at run time (row 1, tile 2).
    auto sig = pto::jit(
        "signal_align",
        [](pto::Tensor x) {
          pto::set_vec_tile_shapes(2, 8);
          auto d = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
          auto me = dist::my_symbolic_pe("world");
          dist::shmem_signal_all(dist::shmem_view(d, {2, 8}, {me, 0}), 0, 1, {.pred = {x}});
        },
        support::opts(mode));
    CHECK_THROWS_AS(world.run([&](int pe) { sig(xs[size_t(pe)]); }), pto::DistributedError);
  }
}

TEST_CASE("shmem_clear_data of a window that leaves its dim at run time is a DistributedError") {
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    pto::runtime::World world(2, {.deadlock_timeout_ms = 2000});
    std::vector<pto::HostTensor> xs = tensors(2, pto::DT_FP32, {2, 8});
    // PE 1's window is cols 6..9 of 8: inside the heap block (it would wrap into the next row),
    // so only a per-dim check catches it. (The JIT once zeroed the wrapped elements silently.)
    auto clear = pto::jit(
        "clear_window",
        [](pto::Tensor x) {
          pto::set_vec_tile_shapes(2, 4);
          auto d = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
          auto me = dist::my_symbolic_pe("world");
          dist::shmem_clear_data(dist::shmem_view(d, {2, 4}, {0, me * 6}), {.pred = {x}});
        },
        support::opts(mode));
    CHECK_THROWS_WITH_AS(world.run([&](int pe) { clear(xs[size_t(pe)]); }),
                         Contains("shmem_view: window [6, 10) of dim 1 exceeds the size 8"),
                         pto::DistributedError);
  }
}
