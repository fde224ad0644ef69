// distributed_test.cpp - pto::distributed through whole kernels (trace -> JIT or interpreter ->
// runtime) on several PEs: contended ADD puts, signal/wait ordering, barriers in loops, run-time
// PE range checks and deadlock diagnostics. Expected values are plain arithmetic on the inputs.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <vector>

namespace dist = pto::distributed;
using doctest::Contains;

namespace {

using support::tensors;

} // namespace

TEST_CASE("shmem_put ADD from 8 PEs into every PE loses no update (one-shot allreduce)") {
  const int n = 8;
  for (auto mode : support::run_modes()) {
    for (pto::DataType dt : {pto::DT_INT32, pto::DT_FP32, pto::DT_INT64}) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(pto::name(dt));
      auto k = pto::jit(
          "allreduce_sum",
          [](pto::Tensor x, pto::Tensor y, int pes) {
            pto::set_vec_tile_shapes(4, 16); // tails in both dims: [9, 37]
            auto acc = dist::create_shmem_tensor("world", pes, x.dtype(), {9, 37});
            auto me = dist::my_symbolic_pe("world");
            for (int p = 0; p < pes; ++p) {
              auto put = dist::shmem_put(x, {0, 0}, acc, p, {.put_op = dist::AtomicType::ADD});
              dist::shmem_signal(acc, p, 1, p, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
            }
            auto ready = dist::shmem_wait_until(acc, me, pes, {.clear_signal = true});
            pto::assemble(dist::shmem_get(acc, me, {.pred = {ready}}), {0, 0}, y);
          },
          support::opts(mode));
      auto xs = tensors(n, dt, {9, 37}), ys = tensors(n, dt, {9, 37});
      // Integer-valued inputs: the float sum is exact in any order, so any lost or doubled
      // update shows as a wrong value.
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < xs[p].numel(); ++i)
          xs[p].set(i, static_cast<double>((i * 7 + p * 13) % 101 - 50));
      pto::runtime::World world(n);
      world.run([&](int pe) { k(xs[static_cast<size_t>(pe)], ys[static_cast<size_t>(pe)], n); });
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < 9 * 37; ++i) {
          double want = 0;
          for (int q = 0; q < n; ++q)
            want += static_cast<double>((i * 7 + q * 13) % 101 - 50);
          REQUIRE(ys[static_cast<size_t>(p)].get(i) == want);
        }
    }
  }
}

TEST_CASE("a signal after a put is never seen before the put's data (ring exchange)") {
  const int n = 6;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "ring",
        [](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(8, 64);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {16, 64});
          auto me = dist::my_symbolic_pe("world");
          auto next = (me + 1) % pes;
          auto put = dist::shmem_put(x, {0, 0}, buf, next);
          dist::shmem_signal(buf, next, 1, next, {.pred = {put}});
          auto ready = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true});
          pto::assemble(dist::shmem_get(buf, me, {.pred = {ready}}), {0, 0}, y);
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_FP32, {16, 64}), ys = tensors(n, pto::DT_FP32, {16, 64});
    for (int p = 0; p < n; ++p)
      xs[static_cast<size_t>(p)].fill(100.0 * p + 1);
    pto::runtime::World world(n);
    for (int rep = 0; rep < 3; ++rep) { // repeated launches start from zeroed signals
      world.run([&](int pe) { k(xs[static_cast<size_t>(pe)], ys[static_cast<size_t>(pe)], n); });
      for (int p = 0; p < n; ++p) {
        double want = 100.0 * ((p + n - 1) % n) + 1; // from the previous PE in the ring
        for (int64_t i = 0; i < 16 * 64; ++i)
          REQUIRE(ys[static_cast<size_t>(p)].get(i) == want);
      }
    }
  }
}

TEST_CASE("shmem_barrier_all inside a traced loop keeps every PE in step") {
  const int n = 8;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    // Each iteration i: PE p adds (i + 1) into PE 0's counter, then all meet at a barrier; PE 0
    // snapshots the counter into row i. Without the barrier a snapshot could miss an add.
    auto k = pto::jit(
        "barrier_loop",
        [](pto::Tensor one, pto::Tensor out, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto counter = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, 8});
          auto sig = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          for (auto i : pto::loop(0, 20)) {
            auto add = dist::shmem_put(one, {0, 0}, counter, 0, {.put_op = dist::AtomicType::ADD});
            auto b = dist::shmem_barrier_all(sig, {.pred = {add}});
            auto snap = dist::shmem_get(counter, 0, {.pred = {b}});
            pto::assemble(snap, {i, 0}, out);
            dist::shmem_barrier_all(sig, {.pred = {snap}});
          }
          (void)me;
        },
        support::opts(mode));
    auto ones = tensors(n, pto::DT_INT32, {1, 8}), outs = tensors(n, pto::DT_INT32, {20, 8});
    for (auto &o : ones)
      o.fill(1);
    pto::runtime::World world(n);
    world.run([&](int pe) { k(ones[static_cast<size_t>(pe)], outs[static_cast<size_t>(pe)], n); });
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < 20; ++i)
        for (int c = 0; c < 8; ++c)
          REQUIRE(outs[static_cast<size_t>(p)].get(i * 8 + c) == static_cast<double>(n * (i + 1)));
  }
}

TEST_CASE("a wait that cannot complete is a DeadlockError naming PE, slot and values") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "deadlock",
        [](pto::Tensor x, int pes) {
          pto::set_vec_tile_shapes(2, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {2, 8});
          auto me = dist::my_symbolic_pe("world");
          // Every PE sends one signal to PE 0, then waits for 2 on its own slot: PE 0 sees 4,
          // the others 0, and no value ever changes again.
          auto put = dist::shmem_put(x, {0, 0}, buf, 0);
          auto s =
              dist::shmem_signal(buf, 0, 1, 0, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
          dist::shmem_wait_until(buf, me, 2, {.pred = {s}});
        },
        support::opts(mode));
    auto xs = tensors(4, pto::DT_FP32, {2, 8});
    pto::runtime::World world(4, {.deadlock_timeout_ms = 200});
    CHECK_THROWS_WITH_AS(world.run([&](int pe) { k(xs[static_cast<size_t>(pe)], 4); }),
                         Contains("to be == 2"), pto::DeadlockError);
    try {
      world.run([&](int pe) { k(xs[static_cast<size_t>(pe)], 4); });
    } catch (const pto::DeadlockError &e) {
      std::string m = e.what();
      CHECK(m.find("distributed_test.cpp:") != std::string::npos); // the user's wait
      CHECK(m.find("PE ") != std::string::npos);
      CHECK(m.find("slot ") != std::string::npos);
      CHECK(m.find("current value ") != std::string::npos);
    }
    // The world is usable again afterwards.
    auto ok = pto::jit("noop", [](pto::Tensor x) {
      pto::set_vec_tile_shapes(2, 8);
      pto::assemble(x + 1.0, {0, 0}, x);
    });
    world.run([&](int pe) { ok(xs[static_cast<size_t>(pe)]); });
    CHECK(xs[0].get(0) == 1.0);
  }
}

TEST_CASE("a run-time dst_pe outside the group is a DistributedError, not a stray write") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "bad_pe",
        [](pto::Tensor x, int pes) {
          pto::set_vec_tile_shapes(2, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {2, 8});
          auto me = dist::my_symbolic_pe("world");
          dist::shmem_put(x, {0, 0}, buf, me + 1); // the last PE has no successor
        },
        support::opts(mode));
    auto xs = tensors(3, pto::DT_FP32, {2, 8});
    pto::runtime::World world(3, {.deadlock_timeout_ms = 2000});
    CHECK_THROWS_WITH_AS(world.run([&](int pe) { k(xs[static_cast<size_t>(pe)], 3); }),
                         Contains("out of range [0, 3)"), pto::DistributedError);
  }
}

TEST_CASE("a group's n_pes must match the PEs running the kernel") {
  auto k = pto::jit("mismatch", [](pto::Tensor x) {
    pto::set_vec_tile_shapes(2, 8);
    auto buf = dist::create_shmem_tensor("world", 4, pto::DT_FP32, {2, 8});
    dist::shmem_put(x, {0, 0}, buf, 0);
  });
  auto xs = tensors(2, pto::DT_FP32, {2, 8});
  pto::runtime::World world(2, {.deadlock_timeout_ms = 2000});
  CHECK_THROWS_AS(world.run([&](int pe) { k(xs[static_cast<size_t>(pe)]); }),
                  pto::DistributedError);
}

TEST_CASE("deadlock message, as a user sees it") {
  auto k = pto::jit("deadlock_msg", [](pto::Tensor x) {
    pto::set_vec_tile_shapes(2, 8);
    auto buf = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {2, 8});
    auto me = dist::my_symbolic_pe("world");
    dist::shmem_wait_until(buf, me, 1, {.pred = {x}});
  });
  auto xs = tensors(2, pto::DT_FP32, {2, 8});
  pto::runtime::World world(2, {.deadlock_timeout_ms = 100});
  try {
    world.run([&](int pe) { k(xs[static_cast<size_t>(pe)]); });
    FAIL("expected a DeadlockError");
  } catch (const pto::DeadlockError &e) {
    MESSAGE(std::string(e.what()));
    CHECK(std::string(e.what()).find("after 100 ms") != std::string::npos);
  }
}

TEST_CASE("my_symbolic_pe works before any shmem tensor of the group exists") {
  const int n = 3;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "pe_first",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 4);
          auto me = dist::my_symbolic_pe("world"); // no shmem tensor yet
          pto::assemble(pto::view(x, {1, 4}, {me, 0}), {0, 0}, y);
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_INT32, {n, 4}), ys = tensors(n, pto::DT_INT32, {1, 4});
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < n * 4; ++i)
        xs[size_t(p)].set(i, static_cast<double>(100 * p + i));
    pto::runtime::World world(n);
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    for (int p = 0; p < n; ++p)
      for (int64_t c = 0; c < 4; ++c)
        REQUIRE(ys[size_t(p)].get(c) == 100 * p + 4 * p + c);
  }
  // A group nobody created is still an error at the user's line.
  auto bad = pto::jit("pe_unknown", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 4);
    pto::assemble(pto::view(x, {1, 4}, {dist::my_symbolic_pe("nope"), 0}), {0, 0}, y);
  });
  pto::HostTensor x(pto::DT_INT32, {2, 4}), y(pto::DT_INT32, {1, 4});
  pto::runtime::World world(2);
  CHECK_THROWS_AS(world.run([&](int) { bad(x, y); }), pto::DistributedError);
}
