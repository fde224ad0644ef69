// sharded_attention.cpp - Multi-head self-attention written once with global shapes on
// pto::parallel (docs/sharding.md), Megatron's tensor-parallel split: x [batch, seq, model] split
// by "dp" on the batch; the Q, K and V projections split by heads on "tp" (per-head weights
// [heads, model, head_dim]); softmax(Q K^T / sqrt(head_dim)) per head, on the PE that holds the
// head, with no communication; the output projection (per-head [heads, head_dim, model], summed
// over the heads) is a split reduction: the sum over the heads leaves a pending Partial(sum) on
// tp, which the layer resolves with an allreduce when each PE writes its batch rows of y.
// --check compares every PE's output with a plain C++ reference in double computed on one PE;
// PTO_DUMP=sharding shows the collectives the layer inserted.
//
//   sharded_attention --pes 8 --mesh 2x4 --check
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

/// The kernel: global shapes; strategies in the mesh-axis-name form (JAX's PartitionSpec).
void attention(pto::Tensor x, pto::Tensor wq, pto::Tensor wk, pto::Tensor wv, pto::Tensor wo,
               pto::Tensor y, const par::Mesh &mesh, Layouts &seen) {
  const int64_t seq = x.shape(1).concrete(), model = x.shape(2).concrete();
  const int64_t head_dim = wq.shape(2).concrete();
  pto::set_cube_tile_shapes({16, 32}, {16, 64}, {16, 64});
  // Whole rows of every [.., seq, width] tile: the softmax reduces one row.
  pto::set_vec_tile_shapes(1, 1, 8, std::max({seq, model, head_dim}));
  // x: the batch on dp; as [batch, 1, seq, model] it broadcasts against the heads.
  auto xs = par::unsqueeze(par::shard(x, mesh, {"dp", {}, {}}), 1);
  // A size-1 dim is broadcast only against a larger one: with one head (or one sequence) the
  // two size-1 dims are one factor, which both operands split alike (the PEs past the first
  // of the axis get an empty chunk).
  const int64_t batch = x.shape(0).concrete(), heads = wq.shape(0).concrete();
  const par::DimSpec x_heads = heads == 1 ? par::DimSpec{"tp"} : par::DimSpec{};
  const par::DimSpec w_batch = batch == 1 ? par::DimSpec{"dp"} : par::DimSpec{};
  const par::Strategy by_heads = {{"dp", x_heads, {}, {}}, {w_batch, "tp", {}, {}}};
  auto project = [&](const pto::Tensor &w) { // [1, heads, ., .]: the heads on tp
    return par::matmul(xs, pto::unsqueeze(w, 0), by_heads);
  };
  auto q = project(wq), k = project(wk), v = project(wv); // [batch@dp, heads@tp, seq, head_dim]
  auto scores = par::matmul(q, k, {}, {.b_trans = true}); // follows q, k: per head
  auto scale = pto::full({1, 1, 1, 1}, 1 / std::sqrt(double(head_dim)), x.dtype());
  auto p = par::softmax(par::mul(scores, scale), -1);
  auto o = par::matmul(p, v); // [batch@dp, heads@tp, seq, hd]
  // Output projection per head: o's heads and wo's on tp, so the contraction over (head,
  // head_dim) is split: a batched matmul over head_dim, then the sum over the split heads.
  auto per_head = par::matmul(o, pto::unsqueeze(wo, 0),
                              {{"dp", "tp", {}, {}}, {w_batch, "tp", {}, {}}}); // [.., seq, model]
  auto out = par::sum(per_head, 1); // the heads are split: Partial(sum) on tp
  pto::set_vec_tile_shapes(1, 8, model);
  par::assemble(out, {0, 0, 0}, y); // resolves: allreduce(sum) over tp; my batch rows of y
  std::call_once(seen.once, [&] {
    seen.text =
        fmt::format("x {}   q {}   scores {}   heads' sum {}", xs.layout().to_string(),
                    q.layout().to_string(), scores.layout().to_string(), out.layout().to_string());
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

struct Dims {
  int64_t batch, seq, model, heads, head_dim;
};

/// The single-device reference in double from the inputs as stored: for every batch b and head
/// h, softmax(q k^T / sqrt(head_dim)) v with q = x_b wq_h (k, v alike), then y_b = sum over h of
/// that times wo_h.
std::vector<double> reference(const pto::HostTensor &x, const pto::HostTensor &wq,
                              const pto::HostTensor &wk, const pto::HostTensor &wv,
                              const pto::HostTensor &wo, const Dims &d) {
  const int64_t S = d.seq, D = d.model, E = d.head_dim;
  std::vector<double> y(static_cast<size_t>(d.batch * S * D), 0.0);
  std::vector<double> q(static_cast<size_t>(S * E)), k(q.size()), v(q.size()), o(q.size());
  std::vector<double> p(static_cast<size_t>(S));
  auto at = [](std::vector<double> &m, int64_t i) -> double & { return m[static_cast<size_t>(i)]; };
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      for (int64_t s = 0; s < S; ++s)
        for (int64_t e = 0; e < E; ++e) {
          double sq = 0, sk = 0, sv = 0;
          for (int64_t c = 0; c < D; ++c) {
            const double xv = x.get((b * S + s) * D + c);
            const int64_t w = (h * D + c) * E + e;
            sq += xv * wq.get(w);
            sk += xv * wk.get(w);
            sv += xv * wv.get(w);
          }
          at(q, s * E + e) = sq;
          at(k, s * E + e) = sk;
          at(v, s * E + e) = sv;
        }
      for (int64_t s = 0; s < S; ++s) {
        double mx = -INFINITY;
        for (int64_t t = 0; t < S; ++t) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e)
            dot += at(q, s * E + e) * at(k, t * E + e);
          at(p, t) = dot / std::sqrt(double(E));
          mx = std::max(mx, at(p, t));
        }
        double tot = 0;
        for (int64_t t = 0; t < S; ++t)
          tot += at(p, t) = std::exp(at(p, t) - mx);
        for (int64_t e = 0; e < E; ++e) {
          double acc = 0;
          for (int64_t t = 0; t < S; ++t)
            acc += at(p, t) / tot * at(v, t * E + e);
          at(o, s * E + e) = acc;
        }
      }
      for (int64_t s = 0; s < S; ++s)
        for (int64_t c = 0; c < D; ++c) {
          double acc = 0;
          for (int64_t e = 0; e < E; ++e)
            acc += at(o, s * E + e) * wo.get((h * E + e) * D + c);
          at(y, (b * S + s) * D + c) += acc;
        }
    }
  return y;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"sharded_attention: multi-head self-attention written once with global shapes on "
               "pto::parallel (issue 12): the batch split by dp, the Q/K/V projections, the "
               "per-head softmax(Q K^T / sqrt(head_dim)) V and the output projection split by "
               "heads on tp; the sum over the heads is a split reduction (the layer inserts the "
               "allreduce); each PE writes its batch rows of y"};
  sample::CommonFlags f;
  sample::MeshFlag mesh_flag;
  const sample::PeLimits limits{.min = 1, .max = 64};
  Dims d{.batch = 8, .seq = 32, .model = 64, .heads = 8, .head_dim = 16};
  sample::add_common_flags(app, f, {"fp32", "bf16"}, limits);
  sample::add_mesh_flag(app, mesh_flag, "dp", "tp", limits);
  app.add_option("--batch", d.batch,
                 "sequences in x and y (split by dp; any count: with fewer sequences than dp, "
                 "the PEs past the last hold none)")
      ->check(sample::int_range(1, 256))
      ->capture_default_str();
  app.add_option("--seq", d.seq, "tokens per sequence")
      ->check(sample::int_range(1, 1024))
      ->capture_default_str();
  app.add_option("--model", d.model, "model width: columns of x and y")
      ->check(sample::int_range(1, 2048))
      ->capture_default_str();
  app.add_option("--heads", d.heads,
                 "attention heads (split by tp; any count: with fewer heads than tp, the PEs "
                 "past the last head hold none)")
      ->check(sample::int_range(1, 128))
      ->capture_default_str();
  app.add_option("--head_dim", d.head_dim, "width of each head's q, k and v")
      ->check(sample::int_range(1, 256))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  if (int rc = sample::resolve_mesh(app, f, mesh_flag); rc >= 0)
    return rc;

  try {
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    const int64_t dp = mesh_flag.rows, tp = mesh_flag.cols;
    const int64_t b = (d.batch + dp - 1) / dp, h = (d.heads + tp - 1) / tp; // the largest slices
    const int64_t S = d.seq, D = d.model, E = d.head_dim;
    // Inputs: one copy per process, shared by its PEs. Per PE: its whole output; fp32 locals (q,
    // k, v, o; scores, the scaled scores and the softmax's steps; the per-head projection and
    // its sum); the symmetric heap and the sub-axis allgather of the sum over the world (n
    // pieces); the double reference and its per-head scratch.
    sample::MemoryEstimate need;
    need.add("inputs", 1, d.batch * S * D + 4 * d.heads * D * E, pto::bytes_of(dt))
        .add("outputs", f.pes, {d.batch, S, D}, dt)
        .add("kernel locals", f.pes, b * h * S * (4 * E + 5 * S + D) + 2 * b * S * D, 4)
        .add("symmetric heaps", int64_t{f.pes} * (f.pes + 2), {b, S, D}, pto::DT_FP32)
        .add("reference", f.check ? 1 : 0, d.batch * S * D + 4 * S * E + S, 8);
    if (!sample::fits_in_memory(need))
      return 2;
    const par::Mesh mesh({dp, tp}, {"dp", "tp"});
    fmt::print("sharded_attention {} batch={} seq={} model={} heads={} head_dim={} mesh={} pes={} "
               "backend={} mode={}\n",
               f.dtype, d.batch, S, D, d.heads, E, mesh.to_string(), f.pes, f.backend,
               sample::mode_name(f));
    auto x = sample::random_tensor(dt, {d.batch, S, D}, f.seed);
    auto wq = scaled(dt, {d.heads, D, E}, f.seed + 1, 1 / std::sqrt(double(D)));
    auto wk = scaled(dt, {d.heads, D, E}, f.seed + 2, 1 / std::sqrt(double(D)));
    auto wv = scaled(dt, {d.heads, D, E}, f.seed + 3, 1 / std::sqrt(double(D)));
    auto wo = scaled(dt, {d.heads, E, D}, f.seed + 4, 1 / std::sqrt(double(d.heads * E)));
    std::vector<pto::HostTensor> ys;
    for (int p = 0; p < f.pes; ++p)
      ys.emplace_back(dt, std::vector<int64_t>{d.batch, S, D}); // zeroed: PEs write their rows
    Layouts seen;
    auto kernel = pto::jit(
        "sharded_attention",
        [&](pto::Tensor xt, pto::Tensor q, pto::Tensor k, pto::Tensor v, pto::Tensor o,
            pto::Tensor yt) { attention(xt, q, k, v, o, yt, mesh, seen); },
        sample::jit_options(f));
    auto world_ptr = sample::make_world(f, f.pes);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    auto call = [&](int pe) { kernel(x, wq, wk, wv, wo, ys[static_cast<size_t>(pe)]); };
    auto t0 = std::chrono::steady_clock::now();
    world.run(call);
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto t1 = std::chrono::steady_clock::now(); // a second call reuses the compiled code
    world.run(call);
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
    // PE p = (i, j) on the mesh holds the batch rows [b0, b0 + n) of dp's balanced chunk i (n =
    // batch / dp, one more for the first batch % dp chunks) and writes exactly those: the rest
    // of its y stays zero. Tolerance rel + abs: the sums over model, head_dim, seq and the heads
    // are added in other orders and blocks than the reference's. fp32: rel 1e-4 (docs/
    // sharding.md) + abs rel * mean|y| (as matmul_allreduce_rmsnorm). bf16 rounds every op's
    // result (q, k, v, the scores, p, o, each head's projection) to 8 mantissa bits (eps 2^-8);
    // the rounding errors of the O(1) intermediates stay absolute while a long --seq averages
    // y down, so: rel 4e-2 + abs rel * max|y|.
    const auto want = reference(x, wq, wk, wv, wo, d);
    double mean_abs = 0, max_abs = 0;
    for (double w : want) {
      mean_abs += std::fabs(w) / double(want.size());
      max_abs = std::max(max_abs, std::fabs(w));
    }
    const double rtol = dt == pto::DT_FP32 ? 1e-4 : 4e-2;
    const double atol = rtol * (dt == pto::DT_FP32 ? mean_abs : max_abs);
    int64_t bad = 0;
    double worst_abs = 0, worst_rel = 0;
    for (int p = 0; p < f.pes; ++p) {
      const int64_t i = p / tp, n = d.batch / dp + (i < d.batch % dp ? 1 : 0);
      const int64_t b0 = i * (d.batch / dp) + std::min(i, d.batch % dp);
      std::vector<double> expect(want.size(), 0.0);
      for (int64_t e = b0 * S * D; e < (b0 + n) * S * D; ++e)
        expect[static_cast<size_t>(e)] = want[static_cast<size_t>(e)];
      const auto s = sample::compare(ys[static_cast<size_t>(p)], expect, rtol, atol);
      worst_abs = std::max(worst_abs, s.max_abs);
      worst_rel = std::max(worst_rel, s.max_rel);
      bad += s.bad;
    }
    fmt::print("  max abs error {:.3g}   max rel error {:.3g}   tolerance rel {:.0e} + abs {:.1e} "
               "(rel * {}|y|)\n",
               worst_abs, worst_rel, rtol, atol, dt == pto::DT_FP32 ? "mean" : "max");
    return sample::finish_check(
        bad, fmt::format("{} PEs, each its batch rows of [{}, {}, {}], vs a 1-PE double reference",
                         f.pes, d.batch, S, D));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
