// matmul_bench.cpp - C = A @ B of [M, K] x [K, N]: a pto::jit kernel (pto::matmul, packed AVX2
// FMA micro-kernel) against a naive i-k-j loop built with -O3 -march=native ("peer", the loop a
// user would write; GCC vectorizes the inner j loop with FMA) and, when the build found it,
// single-threaded OpenBLAS sgemm ("openblas"; our kernel runs on one core too). Counter
// "FLOP/s" is 2 M N K per call. fp32; bf16 -> fp32 and int8 -> int32 against the same naive loop.
//
//   build-bench/bench/matmul_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include "pto/pto.h"

#include "bench_common.h"

#include <benchmark/benchmark.h>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#ifdef PTO_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

struct Size {
  int64_t m, k, n;
};
constexpr Size kSizes[] = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {64, 1024, 1024}};

/// The kernel: one matmul with a cube tile sized for a CPU (the A block of 96 x 256 fp32 and a
/// 256 x 16 B panel stay in L2 and L1).
void mm(pto::Tensor a, pto::Tensor b, pto::Tensor c) {
  pto::set_cube_tile_shapes({48, 96}, {64, 256}, {64, 256});
  pto::set_vec_tile_shapes(64, 256);
  pto::assemble(pto::matmul(a, b, c.dtype()), {0, 0}, c);
}

/// The naive loop: i-k-j, so the inner loop runs along rows of B and C (vectorizable).
__attribute__((noinline)) void naive_f32(const float *a, const float *b, float *c, int64_t M,
                                         int64_t K, int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    float *ci = c + i * N;
    for (int64_t j = 0; j < N; ++j)
      ci[j] = 0;
    for (int64_t k = 0; k < K; ++k) {
      float aik = a[i * K + k];
      const float *bk = b + k * N;
      for (int64_t j = 0; j < N; ++j)
        ci[j] += aik * bk[j];
    }
  }
}
__attribute__((noinline)) void naive_bf16(const uint16_t *a, const uint16_t *b, float *c, int64_t M,
                                          int64_t K, int64_t N) {
  auto f = [](uint16_t h) {
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  for (int64_t i = 0; i < M; ++i) {
    float *ci = c + i * N;
    for (int64_t j = 0; j < N; ++j)
      ci[j] = 0;
    for (int64_t k = 0; k < K; ++k) {
      float aik = f(a[i * K + k]);
      const uint16_t *bk = b + k * N;
      for (int64_t j = 0; j < N; ++j)
        ci[j] += aik * f(bk[j]);
    }
  }
}
__attribute__((noinline)) void naive_i8(const int8_t *a, const int8_t *b, int32_t *c, int64_t M,
                                        int64_t K, int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    int32_t *ci = c + i * N;
    for (int64_t j = 0; j < N; ++j)
      ci[j] = 0;
    for (int64_t k = 0; k < K; ++k) {
      int32_t aik = a[i * K + k];
      const int8_t *bk = b + k * N;
      for (int64_t j = 0; j < N; ++j)
        ci[j] += aik * bk[j];
    }
  }
}

enum class Who { Ours, Naive, OpenBlas };

using MmKernel = decltype(pto::jit("matmul_bench", mm));

struct Case {
  pto::DataType in, out;
  Size s;
  pto::HostTensor a, b, c, want;
  std::optional<MmKernel> kernel;

  Case(pto::DataType in_, pto::DataType out_, Size s_) : in(in_), out(out_), s(s_) {}
  void run_naive(pto::HostTensor &dst) {
    if (in == pto::DT_FP32)
      naive_f32(a.data_as<float>(), b.data_as<float>(), dst.data_as<float>(), s.m, s.k, s.n);
    else if (in == pto::DT_BF16)
      naive_bf16(a.data_as<uint16_t>(), b.data_as<uint16_t>(), dst.data_as<float>(), s.m, s.k, s.n);
    else
      naive_i8(a.data_as<int8_t>(), b.data_as<int8_t>(), dst.data_as<int32_t>(), s.m, s.k, s.n);
  }
  void setup() {
    if (a.numel() != 0)
      return;
    a = bench::random_tensor(in, {s.m, s.k}, 1);
    b = bench::random_tensor(in, {s.k, s.n}, 2);
    if (in == pto::DT_INT8) { // small ints: normal(0, 1) rounds to mostly 0, +-1, +-2
      for (int64_t i = 0; i < a.numel(); ++i)
        a.set(i, static_cast<double>((i * 7919) % 255 - 127));
      for (int64_t i = 0; i < b.numel(); ++i)
        b.set(i, static_cast<double>((i * 104729) % 255 - 127));
    }
    c = pto::HostTensor(out, {s.m, s.n});
    want = pto::HostTensor(out, {s.m, s.n});
    run_naive(want);
  }
};

void run(benchmark::State &state, const std::shared_ptr<Case> &c, Who who) {
  c->setup();
  std::function<void()> call;
  switch (who) {
  case Who::Ours:
    if (!c->kernel)
      c->kernel.emplace(pto::jit("matmul_bench", mm));
    call = [c] { (*c->kernel)(c->a, c->b, c->c); };
    break;
  case Who::Naive:
    call = [c] { c->run_naive(c->c); };
    break;
  case Who::OpenBlas:
#ifdef PTO_HAVE_OPENBLAS
    openblas_set_num_threads(1);
    call = [c] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(c->s.m),
                  static_cast<int>(c->s.n), static_cast<int>(c->s.k), 1.0f, c->a.data_as<float>(),
                  static_cast<int>(c->s.k), c->b.data_as<float>(), static_cast<int>(c->s.n), 0.0f,
                  c->c.data_as<float>(), static_cast<int>(c->s.n));
    };
#endif
    break;
  }
  call(); // once untimed: compiles ours, and checks the result
  // fp32 sums of up to 1024 products of normal(0, 1) values: ~1e-4 relative differences
  // between summation orders are expected.
  if (!bench::check_close(state, c->c, c->want, c->out == pto::DT_INT32 ? 1e-9 : 1e-3))
    return;
  for (auto _ : state)
    call();
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(c->s.m * c->s.k * c->s.n),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  struct Dt {
    pto::DataType in, out;
    const char *name;
  };
  for (Dt dt : {Dt{pto::DT_FP32, pto::DT_FP32, "fp32"}, Dt{pto::DT_BF16, pto::DT_FP32, "bf16"},
                Dt{pto::DT_INT8, pto::DT_INT32, "int8"}}) {
    for (Size s : kSizes) {
      if (dt.in != pto::DT_FP32 && s.m != 512)
        continue;
      auto c = std::make_shared<Case>(dt.in, dt.out, s);
      std::string base = std::string("matmul_") + dt.name + "/" + std::to_string(s.m) + "x" +
                         std::to_string(s.k) + "x" + std::to_string(s.n);
      benchmark::RegisterBenchmark((base + "/ours").c_str(),
                                   [c](benchmark::State &st) { run(st, c, Who::Ours); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark((base + "/peer").c_str(),
                                   [c](benchmark::State &st) { run(st, c, Who::Naive); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
#ifdef PTO_HAVE_OPENBLAS
      if (dt.in == pto::DT_FP32)
        benchmark::RegisterBenchmark((base + "/openblas").c_str(),
                                     [c](benchmark::State &st) { run(st, c, Who::OpenBlas); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
#endif
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
