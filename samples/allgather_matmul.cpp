// allgather_matmul.cpp - PyPTO's AllGather + MatMul test (reference §7.2): each PE holds a
// [B, D] bf16 slice and its own weight W_r [N, D]; it all-gathers the slices and multiplies the
// gathered [ws*B, D] block by W_r^T. Checked with the PyPTO test's tolerance (reference §8:
// rtol = c*eps*sqrt(ws), atol = rtol*mean|golden|, eps = 2^-7).
//
//   allgather_matmul --pes 2 --batch 8 --d 1536 --n 5120 --check    (the PyPTO test's shapes)
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <cmath>
#include <fmt/format.h>

namespace dist = pto::distributed;

namespace {

void kernel(pto::Tensor x, pto::Tensor w, pto::Tensor y) {
  int64_t b = x.shape(0).concrete(), d = x.shape(1).concrete();
  pto::set_vec_tile_shapes(b, d);
  auto gathered = dist::allgather(x);                        // [ws*B, D]: PE p's rows at p*B
  pto::set_cube_tile_shapes({8, 8}, {128, 256}, {256, 512}); // the PyPTO test's cube tiles
  pto::assemble(pto::matmul(gathered, w, y.dtype(), {.b_trans = true}), {0, 0}, y);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"allgather_matmul: all-gather row slices, then multiply by each PE's own weight "
               "(PyPTO §7.2)"};
  sample::CommonFlags f;
  f.pes = 2;
  f.dtype = "bf16";
  int64_t batch = 8, d = 256, n = 512;
  sample::add_common_flags(app, f, {"bf16", "fp32"}, {.max = 256});
  app.add_option("--batch", batch, "rows per PE (default 8, or 64 / pes above 8 PEs)")
      ->check(sample::int_range(1, 4096));
  app.add_option("--d", d, "inner dim D")
      ->check(sample::int_range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--n", n, "output columns N (rows of W)")
      ->check(sample::int_range(1, 1 << 16))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  batch = sample::default_per_pe(app, "--batch", batch, 8, f.pes);
  try {
    const int ws = f.pes;
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    // Per PE: its slice, its weight, its [ws*B, N] output, the gathered [ws*B, D] shmem buffer
    // with its local copy, and the fp32 matmul result; one PE's double reference at a time.
    const int64_t rows = int64_t{ws} * batch;
    sample::MemoryEstimate need;
    need.add("inputs", ws, {batch, d}, dt)
        .add("weights", ws, {n, d}, dt)
        .add("outputs", ws, {rows, n}, dt)
        .add("symmetric heaps", ws, {rows, d}, dt)
        .add("kernel locals", ws, {rows, d + n}, pto::DT_FP32)
        .add("reference", f.check ? 1 : 0, {rows, n}, pto::DT_DOUBLE);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("allgather_matmul {} batch={} d={} n={} pes={} mode={}\n", f.dtype, batch, d, n, ws,
               sample::mode_name(f));
    std::vector<pto::HostTensor> xs, ws_, ys;
    for (int p = 0; p < ws; ++p) {
      xs.push_back(sample::random_tensor(dt, {batch, d}, f.seed + uint64_t(p)));
      ws_.push_back(sample::random_tensor(dt, {n, d}, f.seed + 1000 + uint64_t(p)));
      ys.emplace_back(dt, std::vector<int64_t>{ws * batch, n});
    }
    auto k = pto::jit("allgather_matmul", kernel, sample::jit_options(f));
    auto world_ptr = sample::make_world(f, ws);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    world.run([&](int pe) { k(xs[size_t(pe)], ws_[size_t(pe)], ys[size_t(pe)]); });
    sample::share_outputs(f, {&ys}); // --backend mpi: every rank checks every PE
    sample::write_trace(world, f);
    if (!f.check)
      return 0;
    // Golden on PE r: cat(x_0..x_{ws-1}) @ W_r^T in double.
    double eps = std::ldexp(1.0, -7);
    double c = std::min(1.5 * (1 + 0.25 * std::log2(double(ws))), 3.0);
    double rtol = dt == pto::DT_FP32 ? 1e-5 : c * eps * std::sqrt(double(ws));
    int64_t bad = 0;
    double worst = 0;
    for (int r = 0; r < ws; ++r) {
      std::vector<double> want(size_t(ws * batch * n));
      double scale = 0;
      for (int q = 0; q < ws; ++q)
        for (int64_t i = 0; i < batch; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t kk = 0; kk < d; ++kk)
              s += xs[size_t(q)].get(i * d + kk) * ws_[size_t(r)].get(j * d + kk);
            want[size_t((q * batch + i) * n + j)] = s;
            scale += std::fabs(s);
          }
      scale /= double(want.size());
      auto st = sample::compare(ys[size_t(r)], want, rtol, rtol * scale);
      bad += st.bad;
      worst = std::max(worst, st.max_abs);
    }
    fmt::print("  max abs error {:.3g} (rtol {:.3g}, atol rtol * mean|golden|)\n", worst, rtol);
    return sample::finish_check(bad, fmt::format("{} PEs x {} elements", ws, ws * batch * n));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
