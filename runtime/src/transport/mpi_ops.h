// mpi_ops.h - Internal: the ABI entry points' work on the MPI backend (WorldState::mpi). Called by
// shmem_ops.cpp and world.cpp after their argument checks; each returns PTO_OK or records a typed
// error in ctx and returns PTO_ERR.
#pragma once

#include "pto/runtime/abi.h"

#include <cstdint>

namespace pto::runtime::detail {

int32_t mpi_kernel_enter(pto_ctx *ctx, const uint64_t *group_hash, const int64_t *heap_bytes);
int32_t mpi_kernel_exit(pto_ctx *ctx);
int32_t mpi_put(pto_ctx *ctx, int32_t group, int32_t dst_pe, int32_t op, const void *src,
                pto_dtype src_dt, int64_t dst_offset_bytes, pto_dtype dst_dt,
                const pto_block &block);
int32_t mpi_get(pto_ctx *ctx, int32_t group, int32_t src_pe, int64_t src_offset_bytes,
                pto_dtype src_dt, void *dst, pto_dtype dst_dt, const pto_block &block);
int32_t mpi_clear(pto_ctx *ctx, int32_t group, int64_t offset_bytes, pto_dtype dt,
                  const pto_block &block);
int32_t mpi_signal(pto_ctx *ctx, int32_t group, int32_t first_pe, int32_t last_pe,
                   int64_t slot_offset_bytes, int32_t op, int32_t value);
int32_t mpi_wait_until(pto_ctx *ctx, int32_t group, int64_t slot_offset_bytes, int32_t cmp,
                       int32_t value, int32_t clear, int64_t slot_number, int32_t site);
/// PE `pe` (this process's, or -1) failed: tell every rank (their waits return released).
void mpi_abort(int pe);

} // namespace pto::runtime::detail
