// nn_common.cpp - The helpers the composites of nn_ops.h share (nn_common.h).
#include "nn/nn_common.h"

#include "pto/shape_ops.h"

#include "trace_checks.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace pto::nn {

using ir::Recorder;
using namespace trace;

/// A copy of the checked value of a data operand of `op` (copies stay valid as ops are added).
Value operand(const Tensor &t, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  return data_operand(r, t, op, loc);
}

bool is_half(DataType dt) { return dt == DT_FP16 || dt == DT_BF16; }

std::string float_expected(DataType dt) {
  return "expected a floating dtype (fp16, bf16, fp32, fp64), got " + name(dt) + "; cast first";
}

DataType float_operand(const Tensor &t, const char *op, const SrcLoc &loc) {
  DataType dt = operand(t, op, loc).dtype;
  if (!is_float(dt))
    throw DTypeError(loc, op, float_expected(dt));
  return dt;
}

void same_dtype(const Tensor &a, const Tensor &b, const char *what, const char *op,
                const SrcLoc &loc) {
  DataType da = operand(a, op, loc).dtype, db = operand(b, op, loc).dtype;
  if (da != db)
    throw DTypeError(
        loc, op,
        fmt::format("{} has dtype {}, expected {} (the input's)", what, name(db), name(da)));
}

/// Numpy broadcasting check of two shapes (the rule of ops.h), naming `op`.
void check_broadcast(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b,
                     const char *op, const SrcLoc &loc) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 1; i <= n; ++i) {
    const SymbolicScalar &da = a[a.size() - i], &db = b[b.size() - i];
    if (!da.same_as(db) && !is_one(da) && !is_one(db))
      throw ShapeError(loc, op, "shapes " + str(a) + " and " + str(b) + " do not broadcast");
  }
}

bool same_shape(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i]))
      return false;
  return true;
}

/// Checks the operands of a binary composite (add's rules) and returns their dtype. DT_BOOL is
/// refused; `float_only` refuses ints too.
DataType binary_dtype(const Operand &a, const Operand &b, bool float_only, const char *op,
                      const SrcLoc &loc) {
  if (!a.is_tensor() && !b.is_tensor())
    throw ShapeError(loc, op, "both operands are scalars; at least one must be a tensor");
  DataType dt = DT_BOTTOM;
  for (const Operand *o : {&a, &b}) {
    if (!o->is_tensor())
      continue;
    DataType odt = operand(o->tensor, op, loc).dtype;
    if (dt != DT_BOTTOM && odt != dt)
      throw DTypeError(
          loc, op, "operands have dtypes " + name(dt) + " and " + name(odt) + "; cast one of them");
    dt = odt;
  }
  if (dt == DT_BOOL)
    throw DTypeError(loc, op, "arithmetic on DT_BOOL is not defined; cast to an int type");
  if (float_only && !is_float(dt))
    throw DTypeError(loc, op, float_expected(dt));
  for (const Operand *o : {&a, &b}) {
    if (!o->scalar)
      continue;
    const ir::Scalar &s = *o->scalar;
    if (s.dtype != DT_BOTTOM && s.dtype != dt)
      throw DTypeError(loc, op,
                       "scalar of dtype " + name(s.dtype) + " with a tensor of dtype " + name(dt) +
                           "; cast one of them");
    if (!s.is_int && !is_float(dt))
      throw DTypeError(
          loc, op,
          fmt::format("floating scalar {} with an integer tensor of dtype {}", s.f, name(dt)));
  }
  if (a.is_tensor() && b.is_tensor())
    check_broadcast(a.tensor.shape(), b.tensor.shape(), op, loc);
  return dt;
}

int axis_of(const Tensor &x, int axis, const char *op, const SrcLoc &loc) {
  return norm_axis(axis, operand(x, op, loc).shape.size(), op, loc);
}

/// fp16/bf16 -> fp32 (exact); other dtypes unchanged.
Tensor widen(const Tensor &x, const SrcLoc &loc) {
  return is_half(x.dtype()) ? cast(x, DT_FP32, loc) : x;
}
/// An operand widened like `widen` (scalars unchanged).
Operand widen(const Operand &o, const SrcLoc &loc) {
  if (!o.is_tensor())
    return o;
  return Operand(widen(o.tensor, loc), o.loc);
}
/// y rounded once to `dt` when it was computed wider.
Tensor narrow(const Tensor &y, DataType dt, const SrcLoc &loc) {
  return y.dtype() == dt ? y : cast(y, dt, loc);
}

void check_eps(double eps, const char *what, const char *op, const SrcLoc &loc) {
  if (!std::isfinite(eps) || eps < 0)
    throw ArgumentError(loc, op, fmt::format("{} must be finite and >= 0, got {}", what, eps));
}

void check_p(double p, const char *op, const SrcLoc &loc) {
  if (!(p >= 0 && p <= 1))
    throw ArgumentError(loc, op, fmt::format("p must be in [0, 1], got {}", p));
}

/// All dims of `v` as static ints (ShapeError naming `op` otherwise).
std::vector<int64_t> static_dims(const Value &v, const char *op, const SrcLoc &loc) {
  std::vector<int64_t> out;
  for (const auto &d : v.shape) {
    if (!d.is_concrete())
      throw ShapeError(loc, op, "needs static dims, got shape " + str(v.shape));
    out.push_back(d.concrete());
  }
  return out;
}

std::vector<SymbolicScalar> sym(const std::vector<int64_t> &dims) {
  return {dims.begin(), dims.end()};
}

/// The product of all dims but the last.
int64_t lead_of(const std::vector<int64_t> &dims) {
  int64_t lead = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d)
    lead *= dims[d];
  return lead;
}

/// x reshaped to `dims`, or x itself when it has them (a reshape is a copy loop).
Tensor reshaped(const Tensor &x, const std::vector<int64_t> &dims, const SrcLoc &loc) {
  if (same_shape(x.shape(), sym(dims)))
    return x;
  return reshape(x, sym(dims), {}, loc);
}

/// x as [L, n] rows (L = the product of the leading dims, n the static last dim).
Tensor as_rows(const Tensor &x, const std::vector<int64_t> &dims, const SrcLoc &loc) {
  return reshaped(x, {lead_of(dims), dims.back()}, loc);
}

/// For each j of `js`: the elements j, j + k, j + 2k, ... of the last dim of the [L, n] tensor
/// `x2` (n % k == 0), as [L, n / k]. Leaves `tile` on its 2-D setting.
std::vector<Tensor> pick_every(const Tensor &x2, int64_t lead, int64_t n, int64_t k,
                               const std::vector<int64_t> &js, RowsTile &tile, const SrcLoc &loc) {
  tile.use_3d(k);
  Tensor x3 = reshape(x2, {lead, n / k, k}, {}, loc);
  std::vector<Tensor> cols;
  for (int64_t j : js)
    cols.push_back(view(x3, {lead, n / k, 1}, {0, 0, j}, {}, loc));
  tile.use_2d();
  std::vector<Tensor> out;
  for (const Tensor &c : cols)
    out.push_back(reshape(c, {lead, n / k}, {}, loc));
  return out;
}

/// `weight` (1-D of length 1 or C = x.shape[channel]) shaped to broadcast over x's channel dim.
Tensor channel_view(const Tensor &w, const Value &x, size_t channel, const SrcLoc &loc) {
  std::vector<SymbolicScalar> shape{w.shape()[0]};
  for (size_t d = channel + 1; d < x.shape.size(); ++d)
    shape.emplace_back(1);
  return shape.size() == 1 ? w : reshape(w, shape, {}, loc);
}

} // namespace pto::nn
