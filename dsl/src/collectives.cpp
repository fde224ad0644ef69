// collectives.cpp - Collectives written with the shmem primitives (see collectives.h). Each one
// reads like its PyPTO original (reference §7): puts into symmetric tensors, signals, waits,
// gets. Loops over PEs are C++ loops, unrolled at trace time.
#include "pto/collectives.h"

#include "pto/ir/recorder.h"
#include "pto/ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"

#include "shape_rules.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <memory>

namespace pto::distributed {

namespace {

using SrcLoc = std::source_location;

/// Collectives move whole blocks: they trace with a vec tile covering the block (one runtime
/// call per put, one signal slot per block) and restore the caller's tile afterwards.
class WholeTile {
public:
  WholeTile(const std::vector<int64_t> &shape, const SrcLoc &loc)
      : r_(ir::Recorder::current("collective", loc)), saved_(r_.vec_tile) {
    r_.vec_tile.vec = shape;
  }
  ~WholeTile() { r_.vec_tile = saved_; }

private:
  ir::Recorder &r_;
  ir::TileShape saved_;
};

/// x's static shape; collectives need concrete dims (rank 2-4).
std::vector<int64_t> static_shape(const Tensor &x, const char *op, const SrcLoc &loc) {
  if (x.is_empty())
    throw ShapeError(loc, op, "input tensor is empty");
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

std::vector<SymbolicScalar> zeros_at(size_t rank) {
  return std::vector<SymbolicScalar>(rank, SymbolicScalar(0));
}
/// Offsets of row `row` (dim 0), zero elsewhere.
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

/// This PE's number in `group` (registering the group with its size first).
SymbolicScalar me_in(const std::string &group, int n, const SrcLoc &loc) {
  ir::Recorder::current("collective", loc).group_index(group, n, "collective", loc);
  return my_symbolic_pe(group, loc);
}

/// `v[me]` for a run-time `me`, as a chain of selects (v is known at trace time).
SymbolicScalar pick(const std::vector<int64_t> &v, const SymbolicScalar &me) {
  SymbolicScalar out(v.back());
  for (size_t i = v.size() - 1; i-- > 0;)
    out = ternary(me == static_cast<int64_t>(i), v[i], out);
  return out;
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

/// Start-of-collective barrier (see collectives.h): every PE has finished reading the previous
/// use of this call's buffers before anyone writes them again.
Tensor entry_barrier(const std::string &group, int n, std::vector<Tensor> pred, const SrcLoc &loc) {
  auto sig = create_shmem_signal(group, n, loc);
  return shmem_barrier_all(sig, {.pred = std::move(pred)}, loc);
}

/// Gathers every PE's `x` into a [n*R, ...] buffer on every PE and returns one local tensor per
/// source PE (the blocks, in PE order). `rows_of(p)`/`at_of(p)` pick which rows of x go to PE p
/// (all of x by default).
struct Gathered {
  ShmemTensor buf;
  std::vector<Tensor> blocks;
  Tensor done; ///< joins the waits
};
Gathered gather_blocks(const Tensor &x, const std::vector<int64_t> &shape, const std::string &group,
                       int n, const Tensor &start, const std::function<Tensor(int p)> &send_block,
                       const SrcLoc &loc) {
  size_t rank = shape.size();
  int64_t rows = shape[0];
  Gathered g;
  const int64_t all_rows = checked_extent_mul(n, rows, "n_pes x rows", "collective", loc);
  g.buf = create_shmem_tensor(group, n, x.dtype(), with_rows(shape, all_rows), loc);
  auto me = me_in(group, n, loc);
  for (int p = 0; p < n; ++p) {
    auto put = shmem_put(send_block(p), at_row(me * rows, rank), g.buf, p, {.pred = {start}}, loc);
    auto mine = shmem_view(g.buf, shape, at_row(me * rows, rank), {}, loc);
    shmem_signal(mine, p, 1, p, {.pred = {put}}, loc);
  }
  std::vector<Tensor> waits;
  for (int q = 0; q < n; ++q) {
    auto theirs = shmem_view(g.buf, shape, at_row(q * rows, rank), {}, loc);
    auto w = shmem_wait_until(theirs, me, 1, {.clear_signal = true, .pred = {start}}, loc);
    waits.push_back(w);
    g.blocks.push_back(shmem_get(theirs, me, {.pred = {w}}, loc));
  }
  g.done = nop(waits, loc);
  return g;
}

Tensor reduce_blocks(Reduction op, const std::vector<Tensor> &blocks, const SrcLoc &loc) {
  Tensor acc = blocks[0];
  for (size_t p = 1; p < blocks.size(); ++p) // PE order: the same result on every PE
    acc = combine(op, acc, blocks[p], loc);
  return acc;
}

/// Accumulation dtype of ADD-based sums: fp16/bf16 ADD into fp32 data (no double rounding).
DataType sum_dtype(DataType dt) { return dt == DT_FP16 || dt == DT_BF16 ? DT_FP32 : dt; }

/// One-shot sum: ADD-put x into every PE, count arrivals in one slot (reference §7.4).
Tensor one_shot_sum(const Tensor &x, const std::vector<int64_t> &shape, const std::string &group,
                    int n, const Tensor &start_pred, const SrcLoc &loc) {
  size_t rank = shape.size();
  auto acc = create_shmem_tensor(group, n, sum_dtype(x.dtype()), shape, loc);
  auto me = me_in(group, n, loc);
  auto cleared = shmem_clear_data(acc, {.pred = {start_pred}}, loc);
  auto start = entry_barrier(group, n, {cleared}, loc);
  for (int p = 0; p < n; ++p) {
    auto put =
        shmem_put(x, zeros_at(rank), acc, p, {.put_op = AtomicType::ADD, .pred = {start}}, loc);
    shmem_signal(acc, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {put}}, loc);
  }
  auto ready = shmem_wait_until(acc, me, n, {.clear_signal = true, .pred = {start}}, loc);
  auto view = shmem_view(acc, shape, zeros_at(rank), {.valid_shape = x.valid_shape()}, loc);
  return shmem_get(view, me, {.pred = {ready}, .dtype = x.dtype()}, loc);
}

/// Reduce-scatter by row blocks of B = ceil(R/n): PE p ends with the reduction of rows
/// [p*B, min((p+1)*B, R)) as a [B, ...] tensor with that many valid rows.
Tensor scatter_reduce(const Tensor &x, Reduction op, const std::vector<int64_t> &shape,
                      const std::string &group, int n, const Tensor &start_pred,
                      const SrcLoc &loc) {
  size_t rank = shape.size();
  int64_t R = shape[0], B = (R + n - 1) / n;
  auto block_shape = with_rows(shape, B);
  auto me = me_in(group, n, loc);
  // x's valid region: PE p's block holds its rows in [p*B, (p+1)*B), and x's valid extents in
  // the other dims (collectives.h).
  const std::vector<SymbolicScalar> x_valid = // NOLINT(performance-unnecessary-copy-initialization)
      x.valid_shape();                        // a copy: values may move
  auto valid_rows_at = [&](const SymbolicScalar &off, int64_t rows) {
    return min(max(x_valid[0] - off, 0), rows);
  };
  std::vector<SymbolicScalar> my_valid = x_valid;
  my_valid[0] = valid_rows_at(me * B, B);
  // The rows of x that go to PE p (a view with a static shape; an empty block sends nothing).
  auto rows_for = [&](int p) { return std::max<int64_t>(0, std::min(B, R - p * B)); };
  if (op == Reduction::SUM) {
    auto acc = create_shmem_tensor(group, n, sum_dtype(x.dtype()), block_shape, loc);
    auto cleared = shmem_clear_data(acc, {.pred = {start_pred}}, loc);
    auto start = entry_barrier(group, n, {cleared}, loc);
    for (int p = 0; p < n; ++p) {
      Tensor tok = start;
      if (int64_t rows = rows_for(p); rows > 0) {
        auto part = view(x, with_rows(shape, rows), at_row(p * B, rank), {}, loc);
        tok = shmem_put(part, zeros_at(rank), acc, p, {.put_op = AtomicType::ADD, .pred = {start}},
                        loc);
      }
      shmem_signal(acc, p, 1, p, {.sig_op = AtomicType::ADD, .pred = {tok}}, loc);
    }
    auto ready = shmem_wait_until(acc, me, n, {.clear_signal = true, .pred = {start}}, loc);
    auto mine = shmem_view(acc, block_shape, zeros_at(rank), {.valid_shape = my_valid}, loc);
    return shmem_get(mine, me, {.pred = {ready}, .dtype = x.dtype()}, loc);
  }
  // max / min / prod: gather block p of every PE on PE p, then reduce locally.
  auto start = entry_barrier(group, n, {start_pred}, loc);
  auto g = gather_blocks(
      x, block_shape, group, n, start,
      [&](int p) {
        int64_t rows = std::max<int64_t>(1, rows_for(p));
        // A PE past the end sends a 1-row block whose valid rows are 0 (nothing is copied).
        int64_t off = std::min(p * B, R - rows);
        std::vector<SymbolicScalar> valid = x_valid;
        valid[0] = rows_for(p) == 0 ? SymbolicScalar(0) : valid_rows_at(off, rows);
        return view(x, with_rows(shape, rows), at_row(off, rank), {.valid_shape = valid}, loc);
      },
      loc);
  Tensor r = reduce_blocks(op, g.blocks, loc);
  return view(r, block_shape, zeros_at(rank), {.valid_shape = my_valid}, loc);
}

/// Allgather of [B, ...] blocks (one per PE, `valid` rows each) into [n*B, ...], then the first
/// `rows` rows of it.
Tensor gather_rows(const Tensor &block, const std::vector<int64_t> &block_shape, int64_t rows,
                   const std::string &group, int n, std::vector<Tensor> pred, const SrcLoc &loc) {
  size_t rank = block_shape.size();
  pred.push_back(block);
  auto start = entry_barrier(group, n, pred, loc);
  auto g = gather_blocks(block, block_shape, group, n, start, [&](int) { return block; }, loc);
  auto me = me_in(group, n, loc);
  auto all = shmem_view(g.buf, with_rows(block_shape, rows), zeros_at(rank), {}, loc);
  return shmem_get(all, me, {.pred = {g.done}}, loc);
}

/// One allreduce exchange of x (reference §7.4): the algorithm AUTO resolves to, then one-shot
/// or two-shot.
Tensor exchange(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                AllreduceAlgorithm algo, const std::string &group, int n,
                const std::vector<Tensor> &pred, const SrcLoc &loc) {
  WholeTile tile(shape, loc);
  Tensor start = pred.empty() ? x : nop(pred, loc);
  int64_t bytes = bytes_of(x.dtype());
  for (auto d : shape)
    bytes *= d;
  if (algo == AllreduceAlgorithm::AUTO)
    algo = bytes <= 64 * 1024 || shape[0] < n ? AllreduceAlgorithm::ONE_SHOT
                                              : AllreduceAlgorithm::TWO_SHOT;
  if (algo == AllreduceAlgorithm::ONE_SHOT) {
    if (op == Reduction::SUM)
      return one_shot_sum(x, shape, group, n, start, loc);
    auto begin = entry_barrier(group, n, {start}, loc);
    auto g = gather_blocks(x, shape, group, n, begin, [&](int) { return x; }, loc);
    return view(reduce_blocks(op, g.blocks, loc), shape, zeros_at(shape.size()),
                {.valid_shape = x.valid_shape()}, loc);
  }
  // Two-shot: reduce-scatter, then allgather of the reduced blocks (reference §7.4). The
  // gathered tensor holds whole blocks; only x's valid region of it is the result, as one-shot's.
  int64_t B = (shape[0] + n - 1) / n;
  Tensor mine = scatter_reduce(x, op, shape, group, n, start, loc);
  Tensor all = gather_rows(mine, with_rows(shape, B), shape[0], group, n, {}, loc);
  return view(all, shape, zeros_at(shape.size()), {.valid_shape = x.valid_shape()}, loc);
}

// ---- Allreduce fusion (collectives.h, "Fusion") ----------------------------------------------
//
// A fused call records its input and returns a fresh Local value (its deferred result) that no
// op defines yet. The recorder (DeferredWork) tells us when the group must be traced: then its
// inputs are packed into one buffer, the buffer is exchanged once, and a Clone (or a Reshape
// back to rank 3-4) of each call's rows defines its deferred result. Packing at trace time
// rather than at the call is safe because any op touching an input's storage flushes first.

/// What calls must share to be one exchange.
struct FusionKey {
  std::string group;
  Reduction op = Reduction::SUM;
  DataType dtype = DT_FP32;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::AUTO;
  int fusion = 1;
  int64_t id = 0; ///< fusion 2: fusion_id; fusion 1: the bucket capacity
  bool operator==(const FusionKey &) const = default;
};

struct FusedCall {
  Tensor x;
  ir::ValueId x_root = ir::kNoValue; ///< the storage x lives in
  ir::ValueId result = ir::kNoValue; ///< the deferred result
  std::vector<int64_t> shape;
  std::vector<SymbolicScalar> valid;
  int64_t rows = 0, cols = 0; ///< x as a matrix: all dims but the last, the last
  std::vector<Tensor> pred;
  SrcLoc loc;
};

/// Calls traced as one exchange, packed into a [rows, width] buffer in call order.
struct FusionGroup {
  FusionKey key;
  int n = 0;
  std::vector<FusedCall> calls;
  int64_t rows = 0, width = 0;
  const std::vector<ir::Op> *scope = nullptr; ///< where the calls were made
  size_t scope_ops = 0;                       ///< ops in it then (the scope only grows)

  bool watches(ir::ValueId root) const {
    return std::any_of(calls.begin(), calls.end(),
                       [&](const FusedCall &c) { return c.result == root || c.x_root == root; });
  }
  int64_t bytes_with(int64_t rows_more, int64_t cols) const {
    // Saturates: a sum past int64 fills any bucket.
    auto r = add_checked(rows, rows_more);
    auto b = r ? mul_checked(*r, std::max(width, cols)) : std::nullopt;
    b = b ? mul_checked(*b, bytes_of(key.dtype)) : std::nullopt;
    return b.value_or(INT64_MAX);
  }
};

std::string show(const FusionKey &k) {
  const char *algo = k.algorithm == AllreduceAlgorithm::AUTO       ? "auto"
                     : k.algorithm == AllreduceAlgorithm::ONE_SHOT ? "one_shot"
                                                                   : "two_shot";
  return fmt::format("group '{}', reduction {}, dtype {}, algorithm {}", k.group, name(k.op),
                     short_name(k.dtype), algo);
}

/// Traces `kind` (Clone or Reshape) from `src` into the existing value `out`.
void define(ir::Recorder &r, ir::OpKind kind, const Tensor &src, ir::ValueId out,
            const SrcLoc &loc) {
  ir::ValueId in = r.use(src, "allreduce", loc);
  // A whole-tensor view (exchange() sets the valid shape that way) is read as its base: codegen
  // would fuse the copy with the elementwise ops computing the base and then find no storage
  // for the view to read.
  const ir::Value &v = r.program().value(in);
  if (v.kind == ir::ValueKind::View) {
    const ir::Value &base = r.program().value(v.base);
    bool whole = base.shape.size() == v.shape.size();
    for (size_t d = 0; whole && d < v.shape.size(); ++d)
      whole = v.offsets[d].same_as(SymbolicScalar(0)) && v.shape[d].same_as(base.shape[d]);
    if (whole && base.kind == ir::ValueKind::Local)
      in = base.id;
  }
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {in};
  o.outputs = {out};
  o.tile = ir::capture_tile(r, r.program().value(out).shape.size(), "allreduce", loc);
  r.emit(std::move(o));
}

/// Pack, exchange once, unpack (see above).
void trace_group(ir::Recorder &r, const FusionGroup &g) {
  const FusedCall &first = g.calls.front();
  if (r.current_scope() != g.scope || r.current_scope()->size() < g.scope_ops)
    throw InternalError(first.loc, "allreduce",
                        "a fused allreduce is traced outside the scope it was called in (a "
                        "recorder scope change did not call flush_deferred; a ptojit bug, rerun "
                        "with PTO_DUMP=ir)");
  const FusionKey &k = g.key;
  if (g.calls.size() == 1) { // nothing to pack
    Tensor res =
        exchange(first.x, first.shape, k.op, k.algorithm, k.group, g.n, first.pred, first.loc);
    WholeTile tile(first.shape, first.loc);
    define(r, ir::OpKind::Clone, res, first.result, first.loc);
    return;
  }
  const std::vector<int64_t> packed{g.rows, g.width};
  Tensor buf;
  {
    // Zeros, so that padding and the parts outside partly valid inputs are defined.
    WholeTile tile(packed, first.loc);
    buf = zeros(sym(packed), k.dtype, first.loc);
  }
  std::vector<Tensor> pred;
  int64_t row = 0;
  for (const FusedCall &c : g.calls) {
    WholeTile tile({c.rows, c.cols}, c.loc);
    // Rank 3-4: a reshape reads x's valid region and gives 0 elsewhere, so it is fully valid.
    Tensor src = c.shape.size() == 2 ? c.x : reshape(c.x, {c.rows, c.cols}, {}, c.loc);
    assemble(src, {row, 0}, buf, c.loc);
    pred.insert(pred.end(), c.pred.begin(), c.pred.end());
    row += c.rows;
  }
  Tensor res = exchange(buf, packed, k.op, k.algorithm, k.group, g.n, pred, first.loc);
  row = 0;
  for (const FusedCall &c : g.calls) {
    WholeTile tile(c.shape, c.loc);
    bool matrix = c.shape.size() == 2;
    auto part = view(res, {c.rows, c.cols}, {row, 0},
                     matrix ? ViewOptions{.valid_shape = c.valid} : ViewOptions{}, c.loc);
    define(r, matrix ? ir::OpKind::Clone : ir::OpKind::Reshape, part, c.result, c.loc);
    row += c.rows;
  }
}

class AllreduceFusion final : public ir::DeferredWork {
public:
  bool watches(ir::ValueId root) const override {
    return std::any_of(pending.begin(), pending.end(),
                       [&](const FusionGroup &g) { return g.watches(root); });
  }
  void flush(ir::Recorder &r, ir::ValueId root) override {
    std::vector<FusionGroup> todo;
    for (auto it = pending.begin(); it != pending.end();) {
      if (root == ir::kNoValue || it->watches(root)) {
        todo.push_back(std::move(*it));
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    for (const FusionGroup &g : todo)
      trace_group(r, g);
  }
  /// The pending group of `key`, or nullptr.
  FusionGroup *open(const FusionKey &key) {
    for (auto &g : pending)
      if (g.key == key)
        return &g;
    return nullptr;
  }

  std::vector<FusionGroup> pending; ///< in the order they were opened
  /// fusion 2: the options of each fusion_id's first call, and where it was.
  std::map<int64_t, std::pair<FusionKey, std::string>> ids;
};

AllreduceFusion &fusion_of(ir::Recorder &r, const SrcLoc &loc) {
  if (!r.deferred)
    r.deferred = std::make_unique<AllreduceFusion>();
  auto *f = dynamic_cast<AllreduceFusion *>(r.deferred.get());
  if (!f)
    throw InternalError(loc, "allreduce", "the recorder's deferred work is not allreduce fusion");
  return *f;
}

/// allreduce with fusion 1 or 2: checks, then joins (or opens) a pending group.
Tensor defer_allreduce(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                       const AllreduceOptions &opts, int n, const SrcLoc &loc) {
  if (opts.fusion == 2 && opts.fusion_id < 0)
    throw DistributedError(loc, "allreduce",
                           fmt::format("fusion 2 needs a fusion_id >= 0, got {}", opts.fusion_id));
  if (opts.fusion == 1 && opts.fusion_bucket_bytes <= 0)
    throw DistributedError(
        loc, "allreduce",
        fmt::format("fusion_bucket_bytes must be > 0, got {}", opts.fusion_bucket_bytes));
  auto &r = ir::Recorder::current("allreduce", loc);
  ir::ValueId xid = r.use(x, "allreduce", loc);
  const ir::Value &xv = r.program().value(xid);
  if (xv.kind == ir::ValueKind::Token)
    throw DTypeError(loc, "allreduce",
                     "tensor '" + xv.name + "' is a dependency token; pass it as `pred`");
  if (xv.shmem >= 0)
    throw DTypeError(loc, "allreduce",
                     "tensor '" + xv.name +
                         "' is shmem data; read it with pto::distributed::shmem_get first");
  static const DataType kData[] = {DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                                   DT_FP16, DT_BF16,  DT_FP32,  DT_DOUBLE};
  if (std::find(std::begin(kData), std::end(kData), xv.dtype) == std::end(kData))
    throw DTypeError(
        loc, "allreduce",
        "dtype must be one of int8, int16, int32, int64, fp16, bf16, fp32, fp64, got " +
            short_name(xv.dtype));
  FusedCall c;
  c.x = x;
  c.x_root = xv.kind == ir::ValueKind::View ? xv.base : xv.id;
  c.shape = shape;
  c.valid = xv.valid;
  c.cols = shape.back();
  c.rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    c.rows *= shape[d];
  c.pred = opts.pred;
  c.loc = loc;
  FusionKey key;
  key.group = opts.group;
  key.op = op;
  key.dtype = xv.dtype;
  key.algorithm = opts.algorithm;
  key.fusion = opts.fusion;
  key.id = opts.fusion == 2 ? opts.fusion_id : opts.fusion_bucket_bytes;
  ir::Value res;
  res.kind = ir::ValueKind::Local;
  res.dtype = xv.dtype;
  res.shape = xv.shape;
  res.valid = xv.valid; // xv is invalid from here (add_value)

  auto &f = fusion_of(r, loc);
  if (opts.fusion == 2) {
    auto [it, fresh] = f.ids.try_emplace(opts.fusion_id, key, format_location(loc));
    if (!fresh && !(it->second.first == key))
      throw DistributedError(loc, "allreduce",
                             fmt::format("fusion_id {} was first used at {} with {}; this call "
                                         "has {}; give it another fusion_id",
                                         opts.fusion_id, it->second.second, show(it->second.first),
                                         show(key)));
  }
  int64_t cap = opts.fusion_bucket_bytes;
  if (opts.fusion == 1 && c.rows * c.cols * bytes_of(key.dtype) >= cap) // fills a bucket alone
    return exchange(x, shape, op, opts.algorithm, opts.group, n, opts.pred, loc);
  // An input that is another pending call's result or input: trace that call first (a group
  // must not read its own results, and one storage is packed by one group at a time).
  if (f.watches(c.x_root))
    r.flush_deferred(c.x_root);

  c.result = r.add_value(std::move(res));
  FusionGroup *g = f.open(key);
  if (g && opts.fusion == 1 && g->bytes_with(c.rows, c.cols) > cap) {
    r.flush_deferred(g->calls.front().result); // the bucket is full
    g = nullptr;
  }
  if (!g) {
    FusionGroup fresh;
    fresh.key = key;
    fresh.n = n;
    fresh.scope = r.current_scope();
    fresh.scope_ops = r.current_scope()->size();
    f.pending.push_back(std::move(fresh));
    g = &f.pending.back();
  }
  g->calls.push_back(c);
  g->rows += c.rows;
  g->width = std::max(g->width, c.cols);
  if (opts.fusion == 1 && g->bytes_with(0, 0) >= cap)
    r.flush_deferred(c.result);
  return r.tensor(c.result);
}

} // namespace

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

namespace {
/// The PEs of `group` while tracing, for `op` (the API the user called: n_pes or a
/// collective, which the error names). DistributedError for an unknown group.
int group_pes(const std::string &group, const char *op, SrcLoc loc) {
  auto &r = ir::Recorder::current(op, loc);
  if (int size = r.known_group_size(group))
    return size;
  throw DistributedError(loc, op,
                         "unknown group '" + group +
                             "'; use \"world\" for all PEs or create it "
                             "with World::create_group");
}
} // namespace

int n_pes(const std::string &group, SrcLoc loc) { return group_pes(group, "n_pes", loc); }

Tensor allreduce(const Tensor &x, Reduction op, AllreduceOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "allreduce", loc);
  if (opts.fusion < 0 || opts.fusion > 2)
    throw DistributedError(loc, "allreduce",
                           fmt::format("fusion must be 0, 1 or 2, got {}", opts.fusion));
  int n = group_pes(opts.group, "allreduce", loc);
  if (opts.fusion != 0)
    return defer_allreduce(x, shape, op, opts, n, loc);
  return exchange(x, shape, op, opts.algorithm, opts.group, n, opts.pred, loc);
}

Tensor allgather(const Tensor &x, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "allgather", loc);
  int n = group_pes(opts.group, "allgather", loc);
  WholeTile tile(shape, loc);
  bool full = true;
  for (size_t d = 0; d < shape.size(); ++d)
    full = full && x.valid_shape()[d].same_as(SymbolicScalar(shape[d]));
  if (full)
    return gather_rows(x, shape, checked_extent_mul(n, shape[0], "n_pes x rows", "allgather", loc),
                       opts.group, n, opts.pred, loc);
  // With a valid shape [vr, vc, ...], PE p's valid block lands at rows [p*vr, (p+1)*vr) (as
  // PyPTO's AllGather: the valid parts concatenated), and the result's valid shape is
  // [n*vr, vc, ...]; everything past it is zero.
  size_t rank = shape.size();
  std::vector<Tensor> pred = opts.pred;
  pred.push_back(x);
  auto start = entry_barrier(opts.group, n, pred, loc);
  auto me = me_in(opts.group, n, loc);
  auto g = gather_blocks(x, shape, opts.group, n, start, [&](int) { return x; }, loc);
  (void)me;
  auto out_shape =
      with_rows(shape, checked_extent_mul(n, shape[0], "n_pes x rows", "allgather", loc));
  auto out = zeros(sym(out_shape), x.dtype(), loc);
  const SymbolicScalar &vr = x.valid_shape()[0];
  for (int q = 0; q < n; ++q) {
    auto block = view(g.blocks[static_cast<size_t>(q)], shape, zeros_at(rank),
                      {.valid_shape = x.valid_shape()}, loc);
    assemble(block, at_row(vr * q, rank), out, loc);
  }
  std::vector<SymbolicScalar> valid = x.valid_shape();
  valid[0] = vr * n;
  return view(out, out_shape, zeros_at(rank), {.valid_shape = valid}, loc);
}

Tensor reduce_scatter(const Tensor &x, Reduction op, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "reduce_scatter", loc);
  int n = group_pes(opts.group, "reduce_scatter", loc);
  WholeTile tile(shape, loc);
  Tensor start = opts.pred.empty() ? x : nop(opts.pred, loc);
  return scatter_reduce(x, op, shape, opts.group, n, start, loc);
}

Tensor broadcast(const Tensor &x, int root, CollectiveOptions opts, SrcLoc loc) {
  auto shape = static_shape(x, "broadcast", loc);
  int n = group_pes(opts.group, "broadcast", loc);
  if (root < 0 || root >= n)
    throw DistributedError(
        loc, "broadcast",
        fmt::format("root {} is out of range [0, {}) for group '{}'", root, n, opts.group));
  WholeTile tile(shape, loc);
  size_t rank = shape.size();
  // Pull-based: every PE publishes its x in its own window; after a barrier all read root's.
  auto buf = create_shmem_tensor(opts.group, n, x.dtype(), shape, loc);
  auto me = me_in(opts.group, n, loc);
  std::vector<Tensor> pred = opts.pred;
  pred.push_back(x);
  auto start = entry_barrier(opts.group, n, pred, loc);
  auto put = shmem_put(x, zeros_at(rank), buf, me, {.pred = {start}}, loc);
  auto ready = entry_barrier(opts.group, n, {put}, loc);
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
  WholeTile tile(with_rows(shape, max_block), loc);
  auto buf = create_shmem_tensor(opts.group, n, x.dtype(), out_shape, loc);
  auto me = me_in(opts.group, n, loc);
  // Only x's valid region is sent: its valid rows must cover the rows this PE sends, and the
  // other dims' valid extents carry over (collectives.h).
  const std::vector<SymbolicScalar> x_valid = // NOLINT(performance-unnecessary-copy-initialization)
      x.valid_shape();                        // a copy: values may move
  trace::require_le(ir::Recorder::current("all_to_all", loc), pick(sent, me), x_valid[0],
                    "PE {} sends {} rows but x has {} valid rows", {me, pick(sent, me), x_valid[0]},
                    "all_to_all", loc);
  std::vector<Tensor> pred = opts.pred;
  pred.push_back(x);
  auto start = entry_barrier(opts.group, n, pred, loc);
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
  return entry_barrier(opts.group, n, opts.pred, loc);
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
