// property_model.cpp - The independent model of property_gen.h: evaluates a program's nodes
// with per-element error bounds (the model is described in property_gen.h), and compares a
// kernel's output with a prediction. Written from the op headers' text (and PyTorch / C99 for
// what they defer to), never from ptojit's code.
#include "pto/half.h"

#include "support/property_gen.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

namespace prop {

using pto::DataType;

namespace detail {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- dtype facts -----------------------------------------------------------------------------

bool isf(DataType dt) { return pto::is_float(dt); }

int bits_of(DataType dt) { return static_cast<int>(8 * pto::bytes_of(dt)); }

/// Unit roundoff of the type ptojit computes `dt` in (fp32 for fp16/bf16/fp32).
double unit(DataType dt) { return dt == pto::DT_DOUBLE ? 0x1p-53 : 0x1p-24; }
/// The smallest subnormal of the compute type: below the normal range relative error bounds
/// become absolute ones in these units.
double tiny(DataType dt) { return dt == pto::DT_DOUBLE ? 0x1p-1074 : 0x1p-149; }
/// Significand bits of the compute type (the precision of accumulations).
int acc_bits(DataType dt) { return dt == pto::DT_DOUBLE ? 53 : 24; }

int mant_bits(DataType dt) {
  switch (dt) {
  case pto::DT_FP16:
    return 11;
  case pto::DT_BF16:
    return 8;
  case pto::DT_FP32:
    return 24;
  default:
    return 53;
  }
}
int min_exp(DataType dt) {
  switch (dt) {
  case pto::DT_FP16:
    return -14;
  case pto::DT_BF16:
  case pto::DT_FP32:
    return -126;
  default:
    return -1022;
  }
}

/// The spacing of `dt` at magnitude |y| (subnormal spacing below the normal range).
double ulp(DataType dt, double y) {
  y = std::fabs(y);
  int e = min_exp(dt);
  if (y > 0 && std::isfinite(y))
    e = std::max(e, std::ilogb(y));
  return std::ldexp(1.0, e - (mant_bits(dt) - 1));
}

/// `v` correctly rounded to the floating dtype `dt` (nearest even).
double round_dt(DataType dt, double v) {
  switch (dt) {
  case pto::DT_FP32:
    return static_cast<float>(v);
  case pto::DT_FP16:
    return pto::fp16_to_fp32(pto::fp64_to_fp16(v));
  case pto::DT_BF16:
    return pto::bf16_to_fp32(pto::fp64_to_bf16(v));
  default:
    return v;
  }
}

int64_t int_lo(DataType dt) {
  switch (dt) {
  case pto::DT_INT8:
    return -128;
  case pto::DT_INT16:
    return -32768;
  case pto::DT_INT32:
    return std::numeric_limits<int32_t>::min();
  case pto::DT_INT64:
    return std::numeric_limits<int64_t>::min();
  default:
    return 0;
  }
}
int64_t int_hi(DataType dt) {
  switch (dt) {
  case pto::DT_INT8:
    return 127;
  case pto::DT_INT16:
    return 32767;
  case pto::DT_INT32:
    return std::numeric_limits<int32_t>::max();
  case pto::DT_INT64:
    return std::numeric_limits<int64_t>::max();
  case pto::DT_UINT8:
    return 255;
  default:
    return 1;
  }
}

/// `v` wrapped to the integer dtype (two's complement); bool is v != 0.
int64_t wrap(DataType dt, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  switch (dt) {
  case pto::DT_INT8:
    return static_cast<int8_t>(static_cast<uint8_t>(u));
  case pto::DT_UINT8:
    return static_cast<uint8_t>(u);
  case pto::DT_INT16:
    return static_cast<int16_t>(static_cast<uint16_t>(u));
  case pto::DT_INT32:
    return static_cast<int32_t>(static_cast<uint32_t>(u));
  case pto::DT_BOOL:
    return v != 0;
  default:
    return v;
  }
}

/// A float -> int cast (ops.h `cast`): truncate toward zero, NaN -> 0, saturate; bool: != 0.
int64_t float_to_int(DataType dt, double v) {
  if (dt == pto::DT_BOOL)
    return v != 0;
  if (std::isnan(v))
    return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(int_lo(dt)))
    return int_lo(dt);
  if (t >= static_cast<double>(int_hi(dt)))
    return int_hi(dt);
  return static_cast<int64_t>(t);
}

// ---- shapes ----------------------------------------------------------------------------------

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

Shape unravel(int64_t k, const Shape &s) {
  Shape idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = k % s[d];
    k /= s[d];
  }
  return idx;
}

int64_t ravel(const Shape &idx, const Shape &s) {
  int64_t k = 0;
  for (size_t d = 0; d < s.size(); ++d)
    k = k * s[d] + idx[d];
  return k;
}

bool broadcastable(const Shape &a, const Shape &b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    int64_t da = a[a.size() - 1 - i], db = b[b.size() - 1 - i];
    if (da != db && da != 1 && db != 1)
      return false;
  }
  return true;
}

Shape broadcast(const Shape &a, const Shape &b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Flat index into an operand of shape `s` broadcast to the output multi-index `o`.
int64_t bindex(const Shape &o, const Shape &s) {
  size_t off = o.size() - s.size();
  int64_t k = 0;
  for (size_t d = 0; d < s.size(); ++d)
    k = k * s[d] + (s[d] == 1 ? 0 : o[d + off]);
  return k;
}

std::string shape_str(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// ---- values ----------------------------------------------------------------------------------

Val make_val(DataType dt, const Shape &s) {
  Val v;
  v.dt = dt;
  v.shape = s;
  auto n = static_cast<size_t>(numel(s));
  if (isf(dt))
    v.f.assign(n, 0.0);
  else
    v.i.assign(n, 0);
  v.err.assign(n, 0.0);
  return v;
}

double num(const Val &v, int64_t k) {
  auto u = static_cast<size_t>(k);
  return isf(v.dt) ? v.f[u] : static_cast<double>(v.i[u]);
}

/// Stores a float result whose pre-rounding value is `x` with bound `e` (see the header).
void put_f(Val &v, int64_t k, double x, double e) {
  auto u = static_cast<size_t>(k);
  v.f[u] = round_dt(v.dt, x);
  if (e == 0)
    v.err[u] = 0;
  else if (!std::isfinite(e) || !std::isfinite(x))
    v.err[u] = kInf;
  else
    v.err[u] = e + ulp(v.dt, std::fabs(x) + e);
}

/// Stores an exact-valued float (no rounding happens: the value is one of the inputs').
void put_exact(Val &v, int64_t k, double x, double e) {
  auto u = static_cast<size_t>(k);
  v.f[u] = x;
  v.err[u] = std::isnan(e) ? kInf : e;
}

void put_i(Val &v, int64_t k, int64_t x, bool determined) {
  auto u = static_cast<size_t>(k);
  v.i[u] = wrap(v.dt, x);
  v.err[u] = determined ? 0 : kInf;
}

/// The value of operand `a` (a node, or a scalar taking dtype `dt`, as a rank-0 value).
Val operand(const Program &p, const Arg &a, DataType dt) {
  if (a.node >= 0)
    return p.vals[static_cast<size_t>(a.node)];
  Val v = make_val(dt, {});
  if (isf(dt))
    v.f[0] = round_dt(dt, a.s.is_int ? static_cast<double>(a.s.i) : a.s.f);
  else
    v.i[0] = wrap(dt, a.s.i);
  return v;
}

// ---- floating math ---------------------------------------------------------------------------

/// How ptojit's floating unary/binary result relates to the exact one (header comment):
/// f(x (1 + ri u)) (1 + ro u). `exact`: correctly rounded (or exact) for exact inputs.
/// `step`: piecewise constant (monotone), compared only where the input interval decides it.
struct MathSpec {
  double ri = 0, ro = 0;
  bool exact = true;
  bool step = false;
  bool no_round = false; ///< the result is an input value (or its negation): nothing rounds
};

MathSpec spec(Op op) {
  switch (op) {
  case Op::Neg:
  case Op::Abs:
  case Op::Relu:
  case Op::Relu6:
  case Op::Clone:
  case Op::Maximum:
  case Op::Minimum:
    return {0, 0, true, false, true};
  case Op::Lrelu: // slope * x is exact for a dyadic slope, but can round below the normal range
  case Op::Sqrt:
  case Op::Reciprocal:
  case Op::Square:
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
    return {};
  case Op::Ceil:
  case Op::Floor:
  case Op::Trunc:
  case Op::Round:
  case Op::Sign:
    return {0, 0, true, true, true};
  // Two roundings in ptojit's composites (1 / sqrt, x / (1 + |x|)).
  case Op::Rsqrt:
  case Op::Softsign:
    return {0, 4, false};
  // SLEEF u10 (<= 1 ULP; erfc 1.5) against glibc (<= 2-3 ULP for float): 4 ULP.
  case Op::Exp:
  case Op::Log:
  case Op::Exp2:
  case Op::Expm1:
  case Op::Log2:
  case Op::Log10:
  case Op::Log1p:
  case Op::Sin:
  case Op::Cos:
  case Op::Tan:
  case Op::Asin:
  case Op::Acos:
  case Op::Atan:
  case Op::Sinh:
  case Op::Cosh:
  case Op::Tanh:
  case Op::Asinh:
  case Op::Acosh:
  case Op::Atanh:
  case Op::Erf:
  case Op::Erfc:
  case Op::Cbrt:
  case Op::Pow:
  case Op::Hypot:
  case Op::Atan2:
    return {0, 8, false};
  // Composites: exp/expm1 plus up to three roundings, the constant alpha rounded.
  case Op::Sigmoid:
  case Op::Softplus:
  case Op::Elu:
    return {0, 10, false};
  // The erfc / tanh argument is rounded (x * c; x + c x^3) before the outer function.
  case Op::Gelu:
    return {2, 12, false};
  case Op::GeluTanh:
    return {6, 12, false};
  default:
    return {};
  }
}

/// 1 / (1 + e^-x) without overflow in e^-x (e^x / (1 + e^x) for x < 0).
double sigmoid(double x) {
  const double e = std::exp(-std::fabs(x));
  return (x < 0 ? e : 1.0) / (1.0 + e);
}

double math1(Op op, double x, double attr) {
  switch (op) {
  case Op::Neg:
    return -x;
  case Op::Abs:
    return std::fabs(x);
  case Op::Exp:
    return std::exp(x);
  case Op::Log:
    return std::log(x);
  case Op::Sqrt:
    return std::sqrt(x);
  case Op::Rsqrt:
    return 1.0 / std::sqrt(x);
  case Op::Reciprocal:
    return 1.0 / x;
  case Op::Exp2:
    return std::exp2(x);
  case Op::Expm1:
    return std::expm1(x);
  case Op::Log2:
    return std::log2(x);
  case Op::Log10:
    return std::log10(x);
  case Op::Log1p:
    return std::log1p(x);
  case Op::Sin:
    return std::sin(x);
  case Op::Cos:
    return std::cos(x);
  case Op::Tan:
    return std::tan(x);
  case Op::Asin:
    return std::asin(x);
  case Op::Acos:
    return std::acos(x);
  case Op::Atan:
    return std::atan(x);
  case Op::Sinh:
    return std::sinh(x);
  case Op::Cosh:
    return std::cosh(x);
  case Op::Tanh:
    return std::tanh(x);
  case Op::Asinh:
    return std::asinh(x);
  case Op::Acosh:
    return std::acosh(x);
  case Op::Atanh:
    return std::atanh(x);
  case Op::Erf:
    return std::erf(x);
  case Op::Erfc:
    return std::erfc(x);
  case Op::Cbrt:
    return std::cbrt(x);
  case Op::Sigmoid:
    return sigmoid(x);
  case Op::Softplus:
    return x > 20 ? x : std::log1p(std::exp(x)); // PyTorch threshold 20
  case Op::Softsign:
    return x / (1.0 + std::fabs(x));
  case Op::Elu:
    return x > 0 ? x : attr * std::expm1(x);
  case Op::Gelu:
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
  case Op::GeluTanh: { // x/2 (1 + tanh u) = x sigmoid(2u), without the cancellation at x << 0
    const double u = std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
    return x * sigmoid(2 * u);
  }
  case Op::Lrelu:
    return x >= 0 ? x : attr * x;
  case Op::Relu:
    return x > 0 ? x : 0.0;
  case Op::Relu6:
    return x < 0 ? 0.0 : x > 6 ? 6.0 : x;
  case Op::Sign:
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
  case Op::Ceil:
    return std::ceil(x);
  case Op::Floor:
    return std::floor(x);
  case Op::Trunc:
    return std::trunc(x);
  case Op::Round:
    return std::nearbyint(x); // ties to even
  case Op::Square:
    return x * x;
  case Op::Clone:
    return x;
  default:
    return std::nan("");
  }
}

double math2(Op op, double a, double b) {
  switch (op) {
  case Op::Add:
    return a + b;
  case Op::Sub:
    return a - b;
  case Op::Mul:
    return a * b;
  case Op::Div:
    return a / b;
  case Op::Maximum:
    return std::max(a, b);
  case Op::Minimum:
    return std::min(a, b);
  case Op::Pow:
    return std::pow(a, b);
  case Op::Hypot:
    return std::hypot(a, b);
  case Op::Atan2:
    return std::atan2(a, b);
  case Op::Copysign:
    return std::copysign(a, b);
  case Op::Fmod:
    return std::fmod(a, b);
  case Op::Remainder: {
    double r = std::fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
  case Op::FloorDiv:
    return std::floor(a / b);
  default:
    return std::nan("");
  }
}

/// Largest |f(t) - f(x)| over samples of [x - w, x + w] (ends and midpoints); inf when f is not
/// finite there.
double spread1(const std::function<double(double)> &f, double x, double w) {
  double y = f(x), dev = 0;
  for (double t : {x - w, x - w / 2, x + w / 2, x + w}) {
    double d = std::fabs(f(t) - y);
    if (!std::isfinite(d))
      return kInf;
    dev = std::max(dev, d);
  }
  return dev;
}

double spread2(const std::function<double(double, double)> &f, double a, double wa, double b,
               double wb) {
  double y = f(a, b), dev = 0;
  for (double s : {-1.0, -0.5, 0.0, 0.5, 1.0})
    for (double t : {-1.0, -0.5, 0.0, 0.5, 1.0}) {
      double d = std::fabs(f(a + s * wa, b + t * wb) - y);
      if (!std::isfinite(d))
        return kInf;
      dev = std::max(dev, d);
    }
  return dev;
}

/// The interval [x - e, x + e] decides whether x is non-zero.
int truth(double x, double e) {
  if (e == 0)
    return x != 0;
  if (std::isinf(e) || std::fabs(x) <= e)
    return -1;
  return 1;
}

// ---- exact accumulation ----------------------------------------------------------------------

/// The value of the lowest set bit of |x| (x finite, non-zero).
double lsb(double x) {
  int e = 0;
  double fr = std::frexp(std::fabs(x), &e);
  auto m = static_cast<uint64_t>(std::ldexp(fr, 53));
  return std::ldexp(1.0, e - 53 + std::countr_zero(m));
}
int sigbits(double x) {
  if (x == 0)
    return 0;
  int e = 0;
  double fr = std::frexp(std::fabs(x), &e);
  auto m = static_cast<uint64_t>(std::ldexp(fr, 53));
  return 64 - std::countl_zero(m >> std::countr_zero(m));
}

/// True when adding `terms` in any order in a `p`-bit accumulator is exact: every term is a
/// multiple of one power of two g and sum |terms| < 2^p g, so every partial sum is representable.
bool exact_accumulation(const std::vector<double> &terms, int p) {
  double g = kInf;
  long double s = 0;
  for (double t : terms) {
    if (t == 0)
      continue;
    s += std::fabs(static_cast<long double>(t));
    g = std::min(g, lsb(t));
  }
  return s == 0 || s / g < std::ldexp(1.0L, p);
}

// ---- per-family evaluation -------------------------------------------------------------------

bool bool_result(Op op) {
  switch (op) {
  case Op::Signbit:
  case Op::IsFinite:
  case Op::IsNan:
  case Op::IsInf:
  case Op::LogicalNot:
  case Op::LogicalAnd:
  case Op::LogicalOr:
  case Op::LogicalXor:
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
    return true;
  default:
    return false;
  }
}

void eval_unary(const Node &n, const Val &x, Val &out) {
  out = make_val(n.dt, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const auto u = static_cast<size_t>(k);
    const double e = x.err[u];
    if (!isf(x.dt)) { // integer / bool inputs: exact integer semantics
      const int64_t v = x.i[u];
      const bool det = !std::isinf(e);
      int64_t r = 0;
      switch (n.op) {
      case Op::Neg:
        r = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
        break;
      case Op::Abs:
        r = v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v;
        break;
      case Op::Relu:
        r = v > 0 ? v : 0;
        break;
      case Op::Relu6:
        r = v < 0 ? 0 : v > 6 ? 6 : v;
        break;
      case Op::Sign:
        r = (v > 0) - (v < 0);
        break;
      case Op::Signbit:
        r = v < 0;
        break;
      case Op::IsFinite:
        r = 1;
        break;
      case Op::IsNan:
      case Op::IsInf:
        r = 0;
        break;
      case Op::LogicalNot:
        r = v == 0;
        break;
      case Op::BitwiseNot:
        r = x.dt == pto::DT_BOOL ? v == 0 : ~v;
        break;
      case Op::Square:
        r = static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(v));
        break;
      default:
        r = v;
        break; // ceil, floor, trunc, round, clone: unchanged
      }
      put_i(out, k, r, det);
      continue;
    }
    const double xv = x.f[u];
    if (bool_result(n.op)) {
      int r = -1;
      switch (n.op) {
      case Op::Signbit:
        // The sign of a zero is not modelled: a zero (or an interval around one) is open.
        r = xv == 0 || (e > 0 && std::fabs(xv) <= e) ? -1 : std::signbit(xv);
        break;
      case Op::IsFinite:
        r = std::isfinite(xv);
        break;
      case Op::IsNan:
        r = std::isnan(xv);
        break;
      case Op::IsInf:
        r = std::isinf(xv);
        break;
      default: { // LogicalNot
        int t = truth(xv, e);
        r = t < 0 ? -1 : !t;
      }
      }
      if (std::isinf(e))
        r = -1;
      put_i(out, k, r < 0 ? 0 : r, r >= 0);
      continue;
    }
    const MathSpec s = spec(n.op);
    auto f = [&](double t) { return math1(n.op, t, n.attr); };
    const double y = f(xv);
    if (std::isinf(e)) {
      put_exact(out, k, round_dt(out.dt, y), kInf);
      continue;
    }
    if (s.step) {
      bool det = e == 0 || f(xv - e) == f(xv + e);
      put_exact(out, k, y, det ? 0 : kInf);
      continue;
    }
    if (e == 0 && s.exact) {
      if (s.no_round)
        put_exact(out, k, y, 0);
      else
        put_f(out, k, y, 0);
      continue;
    }
    const double w = e + s.ri * unit(x.dt) * std::fabs(xv);
    double dev = w > 0 ? 2 * spread1(f, xv, w) : 0;
    double big = s.exact ? 0 : s.ro * (unit(x.dt) * std::fabs(y) + tiny(x.dt));
    if (s.no_round)
      put_exact(out, k, y, dev);
    else
      put_f(out, k, y, dev + big);
  }
}

void eval_cast(const Node &n, const Val &x, Val &out) {
  out = make_val(n.dt, x.shape);
  for (int64_t k = 0; k < x.numel(); ++k) {
    const auto u = static_cast<size_t>(k);
    const double e = x.err[u];
    if (!isf(x.dt)) {
      const int64_t v = x.i[u];
      if (isf(n.dt))
        put_f(out, k, static_cast<double>(v), std::isinf(e) ? kInf : 0);
      else
        put_i(out, k, v, !std::isinf(e)); // int -> int wraps, -> bool is != 0
      continue;
    }
    const double v = x.f[u];
    if (isf(n.dt)) { // rounds once (bf16 -> fp16 can round: fp16 has the smaller exponent range)
      put_f(out, k, v, e);
      continue;
    }
    // trunc and saturation are flat around 0, but != 0 (bool) is not.
    const int64_t r = float_to_int(n.dt, v);
    bool det = n.dt == pto::DT_BOOL ? truth(v, e) >= 0
                                    : e == 0 || (!std::isinf(e) && float_to_int(n.dt, v - e) == r &&
                                                 float_to_int(n.dt, v + e) == r);
    put_i(out, k, r, det);
  }
}

/// An integer binary op in int64, wrapped by the store. False for a zero divisor.
bool int_binary(Op op, int64_t a, int64_t b, DataType dt, int64_t &r) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const int64_t bits = bits_of(dt);
  switch (op) {
  case Op::Add:
    r = static_cast<int64_t>(ua + ub);
    return true;
  case Op::Sub:
    r = static_cast<int64_t>(ua - ub);
    return true;
  case Op::Mul:
    r = static_cast<int64_t>(ua * ub);
    return true;
  case Op::Maximum:
    r = std::max(a, b);
    return true;
  case Op::Minimum:
    r = std::min(a, b);
    return true;
  case Op::Div:
  case Op::FloorDiv:
  case Op::Fmod:
  case Op::Remainder: {
    if (b == 0)
      return false;
    if (b == -1) { // INT_MIN / -1 wraps; the remainder is 0
      r = op == Op::Div || op == Op::FloorDiv ? static_cast<int64_t>(0 - ua) : 0;
      return true;
    }
    int64_t q = a / b, m = a % b;
    if (op == Op::Div)
      r = q;
    else if (op == Op::Fmod)
      r = m;
    else if (op == Op::FloorDiv)
      r = m != 0 && ((m < 0) != (b < 0)) ? q - 1 : q;
    else
      r = m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
    return true;
  }
  case Op::BitwiseAnd:
    r = a & b;
    return true;
  case Op::BitwiseOr:
    r = a | b;
    return true;
  case Op::BitwiseXor:
    r = a ^ b;
    return true;
  case Op::ShiftLeft:
    r = b < 0 || b >= bits ? 0 : static_cast<int64_t>(ua << b);
    return true;
  case Op::ShiftRight:
    r = b < 0 || b >= bits ? (a < 0 ? -1 : 0) : a >> b;
    return true;
  case Op::LogicalAnd:
    r = a != 0 && b != 0;
    return true;
  case Op::LogicalOr:
    r = a != 0 || b != 0;
    return true;
  case Op::LogicalXor:
    r = (a != 0) != (b != 0);
    return true;
  case Op::Eq:
    r = a == b;
    return true;
  case Op::Ne:
    r = a != b;
    return true;
  case Op::Lt:
    r = a < b;
    return true;
  case Op::Le:
    r = a <= b;
    return true;
  case Op::Gt:
    r = a > b;
    return true;
  case Op::Ge:
    r = a >= b;
    return true;
  default:
    return false;
  }
}

/// A comparison or logical op on floats with error bounds: 1/0, or -1 when undetermined.
int float_predicate(Op op, double a, double ea, double b, double eb) {
  if (std::isinf(ea) || std::isinf(eb))
    return -1;
  if (op == Op::LogicalAnd || op == Op::LogicalOr || op == Op::LogicalXor) {
    int ta = truth(a, ea), tb = truth(b, eb);
    if (op == Op::LogicalAnd && (ta == 0 || tb == 0))
      return 0;
    if (op == Op::LogicalOr && (ta == 1 || tb == 1))
      return 1;
    if (ta < 0 || tb < 0)
      return -1;
    return op == Op::LogicalAnd ? ta && tb : op == Op::LogicalOr ? ta || tb : ta != tb;
  }
  const double s = ea + eb;
  if (s == 0) {
    switch (op) {
    case Op::Eq:
      return a == b;
    case Op::Ne:
      return a != b;
    case Op::Lt:
      return a < b;
    case Op::Le:
      return a <= b;
    case Op::Gt:
      return a > b;
    default:
      return a >= b;
    }
  }
  const double d = a - b; // decided when |a - b| > ea + eb
  if (std::fabs(d) <= s)
    return -1;
  switch (op) {
  case Op::Eq:
    return 0;
  case Op::Ne:
    return 1;
  case Op::Lt:
  case Op::Le:
    return d < 0;
  default:
    return d > 0;
  }
}

/// One float binary element, stored into out[k] with its bound.
void float_binary(Op op, double a, double ea, double b, double eb, Val &out, int64_t k) {
  const DataType cdt = out.dt;
  const double y = math2(op, a, b);
  if (std::isinf(ea) || std::isinf(eb)) {
    put_exact(out, k, round_dt(cdt, y), kInf);
    return;
  }
  const bool exact_in = ea == 0 && eb == 0;
  switch (op) {
  case Op::Add:
  case Op::Sub:
    put_f(out, k, y, exact_in ? 0 : ea + eb);
    return;
  case Op::Mul:
    put_f(out, k, y, exact_in ? 0 : std::fabs(a) * eb + std::fabs(b) * ea + ea * eb);
    return;
  case Op::Div:
    if (exact_in)
      put_f(out, k, y, 0);
    else if (eb >= std::fabs(b))
      put_f(out, k, y, kInf);
    else
      put_f(out, k, y,
            (std::fabs(a) * eb + std::fabs(b) * ea) / (std::fabs(b) * (std::fabs(b) - eb)));
    return;
  case Op::Maximum:
  case Op::Minimum:
    put_exact(out, k, y, std::max(ea, eb));
    return;
  case Op::Copysign:
    if (b == 0 || (eb > 0 && std::fabs(b) <= eb))
      put_exact(out, k, y, kInf); // the sign of a zero is not modelled
    else
      put_exact(out, k, y, ea);
    return;
  case Op::Fmod:
  case Op::Remainder:
  case Op::FloorDiv: {
    if (exact_in) {
      put_f(out, k, y, 0);
      return;
    }
    if (eb >= std::fabs(b)) {
      put_f(out, k, y, kInf);
      return;
    }
    // The quotient's interval must not cross an integer (where these jump).
    double qlo = kInf, qhi = -kInf;
    for (double s : {-1.0, 1.0})
      for (double t : {-1.0, 1.0}) {
        double q = (a + s * ea) / (b + t * eb);
        qlo = std::min(qlo, q);
        qhi = std::max(qhi, q);
      }
    bool jumps =
        op == Op::Fmod ? std::trunc(qlo) != std::trunc(qhi) : std::floor(qlo) != std::floor(qhi);
    if (jumps) {
      put_f(out, k, y, kInf);
      return;
    }
    if (op == Op::FloorDiv) {
      put_exact(out, k, y, 0);
      return;
    }
    double n = op == Op::Fmod ? std::trunc(a / b) : std::floor(a / b);
    put_f(out, k, y, ea + std::fabs(n) * eb);
    return;
  }
  case Op::Atan2:
    // Discontinuous along the negative x axis and undefined at the origin (signed zeros).
    if (std::fabs(a) <= ea && b <= eb) {
      put_f(out, k, y, kInf);
      return;
    }
    [[fallthrough]];
  default: { // pow, hypot, atan2: sampled
    const MathSpec s = spec(op);
    const double u = unit(cdt);
    auto f = [&](double p, double q) { return math2(op, p, q); };
    double wa = ea + s.ri * u * std::fabs(a), wb = eb + s.ri * u * std::fabs(b);
    double dev = wa > 0 || wb > 0 ? 2 * spread2(f, a, wa, b, wb) : 0;
    put_f(out, k, y, dev + s.ro * (u * std::fabs(y) + tiny(cdt)));
    return;
  }
  }
}

bool eval_binary(const Program &p, const Node &n, Val &out) {
  const Arg &aa = n.args[0], &ab = n.args[1];
  // The operand dtype: the tensor's (a scalar takes it).
  DataType odt = aa.node >= 0 ? p.vals[static_cast<size_t>(aa.node)].dt
                              : p.vals[static_cast<size_t>(ab.node)].dt;
  Val a = operand(p, aa, odt), b = operand(p, ab, odt);
  out = make_val(n.dt, broadcast(a.shape, b.shape));
  for (int64_t k = 0; k < out.numel(); ++k) {
    Shape o = unravel(k, out.shape);
    auto ka = static_cast<size_t>(bindex(o, a.shape)), kb = static_cast<size_t>(bindex(o, b.shape));
    double ea = a.err[ka], eb = b.err[kb];
    if (!isf(odt)) {
      int64_t r = 0;
      bool divides =
          n.op == Op::Div || n.op == Op::FloorDiv || n.op == Op::Fmod || n.op == Op::Remainder;
      if (divides && std::isinf(eb))
        return false; // an undetermined divisor might be 0: the call could fail
      if (!int_binary(n.op, a.i[ka], b.i[kb], odt, r))
        return false;
      put_i(out, k, r, !std::isinf(ea) && !std::isinf(eb));
      continue;
    }
    if (bool_result(n.op)) {
      int r = float_predicate(n.op, a.f[ka], ea, b.f[kb], eb);
      put_i(out, k, r < 0 ? 0 : r, r >= 0);
      continue;
    }
    float_binary(n.op, a.f[ka], ea, b.f[kb], eb, out, k);
  }
  return true;
}

void eval_where(const Program &p, const Node &n, Val &out) {
  const Val &c = p.vals[static_cast<size_t>(n.args[0].node)];
  Val a = operand(p, n.args[1], n.dt), b = operand(p, n.args[2], n.dt);
  Shape s = broadcast(broadcast(c.shape, a.shape), b.shape);
  if (s.empty())
    s = {1};
  out = make_val(n.dt, s);
  for (int64_t k = 0; k < out.numel(); ++k) {
    Shape o = unravel(k, s);
    auto kc = static_cast<size_t>(bindex(o, c.shape));
    bool take_a = c.i[kc] != 0;
    const Val &src = take_a ? a : b;
    auto ks = static_cast<size_t>(bindex(o, src.shape));
    double e = std::isinf(c.err[kc]) ? kInf : src.err[ks];
    if (isf(n.dt))
      put_exact(out, k, src.f[ks], e);
    else
      put_i(out, k, src.i[ks], !std::isinf(e));
  }
}

void eval_clip(const Program &p, const Node &n, Val &out) {
  const Val &x = p.vals[static_cast<size_t>(n.args[0].node)];
  Val lo = operand(p, n.args[1], x.dt), hi = operand(p, n.args[2], x.dt);
  out = make_val(n.dt, broadcast(broadcast(x.shape, lo.shape), hi.shape));
  for (int64_t k = 0; k < out.numel(); ++k) {
    Shape o = unravel(k, out.shape);
    auto kx = static_cast<size_t>(bindex(o, x.shape)),
         kl = static_cast<size_t>(bindex(o, lo.shape)),
         kh = static_cast<size_t>(bindex(o, hi.shape));
    double e = std::max({x.err[kx], lo.err[kl], hi.err[kh]});
    if (isf(x.dt))
      put_exact(out, k, std::min(std::max(x.f[kx], lo.f[kl]), hi.f[kh]), e);
    else
      put_i(out, k, std::min(std::max(x.i[kx], lo.i[kl]), hi.i[kh]), !std::isinf(e));
  }
}

/// The result shape of a reduction over sorted `axes` of `s` (reduce_ops.h).
Shape reduced_shape(const Shape &s, const std::vector<int> &axes, bool keepdim) {
  Shape r;
  for (size_t d = 0; d < s.size(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
    if (!red)
      r.push_back(s[d]);
    else if (keepdim)
      r.push_back(1);
  }
  if (r.empty())
    r.push_back(1);
  return r;
}

/// For every output element of a reduction of `s` over `axes`: the input flat indices it
/// reduces, in row-major order of the reduced axes.
std::vector<std::vector<int64_t>> reduce_groups(const Shape &s, const std::vector<int> &axes) {
  Shape kept = s; // the input shape with reduced axes set to 1
  for (int a : axes)
    kept[static_cast<size_t>(a)] = 1;
  std::vector<std::vector<int64_t>> groups(static_cast<size_t>(numel(kept)));
  for (int64_t k = 0; k < numel(s); ++k) {
    Shape idx = unravel(k, s);
    for (int a : axes)
      idx[static_cast<size_t>(a)] = 0;
    groups[static_cast<size_t>(ravel(idx, kept))].push_back(k);
  }
  return groups;
}

std::vector<int> norm_axes(const Node &n, size_t rank) {
  std::vector<int> ax;
  if (n.axes.empty())
    for (size_t d = 0; d < rank; ++d)
      ax.push_back(static_cast<int>(d));
  for (int a : n.axes)
    ax.push_back(a < 0 ? a + static_cast<int>(rank) : a);
  std::sort(ax.begin(), ax.end());
  return ax;
}

/// A float product accumulated in the compute type of `dt`, in an order ptojit leaves open.
struct Product {
  double prod = 1, hi = 1, big = 1, small = 1;
  int bits = 0;
  size_t n = 0;
  bool exact_in = true, zero = false;
  void add(double t, double e) {
    prod *= t;
    hi *= std::fabs(t) + e;
    big *= std::max(std::fabs(t) + e, 1.0);
    if (t != 0)
      small *= std::min(std::fabs(t), 1.0);
    zero = zero || t == 0;
    bits += sigbits(t);
    exact_in = exact_in && e == 0;
    ++n;
  }
  /// inf when some order of the partial products could overflow (inf * 0 is NaN) or leave the
  /// normal range (bits are lost); 0 when every partial product is exact; else n u |hi| plus
  /// the input errors' effect.
  double bound(DataType dt) const {
    const bool dbl = dt == pto::DT_DOUBLE;
    if (big > (dbl ? 1e300 : 1e37) || (!zero && small < (dbl ? 1e-300 : 1e-37)))
      return kInf;
    if (exact_in && (bits <= acc_bits(dt) || zero))
      return 0;
    return (hi - std::fabs(prod)) + static_cast<double>(n) * unit(dt) * hi;
  }
};

/// Accumulation bound of a float sum of `terms` with input errors `errs`, in the accumulator of
/// `dt` (n u sum|t|; 0 when every partial sum is exact).
double sum_bound(const std::vector<double> &terms, const std::vector<double> &errs, DataType dt) {
  double e = 0, s = 0;
  for (size_t j = 0; j < terms.size(); ++j) {
    e += errs[j];
    s += std::fabs(terms[j]);
  }
  if (terms.size() > 1 && !exact_accumulation(terms, acc_bits(dt)))
    e += static_cast<double>(terms.size()) * unit(dt) * s;
  return e;
}

void eval_reduce(const Node &n, const Val &x, Val &out) {
  const std::vector<int> ax = norm_axes(n, x.shape.size());
  const auto groups = reduce_groups(x.shape, ax);
  const bool arg = n.op == Op::Argmax || n.op == Op::Argmin;
  out = make_val(n.dt, reduced_shape(x.shape, ax, n.keepdim));
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto &idx = groups[g];
    const auto k = static_cast<int64_t>(g);
    bool undet = false;
    std::vector<double> t, e;
    for (auto j : idx) {
      t.push_back(num(x, j));
      e.push_back(x.err[static_cast<size_t>(j)]);
      undet = undet || std::isinf(e.back());
    }
    const auto cnt = static_cast<double>(idx.size());
    if (arg) {
      // First index of the max (min); undetermined when another interval overlaps the winner's.
      const bool mx = n.op == Op::Argmax;
      size_t w = 0;
      for (size_t j = 1; j < t.size(); ++j)
        if (mx ? t[j] > t[w] : t[j] < t[w])
          w = j;
      bool det = !undet;
      for (size_t j = 0; j < t.size() && det; ++j)
        if (j != w && (e[j] > 0 || e[w] > 0) && std::fabs(t[j] - t[w]) <= e[j] + e[w])
          det = false;
      put_i(out, k, static_cast<int64_t>(w), det);
      continue;
    }
    if (!isf(x.dt)) {
      uint64_t acc = n.op == Op::Prod ? 1 : 0;
      int64_t best = x.i[static_cast<size_t>(idx[0])];
      for (auto j : idx) {
        int64_t v = x.i[static_cast<size_t>(j)];
        if (n.op == Op::Sum)
          acc += static_cast<uint64_t>(v);
        else if (n.op == Op::Prod)
          acc *= static_cast<uint64_t>(v);
        best = n.op == Op::Amax ? std::max(best, v) : std::min(best, v);
      }
      int64_t r = n.op == Op::Sum || n.op == Op::Prod ? static_cast<int64_t>(acc) : best;
      put_i(out, k, r, !undet);
      continue;
    }
    if (undet) {
      put_exact(out, k, 0, kInf);
      continue;
    }
    const DataType dt = x.dt;
    const double u = unit(dt);
    switch (n.op) {
    case Op::Amax:
    case Op::Amin: {
      double best = t[0], eb = 0;
      for (size_t j = 0; j < t.size(); ++j) {
        best = n.op == Op::Amax ? std::max(best, t[j]) : std::min(best, t[j]);
        eb = std::max(eb, e[j]);
      }
      put_exact(out, k, best, eb);
      break;
    }
    case Op::Sum: {
      double s = std::accumulate(t.begin(), t.end(), 0.0);
      put_f(out, k, s, sum_bound(t, e, dt));
      break;
    }
    case Op::Mean: {
      // sum / n: one more correctly rounded division, exact when the sum is (fp16/bf16 round
      // twice through fp32, which is innocuous for a quotient).
      double s = std::accumulate(t.begin(), t.end(), 0.0), m = s / cnt;
      double es = sum_bound(t, e, dt);
      put_f(out, k, m, es == 0 ? 0 : es / cnt + u * std::fabs(m));
      break;
    }
    case Op::Var: {
      double s = std::accumulate(t.begin(), t.end(), 0.0), m = s / cnt;
      double em = sum_bound(t, e, dt) / cnt + u * std::fabs(m);
      double sq = 0, esq = 0, mag = 0;
      for (size_t j = 0; j < t.size(); ++j) {
        double d = t[j] - m;
        double dd = e[j] + em + u * (std::fabs(d) + e[j] + em);
        sq += d * d;
        esq += 2 * std::fabs(d) * dd + dd * dd + u * (std::fabs(d) + dd) * (std::fabs(d) + dd);
        mag += (std::fabs(d) + dd) * (std::fabs(d) + dd);
      }
      esq += cnt * u * mag;
      double den = std::max(cnt - n.attr, 0.0);
      double v = sq / den;
      put_f(out, k, v, esq / den + 2 * u * std::fabs(v));
      break;
    }
    default: { // Prod
      Product pr;
      for (size_t j = 0; j < t.size(); ++j)
        pr.add(t[j], e[j]);
      put_f(out, k, pr.prod, pr.bound(dt));
      break;
    }
    }
  }
}

void eval_scan(const Node &n, const Val &x, Val &out) {
  const int axis = n.axes[0] < 0 ? n.axes[0] + static_cast<int>(x.shape.size()) : n.axes[0];
  const auto groups = reduce_groups(x.shape, {axis});
  out = make_val(n.dt, x.shape);
  const bool sum = n.op == Op::Cumsum;
  for (const auto &idx : groups) {
    if (!isf(x.dt)) {
      uint64_t acc = sum ? 0 : 1;
      bool det = true;
      for (auto j : idx) {
        auto v = static_cast<uint64_t>(x.i[static_cast<size_t>(j)]);
        acc = sum ? acc + v : acc * v;
        det = det && !std::isinf(x.err[static_cast<size_t>(j)]);
        put_i(out, j, static_cast<int64_t>(acc), det);
      }
      continue;
    }
    std::vector<double> t, e;
    for (auto j : idx) {
      t.push_back(x.f[static_cast<size_t>(j)]);
      e.push_back(x.err[static_cast<size_t>(j)]);
    }
    const double u = unit(x.dt);
    const bool exact_row = sum && exact_accumulation(t, acc_bits(x.dt));
    double acc = sum ? 0 : 1, ein = 0, mag = 0;
    Product pr;
    for (size_t j = 0; j < t.size(); ++j) {
      double eb = 0;
      if (sum) {
        acc += t[j];
        ein += e[j];
        mag += std::fabs(t[j]);
        eb = ein + (exact_row || j == 0 ? 0 : static_cast<double>(j + 1) * u * mag);
      } else {
        pr.add(t[j], e[j]);
        acc = pr.prod;
        eb = pr.bound(x.dt);
      }
      put_f(out, idx[j], acc, eb);
    }
  }
}

void eval_matmul(const Program &p, const Node &n, Val &out) {
  const Val &a = p.vals[static_cast<size_t>(n.args[0].node)];
  const Val &b = p.vals[static_cast<size_t>(n.args[1].node)];
  const Val *bias = n.args.size() > 2 ? &p.vals[static_cast<size_t>(n.args[2].node)] : nullptr;
  const size_t r = a.shape.size();
  const int64_t K = n.a_trans ? a.shape[r - 2] : a.shape[r - 1];
  out = make_val(n.dt, n.shape);
  const bool fp = isf(a.dt);
  for (int64_t k = 0; k < out.numel(); ++k) {
    Shape o = unravel(k, out.shape);
    const int64_t i = o[r - 2], j = o[r - 1];
    Shape ai(r), bi(r);
    for (size_t d = 0; d + 2 < r; ++d) {
      ai[d] = a.shape[d] == 1 ? 0 : o[d];
      bi[d] = b.shape[d] == 1 ? 0 : o[d];
    }
    std::vector<double> terms, errs;
    uint32_t iacc = 0;
    bool undet = false, exact_products = true;
    for (int64_t q = 0; q < K; ++q) {
      ai[r - 2] = n.a_trans ? q : i;
      ai[r - 1] = n.a_trans ? i : q;
      bi[r - 2] = n.b_trans ? j : q;
      bi[r - 1] = n.b_trans ? q : j;
      auto ka = static_cast<size_t>(ravel(ai, a.shape)),
           kb = static_cast<size_t>(ravel(bi, b.shape));
      undet = undet || std::isinf(a.err[ka]) || std::isinf(b.err[kb]);
      if (!fp) {
        iacc += static_cast<uint32_t>(a.i[ka] * b.i[kb]);
        continue;
      }
      double pa = a.f[ka], pb = b.f[kb], prod = pa * pb;
      exact_products = exact_products && static_cast<double>(static_cast<float>(prod)) == prod;
      terms.push_back(prod);
      errs.push_back(std::fabs(pa) * b.err[kb] + std::fabs(pb) * a.err[ka] + a.err[ka] * b.err[kb]);
    }
    if (bias) {
      auto kb = static_cast<size_t>(j); // bias is [N] or [1, N]
      undet = undet || std::isinf(bias->err[kb]);
      if (fp) {
        terms.push_back(bias->f[kb]);
        errs.push_back(bias->err[kb]);
      } else {
        iacc += static_cast<uint32_t>(bias->i[kb]);
      }
    }
    if (!fp) {
      auto v = static_cast<int64_t>(static_cast<int32_t>(iacc));
      put_i(out, k, n.relu ? std::max<int64_t>(v, 0) : v, !undet);
      continue;
    }
    double s = std::accumulate(terms.begin(), terms.end(), 0.0);
    double e = 0, mag = 0;
    for (size_t q = 0; q < terms.size(); ++q) {
      e += errs[q];
      mag += std::fabs(terms[q]);
    }
    if (!(exact_products && exact_accumulation(terms, 24)))
      e += static_cast<double>(terms.size() + 1) * 0x1p-24 * mag;
    if (n.relu)
      s = std::max(s, 0.0);
    put_f(out, k, s, undet ? kInf : e);
  }
}

// ---- movement --------------------------------------------------------------------------------

/// out[k] = x[src(k)], or the constant `fill` where src(k) < 0.
void gather(const Val &x, Val &out, const std::function<int64_t(const Shape &)> &src,
            double fill = 0) {
  for (int64_t k = 0; k < out.numel(); ++k) {
    int64_t s = src(unravel(k, out.shape));
    auto u = static_cast<size_t>(k);
    if (s < 0) {
      if (isf(out.dt))
        out.f[u] = round_dt(out.dt, fill);
      else
        out.i[u] = static_cast<int64_t>(fill);
      out.err[u] = 0;
      continue;
    }
    auto us = static_cast<size_t>(s);
    if (isf(out.dt))
      out.f[u] = x.f[us];
    else
      out.i[u] = x.i[us];
    out.err[u] = x.err[us];
  }
}

void eval_movement(const Program &p, const Node &n, Val &out) {
  const Val &x = p.vals[static_cast<size_t>(n.args[0].node)];
  out = make_val(n.dt, n.shape);
  const size_t r = x.shape.size();
  switch (n.op) {
  case Op::Reshape:
  case Op::Unsqueeze:
  case Op::Squeeze:
    gather(x, out, [&](const Shape &o) { return ravel(o, out.shape); });
    return;
  case Op::Expand:
    gather(x, out, [&](const Shape &o) { return bindex(o, x.shape); });
    return;
  case Op::Transpose:
  case Op::Permute: {
    std::vector<int> perm(r);
    std::iota(perm.begin(), perm.end(), 0);
    auto nd = [&](int d) { return static_cast<size_t>(d < 0 ? d + static_cast<int>(r) : d); };
    if (n.op == Op::Transpose)
      std::swap(perm[nd(n.axes[0])], perm[nd(n.axes[1])]);
    else
      for (size_t d = 0; d < r; ++d)
        perm[d] = static_cast<int>(nd(n.axes[d]));
    gather(x, out, [&](const Shape &o) {
      Shape i(r);
      for (size_t d = 0; d < r; ++d)
        i[static_cast<size_t>(perm[d])] = o[d];
      return ravel(i, x.shape);
    });
    return;
  }
  case Op::Tile:
    gather(x, out, [&](const Shape &o) {
      Shape i(r);
      size_t off = o.size() - r;
      for (size_t d = 0; d < r; ++d)
        i[d] = o[d + off] % x.shape[d];
      return ravel(i, x.shape);
    });
    return;
  case Op::Pad:
    gather(
        x, out,
        [&](const Shape &o) {
          for (size_t d = 0; d < r; ++d)
            if (o[d] >= x.shape[d])
              return int64_t{-1};
          return ravel(o, x.shape);
        },
        n.attr);
    return;
  case Op::Tril:
  case Op::Triu:
    gather(x, out, [&](const Shape &o) {
      int64_t c = o[r - 1] - o[r - 2];
      bool zero = n.op == Op::Tril ? c > n.diag : c < n.diag;
      return zero ? int64_t{-1} : ravel(o, x.shape);
    });
    return;
  case Op::View:
  case Op::Split: {
    Shape off(r, 0);
    if (n.op == Op::View) {
      off = n.ints2;
    } else {
      size_t d = static_cast<size_t>(n.axes[0] < 0 ? n.axes[0] + static_cast<int>(r) : n.axes[0]);
      for (int64_t q = 0; q < n.ints2[0]; ++q)
        off[d] += n.ints.size() == 1 ? n.ints[0] : n.ints[static_cast<size_t>(q)];
    }
    gather(x, out, [&](const Shape &o) {
      Shape i(r);
      for (size_t d = 0; d < r; ++d)
        i[d] = o[d] + off[d];
      return ravel(i, x.shape);
    });
    return;
  }
  default:
    break;
  }
}

/// concat (stack: the inputs unsqueezed at `dim` first).
void eval_concat(const Program &p, const Node &n, Val &out) {
  out = make_val(n.dt, n.shape);
  const size_t r = n.shape.size();
  const int dim0 = n.axes[0];
  const auto d = static_cast<size_t>(dim0 < 0 ? dim0 + static_cast<int>(r) : dim0);
  int64_t start = 0;
  for (const Arg &a : n.args) {
    Val x = p.vals[static_cast<size_t>(a.node)];
    if (n.op == Op::Stack)
      x.shape.insert(x.shape.begin() + static_cast<long>(d), 1);
    for (int64_t k = 0; k < x.numel(); ++k) {
      Shape i = unravel(k, x.shape);
      i[d] += start;
      auto u = static_cast<size_t>(ravel(i, n.shape)), uk = static_cast<size_t>(k);
      if (isf(out.dt))
        out.f[u] = x.f[uk];
      else
        out.i[u] = x.i[uk];
      out.err[u] = x.err[uk];
    }
    start += x.shape[d];
  }
}

} // namespace detail

using namespace detail;

// ---- public: evaluate ------------------------------------------------------------------------

bool evaluate(const Program &p, size_t k, Val &out) {
  const Node &n = p.nodes[k];
  auto in0 = [&]() -> const Val & { return p.vals[static_cast<size_t>(n.args[0].node)]; };
  switch (n.op) {
  case Op::Input:
    out = p.vals[k];
    return true;
  case Op::Full:
    out = make_val(n.dt, n.shape);
    for (int64_t q = 0; q < out.numel(); ++q) {
      if (isf(n.dt))
        out.f[static_cast<size_t>(q)] = round_dt(n.dt, n.attr);
      else
        out.i[static_cast<size_t>(q)] = wrap(n.dt, static_cast<int64_t>(n.attr));
    }
    return true;
  case Op::Arange:
    out = make_val(n.dt, n.shape);
    for (int64_t q = 0; q < out.numel(); ++q) {
      if (isf(n.dt))
        out.f[static_cast<size_t>(q)] = round_dt(n.dt, n.attr + static_cast<double>(q) * n.attr2);
      else
        out.i[static_cast<size_t>(q)] =
            static_cast<int64_t>(n.attr) + q * static_cast<int64_t>(n.attr2);
    }
    return true;
  case Op::Cast:
    eval_cast(n, in0(), out);
    return true;
  case Op::Where:
    eval_where(p, n, out);
    return true;
  case Op::Clip:
    eval_clip(p, n, out);
    return true;
  case Op::Sum:
  case Op::Amax:
  case Op::Amin:
  case Op::Prod:
  case Op::Mean:
  case Op::Var:
  case Op::Argmax:
  case Op::Argmin:
    eval_reduce(n, in0(), out);
    return true;
  case Op::Cumsum:
  case Op::Cumprod:
    eval_scan(n, in0(), out);
    return true;
  case Op::Reshape:
  case Op::Unsqueeze:
  case Op::Squeeze:
  case Op::Expand:
  case Op::Transpose:
  case Op::Permute:
  case Op::Split:
  case Op::Tile:
  case Op::Pad:
  case Op::Tril:
  case Op::Triu:
  case Op::View:
    eval_movement(p, n, out);
    return true;
  case Op::Concat:
  case Op::Stack:
    eval_concat(p, n, out);
    return true;
  case Op::Matmul:
    eval_matmul(p, n, out);
    return true;
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Maximum:
  case Op::Minimum:
  case Op::Pow:
  case Op::Hypot:
  case Op::Atan2:
  case Op::Copysign:
  case Op::Fmod:
  case Op::Remainder:
  case Op::FloorDiv:
  case Op::LogicalAnd:
  case Op::LogicalOr:
  case Op::LogicalXor:
  case Op::BitwiseAnd:
  case Op::BitwiseOr:
  case Op::BitwiseXor:
  case Op::ShiftLeft:
  case Op::ShiftRight:
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
    return eval_binary(p, n, out);
  default:
    eval_unary(n, in0(), out);
    return true;
  }
}

// ---- host data and comparison ----------------------------------------------------------------

pto::HostTensor to_host(const Val &v) {
  pto::HostTensor t(v.dt, v.shape.empty() ? Shape{1} : v.shape);
  auto *b = static_cast<uint8_t *>(t.data());
  for (int64_t k = 0; k < v.numel(); ++k) {
    const auto u = static_cast<size_t>(k);
    switch (v.dt) {
    case pto::DT_FP32: {
      auto x = static_cast<float>(v.f[u]);
      std::memcpy(b + 4 * k, &x, 4);
      break;
    }
    case pto::DT_DOUBLE:
      std::memcpy(b + 8 * k, &v.f[u], 8);
      break;
    case pto::DT_FP16: {
      uint16_t h = pto::fp64_to_fp16(v.f[u]);
      std::memcpy(b + 2 * k, &h, 2);
      break;
    }
    case pto::DT_BF16: {
      uint16_t h = pto::fp64_to_bf16(v.f[u]);
      std::memcpy(b + 2 * k, &h, 2);
      break;
    }
    case pto::DT_INT8:
    case pto::DT_UINT8:
    case pto::DT_BOOL:
      b[k] = static_cast<uint8_t>(v.i[u]);
      break;
    case pto::DT_INT16: {
      auto x = static_cast<int16_t>(v.i[u]);
      std::memcpy(b + 2 * k, &x, 2);
      break;
    }
    case pto::DT_INT32: {
      auto x = static_cast<int32_t>(v.i[u]);
      std::memcpy(b + 4 * k, &x, 4);
      break;
    }
    default:
      std::memcpy(b + 8 * k, &v.i[u], 8);
      break;
    }
  }
  return t;
}

namespace {

double read_f(const pto::HostTensor &t, int64_t k) {
  const auto *b = static_cast<const uint8_t *>(t.data());
  uint16_t h = 0;
  switch (t.dtype()) {
  case pto::DT_FP32: {
    float x;
    std::memcpy(&x, b + 4 * k, 4);
    return x;
  }
  case pto::DT_FP16:
    std::memcpy(&h, b + 2 * k, 2);
    return pto::fp16_to_fp32(h);
  case pto::DT_BF16:
    std::memcpy(&h, b + 2 * k, 2);
    return pto::bf16_to_fp32(h);
  default: {
    double x;
    std::memcpy(&x, b + 8 * k, 8);
    return x;
  }
  }
}

int64_t read_i(const pto::HostTensor &t, int64_t k) {
  const auto *b = static_cast<const uint8_t *>(t.data());
  switch (t.dtype()) {
  case pto::DT_INT8:
    return static_cast<int8_t>(b[k]);
  case pto::DT_UINT8:
    return b[k];
  case pto::DT_BOOL:
    return b[k]; // any byte other than 0/1 is a defect the check reports
  case pto::DT_INT16: {
    int16_t x;
    std::memcpy(&x, b + 2 * k, 2);
    return x;
  }
  case pto::DT_INT32: {
    int32_t x;
    std::memcpy(&x, b + 4 * k, 4);
    return x;
  }
  default: {
    int64_t x;
    std::memcpy(&x, b + 8 * k, 8);
    return x;
  }
  }
}

} // namespace

std::string compare(const Val &want, const pto::HostTensor &got, CompareStats &stats) {
  if (got.dtype() != want.dt || got.numel() != want.numel())
    return "dtype or size differs: got " + pto::short_name(got.dtype()) + " with " +
           std::to_string(got.numel()) + " elements, want " + pto::short_name(want.dt) + " with " +
           std::to_string(want.numel());
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (int64_t k = 0; k < want.numel(); ++k) {
    const double e = want.err[static_cast<size_t>(k)];
    if (std::isinf(e)) {
      ++stats.undetermined;
      continue;
    }
    bool ok = false;
    double excess = kInf;
    if (isf(want.dt)) {
      double g = read_f(got, k), w = want.f[static_cast<size_t>(k)];
      ok = g == w || (e > 0 && std::fabs(g - w) <= e);
      if (!ok && std::isfinite(g))
        excess = std::fabs(g - w) / std::max(e, 1e-300);
    } else {
      ok = read_i(got, k) == want.i[static_cast<size_t>(k)];
    }
    if (ok) {
      ++(e == 0 ? stats.exact : stats.within);
      continue;
    }
    ++bad;
    if (worst < 0 || excess > worst_excess) {
      worst = k;
      worst_excess = excess;
    }
  }
  if (bad == 0)
    return "";
  std::ostringstream os;
  os.precision(10);
  const auto uw = static_cast<size_t>(worst);
  os << bad << " of " << want.numel() << " elements wrong; worst at "
     << shape_str(unravel(worst, want.shape)) << ": got ";
  if (isf(want.dt))
    os << read_f(got, worst) << ", want " << want.f[uw];
  else
    os << read_i(got, worst) << ", want " << want.i[uw];
  os << " (allowed error " << want.err[uw] << ")";
  return os.str();
}

} // namespace prop
