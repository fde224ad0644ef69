// bench_common.h - What the bench suites share: seeded inputs, the case names the driver pairs
// (scripts/bench.sh matches ".../ours" with ".../peer" and ".../peer_fastmath"), the result check
// every case runs once before it is timed, and the byte counters.
#pragma once

#include "pto/host_tensor.h"

#include <benchmark/benchmark.h>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace bench {

/// A tensor of `dtype` filled from a seeded normal(0, 1) stream (rounded to the dtype).
inline pto::HostTensor random_tensor(pto::DataType dtype, const std::vector<int64_t> &shape,
                                     uint64_t seed) {
  pto::HostTensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, dist(rng));
  return t;
}

/// "ROWSxCOLS", the size part of a case name.
inline std::string dims(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

/// Largest |a - b| / (atol + rtol * |b|) over the elements; <= 1 means they agree.
inline double worst_mismatch(const pto::HostTensor &a, const pto::HostTensor &b, double rtol,
                             double atol) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.get(i), y = b.get(i);
    double r = std::abs(x - y) / (atol + rtol * std::abs(y));
    if (std::isnan(r) || std::isnan(x) != std::isnan(y))
      return INFINITY;
    worst = std::max(worst, r);
  }
  return worst;
}

/// Marks the case failed (the driver shows it as an error, not a time) when `got` and `want`
/// differ beyond the tolerance. Returns false if so: the caller must return before timing.
inline bool check_close(benchmark::State &state, const pto::HostTensor &got,
                        const pto::HostTensor &want, double tol) {
  double w = worst_mismatch(got, want, tol, tol);
  if (w <= 1)
    return true;
  state.SkipWithError(("result differs from the reference: worst mismatch " + std::to_string(w) +
                       " x tolerance " + std::to_string(tol))
                          .c_str());
  return false;
}

/// Sets bytes/s (bytes moved to and from memory per call) and elements/s.
inline void set_counters(benchmark::State &state, int64_t bytes_per_call, int64_t elems_per_call) {
  state.SetBytesProcessed(state.iterations() * bytes_per_call);
  state.SetItemsProcessed(state.iterations() * elems_per_call);
}

} // namespace bench
