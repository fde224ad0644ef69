// collectives_fusion.cpp - Allreduce fusion (collectives.h, "Fusion"; docs/distributed.md): fused
// calls are recorded and traced later as one packed exchange.
#include "pto/ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"

#include "collectives_internal.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <memory>

namespace pto::distributed::detail {

namespace {

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
  int64_t chunk_bytes = 0;
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
  return fmt::format("group '{}', reduction {}, dtype {}, algorithm {}, chunk_bytes {}", k.group,
                     name(k.op), short_name(k.dtype), algorithm_name(k.algorithm), k.chunk_bytes);
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
    Tensor res = exchange(first.x, first.shape, k.op, k.algorithm, k.group, g.n, first.pred,
                          k.chunk_bytes, first.loc);
    TileScope tile(first.shape, first.loc);
    define(r, ir::OpKind::Clone, res, first.result, first.loc);
    return;
  }
  const std::vector<int64_t> packed{g.rows, g.width};
  Tensor buf;
  {
    // Zeros, so that padding and the parts outside partly valid inputs are defined.
    TileScope tile(packed, first.loc);
    buf = zeros(sym(packed), k.dtype, first.loc);
  }
  std::vector<Tensor> pred;
  int64_t row = 0;
  for (const FusedCall &c : g.calls) {
    TileScope tile({c.rows, c.cols}, c.loc);
    // Rank 3-4: a reshape reads x's valid region and gives 0 elsewhere, so it is fully valid.
    Tensor src = c.shape.size() == 2 ? c.x : reshape(c.x, {c.rows, c.cols}, {}, c.loc);
    assemble(src, {row, 0}, buf, c.loc);
    pred.insert(pred.end(), c.pred.begin(), c.pred.end());
    row += c.rows;
  }
  Tensor res =
      exchange(buf, packed, k.op, k.algorithm, k.group, g.n, pred, k.chunk_bytes, first.loc);
  row = 0;
  for (const FusedCall &c : g.calls) {
    TileScope tile(c.shape, c.loc);
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
} // namespace

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
  key.chunk_bytes = opts.chunk_bytes;
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
    return exchange(x, shape, op, opts.algorithm, opts.group, n, opts.pred, opts.chunk_bytes, loc);
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

} // namespace pto::distributed::detail
