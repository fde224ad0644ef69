// elementwise_bench.cpp - Elementwise kernels over [1024, 1024] fp32 against hand-written loops
// (peers/loops.h, -O3 -march=native; "peer_fastmath" adds -ffast-math):
//   chain: y = exp(x * a + b) - x / c, one fused pto::jit kernel (compute-bound: exp);
//   copy:  y = x, and scale: y = x * s, the STREAM-style bandwidth limit of the machine.
//
//   build-bench/bench/elementwise_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include "pto/pto.h"

#include "bench_common.h"
#include "peers/loops.h"

#include <benchmark/benchmark.h>
#include <functional>
#include <memory>

namespace {

constexpr int64_t kRows = 1024, kCols = 1024;
constexpr float kA = 0.5f, kB = 0.25f, kC = 3.0f, kS = 1.5f;

using Fn = std::function<void(const pto::HostTensor &, pto::HostTensor &)>;

// The kernels. Tiles of 8 rows x 1024 columns (32 KiB of fp32), as the README's softmax.
void chain(pto::Tensor x, pto::Tensor y, double a, double b, double c) {
  pto::set_vec_tile_shapes(8, 1024);
  pto::assemble(pto::exp(x * a + b) - x / c, {0, 0}, y);
}
void copy(pto::Tensor x, pto::Tensor y) {
  pto::set_vec_tile_shapes(8, 1024);
  pto::assemble(x, {0, 0}, y);
}
void scale(pto::Tensor x, pto::Tensor y, double s) {
  pto::set_vec_tile_shapes(8, 1024);
  pto::assemble(x * s, {0, 0}, y);
}

/// One case: ours and its peers; tensors made on the first run and kept across the runs.
struct Case {
  std::function<Fn()> make_ours; ///< builds the pto::jit kernel (not yet compiled)
  Fn reference;                  ///< the strict peer: the expected values
  pto::HostTensor x, y, want;
  Fn ours;

  void setup() {
    if (x.numel() > 0)
      return;
    x = bench::random_tensor(pto::DT_FP32, {kRows, kCols}, 2);
    y = pto::HostTensor(pto::DT_FP32, {kRows, kCols});
    want = pto::HostTensor(pto::DT_FP32, {kRows, kCols});
    reference(x, want);
    ours = make_ours();
  }
};

/// Read x, write y: 8 bytes per element (the STREAM count, no write-allocate traffic).
int64_t bytes_moved(const pto::HostTensor &x) { return 2 * x.size_bytes(); }

/// Times `peer`, or ours when `peer` is empty.
void run(benchmark::State &state, const std::shared_ptr<Case> &c, const Fn &peer) {
  c->setup();
  const Fn &f = peer ? peer : c->ours;
  f(c->x, c->y); // untimed first call: ours traces and compiles here
  if (!bench::check_close(state, c->y, c->want, 1e-5))
    return;
  for (auto _ : state) {
    f(c->x, c->y);
    benchmark::DoNotOptimize(c->y.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, bytes_moved(c->x), c->x.numel());
}

float *out(pto::HostTensor &y) { return y.data_as<float>(); }
const float *in(const pto::HostTensor &x) { return x.data_as<float>(); }

void add_case(const std::string &name, std::function<Fn()> make_ours, const Fn &strict,
              const Fn &fast = {}) {
  auto c = std::make_shared<Case>();
  c->make_ours = std::move(make_ours);
  c->reference = strict;
  std::string base = name + "/" + bench::dims(kRows, kCols);
  benchmark::RegisterBenchmark((base + "/ours").c_str(), run, c, Fn{})->UseRealTime();
  benchmark::RegisterBenchmark((base + "/peer").c_str(), run, c, strict)->UseRealTime();
  if (fast)
    benchmark::RegisterBenchmark((base + "/peer_fastmath").c_str(), run, c, fast)->UseRealTime();
}

} // namespace

int main(int argc, char **argv) {
  constexpr int64_t n = kRows * kCols; // a constant: the lambdas need not capture it
  Fn chain_fast = [](const pto::HostTensor &x, pto::HostTensor &y) {
    peer::fast::fused_chain(in(x), out(y), n, kA, kB, kC);
  };
  add_case(
      "chain",
      [] {
        return Fn([k = pto::jit("chain_bench", chain)](const pto::HostTensor &x,
                                                       pto::HostTensor &y) mutable {
          k(x, y, double(kA), double(kB), double(kC));
        });
      },
      [](const pto::HostTensor &x, pto::HostTensor &y) {
        peer::strict::fused_chain(in(x), out(y), n, kA, kB, kC);
      },
      chain_fast);
  add_case(
      "copy",
      [] {
        return Fn([k = pto::jit("copy_bench", copy)](const pto::HostTensor &x,
                                                     pto::HostTensor &y) mutable { k(x, y); });
      },
      [](const pto::HostTensor &x, pto::HostTensor &y) { peer::strict::copy(in(x), out(y), n); });
  add_case(
      "scale",
      [] {
        return Fn([k = pto::jit("scale_bench", scale)](const pto::HostTensor &x,
                                                       pto::HostTensor &y) mutable {
          k(x, y, double(kS));
        });
      },
      [](const pto::HostTensor &x, pto::HostTensor &y) {
        peer::strict::scale(in(x), out(y), n, kS);
      });
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
