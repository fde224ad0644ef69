// naive.h - Independent reference computations for the tests: plain C++ loops in double (or
// int64 for integer dtypes) over row-major arrays. Shares no code with ptojit beyond HostTensor
// (for I/O) and the fp16/bf16 conversions of pto/half.h.
#pragma once

#include "pto/dtype.h"
#include "pto/host_tensor.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace naive {

/// A row-major array of doubles: the expected values of a test.
struct Array {
  std::vector<int64_t> shape;
  std::vector<double> v;
  int64_t numel() const { return static_cast<int64_t>(v.size()); }
};

/// A tensor of `dt` filled from a seeded std::mt19937_64: floats uniform in [lo, hi) (then
/// rounded to the dtype), ints uniform in [ceil(lo), floor(hi)], bool 0/1.
pto::HostTensor random_tensor(pto::DataType dt, const std::vector<int64_t> &shape, uint64_t seed,
                              double lo = -1.0, double hi = 1.0);
/// The elements of `t` as doubles (exact for every supported dtype except int64 beyond 2^53).
Array from(const pto::HostTensor &t);
/// A tensor of `dt` holding `a` (rounded to nearest even for floats, wrapped for ints).
pto::HostTensor to_tensor(const Array &a, pto::DataType dt);

/// Numpy broadcast of two shapes (right-aligned; a size-1 dim stretches).
std::vector<int64_t> broadcast_shape(const std::vector<int64_t> &a, const std::vector<int64_t> &b);
/// Elementwise f(a[i]).
Array map(const Array &a, const std::function<double(double)> &f);
/// Elementwise f(a, b) with numpy broadcasting.
Array zip(const Array &a, const Array &b, const std::function<double(double, double)> &f);

enum class Reduce { Sum, Max, Min };
/// Reduces `axis` of `a` (NaN propagates through Max/Min). keepdim keeps a size-1 axis.
Array reduce(const Array &a, int axis, bool keepdim, Reduce kind);
/// Softmax over the last axis of a 2-D array, in double: exp(x - max) / sum(exp(x - max)).
Array softmax_rows(const Array &a);
/// Batched matrix product in double, as PyPTO matmul: a [..., M, K] ([..., K, M] if a_trans),
/// b [..., K, N] ([..., N, K] if b_trans), same rank, batch dims broadcast; then + bias
/// (N elements, if given) and max(x, 0) if relu. A triple loop per batch element.
Array matmul(const Array &a, const Array &b, bool a_trans, bool b_trans,
             const Array *bias = nullptr, bool relu = false);

/// `v` wrapped to the integer dtype `dt` (two's complement), as double.
double wrap_int(int64_t v, pto::DataType dt);
/// `v` converted like a float -> int cast: truncate toward zero, NaN -> 0, saturate.
double saturate_int(double v, pto::DataType dt);
/// `v` rounded to the floating dtype `dt` (fp16/bf16 via pto/half.h, fp32 via float).
double round_to(double v, pto::DataType dt);

/// Largest |got - want| over all elements (NaN in exactly one of them counts as infinity).
double max_abs_error(const pto::HostTensor &got, const Array &want);
/// Largest |got - want| / max(|want|, floor).
double max_rel_error(const pto::HostTensor &got, const Array &want, double floor = 1e-30);

} // namespace naive
