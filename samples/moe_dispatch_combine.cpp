// moe_dispatch_combine.cpp - PyPTO's MoE dispatch / combine (reference §7.8) on the threads
// runtime: every PE routes each active token to the PEs that own its top-k experts (dispatch),
// the experts run (here: a host-side scale by expert id + 1), and the results travel back and are
// combined with the routing weights (combine). Shows data-dependent control flow in the DSL:
// a loop whose trip count is read from a tensor (`pto::loop(recv.at({0}))`), a branch on tensor
// data (`if (pto::cond(mask.at({b}) == 1))`), and put destinations computed from tensor data.
//
// Layout (E experts, E / n_pes per PE, B tokens, K = topk):
// - dispatch: shmem `data [E*B, H]` holds, on the PE owning expert e = dest * E_local + eo, the
//   rows sent by PE r to e in block (eo * n + r) * B; `info [E*B, 4]` int32 the matching
//   (token, k) pairs; `count [E + 1, 8]` int32 at row eo * n + r + 1 the number of rows.
//   Outputs per PE: expand_x [E_local * n * B, H] (received rows, grouped by local expert then
//   source PE, each group in the sender's task order), assist_info [same rows, 4] = (token, k,
//   src_pe, 0), expert_token_nums [E_local] int32, recv_counts [1] int32.
// - combine: shmem `back [K*B, H]` fp32 receives row (token, k) at K*token + k; each active token
//   waits for its K rows, weights them by expert_scales[token] and sums over k.
// Golden: the same routing in plain C++, checked exactly (dispatch moves data, combine sums K
// fp32 products in order k = 0..K-1 and rounds once, as the kernel).
//
//   moe_dispatch_combine --pes 4 --tokens 8 --hidden 256 --experts 16 --topk 4 --check
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "common/sample.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <random>

namespace dist = pto::distributed;

namespace {

struct Dims {
  int n = 4;       ///< PEs
  int64_t b = 8;   ///< tokens per PE
  int64_t h = 256; ///< hidden size
  int64_t e = 16;  ///< experts (a multiple of n; by default the least one >= 16)
  int64_t k = 4;   ///< experts per token
  int64_t e_local() const { return e / n; }
};

/// Dispatch (reference §7.8): per PE, x [B, H], expert_ids [B, K] int32 (distinct per token),
/// mask [B] int32 (1 = active token).
void dispatch(pto::Tensor x, pto::Tensor expert_ids, pto::Tensor mask, pto::Tensor expand_x,
              pto::Tensor assist_info, pto::Tensor expert_token_nums, pto::Tensor recv_counts,
              int n, int64_t e, int64_t k) {
  const int64_t b = x.shape(0).concrete(), h = x.shape(1).concrete();
  const int64_t el = e / n, tasks = b * k;
  auto me = dist::my_symbolic_pe("world");
  pto::set_vec_tile_shapes(std::min<int64_t>(tasks, 64), std::min<int64_t>(h, 256));

  auto data = dist::create_shmem_tensor("world", n, x.dtype(), {e * b, h});
  auto info = dist::create_shmem_tensor("world", n, pto::DT_INT32, {e * b, 4});
  auto count = dist::create_shmem_tensor("world", n, pto::DT_INT32, {e + 1, 8});
  auto barrier_signal = dist::create_shmem_signal("world", n);

  // Counts start from zero on every PE before anyone adds to them.
  auto cleared = dist::shmem_clear_data(count);
  auto ready = dist::shmem_barrier_all(barrier_signal, {.pred = {cleared}});

  // Task t = token * K + slot. Its rank among this PE's active tasks for the same expert is an
  // inclusive cumsum over a masked one-hot matrix [tasks, E], minus one.
  auto ids = pto::reshape(expert_ids, {tasks, 1});
  auto onehot = pto::cast(pto::eq(ids, pto::reshape(pto::arange(e), {1, e})), pto::DT_INT32);
  auto active = pto::reshape(pto::expand(pto::reshape(mask, {b, 1}), {b, k}), {tasks, 1});
  auto rank = pto::cumsum(pto::mul(onehot, active), 0); // [tasks, E] int64
  // The (token, slot) pair each task sends along with its row.
  auto t_ids = pto::reshape(pto::arange(tasks), {tasks, 1});
  auto tok = pto::div(t_ids, static_cast<int64_t>(k));
  auto slot = pto::sub(t_ids, pto::mul(tok, static_cast<int64_t>(k)));
  auto pairs = pto::concat({tok, slot, pto::zeros({tasks, 2}, pto::DT_INT32)}, 1); // [tasks, 4]
  auto one = pto::full({1, 1}, 1.0, pto::DT_INT32);

  for (auto t : pto::loop(tasks)) {
    auto token = t / k;
    auto ex = expert_ids.at({token, t % k});
    pto::Tensor sent = ready;
    if (pto::cond(mask.at({token}) == 1)) {
      auto dest = ex / el, eo = ex % el;
      auto row = (eo * n + me) * b + rank.at({t, ex}) - 1;
      auto p_row = dist::shmem_put(pto::view(x, {1, h}, {token, 0}), {row, 0}, data, dest,
                                   {.pred = {ready}});
      auto p_info = dist::shmem_put(pto::view(pairs, {1, 4}, {t, 0}), {row, 0}, info, dest,
                                    {.pred = {ready}});
      auto p_count = dist::shmem_put(one, {eo * n + me + 1, 0}, count, dest,
                                     {.put_op = dist::AtomicType::ADD, .pred = {ready}});
      sent = dist::nop({p_row, p_info, p_count});
    }
    // Every task signals every PE, active or not, so each PE knows when all tasks are done.
    dist::shmem_signal_all(dist::shmem_view(data, {1, h}, {0, 0}), 0, 1,
                           {.sig_op = dist::AtomicType::ADD, .pred = {sent}});
  }
  auto done = dist::shmem_wait_until(dist::shmem_view(data, {1, h}, {0, 0}), 0,
                                     static_cast<int32_t>(tasks * n),
                                     {.clear_signal = true, .pred = {ready}});

  auto counts = dist::shmem_get(count, me, {.pred = {done}}); // [E + 1, 8] int32
  auto offsets = pto::cumsum(counts, 0);                      // int64
  // Received rows, grouped by local expert then source PE: group (eo, r) starts at the number
  // of rows of all groups before it.
  for (int64_t eo = 0; eo < el; ++eo) {
    for (int r = 0; r < n; ++r) {
      const int64_t g = eo * n + r;
      auto rows = counts.at({g + 1, 0});
      auto at = offsets.at({g, 0});
      auto got =
          dist::shmem_get(dist::shmem_view(data, {b, h}, {g * b, 0}, {.valid_shape = {{rows, h}}}),
                          me, {.pred = {done}});
      pto::assemble(got, {at, 0}, expand_x);
      auto meta =
          dist::shmem_get(dist::shmem_view(info, {b, 4}, {g * b, 0}, {.valid_shape = {{rows, 4}}}),
                          me, {.pred = {done}});
      auto src =
          pto::full({b, 1}, static_cast<double>(r), pto::DT_INT32, {.valid_shape = {{rows, 1}}});
      pto::assemble(pto::view(meta, {b, 2}, {0, 0}, {.valid_shape = {{rows, 2}}}), {at, 0},
                    assist_info);
      pto::assemble(src, {at, 2}, assist_info);
    }
    // expert_token_nums[eo] = rows received for local expert eo from every PE.
    auto per_expert = pto::view(counts, {n, 1}, {eo * n + 1, 0});
    pto::assemble(pto::reshape(pto::sum(per_expert, 0), {1}), {eo}, expert_token_nums);
  }
  auto total = pto::cast(pto::view(offsets, {1, 1}, {e, 0}), pto::DT_INT32);
  pto::assemble(pto::reshape(total, {1}), {0}, recv_counts);
}

/// Combine (reference §7.8): expert outputs y [rows, H] (dispatch's expand_x after the experts),
/// assist_info [rows, 4], recv_counts [1], expert_scales [B, K] fp32, mask [B]; out [B, H].
void combine(pto::Tensor y, pto::Tensor assist_info, pto::Tensor recv_counts,
             pto::Tensor expert_scales, pto::Tensor mask, pto::Tensor out, int n, int64_t b,
             int64_t k) {
  const int64_t h = y.shape(1).concrete();
  // One row per tile: each token's signal slot is addressed by a one-row view at row `token`.
  pto::set_vec_tile_shapes(1, std::min<int64_t>(h, 256));
  auto back = dist::create_shmem_tensor("world", n, pto::DT_FP32, {k * b, h});
  auto y32 = pto::cast(y, pto::DT_FP32);
  for (auto r : pto::loop(recv_counts.at({0}))) {
    auto token = assist_info.at({r, 0}), slot = assist_info.at({r, 1});
    auto src = assist_info.at({r, 2});
    auto put = dist::shmem_put(pto::view(y32, {1, h}, {r, 0}), {k * token + slot, 0}, back, src);
    dist::shmem_signal(dist::shmem_view(back, {1, h}, {token, 0}), 0, 1, src,
                       {.sig_op = dist::AtomicType::ADD, .pred = {put}});
  }
  for (auto t : pto::loop(b)) {
    if (pto::cond(mask.at({t}) == 1)) {
      auto arrived = dist::shmem_wait_until(dist::shmem_view(back, {1, h}, {t, 0}), 0,
                                            static_cast<int32_t>(k), {.clear_signal = true});
      auto rows = dist::shmem_load(dist::shmem_view(back, {k, h}, {k * t, 0}),
                                   dist::my_symbolic_pe("world"), {.pred = {arrived}});
      auto w = pto::reshape(pto::view(expert_scales, {1, k}, {t, 0}), {k, 1});
      auto mixed = pto::sum(pto::mul(rows, w), 0, {.keepdim = true});
      pto::assemble(pto::cast(mixed, out.dtype()), {t, 0}, out);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"moe_dispatch_combine: MoE token dispatch and combine over shmem with "
               "data-dependent loops and branches (PyPTO §7.8), checked exactly"};
  sample::CommonFlags f;
  f.pes = 4;
  Dims d;
  // The dispatch unrolls a loop over the E expert groups at trace time: E grows with the PEs.
  sample::add_common_flags(app, f, {"fp32", "bf16", "fp16", "int32"}, {.max = 64});
  app.add_option("--tokens", d.b, "tokens per PE (B)")
      ->check(sample::int_range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  app.add_option("--hidden", d.h, "hidden size (H)")
      ->check(sample::int_range(int64_t{1}, int64_t{1} << 14))
      ->capture_default_str();
  // At most 64 experts (as many as --pes allows): dispatch unrolls one receive group per expert
  // at trace time, so the program, and its JIT compile time, grows with E (about 0.5 s per
  // expert on a loaded 2-core machine: 64 take half a minute).
  app.add_option("--experts", d.e,
                 "experts in total (E, a multiple of --pes and >= --topk; default the least "
                 "multiple of --pes that is >= 16; at most 64: each expert adds its own code to "
                 "the kernel)")
      ->check(sample::int_range(int64_t{1}, int64_t{64}));
  app.add_option("--topk", d.k, "experts per token (K <= E)")
      ->check(sample::int_range(int64_t{1}, int64_t{64}))
      ->capture_default_str();
  if (int rc = sample::parse(app, argc, argv); rc >= 0)
    return rc;
  d.n = f.pes;
  if (app.count("--experts") == 0)
    d.e = (16 + d.n - 1) / d.n * d.n;
  if (d.e % d.n != 0 || d.k > d.e) {
    fmt::print(stderr,
               "error: --experts ({}) must be a multiple of --pes ({}) and >= --topk ({})\n", d.e,
               d.n, d.k);
    return 2;
  }
  try {
    const pto::DataType dt = pto::parse_dtype(f.dtype);
    const int n = d.n;
    const int64_t el = d.e_local(), rows_max = el * n * d.b, tasks = d.b * d.k;
    // Per PE: routing inputs, the received rows (expand_x and the experts' output),
    // assist_info, the combined output; shmem data [E*B, H] and info [E*B, 4] (fp64-sized at
    // most), counts, the combine's fp32 [K*B, H]; the kernels' one-hot, rank and pair locals
    // ([B*K, E] each, int64 at most), the local copies of every received group [B, H + 4]
    // (E groups, unrolled) and the combine's fp32 copy of its input [rows, H].
    sample::MemoryEstimate need;
    need.add("inputs", n, {d.b, d.h + 3 * d.k + 1}, pto::DT_DOUBLE)
        .add("received rows", 2 * int64_t{n}, {rows_max, d.h}, dt)
        .add("assist info", n, {rows_max, 4}, pto::DT_INT32)
        .add("outputs", n, {d.b, d.h}, dt)
        .add("symmetric heaps", n, {d.e * d.b, d.h + 4}, pto::DT_DOUBLE)
        .add("symmetric heaps (combine)", n, {d.k * d.b, d.h}, pto::DT_FP32)
        .add("kernel locals", 3 * int64_t{n}, {tasks, d.e}, pto::DT_INT64)
        .add("received copies", n, {d.e * d.b + rows_max, d.h + 4}, pto::DT_FP32);
    if (!sample::fits_in_memory(need))
      return 2;
    fmt::print("moe_dispatch_combine {} pes={} tokens={} hidden={} experts={} topk={} mode={}\n",
               f.dtype, n, d.b, d.h, d.e, d.k, sample::mode_name(f));
    // Inputs: distinct experts per token, ~3/4 of the tokens active, routing weights in [0, 1).
    std::mt19937_64 rng(f.seed);
    std::vector<pto::HostTensor> xs, ids, masks, scales;
    for (int p = 0; p < n; ++p) {
      xs.push_back(sample::random_tensor(dt, {d.b, d.h}, f.seed + uint64_t(p)));
      pto::HostTensor id(pto::DT_INT32, {d.b, d.k}), m(pto::DT_INT32, {d.b}),
          s(pto::DT_FP32, {d.b, d.k});
      std::vector<int64_t> perm(size_t(d.e));
      for (int64_t t = 0; t < d.b; ++t) {
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int64_t j = 0; j < d.k; ++j) {
          id.set(t * d.k + j, double(perm[size_t(j)]));
          s.set(t * d.k + j, double(rng() % 1024) / 1024.0);
        }
        m.set(t, rng() % 4 != 0 ? 1 : 0);
      }
      ids.push_back(std::move(id));
      masks.push_back(std::move(m));
      scales.push_back(std::move(s));
    }
    std::vector<pto::HostTensor> ex, ai, etn, rc, outs;
    for (int p = 0; p < n; ++p) {
      ex.emplace_back(dt, std::vector<int64_t>{rows_max, d.h});
      ai.emplace_back(pto::DT_INT32, std::vector<int64_t>{rows_max, 4});
      etn.emplace_back(pto::DT_INT32, std::vector<int64_t>{el});
      rc.emplace_back(pto::DT_INT32, std::vector<int64_t>{1});
      outs.emplace_back(dt, std::vector<int64_t>{d.b, d.h});
    }
    auto kd = pto::jit("moe_dispatch", dispatch, sample::jit_options(f));
    auto kc = pto::jit("moe_combine", combine, sample::jit_options(f));
    auto world_ptr = sample::make_world(f, n);
    auto &world = *world_ptr;
    world.enable_trace(!f.trace.empty());
    world.run([&](int pe) {
      auto i = size_t(pe);
      kd(xs[i], ids[i], masks[i], ex[i], ai[i], etn[i], rc[i], n, d.e, d.k);
    });
    sample::share_outputs(f, {&ex, &ai, &etn, &rc}); // --backend mpi: every rank checks every PE
    // The experts: expert g scales its rows by g + 1 (in the data dtype).
    std::vector<pto::HostTensor> ys;
    for (int p = 0; p < n; ++p) {
      pto::HostTensor y(dt, {rows_max, d.h});
      int64_t row = 0;
      for (int64_t eo = 0; eo < el; ++eo)
        for (int64_t c = 0; c < int64_t(etn[size_t(p)].get(eo)); ++c, ++row)
          for (int64_t j = 0; j < d.h; ++j)
            y.set(row * d.h + j,
                  sample::as_dtype(ex[size_t(p)].get(row * d.h + j) * double(p * el + eo + 1), dt));
      ys.push_back(std::move(y));
    }
    world.run([&](int pe) {
      auto i = size_t(pe);
      kc(ys[i], ai[i], rc[i], scales[i], masks[i], outs[i], n, d.b, d.k);
    });
    sample::share_outputs(f, {&outs}); // --backend mpi: every rank checks every PE
    sample::write_trace(world, f);
    if (!f.check)
      return 0;

    // Golden routing: PE p's active task (t, j) goes to expert g = ids[t, j] on PE g / el, into
    // group (g % el, p) in task order.
    int64_t bad = 0;
    for (int q = 0; q < n; ++q) {
      auto qi = size_t(q);
      std::vector<double> want_x(size_t(rows_max * d.h), 0.0), want_info(size_t(rows_max * 4), 0.0);
      int64_t row = 0;
      for (int64_t eo = 0; eo < el; ++eo) {
        const int64_t g = q * el + eo;
        int64_t per_expert = 0;
        for (int p = 0; p < n; ++p)
          for (int64_t t = 0; t < d.b; ++t)
            for (int64_t j = 0; j < d.k; ++j) {
              if (masks[size_t(p)].get(t) != 1 || int64_t(ids[size_t(p)].get(t * d.k + j)) != g)
                continue;
              for (int64_t c = 0; c < d.h; ++c)
                want_x[size_t(row * d.h + c)] = xs[size_t(p)].get(t * d.h + c);
              want_info[size_t(row * 4 + 0)] = double(t);
              want_info[size_t(row * 4 + 1)] = double(j);
              want_info[size_t(row * 4 + 2)] = double(p);
              ++row;
              ++per_expert;
            }
        if (int64_t(etn[qi].get(eo)) != per_expert) {
          fmt::print("  PE {} expert_token_nums[{}] = {}, want {}\n", q, eo, etn[qi].get(eo),
                     per_expert);
          ++bad;
        }
      }
      if (int64_t(rc[qi].get(0)) != row) {
        fmt::print("  PE {} recv_counts[0] = {}, want {}\n", q, rc[qi].get(0), row);
        ++bad;
      }
      // Exact on the received rows (the rest of expand_x is not written).
      for (int64_t i = 0; i < row * d.h; ++i)
        bad += ex[qi].get(i) != want_x[size_t(i)];
      for (int64_t i = 0; i < row * 4; ++i)
        bad += (i % 4 == 3) ? 0 : ai[qi].get(i) != want_info[size_t(i)];
      // Combine: out[t] = sum_j scales[t, j] * y(t, j), in fp32 in order j = 0..K-1, rounded
      // once; y(t, j) = x[t] * (ids[t, j] + 1) rounded to the dtype.
      for (int64_t t = 0; t < d.b; ++t) {
        if (masks[qi].get(t) != 1)
          continue;
        for (int64_t c = 0; c < d.h; ++c) {
          // Each fp32 product and sum rounded once (double holds them exactly before rounding),
          // so the compiler cannot contract them into an FMA.
          float acc = 0;
          for (int64_t j = 0; j < d.k; ++j) {
            double g = ids[qi].get(t * d.k + j);
            double yv = float(sample::as_dtype(xs[qi].get(t * d.h + c) * (g + 1), dt));
            float prod = float(scales[qi].get(t * d.k + j) * yv);
            acc = float(double(acc) + double(prod));
          }
          bad += outs[qi].get(t * d.h + c) != sample::as_dtype(acc, dt);
        }
      }
    }
    return sample::finish_check(
        bad, fmt::format("{} PEs x {} tokens x top-{} of {} experts", n, d.b, d.k, d.e));
  } catch (const pto::Error &e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
