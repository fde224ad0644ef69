// nn_quant.cpp - Tracing of the quantization composites of nn_ops.h. Each checks its operands first
// (so errors name the composite, not an inner op), then traces existing ops.
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
