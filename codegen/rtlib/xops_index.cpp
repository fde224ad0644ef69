// xops_index.cpp - Library routines (xops.h) of the indexing ops of index_ops.h: gather,
// index_select (and embedding), scatter, index_add, index_put, one_hot and unsorted_segment_*.
// Attribute layouts are documented at each kind in pto/ir/op_kinds.def.
//
// Every routine walks a region that is the intersection of the valid extents of the operands
// covering it, so it never reads or writes outside a valid window; every index value read from a
// tensor is checked before it addresses memory, and a bad one is reported through
// pto_rt_fail_msg (RuntimeError) instead of being used.
#include "pto/element.h"

#include "rtlib/xops.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace pto::codegen {

namespace {

using Idx = std::array<int64_t, kXMaxRank>;

DataType dt_of(const XTensor &t) { return static_cast<DataType>(t.dtype); }
uint8_t *at(const XTensor &t, const int64_t *idx) { return static_cast<uint8_t *>(x_addr(t, idx)); }
int64_t load_index(const XTensor &t, const int64_t *idx) { return x_load_i(t, x_lin(t, idx)); }

/// Calls f(idx) for every idx in [0, ext) (`rank` dims) in row-major order; stops at the first
/// status f returns that is not PTO_OK. A rank of 0 is one call.
template <class F> int32_t walk(int64_t rank, const int64_t *ext, F &&f) {
  for (int64_t d = 0; d < rank; ++d)
    if (ext[d] <= 0)
      return PTO_OK;
  Idx i{};
  for (;;) {
    if (int32_t st = f(i.data()))
      return st;
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      if (++i[d] < ext[d])
        break;
      i[d] = 0;
    }
    if (d < 0)
      return PTO_OK;
  }
}

/// Records "<what> <v> at <tensor>[pos] is out of range [lo, hi) <of>" as a RuntimeError.
int32_t out_of_range(const XCall &c, const char *what, int64_t v, const std::string &tensor,
                     const int64_t *pos, int64_t rank, int64_t lo, int64_t hi,
                     const std::string &of) {
  std::vector<int64_t> p(pos, pos + rank);
  std::string d = fmt::format("{} {} at {}[{}] is out of range [{}, {}) {}", what, v, tensor,
                              fmt::join(p, ", "), lo, hi, of);
  return pto_rt_fail_msg(c.ctx, PTO_ERROR_RUNTIME, static_cast<int32_t>(c.site), d.c_str());
}

std::string axis_extent(int64_t axis) {
  return fmt::format("of x's valid extent on axis {}", axis);
}

/// The valid extent of dim d shared by tensors a and b.
int64_t common(const XTensor &a, const XTensor &b, int64_t d) {
  return std::min(a.valid[d], b.valid[d]);
}

/// out = x over their common valid region (the result of the copying ops starts as x).
void copy_valid(const XTensor &x, const XTensor &out) {
  int64_t ext[kXMaxRank];
  for (int64_t d = 0; d < x.rank; ++d)
    ext[d] = common(x, out, d);
  const auto es = static_cast<size_t>(bytes_of(dt_of(x)));
  walk(x.rank, ext, [&](const int64_t *i) -> int32_t {
    std::memcpy(at(out, i), at(x, i), es);
    return PTO_OK;
  });
}

/// How an update combines the old element with the new one.
enum class Combine { Set, Add, Mul };

/// One update of the element `o` with the element `s` of the same dtype `dt` (scaled by alpha
/// for index_add), in the data's dtype: ints wrap, fp16/bf16/fp32 compute in fp32, fp64 in fp64,
/// one rounding to the dtype per step (index_ops.h).
struct Update {
  DataType dt;
  Combine combine;
  bool scaled = false;
  int64_t alpha_i = 1;
  double alpha_f = 1;

  void operator()(uint8_t *o, const uint8_t *s) const {
    if (combine == Combine::Set) {
      std::memcpy(o, s, static_cast<size_t>(bytes_of(dt)));
      return;
    }
    if (dt == DT_DOUBLE) {
      double a = element::load_f(o, dt), b = element::load_f(s, dt);
      if (scaled)
        b = alpha_f * b;
      element::store_f(o, dt, combine == Combine::Add ? a + b : a * b);
    } else if (is_float(dt)) {
      auto a = static_cast<float>(element::load_f(o, dt));
      auto b = static_cast<float>(element::load_f(s, dt));
      if (scaled)
        b = static_cast<float>(alpha_f) * b;
      const float r = combine == Combine::Add ? a + b : a * b;
      element::store_f(o, dt, static_cast<double>(r));
    } else {
      auto a = static_cast<uint64_t>(element::load_i(o, dt));
      auto b = static_cast<uint64_t>(element::load_i(s, dt));
      if (scaled)
        b *= static_cast<uint64_t>(alpha_i);
      element::store_i(o, dt, static_cast<int64_t>(combine == Combine::Add ? a + b : a * b));
    }
  }
};

/// The call's scalar converted to `dt` into `buf` (ints wrap, floats round to nearest even).
void scalar_element(const XCall &c, DataType dt, uint8_t *buf) {
  if (is_float(dt))
    element::store_f(buf, dt, c.reals[c.n_reals - 1]);
  else
    element::store_i(buf, dt, c.scalar_i);
}

// ---- gather, index_select, embedding ---------------------------------------------------------

/// Gather: inputs (x, index), output out of index's shape; axis.
int32_t gather(const XCall &c) {
  const XTensor &x = c.tensors[0], &ix = c.tensors[1], &out = c.tensors[2];
  const int64_t a = c.axis;
  int64_t ext[kXMaxRank];
  for (int64_t d = 0; d < out.rank; ++d) {
    ext[d] = common(out, ix, d);
    if (d != a)
      ext[d] = std::min(ext[d], x.valid[d]);
  }
  const int64_t n = x.valid[a];
  const auto es = static_cast<size_t>(bytes_of(dt_of(x)));
  return walk(out.rank, ext, [&](const int64_t *i) -> int32_t {
    const int64_t k = load_index(ix, i);
    if (k < 0 || k >= n)
      return out_of_range(c, "index", k, "index", i, ix.rank, 0, n, axis_extent(a));
    Idx s;
    std::copy(i, i + out.rank, s.begin());
    s[static_cast<size_t>(a)] = k;
    std::memcpy(at(out, i), at(x, s.data()), es);
    return PTO_OK;
  });
}

/// IndexSelect: inputs (x, index of rank r), output x's shape with dim `axis` replaced by
/// index's dims. ints: {} (index_select) or {1} / {1, padding_idx} (embedding).
int32_t index_select(const XCall &c) {
  const XTensor &x = c.tensors[0], &ix = c.tensors[1], &out = c.tensors[2];
  const int64_t a = c.axis, r = ix.rank;
  const bool embedding = c.n_ints >= 1 && c.ints[0] == 1;
  const bool padded = c.n_ints >= 2;
  const int64_t pad = padded ? c.ints[1] : 0;
  int64_t ext[kXMaxRank];
  for (int64_t d = 0; d < out.rank; ++d) {
    if (d < a)
      ext[d] = std::min(out.valid[d], x.valid[d]);
    else if (d < a + r)
      ext[d] = std::min(out.valid[d], ix.valid[d - a]);
    else
      ext[d] = std::min(out.valid[d], x.valid[d - r + 1]);
  }
  const int64_t n = x.valid[a];
  const auto es = static_cast<size_t>(bytes_of(dt_of(x)));
  return walk(out.rank, ext, [&](const int64_t *o) -> int32_t {
    const int64_t *ii = o + a;
    const int64_t k = load_index(ix, ii);
    if (k < 0 || k >= n)
      return embedding ? out_of_range(c, "id", k, "ids", ii, r, 0, n,
                                      "of weight's valid rows (embedding)")
                       : out_of_range(c, "index", k, "index", ii, r, 0, n, axis_extent(a));
    if (padded && k == pad) {
      std::memset(at(out, o), 0, es); // all-zero bits are 0 (or +0.0) in every dtype
      return PTO_OK;
    }
    Idx s;
    for (int64_t d = 0; d < x.rank; ++d)
      s[static_cast<size_t>(d)] = d < a ? o[d] : d == a ? k : o[d + r - 1];
    std::memcpy(at(out, o), at(x, s.data()), es);
    return PTO_OK;
  });
}

// ---- scatter, index_add, index_put ------------------------------------------------------------

/// Scatter: inputs (x, index[, src]), output out (x's shape); axis; ints[0] = ScatterMode
/// (0 NONE, 1 ADD, 2 MULTIPLY); a scalar source in the call's scalar.
int32_t scatter(const XCall &c) {
  const XTensor &x = c.tensors[0], &ix = c.tensors[1];
  const XTensor *src = c.n_inputs == 3 ? &c.tensors[2] : nullptr;
  const XTensor &out = c.tensors[c.n_inputs];
  const int64_t a = c.axis;
  const DataType dt = dt_of(x);
  copy_valid(x, out);
  int64_t ext[kXMaxRank];
  for (int64_t d = 0; d < ix.rank; ++d) {
    ext[d] = ix.valid[d];
    if (src)
      ext[d] = std::min(ext[d], src->valid[d]);
    if (d != a)
      ext[d] = std::min(ext[d], common(x, out, d));
  }
  const int64_t n = common(x, out, a);
  uint8_t sbuf[8] = {};
  if (!src)
    scalar_element(c, dt, sbuf);
  const int64_t mode = c.n_ints >= 1 ? c.ints[0] : 0;
  const Update up{dt, mode == 1 ? Combine::Add : mode == 2 ? Combine::Mul : Combine::Set};
  return walk(ix.rank, ext, [&](const int64_t *i) -> int32_t {
    const int64_t k = load_index(ix, i);
    if (k < 0 || k >= n)
      return out_of_range(c, "index", k, "index", i, ix.rank, 0, n, axis_extent(a));
    Idx dst;
    std::copy(i, i + ix.rank, dst.begin());
    dst[static_cast<size_t>(a)] = k;
    up(at(out, dst.data()), src ? at(*src, i) : sbuf);
    return PTO_OK;
  });
}

/// IndexAdd: inputs (x, index 1-D, src), output out (x's shape); axis; scalar = alpha (an
/// integer for integer x).
int32_t index_add(const XCall &c) {
  const XTensor &x = c.tensors[0], &ix = c.tensors[1], &src = c.tensors[2], &out = c.tensors[3];
  const int64_t a = c.axis;
  const DataType dt = dt_of(x);
  copy_valid(x, out);
  int64_t ext[kXMaxRank];
  for (int64_t d = 0; d < src.rank; ++d)
    ext[d] = std::min(src.valid[d], d == a ? ix.valid[0] : common(x, out, d));
  const int64_t n = common(x, out, a);
  Update up{dt, Combine::Add, true};
  if (c.has_scalar) {
    up.alpha_i = c.scalar_i;
    up.alpha_f = c.reals[c.n_reals - 1];
  }
  return walk(src.rank, ext, [&](const int64_t *j) -> int32_t {
    const int64_t *ij = j + a;
    const int64_t k = load_index(ix, ij);
    if (k < 0 || k >= n)
      return out_of_range(c, "index", k, "index", ij, 1, 0, n, axis_extent(a));
    Idx dst;
    std::copy(j, j + src.rank, dst.begin());
    dst[static_cast<size_t>(a)] = k;
    up(at(out, dst.data()), at(src, j));
    return PTO_OK;
  });
}

/// IndexPut: inputs (x, k 1-D index tensors[, values]), output out (x's shape); ints[0] =
/// accumulate, ints[1] = k; a scalar value in the call's scalar. Walks w = [n, r...] over
/// [N, x.shape[k:]...].
int32_t index_put(const XCall &c) {
  const int64_t k = c.ints[1];
  const XTensor &x = c.tensors[0];
  const XTensor *idx = c.tensors + 1;
  const XTensor *values = c.n_inputs == k + 2 ? &c.tensors[k + 1] : nullptr;
  const XTensor &out = c.tensors[c.n_inputs];
  const DataType dt = dt_of(x);
  copy_valid(x, out);
  const int64_t wr = 1 + x.rank - k;
  int64_t ext[kXMaxRank];
  ext[0] = 1;
  for (int64_t t = 0; t < k; ++t)
    ext[0] = std::max(ext[0], idx[t].shape[0]);
  // A length-1 index (or values dim) repeats: it limits the walk only when it is not valid.
  auto clamp = [](int64_t &e, int64_t shape, int64_t valid) {
    e = shape == 1 ? (valid < 1 ? 0 : e) : std::min(e, valid);
  };
  for (int64_t t = 0; t < k; ++t)
    clamp(ext[0], idx[t].shape[0], idx[t].valid[0]);
  for (int64_t j = 1; j < wr; ++j)
    ext[j] = common(x, out, k + j - 1);
  const int64_t voff = values ? wr - values->rank : 0;
  if (values) {
    if (voff < 0)
      return pto_rt_fail_msg(c.ctx, PTO_ERROR_INTERNAL, static_cast<int32_t>(c.site),
                             "index_put: values rank above the indexed rank (a ptojit bug)");
    for (int64_t j = 0; j < values->rank; ++j)
      clamp(ext[voff + j], values->shape[j], values->valid[j]);
  }
  uint8_t sbuf[8] = {};
  if (!values)
    scalar_element(c, dt, sbuf);
  const Update up{dt, c.ints[0] ? Combine::Add : Combine::Set};
  return walk(wr, ext, [&](const int64_t *w) -> int32_t {
    Idx dst;
    for (int64_t t = 0; t < k; ++t) {
      const int64_t p = idx[t].shape[0] == 1 ? 0 : w[0];
      int64_t v = load_index(idx[t], &p);
      const int64_t n = common(x, out, t);
      if (v < -n || v >= n)
        return out_of_range(c, "index", v, fmt::format("indices[{}]", t), &p, 1, -n, n,
                            axis_extent(t));
      dst[static_cast<size_t>(t)] = v < 0 ? v + n : v;
    }
    for (int64_t j = 1; j < wr; ++j)
      dst[static_cast<size_t>(k + j - 1)] = w[j];
    const uint8_t *s = sbuf;
    if (values) {
      Idx vi;
      for (int64_t j = 0; j < values->rank; ++j)
        vi[static_cast<size_t>(j)] = values->shape[j] == 1 ? 0 : w[voff + j];
      s = at(*values, vi.data());
    }
    up(at(out, dst.data()), s);
    return PTO_OK;
  });
}

// ---- one_hot ------------------------------------------------------------------------------------

/// OneHot: input index, output DT_INT64 [index.shape..., C]; ints[0] = C.
int32_t one_hot(const XCall &c) {
  const XTensor &ix = c.tensors[0], &out = c.tensors[1];
  const int64_t classes = c.ints[0], r = ix.rank;
  int64_t ext[kXMaxRank];
  for (int64_t d = 0; d < r; ++d)
    ext[d] = common(ix, out, d);
  const int64_t cext = std::min(classes, out.valid[r]);
  return walk(r, ext, [&](const int64_t *p) -> int32_t {
    const int64_t k = load_index(ix, p);
    if (k < 0 || k >= classes)
      return out_of_range(c, "class value", k, "index", p, r, 0, classes, "of num_classes");
    Idx o;
    std::copy(p, p + r, o.begin());
    for (int64_t cls = 0; cls < cext; ++cls) {
      o[static_cast<size_t>(r)] = cls;
      x_store_i(out, x_lin(out, o.data()), cls == k ? 1 : 0);
    }
    return PTO_OK;
  });
}

// ---- unsorted_segment_* -----------------------------------------------------------------------

enum class Seg : int64_t { Sum = 0, Min = 1, Max = 2, Prod = 3 };

/// The largest finite value of `dt` (an empty min segment), or its lowest (`lowest`).
double extreme(DataType dt, bool lowest) {
  auto pick = [&](double lo, double hi) { return lowest ? lo : hi; };
  switch (dt) {
  case DT_INT8:
    return pick(-128, 127);
  case DT_INT16:
    return pick(-32768, 32767);
  case DT_INT32:
    return pick(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  case DT_UINT8:
    return pick(0, 255);
  case DT_FP16:
    return pick(-65504.0, 65504.0);
  case DT_BF16:
    return pick(-3.3895313892515355e38, 3.3895313892515355e38); // 0x7F7F
  case DT_FP32:
    return pick(-std::numeric_limits<float>::max(), std::numeric_limits<float>::max());
  case DT_DOUBLE:
  case DT_INT64:
  case DT_BOOL:
  PTO_CASE_UNSUPPORTED_DTYPES:
    break;
  }
  return pick(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
}

/// The accumulator arithmetic: T = float (fp16, bf16, fp32), double (fp64) or int64 (ints,
/// wrapping through uint64).
template <class T> T seg_load(const XTensor &t, const int64_t *i) {
  if constexpr (std::is_integral_v<T>)
    return x_load_i(t, x_lin(t, i));
  else
    return static_cast<T>(x_load_f(t, x_lin(t, i)));
}
template <class T> T seg_combine(Seg mode, T a, T v) {
  if constexpr (std::is_integral_v<T>) {
    auto ua = static_cast<uint64_t>(a), uv = static_cast<uint64_t>(v);
    switch (mode) {
    case Seg::Sum:
      return static_cast<T>(ua + uv);
    case Seg::Prod:
      return static_cast<T>(ua * uv);
    case Seg::Min:
      return std::min(a, v);
    case Seg::Max:
      return std::max(a, v);
    }
  } else {
    switch (mode) {
    case Seg::Sum:
      return a + v;
    case Seg::Prod:
      return a * v;
    case Seg::Min:
    case Seg::Max:
      if (a != a || v != v) // NaN propagates
        return a != a ? a : v;
      return mode == Seg::Min ? std::min(a, v) : std::max(a, v);
    }
  }
  return a;
}

template <class T> int32_t segment_t(const XCall &c) {
  const XTensor &data = c.tensors[0], &ids = c.tensors[1], &out = c.tensors[2];
  const auto mode = static_cast<Seg>(c.ints[0]);
  const int64_t k = ids.rank, ir = data.rank - k;
  const int64_t segs = std::min(c.ints[1], out.valid[0]);
  int64_t pext[kXMaxRank], iext[kXMaxRank];
  for (int64_t d = 0; d < k; ++d)
    pext[d] = common(ids, data, d);
  int64_t m = 1;
  for (int64_t j = 0; j < ir; ++j) {
    iext[j] = std::max<int64_t>(std::min(data.valid[k + j], out.valid[1 + j]), 0);
    m *= iext[j];
  }
  if (segs <= 0)
    return PTO_OK;
  std::vector<T> acc(static_cast<size_t>(segs * m));
  std::vector<uint8_t> seen(static_cast<size_t>(segs), 0);
  walk(k, pext, [&](const int64_t *p) -> int32_t {
    const int64_t s = load_index(ids, p);
    if (s < 0 || s >= segs)
      return PTO_OK; // dropped, as TensorFlow / MindSpore
    Idx di;
    std::copy(p, p + k, di.begin());
    T *row = acc.data() + s * m;
    const bool first = !seen[static_cast<size_t>(s)];
    int64_t flat = 0;
    walk(ir, iext, [&](const int64_t *r) -> int32_t {
      std::copy(r, r + ir, di.begin() + k);
      const T v = seg_load<T>(data, di.data());
      row[flat] = first ? v : seg_combine(mode, row[flat], v);
      ++flat;
      return PTO_OK;
    });
    seen[static_cast<size_t>(s)] = 1;
    return PTO_OK;
  });
  const DataType dt = dt_of(data);
  double empty = 0;
  switch (mode) {
  case Seg::Sum:
    empty = 0;
    break;
  case Seg::Prod:
    empty = 1;
    break;
  case Seg::Min:
    empty = extreme(dt, false);
    break;
  case Seg::Max:
    empty = extreme(dt, true);
    break;
  }
  int64_t oext[kXMaxRank];
  oext[0] = segs;
  std::copy(iext, iext + ir, oext + 1);
  int64_t flat = 0; // row-major over oext, matching acc's layout
  return walk(out.rank, oext, [&](const int64_t *o) -> int32_t {
    const int64_t lin = x_lin(out, o);
    const T v = acc[static_cast<size_t>(flat++)];
    const bool hit = seen[static_cast<size_t>(o[0])];
    if constexpr (std::is_integral_v<T>) {
      if (hit)
        x_store_i(out, lin, v);
      else if (dt == DT_INT64 && mode == Seg::Min)
        x_store_i(out, lin, std::numeric_limits<int64_t>::max());
      else if (dt == DT_INT64 && mode == Seg::Max)
        x_store_i(out, lin, std::numeric_limits<int64_t>::min());
      else
        x_store_i(out, lin, static_cast<int64_t>(empty));
    } else {
      x_store_f(out, lin, hit ? static_cast<double>(v) : empty);
    }
    return PTO_OK;
  });
}

/// SegmentReduce: inputs (data, segment_ids), output [num_segments, data.shape[k:]...]; ints[0]
/// = mode (0 sum, 1 min, 2 max, 3 prod), ints[1] = num_segments.
int32_t segment_reduce(const XCall &c) {
  switch (dt_of(c.tensors[0])) {
  case DT_DOUBLE:
    return segment_t<double>(c);
  case DT_FP16:
  case DT_BF16:
  case DT_FP32:
    return segment_t<float>(c);
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_BOOL:
  PTO_CASE_UNSUPPORTED_DTYPES:
    break;
  }
  return segment_t<int64_t>(c);
}

} // namespace

int32_t xop_gather(const XCall &call) { return gather(call); }
int32_t xop_index_select(const XCall &call) { return index_select(call); }
int32_t xop_scatter(const XCall &call) { return scatter(call); }
int32_t xop_index_add(const XCall &call) { return index_add(call); }
int32_t xop_index_put(const XCall &call) { return index_put(call); }
int32_t xop_one_hot(const XCall &call) { return one_hot(call); }
int32_t xop_segment_reduce(const XCall &call) { return segment_reduce(call); }

} // namespace pto::codegen
