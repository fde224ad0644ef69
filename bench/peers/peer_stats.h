// peer_stats.h - How the communication peers (mpi_peers.cpp, threads_rsag.cpp) report: the
// median, minimum and maximum of repeated timings, one line per case that scripts/bench_comm.sh
// parses:
//   PEER <case> median_us=<m> min_us=<a> max_us=<b> reps=<n>
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace peer {

/// Seconds on the steady clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Prints the PEER line of `name` for per-repetition times `us` (microseconds).
inline void report(const std::string &name, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  const double median = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
  std::printf("PEER %s median_us=%.4f min_us=%.4f max_us=%.4f reps=%zu\n", name.c_str(), median,
              us.front(), us.back(), n);
  std::fflush(stdout);
}

} // namespace peer
