// nn_ops.cpp - Tracing of the composites of nn_ops.h. Each checks its operands first (so errors
// name the composite, not an inner op), then traces existing ops: elementwise chains and
// keepdim last-axis reductions fuse; movement (gathermask, interleave) goes through reshape and
// view.
#include "pto/nn_ops.h"

#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"

#include "trace_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace pto {

using ir::Recorder;
using ir::Value;
using namespace trace;

namespace {

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
    if (o->is_tensor())
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

/// While alive, ops capture a tile of the movement composites' own: their [L, n] and [L, m, k]
/// intermediates may have a higher rank than the caller's tile. Restores the caller's tile.
class RowsTile {
public:
  /// `x_rank`: the rank of the composite's input; the rows tile takes the caller's entries for
  /// its first and last dim. TileShapeError when no tile is set.
  RowsTile(size_t x_rank, const char *op, const SrcLoc &loc)
      : r_(Recorder::current(op, loc)), saved_(r_.vec_tile.vec) {
    if (saved_.empty())
      throw TileShapeError(loc, op, "no vec tile shape is set; call set_vec_tile_shapes first");
    rows_ = x_rank >= 2 ? saved_[0] : 1;
    cols_ = saved_[std::min(x_rank, saved_.size()) - 1];
    r_.vec_tile.vec = {rows_, cols_};
  }
  RowsTile(const RowsTile &) = delete;
  RowsTile &operator=(const RowsTile &) = delete;
  ~RowsTile() { r_.vec_tile.vec = saved_; }
  /// The tile for [L, m, k] intermediates (k the innermost).
  void use_3d(int64_t k) { r_.vec_tile.vec = {rows_, std::max<int64_t>(1, cols_ / k), k}; }
  /// The tile for [pre, n, k, post] intermediates.
  void use_4d(int64_t k) { r_.vec_tile.vec = {rows_, 1, k, cols_}; }
  void use_2d() { r_.vec_tile.vec = {rows_, cols_}; }
  void use_caller() { r_.vec_tile.vec = saved_; }

private:
  Recorder &r_;
  std::vector<int64_t> saved_;
  int64_t rows_ = 1, cols_ = 1;
};

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

} // namespace

// ---- softmax family ------------------------------------------------------------------------

Tensor softmax(const Tensor &x, int axis, SrcLoc loc) {
  UserOpScope user_op("softmax");
  const char *op = "softmax";
  DataType dt = float_operand(x, op, loc);
  int a = axis_of(x, axis, op, loc);
  Tensor xf = widen(x, loc);
  Tensor e = exp(sub(xf, amax(xf, a, {.keepdim = true}, loc), loc), loc);
  return narrow(div(e, sum(e, a, {.keepdim = true}, loc), loc), dt, loc);
}

Tensor log_softmax(const Tensor &x, int axis, SrcLoc loc) {
  UserOpScope user_op("log_softmax");
  const char *op = "log_softmax";
  DataType dt = float_operand(x, op, loc);
  int a = axis_of(x, axis, op, loc);
  Tensor xf = widen(x, loc);
  Tensor xm = sub(xf, amax(xf, a, {.keepdim = true}, loc), loc);
  Tensor lse = log(sum(exp(xm, loc), a, {.keepdim = true}, loc), loc);
  return narrow(sub(xm, lse, loc), dt, loc);
}

Tensor logsumexp(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  UserOpScope user_op("logsumexp");
  const char *op = "logsumexp";
  DataType dt = float_operand(x, op, loc);
  int a = axis_of(x, axis, op, loc);
  Tensor xf = widen(x, loc);
  Tensor m = amax(xf, a, {.keepdim = true}, loc);
  // An infinite max would make x - m NaN (-inf - -inf, inf - inf): shift by 0 instead, which
  // gives -inf for a row of -inf (and for an empty row) and +inf for a row with +inf.
  Tensor m0 = where(isinf(m, loc), 0.0, m, loc);
  Tensor s = sum(exp(sub(xf, m0, loc), loc), a, {.keepdim = true}, loc);
  Tensor y = add(log(s, loc), m0, loc);
  if (!opts.keepdim)
    y = squeeze(y, {a}, loc);
  return narrow(y, dt, loc);
}

// ---- normalizations ------------------------------------------------------------------------

namespace {
/// An affine parameter of a normalization: x's dtype and exactly the normalized dims.
Tensor norm_param(const std::optional<Tensor> &p, const char *what, const Value &x, size_t begin,
                  const char *op, const SrcLoc &loc) {
  Value v = operand(*p, op, loc);
  if (v.dtype != x.dtype)
    throw DTypeError(loc, op,
                     fmt::format("{} has dtype {}, expected {} (the input's)", what, name(v.dtype),
                                 name(x.dtype)));
  std::vector<SymbolicScalar> want(x.shape.begin() + static_cast<std::ptrdiff_t>(begin),
                                   x.shape.end());
  if (!same_shape(v.shape, want))
    throw ShapeError(loc, op,
                     fmt::format("{} has shape {}, expected {} (the normalized dims)", what,
                                 str(v.shape), str(want)));
  return widen(*p, loc);
}
} // namespace

Tensor layer_norm(const Tensor &x, int begin_axis, LayerNormOptions opts, SrcLoc loc) {
  UserOpScope user_op("layer_norm");
  const char *op = "layer_norm";
  DataType dt = float_operand(x, op, loc);
  Value v = operand(x, op, loc);
  int b = norm_axis(begin_axis, v.shape.size(), op, loc, "begin_axis");
  check_eps(opts.eps, "eps", op, loc);
  Tensor w = opts.weight ? norm_param(opts.weight, "weight", v, b, op, loc) : Tensor();
  Tensor bias = opts.bias ? norm_param(opts.bias, "bias", v, b, op, loc) : Tensor();
  std::vector<int> axes;
  for (int d = b; d < static_cast<int>(v.shape.size()); ++d)
    axes.push_back(d);
  Tensor xf = widen(x, loc);
  Tensor d = sub(xf, mean(xf, axes, {.keepdim = true}, loc), loc);
  Tensor var = mean(mul(d, d, loc), axes, {.keepdim = true}, loc);
  Tensor y = mul(d, rsqrt(add(var, opts.eps, loc), loc), loc);
  if (opts.weight)
    y = mul(y, w, loc);
  if (opts.bias)
    y = add(y, bias, loc);
  return narrow(y, dt, loc);
}

Tensor rms_norm(const Tensor &x, RmsNormOptions opts, SrcLoc loc) {
  UserOpScope user_op("rms_norm");
  const char *op = "rms_norm";
  DataType dt = float_operand(x, op, loc);
  Value v = operand(x, op, loc);
  check_eps(opts.epsilon, "epsilon", op, loc);
  Tensor g =
      opts.gamma ? norm_param(opts.gamma, "gamma", v, v.shape.size() - 1, op, loc) : Tensor();
  Tensor xf = widen(x, loc);
  Tensor ms = mean(mul(xf, xf, loc), -1, {.keepdim = true}, loc);
  Tensor y = mul(xf, rsqrt(add(ms, opts.epsilon, loc), loc), loc);
  if (opts.gamma)
    y = mul(y, g, loc);
  return narrow(y, dt, loc);
}

Tensor l2_normalize(const Tensor &x, int axis, double epsilon, SrcLoc loc) {
  UserOpScope user_op("l2_normalize");
  const char *op = "l2_normalize";
  DataType dt = float_operand(x, op, loc);
  int a = axis_of(x, axis, op, loc);
  check_eps(epsilon, "epsilon", op, loc);
  Tensor xf = widen(x, loc);
  Tensor s = sum(mul(xf, xf, loc), a, {.keepdim = true}, loc);
  return narrow(div(xf, sqrt(maximum(s, epsilon, loc), loc), loc), dt, loc);
}

// ---- losses --------------------------------------------------------------------------------

Tensor sigmoid_cross_entropy_with_logits(const Tensor &logits, const Tensor &labels, SrcLoc loc) {
  UserOpScope user_op("sigmoid_cross_entropy_with_logits");
  const char *op = "sigmoid_cross_entropy_with_logits";
  DataType dt = binary_dtype(logits, labels, true, op, loc);
  Tensor x = widen(logits, loc), z = widen(labels, loc);
  Tensor y =
      add(sub(relu(x, loc), mul(x, z, loc), loc), log1p(exp(neg(abs(x, loc), loc), loc), loc), loc);
  return narrow(y, dt, loc);
}

SoftmaxCrossEntropy softmax_cross_entropy_with_logits(const Tensor &logits, const Tensor &labels,
                                                      SrcLoc loc) {
  UserOpScope user_op("softmax_cross_entropy_with_logits");
  const char *op = "softmax_cross_entropy_with_logits";
  DataType dt = binary_dtype(logits, labels, true, op, loc);
  if (!same_shape(logits.shape(), labels.shape()))
    throw ShapeError(loc, op,
                     "logits " + str(logits.shape()) + " and labels " + str(labels.shape()) +
                         " must have the same shape");
  Tensor x = widen(logits, loc), z = widen(labels, loc);
  Tensor xm = sub(x, amax(x, -1, {.keepdim = true}, loc), loc);
  Tensor e = exp(xm, loc);
  Tensor s = sum(e, -1, {.keepdim = true}, loc);
  Tensor loss = sum(mul(z, sub(log(s, loc), xm, loc), loc), -1, {}, loc);
  Tensor backprop = sub(div(e, s, loc), z, loc);
  return {narrow(loss, dt, loc), narrow(backprop, dt, loc)};
}

// ---- dropout -------------------------------------------------------------------------------

Tensor dropout_gen_mask(const std::vector<SymbolicScalar> &shape, double p, uint64_t key,
                        uint64_t counter, SrcLoc loc) {
  UserOpScope user_op("dropout_gen_mask");
  const char *op = "dropout_gen_mask";
  Recorder::current(op, loc);
  check_p(p, op, loc);
  if (shape.empty() || shape.size() > 4)
    throw ShapeError(loc, op, fmt::format("expected rank 1 to 4, got {}", shape.size()));
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d].is_concrete() && shape[d].concrete() <= 0)
      throw ShapeError(loc, op, fmt::format("dim {} must be > 0, got {}", d, shape[d].concrete()));
  Tensor u = uniform(shape, key, counter, DT_FP32, {}, loc);
  // Compared in fp32: keep u >= fl(p), so P(keep) = 1 - p up to the 2^-24 grid of u.
  return ge(u, static_cast<double>(static_cast<float>(p)), loc);
}

Tensor dropout_do_mask(const Tensor &x, const Tensor &mask, double p, SrcLoc loc) {
  UserOpScope user_op("dropout_do_mask");
  const char *op = "dropout_do_mask";
  DataType dt = float_operand(x, op, loc);
  Value m = operand(mask, op, loc);
  if (m.dtype != DT_BOOL)
    throw DTypeError(loc, op, "mask has dtype " + name(m.dtype) + ", expected DT_BOOL");
  check_broadcast(x.shape(), m.shape, op, loc);
  check_p(p, op, loc);
  if (p == 1) // every element dropped, whatever the mask says
    return where(logical_and(mask, 0, loc), x, 0.0, loc);
  Tensor kept = narrow(mul(widen(x, loc), 1.0 / (1.0 - p), loc), dt, loc);
  return where(mask, kept, 0.0, loc);
}

Tensor dropout(const Tensor &x, double p, uint64_t key, uint64_t counter, SrcLoc loc) {
  UserOpScope user_op("dropout");
  const char *op = "dropout";
  float_operand(x, op, loc);
  check_p(p, op, loc);
  if (p == 0)
    return clone(x, loc);
  return dropout_do_mask(x, dropout_gen_mask(x.shape(), p, key, counter, loc), p, loc);
}

// ---- bias, activations ---------------------------------------------------------------------

Tensor bias_add(const Tensor &x, const Tensor &bias, DataFormat format, SrcLoc loc) {
  UserOpScope user_op("bias_add");
  const char *op = "bias_add";
  Value v = operand(x, op, loc);
  if (v.dtype == DT_BOOL)
    throw DTypeError(loc, op, "arithmetic on DT_BOOL is not defined; cast to an int type");
  same_dtype(x, bias, "bias", op, loc);
  size_t rank = v.shape.size();
  if (rank < 2)
    throw ShapeError(loc, op, fmt::format("x needs rank 2 to 4, got {}", rank));
  size_t c = format == DataFormat::NCHW ? 1 : rank - 1;
  Value b = operand(bias, op, loc);
  if (b.shape.size() != 1 || !b.shape[0].same_as(v.shape[c]))
    throw ShapeError(loc, op,
                     fmt::format("bias has shape {}, expected [{}] (the channel dim {} of x {})",
                                 str(b.shape), v.shape[c].str(), c, str(v.shape)));
  return add(x, channel_view(bias, v, c, loc), loc);
}

Tensor prelu(const Tensor &x, const Tensor &weight, SrcLoc loc) {
  UserOpScope user_op("prelu");
  const char *op = "prelu";
  DataType dt = float_operand(x, op, loc);
  same_dtype(x, weight, "weight", op, loc);
  Value v = operand(x, op, loc);
  Value w = operand(weight, op, loc);
  bool shared = w.shape.size() == 1 && is_one(w.shape[0]);
  bool per_channel = w.shape.size() == 1 && v.shape.size() >= 2 && w.shape[0].same_as(v.shape[1]);
  if (!shared && !per_channel)
    throw ShapeError(loc, op,
                     fmt::format("weight has shape {}, expected [1]{} for x {}", str(w.shape),
                                 v.shape.size() >= 2 ? " or [" + v.shape[1].str() + "]" : "",
                                 str(v.shape)));
  Tensor xf = widen(x, loc);
  Tensor wf = widen(shared ? weight : channel_view(weight, v, 1, loc), loc);
  return narrow(where(lt(xf, 0, loc), mul(wf, xf, loc), xf, loc), dt, loc);
}

// ---- elementwise arithmetic ----------------------------------------------------------------

Tensor div_no_nan(const Operand &a, const Operand &b, SrcLoc loc) {
  UserOpScope user_op("div_no_nan");
  const char *op = "div_no_nan";
  DataType dt = binary_dtype(a, b, false, op, loc);
  if (!b.is_tensor()) {
    double bv = b.scalar->is_int ? static_cast<double>(b.scalar->i) : b.scalar->f;
    if (bv == 0)
      return full_like(a.tensor, 0, dt, loc);
    return div(a, b, loc);
  }
  Tensor zero = eq(b.tensor, 0, loc);
  Tensor q = div(a, where(zero, 1, b.tensor, loc), loc);
  return where(zero, 0, q, loc);
}

Tensor floor_mod(const Operand &a, const Operand &b, SrcLoc loc) {
  UserOpScope user_op("floor_mod");
  binary_dtype(a, b, false, "floor_mod", loc);
  return remainder(a, b, loc);
}

Tensor mod(const Operand &a, const Operand &b, SrcLoc loc) {
  UserOpScope user_op("mod");
  binary_dtype(a, b, false, "mod", loc);
  return fmod(a, b, loc);
}

Tensor ceil_div(const Operand &a, const Operand &b, SrcLoc loc) {
  UserOpScope user_op("ceil_div");
  const char *op = "ceil_div";
  DataType dt = binary_dtype(a, b, false, op, loc);
  if (is_float(dt))
    return narrow(ceil(div(widen(a, loc), widen(b, loc), loc), loc), dt, loc);
  if (!b.is_tensor() && b.scalar->i == 0)
    throw RuntimeError(loc, op, "integer division by a zero scalar");
  Tensor q = div(a, b, loc);
  Tensor r = sub(a, mul(q, b, loc), loc);
  // Round up when the remainder is non-zero and has the divisor's sign (the exact quotient is
  // then positive with a fraction).
  Tensor up;
  if (b.is_tensor())
    up = logical_and(ne(r, 0, loc), eq(lt(r, 0, loc), lt(b.tensor, 0, loc), loc), loc);
  else
    up = b.scalar->i > 0 ? gt(r, 0, loc) : lt(r, 0, loc);
  return where(up, add(q, 1, loc), q, loc);
}

Tensor approximate_equal(const Tensor &a, const Tensor &b, double tolerance, SrcLoc loc) {
  UserOpScope user_op("approximate_equal");
  const char *op = "approximate_equal";
  binary_dtype(a, b, true, op, loc);
  if (std::isnan(tolerance) || tolerance < 0)
    throw ArgumentError(loc, op, fmt::format("tolerance must be >= 0, got {}", tolerance));
  Tensor d = abs(sub(widen(a, loc), widen(b, loc), loc), loc);
  if (d.dtype() == DT_DOUBLE)
    return lt(d, tolerance, loc);
  // Compare in double when the tolerance is not an fp32 value, so |a - b| < tol stays exact.
  return static_cast<double>(static_cast<float>(tolerance)) == tolerance
             ? lt(d, tolerance, loc)
             : lt(cast(d, DT_DOUBLE, loc), tolerance, loc);
}

Tensor greater(const Operand &a, const Operand &b, SrcLoc loc) {
  UserOpScope user_op("greater");
  return gt(a, b, loc);
}

Tensor round(const Tensor &x, int decimals, SrcLoc loc) {
  UserOpScope user_op("round");
  const char *op = "round";
  Value v = operand(x, op, loc);
  DataType dt = v.dtype;
  if (dt == DT_BOOL)
    throw DTypeError(loc, op, "rounding DT_BOOL is not defined; cast to an int type");
  if (decimals == 0)
    return round(x, loc);
  if (is_float(dt)) {
    Tensor xf = widen(x, loc);
    double s = std::pow(10.0, std::abs(decimals));
    Tensor y = decimals > 0 ? div(round(mul(xf, s, loc), loc), s, loc)
                            : mul(round(div(xf, s, loc), loc), s, loc);
    return narrow(y, dt, loc);
  }
  if (decimals > 0)
    return clone(x, loc);
  // Integers to a multiple of s = 10^-decimals, ties to the even multiple: q = floor(x / s),
  // r = x - q s in [0, s); round up when r > s - r, or r == s - r and q is odd. When s does not
  // fit the dtype every |x| < s / 2, so the result is 0.
  double limit = dt == DT_UINT8 ? 255.0 : std::ldexp(1.0, static_cast<int>(bytes_of(dt)) * 8 - 1);
  if (-decimals > 18 || std::pow(10.0, -decimals) >= limit)
    return mul(x, 0, loc);
  int64_t s = 1;
  for (int k = 0; k < -decimals; ++k)
    s *= 10;
  Tensor q = floor_div(x, s, loc);
  Tensor r = sub(x, mul(q, s, loc), loc);
  Tensor half = sub(s, r, loc); // s - r in (0, s]
  Tensor odd = ne(bitwise_and(q, 1, loc), 0, loc);
  Tensor up = logical_or(gt(r, half, loc), logical_and(eq(r, half, loc), odd, loc), loc);
  return mul(where(up, add(q, 1, loc), q, loc), s, loc);
}

Tensor lerp(const Tensor &start, const Tensor &end, const Operand &weight, SrcLoc loc) {
  UserOpScope user_op("lerp");
  const char *op = "lerp";
  DataType dt = binary_dtype(start, end, true, op, loc);
  binary_dtype(start, weight, true, op, loc);
  if (weight.is_tensor())
    check_broadcast(end.shape(), weight.tensor.shape(), op, loc);
  Tensor s = widen(start, loc), e = widen(end, loc);
  Operand w = widen(weight, loc);
  Tensor diff = sub(e, s, loc);
  // PyTorch's two-sided form: exact at both ends (lerp(a, b, 0) = a, lerp(a, b, 1) = b).
  if (!weight.is_tensor()) {
    double wv = weight.scalar->is_int ? static_cast<double>(weight.scalar->i) : weight.scalar->f;
    Tensor y = std::abs(wv) < 0.5 ? add(s, mul(diff, wv, loc), loc)
                                  : sub(e, mul(diff, 1.0 - wv, loc), loc);
    return narrow(y, dt, loc);
  }
  Tensor low = add(s, mul(w, diff, loc), loc);
  Tensor high = sub(e, mul(diff, sub(1.0, w, loc), loc), loc);
  return narrow(where(lt(abs(w.tensor, loc), 0.5, loc), low, high, loc), dt, loc);
}

Tensor addcmul(const Tensor &input, const Tensor &t1, const Tensor &t2, double value, SrcLoc loc) {
  UserOpScope user_op("addcmul");
  const char *op = "addcmul";
  DataType dt = binary_dtype(input, t1, false, op, loc);
  binary_dtype(input, t2, false, op, loc);
  check_broadcast(t1.shape(), t2.shape(), op, loc);
  if (!is_float(dt)) {
    if (value != std::trunc(value) || !std::isfinite(value))
      throw DTypeError(
          loc, op,
          fmt::format("non-integral value {} with integer tensors of dtype {}", value, name(dt)));
    return add(input, mul(mul(t1, t2, loc), ir::trunc_saturate_int64(value), loc), loc);
  }
  Tensor y = add(widen(input, loc), mul(mul(widen(t1, loc), value, loc), widen(t2, loc), loc), loc);
  return narrow(y, dt, loc);
}

Tensor addcdiv(const Tensor &input, const Tensor &t1, const Tensor &t2, double value, SrcLoc loc) {
  UserOpScope user_op("addcdiv");
  const char *op = "addcdiv";
  DataType dt = binary_dtype(input, t1, true, op, loc);
  binary_dtype(input, t2, true, op, loc);
  check_broadcast(t1.shape(), t2.shape(), op, loc);
  Tensor y = add(widen(input, loc), mul(div(widen(t1, loc), widen(t2, loc), loc), value, loc), loc);
  return narrow(y, dt, loc);
}

Tensor expand_exp_dif(const Tensor &a, const Tensor &b, SrcLoc loc) {
  UserOpScope user_op("expand_exp_dif");
  DataType dt = binary_dtype(a, b, true, "expand_exp_dif", loc);
  return narrow(exp(sub(widen(a, loc), widen(b, loc), loc), loc), dt, loc);
}

Tensor axpy(const Tensor &y, const Tensor &x, double alpha, SrcLoc loc) {
  UserOpScope user_op("axpy");
  const char *op = "axpy";
  Value vy = operand(y, op, loc), vx = operand(x, op, loc);
  if (!is_float(vy.dtype))
    throw DTypeError(loc, op, "y: " + float_expected(vy.dtype));
  if (vx.dtype != vy.dtype && !(vy.dtype == DT_FP32 && vx.dtype == DT_FP16))
    throw DTypeError(loc, op,
                     "x has dtype " + name(vx.dtype) + " and y " + name(vy.dtype) +
                         "; expected equal floating dtypes or y DT_FP32 with x DT_FP16");
  if (!std::isfinite(alpha))
    throw ArgumentError(loc, op, fmt::format("alpha must be finite, got {}", alpha));
  bool fits = vx.shape.size() <= vy.shape.size();
  for (size_t i = 1; fits && i <= vx.shape.size(); ++i) {
    const SymbolicScalar &dx = vx.shape[vx.shape.size() - i], &dy = vy.shape[vy.shape.size() - i];
    fits = dx.same_as(dy) || is_one(dx);
  }
  if (!fits)
    throw ShapeError(loc, op,
                     "x " + str(vx.shape) + " does not broadcast to y " + str(vy.shape) +
                         " (y is never broadcast)");
  Tensor xf = vx.dtype == vy.dtype ? widen(x, loc) : cast(x, DT_FP32, loc);
  return narrow(add(widen(y, loc), mul(xf, alpha, loc), loc), vy.dtype, loc);
}

Tensor cast(const Tensor &x, DataType dtype, CastMode mode, SrcLoc loc) {
  UserOpScope user_op("cast");
  const char *op = "cast";
  DataType src = operand(x, op, loc).dtype;
  check_dtype_supported(dtype, op, loc);
  if (!is_float(src) || (!is_int(dtype) && !is_float(dtype)))
    return cast(x, dtype, loc); // int -> any and -> bool: the mode does not apply
  if (is_float(dtype)) {
    bool widening = bytes_of(dtype) > bytes_of(src);
    if (!widening && mode != CastMode::CAST_NONE && mode != CastMode::CAST_RINT)
      throw ArgumentError(loc, op,
                          "only CAST_NONE and CAST_RINT are supported for " + name(src) + " -> " +
                              name(dtype));
    return cast(x, dtype, loc);
  }
  Tensor r;
  switch (mode) {
  case CastMode::CAST_NONE:
  case CastMode::CAST_TRUNC:
    r = x;
    break;
  case CastMode::CAST_RINT:
    r = round(x, loc);
    break;
  case CastMode::CAST_FLOOR:
    r = floor(x, loc);
    break;
  case CastMode::CAST_CEIL:
    r = ceil(x, loc);
    break;
  case CastMode::CAST_ROUND: {
    // Ties away from zero: trunc, plus sign(x) when the dropped fraction is >= 1/2 (exact).
    Tensor t = trunc(x, loc);
    r = where(ge(abs(sub(x, t, loc), loc), 0.5, loc), add(t, copysign(1.0, x, loc), loc), t, loc);
    break;
  }
  case CastMode::CAST_ODD:
    throw ArgumentError(loc, op,
                        "CAST_ODD applies to fp32 -> fp16 only (PyPTO), got " + name(src) + " -> " +
                            name(dtype));
  }
  return cast(r, dtype, loc);
}

// ---- creation and selection ----------------------------------------------------------------

Tensor full_like(const Tensor &x, double value, DataType dtype, SrcLoc loc) {
  UserOpScope user_op("full_like");
  Value v = operand(x, "full_like", loc);
  return full(v.shape, value, dtype == DT_BOTTOM ? v.dtype : dtype, {}, loc);
}
Tensor zeros_like(const Tensor &x, SrcLoc loc) {
  UserOpScope user_op("zeros_like");
  return full_like(x, 0, DT_BOTTOM, loc);
}
Tensor ones_like(const Tensor &x, SrcLoc loc) {
  UserOpScope user_op("ones_like");
  return full_like(x, 1, DT_BOTTOM, loc);
}

namespace {
IndexValue arg_with_value(bool is_max, const Tensor &x, int axis, ReduceOptions opts,
                          const SrcLoc &loc) {
  const char *op = is_max ? "argmax_with_value" : "argmin_with_value";
  Value v = operand(x, op, loc);
  if (v.dtype == DT_BOOL)
    throw DTypeError(loc, op, "reductions over DT_BOOL are not defined; cast to an int type");
  norm_axis(axis, v.shape.size(), op, loc);
  if (is_max)
    return {argmax(x, axis, opts, loc), amax(x, axis, opts, loc)};
  return {argmin(x, axis, opts, loc), amin(x, axis, opts, loc)};
}
} // namespace

IndexValue argmax_with_value(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  UserOpScope user_op("argmax_with_value");
  return arg_with_value(true, x, axis, opts, loc);
}
IndexValue argmin_with_value(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  UserOpScope user_op("argmin_with_value");
  return arg_with_value(false, x, axis, opts, loc);
}

Tensor fillpad(const Tensor &x, double value, SrcLoc loc) {
  UserOpScope user_op("fillpad");
  const char *op = "fillpad";
  Value v = operand(x, op, loc);
  if (!is_float(v.dtype) && (!std::isfinite(value) || value != std::trunc(value)))
    throw DTypeError(
        loc, op,
        fmt::format("non-integral value {} for a tensor of dtype {}", value, name(v.dtype)));
  // A pad of nothing: pad copies the valid region and writes `value` everywhere else.
  return pad(x, {0, 0}, value, loc);
}

Tensor gathermask(const Tensor &x, int pattern_mode, SrcLoc loc) {
  UserOpScope user_op("gathermask");
  const char *op = "gathermask";
  Value v = operand(x, op, loc);
  if (pattern_mode < 1 || pattern_mode > 7)
    throw ArgumentError(loc, op, fmt::format("pattern_mode must be 1..7, got {}", pattern_mode));
  if (pattern_mode == 7)
    return clone(x, loc);
  auto dims = static_dims(v, op, loc);
  int64_t k = pattern_mode <= 2 ? 2 : 4;
  int64_t j = pattern_mode <= 2 ? pattern_mode - 1 : pattern_mode - 3;
  int64_t n = dims.back();
  if (n % k != 0)
    throw ShapeError(
        loc, op,
        fmt::format("pattern_mode {} needs a last dim that is a multiple of {}, got {}",
                    pattern_mode, k, n));
  Tensor picked;
  {
    RowsTile tile(dims.size(), op, loc);
    picked = pick_every(as_rows(x, dims, loc), lead_of(dims), n, k, {j}, tile, loc)[0];
  }
  // Valid: the leading dims keep x's; on the last, the picked positions j, j + k, ... below the
  // valid extent.
  std::vector<SymbolicScalar> valid = v.valid;
  valid.back() = (valid.back() - j + (k - 1)) / k;
  std::vector<int64_t> out = dims;
  out.back() = n / k;
  if (same_shape(picked.shape(), sym(out))) // a view sets the valid extent without a copy
    return view(picked, out, std::vector<SymbolicScalar>(out.size(), 0), {.valid_shape = valid},
                loc);
  return reshape(picked, sym(out), {.valid_shape = valid}, loc);
}

namespace {
/// [L, 2n] rows -> their even and odd elements, each as [L, n].
std::pair<Tensor, Tensor> even_odd(const Tensor &rows2, int64_t lead, int64_t n2, RowsTile &tile,
                                   const SrcLoc &loc) {
  auto parts = pick_every(rows2, lead, n2, 2, {0, 1}, tile, loc);
  return {parts[0], parts[1]};
}

std::pair<Tensor, Tensor> reshaped_pair(const std::pair<Tensor, Tensor> &p,
                                        const std::vector<int64_t> &dims, const SrcLoc &loc) {
  return {reshaped(p.first, dims, loc), reshaped(p.second, dims, loc)};
}

/// The static dims of a and b, which must be equal with an even last dim.
std::vector<int64_t> pair_dims(const Tensor &a, const Tensor &b, const char *op,
                               const SrcLoc &loc) {
  same_dtype(a, b, "other", op, loc);
  auto da = static_dims(operand(a, op, loc), op, loc);
  auto db = static_dims(operand(b, op, loc), op, loc);
  if (da != db)
    throw ShapeError(loc, op,
                     "input " + str(sym(da)) + " and other " + str(sym(db)) +
                         " must have the same shape");
  if (da.back() % 2 != 0)
    throw ShapeError(loc, op, fmt::format("the last dim must be even, got {}", da.back()));
  return da;
}
} // namespace

std::pair<Tensor, Tensor> interleave(const Tensor &a, const Tensor &b, SrcLoc loc) {
  UserOpScope user_op("interleave");
  const char *op = "interleave";
  auto dims = pair_dims(a, b, op, loc);
  int64_t lead = lead_of(dims), n = dims.back();
  std::pair<Tensor, Tensor> halves;
  {
    RowsTile tile(dims.size(), op, loc);
    Tensor ra = as_rows(a, dims, loc), rb = as_rows(b, dims, loc);
    // [L, n, 2] holds the stream a0 b0 a1 b1 ... row-major; its halves are the two results.
    tile.use_3d(2);
    Tensor pairs = stack({ra, rb}, 2, loc);
    tile.use_2d();
    Tensor stream = reshape(pairs, {lead, 2 * n}, {}, loc);
    halves = {view(stream, {lead, n}, {0, 0}, {}, loc), view(stream, {lead, n}, {0, n}, {}, loc)};
  }
  return reshaped_pair(halves, dims, loc);
}

std::pair<Tensor, Tensor> deinterleave(const Tensor &a, const Tensor &b, SrcLoc loc) {
  UserOpScope user_op("deinterleave");
  const char *op = "deinterleave";
  auto dims = pair_dims(a, b, op, loc);
  int64_t lead = lead_of(dims), n = dims.back();
  std::pair<Tensor, Tensor> parts;
  {
    RowsTile tile(dims.size(), op, loc);
    Tensor stream = concat({as_rows(a, dims, loc), as_rows(b, dims, loc)}, 1, loc);
    parts = even_odd(stream, lead, 2 * n, tile, loc);
  }
  return reshaped_pair(parts, dims, loc);
}

std::pair<Tensor, Tensor> deinterleave(const Tensor &a, SrcLoc loc) {
  UserOpScope user_op("deinterleave");
  const char *op = "deinterleave";
  auto dims = static_dims(operand(a, op, loc), op, loc);
  if (dims.back() % 2 != 0)
    throw ShapeError(loc, op, fmt::format("the last dim must be even, got {}", dims.back()));
  int64_t n2 = dims.back();
  auto out = dims;
  out.back() = n2 / 2;
  std::pair<Tensor, Tensor> parts;
  {
    RowsTile tile(dims.size(), op, loc);
    parts = even_odd(as_rows(a, dims, loc), lead_of(dims), n2, tile, loc);
  }
  return reshaped_pair(parts, out, loc);
}

Tensor strided_slice(const Tensor &x, const std::vector<int64_t> &begin,
                     const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                     SrcLoc loc) {
  UserOpScope user_op("strided_slice");
  const char *op = "strided_slice";
  Value v = operand(x, op, loc);
  auto dims = static_dims(v, op, loc);
  size_t r = dims.size();
  if (begin.size() != r || end.size() != r || strides.size() != r)
    throw ShapeError(loc, op,
                     fmt::format("begin, end and strides need {} entries (the rank of x), got {}, "
                                 "{} and {}",
                                 r, begin.size(), end.size(), strides.size()));
  std::vector<int64_t> start(r), count(r), step(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t s = strides[d];
    if (s <= 0)
      throw ArgumentError(loc, op,
                          fmt::format("strides must be > 0 (negative strides are not supported), "
                                      "got {} for dim {}",
                                      s, d));
    auto clamped = [&](int64_t i) {
      return std::clamp<int64_t>(i < 0 ? i + dims[d] : i, 0, dims[d]);
    };
    int64_t b = clamped(begin[d]), e = clamped(end[d]);
    count[d] = e > b ? 1 + (e - b - 1) / s : 0; // ceil((e - b) / s) without overflow
    if (count[d] == 0)
      throw ShapeError(
          loc, op,
          fmt::format("dim {}: [{}, {}) with stride {} of a dim of {} selects nothing; "
                      "ptojit has no empty tensors",
                      d, begin[d], end[d], s, dims[d]));
    start[d] = b;
    // One pick needs no stride; with more, s < e - b <= the dim, so count * s stays below
    // twice the dim (no overflow).
    step[d] = count[d] == 1 ? 1 : s;
  }
  // The window from `start` holding every picked element: count * stride elements, or fewer at
  // the end of a dim (the missing tail is padded with zeros that are never picked).
  std::vector<int64_t> cur(r);
  for (size_t d = 0; d < r; ++d)
    cur[d] = step[d] == 1 ? count[d] : std::min(count[d] * step[d], dims[d] - start[d]);
  Tensor y = view(x, cur, sym(start), {}, loc);
  RowsTile tile(r, op, loc);
  for (size_t d = 0; d < r; ++d) {
    int64_t s = step[d], n = count[d];
    if (s == 1)
      continue;
    tile.use_caller();
    if (cur[d] < n * s) {
      auto pad_shape = sym(cur);
      pad_shape[d] = SymbolicScalar(n * s - cur[d]);
      y = concat({y, full(pad_shape, 0.0, v.dtype, {}, loc)}, static_cast<int>(d), loc);
      cur[d] = n * s;
    }
    // [pre, n, s, post]: element 0 of each group of s along dim d.
    int64_t pre = 1, post = 1;
    for (size_t e = 0; e < d; ++e)
      pre *= cur[e];
    for (size_t e = d + 1; e < r; ++e)
      post *= cur[e];
    tile.use_4d(s);
    Tensor groups = reshape(y, {pre, n, s, post}, {}, loc);
    Tensor firsts = view(groups, {pre, n, 1, post}, {0, 0, 0, 0}, {}, loc);
    tile.use_caller();
    cur[d] = n;
    y = reshape(firsts, sym(cur), {}, loc);
  }
  return y;
}

// ---- quantization --------------------------------------------------------------------------

namespace {
/// scale / zero_points of x along `axis`, unsqueezed to broadcast over x (checked).
Tensor quant_param(const Tensor &p, const char *what, const Value &x, int axis, const char *op,
                   const SrcLoc &loc) {
  Value v = operand(p, op, loc);
  if (v.dtype != DT_FP32)
    throw DTypeError(loc, op,
                     fmt::format("{} has dtype {}, expected DT_FP32", what, name(v.dtype)));
  std::vector<SymbolicScalar> want;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (static_cast<int>(d) != axis)
      want.push_back(x.shape[d]);
  if (want.empty())
    want.emplace_back(1);
  if (!same_shape(v.shape, want))
    throw ShapeError(loc, op,
                     fmt::format("{} has shape {}, expected {} (x {} without axis {})", what,
                                 str(v.shape), str(want), str(x.shape), axis));
  return x.shape.size() == 1 ? p : unsqueeze(p, axis, loc);
}

int quant_axis(const Value &x, int axis, const char *op, const SrcLoc &loc) {
  int rank = static_cast<int>(x.shape.size());
  int a = norm_axis(axis, x.shape.size(), op, loc);
  if (a != rank - 1 && (a != rank - 2 || rank < 2))
    throw ShapeError(loc, op,
                     fmt::format("axis must be one of the last two dims (-1 or -2), got {} for "
                                 "rank {}",
                                 axis, rank));
  return a;
}
} // namespace

Tensor quantize(const Tensor &x, const Tensor &scale, DataType otype, int axis,
                std::optional<Tensor> zero_points, SrcLoc loc) {
  UserOpScope user_op("quantize");
  const char *op = "quantize";
  Value v = operand(x, op, loc);
  if (v.dtype != DT_FP32)
    throw DTypeError(loc, op, "x has dtype " + name(v.dtype) + ", expected DT_FP32");
  if (otype != DT_INT8 && otype != DT_UINT8)
    throw DTypeError(loc, op, "otype must be DT_INT8 or DT_UINT8, got " + name(otype));
  int a = quant_axis(v, axis, op, loc);
  Tensor y = mul(x, quant_param(scale, "scale", v, a, op, loc), loc);
  if (zero_points)
    y = add(y, quant_param(*zero_points, "zero_points", v, a, op, loc), loc);
  return cast(round(y, loc), otype, loc);
}

Tensor dequantize(const Tensor &x, const Tensor &scale, DataType otype, int axis,
                  std::optional<Tensor> zero_points, SrcLoc loc) {
  UserOpScope user_op("dequantize");
  const char *op = "dequantize";
  Value v = operand(x, op, loc);
  if (v.dtype != DT_INT8 && v.dtype != DT_INT16 && v.dtype != DT_UINT8)
    throw DTypeError(loc, op,
                     "x has dtype " + name(v.dtype) + ", expected DT_INT8, DT_INT16 or DT_UINT8");
  if (otype != DT_FP32)
    throw DTypeError(loc, op, "otype must be DT_FP32, got " + name(otype));
  int a = quant_axis(v, axis, op, loc);
  Tensor y = cast(x, DT_FP32, loc);
  if (zero_points)
    y = add(y, quant_param(*zero_points, "zero_points", v, a, op, loc), loc);
  return mul(y, quant_param(scale, "scale", v, a, op, loc), loc);
}

namespace experimental {

namespace {
Value fp32_2d(const Tensor &t, const char *what, const char *op, const SrcLoc &loc) {
  Value v = operand(t, op, loc);
  if (v.dtype != DT_FP32)
    throw DTypeError(loc, op,
                     fmt::format("{} has dtype {}, expected DT_FP32", what, name(v.dtype)));
  if (v.shape.size() != 2)
    throw ShapeError(loc, op, fmt::format("{} must have rank 2, got {}", what, str(v.shape)));
  return v;
}
} // namespace

OnlineSoftmax online_softmax(const Tensor &scores, double scale, SrcLoc loc) {
  UserOpScope user_op("online_softmax");
  const char *op = "online_softmax";
  fp32_2d(scores, "scores", op, loc);
  if (!std::isfinite(scale))
    throw ArgumentError(loc, op, fmt::format("scale must be finite, got {}", scale));
  Tensor s = mul(scores, scale, loc);
  Tensor m = amax(s, 0, {.keepdim = true}, loc);
  Tensor e = exp(sub(s, m, loc), loc);
  return {cast(e, DT_BF16, loc), m, sum(e, 0, {.keepdim = true}, loc), Tensor()};
}

OnlineSoftmax online_softmax_update(const Tensor &previous_max, const Tensor &previous_sum,
                                    const Tensor &previous_output, const Tensor &current_max,
                                    const Tensor &current_sum, const Tensor &current_output,
                                    SrcLoc loc) {
  UserOpScope user_op("online_softmax_update");
  const char *op = "online_softmax_update";
  Value po = fp32_2d(previous_output, "previous_output", op, loc);
  Value co = fp32_2d(current_output, "current_output", op, loc);
  if (!same_shape(po.shape, co.shape))
    throw ShapeError(loc, op,
                     "current_output " + str(co.shape) + " differs from previous_output " +
                         str(po.shape));
  std::vector<SymbolicScalar> row{SymbolicScalar(1), po.shape[1]};
  const std::pair<const Tensor *, const char *> stats[] = {{&previous_max, "previous_max"},
                                                           {&previous_sum, "previous_sum"},
                                                           {&current_max, "current_max"},
                                                           {&current_sum, "current_sum"}};
  for (const auto &[t, what] : stats) {
    Value v = fp32_2d(*t, what, op, loc);
    if (!same_shape(v.shape, row))
      throw ShapeError(loc, op,
                       fmt::format("{} has shape {}, expected {}", what, str(v.shape), str(row)));
  }
  Tensor m = maximum(previous_max, current_max, loc);
  // exp(block max - m), but 0 for a block whose max is -inf (-inf - -inf would be NaN).
  auto factor = [&](const Tensor &bm) {
    return where(eq(bm, -INFINITY, loc), 0.0, exp(sub(bm, m, loc), loc), loc);
  };
  Tensor a = factor(previous_max), c = factor(current_max);
  Tensor s = add(mul(a, previous_sum, loc), mul(c, current_sum, loc), loc);
  Tensor out = add(mul(a, previous_output, loc), mul(c, current_output, loc), loc);
  return {Tensor(), m, s, out};
}

Tensor transposed_batchmatmul(const Tensor &a, const Tensor &b, DataType out_dtype, SrcLoc loc) {
  UserOpScope user_op("transposed_batchmatmul");
  const char *op = "transposed_batchmatmul";
  Value va = operand(a, op, loc), vb = operand(b, op, loc);
  if (va.shape.size() != 3 || vb.shape.size() != 3)
    throw ShapeError(loc, op,
                     "a [M, B, K] and b [B, K, N] must have rank 3, got " + str(va.shape) +
                         " and " + str(vb.shape));
  if (!va.shape[1].same_as(vb.shape[0]) || !va.shape[2].same_as(vb.shape[1]))
    throw ShapeError(loc, op,
                     "a " + str(va.shape) + " [M, B, K] and b " + str(vb.shape) +
                         " [B, K, N] disagree on B or K");
  Tensor c = matmul(permute(a, {1, 0, 2}, loc), b, out_dtype, {}, loc);
  return permute(c, {1, 0, 2}, loc);
}

} // namespace experimental
} // namespace pto
