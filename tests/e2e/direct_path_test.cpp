// direct_path_test.cpp - The shared-memory fast path of generated code (docs/distributed.md, "The
// shared-memory fast path") against the runtime path (PTO_SHMEM_DIRECT=0): the same kernels give
// bit-identical results on both, equal to an independent loop, for the collectives (borrowed
// gets, staging buffers not zeroed at entry, reuse in a pto::loop) and for user puts and gets
// with valid shapes that clip tiles.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/env_var.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace dist = pto::distributed;

namespace {

/// Non-integer inputs, so that a different order of the sum would change the bits.
float input(int p, int64_t i, int call) {
  return static_cast<float>((i * 7 + p * 13 + call * 5) % 97) / 7.0f + 0.1f * float(p);
}

struct Result {
  std::vector<std::vector<float>> ys; ///< per PE, per call
};

/// The bits of `f` (a direct and a runtime result must be the same float, bit for bit).
uint32_t bits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// Runs `k` (x, y) on `n` PEs for `calls` calls (new inputs each), with the direct path on or off.
template <class K>
Result run(K &k, int n, const std::vector<int64_t> &shape, int calls, bool direct) {
  support::EnvVar env("PTO_SHMEM_DIRECT", direct ? nullptr : "0");
  pto::runtime::World world(n);
  Result r;
  r.ys.resize(size_t(n));
  for (int c = 0; c < calls; ++c) {
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.emplace_back(pto::DT_FP32, shape);
      ys.emplace_back(pto::DT_FP32, shape);
      for (int64_t i = 0; i < xs.back().numel(); ++i)
        xs.back().set(i, input(p, i, c));
      ys.back().fill(-1);
    }
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < ys[size_t(p)].numel(); ++i)
        r.ys[size_t(p)].push_back(static_cast<float>(ys[size_t(p)].get(i)));
  }
  return r;
}

} // namespace

TEST_CASE("direct path: allreduce gives the runtime path's bits, in PE order, with valid rows") {
  const std::vector<int64_t> shape{12, 40};
  constexpr int64_t valid_rows = 9, cols = 40;
  for (auto mode : support::run_modes())
    for (int n : {2, 3})
      for (auto algo : {dist::AllreduceAlgorithm::ONE_SHOT, dist::AllreduceAlgorithm::RS_AG,
                        dist::AllreduceAlgorithm::TWO_SHOT})
        for (int64_t chunk : {int64_t{0}, int64_t{1}}) {
          CAPTURE(support::mode_name(mode));
          CAPTURE(n);
          CAPTURE(static_cast<int>(algo));
          CAPTURE(chunk);
          // Twice per call in a loop (the staging is rewritten, not zeroed, on the second pass),
          // over the valid rows only.
          auto k = pto::jit(
              "direct_allreduce",
              [algo, chunk](pto::Tensor x, pto::Tensor y) {
                pto::set_vec_tile_shapes(4, 16);
                auto xv =
                    pto::view(x, {12, cols}, {0, 0},
                              {.valid_shape = std::vector<pto::SymbolicScalar>{valid_rows, cols}});
                for (auto i : pto::loop(0, 2, 1)) {
                  (void)i;
                  auto r = dist::allreduce(xv, dist::Reduction::SUM,
                                           {.algorithm = algo, .chunk_bytes = chunk});
                  pto::assemble(r, {0, 0}, y);
                }
              },
              support::opts(mode));
          const Result direct = run(k, n, shape, 2, true), runtime = run(k, n, shape, 2, false);
          int differ = 0, wrong = 0;
          for (int p = 0; p < n; ++p)
            for (int c = 0; c < 2; ++c)
              for (int64_t i = 0; i < valid_rows * cols; ++i) {
                const size_t at = size_t(c * 12 * cols + i);
                const float a = direct.ys[size_t(p)][at], b = runtime.ys[size_t(p)][at];
                differ += bits(a) != bits(b);
                float want = input(0, i, c); // PE order, in fp32
                for (int q = 1; q < n; ++q)
                  want += input(q, i, c);
                // TWO_SHOT sums in ADD arrival order: equal up to rounding.
                wrong += algo == dist::AllreduceAlgorithm::TWO_SHOT
                             ? std::abs(a - want) > 1e-4f * std::abs(want) + 1e-5f
                             : a != want;
              }
          if (algo != dist::AllreduceAlgorithm::TWO_SHOT)
            CHECK(differ == 0);
          CHECK(wrong == 0);
        }
}

TEST_CASE("direct path: puts and gets of windows with clipped tiles match the runtime path") {
  const std::vector<int64_t> shape{10, 24};
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    constexpr int n = 3;
    // PE p puts its valid 7 x 19 block into rows [8, 18) of PE p+1's buffer, signals, and gets
    // the block PE p-1 put into it; tiles of 4 x 16 leave partial tiles in both dims.
    auto k = pto::jit(
        "direct_put_get",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 16);
          auto me = dist::my_symbolic_pe("world");
          auto buf = dist::create_shmem_tensor("world", n, pto::DT_FP32, {20, 24});
          const std::vector<pto::SymbolicScalar> valid{7, 19};
          auto xv = pto::view(x, {10, 24}, {0, 0}, {.valid_shape = valid});
          auto to = (me + 1) % n;
          auto win = dist::shmem_view(buf, {10, 24}, {8, 0});
          auto put = dist::shmem_put(xv, {0, 0}, win, to);
          dist::shmem_signal(win, to, 1, to, {.sig_op = dist::AtomicType::SET, .pred = {put}});
          auto ready = dist::shmem_wait_until(win, me, 1, {.clear_signal = true});
          auto got =
              dist::shmem_get(dist::shmem_view(buf, {10, 24}, {8, 0}, {.valid_shape = valid}), me,
                              {.pred = {ready}});
          pto::assemble(got, {0, 0}, y);
        },
        support::opts(mode));
    const Result direct = run(k, n, shape, 1, true), runtime = run(k, n, shape, 1, false);
    int differ = 0, wrong = 0;
    for (int p = 0; p < n; ++p)
      for (int64_t r = 0; r < 10; ++r)
        for (int64_t c = 0; c < 24; ++c) {
          const size_t at = size_t(r * 24 + c);
          const float a = direct.ys[size_t(p)][at], b = runtime.ys[size_t(p)][at];
          differ += bits(a) != bits(b);
          const float want = r < 7 && c < 19 ? input((p + n - 1) % n, r * 24 + c, 0) : -1.0f;
          wrong += a != want;
        }
    CHECK(differ == 0);
    CHECK(wrong == 0);
  }
}

TEST_CASE("direct path: signals and waits in generated code pass a ring, sleeping PEs are woken") {
  // Each PE put_signals row i of its x to the next PE (SET 1), waits for its own (EQ, cleared),
  // stores what arrived in y, then acks the sender with an ADD signal, which the sender awaits
  // (GE, cleared). 8 PEs on fewer cores: waiters sleep, so every direct signal must ring the
  // sleeping PE (a lost wake-up costs the sleeper up to one 50 ms sampling slice, not the
  // result: not testable without timing). Same rows on both paths, equal to the sender's x.
  constexpr int n = 8;
  constexpr int64_t iters = 40;
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "direct_ring",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto buf = dist::create_shmem_tensor("world", n, pto::DT_INT32, {1, 8});
          auto ack = dist::create_shmem_signal("world", n);
          auto me = dist::my_symbolic_pe("world");
          auto next = (me + 1) % n, prev = (me + n - 1) % n;
          for (auto i : pto::loop(iters)) {
            auto sent = dist::shmem_put_signal(pto::view(x, {1, 8}, {i, 0}), {0, 0}, buf, next, 1);
            auto got = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true});
            auto [tok, data] = dist::shmem_get_with_token(buf, me, {.pred = {got}});
            pto::assemble(data, {i, 0}, y);
            auto acked = dist::shmem_signal(ack, prev, 1, prev,
                                            {.sig_op = dist::AtomicType::ADD, .pred = {tok}});
            dist::shmem_wait_until(
                ack, me, 1, {.cmp = dist::OpType::GE, .clear_signal = true, .pred = {acked, sent}});
          }
        },
        support::opts(mode));
    for (bool direct : {true, false}) {
      CAPTURE(direct);
      support::EnvVar env("PTO_SHMEM_DIRECT", direct ? nullptr : "0");
      pto::runtime::World world(n, {.deadlock_timeout_ms = 20000});
      std::vector<pto::HostTensor> xs, ys;
      for (int p = 0; p < n; ++p) {
        xs.emplace_back(pto::DT_INT32, std::vector<int64_t>{iters, 8});
        ys.emplace_back(pto::DT_INT32, std::vector<int64_t>{iters, 8});
        for (int64_t e = 0; e < iters * 8; ++e)
          xs.back().set(e, double(p * 100000 + e));
        ys.back().fill(-1);
      }
      world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); });
      int64_t wrong = 0;
      for (int p = 0; p < n; ++p)
        for (int64_t e = 0; e < iters * 8; ++e)
          wrong += ys[size_t(p)].get(e) != double(((p + n - 1) % n) * 100000 + e);
      CHECK(wrong == 0);
    }
  }
}
