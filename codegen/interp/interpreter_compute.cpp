// interpreter_compute.cpp - The reference interpreter's compute ops: elementwise unary and
// binary ops, reductions, full and assemble, with their scalar numerics (see interpreter.cpp).
#include "interp/interpreter.h"

#include "passes/tile_expand.h"
#include "pto/error.h"
#include "pto/half.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pto::codegen::interp {

using ir::Op;
using ir::OpKind;

namespace {

int64_t int_min(DataType dt) {
  switch (dt) {
  case DT_INT8: return std::numeric_limits<int8_t>::min();
  case DT_INT16: return std::numeric_limits<int16_t>::min();
  case DT_INT32: return std::numeric_limits<int32_t>::min();
  case DT_UINT8: return 0;
  default: return std::numeric_limits<int64_t>::min();
  }
}
int64_t int_max(DataType dt) {
  switch (dt) {
  case DT_INT8: return std::numeric_limits<int8_t>::max();
  case DT_INT16: return std::numeric_limits<int16_t>::max();
  case DT_INT32: return std::numeric_limits<int32_t>::max();
  case DT_UINT8: return std::numeric_limits<uint8_t>::max();
  default: return std::numeric_limits<int64_t>::max();
  }
}

// ---------------------------------------------------------------------------------------------
// Scalar op semantics.

// IEEE 754 maximum / minimum, as lower_elementwise.cpp fp_max_min: NaN propagates, -0 < +0.
template <class C> C nan_max(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class C> C nan_min(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 (as lower_elementwise.cpp sigmoid).
template <class C> C sigmoid_f(C x) {
  const C e = std::exp(-std::fabs(x));
  return (x < C(0) ? e : C(1)) / (C(1) + e);
}

/// x/2 erfc(-x / sqrt 2) with the tail correction of lower_elementwise.cpp gelu.
template <class C> C gelu_f(C x) {
  constexpr bool dbl = sizeof(C) == 8;
  const C c_hi = dbl ? C(-0x1.6a09e667f3bcdp-1) : C(-0x1.6a09e6p-1f);
  const C c_lo = dbl ? C(0x1.bdd3413b26456p-55) : C(-0x1.9fcef4p-27f);
  const C z = x * c_hi;
  const C d = std::fma(x, c_lo, std::fma(x, c_hi, -z));
  const C g = C(2) * z + C(1) / (z + C(0.9));
  const C corr = z > C(0) && z < C(64) ? std::fma(-g, d, C(1)) : C(1);
  return C(0.5) * x * std::erfc(z) * corr;
}

/// A floating unary op in compute type C (float for fp16/bf16/fp32, double for DT_DOUBLE).
/// Bool results are 1 or 0. Composite activations are computed in C and rounded once.
template <class C> C unary_f(const Op &op, C x) {
  const OpKind k = op.kind;
  const C attr = op.scalar ? static_cast<C>(op.scalar->f) : C(0);
  switch (k) {
  case OpKind::Neg: return -x;
  case OpKind::Abs: return std::fabs(x);
  case OpKind::Exp: return std::exp(x);
  case OpKind::Log: return std::log(x);
  case OpKind::Sqrt: return std::sqrt(x);
  case OpKind::Rsqrt: return C(1) / std::sqrt(x);
  case OpKind::Reciprocal: return C(1) / x;
  case OpKind::Exp2: return std::exp2(x);
  case OpKind::Expm1: return std::expm1(x);
  case OpKind::Log2: return std::log2(x);
  case OpKind::Log10: return std::log10(x);
  case OpKind::Log1p: return std::log1p(x);
  case OpKind::Sin: return std::sin(x);
  case OpKind::Cos: return std::cos(x);
  case OpKind::Tan: return std::tan(x);
  case OpKind::Asin: return std::asin(x);
  case OpKind::Acos: return std::acos(x);
  case OpKind::Atan: return std::atan(x);
  case OpKind::Sinh: return std::sinh(x);
  case OpKind::Cosh: return std::cosh(x);
  case OpKind::Tanh: return std::tanh(x);
  case OpKind::Asinh: return std::asinh(x);
  case OpKind::Acosh: return std::acosh(x);
  case OpKind::Atanh: return std::atanh(x);
  case OpKind::Erf: return std::erf(x);
  case OpKind::Erfc: return std::erfc(x);
  case OpKind::Cbrt: return std::cbrt(x);
  case OpKind::Sigmoid: return sigmoid_f(x);
  case OpKind::Softplus: return x > C(20) ? x : std::log1p(std::exp(x));
  case OpKind::Softsign: return x / (C(1) + std::fabs(x));
  case OpKind::Elu: return x > C(0) ? x : attr * std::expm1(x);
  case OpKind::Gelu: return gelu_f(x);
  case OpKind::GeluTanh: {
    C u = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
    return x * sigmoid_f(C(2) * u);
  }
  case OpKind::Lrelu: return x >= C(0) ? x : x * attr;
  case OpKind::Relu: return nan_max(x, C(0));
  case OpKind::Relu6: return nan_min(nan_max(x, C(0)), C(6));
  case OpKind::Sign: return x > C(0) ? C(1) : x < C(0) ? C(-1) : x;
  case OpKind::Signbit: return std::signbit(x) ? C(1) : C(0);
  case OpKind::Ceil: return std::ceil(x);
  case OpKind::Floor: return std::floor(x);
  case OpKind::Trunc: return std::trunc(x);
  case OpKind::Round: return std::nearbyint(x); // the default rounding mode: ties to even
  case OpKind::IsFinite: return std::isfinite(x) ? C(1) : C(0);
  case OpKind::IsNan: return std::isnan(x) ? C(1) : C(0);
  case OpKind::IsInf: return std::isinf(x) ? C(1) : C(0);
  case OpKind::LogicalNot: return x == C(0) ? C(1) : C(0);
  case OpKind::Square: return x * x;
  case OpKind::Clone: return x;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a floating unary op");
}

/// PyTorch's div_floor_floating: floor(a / b) computed from the exact fmod.
template <class C> C floor_div_f(C a, C b) {
  if (b == C(0))
    return a / b;
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0)))
    div -= C(1);
  if (div == C(0))
    return std::copysign(C(0), a / b);
  C fl = std::floor(div);
  return div - fl > C(0.5) ? fl + C(1) : fl;
}

/// A floating binary op in compute type C; bool results are 1 or 0.
template <class C> C binary_f(OpKind k, C a, C b) {
  auto b01 = [](bool v) { return v ? C(1) : C(0); };
  switch (k) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  case OpKind::Maximum: return nan_max(a, b);
  case OpKind::Minimum: return nan_min(a, b);
  case OpKind::Pow: return std::pow(a, b);
  case OpKind::Hypot: return std::hypot(a, b);
  case OpKind::Atan2: return std::atan2(a, b);
  case OpKind::Copysign: return std::copysign(a, b);
  case OpKind::Fmod: return std::fmod(a, b);
  case OpKind::Remainder: {
    C mod = std::fmod(a, b);
    return mod != C(0) && (b < C(0)) != (mod < C(0)) ? mod + b : mod;
  }
  case OpKind::FloorDiv: return floor_div_f(a, b);
  case OpKind::LogicalAnd: return b01(a != C(0) && b != C(0));
  case OpKind::LogicalOr: return b01(a != C(0) || b != C(0));
  case OpKind::LogicalXor: return b01((a != C(0)) != (b != C(0)));
  case OpKind::Eq: return b01(a == b);
  case OpKind::Ne: return b01(a != b);
  case OpKind::Lt: return b01(a < b);
  case OpKind::Le: return b01(a <= b);
  case OpKind::Gt: return b01(a > b);
  case OpKind::Ge: return b01(a >= b);
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}

int64_t wrap(uint64_t u) { return static_cast<int64_t>(u); }

/// An integer (or bool) unary op in int64; the store wraps to the output dtype.
int64_t unary_i(OpKind k, int64_t x, DataType dt) {
  auto ux = static_cast<uint64_t>(x);
  switch (k) {
  case OpKind::Neg: return wrap(0 - ux);
  case OpKind::Abs: return x < 0 ? wrap(0 - ux) : x;
  case OpKind::Relu: return x > 0 ? x : 0;
  case OpKind::Relu6: return x < 0 ? 0 : x > 6 ? 6 : x;
  case OpKind::Sign: return (x > 0) - (x < 0);
  case OpKind::Signbit: return x < 0;
  case OpKind::Ceil:
  case OpKind::Floor:
  case OpKind::Trunc:
  case OpKind::Round:
  case OpKind::Clone: return x;
  case OpKind::IsFinite: return 1;
  case OpKind::IsNan:
  case OpKind::IsInf: return 0;
  case OpKind::LogicalNot: return x == 0;
  case OpKind::BitwiseNot: return dt == DT_BOOL ? x == 0 : wrap(~ux);
  case OpKind::Square: return wrap(ux * ux);
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not an integer unary op");
}

/// An integer binary op in int64 (wrapping; operands of dtype `dt`); false for a zero divisor.
bool binary_i(OpKind k, int64_t a, int64_t b, DataType dt, int64_t &r) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const int64_t bits = 8 * bytes_of(dt);
  switch (k) {
  case OpKind::Add: r = wrap(ua + ub); return true;
  case OpKind::Sub: r = wrap(ua - ub); return true;
  case OpKind::Mul: r = wrap(ua * ub); return true;
  case OpKind::Div:
    if (b == 0)
      return false;
    r = b == -1 ? wrap(0 - ua) : a / b; // INT64_MIN / -1 wraps instead of trapping
    return true;
  case OpKind::Maximum: r = a > b ? a : b; return true;
  case OpKind::Minimum: r = a < b ? a : b; return true;
  case OpKind::FloorDiv:
    if (b == 0)
      return false;
    if (b == -1) {
      r = wrap(0 - ua);
      return true;
    }
    r = a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
    return true;
  case OpKind::Remainder:
  case OpKind::Fmod:
    if (b == 0)
      return false;
    r = b == -1 ? 0 : a % b;
    if (k == OpKind::Remainder && r != 0 && (r < 0) != (b < 0))
      r += b;
    return true;
  case OpKind::Pow: {
    // PyTorch's integral pow: square-and-multiply (wrapping); negative exponents truncate 1/a^-b.
    if (b < 0) {
      r = a == 1 ? 1 : a == -1 ? ((b & 1) != 0 ? -1 : 1) : 0;
      return true;
    }
    uint64_t acc = 1, base = ua;
    for (uint64_t e = ub; e != 0; e >>= 1) {
      if ((e & 1) != 0)
        acc *= base;
      base *= base;
    }
    r = wrap(acc);
    return true;
  }
  case OpKind::Gcd: {
    // Euclid on the magnitudes (|INT_MIN| as unsigned); the store wraps it like the vector code.
    uint64_t x = a < 0 ? 0 - ua : ua, y = b < 0 ? 0 - ub : ub;
    while (y != 0) {
      uint64_t t = x % y;
      x = y;
      y = t;
    }
    r = wrap(x);
    return true;
  }
  case OpKind::LogicalAnd: r = a != 0 && b != 0; return true;
  case OpKind::LogicalOr: r = a != 0 || b != 0; return true;
  case OpKind::LogicalXor: r = (a != 0) != (b != 0); return true;
  case OpKind::BitwiseAnd: r = a & b; return true;
  case OpKind::BitwiseOr: r = a | b; return true;
  case OpKind::BitwiseXor: r = a ^ b; return true;
  case OpKind::ShiftLeft: r = b < 0 || b >= bits ? 0 : wrap(ua << b); return true;
  case OpKind::ShiftRight: r = b < 0 || b >= bits ? (a < 0 ? -1 : 0) : a >> b; return true;
  case OpKind::Eq: r = a == b; return true;
  case OpKind::Ne: r = a != b; return true;
  case OpKind::Lt: r = a < b; return true;
  case OpKind::Le: r = a <= b; return true;
  case OpKind::Gt: r = a > b; return true;
  case OpKind::Ge: r = a >= b; return true;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}


/// Calls f(idx) for every idx in the box [off, off + ext), row-major (last dim fastest).
template <class F>
void for_box(const std::vector<int64_t> &off, const std::vector<int64_t> &ext, F &&f) {
  size_t r = off.size();
  for (auto e : ext)
    if (e <= 0)
      return;
  std::vector<int64_t> idx = off;
  while (true) {
    f(idx);
    size_t d = r;
    while (true) {
      if (d == 0)
        return;
      --d;
      if (++idx[d] < off[d] + ext[d])
        break;
      idx[d] = off[d];
    }
  }
}

/// The per-element strides of an operand broadcast to an output of rank `r` (numpy,
/// right-aligned; a size-1 operand dim gets stride 0).
std::vector<int64_t> broadcast_strides(const Ref &in, size_t r) {
  std::vector<int64_t> s(r, 0);
  size_t ra = in.shape.size();
  for (size_t i = 0; i < ra; ++i)
    if (in.shape[i] != 1)
      s[i + r - ra] = in.strides[i];
  return s;
}

/// Touched extents of a broadcast operand for output extents `ext`.
std::vector<int64_t> broadcast_ext(const Ref &in, const std::vector<int64_t> &ext) {
  size_t r = ext.size(), ra = in.shape.size();
  std::vector<int64_t> e(ra);
  for (size_t i = 0; i < ra; ++i)
    e[i] = in.shape[i] == 1 ? std::min<int64_t>(1, ext[i + r - ra]) : ext[i + r - ra];
  return e;
}

} // namespace

int32_t Run::unary(const Op &op) {
  Ref x, y;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  if (int32_t st = check_window(x, yv))
    return st;
  const DataType in = x.dt, out = y.dt;
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(t.size.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.at(idx);
      uint8_t *dst = y.at(idx);
      if (op.kind == OpKind::Cast) {
        if (is_float(in))
          store_f(dst, out, load_f(src, in));
        else
          store_i(dst, out, load_i(src, in));
      } else if (in == DT_DOUBLE) {
        store_f(dst, out, unary_f<double>(op, load_f(src, in)));
      } else if (is_float(in)) {
        store_f(dst, out, unary_f<float>(op, static_cast<float>(load_f(src, in))));
      } else {
        store_i(dst, out, unary_i(op.kind, load_i(src, in), in));
      }
    });
  }
  return PTO_OK;
}

int32_t Run::binary(const Op &op) {
  Ref a, b, y;
  const bool has_scalar = op.scalar.has_value();
  if (int32_t st = ref(op.inputs[0], a))
    return st;
  if (!has_scalar)
    if (int32_t st = ref(op.inputs[1], b))
      return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  if (int32_t st = check_window(a, broadcast_ext(a, yv)))
    return st;
  if (!has_scalar)
    if (int32_t st = check_window(b, broadcast_ext(b, yv)))
      return st;
  const size_t r = y.shape.size();
  const auto as = broadcast_strides(a, r);
  const auto bs = has_scalar ? std::vector<int64_t>(r, 0) : broadcast_strides(b, r);
  const DataType dt = a.dt, out = y.dt; // compares and logical ops store DT_BOOL
  const bool fp = is_float(dt);
  // A scalar operand is an element of the tensor's dtype: round it once (as generated code does).
  const double scalar_f = has_scalar ? round_scalar(ir::as_element(*op.scalar, dt).f, dt) : 0.0;
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(r);
    for (size_t d = 0; d < r; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    bool div_zero = false;
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      if (div_zero)
        return;
      uint8_t *dst = y.at(idx);
      const uint8_t *pa = a.root + (a.lin0 + dot(idx, as)) * a.esize;
      if (fp) {
        double va = load_f(pa, a.dt);
        double vb = has_scalar ? scalar_f : load_f(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        if (dt == DT_DOUBLE)
          store_f(dst, out, binary_f<double>(op.kind, va, vb));
        else
          store_f(dst, out,
                  binary_f<float>(op.kind, static_cast<float>(va), static_cast<float>(vb)));
      } else {
        int64_t va = load_i(pa, a.dt);
        int64_t vb = has_scalar ? op.scalar->i : load_i(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        int64_t res = 0;
        if (!binary_i(op.kind, va, vb, dt, res)) {
          div_zero = true;
          return;
        }
        store_i(dst, out, res);
      }
    });
    if (div_zero)
      return fail(PTO_FAIL_DIV_ZERO, 0, 0);
  }
  return PTO_OK;
}

int32_t Run::select(const Op &op) {
  Ref c, a, b, y;
  for (auto [id, r] : {std::pair{op.inputs[0], &c}, std::pair{op.inputs[1], &a},
                       std::pair{op.inputs[2], &b}, std::pair{op.outputs[0], &y}})
    if (int32_t st = ref(id, *r))
      return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  for (const Ref *in : {&c, &a, &b})
    if (int32_t st = check_window(*in, broadcast_ext(*in, yv)))
      return st;
  const size_t r = y.shape.size();
  const auto cs = broadcast_strides(c, r), as = broadcast_strides(a, r),
             bs = broadcast_strides(b, r);
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(r);
    for (size_t d = 0; d < r; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      bool take_a = load_i(c.root + (c.lin0 + dot(idx, cs)) * c.esize, c.dt) != 0;
      const Ref &src = take_a ? a : b;
      const auto &ss = take_a ? as : bs;
      std::memmove(y.at(idx), src.root + (src.lin0 + dot(idx, ss)) * src.esize,
                   static_cast<size_t>(y.esize));
    });
  }
  return PTO_OK;
}

int32_t Run::reduce(const Op &op) {
  Ref x, y;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> xv, yv;
  if (int32_t st = valid_of(op.inputs[0], x.shape, xv))
    return st;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  const size_t xr = x.shape.size(), yr = y.shape.size(), axis = static_cast<size_t>(op.axis);
  // Output dim -> input dim (or none, for the kept-away axis of a rank-1 full reduction).
  std::vector<int> in_dim(yr, -1);
  for (size_t od = 0; od < yr; ++od) {
    if (op.keepdim)
      in_dim[od] = od == axis ? -1 : static_cast<int>(od);
    else if (xr > 1)
      in_dim[od] = static_cast<int>(od < axis ? od : od + 1);
  }
  // Tile entries index output dims; without keepdim the axis entry of the input-rank tile goes.
  std::vector<int64_t> tile;
  if (op.keepdim) {
    tile.assign(op.tile.vec.begin(), op.tile.vec.begin() + static_cast<long>(yr));
  } else {
    for (size_t d = 0; d < xr && d < op.tile.vec.size(); ++d)
      if (d != axis)
        tile.push_back(op.tile.vec[d]);
    while (tile.size() < yr)
      tile.push_back(1);
  }
  std::vector<int64_t> xs(yr, 0);
  std::vector<int64_t> touched(xr, 0);
  for (size_t od = 0; od < yr; ++od)
    if (in_dim[od] >= 0) {
      xs[od] = x.strides[static_cast<size_t>(in_dim[od])];
      touched[static_cast<size_t>(in_dim[od])] = yv[od];
    }
  const int64_t n = xv[axis], astride = x.strides[axis];
  touched[axis] = n;
  if (int32_t st = check_window(x, touched))
    return st;
  const DataType dt = x.dt;
  for (const auto &t : tile_expand(y.shape, tile)) {
    std::vector<int64_t> ext(yr);
    for (size_t d = 0; d < yr; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.root + (x.lin0 + dot(idx, xs)) * x.esize;
      const int64_t step = astride * x.esize;
      uint8_t *dst = y.at(idx);
      if (is_float(dt)) {
        auto run = [&](auto zero) {
          using C = decltype(zero);
          // A float sum starts at -0, the identity that keeps every addend (-0 + -0 = -0, as
          // IEEE 754 and NumPy sum only -0 to -0); an empty one is +0 (reduce_ops.h).
          C acc = op.kind == OpKind::Sum    ? (n > 0 ? -C(0) : C(0))
                  : op.kind == OpKind::Prod ? C(1)
                  : op.kind == OpKind::Amax ? -std::numeric_limits<C>::infinity()
                                            : std::numeric_limits<C>::infinity();
          for (int64_t k = 0; k < n; ++k) {
            C v = static_cast<C>(load_f(src + k * step, dt));
            if (op.kind == OpKind::Sum)
              acc += v;
            else if (op.kind == OpKind::Prod)
              acc *= v;
            else if (op.kind == OpKind::Amax)
              acc = nan_max(acc, v);
            else
              acc = nan_min(acc, v);
          }
          store_f(dst, dt, static_cast<double>(acc));
        };
        if (dt == DT_DOUBLE)
          run(0.0);
        else
          run(0.0f);
      } else {
        int64_t acc = op.kind == OpKind::Sum    ? 0
                      : op.kind == OpKind::Prod ? 1
                      : op.kind == OpKind::Amax ? int_min(dt)
                                                : int_max(dt);
        for (int64_t k = 0; k < n; ++k) {
          int64_t v = load_i(src + k * step, dt);
          if (op.kind == OpKind::Sum)
            acc = wrap(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
          else if (op.kind == OpKind::Prod)
            acc = wrap(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
          else if (op.kind == OpKind::Amax)
            acc = v > acc ? v : acc;
          else
            acc = v < acc ? v : acc;
        }
        store_i(dst, dt, acc);
      }
    });
  }
  return PTO_OK;
}

int32_t Run::full(const Op &op) {
  Ref y;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  uint8_t pattern[8] = {};
  const ir::Scalar &s = *op.scalar;
  if (s.is_int)
    store_i(pattern, y.dt, s.i);
  else
    store_f(pattern, y.dt, s.f);
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(y.shape.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      std::memcpy(y.at(idx), pattern, static_cast<size_t>(y.esize));
    });
  }
  return PTO_OK;
}

int32_t Run::assemble(const Op &op) {
  Ref x, w;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], w))
    return st;
  std::vector<int64_t> wv;
  if (int32_t st = valid_of(op.outputs[0], w.shape, wv))
    return st;
  if (int32_t st = check_window(x, wv))
    return st;
  if (int32_t st = check_window(w, wv))
    return st;
  for (const auto &t : tile_expand(w.shape, op.tile.vec)) {
    std::vector<int64_t> ext(w.shape.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(wv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      std::memmove(w.at(idx), x.at(idx), static_cast<size_t>(w.esize));
    });
  }
  return PTO_OK;
}

} // namespace pto::codegen::interp
