// sample.h - What every sample shares: the common flags, seeded inputs, the error report and
// the closing `check: PASS|FAIL` line (exit 0 on pass, 1 on a failed check, 2 on bad flags).
#pragma once

#include "pto/host_tensor.h"
#include "pto/runtime/world.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace sample {

struct CommonFlags {
  int pes = 8;
  uint64_t seed = 42;
  bool check = false;
  bool interpret = false;
  std::string dtype = "fp32";
  std::string trace;             ///< --trace FILE: Chrome trace JSON of the run
  std::string backend = "threads";
};

/// Adds --pes, --seed, --check, --interpret, --trace, --backend and --dtype (restricted to
/// `dtypes`) to `app`.
void add_common_flags(CLI::App &app, CommonFlags &f, const std::vector<std::string> &dtypes);

/// Parses argv; returns -1 to go on, else the exit code (0 for --help, 2 for bad flags).
int parse(CLI::App &app, int argc, char **argv);

/// Writes the world's timeline to f.trace when it was asked for (and says where).
void write_trace(const pto::runtime::World &world, const CommonFlags &f);

/// A tensor of `dtype` filled from a seeded normal(0, 1) stream (ints: uniform in [-10, 10]).
pto::HostTensor random_tensor(pto::DataType dtype, const std::vector<int64_t> &shape, uint64_t seed);

/// Errors of `got` against a double reference `want` (same element count).
struct ErrorStats {
  double max_abs = 0, max_rel = 0;
  int64_t bad = 0; ///< elements with |d| > atol + rtol*|want|, or NaN mismatches
};
ErrorStats compare(const pto::HostTensor &got, const std::vector<double> &want, double rtol,
                   double atol);

/// `v` as an element of `dt` holds it (floats rounded to nearest even, ints truncated).
double as_dtype(double v, pto::DataType dt);

/// Prints the closing line `check: PASS (<what>)` or `check: FAIL (<bad> elements ...)` and
/// returns the exit code (0 or 1).
int finish_check(int64_t bad, const std::string &what);

/// rtol/atol per dtype: fp32 1e-5, fp16/bf16 1e-2 (DESIGN.md §9), fp64 1e-12, ints exact.
double tolerance(pto::DataType dt);

} // namespace sample
