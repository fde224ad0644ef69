// matmul_allreduce_rmsnorm.cpp - PyPTO's MatMul + AllReduce + Add + RMSNorm test (reference
// §7.5): per block of 8 rows, each PE multiplies its input by its weight (bf16 out), the partial
// products are all-reduced, the residual is added in fp32, then RMSNorm(eps = 1e-5) * gamma +
// bias, cast to bf16. Outputs: the normalized rows and the new residual. Checked with the PyPTO
// test's tolerance (reference §8: rtol = c*eps*sqrt(ws), atol = rtol*mean|golden|, eps = 2^-7).
//
//   matmul_allreduce_rmsnorm --pes 4 --batch 8 --k 1536 --h 5120 --check   (the test's shapes)
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <cmath>
#include <fmt/format.h>

namespace dist = pto::distributed;

namespace {

void kernel(pto::Tensor x, pto::Tensor w, pto::Tensor residual, pto::Tensor gamma, pto::Tensor bias,
            pto::Tensor out, pto::Tensor residual_out) {
  const int64_t batch = x.shape(0).concrete(), k = x.shape(1).concrete();
  const int64_t h = w.shape(0).concrete();
  const double eps = 1e-5;
  for (int64_t r0 = 0; r0 < batch; r0 += 8) { // row blocks of 8 (the last may be shorter)
    int64_t rows = std::min<int64_t>(8, batch - r0);
    pto::set_vec_tile_shapes(rows, h);
    auto in_tile = pto::view(x, {rows, k}, {r0, 0});
    pto::set_cube_tile_shapes({8, 8}, {128, 256}, {256, 512});
    auto mm = pto::matmul(in_tile, w, x.dtype(), {.b_trans = true});
    auto sum = dist::allreduce(mm, dist::Reduction::SUM);
    auto a = pto::cast(sum, pto::DT_FP32) +
             pto::cast(pto::view(residual, {rows, h}, {r0, 0}), pto::DT_FP32);
    auto rms = pto::sqrt(pto::sum(a * a / static_cast<double>(h), -1, {.keepdim = true}) + eps);
    auto y = a / rms * pto::cast(gamma, pto::DT_FP32) + pto::cast(bias, pto::DT_FP32);
    pto::assemble(pto::cast(y, out.dtype()), {r0, 0}, out);
    pto::assemble(pto::cast(a, residual_out.dtype()), {r0, 0}, residual_out);
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"matmul_allreduce_rmsnorm: matmul, allreduce, residual add and RMSNorm per 8-row "
               "block (PyPTO §7.5)"};
  sample::CommonFlags f;
  f.pes = 4;
  f.dtype = "bf16";
  int64_t batch = 8, k = 256, h = 512;
  sample::add_common_flags(app, f, {"bf16", "fp32"});
  // At most 256 rows: the 8-row blocks are unrolled at trace time, so the program, and its JIT
  // compile time, grows with the batch (32 blocks take 6 to 10 s on a 2-core machine).
  app.add_option("--batch", batch,
                 "rows per PE (default 8, or 64 / pes above 8 PEs; at most 256: each 8-row block "
                 "adds its own code to the kernel)")
      ->check(sample::int_range(1, 256));
  app.add_option("--k", k, "inner dim K")
      ->check(sample::int_range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--h", h, "hidden size H (rows of W)")
      ->check(sample::int_range(1, 1 << 16))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  batch = sample::default_per_pe(app, "--batch", batch, 8, f.pes);
  try {
    const int ws = f.pes;
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    // Per PE: input, weight, two outputs; the 8-row blocks are unrolled at trace time, so
    // every block has its own allreduce shmem buffer (fp32; one per PE of the world when it
    // gathers) and fp32 locals: over all blocks, that many [batch, h] tensors. Shared residual,
    // gamma and bias; the double references.
    sample::MemoryEstimate need;
    need.add("inputs", ws, {batch, k}, dt)
        .add("weights", ws, {h, k}, dt)
        .add("outputs", 2 * int64_t{ws}, {batch, h}, dt)
        .add("symmetric heaps", int64_t{ws} * (ws + 1), {batch, h}, pto::DT_FP32)
        .add("kernel locals", int64_t{ws} * (ws + 8), {batch, h}, pto::DT_FP32)
        .add("shared inputs", 1, {batch + 2, h}, dt)
        .add("reference", f.check ? 2 : 0, {batch, h}, pto::DT_DOUBLE);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("matmul_allreduce_rmsnorm {} batch={} k={} h={} pes={} mode={}\n", f.dtype, batch, k,
               h, ws, sample::mode_name(f));
    // Per PE: its input and weight; shared by all: residual, gamma, bias.
    auto residual = sample::random_tensor(dt, {batch, h}, f.seed + 7);
    auto gamma = sample::random_tensor(dt, {1, h}, f.seed + 8);
    auto bias = sample::random_tensor(dt, {1, h}, f.seed + 9);
    std::vector<pto::HostTensor> xs, ws_, outs, res_outs;
    for (int p = 0; p < ws; ++p) {
      xs.push_back(sample::random_tensor(dt, {batch, k}, f.seed + 100 + uint64_t(p)));
      ws_.push_back(sample::random_tensor(dt, {h, k}, f.seed + 200 + uint64_t(p)));
      outs.emplace_back(dt, std::vector<int64_t>{batch, h});
      res_outs.emplace_back(dt, std::vector<int64_t>{batch, h});
    }
    auto kern = pto::jit("matmul_allreduce_rmsnorm", kernel, sample::jit_options(f));
    auto world_ptr = sample::make_world(f, ws);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    world.run([&](int pe) {
      kern(xs[size_t(pe)], ws_[size_t(pe)], residual, gamma, bias, outs[size_t(pe)],
           res_outs[size_t(pe)]);
    });
    sample::share_outputs(f, {&outs, &res_outs}); // --backend mpi: every rank checks every PE
    sample::write_trace(world, f);
    if (!f.check)
      return 0;
    // Golden: each PE's matmul rounded to the dtype, summed over PEs, then in double: a =
    // residual + sum, RMSNorm(eps=1e-5) * gamma + bias.
    auto as_dt = [&](double v) { return sample::as_dtype(v, dt); };
    std::vector<double> want_y(size_t(batch * h)), want_a(size_t(batch * h));
    for (int64_t i = 0; i < batch; ++i) {
      double ss = 0;
      for (int64_t j = 0; j < h; ++j) {
        double total = 0;
        for (int p = 0; p < ws; ++p) {
          double s = 0;
          for (int64_t kk = 0; kk < k; ++kk)
            s += xs[size_t(p)].get(i * k + kk) * ws_[size_t(p)].get(j * k + kk);
          total += as_dt(s);
        }
        double a = residual.get(i * h + j) + total;
        want_a[size_t(i * h + j)] = a;
        ss += a * a;
      }
      double rms = std::sqrt(ss / double(h) + 1e-5);
      for (int64_t j = 0; j < h; ++j)
        want_y[size_t(i * h + j)] = want_a[size_t(i * h + j)] / rms * gamma.get(j) + bias.get(j);
    }
    double eps = std::ldexp(1.0, -7);
    double c = std::min(1.5 * (1 + 0.25 * std::log2(double(ws))), 3.0);
    double rtol = dt == pto::DT_FP32 ? 1e-4 : c * eps * std::sqrt(double(ws));
    auto mean_abs = [](const std::vector<double> &v) {
      double s = 0;
      for (double x : v)
        s += std::fabs(x);
      return s / double(v.size());
    };
    int64_t bad = 0;
    double worst = 0;
    for (int p = 0; p < ws; ++p) {
      auto sy = sample::compare(outs[size_t(p)], want_y, rtol, rtol * mean_abs(want_y));
      auto sa = sample::compare(res_outs[size_t(p)], want_a, rtol, rtol * mean_abs(want_a));
      bad += sy.bad + sa.bad;
      worst = std::max({worst, sy.max_abs, sa.max_abs});
    }
    fmt::print("  max abs error {:.3g} (rtol {:.3g}, atol rtol * mean|golden|)\n", worst, rtol);
    return sample::finish_check(bad,
                                fmt::format("{} PEs x {} elements x 2 outputs", ws, batch * h));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
