// lower_shmem.h - LLVM IR for the shmem ops (pto/distributed.h): each becomes runtime calls
// (pto/runtime/abi.h) per tile of its window, with the window checked once against the shmem
// data (PTO_FAIL_OFFSET) before the runtime touches memory, and signal slots indexed as reference
// §6.3 lays them out. A put followed by its signal (or a wait followed by its get) over the same
// tiles is pipelined: one tile loop does both per tile.
#pragma once

#include "llvm/kernel_builder.h"

namespace pto::codegen {

/// At kernel entry (after pto_rt_kernel_enter): one pto_rt_heap_table per group, whose bases the
/// puts and gets below use for the direct path (docs/distributed.md, "The shared-memory fast
/// path"): a SET put or get without dtype conversion whose PE has a base copies the tile itself
/// (memcpy per row, straight into or out of the peer's heap), else it calls the runtime.
void bind_heap_tables(KernelBuilder &kb, const ir::Program &p);

/// OpKind::ShmemPut: per non-empty tile of the source's valid region, the direct copy or
/// pto_rt_put.
void lower_put(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemGet: per non-empty tile of the view's valid region, the direct copy or
/// pto_rt_get; a borrowed get (ir::Op::borrow) on the direct path makes the heap window the
/// result's storage instead of copying.
void lower_get(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemSignal and ShmemWaitUntil: pto_rt_signal / pto_rt_wait_until per slot tile.
void lower_signal_wait(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemClearData: pto_rt_clear per tile of the window.
void lower_clear(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemClearSignal: one pto_rt_clear of the whole signal block.
void lower_clear_signal(KernelBuilder &kb, const ir::Op &op);

/// OpKind::ShmemFence / ShmemQuiet: pto_rt_fence / pto_rt_quiet.
void lower_sync(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemPutSignal: pto_rt_put_signal per tile (pto_rt_signal for a tile with no valid
/// data), so tile i's signal follows tile i's data.
void lower_put_signal(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemWaitUntil{All,Any,Some}, ShmemTest: every element's slot offsets in a stack
/// array, then one pto_rt_wait_until_set.
void lower_wait_set(KernelBuilder &kb, const ir::Op &op);
/// OpKind::ShmemAtomic{FetchAdd,Swap,CompareSwap}: one pto_rt_atomic; the old value lands in
/// outputs[1].
void lower_atomic(KernelBuilder &kb, const ir::Op &op);

/// True when `second` runs per tile right after `first` (reference §6.4 tile-level pipelining):
/// a signal whose only pred is the put just before it, over the same window and tiles, fires per
/// tile right after that tile's put (the receiver can start on tile 0 while tile 1 is in
/// flight); likewise a get right after its wait reads each tile as soon as that tile's slot is
/// satisfied.
bool shmem_pipelines(const ir::Op &first, const ir::Op &second);
/// Emits `first` and `second` (shmem_pipelines holds) in one tile loop, each at its own site.
void lower_shmem_pipelined(KernelBuilder &kb, const ir::Op &first, const ir::Op &second);

} // namespace pto::codegen
