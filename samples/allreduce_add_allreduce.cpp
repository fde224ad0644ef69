// allreduce_add_allreduce.cpp - PyPTO's AllReduce -> Add -> AllReduce test (reference §7.6):
// a one-shot allreduce into a shmem tensor, y = 2 * sum, then the SAME shmem tensor is reused
// for a second allreduce after the reuse protocol (barrier, clear data and signals, join,
// barrier). Golden: AR(x), then 2 * AR(x), then AR of that = 2 * n * AR(x).
//
//   allreduce_add_allreduce --pes 4 --rows 128 --cols 256 --dtype bf16 --check
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <cmath>
#include <fmt/format.h>

namespace dist = pto::distributed;

namespace {

/// One-shot allreduce into `acc` (reference §7.4), after `pred`; returns the sum in x's dtype.
pto::Tensor one_shot(const pto::Tensor &x, const dist::ShmemTensor &acc, int n,
                     const pto::Tensor &pred) {
  auto me = dist::my_symbolic_pe("world");
  for (int p = 0; p < n; ++p) {
    auto put =
        dist::shmem_put(x, {0, 0}, acc, p, {.put_op = dist::AtomicType::ADD, .pred = {pred}});
    dist::shmem_signal(acc, p, 1, p, {.sig_op = dist::AtomicType::ADD, .pred = {put}});
  }
  auto ready = dist::shmem_wait_until(acc, me, n, {.clear_signal = true, .pred = {x}});
  return dist::shmem_get(acc, me, {.pred = {ready}, .dtype = x.dtype()});
}

void kernel(pto::Tensor x, pto::Tensor y, int n) {
  int64_t rows = x.shape(0).concrete(), cols = x.shape(1).concrete();
  pto::set_vec_tile_shapes(std::min<int64_t>(rows, 16), cols);
  // fp16/bf16 accumulate in fp32 (ADD into fp32 data); other dtypes in their own.
  bool half = x.dtype() == pto::DT_FP16 || x.dtype() == pto::DT_BF16;
  auto acc = dist::create_shmem_tensor("world", n, half ? pto::DT_FP32 : x.dtype(), {rows, cols});
  auto barrier_signal = dist::create_shmem_signal("world", n);
  auto first = one_shot(x, acc, n, x);
  auto doubled = first + first;
  // The reuse protocol (§7.6) before acc is written again.
  auto reset = dist::shmem_reset(acc, barrier_signal, {first});
  auto second = one_shot(doubled, acc, n, reset);
  pto::assemble(second, {0, 0}, y);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"allreduce_add_allreduce: AR(x), doubled, AR again through the same shmem "
               "tensor after the reuse protocol (PyPTO §7.6)"};
  sample::CommonFlags f;
  f.pes = 4;
  int64_t rows = 64, cols = 256;
  sample::add_common_flags(app, f, {"fp32", "bf16", "fp16", "int32"});
  app.add_option("--rows", rows, "rows (default 64, or 512 / pes above 8 PEs)")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 16));
  app.add_option("--cols", cols, "cols")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  rows = sample::default_per_pe(app, "--rows", rows, 64, f.pes);
  try {
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    const int n = f.pes;
    // Per PE: input and output, the shmem accumulator (fp32 for halves) and barrier signals,
    // the kernel's locals (two sums and the doubled tensor); the double reference.
    sample::MemoryEstimate need;
    need.add("inputs and outputs", 2 * int64_t{n}, {rows, cols}, dt)
        .add("symmetric heaps", n, {rows, cols}, pto::DT_DOUBLE)
        .add("kernel locals", 3 * int64_t{n}, {rows, cols}, pto::DT_DOUBLE)
        .add("reference", f.check ? 1 : 0, {rows, cols}, pto::DT_DOUBLE);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("allreduce_add_allreduce {} rows={} cols={} pes={} mode={}\n", f.dtype, rows, cols,
               n, sample::mode_name(f));
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.push_back(sample::random_tensor(dt, {rows, cols}, f.seed + uint64_t(p)));
      ys.emplace_back(dt, std::vector<int64_t>{rows, cols});
    }
    auto k = pto::jit("allreduce_add_allreduce", kernel, sample::jit_options(f));
    auto world_ptr = sample::make_world(f, n);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], n); });
    sample::share_outputs(f, {&ys}); // --backend mpi: every rank checks every PE
    sample::write_trace(world, f);
    if (!f.check)
      return 0;
    // Golden, stage by stage in the output dtype: s = AR(x) (summed in fp32 in PE order,
    // rounded once), d = s + s, result = AR(d) = the fp32 sum of n copies of d.
    // The kernel's ADD puts sum in arrival order instead: two orders of an n-term fp32 sum
    // differ by at most 2 (n - 1) u sum|x| (u = 2^-24); doubled, then summed n times, that is
    // 4 n (n - 1) u sum|x| on the result, allowed on top of the dtype's tolerance. Ints wrap
    // and are exact in any order.
    const double u = pto::is_float(dt) ? std::ldexp(1.0, -24) : 0.0;
    const double tol = sample::tolerance(dt);
    auto as_dt = [&](double v) { return sample::as_dtype(v, dt); };
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < rows * cols; ++i) {
      float s = 0;
      double abs_sum = 0;
      for (auto &x : xs) {
        s += static_cast<float>(x.get(i));
        abs_sum += std::fabs(x.get(i));
      }
      const double d = as_dt(as_dt(s) + as_dt(s));
      float total = 0;
      for (int p = 0; p < n; ++p)
        total += static_cast<float>(d);
      const double want = as_dt(total);
      const double allowed = tol + tol * std::fabs(want) + 4.0 * n * (n - 1) * u * abs_sum;
      for (auto &y : ys) {
        const double got = y.get(i), err = std::fabs(got - want);
        worst = std::max(worst, err);
        bad += !(err <= allowed); // NaN fails too
      }
    }
    fmt::print("  max abs error {:.3g} (tolerance {:.0e} rel + abs, plus the summation-order "
               "bound)\n",
               worst, tol);
    return sample::finish_check(bad, fmt::format("{} PEs x {} elements", n, rows * cols));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
