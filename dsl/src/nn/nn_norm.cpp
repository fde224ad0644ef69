// nn_norm.cpp - Tracing of the softmax family, normalizations, losses, dropout,
// bias_add and prelu (nn_ops.h). Each checks its operands first (so errors name the
// composite, not an inner op), then traces existing ops.
#include "pto/nn_ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"

#include "nn/nn_common.h"
#include "trace_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace pto {

using ir::Recorder;
using ir::Value;
using namespace trace;
using namespace nn;

// ---- softmax family ------------------------------------------------------------------------

Tensor softmax(const Tensor &x, int axis, SrcLoc loc) {
  UserOpScope user_op("softmax");
  const char *op = "softmax";
  DataType dt = float_operand(x, op, loc);
  int a = axis_of(x, axis, op, loc);
  Tensor xf = widen(x, loc);
  Tensor e = exp(sub(xf, amax(xf, a, {.keepdim = true}, loc), loc), loc);
  // One division per row, then a multiply per element: vdivps costs several times a vmulps, and
  // the result stays within 1.5 ulp of the quotient (oneDNN computes it the same way).
  return narrow(mul(e, reciprocal(sum(e, a, {.keepdim = true}, loc), loc), loc), dt, loc);
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
Tensor norm_param(const Tensor &p, const char *what, const Value &x, size_t begin, const char *op,
                  const SrcLoc &loc) {
  Value v = operand(p, op, loc);
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
  return widen(p, loc);
}
} // namespace

Tensor layer_norm(const Tensor &x, int begin_axis, LayerNormOptions opts, SrcLoc loc) {
  UserOpScope user_op("layer_norm");
  const char *op = "layer_norm";
  DataType dt = float_operand(x, op, loc);
  Value v = operand(x, op, loc);
  int b = norm_axis(begin_axis, v.shape.size(), op, loc, "begin_axis");
  check_eps(opts.eps, "eps", op, loc);
  Tensor w = opts.weight ? norm_param(*opts.weight, "weight", v, b, op, loc) : Tensor();
  Tensor bias = opts.bias ? norm_param(*opts.bias, "bias", v, b, op, loc) : Tensor();
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
      opts.gamma ? norm_param(*opts.gamma, "gamma", v, v.shape.size() - 1, op, loc) : Tensor();
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
  if (format != DataFormat::NCHW && format != DataFormat::NHWC) // a cast integer
    throw ArgumentError(
        loc, op,
        fmt::format("format must be NCHW or NHWC, got the value {}", static_cast<int>(format)));
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

} // namespace pto
