// shmem_checks.h - Internal: the argument checks every shmem entry point makes before it calls
// the transport (shmem_ops.cpp, shmem_amo.cpp). Each records the typed error in ctx and returns
// false when the check fails.
#pragma once

#include "world_state.h"

#include <cstdint>

namespace pto::runtime::detail {

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

} // namespace pto::runtime::detail
