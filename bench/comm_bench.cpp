// comm_bench.cpp - The runtime's communication costs on the threads backend (issue 10): an 8-byte
// put + signal seen by the peer's wait (ping-pong, reported one way; through the runtime ABI
// and as a compiled kernel), a trivial World::run, a
// kernel entry + exit, and 200 allreduces of 8 KiB in one kernel (reported per allreduce). Case
// names are the ones the MPI peers of bench/peers use ("pingpong/put_signal_8B", ...), so the
// driver can pair them.
//
//   build/bench/comm_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include "pto/pto.h"
#include "pto/runtime/abi.h"
#include "pto/runtime/context.h"
#include "pto/runtime/world.h"

#include "bench_common.h"

#include <benchmark/benchmark.h>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

namespace dist = pto::distributed;

namespace {

using Clock = std::chrono::steady_clock;

/// Runs `body(ctx)` as one kernel call with one "world" group of `heap_bytes` on the calling PE,
/// as generated code does (begin_call, kernel_enter, body, kernel_exit, end_call).
template <class Body> void rt_kernel(int n_pes, int64_t heap_bytes, Body &&body) {
  pto_ctx *ctx = pto::runtime::current_ctx();
  pto::runtime::begin_call(ctx, nullptr, "comm_bench");
  const uint64_t hash = 7;
  const int32_t n = n_pes;
  const char *name = "world";
  int32_t st = pto_rt_kernel_enter(ctx, &hash, 1, &heap_bytes, &n, &name, nullptr, nullptr);
  if (st == PTO_OK)
    st = body(ctx);
  if (st == PTO_OK)
    pto_rt_kernel_exit(ctx);
  pto::runtime::end_call(ctx);
}

// Heap layout of the ping-pong: 8 data bytes, then one signal slot (32 bytes apart).
constexpr int64_t kData = 0, kSlot = 64, kHeap = 128;
constexpr int kRounds = 2000;

/// PE 0 puts 8 bytes into PE 1 and signals it (SET round number); PE 1 waits for it and answers
/// the same way. One iteration is kRounds round trips; the time reported is one way.
void pingpong_put_signal_8B(benchmark::State &state) {
  pto::runtime::World world(2);
  const pto_block blk{{1, 1, 1, 2}, {0, 0, 2, 1}, {0, 0, 2, 1}};
  for (auto _ : state) {
    double secs = 0;
    world.run([&](int pe) {
      rt_kernel(2, kHeap, [&](pto_ctx *ctx) -> int32_t {
        const int32_t peer = 1 - pe;
        int32_t payload[2] = {pe, 0};
        const auto t0 = Clock::now();
        for (int32_t r = 1; r <= kRounds; ++r) {
          if (pe == 1 && pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, r, 0, 0, -1) != PTO_OK)
            return PTO_ERR;
          payload[1] = r;
          if (pto_rt_put(ctx, 0, peer, PTO_ATOMIC_SET, payload, pto::DT_INT32, kData, kSlot,
                         pto::DT_INT32, &blk, -1) != PTO_OK ||
              pto_rt_signal(ctx, 0, peer, kSlot, PTO_ATOMIC_SET, r, -1) != PTO_OK)
            return PTO_ERR;
          if (pe == 0 && pto_rt_wait_until(ctx, 0, kSlot, PTO_CMP_EQ, r, 0, 0, -1) != PTO_OK)
            return PTO_ERR;
        }
        if (pe == 0)
          secs = std::chrono::duration<double>(Clock::now() - t0).count();
        return PTO_OK;
      });
    });
    state.SetIterationTime(secs / (2.0 * kRounds));
  }
}

/// The same ping-pong as a compiled kernel (pto::jit): shmem_put_signal of 8 bytes and
/// shmem_wait_until in a pto::loop of kRounds, PE 0 sending first. On the threads backend the put
/// is a copy into the peer's heap, the signal a release store and the wait an acquire poll, all
/// in generated code (docs/distributed.md, "The shared-memory fast path"). Reported one way, as
/// above; the kernel entry and exit (a few us per call) are spread over the 2 * kRounds hops.
void pingpong_kernel(pto::Tensor x, int rounds) {
  pto::set_vec_tile_shapes(1, 2);
  auto buf = dist::create_shmem_tensor("world", 2, pto::DT_INT32, {1, 2});
  auto me = dist::my_symbolic_pe("world");
  auto peer = 1 - me;
  for (auto r : pto::loop(rounds)) {
    (void)r;
    if (pto::cond(me == 0)) {
      auto sent = dist::shmem_put_signal(x, {0, 0}, buf, peer, 1);
      dist::shmem_wait_until(buf, me, 1, {.clear_signal = true, .pred = {sent}});
    } else {
      auto got = dist::shmem_wait_until(buf, me, 1, {.clear_signal = true});
      dist::shmem_put_signal(x, {0, 0}, buf, peer, 1, {.pred = {got}});
    }
  }
}

void pingpong_put_signal_jit(benchmark::State &state) {
  pto::runtime::World world(2);
  auto k = pto::jit("pingpong_jit", pingpong_kernel);
  pto::HostTensor x(pto::DT_INT32, {1, 2});
  auto once = [&] { world.run([&](int) { k(x, kRounds); }); };
  once(); // untimed: traces and compiles
  for (auto _ : state) {
    const auto t0 = Clock::now();
    once();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count() /
                           (2.0 * kRounds));
  }
}

/// World::run of a function that does nothing.
void world_run_trivial(benchmark::State &state, int n) {
  pto::runtime::World world(n);
  world.run([](int) {}); // untimed: starts the PEs where they persist
  for (auto _ : state)
    world.run([](int) {});
}

/// World::run of one kernel call that declares a 4 KiB heap and does nothing else: the kernel
/// entry (layout agreement, heap zeroing) and exit barriers.
void world_run_kernel_enter(benchmark::State &state, int n) {
  pto::runtime::World world(n);
  auto once = [&] {
    world.run([&](int) { rt_kernel(n, 4096, [](pto_ctx *) { return int32_t(PTO_OK); }); });
  };
  once();
  for (auto _ : state)
    once();
}

constexpr int kAllreduces = 200;

/// 200 allreduces (sum) of an 8 KiB fp32 tensor in one kernel (pto::loop), 2 PEs.
void allreduce_loop(pto::Tensor x, pto::Tensor y) {
  pto::set_vec_tile_shapes(2, 1024);
  for (auto i : pto::loop(0, kAllreduces)) {
    pto::assemble(dist::allreduce(x, dist::Reduction::SUM), {0, 0}, y);
    (void)i;
  }
}

void allreduce_loop_8KiB(benchmark::State &state) {
  const int n = 2;
  pto::runtime::World world(n);
  auto k = pto::jit("allreduce_loop", allreduce_loop);
  std::vector<pto::HostTensor> xs, ys;
  for (int p = 0; p < n; ++p) {
    xs.push_back(bench::random_tensor(pto::DT_FP32, {2, 1024}, 10 + uint64_t(p)));
    ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{2, 1024});
  }
  auto once = [&] { world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }); };
  once(); // untimed: traces and compiles
  pto::HostTensor want(pto::DT_FP32, {2, 1024});
  for (int64_t i = 0; i < want.numel(); ++i)
    want.set(i, float(xs[0].get(i)) + float(xs[1].get(i)));
  for (auto &y : ys)
    if (!bench::check_close(state, y, want, 1e-6))
      return;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    once();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count() / kAllreduces);
  }
}

} // namespace

int main(int argc, char **argv) {
  benchmark::RegisterBenchmark("pingpong/put_signal_8B/pes:2/ours", pingpong_put_signal_8B)
      ->UseManualTime()
      ->Iterations(
          20); // manual time is per hop: Google Benchmark's min_time would mean 1000s of runs
  benchmark::RegisterBenchmark("pingpong/put_signal_8B/pes:2/ours_jit", pingpong_put_signal_jit)
      ->UseManualTime()
      ->Iterations(20);
  for (int n : {1, 2}) {
    benchmark::RegisterBenchmark(("world_run/trivial/pes:" + std::to_string(n) + "/ours").c_str(),
                                 world_run_trivial, n)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("world_run/kernel_enter/pes:" + std::to_string(n) + "/ours").c_str(),
        world_run_kernel_enter, n)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("allreduce_loop/8KiB/pes:2/ours", allreduce_loop_8KiB)
      ->UseManualTime()
      ->Iterations(20);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
