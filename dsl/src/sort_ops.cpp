// sort_ops.cpp - Tracing of the ops of sort_ops.h: argument checks, result shapes and valid
// shapes, then one library ir::Op each (attribute layout in ir::OpKind's comments).
#include "pto/sort_ops.h"

#include "trace_checks.h"

#include <limits>

namespace pto {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using namespace trace;

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

void check_index_dtype(DataType dt, const char *op, const SrcLoc &loc) {
  if (dt != DT_INT32 && dt != DT_INT64)
    throw DTypeError(loc, op, "index_dtype must be DT_INT32 or DT_INT64, got " + name(dt));
}

/// ShapeError when `n` (an axis length or element count) is concrete and does not fit int32
/// indices.
void check_index_range(const SymbolicScalar &n, DataType index_dtype, const char *what,
                       const char *op, const SrcLoc &loc) {
  if (index_dtype == DT_INT32 && n.is_concrete() && n.concrete() > kInt32Max)
    throw ShapeError(loc, op,
                     fmt::format("{} {} does not fit DT_INT32 indices (at most {}); use "
                                 "index_dtype DT_INT64",
                                 what, n.concrete(), kInt32Max));
}

ir::Op library_op(Recorder &r, OpKind kind, const Value &x, const char *op, const SrcLoc &loc) {
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {x.id};
  o.tile = ir::capture_tile(r, x.shape.size(), op, loc);
  o.user_op = op; // run-time messages name it (argsort is a sort op)
  return o;
}

/// Sort or argsort: one Sort op; `with_values` false leaves the values out of the outputs.
SortResult sort_op(const Tensor &x, int axis, bool descending, DataType index_dtype,
                   bool with_values, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_index_dtype(index_dtype, op, loc);
  int a = norm_axis(axis, v.shape.size(), op, loc);
  check_index_range(v.shape[static_cast<size_t>(a)], index_dtype, "axis length", op, loc);
  ir::Op o = library_op(r, OpKind::Sort, v, op, loc);
  o.axis = a;
  o.ints = {descending ? 1 : 0};
  SortResult res;
  // make_local may grow the value table: copy what is needed from `v` first.
  const DataType dt = v.dtype;
  const auto shape = v.shape, valid = v.valid;
  if (with_values) {
    res.values = make_local(r, dt, shape, valid);
    o.outputs.push_back(res.values.id());
  }
  res.indices = make_local(r, index_dtype, shape, valid);
  o.outputs.push_back(res.indices.id());
  r.emit(std::move(o));
  return res;
}

} // namespace

SortResult sort(const Tensor &x, int axis, SortOptions opts, SrcLoc loc) {
  return sort_op(x, axis, opts.descending, opts.index_dtype, true, "sort", loc);
}

Tensor argsort(const Tensor &x, int axis, ArgsortOptions opts, SrcLoc loc) {
  return sort_op(x, axis, opts.descending, opts.index_dtype, false, "argsort", loc).indices;
}

SortResult topk(const Tensor &x, int64_t k, int axis, TopkOptions opts, SrcLoc loc) {
  const char *op = "topk";
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_index_dtype(opts.index_dtype, op, loc);
  int a = norm_axis(axis, v.shape.size(), op, loc);
  const auto ax = static_cast<size_t>(a);
  const SymbolicScalar &n = v.shape[ax];
  if (k < 1)
    throw ShapeError(loc, op, fmt::format("k must be at least 1, got {}", k));
  if (n.is_concrete() && k > n.concrete())
    throw ShapeError(
        loc, op,
        fmt::format("k {} is larger than the length {} of axis {}", k, n.concrete(), axis));
  check_index_range(n, opts.index_dtype, "axis length", op, loc);
  ir::Op o = library_op(r, OpKind::Topk, v, op, loc);
  o.axis = a;
  o.ints = {k, opts.largest ? 1 : 0, opts.sorted ? 1 : 0};
  const DataType dt = v.dtype;
  auto shape = v.shape, valid = v.valid;
  shape[ax] = SymbolicScalar(k);
  valid[ax] = min(SymbolicScalar(k), valid[ax]);
  SortResult res;
  res.values = make_local(r, dt, shape, valid);
  res.indices = make_local(r, opts.index_dtype, shape, valid);
  o.outputs = {res.values.id(), res.indices.id()};
  r.emit(std::move(o));
  return res;
}

UniqueResult unique(const Tensor &x, UniqueOptions opts, SrcLoc loc) {
  const char *op = "unique";
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_index_dtype(opts.index_dtype, op, loc);
  SymbolicScalar n(1);
  for (auto &d : v.shape)
    n = n * d;
  // `count` is DT_INT32 whatever index_dtype is (PyPTO tensors hold at most INT32_MAX elements).
  if (n.is_concrete() && n.concrete() > kInt32Max)
    throw ShapeError(loc, op, fmt::format("element count {} is above {}", n.concrete(), kInt32Max));
  ir::Op o = library_op(r, OpKind::Unique, v, op, loc);
  o.ints = {opts.sorted ? 1 : 0, opts.return_inverse ? 1 : 0, opts.return_counts ? 1 : 0};
  const DataType dt = v.dtype;
  const auto shape = v.shape, valid = v.valid;
  UniqueResult res;
  res.values = make_local(r, dt, {n}, {n});
  res.count = make_local(r, DT_INT32, {SymbolicScalar(1)}, {SymbolicScalar(1)});
  o.outputs = {res.values.id(), res.count.id()};
  if (opts.return_inverse) {
    res.inverse = make_local(r, opts.index_dtype, shape, valid);
    o.outputs.push_back(res.inverse.id());
  }
  if (opts.return_counts) {
    res.counts = make_local(r, opts.index_dtype, {n}, {n});
    o.outputs.push_back(res.counts.id());
  }
  r.emit(std::move(o));
  return res;
}

namespace {
Tensor bessel(OpKind kind, const Tensor &x, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  if (!is_float(v.dtype))
    throw DTypeError(loc, op,
                     "expected a floating dtype (fp16, bf16, fp32, fp64), got " + name(v.dtype) +
                         "; cast first");
  ir::Op o = library_op(r, kind, v, op, loc);
  const DataType dt = v.dtype;
  const auto shape = v.shape, valid = v.valid;
  Tensor out = make_local(r, dt, shape, valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}
} // namespace

Tensor bessel_i0e(const Tensor &x, SrcLoc loc) { return bessel(OpKind::BesselI0e, x, loc); }
Tensor bessel_i1e(const Tensor &x, SrcLoc loc) { return bessel(OpKind::BesselI1e, x, loc); }

} // namespace pto
