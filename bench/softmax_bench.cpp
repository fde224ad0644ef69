// softmax_bench.cpp - Row softmax of [rows, cols]: the README's pto::jit kernel against the
// hand-written loop (peers/loops.h) built with -O3 -march=native, IEEE-strict ("peer") and with
// -ffast-math ("peer_fastmath"). fp32 storage, and bf16 storage computed in fp32.
//
//   build-bench/bench/softmax_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include "pto/pto.h"

#include "bench_common.h"
#include "peers/loops.h"

#include <benchmark/benchmark.h>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

namespace {

struct Size {
  int64_t rows, cols;
};
constexpr Size kSizes[] = {{256, 1024}, {64, 4096}, {1024, 128}};

/// The README's softmax; fp16/bf16 inputs are cast to fp32 and back, as the peer computes.
void softmax(pto::Tensor x, pto::Tensor y) {
  int64_t cols = x.shape(1).concrete();
  pto::set_vec_tile_shapes(8, cols); // a tile holds whole rows, so the reductions fuse per tile
  pto::Tensor xf = x.dtype() == pto::DT_FP32 ? x : pto::cast(x, pto::DT_FP32);
  auto m = pto::amax(xf, -1, {.keepdim = true});
  auto e = pto::exp(xf - m);
  auto soft = e / pto::sum(e, -1, {.keepdim = true});
  pto::assemble(x.dtype() == pto::DT_FP32 ? soft : pto::cast(soft, x.dtype()), {0, 0}, y);
}

using PeerFn = std::function<void(const pto::HostTensor &, pto::HostTensor &)>;

PeerFn peer_fn(pto::DataType dt, bool fast) {
  if (dt == pto::DT_FP32)
    return [fast](const pto::HostTensor &x, pto::HostTensor &y) {
      auto f = fast ? peer::fast::softmax_fp32 : peer::strict::softmax_fp32;
      f(x.data_as<float>(), y.data_as<float>(), x.shape()[0], x.shape()[1]);
    };
  return [fast](const pto::HostTensor &x, pto::HostTensor &y) {
    auto f = fast ? peer::fast::softmax_bf16 : peer::strict::softmax_bf16;
    f(x.data_as<uint16_t>(), y.data_as<uint16_t>(), x.shape()[0], x.shape()[1]);
  };
}

double tolerance(pto::DataType dt) { return dt == pto::DT_FP32 ? 1e-5 : 1e-2; }

/// Bytes per call: read x once, write y once (what the fused kernel must move at least).
int64_t bytes_moved(const pto::HostTensor &x) { return 2 * x.size_bytes(); }

using SoftmaxKernel = decltype(pto::jit("softmax_bench", softmax));

/// One case's tensors and kernel, made on the case's first run and kept: Google Benchmark calls
/// a case several times (iteration-count probing, repetitions) and each must not recompile.
struct Case {
  pto::DataType dt;
  Size s;
  pto::HostTensor x, y, want;
  std::optional<SoftmaxKernel> kernel;

  Case(pto::DataType dt_, Size s_) : dt(dt_), s(s_) {}
  /// Inputs, the reference (the strict peer) and, for ours, the compiled kernel.
  void setup(bool ours) {
    if (x.numel() == 0) {
      x = bench::random_tensor(dt, {s.rows, s.cols}, 1);
      y = pto::HostTensor(dt, {s.rows, s.cols});
      want = pto::HostTensor(dt, {s.rows, s.cols});
      peer_fn(dt, false)(x, want);
    }
    if (ours && !kernel)
      kernel.emplace(pto::jit("softmax_bench", softmax));
  }
};

void run_ours(benchmark::State &state, const std::shared_ptr<Case> &c) {
  c->setup(true);
  auto &made = c->kernel;
  if (!made) {
    state.SkipWithError("softmax_bench: setup made no kernel");
    return;
  }
  auto &kernel = *made;
  kernel(c->x, c->y); // untimed; on the first run it traces and compiles
  if (!bench::check_close(state, c->y, c->want, tolerance(c->dt)))
    return;
  for (auto _ : state) {
    kernel(c->x, c->y);
    benchmark::DoNotOptimize(c->y.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, bytes_moved(c->x), c->x.numel());
}

void run_peer(benchmark::State &state, const std::shared_ptr<Case> &c, bool fast) {
  c->setup(false);
  auto f = peer_fn(c->dt, fast);
  f(c->x, c->y); // an untimed first call, as ours gets
  if (!bench::check_close(state, c->y, c->want, tolerance(c->dt)))
    return;
  for (auto _ : state) {
    f(c->x, c->y);
    benchmark::DoNotOptimize(c->y.data());
    benchmark::ClobberMemory();
  }
  bench::set_counters(state, bytes_moved(c->x), c->x.numel());
}

} // namespace

int main(int argc, char **argv) {
  for (auto [dt, dt_name] : {std::pair{pto::DT_FP32, "fp32"}, std::pair{pto::DT_BF16, "bf16"}}) {
    for (Size s : kSizes) {
      std::string base = std::string("softmax_") + dt_name + "/" + bench::dims(s.rows, s.cols);
      auto c = std::make_shared<Case>(dt, s);
      benchmark::RegisterBenchmark((base + "/ours").c_str(), run_ours, c)->UseRealTime();
      benchmark::RegisterBenchmark((base + "/peer").c_str(), run_peer, c, false)->UseRealTime();
      benchmark::RegisterBenchmark((base + "/peer_fastmath").c_str(), run_peer, c, true)
          ->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
