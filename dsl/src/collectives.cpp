// collectives.cpp - Collectives written with the shmem primitives (see collectives.h): the
// helpers every collective shares, allgather, reduce-scatter, broadcast, all-to-all, barrier and
// the reuse protocol. Each reads like its PyPTO original (reference §7): puts into symmetric
// tensors, signals, waits, gets. Loops over PEs are C++ loops, unrolled at trace time. The
// allreduce algorithms are in collectives_allreduce.cpp, fusion in collectives_fusion.cpp.
#include "pto/control.h"
#include "pto/ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"

#include "collectives_internal.h"
#include "distributed_detail.h"
#include "shape_rules.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pto::distributed {

namespace detail {

TileScope::TileScope(const std::vector<int64_t> &shape, const SrcLoc &loc)
    : r_(ir::Recorder::current("collective", loc)), saved_(r_.vec_tile) {
  r_.vec_tile.vec = shape;
}
TileScope::~TileScope() { r_.vec_tile = saved_; }

std::vector<int64_t> static_shape(const Tensor &x, const char *op, const SrcLoc &loc) {
  if (x.is_empty())
    throw ShapeError(loc, op, "input tensor is empty");
  auto &r = ir::Recorder::current(op, loc);
  const ir::Value &xv = r.program().value(r.use(x, op, loc));
  if (xv.kind == ir::ValueKind::Token)
    throw DTypeError(loc, op, "tensor '" + xv.name + "' is a dependency token; pass it as `pred`");
  if (xv.shmem >= 0)
    throw DTypeError(loc, op,
                     "tensor '" + xv.name +
                         "' is shmem data; read it with pto::distributed::shmem_get first");
  static const DataType kData[] = {DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                                   DT_FP16, DT_BF16,  DT_FP32,  DT_DOUBLE};
  if (std::find(std::begin(kData), std::end(kData), xv.dtype) == std::end(kData))
    throw DTypeError(
        loc, op,
        "dtype must be one of int8, int16, int32, int64, fp16, bf16, fp32, fp64, got " +
            short_name(xv.dtype));
  if (x.dim() < 2 || x.dim() > 4)
    throw ShapeError(loc, op, fmt::format("input rank must be 2 to 4, got {}", x.dim()));
  std::vector<int64_t> s;
  for (auto &d : x.shape()) {
    if (!d.is_concrete())
      throw ShapeError(loc, op,
                       "input dims must be static, got " + str(x.shape()) +
                           "; view a static block with a valid_shape first");
    s.push_back(d.concrete());
  }
  return s;
}

void check_reduction(Reduction r, const char *op, const SrcLoc &loc) {
  switch (r) {
  case Reduction::SUM:
  case Reduction::MAX:
  case Reduction::MIN:
  case Reduction::PROD:
    return;
  }
  throw DistributedError(
      loc, op,
      fmt::format("the reduction must be SUM, MAX, MIN or PROD, got the value {}",
                  static_cast<int>(r)));
}

std::vector<Tensor> agree_valid_shape(const Tensor &x, size_t first_dim, const char *op,
                                      const std::string &group, int n, std::vector<Tensor> pred,
                                      const SrcLoc &loc) {
  auto &r = ir::Recorder::current(op, loc);
  const std::vector<SymbolicScalar> valid = x.valid_shape(); // a copy: values may move
  const size_t rank = valid.size();
  std::vector<size_t> dyn; // the dims known only at run time
  for (size_t d = first_dim; d < rank; ++d)
    if (!valid[d].is_concrete())
      dyn.push_back(d);
  if (dyn.empty()) {
    if (first_dim < rank) {
      std::vector<std::string> shown;
      for (size_t d = 0; d < rank; ++d)
        shown.push_back(d < first_dim ? "*" : valid[d].str());
      const int g = r.group_index(group, n, op, loc);
      r.program()
          .groups.at(static_cast<size_t>(g))
          .agreements.push_back(fmt::format("valid shape [{}] to {}\t{}", fmt::join(shown, ", "),
                                            op, format_location(loc)));
    }
    return pred;
  }
  const auto k = static_cast<int64_t>(dyn.size());
  TileScope tile({n, k}, loc);
  auto hdr = staging_tensor(group, n, DT_INT64, {n, k}, loc);
  auto me = me_in(group, n, loc);
  pred.push_back(x);
  auto begin = nop(pred, loc);
  auto send = [&](const SymbolicScalar &p) {
    std::vector<Tensor> stored;
    for (int64_t j = 0; j < k; ++j)
      stored.push_back(shmem_atomic_swap(hdr, {me, j}, valid[dyn[static_cast<size_t>(j)]], p,
                                         {.pred = {begin}}, loc)
                           .token);
    signal_arrival(hdr, p, nop(stored, loc), loc);
  };
  constexpr int kUnrolled = 16; // as the allreduce's per-PE loops (collectives_allreduce.cpp)
  if (n <= kUnrolled)
    for (int p = 0; p < n; ++p)
      send(p);
  else
    for (auto p : loop(n, {.name = "valid_shape_exchange"}, loc))
      send(p);
  auto ready = wait_arrivals(hdr, me, n, begin, loc);
  auto rows = shmem_get(hdr, me, {.pred = {ready}}, loc);
  // PE q's valid shape: the concrete extents as traced, the others from row q.
  auto shape_of = [&](const SymbolicScalar &q, std::vector<SymbolicScalar> &args) {
    std::string text;
    for (size_t d = 0, j = 0; d < rank; ++d) {
      text += d ? ", " : "";
      if (d < first_dim) {
        text += "*";
      } else if (j < dyn.size() && dyn[j] == d) {
        text += "{}";
        args.push_back(rows.at({q, static_cast<int64_t>(j++)}, loc));
      } else {
        text += valid[d].str();
      }
    }
    return "[" + text + "]";
  };
  auto check = [&](const SymbolicScalar &q) {
    SymbolicScalar same(1);
    for (int64_t j = 0; j < k; ++j)
      same = same * (rows.at({q, j}, loc) == rows.at({0, j}, loc));
    std::vector<SymbolicScalar> args{q};
    std::string theirs = shape_of(q, args);
    std::string first = shape_of(0, args);
    trace::require_le(r, 1, same,
                      fmt::format("PE {{}} of group '{}' passes x with valid shape {} but PE 0 "
                                  "passes {}; every PE must pass the same valid shape{}",
                                  ir::escape_check(group), theirs, first,
                                  first_dim ? " (* = may differ)" : ""),
                      args, op, loc, ir::CheckError::Agreed);
  };
  if (n <= kUnrolled)
    for (int q = 1; q < n; ++q)
      check(q);
  else
    for (auto q : loop(1, n, {.name = "valid_shape_check"}, loc))
      check(q);
  return {nop({rows}, loc)};
}

namespace {
void check_algorithm(AllreduceAlgorithm a, const SrcLoc &loc) {
  switch (a) {
  case AllreduceAlgorithm::AUTO:
  case AllreduceAlgorithm::ONE_SHOT:
  case AllreduceAlgorithm::TWO_SHOT:
  case AllreduceAlgorithm::RS_AG:
    return;
  }
  throw DistributedError(
      loc, "allreduce",
      fmt::format("algorithm must be AUTO, ONE_SHOT, TWO_SHOT or RS_AG, got the value {}",
                  static_cast<int>(a)));
}
} // namespace

std::vector<SymbolicScalar> zeros_at(size_t rank) {
  return std::vector<SymbolicScalar>(rank, SymbolicScalar(0));
}
std::vector<SymbolicScalar> at_row(const SymbolicScalar &row, size_t rank) {
  auto o = zeros_at(rank);
  o[0] = row;
  return o;
}
std::vector<int64_t> with_rows(std::vector<int64_t> shape, int64_t rows) {
  shape[0] = rows;
  return shape;
}
std::vector<SymbolicScalar> sym(const std::vector<int64_t> &v) { return {v.begin(), v.end()}; }
std::vector<SymbolicScalar> with_valid_rows(std::vector<SymbolicScalar> valid,
                                            const SymbolicScalar &rows) {
  valid[0] = rows;
  return valid;
}
SymbolicScalar valid_rows_at(const SymbolicScalar &valid_rows, const SymbolicScalar &off,
                             int64_t rows) {
  return min(max(valid_rows - off, 0), rows);
}

ShmemTensor staging_tensor(const std::string &group, int n, DataType dt,
                           const std::vector<int64_t> &shape, const SrcLoc &loc) {
  ShmemTensor t = make_shmem_tensor(group, n, dt, shape, loc);
  ir::Recorder::current("collective", loc)
      .program()
      .shmems.at(static_cast<size_t>(t.index))
      .zero_data = false;
  return t;
}

Tensor borrowed_get(const ShmemTensor &src, const SymbolicScalar &pe, GetOptions opts,
                    const SrcLoc &loc) {
  Tensor out = shmem_get(src, pe, std::move(opts), loc);
  ir::Op *get = ir::Recorder::current("collective", loc).last_emitted();
  if (get && get->kind == ir::OpKind::ShmemGet && get->outputs.size() == 2 &&
      get->outputs[1] == out.id())
    get->borrow = true;
  return out;
}

SymbolicScalar me_in(const std::string &group, int n, const SrcLoc &loc) {
  ir::Recorder::current("collective", loc).group_index(group, n, "collective", loc);
  return my_symbolic_pe(group, loc);
}

SymbolicScalar pick(const std::vector<int64_t> &v, const SymbolicScalar &me) {
  SymbolicScalar out(v.back());
  for (size_t i = v.size() - 1; i-- > 0;)
    out = ternary(me == static_cast<int64_t>(i), v[i], out);
  return out;
}

int group_pes(const std::string &group, const char *op, const SrcLoc &loc) {
  auto &r = ir::Recorder::current(op, loc);
  if (int size = r.known_group_size(group))
    return size;
  throw DistributedError(loc, op,
                         "unknown group '" + group +
                             "'; use \"world\" for all PEs or create it "
                             "with World::create_group");
}

Tensor group_barrier(const std::string &group, int n, std::vector<Tensor> pred, const SrcLoc &loc) {
  auto sig = make_shmem_signal(group, n, loc);
  return shmem_barrier_all(sig, {.pred = std::move(pred)}, loc);
}

void fresh_each_iteration(const ShmemTensor &t, const SrcLoc &loc) {
  auto &r = ir::Recorder::current("create_shmem_tensor", loc);
  if (!r.body_may_repeat())
    return;
  // A copy: the barriers add shmem objects (the vector may move).
  const std::vector<int64_t> shape = r.program().shmems.at(static_cast<size_t>(t.index)).shape;
  auto done = group_barrier(t.group, t.n_pes, {}, loc);
  std::vector<Tensor> cleared;
  if (!shape.empty()) {
    TileScope tile(shape, loc); // one tile: the user's tile may not be set yet
    cleared.push_back(shmem_clear_data(t, {.pred = {done}}, loc));
  }
  cleared.push_back(shmem_clear_signal(t, {.pred = {done}}, loc));
  group_barrier(t.group, t.n_pes, cleared, loc);
}

Tensor reuse_barrier(const std::string &group, int n, std::vector<Tensor> pred, const SrcLoc &loc) {
  auto &r = ir::Recorder::current("collective", loc);
  if (r.current_scope() != &r.program().body)
    return group_barrier(group, n, std::move(pred), loc);
  return nop(pred, loc);
}

Tensor signal_arrival(const ShmemTensor &buf, const SymbolicScalar &p, const Tensor &put,
                      const SrcLoc &loc) {
  TileScope tile(buf.view_shape, loc);
  return shmem_signal(buf, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {put}}, loc);
}

Tensor wait_arrivals(const ShmemTensor &buf, const SymbolicScalar &me, int n, const Tensor &begin,
                     const SrcLoc &loc) {
  TileScope tile(buf.view_shape, loc);
  return shmem_wait_until(buf, me, n, {.clear_signal = true, .pred = {begin}}, loc);
}

Tensor combine(Reduction op, const Tensor &a, const Tensor &b, const SrcLoc &loc) {
  switch (op) {
  case Reduction::SUM:
    return add(a, b, loc);
  case Reduction::MAX:
    return maximum(a, b, loc);
  case Reduction::MIN:
    return minimum(a, b, loc);
  case Reduction::PROD:
    return mul(a, b, loc);
  }
  return a;
}

DataType sum_dtype(DataType dt) { return dt == DT_FP16 || dt == DT_BF16 ? DT_FP32 : dt; }
DataType reduce_dtype(Reduction op, DataType dt) {
  return op == Reduction::SUM ? sum_dtype(dt) : dt;
}

Tensor reduce_in_order(Reduction op, const std::vector<Tensor> &terms, DataType dt,
                       const SrcLoc &loc) {
  Tensor acc = terms[0];
  for (size_t p = 1; p < terms.size(); ++p)
    acc = combine(op, acc, terms[p], loc);
  return acc.dtype() == dt ? acc : cast(acc, dt, loc);
}

int64_t bytes_of_shape(const std::vector<int64_t> &shape, DataType dt) {
  int64_t b = bytes_of(dt);
  for (auto d : shape)
    b *= d;
  return b;
}

Tensor reduce_scatter_blocks(const Tensor &x, Reduction op, const std::vector<int64_t> &shape,
                             const std::string &group, int n, const Tensor &start,
                             const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0], B = (R + n - 1) / n;
  const auto block = with_rows(shape, B);
  TileScope tile(block, loc);
  const std::vector<SymbolicScalar> xv = x.valid_shape(); // a copy: values may move
  auto stage = staging_tensor(
      group, n, x.dtype(),
      with_rows(shape, checked_extent_mul(n, B, "n_pes x block rows", "reduce_scatter", loc)), loc);
  auto me = me_in(group, n, loc);
  auto begin = reuse_barrier(group, n, {start}, loc);
  // Block p (x's rows [p*B, (p+1)*B), fewer or none at the end) into slot `me` of PE p.
  for (int p = 0; p < n; ++p) {
    const int64_t off = p * B, rows = std::clamp<int64_t>(R - off, 0, B);
    auto slot = shmem_view(stage, block, at_row(me * B, rank), {}, loc);
    Tensor tok = begin;
    if (rows > 0) {
      auto part = view(x, with_rows(shape, rows), at_row(off, rank),
                       {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], off, rows))}, loc);
      tok = shmem_put(part, zeros_at(rank), slot, p, {.pred = {begin}}, loc);
    }
    signal_arrival(stage, p, tok, loc);
  }
  auto ready = wait_arrivals(stage, me, n, begin, loc);
  std::vector<Tensor> terms;
  for (int q = 0; q < n; ++q) {
    auto slot = shmem_view(stage, block, at_row(q * B, rank), {}, loc);
    terms.push_back(
        borrowed_get(slot, me, {.pred = {ready}, .dtype = reduce_dtype(op, x.dtype())}, loc));
  }
  auto red = reduce_in_order(op, terms, x.dtype(), loc);
  return view(red, block, zeros_at(rank),
              {.valid_shape = with_valid_rows(xv, valid_rows_at(xv[0], me * B, B))}, loc);
}

namespace {

/// Every PE's x into rows [me*R, (me+1)*R) of a [n*R, ...] buffer on every PE; returns the
/// buffer and the wait for all n blocks.
std::pair<ShmemTensor, Tensor> gather_into(const Tensor &x, const std::vector<int64_t> &shape,
                                           const std::string &group, int n, const Tensor &begin,
                                           const SrcLoc &loc) {
  const size_t rank = shape.size();
  const int64_t R = shape[0];
  auto buf = staging_tensor(
      group, n, x.dtype(),
      with_rows(shape, checked_extent_mul(n, R, "n_pes x rows", "allgather", loc)), loc);
  auto me = me_in(group, n, loc);
  for (int p = 0; p < n; ++p) {
    auto mine = shmem_view(buf, shape, at_row(me * R, rank), {}, loc);
    signal_arrival(buf, p, shmem_put(x, zeros_at(rank), mine, p, {.pred = {begin}}, loc), loc);
  }
  return {buf, wait_arrivals(buf, me, n, begin, loc)};
}

} // namespace

Tensor gather_whole(const Tensor &x, const std::vector<int64_t> &shape, const std::string &group,
                    int n, std::vector<Tensor> pred, const SrcLoc &loc) {
  TileScope tile(shape, loc);
  pred.push_back(x);
  auto begin = reuse_barrier(group, n, pred, loc);
  auto [buf, ready] = gather_into(x, shape, group, n, begin, loc);
  // One get of the whole buffer once every block is in (not one per block, then the whole).
  return borrowed_get(buf, me_in(group, n, loc), {.pred = {ready}}, loc);
}

} // namespace detail

using namespace detail;

Reduction parse_reduction(const std::string &s, std::source_location loc) {
  if (s == "sum")
    return Reduction::SUM;
  if (s == "max")
    return Reduction::MAX;
  if (s == "min")
    return Reduction::MIN;
  if (s == "prod")
    return Reduction::PROD;
  throw ArgumentError(loc, "parse_reduction", "expected sum, max, min or prod, got '" + s + "'");
}

const char *name(Reduction r) {
  switch (r) {
  case Reduction::SUM:
    return "sum";
  case Reduction::MAX:
    return "max";
  case Reduction::MIN:
    return "min";
  case Reduction::PROD:
    return "prod";
  }
  return "?";
}

int n_pes(const std::string &group, SrcLoc loc) { return group_pes(group, "n_pes", loc); }

Tensor allreduce(const Tensor &x, Reduction op, AllreduceOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "allreduce", loc);
  check_reduction(op, "allreduce", loc);
  check_algorithm(opts.algorithm, loc);
  if (opts.fusion < 0 || opts.fusion > 2)
    throw DistributedError(loc, "allreduce",
                           fmt::format("fusion must be 0, 1 or 2, got {}", opts.fusion));
  if (opts.chunk_bytes < 0)
    throw DistributedError(loc, "allreduce",
                           fmt::format("chunk_bytes must be >= 0, got {}", opts.chunk_bytes));
  int n = group_pes(opts.group, "allreduce", loc);
  opts.pred = agree_valid_shape(x, 0, "allreduce", opts.group, n, std::move(opts.pred), loc);
  if (opts.fusion != 0)
    return defer_allreduce(x, shape, op, opts, n, loc);
  return exchange(x, shape, op, opts.algorithm, opts.group, n, opts.pred, opts.chunk_bytes, loc);
}

Tensor allgather(const Tensor &x, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "allgather", loc);
  int n = group_pes(opts.group, "allgather", loc);
  opts.pred = agree_valid_shape(x, 0, "allgather", opts.group, n, std::move(opts.pred), loc);
  bool full = true;
  for (size_t d = 0; d < shape.size(); ++d)
    full = full && x.valid_shape()[d].same_as(SymbolicScalar(shape[d]));
  if (full)
    return gather_whole(x, shape, opts.group, n, opts.pred, loc);
  // With a valid shape [vr, vc, ...], PE p's valid block lands at rows [p*vr, (p+1)*vr) (as
  // PyPTO's AllGather: the valid parts concatenated), and the result's valid shape is
  // [n*vr, vc, ...]; everything past it is zero.
  TileScope tile(shape, loc);
  size_t rank = shape.size();
  std::vector<Tensor> pred = opts.pred;
  pred.push_back(x);
  auto begin = reuse_barrier(opts.group, n, pred, loc);
  auto [buf, ready] = gather_into(x, shape, opts.group, n, begin, loc);
  auto me = me_in(opts.group, n, loc);
  auto out_shape =
      with_rows(shape, checked_extent_mul(n, shape[0], "n_pes x rows", "allgather", loc));
  auto out = zeros(sym(out_shape), x.dtype(), loc);
  const SymbolicScalar &vr = x.valid_shape()[0];
  for (int q = 0; q < n; ++q) {
    auto theirs =
        shmem_view(buf, shape, at_row(q * shape[0], rank), {.valid_shape = x.valid_shape()}, loc);
    auto block = shmem_get(theirs, me, {.pred = {ready}}, loc);
    assemble(block, at_row(vr * q, rank), out, loc);
  }
  std::vector<SymbolicScalar> valid = x.valid_shape();
  valid[0] = vr * n;
  return view(out, out_shape, zeros_at(rank), {.valid_shape = valid}, loc);
}

Tensor reduce_scatter(const Tensor &x, Reduction op, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "reduce_scatter", loc);
  check_reduction(op, "reduce_scatter", loc);
  int n = group_pes(opts.group, "reduce_scatter", loc);
  opts.pred = agree_valid_shape(x, 0, "reduce_scatter", opts.group, n, std::move(opts.pred), loc);
  Tensor start = opts.pred.empty() ? x : nop(opts.pred, loc);
  return reduce_scatter_blocks(x, op, shape, opts.group, n, start, loc);
}

Tensor broadcast(const Tensor &x, int root, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "broadcast", loc);
  int n = group_pes(opts.group, "broadcast", loc);
  if (root < 0 || root >= n)
    throw DistributedError(
        loc, "broadcast",
        fmt::format("root {} is out of range [0, {}) for group '{}'", root, n, opts.group));
  opts.pred = agree_valid_shape(x, 0, "broadcast", opts.group, n, std::move(opts.pred), loc);
  TileScope tile(shape, loc);
  size_t rank = shape.size();
  // Pull-based: every PE publishes its x in its own window; after a barrier all read root's.
  auto buf = staging_tensor(opts.group, n, x.dtype(), shape, loc);
  auto me = me_in(opts.group, n, loc);
  std::vector<Tensor> pred = opts.pred;
  pred.push_back(x);
  auto start = reuse_barrier(opts.group, n, pred, loc);
  auto put = shmem_put(x, zeros_at(rank), buf, me, {.pred = {start}}, loc);
  auto ready = group_barrier(opts.group, n, {put}, loc);
  auto view = shmem_view(buf, shape, zeros_at(rank), {.valid_shape = x.valid_shape()}, loc);
  return shmem_get(view, root, {.pred = {ready}}, loc);
}

Tensor all_to_all(const Tensor &x, const std::vector<std::vector<int64_t>> &counts,
                  CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "all_to_all", loc);
  int n = group_pes(opts.group, "all_to_all", loc);
  size_t rank = shape.size();
  if (counts.size() != static_cast<size_t>(n))
    throw ShapeError(
        loc, "all_to_all",
        fmt::format("counts must be {} x {} (n_pes x n_pes), got {} rows", n, n, counts.size()));
  std::vector<int64_t> sent(static_cast<size_t>(n), 0), recv(static_cast<size_t>(n), 0);
  int64_t max_block = 1;
  for (int i = 0; i < n; ++i) {
    if (counts[static_cast<size_t>(i)].size() != static_cast<size_t>(n))
      throw ShapeError(loc, "all_to_all",
                       fmt::format("counts row {} has {} entries, expected {}", i,
                                   counts[static_cast<size_t>(i)].size(), n));
    for (int j = 0; j < n; ++j) {
      int64_t c = counts[static_cast<size_t>(i)][static_cast<size_t>(j)];
      if (c < 0)
        throw ShapeError(loc, "all_to_all",
                         fmt::format("counts[{}][{}] = {} is negative", i, j, c));
      auto &si = sent[static_cast<size_t>(i)], &rj = recv[static_cast<size_t>(j)];
      si = checked_extent_add(si, c, "rows sent", "all_to_all", loc);
      rj = checked_extent_add(rj, c, "rows received", "all_to_all", loc);
      max_block = std::max(max_block, c);
    }
  }
  for (int i = 0; i < n; ++i)
    if (sent[static_cast<size_t>(i)] > shape[0])
      throw ShapeError(loc, "all_to_all",
                       fmt::format("PE {} sends {} rows but x has {}", i,
                                   sent[static_cast<size_t>(i)], shape[0]));
  int64_t out_rows = std::max<int64_t>(1, *std::max_element(recv.begin(), recv.end()));
  // The buffer has a block of slack so a max-size window at any receive offset stays inside it
  // (only the valid rows are copied).
  auto out_shape = with_rows(shape, out_rows + max_block);
  TileScope tile(with_rows(shape, max_block), loc);
  auto buf = make_shmem_tensor(opts.group, n, x.dtype(), out_shape, loc);
  auto me = me_in(opts.group, n, loc);
  // Only x's valid region is sent: its valid rows must cover the rows this PE sends, and the
  // other dims' valid extents carry over (collectives.h): every PE must pass the same ones.
  opts.pred = agree_valid_shape(x, 1, "all_to_all", opts.group, n, std::move(opts.pred), loc);
  const std::vector<SymbolicScalar> x_valid = x.valid_shape();
  trace::require_le(ir::Recorder::current("all_to_all", loc), pick(sent, me), x_valid[0],
                    "PE {} sends {} rows but x has {} valid rows", {me, pick(sent, me), x_valid[0]},
                    "all_to_all", loc);
  std::vector<Tensor> pred = opts.pred;
  pred.push_back(x);
  auto start = reuse_barrier(opts.group, n, pred, loc);
  auto block = with_rows(shape, max_block);
  for (int p = 0; p < n; ++p) {
    // What I send to p: counts[me][p] rows at sum_{k<p} counts[me][k] of x; they land on p at
    // sum_{k<me} counts[k][p].
    std::vector<int64_t> cnt(static_cast<size_t>(n)), send_off(static_cast<size_t>(n)),
        recv_off(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      cnt[static_cast<size_t>(i)] = counts[static_cast<size_t>(i)][static_cast<size_t>(p)];
      int64_t so = 0, ro = 0;
      for (int k = 0; k < p; ++k)
        so += counts[static_cast<size_t>(i)][static_cast<size_t>(k)];
      for (int k = 0; k < i; ++k)
        ro += counts[static_cast<size_t>(k)][static_cast<size_t>(p)];
      send_off[static_cast<size_t>(i)] = so;
      recv_off[static_cast<size_t>(i)] = ro;
    }
    auto valid = x_valid;
    valid[0] = pick(cnt, me);
    auto exact = view(x, block, at_row(pick(send_off, me), rank), {.valid_shape = valid}, loc);
    auto put = shmem_put(exact, at_row(pick(recv_off, me), rank), buf, p, {.pred = {start}}, loc);
    shmem_signal(buf, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {put}}, loc);
  }
  auto ready = shmem_wait_until(buf, me, n, {.clear_signal = true, .pred = {start}}, loc);
  auto valid = x_valid;
  valid[0] = pick(recv, me);
  auto all =
      shmem_view(buf, with_rows(shape, out_rows), zeros_at(rank), {.valid_shape = valid}, loc);
  return shmem_get(all, me, {.pred = {ready}}, loc);
}

Tensor all_to_all(const Tensor &x, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "all_to_all", loc);
  int n = group_pes(opts.group, "all_to_all", loc);
  if (shape[0] % n != 0)
    throw ShapeError(loc, "all_to_all",
                     fmt::format("x has {} rows, not a multiple of n_pes {}; pass counts for "
                                 "unequal blocks",
                                 shape[0], n));
  int64_t B = shape[0] / n;
  std::vector<std::vector<int64_t>> counts(static_cast<size_t>(n),
                                           std::vector<int64_t>(static_cast<size_t>(n), B));
  return all_to_all(x, counts, std::move(opts), loc);
}

Tensor barrier(CollectiveOptions opts, SrcLoc loc) {
  int n = group_pes(opts.group, "barrier", loc);
  return group_barrier(opts.group, n, opts.pred, loc);
}

Tensor shmem_reset(const ShmemTensor &t, const ShmemTensor &signal, std::vector<Tensor> pred,
                   SrcLoc loc) {
  auto b1 = shmem_barrier_all(signal, {.pred = std::move(pred)}, loc);
  auto data = shmem_clear_data(t, {.pred = {b1}}, loc);
  auto sig = shmem_clear_signal(t, {.pred = {b1}}, loc);
  auto joined = nop({data, sig}, loc);
  return shmem_barrier_all(signal, {.pred = {joined}}, loc);
}

} // namespace pto::distributed
