// shmem_stress_test.cpp - Issue 10's stress tests, on both transports (test_e2e: threads; test_mpi
// compiles this file too and runs it on the MPI backend, one PE per rank: support/pe_world.h), in
// both run modes:
// - contended ADDs: every PE ADD-puts into the same tile of PE 0; no update is lost (int32
//   exact; fp32 exact because every partial sum is a small integer);
// - fetch_add: every PE adds 1 to one int64 word of PE 0; the old values are 0 .. total-1, each
//   exactly once;
// - the stall test: PE 0 computes (inside the kernel, no runtime call) for about PTO_STALL_MS
//   (default 1000) while the others put to it and wait for its answer: no false DeadlockError,
//   every put lands (on MPI RMA windows, without target progress a put would wait for PE 0).
// Counts: PTO_STRESS_ADDS element updates in all (default 200000; the acceptance run is
// PTO_STRESS_ADDS=10000000), PTO_STRESS_FETCH_ADDS fetch_adds in all (default 2000).
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {

constexpr int64_t kCols = 256; // elements per ADD-put
constexpr pto::runtime::WorldOptions kWorldOpts{.deadlock_timeout_ms = 20000};

using support::tensors;

} // namespace

TEST_CASE("contended ADD-puts from every PE into one tile lose no update (int32, fp32)") {
  const int n = support::world_pes(4);
  const auto total = int64_t(support::env_u64("PTO_STRESS_ADDS", 200000));
  // Each PE ADD-puts a [1, kCols] tile `iters` times: n * iters * kCols element updates.
  const int64_t iters = std::max<int64_t>(1, total / (int64_t(n) * kCols));
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    auto k = pto::jit(
        "stress_add",
        [iters](pto::Tensor xi, pto::Tensor xf, pto::Tensor yi, pto::Tensor yf, int pes) {
          pto::set_vec_tile_shapes(1, kCols);
          auto si = dist::create_shmem_tensor("world", pes, pto::DT_INT32, {1, kCols});
          auto sf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {1, kCols});
          auto me = dist::my_symbolic_pe("world");
          for (auto i : pto::loop(iters)) {
            auto a = dist::shmem_put(xi, {0, 0}, si, 0, {.put_op = dist::AtomicType::ADD});
            auto b = dist::shmem_put(xf, {0, 0}, sf, 0, {.put_op = dist::AtomicType::ADD});
            dist::shmem_signal(si, 0, 1, 0, {.sig_op = dist::AtomicType::ADD, .pred = {a, b}});
            (void)i;
          }
          // PE 0 waits for every PE's every signal (each after its ADDs), then reads the sums.
          for (auto once : pto::loop(1)) {
            if (pto::cond(me == 0)) {
              auto all =
                  dist::shmem_wait_until(si, 0, int32_t(pes * iters), {.cmp = dist::OpType::GE});
              pto::assemble(dist::shmem_get(si, 0, {.pred = {all}}), {0, 0}, yi);
              pto::assemble(dist::shmem_get(sf, 0, {.pred = {all}}), {0, 0}, yf);
            }
            (void)once;
          }
        },
        support::opts(mode));
    auto xi = tensors(n, pto::DT_INT32, {1, kCols}), xf = tensors(n, pto::DT_FP32, {1, kCols});
    auto yi = tensors(n, pto::DT_INT32, {1, kCols}), yf = tensors(n, pto::DT_FP32, {1, kCols});
    for (int p = 0; p < n; ++p)
      for (int64_t c = 0; c < kCols; ++c) {
        xi[size_t(p)].set(c, double(p + 1 + c % 5));
        xf[size_t(p)].set(c, double((p + c) % 3)); // 0, 1 or 2: every partial sum is exact
      }
    auto world = support::make_world(n, kWorldOpts);
    world->run(
        [&](int pe) { k(xi[size_t(pe)], xf[size_t(pe)], yi[size_t(pe)], yf[size_t(pe)], n); });
    support::share(yi);
    support::share(yf);
    int64_t lost_i = 0, lost_f = 0; // PE 0's result
    for (int64_t c = 0; c < kCols; ++c) {
      int64_t want_i = 0, want_f = 0;
      for (int p = 0; p < n; ++p) {
        want_i += iters * (p + 1 + c % 5);
        want_f += iters * ((p + c) % 3);
      }
      REQUIRE(want_f < (int64_t{1} << 24)); // fp32 counts it exactly
      lost_i += yi[0].get(c) != double(want_i) ? 1 : 0;
      lost_f += yf[0].get(c) != double(want_f) ? 1 : 0;
    }
    MESSAGE(mode_name, ": ", n * iters * kCols, " contended element ADDs per dtype on ", n, " PEs");
    CHECK(lost_i == 0);
    CHECK(lost_f == 0);
  }
}

TEST_CASE("fetch_add from every PE on one int64 word returns every old value exactly once") {
  const int n = support::world_pes(4);
  const auto total = int64_t(support::env_u64("PTO_STRESS_FETCH_ADDS", 2000));
  const int64_t iters = std::max<int64_t>(1, total / n);
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    auto k = pto::jit(
        "stress_fetch_add",
        [iters](pto::Tensor olds, int pes) {
          pto::set_vec_tile_shapes(1, 8);
          auto w = dist::create_shmem_tensor("world", pes, pto::DT_INT64, {1, 8});
          auto bar = dist::create_shmem_signal("world", pes);
          for (auto i : pto::loop(iters)) {
            auto r = dist::shmem_atomic_fetch_add(w, {0, 5}, 1, 0);
            pto::assemble(r.old, {i, 0}, olds);
          }
          dist::shmem_barrier_all(bar, {.pred = {olds}});
        },
        support::opts(mode));
    auto olds = tensors(n, pto::DT_INT64, {iters, 1});
    auto world = support::make_world(n, kWorldOpts);
    world->run([&](int pe) { k(olds[size_t(pe)], n); });
    support::share(olds);
    std::vector<int> seen(size_t(n * iters), 0);
    int64_t bad = 0;
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < iters; ++i) {
        const auto v = int64_t(olds[size_t(p)].get(i));
        if (v < 0 || v >= n * iters)
          ++bad;
        else
          ++seen[size_t(v)];
      }
    int64_t not_once = 0;
    for (int c : seen)
      not_once += c != 1 ? 1 : 0;
    CHECK(bad == 0);
    CHECK(not_once == 0);
  }
}

namespace {
// The stall test's compute: `reps` rounds of y = sqrt(x * x + 1) over a [16, 1024] tile, no
// communication (the last round's result stays in y).
void compute(const pto::Tensor &x, const pto::Tensor &y, int64_t reps) {
  pto::set_vec_tile_shapes(16, 1024);
  for (auto i : pto::loop(reps)) {
    pto::assemble(pto::sqrt(x * x + 1.0), {0, 0}, y);
    (void)i;
  }
}

// Rounds of compute() that take about `ms` in `mode`, measured on a local call.
int64_t reps_for(pto::RunMode mode, int64_t ms) {
  auto k = pto::jit(
      "stall_calibrate", [](pto::Tensor x, pto::Tensor y) { compute(x, y, 256); },
      support::opts(mode));
  pto::HostTensor x(pto::DT_FP32, {16, 1024}), y(pto::DT_FP32, {16, 1024});
  k(x, y);           // compiles
  double per = 1e30; // the best of three: the machine is shared
  for (int t = 0; t < 3; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    k(x, y);
    per = std::min(
        per,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
            256);
  }
  return std::clamp<int64_t>(int64_t(double(ms) / std::max(per, 1e-4)), 1, 100000000);
}
} // namespace

TEST_CASE("stall test: a PE computing for seconds stalls nobody and is no deadlock") {
  const int n = support::world_pes(3);
  const auto stall_ms = int64_t(support::env_u64("PTO_STALL_MS", 1000));
  for (auto mode : support::run_modes()) {
    const std::string mode_name = support::mode_name(mode);
    CAPTURE(mode_name);
    // Every PE compiles the same kernel: PE 0's calibration decides.
    std::vector<pto::HostTensor> calib = tensors(n, pto::DT_INT64, {1, 1});
    for (auto &c : calib)
      c.set(0, double(reps_for(mode, stall_ms)));
    support::share(calib);
    const auto reps = int64_t(calib[0].get(0));
    // PE 0 computes for about stall_ms (no runtime call) while the others each put 64 KiB into
    // its heap, signal it and wait for its ack; then PE 0 waits for every signal, copies the
    // data into its output and acks.
    auto k = pto::jit(
        "stall",
        [reps](pto::Tensor x, pto::Tensor y, int pes) {
          pto::set_vec_tile_shapes(16, 1024);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {16 * pes, 1024});
          auto sig = dist::create_shmem_signal("world", pes);
          auto ack = dist::create_shmem_signal("world", pes);
          auto me = dist::my_symbolic_pe("world");
          for (auto once : pto::loop(1)) {
            if (pto::cond(me == 0)) {
              compute(x, pto::view(y, {16, 1024}, {0, 0}), reps);
              auto all = dist::shmem_wait_until(sig, 0, pes - 1, {.cmp = dist::OpType::GE});
              auto got = dist::shmem_get(dist::shmem_view(buf, {16 * (pes - 1), 1024}, {16, 0}), 0,
                                         {.pred = {all}});
              pto::assemble(got, {16, 0}, y);
              dist::shmem_signal_all(ack, 0, 1, {.pred = {y}});
            } else {
              auto put = dist::shmem_put(x, {me * 16, 0}, buf, 0);
              auto s = dist::shmem_signal(sig, 0, 1, 0,
                                          {.sig_op = dist::AtomicType::ADD, .pred = {put}});
              dist::shmem_wait_until(ack, 0, 1, {.pred = {s}});
            }
            (void)once;
          }
        },
        support::opts(mode));
    auto xs = tensors(n, pto::DT_FP32, {16, 1024});
    auto ys = tensors(n, pto::DT_FP32, {16 * int64_t(n), 1024});
    for (int p = 0; p < n; ++p)
      xs[size_t(p)].fill(double(p + 1));
    auto world = support::make_world(n, kWorldOpts);
    const auto t0 = std::chrono::steady_clock::now();
    world->run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], n); });
    const double took_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    support::share(ys);
    MESSAGE(mode_name, ": PE 0 computed ", reps, " rounds; the run took ", took_ms, " ms");
    int64_t bad = 0;
    for (int64_t i = 0; i < 16 * 1024; ++i)
      bad += ys[0].get(i) != double(std::sqrt(1.0f * 1.0f + 1.0f)) ? 1 : 0;
    for (int p = 1; p < n; ++p)
      for (int64_t i = 0; i < 16 * 1024; ++i)
        bad += ys[0].get(p * 16 * 1024 + i) != double(p + 1) ? 1 : 0;
    CHECK(bad == 0);
  }
}
