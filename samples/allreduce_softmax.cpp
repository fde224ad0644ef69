// allreduce_softmax.cpp - The flagship sample: N PEs each hold x_p [rows, cols]; the DSL program
// all-reduces (sum) them with shmem_put ADD into every PE, signals, waits, reads the sum back and
// computes a row softmax of it. --check compares every PE's output with a plain C++ reference
// computed in double.
//
//   allreduce_softmax --pes 8 --rows 256 --cols 1024 --dtype fp32 --check
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <mutex>

namespace dist = pto::distributed;

namespace {

/// The kernel, as its PyPTO original reads: a one-shot allreduce (reference §7.4) into an fp32
/// shmem tensor, then a row softmax in fp32, cast back to the input dtype.
void allreduce_softmax(pto::Tensor x, pto::Tensor y, int n_pes) {
  int64_t rows = x.shape(0).concrete(), cols = x.shape(1).concrete();
  pto::set_vec_tile_shapes(8, cols);
  auto acc = dist::create_shmem_tensor("world", n_pes, pto::DT_FP32, {rows, cols});
  auto me = dist::my_symbolic_pe("world");
  for (int p = 0; p < n_pes; ++p) { // unrolled at trace time, as in PyPTO
    auto put = dist::shmem_put(x, {0, 0}, acc, p, {.put_op = dist::AtomicType::ADD});
    dist::shmem_signal(acc, p, 1, p, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
  }
  auto ready = dist::shmem_wait_until(acc, me, n_pes, {.clear_signal = true, .pred = {x}});
  auto sum = dist::shmem_get(acc, me, {.pred = {ready}});
  auto m = pto::amax(sum, -1, {.keepdim = true});
  auto e = pto::exp(sum - m);
  auto soft = e / pto::sum(e, -1, {.keepdim = true});
  pto::assemble(x.dtype() == pto::DT_FP32 ? soft : pto::cast(soft, x.dtype()), {0, 0}, y);
}

/// Plain C++ reference in double: the sum over PEs of the inputs as stored, then softmax.
std::vector<double> reference(const std::vector<pto::HostTensor> &xs, int64_t rows, int64_t cols) {
  std::vector<double> out(static_cast<size_t>(rows * cols));
  std::vector<double> s(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) {
      double v = 0;
      for (auto &x : xs)
        v += x.get(r * cols + c);
      s[static_cast<size_t>(c)] = v;
      mx = std::max(mx, v);
    }
    double tot = 0;
    for (int64_t c = 0; c < cols; ++c)
      tot += std::exp(s[static_cast<size_t>(c)] - mx);
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = std::exp(s[static_cast<size_t>(c)] - mx) / tot;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"allreduce_softmax: N PEs all-reduce (sum) their [rows, cols] inputs with "
               "shmem_put ADD, then compute a row softmax of the sum (ptojit flagship sample)"};
  sample::CommonFlags f;
  int64_t rows = 256, cols = 1024;
  sample::add_common_flags(app, f, {"fp32", "fp16", "bf16"});
  app.add_option("--rows", rows, "rows of each PE's input (default 256, or 2048 / pes above 8 PEs)")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--cols", cols, "columns of each PE's input")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  rows = sample::default_per_pe(app, "--rows", rows, 256, f.pes);

  try {
    pto::DataType dt = pto::parse_dtype(f.dtype);
    // Per PE: input and output, the fp32 shmem accumulator, the kernel's fp32 locals (the sum,
    // exp, softmax and a cast: 4 tiles' worth of the whole tensor); the double reference.
    const int64_t elems = rows * cols;
    sample::MemoryEstimate need;
    need.add("inputs and outputs", 2 * int64_t{f.pes}, elems, pto::bytes_of(dt))
        .add("symmetric heaps", f.pes, elems, 4)
        .add("kernel locals", 4 * int64_t{f.pes}, elems, 4)
        .add("reference", f.check ? 1 : 0, elems, 8);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("allreduce_softmax {} rows={} cols={} pes={} backend={} mode={}\n", f.dtype, rows,
               cols, f.pes, f.backend, sample::mode_name(f));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < f.pes; ++p) {
      xs.push_back(sample::random_tensor(dt, {rows, cols}, f.seed + static_cast<uint64_t>(p)));
      ys.emplace_back(dt, std::vector<int64_t>{rows, cols});
    }
    auto kernel = pto::jit("allreduce_softmax", allreduce_softmax, sample::jit_options(f));
    auto world_ptr = sample::make_world(f, f.pes);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    auto t0 = std::chrono::steady_clock::now();
    world.run(
        [&](int pe) { kernel(xs[static_cast<size_t>(pe)], ys[static_cast<size_t>(pe)], f.pes); });
    auto t1 = std::chrono::steady_clock::now();
    double first_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    double compile_ms = kernel.stats().compile_ms;
    // A second call reuses the compiled code: its time is the run time.
    auto t2 = std::chrono::steady_clock::now();
    world.run(
        [&](int pe) { kernel(xs[static_cast<size_t>(pe)], ys[static_cast<size_t>(pe)], f.pes); });
    double run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t2).count();
    sample::share_outputs(f, {&ys}); // --backend mpi: every rank checks every PE
    fmt::print("  compile {:.1f} ms (trace + {})   first call {:.1f} ms   run {:.2f} ms\n",
               compile_ms, kernel.stats().compiles > 0 ? "LLVM O3 + ORC" : "interpreter setup",
               first_ms, run_ms);
    sample::write_trace(world, f);
    if (!f.check)
      return 0;
    auto want = reference(xs, rows, cols);
    double tol = sample::tolerance(dt);
    double worst_abs = 0, worst_rel = 0;
    int64_t bad = 0;
    for (int p = 0; p < f.pes; ++p) {
      auto s = sample::compare(ys[static_cast<size_t>(p)], want, tol, tol);
      worst_abs = std::max(worst_abs, s.max_abs);
      worst_rel = std::max(worst_rel, s.max_rel);
      bad += s.bad;
    }
    fmt::print("  max abs error {:.3g}   max rel error {:.3g}   tolerance {:.0e} (rel + abs)\n",
               worst_abs, worst_rel, tol);
    return sample::finish_check(
        bad, fmt::format("{} PEs x {} elements vs double reference", f.pes, rows * cols));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
