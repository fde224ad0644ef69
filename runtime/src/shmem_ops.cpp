// shmem_ops.cpp - The data-movement and signal entry points of the ABI: put, get, signal,
// wait_until, clear, heap_base. Bounds are checked once per call against the block's byte range;
// the transport (transport/transport.h) then moves the bytes unchecked.
#include "pto/dtype.h"
#include "pto/runtime/signal.h"

#include "block_copy.h"
#include "boundary.h"
#include "shmem_checks.h"
#include "world_state.h"

#include <fmt/format.h>

using namespace pto::runtime;
using namespace pto::runtime::detail;

namespace pto::runtime::detail {

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
  __int128 lo = 0, hi = 0;
  block_span(*b, stride, esize, lo, hi);
  lo += offset;
  hi += offset;
  const int64_t heap_size = tgroup(ctx, group).heap_bytes();
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

bool check_word(pto_ctx *ctx, int32_t group, int64_t offset, int64_t bytes, int32_t site,
                const char *op) {
  const int64_t heap_size = tgroup(ctx, group).heap_bytes();
  if (offset >= 0 && offset % bytes == 0 && offset <= heap_size - bytes)
    return true;
  if (bytes == 4)
    fail<pto::DistributedError>(ctx, site, op,
                                fmt::format("signal slot offset {} bytes is not an aligned int32 "
                                            "inside the heap of group '{}' ({} bytes)",
                                            offset, group_name(ctx, group), heap_size));
  else
    fail<pto::DistributedError>(ctx, site, op,
                                fmt::format("offset {} bytes is not an aligned {}-byte word "
                                            "inside the heap of group '{}' ({} bytes)",
                                            offset, bytes, group_name(ctx, group), heap_size));
  return false;
}

} // namespace pto::runtime::detail

namespace {

// A signal slot compared with a value (pto_rt_wait_until).
class SlotCondition final : public transport::WaitCondition {
public:
  SlotCondition(transport::Group &g, int me, int64_t offset, int32_t cmp, int32_t value)
      : g_(g), me_(me), offset_(offset), cmp_(cmp), value_(value) {}
  bool ready() override {
    seen = g_.load_slot(me_, offset_);
    return signal_compare(seen, cmp_, value_);
  }
  int32_t seen = 0; ///< the value of the last poll

private:
  transport::Group &g_;
  int me_;
  int64_t offset_;
  int32_t cmp_, value_;
};

} // namespace

extern "C" {

void *pto_rt_heap_base(pto_ctx *ctx, int32_t group, int32_t pe) {
  const auto &groups = ctx->groups;
  if (group < 0 || size_t(group) >= groups.size() || pe < 0 || pe >= groups[size_t(group)]->n_pes)
    return nullptr;
  transport::Group &g = tgroup(ctx, group);
  std::byte *base = g.direct_base(pe);
  // The caller may store anywhere through it: the whole heap is zeroed at the next entry.
  if (base)
    g.note_written(pe, 0, g.heap_bytes());
  return base;
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
    if (op == PTO_ATOMIC_ADD && static_cast<pto::DataType>(dst_dt) == pto::DT_BOOL)
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
    tgroup(ctx, group)
        .put(pto_rt_my_pe(ctx, group), dst_pe, op, src, src_dt, dst_offset_bytes, dst_dt, *block);
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
    tgroup(ctx, group)
        .get(pto_rt_my_pe(ctx, group), src_pe, src_offset_bytes, src_dt, dst, dst_dt, *block);
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
    tgroup(ctx, group).clear(me, offset_bytes, esize, *block);
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
    if (!check_word(ctx, group, slot_offset_bytes, 4, site, kOp))
      return PTO_ERR;
    transport::Group &tg = tgroup(ctx, group);
    const int me = pto_rt_my_pe(ctx, group);
    const int first = target_pe == -1 ? 0 : target_pe, last = target_pe == -1 ? n - 1 : target_pe;
    for (int pe = first; pe <= last; ++pe)
      tg.signal(me, pe, slot_offset_bytes, op, value);
    WorldState &world = *ctx->world;
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
        !check_word(ctx, group, slot_offset_bytes, 4, site, kOp))
      return PTO_ERR;
    if (cmp < PTO_CMP_EQ || cmp > PTO_CMP_GE)
      return fail<pto::InternalError>(ctx, site, kOp, fmt::format("unknown comparison {}", cmp));
    WorldState &world = *ctx->world;
    const int me = pto_rt_my_pe(ctx, group);
    transport::Group &tg = tgroup(ctx, group);
    SlotCondition cond(tg, me, slot_offset_bytes, cmp, value);
    CorePolicy policy(world, /*collective=*/false, nullptr);
    if (const int32_t st = wait_status(ctx, tg.wait(me, cond, policy), policy, me, site, kOp, [&] {
          return fmt::format("signal slot {} (group '{}') to be {} {}; current value {}",
                             slot_number, group_name(ctx, group), signal_compare_name(cmp), value,
                             tg.load_slot(me, slot_offset_bytes));
        }))
      return st;
    // Subtract rather than store 0, so an ADD that lands between the load and the clear (a fast
    // peer already in the next barrier round) is kept, not lost. GE consumes exactly the awaited
    // count (a counting barrier: the excess belongs to the next round); the other comparisons
    // subtract what was observed.
    if (clear) {
      const int32_t minus = clear_delta(cmp, value, cond.seen);
      tg.atomic(me, me, slot_offset_bytes, transport::Amo::FetchAdd, pto::DT_INT32, &minus, nullptr,
                nullptr);
    }
    world.progress.bump();
    return PTO_OK;
  });
}

} // extern "C"
