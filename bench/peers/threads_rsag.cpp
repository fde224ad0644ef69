// threads_rsag.cpp - The machine's own reference for an allreduce (scripts/bench_comm.sh): fp32
// sum of 8 MiB per thread over N persistent std::threads of one process, hand-written as a
// reduce-scatter (thread p sums segment p of every input into its own output, in 16 KiB chunks)
// then an allgather (thread p copies every other thread's reduced segment into its output),
// with a std::barrier between the phases. No MPI, no ptojit: plain C++ built -O3 -march=native.
// Prints one PEER line per thread count (peer_stats.h): the time per call, measured by thread 0
// from the barrier that starts a call to the one that ends it.
//
//   build-bench/bench/threads_rsag [N ...]      (default: 2 8)
#include "peer_stats.h"

#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

void run(int n_threads, int64_t bytes, int calls) {
  const int64_t n = bytes / 4;
  std::vector<std::vector<float>> in(static_cast<size_t>(n_threads)),
      out(static_cast<size_t>(n_threads));
  for (int p = 0; p < n_threads; ++p) {
    in[size_t(p)].resize(size_t(n));
    out[size_t(p)].assign(size_t(n), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      in[size_t(p)][size_t(i)] = float((i * 7 + p * 3) % 13); // small integers: exact sums
  }
  auto seg_lo = [&](int p) { return n * p / n_threads; };
  std::barrier sync(n_threads);
  std::vector<double> us;
  auto body = [&](int p) {
    float *mine = out[size_t(p)].data();
    for (int c = 0; c < calls + 1; ++c) { // call 0 warms up
      sync.arrive_and_wait();
      const double t0 = peer::now_s();
      constexpr int64_t kChunk = 4096; // floats: 16 KiB, stays in L1/L2 across the inputs
      for (int64_t lo = seg_lo(p); lo < seg_lo(p + 1); lo += kChunk) {
        const int64_t hi = std::min(lo + kChunk, seg_lo(p + 1));
        const float *x0 = in[0].data();
        for (int64_t i = lo; i < hi; ++i)
          mine[i] = x0[i];
        for (int q = 1; q < n_threads; ++q) {
          const float *xq = in[size_t(q)].data();
          for (int64_t i = lo; i < hi; ++i)
            mine[i] += xq[i];
        }
      }
      sync.arrive_and_wait();
      for (int q = 0; q < n_threads; ++q)
        if (q != p)
          std::memcpy(mine + seg_lo(q), out[size_t(q)].data() + seg_lo(q),
                      size_t(seg_lo(q + 1) - seg_lo(q)) * sizeof(float));
      sync.arrive_and_wait();
      if (p == 0 && c > 0)
        us.push_back((peer::now_s() - t0) * 1e6);
    }
  };
  std::vector<std::thread> threads;
  for (int p = 0; p < n_threads; ++p)
    threads.emplace_back(body, p);
  for (auto &t : threads)
    t.join();
  for (int p = 0; p < n_threads; ++p)
    for (int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (int q = 0; q < n_threads; ++q)
        want += double((i * 7 + q * 3) % 13);
      if (out[size_t(p)][size_t(i)] != float(want)) {
        std::fprintf(stderr, "threads_rsag: wrong result at thread %d element %lld\n", p,
                     static_cast<long long>(i));
        std::exit(1);
      }
    }
  peer::report("threads_rsag/8MiB/threads:" + std::to_string(n_threads), us);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i)
    counts.push_back(std::atoi(argv[i]));
  if (counts.empty())
    counts = {2, 8};
  for (int n : counts) {
    if (n < 1 || n > 256) {
      std::fprintf(stderr, "threads_rsag: thread count %d is outside [1, 256]\n", n);
      return 2;
    }
    run(n, int64_t{8} << 20, 15);
  }
  return 0;
}
