// reduce_ops.cpp - Tracing of the reductions of reduce_ops.h. prod, argmax/argmin and
// cumsum/cumprod are ops of their own; the list forms, mean and var are compositions of
// single-axis reductions (keepdim, so the last-axis ones fuse), squeeze and elementwise ops.
#include "pto/reduce_ops.h"

#include "pto/shape_ops.h"

#include "trace_checks.h"

#include <algorithm>

namespace pto {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using namespace trace;

namespace {

void check_not_bool(DataType dt, const char *op, const SrcLoc &loc) {
  if (dt == DT_BOOL)
    throw DTypeError(loc, op, "reductions over DT_BOOL are not defined; cast to an int type");
}

/// A single-axis reduction op of `kind` with result dtype `out_dt` (DT_BOTTOM: the input's).
Tensor reduce_axis(OpKind kind, const Tensor &x, int axis, bool keepdim, DataType out_dt,
                   const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_not_bool(v.dtype, op, loc);
  size_t rank = v.shape.size();
  int a = norm_axis(axis, rank, op, loc);
  std::vector<SymbolicScalar> shape, valid;
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int>(d) == a) {
      if (keepdim) {
        shape.emplace_back(1);
        valid.emplace_back(1);
      }
      continue;
    }
    shape.push_back(v.shape[d]);
    valid.push_back(v.valid[d]);
  }
  if (shape.empty()) { // a full reduction of a rank-1 tensor keeps one element
    shape.emplace_back(1);
    valid.emplace_back(1);
  }
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {v.id};
  o.axis = a;
  o.keepdim = keepdim;
  o.tile = ir::capture_tile(r, rank, op, loc);
  Tensor out =
      make_local(r, out_dt == DT_BOTTOM ? v.dtype : out_dt, std::move(shape), std::move(valid));
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

/// Sorted, distinct axes in [0, rank); an empty list means every axis.
std::vector<int> norm_axes(const std::vector<int> &axes, size_t rank, const char *op,
                           const SrcLoc &loc) {
  std::vector<int> out;
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d)
      out.push_back(static_cast<int>(d));
    return out;
  }
  for (int a : axes) {
    int n = norm_axis(a, rank, op, loc);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw ShapeError(loc, op, fmt::format("axis {} appears twice in the axis list", a));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tensor reduce_one(OpKind kind, const Tensor &x, int axis, bool keepdim, const SrcLoc &loc) {
  ReduceOptions o{.keepdim = keepdim};
  switch (ir::kind_as<ir::ReduceKind>(kind)) {
  case ir::ReduceKind::Sum:
    return sum(x, axis, o, loc);
  case ir::ReduceKind::Amax:
    return amax(x, axis, o, loc);
  case ir::ReduceKind::Amin:
    return amin(x, axis, o, loc);
  case ir::ReduceKind::Prod:
    return reduce_axis(OpKind::Prod, x, axis, keepdim, DT_BOTTOM, loc);
  }
  throw InternalError(loc, ir::op_info(kind).name, "not a reduction (a ptojit bug)");
}

bool is_half(DataType dt) { return dt == DT_FP16 || dt == DT_BF16; }

/// `kind` over the axes `ax` (normalized): one axis at a time with keepdim, then the reduced
/// axes are squeezed away unless `keepdim`. fp16/bf16 sums and products go through fp32.
Tensor reduce_list(OpKind kind, const Tensor &x, const std::vector<int> &ax, bool keepdim,
                   const SrcLoc &loc) {
  if (ax.size() == 1)
    return reduce_one(kind, x, ax[0], keepdim, loc);
  DataType dt = x.dtype();
  bool widen = is_half(dt) && (kind == OpKind::Sum || kind == OpKind::Prod);
  Tensor y = widen ? cast(x, DT_FP32, loc) : x;
  for (int a : ax)
    y = reduce_one(kind, y, a, true, loc);
  if (widen)
    y = cast(y, dt, loc);
  return keepdim ? y : squeeze(y, ax, loc);
}

Tensor reduce_list_checked(OpKind kind, const Tensor &x, const std::vector<int> &axes,
                           ReduceOptions opts, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_not_bool(v.dtype, op, loc);
  return reduce_list(kind, x, norm_axes(axes, v.shape.size(), op, loc), opts.keepdim, loc);
}

/// The float value of `x` (and its dtype) that mean/var compute in: fp32 for fp16/bf16.
Tensor float_compute(const Tensor &x, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  if (!is_float(v.dtype))
    throw DTypeError(loc, op,
                     "expected a floating dtype (fp16, bf16, fp32, fp64), got " + name(v.dtype) +
                         "; cast first");
  return is_half(v.dtype) ? cast(x, DT_FP32, loc) : x;
}

/// The number of elements reduced: the product of the valid extents of `ax`.
SymbolicScalar count_of(const Tensor &x, const std::vector<int> &ax) {
  SymbolicScalar n(1);
  for (int a : ax)
    n = n * x.valid_shape()[static_cast<size_t>(a)];
  return n;
}

/// y / (n - correction), n clamped so the divisor is never negative (PyTorch's var rule). A
/// run-time n becomes a one-element tensor.
Tensor divide_by_count(const Tensor &y, const SymbolicScalar &n, double correction,
                       const SrcLoc &loc) {
  if (n.is_concrete())
    return div(y, std::max(static_cast<double>(n.concrete()) - correction, 0.0), loc);
  Tensor c = count_tensor(n, y.dtype(), loc);
  if (correction != 0)
    c = maximum(sub(c, correction, loc), 0.0, loc);
  return div(y, c, loc);
}

} // namespace

Tensor prod(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return reduce_axis(OpKind::Prod, x, axis, opts.keepdim, DT_BOTTOM, loc);
}
Tensor sum(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts, SrcLoc loc) {
  return reduce_list_checked(OpKind::Sum, x, axes, opts, loc);
}
Tensor amax(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts, SrcLoc loc) {
  return reduce_list_checked(OpKind::Amax, x, axes, opts, loc);
}
Tensor amin(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts, SrcLoc loc) {
  return reduce_list_checked(OpKind::Amin, x, axes, opts, loc);
}
Tensor prod(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts, SrcLoc loc) {
  return reduce_list_checked(OpKind::Prod, x, axes, opts, loc);
}

Tensor mean(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts, SrcLoc loc) {
  UserOpScope user_op("mean");
  Tensor xf = float_compute(x, "mean", loc);
  auto ax = norm_axes(axes, xf.shape().size(), "mean", loc);
  Tensor m = divide_by_count(reduce_list(OpKind::Sum, xf, ax, opts.keepdim, loc), count_of(x, ax),
                             0.0, loc);
  return m.dtype() == x.dtype() ? m : cast(m, x.dtype(), loc);
}
Tensor mean(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return mean(x, std::vector<int>{axis}, opts, loc);
}

Tensor var(const Tensor &x, const std::vector<int> &axes, VarOptions opts, SrcLoc loc) {
  UserOpScope user_op("var");
  Tensor xf = float_compute(x, "var", loc);
  auto ax = norm_axes(axes, xf.shape().size(), "var", loc);
  SymbolicScalar n = count_of(x, ax);
  Tensor m = divide_by_count(reduce_list(OpKind::Sum, xf, ax, true, loc), n, 0.0, loc);
  Tensor d = sub(xf, m, loc);
  Tensor v = divide_by_count(reduce_list(OpKind::Sum, mul(d, d, loc), ax, opts.keepdim, loc), n,
                             opts.correction, loc);
  return v.dtype() == x.dtype() ? v : cast(v, x.dtype(), loc);
}
Tensor var(const Tensor &x, int axis, VarOptions opts, SrcLoc loc) {
  return var(x, std::vector<int>{axis}, opts, loc);
}

Tensor argmax(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return reduce_axis(OpKind::Argmax, x, axis, opts.keepdim, DT_INT32, loc);
}
Tensor argmin(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return reduce_axis(OpKind::Argmin, x, axis, opts.keepdim, DT_INT32, loc);
}

namespace {
Tensor scan(OpKind kind, const Tensor &x, int axis, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_not_bool(v.dtype, op, loc);
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {v.id};
  o.axis = norm_axis(axis, v.shape.size(), op, loc);
  o.tile = ir::capture_tile(r, v.shape.size(), op, loc);
  Tensor out = make_local(r, is_float(v.dtype) ? v.dtype : DT_INT64, v.shape, v.valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}
} // namespace

Tensor cumsum(const Tensor &x, int axis, SrcLoc loc) { return scan(OpKind::Cumsum, x, axis, loc); }
Tensor cumprod(const Tensor &x, int axis, SrcLoc loc) {
  return scan(OpKind::Cumprod, x, axis, loc);
}

} // namespace pto
