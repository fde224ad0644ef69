// mpi_session.h - Internal: the MPI transport's machinery (one PE per process under mpirun, on
// MPI-3 RMA; mpi_transport.cpp maps it onto transport.h's Transport and Group). A Session
// initializes MPI once per process (MPI_THREAD_MULTIPLE, for the progress thread), finalizes it at
// exit, owns the abort window every wait polls, and maps symmetric heaps as MPI windows (MpiHeap):
// MPI_Win_allocate_shared with direct load/store when every rank is on this node (unless
// PTO_MPI_SHARED=0), else MPI_Win_allocate; each window holds one
// MPI_Win_lock_all(MPI_MODE_NOCHECK) epoch for its whole life. Design notes and sources:
// /work/shared/reference/mpi_rma.md (OSHMPI's mapping, Open MPI's osc components, progress).
//
// Environment (the same on every rank: the session compares both across the ranks at start,
// since they select collective MPI calls, and a difference is a DistributedError on every rank):
//   PTO_MPI_SHARED=0       never use the shared-memory window (exercises the RMA path on one node)
//   PTO_MPI_PROGRESS=0     no progress thread (waits and barriers still poll MPI themselves) and
//                          MPI_THREAD_FUNNELED: needed for `--mca osc pt2pt`, which refuses
//                          MPI_THREAD_MULTIPLE in Open MPI 4.1
#pragma once

#include "pto/runtime/abi.h"

#include "transport/transport.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mpi.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pto::runtime::mpi {

/// True when this process was started by mpirun / mpiexec (Open MPI, MPICH or PMIx variables).
bool launched_by_mpirun();

/// A target-side layout: up to 4 dims, innermost last, strides in elements; `esize` bytes per
/// element of MPI type `type`. An origin buffer is always the same elements packed contiguously.
struct Layout {
  int n = 0;
  int64_t extent[4]{};
  int64_t stride[4]{};
  int64_t elements() const;
};

class MpiHeap;

/// How a blocking operation ended.
enum class WaitOutcome { Done, Aborted, TimedOut };

/// The per-process MPI state. Created on the first session() call; MPI stays initialized until
/// the process exits (an atexit handler frees the windows and finalizes MPI).
class Session {
public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Every rank of MPI_COMM_WORLD is on this node and PTO_MPI_SHARED is not 0: heaps are shared
  /// windows and peers' heaps are reachable by load/store.
  bool shared() const { return shared_; }
  /// "osc sm (shared window, load/store)" or "MPI RMA (MPI_Win_allocate)", for reports.
  std::string describe() const;
  MPI_Comm world() const { return world_; }
  /// A thread drives MPI's progress engine while this PE computes (non-shared windows only).
  bool progress_thread() const { return progress_.joinable(); }
  /// How many polls a waiting PE makes before it starts yielding its core (sched_yield): about
  /// a millisecond when this node's ranks fit its CPUs (a yield under load gives the core away
  /// for a whole time slice: measured here, 8 KiB allreduces went from ~3.5 to ~33 us each), 64
  /// when they outnumber them (the rank waited for may need this core).
  int spin_polls() const { return spin_polls_; }

  /// The communicator of the world ranks `members` (in that order: group-local PE i is world
  /// rank members[i]); collective over those ranks; cached by member list. `fresh` makes a new
  /// one (replacing the cached one, which is left as it is: after a failed run it may hold
  /// collectives that never complete).
  MPI_Comm group_comm(const std::vector<int> &members, bool fresh = false);

  /// Maps a symmetric heap of `bytes` on every rank of `comm` (collective). Throws RuntimeError.
  std::shared_ptr<MpiHeap> map_heap(MPI_Comm comm, int64_t bytes);

  /// Marks the job failed by world rank `failed` (this rank, or -1) with message `what`: writes
  /// the message and the abort word of every rank, so their waits and barriers return Aborted
  /// within one poll. Idempotent.
  void abort_all(int failed, const std::string &what = "");
  /// The message of the rank that aborted (aborted_by() >= 0), as it sent it (may be empty).
  std::string abort_message();
  /// The world rank that failed first as seen here (-1: none, -2: unknown rank), clearing
  /// nothing.
  int aborted_by();
  /// Clears this rank's abort word (before a new run; collective: the caller barriers after).
  void clear_abort();

  /// Counts one operation completed by this rank's PE (a put, get, signal, AMO, wait or barrier)
  /// in its progress word, which the other ranks' deadlock detectors read: a relaxed atomic add
  /// on this rank's own memory.
  void count_progress() {
    std::atomic_ref<uint64_t>(*progress_word_).fetch_add(1, std::memory_order_relaxed);
  }
  /// The sum of every other rank's progress word (one MPI_Fetch_and_op per rank).
  uint64_t others_progress();

  /// Drives Open MPI's progress engine once (MPI_Iprobe) and checks the abort word.
  bool poll();
  /// A barrier over `comm` that keeps polling the abort word (MPI_Ibarrier + MPI_Test), so a
  /// failed rank releases the others (unless `stop_on_abort` is false); gives up after
  /// `timeout_ms` without completing.
  WaitOutcome barrier(MPI_Comm comm, int64_t timeout_ms, bool stop_on_abort = true);
  /// Every rank's `mine` on rank 0, in rank order (MPI_Igather of the lengths, MPI_Igatherv of
  /// the bytes, polled as collective() does); empty elsewhere. Collective over the world, on
  /// host_comm(). Throws DistributedError (at `op`) when the ranks do not all call it within
  /// `timeout_ms`, RuntimeError when MPI fails.
  std::vector<std::string> gather_to_root(const std::string &mine, int64_t timeout_ms,
                                          const char *op);

  /// The communicators of the runtime's own collectives, each for one kind of call only, so that
  /// a collective one rank abandoned (timed out) is never matched by a different later one:
  /// run_comm() for World::run's begin_run, host_comm() for host-side collectives (the trace
  /// gather, mpi_share_host_buffers, agree()); world() for the exit barrier and tests.
  MPI_Comm run_comm() const { return run_comm_; }
  MPI_Comm host_comm() const { return host_comm_; }
  /// Runs one non-blocking collective on `comm`: `start` issues it (returns the MPI error code),
  /// then it is polled (MPI_Test, the abort word) until done. A collective this rank abandons (no
  /// completion within `timeout_ms`) leaves `comm` unusable here: later calls on it throw at
  /// once, and this rank aborts the job (abort_all), so that the others are released and every
  /// rank exits non-zero. Throws DistributedError (at `op`) naming `what` on a timeout or when
  /// `comm` is unusable, RuntimeError when MPI fails to start it. Returns Aborted (the request is
  /// abandoned too) when another rank failed meanwhile and `stop_on_abort`.
  /// `keep` holds the memory the collective reads and writes: when this rank abandons it, that
  /// memory is retain()ed, never freed while MPI may still complete the request.
  WaitOutcome collective(MPI_Comm comm, const char *op, const std::string &what, int64_t timeout_ms,
                         const std::function<int(MPI_Request *)> &start, bool stop_on_abort = false,
                         std::vector<std::shared_ptr<void>> keep = {});
  /// Keeps `buffers` alive until the process ends: the memory of a non-blocking collective this
  /// rank abandoned. MPI may still read or write it at any later call, even with a rank
  /// missing (a ring allgather among the ranks present goes on), so freeing it would let MPI
  /// write into memory reused for something else. The buffers are small (handshakes).
  void retain(std::vector<std::shared_ptr<void>> buffers);
  /// How many buffers retain() holds (for tests).
  size_t retained() {
    std::lock_guard lock(mu_);
    return retained_.size();
  }
  /// Compares `mine` (a setting or a definition this rank uses) across the ranks of `comm`
  /// (collective(): an MPI_Iallgather of a hash, then of the texts when they differ). Returns ""
  /// when every rank passed the same text, else which ranks passed what, e.g. "rank 0: '0';
  /// ranks 1, 2: unset" (an empty text reads "unset"). Throws as collective().
  std::string differences(MPI_Comm comm, const std::string &mine, int64_t timeout_ms,
                          const char *op);
  /// The error that made this process's MPI session unusable at start (settings the ranks do
  /// not agree on), or "".
  const std::string &setup_error() const { return setup_error_; }

  /// The runs begun on this rank (every World's begin_run counts one; the ranks agree on it).
  int64_t runs() const { return runs_; }
  void count_run() { ++runs_; }
  /// Publishes that this rank's PE returned from its function in run `run` (a word of the
  /// abort window the other ranks read: returned_run()).
  void publish_returned(int64_t run);
  /// The last run in which rank `r`'s PE returned from its function (0: none).
  int64_t returned_run(int r);

  /// Called at exit (atexit): frees the windows, stops the progress thread, finalizes MPI. If the
  /// ranks cannot meet to finalize within 10 s, or their settings differ (setup_error()),
  /// MPI_Abort. A run that failed earlier does not change the exit status the program chose.
  void shutdown();

  Session();
  ~Session() = default;

private:
  friend class MpiHeap;
  void progress_loop();

  int rank_ = 0, size_ = 1;
  bool shared_ = false;
  MPI_Comm world_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL;
  MPI_Comm run_comm_ = MPI_COMM_NULL, host_comm_ = MPI_COMM_NULL;
  std::vector<MPI_Comm> abandoned_; ///< communicators with a collective this rank gave up on
  std::string setup_error_;
  int64_t runs_ = 0;
  MPI_Win abort_win_ = MPI_WIN_NULL;
  /// This rank's abort window: an int32 word (0, or failed world rank + 1; -1: unknown) at byte
  /// 0, the progress count (uint64) at byte 8, the run its PE last returned in (int64) at byte
  /// 16, then kAbortMsg bytes of message per sending rank at
  /// kAbortHdr + sender * kAbortMsg.
  std::byte *abort_mem_ = nullptr;
  int32_t *abort_word_ = nullptr;
  uint64_t *progress_word_ = nullptr; ///< at byte 8 of the abort window (count_progress)
  std::mutex mu_;                     ///< guards comms_, heaps_, abandoned_, retained_
  std::vector<std::pair<std::vector<int>, MPI_Comm>> comms_;
  std::vector<std::weak_ptr<MpiHeap>> heaps_;
  std::vector<std::shared_ptr<void>> retained_; ///< see retain(); under mu_
  std::atomic<bool> stop_{false};
  std::thread progress_;
  bool finalized_ = false;
  int spin_polls_ = 64;
};

/// The process's session; initializes MPI on first use. Throws pto::DistributedError when the
/// process was not started by mpirun, pto::RuntimeError when MPI cannot initialize.
Session &session();

/// The MPI transport of a World on every rank of `s` (transport.h); events from other ranks go
/// to `host`.
std::unique_ptr<transport::Transport> make_transport(Session &s, transport::Host &host);

/// One symmetric heap as an MPI window over a communicator (group-local PEs = comm ranks).
/// Puts and ADDs complete locally before they return (the origin buffer can be reused at once)
/// and remotely at the next signal, get, AMO to the same PE, or quiet (one MPI_Win_flush for a
/// run of them), so a later signal to the same PE is ordered after them.
class MpiHeap {
public:
  MpiHeap(Session &s, MPI_Comm comm, int64_t bytes);
  ~MpiHeap();
  MpiHeap(const MpiHeap &) = delete;
  MpiHeap &operator=(const MpiHeap &) = delete;

  int64_t size_bytes() const { return bytes_; }
  /// A shared window: every PE's heap is reachable by load/store.
  bool is_shared() const { return shared_; }
  int my_pe() const { return me_; }
  int n_pes() const { return n_; }
  /// PE `pe`'s heap by load/store (shared windows; null when the heap is not shared, except for
  /// this PE's own).
  std::byte *base(int pe) const;

  /// Writes `layout` of elements of `type` at byte `disp` of `pe`'s heap from packed `src`.
  void put(int pe, int64_t disp, const Layout &layout, MPI_Datatype type, const void *src);
  /// Reads `layout` of elements of `type` at byte `disp` of `pe`'s heap into packed `dst`.
  void get(int pe, int64_t disp, const Layout &layout, MPI_Datatype type, void *dst);
  /// Atomically adds packed `src` into `layout` at `disp` of `pe`'s heap: MPI_Accumulate(MPI_SUM)
  /// for the types MPI has; fp16 / bf16 (`dt`, with type MPI_UINT16_T; `src` then holds fp32
  /// values) under a per-PE ticket lock (MPI_Fetch_and_op): get, add in fp32, round once, put,
  /// so concurrent adders lose no update.
  void add(int pe, int64_t disp, const Layout &layout, MPI_Datatype type, pto_dtype dt,
           const void *src);
  /// A signal (int32 at byte `disp` of `pe`): SET (MPI_REPLACE) or ADD (MPI_SUM) after every
  /// earlier operation to `pe` has completed.
  void signal(int pe, int64_t disp, int32_t op, int32_t value);
  /// This PE's signal word at `disp`, read atomically (MPI_Fetch_and_op MPI_NO_OP).
  int32_t load_signal(int64_t disp);
  /// Atomically adds `delta` to this PE's signal word at `disp`.
  void add_signal(int64_t disp, int32_t delta);
  /// Zeroes this PE's bytes [disp, disp + len).
  void clear_local(int64_t disp, int64_t len);
  /// Records that bytes [lo, hi) of PE `pe`'s heap were (or are about to be) written, in its
  /// dirty map (one bit per kDirtyChunk bytes, in the window after the heap): an atomic OR on a
  /// shared window, else MPI_Accumulate(MPI_BOR), completed by the next flush to `pe`.
  void mark_written(int pe, int64_t lo, int64_t hi);
  /// Zeroes the chunks of this PE's heap that meet [0, limit) and were marked written since they
  /// were last zeroed (or since the heap was mapped), and clears their marks; the marks of the
  /// chunks past `limit` are kept, for a later kernel that zeroes them. Between barriers only:
  /// nobody may write this heap meanwhile. Returns the bytes zeroed.
  int64_t zero_written(int64_t limit = INT64_MAX);
  static constexpr int64_t kDirtyChunk = 4096;
  /// Completes every operation this PE issued on the heap (MPI_Win_flush_all + MPI_Win_sync).
  void quiet();
  /// Atomic `op` on the int32 / int64 / fp32 word at `disp` of `pe`'s heap (transport.h's
  /// Group::atomic): atomics on a shared window; else MPI_Fetch_and_op under `pe`'s ticket lock,
  /// CompareSwap as a fetch and a conditional replace (no MPI_Compare_and_swap: it crashes in
  /// Open MPI 4.1's osc/rdma over vader). FetchAdd, Swap and CompareSwap are then atomic with
  /// respect to each other on any mix; a Fetch (MPI_NO_OP) with respect to all; FetchAdd also
  /// with ADD signals (both MPI_SUM); Swap and CompareSwap not with a signal that lands on the
  /// same word meanwhile (signals take no lock).
  void atomic(int pe, int64_t disp, transport::Amo op, pto_dtype dt, const void *operand,
              const void *compare, void *old);
  MPI_Comm comm() const { return comm_; }

private:
  void lock_pe(int pe);
  void unlock_pe(int pe);
  /// Completes the puts and ADDs to `pe` still in flight (MPI_Win_flush), if any.
  void complete(int pe);

  Session &s_;
  MPI_Comm comm_;
  int me_ = 0, n_ = 1;
  int64_t bytes_ = 0;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Win lock_win_ = MPI_WIN_NULL; ///< per PE: a ticket lock (next, serving) for fp16/bf16 ADD
  std::byte *local_ = nullptr;
  int64_t *lock_word_ = nullptr;
  int64_t dirty_disp_ = 0;         ///< byte offset of the dirty map in every PE's window segment
  int64_t dirty_words_ = 0;        ///< uint64 words of the dirty map
  std::vector<std::byte *> bases_; ///< shared windows: every PE's segment
  std::vector<char> pending_;      ///< by PE: puts or ADDs not yet completed remotely
  bool shared_ = false;
  friend class Session;
  void free_windows();
};

} // namespace pto::runtime::mpi
