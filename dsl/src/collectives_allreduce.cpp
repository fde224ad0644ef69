// collectives_allreduce.cpp - The allreduce algorithms of collectives.h: one-shot, two-shot and
// reduce-scatter + allgather, and the rule AUTO picks by. Each reads like the protocol it is:
// puts into symmetric tensors, signals, waits, gets; loops over PEs and chunks are C++ loops,
// unrolled at trace time (every PE runs the same program; `me` is a run-time value), except
// above kUnrolledPes PEs, where one-shot's and RS_AG's per-PE loops are pto::loops.
//
// Bytes one PE copies per call, for an input of S bytes on n PEs (B = S / n; "get" and "put"
// are copies by the runtime, "assemble" the caller's copy of the result):
//   one_shot  puts n*S (its x into every PE), gets n*S (every slot), 1 reduction over n*S
//   two_shot  ADD-puts S, gets B, puts S, gets S (+ clears B per pass inside a pto::loop)
//   rs_ag     puts S, gets S, puts S, gets S; the reduction reads S (in cache-sized chunks
//             with AllreduceOptions::chunk_bytes)
// None clears a buffer before use (kernel entry leaves shmem data and signals zero; SET puts
// need no zero at all) and none gets a block twice.
#include "pto/control.h"
#include "pto/ops.h"
#include "pto/size_math.h"

#include "collectives_internal.h"
#include "distributed_detail.h"

#include <algorithm>

namespace pto::distributed::detail {

namespace {

/// Row blocks of reduce-scatter + allgather: PE p owns x rows [p*B, (p+1)*B) (fewer or none at
/// the end), split into B / C chunks of C rows. Each chunk is one tile: one runtime call per
/// put or get and one signal slot. B is a multiple of C, so every chunk window is tile-aligned.
struct Blocks {
  int64_t chunk = 1;  ///< C
  int64_t block = 1;  ///< B
  int64_t chunks = 1; ///< B / C
};

/// At most kMaxChunks chunks per block (each chunk is a few runtime calls and n waits per PE).
/// `chunk_bytes` 0 (the default) is one chunk per block: on today's runtime every chunk costs a
/// wait hand-off, and one chunk measured fastest (bench/RESULTS.md, "Allreduce algorithms").
constexpr int64_t kMaxChunks = 16;

Blocks block_geometry(int64_t rows, int n, int64_t row_bytes, int64_t chunk_bytes) {
  const int64_t b0 = (rows + n - 1) / n;
  Blocks g;
  g.chunk = chunk_bytes > 0
                ? std::clamp<int64_t>(chunk_bytes / std::max<int64_t>(row_bytes, 1), 1, b0)
                : b0;
  g.chunk = std::max(g.chunk, (b0 + kMaxChunks - 1) / kMaxChunks);
  g.chunks = (b0 + g.chunk - 1) / g.chunk;
  g.block = g.chunks * g.chunk;
  return g;
}

/// The rows of x in [off, off + rows) that exist (x has `total` rows).
int64_t rows_within(int64_t total, int64_t off, int64_t rows) {
  return std::clamp<int64_t>(total - off, 0, rows);
}

/// Up to this many PEs the per-PE loops are unrolled at trace time (straight-line code, no loop
/// overhead per PE); above, they are pto::loops (kernel size independent of n).
constexpr int kUnrolledPes = 16;

/// One-shot: every PE SET-puts its whole x into slot `me` of every PE's [n*R, ...] buffer and
/// signals it; each PE waits for its n slots and reduces them in PE order. One round of
/// signals; traffic grows with n^2 (latency-bound sizes).
Tensor one_shot(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                const std::string &group, int n, const Tensor &start, const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0];
  TileScope tile(shape, loc);
  const std::vector<SymbolicScalar> xv = x.valid_shape();
  auto stage = staging_tensor(
      group, n, x.dtype(),
      with_rows(shape, checked_extent_mul(n, R, "n_pes x rows", "allreduce", loc)), loc);
  auto me = me_in(group, n, loc);
  auto begin = reuse_barrier(group, n, {start}, loc);
  for (int p = 0; p < n; ++p) {
    auto mine = shmem_view(stage, shape, at_row(me * R, rank), {}, loc);
    signal_arrival(stage, p, shmem_put(x, zeros_at(rank), mine, p, {.pred = {begin}}, loc), loc);
  }
  auto ready = wait_arrivals(stage, me, n, begin, loc);
  std::vector<Tensor> terms;
  for (int q = 0; q < n; ++q) {
    auto theirs = shmem_view(stage, shape, at_row(q * R, rank), {}, loc);
    terms.push_back(
        borrowed_get(theirs, me, {.pred = {ready}, .dtype = reduce_dtype(op, x.dtype())}, loc));
  }
  auto red = reduce_in_order(op, terms, x.dtype(), loc);
  return view(red, shape, zeros_at(rank), {.valid_shape = xv}, loc);
}

/// The PE-order reduction of the n slots of `buf` ([n*B, ...], slot q at row q*B) as a pto::loop:
/// a local copy of slot 0, then acc = acc op slot q for q = 1..n-1, in the reduce dtype (the
/// operations of reduce_in_order, so the same bits), converted back to `dt`.
Tensor reduce_slots_looped(Reduction op, const ShmemTensor &buf, const std::vector<int64_t> &slot,
                           int n, DataType dt, const SymbolicScalar &me, const Tensor &ready,
                           const SrcLoc &loc) {
  const size_t rank = slot.size();
  const DataType acc_dt = reduce_dtype(op, dt);
  Tensor acc = shmem_get(shmem_view(buf, slot, zeros_at(rank), {}, loc), me,
                         {.pred = {ready}, .dtype = acc_dt}, loc);
  for (auto q : loop(1, n, {.name = "allreduce_reduce"}, loc)) {
    auto theirs = shmem_view(buf, slot, at_row(q * slot[0], rank), {}, loc);
    auto term = borrowed_get(theirs, me, {.pred = {ready}, .dtype = acc_dt}, loc);
    assemble(combine(op, acc, term, loc), zeros_at(rank), acc, loc);
  }
  return acc.dtype() == dt ? acc : cast(acc, dt, loc);
}

/// One-shot for many PEs: the same puts, signals, wait and PE-order reduction as one_shot, but
/// over the PEs in two pto::loops instead of trace-time unrolling, so the kernel holds O(1) ops
/// whatever n (unrolled, JIT compile time grows with n: bench/RESULTS.md, "Many PEs"); the
/// same bits as one_shot.
Tensor one_shot_looped(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                       const std::string &group, int n, const Tensor &start, const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0];
  TileScope tile(shape, loc);
  const std::vector<SymbolicScalar> xv = x.valid_shape();
  auto stage = staging_tensor(
      group, n, x.dtype(),
      with_rows(shape, checked_extent_mul(n, R, "n_pes x rows", "allreduce", loc)), loc);
  auto me = me_in(group, n, loc);
  auto begin = reuse_barrier(group, n, {start}, loc);
  auto mine = shmem_view(stage, shape, at_row(me * R, rank), {}, loc);
  for (auto p : loop(n, {.name = "allreduce_one_shot"}, loc)) {
    auto put = shmem_put(x, zeros_at(rank), mine, p, {.pred = {begin}}, loc);
    signal_arrival(stage, p, put, loc);
  }
  auto ready = wait_arrivals(stage, me, n, begin, loc);
  auto red = reduce_slots_looped(op, stage, shape, n, x.dtype(), me, ready, loc);
  return view(red, shape, zeros_at(rank), {.valid_shape = xv}, loc);
}

/// Waits for every chunk of every PE in `gath` ([n*B, ...], chunk windows of `chunk` rows),
/// then gets its first R rows (x's valid region) in one call.
Tensor collect(const ShmemTensor &gath, const std::vector<int64_t> &shape, const Blocks &g, int n,
               const std::vector<SymbolicScalar> &xv, const SymbolicScalar &me, const Tensor &begin,
               const SrcLoc &loc) {
  const size_t rank = shape.size();
  const auto chunk = with_rows(shape, g.chunk);
  std::vector<Tensor> arrived;
  if (g.chunks == 1)
    arrived.push_back(wait_arrivals(gath, me, n, begin, loc));
  for (int q = 0; q < n && g.chunks > 1; ++q)
    for (int64_t c = 0; c < g.chunks; ++c) {
      auto w = shmem_view(gath, chunk, at_row(q * g.block + c * g.chunk, rank), {}, loc);
      arrived.push_back(shmem_wait_until(w, me, 1, {.clear_signal = true, .pred = {begin}}, loc));
    }
  auto all = shmem_view(gath, shape, zeros_at(rank), {.valid_shape = xv}, loc);
  return borrowed_get(all, me, {.pred = {nop(arrived, loc)}}, loc);
}

/// Puts chunk `part` (valid rows clipped) at `row` of `gath` on every PE and signals each: one
/// counted arrival per buffer when blocks are one chunk, else the chunk's own slot.
void publish(const Tensor &part, const ShmemTensor &gath, const std::vector<int64_t> &chunk,
             const SymbolicScalar &row, int n, bool whole, const Tensor &begin, const SrcLoc &loc) {
  const size_t rank = chunk.size();
  auto w = shmem_view(gath, chunk, at_row(row, rank), {}, loc);
  for (int p = 0; p < n; ++p) {
    auto put = shmem_put(part, zeros_at(rank), w, p, {.pred = {begin}}, loc);
    if (whole)
      signal_arrival(gath, p, put, loc);
    else
      shmem_signal(w, p, 1, p, {.pred = {put}}, loc);
  }
}

/// Reduce-scatter + allgather with single-writer SET puts (no atomics, no cleared buffers):
/// 1. every PE puts chunk c of x's block p into slot `me` of PE p's stage buffer (and signals
///    that chunk), for every p and c;
/// 2. per chunk of its own block, a PE waits for the n slots, gets them, reduces them in PE
///    order and puts the result into every PE's gather buffer (and signals it): while it
///    reduces the next chunk, the others already copy this one;
/// 3. every PE waits for every chunk and gets the gathered rows in one call.
Tensor rs_ag(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
             const std::string &group, int n, const Tensor &start, int64_t chunk_bytes,
             const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0];
  const int64_t row_bytes = bytes_of_shape(with_rows(shape, 1), x.dtype());
  const Blocks g = block_geometry(R, n, row_bytes, chunk_bytes);
  const auto chunk = with_rows(shape, g.chunk);
  TileScope tile(chunk, loc);
  const std::vector<SymbolicScalar> xv = x.valid_shape();
  const auto buffer =
      with_rows(shape, checked_extent_mul(n, g.block, "n_pes x block rows", "allreduce", loc));
  auto stage = staging_tensor(group, n, x.dtype(), buffer, loc);
  auto gath = staging_tensor(group, n, x.dtype(), buffer, loc);
  auto me = me_in(group, n, loc);
  auto begin = reuse_barrier(group, n, {start}, loc);
  for (int p = 0; p < n; ++p)
    for (int64_t c = 0; c < g.chunks; ++c) {
      const int64_t off = p * g.block + c * g.chunk, rows = rows_within(R, off, g.chunk);
      auto slot = shmem_view(stage, chunk, at_row(me * g.block + c * g.chunk, rank), {}, loc);
      Tensor tok = begin;
      if (rows > 0) {
        auto part =
            view(x, with_rows(shape, rows), at_row(off, rank),
                 {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], off, rows))}, loc);
        tok = shmem_put(part, zeros_at(rank), slot, p, {.pred = {begin}}, loc);
      }
      if (g.chunks == 1)
        signal_arrival(stage, p, tok, loc);
      else
        shmem_signal(slot, p, 1, p, {.pred = {tok}}, loc);
    }
  const DataType acc = reduce_dtype(op, x.dtype());
  const Tensor all_in = g.chunks == 1 ? wait_arrivals(stage, me, n, begin, loc) : begin;
  for (int64_t c = 0; c < g.chunks; ++c) {
    std::vector<Tensor> terms;
    for (int q = 0; q < n; ++q) {
      auto slot = shmem_view(stage, chunk, at_row(q * g.block + c * g.chunk, rank), {}, loc);
      auto ready = g.chunks == 1 ? all_in
                                 : shmem_wait_until(slot, me, 1,
                                                    {.clear_signal = true, .pred = {begin}}, loc);
      terms.push_back(borrowed_get(slot, me, {.pred = {ready}, .dtype = acc}, loc));
    }
    auto red = reduce_in_order(op, terms, x.dtype(), loc);
    const SymbolicScalar row = me * g.block + c * g.chunk;
    auto part = view(red, chunk, zeros_at(rank),
                     {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], row, g.chunk))}, loc);
    publish(part, gath, chunk, row, n, g.chunks == 1, begin, loc);
  }
  return collect(gath, shape, g, n, xv, me, begin, loc);
}

/// rs_ag with one chunk per block for many PEs: the same puts, signals and PE-order reduction,
/// over the PEs in pto::loops (blocks wholly inside x, then the one partial block unrolled, then
/// the PEs past the last row, which own empty blocks and only signal), so the kernel's size does
/// not grow with n.
Tensor rs_ag_looped(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                    const std::string &group, int n, const Tensor &start, const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0];
  Blocks g;
  g.chunk = g.block = (R + n - 1) / n;
  const int64_t B = g.block;
  const auto block = with_rows(shape, B);
  TileScope tile(block, loc);
  const std::vector<SymbolicScalar> xv = x.valid_shape();
  const auto buffer =
      with_rows(shape, checked_extent_mul(n, B, "n_pes x block rows", "allreduce", loc));
  auto stage = staging_tensor(group, n, x.dtype(), buffer, loc);
  auto gath = staging_tensor(group, n, x.dtype(), buffer, loc);
  auto me = me_in(group, n, loc);
  auto begin = reuse_barrier(group, n, {start}, loc);
  auto slot = shmem_view(stage, block, at_row(me * B, rank), {}, loc);
  auto put_block = [&](const SymbolicScalar &p, int64_t rows) {
    const SymbolicScalar off = p * B;
    auto part = view(x, with_rows(shape, rows), at_row(off, rank),
                     {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], off, rows))}, loc);
    signal_arrival(stage, p, shmem_put(part, zeros_at(rank), slot, p, {.pred = {begin}}, loc), loc);
  };
  const int64_t full = std::min<int64_t>(R / B, n);
  if (full > 0)
    for (auto p : loop(full, {.name = "allreduce_scatter"}, loc))
      put_block(p, B);
  int64_t next = full;
  if (next < n && R - next * B > 0)
    put_block(SymbolicScalar(next++), R - full * B);
  if (next < n)
    for (auto p : loop(next, n, {.name = "allreduce_scatter_empty"}, loc))
      signal_arrival(stage, p, begin, loc);
  auto ready = wait_arrivals(stage, me, n, begin, loc);
  auto red = reduce_slots_looped(op, stage, block, n, x.dtype(), me, ready, loc);
  const SymbolicScalar row = me * B;
  auto part = view(red, block, zeros_at(rank),
                   {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], row, B))}, loc);
  auto w = shmem_view(gath, block, at_row(row, rank), {}, loc);
  for (auto p : loop(n, {.name = "allreduce_gather"}, loc))
    signal_arrival(gath, p, shmem_put(part, zeros_at(rank), w, p, {.pred = {begin}}, loc), loc);
  return collect(gath, shape, g, n, xv, me, begin, loc);
}

/// Two-shot, as PyPTO's TwoShotAllReduce (reference §7.4) for sums: every PE ADD-puts x's block
/// p into PE p's accumulator (fp32 for fp16/bf16) and counts arrivals in one slot; each PE gets
/// its reduced block and puts it into every PE's gather buffer. Floating-point sums depend on
/// the order the ADDs land in. Inside a pto::loop the accumulator is cleared after it is read,
/// for the next pass (kernel entry zeroes it for the first).
Tensor two_shot_sum(const Tensor &x, const std::vector<int64_t> &shape, const std::string &group,
                    int n, const Tensor &start, const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0];
  Blocks g;
  g.chunk = g.block = (R + n - 1) / n;
  const auto block = with_rows(shape, g.block);
  TileScope tile(block, loc);
  const std::vector<SymbolicScalar> xv = x.valid_shape();
  auto acc = make_shmem_tensor(group, n, sum_dtype(x.dtype()), block, loc);
  auto gath = staging_tensor(
      group, n, x.dtype(),
      with_rows(shape, checked_extent_mul(n, g.block, "n_pes x block rows", "allreduce", loc)),
      loc);
  auto me = me_in(group, n, loc);
  auto begin = reuse_barrier(group, n, {start}, loc);
  for (int p = 0; p < n; ++p) {
    const int64_t off = p * g.block, rows = rows_within(R, off, g.block);
    Tensor tok = begin;
    if (rows > 0) {
      auto part = view(x, with_rows(shape, rows), at_row(off, rank),
                       {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], off, rows))}, loc);
      tok = shmem_put(part, zeros_at(rank), acc, p, {.put_op = AtomicType::ADD, .pred = {begin}},
                      loc);
    }
    shmem_signal(acc, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {tok}}, loc);
  }
  auto ready = shmem_wait_until(acc, me, n, {.clear_signal = true, .pred = {begin}}, loc);
  auto [got, mine] = shmem_get_with_token(acc, me, {.pred = {ready}, .dtype = x.dtype()}, loc);
  if (ir::Recorder::current("allreduce", loc).current_scope() !=
      &ir::Recorder::current("allreduce", loc).program().body)
    shmem_clear_data(acc, {.pred = {got}}, loc);
  const SymbolicScalar row = me * g.block;
  auto part = view(mine, block, zeros_at(rank),
                   {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], row, g.block))}, loc);
  publish(part, gath, block, row, n, true, begin, loc);
  return collect(gath, shape, g, n, xv, me, begin, loc);
}

/// The most PEs AUTO's large case takes registered() for; above, RS_AG (see exchange).
constexpr int kMaxRegisteredPes = 2;

/// Registered user buffers (AUTO for large inputs): one AllreduceDirect op, which the runtime
/// runs as pto_rt_allreduce (abi.h): on shared memory each PE reduces its block straight from
/// every PE's x into every PE's y (no staging copy, no heap round trip), else an allgather
/// through the transport; member-order reduction either way, as reduce_in_order. A one-element
/// shmem tensor declares the group, so that kernel entry registers it where nothing else does.
Tensor registered(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                  const std::string &group, int n, const Tensor &start, const SrcLoc &loc) {
  auto &r = ir::Recorder::current("allreduce", loc);
  TileScope tile(shape, loc);
  make_shmem_tensor(group, n, DT_INT32, {1, 1}, loc);
  const int gi = r.group_index(group, n, "allreduce", loc);
  ir::Op o;
  o.kind = ir::OpKind::AllreduceDirect;
  o.where = loc;
  o.user_op = "allreduce";
  o.inputs = {r.use(x, "allreduce", loc)};
  if (start.id() != x.id())
    o.preds = {r.use(start, "allreduce", loc)};
  o.ints = {gi, static_cast<int64_t>(op)};
  const ir::Value &xv = r.program().value(o.inputs[0]);
  o.tile = ir::capture_tile(r, xv.shape.size(), "allreduce", loc);
  ir::Value y;
  y.kind = ir::ValueKind::Local;
  y.dtype = xv.dtype;
  y.shape = xv.shape;
  y.valid = xv.valid;
  Tensor out = r.tensor(r.add_value(std::move(y)));
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

} // namespace

AllreduceAlgorithm resolve_algorithm(AllreduceAlgorithm algo, int64_t bytes, int n) {
  if (algo != AllreduceAlgorithm::AUTO)
    return algo;
  if (n == 1 || (bytes <= kAllreduceOneShotMaxBytes &&
                 bytes <= kAllreduceOneShotMaxTotalBytes / n)) // n * bytes, without overflow
    return AllreduceAlgorithm::ONE_SHOT;
  return AllreduceAlgorithm::RS_AG;
}

const char *algorithm_name(AllreduceAlgorithm a) {
  switch (a) {
  case AllreduceAlgorithm::AUTO:
    return "auto";
  case AllreduceAlgorithm::ONE_SHOT:
    return "one_shot";
  case AllreduceAlgorithm::TWO_SHOT:
    return "two_shot";
  case AllreduceAlgorithm::RS_AG:
    return "rs_ag";
  }
  return "?";
}

Tensor exchange(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                AllreduceAlgorithm algo, const std::string &group, int n,
                const std::vector<Tensor> &pred, int64_t chunk_bytes, const SrcLoc &loc) {
  Tensor start = pred.empty() ? x : nop(pred, loc);
  const AllreduceAlgorithm chosen = resolve_algorithm(algo, bytes_of_shape(shape, x.dtype()), n);
  // Registered buffers only up to kMaxRegisteredPes: measured faster than RS_AG at 2 PEs
  // (4.1 vs 12.8 ms, 8 MiB, loaded 2-core host) but slower at 8 (75 vs 32 ms: every PE writes
  // into every output, with more PE threads than cores). bench/RESULTS.md, session 9.
  if (algo == AllreduceAlgorithm::AUTO && chosen == AllreduceAlgorithm::RS_AG &&
      n <= kMaxRegisteredPes)
    return registered(x, shape, op, group, n, start, loc);
  switch (chosen) {
  case AllreduceAlgorithm::ONE_SHOT:
    if (n > kUnrolledPes)
      return one_shot_looped(x, shape, op, group, n, start, loc);
    return one_shot(x, shape, op, group, n, start, loc);
  case AllreduceAlgorithm::TWO_SHOT:
    if (op == Reduction::SUM)
      return two_shot_sum(x, shape, group, n, start, loc);
    return rs_ag(x, shape, op, group, n, start, chunk_bytes, loc); // ADD exists for sums only
  case AllreduceAlgorithm::AUTO:
  case AllreduceAlgorithm::RS_AG:
    break;
  }
  if (n > kUnrolledPes && chunk_bytes == 0)
    return rs_ag_looped(x, shape, op, group, n, start, loc);
  return rs_ag(x, shape, op, group, n, start, chunk_bytes, loc);
}

} // namespace pto::distributed::detail
