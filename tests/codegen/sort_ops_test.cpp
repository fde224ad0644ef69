// sort_ops_test.cpp - The ops of sort_ops.h (sort, argsort, topk, unique, bessel_i0e/i1e) run as
// kernels in each run mode, against references written here:
// - sorting: an insertion sort of indices with the tie and NaN rules spelled out (NaN largest and
//   equal to NaN, -0 == +0, lower index first), and an O(n * m) scan for unique; values are
//   compared bit for bit with the input element the reference says they came from;
// - Bessel: a long-double trapezoidal rule on I_nu(a) e^-a = (1/pi) int_0^pi
//   e^(-2a sin^2(t/2)) cos(nu t) dt (spectrally accurate for this periodic integrand), the
//   defining power series for i1e at |x| <= 1 (the integral cancels there), and Hankel's
//   expansion beyond |x| = 1e4; ULP errors are measured in fp32 and fp64.
// Sorting cases are batched into one kernel per dtype and run mode (JIT compiles are the cost):
// the interpreter runs every case for every dtype, the JIT every case for fp32 and a few for the
// other dtypes (both call the same routine; the JIT adds only the call marshalling).
#include "pto/pto.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using Shape = std::vector<int64_t>;
using T = pto::Tensor;

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}
int64_t flat(const Shape &shape, const Shape &idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    f = f * shape[d] + idx[d];
  return f;
}
/// Every multi-index of the box `ext`, row-major.
std::vector<Shape> box(const Shape &ext) {
  std::vector<Shape> out;
  if (numel(ext) == 0)
    return out;
  Shape idx(ext.size(), 0);
  for (;;) {
    out.push_back(idx);
    size_t d = ext.size();
    while (d-- > 0) {
      if (++idx[d] < ext[d])
        break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return out;
  }
}
std::vector<pto::SymbolicScalar> sym(const Shape &s) {
  return std::vector<pto::SymbolicScalar>(s.begin(), s.end());
}

// ---- the reference order --------------------------------------------------------------------

/// Element `i` of `t` as a long double (exact for every dtype, int64 included).
long double key(const pto::HostTensor &t, int64_t i) {
  if (t.dtype() == pto::DT_INT64)
    return static_cast<long double>(t.data_as<int64_t>()[i]);
  return static_cast<long double>(t.get(i));
}
/// Strictly before in the sort order: NaN above everything and equal to NaN, -0 == +0.
bool before(long double a, long double b, bool descending) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (descending)
    return (na && !nb) || (!na && !nb && a > b);
  return !na && (nb || a < b);
}
bool same_key(long double a, long double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
/// Positions 0..n-1 ordered by `keys`; insertion sort, so equal keys keep their order.
std::vector<int64_t> order_of(const std::vector<long double> &keys, bool descending) {
  std::vector<int64_t> ord;
  for (int64_t i = 0; i < static_cast<int64_t>(keys.size()); ++i) {
    ord.push_back(i);
    for (size_t j = ord.size() - 1;
         j > 0 &&
         before(keys[static_cast<size_t>(i)], keys[static_cast<size_t>(ord[j - 1])], descending);
         --j)
      std::swap(ord[j], ord[j - 1]);
  }
  return ord;
}

// ---- the cases ------------------------------------------------------------------------------

enum class Op { Sort, Argsort, Topk, Unique };

struct Case {
  std::string name;
  Op op;
  Shape shape;
  Shape valid = {}; ///< empty: fully valid
  int axis = -1;
  bool flag = false;  ///< sort/argsort: descending; topk: largest; unique: sorted
  bool sorted = true; ///< topk
  int64_t k = 0;
  pto::DataType index_dtype = pto::DT_INT32;
  bool inverse = false, counts = false;

  Shape ext() const { return valid.empty() ? shape : valid; }
  size_t ax() const { return static_cast<size_t>(axis < 0 ? axis + int(shape.size()) : axis); }
  Shape out_shape() const {
    Shape s = shape;
    if (op == Op::Topk)
      s[ax()] = k;
    return s;
  }
};

const auto kI32 = pto::DT_INT32;
const auto kI64 = pto::DT_INT64;

/// The cases the JIT runs for every dtype: a strided sort of a valid region, topk whose valid
/// extent is min(k, valid length) with int64 indices, rank-4 unique with every output.
std::vector<Case> smoke_cases() {
  return {
      {"sort [5,37] valid [3,20] axis 0 descending", Op::Sort, {5, 37}, {3, 20}, 0, true},
      {"topk [5,37] valid [5,3] k 5", Op::Topk, {5, 37}, {5, 3}, -1, true, true, 5, kI64},
      {"unique [2,3,4,5] inverse, counts",
       Op::Unique,
       {2, 3, 4, 5},
       {},
       0,
       true,
       true,
       0,
       kI32,
       true,
       true},
  };
}

/// Every case: run by the interpreter for every dtype and by the JIT for fp32 (each JIT'd case
/// costs ~50 ms of compile time; the JIT and the interpreter call the same routine, so the JIT
/// runs of the other dtypes check the call marshalling with smoke_cases()).
std::vector<Case> full_cases(bool long_row) {
  std::vector<Case> cs = {
      {"sort [37]", Op::Sort, {37}},
      {"sort [37] descending", Op::Sort, {37}, {}, 0, true},
      {"sort [5,37] last, int64 indices", Op::Sort, {5, 37}, {}, -1, false, true, 0, kI64},
      {"sort [5,37] axis 0 descending", Op::Sort, {5, 37}, {}, 0, true},
      {"sort [3,4,17] axis 1", Op::Sort, {3, 4, 17}, {}, 1},
      {"sort [2,3,4,5] axis 2 descending", Op::Sort, {2, 3, 4, 5}, {}, 2, true},
      {"sort [2,3,4,5] axis 0", Op::Sort, {2, 3, 4, 5}, {}, 0},
      {"sort [2,3,4,5] axis 3", Op::Sort, {2, 3, 4, 5}, {}, -1},
      {"sort [5,37] valid [4,30]", Op::Sort, {5, 37}, {4, 30}, 1},
      {"sort [1,17] axis 0 (length-1 rows)", Op::Sort, {1, 17}, {}, 0},
      {"sort [17,1] axis 0", Op::Sort, {17, 1}, {}, 0, true},
      {"argsort [5,37] (default descending)", Op::Argsort, {5, 37}, {}, -1, true},
      {"argsort [5,37] axis 0 ascending int64", Op::Argsort, {5, 37}, {}, 0, false, true, 0, kI64},
      {"topk [5,37] k 5", Op::Topk, {5, 37}, {}, -1, true, true, 5},
      {"topk [5,37] k 5 smallest", Op::Topk, {5, 37}, {}, -1, false, true, 5},
      {"topk [5,37] k 6 unsorted", Op::Topk, {5, 37}, {}, 1, true, false, 6},
      {"topk [5,37] k 4 smallest unsorted", Op::Topk, {5, 37}, {}, 1, false, false, 4},
      {"topk [5,37] k 37", Op::Topk, {5, 37}, {}, -1, true, true, 37, kI64},
      {"topk [37] k 1", Op::Topk, {37}, {}, 0, true, true, 1},
      {"topk [5,37] axis 0 k 3", Op::Topk, {5, 37}, {}, 0, true, true, 3},
      {"topk [2,3,4,5] axis 1 k 2 smallest", Op::Topk, {2, 3, 4, 5}, {}, 1, false, true, 2},
      {"unique [5,37] sorted", Op::Unique, {5, 37}, {}, 0, true, true, 0, kI32, true, true},
      {"unique [5,37] first occurrence",
       Op::Unique,
       {5, 37},
       {},
       0,
       false,
       true,
       0,
       kI32,
       true,
       true},
      {"unique [37]", Op::Unique, {37}, {}, 0, true},
      {"unique [5,37] valid [3,10]",
       Op::Unique,
       {5, 37},
       {3, 10},
       0,
       true,
       true,
       0,
       kI64,
       true,
       false},
      {"unique [2,3,4,5] first occurrence, counts only",
       Op::Unique,
       {2, 3, 4, 5},
       {},
       0,
       false,
       true,
       0,
       kI64,
       false,
       true},
  };
  for (auto &c : smoke_cases())
    cs.push_back(c);
  if (long_row)
    cs.push_back({"sort [2,1500] descending", Op::Sort, {2, 1500}, {}, -1, true});
  return cs;
}

/// Random data with ties, signed zeros, NaN and infinities (floats), the dtype's extremes (ints).
void fill_input(pto::HostTensor &t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const pto::DataType dt = t.dtype();
  const std::vector<double> floats = {-2.5, -1,       -0.0,      0.0,  0.5,   1,   3,
                                      NAN,  INFINITY, -INFINITY, 1e-3, -1e-3, 7.25};
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t r = rng();
    if (pto::is_float(dt)) {
      t.set(i, floats[r % floats.size()]);
    } else if (dt == pto::DT_BOOL) {
      t.set(i, static_cast<double>(r % 2));
    } else if (dt == pto::DT_INT64) {
      // Neighbours above 2^53 (not exact in double) and the extremes.
      const int64_t pool[] = {-3,
                              0,
                              2,
                              5,
                              (int64_t{1} << 62) + 1,
                              (int64_t{1} << 62) + 2,
                              std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max()};
      t.data_as<int64_t>()[i] = pool[r % 8];
    } else {
      const int64_t lo = dt == pto::DT_UINT8 ? 0 : -5;
      double v = static_cast<double>(lo + static_cast<int64_t>(r % 10));
      if (r % 17 == 0) // the dtype's extreme
        v = dt == pto::DT_INT8    ? -128
            : dt == pto::DT_UINT8 ? 255
            : dt == pto::DT_INT16 ? 32767
                                  : -2147483648.0;
      t.set(i, v);
    }
  }
}

// ---- the kernel's parameters ------------------------------------------------------------------
// Every tensor a case reads or writes is laid out as a 2-D block [prod(shape[:-1]), shape[-1]]
// of rows of a [rows, W] parameter: src (the inputs), vals (values, the input dtype), idx32 and
// idx64 (integer results by dtype; unique's count goes to idx32). Rank-2 results are assembled
// as they are (their positions outside the valid region keep the parameter's fill); the others
// are reshaped to 2-D with a full valid shape first (reshape reads those positions as 0).

enum Param { kVals, kIdx32, kIdx64, kParams };
constexpr double kFill[kParams] = {1, -7, -7};

struct Block {
  int64_t row = 0, lead = 1, last = 1;
  bool direct = false; ///< rank 2: assembled without a reshape
};
Block block_of(const Shape &s) {
  Block b;
  for (size_t d = 0; d + 1 < s.size(); ++d)
    b.lead *= s[d];
  b.last = s.back();
  b.direct = s.size() == 2;
  return b;
}

/// Row allocation of every case's blocks, in trace order.
struct Layout {
  int64_t width = 1;
  int64_t src_rows = 0, rows[kParams] = {};
  std::vector<Block> in;
  std::vector<std::vector<std::pair<Param, Block>>> out; ///< per case, per result
};

Param idx_param(pto::DataType dt) { return dt == kI64 ? kIdx64 : kIdx32; }

Layout layout(const std::vector<Case> &cs) {
  Layout l;
  auto take = [&](int64_t &rows, const Shape &s) {
    Block b = block_of(s);
    b.row = rows;
    rows += b.lead;
    l.width = std::max(l.width, b.last);
    return b;
  };
  for (const Case &c : cs) {
    l.in.push_back(take(l.src_rows, c.shape));
    std::vector<std::pair<Param, Block>> outs;
    auto add = [&](Param p, const Shape &s) { outs.emplace_back(p, take(l.rows[p], s)); };
    const Param ip = idx_param(c.index_dtype);
    const Shape flat_n = {numel(c.shape)};
    switch (c.op) {
    case Op::Sort:
    case Op::Topk:
      add(kVals, c.out_shape());
      add(ip, c.out_shape());
      break;
    case Op::Argsort:
      add(ip, c.shape);
      break;
    case Op::Unique:
      add(kVals, flat_n);
      add(kIdx32, {1});
      if (c.inverse)
        add(ip, c.shape);
      if (c.counts)
        add(ip, flat_n);
      break;
    }
    l.out.push_back(std::move(outs));
  }
  return l;
}

/// Linear position of element `f` (row-major in its own shape) of block `b` in a [rows, width]
/// parameter.
int64_t at(const Block &b, int64_t f, int64_t width) {
  return (b.row + f / b.last) * width + f % b.last;
}

/// Writes `r` into its block of `dst`.
void place(const T &r, const T &dst, const Block &b) {
  pto::set_vec_tile_shapes(8, 16);
  T f = b.direct ? r
                 : pto::reshape(r, {b.lead, b.last},
                                {.valid_shape = std::vector<pto::SymbolicScalar>{b.lead, b.last}});
  pto::assemble(f, {b.row, 0}, dst);
}

/// The tile each case runs under: one entry per dim of its rank.
std::vector<int64_t> tile_for(size_t rank) {
  static const std::vector<int64_t> t{2, 4, 8, 16};
  return {t.end() - static_cast<std::ptrdiff_t>(rank), t.end()};
}

// ---- the expected results -----------------------------------------------------------------------

/// What one result must hold, per element (row-major in the result's shape): for values, the
/// src position it copies; for integer results, the value. -1 (values) / nullopt (integers):
/// a position outside the valid region.
struct Expect {
  std::vector<int64_t> vsrc;
  std::vector<std::optional<int64_t>> ints;
};

/// Sort, argsort, topk: {values, indices} (argsort: {indices}). `src_at(f)`: the src position of
/// input element f.
std::vector<Expect> want_rows(const Case &c, const pto::HostTensor &src,
                              const std::function<int64_t(int64_t)> &src_at) {
  const Shape out = c.out_shape();
  const size_t ax = c.ax();
  Expect vals{std::vector<int64_t>(static_cast<size_t>(numel(out)), -1), {}};
  Expect idx{{}, std::vector<std::optional<int64_t>>(static_cast<size_t>(numel(out)))};
  Shape rows = c.ext();
  const int64_t n = rows[ax];
  rows[ax] = 1;
  for (Shape r : box(rows)) {
    std::vector<long double> keys;
    for (int64_t j = 0; j < n; ++j) {
      r[ax] = j;
      keys.push_back(key(src, src_at(flat(c.shape, r))));
    }
    auto ord = order_of(keys, c.flag);
    if (c.op == Op::Topk) {
      ord.resize(static_cast<size_t>(std::min(c.k, n)));
      if (!c.sorted)
        std::sort(ord.begin(), ord.end());
    }
    for (size_t j = 0; j < ord.size(); ++j) {
      r[ax] = static_cast<int64_t>(j);
      const auto pos = static_cast<size_t>(flat(out, r));
      r[ax] = ord[j];
      vals.vsrc[pos] = src_at(flat(c.shape, r));
      idx.ints[pos] = ord[j];
    }
  }
  if (c.op == Op::Argsort)
    return {idx};
  return {vals, idx};
}

/// Unique: {values, count[, inverse][, counts]}.
std::vector<Expect> want_unique(const Case &c, const pto::HostTensor &src,
                                const std::function<int64_t(int64_t)> &src_at) {
  std::vector<int64_t> elems; // src positions of the valid region, row-major
  for (const Shape &i : box(c.ext()))
    elems.push_back(src_at(flat(c.shape, i)));
  std::vector<int64_t> reps, sizes, group(elems.size());
  for (size_t e = 0; e < elems.size(); ++e) {
    size_t g = 0;
    while (g < reps.size() && !same_key(key(src, reps[g]), key(src, elems[e])))
      ++g;
    if (g == reps.size()) {
      reps.push_back(elems[e]);
      sizes.push_back(0);
    }
    ++sizes[g];
    group[e] = static_cast<int64_t>(g);
  }
  std::vector<int64_t> perm(reps.size()); // final position -> group (first-occurrence order)
  for (size_t g = 0; g < reps.size(); ++g)
    perm[g] = static_cast<int64_t>(g);
  if (c.flag) {
    std::vector<long double> keys;
    for (auto r : reps)
      keys.push_back(key(src, r));
    perm = order_of(keys, false);
  }
  std::vector<int64_t> pos_of(reps.size());
  for (size_t p = 0; p < perm.size(); ++p)
    pos_of[static_cast<size_t>(perm[p])] = static_cast<int64_t>(p);
  const auto total = static_cast<size_t>(numel(c.shape));
  // Padding: values all bits zero (vsrc -2), counts 0.
  Expect vals{std::vector<int64_t>(total, -2), {}};
  for (size_t p = 0; p < perm.size(); ++p)
    vals.vsrc[p] = reps[static_cast<size_t>(perm[p])];
  std::vector<Expect> out = {vals, Expect{{}, {static_cast<int64_t>(reps.size())}}};
  if (c.inverse) {
    Expect inv{{}, std::vector<std::optional<int64_t>>(total)};
    size_t e = 0;
    for (const Shape &i : box(c.ext()))
      inv.ints[static_cast<size_t>(flat(c.shape, i))] = pos_of[static_cast<size_t>(group[e++])];
    out.push_back(inv);
  }
  if (c.counts) {
    Expect cnt{{}, std::vector<std::optional<int64_t>>(total, int64_t{0})};
    for (size_t p = 0; p < perm.size(); ++p)
      cnt.ints[p] = sizes[static_cast<size_t>(perm[p])];
    out.push_back(cnt);
  }
  return out;
}

/// Element `gi` of `got` is the same value as element `si` of `src`: the same bits, or both NaN.
bool same_value(const pto::HostTensor &got, int64_t gi, const pto::HostTensor &src, int64_t si) {
  const auto es = static_cast<size_t>(pto::bytes_of(got.dtype()));
  if (pto::is_float(got.dtype()) && std::isnan(got.get(gi)) && std::isnan(src.get(si)))
    return true;
  return std::memcmp(static_cast<const uint8_t *>(got.data()) + static_cast<size_t>(gi) * es,
                     static_cast<const uint8_t *>(src.data()) + static_cast<size_t>(si) * es,
                     es) == 0;
}
bool all_zero_bits(const pto::HostTensor &t, int64_t i) {
  const auto es = static_cast<size_t>(pto::bytes_of(t.dtype()));
  const auto *p = static_cast<const uint8_t *>(t.data()) + static_cast<size_t>(i) * es;
  return std::all_of(p, p + es, [](uint8_t b) { return b == 0; });
}
int64_t int_at(const pto::HostTensor &t, int64_t i) {
  return t.dtype() == kI64 ? t.data_as<int64_t>()[i] : static_cast<int64_t>(t.get(i));
}

/// Runs every case of `cs` for dtype `dt` in mode `m`; returns one line per failing result.
std::string run_sort_cases(pto::DataType dt, pto::RunMode m, const std::vector<Case> &cs) {
  const Layout l = layout(cs);
  const int64_t w = l.width;
  pto::HostTensor src(dt, {l.src_rows, w});
  std::vector<pto::HostTensor> out = {
      pto::HostTensor(dt, {std::max<int64_t>(l.rows[kVals], 1), w}),
      pto::HostTensor(kI32, {std::max<int64_t>(l.rows[kIdx32], 1), w}),
      pto::HostTensor(kI64, {std::max<int64_t>(l.rows[kIdx64], 1), w})};
  fill_input(src, 1000 + static_cast<uint64_t>(dt));
  for (int p = 0; p < kParams; ++p)
    out[static_cast<size_t>(p)].fill(kFill[p]);
  auto k = pto::jit(
      "sort_cases",
      [&](T s, T vals, T idx32, T idx64) {
        const T dst[kParams] = {vals, idx32, idx64};
        for (size_t ci = 0; ci < cs.size(); ++ci) {
          const Case &c = cs[ci];
          const Block &ib = l.in[ci];
          const auto &ob = l.out[ci];
          pto::set_vec_tile_shapes(tile_for(c.shape.size()));
          T x = pto::view(s, {ib.lead, ib.last}, {ib.row, 0});
          if (!ib.direct)
            x = pto::reshape(x, sym(c.shape));
          if (!c.valid.empty())
            x = pto::view(x, c.shape, sym(Shape(c.shape.size(), 0)), {.valid_shape = sym(c.valid)});
          std::vector<T> rs;
          switch (c.op) {
          case Op::Sort: {
            auto r = pto::sort(x, c.axis, {.descending = c.flag, .index_dtype = c.index_dtype});
            rs = {r.values, r.indices};
            break;
          }
          case Op::Argsort:
            rs = {pto::argsort(x, c.axis, {.descending = c.flag, .index_dtype = c.index_dtype})};
            break;
          case Op::Topk: {
            auto r =
                pto::topk(x, c.k, c.axis,
                          {.largest = c.flag, .sorted = c.sorted, .index_dtype = c.index_dtype});
            rs = {r.values, r.indices};
            break;
          }
          case Op::Unique: {
            auto r = pto::unique(x, {.sorted = c.flag,
                                     .return_inverse = c.inverse,
                                     .return_counts = c.counts,
                                     .index_dtype = c.index_dtype});
            rs = {r.values, r.count};
            if (c.inverse)
              rs.push_back(r.inverse);
            if (c.counts)
              rs.push_back(r.counts);
            break;
          }
          }
          for (size_t j = 0; j < rs.size(); ++j)
            place(rs[j], dst[ob[j].first], ob[j].second);
        }
      },
      support::opts(m));
  k(src, out[0], out[1], out[2]);
  std::string report;
  for (size_t ci = 0; ci < cs.size(); ++ci) {
    const Case &c = cs[ci];
    const Block &ib = l.in[ci];
    auto src_at = [&](int64_t f) { return at(ib, f, w); };
    const auto want = c.op == Op::Unique ? want_unique(c, src, src_at) : want_rows(c, src, src_at);
    for (size_t j = 0; j < want.size(); ++j) {
      const auto [p, b] = l.out[ci][j];
      const pto::HostTensor &got = out[static_cast<size_t>(p)];
      const Expect &e = want[j];
      const size_t n = p == kVals ? e.vsrc.size() : e.ints.size();
      for (size_t f = 0; f < n; ++f) {
        const int64_t g = at(b, static_cast<int64_t>(f), w);
        bool ok;
        std::string want_s;
        if (p == kVals) {
          const int64_t s = e.vsrc[f];
          ok = s >= 0                ? same_value(got, g, src, s)
               : s == -1 && b.direct ? got.get(g) == kFill[kVals]
                                     : all_zero_bits(got, g);
          want_s = s >= 0 ? std::to_string(src.get(s)) : s == -1 && b.direct ? "the fill" : "0";
        } else {
          const int64_t v = e.ints[f].value_or(b.direct ? int64_t(kFill[p]) : 0);
          ok = int_at(got, g) == v;
          want_s = std::to_string(v);
        }
        if (!ok) {
          report += c.name + ": result " + std::to_string(j) + " element " + std::to_string(f) +
                    " is " + std::to_string(got.get(g)) + ", want " + want_s + "\n";
          break;
        }
      }
    }
  }
  return report;
}

} // namespace

TEST_CASE("sort, argsort, topk and unique match an insertion-sort reference for every dtype, "
          "axis, rank 1-4, valid region and length-1 rows") {
  for (pto::DataType dt :
       {pto::DT_FP32, pto::DT_FP16, pto::DT_BF16, pto::DT_DOUBLE, pto::DT_INT8, pto::DT_INT16,
        pto::DT_INT32, pto::DT_INT64, pto::DT_UINT8, pto::DT_BOOL}) {
    SUBCASE(pto::name(dt).c_str()) {
      for (auto m : support::run_modes()) {
        CAPTURE(std::string(support::mode_name(m)));
        const bool full = m == pto::RunMode::Interpret || dt == pto::DT_FP32;
        CHECK(run_sort_cases(dt, m, full ? full_cases(dt == pto::DT_FP32) : smoke_cases()) == "");
      }
    }
  }
}

TEST_CASE("sort: NaN order, signed zeros and ties, spelled out") {
  // Ascending: -inf, -1, then the zeros and ones in index order, inf, then the NaNs in index order.
  const std::vector<double> in = {1, NAN, -0.0, 0.0, -1, INFINITY, -INFINITY, 1, NAN, -0.0};
  const std::vector<int64_t> asc = {6, 4, 2, 3, 9, 0, 7, 5, 1, 8};
  const std::vector<int64_t> desc = {1, 8, 5, 0, 7, 2, 3, 9, 4, 6};
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    pto::HostTensor x(pto::DT_FP32, {1, 10}), ia(pto::DT_INT32, {1, 10}),
        id(pto::DT_INT32, {1, 10}), va(pto::DT_FP32, {1, 10}), tk(pto::DT_INT64, {1, 4});
    for (size_t i = 0; i < in.size(); ++i)
      x.set(static_cast<int64_t>(i), in[i]);
    auto k = pto::jit(
        "nan_order",
        [](T x, T ia, T id, T va, T tk) {
          pto::set_vec_tile_shapes(1, 16);
          auto s = pto::sort(x);
          pto::assemble(s.indices, {0, 0}, ia);
          pto::assemble(s.values, {0, 0}, va);
          pto::assemble(pto::argsort(x), {0, 0}, id); // PyPTO's default: descending
          pto::assemble(pto::topk(x, 4, -1, {.index_dtype = pto::DT_INT64}).indices, {0, 0}, tk);
        },
        support::opts(m));
    k(x, ia, id, va, tk);
    for (int64_t i = 0; i < 10; ++i) {
      CHECK(ia.get(i) == static_cast<double>(asc[static_cast<size_t>(i)]));
      CHECK(id.get(i) == static_cast<double>(desc[static_cast<size_t>(i)]));
    }
    for (int64_t i = 0; i < 4; ++i) // the four largest: NaN, NaN, inf, 1 (index 0 before 7)
      CHECK(tk.get(i) == static_cast<double>(desc[static_cast<size_t>(i)]));
    CHECK(std::signbit(va.get(2)));  // -0 (index 2) first among the zeros
    CHECK(!std::signbit(va.get(3))); // then +0 (index 3)
    CHECK(std::signbit(va.get(4)));  // then -0 (index 9)
  }
}

TEST_CASE("topk and sort along a DYNAMIC axis: rows shorter than k give min(k, n) valid results") {
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    auto k = pto::jit(
        "dyn_topk",
        [](T x, T vals, T idx, T sorted) {
          pto::set_vec_tile_shapes(2, 16);
          auto r = pto::topk(x, 5);
          pto::assemble(r.values, {0, 0}, vals);
          pto::assemble(r.indices, {0, 0}, idx);
          pto::assemble(pto::sort(x, 1, {.descending = true}).values, {0, 0}, sorted);
        },
        support::opts(m, {{{3, pto::DYNAMIC}}, {}, {}, {{3, pto::DYNAMIC}}}));
    for (int64_t n : {3, 9}) {
      CAPTURE(n);
      pto::HostTensor x(pto::DT_INT32, {3, n}), vals(pto::DT_INT32, {3, 5}),
          idx(pto::DT_INT32, {3, 5}), sorted(pto::DT_INT32, {3, n});
      std::mt19937_64 rng(static_cast<uint64_t>(n));
      for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, static_cast<double>(rng() % 7));
      vals.fill(-99);
      idx.fill(-99);
      k(x, vals, idx, sorted);
      for (int64_t r = 0; r < 3; ++r) {
        std::vector<long double> keys;
        for (int64_t j = 0; j < n; ++j)
          keys.push_back(key(x, r * n + j));
        const auto ord = order_of(keys, true);
        for (int64_t j = 0; j < n; ++j)
          CHECK(sorted.get(r * n + j) == x.get(r * n + ord[static_cast<size_t>(j)]));
        for (int64_t j = 0; j < 5; ++j) {
          const bool valid = j < n;
          CHECK(idx.get(r * 5 + j) ==
                (valid ? static_cast<double>(ord[static_cast<size_t>(j)]) : -99));
          CHECK(vals.get(r * 5 + j) ==
                (valid ? x.get(r * n + ord[static_cast<size_t>(j)]) : -99)); // never written
        }
      }
    }
    CHECK(k.stats().traces == 1); // one trace serves both lengths
    CHECK(k.last_ir().find("ints=[5, 1, 1]") != std::string::npos);
  }
}

TEST_CASE("unique: the padding after the distinct values is zero, also in reused scratch memory") {
  // The second call's scratch blocks are likely the first call's (same sizes, freed in order),
  // still holding 185 distinct values: the padding must be written, not inherited.
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    auto k = pto::jit(
        "unique_pad",
        [](T x, T vals, T count, T counts) {
          pto::set_vec_tile_shapes(8, 16);
          auto r = pto::unique(x, {.return_counts = true});
          pto::assemble(pto::reshape(r.values, {1, 185}), {0, 0}, vals);
          pto::assemble(r.count, {0}, count);
          pto::assemble(pto::reshape(r.counts, {1, 185}), {0, 0}, counts);
        },
        support::opts(m));
    pto::HostTensor x(pto::DT_FP32, {5, 37}), vals(pto::DT_FP32, {1, 185}),
        count(pto::DT_INT32, {1}), counts(pto::DT_INT32, {1, 185});
    for (int64_t i = 0; i < 185; ++i)
      x.set(i, static_cast<double>(i) + 0.5);
    k(x, vals, count, counts);
    CHECK(count.get(0) == 185);
    CHECK(vals.get(184) == 184.5);
    x.fill(3);
    vals.fill(-1);
    counts.fill(-1);
    k(x, vals, count, counts);
    CHECK(count.get(0) == 1);
    CHECK(vals.get(0) == 3);
    CHECK(counts.get(0) == 185);
    for (int64_t i = 1; i < 185; ++i) {
      CHECK(all_zero_bits(vals, i));
      CHECK(counts.get(i) == 0);
    }
  }
}

// ---- Bessel ---------------------------------------------------------------------------------

namespace {

const long double kPi = 3.141592653589793238462643383279502884L;

/// exp(-|x|) I_nu(x) in long double, by methods independent of the routine's for |x| > 1.
long double ref_ie(int nu, long double x) {
  if (std::isnan(x))
    return x;
  const long double a = std::fabs(x);
  if (std::isinf(a))
    return nu == 0 ? 0.0L : std::copysign(0.0L, x);
  if (nu == 1 && a <= 1) { // the defining series (the integral cancels to ~a/2 here)
    const long double q = a * a / 4;
    long double term = 1, sum = 1;
    for (int k = 1; k < 40; ++k) {
      term *= q / (static_cast<long double>(k) * (k + 1));
      sum += term;
    }
    return x / 2 * sum * std::exp(-a);
  }
  if (a <= 1e4) { // trapezoidal rule, error ~ exp(-(2N)^2 / (2a)) < 1e-30
    const int n = 20 + 6 * static_cast<int>(std::ceil(std::sqrt(a)));
    long double sum = 0, comp = 0; // Neumaier summation
    for (int j = 0; j <= n; ++j) {
      const long double t = kPi * j / n, s = std::sin(t / 2);
      long double f = std::exp(-2 * a * s * s) * (nu == 0 ? 1.0L : std::cos(t));
      if (j == 0 || j == n)
        f /= 2;
      const long double u = sum + f;
      comp += std::fabs(sum) >= std::fabs(f) ? (sum - u) + f : (f - u) + sum;
      sum = u;
    }
    const long double r = (sum + comp) / n;
    return nu == 0 ? r : std::copysign(r, x);
  }
  // Hankel's expansion (DLMF 10.40.1): 12 terms leave an error far below 1e-40 at a > 1e4.
  long double term = 1, sum = 1;
  for (int k = 1; k <= 12; ++k) {
    const long double odd = 2 * k - 1;
    term *= -(4 * nu * nu - odd * odd) / (8 * a * k);
    sum += term;
  }
  const long double r = sum / std::sqrt(2 * kPi * a);
  return nu == 0 ? r : std::copysign(r, x);
}

/// |got - want| in units of the last place of `want` in a binary format with `digits` mantissa
/// bits and minimum normal exponent `emin` (subnormals have the spacing of the smallest normal).
double ulps(long double got, long double want, int digits, int emin) {
  if (std::isnan(want))
    return std::isnan(got) ? 0 : INFINITY;
  if (got == want)
    return 0;
  const int e = want == 0 ? emin : std::max(std::ilogb(want), emin);
  return static_cast<double>(std::fabs(got - want) / std::ldexp(1.0L, e - digits + 1));
}

/// The sweep: specials, a log sweep of |x| over [1e-40, 1e6] (alternating signs), a dense
/// linear sweep over [0, 50] (the series / expansion switch at 25), and huge values.
std::vector<double> bessel_sweep() {
  std::vector<double> xs = {0.0,      -0.0,
                            INFINITY, -INFINITY,
                            NAN,      5e-324,
                            -5e-324,  1e-310,
                            DBL_MIN,  FLT_MIN,
                            1e-45,    -1e-40,
                            1e30,     -1e300,
                            DBL_MAX,  FLT_MAX,
                            -FLT_MAX, std::nextafter(25.0, 0.0),
                            25.0,     std::nextafter(25.0, 50.0),
                            1e4,      1.0000001e4};
  for (int i = 0; i <= 4600; ++i)
    xs.push_back((i % 2 ? -1 : 1) * std::pow(10.0, -40 + i * 0.01));
  for (int i = 0; i <= 5000; ++i)
    xs.push_back((i % 3 ? 1 : -1) * i * 0.01 + 1e-9 * i);
  return xs;
}

} // namespace

TEST_CASE("bessel_i0e and bessel_i1e: max ULP error in fp32 and fp64 over a dense sweep, "
          "parity and special values; fp16/bf16 rounded once") {
  const std::vector<double> xs = bessel_sweep();
  const auto n = static_cast<int64_t>(xs.size());
  struct Format {
    pto::DataType dt;
    int digits, emin;
    double bound; // sort_ops.h's measured bound, rounded up
  };
  for (Format f : {Format{pto::DT_FP32, 24, -126, 0.501}, Format{pto::DT_DOUBLE, 53, -1022, 0.505},
                   Format{pto::DT_FP16, 11, -14, 0.501}, Format{pto::DT_BF16, 8, -126, 0.501}}) {
    SUBCASE(pto::name(f.dt).c_str()) {
      pto::HostTensor x(f.dt, {1, n});
      for (int64_t i = 0; i < n; ++i)
        x.set(i, xs[static_cast<size_t>(i)]);
      std::vector<long double> want0(static_cast<size_t>(n)), want1(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        want0[static_cast<size_t>(i)] = ref_ie(0, x.get(i));
        want1[static_cast<size_t>(i)] = ref_ie(1, x.get(i));
      }
      for (auto m : support::run_modes()) {
        CAPTURE(std::string(support::mode_name(m)));
        pto::HostTensor y0(f.dt, {1, n}), y1(f.dt, {1, n});
        auto k = pto::jit(
            "bessel",
            [](T x, T y0, T y1) {
              pto::set_vec_tile_shapes(1, 256);
              pto::assemble(pto::bessel_i0e(x), {0, 0}, y0);
              pto::assemble(pto::bessel_i1e(x), {0, 0}, y1);
            },
            support::opts(m));
        k(x, y0, y1);
        double worst0 = 0, worst1 = 0;
        double at0 = 0, at1 = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double e0 = ulps(y0.get(i), want0[static_cast<size_t>(i)], f.digits, f.emin);
          const double e1 = ulps(y1.get(i), want1[static_cast<size_t>(i)], f.digits, f.emin);
          if (e0 > worst0) {
            worst0 = e0;
            at0 = x.get(i);
          }
          if (e1 > worst1) {
            worst1 = e1;
            at1 = x.get(i);
          }
          // Parity, bit for bit: i0e even, i1e odd (signed zeros included).
          if (i > 0 && x.get(i) == -x.get(i - 1)) {
            CHECK(y0.get(i) == y0.get(i - 1));
            CHECK(y1.get(i) == -y1.get(i - 1));
          }
        }
        MESSAGE(pto::name(f.dt), " ", std::string(support::mode_name(m)), ": i0e max ", worst0,
                " ULP at x = ", at0, ", i1e max ", worst1, " ULP at x = ", at1);
        CHECK(worst0 <= f.bound);
        CHECK(worst1 <= f.bound);
        // Special values (indices into the sweep's head).
        CHECK(y0.get(0) == 1);
        CHECK(y0.get(1) == 1);
        CHECK((y1.get(0) == 0 && !std::signbit(y1.get(0))));
        CHECK((y1.get(1) == 0 && std::signbit(y1.get(1))));
        CHECK((y0.get(2) == 0 && !std::signbit(y0.get(2))));
        CHECK((y0.get(3) == 0 && !std::signbit(y0.get(3))));
        CHECK((y1.get(2) == 0 && !std::signbit(y1.get(2))));
        CHECK((y1.get(3) == 0 && std::signbit(y1.get(3))));
        CHECK(std::isnan(y0.get(4)));
        CHECK(std::isnan(y1.get(4)));
      }
    }
  }
}

TEST_CASE("bessel on a valid region of a rank-3 tensor leaves the rest of the output alone") {
  for (auto m : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(m)));
    pto::HostTensor x(pto::DT_FP32, {2, 3, 17}), y(pto::DT_FP32, {2, 3, 17});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, 0.37 * static_cast<double>(i) - 9);
    y.fill(-5);
    auto k = pto::jit(
        "bessel_valid",
        [](T x, T y) {
          pto::set_vec_tile_shapes(1, 2, 8);
          auto v = pto::view(x, {2, 3, 17}, {0, 0, 0},
                             {.valid_shape = std::vector<pto::SymbolicScalar>{2, 2, 11}});
          pto::assemble(pto::bessel_i1e(v), {0, 0, 0}, y);
        },
        support::opts(m));
    k(x, y);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool valid = (i / 17) % 3 < 2 && i % 17 < 11;
      const double want =
          valid ? static_cast<double>(static_cast<float>(ref_ie(1, x.get(i)))) : -5.0;
      CHECK(y.get(i) == want);
    }
  }
}

TEST_CASE("sort_ops: bad axes, k, dtypes, ranks and missing tiles are typed errors naming the "
          "call site") {
  auto run = [](auto fn, pto::DataType dt, const Shape &shape = {4, 8}, bool tile = true) {
    pto::HostTensor x(dt, shape);
    auto k = pto::jit(
        "bad",
        [&](T t) {
          if (tile)
            pto::set_vec_tile_shapes(std::vector<int64_t>(4, 4));
          fn(t);
        },
        support::opts(pto::RunMode::Interpret));
    k(x);
  };
  using doctest::Contains;
  const auto f32 = pto::DT_FP32;
  CHECK_THROWS_WITH_AS(run([](T t) { pto::sort(t, 2); }, f32), Contains("sort_ops_test.cpp:"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::sort(t, 2); }, f32),
                       Contains("sort: axis 2 is out of range for rank 2"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::argsort(t, -3); }, f32),
                       Contains("argsort: axis -3 is out of range for rank 2"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::topk(t, 2, 5); }, f32),
                       Contains("topk: axis 5 is out of range"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::topk(t, 9); }, f32),
                       Contains("topk: k 9 is larger than the length 8 of axis -1"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::topk(t, 5, 0); }, f32),
                       Contains("topk: k 5 is larger than the length 4 of axis 0"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::topk(t, 0); }, f32),
                       Contains("topk: k must be at least 1, got 0"), pto::ShapeError);
  // Index dtypes other than int32/int64.
  CHECK_THROWS_WITH_AS(run([](T t) { pto::sort(t, -1, {.index_dtype = pto::DT_INT16}); }, f32),
                       Contains("sort: index_dtype must be DT_INT32 or DT_INT64, got DT_INT16"),
                       pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::argsort(t, -1, {.index_dtype = pto::DT_FP32}); }, f32),
                       Contains("argsort: index_dtype"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::topk(t, 2, -1, {.index_dtype = pto::DT_UINT8}); }, f32),
                       Contains("topk: index_dtype"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::unique(t, {.index_dtype = pto::DT_BOOL}); }, f32),
                       Contains("unique: index_dtype"), pto::DTypeError);
  // Bessel takes floats only.
  CHECK_THROWS_WITH_AS(run([](T t) { pto::bessel_i0e(t); }, pto::DT_INT32),
                       Contains("bessel_i0e: expected a floating dtype (fp16, bf16, fp32, fp64), "
                                "got DT_INT32; cast first"),
                       pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::bessel_i1e(t); }, pto::DT_BOOL),
                       Contains("bessel_i1e: expected a floating dtype"), pto::DTypeError);
  // Operands: rank 5, a dependency token.
  CHECK_THROWS_WITH_AS(run([](T t) { pto::sort(t); }, f32, {1, 2, 2, 2, 2}),
                       Contains("sort: tensor"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T) { pto::unique(pto::distributed::nop({})); }, f32),
                       Contains("unique: tensor"), pto::DTypeError);
  // Lengths that int32 indices (or unique's int32 count) cannot hold; traced only, never run.
  const pto::SymbolicScalar huge(int64_t{3000000000});
  CHECK_THROWS_WITH_AS(
      run([&](T t) { pto::sort(pto::expand(pto::view(t, {1, 1}, {0, 0}), {1, huge})); }, f32),
      Contains("sort: axis length 3000000000 does not fit DT_INT32 indices"), pto::ShapeError);
  // With DT_INT64 indices the same trace goes on (stopped right after, before anything runs).
  CHECK_THROWS_WITH_AS(run(
                           [&](T t) {
                             pto::argsort(pto::expand(pto::view(t, {1, 1}, {0, 0}), {1, huge}), -1,
                                          {.index_dtype = pto::DT_INT64});
                             throw pto::ArgumentError("probe", "argsort", "traced");
                           },
                           f32),
                       Contains("probe: argsort: traced"), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(
      run([&](T t) { pto::unique(pto::expand(pto::view(t, {1, 1}, {0, 0}), {1, huge})); }, f32),
      Contains("unique: element count 3000000000 is above 2147483647"), pto::ShapeError);
  // No vec tile set.
  CHECK_THROWS_WITH_AS(run([](T t) { pto::topk(t, 2); }, f32, {4, 8}, false),
                       Contains("topk: no vec tile shape is set"), pto::TileShapeError);
  CHECK_THROWS_WITH_AS(run([](T t) { pto::bessel_i0e(t); }, f32, {4, 8}, false),
                       Contains("bessel_i0e: no vec tile shape is set"), pto::TileShapeError);
}
