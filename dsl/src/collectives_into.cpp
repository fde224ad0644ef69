// collectives_into.cpp - PyPTO's C++ library collectives on the caller's shmem tensor and output
// (pto/collectives_into.h): reference §7.1, 7.3 and 7.4's protocols, step for step, on the
// primitives of distributed.h.
#include "pto/collectives_into.h"

#include "pto/ops.h"
#include "pto/shape_ops.h"

#include "collectives_internal.h"
#include "distributed_detail.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

namespace pto::distributed {

using namespace detail;

namespace {

/// What the four share: in's static shape, the shmem tensor's geometry, the pred list.
struct Call {
  const char *op;
  std::vector<int64_t> shape; ///< in's
  int n = 0;                  ///< the shmem tensor's group size
  std::vector<Tensor> pred;
  SymbolicScalar me;
};

/// Checks in, shmem (its shape must be `want`, its dtype in's or, with `add`, fp32 for an
/// fp16/bf16 input) and registers the call; errors name `op`.
Call start(const char *op, const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
           const std::function<std::vector<int64_t>(const std::vector<int64_t> &, int)> &want,
           bool add, const SrcLoc &loc) {
  Call c{op, static_shape(in, op, loc), shmem.n_pes, {}, {}};
  auto &r = ir::Recorder::current(op, loc);
  const ir::ShmemInfo &s = shmem_of(r, shmem, op, loc);
  if (s.shape.empty())
    throw DistributedError(loc, op,
                           "the shmem tensor is a signal-only object (create_shmem_signal); "
                           "pass a create_shmem_tensor");
  const std::vector<int64_t> expect = want(c.shape, c.n);
  if (s.shape != expect)
    throw ShapeError(loc, op,
                     fmt::format("the shmem tensor must be [{}] for an input [{}] on {} PEs, got "
                                 "[{}]",
                                 fmt::join(expect, ", "), fmt::join(c.shape, ", "), c.n,
                                 fmt::join(s.shape, ", ")));
  const DataType dt = in.dtype(loc);
  const bool widened = add && (dt == DT_FP16 || dt == DT_BF16) && s.dtype == DT_FP32;
  if (s.dtype != dt && !widened)
    throw DTypeError(loc, op,
                     fmt::format("the shmem tensor must be {}{}, got {}", name(dt),
                                 add && (dt == DT_FP16 || dt == DT_BF16) ? " or fp32" : "",
                                 name(s.dtype)));
  if (shmem.view_shape != s.shape)
    throw DistributedError(loc, op, "pass the whole shmem tensor, not a shmem_view of it");
  if (!pred.is_empty())
    c.pred.push_back(pred);
  c.pred.push_back(in);
  c.pred = agree_valid_shape(in, 0, op, shmem.group, c.n, std::move(c.pred), loc);
  c.me = me_in(shmem.group, c.n, loc);
  return c;
}

/// Rows [row, row + rows) of `in` as a view, with the valid rows that fall there.
Tensor rows_of(const Tensor &in, const std::vector<int64_t> &shape, int64_t row, int64_t rows,
               const SrcLoc &loc) {
  std::vector<int64_t> block = shape;
  block[0] = rows;
  std::vector<SymbolicScalar> valid = in.valid_shape(loc);
  valid[0] = valid_rows_at(valid[0], row, rows);
  return view(in, StaticDims(block), at_row(row, shape.size()), {.valid_shape = valid}, loc);
}

/// in's rows divide into the n PEs' blocks (ShapeError naming `op` otherwise).
void check_blocks(const Tensor &in, const ShmemTensor &shmem, const char *op, const SrcLoc &loc) {
  const int64_t rows = static_shape(in, op, loc)[0];
  if (shmem.n_pes < 1 || rows % shmem.n_pes != 0)
    throw ShapeError(loc, op,
                     fmt::format("the input's {} rows must be a multiple of the {} PEs of group "
                                 "'{}' (PyPTO: row % world_size == 0)",
                                 rows, shmem.n_pes, shmem.group));
}

std::vector<int64_t> same(const std::vector<int64_t> &s, int) { return s; }
std::vector<int64_t> one_block(const std::vector<int64_t> &s, int n) {
  return with_rows(s, s[0] / n);
}

} // namespace

Tensor one_shot_allreduce(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
                          const Tensor &out, SrcLoc loc) {
  Call c = start("one_shot_allreduce", pred, in, shmem, same, true, loc);
  std::vector<Tensor> sent;
  for (int p = 0; p < c.n; ++p) {
    auto put = shmem_put(in, zeros_at(c.shape.size()), shmem, p,
                         {.put_op = AtomicType::ADD, .pred = c.pred}, loc);
    sent.push_back(shmem_signal(shmem, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {put}}, loc));
  }
  auto ready = shmem_wait_until(shmem, c.me, c.n, {.clear_signal = true, .pred = sent}, loc);
  auto window = shmem_view(shmem, StaticDims(c.shape), zeros_at(c.shape.size()),
                           {.valid_shape = in.valid_shape(loc)}, loc);
  auto [token, sum] =
      shmem_get_with_token(window, c.me, {.pred = {ready}, .dtype = in.dtype()}, loc);
  assemble(sum, zeros_at(c.shape.size()), out, loc);
  return token;
}

Tensor two_shot_allreduce(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
                          const Tensor &out, SrcLoc loc) {
  check_blocks(in, shmem, "two_shot_allreduce", loc);
  Call c = start("two_shot_allreduce", pred, in, shmem, one_block, true, loc);
  const int64_t b = c.shape[0] / c.n;
  const size_t rank = c.shape.size();
  std::vector<Tensor> got;
  for (int p = 0; p < c.n; ++p) {
    auto block = rows_of(in, c.shape, p * b, b, loc);
    auto put = shmem_put(block, zeros_at(rank), shmem, p,
                         {.put_op = AtomicType::ADD, .pred = c.pred}, loc);
    auto sent = shmem_signal_all(shmem, p, 1, {.sig_op = AtomicType::ADD, .pred = {put}}, loc);
    auto ready = shmem_wait_until(shmem, p, c.n, {.clear_signal = true, .pred = {sent}}, loc);
    std::vector<SymbolicScalar> valid = in.valid_shape(loc);
    valid[0] = valid_rows_at(valid[0], p * b, b);
    auto window = shmem_view(shmem, StaticDims(with_rows(c.shape, b)), zeros_at(rank),
                             {.valid_shape = valid}, loc);
    auto [token, part] =
        shmem_get_with_token(window, p, {.pred = {ready}, .dtype = in.dtype()}, loc);
    assemble(part, at_row(p * b, rank), out, loc);
    got.push_back(token);
  }
  return nop(got, loc);
}

Tensor allgather(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem, const Tensor &out,
                 SrcLoc loc) {
  auto times_n = [](const std::vector<int64_t> &s, int n) {
    auto g = s;
    g[0] = s[0] * n; // the shape check names the expectation; in's rows are < 2^62 / n here
    return g;
  };
  const char *op = "allgather";
  const std::vector<int64_t> in_shape = static_shape(in, op, loc);
  if (in_shape[0] > (int64_t{1} << 62) / std::max(shmem.n_pes, 1))
    throw ShapeError(loc, op, "n_pes x rows overflows");
  Call c = start(op, pred, in, shmem, times_n, false, loc);
  const size_t rank = c.shape.size();
  const int64_t rows = c.shape[0];
  auto mine = shmem_view(shmem, StaticDims(c.shape), at_row(c.me * rows, rank), {}, loc);
  std::vector<Tensor> sent;
  for (int p = 0; p < c.n; ++p) {
    auto put = shmem_put(in, at_row(c.me * rows, rank), shmem, p, {.pred = c.pred}, loc);
    sent.push_back(shmem_signal(mine, p, 1, p, {.pred = {put}}, loc));
  }
  const SymbolicScalar &vr = in.valid_shape(loc)[0];
  std::vector<Tensor> got;
  for (int p = 0; p < c.n; ++p) {
    auto theirs = shmem_view(shmem, StaticDims(c.shape), at_row(p * rows, rank),
                             {.valid_shape = in.valid_shape(loc)}, loc);
    auto ready = shmem_wait_until(theirs, c.me, 1, {.clear_signal = true, .pred = sent}, loc);
    auto [token, part] = shmem_get_with_token(theirs, c.me, {.pred = {ready}}, loc);
    assemble(part, at_row(vr * p, rank), out, loc);
    got.push_back(token);
  }
  return nop(got, loc);
}

Tensor reduce_scatter(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
                      const Tensor &out, Reduction reduce_type, SrcLoc loc) {
  const char *op = "reduce_scatter";
  check_reduction(reduce_type, op, loc);
  if (reduce_type != Reduction::SUM)
    throw DistributedError(
        loc, op,
        fmt::format("PyPTO's ReduceScatter protocol adds with ADD puts: only SUM, got {}; "
                    "dist::reduce_scatter(x, Reduction::{}) reduces with any reduction",
                    name(reduce_type), name(reduce_type)));
  check_blocks(in, shmem, op, loc);
  Call c = start(op, pred, in, shmem, one_block, true, loc);
  const int64_t b = c.shape[0] / c.n;
  const size_t rank = c.shape.size();
  std::vector<Tensor> sent;
  for (int p = 0; p < c.n; ++p) {
    auto put = shmem_put(rows_of(in, c.shape, p * b, b, loc), zeros_at(rank), shmem, p,
                         {.put_op = AtomicType::ADD, .pred = c.pred}, loc);
    sent.push_back(shmem_signal(shmem, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {put}}, loc));
  }
  auto ready = shmem_wait_until(shmem, c.me, c.n, {.clear_signal = true, .pred = sent}, loc);
  // PE me keeps block me: its valid rows are the input's that fall in it.
  std::vector<SymbolicScalar> valid = in.valid_shape(loc);
  valid[0] = valid_rows_at(valid[0], c.me * b, b);
  auto window = shmem_view(shmem, StaticDims(with_rows(c.shape, b)), zeros_at(rank),
                           {.valid_shape = valid}, loc);
  auto [token, part] =
      shmem_get_with_token(window, c.me, {.pred = {ready}, .dtype = in.dtype()}, loc);
  assemble(part, zeros_at(rank), out, loc);
  return token;
}

} // namespace pto::distributed
