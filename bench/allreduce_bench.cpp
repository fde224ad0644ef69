// allreduce_bench.cpp - dist::allreduce (sum, fp32) on 2 and 8 PEs (threads on this machine),
// one case per algorithm (one_shot, two_shot, rs_ag, auto), against the simple peer: N
// std::threads, each summing every PE's input into its own output (peers/loops.h sum_inputs,
// -O3 -march=native). Both start and join their threads inside the timed call.
//
// Counters per case: bytes/s counts one PE's input per call (NCCL's "algorithm bandwidth");
// `moved_B` is the bytes one PE's program copies per call, read off the compiled kernel's IR
// (every shmem_put, shmem_get and shmem_clear_data window, and every assemble/clone: the data
// movement the DSL program asks for, whatever the transport does underneath; a borrowed get,
// which the threads backend's direct path does not copy, counts 0; an op inside a pto::loop
// counts once, so the 64-PE one-shot, which loops over the PEs, shows 1/64 of its puts); `heap_B`
// is the PE's symmetric heap (kernel entry zeroes only its `zeroed=` prefix: the staging is not
// zeroed).
//
//   build-bench/bench/allreduce_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "bench_common.h"
#include "peers/loops.h"

#include <algorithm>
#include <benchmark/benchmark.h>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

namespace dist = pto::distributed;

namespace {

struct Size {
  const char *name;
  int64_t rows, cols;
};
constexpr Size kSizes[] = {{"8KiB", 2, 1024}, {"8MiB", 2048, 1024}};
constexpr int kPes[] = {2, 8};
/// Many PEs on 2 cores (AUTO's choice when n is large): 1 KiB with fewer rows than PEs, 64 KiB
/// (kAllreduceOneShotMaxBytes) and 1 MiB, on 64 PEs. Never more than 256 PEs on a shared host.
constexpr Size kManySizes[] = {{"1KiB", 2, 128},
                               {"8KiB", 64, 32},
                               {"48KiB", 3, 4096},
                               {"64KiB", 64, 256},
                               {"1MiB", 256, 1024}};
constexpr int kManyPes = 64;
struct Algo {
  const char *name;
  dist::AllreduceAlgorithm a;
};
const Algo kAlgos[] = {{"one_shot", dist::AllreduceAlgorithm::ONE_SHOT},
                       {"two_shot", dist::AllreduceAlgorithm::TWO_SHOT},
#ifndef PTO_BENCH_NO_RS_AG // the baseline build (main, before RS_AG existed)
                       {"rs_ag", dist::AllreduceAlgorithm::RS_AG},
#endif
                       {"auto", dist::AllreduceAlgorithm::AUTO}};

/// y = allreduce(x) with the given algorithm.
void allreduce(pto::Tensor x, pto::Tensor y, int algo) {
  pto::set_vec_tile_shapes(std::min<int64_t>(8, x.shape(0).concrete()), x.shape(1).concrete());
  pto::assemble(dist::allreduce(x, dist::Reduction::SUM,
                                {.algorithm = static_cast<dist::AllreduceAlgorithm>(algo)}),
                {0, 0}, y);
}

using AllreduceKernel = decltype(pto::jit("allreduce_bench", allreduce));

int64_t dtype_bytes(const std::string &dt) {
  static const std::map<std::string, int64_t> k{{"fp32", 4},  {"fp16", 2},  {"bf16", 2},
                                                {"int8", 1},  {"int16", 2}, {"int32", 4},
                                                {"int64", 8}, {"fp64", 8}};
  auto it = k.find(dt);
  return it == k.end() ? 0 : it->second;
}

int64_t numel(const std::string &dims) { // "4, 16"
  int64_t n = 1;
  std::stringstream ss(dims);
  for (std::string d; std::getline(ss, d, ',');)
    n *= std::stoll(d);
  return n;
}

/// What one PE's program copies, from the printed IR (see the file comment).
struct Traffic {
  int64_t moved = 0, heap = 0;
};
Traffic traffic(const std::string &ir) {
  Traffic t;
  std::map<std::string, int64_t> shmem_esize, value_bytes;
  static const std::regex heap_re(R"(heap=(\d+)B)");
  static const std::regex shmem_re(R"(^\s*shmem(\d+) group=\S+ (\w+) \[)");
  static const std::regex value_re(R"(^\s*(%\w+): \w+ (\w+) \[([0-9, ]+)\])");
  static const std::regex op_re(
      R"(= (shmem_put|shmem_get|shmem_clear_data|assemble|clone)\((%\w+)?\)? ?\{?(?:shmem=(\d+), view=\[([0-9, ]+)\])?)");
  std::stringstream ss(ir);
  for (std::string line; std::getline(ss, line);) {
    std::smatch m;
    if (std::regex_search(line, m, heap_re))
      t.heap += std::stoll(m[1]);
    if (std::regex_search(line, m, shmem_re)) {
      shmem_esize["shmem" + std::string(m[1])] = dtype_bytes(m[2]);
    } else if (std::regex_search(line, m, value_re)) {
      value_bytes[m[1]] = numel(m[3]) * dtype_bytes(m[2]);
    } else if (std::regex_search(line, m, op_re)) {
      std::string op = m[1];
      if (op == "shmem_put" || op == "assemble" || op == "clone")
        t.moved += value_bytes[m[2]];
      else if (line.find(" borrow") == std::string::npos) // borrowed: no copy on threads
        t.moved += numel(m[4]) * shmem_esize["shmem" + std::string(m[3])];
    }
  }
  return t;
}

/// One case, made on its first run and kept (no recompiling across Google Benchmark's runs).
struct Case {
  int n_pes;
  Size s;
  std::optional<Algo> algo; ///< none: the peer
  std::vector<pto::HostTensor> xs, ys;
  std::vector<const float *> x_ptrs;
  pto::HostTensor want;
  std::unique_ptr<pto::runtime::World> world;
  std::optional<AllreduceKernel> kernel;
  Traffic moved;

  Case(int n, Size s_, std::optional<Algo> a) : n_pes(n), s(s_), algo(a) {}
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
  c.world->run([&](int pe) {
    (*c.kernel)(c.xs[size_t(pe)], c.ys[size_t(pe)], static_cast<int>(c.algo->a));
  });
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

void run(benchmark::State &state, const std::shared_ptr<Case> &c) {
  c->setup();
  const bool ours = c->algo.has_value();
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
  if (const auto &made = c->kernel; ours && made)
    c->moved = traffic(made->last_ir());
  for (auto _ : state) {
    call(*c);
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, c->xs[0].size_bytes(), c->xs[0].numel());
  if (ours) {
    state.counters["moved_B"] = double(c->moved.moved);
    state.counters["heap_B"] = double(c->moved.heap);
  }
}

} // namespace

int main(int argc, char **argv) {
  for (Size s : kSizes)
    for (int n : kPes) {
      std::string base = std::string("allreduce/fp32/") + s.name + "/pes:" + std::to_string(n);
      for (const Algo &a : kAlgos)
        benchmark::RegisterBenchmark((base + "/" + a.name).c_str(), run,
                                     std::make_shared<Case>(n, s, a))
            ->UseRealTime();
      benchmark::RegisterBenchmark((base + "/peer").c_str(), run,
                                   std::make_shared<Case>(n, s, std::nullopt))
          ->UseRealTime();
    }
  for (Size s : kManySizes) {
    std::string base = std::string("allreduce/fp32/") + s.name + "/pes:" + std::to_string(kManyPes);
    for (const Algo &a : kAlgos)
      if (a.a != dist::AllreduceAlgorithm::TWO_SHOT)
        benchmark::RegisterBenchmark((base + "/" + a.name).c_str(), run,
                                     std::make_shared<Case>(kManyPes, s, a))
            ->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
