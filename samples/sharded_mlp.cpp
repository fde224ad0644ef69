// sharded_mlp.cpp - Issue 12's two-layer MLP written once with global shapes on pto::parallel
// (docs/sharding.md): x [batch, hidden] split by "dp", x @ w1 with w1's columns split by "mp"
// (MindSpore strategy ((dp, 1), (1, mp))), gelu, @ w2 with the contraction split by "mp"
// (((dp, mp), (mp, 1)): a pending Partial(sum) that the layer resolves with an allreduce), a row
// softmax, and each PE writes its rows of y. --check compares every PE's output with a plain C++
// reference in double computed on one PE; PTO_DUMP=sharding shows the collectives the layer
// inserted.
//
//   sharded_mlp --pes 8 --mesh 2x4 --check      (PTO_DUMP=sharding: the layouts and collectives)
#include "pto/parallel.h"
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <mutex>

namespace par = pto::parallel;

namespace {

/// The layouts the trace saw, for the report (every PE traces the same program).
struct Layouts {
  std::once_flag once;
  std::string text;
};

/// The kernel, as the issue writes it: global shapes, one strategy per op.
void mlp(pto::Tensor x, pto::Tensor w1, pto::Tensor w2, pto::Tensor y, const par::Mesh &mesh,
         Layouts &seen) {
  const int dp = static_cast<int>(mesh.size(0)), mp = static_cast<int>(mesh.size(1));
  const int64_t inner = w1.shape(1).concrete(), out = w2.shape(1).concrete();
  pto::set_vec_tile_shapes(8, std::max(inner, out)); // whole rows: softmax reduces one row
  pto::set_cube_tile_shapes({16, 32}, {32, 64}, {32, 64});
  auto xs = par::shard(x, mesh, {"dp", {}});        // rows on dp, replicated on mp
  auto h = par::matmul(xs, w1, {{dp, 1}, {1, mp}}); // m on dp, n (w1's columns) on mp
  auto a = par::gelu(h);                            // follows h
  auto o = par::matmul(a, w2, {{dp, mp}, {mp, 1}}); // k on mp: Partial(sum) on mp
  auto s = par::softmax(o, -1);                     // resolves o first: allreduce(sum) over mp
  par::assemble(s, {0, 0}, y);                      // this PE's rows of y
  std::call_once(seen.once, [&] {
    seen.text = fmt::format("x {}   h {}   o {}   softmax {}", xs.layout().to_string(),
                            h.layout().to_string(), o.layout().to_string(), s.layout().to_string());
  });
}

/// Normal(0, 1) values scaled by `scale` (1 / sqrt(fan-in) for weights: O(1) activations), as
/// stored in `dt`.
pto::HostTensor scaled(pto::DataType dt, const std::vector<int64_t> &shape, uint64_t seed,
                       double scale) {
  auto t = sample::random_tensor(dt, shape, seed);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, t.get(i) * scale);
  return t;
}

/// The single-device reference in double from the inputs as stored: softmax(gelu(x w1) w2).
std::vector<double> reference(const pto::HostTensor &x, const pto::HostTensor &w1,
                              const pto::HostTensor &w2, int64_t batch, int64_t hidden,
                              int64_t inner, int64_t out) {
  std::vector<double> y(static_cast<size_t>(batch * out)), a(static_cast<size_t>(inner));
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t j = 0; j < inner; ++j) {
      double s = 0;
      for (int64_t k = 0; k < hidden; ++k)
        s += x.get(r * hidden + k) * w1.get(k * inner + j);
      a[static_cast<size_t>(j)] = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
    }
    double *row = &y[static_cast<size_t>(r * out)];
    double mx = -INFINITY;
    for (int64_t c = 0; c < out; ++c) {
      double s = 0;
      for (int64_t j = 0; j < inner; ++j)
        s += a[static_cast<size_t>(j)] * w2.get(j * out + c);
      row[c] = s;
      mx = std::max(mx, s);
    }
    double tot = 0;
    for (int64_t c = 0; c < out; ++c)
      tot += row[c] = std::exp(row[c] - mx);
    for (int64_t c = 0; c < out; ++c)
      row[c] /= tot;
  }
  return y;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"sharded_mlp: softmax(gelu(x @ w1) @ w2) written once with global shapes on "
               "pto::parallel (issue 12): x's rows split by dp, w1's columns by mp, the second "
               "matmul's contraction by mp (the layer inserts the allreduce); each PE writes its "
               "rows of y"};
  sample::CommonFlags f;
  sample::MeshFlag mesh_flag;
  const sample::PeLimits limits{.min = 1, .max = 64};
  int64_t batch = 64, hidden = 64, inner = 256, out = 32;
  sample::add_common_flags(app, f, {"fp32", "bf16"}, limits);
  sample::add_mesh_flag(app, mesh_flag, "dp", "mp", limits);
  app.add_option("--batch", batch, "rows of x and y (split by dp)")
      ->check(sample::int_range(1, 4096))
      ->capture_default_str();
  app.add_option("--hidden", hidden, "columns of x, rows of w1")
      ->check(sample::int_range(1, 4096))
      ->capture_default_str();
  app.add_option("--inner", inner, "columns of w1, rows of w2 (split by mp)")
      ->check(sample::int_range(1, 8192))
      ->capture_default_str();
  app.add_option("--out", out, "columns of w2 and y (the softmax axis)")
      ->check(sample::int_range(1, 4096))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  if (int rc = sample::resolve_mesh(app, f, mesh_flag); rc >= 0)
    return rc;

  try {
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    const int64_t dp = mesh_flag.rows, mp = mesh_flag.cols;
    const int64_t rows = (batch + dp - 1) / dp, cols = (inner + mp - 1) / mp;
    // Inputs: one copy per process, shared by its PEs. Per PE: its whole output, the fp32 locals
    // (h, gelu, o, the softmax's steps: about 2 [rows, cols] and 6 [rows, out]), the symmetric
    // heap and the sub-axis allgather of o over the world (n pieces of [rows, out]); the double
    // reference.
    sample::MemoryEstimate need;
    need.add("inputs", 1, batch * hidden + hidden * inner + inner * out, pto::bytes_of(dt))
        .add("outputs", f.pes, {batch, out}, dt)
        .add("kernel locals", f.pes, 2 * rows * cols + 6 * rows * out, 4)
        .add("symmetric heaps", int64_t{f.pes} * (f.pes + 2), {rows, out}, pto::DT_FP32)
        .add("reference", f.check ? 1 : 0, batch * out + inner, 8);
    if (!sample::fits_in_memory(need))
      return 2;
    const par::Mesh mesh({dp, mp}, {"dp", "mp"});
    fmt::print("sharded_mlp {} batch={} hidden={} inner={} out={} mesh={} pes={} backend={} "
               "mode={}\n",
               f.dtype, batch, hidden, inner, out, mesh.to_string(), f.pes, f.backend,
               sample::mode_name(f));
    auto x = sample::random_tensor(dt, {batch, hidden}, f.seed);
    auto w1 = scaled(dt, {hidden, inner}, f.seed + 1, 1 / std::sqrt(double(hidden)));
    auto w2 = scaled(dt, {inner, out}, f.seed + 2, 1 / std::sqrt(double(inner)));
    std::vector<pto::HostTensor> ys;
    for (int p = 0; p < f.pes; ++p)
      ys.emplace_back(dt, std::vector<int64_t>{batch, out}); // zeroed: PEs write their rows only
    Layouts seen;
    auto kernel = pto::jit(
        "sharded_mlp",
        [&](pto::Tensor xt, pto::Tensor w1t, pto::Tensor w2t, pto::Tensor yt) {
          mlp(xt, w1t, w2t, yt, mesh, seen);
        },
        sample::jit_options(f));
    auto world_ptr = sample::make_world(f, f.pes);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    auto t0 = std::chrono::steady_clock::now();
    world.run([&](int pe) { kernel(x, w1, w2, ys[static_cast<size_t>(pe)]); });
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto t1 = std::chrono::steady_clock::now(); // a second call reuses the compiled code
    world.run([&](int pe) { kernel(x, w1, w2, ys[static_cast<size_t>(pe)]); });
    const double run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    sample::share_outputs(f, {&ys}); // --backend mpi: every rank checks every PE
    fmt::print("  layouts  {}\n", seen.text);
    fmt::print("  compile {:.1f} ms (trace + {})   first call {:.1f} ms   run {:.2f} ms\n",
               kernel.stats().compile_ms,
               kernel.stats().compiles > 0 ? "LLVM O3 + ORC" : "interpreter setup", first_ms,
               run_ms);
    sample::write_trace(world, f);
    if (!f.check)
      return 0;
    // PE p = (i, j) on the mesh holds rows [r0, r0 + n) of y, dp's balanced chunk i (n = batch /
    // dp, one more for the first batch % dp chunks), and writes exactly those: the rest of its y
    // stays zero. Tolerance: the k = inner sum is added in mp blocks instead of one run, a
    // reassociation; softmax's relative error is about the logits' absolute error. fp32: rel 1e-4
    // + abs 1e-6 (docs/sharding.md, MindSpore's allclose 1e-4). bf16: every op rounds to 8
    // mantissa bits (eps 2^-8) and the logits are O(1): rel 4e-2 + abs rel * mean|y| (a row of y
    // sums to 1, so mean|y| = 1 / out), as matmul_allreduce_rmsnorm's atol.
    const auto want = reference(x, w1, w2, batch, hidden, inner, out);
    const double rtol = dt == pto::DT_FP32 ? 1e-4 : 4e-2;
    const double atol = dt == pto::DT_FP32 ? 1e-6 : rtol / double(out);
    int64_t bad = 0;
    double worst_abs = 0, worst_rel = 0;
    for (int p = 0; p < f.pes; ++p) {
      const int64_t i = p / mp, n = batch / dp + (i < batch % dp ? 1 : 0);
      const int64_t r0 = i * (batch / dp) + std::min(i, batch % dp);
      std::vector<double> expect(want.size(), 0.0);
      for (int64_t e = r0 * out; e < (r0 + n) * out; ++e)
        expect[static_cast<size_t>(e)] = want[static_cast<size_t>(e)];
      const auto s = sample::compare(ys[static_cast<size_t>(p)], expect, rtol, atol);
      worst_abs = std::max(worst_abs, s.max_abs);
      worst_rel = std::max(worst_rel, s.max_rel);
      bad += s.bad;
    }
    fmt::print(
        "  max abs error {:.3g}   max rel error {:.3g}   tolerance rel {:.0e} + abs {:.1e}\n",
        worst_abs, worst_rel, rtol, atol);
    return sample::finish_check(
        bad, fmt::format("{} PEs, each its rows of [{}, {}], vs a 1-PE double reference", f.pes,
                         batch, out));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
