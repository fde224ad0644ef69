// distributed.cpp - Tracing of the shmem ops (reference §6): argument checks, signal-slot
// geometry (§6.3), dependency tokens (§6.4).
#include "pto/distributed.h"

#include "pto/ir/recorder.h"
#include "pto/size_math.h"

#include "collectives_internal.h"
#include "distributed_detail.h"
#include "shape_rules.h"

#include <fmt/format.h>

namespace pto::distributed {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;

namespace detail {

/// Signal-only objects behave as a [1, 8] window with one tile (one slot per PE row).
const std::vector<int64_t> kSignalOnlyShape{1, 8};
ir::TileShape signal_only_tile() {
  ir::TileShape t;
  t.vec = kSignalOnlyShape;
  return t;
}

std::string dims_str(const std::vector<int64_t> &d) {
  return fmt::format("[{}]", fmt::join(d, ", "));
}

const ir::ShmemInfo &shmem_of(Recorder &r, const ShmemTensor &t, const char *op,
                              const SrcLoc &loc) {
  auto &p = r.program();
  if (t.index < 0 || t.index >= static_cast<int>(p.shmems.size()) || t.n_pes <= 0)
    throw DistributedError(loc, op,
                           "not a shmem tensor of this kernel; create it with "
                           "create_shmem_tensor inside the kernel");
  const auto &s = p.shmems[static_cast<size_t>(t.index)];
  // The view fields are public: one edited by hand must still describe a window of the data.
  const size_t rank = s.shape.size();
  if (rank > 0 &&
      (t.view_shape.size() != rank || t.view_offsets.size() != rank || t.view_valid.size() != rank))
    throw ShapeError(loc, op,
                     fmt::format("the view has {} shape, {} offset and {} valid_shape entries for "
                                 "shmem data of rank {}; make views with shmem_view",
                                 t.view_shape.size(), t.view_offsets.size(), t.view_valid.size(),
                                 rank));
  for (size_t d = 0; d < t.view_shape.size(); ++d)
    if (t.view_shape[d] <= 0)
      throw ShapeError(loc, op,
                       fmt::format("view dim {} must be > 0, got {}; make views with "
                                   "shmem_view",
                                   d, t.view_shape[d]));
  return s;
}

ir::Atomic to_atomic(AtomicType a, const char *field, const char *op, const SrcLoc &loc) {
  switch (a) {
  case AtomicType::SET:
    return ir::Atomic::Set;
  case AtomicType::ADD:
    return ir::Atomic::Add;
  }
  throw DistributedError(
      loc, op, fmt::format("{} must be SET or ADD, got the value {}", field, static_cast<int>(a)));
}

ir::Cmp to_cmp(OpType c, const char *op, const SrcLoc &loc) {
  switch (c) {
  case OpType::EQ:
  case OpType::NE:
  case OpType::LT:
  case OpType::LE:
  case OpType::GT:
  case OpType::GE:
    return static_cast<ir::Cmp>(static_cast<int>(c)); // same order
  }
  throw DistributedError(
      loc, op,
      fmt::format("cmp must be EQ, NE, LT, LE, GT or GE, got the value {}", static_cast<int>(c)));
}

std::vector<ValueId> use_preds(Recorder &r, const std::vector<Tensor> &pred, const char *op,
                               const SrcLoc &loc) {
  std::vector<ValueId> ids;
  for (auto &t : pred)
    ids.push_back(r.use(t, op, loc));
  return ids;
}

Tensor make_token(Recorder &r, std::vector<SymbolicScalar> shape) {
  Value v;
  v.kind = ValueKind::Token;
  v.dtype = DT_INT32;
  v.valid = shape;
  v.shape = std::move(shape);
  return r.tensor(r.add_value(std::move(v)));
}

/// The token shape of signal/wait ops: pred's shape (one pred), else [1, 1].
std::vector<SymbolicScalar> pred_token_shape(Recorder &r, const std::vector<ValueId> &preds) {
  if (preds.size() == 1)
    return r.program().value(preds[0]).shape;
  return {SymbolicScalar(1), SymbolicScalar(1)};
}

/// PE number `pe` (`what`: dst_pe, src_pe, target_pe) must lie in [0, n_pes): DistributedError
/// now when known, else by the call (a Check op, the same text in both executors).
void check_pe(Recorder &r, const SymbolicScalar &pe, int n_pes, const char *what,
              const ir::ShmemInfo &s, const char *op, const SrcLoc &loc) {
  trace::require_index(r, pe, n_pes,
                       fmt::format("{} {{}} is out of range [0, {}) for group '{}'", what, n_pes,
                                   ir::escape_check(s.group)),
                       {pe}, op, loc, ir::CheckError::Distributed);
}

std::vector<SymbolicScalar> sym_dims(const std::vector<int64_t> &d) { return {d.begin(), d.end()}; }

/// How messages name the window `t` of shmem tensor `s`: its whole data or a view of it.
std::string window_phrase(const ir::ShmemInfo &s, const ShmemTensor &t) {
  bool whole = t.view_shape == s.shape;
  for (const auto &o : t.view_offsets)
    whole = whole && o.is_concrete() && o.concrete() == 0;
  return (whole ? "the shmem data " : "the shmem view ") + dims_str(t.view_shape);
}

/// The window rule (shape_rules.h) with DistributedError: the whole `shape` at `offsets` must
/// lie in a shmem window of `parent_shape`, named `parent`.
void check_shmem_window(Recorder &r, const std::vector<int64_t> &shape,
                        const std::vector<SymbolicScalar> &offsets,
                        const std::vector<int64_t> &parent_shape, std::string parent,
                        const char *op, const SrcLoc &loc) {
  const auto ext = sym_dims(shape), size = sym_dims(parent_shape);
  trace::check_window(r,
                      {.offsets = offsets,
                       .extent = ext,
                       .bound = ext,
                       .parent_extent = size,
                       .parent_shape = size,
                       .parent = std::move(parent),
                       .error = ir::CheckError::Distributed},
                      op, loc);
}

/// Every op that takes a view requires it to lie in the data: shmem_view checked it already
/// (the same check is then proven or merged), unless the view's fields were edited by hand.
void check_view(Recorder &r, const ir::ShmemInfo &s, const ShmemTensor &t, const char *op,
                const SrcLoc &loc) {
  if (!s.shape.empty())
    check_shmem_window(r, t.view_shape, t.view_offsets, s.shape,
                       "the shmem data " + dims_str(s.shape), op, loc);
}

/// Checks that the shmem tensors of group `g` traced so far fit its symmetric heap
/// (kMaxSymmetricHeapBytes per PE); `what` says what was just asked for.
void check_heap(Recorder &r, int g, const std::string &what, const char *op, const SrcLoc &loc) {
  if (ir::group_heap_bytes(r.program(), g))
    return;
  const auto &group = r.program().groups[static_cast<size_t>(g)];
  throw ShapeError(loc, op,
                   fmt::format("{} does not fit the symmetric heap of group '{}': its shmem "
                               "tensors and signals may take at most {} bytes (2^40) per PE",
                               what, group.name, kMaxSymmetricHeapBytes));
}

/// Reference §6.3: the slot geometry of a signal/wait over `t`'s window with tile `tile`.
ir::SlotGeometry slot_geometry(Recorder &r, const ShmemTensor &t, const ir::TileShape &tile,
                               const char *op, const SrcLoc &loc) {
  auto &s = r.program().shmems[static_cast<size_t>(t.index)];
  ir::SlotGeometry g;
  if (s.shape.empty()) {
    g.data_shape = g.view_shape = g.tile = kSignalOnlyShape;
    g.view_offsets = {SymbolicScalar(0), SymbolicScalar(0)};
  } else {
    g.data_shape = s.shape;
    g.view_shape = t.view_shape;
    g.view_offsets = t.view_offsets;
    if (tile.vec.size() != s.shape.size())
      throw TileShapeError(loc, op,
                           fmt::format("the vec tile rank ({}) must equal the shmem data rank "
                                       "({}) for signals and waits",
                                       tile.vec.size(), s.shape.size()));
    g.tile = tile.vec;
  }
  g.view_tile_num = 1;
  int64_t views = 1;
  for (size_t d = 0; d < g.data_shape.size(); ++d) {
    if (g.data_shape[d] % g.view_shape[d] != 0)
      throw DistributedError(loc, op,
                             fmt::format("signal of shmem tensor shape[{}]={} must be divisible "
                                         "by the view shape[{}]={}",
                                         d, g.data_shape[d], d, g.view_shape[d]));
    g.view_tile_num *= (g.view_shape[d] + g.tile[d] - 1) / g.tile[d];
    views *= g.data_shape[d] / g.view_shape[d];
  }
  g.total_tile_num = g.view_tile_num * views; // <= the data's elements: no overflow
  for (size_t d = 0; d < g.data_shape.size(); ++d) {
    const auto &o = g.view_offsets[d];
    if (o.is_concrete() && (o.concrete() % g.view_shape[d]) % g.tile[d] != 0)
      throw DistributedError(loc, op,
                             fmt::format("window offset {} in dim {} is not aligned to the view "
                                         "shape {} and tile {}: windows that are not "
                                         "tile-aligned would share signal slots",
                                         o.concrete(), d, g.view_shape[d], g.tile[d]));
  }
  s.max_tile_num = std::max(s.max_tile_num, g.total_tile_num);
  check_heap(r, s.group_index,
             fmt::format("the signal array of {} PEs x {} tiles (tile {} over shmem data {})",
                         s.n_pes, g.total_tile_num, dims_str(g.tile), dims_str(g.data_shape)),
             op, loc);
  if (s.slot_view.empty()) {
    s.slot_view = g.view_shape;
    s.slot_tile = g.tile;
    s.slot_where = format_location(loc);
  } else if (s.slot_view != g.view_shape || s.slot_tile != g.tile) {
    throw DistributedError(
        loc, op,
        fmt::format("view {} with tile {} is not congruent with view {} and tile "
                    "{} used by the signal/wait at {}; a signal and its wait "
                    "address the same slots only with the same view shape and "
                    "vec tile",
                    dims_str(g.view_shape), dims_str(g.tile), dims_str(s.slot_view),
                    dims_str(s.slot_tile), s.slot_where));
  }
  return g;
}

int check_group(Recorder &r, const std::string &group, int n_pes, const char *op,
                const SrcLoc &loc) {
  return r.group_index(group, n_pes, op, loc);
}

ShmemTensor make_shmem_tensor(const std::string &group, int n_pes, DataType dtype,
                              const std::vector<int64_t> &shape, const SrcLoc &loc) {
  const char *op = "create_shmem_tensor";
  auto &r = Recorder::current(op, loc);
  int g = check_group(r, group, n_pes, op, loc);
  if (shape.size() < 2 || shape.size() > 4)
    throw ShapeError(loc, op,
                     fmt::format("the shape must have 2, 3 or 4 dims, got {} dims (shape {})",
                                 shape.size(), dims_str(shape)));
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] <= 0)
      throw ShapeError(loc, op, fmt::format("dim {} must be > 0, got {}", d, shape[d]));
  static const DataType kData[] = {DT_INT8, DT_INT16, DT_INT32, DT_INT64,
                                   DT_FP16, DT_BF16,  DT_FP32,  DT_DOUBLE};
  if (std::find(std::begin(kData), std::end(kData), dtype) == std::end(kData))
    throw DTypeError(loc, op,
                     "data type must be one of int8, int16, int32, int64, fp16, bf16, fp32, "
                     "fp64, got " +
                         name(dtype));
  auto &p = r.program();
  ir::ShmemInfo s;
  s.group = group;
  s.group_index = g;
  s.n_pes = n_pes;
  s.dtype = dtype;
  s.shape = shape;
  s.where = format_location(loc);
  int index = static_cast<int>(p.shmems.size());
  Value v;
  v.kind = ValueKind::ShmemData;
  v.dtype = dtype;
  for (auto d : shape)
    v.shape.emplace_back(d);
  v.valid = v.shape;
  v.shmem = index;
  v.name = "shmem" + std::to_string(index);
  s.data = r.add_value(std::move(v));
  p.shmems.push_back(s);
  if (!dense_bytes(shape, bytes_of(dtype)))
    throw ShapeError(loc, op, too_large_detail(shape, name(dtype)));
  check_heap(r, g,
             fmt::format("shape {} of {} ({} bytes)", dims_str(shape), name(dtype),
                         *dense_bytes(shape, bytes_of(dtype))),
             op, loc);
  ShmemTensor t;
  t.index = index;
  t.group = group;
  t.n_pes = n_pes;
  t.data = r.tensor(s.data);
  t.view_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    t.view_offsets.emplace_back(0);
    t.view_valid.emplace_back(shape[d]);
  }
  return t;
}

ShmemTensor make_shmem_signal(const std::string &group, int n_pes, const SrcLoc &loc) {
  const char *op = "create_shmem_signal";
  auto &r = Recorder::current(op, loc);
  int g = check_group(r, group, n_pes, op, loc);
  auto &p = r.program();
  ir::ShmemInfo s;
  s.group = group;
  s.group_index = g;
  s.n_pes = n_pes;
  s.dtype = DT_INT32;
  s.where = format_location(loc);
  ShmemTensor t;
  t.index = static_cast<int>(p.shmems.size());
  t.group = group;
  t.n_pes = n_pes;
  p.shmems.push_back(s);
  return t;
}

} // namespace detail

using namespace detail;

ShmemTensor create_shmem_tensor(const std::string &group, int n_pes, DataType dtype,
                                const std::vector<int64_t> &shape, SrcLoc loc) {
  ShmemTensor t = make_shmem_tensor(group, n_pes, dtype, shape, loc);
  fresh_each_iteration(t, loc);
  return t;
}

ShmemTensor create_shmem_signal(const std::string &group, int n_pes, SrcLoc loc) {
  ShmemTensor t = make_shmem_signal(group, n_pes, loc);
  fresh_each_iteration(t, loc);
  return t;
}

ShmemTensor shmem_view(const ShmemTensor &src, const StaticDims &static_shape,
                       const std::vector<SymbolicScalar> &offsets, ShmemViewOptions opts,
                       SrcLoc loc) {
  const char *op = "shmem_view";
  const std::vector<int64_t> shape = static_shape.resolve(op, loc);
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, src, op, loc);
  if (s.shape.empty())
    throw DistributedError(loc, op,
                           "a signal-only object (create_shmem_signal) has no data to view");
  size_t rank = s.shape.size();
  if (shape.size() != rank)
    throw ShapeError(loc, op,
                     fmt::format("input shape dim should be equal to shmem data dim "
                                 "{}, got {}",
                                 rank, shape.size()));
  if (offsets.size() != rank)
    throw ShapeError(loc, op,
                     fmt::format("offsets dim should be equal to shmem data dim {}, "
                                 "got {}",
                                 rank, offsets.size()));
  ShmemTensor t = src;
  t.view_shape = shape;
  t.view_offsets.clear();
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] <= 0)
      throw ShapeError(loc, op, fmt::format("view dim {} must be > 0, got {}", d, shape[d]));
    t.view_offsets.push_back(src.view_offsets[d] + offsets[d]);
  }
  // The whole window (a valid_shape does not narrow it: gets, clears and signals use all of it)
  // must lie in the window it views.
  check_shmem_window(r, shape, offsets, src.view_shape, window_phrase(s, src), op, loc);
  if (opts.valid_shape) {
    trace::check_valid_shape(r, *opts.valid_shape, {shape.begin(), shape.end()}, op, loc);
    t.view_valid = *opts.valid_shape;
  } else {
    t.view_valid.clear();
    for (size_t d = 0; d < rank; ++d)
      t.view_valid.push_back(min(max(src.view_valid[d] - offsets[d], 0), shape[d]));
  }
  return t;
}

SymbolicScalar my_symbolic_pe(const std::string &group, SrcLoc loc) {
  auto &r = Recorder::current("my_symbolic_pe", loc);
  auto &groups = r.program().groups;
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].name == group)
      return SymbolicScalar::symbol(SymKind::MyPe, static_cast<int64_t>(i), 0, "pe");
  // A group no shmem tensor uses yet: "world" and World::create_group's groups are known while
  // tracing under pto::jit, so register it here (group_index checks the name).
  if (int size = r.known_group_size(group); size > 0) {
    int g = r.group_index(group, size, "my_symbolic_pe", loc);
    return SymbolicScalar::symbol(SymKind::MyPe, static_cast<int64_t>(g), 0, "pe");
  }
  throw DistributedError(loc, "my_symbolic_pe",
                         "unknown group '" + group + "'; create a shmem tensor in it first");
}

ir::Op detail::trace_put(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                         const ShmemTensor &dst, const SymbolicScalar &dst_pe,
                         const PutOptions &opts, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const ir::Atomic atomic = to_atomic(opts.put_op, "put_op", op, loc);
  const auto &s = shmem_of(r, dst, op, loc);
  if (s.shape.empty())
    throw DistributedError(loc, op, "cannot put into a signal-only object (create_shmem_signal)");
  ValueId sid = r.use(src, op, loc);
  const Value &vs = r.program().value(sid);
  if (vs.kind == ValueKind::Token)
    throw DTypeError(loc, op, "src is a dependency token; pass it as `pred`");
  if (vs.shmem >= 0)
    throw DTypeError(loc, op, "src is shmem data; shmem_get it into a local tensor first");
  if (vs.shape.size() < 2 || vs.shape.size() > 4)
    throw ShapeError(loc, op, fmt::format("src rank must be 2 to 4, got {}", vs.shape.size()));
  if (vs.shape.size() != s.shape.size())
    throw ShapeError(loc, op,
                     fmt::format("src rank {} differs from shmem data rank {}", vs.shape.size(),
                                 s.shape.size()));
  bool widen_add = opts.put_op == AtomicType::ADD && s.dtype == DT_FP32 &&
                   (vs.dtype == DT_FP16 || vs.dtype == DT_BF16);
  if (vs.dtype != s.dtype && !widen_add)
    throw DTypeError(loc, op,
                     "shmem tensor dtype " + name(s.dtype) + " must match input tensor dtype " +
                         name(vs.dtype) + " (ADD also allows fp16/bf16 into fp32)");
  if (offsets.size() != vs.shape.size())
    throw ShapeError(
        loc, op, fmt::format("offsets need {} entries, got {}", vs.shape.size(), offsets.size()));
  std::vector<int64_t> shape;
  for (size_t d = 0; d < vs.shape.size(); ++d) {
    if (!vs.shape[d].is_concrete())
      throw ShapeError(loc, op,
                       "src dim " + std::to_string(d) + " is dynamic (" + vs.shape[d].str() +
                           "); put a view with a static shape and a valid_shape");
    shape.push_back(vs.shape[d].concrete());
    if (shape[d] > dst.view_shape[d])
      throw DistributedError(loc, op,
                             fmt::format("src shape {} does not fit the shmem view {}",
                                         str(vs.shape), dims_str(dst.view_shape)));
  }
  check_pe(r, dst_pe, s.n_pes, "dst_pe", s, op, loc);
  check_view(r, s, dst, op, loc);
  // src's whole shape at `offsets` must lie in dst's window.
  check_shmem_window(r, shape, offsets, dst.view_shape, window_phrase(s, dst), op, loc);
  ir::Op o;
  o.kind = OpKind::ShmemPut;
  o.where = loc;
  o.shmem = dst.index;
  o.view_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    o.view_offsets.push_back(dst.view_offsets[d] + offsets[d]);
  o.pe = dst_pe;
  o.atomic = atomic;
  std::vector<SymbolicScalar> token_shape = vs.shape;
  o.inputs = {sid};
  o.preds = use_preds(r, opts.pred, op, loc);
  o.tile = ir::capture_tile(r, shape.size(), op, loc);
  o.outputs = {make_token(r, token_shape).id()};
  return o;
}

Tensor shmem_put(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                 const ShmemTensor &dst, const SymbolicScalar &dst_pe, PutOptions opts,
                 SrcLoc loc) {
  ir::Op o = trace_put(src, offsets, dst, dst_pe, opts, "shmem_put", loc);
  auto &r = Recorder::current("shmem_put", loc);
  Tensor tok = r.tensor(o.outputs[0]);
  r.emit(std::move(o));
  return tok;
}

std::pair<Tensor, Tensor> shmem_get_with_token(const ShmemTensor &src, const SymbolicScalar &src_pe,
                                               GetOptions opts, SrcLoc loc) {
  const char *op = "shmem_get";
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, src, op, loc);
  if (s.shape.empty())
    throw DistributedError(loc, op, "cannot get from a signal-only object (create_shmem_signal)");
  check_pe(r, src_pe, s.n_pes, "src_pe", s, op, loc);
  check_view(r, s, src, op, loc);
  DataType out_dt = opts.dtype == DT_BOTTOM ? s.dtype : opts.dtype;
  if (!is_supported(out_dt) || out_dt == DT_BOOL)
    throw DTypeError(loc, op, "cannot convert shmem data to " + name(out_dt));
  ir::Op o;
  o.kind = OpKind::ShmemGet;
  o.where = loc;
  o.shmem = src.index;
  o.view_shape = src.view_shape;
  o.view_offsets = src.view_offsets;
  o.view_valid = src.view_valid;
  o.pe = src_pe;
  o.preds = use_preds(r, opts.pred, op, loc);
  o.tile = ir::capture_tile(r, s.shape.size(), op, loc);
  if (o.tile.vec.size() != s.shape.size())
    throw TileShapeError(loc, op,
                         fmt::format("dim of vectile shape ({}) must be equal to the shmem data "
                                     "dim ({})",
                                     o.tile.vec.size(), s.shape.size()));
  std::vector<SymbolicScalar> shape;
  for (auto d : src.view_shape)
    shape.emplace_back(d);
  // The result takes the view's valid shape (already checked by shmem_view unless edited).
  trace::check_valid_shape(r, src.view_valid, shape, op, loc);
  Tensor tok = make_token(r, shape);
  Value v;
  v.kind = ValueKind::Local;
  v.dtype = out_dt;
  v.shape = shape;
  v.valid = src.view_valid;
  Tensor data = r.tensor(r.add_value(std::move(v)));
  o.outputs = {tok.id(), data.id()};
  r.emit(std::move(o));
  return {tok, data};
}

Tensor shmem_get(const ShmemTensor &src, const SymbolicScalar &src_pe, GetOptions opts,
                 SrcLoc loc) {
  return shmem_get_with_token(src, src_pe, std::move(opts), loc).second;
}

namespace {
Tensor signal_impl(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                   const SymbolicScalar *target_pe, SignalOptions opts, const char *op,
                   SrcLoc loc) {
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, src, op, loc);
  check_pe(r, src_pe, s.n_pes, "src_pe", s, op, loc);
  if (target_pe)
    check_pe(r, *target_pe, s.n_pes, "target_pe", s, op, loc);
  check_view(r, s, src, op, loc);
  ir::Op o;
  o.kind = OpKind::ShmemSignal;
  o.where = loc;
  o.shmem = src.index;
  o.pe = src_pe;
  o.target_all = target_pe == nullptr;
  if (target_pe)
    o.target_pe = *target_pe;
  o.signal = signal;
  o.atomic = to_atomic(opts.sig_op, "sig_op", op, loc);
  o.preds = use_preds(r, opts.pred, op, loc);
  ir::TileShape tile =
      s.shape.empty() ? signal_only_tile() : ir::capture_tile(r, s.shape.size(), op, loc);
  o.tile = tile;
  o.slots = slot_geometry(r, src, tile, op, loc);
  o.view_shape = o.slots->view_shape;
  o.view_offsets = o.slots->view_offsets;
  Tensor tok = make_token(r, pred_token_shape(r, o.preds));
  o.outputs = {tok.id()};
  r.emit(std::move(o));
  return tok;
}
} // namespace

Tensor shmem_signal(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                    const SymbolicScalar &target_pe, SignalOptions opts, SrcLoc loc) {
  if (target_pe.is_concrete() && target_pe.concrete() == -1) // PyPTO: -1 is every PE
    return signal_impl(src, src_pe, signal, nullptr, std::move(opts), "shmem_signal", loc);
  return signal_impl(src, src_pe, signal, &target_pe, std::move(opts), "shmem_signal", loc);
}

Tensor shmem_signal_all(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                        SignalOptions opts, SrcLoc loc) {
  return signal_impl(src, src_pe, signal, nullptr, std::move(opts), "shmem_signal_all", loc);
}

namespace {
Tensor wait_impl(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                 ir::Cmp cmp, WaitOptions opts, const char *op, SrcLoc loc) {
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, src, op, loc);
  check_pe(r, src_pe, s.n_pes, "src_pe", s, op, loc);
  check_view(r, s, src, op, loc);
  ir::Op o;
  o.kind = OpKind::ShmemWaitUntil;
  o.where = loc;
  o.shmem = src.index;
  o.pe = src_pe;
  o.signal = cmp_value;
  o.cmp = cmp;
  o.clear = opts.clear_signal;
  o.preds = use_preds(r, opts.pred, op, loc);
  ir::TileShape tile =
      s.shape.empty() ? signal_only_tile() : ir::capture_tile(r, s.shape.size(), op, loc);
  o.tile = tile;
  o.slots = slot_geometry(r, src, tile, op, loc);
  o.view_shape = o.slots->view_shape;
  o.view_offsets = o.slots->view_offsets;
  Tensor tok = make_token(r, pred_token_shape(r, o.preds));
  o.outputs = {tok.id()};
  r.emit(std::move(o));
  return tok;
}
} // namespace

Tensor shmem_wait_until(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                        WaitOptions opts, SrcLoc loc) {
  ir::Cmp cmp = to_cmp(opts.cmp, "shmem_wait_until", loc);
  return wait_impl(src, src_pe, cmp_value, cmp, std::move(opts), "shmem_wait_until", loc);
}

Tensor shmem_barrier_all(const ShmemTensor &signal, BarrierOptions opts, SrcLoc loc) {
  auto &r = Recorder::current("shmem_barrier_all", loc);
  shmem_of(r, signal, "shmem_barrier_all", loc);
  ShmemTensor whole = signal;
  if (!r.program().shmems[static_cast<size_t>(signal.index)].shape.empty()) {
    // Barriers on a data tensor use its whole window with the current tile.
    whole.view_shape = r.program().shmems[static_cast<size_t>(signal.index)].shape;
    whole.view_offsets.assign(whole.view_shape.size(), SymbolicScalar(0));
  }
  Tensor s = signal_impl(whole, 0, 1, nullptr, {.sig_op = AtomicType::ADD, .pred = opts.pred},
                         "shmem_barrier_all", loc);
  // GE with a clear that subtracts what it saw: a fast PE's ADD for the next barrier can land
  // before a slow PE leaves this one, and EQ would then never hold (PyPTO uses EQ).
  return wait_impl(whole, 0, signal.n_pes, ir::Cmp::GE, {.clear_signal = true, .pred = {s}},
                   "shmem_barrier_all", loc);
}

Tensor shmem_clear_data(const ShmemTensor &src, ClearOptions opts, SrcLoc loc) {
  const char *op = "shmem_clear_data";
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, src, op, loc);
  if (s.shape.empty())
    throw DistributedError(loc, op, "a signal-only object has no data to clear");
  check_view(r, s, src, op, loc);
  ir::Op o;
  o.kind = OpKind::ShmemClearData;
  o.where = loc;
  o.shmem = src.index;
  o.view_shape = src.view_shape;
  o.view_offsets = src.view_offsets;
  o.preds = use_preds(r, opts.pred, op, loc);
  o.tile = ir::capture_tile(r, s.shape.size(), op, loc);
  Tensor tok = make_token(r, {SymbolicScalar(1), SymbolicScalar(1)});
  o.outputs = {tok.id()};
  r.emit(std::move(o));
  return tok;
}

Tensor shmem_clear_signal(const ShmemTensor &src, ClearOptions opts, SrcLoc loc) {
  const char *op = "shmem_clear_signal";
  auto &r = Recorder::current(op, loc);
  shmem_of(r, src, op, loc);
  ir::Op o;
  o.kind = OpKind::ShmemClearSignal;
  o.where = loc;
  o.shmem = src.index;
  o.preds = use_preds(r, opts.pred, op, loc);
  Tensor tok = make_token(r, {SymbolicScalar(1), SymbolicScalar(1)});
  o.outputs = {tok.id()};
  r.emit(std::move(o));
  return tok;
}

Tensor shmem_store(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                   const ShmemTensor &dst, const SymbolicScalar &dst_pe, PutOptions opts,
                   SrcLoc loc) {
  return shmem_put(src, offsets, dst, dst_pe, std::move(opts), loc);
}

Tensor shmem_load(const ShmemTensor &src, const SymbolicScalar &src_pe, GetOptions opts,
                  SrcLoc loc) {
  return shmem_get(src, src_pe, std::move(opts), loc);
}

Tensor nop(const std::vector<Tensor> &tokens, SrcLoc loc) {
  auto &r = Recorder::current("nop", loc);
  ir::Op o;
  o.kind = OpKind::Nop;
  o.where = loc;
  o.preds = use_preds(r, tokens, "nop", loc);
  Tensor tok = make_token(r, {SymbolicScalar(1), SymbolicScalar(1)});
  o.outputs = {tok.id()};
  r.emit(std::move(o));
  return tok;
}

} // namespace pto::distributed
