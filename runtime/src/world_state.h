// world_state.h - Internal: the definition of `pto_ctx` (one per PE) and of the state a World
// shares between its PEs, plus the helpers that record typed errors in a context. Not installed;
// generated code sees `pto_ctx` only as an opaque pointer.
#pragma once

#include "pto/error.h"
#include "pto/runtime/abi.h"
#include "pto/runtime/symmetric_heap.h"
#include "pto/runtime/world.h"

#include "collective_barrier.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace pto::runtime::detail {
struct WorldState;
} // namespace pto::runtime::detail

/// The context of one PE. Touched only by its own PE thread, except the atomics (read by the
/// PE that aborts the world) and the kernel-entry proposal (read by the last PE to arrive, under
/// the barrier's lock).
struct pto_ctx {
  pto::runtime::detail::WorldState *world = nullptr;
  int pe = 0;
  int32_t status = PTO_OK;     ///< PTO_ERR once an error is recorded
  std::exception_ptr error;    ///< the first error recorded in the current call
  bool error_released = false; ///< `error` is a secondary "released because PE k failed"
  std::vector<void *> scratch; ///< pto_rt_alloc blocks, freed by end_call
  const std::vector<std::string> *sites = nullptr; ///< the running kernel's call-site table
  /// Group-local PE number per group index (-1 = not a member); equal to `pe` while every group
  /// spans the world. Set by kernel entry.
  std::vector<int> group_pe;
  // Kernel-entry proposal, compared across PEs by the last to arrive.
  uint64_t enter_hash = 0;
  std::vector<int64_t> enter_heap_bytes;
  std::atomic<int32_t *> waiting_on{nullptr}; ///< signal word this PE blocks on, for abort
  std::atomic<bool> finished{false};          ///< its run() function returned
};

namespace pto::runtime::detail {

/// One communication group: its name, size and symmetric heap. Member i of the group is world
/// PE world_pe[i] (the identity while every group spans the world).
struct GroupState {
  std::string name;
  int n_pes = 0;
  std::vector<int> world_pe;
  SymmetricHeap heap;
};

/// State shared by the PEs of one World.
struct WorldState {
  WorldState(int n, int64_t timeout_ms);

  int n_pes;
  int64_t deadlock_timeout_ms;
  std::unique_ptr<pto_ctx[]> ctxs;
  std::vector<GroupState> groups; ///< written only inside the kernel-entry barrier
  CollectiveBarrier barrier;
  std::string enter_error; ///< set by the kernel-entry completion when the proposals disagree
  std::atomic<bool> aborted{false};
  std::atomic<int> first_failed_pe{-1};
  std::atomic<int> futex_waiters{0}; ///< PEs inside futex_wait, so signal can skip the wake

  /// Clears abort state, statuses and barriers before a run.
  void reset_for_run();
  /// PE `pe` failed (primary error): abort the world and release every blocked PE.
  void mark_failed(int pe);
  /// The deadline of a wait starting now.
  std::chrono::steady_clock::time_point deadline() const {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(deadlock_timeout_ms);
  }
  /// The deadline of a kernel entry/exit barrier starting now: twice a wait's, so that when PEs
  /// are stuck in shmem waits, their own DeadlockErrors (the root cause) fire first and release
  /// the barrier instead of the barrier reporting a bare timeout.
  std::chrono::steady_clock::time_point collective_deadline() const {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(2 * deadlock_timeout_ms);
  }
};

/// Splits site `site` of ctx's table ("file.cpp:12: shmem_put") into where and op; "<runtime>"
/// and `default_op` when there is no table or the index is out of range.
void site_location(const pto_ctx *ctx, int32_t site, const char *default_op, std::string &where,
                   std::string &op);

/// Records `e` in ctx (the first error of a call wins) and returns PTO_ERR. A primary error
/// (`released` false) aborts the world so that blocked PEs are released.
int32_t record_error(pto_ctx *ctx, std::exception_ptr e, bool released);

/// Records an error of type E at call site `site` and returns PTO_ERR.
template <class E>
int32_t fail(pto_ctx *ctx, int32_t site, const char *default_op, const std::string &detail) {
  std::string where, op;
  site_location(ctx, site, default_op, where, op);
  return record_error(ctx, std::make_exception_ptr(E(where, op, detail)), /*released=*/false);
}

/// Records the secondary DistributedError of a PE released from a wait because another PE
/// failed, and returns PTO_ERR.
int32_t fail_released(pto_ctx *ctx, int32_t site, const char *default_op);

/// The name of group `g` for messages.
inline const std::string &group_name(const pto_ctx *ctx, int32_t g) {
  return ctx->world->groups[size_t(g)].name;
}

} // namespace pto::runtime::detail
