// world_state.h - Internal: the definition of `pto_ctx` (one per PE) and of the state a World
// shares between its PEs, plus the helpers that record typed errors in a context. Not installed;
// generated code sees `pto_ctx` only as an opaque pointer.
#pragma once

#include "pto/error.h"
#include "pto/runtime/abi.h"
#include "pto/runtime/world.h"

#include "progress.h"
#include "transport/transport.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <vector>

namespace pto::runtime::detail {
struct WorldState;
struct GroupState;
} // namespace pto::runtime::detail

namespace pto::runtime::detail {
/// The group of every PE (always exists; cannot be created by World::create_group).
inline constexpr const char *kWorldGroupName = "world";

/// One event of the timeline (Chrome trace "X" event), recorded by the PE that did it.
struct TraceEvent {
  const char *name = "";
  const char *cat = "";
  int64_t ts_ns = 0, dur_ns = 0; ///< since the world's trace start
  int64_t bytes = -1;            ///< moved bytes (puts, gets, clears)
  int32_t peer = -1;             ///< dst/src/target PE (group-local), -1 for all
  int64_t slot = -1;             ///< signal slot (signals, waits)
  int32_t value = 0;             ///< signal value / awaited value
  std::string label;             ///< kernel name for kernel spans
};
} // namespace pto::runtime::detail

/// The context of one PE (one exists for every world PE; only those of local PEs are used).
/// Touched only by its own PE thread, except the atomics.
struct pto_ctx {
  pto::runtime::detail::WorldState *world = nullptr;
  int pe = 0;
  int32_t status = PTO_OK;     ///< PTO_ERR once an error is recorded
  std::exception_ptr error;    ///< the first error recorded in the current call
  bool error_released = false; ///< `error` is a secondary "released because PE k failed"
  /// One pto_rt_alloc block: its address and its size in bytes (a multiple of 64).
  struct ScratchBlock {
    void *p = nullptr;
    size_t bytes = 0;
  };
  /// The running call's pto_rt_alloc blocks. At the end of a call they become `scratch_kept`, and
  /// the next call reuses them (a per-PE arena: no allocation, no first-touch page faults per
  /// call); kept blocks that call does not reuse are freed then (release_scratch).
  std::vector<ScratchBlock> scratch;
  std::vector<ScratchBlock> scratch_kept;
  pto_ctx() = default;
  pto_ctx(const pto_ctx &) = delete;
  pto_ctx &operator=(const pto_ctx &) = delete;
  ~pto_ctx() {
    for (auto *blocks : {&scratch, &scratch_kept})
      for (const auto &b : *blocks)
        ::operator delete(b.p, std::align_val_t(64));
  }
  const std::vector<std::string> *sites = nullptr; ///< the running kernel's call-site table
  /// The running kernel's name and the user's line that called it (begin_call): where errors
  /// with no call site of their own (scratch memory, kernel entry and exit) point.
  const char *kernel_name = nullptr;
  std::source_location call_loc{};
  /// The running kernel's groups, by the kernel's group index, and this PE's group-local number
  /// in each. Set by kernel entry.
  std::vector<pto::runtime::detail::GroupState *> groups;
  std::vector<int> group_pe;
  /// pto_rt_heap_zeroing's limits for the next kernel entry, by the kernel's group index (empty:
  /// zero every heap whole). Consumed by kernel entry.
  std::vector<int64_t> zero_bytes;
  std::atomic<bool> finished{false};                   ///< its run() function returned
  std::vector<pto::runtime::detail::TraceEvent> trace; ///< this PE's timeline (when tracing)
  int64_t trace_lost = 0; ///< timeline events dropped because memory ran out (record_trace)
  int64_t call_start_ns = 0;
  std::string call_name;
};

namespace pto::runtime::detail {

/// One communication group: its name, members and transport side (symmetric heap, barrier).
/// Member i (group-local PE i) is world PE world_pe[i]. Registered once (World::create_group, or
/// on first use for a group spanning the whole world) and kept across runs.
struct GroupState {
  std::string name;
  int n_pes = 0;
  std::vector<int> world_pe;
  std::unique_ptr<transport::Group> t;
  /// pto_rt_allreduce's registered user buffers, by member: each PE writes its own entry
  /// before the call's first barrier and every member reads them all before its second
  /// (allreduce_direct.cpp). Used only when every member is a thread of this process.
  struct DirectArgs {
    const void *x = nullptr;
    void *y = nullptr;
    int32_t dtype = -1, reduction = -1, rank = 0;
    int64_t valid[4] = {}, x_strides[4] = {}, y_strides[4] = {};
  };
  std::vector<DirectArgs> direct_args; ///< n_pes entries (WorldState::add_group)
  /// pto_rt_allreduce's packing buffer of each member (by group-local PE; n_pes entries) when
  /// the call takes the transport's collectives (allreduce_direct.cpp), reused across calls;
  /// shared because a transport keeps it when a collective fails (the next call makes another).
  struct Scratch {
    std::shared_ptr<std::byte[]> mem;
    size_t bytes = 0;
  };
  std::vector<Scratch> scratch;
};

/// A value never returned before in this process (WorldState::groups_version).
uint64_t next_groups_version();

/// State shared by the PEs of one World; the transport's Host.
struct WorldState final : transport::Host {
  WorldState(int n, int64_t timeout_ms, Backend &backend);
  ~WorldState() override;

  int n_pes;
  int64_t deadlock_timeout_ms;
  std::vector<int> local_pes;      ///< the PEs of this process (Backend::local_pes), ascending
  std::vector<char> is_local;      ///< by world PE
  std::unique_ptr<pto_ctx[]> ctxs; ///< by world PE; only local ones are used
  /// Groups by name. Entries are never removed, so GroupState pointers stay valid.
  std::map<std::string, std::unique_ptr<GroupState>> registry;
  std::mutex registry_mu;
  /// A new process-wide unique value whenever `registry` changes (and for every new World), so
  /// that a kernel's per-thread cache of recent calls can tell "same world, same groups" by one
  /// load (runtime::groups_version).
  std::atomic<uint64_t> groups_version;
  std::atomic<bool> aborted{false};
  std::atomic<int> first_failed_pe{-1};
  /// A failure reported by another process (Host::remote_failed), under remote_mu.
  std::mutex remote_mu;
  int remote_failed_pe = -1;
  std::string remote_what;
  /// Bumped on every state change a blocked PE could be waiting for (see progress.h).
  ProgressCounter progress;
  std::atomic<bool> tracing{false};
  std::chrono::steady_clock::time_point trace_t0 = std::chrono::steady_clock::now();
  std::unique_ptr<transport::Transport> transport; ///< last: made with this as its Host
  int64_t trace_now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                trace_t0)
        .count();
  }

  /// Clears abort state, statuses and broken barriers before a run.
  void reset_for_run();
  /// PE `pe` failed (primary error `what`; -1: the world is aborted otherwise): abort the world,
  /// release every blocked PE and tell the other processes.
  void mark_failed(int pe, const std::string &what);
  /// The group named `name`; a group spanning the whole world is created on first use. Throws
  /// DistributedError for an unknown sub-group or an n_pes that differs from its members.
  GroupState &group(const std::string &name, int n_pes);
  /// Registers a new group (registry_mu held).
  GroupState &add_group(const std::string &name, const std::vector<int> &world_pe);
  /// A watch for a shmem wait starting now: it times out when no PE has made progress for
  /// the deadlock timeout; sampled every 50 ms (the wait's abort-check slice).
  ProgressWatch watch() const {
    return ProgressWatch(progress, std::chrono::milliseconds(deadlock_timeout_ms),
                         std::chrono::milliseconds(50));
  }
  /// A watch for a kernel entry/exit barrier starting now: twice a wait's timeout, so that when
  /// PEs are stuck in shmem waits, their own DeadlockErrors (the root cause) fire first and
  /// release the barrier instead of the barrier reporting a bare timeout. Sampled every eighth
  /// of its timeout (aborts and returning PEs wake barriers themselves), so thousands of
  /// blocked PEs cost few wake-ups.
  ProgressWatch collective_watch() const {
    const auto timeout = std::chrono::milliseconds(2 * deadlock_timeout_ms);
    return ProgressWatch(
        progress, timeout,
        std::max<std::chrono::milliseconds>(timeout / 8, std::chrono::milliseconds(1)));
  }

  // transport::Host
  void remote_failed(int world_pe, const std::string &what) override;
  void progress_made() override { progress.bump(); }
};

/// The runtime core's policy for a blocking transport call: gives up when the world is aborted,
/// when a barrier member of `group` (null for signal waits) has returned from its function, or
/// when no PE made progress for the watch's timeout. The watch starts at the first check, i.e.
/// when the transport is about to sleep.
class CorePolicy final : public transport::WaitPolicy {
public:
  CorePolicy(WorldState &w, bool collective, const GroupState *group)
      : w_(w), collective_(collective), group_(group) {}
  transport::WaitResult check(std::span<const int> missing, int &culprit) override;
  std::chrono::nanoseconds max_sleep() const override;
  /// After Stalled: the members not arrived at the last check, and the timeout in ms.
  const std::vector<int> &missing() const { return missing_; }
  int64_t timeout_ms() const;
  /// After PeerGone: the member that returned.
  int culprit() const { return culprit_; }

private:
  WorldState &w_;
  bool collective_;
  const GroupState *group_;
  std::optional<ProgressWatch> watch_;
  ProgressWatch::Clock::time_point next_{};
  ProgressWatch::Clock::time_point remote_next_{}; ///< when to sample remote_progress() again
  uint64_t remote_ = 0;                            ///< its last sample
  std::vector<int> missing_;
  int culprit_ = -1;
};

/// Splits site `site` of ctx's table ("file.cpp:12: shmem_put") into where and op; "<runtime>"
/// and `default_op` when there is no table or the index is out of range.
void site_location(const pto_ctx *ctx, int32_t site, const char *default_op, std::string &where,
                   std::string &op);

/// The message of an exception, for other processes ("unknown exception" if it is not a
/// std::exception).
std::string describe(const std::exception_ptr &e);

/// Records `e` in ctx (the first error of a call wins) and returns PTO_ERR. A primary error
/// (`released` false) aborts the world so that blocked PEs are released.
/// `abort` false: the error is primary but the world is not aborted (PTO_ERROR_DISTRIBUTED_AGREED).
int32_t record_error(pto_ctx *ctx, std::exception_ptr e, bool released, bool abort = true);

/// Turns the outcome `r` of a collective of group `g` (barrier, allgather; `policy` the wait's)
/// into the recorded error (anything but Done), returning PTO_OK or PTO_ERR. `what` names the
/// collective in messages ("kernel entry barrier"). (kernel_entry.cpp)
int32_t collective_result(pto_ctx *ctx, const GroupState &g, transport::WaitResult r,
                          const CorePolicy &policy, const char *op, const char *what);

/// Records an error of type E at call site `site` and returns PTO_ERR.
template <class E>
int32_t fail(pto_ctx *ctx, int32_t site, const char *default_op, const std::string &detail) {
  std::string where, op;
  site_location(ctx, site, default_op, where, op);
  return record_error(ctx, std::make_exception_ptr(E(where, op, detail)), /*released=*/false);
}

/// Ends the lifetime of ctx's pto_rt_alloc blocks (end of a kernel call, or of a PE's run):
/// when the call allocated any, they are kept for the next call and the kept blocks it did not
/// reuse are freed. Every block is freed with the context.
void free_scratch(pto_ctx *ctx);

/// Records the secondary DistributedError of a PE released from a wait because another PE
/// failed, and returns PTO_ERR.
int32_t fail_released(pto_ctx *ctx, int32_t site, const char *default_op);

/// Appends the event that `make()` returns to ctx's timeline. The timeline is best effort: if
/// memory runs out, the event is dropped and counted in `ctx->trace_lost` (write_trace names the
/// loss in the PE's lane) and the traced kernel goes on. noexcept: generated code and destructors
/// call it.
template <class Make> void record_trace(pto_ctx *ctx, Make &&make) noexcept {
  try {
    ctx->trace.push_back(make());
  } catch (const std::bad_alloc &) {
    ++ctx->trace_lost;
  }
}

/// Records one timeline event for the lifetime of the scope, when the world is tracing.
class TraceScope {
public:
  TraceScope(pto_ctx *ctx, const char *name, const char *cat)
      : ctx_(ctx->world->tracing.load(std::memory_order_relaxed) ? ctx : nullptr) {
    if (ctx_) {
      ev_.name = name;
      ev_.cat = cat;
      ev_.ts_ns = ctx_->world->trace_now_ns();
    }
  }
  ~TraceScope() {
    if (ctx_) {
      ev_.dur_ns = ctx_->world->trace_now_ns() - ev_.ts_ns;
      record_trace(ctx_, [this] { return std::move(ev_); });
    }
  }
  TraceEvent *event() { return ctx_ ? &ev_ : nullptr; }

private:
  pto_ctx *ctx_;
  TraceEvent ev_;
};

/// The name of group `g` for messages.
inline const std::string &group_name(const pto_ctx *ctx, int32_t g) {
  return ctx->groups[size_t(g)]->name;
}

/// The transport side of the kernel's group `g` (a declared group).
inline transport::Group &tgroup(const pto_ctx *ctx, int32_t g) {
  return *ctx->groups[size_t(g)]->t;
}

} // namespace pto::runtime::detail
