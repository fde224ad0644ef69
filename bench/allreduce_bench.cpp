// allreduce_bench.cpp - The one-shot allreduce (sum) of samples/allreduce_softmax.cpp on 2, 4 and
// 8 PEs (threads on this machine), against the simple peer: N std::threads, each summing every
// PE's input into its own output (peers/loops.h sum_inputs, -O3 -march=native). Both start and
// join their threads inside the timed call (World::run starts one thread per PE per run).
// bytes/s counts one PE's input per call (NCCL's "algorithm bandwidth").
//
//   build-bench/bench/allreduce_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "bench_common.h"
#include "peers/loops.h"

#include <benchmark/benchmark.h>
#include <memory>
#include <optional>
#include <thread>

namespace dist = pto::distributed;

namespace {

struct Size {
  int64_t rows, cols;
};
constexpr Size kSizes[] = {{16, 1024}, {256, 1024}};
constexpr int kPes[] = {2, 4, 8};

/// The allreduce of samples/allreduce_softmax.cpp without the softmax: every PE puts (ADD) its
/// x into every PE's fp32 accumulator and signals it; each waits for n_pes signals and reads
/// its accumulator back into y.
void allreduce(pto::Tensor x, pto::Tensor y, int n_pes) {
  int64_t rows = x.shape(0).concrete(), cols = x.shape(1).concrete();
  pto::set_vec_tile_shapes(8, cols);
  auto acc = dist::create_shmem_tensor("world", n_pes, pto::DT_FP32, {rows, cols});
  auto me = dist::my_symbolic_pe("world");
  for (int p = 0; p < n_pes; ++p) { // unrolled at trace time, as in PyPTO
    auto put = dist::shmem_put(x, {0, 0}, acc, p, {.put_op = dist::AtomicType::ADD});
    dist::shmem_signal(acc, p, 1, p, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
  }
  auto ready = dist::shmem_wait_until(acc, me, n_pes, {.clear_signal = true, .pred = {x}});
  pto::assemble(dist::shmem_get(acc, me, {.pred = {ready}}), {0, 0}, y);
}

using AllreduceKernel = decltype(pto::jit("allreduce_bench", allreduce));

/// One case, made on its first run and kept (no recompiling across Google Benchmark's runs).
struct Case {
  int n_pes;
  Size s;
  std::vector<pto::HostTensor> xs, ys;
  std::vector<const float *> x_ptrs;
  pto::HostTensor want;
  std::unique_ptr<pto::runtime::World> world;
  std::optional<AllreduceKernel> kernel;

  Case(int n, Size s_) : n_pes(n), s(s_) {}
  void setup() {
    if (!xs.empty())
      return;
    for (int p = 0; p < n_pes; ++p) {
      xs.push_back(bench::random_tensor(pto::DT_FP32, {s.rows, s.cols}, 100 + uint64_t(p)));
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{s.rows, s.cols});
      x_ptrs.push_back(xs.back().data_as<float>());
    }
    want = pto::HostTensor(pto::DT_FP32, {s.rows, s.cols});
    peer::strict::sum_inputs(x_ptrs.data(), n_pes, want.data_as<float>(), want.numel());
  }
  bool check(benchmark::State &state) {
    for (auto &y : ys)
      if (!bench::check_close(state, y, want, 1e-5))
        return false;
    return true;
  }
};

void ours_call(Case &c) {
  c.world->run([&](int pe) { (*c.kernel)(c.xs[size_t(pe)], c.ys[size_t(pe)], c.n_pes); });
}

void peer_call(Case &c) {
  std::vector<std::thread> threads;
  threads.reserve(size_t(c.n_pes));
  for (int pe = 0; pe < c.n_pes; ++pe)
    threads.emplace_back([&c, pe] {
      auto &y = c.ys[size_t(pe)];
      peer::strict::sum_inputs(c.x_ptrs.data(), c.n_pes, y.data_as<float>(), y.numel());
    });
  for (auto &t : threads)
    t.join();
}

void run(benchmark::State &state, const std::shared_ptr<Case> &c, bool ours) {
  c->setup();
  if (ours && !c->world) {
    c->world = std::make_unique<pto::runtime::World>(c->n_pes);
    c->kernel.emplace(pto::jit("allreduce_bench", allreduce));
  }
  for (auto &y : c->ys)
    y.fill(0);
  auto call = ours ? ours_call : peer_call;
  call(*c); // untimed first call: ours traces and compiles here
  if (!c->check(state))
    return;
  for (auto _ : state) {
    call(*c);
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, c->xs[0].size_bytes(), c->xs[0].numel());
}

} // namespace

int main(int argc, char **argv) {
  for (Size s : kSizes)
    for (int n : kPes) {
      auto c = std::make_shared<Case>(n, s);
      std::string base =
          "allreduce_fp32/" + std::to_string(n) + "pes/" + bench::dims(s.rows, s.cols);
      benchmark::RegisterBenchmark((base + "/ours").c_str(), run, c, true)->UseRealTime();
      benchmark::RegisterBenchmark((base + "/peer").c_str(), run, c, false)->UseRealTime();
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
