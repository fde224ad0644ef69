// shmem_checks.h - Internal: the argument checks every shmem entry point makes before it calls
// the transport (shmem_ops.cpp, shmem_amo.cpp). Each records the typed error in ctx and returns
// false when the check fails.
#pragma once

#include "world_state.h"

#include <cstdint>
#include <fmt/format.h>
#include <string>

namespace pto::runtime::detail {

/// What a satisfied wait with clear adds to its slot: minus the awaited count for GE (a
/// counting barrier keeps the excess for the next round), else minus the value it saw; negated
/// in uint32, so that every int32 value (INT32_MIN too) wraps as the slot's atomic add does.
inline int32_t clear_delta(int32_t cmp, int32_t value, int32_t seen) {
  return static_cast<int32_t>(0u - static_cast<uint32_t>(cmp == PTO_CMP_GE ? value : seen));
}

/// The group index was declared by kernel_enter (else an InternalError: a codegen bug).
bool check_group(pto_ctx *ctx, int32_t group, int32_t site, const char *op);
/// `pe` is in [0, n_pes) of the group (DistributedError naming `what`, e.g. "dst_pe").
bool check_pe(pto_ctx *ctx, int32_t group, int32_t pe, const char *what, int32_t site,
              const char *op);
/// `dt` is a supported dtype code (else an InternalError).
bool check_dtype(pto_ctx *ctx, int32_t dt, int32_t site, const char *op);
/// The heap side of a block: extents >= 0, offset aligned to the element, and the byte range it
/// spans inside [0, limit) and inside the heap (DistributedError). Sets `empty` for a block with
/// no element.
bool check_heap_block(pto_ctx *ctx, int32_t group, int pe, const pto_block *b,
                      const int64_t *stride, int64_t offset, int64_t limit, int64_t esize,
                      int32_t site, const char *op, bool &empty);
/// A word of `bytes` (4 or 8) at `offset`: aligned to its size and inside the heap
/// (DistributedError naming it a "signal slot" when `bytes` is 4).
bool check_word(pto_ctx *ctx, int32_t group, int64_t offset, int64_t bytes, int32_t site,
                const char *op);

/// The status of a signal wait (shmem_wait_until, the wait sets) that ended with `r`, the one
/// place its verdicts become errors: PTO_OK on Done; the secondary "released" error on Aborted
/// (and PeerGone, which signal waits never get); on Stalled a DeadlockError "PE me timed out
/// after T ms without progress on any PE, waiting for <awaited()>; raise PTO_DEADLOCK_TIMEOUT_MS
/// ...", where awaited() (called only then) names the slot, the expected and the current value.
template <class Awaited>
int32_t wait_status(pto_ctx *ctx, transport::WaitResult r, const CorePolicy &policy, int me,
                    int32_t site, const char *op, Awaited &&awaited) {
  switch (r) {
  case transport::WaitResult::Done:
    return PTO_OK;
  case transport::WaitResult::Aborted:
  case transport::WaitResult::PeerGone:
    return fail_released(ctx, site, op);
  case transport::WaitResult::Stalled:
    break;
  }
  return fail<pto::DeadlockError>(
      ctx, site, op,
      fmt::format("PE {} timed out after {} ms without progress on any PE, waiting for {}; raise "
                  "PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately computes that long without "
                  "communicating",
                  me, policy.timeout_ms(), std::string(awaited())));
}

} // namespace pto::runtime::detail
