// index_ops_test.cpp - The indexing ops of index_ops.h (gather, index_select, embedding,
// scatter, index_add, index_put, one_hot, unsorted_segment_*), run as kernels in each run mode
// against naive index loops written here (support/multi_op.h runs many ops per kernel). Index
// tensors are windows of an int64 "bank" input whose values the test draws, so expected
// values are computed from the same numbers without ptojit. Results are compared exactly: the
// ops move elements, and their arithmetic (one rounding per step in the data's dtype, or an fp32
// accumulator for segment sums of fp16/bf16) is reproduced step by step here.
#include "pto/pto.h"

#include "support/multi_op.h"
#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>

using naive::Array;
using support::Case;
using T = pto::Tensor;
using Idx = std::vector<int64_t>;

namespace {

const std::vector<int64_t> kTile{2, 3, 4, 16};

int64_t numel(const Idx &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}
/// Row-major multi-index of flat `i` in `shape`.
Idx unravel(int64_t i, const Idx &shape) {
  Idx idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}
int64_t ravel(const Idx &i, const Idx &shape) {
  int64_t f = 0;
  for (size_t d = 0; d < i.size(); ++d)
    f = f * shape[d] + i[d];
  return f;
}
double at(const Array &a, const Idx &i) { return a.v[static_cast<size_t>(ravel(i, a.shape))]; }
void set(Array &a, const Idx &i, double v) { a.v[static_cast<size_t>(ravel(i, a.shape))] = v; }
/// out[o] = f(o) over `shape`.
Array build(const Idx &shape, const std::function<double(const Idx &)> &f) {
  Array out;
  out.shape = shape;
  for (int64_t i = 0; i < numel(shape); ++i)
    out.v.push_back(f(unravel(i, shape)));
  return out;
}
Array reshaped(Array a, Idx shape) {
  a.shape = std::move(shape);
  return a;
}
/// Window [off, off + shape) of a.
Array window(const Array &a, const Idx &shape, const Idx &off) {
  return build(shape, [&](const Idx &o) {
    Idx i = o;
    for (size_t d = 0; d < i.size(); ++d)
      i[d] += off[d];
    return at(a, i);
  });
}
/// a with every element outside [0, valid) set to 0: what a flattened result with that valid
/// shape reads as (movement ops read 0 outside their input's valid region, shape_ops.h).
Array masked(const Array &a, const Idx &valid) {
  return build(a.shape, [&](const Idx &o) {
    for (size_t d = 0; d < o.size(); ++d)
      if (o[d] >= valid[d])
        return 0.0;
    return at(a, o);
  });
}
Idx cat(const Idx &a, const Idx &b) {
  Idx r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}
Idx slice(const Idx &a, size_t from, size_t to) {
  return Idx(a.begin() + static_cast<long>(from), a.begin() + static_cast<long>(to));
}

/// f, traced once per kernel trace: the cases of one kernel share the tensor it derives (each
/// op costs JIT compile time).
std::function<T(const T &)> memo(std::function<T(const T &)> f) {
  auto cache = std::make_shared<std::map<uint64_t, T>>();
  return [f = std::move(f), cache](const T &t) {
    auto it = cache->find(t.trace_id());
    if (it == cache->end())
      it = cache->emplace(t.trace_id(), f(t)).first;
    return it->second;
  };
}

/// An index tensor: the elements [offset, offset + numel(shape)) of the 1-D bank, in `shape`
/// (a plain view for rank 1, a reshape otherwise), of dtype `dt`.
struct Index {
  int64_t offset = 0;
  Idx shape;
  pto::DataType dt = pto::DT_INT64;
  std::vector<int64_t> v;
  std::function<T(const T &)> make = memo([off = offset, shape = shape, dt = dt](const T &bank) {
    T t = pto::view(bank, {numel(shape)}, {off});
    if (shape.size() > 1)
      t = pto::reshape(t, std::vector<pto::SymbolicScalar>(shape.begin(), shape.end()));
    return dt == pto::DT_INT64 ? t : pto::cast(t, dt);
  });
  int64_t at(const Idx &i) const { return v[static_cast<size_t>(ravel(i, shape))]; }
  T operator()(const T &bank) const { return make(bank); }
};

/// The int64 bank (1-D) holding every index tensor of a kernel, drawn from a seeded generator.
struct Bank {
  std::vector<int64_t> all;
  std::mt19937_64 rng{12345};
  Index values(const Idx &shape, std::vector<int64_t> v, pto::DataType dt = pto::DT_INT64) {
    REQUIRE(static_cast<int64_t>(v.size()) == numel(shape));
    const auto offset = static_cast<int64_t>(all.size());
    all.insert(all.end(), v.begin(), v.end());
    return Index{offset, shape, dt, std::move(v)};
  }
  /// Uniform in [lo, hi).
  Index draw(const Idx &shape, int64_t lo, int64_t hi, pto::DataType dt = pto::DT_INT64) {
    std::uniform_int_distribution<int64_t> u(lo, hi - 1);
    std::vector<int64_t> v;
    for (int64_t i = 0; i < numel(shape); ++i)
      v.push_back(u(rng));
    return values(shape, std::move(v), dt);
  }
  pto::HostTensor tensor() const {
    pto::HostTensor t(pto::DT_INT64, {std::max<int64_t>(static_cast<int64_t>(all.size()), 1)});
    for (size_t i = 0; i < all.size(); ++i)
      t.set(static_cast<int64_t>(i), static_cast<double>(all[i]));
    return t;
  }
};

// ---- the reference semantics, written from PyTorch's / MindSpore's documentation ------------

/// One update step in the data's dtype (index_ops.h): ints wrap, fp16/bf16/fp32 in float and
/// rounded, fp64 in double. `op` is '+' or '*'; `alpha` scales b for index_add.
double step(pto::DataType dt, double a, double b, char op, double alpha = 1) {
  if (dt == pto::DT_DOUBLE)
    return op == '+' ? a + alpha * b : a * b;
  if (pto::is_float(dt)) {
    float p = static_cast<float>(alpha) * static_cast<float>(b);
    float r = op == '+' ? static_cast<float>(a) + p : static_cast<float>(a) * p;
    return naive::round_to(r, dt);
  }
  auto ua = static_cast<uint64_t>(static_cast<int64_t>(a));
  auto ub = static_cast<uint64_t>(static_cast<int64_t>(b)) *
            static_cast<uint64_t>(static_cast<int64_t>(alpha));
  return naive::wrap_int(static_cast<int64_t>(op == '+' ? ua + ub : ua * ub), dt);
}
/// A scalar converted to `dt` as the ops do (bool: != 0; ints wrap).
double scalar_to(pto::DataType dt, double s) {
  if (dt == pto::DT_BOOL)
    return s != 0;
  return pto::is_float(dt) ? naive::round_to(s, dt) : naive::wrap_int(static_cast<int64_t>(s), dt);
}

Array gather_ref(const Array &x, size_t axis, const Index &ix) {
  return build(ix.shape, [&](const Idx &o) {
    Idx s = o;
    s[axis] = ix.at(o);
    return at(x, s);
  });
}
/// index_select / embedding: index's dims spliced in at `axis`.
Array take_ref(const Array &x, size_t axis, const Index &ix, std::optional<int64_t> pad = {}) {
  const size_t r = ix.shape.size();
  Idx shape = cat(cat(slice(x.shape, 0, axis), ix.shape), slice(x.shape, axis + 1, x.shape.size()));
  return build(shape, [&](const Idx &o) {
    const int64_t k = ix.at(slice(o, axis, axis + r));
    if (pad && k == *pad)
      return 0.0;
    Idx s = cat(cat(slice(o, 0, axis), {k}), slice(o, axis + r, o.size()));
    return at(x, s);
  });
}
/// scatter: `src` or the scalar `value`; mode ' ' (none), '+' or '*'. Walks the index
/// positions in [0, walk) (default: all).
Array scatter_ref(Array x, size_t axis, const Index &ix, const Array *src, double value, char mode,
                  pto::DataType dt, Idx walk = {}) {
  if (walk.empty())
    walk = ix.shape;
  for (int64_t f = 0; f < numel(walk); ++f) {
    Idx i = unravel(f, walk), d = i;
    d[axis] = ix.at(i);
    const double v = src ? at(*src, i) : scalar_to(dt, value);
    set(x, d, mode == ' ' ? v : step(dt, at(x, d), v, mode));
  }
  return x;
}
/// index_add over the src positions in [0, walk) (default: all).
Array index_add_ref(Array x, size_t axis, const Index &ix, const Array &src, double alpha,
                    pto::DataType dt, Idx walk = {}) {
  if (walk.empty())
    walk = src.shape;
  for (int64_t f = 0; f < numel(walk); ++f) {
    Idx j = unravel(f, walk), d = j;
    d[axis] = ix.v[static_cast<size_t>(j[axis])];
    set(x, d, step(dt, at(x, d), at(src, j), '+', alpha));
  }
  return x;
}
/// index_put: `values` broadcast right-aligned to [N, x.shape[k:]...], or the scalar `value`.
/// Walks [0, walk) of that shape (default: all); negative indices count from `xvalid` (default:
/// x's shape).
Array index_put_ref(Array x, const std::vector<Index> &ix, const Array *values, double value,
                    bool accumulate, pto::DataType dt, Idx walk = {}, Idx xvalid = {}) {
  const size_t k = ix.size();
  int64_t n = 1;
  for (auto &t : ix)
    n = std::max(n, t.shape[0]);
  if (walk.empty())
    walk = cat({n}, slice(x.shape, k, x.shape.size()));
  if (xvalid.empty())
    xvalid = x.shape;
  for (int64_t f = 0; f < numel(walk); ++f) {
    Idx w = unravel(f, walk), d;
    for (size_t t = 0; t < k; ++t) {
      int64_t v = ix[t].v[static_cast<size_t>(ix[t].shape[0] == 1 ? 0 : w[0])];
      d.push_back(v < 0 ? v + xvalid[t] : v);
    }
    for (size_t j = 1; j < w.size(); ++j)
      d.push_back(w[j]);
    double v = scalar_to(dt, value);
    if (values) {
      Idx vi;
      const size_t off = w.size() - values->shape.size();
      for (size_t j = 0; j < values->shape.size(); ++j)
        vi.push_back(values->shape[j] == 1 ? 0 : w[off + j]);
      v = at(*values, vi);
    }
    set(x, d, accumulate ? step(dt, at(x, d), v, '+') : v);
  }
  return x;
}
Array one_hot_ref(const Index &ix, int64_t classes) {
  const size_t r = ix.shape.size();
  return build(cat(ix.shape, {classes}),
               [&](const Idx &o) { return ix.at(slice(o, 0, r)) == o[r] ? 1.0 : 0.0; });
}

/// The largest finite value of a dtype: ints from <limits>; fp16 (2 - 2^-10) * 2^15 = 65504;
/// bf16 (2 - 2^-7) * 2^127; fp32 FLT_MAX; fp64 DBL_MAX.
double largest(pto::DataType dt) {
  switch (dt) {
  case pto::DT_INT8:
    return std::numeric_limits<int8_t>::max();
  case pto::DT_INT16:
    return std::numeric_limits<int16_t>::max();
  case pto::DT_INT32:
    return std::numeric_limits<int32_t>::max();
  case pto::DT_INT64:
    return static_cast<double>(std::numeric_limits<int64_t>::max());
  case pto::DT_UINT8:
    return std::numeric_limits<uint8_t>::max();
  case pto::DT_FP16:
    return (2 - std::ldexp(1.0, -10)) * std::ldexp(1.0, 15);
  case pto::DT_BF16:
    return (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127);
  case pto::DT_FP32:
    return std::numeric_limits<float>::max();
  default:
    return std::numeric_limits<double>::max();
  }
}
double lowest(pto::DataType dt) {
  switch (dt) {
  case pto::DT_INT8:
    return std::numeric_limits<int8_t>::min();
  case pto::DT_INT16:
    return std::numeric_limits<int16_t>::min();
  case pto::DT_INT32:
    return std::numeric_limits<int32_t>::min();
  case pto::DT_INT64:
    return static_cast<double>(std::numeric_limits<int64_t>::min());
  case pto::DT_UINT8:
    return 0;
  default:
    return -largest(dt);
  }
}

/// MindSpore's UnsortedSegment{Sum,Min,Max,Prod} ('+', 'm', 'M', '*'): ids out of [0, segs)
/// dropped; floats accumulate in float (double for fp64) in row-major order of the id
/// positions, rounded once; ints in uint64 (wrapping), wrapped once; NaN propagates through
/// min/max; empty segments get 0, 1, the largest or the lowest value. Walks the id positions in
/// [0, walk) (default: all).
Array segment_ref(const Array &x, const Index &ids, int64_t segs, char mode, pto::DataType dt,
                  Idx walk = {}) {
  const size_t k = ids.shape.size();
  const Idx inner = slice(x.shape, k, x.shape.size());
  if (walk.empty())
    walk = ids.shape;
  const int64_t m = numel(inner);
  std::vector<double> accf(static_cast<size_t>(segs * m));
  std::vector<uint64_t> acci(static_cast<size_t>(segs * m));
  std::vector<bool> seen(static_cast<size_t>(segs));
  const bool fp = pto::is_float(dt);
  for (int64_t f = 0; f < numel(walk); ++f) {
    Idx p = unravel(f, walk);
    const int64_t s = ids.at(p);
    if (s < 0 || s >= segs)
      continue;
    for (int64_t g = 0; g < m; ++g) {
      const double v = at(x, cat(p, unravel(g, inner)));
      const auto slot = static_cast<size_t>(s * m + g);
      const bool first = !seen[static_cast<size_t>(s)];
      if (fp) {
        double &a = accf[slot];
        if (first)
          a = v;
        else if (mode == 'm' || mode == 'M')
          a = std::isnan(a) ? a : std::isnan(v) ? v : mode == 'm' ? std::min(a, v) : std::max(a, v);
        else if (dt == pto::DT_DOUBLE)
          a = mode == '+' ? a + v : a * v;
        else
          a = mode == '+' ? static_cast<float>(a) + static_cast<float>(v)
                          : static_cast<float>(a) * static_cast<float>(v);
      } else {
        uint64_t &a = acci[slot];
        const auto u = static_cast<uint64_t>(static_cast<int64_t>(v));
        if (first)
          a = u;
        else if (mode == '+')
          a += u;
        else if (mode == '*')
          a *= u;
        else
          a = static_cast<uint64_t>(
              mode == 'm' ? std::min(static_cast<int64_t>(a), static_cast<int64_t>(u))
                          : std::max(static_cast<int64_t>(a), static_cast<int64_t>(u)));
      }
    }
    seen[static_cast<size_t>(s)] = true;
  }
  return build(cat({segs}, inner), [&](const Idx &o) {
    const auto slot = static_cast<size_t>(o[0] * m + ravel(slice(o, 1, o.size()), inner));
    if (!seen[static_cast<size_t>(o[0])])
      return mode == '+' ? 0.0 : mode == '*' ? 1.0 : mode == 'm' ? largest(dt) : lowest(dt);
    return fp ? naive::round_to(accf[slot], dt)
              : naive::wrap_int(static_cast<int64_t>(acci[slot]), dt);
  });
}

// ---- running -------------------------------------------------------------------------------

/// One case per op and reduce mode: what JIT mode runs for most dtypes (below).
bool is_core(const std::string &name) {
  static const std::set<std::string> core = {"gather rank 3 axis 1",
                                             "index_select axis 0",
                                             "embedding padding_idx 2",
                                             "scatter scalar 3",
                                             "scatter axis 0 duplicates last wins",
                                             "scatter ADD axis 0",
                                             "scatter MULTIPLY axis 1",
                                             "index_add alpha 3",
                                             "index_put elements",
                                             "index_put accumulate rows",
                                             "unsorted_segment_sum rows",
                                             "unsorted_segment_min rows",
                                             "unsorted_segment_max rows",
                                             "unsorted_segment_prod rows",
                                             "one_hot [2, 3] x 5"};
  return core.count(name) > 0;
}

/// Runs the cases in each run mode. The routines are the same precompiled code in both modes,
/// and each JIT compile of a kernel with many cases costs seconds: JIT mode runs every case only
/// when `all_jit`, else the core cases (every op on every dtype still runs in both modes).
void check_all(const pto::HostTensor &a, const pto::HostTensor &b, const std::vector<Case> &cases,
               bool all_jit = true) {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      std::vector<Case> run;
      for (auto &c : cases)
        if (all_jit || m != pto::RunMode::Jit || is_core(c.name))
          run.push_back(c);
      CHECK_MESSAGE(support::run_cases(m, a, b, run, kTile) == "", "mode ", support::mode_name(m));
    }
  }
}

const std::vector<pto::DataType> kAllTypes = {
    pto::DT_INT8, pto::DT_INT16, pto::DT_INT32, pto::DT_INT64,  pto::DT_UINT8,
    pto::DT_FP16, pto::DT_BF16,  pto::DT_FP32,  pto::DT_DOUBLE, pto::DT_BOOL};

/// A [8, 37] data tensor of `dt`: ints in [-50, 50] (uint8 [0, 100]) so that sums and products
/// wrap in int8/uint8; floats in [-2, 2) with a NaN at [1, 5] (NaN matches NaN when compared).
pto::HostTensor data_tensor(pto::DataType dt, uint64_t seed) {
  pto::HostTensor t = dt == pto::DT_UINT8 ? naive::random_tensor(dt, {8, 37}, seed, 0, 100)
                      : pto::is_float(dt) ? naive::random_tensor(dt, {8, 37}, seed, -2, 2)
                                          : naive::random_tensor(dt, {8, 37}, seed, -50, 50);
  if (pto::is_float(dt))
    t.set(1 * 37 + 5, std::nan(""));
  return t;
}

} // namespace

TEST_CASE("index ops match naive index loops for every dtype, rank 1-4, tails and size-1 dims") {
  for (pto::DataType dt : kAllTypes) {
    SUBCASE(pto::name(dt).c_str()) {
      const bool arith = dt != pto::DT_BOOL;
      auto a = data_tensor(dt, 7 + static_cast<uint64_t>(dt));
      const Array A = naive::from(a);
      // Derived inputs: traced from `a` in the kernel, and the same windows of A here.
      auto x5 = [](const T &t) { return pto::view(t, {5, 37}, {0, 0}); };
      const Array X5 = window(A, {5, 37}, {0, 0});
      auto x1 = memo([](const T &t) { return pto::reshape(pto::view(t, {1, 37}, {3, 0}), {37}); });
      const Array X1 = reshaped(window(A, {1, 37}, {3, 0}), {37});
      auto x3 =
          memo([](const T &t) { return pto::reshape(pto::view(t, {4, 30}, {1, 2}), {4, 5, 6}); });
      const Array X3 = reshaped(window(A, {4, 30}, {1, 2}), {4, 5, 6});
      auto x4 = memo(
          [](const T &t) { return pto::reshape(pto::view(t, {4, 30}, {0, 0}), {2, 3, 4, 5}); });
      const Array X4 = reshaped(window(A, {4, 30}, {0, 0}), {2, 3, 4, 5});
      const auto i32 = pto::DT_INT32;

      Bank bank;
      std::vector<Case> cases;
      auto add = [&](std::string name, std::function<T(const T &, const T &)> f, Array want) {
        cases.push_back({std::move(name), std::move(f), std::move(want), {}});
      };

      // gather: index longer or shorter than x on the axis, duplicates, every rank.
      {
        auto g1 = bank.draw({5, 20}, 0, 37);
        add(
            "gather axis 1", [=](T t, T b) { return pto::gather(t, 1, g1(b)); },
            gather_ref(A, 1, g1));
        auto g0 = bank.draw({3, 37}, 0, 8, i32);
        add(
            "gather axis 0 int32 index", [=](T t, T b) { return pto::gather(t, 0, g0(b)); },
            gather_ref(A, 0, g0));
        auto gs = bank.draw({4, 1}, 0, 37);
        add(
            "gather axis -1 size-1 index dim", [=](T t, T b) { return pto::gather(t, -1, gs(b)); },
            gather_ref(A, 1, gs));
        auto gr1 = bank.draw({50}, 0, 37, i32);
        add(
            "gather rank 1", [=](T t, T b) { return pto::gather(x1(t), 0, gr1(b)); },
            gather_ref(X1, 0, gr1));
        auto gr3 = bank.draw({3, 7, 6}, 0, 5);
        add(
            "gather rank 3 axis 1", [=](T t, T b) { return pto::gather(x3(t), 1, gr3(b)); },
            gather_ref(X3, 1, gr3));
        auto gr4 = bank.draw({2, 3, 6, 5}, 0, 4, i32);
        add(
            "gather rank 4 axis 2", [=](T t, T b) { return pto::gather(x4(t), 2, gr4(b)); },
            gather_ref(X4, 2, gr4));
      }
      // index_select and embedding.
      {
        auto s0 = bank.draw({7}, 0, 8);
        add(
            "index_select axis 0", [=](T t, T b) { return pto::index_select(t, 0, s0(b)); },
            take_ref(A, 0, s0));
        auto s1 = bank.draw({40}, 0, 37, i32);
        add(
            "index_select axis -1", [=](T t, T b) { return pto::index_select(t, -1, s1(b)); },
            take_ref(A, 1, s1));
        auto s4 = bank.draw({1}, 0, 5);
        add(
            "index_select rank 4 axis 3 one index",
            [=](T t, T b) { return pto::index_select(x4(t), 3, s4(b)); }, take_ref(X4, 3, s4));
        auto s3 = bank.draw({9}, 0, 4, i32);
        add(
            "index_select rank 3 axis 0",
            [=](T t, T b) { return pto::index_select(x3(t), 0, s3(b)); }, take_ref(X3, 0, s3));
        auto e2 = bank.values({2, 3}, {0, 2, 7, 2, 4, 7});
        add(
            "embedding ids [2, 3]", [=](T t, T b) { return pto::embedding(t, e2(b)); },
            take_ref(A, 0, e2));
        add(
            "embedding padding_idx 2",
            [=](T t, T b) { return pto::embedding(t, e2(b), {.padding_idx = 2}); },
            take_ref(A, 0, e2, 2));
        add(
            "embedding padding_idx -1 (row 7)",
            [=](T t, T b) { return pto::embedding(t, e2(b), {.padding_idx = -1}); },
            take_ref(A, 0, e2, 7));
        auto e3 = bank.draw({2, 1, 3}, 0, 8, i32);
        add(
            "embedding ids rank 3", [=](T t, T b) { return pto::embedding(t, e3(b)); },
            take_ref(A, 0, e3));
        auto e1 = bank.draw({11}, 0, 8);
        add(
            "embedding ids rank 1", [=](T t, T b) { return pto::embedding(t, e1(b)); },
            take_ref(A, 0, e1));
      }
      // scatter: src tensors and scalars, duplicates (last write wins), every rank.
      {
        auto c1 = bank.draw({5, 20}, 0, 37);
        add(
            "scatter axis 1 src", [=](T t, T b) { return pto::scatter(x5(t), 1, c1(b), t); },
            scatter_ref(X5, 1, c1, &A, 0, ' ', dt));
        auto c0 = bank.draw({8, 37}, 0, 5, i32);
        add(
            "scatter axis 0 duplicates last wins",
            [=](T t, T b) { return pto::scatter(x5(t), 0, c0(b), t); },
            scatter_ref(X5, 0, c0, &A, 0, ' ', dt));
        add(
            "scatter scalar 3", [=](T t, T b) { return pto::scatter(x5(t), 1, c1(b), 3); },
            scatter_ref(X5, 1, c1, nullptr, 3, ' ', dt));
        auto c4 = bank.draw({1, 2, 4, 3}, 0, 3);
        add(
            "scatter rank 4 axis 1", [=](T t, T b) { return pto::scatter(x4(t), 1, c4(b), x4(t)); },
            scatter_ref(X4, 1, c4, &X4, 0, ' ', dt));
        auto cr1 = bank.draw({20}, 0, 37);
        const Array A296 = reshaped(A, {296});
        add(
            "scatter rank 1 src longer than index",
            [=](T t, T b) { return pto::scatter(x1(t), 0, cr1(b), pto::reshape(t, {296})); },
            scatter_ref(X1, 0, cr1, &A296, 0, ' ', dt));
        if (arith) {
          add(
              "scatter ADD rank 1 duplicates",
              [=](T t, T b) {
                return pto::scatter(x1(t), 0, cr1(b), pto::reshape(t, {296}),
                                    {.reduce = pto::ScatterMode::ADD});
              },
              scatter_ref(X1, 0, cr1, &A296, 0, '+', dt));
          add(
              "scatter ADD axis 0",
              [=](T t, T b) {
                return pto::scatter(x5(t), 0, c0(b), t, {.reduce = pto::ScatterMode::ADD});
              },
              scatter_ref(X5, 0, c0, &A, 0, '+', dt));
          auto cm = bank.draw({5, 10}, 0, 37);
          add(
              "scatter MULTIPLY axis 1",
              [=](T t, T b) {
                return pto::scatter(x5(t), 1, cm(b), t, {.reduce = pto::ScatterMode::MULTIPLY});
              },
              scatter_ref(X5, 1, cm, &A, 0, '*', dt));
          add(
              "scatter ADD scalar 2",
              [=](T t, T b) {
                return pto::scatter(x5(t), 1, cm(b), 2, {.reduce = pto::ScatterMode::ADD});
              },
              scatter_ref(X5, 1, cm, nullptr, 2, '+', dt));
          auto c3 = bank.draw({4, 5, 2}, 0, 6);
          add(
              "scatter MULTIPLY rank 3 axis 2",
              [=](T t, T b) {
                return pto::scatter(x3(t), 2, c3(b), x3(t), {.reduce = pto::ScatterMode::MULTIPLY});
              },
              scatter_ref(X3, 2, c3, &X3, 0, '*', dt));
        }
      }
      // index_add: duplicates accumulate; alpha; every rank.
      if (arith) {
        auto d0 = bank.values({6}, {4, 0, 4, 2, 4, 1});
        auto src6 = [](const T &t) { return pto::view(t, {6, 37}, {2, 0}); };
        const Array S6 = window(A, {6, 37}, {2, 0});
        add(
            "index_add axis 0 duplicates",
            [=](T t, T b) { return pto::index_add(x5(t), 0, d0(b), src6(t)); },
            index_add_ref(X5, 0, d0, S6, 1, dt));
        add(
            "index_add alpha 3",
            [=](T t, T b) { return pto::index_add(x5(t), 0, d0(b), src6(t), {.alpha = 3}); },
            index_add_ref(X5, 0, d0, S6, 3, dt));
        if (pto::is_float(dt))
          add(
              "index_add alpha -1.5",
              [=](T t, T b) { return pto::index_add(x5(t), 0, d0(b), src6(t), {.alpha = -1.5}); },
              index_add_ref(X5, 0, d0, S6, -1.5, dt));
        auto d1 = bank.draw({17}, 0, 37, i32);
        auto src17 = [](const T &t) { return pto::view(t, {5, 17}, {3, 20}); };
        add(
            "index_add axis 1", [=](T t, T b) { return pto::index_add(x5(t), 1, d1(b), src17(t)); },
            index_add_ref(X5, 1, d1, window(A, {5, 17}, {3, 20}), 1, dt));
        auto d4 = bank.draw({3}, 0, 3);
        add(
            "index_add rank 4 axis 1",
            [=](T t, T b) { return pto::index_add(x4(t), 1, d4(b), x4(t)); },
            index_add_ref(X4, 1, d4, X4, 1, dt));
        auto dr1 = bank.draw({37}, 0, 37);
        add(
            "index_add rank 1", [=](T t, T b) { return pto::index_add(x1(t), 0, dr1(b), x1(t)); },
            index_add_ref(X1, 0, dr1, X1, 1, dt));
      }
      // index_put: one or more index tensors, negatives, broadcast values, scalars, accumulate.
      {
        auto p0 = bank.values({4}, {1, -1, 3, 1});
        auto v4 = [](const T &t) { return pto::view(t, {4, 37}, {4, 0}); };
        const Array V4 = window(A, {4, 37}, {4, 0});
        add(
            "index_put rows (last write wins)",
            [=](T t, T b) { return pto::index_put(x5(t), {p0(b)}, v4(t)); },
            index_put_ref(X5, {p0}, &V4, 0, false, dt));
        auto pr = bank.values({6}, {0, -5, 4, 2, 0, -1}, i32);
        auto pc = bank.values({6}, {36, 0, -37, 5, 36, -2});
        auto v6 = memo([](const T &t) { return pto::reshape(pto::view(t, {1, 6}, {7, 0}), {6}); });
        const Array V6 = reshaped(window(A, {1, 6}, {7, 0}), {6});
        add(
            "index_put elements",
            [=](T t, T b) { return pto::index_put(x5(t), {pr(b), pc(b)}, v6(t)); },
            index_put_ref(X5, {pr, pc}, &V6, 0, false, dt));
        auto p1 = bank.values({1}, {3});
        add(
            "index_put a length-1 index repeats",
            [=](T t, T b) { return pto::index_put(x5(t), {p1(b), pc(b)}, v6(t)); },
            index_put_ref(X5, {p1, pc}, &V6, 0, false, dt));
        auto vrow = [](const T &t) { return pto::view(t, {1, 37}, {6, 0}); };
        const Array VROW = window(A, {1, 37}, {6, 0});
        add(
            "index_put values broadcast [1, 37]",
            [=](T t, T b) { return pto::index_put(x5(t), {p0(b)}, vrow(t)); },
            index_put_ref(X5, {p0}, &VROW, 0, false, dt));
        add(
            "index_put scalar", [=](T t, T b) { return pto::index_put(x5(t), {pr(b), pc(b)}, 1); },
            index_put_ref(X5, {pr, pc}, nullptr, 1, false, dt));
        auto q0 = bank.draw({5}, -2, 2);
        auto q1 = bank.draw({5}, -3, 3);
        auto v45 = [](const T &t) { return pto::reshape(pto::view(t, {1, 5}, {2, 0}), {5}); };
        const Array V45 = reshaped(window(A, {1, 5}, {2, 0}), {5});
        add(
            "index_put rank 4 with two indices, values broadcast [5]",
            [=](T t, T b) { return pto::index_put(x4(t), {q0(b), q1(b)}, v45(t)); },
            index_put_ref(X4, {q0, q1}, &V45, 0, false, dt));
        if (arith) {
          add(
              "index_put accumulate rows",
              [=](T t, T b) { return pto::index_put(x5(t), {p0(b)}, v4(t), {.accumulate = true}); },
              index_put_ref(X5, {p0}, &V4, 0, true, dt));
          add(
              "index_put accumulate elements",
              [=](T t, T b) {
                return pto::index_put(x5(t), {pr(b), pc(b)}, v6(t), {.accumulate = true});
              },
              index_put_ref(X5, {pr, pc}, &V6, 0, true, dt));
          auto q3 = bank.values({4}, {1, 1, -3, 0});
          add(
              "index_put rank 1 accumulate scalar",
              [=](T t, T b) { return pto::index_put(x1(t), {q3(b)}, 5, {.accumulate = true}); },
              index_put_ref(X1, {q3}, nullptr, 5, true, dt));
        }
      }
      // unsorted_segment_*: dropped ids (negative and >= num_segments), empty segments.
      if (arith) {
        // segments 2 and 4 are empty; -1 and 5 are dropped
        auto g8 = bank.values({8}, {0, 3, -1, 1, 3, 5, 0, 1});
        auto g2 = bank.draw({8, 37}, -1, 6, i32);
        auto g34 = bank.draw({4, 5}, 0, 3);
        const std::vector<std::pair<char, const char *>> modes = {
            {'+', "sum"}, {'m', "min"}, {'M', "max"}, {'*', "prod"}};
        for (auto [mode, mname] : modes) {
          auto f = [mode = mode](const T &x, const T &ids, int64_t n) {
            switch (mode) {
            case '+':
              return pto::unsorted_segment_sum(x, ids, n);
            case 'm':
              return pto::unsorted_segment_min(x, ids, n);
            case 'M':
              return pto::unsorted_segment_max(x, ids, n);
            default:
              return pto::unsorted_segment_prod(x, ids, n);
            }
          };
          const std::string m(mname);
          add(
              "unsorted_segment_" + m + " rows", [=](T t, T b) { return f(t, g8(b), 5); },
              segment_ref(A, g8, 5, mode, dt));
          add(
              "unsorted_segment_" + m + " elements", [=](T t, T b) { return f(t, g2(b), 5); },
              segment_ref(A, g2, 5, mode, dt));
          add(
              "unsorted_segment_" + m + " rank 3 ids [4, 5]",
              [=](T t, T b) { return f(x3(t), g34(b), 4); }, segment_ref(X3, g34, 4, mode, dt));
          add(
              "unsorted_segment_" + m + " one segment",
              [=](T t, T b) {
                return f(pto::reshape(pto::view(t, {1, 8}, {3, 0}), {8}), g8(b), 1);
              },
              segment_ref(reshaped(window(A, {1, 8}, {3, 0}), {8}), g8, 1, mode, dt));
        }
      }
      // one_hot does not depend on the data: once, with int32 and int64 indices.
      if (dt == pto::DT_FP32) {
        auto h1 = bank.draw({7}, 0, 9);
        add("one_hot [7] x 9", [=](T, T b) { return pto::one_hot(h1(b), 9); }, one_hot_ref(h1, 9));
        auto h2 = bank.draw({2, 3}, 0, 5, i32);
        add(
            "one_hot [2, 3] x 5", [=](T, T b) { return pto::one_hot(h2(b), 5); },
            one_hot_ref(h2, 5));
        auto h3 = bank.draw({2, 1, 2}, 0, 1);
        add(
            "one_hot rank 3, one class", [=](T, T b) { return pto::one_hot(h3(b), 1); },
            one_hot_ref(h3, 1));
      }
      // JIT mode runs the core cases of every op that takes this dtype (15 on fp32 with
      // one_hot, 14 on other arithmetic dtypes, 6 without add / multiply on bool).
      const auto n_core =
          std::count_if(cases.begin(), cases.end(), [](const Case &c) { return is_core(c.name); });
      CHECK(n_core == (dt == pto::DT_FP32 ? 15 : arith ? 14 : 6));
      check_all(a, bank.tensor(), cases, dt == pto::DT_FP32);
    }
  }
}

namespace {
/// A window [0, shape) of t with the given valid shape.
T vview(const T &t, const Idx &shape, const Idx &valid) {
  std::vector<pto::SymbolicScalar> v(valid.begin(), valid.end());
  return pto::view(t, shape, std::vector<pto::SymbolicScalar>(shape.size(), 0), {.valid_shape = v});
}
/// Checks (while tracing) that r's valid shape is `want`, and returns r.
T expect_valid(const T &r, const Idx &want) {
  std::vector<pto::SymbolicScalar> w(want.begin(), want.end());
  CHECK(pto::str(r.valid_shape()) == pto::str(w));
  return r;
}
} // namespace

TEST_CASE("index ops walk only the valid regions of their operands and say so in their result") {
  for (pto::DataType dt : {pto::DT_FP32, pto::DT_INT32}) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = data_tensor(dt, 99);
      const Array A = naive::from(a);
      const Array X5 = window(A, {5, 37}, {0, 0});
      Bank bank;
      std::vector<Case> cases;
      auto add = [&](std::string name, std::function<T(const T &, const T &)> f, Array want) {
        cases.push_back({std::move(name), std::move(f), std::move(want), {}});
      };
      auto g = bank.draw({5, 20}, 0, 30);
      add(
          "gather: index valid [3, 10], x valid [4, 30]",
          [=](T t, T b) {
            return expect_valid(
                pto::gather(vview(t, {5, 37}, {4, 30}), 1, vview(g(b), {5, 20}, {3, 10})), {3, 10});
          },
          masked(gather_ref(A, 1, g), {3, 10}));
      add(
          "gather: x valid [2, 30] clamps the rows",
          [=](T t, T b) {
            return expect_valid(
                pto::gather(vview(t, {5, 37}, {2, 30}), 1, vview(g(b), {5, 20}, {3, 10})), {2, 10});
          },
          masked(gather_ref(A, 1, g), {2, 10}));
      auto s = bank.draw({12}, 0, 30);
      add(
          "index_select: x valid [4, 30], index valid [7]",
          [=](T t, T b) {
            return expect_valid(
                pto::index_select(vview(t, {5, 37}, {4, 30}), 1, vview(s(b), {12}, {7})), {4, 7});
          },
          masked(take_ref(X5, 1, s), {4, 7}));
      auto e = bank.draw({2, 3}, 0, 6);
      add(
          "embedding: weight valid [6, 30], ids valid [2, 2]",
          [=](T t, T b) {
            return expect_valid(
                pto::embedding(vview(t, {8, 37}, {6, 30}), vview(e(b), {2, 3}, {2, 2})),
                {2, 2, 30});
          },
          masked(take_ref(A, 0, e), {2, 2, 30}));
      auto c = bank.draw({5, 20}, 0, 30);
      add(
          "scatter: x valid [4, 30], index valid [5, 10]",
          [=](T t, T b) {
            return expect_valid(
                pto::scatter(vview(t, {5, 37}, {4, 30}), 1, vview(c(b), {5, 20}, {5, 10}), t),
                {4, 30});
          },
          masked(scatter_ref(X5, 1, c, &A, 0, ' ', dt, {4, 10}), {4, 30}));
      add(
          "scatter: src valid [8, 6]",
          [=](T t, T b) {
            return pto::scatter(vview(t, {5, 37}, {4, 30}), 1, vview(c(b), {5, 20}, {5, 10}),
                                vview(t, {8, 37}, {8, 6}), {.reduce = pto::ScatterMode::ADD});
          },
          masked(scatter_ref(X5, 1, c, &A, 0, '+', dt, {4, 6}), {4, 30}));
      auto d = bank.draw({6}, 0, 4);
      add(
          "index_add: x valid [4, 30], index valid [4], src valid [6, 20]",
          [=](T t, T b) {
            return expect_valid(
                pto::index_add(vview(t, {5, 37}, {4, 30}), 0, vview(d(b), {6}, {4}),
                               pto::view(t, {6, 37}, {2, 0}, {.valid_shape = {{6, 20}}})),
                {4, 30});
          },
          masked(index_add_ref(X5, 0, d, window(A, {6, 37}, {2, 0}), 1, dt, {4, 20}), {4, 30}));
      auto p0 = bank.draw({6}, -4, 4);
      auto p1 = bank.draw({6}, -30, 30, pto::DT_INT32);
      auto v6 = [](const T &t) { return pto::reshape(pto::view(t, {1, 6}, {7, 0}), {6}); };
      const Array V6 = reshaped(window(A, {1, 6}, {7, 0}), {6});
      add(
          "index_put: negatives wrap at x's valid extents [4, 30]; index valid [5]",
          [=](T t, T b) {
            return expect_valid(
                pto::index_put(vview(t, {5, 37}, {4, 30}), {vview(p0(b), {6}, {5}), p1(b)}, v6(t)),
                {4, 30});
          },
          masked(index_put_ref(X5, {p0, p1}, &V6, 0, false, dt, {5}, {4, 30}), {4, 30}));
      auto h = bank.draw({7}, 0, 9);
      add(
          "one_hot: index valid [5]",
          [=](T, T b) { return expect_valid(pto::one_hot(vview(h(b), {7}, {5}), 9), {5, 9}); },
          masked(one_hot_ref(h, 9), {5, 9}));
      auto ids = bank.draw({8}, -1, 5);
      add(
          "unsorted_segment_sum: data valid [6, 30], ids valid [7]",
          [=](T t, T b) {
            return expect_valid(
                pto::unsorted_segment_sum(vview(t, {8, 37}, {6, 30}), vview(ids(b), {8}, {7}), 5),
                {5, 30});
          },
          masked(segment_ref(A, ids, 5, '+', dt, {6}), {5, 30}));
      check_all(a, bank.tensor(), cases);
    }
  }
}

TEST_CASE("index ops on DYNAMIC index lengths and in a loop over row blocks; results are new "
          "tensors (x is not changed)") {
  auto x = naive::random_tensor(pto::DT_FP32, {8, 37}, 5);
  const Array X = naive::from(x);
  Bank bank;
  const Index g = bank.draw({8, 5}, 0, 37);
  pto::HostTensor gi(pto::DT_INT64, {8, 5});
  for (int64_t i = 0; i < 40; ++i)
    gi.set(i, static_cast<double>(g.v[static_cast<size_t>(i)]));
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto k = pto::jit(
          "dyn_index",
          [](T tx, T idx, T sel, T hot, T put, T tg, T gout) {
            pto::set_vec_tile_shapes(4, 16);
            pto::assemble(pto::index_select(tx, 0, idx), {0, 0}, sel);
            pto::assemble(pto::one_hot(idx, 8), {0, 0}, hot);
            pto::assemble(pto::index_put(tx, {idx}, -7.0), {0, 0}, put);
            for (auto i : pto::loop(0, 2)) { // windows at run-time offsets
              T rows = pto::gather(pto::view(tx, {4, 37}, {i * 4, 0}), 1,
                                   pto::view(tg, {4, 5}, {i * 4, 0}));
              pto::assemble(rows, {i * 4, 0}, gout);
            }
          },
          support::opts(m, {{{8, 37}},
                            {{pto::DYNAMIC}},
                            {{pto::DYNAMIC, 37}},
                            {{pto::DYNAMIC, 8}},
                            {{8, 37}},
                            {{8, 5}},
                            {{8, 5}}}));
      for (std::vector<int64_t> ids :
           {std::vector<int64_t>{5, 0, 5}, {7, 1, 2, 3, 0, 0, 6, 4, 4, 1, 7}}) {
        const auto n = static_cast<int64_t>(ids.size());
        CAPTURE(n);
        pto::HostTensor idx(pto::DT_INT64, {n}), sel(pto::DT_FP32, {n, 37}),
            hot(pto::DT_INT64, {n, 8}), put(pto::DT_FP32, {8, 37}), gout(pto::DT_FP32, {8, 5});
        for (int64_t i = 0; i < n; ++i)
          idx.set(i, static_cast<double>(ids[static_cast<size_t>(i)]));
        k(x, idx, sel, hot, put, gi, gout);
        CHECK(support::mismatch(sel,
                                build({n, 37},
                                      [&](const Idx &o) {
                                        return at(X, {ids[static_cast<size_t>(o[0])], o[1]});
                                      }),
                                {}) == "");
        CHECK(support::mismatch(hot,
                                build({n, 8},
                                      [&](const Idx &o) {
                                        return ids[static_cast<size_t>(o[0])] == o[1] ? 1.0 : 0.0;
                                      }),
                                {}) == "");
        CHECK(support::mismatch(put,
                                build({8, 37},
                                      [&](const Idx &o) {
                                        bool hit =
                                            std::find(ids.begin(), ids.end(), o[0]) != ids.end();
                                        return hit ? -7.0 : at(X, o);
                                      }),
                                {}) == "");
        CHECK(support::mismatch(gout, gather_ref(X, 1, g), {}) == "");
        CHECK(support::mismatch(x, X, {}) == ""); // the input is untouched
      }
      CHECK(k.stats().traces == 1); // one trace serves both lengths
    }
  }
}

TEST_CASE("index ops: an index out of range at run time is a RuntimeError naming the call site") {
  using doctest::Contains;
  auto x = naive::random_tensor(pto::DT_FP32, {5, 8}, 3);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      /// Runs fn(x, index) once, index = `vals` (int64 [2, 3]).
      auto run = [&](auto fn, std::vector<int64_t> vals) {
        pto::HostTensor idx(pto::DT_INT64, {2, 3}), out(pto::DT_FP32, {1, 1});
        for (size_t i = 0; i < vals.size(); ++i)
          idx.set(static_cast<int64_t>(i), static_cast<double>(vals[i]));
        auto k = pto::jit(
            "bad_index",
            [&](T tx, T ti, T to) {
              pto::set_vec_tile_shapes(4, 4, 4);
              T r = fn(tx, ti);
              T first = pto::view(r, std::vector<int64_t>(r.dim(), 1),
                                  std::vector<pto::SymbolicScalar>(r.dim(), 0));
              pto::assemble(pto::cast(pto::reshape(first, {1, 1}), pto::DT_FP32), {0, 0}, to);
            },
            support::opts(m));
        k(x, idx, out);
      };
      auto flat = [](const T &i) { return pto::reshape(i, {6}); };
      CHECK_THROWS_WITH_AS(run([](T t, T i) { return pto::gather(t, 1, i); }, {0, 1, 2, 3, 8, 0}),
                           Contains("index_ops_test.cpp:"), pto::RuntimeError);
      CHECK_THROWS_WITH_AS(run([](T t, T i) { return pto::gather(t, 1, i); }, {0, 1, 2, 3, 8, 0}),
                           Contains("gather: index 8 at index[1, 1] is out of range [0, 8) of "
                                    "x's valid extent on axis 1"),
                           pto::RuntimeError);
      CHECK_THROWS_WITH_AS(run([](T t, T i) { return pto::gather(t, 0, i); }, {0, -1, 0, 0, 0, 0}),
                           Contains("index -1 at index[0, 1] is out of range [0, 5)"),
                           pto::RuntimeError);
      // A value inside the shape but beyond the valid extent is out of range too.
      CHECK_THROWS_WITH_AS(run([](T t, T i) { return pto::gather(vview(t, {5, 8}, {5, 6}), 1, i); },
                               {0, 1, 2, 3, 6, 0}),
                           Contains("index 6 at index[1, 1] is out of range [0, 6)"),
                           pto::RuntimeError);
      CHECK_THROWS_WITH_AS(
          run([&](T t, T i) { return pto::index_select(t, 0, flat(i)); }, {0, 1, 2, 3, 4, 5}),
          Contains("index_select: index 5 at index[5] is out of range [0, 5)"), pto::RuntimeError);
      CHECK_THROWS_WITH_AS(run([](T t, T i) { return pto::embedding(t, i); }, {0, 1, 7, 3, 4, 2}),
                           Contains("id 7 at ids[0, 2] is out of range [0, 5) of weight's valid "
                                    "rows (embedding)"),
                           pto::RuntimeError);
      CHECK_THROWS_WITH_AS(
          run([](T t, T i) { return pto::scatter(t, 1, i, 1.0); }, {0, 1, 2, 3, 4, 9}),
          Contains("scatter: index 9 at index[1, 2] is out of range [0, 8)"), pto::RuntimeError);
      CHECK_THROWS_WITH_AS(
          run([&](T t, T i) { return pto::index_add(t, 1, flat(i), pto::view(t, {5, 6}, {0, 0})); },
              {0, 1, -2, 3, 4, 5}),
          Contains("index_add: index -2 at index[2] is out of range [0, 8)"), pto::RuntimeError);
      CHECK_THROWS_WITH_AS(
          run([&](T t, T i) { return pto::index_put(t, {flat(i)}, 0.5); }, {0, 1, -5, -6, 4, 5}),
          Contains("index_put: index -6 at indices[0][3] is out of range [-5, 5)"),
          pto::RuntimeError);
      CHECK_THROWS_WITH_AS(run([](T, T i) { return pto::one_hot(i, 4); }, {0, 1, 2, 3, 4, 0}),
                           Contains("one_hot: class value 4 at index[1, 1] is out of range [0, 4) "
                                    "of num_classes"),
                           pto::RuntimeError);
    }
  }
}

TEST_CASE("index ops: bad ranks, shapes, dtypes and arguments are typed errors at trace time") {
  auto run = [](auto fn) {
    pto::HostTensor x(pto::DT_FP32, {5, 8}), xi(pto::DT_INT32, {5, 8}), ix(pto::DT_INT64, {5, 8}),
        xb(pto::DT_BOOL, {5, 8});
    auto k = pto::jit(
        "bad",
        [&](T tx, T ti, T tix, T tb) {
          pto::set_vec_tile_shapes(4, 4, 4, 4);
          fn(tx, ti, tix, tb);
        },
        support::opts(pto::RunMode::Interpret));
    k(x, xi, ix, xb);
  };
  using doctest::Contains;
  auto row = [](const T &i) { return pto::reshape(pto::view(i, {1, 8}, {0, 0}), {8}); };
  // gather
  CHECK_THROWS_WITH_AS(run([](T x, T, T, T) { pto::gather(x, 1, x); }),
                       Contains("index_ops_test.cpp:"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T x, T, T, T) { pto::gather(x, 1, x); }),
                       Contains("gather: index must be DT_INT32 or DT_INT64, got DT_FP32"),
                       pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::gather(x, 1, row(i)); }),
                       Contains("gather: index has rank 1 ([8]), expected rank 2"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T x, T, T i, T) { pto::gather(pto::view(x, {3, 8}, {0, 0}), 1, i); }),
                       Contains("dim 0 of index [5, 8] and x [3, 8]: 5 exceeds 3"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T x, T, T i, T) { pto::gather(x, 2, i); }),
                       Contains("gather: axis 2 is out of range for rank 2"), pto::ShapeError);
  // index_select
  CHECK_THROWS_WITH_AS(run([](T x, T, T i, T) { pto::index_select(x, 0, i); }),
                       Contains("index_select: index has rank 2"), pto::ShapeError);
  CHECK_THROWS_AS(run([&](T x, T, T i, T) { pto::index_select(x, -3, row(i)); }), pto::ShapeError);
  CHECK_THROWS_AS(run([&](T x, T, T, T b) { pto::index_select(x, 0, row(b)); }), pto::DTypeError);
  // embedding
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::embedding(row(x), i); }),
                       Contains("embedding: weight has rank 1 ([8]), expected rank 2"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([](T x, T, T i, T) { pto::embedding(x, pto::reshape(i, {2, 2, 2, 5})); }),
      Contains("embedding: the result would have rank 5"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T x, T, T i, T) { pto::embedding(x, i, {.padding_idx = 5}); }),
                       Contains("embedding: padding_idx 5 is out of range [-5, 5)"),
                       pto::ArgumentError);
  CHECK_THROWS_AS(run([](T x, T, T i, T) { pto::embedding(x, i, {.padding_idx = -6}); }),
                  pto::ArgumentError);
  // scatter
  CHECK_THROWS_WITH_AS(run([](T x, T xi, T i, T) { pto::scatter(x, 1, i, xi); }),
                       Contains("scatter: src has dtype DT_INT32, x has DT_FP32"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T, T xi, T i, T) { pto::scatter(xi, 1, i, 0.5); }),
                       Contains("scatter: floating scalar 0.5 with an integer x of dtype DT_INT32"),
                       pto::DTypeError);
  CHECK_THROWS_WITH_AS(
      run([](T x, T, T i, T) { pto::scatter(x, 1, i, pto::view(x, {5, 4}, {0, 0})); }),
      Contains("dim 1 of index [5, 8] and src [5, 4]: 8 exceeds 4"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([](T x, T, T i, T) { pto::scatter(pto::view(x, {5, 4}, {0, 0}), 0, i, x); }),
      Contains("dim 1 of index [5, 8] and x [5, 4]: 8 exceeds 4"), pto::ShapeError);
  CHECK_THROWS_AS(run([&](T x, T, T i, T) { pto::scatter(x, 1, row(i), x); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([](T, T, T i, T b) { pto::scatter(b, 1, i, b, {.reduce = pto::ScatterMode::ADD}); }),
      Contains("scatter: reduce ADD or MULTIPLY of DT_BOOL"), pto::DTypeError);
  CHECK_THROWS_AS(run([](T x, T, T, T b) { pto::scatter(x, 1, b, x); }), pto::DTypeError);
  CHECK_THROWS_WITH_AS(
      run([](T x, T, T i, T) { pto::scatter(x, 1, i, pto::Element(pto::DT_INT32, int64_t{1})); }),
      Contains("scatter: scalar of dtype DT_INT32 with x of dtype DT_FP32"), pto::DTypeError);
  // index_add
  CHECK_THROWS_WITH_AS(run([&](T, T xi, T i, T) {
                         pto::index_add(xi, 0, pto::view(row(i), {5}, {0}), xi, {.alpha = 0.5});
                       }),
                       Contains("index_add: alpha 0.5 is not an integer"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::index_add(x, 0, row(i), x); }),
                       Contains("src [5, 8] on axis 0 and the length of index [8]: 5 differs "
                                "from 8"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([&](T x, T, T i, T) { pto::index_add(x, 1, row(i), pto::view(x, {4, 8}, {0, 0})); }),
      Contains("dim 0 of src [4, 8] and x [5, 8]: 4 differs from 5"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T x, T, T i, T) { pto::index_add(x, 0, i, x); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::index_add(x, 0, row(i), row(x)); }),
                       Contains("index_add: src has rank 1 ([8]), expected rank 2"),
                       pto::ShapeError);
  CHECK_THROWS_AS(run([&](T x, T xi, T i, T) { pto::index_add(x, 1, row(i), xi); }),
                  pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([&](T, T, T i, T b) { pto::index_add(b, 1, row(i), b); }),
                       Contains("index_add: index_add of DT_BOOL"), pto::DTypeError);
  // index_put
  CHECK_THROWS_WITH_AS(run([](T x, T, T, T) { pto::index_put(x, {}, 1.0); }),
                       Contains("index_put: takes 1 to 2 index tensors for x [5, 8], got 0"),
                       pto::ShapeError);
  CHECK_THROWS_AS(run([&](T x, T, T i, T) { pto::index_put(x, {row(i), row(i), row(i)}, 1.0); }),
                  pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([&](T x, T, T i, T) { pto::index_put(x, {row(i), pto::view(row(i), {3}, {0})}, 1.0); }),
      Contains("index tensor 1 has length 3, an earlier one 8"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::index_put(x, {i}, 1.0); }),
                       Contains("index_put: index tensor 0 has rank 2"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::index_put(x, {row(i)}, x); }),
                       Contains("values [5, 8] does not broadcast to the indexed shape [8, 8]"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([&](T, T xi, T i, T) { pto::index_put(xi, {row(i)}, 2.5); }),
                       Contains("index_put: floating scalar 2.5 with an integer x"),
                       pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T xi, T i, T) { pto::index_put(x, {row(i)}, xi); }),
                       Contains("index_put: values has dtype DT_INT32"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(
      run([&](T, T, T i, T b) { pto::index_put(b, {row(i)}, 1, {.accumulate = true}); }),
      Contains("index_put: accumulate into DT_BOOL"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T, T b) { pto::index_put(x, {row(b)}, 1.0); }),
                       Contains("index must be DT_INT32 or DT_INT64, got DT_BOOL"),
                       pto::DTypeError);
  // one_hot
  CHECK_THROWS_WITH_AS(run([](T, T, T i, T) { pto::one_hot(i, -1); }),
                       Contains("one_hot: num_classes must be >= 1, got -1"), pto::ArgumentError);
  CHECK_THROWS_AS(run([](T, T, T i, T) { pto::one_hot(i, 0); }), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([](T, T, T i, T) { pto::one_hot(pto::reshape(i, {2, 2, 2, 5}), 3); }),
                       Contains("one_hot: the result would have rank 5"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T x, T, T, T) { pto::one_hot(x, 3); }), pto::DTypeError);
  // unsorted_segment_*
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::unsorted_segment_sum(x, row(i), 0); }),
                       Contains("unsorted_segment_sum: num_segments must be >= 1, got 0"),
                       pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([&](T x, T, T i, T) { pto::unsorted_segment_max(x, row(i), 3); }),
                       Contains("dim 0 of segment_ids [8] and data [5, 8]: 8 differs from 5"),
                       pto::ShapeError);
  CHECK_THROWS_AS(run([](T x, T, T i, T) {
                    pto::unsorted_segment_min(pto::view(x, {5, 1}, {0, 0}),
                                              pto::reshape(i, {5, 8, 1}), 3);
                  }),
                  pto::ShapeError);
  CHECK_THROWS_WITH_AS(
      run([&](T, T, T i, T b) { pto::unsorted_segment_prod(b, pto::view(i, {5, 8}, {0, 0}), 3); }),
      Contains("segment reductions of DT_BOOL"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T x, T, T, T) { pto::unsorted_segment_sum(x, x, 3); }),
                       Contains("segment_ids must be DT_INT32 or DT_INT64"), pto::DTypeError);
  // every op needs a vec tile (captured, though the library routine does not split by it)
  pto::HostTensor x(pto::DT_FP32, {5, 8}), ix(pto::DT_INT64, {5, 8});
  auto k = pto::jit(
      "no_tile", [](T tx, T ti) { pto::gather(tx, 1, ti); },
      support::opts(pto::RunMode::Interpret));
  CHECK_THROWS_WITH_AS(k(x, ix), Contains("gather: no vec tile shape is set"), pto::TileShapeError);
  auto k2 = pto::jit(
      "small_tile",
      [](T, T ti) {
        pto::set_vec_tile_shapes(4, 4);
        pto::one_hot(ti, 3);
      },
      support::opts(pto::RunMode::Interpret));
  CHECK_THROWS_WITH_AS(k2(x, ix), Contains("one_hot: tile shape rank 2 is below the output rank 3"),
                       pto::TileShapeError);
  // a negative padding_idx needs a static row count
  auto k3 = pto::jit(
      "dyn_rows",
      [](T tw, T ti) {
        pto::set_vec_tile_shapes(4, 4, 4);
        pto::embedding(tw, ti, {.padding_idx = -1});
      },
      support::opts(pto::RunMode::Interpret, {{{pto::DYNAMIC, 8}}, {}}));
  CHECK_THROWS_WITH_AS(k3(x, ix), Contains("embedding: a negative padding_idx (-1) needs a static"),
                       pto::ArgumentError);
}
