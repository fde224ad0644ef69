// allreduce_direct.cpp - pto_rt_allreduce (abi.h): the allreduce that AUTO picks for large
// inputs (collectives_allreduce.cpp). On the shared-memory transport it registers the callers'
// buffers: every member publishes its x and y in its group's table, a barrier, member p
// reduces its block of the valid region straight from every member's x and writes the result
// into every member's y (the bytes a hand-written threads reduce-scatter + allgather moves: no
// staging copy into a heap, no copy out of one), a barrier. Where the transport gives memory
// that every member loads and stores (MPI ranks of one node: windowed()), the same blocks
// move by plain copies through it, between barriers. Elsewhere (MPI across nodes, a trace) each
// member packs its x's valid region into a reused scratch buffer (whole rows per memcpy) and
// the transport's collectives move it (gathered()): the transport's own allreduce where every
// order of combining gives the same bits (integers; fp32 / double sums and products of two
// members), else a reduce-scatter (an all-to-all of blocks, member p reducing block p in member
// order) and an allgather of the reduced blocks, else (a transport with no all-to-all) every
// member's x allgathered and reduced locally. Every path computes the left fold x0 op x1 op ...
// op x(n-1) of reduce_chunk: the same bits either way.
#include "pto/dtype.h"
#include "pto/env.h"
#include "pto/half.h"
#include "pto/runtime/abi.h"

#include "boundary.h"
#include "world_state.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <type_traits>
#include <vector>

using namespace pto::runtime;
using pto::runtime::detail::abi_boundary;
using pto::runtime::detail::fail;
using Args = pto::runtime::detail::GroupState::DirectArgs;

namespace {

constexpr const char *kOp = "allreduce";
/// Elements reduced at once: the accumulator (at most 16 KiB) stays in L1 while every member's
/// x streams through it.
constexpr int64_t kChunk = 2048;

// pto::distributed::Reduction's order.
enum Red : int32_t { kSum = 0, kMax = 1, kMin = 2, kProd = 3 };

/// IEEE 754 maximum / minimum, as pto::maximum / pto::minimum: NaN propagates, -0 < +0.
template <class F> F ieee_max(F a, F b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class F> F ieee_min(F a, F b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// Storage type T, accumulator type A: load T -> A, store A -> T, combine in A. The combination
/// of `R` is that of collectives_internal.h's reduce_dtype: fp16/bf16 sums in fp32 (one
/// rounding at the end), every other combination in the element's own dtype (halves round each
/// product; integers wrap, done in the unsigned type).
template <class T, bool Wrap> struct AccOf {
  using type = T;
};
template <class T> struct AccOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T, int32_t R> struct Elem {
  using A = typename AccOf<T, std::is_integral_v<T> && (R == kSum || R == kProd)>::type;
  static A load(T v) { return A(v); }
  static T store(A a) { return T(a); }
  static A combine(A a, A b) {
    if constexpr (R == kSum)
      return A(a + b);
    else if constexpr (R == kProd)
      return A(a * b);
    else if constexpr (std::is_integral_v<T>)
      return R == kMax ? std::max(a, b) : std::min(a, b);
    else
      return R == kMax ? ieee_max(a, b) : ieee_min(a, b);
  }
};

/// fp16 (Bf false) or bf16 (Bf true), stored as uint16_t, reduced in fp32.
template <bool Bf, int32_t R> struct Half {
  using A = float;
  static float load(uint16_t v) { return Bf ? pto::bf16_to_fp32(v) : pto::fp16_to_fp32(v); }
  static uint16_t store(float a) { return Bf ? pto::fp32_to_bf16(a) : pto::fp32_to_fp16(a); }
  static float combine(float a, float b) {
    if constexpr (R == kSum)
      return a + b;
    else if constexpr (R == kProd)
      return load(store(a * b)); // a product of two halves is exact in fp32: one rounding
    else
      return R == kMax ? ieee_max(a, b) : ieee_min(a, b);
  }
};

/// dst[i] = src[0][i] op src[1][i] op ... op src[n-1][i] (in that order) for i < len <= kChunk.
using ChunkFn = void (*)(const std::byte *const *src, int n, int64_t len, std::byte *dst);

template <class T, class E>
void reduce_chunk(const std::byte *const *src, int n, int64_t len, std::byte *dst) {
  using A = typename E::A;
  A acc[kChunk];
  const T *s0 = reinterpret_cast<const T *>(src[0]);
  for (int64_t i = 0; i < len; ++i)
    acc[i] = E::load(s0[i]);
  for (int q = 1; q < n; ++q) {
    const T *s = reinterpret_cast<const T *>(src[q]);
    for (int64_t i = 0; i < len; ++i)
      acc[i] = E::combine(acc[i], E::load(s[i]));
  }
  T *d = reinterpret_cast<T *>(dst);
  for (int64_t i = 0; i < len; ++i)
    d[i] = E::store(acc[i]);
}

template <class T> ChunkFn plain_fn(int32_t r) {
  switch (r) {
  case kSum:
    return &reduce_chunk<T, Elem<T, kSum>>;
  case kMax:
    return &reduce_chunk<T, Elem<T, kMax>>;
  case kMin:
    return &reduce_chunk<T, Elem<T, kMin>>;
  case kProd:
    return &reduce_chunk<T, Elem<T, kProd>>;
  default:
    return nullptr;
  }
}
template <bool Bf> ChunkFn half_fn(int32_t r) {
  switch (r) {
  case kSum:
    return &reduce_chunk<uint16_t, Half<Bf, kSum>>;
  case kMax:
    return &reduce_chunk<uint16_t, Half<Bf, kMax>>;
  case kMin:
    return &reduce_chunk<uint16_t, Half<Bf, kMin>>;
  case kProd:
    return &reduce_chunk<uint16_t, Half<Bf, kProd>>;
  default:
    return nullptr;
  }
}

/// The routine of (dtype, reduction), or nullptr for a dtype collectives do not move.
ChunkFn chunk_fn(int32_t dtype, int32_t r) {
  switch (static_cast<pto::DataType>(dtype)) {
  case pto::DT_INT8:
    return plain_fn<int8_t>(r);
  case pto::DT_INT16:
    return plain_fn<int16_t>(r);
  case pto::DT_INT32:
    return plain_fn<int32_t>(r);
  case pto::DT_INT64:
    return plain_fn<int64_t>(r);
  case pto::DT_FP32:
    return plain_fn<float>(r);
  case pto::DT_DOUBLE:
    return plain_fn<double>(r);
  case pto::DT_FP16:
    return half_fn<false>(r);
  case pto::DT_BF16:
    return half_fn<true>(r);
  default:
    return nullptr;
  }
}

/// The valid region as rows of its last dim: `rows` rows of `cols` elements; row r's element
/// offset in a tensor of element strides `st`.
struct Region {
  int rank = 0;
  int64_t valid[4] = {};
  int64_t rows = 0, cols = 0;
  int64_t offset(int64_t r, const int64_t *st) const {
    int64_t off = 0;
    for (int d = rank - 2; d >= 0; --d) {
      off += (r % valid[d]) * st[d];
      r /= valid[d];
    }
    return off;
  }
  /// Strides `st` hold the valid region densely in row-major order.
  bool dense(const int64_t *st) const {
    int64_t want = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (valid[d] > 1 && st[d] != want)
        return false;
      want *= valid[d];
    }
    return true;
  }
  /// [first, last] byte of the valid region in a tensor at `base` with strides `st` (E > 0).
  std::pair<uintptr_t, uintptr_t> bytes(const void *base, const int64_t *st, int64_t es) const {
    int64_t last = 0;
    for (int d = 0; d < rank; ++d)
      last += (valid[d] - 1) * st[d];
    auto b = reinterpret_cast<uintptr_t>(base);
    return {b, b + uintptr_t(last * es + es - 1)};
  }
};

bool same_layout(const Region &g, const void *a, const int64_t *sa, const void *b,
                 const int64_t *sb) {
  if (a != b)
    return false;
  for (int d = 0; d < g.rank; ++d)
    if (g.valid[d] > 1 && sa[d] != sb[d])
      return false;
  return true;
}

/// Whether member p's [lo, hi) share of `total` units (floor(total * p / n), exact).
int64_t share(int64_t total, int p, int n) { return (total / n) * p + (total % n) * p / n; }

/// The barrier that opens or closes a direct allreduce; records the error on failure.
int32_t barrier(pto_ctx *ctx, detail::GroupState &g, int me, const char *what) {
  detail::WorldState &w = *ctx->world;
  w.progress.bump();
  detail::CorePolicy policy(w, /*collective=*/true, &g);
  return detail::collective_result(ctx, g, g.t->barrier(me, policy), policy, kOp, what);
}

/// The registered-buffer path: every member is a thread of this process. Returns -1 when the
/// members' buffers overlap in a way it cannot take (the caller then takes the allgather path;
/// every member decides alike, from the same table), else the status.
int32_t direct(const detail::GroupState &g, int me, const Region &reg, int64_t es, ChunkFn fn) {
  const int n = g.n_pes;
  const std::vector<Args> &a = g.direct_args;
  const int64_t total = reg.rows * reg.cols;
  if (total == 0)
    return PTO_OK;
  // x and y of all members: disjoint, or the same buffer with the same layout (in place, or
  // handles of one HostTensor); each element is then read and written by one member only, in
  // that order. Anything else (a partial overlap) takes the allgather path.
  std::vector<std::pair<uintptr_t, uintptr_t>> xb(static_cast<size_t>(n)), yb(xb.size());
  bool inner = true, dense = true;
  for (int q = 0; q < n; ++q) {
    xb[size_t(q)] = reg.bytes(a[size_t(q)].x, a[size_t(q)].x_strides, es);
    yb[size_t(q)] = reg.bytes(a[size_t(q)].y, a[size_t(q)].y_strides, es);
    inner = inner && (reg.cols <= 1 || (a[size_t(q)].x_strides[reg.rank - 1] == 1 &&
                                        a[size_t(q)].y_strides[reg.rank - 1] == 1));
    dense = dense && reg.dense(a[size_t(q)].x_strides) && reg.dense(a[size_t(q)].y_strides);
  }
  auto apart = [](std::pair<uintptr_t, uintptr_t> u, std::pair<uintptr_t, uintptr_t> v) {
    return u.second < v.first || v.second < u.first;
  };
  bool ok = inner;
  for (int r = 0; r < n && ok; ++r) {
    const Args &yr = a[size_t(r)];
    for (int q = 0; q < n && ok; ++q) {
      const Args &xq = a[size_t(q)], &yq = a[size_t(q)];
      ok = apart(xb[size_t(q)], yb[size_t(r)]) ||
           same_layout(reg, xq.x, xq.x_strides, yr.y, yr.y_strides);
      ok = ok && (q == r || apart(yb[size_t(q)], yb[size_t(r)]) ||
                  same_layout(reg, yq.y, yq.y_strides, yr.y, yr.y_strides));
    }
  }
  if (!ok)
    return -1;
  std::vector<const std::byte *> src(static_cast<size_t>(n));
  // One run of `len` <= kChunk elements at element offsets off[q] (x) / yoff[q] (y).
  auto run = [&](const std::vector<int64_t> &xoff, const std::vector<int64_t> &yoff, int64_t len) {
    for (int q = 0; q < n; ++q)
      src[size_t(q)] = static_cast<const std::byte *>(a[size_t(q)].x) + xoff[size_t(q)] * es;
    std::byte *mine = static_cast<std::byte *>(a[size_t(me)].y) + yoff[size_t(me)] * es;
    fn(src.data(), n, len, mine);
    for (int q = 0; q < n; ++q) {
      std::byte *theirs = static_cast<std::byte *>(a[size_t(q)].y) + yoff[size_t(q)] * es;
      if (q != me && theirs != mine)
        std::memcpy(theirs, mine, size_t(len * es));
    }
  };
  std::vector<int64_t> xoff(static_cast<size_t>(n)), yoff(xoff.size());
  if (dense) {
    // Block boundaries on 16-element multiples: members write different cache lines.
    auto edge = [&](int p) { return p == n ? total : share(total, p, n) & ~int64_t(15); };
    for (int64_t lo = edge(me), hi = edge(me + 1); lo < hi; lo += kChunk) {
      std::fill(xoff.begin(), xoff.end(), lo);
      std::fill(yoff.begin(), yoff.end(), lo);
      run(xoff, yoff, std::min(kChunk, hi - lo));
    }
    return PTO_OK;
  }
  for (int64_t r = share(reg.rows, me, n), end = share(reg.rows, me + 1, n); r < end; ++r) {
    for (int q = 0; q < n; ++q) {
      xoff[size_t(q)] = reg.offset(r, a[size_t(q)].x_strides);
      yoff[size_t(q)] = reg.offset(r, a[size_t(q)].y_strides);
    }
    for (int64_t c = 0; c < reg.cols; c += kChunk) {
      run(xoff, yoff, std::min(kChunk, reg.cols - c));
      for (int q = 0; q < n; ++q) {
        xoff[size_t(q)] += kChunk;
        yoff[size_t(q)] += kChunk;
      }
    }
  }
  return PTO_OK;
}

/// What members compare before they reduce.
struct Header {
  int32_t dtype = -1, reduction = -1, rank = 0, pad = 0;
  int64_t valid[4] = {};
  bool operator==(const Header &) const = default;
};

std::string show(const Header &h) {
  std::string v;
  for (int d = 0; d < h.rank && d < 4; ++d)
    v += fmt::format("{}{}", d ? ", " : "", h.valid[d]);
  return fmt::format("dtype {}, reduction {}, valid shape [{}]",
                     pto::short_name(static_cast<pto::DataType>(h.dtype)), h.reduction, v);
}

/// Copies `rows` runs of `cols` elements of `es` bytes, run r from `src` + src_off(r) (element
/// stride `ss`) to `dst` + dst_off(r) (element stride `ds`); whole runs when both strides are 1.
template <class SrcOff, class DstOff>
void copy_rows(int64_t rows, int64_t cols, int64_t es, const std::byte *src, SrcOff src_off,
               int64_t ss, std::byte *dst, DstOff dst_off, int64_t ds) {
  auto each = [&]<class W>(W) {
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte *s = src + src_off(r) * es;
      std::byte *d = dst + dst_off(r) * es;
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(d + c * ds * es, s + c * ss * es, sizeof(W));
    }
  };
  if ((ss == 1 && ds == 1) || cols == 1) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + dst_off(r) * es, src + src_off(r) * es, size_t(cols * es));
  } else if (es == 1) {
    each(uint8_t{});
  } else if (es == 2) {
    each(uint16_t{});
  } else if (es == 4) {
    each(uint32_t{});
  } else {
    each(uint64_t{});
  }
}

/// Packs the valid region of `x` (strides `xs`) densely, row-major, into `out`.
void pack(const Region &reg, int64_t es, const void *x, const int64_t *xs, std::byte *out) {
  const auto *src = static_cast<const std::byte *>(x);
  if (reg.dense(xs)) {
    std::memcpy(out, src, size_t(reg.rows * reg.cols * es));
    return;
  }
  copy_rows(
      reg.rows, reg.cols, es, src, [&](int64_t r) { return reg.offset(r, xs); }, xs[reg.rank - 1],
      out, [&](int64_t r) { return r * reg.cols; }, 1);
}

/// Writes the dense row-major `in` into the valid region of `y` (strides `ys`).
void unpack(const Region &reg, int64_t es, const std::byte *in, void *y, const int64_t *ys) {
  auto *dst = static_cast<std::byte *>(y);
  if (reg.dense(ys)) {
    std::memcpy(dst, in, size_t(reg.rows * reg.cols * es));
    return;
  }
  copy_rows(
      reg.rows, reg.cols, es, in, [&](int64_t r) { return r * reg.cols; }, 1, dst,
      [&](int64_t r) { return reg.offset(r, ys); }, ys[reg.rank - 1]);
}

/// Writes elements [lo, hi) of the dense row-major `in` into the valid region of `y` (strides
/// `ys`): whole runs of a row per copy.
void unpack_range(const Region &reg, int64_t es, const std::byte *in, int64_t lo, int64_t hi,
                  void *y, const int64_t *ys) {
  auto *dst = static_cast<std::byte *>(y);
  if (lo >= hi)
    return;
  if (reg.dense(ys)) {
    std::memcpy(dst + lo * es, in + lo * es, size_t((hi - lo) * es));
    return;
  }
  const int64_t cs = ys[reg.rank - 1];
  auto zero = [](int64_t) { return int64_t{0}; };
  for (int64_t r = lo / reg.cols; r * reg.cols < hi; ++r) {
    const int64_t c0 = std::max<int64_t>(lo - r * reg.cols, 0);
    const int64_t c1 = std::min(hi - r * reg.cols, reg.cols);
    copy_rows(1, c1 - c0, es, in + (r * reg.cols + c0) * es, zero, 1,
              dst + (reg.offset(r, ys) + c0 * cs) * es, zero, cs);
  }
}

/// Member me's scratch of at least `bytes` bytes (not initialized; reused across calls).
std::byte *scratch(detail::GroupState &g, int me, size_t bytes) {
  detail::GroupState::Scratch &s = g.scratch[size_t(me)];
  if (!s.mem || s.bytes < bytes) {
    s.mem.reset();
    s.mem = std::make_shared_for_overwrite<std::byte[]>(bytes);
    s.bytes = bytes;
  }
  return s.mem.get();
}

/// dst[0, len) = the left fold of src[q][0, len) over q < n, kChunk elements at a time (dst may
/// be src[0]).
void reduce_run(ChunkFn fn, const std::byte *const *src, int n, int64_t len, int64_t es,
                std::byte *dst) {
  std::vector<const std::byte *> s(static_cast<size_t>(n));
  for (int64_t lo = 0; lo < len; lo += kChunk) {
    for (int q = 0; q < n; ++q)
      s[size_t(q)] = src[q] + lo * es;
    fn(s.data(), n, std::min(kChunk, len - lo), dst + lo * es);
  }
}

/// Whether every order of combining gives the left fold's bits, so that the transport's own
/// allreduce may do it: integers (wrapping sums and products, max, min: associative and
/// commutative), and fp32 / double sums and products of two members (a op b == b op a bitwise,
/// but for the payload of a NaN from two NaN operands). Not fp max / min (our NaN and -0 rules
/// are not MPI_MAX's), not fp16 / bf16 (no MPI arithmetic; sums in fp32).
bool order_free(int32_t dtype, int32_t reduction, int n) {
  switch (static_cast<pto::DataType>(dtype)) {
  case pto::DT_INT8:
  case pto::DT_INT16:
  case pto::DT_INT32:
  case pto::DT_INT64:
    return true;
  case pto::DT_FP32:
  case pto::DT_DOUBLE:
    return n == 2 && (reduction == kSum || reduction == kProd);
  default:
    return false;
  }
}

/// The path through memory every member loads and stores (Group::shared_scratch: MPI ranks of
/// one node). Member p owns block p of the valid region (16-element multiples, as direct()).
/// Each member packs its x's valid region into its scratch (when x is dense and does not
/// partly overlap y, only the blocks its peers reduce: its own block it reads from x), a
/// barrier, member p reduces block p from every member's x in member order, chunk by chunk,
/// into its scratch (for the peers) and its y, a barrier, each member copies its peers' reduced
/// blocks into its y, and a barrier (no member packs its next x while a peer still reads its
/// scratch). On n members each copies 2 (n - 1) / n of the region and reduces 1 / n of it: no
/// message, no staging by MPI. Returns -1 when the transport has no such memory (alike on every
/// member), else the status.
int32_t windowed(pto_ctx *ctx, detail::GroupState &g, int me, const Region &reg, int64_t es,
                 ChunkFn fn, const void *x, const int64_t *xs, void *y, const int64_t *ys) {
  const int n = g.n_pes;
  const int64_t total = reg.rows * reg.cols;
  const std::vector<std::byte *> base = g.t->shared_scratch(me, size_t(total * es));
  if (base.size() != size_t(n))
    return -1;
  auto edge = [&](int p) { return p == n ? total : share(total, p, n) & ~int64_t(15); };
  auto meet = [&](const char *what) {
    std::atomic_thread_fence(std::memory_order_seq_cst); // plain stores before, loads after
    const int32_t st = barrier(ctx, g, me, what);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return st;
  };
  const int64_t lo = edge(me), hi = edge(me + 1);
  std::byte *mine = base[size_t(me)];
  const auto *xb = static_cast<const std::byte *>(x);
  const auto xr = reg.bytes(x, xs, es), yr = reg.bytes(y, ys, es);
  // Block me read straight from x: only while y's stores cannot reach x's unread elements.
  const bool from_x = reg.dense(xs) && (xr.second < yr.first || yr.second < xr.first ||
                                        same_layout(reg, x, xs, y, ys));
  if (from_x) {
    std::memcpy(mine, xb, size_t(lo * es));
    std::memcpy(mine + hi * es, xb + hi * es, size_t((total - hi) * es));
  } else {
    pack(reg, es, x, xs, mine);
  }
  if (int32_t st = meet("allreduce barrier (packed)"))
    return st;
  std::vector<const std::byte *> src(static_cast<size_t>(n));
  for (int64_t c = lo; c < hi; c += kChunk) {
    for (int q = 0; q < n; ++q)
      src[size_t(q)] = (q == me && from_x ? xb : base[size_t(q)]) + c * es;
    const int64_t len = std::min(kChunk, hi - c);
    fn(src.data(), n, len, mine + c * es);
    unpack_range(reg, es, mine, c, c + len, y, ys); // from L1
  }
  if (int32_t st = meet("allreduce barrier (reduced)"))
    return st;
  for (int q = 0; q < n; ++q)
    if (q != me)
      unpack_range(reg, es, base[size_t(q)], edge(q), edge(q + 1), y, ys);
  return meet("allreduce exit barrier");
}

/// The path through the transport's collectives (every member not a thread of this process, or
/// tracing): x's valid region packed into the member's scratch, then (1) the transport's own
/// allreduce where order_free, else (2) an all-to-all of n blocks (member p receives block p of
/// every x), member p reduces its block in member order, an allgather of the reduced blocks
/// (each member sends and receives 2 (n-1) / n of the region), else, for a transport with
/// neither, (3) every member's x allgathered and reduced whole here. The same bits each way.
int32_t gathered(pto_ctx *ctx, detail::GroupState &g, int me, const Region &reg, int64_t es,
                 ChunkFn fn, int32_t dtype, int32_t reduction, const void *x, const int64_t *xs,
                 void *y, const int64_t *ys) {
  const int n = g.n_pes;
  const auto un = size_t(n);
  const int64_t total = reg.rows * reg.cols;
  if (total == 0)
    return PTO_OK;
  detail::WorldState &w = *ctx->world;
  // The verdict of a collective on the scratch: on failure the transport kept it, so forget it.
  auto verdict = [&](transport::WaitResult r, detail::CorePolicy &policy, const char *what) {
    if (r != transport::WaitResult::Done) {
      g.scratch[size_t(me)] = {};
    }
    return detail::collective_result(ctx, g, r, policy, kOp, what);
  };
  if (int32_t st = windowed(ctx, g, me, reg, es, fn, x, xs, y, ys); st >= 0)
    return st;
  const size_t bytes = size_t(total * es);
  if (order_free(dtype, reduction, n)) {
    std::byte *buf = scratch(g, me, bytes);
    pack(reg, es, x, xs, buf);
    w.progress.bump();
    detail::CorePolicy policy(w, /*collective=*/true, &g);
    const auto res = g.t->native_allreduce(me, buf, total, pto_dtype(dtype), reduction,
                                           g.scratch[size_t(me)].mem, policy);
    if (res) {
      if (int32_t st = verdict(*res, policy, "allreduce"))
        return st;
      unpack(reg, es, buf, y, ys);
      return PTO_OK;
    }
  }
  // (2): blocks of `block` elements, the last ones short or empty; send (n blocks, x packed and
  // zero-padded), then recv (n blocks: block me of every member).
  const int64_t block = (total + n - 1) / n;
  const size_t bb = size_t(block * es);
  {
    std::byte *send = scratch(g, me, 2 * un * bb);
    std::byte *recv = send + un * bb;
    pack(reg, es, x, xs, send);
    std::memset(send + bytes, 0, un * bb - bytes);
    w.progress.bump();
    detail::CorePolicy policy(w, /*collective=*/true, &g);
    const auto res = g.t->alltoall(me, send, bb, recv, g.scratch[size_t(me)].mem, policy);
    if (res) {
      if (int32_t st = verdict(*res, policy, "allreduce all-to-all"))
        return st;
      std::vector<const std::byte *> src(un);
      for (size_t q = 0; q < un; ++q)
        src[q] = recv + q * bb;
      // Block me of the region into recv's first block (its own first source, read first).
      reduce_run(fn, src.data(), n, std::clamp<int64_t>(total - me * block, 0, block), es, recv);
      w.progress.bump();
      detail::CorePolicy policy2(w, /*collective=*/true, &g);
      const auto r2 = g.t->allgather_owned(me, recv, bb, send, g.scratch[size_t(me)].mem, policy2);
      if (int32_t st = verdict(r2, policy2, "allreduce allgather"))
        return st;
      unpack(reg, es, send, y, ys);
      return PTO_OK;
    }
  }
  // (3): mine, then every member's x.
  std::byte *mine = scratch(g, me, (un + 1) * bytes);
  std::byte *all = mine + bytes;
  pack(reg, es, x, xs, mine);
  {
    w.progress.bump();
    detail::CorePolicy policy(w, /*collective=*/true, &g);
    const auto res = g.t->allgather_owned(me, mine, bytes, all, g.scratch[size_t(me)].mem, policy);
    if (int32_t st = verdict(res, policy, "allreduce allgather"))
      return st;
  }
  std::vector<const std::byte *> src(un);
  for (size_t q = 0; q < un; ++q)
    src[q] = all + q * bytes;
  reduce_run(fn, src.data(), n, total, es, mine);
  unpack(reg, es, mine, y, ys);
  return PTO_OK;
}

} // namespace

extern "C" int32_t pto_rt_allreduce(pto_ctx *ctx, int32_t group, int32_t reduction, int32_t dtype,
                                    int32_t rank, const int64_t *valid, const void *x,
                                    const int64_t *x_strides, void *y, const int64_t *y_strides,
                                    int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    if (group < 0 || size_t(group) >= ctx->groups.size() || rank < 1 || rank > 4 || !valid ||
        !x_strides || !y_strides)
      return fail<pto::InternalError>(ctx, site, kOp,
                                      fmt::format("bad allreduce call: group {} of {}, rank {}",
                                                  group, ctx->groups.size(), rank));
    detail::GroupState &g = *ctx->groups[size_t(group)];
    const int me = ctx->group_pe[size_t(group)];
    detail::TraceScope trace(ctx, "allreduce", "collective");
    Header h;
    h.dtype = dtype;
    h.reduction = reduction;
    h.rank = rank;
    Region reg;
    reg.rank = rank;
    for (int d = 0; d < rank; ++d)
      h.valid[d] = reg.valid[d] = std::max<int64_t>(valid[d], 0);
    reg.cols = reg.valid[rank - 1];
    reg.rows = 1;
    for (int d = 0; d + 1 < rank; ++d)
      reg.rows *= reg.valid[d];
    ChunkFn fn = chunk_fn(dtype, reduction);
    const int64_t es = pto::bytes_of(static_cast<pto::DataType>(dtype));
    if (!fn)
      return fail<pto::InternalError>(
          ctx, site, kOp, fmt::format("no allreduce for dtype {} reduction {}", dtype, reduction));
    detail::WorldState &w = *ctx->world;
    bool shared = pto::env::read_choice(pto::env::var("PTO_SHMEM_DIRECT"), {}) != "0" &&
                  !w.tracing.load(std::memory_order_relaxed);
    for (int q = 0; q < g.n_pes && shared; ++q)
      shared = w.is_local[size_t(g.world_pe[size_t(q)])] != 0;
    auto mismatch = [&](const Header &h0, const Header &hq, int q) {
      return fail<pto::DistributedError>(
          ctx, site, kOp,
          fmt::format("PE {} of group '{}' passes {}, PE {} passes {}; every PE must pass the "
                      "same dtype, reduction and valid shape",
                      g.world_pe[0], g.name, show(h0), g.world_pe[size_t(q)], show(hq)));
    };
    if (shared) {
      Args &mine = g.direct_args[size_t(me)];
      mine.x = x;
      mine.y = y;
      mine.dtype = dtype;
      mine.reduction = reduction;
      mine.rank = rank;
      for (int d = 0; d < rank; ++d) {
        mine.valid[d] = reg.valid[d];
        mine.x_strides[d] = x_strides[d];
        mine.y_strides[d] = y_strides[d];
      }
      if (int32_t st = barrier(ctx, g, me, "allreduce entry barrier"))
        return st;
      auto header = [&](const Args &a) {
        Header k;
        k.dtype = a.dtype;
        k.reduction = a.reduction;
        k.rank = a.rank;
        std::copy(a.valid, a.valid + 4, k.valid);
        return k;
      };
      for (int q = 1; q < g.n_pes; ++q)
        if (!(header(g.direct_args[size_t(q)]) == header(g.direct_args[0])))
          return mismatch(header(g.direct_args[0]), header(g.direct_args[size_t(q)]), q);
      const int32_t st = direct(g, me, reg, es, fn);
      if (st >= 0) // PTO_OK or PTO_ERR; -1: the buffers overlap, take the allgather path
        return st == PTO_OK ? barrier(ctx, g, me, "allreduce exit barrier") : st;
    }
    std::vector<Header> all(static_cast<size_t>(g.n_pes));
    {
      w.progress.bump();
      detail::CorePolicy policy(w, /*collective=*/true, &g);
      const auto res = g.t->allgather(me, &h, sizeof h, all.data(), policy);
      if (int32_t st = detail::collective_result(ctx, g, res, policy, kOp, "allreduce allgather"))
        return st;
    }
    for (int q = 1; q < g.n_pes; ++q)
      if (!(all[size_t(q)] == all[0]))
        return mismatch(all[0], all[size_t(q)], q);
    return gathered(ctx, g, me, reg, es, fn, dtype, reduction, x, x_strides, y, y_strides);
  });
}
