// nn_ops_test.cpp - The composites of nn_ops.h (and integer pow of ops.h), run as kernels in each
// run mode against plain double / int64 loops written here. One kernel per dtype runs many
// cases (support/multi_op.h). Inputs are [6, 37] under a [4, 16] tile (tails in both dims);
// ranks 1, 3 and 4 are reshaped views of them under tiles of their own rank, and unsqueezed
// size-1 dims give length-1 reductions. Edge rows (equal huge values, all -inf, empty valid
// extents) are built in the kernel with full/view.
#include "pto/pto.h"

#include "support/multi_op.h"
#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using naive::Array;
using support::Case;
using support::Tolerance;

namespace {

using T = pto::Tensor;
using Vec = std::vector<double>;
using Fn = std::function<T(T, T)>;

const std::vector<int64_t> kTile{4, 16};
const std::vector<int64_t> kShape{6, 37};

// ---- naive helpers ---------------------------------------------------------------------------

int64_t numel(const std::vector<int64_t> &s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
}
Array reshaped(Array a, std::vector<int64_t> shape) {
  a.shape = std::move(shape);
  return a;
}
/// The [r, c] block at (r0, c0) of a 2-D array.
Array block(const Array &a, int64_t r0, int64_t c0, int64_t r, int64_t c) {
  Array out;
  out.shape = {r, c};
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      out.v.push_back(a.v[static_cast<size_t>((r0 + i) * a.shape[1] + c0 + j)]);
  return out;
}
Array filled(std::vector<int64_t> shape, double v) {
  Array out;
  out.v.assign(static_cast<size_t>(numel(shape)), v);
  out.shape = std::move(shape);
  return out;
}
Array rounded(Array a, pto::DataType dt) {
  for (auto &x : a.v)
    x = naive::round_to(x, dt);
  return a;
}
/// The indices of `a` (row-major) grouped into lanes along `axis`.
std::vector<std::vector<size_t>> lanes(const std::vector<int64_t> &shape, int axis) {
  size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int>(shape.size()) : axis);
  int64_t inner = 1;
  for (size_t d = ax + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t n = shape[ax], outer = numel(shape) / (n * inner);
  std::vector<std::vector<size_t>> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<size_t> lane;
      for (int64_t k = 0; k < n; ++k)
        lane.push_back(static_cast<size_t>((o * n + k) * inner + i));
      out.push_back(lane);
    }
  return out;
}
/// f applied to every lane along `axis` (same shape).
Array along(const Array &a, int axis, const std::function<Vec(const Vec &)> &f) {
  Array out = a;
  for (auto &lane : lanes(a.shape, axis)) {
    Vec x;
    for (size_t i : lane)
      x.push_back(a.v[i]);
    Vec y = f(x);
    for (size_t k = 0; k < lane.size(); ++k)
      out.v[lane[k]] = y[k];
  }
  return out;
}
/// f folding every lane along `axis`; keepdim keeps it as size 1 (a result without dims is [1]).
Array fold(const Array &a, int axis, bool keepdim, const std::function<double(const Vec &)> &f) {
  size_t ax = static_cast<size_t>(axis < 0 ? axis + static_cast<int>(a.shape.size()) : axis);
  Array out;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (d != ax || keepdim)
      out.shape.push_back(d == ax ? 1 : a.shape[d]);
  if (out.shape.empty())
    out.shape = {1};
  for (auto &lane : lanes(a.shape, axis)) {
    Vec x;
    for (size_t i : lane)
      x.push_back(a.v[i]);
    out.v.push_back(f(x));
  }
  return out;
}
/// Normalizes over the trailing dims from `begin` (as one lane per leading index).
Array over_trailing(const Array &a, int begin, const std::function<Vec(const Vec &)> &f) {
  int64_t lead = 1;
  for (int d = 0; d < begin; ++d)
    lead *= a.shape[static_cast<size_t>(d)];
  Array flat = reshaped(a, {lead, a.numel() / lead});
  return reshaped(along(flat, 1, f), a.shape);
}

double vmax(const Vec &x) {
  double m = -INFINITY;
  for (double v : x)
    m = std::isnan(v) || v > m ? v : m;
  return m;
}
double vsum(const Vec &x) { return std::accumulate(x.begin(), x.end(), 0.0); }
Vec softmax_v(const Vec &x) {
  double m = vmax(x), s = 0;
  Vec y;
  for (double v : x)
    s += std::exp(v - m);
  for (double v : x)
    y.push_back(std::exp(v - m) / s);
  return y;
}
Vec log_softmax_v(const Vec &x) {
  double m = vmax(x), s = 0;
  Vec y;
  for (double v : x)
    s += std::exp(v - m);
  for (double v : x)
    y.push_back(v - m - std::log(s));
  return y;
}
double logsumexp_v(const Vec &x) {
  double s = 0;
  for (double v : x)
    s += std::exp(v);
  return std::log(s);
}
std::function<Vec(const Vec &)> layer_norm_v(double eps) {
  return [eps](const Vec &x) {
    double mean = vsum(x) / static_cast<double>(x.size()), var = 0;
    for (double v : x)
      var += (v - mean) * (v - mean);
    var /= static_cast<double>(x.size());
    Vec y;
    for (double v : x)
      y.push_back((v - mean) / std::sqrt(var + eps));
    return y;
  };
}
std::function<Vec(const Vec &)> rms_norm_v(double eps) {
  return [eps](const Vec &x) {
    double ms = 0;
    for (double v : x)
      ms += v * v;
    ms /= static_cast<double>(x.size());
    Vec y;
    for (double v : x)
      y.push_back(v / std::sqrt(ms + eps));
    return y;
  };
}
std::function<Vec(const Vec &)> l2_v(double eps) {
  return [eps](const Vec &x) {
    double s = 0;
    for (double v : x)
      s += v * v;
    Vec y;
    for (double v : x)
      y.push_back(v / std::sqrt(std::max(s, eps)));
    return y;
  };
}
// naive::zip / naive::map are found by argument-dependent lookup.

// ---- kernel-side views of the inputs (the naive side mirrors them) ------------------------------

/// Row 2 of x as a rank-1 [37] tensor.
T rank1(const T &x) { return pto::reshape(pto::view(x, {1, 37}, {2, 0}), {37}); }
/// The first 36 columns of x as [6, 3, 12] and [2, 3, 4, 9].
T rank3(const T &x) { return pto::reshape(pto::view(x, {6, 36}, {0, 0}), {6, 3, 12}); }
T rank4(const T &x) { return pto::reshape(pto::view(x, {6, 36}, {0, 0}), {2, 3, 4, 9}); }
Array rank1(const Array &a) { return reshaped(block(a, 2, 0, 1, 37), {37}); }
Array rank3(const Array &a) { return reshaped(block(a, 0, 0, 6, 36), {6, 3, 12}); }
Array rank4(const Array &a) { return reshaped(block(a, 0, 0, 6, 36), {2, 3, 4, 9}); }

/// A case whose ops capture `tile` (of their rank); the harness's own ops get kTile back.
Case ranked(std::string name, std::vector<int64_t> tile, Fn f, Array want, Tolerance tol) {
  return {std::move(name),
          [tile = std::move(tile), f = std::move(f)](T a, T b) {
            pto::set_vec_tile_shapes(tile);
            T r = f(a, b);
            pto::set_vec_tile_shapes(kTile);
            return r;
          },
          std::move(want), tol};
}
Case r1(std::string n, Fn f, Array w, Tolerance t) {
  return ranked(std::move(n), {16}, std::move(f), std::move(w), t);
}
Case r3(std::string n, Fn f, Array w, Tolerance t) {
  return ranked(std::move(n), {2, 2, 8}, std::move(f), std::move(w), t);
}
Case r4(std::string n, Fn f, Array w, Tolerance t) {
  return ranked(std::move(n), {1, 2, 2, 4}, std::move(f), std::move(w), t);
}

/// Like support::run_cases, but cheaper to compile: result k, seen as [rows, last] (its leading
/// dims merged), is cast to DT_DOUBLE and assembled at row offset r_k of one [R, W] output, so
/// 2-D results need no reshape (a standalone copy loop each).
std::string run_rows(pto::RunMode m, const pto::HostTensor &a, const pto::HostTensor &b,
                     const std::vector<Case> &cases) {
  int64_t width = 1, total = 0;
  std::vector<int64_t> row0;
  for (auto &c : cases) {
    int64_t last = c.want.shape.back();
    width = std::max(width, last);
    row0.push_back(total);
    total += c.want.numel() / last;
  }
  pto::HostTensor out(pto::DT_DOUBLE, {total, width});
  std::string report;
  auto kernel = pto::jit(
      "nn_cases",
      [&](T ta, T tb, T to) {
        pto::set_vec_tile_shapes(kTile);
        for (size_t i = 0; i < cases.size(); ++i) {
          const Case &c = cases[i];
          T r = c.f(ta, tb);
          std::vector<int64_t> got;
          for (auto &d : r.shape())
            got.push_back(d.is_concrete() ? d.concrete() : -1);
          if (got != c.want.shape) {
            report += c.name + ": result shape " + pto::str(r.shape()) + " differs\n";
            continue;
          }
          int64_t last = got.back();
          if (got.size() != 2)
            r = pto::reshape(r, {c.want.numel() / last, last});
          pto::assemble(pto::cast(r, pto::DT_DOUBLE), {row0[i], 0}, to);
        }
      },
      support::opts(m));
  kernel(a, b, out);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    int64_t last = c.want.shape.back();
    pto::HostTensor got(pto::DT_DOUBLE, c.want.shape);
    for (int64_t j = 0; j < c.want.numel(); ++j)
      got.set(j, out.get((row0[i] + j / last) * width + j % last));
    std::string mm = support::mismatch(got, c.want, c.tol);
    if (!mm.empty())
      report += c.name + ": " + mm + "\n";
  }
  return report;
}

/// Runs `cases` in every run mode, a few cases per kernel (LLVM's time grows faster than
/// linearly with a kernel's size). JIT compiles cost ~50-100 ms per case, so when `jit_only` is
/// not empty the JIT mode runs only the cases it names (the interpreter always runs all).
void check_all(const pto::HostTensor &a, const pto::HostTensor &b, const std::vector<Case> &cases,
               const std::vector<std::string> &jit_only = {}) {
  const size_t chunk = 4;
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      std::vector<Case> sel;
      for (const auto &c : cases)
        if (m != pto::RunMode::Jit || jit_only.empty() ||
            std::find(jit_only.begin(), jit_only.end(), c.name) != jit_only.end())
          sel.push_back(c);
      if (!jit_only.empty() && m == pto::RunMode::Jit)
        CHECK(sel.size() == jit_only.size()); // every name is a case
      for (size_t i = 0; i < sel.size(); i += chunk) {
        auto end = static_cast<std::ptrdiff_t>(std::min(sel.size(), i + chunk));
        std::vector<Case> part(sel.begin() + static_cast<std::ptrdiff_t>(i), sel.begin() + end);
        CHECK_MESSAGE(run_rows(m, a, b, part) == "", "mode ", support::mode_name(m));
      }
    }
  }
}

/// An empty valid extent on the last axis.
T empty_cols(const T &x) {
  return pto::view(x, {6, 37}, {0, 0}, {.valid_shape = std::vector<pto::SymbolicScalar>{6, 0}});
}

/// Philox4x32-10 (Salmon et al. 2011; Random123's round constants), written here from the paper
/// for the dropout masks.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t{0xD2511F53u} * c[0], p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}
/// The uniform u of element i (shape_ops.h's mapping).
double philox_u(int64_t i, uint64_t key, uint64_t counter) {
  auto b = static_cast<uint64_t>(i / 4);
  auto w = philox({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                   static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32)},
                  {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  return static_cast<double>(w[static_cast<size_t>(i % 4)] >> 8) * std::ldexp(1.0, -24);
}

const pto::DataType kFloatTypes[] = {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_DOUBLE};

} // namespace

TEST_CASE("philox reference of the test matches Random123's known answer") {
  // Random123 kat_vectors: philox4x32 10 rounds, counter 0, key 0.
  auto w = philox({0, 0, 0, 0}, {0, 0});
  CHECK(w == std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
}

namespace {
/// softmax_cross_entropy_with_logits' loss per row of [rows, n] logits x and labels z.
Array ce_loss(const Array &x, const Array &z, pto::DataType dt) {
  int64_t n = x.shape.back(), rows = x.numel() / n;
  Array out{{rows}, {}};
  for (int64_t i = 0; i < rows; ++i) {
    Vec xi(x.v.begin() + i * n, x.v.begin() + (i + 1) * n);
    Vec ls = log_softmax_v(xi);
    double s = 0;
    for (size_t k = 0; k < ls.size(); ++k)
      s -= z.v[static_cast<size_t>(i * n) + k] * ls[k];
    out.v.push_back(naive::round_to(s, dt));
  }
  return out;
}
double sce(double x, double z) {
  return std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::fabs(x)));
}
/// Column 3 of x: a [6, 1] tensor, for reductions over a length-1 axis.
T col3(const T &x) { return pto::view(x, {6, 1}, {0, 3}); }
} // namespace

TEST_CASE("softmax family, normalizations and losses match naive double loops (tails, rank 1, "
          "length-1 axes, equal huge values, -inf rows, empty rows) in every float dtype") {
  for (pto::DataType dt : kFloatTypes) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, kShape, 101, -3, 3);
      auto b = naive::random_tensor(dt, kShape, 102, 0.5, 1.5);
      Array A = naive::from(a), B = naive::from(b);
      Tolerance tol = support::tolerance(dt);
      // A loss sums 37 terms of ~4: ten times the elementwise bound.
      Tolerance sum_tol{tol.rel * 10, tol.abs * 10};
      auto R = [dt](Array x) { return rounded(std::move(x), dt); };
      const double huge = dt == pto::DT_FP16 ? 60000 : 1e30; // equal large values
      Array W37 = block(B, 0, 0, 1, 37), B37 = block(B, 1, 0, 1, 37), C3 = block(A, 0, 3, 6, 1);
      auto w37 = [](T y) { return pto::reshape(pto::view(y, {1, 37}, {0, 0}), {37}); };
      auto b37 = [](T y) { return pto::reshape(pto::view(y, {1, 37}, {1, 0}), {37}); };
      std::vector<Case> cases = {
          // softmax along the last (fused) and the leading (standalone) axis.
          {"softmax -1", [](T x, T) { return pto::softmax(x, -1); }, R(along(A, 1, softmax_v)),
           tol},
          {"softmax 0", [](T x, T) { return pto::softmax(x, 0); }, R(along(A, 0, softmax_v)), tol},
          r1(
              "softmax rank 1", [](T x, T) { return pto::softmax(rank1(x), 0); },
              R(along(rank1(A), 0, softmax_v)), tol),
          {"softmax over a length-1 axis is 1",
           [](T x, T) { return pto::softmax(col3(x), 1); },
           filled({6, 1}, 1),
           {}},
          {"softmax of equal huge values is uniform",
           [=](T, T) { return pto::softmax(pto::full({3, 37}, huge, dt), -1); },
           R(filled({3, 37}, 1.0 / 37)), tol},
          {"softmax of a row of -inf is NaN",
           [=](T, T) { return pto::softmax(pto::full({2, 37}, -INFINITY, dt), 1); },
           filled({2, 37}, NAN),
           {}},
          {"log_softmax -1", [](T x, T) { return pto::log_softmax(x, -1); },
           R(along(A, 1, log_softmax_v)), tol},
          {"log_softmax 0", [](T x, T) { return pto::log_softmax(x, 0); },
           R(along(A, 0, log_softmax_v)), tol},
          {"log_softmax over a length-1 axis is 0",
           [](T x, T) { return pto::log_softmax(col3(x), -1); },
           filled({6, 1}, 0),
           {}},
          {"log_softmax of equal huge values",
           [=](T, T) { return pto::log_softmax(pto::full({2, 37}, huge, dt), -1); },
           R(filled({2, 37}, -std::log(37.0))), tol},
          {"logsumexp -1", [](T x, T) { return pto::logsumexp(x, -1); },
           R(fold(A, 1, false, logsumexp_v)), tol},
          {"logsumexp 0 keepdim", [](T x, T) { return pto::logsumexp(x, 0, {.keepdim = true}); },
           R(fold(A, 0, true, logsumexp_v)), tol},
          r1(
              "logsumexp rank 1", [](T x, T) { return pto::logsumexp(rank1(x), 0); },
              R(fold(rank1(A), 0, false, logsumexp_v)), tol),
          {"logsumexp over a length-1 axis is the identity",
           [](T x, T) { return pto::logsumexp(col3(x), 1, {.keepdim = true}); },
           C3,
           {}},
          {"logsumexp of -inf rows is -inf",
           [=](T, T) { return pto::logsumexp(pto::full({2, 37}, -INFINITY, dt), 1); },
           filled({2}, -INFINITY),
           {}},
          {"logsumexp of an empty row is -inf",
           [](T x, T) { return pto::logsumexp(empty_cols(x), 1); },
           filled({6}, -INFINITY),
           {}},
          // normalizations
          {"layer_norm last axis", [](T x, T) { return pto::layer_norm(x); },
           R(along(A, 1, layer_norm_v(1e-5))), tol},
          {"layer_norm weight bias eps",
           [=](T x, T y) {
             return pto::layer_norm(x, 1, {.weight = w37(y), .bias = b37(y), .eps = 1e-3});
           },
           R(zip(zip(along(A, 1, layer_norm_v(1e-3)), W37, std::multiplies<>()), B37,
                 std::plus<>())),
           tol},
          {"layer_norm over both dims", [](T x, T) { return pto::layer_norm(x, 0, {.eps = 0.5}); },
           R(over_trailing(A, 0, layer_norm_v(0.5))), tol},
          {"layer_norm over a length-1 axis gives the bias",
           [](T x, T) {
             return pto::layer_norm(col3(x), -1, {.bias = pto::full({1}, 0.25, x.dtype())});
           },
           filled({6, 1}, 0.25),
           {}},
          {"rms_norm", [](T x, T) { return pto::rms_norm(x); }, R(along(A, 1, rms_norm_v(1e-6))),
           tol},
          {"rms_norm gamma epsilon",
           [=](T x, T y) { return pto::rms_norm(x, {.gamma = w37(y), .epsilon = 0.1}); },
           R(zip(along(A, 1, rms_norm_v(0.1)), W37, std::multiplies<>())), tol},
          r1(
              "rms_norm rank 1", [](T x, T) { return pto::rms_norm(rank1(x)); },
              R(along(rank1(A), 0, rms_norm_v(1e-6))), tol),
          {"l2_normalize 1", [](T x, T) { return pto::l2_normalize(x, 1); },
           R(along(A, 1, l2_v(1e-4))), tol},
          {"l2_normalize 0 with a large epsilon",
           [](T x, T) { return pto::l2_normalize(x, 0, 30.0); }, R(along(A, 0, l2_v(30))), tol},
          {"l2_normalize over a length-1 axis is the sign",
           [](T x, T) { return pto::l2_normalize(col3(x), 1, 0.0); },
           map(C3, [](double v) { return v / std::fabs(v); }),
           {}},
          // losses
          {"sigmoid_cross_entropy_with_logits",
           [](T x, T y) { return pto::sigmoid_cross_entropy_with_logits(x, y); }, R(zip(A, B, sce)),
           tol},
          {"sigmoid_cross_entropy_with_logits broadcast labels",
           [=](T x, T y) { return pto::sigmoid_cross_entropy_with_logits(x, w37(y)); },
           R(zip(A, reshaped(W37, {37}), sce)), tol},
          {"softmax_cross_entropy_with_logits loss",
           [](T x, T y) { return pto::softmax_cross_entropy_with_logits(x, y).loss; },
           ce_loss(A, B, dt), sum_tol},
          {"softmax_cross_entropy_with_logits backprop",
           [](T x, T y) { return pto::softmax_cross_entropy_with_logits(x, y).backprop; },
           R(zip(along(A, 1, softmax_v), B, std::minus<>())), tol},
          r1(
              "softmax_cross_entropy_with_logits rank 1 loss",
              [](T x, T y) {
                return pto::softmax_cross_entropy_with_logits(rank1(x), rank1(y)).loss;
              },
              reshaped(ce_loss(reshaped(rank1(A), {1, 37}), reshaped(rank1(B), {1, 37}), dt), {1}),
              sum_tol),
          {"softmax_cross_entropy_with_logits of an empty row is 0",
           [](T x, T y) {
             return pto::softmax_cross_entropy_with_logits(empty_cols(x), empty_cols(y)).loss;
           },
           filled({6}, 0),
           {}},
      };
      // fp32 compiles every case; the other dtypes compile one case per op (the interpreter
      // runs all of them): the composites' dtype handling is shared by all their shapes.
      std::vector<std::string> jit_only;
      if (dt != pto::DT_FP32)
        jit_only = {"softmax of equal huge values is uniform",
                    "log_softmax -1",
                    "logsumexp -1",
                    "layer_norm weight bias eps",
                    "rms_norm gamma epsilon",
                    "l2_normalize 1",
                    "sigmoid_cross_entropy_with_logits",
                    "softmax_cross_entropy_with_logits backprop"};
      check_all(a, b, cases, jit_only);
    }
  }
}

TEST_CASE("softmax family and normalizations at ranks 3 and 4 (fp32)") {
  auto a = naive::random_tensor(pto::DT_FP32, kShape, 111, -3, 3);
  auto b = naive::random_tensor(pto::DT_FP32, kShape, 112, 0.5, 1.5);
  Array A = naive::from(a), B = naive::from(b);
  Tolerance tol = support::tolerance(pto::DT_FP32);
  Array W312 = reshaped(block(B, 2, 0, 1, 36), {3, 12});
  auto w312 = [](T y) { return pto::reshape(pto::view(y, {1, 36}, {2, 0}), {3, 12}); };
  std::vector<Case> cases = {
      r3(
          "softmax rank 3 axis 1", [](T x, T) { return pto::softmax(rank3(x), 1); },
          along(rank3(A), 1, softmax_v), tol),
      r4(
          "log_softmax rank 4 axis -1", [](T x, T) { return pto::log_softmax(rank4(x), -1); },
          along(rank4(A), 3, log_softmax_v), tol),
      r4(
          "logsumexp rank 4 axis 2", [](T x, T) { return pto::logsumexp(rank4(x), 2); },
          fold(rank4(A), 2, false, logsumexp_v), tol),
      r3(
          "layer_norm rank 3 over 2 dims with weight",
          [=](T x, T y) { return pto::layer_norm(rank3(x), 1, {.weight = w312(y)}); },
          zip(over_trailing(rank3(A), 1, layer_norm_v(1e-5)), W312, std::multiplies<>()), tol),
      r4(
          "rms_norm rank 4", [](T x, T) { return pto::rms_norm(rank4(x)); },
          along(rank4(A), 3, rms_norm_v(1e-6)), tol),
  };
  check_all(a, b, cases);
}

TEST_CASE("elementwise composites match naive loops in every float dtype") {
  for (pto::DataType dt : kFloatTypes) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, kShape, 201, -3, 3);
      auto b = naive::random_tensor(dt, kShape, 202, -2, 2);
      for (int64_t i : {0, 5, 40, 77, 111, 221}) // divisors of 0 for div_no_nan
        b.set(i, 0.0);
      a.set(40, 0.0); // 0 / 0
      Array A = naive::from(a), B = naive::from(b);
      Tolerance tol = support::tolerance(dt);
      auto R = [dt](Array x) { return rounded(std::move(x), dt); };
      // round(x, d) as computed: in double for fp64, in fp32 otherwise (fp16/bf16 widened).
      auto round_dec = [&](const Array &in, int d) {
        return R(map(in, [=](double x) {
          double s = std::pow(10.0, std::abs(d));
          if (dt == pto::DT_DOUBLE)
            return d > 0 ? std::nearbyint(x * s) / s : std::nearbyint(x / s) * s;
          float xf = static_cast<float>(x), sf = static_cast<float>(s);
          return static_cast<double>(d > 0 ? std::nearbyint(xf * sf) / sf
                                           : std::nearbyint(xf / sf) * sf);
        }));
      };
      Array C3 = reshaped(block(B, 0, 0, 1, 3), {3}); // per-channel weights / biases
      auto c3 = [](T y) { return pto::reshape(pto::view(y, {1, 3}, {0, 0}), {3}); };
      auto lerp_ref = [](double s, double e, double w) {
        return std::fabs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
      };
      std::vector<Case> cases = {
          {"div_no_nan", [](T x, T y) { return pto::div_no_nan(x, y); },
           R(zip(A, B, [](double x, double y) { return y == 0 ? 0 : x / y; })), tol},
          {"div_no_nan scalar 0", [](T x, T) { return pto::div_no_nan(x, 0); }, filled(kShape, 0),
           {}},
          {"div_no_nan scalar numerator", [](T, T y) { return pto::div_no_nan(2, y); },
           R(map(B, [](double y) { return y == 0 ? 0 : 2 / y; })), tol},
          {"floor_mod", [](T x, T y) { return pto::floor_mod(x, pto::add(y, 2.5)); },
           R(zip(A, B,
                 [&](double x, double y) {
                   double d = naive::round_to(y + 2.5, dt);
                   return x - d * std::floor(x / d);
                 })),
           tol},
          {"floor_mod negative divisor", [](T x, T) { return pto::floor_mod(x, -1.25); },
           R(map(A, [](double x) { return x - -1.25 * std::floor(x / -1.25); })), tol},
          {"mod (C fmod)", [](T x, T) { return pto::mod(x, -1.25); },
           R(map(A, [](double x) { return std::fmod(x, -1.25); })), tol},
          {"ceil_div", [](T x, T) { return pto::ceil_div(x, 0.75); },
           R(map(A, [](double x) { return std::ceil(x / 0.75); })), tol},
          {"approximate_equal", [](T x, T y) {
             return pto::cast(pto::approximate_equal(x, pto::add(x, pto::mul(y, 0.25)), 0.2),
                              pto::DT_INT32);
           },
           zip(A, B,
               [&](double x, double y) {
                 double x2 = naive::round_to(x + naive::round_to(y * 0.25, dt), dt);
                 return std::fabs(x - x2) < 0.2 ? 1.0 : 0.0;
               }),
           {}},
          {"greater", [](T x, T y) { return pto::cast(pto::greater(x, y), pto::DT_INT32); },
           zip(A, B, [](double x, double y) { return x > y ? 1.0 : 0.0; }), {}},
          {"round 0", [](T x, T) { return pto::round(x, 0); },
           R(map(A, [](double x) { return std::nearbyint(x); })), {}},
          {"round 1", [](T x, T) { return pto::round(x, 1); }, round_dec(A, 1), tol},
          {"round 2", [](T x, T) { return pto::round(pto::mul(x, 7.0), 2); },
           round_dec(R(map(A, [](double x) { return x * 7; })), 2), tol},
          {"round -1", [](T x, T) { return pto::round(pto::mul(x, 40.0), -1); },
           round_dec(R(map(A, [](double x) { return x * 40; })), -1), tol},
          {"round 1 ties to even at the scaled value",
           [=](T, T) { return pto::round(pto::full({1, 4}, 0.25, dt), 1); },
           R(filled({1, 4}, dt == pto::DT_DOUBLE ? 0.2 : static_cast<double>(0.2f))), tol},
          {"lerp scalar low", [](T x, T y) { return pto::lerp(x, y, 0.25); },
           R(zip(A, B, [&](double s, double e) { return lerp_ref(s, e, 0.25); })), tol},
          {"lerp scalar 1 is end", [](T x, T y) { return pto::lerp(x, y, 1.0); }, B, {}},
          {"lerp tensor weight", [](T x, T y) { return pto::lerp(y, x, pto::mul(y, 0.5)); },
           R(zip(B, A,
                 [&](double s, double e) { return lerp_ref(s, e, naive::round_to(s * 0.5, dt)); })),
           tol},
          {"addcmul", [](T x, T y) { return pto::addcmul(x, y, x, 0.5); },
           R(zip(A, B, [](double x, double y) { return x + 0.5 * y * x; })), tol},
          {"addcdiv", [](T x, T y) { return pto::addcdiv(x, x, pto::add(y, 3.0), -2.0); },
           R(zip(A, B, [&](double x, double y) { return x - 2 * x / naive::round_to(y + 3, dt); })),
           tol},
          {"expand_exp_dif", [](T x, T y) {
             return pto::expand_exp_dif(x, pto::view(y, {6, 1}, {0, 0}));
           },
           R(zip(A, block(B, 0, 0, 6, 1), [](double x, double y) { return std::exp(x - y); })),
           tol},
          {"axpy", [](T x, T y) { return pto::axpy(y, x, -1.5); },
           R(zip(B, A, [](double y, double x) { return y - 1.5 * x; })), tol},
          {"axpy broadcast x", [](T x, T y) { return pto::axpy(y, pto::view(x, {1, 37}, {0, 0})); },
           R(zip(B, block(A, 0, 0, 1, 37), std::plus<>())), tol},
          r4("bias_add NCHW",
             [=](T x, T y) { return pto::bias_add(rank4(x), c3(y)); },
             R(zip(rank4(A), reshaped(C3, {3, 1, 1}), std::plus<>())), tol),
          r4("bias_add NHWC",
             [](T x, T y) {
               return pto::bias_add(rank4(x), pto::reshape(pto::view(y, {1, 9}, {1, 0}), {9}),
                                    pto::DataFormat::NHWC);
             },
             R(zip(rank4(A), reshaped(block(B, 1, 0, 1, 9), {9}), std::plus<>())), tol),
          {"bias_add rank 2", [](T x, T y) {
             return pto::bias_add(x, pto::reshape(pto::view(y, {1, 37}, {2, 0}), {37}));
           },
           R(zip(A, reshaped(block(B, 2, 0, 1, 37), {37}), std::plus<>())), tol},
          r4("prelu per channel", [=](T x, T y) { return pto::prelu(rank4(x), c3(y)); },
             R(zip(rank4(A), reshaped(C3, {3, 1, 1}),
                   [](double x, double w) { return x < 0 ? w * x : x; })),
             tol),
          r1("prelu rank 1 shared weight",
             [](T x, T y) {
               return pto::prelu(rank1(x), pto::reshape(pto::view(y, {1, 1}, {0, 1}), {1}));
             },
             R(map(rank1(A),
                   [&](double x) { return x < 0 ? B.v[1] * x : x; })),
             tol),
          {"prelu rank 2 per column", [](T x, T y) {
             return pto::prelu(x, pto::reshape(pto::view(y, {1, 37}, {3, 0}), {37}));
           },
           R(zip(A, block(B, 3, 0, 1, 37), [](double x, double w) { return x < 0 ? w * x : x; })),
           tol},
          {"zeros_like", [](T x, T) { return pto::zeros_like(x); }, filled(kShape, 0), {}},
          {"ones_like", [](T x, T) { return pto::ones_like(x); }, filled(kShape, 1), {}},
          {"full_like int8", [](T x, T) { return pto::full_like(x, -7, pto::DT_INT8); },
           filled(kShape, -7), {}},
          {"argmax_with_value index",
           [](T x, T) { return pto::argmax_with_value(x, 1).index; },
           fold(A, 1, false,
                [](const Vec &v) {
                  return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin());
                }),
           {}},
          {"argmax_with_value values",
           [](T x, T) { return pto::argmax_with_value(x, 0, {.keepdim = true}).values; },
           fold(A, 0, true, vmax), {}},
          {"argmin_with_value values",
           [](T x, T) { return pto::argmin_with_value(x, 1).values; },
           fold(A, 1, false,
                [](const Vec &v) { return *std::min_element(v.begin(), v.end()); }),
           {}},
          {"fillpad",
           [](T x, T) {
             return pto::fillpad(pto::view(x, {6, 37}, {0, 0},
                                           {.valid_shape = std::vector<pto::SymbolicScalar>{4, 20}}),
                                 -INFINITY);
           },
           [&] {
             Array out = A;
             for (int64_t i = 0; i < 6; ++i)
               for (int64_t j = 0; j < 37; ++j)
                 if (i >= 4 || j >= 20)
                   out.v[static_cast<size_t>(i * 37 + j)] = -INFINITY;
             return out;
           }(),
           {}},
      };
      std::vector<std::string> jit_only;
      if (dt != pto::DT_FP32) // see the softmax test
        jit_only = {"div_no_nan", "round 1", "lerp tensor weight",
                    "addcdiv",    "axpy",    "prelu rank 2 per column"};
      check_all(a, b, cases, jit_only);
    }
  }
}

TEST_CASE("dropout keeps the elements whose Philox uniform is >= p, scales them by 1/(1-p), and "
          "is reproducible") {
  for (pto::DataType dt : {pto::DT_FP32, pto::DT_BF16}) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, kShape, 301, -3, 3);
      a.set(3, NAN); // dropped or kept like any value
      Array A = naive::from(a);
      auto R = [dt](Array x) { return rounded(std::move(x), dt); };
      auto dropped = [&](double p, uint64_t key, uint64_t counter) {
        Array out = A;
        for (int64_t i = 0; i < A.numel(); ++i) {
          bool keep = philox_u(i, key, counter) >= static_cast<double>(static_cast<float>(p));
          out.v[static_cast<size_t>(i)] = keep ? A.v[static_cast<size_t>(i)] / (1 - p) : 0.0;
        }
        return R(out);
      };
      Array kept = dropped(0.3, 7, 11);
      int64_t zeros = 0;
      for (double v : kept.v)
        zeros += v == 0 ? 1 : 0;
      CHECK(zeros > 40); // 222 * 0.3 = 67 expected: the mask is not trivial
      CHECK(zeros < 100);
      Tolerance tol = support::tolerance(dt);
      std::vector<Case> cases = {
          {"dropout p 0.3", [](T x, T) { return pto::dropout(x, 0.3, 7, 11); }, kept, tol},
          {"dropout same key again", [](T x, T) { return pto::dropout(x, 0.3, 7, 11); }, kept, tol},
          {"dropout other counter", [](T x, T) { return pto::dropout(x, 0.3, 7, 12); },
           dropped(0.3, 7, 12), tol},
          {"dropout other key, high p", [](T x, T) { return pto::dropout(x, 0.9, 1ull << 40, 3); },
           dropped(0.9, 1ull << 40, 3), tol},
          {"dropout p 0 is the identity",
           [](T x, T) { return pto::dropout(x, 0.0, 7, 11); },
           A,
           {}},
          {"dropout p 1 is zeros",
           [](T x, T) { return pto::dropout(x, 1.0, 7, 11); },
           filled(kShape, 0),
           {}},
          {"dropout_gen_mask",
           [](T, T) { return pto::cast(pto::dropout_gen_mask({6, 37}, 0.5, 5, 0), pto::DT_INT32); },
           [] {
             Array m = filled({6, 37}, 0);
             for (int64_t i = 0; i < m.numel(); ++i)
               m.v[static_cast<size_t>(i)] = philox_u(i, 5, 0) >= 0.5 ? 1 : 0;
             return m;
           }(),
           {}},
          {"dropout_do_mask with a mask of its own",
           [](T x, T) { return pto::dropout_do_mask(x, pto::gt(x, 0), 0.5); },
           R(map(A, [](double x) { return x > 0 ? 2 * x : 0.0; })), tol},
      };
      std::vector<std::string> jit_only;
      if (dt != pto::DT_FP32)
        jit_only = {"dropout p 0.3", "dropout p 1 is zeros"};
      check_all(a, a, cases, jit_only);
    }
  }
}

TEST_CASE("integer composites: pow, gcd, ceil_div, div_no_nan, round(decimals), bias_add are "
          "exact") {
  const pto::DataType kInts[] = {pto::DT_INT8, pto::DT_INT16, pto::DT_INT32, pto::DT_INT64,
                                 pto::DT_UINT8};
  for (pto::DataType dt : kInts) {
    SUBCASE(pto::name(dt).c_str()) {
      bool is_unsigned = dt == pto::DT_UINT8;
      auto a = naive::random_tensor(dt, kShape, 401, is_unsigned ? 0 : -120, 120);
      auto b = naive::random_tensor(dt, kShape, 402, is_unsigned ? 0 : -9, 9);
      for (int64_t i : {1, 38, 100})
        b.set(i, 0.0);
      a.set(0, 0.0);  // gcd(0, x)
      a.set(2, 25.0); // round ties at -1 decimals: 25 -> 20, 35 -> 40
      a.set(4, 35.0);
      if (!is_unsigned) {
        a.set(6, -25.0);
        a.set(8, -35.0);
      }
      if (dt == pto::DT_INT8 || dt == pto::DT_INT16 || dt == pto::DT_INT32) {
        // gcd(INT_MIN, 0) = |INT_MIN| wraps to INT_MIN (doubles hold these exactly).
        a.set(10, -std::ldexp(1.0, static_cast<int>(pto::bytes_of(dt)) * 8 - 1));
        b.set(10, 0.0);
      }
      Array A = naive::from(a), B = naive::from(b);
      auto wrap = [dt](int64_t v) { return naive::wrap_int(v, dt); };
      auto ipow = [&](double base, double e) -> double {
        auto x = static_cast<int64_t>(base), n = static_cast<int64_t>(e);
        if (n < 0)
          return x == 1 ? 1 : x == -1 ? (n % 2 != 0 ? -1 : 1) : 0;
        uint64_t r = 1;
        for (int64_t k = 0; k < n; ++k)
          r *= static_cast<uint64_t>(x);
        return wrap(static_cast<int64_t>(r));
      };
      // Exponents in [0, 9] (negative ones for signed types), bases in [-5, 5] (or [0, 9]).
      auto small_exp = [](T y) { return pto::remainder(y, 10); };
      Array E = map(B, [](double y) { return y - 10 * std::floor(y / 10); });
      auto small_base = [](T x) { return pto::remainder(x, 11); };
      Array Bs = map(A, [](double x) { return x - 11 * std::floor(x / 11); });
      std::vector<Case> cases = {
          {"pow tensor exponent",
           [=](T x, T y) { return pto::pow(small_base(x), small_exp(y)); },
           zip(Bs, E, ipow),
           {}},
          {"pow wraps",
           [](T x, T) { return pto::pow(x, 7); },
           map(A, [&](double x) { return ipow(x, 7); }),
           {}},
          {"pow scalar 0 and 1",
           [](T x, T) { return pto::add(pto::pow(x, 0), pto::pow(x, 1)); },
           map(A, [&](double x) { return wrap(static_cast<int64_t>(x) + 1); }),
           {}},
          {"pow scalar base",
           [=](T, T y) { return pto::pow(3, small_exp(y)); },
           map(E, [&](double e) { return ipow(3, e); }),
           {}},
          {"gcd",
           [](T x, T y) { return pto::gcd(x, y); },
           zip(A, B,
               [&](double x, double y) {
                 return wrap(std::gcd(static_cast<int64_t>(x), static_cast<int64_t>(y)));
               }),
           {}},
          {"gcd scalar",
           [](T x, T) { return pto::gcd(x, 12); },
           map(A,
               [](double x) {
                 return static_cast<double>(std::gcd(static_cast<int64_t>(x), int64_t{12}));
               }),
           {}},
          {"ceil_div",
           [](T x, T y) { return pto::ceil_div(x, pto::where(pto::eq(y, 0), 4, y)); },
           zip(A, B, [](double x, double y) { return std::ceil(x / (y == 0 ? 4 : y)); }),
           {}},
          {"ceil_div scalar",
           [](T x, T) { return pto::ceil_div(x, 7); },
           map(A, [](double x) { return std::ceil(x / 7); }),
           {}},
          {"div_no_nan",
           [](T x, T y) { return pto::div_no_nan(x, y); },
           zip(A, B, [](double x, double y) { return y == 0 ? 0 : std::trunc(x / y); }),
           {}},
          {"floor_mod",
           [](T x, T y) { return pto::floor_mod(x, pto::where(pto::eq(y, 0), 3, y)); },
           zip(A, B,
               [](double x, double y) {
                 double d = y == 0 ? 3 : y;
                 return x - d * std::floor(x / d);
               }),
           {}},
          {"mod",
           [](T x, T y) { return pto::mod(x, pto::where(pto::eq(y, 0), 3, y)); },
           zip(A, B, [](double x, double y) { return std::fmod(x, y == 0 ? 3 : y); }),
           {}},
          {"round -1 ties to even",
           [](T x, T) { return pto::round(x, -1); },
           map(A,
               [&](double x) { return wrap(static_cast<int64_t>(std::nearbyint(x / 10) * 10)); }),
           {}},
          {"round -2",
           [](T x, T) { return pto::round(x, -2); },
           map(A,
               [&](double x) { return wrap(static_cast<int64_t>(std::nearbyint(x / 100) * 100)); }),
           {}},
          {"round 2 is the identity", [](T x, T) { return pto::round(x, 2); }, A, {}},
          {"round -30 is 0", [](T x, T) { return pto::round(x, -30); }, filled(kShape, 0), {}},
          {"addcmul",
           [](T x, T y) { return pto::addcmul(x, y, y, 2.0); },
           zip(A, B, [&](double x, double y) { return wrap(static_cast<int64_t>(x + 2 * y * y)); }),
           {}},
          {"bias_add",
           [](T x, T y) {
             return pto::bias_add(x, pto::reshape(pto::view(y, {1, 37}, {0, 0}), {37}));
           },
           zip(A, block(B, 0, 0, 1, 37),
               [&](double x, double y) { return wrap(static_cast<int64_t>(x + y)); }),
           {}},
      };
      if (!is_unsigned) {
        cases.push_back(
            {"pow negative exponents",
             [=](T x, T y) { return pto::pow(pto::sub(pto::remainder(x, 3), 1), pto::sub(y, 9)); },
             zip(map(A, [](double x) { return x - 3 * std::floor(x / 3) - 1; }), B,
                 [&](double base, double y) { return ipow(base, y - 9); }),
             {}});
      }
      std::vector<std::string> jit_only;
      if (dt != pto::DT_INT32) {
        jit_only = {"pow tensor exponent", "gcd", "ceil_div", "round -1 ties to even"};
        if (!is_unsigned)
          jit_only.push_back("pow negative exponents");
      }
      check_all(a, b, cases, jit_only);
    }
  }
}

TEST_CASE("cast with CastMode rounds float -> int by the mode, then saturates") {
  auto a = naive::random_tensor(pto::DT_FP32, kShape, 501, -300, 300);
  const double ties[] = {2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 3.7, -3.7, 1e10, -1e10, NAN, 0.49999997};
  for (size_t i = 0; i < std::size(ties); ++i)
    a.set(static_cast<int64_t>(i), ties[i]);
  Array A = naive::from(a);
  using M = pto::CastMode;
  auto via = [&](double (*f)(double), pto::DataType to) {
    return map(A, [=](double x) { return naive::saturate_int(std::isnan(x) ? x : f(x), to); });
  };
  auto cast_case = [](std::string n, M mode, pto::DataType to, Array want) {
    return Case{std::move(n), [=](T x, T) { return pto::cast(x, to, mode); }, std::move(want), {}};
  };
  std::vector<Case> cases = {
      cast_case("NONE int32", M::CAST_NONE, pto::DT_INT32, via(std::trunc, pto::DT_INT32)),
      cast_case("TRUNC int8", M::CAST_TRUNC, pto::DT_INT8, via(std::trunc, pto::DT_INT8)),
      cast_case("RINT int32", M::CAST_RINT, pto::DT_INT32, via(std::nearbyint, pto::DT_INT32)),
      cast_case("ROUND int32", M::CAST_ROUND, pto::DT_INT32, via(std::round, pto::DT_INT32)),
      cast_case("ROUND int16", M::CAST_ROUND, pto::DT_INT16, via(std::round, pto::DT_INT16)),
      cast_case("FLOOR int64", M::CAST_FLOOR, pto::DT_INT64, via(std::floor, pto::DT_INT64)),
      cast_case("CEIL uint8", M::CAST_CEIL, pto::DT_UINT8, via(std::ceil, pto::DT_UINT8)),
      cast_case("RINT fp16", M::CAST_RINT, pto::DT_FP16,
                map(A, [](double x) { return naive::round_to(x, pto::DT_FP16); })),
      cast_case("FLOOR to double (widening ignores the mode)", M::CAST_FLOOR, pto::DT_DOUBLE, A),
  };
  check_all(a, a, cases);
}

TEST_CASE("movement composites: gathermask, interleave, deinterleave, strided_slice as PyPTO's "
          "examples and at ranks 1-4") {
  for (pto::DataType dt : {pto::DT_FP32, pto::DT_INT16, pto::DT_BF16}) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, kShape, 601, -50, 50);
      auto b = naive::random_tensor(dt, kShape, 602, -50, 50);
      Array A = naive::from(a), B = naive::from(b);
      auto pick = [](const Array &x, int64_t k, int64_t j) {
        Array out = x;
        out.shape.back() /= k;
        out.v.clear();
        for (int64_t i = 0; i < x.numel(); ++i)
          if (i % k == j)
            out.v.push_back(x.v[static_cast<size_t>(i)]);
        return out;
      };
      Array A36 = block(A, 0, 0, 6, 36), B36 = block(B, 0, 0, 6, 36);
      auto a36 = [](T x) { return pto::view(x, {6, 36}, {0, 0}); };
      // The interleaved stream of two [.., n] arrays, and its halves.
      auto stream = [](const Array &x, const Array &y) {
        Array s = x;
        int64_t n = x.shape.back(), rows = x.numel() / n;
        s.v.clear();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < n; ++k) {
            s.v.push_back(x.v[static_cast<size_t>(r * n + k)]);
            s.v.push_back(y.v[static_cast<size_t>(r * n + k)]);
          }
        return s; // rows of 2n, shape not yet set
      };
      auto half_of = [](const Array &s, const std::vector<int64_t> &shape, int64_t which) {
        int64_t n = shape.back(), rows = numel(shape) / n;
        Array out{shape, {}};
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < n; ++k)
            out.v.push_back(s.v[static_cast<size_t>(r * 2 * n + which * n + k)]);
        return out;
      };
      Array S = stream(A36, B36);
      std::vector<Case> cases;
      for (int mode = 1; mode <= 7; ++mode) {
        int64_t k = mode <= 2 ? 2 : mode <= 6 ? 4 : 1, j = mode <= 2 ? mode - 1 : mode - 3;
        cases.push_back({"gathermask " + std::to_string(mode),
                         [=](T x, T) { return pto::gathermask(a36(x), mode); },
                         mode == 7 ? A36 : pick(A36, k, j),
                         {}});
      }
      cases.push_back(r1("gathermask rank 1",
                         [=](T x, T) { return pto::gathermask(pto::reshape(a36(x), {216}), 4); },
                         pick(reshaped(A36, {216}), 4, 1), {}));
      cases.push_back(
          r4("gathermask rank 4",
             [=](T x, T) { return pto::gathermask(pto::reshape(a36(x), {2, 3, 3, 12}), 2); },
             reshaped(pick(A36, 2, 1), {2, 3, 3, 6}), {}));
      cases.push_back(r3("gathermask rank 3", [=](T x, T) { return pto::gathermask(rank3(x), 6); },
                         pick(rank3(A), 4, 3), {}));
      cases.push_back({"interleave first",
                       [=](T x, T y) { return pto::interleave(a36(x), a36(y)).first; },
                       half_of(S, {6, 36}, 0),
                       {}});
      cases.push_back({"interleave second",
                       [=](T x, T y) { return pto::interleave(a36(x), a36(y)).second; },
                       half_of(S, {6, 36}, 1),
                       {}});
      cases.push_back(r3("interleave rank 3 second",
                         [=](T x, T y) { return pto::interleave(rank3(x), rank3(y)).second; },
                         reshaped(half_of(stream(rank3(A), rank3(B)), {18, 12}, 1), {6, 3, 12}),
                         {}));
      cases.push_back({"deinterleave(interleave) is the identity",
                       [=](T x, T y) {
                         auto [p, q] = pto::interleave(a36(x), a36(y));
                         return pto::deinterleave(p, q).second;
                       },
                       B36,
                       {}});
      cases.push_back({"deinterleave one input even",
                       [=](T x, T) { return pto::deinterleave(a36(x)).first; },
                       pick(A36, 2, 0),
                       {}});
      cases.push_back(r4("deinterleave one input rank 4 odd",
                         [](T x, T) {
                           return pto::deinterleave(
                                      pto::reshape(pto::view(x, {6, 36}, {0, 0}), {2, 3, 3, 12}))
                               .second;
                         },
                         reshaped(pick(A36, 2, 1), {2, 3, 3, 6}), {}));
      if (dt == pto::DT_FP32) {
        // gathermask keeps the valid extent it can: positions below the input's valid extent.
        cases.push_back({"gathermask of a partly valid row",
                         [](T x, T) {
                           auto v =
                               pto::view(x, {6, 36}, {0, 0},
                                         {.valid_shape = std::vector<pto::SymbolicScalar>{6, 9}});
                           return pto::fillpad(pto::gathermask(v, 4), -1.0);
                         },
                         [&] {
                           Array p = pick(A36, 4, 1); // positions 1, 5, 9 < ... valid: 1 and 5
                           for (int64_t r = 0; r < 6; ++r)
                             for (int64_t c = 2; c < 9; ++c)
                               p.v[static_cast<size_t>(r * 9 + c)] = -1.0;
                           return p;
                         }(),
                         {}});
      }
      // Movement compiles to scalar copy loops (~0.2 s of JIT time per case): JIT-compile one case
      // per code path; the interpreter runs every case.
      // strided_slice: x[b:e:s] per dim with Python's negative indices and clamping.
      auto slice_ref = [](const Array &x, std::vector<int64_t> b, std::vector<int64_t> e,
                          const std::vector<int64_t> &st) {
        size_t r = x.shape.size();
        Array out;
        std::vector<std::vector<int64_t>> picks(r);
        for (size_t d = 0; d < r; ++d) {
          int64_t n = x.shape[d];
          auto norm = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
          for (int64_t i = norm(b[d]); i < norm(e[d]); i += st[d])
            picks[d].push_back(i);
          out.shape.push_back(static_cast<int64_t>(picks[d].size()));
        }
        std::vector<size_t> idx(r, 0);
        for (int64_t k = 0; k < numel(out.shape); ++k) {
          int64_t flat = 0;
          for (size_t d = 0; d < r; ++d)
            flat = flat * x.shape[d] + picks[d][idx[d]];
          out.v.push_back(x.v[static_cast<size_t>(flat)]);
          for (size_t d = r; d-- > 0;) {
            if (++idx[d] < picks[d].size())
              break;
            idx[d] = 0;
          }
        }
        return out;
      };
      cases.push_back({"strided_slice 2-D, a padded row window",
                       [](T x, T) { return pto::strided_slice(x, {1, 2}, {6, 37}, {2, 5}); },
                       slice_ref(A, {1, 2}, {6, 37}, {2, 5}),
                       {}});
      cases.push_back({"strided_slice negative indices",
                       [](T x, T) { return pto::strided_slice(x, {-4, -30}, {-1, 37}, {1, 3}); },
                       slice_ref(A, {-4, -30}, {-1, 37}, {1, 3}),
                       {}});
      cases.push_back({"strided_slice clamps",
                       [](T x, T) { return pto::strided_slice(x, {0, 0}, {100, 100}, {4, 16}); },
                       slice_ref(A, {0, 0}, {100, 100}, {4, 16}),
                       {}});
      cases.push_back({"strided_slice stride 1 is a view",
                       [](T x, T) { return pto::strided_slice(x, {2, 3}, {5, 30}, {1, 1}); },
                       slice_ref(A, {2, 3}, {5, 30}, {1, 1}),
                       {}});
      cases.push_back(
          r3("strided_slice rank 3",
             [](T x, T) { return pto::strided_slice(rank3(x), {0, 0, 1}, {6, 3, 12}, {2, 1, 4}); },
             slice_ref(rank3(A), {0, 0, 1}, {6, 3, 12}, {2, 1, 4}), {}));
      std::vector<std::string> jit_only = {"gathermask 1", "interleave first",
                                           "deinterleave one input even",
                                           "strided_slice 2-D, a padded row window"};
      if (dt == pto::DT_FP32)
        jit_only.insert(jit_only.end(),
                        {"gathermask 6", "gathermask 7", "gathermask rank 4", "interleave second",
                         "deinterleave(interleave) is the identity",
                         "gathermask of a partly valid row"});
      check_all(a, b, cases, jit_only);
    }
  }
}

TEST_CASE("quantize, dequantize, online softmax and transposed batch matmul as PyPTO's formulas") {
  auto a = naive::random_tensor(pto::DT_FP32, kShape, 701, -3, 3);
  auto b = naive::random_tensor(pto::DT_FP32, kShape, 702, 0.5, 60);
  Array A = naive::from(a), B = naive::from(b);
  auto f32 = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  // scale per row (axis -1): b[:, 0]; per column (axis -2): b[0, :]; zero points b[:, 1] - 30.
  Array Srow = block(B, 0, 0, 6, 1), Scol = block(B, 0, 0, 1, 37);
  Array Zrow = map(block(B, 0, 1, 6, 1), [&](double v) { return f32(v - 30); });
  auto srow = [](T y) { return pto::reshape(pto::view(y, {6, 1}, {0, 0}), {6}); };
  auto scol = [](T y) { return pto::reshape(pto::view(y, {1, 37}, {0, 0}), {37}); };
  auto zrow = [](T y) { return pto::reshape(pto::sub(pto::view(y, {6, 1}, {0, 1}), 30.0), {6}); };
  auto quant = [&](const Array &s, const Array *z, pto::DataType to) {
    Array q = zip(A, s, [&](double x, double sc) { return f32(x * sc); });
    if (z)
      q = zip(q, *z, [&](double v, double zp) { return f32(v + zp); });
    return map(q, [=](double v) { return naive::saturate_int(std::nearbyint(v), to); });
  };
  Array QI = quant(Srow, nullptr, pto::DT_INT8);
  const auto tol = support::tolerance(pto::DT_FP32);
  // Online softmax over the columns of scores [6, 37] with scale 0.7, split in rows 0-2 / 3-5.
  auto colstats = [&](int64_t r0, int64_t rows) {
    // The scale is an fp32 scalar: 0.7f.
    Array s = map(block(A, r0, 0, rows, 37), [&](double v) { return f32(v * f32(0.7)); });
    Array m = fold(s, 0, true, vmax);
    Array e = zip(s, m, [](double v, double mx) { return std::exp(v - mx); });
    return std::array<Array, 3>{e, m, fold(e, 0, true, vsum)};
  };
  auto whole = colstats(0, 6), top = colstats(0, 3), bottom = colstats(3, 3);
  std::vector<Case> cases = {
      {"quantize int8 axis -1",
       [=](T x, T y) { return pto::quantize(x, srow(y), pto::DT_INT8, -1); },
       QI,
       {}},
      {"quantize uint8 axis -1 with zero points",
       [=](T x, T y) { return pto::quantize(x, srow(y), pto::DT_UINT8, 1, zrow(y)); },
       quant(Srow, &Zrow, pto::DT_UINT8),
       {}},
      {"quantize int8 axis -2",
       [=](T x, T y) { return pto::quantize(x, scol(y), pto::DT_INT8, -2); },
       quant(Scol, nullptr, pto::DT_INT8),
       {}},
      {"dequantize(quantize)",
       [=](T x, T y) {
         auto q = pto::quantize(x, srow(y), pto::DT_INT8, -1);
         return pto::dequantize(q, pto::reciprocal(srow(y)), pto::DT_FP32, -1, zrow(y));
       },
       zip(zip(QI, Zrow, [&](double q, double z) { return f32(q + z); }), Srow,
           [&](double v, double s) { return f32(v * f32(1 / s)); }),
       tol},
      {"online_softmax max",
       [](T x, T) { return pto::experimental::online_softmax(x, 0.7).max; },
       whole[1],
       {}},
      {"online_softmax sum", [](T x, T) { return pto::experimental::online_softmax(x, 0.7).sum; },
       whole[2], tol},
      {"online_softmax exp_scores bf16",
       [](T x, T) { return pto::experimental::online_softmax(x, 0.7).exp_scores; },
       rounded(whole[0], pto::DT_BF16), support::tolerance(pto::DT_BF16)},
      {"online_softmax_update equals the whole block",
       [](T x, T y) {
         namespace ex = pto::experimental;
         auto p = ex::online_softmax(pto::view(x, {3, 37}, {0, 0}), 0.7);
         auto c = ex::online_softmax(pto::view(x, {3, 37}, {3, 0}), 0.7);
         // "outputs": the column sums of exp * v for v = rows 0-2 / 3-5 of y, as [1, 37].
         auto po = pto::sum(
             pto::mul(pto::cast(p.exp_scores, pto::DT_FP32), pto::view(y, {3, 37}, {0, 0})), 0,
             {.keepdim = true});
         auto co = pto::sum(
             pto::mul(pto::cast(c.exp_scores, pto::DT_FP32), pto::view(y, {3, 37}, {3, 0})), 0,
             {.keepdim = true});
         auto u = ex::online_softmax_update(p.max, p.sum, po, c.max, c.sum, co);
         return pto::concat({u.max, u.sum, pto::div(u.output, u.sum)}, 0);
       },
       [&] {
         // max and sum of the whole column; the normalized output sum(e * v) / sum(e).
         Array out{{3, 37}, {}};
         for (int64_t j = 0; j < 37; ++j)
           out.v.push_back(whole[1].v[static_cast<size_t>(j)]);
         for (int64_t j = 0; j < 37; ++j)
           out.v.push_back(whole[2].v[static_cast<size_t>(j)]);
         for (int64_t j = 0; j < 37; ++j) {
           double num = 0;
           for (int64_t i = 0; i < 6; ++i) {
             const auto &part = i < 3 ? top : bottom;
             double e =
                 naive::round_to(part[0].v[static_cast<size_t>((i % 3) * 37 + j)], pto::DT_BF16);
             double m = part[1].v[static_cast<size_t>(j)];
             num += e * std::exp(m - whole[1].v[static_cast<size_t>(j)]) *
                    B.v[static_cast<size_t>(i * 37 + j)];
           }
           out.v.push_back(num / whole[2].v[static_cast<size_t>(j)]);
         }
         return out;
       }(),
       {1e-4, 1e-5}},
      {"online_softmax_update with a -inf block adds nothing",
       [](T x, T) {
         namespace ex = pto::experimental;
         auto p = ex::online_softmax(pto::view(x, {3, 37}, {0, 0}), 0.7);
         auto ninf = pto::full({1, 37}, -INFINITY, pto::DT_FP32);
         auto zero = pto::full({1, 37}, 0.0, pto::DT_FP32);
         auto u = ex::online_softmax_update(p.max, p.sum, p.sum, ninf, zero, zero);
         return pto::concat({u.sum, u.output}, 0);
       },
       [&] {
         Array out{{2, 37}, {}};
         for (int k = 0; k < 2; ++k)
           for (int64_t j = 0; j < 37; ++j)
             out.v.push_back(top[2].v[static_cast<size_t>(j)]);
         return out;
       }(),
       tol},
  };
  check_all(a, b, cases);
}

TEST_CASE("transposed_batchmatmul: [M, B, K] x [B, K, N] -> [M, B, N]") {
  auto a = naive::random_tensor(pto::DT_FP32, {5, 3, 16}, 801, -1, 1);
  auto b = naive::random_tensor(pto::DT_FP32, {3, 16, 20}, 802, -1, 1);
  Array A = naive::from(a), B = naive::from(b);
  Array want{{5, 3, 20}, {}};
  for (int64_t m = 0; m < 5; ++m)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t n = 0; n < 20; ++n) {
        double s = 0;
        for (int64_t k = 0; k < 16; ++k)
          s += A.v[static_cast<size_t>((m * 3 + i) * 16 + k)] *
               B.v[static_cast<size_t>((i * 16 + k) * 20 + n)];
        want.v.push_back(s);
      }
  std::vector<Case> cases = {ranked("transposed_batchmatmul", {2, 2, 16},
                                    [](T x, T y) {
                                      pto::set_cube_tile_shapes({16, 16}, {16, 16}, {16, 16});
                                      return pto::experimental::transposed_batchmatmul(
                                          x, y, pto::DT_FP32);
                                    },
                                    want, {1e-5, 1e-5})};
  check_all(a, b, cases);
}

TEST_CASE("nn_ops: bad input is a typed error naming the composite and the call site") {
  auto run = [](auto fn, pto::DataType dt, const std::vector<int64_t> &shape = {4, 8}) {
    pto::HostTensor x(dt, shape), y(dt, shape);
    auto k = pto::jit(
        "bad",
        [&](T t, T u) {
          pto::set_vec_tile_shapes(4, 8);
          fn(t, u);
        },
        support::opts(pto::RunMode::Interpret));
    k(x, y);
  };
  using doctest::Contains;
  const auto f32 = pto::DT_FP32, i32 = pto::DT_INT32;
  auto f = [&](auto fn) { run(fn, f32); };
  // dtypes
  CHECK_THROWS_WITH_AS(run([](T x, T) { pto::softmax(x, -1); }, i32), Contains("nn_ops_test.cpp:"),
                       pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T x, T) { pto::softmax(x, -1); }, i32),
                       Contains("softmax: expected a floating dtype"), pto::DTypeError);
  for (auto *op :
       {+[](T x, T) { pto::log_softmax(x, 0); }, +[](T x, T) { pto::logsumexp(x, 0); },
        +[](T x, T) { pto::layer_norm(x); }, +[](T x, T) { pto::rms_norm(x); },
        +[](T x, T) { pto::l2_normalize(x, 0); },
        +[](T x, T y) { pto::sigmoid_cross_entropy_with_logits(x, y); },
        +[](T x, T y) { pto::softmax_cross_entropy_with_logits(x, y); },
        +[](T x, T) { pto::dropout(x, 0.5, 1, 2); }, +[](T x, T y) { pto::prelu(x, y); },
        +[](T x, T y) { pto::approximate_equal(x, y); }, +[](T x, T y) { pto::lerp(x, y, 0.5); },
        +[](T x, T y) { pto::addcdiv(x, x, y); }, +[](T x, T y) { pto::expand_exp_dif(x, y); },
        +[](T x, T y) { pto::axpy(x, y); }})
    CHECK_THROWS_AS(run(op, i32), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T x, T y) { pto::gcd(x, y); }, f32),
                       Contains("gcd: expected an integer dtype"), pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T y) { pto::div_no_nan(x, y); }, pto::DT_BOOL), pto::DTypeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::div_no_nan(x, pto::cast(x, pto::DT_FP16)); }),
                       Contains("div_no_nan: operands have dtypes"), pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T) { pto::floor_mod(x, 2.5); }, i32), pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T) { pto::round(x, 2); }, pto::DT_BOOL), pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T) { pto::addcmul(x, x, x, 0.5); }, i32), pto::DTypeError);
  CHECK_THROWS_WITH_AS(
      f([](T x, T) { pto::layer_norm(x, -1, {.weight = pto::cast(x, pto::DT_FP16)}); }),
      Contains("layer_norm: weight has dtype DT_FP16"), pto::DTypeError);
  CHECK_THROWS_AS(
      f([](T x, T) { pto::bias_add(x, pto::cast(pto::view(x, {1, 8}, {0, 0}), pto::DT_FP16)); }),
      pto::DTypeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::dropout_do_mask(x, x, 0.5); }),
                       Contains("dropout_do_mask: mask has dtype DT_FP32"), pto::DTypeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::axpy(pto::cast(x, pto::DT_FP16), x); }), pto::DTypeError);
  CHECK_THROWS_AS(f([](T x, T y) { pto::quantize(x, y, pto::DT_INT32, -1); }), pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T y) { pto::quantize(x, y, pto::DT_INT8, -1); }, i32),
                  pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T y) { pto::dequantize(x, y, pto::DT_FP32, -1); }, f32),
                  pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T) { pto::experimental::online_softmax(x, 1.0); }, pto::DT_FP16),
                  pto::DTypeError);
  // shapes
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::softmax(x, 2); }),
                       Contains("softmax: axis 2 is out of range for rank 2"), pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::logsumexp(x, -3); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::layer_norm(x, 2); }),
                       Contains("layer_norm: begin_axis 2 is out of range"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      f([](T x, T) { pto::layer_norm(x, 0, {.weight = pto::view(x, {1, 8}, {0, 0})}); }),
      Contains("layer_norm: weight has shape [1, 8], expected [4, 8]"), pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::rms_norm(x, {.gamma = x}); }), pto::ShapeError);
  CHECK_THROWS_AS(
      f([](T x, T) { pto::sigmoid_cross_entropy_with_logits(x, pto::view(x, {4, 3}, {0, 0})); }),
      pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      f([](T x, T) { pto::softmax_cross_entropy_with_logits(x, pto::view(x, {1, 8}, {0, 0})); }),
      Contains("must have the same shape"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::bias_add(x, x); }),
                       Contains("bias_add: bias has shape [4, 8], expected [8]"), pto::ShapeError);
  CHECK_THROWS_AS(
      f([](T x, T) { pto::bias_add(pto::reshape(x, {32}), pto::view(x, {1, 1}, {0, 0})); }),
      pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      f([](T x, T) { pto::prelu(x, pto::reshape(pto::view(x, {1, 3}, {0, 0}), {3})); }),
      Contains("prelu: weight has shape [3], expected [1] or [8]"), pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::div_no_nan(x, pto::view(x, {4, 3}, {0, 0})); }),
                  pto::ShapeError);
  CHECK_THROWS_AS(f([](T, T) { pto::div_no_nan(2, 3); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::axpy(pto::view(x, {1, 8}, {0, 0}), x); }),
                       Contains("y is never broadcast"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::gathermask(pto::view(x, {4, 6}, {0, 0}), 3); }),
                       Contains("multiple of 4, got 6"), pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::deinterleave(pto::view(x, {4, 7}, {0, 0})); }),
                  pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::interleave(x, pto::view(x, {2, 8}, {0, 0})); }),
                  pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T y) { pto::quantize(x, y, pto::DT_INT8, -1); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(f([](T x, T y) {
                         pto::set_vec_tile_shapes(2, 2, 8);
                         pto::quantize(pto::reshape(x, {2, 2, 8}), y, pto::DT_INT8, 0);
                       }),
                       Contains("quantize: axis must be one of the last two dims"),
                       pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T y) { pto::experimental::online_softmax_update(x, x, y, x, x, y); }),
                  pto::ShapeError);
  CHECK_THROWS_AS(
      f([](T x, T y) { pto::experimental::transposed_batchmatmul(x, y, pto::DT_FP32); }),
      pto::ShapeError);
  // arguments
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::dropout(x, 1.5, 1, 2); }),
                       Contains("dropout: p must be in [0, 1], got 1.5"), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::dropout(x, -0.1, 1, 2); }), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::dropout(x, NAN, 1, 2); }), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T, T) { pto::dropout_gen_mask({4, 8}, 2.0, 1, 2); }), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::dropout_do_mask(x, pto::gt(x, 0), -1.0); }),
                  pto::ArgumentError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::layer_norm(x, -1, {.eps = -1}); }),
                       Contains("layer_norm: eps must be finite and >= 0"), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::rms_norm(x, {.epsilon = NAN}); }), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::l2_normalize(x, 0, INFINITY); }), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T y) { pto::approximate_equal(x, y, -1); }), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::gathermask(x, 8); }),
                       Contains("gathermask: pattern_mode must be 1..7, got 8"),
                       pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::cast(x, pto::DT_FP16, pto::CastMode::CAST_FLOOR); }),
                  pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::cast(x, pto::DT_INT32, pto::CastMode::CAST_ODD); }),
                  pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([](T x, T) { pto::pow(x, -1); }, i32),
                       Contains("pow: integers to negative integer powers"), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::axpy(x, x, INFINITY); }), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::experimental::online_softmax(x, NAN); }), pto::ArgumentError);
  // a literal zero divisor fails at trace time, a run-time one when the kernel runs
  CHECK_THROWS_WITH_AS(run([](T x, T) { pto::ceil_div(x, 0); }, i32),
                       Contains("ceil_div: integer division by a zero scalar"), pto::RuntimeError);
  CHECK_THROWS_AS(run([](T x, T y) { pto::assemble(pto::ceil_div(x, y), {0, 0}, x); }, i32),
                  pto::RuntimeError);
  CHECK_THROWS_AS(run([](T x, T) { pto::fillpad(x, 0.5); }, i32), pto::DTypeError);
  CHECK_THROWS_AS(f([](T, T) { pto::dropout_gen_mask({4, 0}, 0.5, 1, 2); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::strided_slice(x, {0, 0}, {4, 8}, {1, 0}); }),
                       Contains("strided_slice: strides must be > 0"), pto::ArgumentError);
  CHECK_THROWS_AS(f([](T x, T) { pto::strided_slice(x, {0, 0}, {4, 8}, {-1, 1}); }),
                  pto::ArgumentError);
  CHECK_THROWS_WITH_AS(f([](T x, T) { pto::strided_slice(x, {3, 0}, {2, 8}, {1, 1}); }),
                       Contains("selects nothing"), pto::ShapeError);
  CHECK_THROWS_AS(f([](T x, T) { pto::strided_slice(x, {0}, {4}, {1}); }), pto::ShapeError);
  {
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    auto dynamic = pto::jit(
        "dynamic_rows",
        [](T t) {
          pto::set_vec_tile_shapes(4, 8);
          pto::gathermask(t, 1);
        },
        support::opts(pto::RunMode::Interpret, {{{pto::DYNAMIC, 8}}}));
    CHECK_THROWS_WITH_AS(dynamic(x), Contains("gathermask: needs static dims"), pto::ShapeError);
  }
  // No vec tile: the composites' own intermediates do not hide the missing tile.
  auto untiled = [](auto fn) {
    pto::HostTensor x(pto::DT_FP32, {4, 8});
    pto::jit("untiled", [&](T t) { fn(t); }, support::opts(pto::RunMode::Interpret))(x);
  };
  CHECK_THROWS_WITH_AS(untiled([](T x) { pto::gathermask(x, 1); }),
                       Contains("gathermask: no vec tile shape is set"), pto::TileShapeError);
  CHECK_THROWS_AS(untiled([](T x) { pto::softmax(x, -1); }), pto::TileShapeError);
}
