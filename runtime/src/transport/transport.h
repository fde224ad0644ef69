// transport.h - Internal: the seam between the runtime's shmem operations and where the bytes
// go. The runtime core (shmem_ops.cpp, world.cpp) checks bounds, records typed errors, traces,
// and decides when a blocked PE gives up (abort, deadlock detection, a PE that returned); a
// Transport moves the bytes, maps the symmetric heaps and blocks. Two implementations: shared
// memory (every PE a thread of this process, shm_transport.cpp) and MPI-3 RMA (one PE per
// process under mpirun, transport/mpi/). A Backend (backend.h) makes the Transport that goes with
// it.
//
// Conventions. PE numbers are group-local ("me" is the calling PE's number in the group) unless
// named world_pe. Every call is made by the PE thread of `me` (a PE that lives in this process).
// Arguments were checked by the core: PEs are in range, block byte ranges lie inside the heap,
// dtypes are supported, ADD never targets bool. Offsets are bytes from the heap base. A call
// either completes or throws (std::bad_alloc, pto::Error): the core records the exception.
#pragma once

#include "pto/runtime/abi.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pto::runtime::transport {

/// Why a blocking call returned.
enum class WaitResult {
  Done,     ///< the condition holds (or the barrier passed)
  Aborted,  ///< the world was aborted (a PE failed): the caller gets a "released" error
  Stalled,  ///< no PE made progress for the deadlock timeout (DeadlockError)
  PeerGone, ///< a barrier member returned from its function without arriving
};

/// The runtime core's policy for a blocking call. The transport polls its condition; before it
/// blocks the thread (and again at least every max_sleep() while blocked, and whenever woken)
/// it calls check(). A transport that spins first need not call check() while spinning, as long
/// as it spins for microseconds, not milliseconds.
class WaitPolicy {
public:
  virtual ~WaitPolicy() = default;
  /// Done to go on waiting, or the reason to give up. `missing` are the group-local PEs a
  /// barrier still waits for (empty when unknown, and for signal waits); on PeerGone the
  /// policy sets `culprit` to the member that is gone.
  virtual WaitResult check(std::span<const int> missing, int &culprit) = 0;
  /// The longest the transport may block from now without calling check() again.
  virtual std::chrono::nanoseconds max_sleep() const = 0;
};

/// A condition on this PE's own heap, polled by Group::wait (acquire loads, e.g. through
/// Group::load_slot): true ends the wait.
class WaitCondition {
public:
  virtual ~WaitCondition() = default;
  virtual bool ready() = 0;
};

/// Atomic fetch operations on one word of a PE's heap (OpenSHMEM AMOs). The word has the size
/// of its dtype (int32, int64 or fp32; fp32 ADD is a compare-exchange loop) and is aligned to it.
enum class Amo {
  FetchAdd,    ///< old = *w; *w = old + operand
  Swap,        ///< old = *w; *w = operand
  CompareSwap, ///< old = *w; if (old == compare) *w = operand
  Fetch,       ///< old = *w
};

/// One communication group as the transport sees it: the heap mapping and every shmem
/// operation among the group's members. Made by Transport::make_group, kept across runs.
class Group {
public:
  virtual ~Group() = default;

  // ---- symmetric heap -------------------------------------------------------------------------
  /// Collective over the group's members (each calls it with the same `bytes`, after they agreed
  /// on the layout): makes the group's heap `bytes` long on every member and all zero. The new
  /// bases and contents are guaranteed to every member once the next barrier() has passed;
  /// until then no member may touch any heap of the group. Throws std::bad_alloc.
  virtual void map_heap(int me, int64_t bytes) = 0;
  /// map_heap, except that only bytes [0, zero_bytes) need be zero afterwards; the rest may keep
  /// what it held (the program writes it before it reads it: ir::Group::zero_bytes). The
  /// default zeroes everything.
  virtual void map_heap_zeroing(int me, int64_t bytes, int64_t zero_bytes) {
    (void)zero_bytes;
    map_heap(me, bytes);
  }
  /// The heap size of the last map_heap (0 before the first).
  virtual int64_t heap_bytes() const = 0;
  /// Base of PE `pe`'s heap if this process can load and store it directly (64-byte aligned),
  /// else null. Always non-null for the caller's own heap after map_heap. Stores made through it
  /// must be reported with note_written (or they may survive into the next kernel).
  virtual std::byte *direct_base(int pe) = 0;
  /// Tells the transport that bytes [offset, offset + bytes) of PE `pe`'s heap were written by
  /// direct stores (direct_base), so that the next map_heap zeroes them.
  virtual void note_written(int pe, int64_t offset, int64_t bytes) = 0;
  /// For signals and waits in generated code (docs/distributed.md, "The shared-memory fast
  /// path"): an int32 word that is non-zero while PE `pe` may sleep in a wait, or null when the
  /// transport's signals must go through signal() (the default). With a non-null word, a signal
  /// may be a release store or an atomic add into the slot (direct_base), then a seq_cst fence,
  /// then, if the word is non-zero, signal(ADD 0) to the same slot to wake `pe`; and a wait may
  /// poll its slot with acquire loads and clear it with an atomic add before it calls wait().
  virtual const std::atomic<int32_t> *sleep_flag(int pe) {
    (void)pe;
    return nullptr;
  }

  // ---- data -----------------------------------------------------------------------------------
  /// Copies (PTO_ATOMIC_SET) or adds (PTO_ATOMIC_ADD: loses no update under contention) a
  /// strided block from local `src` (dtype `src_dt`, strides b.src_stride) into PE `pe`'s heap at
  /// `dst_offset` (dtype `dst_dt`, strides b.dst_stride), converting as abi.h's pto_rt_put says.
  /// Returns when `src` may be reused (local completion); ordered before a later signal to `pe`.
  virtual void put(int me, int pe, int32_t op, const void *src, pto_dtype src_dt,
                   int64_t dst_offset, pto_dtype dst_dt, const pto_block &b) = 0;
  /// Copies a strided block from PE `pe`'s heap at `src_offset` (dtype `src_dt`, b.src_stride)
  /// into local `dst` (dtype `dst_dt`, b.dst_stride). Returns when `dst` holds the data.
  virtual void get(int me, int pe, int64_t src_offset, pto_dtype src_dt, void *dst,
                   pto_dtype dst_dt, const pto_block &b) = 0;
  /// Zeroes a strided block of this PE's own heap (b.dst_stride, `esize`-byte elements).
  virtual void clear(int me, int64_t offset, int64_t esize, const pto_block &b) = 0;

  // ---- signals and waits ----------------------------------------------------------------------
  /// Stores (PTO_ATOMIC_SET) or atomically adds (PTO_ATOMIC_ADD) `value` into the int32 word at
  /// `slot_offset` of PE `pe`'s heap, after every put this PE issued to `pe` before (release), and
  /// wakes `pe` if it waits.
  virtual void signal(int me, int pe, int64_t slot_offset, int32_t op, int32_t value) = 0;
  /// The int32 word at `slot_offset` of this PE's own heap (acquire load), for WaitConditions.
  virtual int32_t load_slot(int me, int64_t slot_offset) = 0;
  /// Blocks until cond.ready() (polled; the transport may spin briefly, then sleeps until a
  /// signal, AMO or put reaches this PE, running its progress meanwhile) or until `policy` gives
  /// up; returns Done or the policy's verdict. A ready condition returns Done at once.
  virtual WaitResult wait(int me, WaitCondition &cond, WaitPolicy &policy) = 0;
  /// Atomic fetch operation `op` on the `dt` word (PTO_DTYPE codes INT32, INT64, FP32) at
  /// `offset` of PE `pe`'s heap: writes the old value to `old` (may be null), with `operand` and,
  /// for CompareSwap, `compare` of that dtype. Sequentially consistent; wakes `pe` if it waits.
  virtual void atomic(int me, int pe, int64_t offset, Amo op, pto_dtype dt, const void *operand,
                      const void *compare, void *old) = 0;

  // ---- ordering and collectives ---------------------------------------------------------------
  /// Puts, signals and AMOs this PE issued to any one PE before the fence are delivered there
  /// before those it issues after (OpenSHMEM shmem_fence).
  virtual void fence(int me) = 0;
  /// Every put, signal and AMO this PE issued before is complete: visible to every PE (OpenSHMEM
  /// shmem_quiet).
  virtual void quiet(int me) = 0;
  /// Every member arrives, then all leave (implies quiet). On Aborted, Stalled or PeerGone the
  /// barrier is broken until reset(). policy.check() gets the members not yet arrived.
  virtual WaitResult barrier(int me, WaitPolicy &policy) = 0;
  /// Gathers `bytes` bytes from every member: `all` (n_pes * bytes) receives member p's `mine` at
  /// p * bytes. Collective: every member passes the same `bytes`. Waits as barrier().
  virtual WaitResult allgather(int me, const void *mine, size_t bytes, void *all,
                               WaitPolicy &policy) = 0;
  /// allgather() into the caller's buffers without staging copies, when the transport can:
  /// `owner` owns `mine` and `all`, and on a verdict other than Done the transport keeps it
  /// alive for as long as the operation may still read or write them (the caller must not reuse
  /// them). The default calls allgather().
  virtual WaitResult allgather_owned(int me, const void *mine, size_t bytes, void *all,
                                     const std::shared_ptr<void> &owner, WaitPolicy &policy) {
    (void)owner;
    return allgather(me, mine, bytes, all, policy);
  }
  /// All-to-all of equal blocks: `send` holds n_pes blocks of `block` bytes; member q's block
  /// `me` lands in `recv` (n_pes * block) at q * block. Collective: every member passes the same
  /// `block`. Buffers and `owner` as allgather_owned; waits as barrier(). Returns nullopt, having
  /// done nothing, when the transport has no such collective (the default; every member then
  /// gets nullopt alike).
  virtual std::optional<WaitResult> alltoall(int me, const void *send, size_t block, void *recv,
                                             const std::shared_ptr<void> &owner,
                                             WaitPolicy &policy) {
    (void)me, (void)send, (void)block, (void)recv, (void)owner, (void)policy;
    return std::nullopt;
  }
  /// The transport's own allreduce, in place: `data` (`count` elements of `dt`) becomes the
  /// reduction `reduction` (pto::distributed::Reduction: 0 SUM, 1 MAX, 2 MIN, 3 PROD; integer SUM
  /// and PROD wrap) of every member's `data`, in an order of the transport's choosing: the core
  /// asks only where every order gives the same bits. Buffers and `owner` as allgather_owned;
  /// waits as barrier(). Returns nullopt, having done nothing, when the transport has none for
  /// (dt, reduction, count) (the default), alike on every member.
  virtual std::optional<WaitResult> native_allreduce(int me, void *data, int64_t count,
                                                     pto_dtype dt, int32_t reduction,
                                                     const std::shared_ptr<void> &owner,
                                                     WaitPolicy &policy) {
    (void)me, (void)data, (void)count, (void)dt, (void)reduction, (void)owner, (void)policy;
    return std::nullopt;
  }
  /// Every member's scratch of at least `bytes` bytes in memory this PE loads and stores
  /// directly (on MPI: a shared-memory window over the group's ranks), for collectives that move
  /// their data by plain copies between barriers: entry p is member p's scratch (64-byte
  /// aligned, not initialized, kept and reused across calls; a larger `bytes` replaces it).
  /// Collective, and it may block: every member calls it with the same `bytes`, only after the
  /// members met in a collective call. Empty (the default), alike on every member, when the
  /// transport has no such memory.
  virtual std::vector<std::byte *> shared_scratch(int me, size_t bytes) {
    (void)me, (void)bytes;
    return {};
  }
  /// Forgets a broken barrier or allgather (between runs, while no member is in a call).
  virtual void reset() = 0;
};

/// What a transport may ask of the runtime core.
class Host {
public:
  virtual ~Host() = default;
  /// PE `world_pe` of another process failed with `what` (its error message): the core marks
  /// the world aborted, so that the local PEs' blocked calls return Aborted at their next
  /// WaitPolicy::check (the transport wakes its own sleepers). Does not call Transport::abort.
  virtual void remote_failed(int world_pe, const std::string &what) = 0;
  /// Something arrived from another process (for the deadlock detector's progress epoch).
  virtual void progress_made() = 0;
};

/// The transport of one World: made by its Backend (Backend::make_transport) for `n_pes` world
/// PEs, of which Backend::local_pes live in this process.
class Transport {
public:
  virtual ~Transport() = default;
  /// "shm", "mpi".
  virtual const char *name() const = 0;
  /// A group whose member i is world PE world_pe[i]. Called once per group per process (not
  /// collective; groups are created in the same order on every process); the transport may set
  /// up communication resources lazily, at the group's first collective call.
  virtual std::unique_ptr<Group> make_group(const std::string &name,
                                            const std::vector<int> &world_pe) = 0;
  /// A local PE failed (`world_pe`, or -1 when the world is aborted otherwise) with `what`:
  /// release every local PE blocked in a transport call (its wait re-checks the policy) and
  /// tell the other processes (which call Host::remote_failed). Called once per aborted run, from
  /// any thread, after the core marked the world aborted; must not block.
  virtual void abort(int world_pe, const std::string &what) = 0;
  /// Wakes every local PE sleeping in a transport call, so that it re-checks its WaitPolicy (a
  /// PE returned from its function: barriers waiting for it give up). Must not block.
  virtual void wake_all() = 0;
  /// Local PE `world_pe` returned from its World::run function (normally or by throwing): tells
  /// the PEs that wait for it at a barrier (their policy then reports PeerGone). Must not block.
  /// The default wakes the local sleepers (wake_all).
  virtual void pe_returned(int world_pe) {
    (void)world_pe;
    wake_all();
  }
  /// True when PE `world_pe` of another process is known to have returned from its function in
  /// the current run (it will arrive at no barrier any more). Polled by the WaitPolicy for the
  /// members a barrier still misses; false when unknown.
  virtual bool returned_elsewhere(int world_pe) {
    (void)world_pe;
    return false;
  }
  /// Runs pending communication work (MPI progress); the shared-memory transport has none.
  virtual void progress() = 0;
  /// The sum of the progress counts the other processes of the world published (each counts the
  /// operations its PEs complete), so that the deadlock detector sees progress anywhere, not only
  /// in this process; 0 when every PE lives here. Called by blocked PEs about once per sample
  /// slice (progress.h), not per poll.
  virtual uint64_t remote_progress() { return 0; }
  /// Forgets an abort (between runs, while no local PE is in a transport call).
  virtual void reset() = 0;
  /// Called by World::run on every process before its PEs start (after reset): a transport
  /// spanning processes agrees there whether the previous run failed anywhere and, if so, makes
  /// the world usable again (MPI: clears every abort word, renews the group communicators).
  /// Collective over the processes; gives up after `timeout_ms` (DistributedError).
  virtual void begin_run(int64_t timeout_ms) { (void)timeout_ms; }
  /// Collective over the processes: returns, on the first process (the one with world PE 0),
  /// every process's `mine` in process order; on the others nothing. One process: {mine}.
  /// Throws pto::DistributedError when the processes do not all call it within `timeout_ms`,
  /// pto::RuntimeError when the transport cannot move them.
  virtual std::vector<std::string> gather_to_first(const std::string &mine, int64_t timeout_ms) {
    (void)timeout_ms;
    return {mine};
  }
};

/// The shared-memory transport (shm_transport.cpp): every PE a thread of this process, heaps
/// directly addressable, puts as loads and stores, waits that poll briefly and then sleep.
std::unique_ptr<Transport> make_shm_transport(int n_pes);

} // namespace pto::runtime::transport
