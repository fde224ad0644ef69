// nn_arith.cpp - Tracing of the elementwise arithmetic composites of nn_ops.h
// (div_no_nan, floor_mod, ceil_div, round, lerp, addcmul, axpy, cast, ...). Each checks its
// operands first (so errors name the composite, not an inner op), then traces existing ops.
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
    check_int_element(value, dt, op, loc); // the value as written, before it becomes an int64
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

} // namespace pto
