// shmem_ops.cpp - The data-movement and signal entry points of the ABI: put, get, signal,
// wait_until, clear, heap_base. Bounds are checked once per call against the block's byte range;
// the element loops then run unchecked, with a memmove fast path for contiguous same-dtype rows.
#include "pto/dtype.h"
#include "pto/element.h"
#include "pto/runtime/signal.h"

#include "boundary.h"
#include "world_state.h"
#if PTO_HAVE_MPI
#include "transport/mpi_ops.h"
#define PTO_ON_MPI(ctx, call)                                                                      \
  if ((ctx)->world->mpi)                                                                           \
    return call;
#else
#define PTO_ON_MPI(ctx, call)
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <optional>

using namespace pto::runtime;
using namespace pto::runtime::detail;
using pto::element::BF16;
using pto::element::Bool8;
using pto::element::convert;
using pto::element::F16;

namespace {

static_assert(sizeof(pto_dtype) == sizeof(pto::DataType), "pto_dtype carries pto::DataType");

/// The pto::DataType of an ABI element code.
pto::DataType dtype_of(pto_dtype dt) { return static_cast<pto::DataType>(dt); }

/// Bytes per element of a supported dtype, 0 for any other code.
int64_t element_size(pto_dtype dt) {
  return pto::is_supported(dtype_of(dt)) ? pto::bytes_of(dtype_of(dt)) : 0;
}

// A block with unit dims dropped and contiguous neighbours merged; dims[n-1] is the innermost.
struct Walk {
  int n = 0;
  int64_t extent[4]{}, src_stride[4]{}, dst_stride[4]{};
};

Walk collapse(const pto_block &b, const int64_t *src_stride, const int64_t *dst_stride) {
  Walk w;
  for (int d = 3; d >= 0; --d) { // innermost first
    if (b.extent[d] == 1)
      continue;
    if (w.n > 0) {
      const int t = w.n - 1; // the dim just inside this one
      if (src_stride[d] == w.extent[t] * w.src_stride[t] &&
          dst_stride[d] == w.extent[t] * w.dst_stride[t]) {
        w.extent[t] *= b.extent[d];
        continue;
      }
    }
    w.extent[w.n] = b.extent[d];
    w.src_stride[w.n] = src_stride[d];
    w.dst_stride[w.n] = dst_stride[d];
    ++w.n;
  }
  if (w.n == 0) { // a single element
    w.extent[0] = 1;
    w.n = 1;
  }
  std::reverse(w.extent, w.extent + w.n);
  std::reverse(w.src_stride, w.src_stride + w.n);
  std::reverse(w.dst_stride, w.dst_stride + w.n);
  return w;
}

// Calls row(src, dst, n) for every innermost row; strides of the row are w.*_stride[w.n-1].
template <class Row>
void for_each_row(const Walk &w, const std::byte *src, int64_t src_esize, std::byte *dst,
                  int64_t dst_esize, Row &&row) {
  int64_t e[3] = {1, 1, 1}, ss[3] = {0, 0, 0}, ds[3] = {0, 0, 0};
  for (int d = 0; d + 1 < w.n; ++d) { // outer dims, right-aligned into e[3]
    const int k = 3 - (w.n - 1) + d;
    e[k] = w.extent[d];
    ss[k] = w.src_stride[d] * src_esize;
    ds[k] = w.dst_stride[d] * dst_esize;
  }
  const int64_t len = w.extent[w.n - 1];
  for (int64_t i0 = 0; i0 < e[0]; ++i0)
    for (int64_t i1 = 0; i1 < e[1]; ++i1)
      for (int64_t i2 = 0; i2 < e[2]; ++i2)
        row(src + i0 * ss[0] + i1 * ss[1] + i2 * ss[2], dst + i0 * ds[0] + i1 * ds[1] + i2 * ds[2],
            len);
}

template <class S, class D> void set_rows(const Walk &w, const std::byte *src, std::byte *dst) {
  const int64_t sst = w.src_stride[w.n - 1], dst_st = w.dst_stride[w.n - 1];
  if (std::is_same_v<S, D> && sst == 1 && dst_st == 1) {
    for_each_row(w, src, sizeof(S), dst, sizeof(D),
                 [](const std::byte *s, std::byte *d, int64_t n) {
                   std::memmove(d, s, size_t(n) * sizeof(S)); // src may be this PE's own heap
                 });
    return;
  }
  for_each_row(w, src, sizeof(S), dst, sizeof(D), [&](const std::byte *s, std::byte *d, int64_t n) {
    const S *sp = reinterpret_cast<const S *>(s);
    D *dp = reinterpret_cast<D *>(d);
    if (sst == 1 && dst_st == 1) { // unit strides: lets the compiler vectorize the conversion
      for (int64_t i = 0; i < n; ++i)
        dp[i] = convert<S, D>(sp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        dp[i * dst_st] = convert<S, D>(sp[i * sst]);
    }
  });
}

// ADD puts lock the destination in 4 KiB stripes (by address, so across PEs and groups) and add
// with plain, vectorizable loops: no update is lost, since every adder of an element holds its
// stripe, and one lock per stripe costs far less than a compare-exchange per element. One stripe
// lock is held at a time, so two adders can never wait on each other.
constexpr int kStripeShift = 12;
constexpr size_t kStripes = 1024;
std::mutex &stripe_lock(const std::byte *p) {
  static std::mutex locks[kStripes];
  auto a = reinterpret_cast<uintptr_t>(p) >> kStripeShift;
  return locks[(a ^ (a >> 10)) % kStripes];
}

template <class S, class D> inline D add_one(D old, S v) {
  if constexpr (std::is_same_v<D, F16>)
    return F16{pto::fp32_to_fp16(pto::fp16_to_fp32(old.bits) + convert<S, float>(v))};
  else if constexpr (std::is_same_v<D, BF16>)
    return BF16{pto::fp32_to_bf16(pto::bf16_to_fp32(old.bits) + convert<S, float>(v))};
  else if constexpr (std::is_floating_point_v<D>)
    return D(old + convert<S, D>(v));
  else // integers wrap (two's complement), as the atomic fetch_add did
    return D(std::make_unsigned_t<D>(old) + std::make_unsigned_t<D>(convert<S, D>(v)));
}

template <class S, class D> void add_rows(const Walk &w, const std::byte *src, std::byte *dst) {
  const int64_t sst = w.src_stride[w.n - 1], dst_st = w.dst_stride[w.n - 1];
  for_each_row(w, src, sizeof(S), dst, sizeof(D), [&](const std::byte *s, std::byte *d, int64_t n) {
    const S *sp = reinterpret_cast<const S *>(s);
    D *dp = reinterpret_cast<D *>(d);
    int64_t i = 0;
    while (i < n) {
      // The elements of this row that share dp[i]'s stripe.
      const auto *first = reinterpret_cast<const std::byte *>(dp + i * dst_st);
      const uintptr_t stripe_end = ((reinterpret_cast<uintptr_t>(first) >> kStripeShift) + 1)
                                   << kStripeShift;
      const int64_t step = dst_st * int64_t(sizeof(D));
      int64_t j = n;
      if (step > 0) {
        const int64_t fit =
            int64_t(stripe_end - reinterpret_cast<uintptr_t>(first) + uintptr_t(step) - 1) / step;
        j = std::min(n, i + fit);
      }
      std::lock_guard lock(stripe_lock(first));
      if (sst == 1 && dst_st == 1) {
        for (int64_t k = i; k < j; ++k)
          dp[k] = add_one<S, D>(dp[k], sp[k]);
      } else {
        for (int64_t k = i; k < j; ++k)
          dp[k * dst_st] = add_one<S, D>(dp[k * dst_st], sp[k * sst]);
      }
      i = j;
    }
  });
}

// Copies (SET) or atomically adds (ADD) the block; the dtypes are valid and ADD never targets
// bool (checked by the caller).
void move_block(const pto_block &b, int32_t op, const std::byte *src, int32_t src_dt,
                std::byte *dst, int32_t dst_dt) {
  const Walk w = collapse(b, b.src_stride, b.dst_stride);
  pto::element::with_element_type(dtype_of(src_dt), [&](auto s) {
    pto::element::with_element_type(dtype_of(dst_dt), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      if (op == PTO_ATOMIC_SET) {
        set_rows<S, D>(w, src, dst);
      } else if constexpr (!std::is_same_v<D, Bool8>) {
        add_rows<S, D>(w, src, dst);
      }
    });
  });
}

// Resolves the group index; an undeclared group is a code generation bug.
bool check_group(pto_ctx *ctx, int32_t group, int32_t site, const char *op) {
  if (group >= 0 && size_t(group) < ctx->groups.size())
    return true;
  fail<pto::InternalError>(ctx, site, op,
                           fmt::format("group index {} was not declared by kernel_enter ({} "
                                       "groups); rerun with PTO_DUMP=ir",
                                       group, ctx->groups.size()));
  return false;
}

bool check_pe(pto_ctx *ctx, int32_t group, int32_t pe, const char *what, int32_t site,
              const char *op) {
  const int n = ctx->groups[size_t(group)]->n_pes;
  if (pe >= 0 && pe < n)
    return true;
  fail<pto::DistributedError>(ctx, site, op,
                              fmt::format("{} {} is out of range [0, {}) for group '{}'", what, pe,
                                          n, group_name(ctx, group)));
  return false;
}

bool check_dtype(pto_ctx *ctx, int32_t dt, int32_t site, const char *op) {
  if (element_size(dt) > 0)
    return true;
  fail<pto::InternalError>(ctx, site, op, fmt::format("unsupported dtype ordinal {}", dt));
  return false;
}

// Checks the heap side of a block: extents >= 0, offset aligned to the element, and the byte
// range it spans inside [0, limit) and inside the heap. Sets `empty` for a zero-element block.
bool check_heap_block(pto_ctx *ctx, int32_t group, int pe, const pto_block *b,
                      const int64_t *stride, int64_t offset, int64_t limit, int64_t esize,
                      int32_t site, const char *op, bool &empty) {
  if (!b)
    return fail<pto::InternalError>(ctx, site, op, "null block") == PTO_OK;
  empty = false;
  for (int d = 0; d < 4; ++d) {
    if (b->extent[d] < 0)
      return fail<pto::DistributedError>(
                 ctx, site, op,
                 fmt::format("block extent {} in dim {} is negative", b->extent[d], d)) == PTO_OK;
    empty = empty || b->extent[d] == 0;
  }
  if (empty)
    return true;
  if (offset % esize != 0)
    return fail<pto::DistributedError>(
               ctx, site, op,
               fmt::format("offset {} bytes is not a multiple of the element size {} bytes", offset,
                           esize)) == PTO_OK;
  // 128-bit arithmetic: extents times strides cannot overflow here.
  __int128 lo = offset, hi = offset;
  for (int d = 0; d < 4; ++d) {
    const __int128 span = __int128(b->extent[d] - 1) * stride[d] * esize;
    (span < 0 ? lo : hi) += span;
  }
  hi += esize - 1;
  const int64_t heap_size = ctx->groups[size_t(group)]->heap.size_bytes();
  if (lo < 0 || hi >= limit || hi >= heap_size)
    return fail<pto::DistributedError>(
               ctx, site, op,
               fmt::format("offsets out of bounds: the block spans bytes [{}, {}] of PE {}'s "
                           "heap for group '{}' but the object ends at byte {} (heap size {} "
                           "bytes)",
                           int64_t(lo), int64_t(hi), pe, group_name(ctx, group), limit,
                           heap_size)) == PTO_OK;
  return true;
}

std::byte *heap_at(pto_ctx *ctx, int32_t group, int pe, int64_t offset) {
  return ctx->groups[size_t(group)]->heap.base(pe) + offset;
}

// Checks a signal slot: a whole, aligned int32 inside the heap.
bool check_slot(pto_ctx *ctx, int32_t group, int64_t offset, int32_t site, const char *op) {
  const int64_t heap_size = ctx->groups[size_t(group)]->heap.size_bytes();
  if (offset >= 0 && offset % 4 == 0 && offset <= heap_size - 4)
    return true;
  fail<pto::DistributedError>(ctx, site, op,
                              fmt::format("signal slot offset {} bytes is not an aligned int32 "
                                          "inside the heap of group '{}' ({} bytes)",
                                          offset, group_name(ctx, group), heap_size));
  return false;
}

} // namespace

extern "C" {

void *pto_rt_heap_base(pto_ctx *ctx, int32_t group, int32_t pe) {
  const auto &groups = ctx->groups;
  if (group < 0 || size_t(group) >= groups.size() || pe < 0 || pe >= groups[size_t(group)]->n_pes)
    return nullptr;
  return heap_at(ctx, group, pe, 0);
}

int32_t pto_rt_put(pto_ctx *ctx, int32_t group, int32_t dst_pe, int32_t op, const void *src,
                   pto_dtype src_dt, int64_t dst_offset_bytes, int64_t dst_limit_bytes,
                   pto_dtype dst_dt, const pto_block *block, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    constexpr const char *kOp = "shmem_put";
    TraceScope trace(ctx, kOp, "put");
    if (auto *e = trace.event()) {
      e->peer = dst_pe;
      e->bytes = block ? block->extent[0] * block->extent[1] * block->extent[2] * block->extent[3] *
                             element_size(dst_dt)
                       : 0;
      e->name = op == PTO_ATOMIC_ADD ? "shmem_put ADD" : "shmem_put";
    }

    if (!check_group(ctx, group, site, kOp) || !check_dtype(ctx, src_dt, site, kOp) ||
        !check_dtype(ctx, dst_dt, site, kOp))
      return PTO_ERR;
    if (op != PTO_ATOMIC_SET && op != PTO_ATOMIC_ADD)
      return fail<pto::InternalError>(ctx, site, kOp, fmt::format("unknown put op {}", op));
    if (op == PTO_ATOMIC_ADD && dtype_of(dst_dt) == pto::DT_BOOL)
      return fail<pto::DTypeError>(ctx, site, kOp, "atomic ADD into bool data is not supported");
    if (!check_pe(ctx, group, dst_pe, "dst_pe", site, kOp))
      return PTO_ERR;
    bool empty = false;
    if (!check_heap_block(ctx, group, dst_pe, block, block ? block->dst_stride : nullptr,
                          dst_offset_bytes, dst_limit_bytes, element_size(dst_dt), site, kOp,
                          empty))
      return PTO_ERR;
    if (empty)
      return PTO_OK;
    if (!src)
      return fail<pto::InternalError>(ctx, site, kOp, "null source");
    PTO_ON_MPI(ctx, mpi_put(ctx, group, dst_pe, op, src, src_dt, dst_offset_bytes, dst_dt, *block))
    move_block(*block, op, static_cast<const std::byte *>(src), src_dt,
               heap_at(ctx, group, dst_pe, dst_offset_bytes), dst_dt);
    ctx->world->progress.bump();
    return PTO_OK;
  });
}

int32_t pto_rt_get(pto_ctx *ctx, int32_t group, int32_t src_pe, int64_t src_offset_bytes,
                   int64_t src_limit_bytes, pto_dtype src_dt, void *dst, pto_dtype dst_dt,
                   const pto_block *block, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    constexpr const char *kOp = "shmem_get";
    TraceScope trace(ctx, kOp, "get");
    if (auto *e = trace.event()) {
      e->peer = src_pe;
      e->bytes = block ? block->extent[0] * block->extent[1] * block->extent[2] * block->extent[3] *
                             element_size(src_dt)
                       : 0;
    }

    if (!check_group(ctx, group, site, kOp) || !check_dtype(ctx, src_dt, site, kOp) ||
        !check_dtype(ctx, dst_dt, site, kOp) || !check_pe(ctx, group, src_pe, "src_pe", site, kOp))
      return PTO_ERR;
    bool empty = false;
    if (!check_heap_block(ctx, group, src_pe, block, block ? block->src_stride : nullptr,
                          src_offset_bytes, src_limit_bytes, element_size(src_dt), site, kOp,
                          empty))
      return PTO_ERR;
    if (empty)
      return PTO_OK;
    if (!dst)
      return fail<pto::InternalError>(ctx, site, kOp, "null destination");
    PTO_ON_MPI(ctx, mpi_get(ctx, group, src_pe, src_offset_bytes, src_dt, dst, dst_dt, *block))
    move_block(*block, PTO_ATOMIC_SET, heap_at(ctx, group, src_pe, src_offset_bytes), src_dt,
               static_cast<std::byte *>(dst), dst_dt);
    ctx->world->progress.bump();
    return PTO_OK;
  });
}

int32_t pto_rt_clear(pto_ctx *ctx, int32_t group, int64_t offset_bytes, int64_t limit_bytes,
                     pto_dtype dt, const pto_block *block, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    constexpr const char *kOp = "shmem_clear_data";
    TraceScope trace(ctx, kOp, "clear");
    if (auto *e = trace.event())
      e->bytes = block ? block->extent[0] * block->extent[1] * block->extent[2] * block->extent[3] *
                             element_size(dt)
                       : 0;

    if (!check_group(ctx, group, site, kOp) || !check_dtype(ctx, dt, site, kOp))
      return PTO_ERR;
    const int me = pto_rt_my_pe(ctx, group);
    const int64_t esize = element_size(dt);
    bool empty = false;
    if (!check_heap_block(ctx, group, me, block, block ? block->dst_stride : nullptr, offset_bytes,
                          limit_bytes, esize, site, kOp, empty))
      return PTO_ERR;
    if (empty)
      return PTO_OK;
    PTO_ON_MPI(ctx, mpi_clear(ctx, group, offset_bytes, dt, *block))
    const Walk w = collapse(*block, block->dst_stride, block->dst_stride);
    const int64_t st = w.dst_stride[w.n - 1];
    std::byte *base = heap_at(ctx, group, me, offset_bytes);
    for_each_row(w, base, esize, base, esize, [&](const std::byte *, std::byte *d, int64_t n) {
      if (st == 1)
        std::memset(d, 0, size_t(n * esize));
      else
        for (int64_t i = 0; i < n; ++i)
          std::memset(d + i * st * esize, 0, size_t(esize));
    });
    ctx->world->progress.bump();
    return PTO_OK;
  });
}

int32_t pto_rt_signal(pto_ctx *ctx, int32_t group, int32_t target_pe, int64_t slot_offset_bytes,
                      int32_t op, int32_t value, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    const char *kOp = target_pe == -1 ? "shmem_signal_all" : "shmem_signal";
    TraceScope trace(ctx, kOp, "signal");
    if (auto *e = trace.event()) {
      e->peer = target_pe;
      e->slot = slot_offset_bytes / 32;
      e->value = value;
    }

    if (!check_group(ctx, group, site, kOp))
      return PTO_ERR;
    if (op != PTO_ATOMIC_SET && op != PTO_ATOMIC_ADD)
      return fail<pto::InternalError>(ctx, site, kOp, fmt::format("unknown signal op {}", op));
    const int n = ctx->groups[size_t(group)]->n_pes;
    if (target_pe < -1 || target_pe >= n)
      return fail<pto::DistributedError>(ctx, site, kOp,
                                         fmt::format("target_pe {} is out of range [0, {}) for "
                                                     "group '{}' (or -1 for every PE)",
                                                     target_pe, n, group_name(ctx, group)));
    if (!check_slot(ctx, group, slot_offset_bytes, site, kOp))
      return PTO_ERR;
    WorldState &world = *ctx->world;
    const int first = target_pe == -1 ? 0 : target_pe, last = target_pe == -1 ? n - 1 : target_pe;
    PTO_ON_MPI(ctx, mpi_signal(ctx, group, first, last, slot_offset_bytes, op, value))
    for (int pe = first; pe <= last; ++pe) {
      auto *word = reinterpret_cast<int32_t *>(heap_at(ctx, group, pe, slot_offset_bytes));
      std::atomic_ref<int32_t> a(*word);
      // seq_cst (not just release): with the waiter's seq_cst increment of futex_waiters this is
      // a Dekker handshake, so skipping the wake when nobody waits never loses a wake-up.
      if (op == PTO_ATOMIC_SET)
        a.store(value, std::memory_order_seq_cst);
      else
        a.fetch_add(value, std::memory_order_seq_cst);
      if (world.futex_waiters.load(std::memory_order_seq_cst) > 0)
        futex_wake_all(word);
    }
    world.progress.bump();
    return PTO_OK;
  });
}

int32_t pto_rt_wait_until(pto_ctx *ctx, int32_t group, int64_t slot_offset_bytes, int32_t cmp,
                          int32_t value, int32_t clear, int64_t slot_number, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    constexpr const char *kOp = "shmem_wait_until";
    TraceScope trace(ctx, kOp, "wait");
    if (auto *e = trace.event()) {
      e->slot = slot_number;
      e->value = value;
    }

    if (!check_group(ctx, group, site, kOp) ||
        !check_slot(ctx, group, slot_offset_bytes, site, kOp))
      return PTO_ERR;
    if (cmp < PTO_CMP_EQ || cmp > PTO_CMP_GE)
      return fail<pto::InternalError>(ctx, site, kOp, fmt::format("unknown comparison {}", cmp));
    PTO_ON_MPI(ctx,
               mpi_wait_until(ctx, group, slot_offset_bytes, cmp, value, clear, slot_number, site))
    WorldState &world = *ctx->world;
    const int me = pto_rt_my_pe(ctx, group);
    auto *word = reinterpret_cast<int32_t *>(heap_at(ctx, group, me, slot_offset_bytes));
    std::atomic_ref<int32_t> a(*word);
    // Made on the first wait that blocks, so a wait that is already satisfied reads no clock.
    std::optional<ProgressWatch> watch;
    for (;;) {
      const int32_t v = a.load(std::memory_order_acquire);
      if (signal_compare(v, cmp, value)) {
        // Subtract rather than store 0, so an ADD that lands between the load and the clear (a
        // fast peer already in the next barrier round) is kept, not lost. GE consumes exactly the
        // awaited count (a counting barrier: the excess belongs to the next round); the other
        // comparisons subtract what was observed.
        if (clear)
          a.fetch_sub(cmp == PTO_CMP_GE ? value : v, std::memory_order_acq_rel);
        world.progress.bump();
        return PTO_OK;
      }
      if (world.aborted.load(std::memory_order_acquire))
        return fail_released(ctx, site, kOp);
      const auto now = ProgressWatch::Clock::now();
      if (!watch)
        watch.emplace(world.watch());
      if (watch->stalled(now))
        return fail<pto::DeadlockError>(
            ctx, site, kOp,
            fmt::format("PE {} timed out after {} ms without progress on any PE, waiting for "
                        "signal slot {} (group '{}') to be {} {}; current value {}; raise "
                        "PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately computes that long without "
                        "communicating",
                        me, watch->timeout_ms(), slot_number, group_name(ctx, group),
                        signal_compare_name(cmp), value, a.load(std::memory_order_acquire)));
      // Sleep in slices so progress and the abort flag are re-checked even without a wake-up.
      const auto left_ms =
          std::chrono::ceil<std::chrono::milliseconds>(watch->next_sample(now) - now).count();
      ctx->waiting_on.store(word, std::memory_order_seq_cst);
      world.futex_waiters.fetch_add(1, std::memory_order_seq_cst);
      if (a.load(std::memory_order_seq_cst) == v && !world.aborted.load(std::memory_order_seq_cst))
        futex_wait(word, v, std::max<int64_t>(left_ms, 1));
      world.futex_waiters.fetch_sub(1, std::memory_order_seq_cst);
      ctx->waiting_on.store(nullptr, std::memory_order_relaxed);
    }
  });
}

} // extern "C"
