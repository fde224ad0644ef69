// compare_cases.h - bench/compare's measurement (compare_cases.cpp): the same-run alternation of
// ours and a peer, the limits, the cases of issue 11's target table and the table it prints.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace cmp {

struct Options {
  bool quick = false;
  int rounds = 0;        ///< rounds per case (each round times ours once and each peer once)
  std::string filter;    ///< only cases whose name contains it
  bool cpu_time = false; ///< time with the process's CPU clock (tuning on a busy machine)
};

/// Seconds on the steady clock.
double now_s();
/// The median of `v` (not empty).
double median(std::vector<double> v);
/// "12.3 ms", "456 us", "78 ns": a duration given in milliseconds, 3 significant digits.
std::string fmt_ms(double ms);

/// Measures the limits, runs every case and prints the table; returns the exit status.
int run_all(const Options &o);

} // namespace cmp
