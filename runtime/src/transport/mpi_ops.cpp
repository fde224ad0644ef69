// mpi_ops.cpp - See mpi_ops.h: kernel entry/exit, put, get, clear, signal and wait on the MPI
// backend. Blocks are packed here (converted to the destination dtype, as the threads backend
// converts element by element) and moved by MpiHeap in one MPI call with a derived datatype.
#include "mpi_ops.h"

#include "pto/element.h"
#include "pto/runtime/signal.h"

#include "../world_state.h"
#include "mpi_session.h"

#include <chrono>
#include <fmt/format.h>
#include <sched.h>

namespace pto::runtime::detail {

namespace {
using pto::element::BF16;
using pto::element::Bool8;
using pto::element::convert;
using pto::element::F16;

DataType dtype_of(pto_dtype dt) { return static_cast<DataType>(dt); }

// The MPI type that carries elements of `dt` (halves as raw 16-bit words).
MPI_Datatype mpi_type(pto_dtype dt) {
  switch (dtype_of(dt)) {
  case DT_INT8:
    return MPI_INT8_T;
  case DT_INT16:
    return MPI_INT16_T;
  case DT_INT32:
    return MPI_INT32_T;
  case DT_INT64:
    return MPI_INT64_T;
  case DT_FP32:
    return MPI_FLOAT;
  case DT_DOUBLE:
    return MPI_DOUBLE;
  case DT_FP16:
  case DT_BF16:
    return MPI_UINT16_T;
  default:
    return MPI_UINT8_T; // uint8, bool
  }
}

bool is_half(pto_dtype dt) { return dtype_of(dt) == DT_FP16 || dtype_of(dt) == DT_BF16; }

// The block's elements in row-major order over its 4 dims, with element strides `stride`.
template <class F> void for_each(const pto_block &b, const int64_t *stride, F &&f) {
  int64_t k = 0;
  for (int64_t i0 = 0; i0 < b.extent[0]; ++i0)
    for (int64_t i1 = 0; i1 < b.extent[1]; ++i1)
      for (int64_t i2 = 0; i2 < b.extent[2]; ++i2)
        for (int64_t i3 = 0; i3 < b.extent[3]; ++i3)
          f(i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3], k++);
}

// The heap side of `b` (strides `stride`) as a Layout: unit dims dropped, contiguous ones merged.
mpi::Layout layout_of(const pto_block &b, const int64_t *stride) {
  mpi::Layout l;
  for (int d = 0; d < 4; ++d) {
    if (b.extent[d] == 1)
      continue;
    if (l.n > 0 && l.stride[l.n - 1] == b.extent[d] * stride[d]) {
      l.extent[l.n - 1] *= b.extent[d];
      l.stride[l.n - 1] = stride[d];
      continue;
    }
    l.extent[l.n] = b.extent[d];
    l.stride[l.n] = stride[d];
    ++l.n;
  }
  if (l.n == 0) {
    l.n = 1;
    l.extent[0] = 1;
    l.stride[0] = 1;
  }
  return l;
}

int64_t elements(const pto_block &b) {
  return b.extent[0] * b.extent[1] * b.extent[2] * b.extent[3];
}

mpi::MpiHeap &heap_of(pto_ctx *ctx, int32_t group) { return *ctx->groups[size_t(group)]->mpi_heap; }

// Packs `src` (strides b.src_stride, dtype S) as elements of P.
// A PE released because another rank failed: name it (the abort word holds its number).
int32_t released(pto_ctx *ctx, int32_t site, const char *op) {
  const int failed = mpi::session().aborted_by();
  if (failed >= 0)
    ctx->world->first_failed_pe.store(failed);
  return fail_released(ctx, site, op);
}

template <class S, class P>
void pack(const pto_block &b, const std::byte *src, std::vector<std::byte> &out) {
  out.resize(size_t(elements(b)) * sizeof(P));
  const S *s = reinterpret_cast<const S *>(src);
  P *o = reinterpret_cast<P *>(out.data());
  for_each(b, b.src_stride, [&](int64_t off, int64_t k) { o[k] = convert<S, P>(s[off]); });
}
} // namespace

int32_t mpi_kernel_enter(pto_ctx *ctx, const uint64_t *group_hash, const int64_t *heap_bytes) {
  mpi::Session &s = mpi::session();
  WorldState &w = *ctx->world;
  // Groups in name order on every rank: the collectives below meet in one global order.
  std::vector<size_t> order;
  for (size_t g = 0; g < ctx->groups.size(); ++g) {
    bool dup = false;
    for (size_t h : order)
      dup = dup || ctx->groups[h] == ctx->groups[g];
    if (!dup)
      order.push_back(g);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return ctx->groups[a]->name < ctx->groups[b]->name; });
  for (size_t g : order) {
    GroupState &gs = *ctx->groups[g];
    const MPI_Comm comm = s.group_comm(gs.world_pe);
    int64_t hi[2] = {int64_t(group_hash[g]), heap_bytes[g]}, lo[2] = {hi[0], hi[1]};
    const auto timeout = 2 * w.deadlock_timeout_ms;
    auto outcome = s.allreduce_minmax(comm, hi, 2, true, timeout);
    if (outcome == mpi::WaitOutcome::Done)
      outcome = s.allreduce_minmax(comm, lo, 2, false, timeout);
    if (outcome == mpi::WaitOutcome::Aborted)
      return released(ctx, -1, "kernel_enter");
    if (outcome == mpi::WaitOutcome::TimedOut)
      return fail<DeadlockError>(ctx, -1, "kernel_enter",
                                 fmt::format("PE {} timed out after {} ms at the kernel entry "
                                             "barrier of group '{}' (MPI ranks [{}])",
                                             ctx->pe, timeout, gs.name,
                                             fmt::join(gs.world_pe, ", ")));
    if (hi[0] != lo[0] || hi[1] != lo[1])
      return fail<DistributedError>(
          ctx, -1, "kernel_enter",
          fmt::format("the PEs of group '{}' declared different shmem tensors (heap bytes from {} "
                      "to {}, layout hashes differ: {}); every PE of a group must create the same "
                      "shmem tensors (same shapes and dtypes) in the same order",
                      gs.name, lo[1], hi[1], hi[0] != lo[0] ? "yes" : "no"));
    if (!gs.mpi_heap || gs.mpi_heap->size_bytes() < heap_bytes[g]) {
      gs.mpi_heap.reset(); // collective free, in the same order on every member
      gs.mpi_heap = s.map_heap(comm, heap_bytes[g]); // zeroed; ends in a barrier
    } else {
      gs.mpi_heap->clear_local(0, heap_bytes[g]);
      if (s.barrier(comm, timeout) != mpi::WaitOutcome::Done)
        return released(ctx, -1, "kernel_enter");
    }
    gs.heap.resize(0, heap_bytes[g]); // no local buffers: the size for the bounds checks
  }
  return PTO_OK;
}

int32_t mpi_kernel_exit(pto_ctx *ctx) {
  mpi::Session &s = mpi::session();
  std::vector<GroupState *> seen;
  for (GroupState *g : ctx->groups) {
    if (std::find(seen.begin(), seen.end(), g) != seen.end())
      continue;
    seen.push_back(g);
  }
  std::sort(seen.begin(), seen.end(),
            [](const GroupState *a, const GroupState *b) { return a->name < b->name; });
  for (GroupState *g : seen) {
    g->mpi_heap->quiet();
    const auto r = s.barrier(g->mpi_heap->comm(), 2 * ctx->world->deadlock_timeout_ms);
    if (r == mpi::WaitOutcome::Aborted)
      return released(ctx, -1, "kernel_exit");
    if (r == mpi::WaitOutcome::TimedOut)
      return fail<DeadlockError>(ctx, -1, "kernel_exit",
                                 fmt::format("PE {} timed out after {} ms at the kernel exit "
                                             "barrier of group '{}'",
                                             ctx->pe, 2 * ctx->world->deadlock_timeout_ms,
                                             g->name));
  }
  return PTO_OK;
}

int32_t mpi_put(pto_ctx *ctx, int32_t group, int32_t dst_pe, int32_t op, const void *src,
                pto_dtype src_dt, int64_t dst_offset_bytes, pto_dtype dst_dt,
                const pto_block &block) {
  mpi::MpiHeap &h = heap_of(ctx, group);
  const mpi::Layout l = layout_of(block, block.dst_stride);
  std::vector<std::byte> packed;
  const bool half_add = op == PTO_ATOMIC_ADD && is_half(dst_dt);
  pto::element::with_element_type(dtype_of(src_dt), [&](auto s) {
    pto::element::with_element_type(dtype_of(dst_dt), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      // A half-precision ADD adds the source value in fp32 (as the threads backend does).
      if (half_add)
        pack<S, float>(block, static_cast<const std::byte *>(src), packed);
      else
        pack<S, D>(block, static_cast<const std::byte *>(src), packed);
    });
  });
  if (op == PTO_ATOMIC_ADD)
    h.add(dst_pe, dst_offset_bytes, l, mpi_type(dst_dt), dst_dt, packed.data());
  else
    h.put(dst_pe, dst_offset_bytes, l, mpi_type(dst_dt), packed.data());
  return PTO_OK;
}

int32_t mpi_get(pto_ctx *ctx, int32_t group, int32_t src_pe, int64_t src_offset_bytes,
                pto_dtype src_dt, void *dst, pto_dtype dst_dt, const pto_block &block) {
  mpi::MpiHeap &h = heap_of(ctx, group);
  const mpi::Layout l = layout_of(block, block.src_stride);
  const int64_t es = pto::bytes_of(dtype_of(src_dt));
  std::vector<std::byte> packed(size_t(elements(block) * es));
  h.get(src_pe, src_offset_bytes, l, mpi_type(src_dt), packed.data());
  pto::element::with_element_type(dtype_of(src_dt), [&](auto s) {
    pto::element::with_element_type(dtype_of(dst_dt), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      const S *p = reinterpret_cast<const S *>(packed.data());
      D *o = static_cast<D *>(dst);
      for_each(block, block.dst_stride,
               [&](int64_t off, int64_t k) { o[off] = convert<S, D>(p[k]); });
    });
  });
  return PTO_OK;
}

int32_t mpi_clear(pto_ctx *ctx, int32_t group, int64_t offset_bytes, pto_dtype dt,
                  const pto_block &block) {
  mpi::MpiHeap &h = heap_of(ctx, group);
  const int64_t es = pto::bytes_of(dtype_of(dt));
  std::byte *base = h.base(h.my_pe()) + offset_bytes;
  for_each(block, block.dst_stride,
           [&](int64_t off, int64_t) { std::memset(base + off * es, 0, size_t(es)); });
  h.clear_local(0, 0); // MPI_Win_sync: the stores are visible to later RMA
  return PTO_OK;
}

int32_t mpi_signal(pto_ctx *ctx, int32_t group, int32_t first_pe, int32_t last_pe,
                   int64_t slot_offset_bytes, int32_t op, int32_t value) {
  mpi::MpiHeap &h = heap_of(ctx, group);
  for (int pe = first_pe; pe <= last_pe; ++pe)
    h.signal(pe, slot_offset_bytes, op, value);
  return PTO_OK;
}

int32_t mpi_wait_until(pto_ctx *ctx, int32_t group, int64_t slot_offset_bytes, int32_t cmp,
                       int32_t value, int32_t clear, int64_t slot_number, int32_t site) {
  constexpr const char *kOp = "shmem_wait_until";
  mpi::Session &s = mpi::session();
  mpi::MpiHeap &h = heap_of(ctx, group);
  using Clock = std::chrono::steady_clock;
  // Another process's progress is invisible here: the timeout runs from the last change of the
  // awaited word (or the start of the wait).
  const auto timeout = std::chrono::milliseconds(ctx->world->deadlock_timeout_ms);
  auto since = Clock::now();
  int32_t last = h.load_signal(slot_offset_bytes);
  for (int spins = 0;; ++spins) {
    const int32_t v = h.load_signal(slot_offset_bytes);
    if (signal_compare(v, cmp, value)) {
      if (clear)
        h.add_signal(slot_offset_bytes, -(cmp == PTO_CMP_GE ? value : v));
      return PTO_OK;
    }
    if (s.poll())
      return released(ctx, site, kOp);
    if ((spins & 63) == 63) {
      const auto now = Clock::now();
      if (v != last) {
        last = v;
        since = now;
      } else if (now - since >= timeout) {
        return fail<DeadlockError>(
            ctx, site, kOp,
            fmt::format("PE {} timed out after {} ms without a change of signal slot {} (group "
                        "'{}', MPI backend), waiting for it to be {} {}; current value {}; raise "
                        "PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately computes that long without "
                        "communicating",
                        h.my_pe(), timeout.count(), slot_number, group_name(ctx, group),
                        signal_compare_name(cmp), value, v));
      }
    }
    if (spins > 64)
      sched_yield();
  }
}

void mpi_abort(int pe) { mpi::session().abort_all(pe); }

} // namespace pto::runtime::detail
