// multi_comm_groups.cpp - PyPTO's multi-communication-group test (reference §7.9): every PE is in
// two groups at once, A (PEs of the same parity) and B (the same half of the world). Each block
// of 8 rows is all-reduced in fp32 within A, cast to bf16, then all-reduced within B. Group PE
// numbers are group-local; the two groups' shmem tensors live in separate symmetric heaps.
//
//   multi_comm_groups --pes 4 --batch 13 --hidden 256 --check
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <cmath>
#include <fmt/format.h>
#include <vector>

namespace dist = pto::distributed;

namespace {

void kernel(pto::Tensor x, pto::Tensor y, const std::string &group_a, const std::string &group_b) {
  int64_t batch = x.shape(0).concrete(), hidden = x.shape(1).concrete();
  const int64_t block = 8;
  pto::set_vec_tile_shapes(block, hidden);
  for (auto i : pto::loop(0, (batch + block - 1) / block)) {
    auto rows = pto::min(pto::SymbolicScalar(batch) - i * block, block); // 8, then 5
    auto xb = pto::view(x, {block, hidden}, {i * block, 0}, {.valid_shape = {{rows, hidden}}});
    auto a = dist::allreduce(pto::cast(xb, pto::DT_FP32), dist::Reduction::SUM, {.group = group_a});
    auto mid = x.dtype() == pto::DT_FP32 ? a : pto::cast(a, x.dtype());
    auto b = dist::allreduce(mid, dist::Reduction::SUM, {.group = group_b});
    pto::assemble(b, {i * block, 0}, y);
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"multi_comm_groups: all-reduce within parity groups, then within halves (PyPTO "
               "§7.9)"};
  sample::CommonFlags f;
  f.pes = 4;
  f.dtype = "bf16";
  int64_t batch = 13, hidden = 256;
  sample::add_common_flags(app, f, {"bf16", "fp32"}, {.min = 2, .max = 4096, .even = true});
  app.add_option("--batch", batch, "rows per PE (default 13, or 104 / pes above 8 PEs)")
      ->check(sample::int_range(1, 1 << 16));
  app.add_option("--hidden", hidden, "columns")
      ->check(sample::int_range(1, 1 << 16))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  batch = sample::default_per_pe(app, "--batch", batch, 13, f.pes);
  try {
    const int n = f.pes;
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    // Per PE: input and output; per group call, an fp32 shmem accumulator and fp32 locals of
    // one 8-row block (at most one per PE of the group when allreduce gathers); the reference.
    sample::MemoryEstimate need;
    need.add("inputs and outputs", 2 * int64_t{n}, {batch, hidden}, dt)
        .add("symmetric heaps", int64_t{n} * (n + 2), {8, hidden}, pto::DT_FP32)
        .add("kernel locals", int64_t{n} * (n + 8), {8, hidden}, pto::DT_FP32)
        .add("reference", f.check ? 2 : 0, {batch, hidden}, pto::DT_DOUBLE);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("multi_comm_groups {} batch={} hidden={} pes={} mode={}\n", f.dtype, batch, hidden,
               n, sample::mode_name(f));
    auto world_ptr = sample::make_world(f, n);
    auto &world = *world_ptr;
    std::vector<int> even, odd, low, high;
    for (int p = 0; p < n; ++p) {
      (p % 2 ? odd : even).push_back(p);
      (p < n / 2 ? low : high).push_back(p);
    }
    world.create_group("A_even", even);
    world.create_group("A_odd", odd);
    world.create_group("B_low", low);
    world.create_group("B_high", high);
    world.enable_trace(!f.trace.empty());
    std::vector<pto::HostTensor> xs, ys;
    for (int p = 0; p < n; ++p) {
      xs.push_back(sample::random_tensor(dt, {batch, hidden}, f.seed + uint64_t(p)));
      ys.emplace_back(dt, std::vector<int64_t>{batch, hidden});
    }
    auto k = pto::jit("multi_comm_groups", kernel, sample::jit_options(f));
    world.run([&](int pe) {
      k(xs[size_t(pe)], ys[size_t(pe)], std::string(pe % 2 ? "A_odd" : "A_even"),
        std::string(pe < n / 2 ? "B_low" : "B_high"));
    });
    sample::share_outputs(f, {&ys}); // --backend mpi: every rank checks every PE
    sample::write_trace(world, f);
    if (!f.check)
      return 0;
    // Golden, stage by stage: a_p = bf16(sum over p's parity group in fp32, in PE order); then
    // bf16(sum of a_q over p's half, in fp32, in PE order). With fp32 data the roundings are to
    // fp32. Stage A depends only on the parity, the result only on the half: computed once each.
    auto round = [&](double v) { return sample::as_dtype(v, dt); };
    const int64_t elems = batch * hidden;
    std::vector<double> stage_a[2], want[2];
    for (int parity = 0; parity < 2; ++parity)
      for (int64_t i = 0; i < elems; ++i) {
        float s = 0;
        for (int m = parity; m < n; m += 2)
          s += static_cast<float>(xs[size_t(m)].get(i));
        stage_a[parity].push_back(round(s));
      }
    for (int half = 0; half < 2; ++half)
      for (int64_t i = 0; i < elems; ++i) {
        float s = 0;
        for (int q = half * n / 2; q < (half + 1) * n / 2; ++q)
          s += static_cast<float>(stage_a[q % 2][size_t(i)]);
        want[half].push_back(round(s));
      }
    int64_t bad = 0;
    double worst = 0;
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < elems; ++i) {
        double w = want[p < n / 2 ? 0 : 1][size_t(i)], got = ys[size_t(p)].get(i);
        double d = std::fabs(got - w);
        worst = std::max(worst, d);
        if (d > 8e-3 * (1 + std::fabs(w))) // the Python test's rtol = atol = 8e-3
          ++bad;
      }
    fmt::print("  max abs error {:.3g} (rtol = atol = 8e-3, as the PyPTO test)\n", worst);
    return sample::finish_check(bad, fmt::format("{} PEs x {} elements", n, batch * hidden));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
