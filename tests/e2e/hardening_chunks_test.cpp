// hardening_chunks_test.cpp - Programs long enough that the LLVM backend outlines their regions
// into functions of kChunkItems items (codegen/llvm/split_function.h; issue 8): locals defined in
// one chunk and read in later ones, element reads, conds and nested loops across chunk
// boundaries, a run-time error raised in a late chunk (its status must leave through every
// outlined function), and shmem puts and signals in a long region on 2 PEs. Both executors give
// the plain-loop result (or the same typed error).
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {

std::string at(int line) { return "hardening_chunks_test.cpp:" + std::to_string(line); }

pto::HostTensor ramp() {
  pto::HostTensor t(pto::DT_FP32, {4, 8});
  for (int64_t i = 0; i < 32; ++i)
    t.set(i, double(i));
  return t;
}

} // namespace

TEST_CASE("hardening chunks: locals, element reads and conds across outlined chunks") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    int fail_line = 0;
    auto k = pto::jit(
        "long_region",
        [&](pto::Tensor x, pto::Tensor n, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          // 40 top-level items: a local made first and read by the last, loops whose bounds
          // are element reads, conds, reshapes (standalone copies into locals).
          pto::Tensor first = pto::reshape(pto::add(x, 1.0), {8, 4});
          pto::Tensor t = x;
          for (int i = 0; i < 12; ++i) {
            t = pto::reshape(pto::add(t, 1.0), {8, 4});
            t = pto::reshape(t, {4, 8});
            for (auto j : pto::loop(n.at({0}))) { // n[0] iterations of += 0 (writes y)
              (void)j;
              pto::assemble(pto::mul(t, 1.0), {0, 0}, y);
            }
          }
          for (auto once : pto::loop(1)) { // a cond needs an enclosing loop
            (void)once;
            if (pto::cond(n.at({1}) > 0))
              pto::assemble(pto::add(t, pto::reshape(first, {4, 8})), {0, 0}, y);
            else
              pto::assemble(t, {0, 0}, y);
          }
          fail_line = __LINE__ + 1;
          pto::assemble(pto::full({1, 8}, 0.0, pto::DT_FP32), {n.at({n.at({2})}), 0}, y);
        },
        support::opts(mode));
    auto x = ramp();
    pto::HostTensor n(pto::DT_INT32, {3}), y(pto::DT_FP32, {4, 8});
    n.set(0, 2);
    n.set(1, 1);
    n.set(2, 0); // n[n[2]] = n[0] = 2: row 2 is zeroed
    k(x, n, y);
    for (int64_t i = 0; i < 32; ++i) {
      const double want = i / 8 == 2 ? 0.0 : (double(i) + 12) + (double(i) + 1);
      REQUIRE(y.get(i) == want);
    }
    n.set(1, 0); // the other path
    k(x, n, y);
    for (int64_t i = 0; i < 32; ++i)
      REQUIRE(y.get(i) == (i / 8 == 2 ? 0.0 : double(i) + 12));
    n.set(2, 7); // n[7]: an index error in the last chunk
    const std::string msg = support::thrown<pto::RuntimeError>([&] { k(x, n, y); });
    CHECK(msg.find(at(fail_line) + ": at: index 7 is out of range [0, 3) in dim 0 of tensor "
                                   "'arg1'") == 0);
    n.set(2, 0);
    k(x, n, y); // the kernel still runs after the error
    CHECK(y.get(16) == 0.0);
  }
}

TEST_CASE("hardening chunks: shmem puts and signals in a long region on 2 PEs") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    constexpr int kRounds = 12; // put, signal, wait, get, add a round: 60 items, 4 chunks
    auto k = pto::jit(
        "long_shmem",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          auto me = dist::my_symbolic_pe("world");
          auto other = 1 - me;
          pto::Tensor acc = pto::mul(x, 0.0);
          for (int r = 0; r < kRounds; ++r) { // a buffer per round: no put overwrites one read
            auto buf = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
            auto put = dist::shmem_put(pto::add(x, double(r)), {0, 0}, buf, other);
            dist::shmem_signal(buf, other, 1, other, {.pred = {put}});
            auto got = dist::shmem_wait_until(buf, me, 1);
            acc = pto::add(acc, dist::shmem_get(buf, me, {.pred = {got}}));
          }
          pto::assemble(acc, {0, 0}, y);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < 2; ++p) {
      xs.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
      for (int64_t i = 0; i < 32; ++i)
        xs.back().set(i, 100.0 * p + double(i));
    }
    pto::runtime::World world(2);
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    for (int p = 0; p < 2; ++p)
      for (int64_t i = 0; i < 32; ++i) {
        // sum over r of (x_other[i] + r)
        const double want =
            kRounds * (100.0 * (1 - p) + double(i)) + double(kRounds) * (kRounds - 1) / 2.0;
        REQUIRE(ys[size_t(p)].get(i) == want);
      }
  }
}
