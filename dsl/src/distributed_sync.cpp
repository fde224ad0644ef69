// distributed_sync.cpp - Tracing of the rest of the OpenSHMEM 1.5 model (distributed.h): fence,
// quiet, put-with-signal, waits on sets of signal slots, test and the fetching AMOs.
#include "pto/distributed.h"
#include "pto/ir/recorder.h"

#include "distributed_detail.h"
#include "shape_rules.h"

#include <fmt/format.h>
#include <limits>

namespace pto::distributed {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;
using namespace detail;

namespace {

/// The most slots a wait set may name (elements x tiles per element): generated code keeps
/// their offsets on the stack.
constexpr int64_t kMaxWaitSetSlots = 1 << 16;

/// A new local result tensor of `dtype` and `shape` (every element valid).
Tensor make_local(Recorder &r, DataType dtype, std::vector<SymbolicScalar> shape) {
  Value v;
  v.kind = ValueKind::Local;
  v.dtype = dtype;
  v.valid = shape;
  v.shape = std::move(shape);
  return r.tensor(r.add_value(std::move(v)));
}

Tensor sync_op(OpKind kind, const SyncOptions &opts, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.preds = use_preds(r, opts.pred, op, loc);
  Tensor tok = make_token(r, {SymbolicScalar(1), SymbolicScalar(1)});
  o.outputs = {tok.id()};
  r.emit(std::move(o));
  return tok;
}

/// The tile of signals and waits on `s` (signal-only objects: their fixed [1, 8]).
ir::TileShape signal_tile(Recorder &r, const ir::ShmemInfo &s, const char *op, const SrcLoc &loc) {
  return s.shape.empty() ? signal_only_tile() : ir::capture_tile(r, s.shape.size(), op, loc);
}

/// The status mask of a wait set of `n` elements: DT_INT32 with n elements in its last dim.
ValueId use_status(Recorder &r, const Tensor &status, size_t n, const char *op, const SrcLoc &loc) {
  ValueId id = r.use(status, op, loc);
  const Value &v = r.program().value(id);
  if (v.kind == ValueKind::Token || v.shmem >= 0)
    throw DTypeError(loc, op, "status must be a local DT_INT32 tensor, not a token or shmem data");
  if (v.dtype != DT_INT32)
    throw DTypeError(loc, op, "status must be DT_INT32, got " + name(v.dtype));
  bool ok = !v.shape.empty() && v.shape.back().is_concrete() &&
            v.shape.back().concrete() == static_cast<int64_t>(n);
  for (size_t d = 0; ok && d + 1 < v.shape.size(); ++d)
    ok = v.shape[d].is_concrete() && v.shape[d].concrete() == 1;
  if (!ok)
    throw ShapeError(loc, op,
                     fmt::format("status must have shape [{}] or [1, ..., 1, {}] (one entry per "
                                 "element of the wait set), got {}",
                                 n, n, str(v.shape)));
  return id;
}

/// The ShmemWaitUntil{All,Any,Some} / ShmemTest op over `slots` (not emitted; outputs[0] is
/// its token).
ir::Op trace_wait_set(OpKind kind, const std::vector<SignalSlot> &slots, int32_t cmp_value,
                      ir::Cmp cmp, bool clear, const std::optional<Tensor> &status,
                      const std::vector<Tensor> &pred, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.signal = cmp_value;
  o.cmp = cmp;
  o.clear = clear;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SignalSlot &e = slots[i];
    const auto &s = shmem_of(r, e.window, op, loc);
    if (i == 0) {
      o.shmem = e.window.index;
    } else if (e.window.index != o.shmem) {
      throw DistributedError(loc, op,
                             fmt::format("element {} is a window of another shmem tensor than "
                                         "element 0; every element of a wait set must be a "
                                         "window of one shmem tensor",
                                         i));
    }
    check_pe(r, e.src_pe, s.n_pes, "src_pe", s, op, loc);
    check_view(r, s, e.window, op, loc);
    ir::SlotGeometry g = slot_geometry(r, e.window, signal_tile(r, s, op, loc), op, loc);
    o.set_offsets.push_back(g.view_offsets);
    o.set_rows.push_back(e.src_pe);
    if (i == 0) {
      o.tile.vec = g.tile;
      o.slots = std::move(g);
    }
  }
  if (o.slots && static_cast<int64_t>(slots.size()) > kMaxWaitSetSlots / o.slots->view_tile_num)
    throw DistributedError(loc, op,
                           fmt::format("a wait set of {} elements of {} slots each exceeds the "
                                       "limit of {} slots",
                                       slots.size(), o.slots->view_tile_num, kMaxWaitSetSlots));
  if (status)
    o.inputs = {use_status(r, *status, slots.size(), op, loc)};
  o.preds = use_preds(r, pred, op, loc);
  o.outputs = {make_token(r, pred_token_shape(r, o.preds)).id()};
  return o;
}

/// The word's dtype rule of `kind` (DTypeError naming `op`).
void check_amo_dtype(OpKind kind, DataType dt, const char *op, const SrcLoc &loc) {
  const bool cswap = kind == OpKind::ShmemAtomicCompareSwap;
  if (dt == DT_INT32 || dt == DT_INT64 || (dt == DT_FP32 && !cswap))
    return;
  throw DTypeError(loc, op,
                   fmt::format("the shmem tensor's dtype must be {}, got {}{}",
                               cswap ? "int32 or int64" : "int32, int64 or fp32", name(dt),
                               cswap && dt == DT_FP32
                                   ? " (compare_swap compares integers; floats are not compared "
                                     "bitwise)"
                                   : ""));
}

/// `v` as an operand of a word of dtype `dt` (`what`: value, cond): a floating literal only for
/// fp32 words, an integer literal within the word's range.
void check_amo_value(const AmoValue &v, DataType dt, const char *what, const char *op,
                     const SrcLoc &loc) {
  if (v.real && dt != DT_FP32)
    throw DTypeError(loc, op,
                     fmt::format("{} {} is floating, but the word is {}", what, *v.real, name(dt)));
  if (!v.real && dt == DT_INT32 && v.i.is_concrete()) {
    const int64_t x = v.i.concrete();
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      throw ArgumentError(loc, op, fmt::format("{} {} does not fit the int32 word", what, x));
  }
}

AmoResult trace_amo(OpKind kind, const ShmemTensor &dst, const std::vector<SymbolicScalar> &index,
                    const AmoValue *cond, const AmoValue &value, const SymbolicScalar &pe,
                    const AmoOptions &opts, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, dst, op, loc);
  if (s.shape.empty())
    throw DistributedError(loc, op, "a signal-only object (create_shmem_signal) has no data words");
  check_amo_dtype(kind, s.dtype, op, loc);
  check_amo_value(value, s.dtype, "value", op, loc);
  if (cond)
    check_amo_value(*cond, s.dtype, "cond", op, loc);
  if (index.size() != s.shape.size())
    throw ShapeError(loc, op,
                     fmt::format("index needs {} entries (the shmem data rank), got {}",
                                 s.shape.size(), index.size()));
  check_pe(r, pe, s.n_pes, "pe", s, op, loc);
  check_view(r, s, dst, op, loc);
  const std::vector<int64_t> one(s.shape.size(), 1);
  check_shmem_window(r, one, index, dst.view_shape, window_phrase(s, dst), op, loc);
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.shmem = dst.index;
  o.view_shape = one;
  for (size_t d = 0; d < index.size(); ++d)
    o.view_offsets.push_back(dst.view_offsets[d] + index[d]);
  o.pe = pe;
  o.tile.vec = one;
  o.amo_value = value.i;
  o.amo_is_real = value.real.has_value();
  o.amo_real = value.real.value_or(0.0);
  if (cond)
    o.amo_cond = cond->i;
  o.preds = use_preds(r, opts.pred, op, loc);
  AmoResult res;
  res.token = make_token(r, pred_token_shape(r, o.preds));
  res.old = make_local(r, s.dtype, {SymbolicScalar(1), SymbolicScalar(1)});
  o.outputs = {res.token.id(), res.old.id()};
  r.emit(std::move(o));
  return res;
}

AmoResult trace_signal_amo(OpKind kind, const SignalSlot &slot, const AmoValue *cond,
                           const AmoValue &value, const SymbolicScalar &pe, const AmoOptions &opts,
                           const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const auto &s = shmem_of(r, slot.window, op, loc);
  check_amo_value(value, DT_INT32, "value", op, loc);
  if (cond)
    check_amo_value(*cond, DT_INT32, "cond", op, loc);
  check_pe(r, slot.src_pe, s.n_pes, "src_pe", s, op, loc);
  check_pe(r, pe, s.n_pes, "pe", s, op, loc);
  check_view(r, s, slot.window, op, loc);
  ir::SlotGeometry g = slot_geometry(r, slot.window, signal_tile(r, s, op, loc), op, loc);
  if (g.view_tile_num != 1)
    throw DistributedError(loc, op,
                           fmt::format("an AMO on a signal word needs a window of one vec tile "
                                       "(one slot per row); window {} with tile {} has {} slots",
                                       dims_str(g.view_shape), dims_str(g.tile), g.view_tile_num));
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.shmem = slot.window.index;
  o.pe = pe;
  o.set_offsets = {g.view_offsets};
  o.set_rows = {slot.src_pe};
  o.tile.vec = g.tile;
  o.slots = std::move(g);
  o.amo_value = value.i;
  if (cond)
    o.amo_cond = cond->i;
  o.preds = use_preds(r, opts.pred, op, loc);
  AmoResult res;
  res.token = make_token(r, pred_token_shape(r, o.preds));
  res.old = make_local(r, DT_INT32, {SymbolicScalar(1), SymbolicScalar(1)});
  o.outputs = {res.token.id(), res.old.id()};
  r.emit(std::move(o));
  return res;
}

} // namespace

AmoResult shmem_atomic_fetch_add(const SignalSlot &slot, const AmoValue &value,
                                 const SymbolicScalar &pe, AmoOptions opts, SrcLoc loc) {
  return trace_signal_amo(OpKind::ShmemAtomicFetchAdd, slot, nullptr, value, pe, opts,
                          "shmem_atomic_fetch_add", loc);
}

AmoResult shmem_atomic_swap(const SignalSlot &slot, const AmoValue &value, const SymbolicScalar &pe,
                            AmoOptions opts, SrcLoc loc) {
  return trace_signal_amo(OpKind::ShmemAtomicSwap, slot, nullptr, value, pe, opts,
                          "shmem_atomic_swap", loc);
}

AmoResult shmem_atomic_compare_swap(const SignalSlot &slot, const AmoValue &cond,
                                    const AmoValue &value, const SymbolicScalar &pe,
                                    AmoOptions opts, SrcLoc loc) {
  return trace_signal_amo(OpKind::ShmemAtomicCompareSwap, slot, &cond, value, pe, opts,
                          "shmem_atomic_compare_swap", loc);
}

Tensor shmem_fence(SyncOptions opts, SrcLoc loc) {
  return sync_op(OpKind::ShmemFence, opts, "shmem_fence", loc);
}

Tensor shmem_quiet(SyncOptions opts, SrcLoc loc) {
  return sync_op(OpKind::ShmemQuiet, opts, "shmem_quiet", loc);
}

Tensor shmem_put_signal(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                        const ShmemTensor &dst, const SymbolicScalar &dst_pe, int32_t signal,
                        PutSignalOptions opts, SrcLoc loc) {
  const char *op = "shmem_put_signal";
  ir::Op o =
      trace_put(src, offsets, dst, dst_pe, {.put_op = opts.put_op, .pred = opts.pred}, op, loc);
  auto &r = Recorder::current(op, loc);
  const auto &s = r.program().shmems[static_cast<size_t>(dst.index)];
  const SymbolicScalar row = opts.src_pe.value_or(dst_pe);
  if (opts.src_pe)
    check_pe(r, row, s.n_pes, "src_pe", s, op, loc);
  // The written window, as a view: its slots are the ones signalled.
  ShmemTensor window = dst;
  window.view_shape = o.view_shape;
  window.view_offsets = o.view_offsets;
  window.view_valid = sym_dims(o.view_shape);
  o.kind = OpKind::ShmemPutSignal;
  o.slots = slot_geometry(r, window, o.tile, op, loc);
  o.target_pe = row;
  o.signal = signal;
  o.sig_atomic = to_atomic(opts.sig_op, "sig_op", op, loc);
  Tensor tok = r.tensor(o.outputs[0]);
  r.emit(std::move(o));
  return tok;
}

std::vector<SignalSlot> signal_rows(const ShmemTensor &window) {
  std::vector<SignalSlot> out;
  for (int p = 0; p < window.n_pes; ++p)
    out.push_back({window, SymbolicScalar(p)});
  return out;
}

Tensor shmem_wait_until_all(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                            WaitSetOptions opts, SrcLoc loc) {
  const char *op = "shmem_wait_until_all";
  ir::Op o = trace_wait_set(OpKind::ShmemWaitUntilAll, slots, cmp_value, to_cmp(opts.cmp, op, loc),
                            opts.clear_signal, opts.status, opts.pred, op, loc);
  auto &r = Recorder::current(op, loc);
  Tensor tok = r.tensor(o.outputs[0]);
  r.emit(std::move(o));
  return tok;
}

namespace {

// The any / some wait sets and their non-blocking test forms trace the same op; `test` marks
// the forms that never block (OpenSHMEM 1.5 9.9.5 / 9.9.6).
WaitAnyResult trace_any(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                        const WaitSetOptions &opts, bool test, const char *op, SrcLoc loc) {
  ir::Op o = trace_wait_set(OpKind::ShmemWaitUntilAny, slots, cmp_value, to_cmp(opts.cmp, op, loc),
                            opts.clear_signal, opts.status, opts.pred, op, loc);
  o.test = test;
  auto &r = Recorder::current(op, loc);
  WaitAnyResult res{r.tensor(o.outputs[0]),
                    make_local(r, DT_INT32, {SymbolicScalar(1), SymbolicScalar(1)})};
  o.outputs.push_back(res.index.id());
  r.emit(std::move(o));
  return res;
}

WaitSomeResult trace_some(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                          const WaitSetOptions &opts, bool test, const char *op, SrcLoc loc) {
  ir::Op o = trace_wait_set(OpKind::ShmemWaitUntilSome, slots, cmp_value, to_cmp(opts.cmp, op, loc),
                            opts.clear_signal, opts.status, opts.pred, op, loc);
  o.test = test;
  auto &r = Recorder::current(op, loc);
  const auto n = static_cast<int64_t>(std::max<size_t>(slots.size(), 1));
  WaitSomeResult res{r.tensor(o.outputs[0]),
                     make_local(r, DT_INT32, {SymbolicScalar(1), SymbolicScalar(n)}),
                     make_local(r, DT_INT32, {SymbolicScalar(1), SymbolicScalar(1)})};
  o.outputs.push_back(res.indices.id());
  o.outputs.push_back(res.count.id());
  r.emit(std::move(o));
  return res;
}

// shmem_test / shmem_test_all: the token and a [1, 1] int32 "holds" flag.
TestResult emit_test(ir::Op o, const char *op, SrcLoc loc) {
  auto &r = Recorder::current(op, loc);
  TestResult res{r.tensor(o.outputs[0]),
                 make_local(r, DT_INT32, {SymbolicScalar(1), SymbolicScalar(1)})};
  o.outputs.push_back(res.holds.id());
  r.emit(std::move(o));
  return res;
}

} // namespace

WaitAnyResult shmem_wait_until_any(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                                   WaitSetOptions opts, SrcLoc loc) {
  return trace_any(slots, cmp_value, opts, false, "shmem_wait_until_any", loc);
}

WaitSomeResult shmem_wait_until_some(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                                     WaitSetOptions opts, SrcLoc loc) {
  return trace_some(slots, cmp_value, opts, false, "shmem_wait_until_some", loc);
}

TestResult shmem_test(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                      WaitOptions opts, SrcLoc loc) {
  const char *op = "shmem_test";
  return emit_test(trace_wait_set(OpKind::ShmemTest, {{src, src_pe}}, cmp_value,
                                  to_cmp(opts.cmp, op, loc), opts.clear_signal, std::nullopt,
                                  opts.pred, op, loc),
                   op, loc);
}

TestResult shmem_test_all(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                          WaitSetOptions opts, SrcLoc loc) {
  const char *op = "shmem_test_all";
  return emit_test(trace_wait_set(OpKind::ShmemTest, slots, cmp_value, to_cmp(opts.cmp, op, loc),
                                  opts.clear_signal, opts.status, opts.pred, op, loc),
                   op, loc);
}

WaitAnyResult shmem_test_any(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                             WaitSetOptions opts, SrcLoc loc) {
  return trace_any(slots, cmp_value, opts, true, "shmem_test_any", loc);
}

WaitSomeResult shmem_test_some(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                               WaitSetOptions opts, SrcLoc loc) {
  return trace_some(slots, cmp_value, opts, true, "shmem_test_some", loc);
}

AmoResult shmem_atomic_fetch_add(const ShmemTensor &dst, const std::vector<SymbolicScalar> &index,
                                 const AmoValue &value, const SymbolicScalar &pe, AmoOptions opts,
                                 SrcLoc loc) {
  return trace_amo(OpKind::ShmemAtomicFetchAdd, dst, index, nullptr, value, pe, opts,
                   "shmem_atomic_fetch_add", loc);
}

AmoResult shmem_atomic_swap(const ShmemTensor &dst, const std::vector<SymbolicScalar> &index,
                            const AmoValue &value, const SymbolicScalar &pe, AmoOptions opts,
                            SrcLoc loc) {
  return trace_amo(OpKind::ShmemAtomicSwap, dst, index, nullptr, value, pe, opts,
                   "shmem_atomic_swap", loc);
}

AmoResult shmem_atomic_compare_swap(const ShmemTensor &dst,
                                    const std::vector<SymbolicScalar> &index, const AmoValue &cond,
                                    const AmoValue &value, const SymbolicScalar &pe,
                                    AmoOptions opts, SrcLoc loc) {
  return trace_amo(OpKind::ShmemAtomicCompareSwap, dst, index, &cond, value, pe, opts,
                   "shmem_atomic_compare_swap", loc);
}

} // namespace pto::distributed
