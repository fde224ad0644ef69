// lower_shmem_direct.h - Internal to the shmem lowering (lower_shmem.cpp): signals and waits in
// generated code on the shared-memory transport (docs/distributed.md, "The shared-memory fast
// path"). The kernel's heap table (bind_heap_tables, lower_shmem.h) holds, after the n_pes heap
// bases, every PE's sleep flag, this thread's progress counter and the PE's own heap base
// (pto_rt_heap_table in pto/runtime/abi.h); where those are null (another transport, a trace,
// PTO_SHMEM_DIRECT=0) or the table is absent, each op calls the runtime as before.
#pragma once

#include "llvm/kernel_builder.h"

#include <functional>

namespace pto::codegen {

/// The runtime call of an op (returns its i32 status), emitted only on the runtime path.
using RuntimeCall = std::function<llvm::Value *()>;

/// A signal of `value` into the slot at byte `slot_off` (i64) of PE `pe` (i32) of `s`'s group,
/// `abi_op` PTO_ATOMIC_SET (a release store) or PTO_ATOMIC_ADD (an acq_rel atomic add); then a
/// seq_cst fence, and pto_rt_signal(ADD 0) when the PE's sleep flag is up (it wakes the PE), and
/// a progress bump. The runtime call when the PE has no sleep flag (or is outside the group: the
/// runtime reports it).
void emit_direct_signal(KernelBuilder &kb, const ir::ShmemInfo &s, llvm::Value *pe,
                        llvm::Value *slot_off, int32_t abi_op, int32_t value,
                        const RuntimeCall &runtime);

/// A wait until this PE's slot at byte `slot_off` (i64) compares `abi_cmp` with `value`: polls
/// the slot with acquire loads a bounded number of times; when it holds, clears it as
/// pto_rt_wait_until does (atomically subtracts the value seen, or `value` for GE) if `clear`,
/// and bumps the progress counter; otherwise (or without the table) the runtime call, which
/// polls, sleeps and reports deadlocks.
void emit_direct_wait(KernelBuilder &kb, const ir::ShmemInfo &s, llvm::Value *slot_off,
                      int32_t abi_cmp, int32_t value, bool clear, const RuntimeCall &runtime);

/// How many acquire loads a wait in generated code polls before it calls the runtime: about a
/// microsecond, a few one-way hand-offs on this kind of machine. Short, so that a wait among
/// many more PEs than cores soon reaches the runtime, which then sleeps (spin.h).
constexpr int64_t kDirectWaitPolls = 512;

} // namespace pto::codegen
