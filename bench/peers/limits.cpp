// limits.cpp - See limits.h. Plain loops (-O3 -march=native -ffast-math: the read reduction
// vectorizes) for the bandwidths; intrinsics behind target attributes for the peaks, so the file
// builds for any x86-64 and runs only what cpuid reports.
#include "peers/limits.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace peer::limits {

namespace {

/// f(begin, end, t) over [0, n) in `threads` contiguous parts, the last on this thread.
template <class F> void split(int64_t n, int threads, F f) {
  std::vector<std::thread> ts;
  const int64_t part = (n + threads - 1) / threads;
  for (int t = 0; t + 1 < threads; ++t)
    ts.emplace_back([=] { f(t * part, std::min(n, (t + 1) * part), t); });
  f((threads - 1) * part, n, threads - 1);
  for (auto &t : ts)
    t.join();
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Runs body(iterations) with growing counts until it takes `seconds`; returns iterations/s.
template <class F> double rate(double seconds, F body) {
  int64_t iters = 1 << 16;
  for (;;) {
    double t0 = now_s();
    body(iters);
    double dt = now_s() - t0;
    if (dt >= seconds)
      return static_cast<double>(iters) / dt;
    iters *= 2;
  }
}

} // namespace

float read(const float *x, int64_t n, int threads) {
  std::vector<float> part(static_cast<size_t>(threads));
  split(n, threads, [&](int64_t b, int64_t e, int t) {
    // 64 partial sums: the vectorized loop keeps several accumulators, not one latency chain.
    float acc[64] = {};
    int64_t i = b;
    for (; i + 64 <= e; i += 64)
      for (int j = 0; j < 64; ++j)
        acc[j] += x[i + j];
    float s = 0;
    for (; i < e; ++i)
      s += x[i];
    for (float v : acc)
      s += v;
    part[static_cast<size_t>(t)] = s;
  });
  float s = 0;
  for (float p : part)
    s += p;
  return s;
}

void copy(const float *x, float *y, int64_t n, int threads) {
  split(n, threads, [&](int64_t b, int64_t e, int) { std::copy(x + b, x + e, y + b); });
}

void triad(float *a, const float *b, const float *c, float s, int64_t n, int threads) {
  split(n, threads, [&](int64_t lo, int64_t hi, int) {
    for (int64_t i = lo; i < hi; ++i)
      a[i] = b[i] + s * c[i];
  });
}

bool has_avx512f() { return __builtin_cpu_supports("avx512f"); }
bool has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
bool has_avx512_bf16() { return has_avx512f() && __builtin_cpu_supports("avx512bf16"); }

namespace {

// The peaks: independent multiply-adds in inline assembly (a compiler keeps an array of vector
// accumulators on the stack), more of them than the latency (4 cycles) times the ports (2).
void fma_zmm(int64_t iters) {
  for (int64_t k = 0; k < iters; ++k)
    asm volatile("vfmadd231ps %%zmm0, %%zmm1, %%zmm8\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm9\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm10\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm11\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm12\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm13\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm14\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm15\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm16\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm17\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm18\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm19\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm20\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm21\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm22\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm23\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm24\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm25\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm26\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm27\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm28\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm29\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm30\n\t"
                 "vfmadd231ps %%zmm0, %%zmm1, %%zmm31\n\t"
                 :
                 :
                 : "xmm0", "xmm1", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                   "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
                   "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
}

void fma_ymm(int64_t iters) {
  for (int64_t k = 0; k < iters; ++k)
    asm volatile("vfmadd231ps %%ymm0, %%ymm1, %%ymm2\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm3\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm4\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm5\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm6\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm7\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm8\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm9\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm10\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm11\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm12\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm13\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm14\n\t"
                 "vfmadd231ps %%ymm0, %%ymm1, %%ymm15\n\t"
                 :
                 :
                 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                   "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

void dpbf16_zmm(int64_t iters) {
  for (int64_t k = 0; k < iters; ++k)
    asm volatile("vdpbf16ps %%zmm0, %%zmm1, %%zmm8\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm9\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm10\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm11\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm12\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm13\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm14\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm15\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm16\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm17\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm18\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm19\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm20\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm21\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm22\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm23\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm24\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm25\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm26\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm27\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm28\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm29\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm30\n\t"
                 "vdpbf16ps %%zmm0, %%zmm1, %%zmm31\n\t"
                 :
                 :
                 : "xmm0", "xmm1", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                   "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
                   "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
}

} // namespace

double fma_peak_zmm(double seconds) {
  return has_avx512f() ? rate(seconds, fma_zmm) * 24 * 16 * 2 : 0;
}
double fma_peak_ymm(double seconds) {
  return has_avx2_fma() ? rate(seconds, fma_ymm) * 14 * 8 * 2 : 0;
}
double dpbf16_peak_zmm(double seconds) {
  return has_avx512_bf16() ? rate(seconds, dpbf16_zmm) * 24 * 16 * 4 : 0;
}

} // namespace peer::limits
