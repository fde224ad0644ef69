// xops_special.cpp - Library routines (xops.h) of the special functions of sort_ops.h:
// bessel_i0e(x) = exp(-|x|) I0(x) and bessel_i1e(x) = exp(-|x|) I1(x).
//
// Evaluation, derived from the defining series and Hankel's expansion (DLMF 10.25.2, 10.40.1):
// - |x| <= 25: I_nu(a) = (a/2)^nu sum_k q^k / (k! (k + nu)!), q = a^2/4. Every term is positive,
//   so the sum loses no digits to cancellation; each term comes from the previous by one multiply
//   and one divide, and the sum stops when a term no longer changes it. Then times exp(-a).
// - |x| > 25: exp(-a) I_nu(a) ~ (2 pi a)^-1/2 sum_k t_k, t_0 = 1,
//   t_k = t_(k-1) ((2k - 1)^2 - 4 nu^2) / (-8 a k) for nu = 1, and with the sign flipped for
//   nu = 0 (all terms positive). The expansion's error is of the order of exp(-2a) relative
//   (< 2e-22 at a = 25), below the long-double rounding, and the terms shrink fast: at a = 25 the
//   ratio of successive terms starts at 1/200 and the sum stops in under 20 terms.
// fp16/bf16/fp32 results are computed in double and rounded once; fp64 in long double (64-bit
// mantissa on x86-64) and rounded once, so both are within a hair of correct rounding (the
// measured bounds are in sort_ops.h).
#include "rtlib/xops.h"

#include <cmath>
#include <limits>
#include <string>

namespace pto::codegen {

namespace {

constexpr double kSeriesMax = 25;

/// exp(-|x|) I_nu(x) for nu in {0, 1}, in floating type T.
template <class T> T bessel_ie(int nu, T x) {
  if (std::isnan(x))
    return x;
  const T a = std::fabs(x);
  if (std::isinf(a))
    return nu == 0 ? T(0) : std::copysign(T(0), x);
  const T eps = std::numeric_limits<T>::epsilon() / 4;
  if (a <= T(kSeriesMax)) {
    const T q = a * a / 4;
    T term = 1, sum = 1;
    for (int k = 1; k < 200 && term > eps * sum; ++k) {
      term = term * q / (T(k) * T(k + nu));
      sum += term;
    }
    // nu = 1: x/2 keeps the sign (and -0); it is exact except below the smallest normal.
    const T scale = nu == 0 ? T(1) : x / 2;
    return scale * sum * std::exp(-a);
  }
  const T inv8a = 1 / (8 * a);
  const T mu = T(4 * nu * nu);
  T term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const T odd = T(2 * k - 1);
    term = -term * (mu - odd * odd) * inv8a / T(k);
    sum += term;
    if (std::fabs(term) <= eps * std::fabs(sum))
      break;
  }
  const T two_pi = T(6.283185307179586476925286766559005768L);
  const T r = sum / std::sqrt(two_pi * a);
  return nu == 0 ? r : std::copysign(r, x);
}

int32_t bessel(const XCall &c, int nu) {
  if (c.n_inputs != 1 || c.n_tensors != 2)
    return pto_rt_fail_msg(c.ctx, PTO_ERROR_INTERNAL, static_cast<int32_t>(c.site),
                           "bessel: bad operand count (a ptojit bug)");
  const XTensor &x = c.tensors[0], &y = c.tensors[1];
  const auto dt = static_cast<DataType>(x.dtype);
  if (y.rank != x.rank || y.dtype != x.dtype || !is_float(dt))
    return pto_rt_fail_msg(c.ctx, PTO_ERROR_INTERNAL, static_cast<int32_t>(c.site),
                           "bessel: output does not match the input (a ptojit bug)");
  for (int64_t d = 0; d < x.rank; ++d) {
    if (y.valid[d] < x.valid[d])
      return pto_rt_fail_msg(c.ctx, PTO_ERROR_INTERNAL, static_cast<int32_t>(c.site),
                             "bessel: output does not match the input (a ptojit bug)");
    if (x.valid[d] == 0)
      return PTO_OK;
  }
  int64_t idx[kXMaxRank] = {};
  for (;;) {
    const double v = x_load_f(x, x_lin(x, idx));
    const double r = dt == DT_DOUBLE ? static_cast<double>(bessel_ie<long double>(nu, v))
                                     : bessel_ie<double>(nu, v);
    x_store_f(y, x_lin(y, idx), r);
    int64_t d = x.rank - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < x.valid[d])
        break;
      idx[d] = 0;
    }
    if (d < 0)
      return PTO_OK;
  }
}

} // namespace

int32_t xop_bessel_i0e(const XCall &call) { return bessel(call, 0); }
int32_t xop_bessel_i1e(const XCall &call) { return bessel(call, 1); }

} // namespace pto::codegen
