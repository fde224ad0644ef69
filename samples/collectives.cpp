// collectives.cpp - Runs one collective of pto::distributed (collectives.h) on N PEs and checks
// every PE's result against a plain C++ computation over all inputs, in double.
//
//   collectives --op allreduce --reduction prod --pes 8 --dtype bf16 --rows 10 --cols 7 --check
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>

namespace dist = pto::distributed;

namespace {

/// Small integers (exact in every dtype; products of n of them stay in range for int8 when
/// the reduction is prod: values are -1, 1 or 2 with few 2s).
double input(int p, int64_t i, bool prod) {
  if (prod)
    return (i + 3 * p) % 7 == 0 ? 2.0 : ((i + p) % 2 ? 1.0 : -1.0);
  return static_cast<double>((i * 5 + p * 3) % 19 - 9);
}

double combine(dist::Reduction op, double a, double b) {
  switch (op) {
  case dist::Reduction::SUM:
    return a + b;
  case dist::Reduction::MAX:
    return std::max(a, b);
  case dist::Reduction::MIN:
    return std::min(a, b);
  case dist::Reduction::PROD:
    return a * b;
  }
  return a;
}

/// What an int of `dt` holds for `v` (two's complement wrap), or `v` for floats.
double wrapped_in_dtype(double v, pto::DataType dt) {
  pto::HostTensor t(dt, {1});
  if (!pto::is_float(dt)) {
    int bits = static_cast<int>(pto::bytes_of(dt)) * 8;
    auto u = static_cast<uint64_t>(static_cast<int64_t>(v));
    if (bits < 64) {
      u &= (uint64_t{1} << bits) - 1;
      if (u >> (bits - 1))
        u |= ~((uint64_t{1} << bits) - 1);
    }
    return static_cast<double>(static_cast<int64_t>(u));
  }
  t.set(0, v);
  return t.get(0);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"collectives: one pto::distributed collective on N PEs, checked against plain C++"};
  sample::CommonFlags f;
  std::string op = "allreduce", reduction = "sum", algorithm = "auto";
  int64_t rows = 10, cols = 7;
  int root = 0;
  sample::add_common_flags(app, f,
                           {"int8", "int16", "int32", "int64", "fp16", "bf16", "fp32", "fp64"});
  app.add_option("--op", op, "the collective")
      ->check(
          CLI::IsMember({"allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all"}))
      ->capture_default_str();
  app.add_option("--reduction", reduction, "for allreduce and reduce_scatter only")
      ->check(CLI::IsMember({"sum", "max", "min", "prod"}))
      ->capture_default_str();
  app.add_option("--algorithm", algorithm, "allreduce algorithm (--op allreduce only)")
      ->check(CLI::IsMember({"auto", "one_shot", "two_shot", "rs_ag"}))
      ->capture_default_str();
  app.add_option("--rows", rows,
                 "rows of each PE's input (the exchanged dim; default 10, or 80 / pes above 8 "
                 "PEs). all_to_all sends PE j rows/pes rows, one more to the first rows % pes "
                 "PEs")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--cols", cols, "columns of each PE's input")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  app.add_option("--root", root, "broadcast root PE, in [0, pes) (--op broadcast only)")
      ->check(sample::int_range(0, 4095))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  rows = sample::default_per_pe(app, "--rows", rows, 10, f.pes);
  // A flag the chosen --op does not read is a mistake, not a no-op.
  struct OpFlag {
    const char *flag, *ops;
    bool applies;
  };
  for (const OpFlag &g : {OpFlag{"--root", "broadcast", op == "broadcast"},
                          OpFlag{"--algorithm", "allreduce", op == "allreduce"},
                          OpFlag{"--reduction", "allreduce and reduce_scatter",
                                 op == "allreduce" || op == "reduce_scatter"}})
    if (app.count(g.flag) > 0 && !g.applies) {
      fmt::print(stderr, "error: {} applies to --op {} only, not to --op {}\n", g.flag, g.ops, op);
      return 2;
    }

  try {
    const int n = f.pes;
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    const auto red = dist::parse_reduction(reduction);
    const bool prod = red == dist::Reduction::PROD && (op == "allreduce" || op == "reduce_scatter");
    const auto algo = algorithm == "one_shot"   ? dist::AllreduceAlgorithm::ONE_SHOT
                      : algorithm == "two_shot" ? dist::AllreduceAlgorithm::TWO_SHOT
                      : algorithm == "rs_ag"    ? dist::AllreduceAlgorithm::RS_AG
                                                : dist::AllreduceAlgorithm::AUTO;
    if (root >= n) { // a bad --root is an error for every --op, not only where it is read
      fmt::print(stderr, "error: --root {} is out of range [0, {})\n", root, n);
      return 2;
    }
    const int64_t B = (rows + n - 1) / n;
    // all_to_all: PE i sends rows [first(j), first(j) + count(j)) of its input to PE j, the same
    // split on every PE (equal blocks when rows % n == 0, else per-peer counts).
    auto count = [&](int j) { return rows / n + (j < rows % n ? 1 : 0); };
    auto first = [&](int j) { return j * (rows / n) + std::min<int64_t>(j, rows % n); };
    std::vector<int64_t> out_shape{rows, cols};
    if (op == "allgather")
      out_shape = {n * rows, cols};
    if (op == "reduce_scatter")
      out_shape = {B, cols};
    if (op == "all_to_all")
      out_shape = {n * B, cols}; // PE j gets n * count(j) valid rows
    // Per PE: input, output, the collective's shmem buffers and its local copies of what it
    // received: about two [rows, cols] blocks each, but for the collectives that can gather
    // every PE's whole input (allgather, one-shot allreduce; reduce_scatter's per-sender slots)
    // one per PE of the world in the heap and two (the blocks, and them joined) as locals.
    // Half-precision sums accumulate in fp32.
    const bool gathers = op == "allgather" || op == "allreduce" || op == "reduce_scatter";
    const int64_t heap_copies = gathers ? n + 1 : 2, local_copies = gathers ? 2 * n + 1 : 2;
    const int64_t acc_bytes = std::max<int64_t>(pto::bytes_of(dt), 4);
    sample::MemoryEstimate need;
    need.add("inputs", n, {rows, cols}, dt)
        .add("outputs", n, out_shape, dt)
        .add("symmetric heaps", n * heap_copies, rows * cols, acc_bytes)
        .add("kernel locals", n * local_copies, rows * cols, acc_bytes);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("collectives {} {} {} rows={} cols={} pes={} backend={} mode={}\n", op,
               op == "allreduce" || op == "reduce_scatter" ? reduction : "-", f.dtype, rows, cols,
               n, f.backend, sample::mode_name(f));

    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      // Made here, then moved in: an error names this line, not libstdc++'s (README, "Errors").
      xs.push_back(pto::HostTensor(dt, std::vector<int64_t>{rows, cols}));
      for (int64_t i = 0; i < rows * cols; ++i)
        xs.back().set(i, input(p, i, prod));
      ys.push_back(pto::HostTensor(dt, out_shape));
      ys.back().fill(-3); // marks rows a collective leaves untouched
    }
    std::vector<int64_t> counts;
    for (int j = 0; j < n; ++j)
      counts.push_back(count(j));
    auto kernel = pto::jit(
        "collective_" + op,
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(std::min<int64_t>(rows, 8), cols);
          pto::Tensor r;
          if (op == "allreduce")
            r = dist::allreduce(x, red, {.algorithm = algo});
          else if (op == "allgather")
            r = dist::allgather(x);
          else if (op == "reduce_scatter")
            r = dist::reduce_scatter(x, red);
          else if (op == "broadcast")
            r = dist::broadcast(x, root);
          else if (rows % n == 0)
            r = dist::all_to_all(x);
          else // one zero row of slack: the library reads every block through a window of the
               // largest block's size, which would end past x for the smaller last blocks
            r = dist::all_to_all(pto::concat({x, pto::zeros({1, cols}, x.dtype())}, 0),
                                 std::vector<std::vector<int64_t>>(size_t(n), counts));
          pto::assemble(r, {0, 0}, y);
        },
        sample::jit_options(f));
    auto world_ptr = sample::make_world(f, n);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    auto t0 = std::chrono::steady_clock::now();
    world.run([&](int pe) { kernel(xs[size_t(pe)], ys[size_t(pe)]); });
    sample::share_outputs(f, {&ys}); // --backend mpi: every rank checks every PE
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("  first call {:.1f} ms (compile {:.1f} ms)\n", ms, kernel.stats().compile_ms);
    sample::write_trace(world, f);
    if (!f.check)
      return 0;

    // The expected output of PE p, element by element, from the inputs alone.
    auto expected = [&](int p, int64_t r, int64_t c) -> double {
      auto x = [&](int q, int64_t row) { return xs[size_t(q)].get(row * cols + c); };
      if (op == "allreduce" || op == "reduce_scatter") {
        int64_t row = op == "allreduce" ? r : p * B + r;
        if (row >= rows)
          return -3; // past the last row: untouched
        double v = x(0, row);
        for (int q = 1; q < n; ++q)
          v = wrapped_in_dtype(combine(red, v, x(q, row)), dt);
        return v;
      }
      if (op == "allgather")
        return x(static_cast<int>(r / rows), r % rows);
      if (op == "broadcast")
        return x(root, r);
      // all_to_all: block q of my result is my block of PE q's input; rows past the n blocks
      // of count(p) rows are untouched.
      const int64_t mine = count(p);
      if (r >= n * mine)
        return -3;
      return x(static_cast<int>(r / mine), first(p) + r % mine);
    };
    int64_t bad = 0;
    double worst = 0;
    const double tol = pto::is_float(dt) && red == dist::Reduction::SUM ? sample::tolerance(dt) : 0;
    for (int p = 0; p < n; ++p)
      for (int64_t r = 0; r < out_shape[0]; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          double want = expected(p, r, c), got = ys[size_t(p)].get(r * cols + c);
          double d = std::fabs(got - want);
          worst = std::max(worst, d);
          if (d > tol * (1 + std::fabs(want)))
            ++bad;
        }
    fmt::print("  max abs error {:.3g} (tolerance {:.0e})\n", worst, tol);
    return sample::finish_check(bad, fmt::format("{} PEs x {} elements", n, out_shape[0] * cols));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
