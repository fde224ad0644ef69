// sample.cpp - See sample.h.
#include "sample.h"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace sample {

void add_common_flags(CLI::App &app, CommonFlags &f, const std::vector<std::string> &dtypes) {
  app.add_option("--pes", f.pes, "number of processing elements (PEs), run as threads")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--seed", f.seed, "seed of the input generator")->capture_default_str();
  app.add_option("--dtype", f.dtype, "element type of the inputs and outputs")
      ->check(CLI::IsMember(dtypes))
      ->capture_default_str();
  app.add_flag("--check", f.check,
               "compare every PE's output with a plain C++ reference in double; ends with "
               "`check: PASS` or `check: FAIL` (exit 1)");
  app.add_flag("--interpret", f.interpret,
               "run the kernel in the reference interpreter instead of JIT-compiled code");
  app.add_option("--trace", f.trace,
                 "write a Chrome trace JSON of the run (one lane per PE; open in Perfetto)");
  app.add_option("--backend", f.backend, "PE backend (threads: one process, one thread per PE)")
      ->check(CLI::IsMember({"threads"}))
      ->capture_default_str();
}

int parse(CLI::App &app, int argc, char **argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2; // --help exits 0; bad flags exit 2
  }
  return -1;
}

void write_trace(const pto::runtime::World &world, const CommonFlags &f) {
  if (f.trace.empty())
    return;
  world.write_trace(f.trace);
  fmt::print("  trace  {} ({} events; open in Perfetto)\n", f.trace, world.trace_events());
}

pto::HostTensor random_tensor(pto::DataType dtype, const std::vector<int64_t> &shape, uint64_t seed) {
  pto::HostTensor t(dtype, shape);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> ints(-10, 10);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, pto::is_float(dtype) ? normal(rng) : ints(rng));
  return t;
}

ErrorStats compare(const pto::HostTensor &got, const std::vector<double> &want, double rtol,
                   double atol) {
  ErrorStats s;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(g) || std::isnan(w)) {
      if (std::isnan(g) != std::isnan(w))
        ++s.bad;
      continue;
    }
    double d = std::fabs(g - w);
    s.max_abs = std::max(s.max_abs, d);
    if (w != 0)
      s.max_rel = std::max(s.max_rel, d / std::fabs(w));
    if (d > atol + rtol * std::fabs(w))
      ++s.bad;
  }
  return s;
}

double as_dtype(double v, pto::DataType dt) {
  pto::HostTensor t(dt, {1});
  t.set(0, v);
  return t.get(0);
}

int finish_check(int64_t bad, const std::string &what) {
  if (bad == 0) {
    fmt::print("check: PASS ({})\n", what);
    return 0;
  }
  fmt::print("check: FAIL ({} elements outside tolerance)\n", bad);
  return 1;
}

double tolerance(pto::DataType dt) {
  switch (dt) {
  case pto::DT_FP32: return 1e-5;
  case pto::DT_FP16:
  case pto::DT_BF16: return 1e-2;
  case pto::DT_DOUBLE: return 1e-12;
  default: return 0;
  }
}

} // namespace sample
