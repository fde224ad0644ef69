// naive.cpp - See naive.h. Deliberately simple loops; speed does not matter here.
#include "support/naive.h"

#include "pto/half.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace naive {

namespace {

int64_t numel_of(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

/// Row-major multi-index of flat index `i`.
std::vector<int64_t> unflatten(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t> &idx, const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + idx[d];
  return i;
}

/// Index into an operand of `shape` broadcast to an output multi-index `out`.
int64_t broadcast_index(const std::vector<int64_t> &out, const std::vector<int64_t> &shape) {
  size_t off = out.size() - shape.size();
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + (shape[d] == 1 ? 0 : out[d + off]);
  return i;
}

} // namespace

pto::HostTensor random_tensor(pto::DataType dt, const std::vector<int64_t> &shape, uint64_t seed,
                              double lo, double hi) {
  pto::HostTensor t(dt, shape);
  std::mt19937_64 rng(seed);
  if (dt == pto::DT_BOOL) {
    std::uniform_int_distribution<int> u(0, 1);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, u(rng));
  } else if (pto::is_int(dt)) {
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(std::ceil(lo)),
                                             static_cast<int64_t>(std::floor(hi)));
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t v = u(rng);
      if (dt == pto::DT_INT64)
        t.data_as<int64_t>()[i] = v; // exact, also beyond 2^53
      else
        t.set(i, static_cast<double>(v));
    }
  } else {
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, u(rng));
  }
  return t;
}

Array from(const pto::HostTensor &t) {
  Array a;
  a.shape = t.shape();
  a.v.resize(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    a.v[static_cast<size_t>(i)] = t.get(i);
  return a;
}

pto::HostTensor to_tensor(const Array &a, pto::DataType dt) {
  pto::HostTensor t(dt, a.shape);
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = a.v[static_cast<size_t>(i)];
    if (pto::is_int(dt))
      t.set(i, wrap_int(static_cast<int64_t>(v), dt));
    else
      t.set(i, v);
  }
  return t;
}

std::vector<int64_t> broadcast_shape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("naive::broadcast_shape: shapes do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Array map(const Array &a, const std::function<double(double)> &f) {
  Array r = a;
  for (auto &x : r.v)
    x = f(x);
  return r;
}

Array zip(const Array &a, const Array &b, const std::function<double(double, double)> &f) {
  Array r;
  r.shape = broadcast_shape(a.shape, b.shape);
  int64_t n = numel_of(r.shape);
  r.v.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto idx = unflatten(i, r.shape);
    r.v[static_cast<size_t>(i)] = f(a.v[static_cast<size_t>(broadcast_index(idx, a.shape))],
                                    b.v[static_cast<size_t>(broadcast_index(idx, b.shape))]);
  }
  return r;
}

Array reduce(const Array &a, int axis, bool keepdim, Reduce kind) {
  int rank = static_cast<int>(a.shape.size());
  if (axis < 0)
    axis += rank;
  std::vector<int64_t> kept = a.shape;
  kept[static_cast<size_t>(axis)] = 1;
  Array r;
  r.shape = kept;
  int64_t n = numel_of(kept);
  r.v.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto idx = unflatten(i, kept);
    double acc = kind == Reduce::Sum   ? 0.0
                 : kind == Reduce::Max ? -std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::infinity();
    bool nan = false;
    for (int64_t k = 0; k < a.shape[static_cast<size_t>(axis)]; ++k) {
      idx[static_cast<size_t>(axis)] = k;
      double x = a.v[static_cast<size_t>(flatten(idx, a.shape))];
      nan = nan || std::isnan(x);
      if (kind == Reduce::Sum)
        acc += x;
      else if (kind == Reduce::Max)
        acc = x > acc ? x : acc;
      else
        acc = x < acc ? x : acc;
    }
    r.v[static_cast<size_t>(i)] = nan ? std::numeric_limits<double>::quiet_NaN() : acc;
  }
  if (!keepdim) {
    r.shape.erase(r.shape.begin() + axis);
    if (r.shape.empty())
      r.shape = {1};
  }
  return r;
}

Array softmax_rows(const Array &a) {
  int64_t rows = a.shape.at(0), cols = a.shape.at(1);
  Array r = a;
  for (int64_t i = 0; i < rows; ++i) {
    const double *x = &a.v[static_cast<size_t>(i * cols)];
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < cols; ++j)
      m = std::max(m, x[j]);
    double s = 0;
    for (int64_t j = 0; j < cols; ++j)
      s += std::exp(x[j] - m);
    for (int64_t j = 0; j < cols; ++j)
      r.v[static_cast<size_t>(i * cols + j)] = std::exp(x[j] - m) / s;
  }
  return r;
}

double wrap_int(int64_t v, pto::DataType dt) {
  auto u = static_cast<uint64_t>(v);
  switch (dt) {
  case pto::DT_INT8:
    return static_cast<int8_t>(static_cast<uint8_t>(u));
  case pto::DT_INT16:
    return static_cast<int16_t>(static_cast<uint16_t>(u));
  case pto::DT_INT32:
    return static_cast<int32_t>(static_cast<uint32_t>(u));
  case pto::DT_UINT8:
    return static_cast<uint8_t>(u);
  case pto::DT_BOOL:
    return v != 0;
  default:
    return static_cast<double>(v);
  }
}

double saturate_int(double v, pto::DataType dt) {
  if (std::isnan(v))
    return 0;
  double lo = 0, hi = 0;
  switch (dt) {
  case pto::DT_INT8:
    lo = -128, hi = 127;
    break;
  case pto::DT_INT16:
    lo = -32768, hi = 32767;
    break;
  case pto::DT_INT32:
    lo = -2147483648.0, hi = 2147483647.0;
    break;
  case pto::DT_INT64:
    lo = -9223372036854775808.0, hi = 9223372036854775807.0;
    break;
  case pto::DT_UINT8:
    lo = 0, hi = 255;
    break;
  default:
    return v;
  }
  double t = std::trunc(v);
  return t < lo ? lo : t > hi ? hi : t;
}

double round_to(double v, pto::DataType dt) {
  switch (dt) {
  case pto::DT_FP32:
    return static_cast<float>(v);
  case pto::DT_FP16:
    return pto::fp16_to_fp32(pto::fp32_to_fp16(static_cast<float>(v)));
  case pto::DT_BF16:
    return pto::bf16_to_fp32(pto::fp32_to_bf16(static_cast<float>(v)));
  default:
    return v;
  }
}

double max_abs_error(const pto::HostTensor &got, const Array &want) {
  if (got.numel() != want.numel())
    return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.v[static_cast<size_t>(i)];
    if (std::isnan(g) && std::isnan(w))
      continue;
    if (g == w) // also equal infinities
      continue;
    double e = std::fabs(g - w);
    if (std::isnan(e))
      return std::numeric_limits<double>::infinity();
    worst = std::max(worst, e);
  }
  return worst;
}

Array matmul(const Array &a, const Array &b, bool a_trans, bool b_trans, const Array *bias,
             bool relu) {
  const size_t r = a.shape.size();
  if (r < 2 || b.shape.size() != r)
    throw std::invalid_argument("naive::matmul: ranks");
  const int64_t M = a_trans ? a.shape[r - 1] : a.shape[r - 2];
  const int64_t K = a_trans ? a.shape[r - 2] : a.shape[r - 1];
  const int64_t N = b_trans ? b.shape[r - 2] : b.shape[r - 1];
  Array out;
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < r; ++d) {
    out.shape.push_back(std::max(a.shape[d], b.shape[d]));
    batches *= out.shape.back();
  }
  out.shape.push_back(M);
  out.shape.push_back(N);
  out.v.assign(static_cast<size_t>(batches * M * N), 0.0);
  const int64_t a_mat = a.shape[r - 2] * a.shape[r - 1], b_mat = b.shape[r - 2] * b.shape[r - 1];
  for (int64_t bt = 0; bt < batches; ++bt) {
    // Row-major batch index -> each operand's batch offset (size-1 dims broadcast).
    int64_t rem = bt, a_off = 0, b_off = 0, a_mul = 1, b_mul = 1;
    for (size_t d = r - 2; d-- > 0;) {
      int64_t i = rem % out.shape[d];
      rem /= out.shape[d];
      a_off += (a.shape[d] == 1 ? 0 : i) * a_mul;
      b_off += (b.shape[d] == 1 ? 0 : i) * b_mul;
      a_mul *= a.shape[d];
      b_mul *= b.shape[d];
    }
    const double *pa = a.v.data() + a_off * a_mat;
    const double *pb = b.v.data() + b_off * b_mat;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s +=
              (a_trans ? pa[k * M + i] : pa[i * K + k]) * (b_trans ? pb[j * K + k] : pb[k * N + j]);
        if (bias)
          s += bias->v[static_cast<size_t>(j)];
        if (relu && s < 0)
          s = 0;
        out.v[static_cast<size_t>((bt * M + i) * N + j)] = s;
      }
  }
  return out;
}

double max_rel_error(const pto::HostTensor &got, const Array &want, double floor) {
  if (got.numel() != want.numel())
    return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.get(i), w = want.v[static_cast<size_t>(i)];
    if ((std::isnan(g) && std::isnan(w)) || g == w)
      continue;
    double e = std::fabs(g - w) / std::max(std::fabs(w), floor);
    if (std::isnan(e))
      return std::numeric_limits<double>::infinity();
    worst = std::max(worst, e);
  }
  return worst;
}

} // namespace naive
