// xops_sort.cpp - Library routines (xops.h) of sort, argsort, topk and unique (sort_ops.h).
// Every element is mapped to an int64 key whose order is the sort order (NaN above +inf, -0 equal
// to +0), and rows are sorted as (key, index) pairs: the index tie-break makes std::sort and
// std::partial_sort give the stable order in both directions, in O(n log n).
#include "rtlib/xops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace pto::codegen {

namespace {

using Pair = std::pair<int64_t, int64_t>; // (key, index)

DataType dt_of(const XTensor &t) { return static_cast<DataType>(t.dtype); }

/// The sort key of element `lin` of `t`: ints as themselves; floats by their order as reals with
/// -0 folded into +0 and every NaN mapped above +inf.
int64_t key_of(const XTensor &t, int64_t lin) {
  const DataType dt = dt_of(t);
  if (!is_float(dt))
    return x_load_i(t, lin);
  const double v = x_load_f(t, lin); // exact for every float dtype
  if (std::isnan(v))
    return INT64_MAX;
  if (v == 0)
    return 0;
  const auto bits = std::bit_cast<int64_t>(v);
  // Negative doubles: a larger magnitude is a larger bit pattern; flipping the magnitude bits
  // orders them below every positive one (and below each other the right way round).
  return bits >= 0 ? bits : bits ^ INT64_MAX;
}

/// Strict orders on (key, index): ascending or descending keys, lower index first on ties.
bool before_asc(const Pair &a, const Pair &b) {
  return a.first < b.first || (a.first == b.first && a.second < b.second);
}
bool before_desc(const Pair &a, const Pair &b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

/// Calls `f(idx)` for every index of the box `ext` (rank entries) whose `axis` entry is 0: the
/// start of every row along `axis`. No call when an extent other than `axis`'s is 0.
template <class F> void for_rows(int64_t rank, const int64_t *ext, int64_t axis, F &&f) {
  int64_t idx[kXMaxRank] = {};
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && ext[d] <= 0)
      return;
  for (;;) {
    f(idx);
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      if (d == axis)
        continue;
      if (++idx[d] < ext[d])
        break;
      idx[d] = 0;
    }
    if (d < 0)
      return;
  }
}

void copy_elem(const XTensor &dst, int64_t dst_lin, const XTensor &src, int64_t src_lin) {
  const auto esize = static_cast<size_t>(bytes_of(dt_of(src)));
  std::memcpy(static_cast<uint8_t *>(dst.base) + dst_lin * static_cast<int64_t>(esize),
              static_cast<const uint8_t *>(src.base) + src_lin * static_cast<int64_t>(esize),
              esize);
}

int32_t internal(const XCall &c, const std::string &what) {
  return pto_rt_fail_msg(c.ctx, PTO_ERROR_INTERNAL, static_cast<int32_t>(c.site),
                         (what + " (a ptojit bug; rerun with PTO_DUMP=ir)").c_str());
}

/// True when every output `o` covers the input's valid extents on every dim but `axis` (and on
/// `axis` at least `axis_need`): the routine then never writes outside an output's valid region.
bool outputs_cover(const XCall &c, int64_t axis, int64_t axis_need) {
  const XTensor &x = c.tensors[0];
  for (int64_t k = c.n_inputs; k < c.n_tensors; ++k) {
    const XTensor &o = c.tensors[k];
    if (o.rank != x.rank)
      return false;
    for (int64_t d = 0; d < x.rank; ++d)
      if (o.valid[d] < (d == axis ? axis_need : x.valid[d]))
        return false;
  }
  return true;
}

/// Sort: outputs (values, indices) or (indices); ints = [descending].
int32_t sort_rows(const XCall &c) {
  if (c.n_inputs != 1 || c.n_tensors < 2 || c.n_tensors > 3 || c.n_ints < 1)
    return internal(c, "sort: bad operand or attribute count");
  const XTensor &x = c.tensors[0];
  const bool with_values = c.n_tensors == 3;
  const XTensor &idx_out = c.tensors[c.n_tensors - 1];
  const int64_t axis = c.axis, n = x.valid[axis];
  if (axis < 0 || axis >= x.rank || !outputs_cover(c, axis, n))
    return internal(c, "sort: outputs do not match the input");
  const bool desc = c.ints[0] != 0;
  std::vector<Pair> row(static_cast<size_t>(n));
  for_rows(x.rank, x.valid, axis, [&](int64_t *at) {
    const int64_t x0 = x_lin(x, at), i0 = x_lin(idx_out, at);
    const int64_t v0 = with_values ? x_lin(c.tensors[1], at) : 0;
    for (int64_t j = 0; j < n; ++j)
      row[static_cast<size_t>(j)] = {key_of(x, x0 + j * x.strides[axis]), j};
    std::sort(row.begin(), row.end(), desc ? before_desc : before_asc);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t src = row[static_cast<size_t>(j)].second;
      x_store_i(idx_out, i0 + j * idx_out.strides[axis], src);
      if (with_values)
        copy_elem(c.tensors[1], v0 + j * c.tensors[1].strides[axis], x, x0 + src * x.strides[axis]);
    }
  });
  return PTO_OK;
}

/// Topk: outputs (values, indices); ints = [k, largest, sorted].
int32_t topk_rows(const XCall &c) {
  if (c.n_inputs != 1 || c.n_tensors != 3 || c.n_ints < 3)
    return internal(c, "topk: bad operand or attribute count");
  const XTensor &x = c.tensors[0], &vals = c.tensors[1], &idxs = c.tensors[2];
  const int64_t axis = c.axis, n = x.valid[axis];
  const int64_t k = std::min(c.ints[0], n);
  if (axis < 0 || axis >= x.rank || k < 0 || !outputs_cover(c, axis, k))
    return internal(c, "topk: outputs do not match the input");
  const bool largest = c.ints[1] != 0, sorted = c.ints[2] != 0;
  std::vector<Pair> row(static_cast<size_t>(n));
  for_rows(x.rank, x.valid, axis, [&](int64_t *at) {
    const int64_t x0 = x_lin(x, at), v0 = x_lin(vals, at), i0 = x_lin(idxs, at);
    for (int64_t j = 0; j < n; ++j)
      row[static_cast<size_t>(j)] = {key_of(x, x0 + j * x.strides[axis]), j};
    std::partial_sort(row.begin(), row.begin() + k, row.end(), largest ? before_desc : before_asc);
    if (!sorted)
      std::sort(row.begin(), row.begin() + k,
                [](const Pair &a, const Pair &b) { return a.second < b.second; });
    for (int64_t j = 0; j < k; ++j) {
      const int64_t src = row[static_cast<size_t>(j)].second;
      x_store_i(idxs, i0 + j * idxs.strides[axis], src);
      copy_elem(vals, v0 + j * vals.strides[axis], x, x0 + src * x.strides[axis]);
    }
  });
  return PTO_OK;
}

/// Unique: outputs (values, count[, inverse][, counts]); ints = [sorted, inverse, counts].
int32_t unique_all(const XCall &c) {
  if (c.n_inputs != 1 || c.n_ints < 3)
    return internal(c, "unique: bad attribute count");
  const bool sorted = c.ints[0] != 0, want_inverse = c.ints[1] != 0, want_counts = c.ints[2] != 0;
  if (c.n_tensors != 3 + (want_inverse ? 1 : 0) + (want_counts ? 1 : 0))
    return internal(c, "unique: bad operand count");
  const XTensor &x = c.tensors[0], &vals = c.tensors[1], &count = c.tensors[2];
  const XTensor *inverse = want_inverse ? &c.tensors[3] : nullptr;
  const XTensor *counts = want_counts ? &c.tensors[c.n_tensors - 1] : nullptr;
  // The valid region in row-major order: element e is at storage offset lin[e].
  std::vector<int64_t> lin;
  std::vector<Pair> elems;
  for_rows(x.rank, x.valid, x.rank - 1, [&](int64_t *at) {
    const int64_t l0 = x_lin(x, at);
    for (int64_t j = 0; j < x.valid[x.rank - 1]; ++j) {
      const int64_t l = l0 + j * x.strides[x.rank - 1];
      elems.emplace_back(key_of(x, l), static_cast<int64_t>(lin.size()));
      lin.push_back(l);
    }
  });
  const auto n = static_cast<int64_t>(elems.size());
  if (vals.rank != 1 || vals.valid[0] < n || count.rank != 1 || count.valid[0] < 1 ||
      (counts && (counts->rank != 1 || counts->valid[0] < n)) ||
      (inverse && (inverse->rank != x.rank || !std::equal(
                                                  x.valid, x.valid + x.rank, inverse->valid,
                                                  [](int64_t a, int64_t b) { return b >= a; }))))
    return internal(c, "unique: outputs do not match the input");
  std::sort(elems.begin(), elems.end(), before_asc);
  // Runs of equal keys in `elems`: [start, start + size); the run's first pair has the lowest
  // index, the value's first occurrence.
  struct Group {
    int64_t first, size, start;
  };
  std::vector<Group> groups;
  for (int64_t s = 0; s < n;) {
    int64_t e = s;
    while (e < n && elems[static_cast<size_t>(e)].first == elems[static_cast<size_t>(s)].first)
      ++e;
    groups.push_back({elems[static_cast<size_t>(s)].second, e - s, s});
    s = e;
  }
  if (!sorted)
    std::sort(groups.begin(), groups.end(),
              [](const Group &a, const Group &b) { return a.first < b.first; });
  const auto m = static_cast<int64_t>(groups.size());
  for (int64_t g = 0; g < m; ++g) {
    const Group &gr = groups[static_cast<size_t>(g)];
    copy_elem(vals, g * vals.strides[0], x, lin[static_cast<size_t>(gr.first)]);
    if (counts)
      x_store_i(*counts, g * counts->strides[0], gr.size);
  }
  const int64_t esize = bytes_of(dt_of(vals));
  for (int64_t g = m; g < vals.valid[0]; ++g)
    std::memset(static_cast<uint8_t *>(vals.base) + g * vals.strides[0] * esize, 0,
                static_cast<size_t>(esize));
  if (counts)
    for (int64_t g = m; g < counts->valid[0]; ++g)
      x_store_i(*counts, g * counts->strides[0], 0);
  x_store_i(count, 0, m);
  if (inverse) {
    std::vector<int64_t> group_of(static_cast<size_t>(n));
    for (int64_t g = 0; g < m; ++g) {
      const Group &gr = groups[static_cast<size_t>(g)];
      for (int64_t s = gr.start; s < gr.start + gr.size; ++s)
        group_of[static_cast<size_t>(elems[static_cast<size_t>(s)].second)] = g;
    }
    int64_t e = 0;
    for_rows(x.rank, x.valid, x.rank - 1, [&](int64_t *at) {
      const int64_t l0 = x_lin(*inverse, at);
      for (int64_t j = 0; j < x.valid[x.rank - 1]; ++j)
        x_store_i(*inverse, l0 + j * inverse->strides[x.rank - 1],
                  group_of[static_cast<size_t>(e++)]);
    });
  }
  return PTO_OK;
}

} // namespace

int32_t xop_sort(const XCall &call) { return sort_rows(call); }
int32_t xop_topk(const XCall &call) { return topk_rows(call); }
int32_t xop_unique(const XCall &call) { return unique_all(call); }

} // namespace pto::codegen
