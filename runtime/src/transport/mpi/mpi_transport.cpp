// mpi_transport.cpp - The MPI transport (transport.h) on a Session (mpi_session.h): one PE per
// process, each group's heap an MpiHeap over the group's communicator. Blocks are copied
// straight into a shared window's peer heap, or packed here (converted to the destination dtype
// by block_copy.h's loops) and moved by MpiHeap in one MPI call with a derived datatype. Waits,
// barriers and allgathers poll: the condition (or a non-blocking collective), the abort word of
// this rank (a failure on another rank goes to Host::remote_failed) and the core's WaitPolicy.
#include "pto/dtype.h"
#include "pto/error.h"

#include "block_copy.h"
#include "mpi_session.h"
#include "transport/transport.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <optional>
#include <sched.h>
#include <span>
#include <utility>
#include <vector>

namespace pto::runtime::mpi {

namespace {
using transport::WaitPolicy;
using transport::WaitResult;

DataType dtype_of(pto_dtype dt) { return static_cast<DataType>(dt); }

// The MPI type that carries elements of `dt` (halves as raw 16-bit words).
MPI_Datatype mpi_type(pto_dtype dt) {
  switch (dtype_of(dt)) {
  case DT_INT8:
    return MPI_INT8_T;
  case DT_INT16:
    return MPI_INT16_T;
  case DT_INT32:
    return MPI_INT32_T;
  case DT_INT64:
    return MPI_INT64_T;
  case DT_FP32:
    return MPI_FLOAT;
  case DT_DOUBLE:
    return MPI_DOUBLE;
  case DT_FP16:
  case DT_BF16:
    return MPI_UINT16_T;
  default:
    return MPI_UINT8_T; // uint8, bool
  }
}

bool is_half(pto_dtype dt) { return dtype_of(dt) == DT_FP16 || dtype_of(dt) == DT_BF16; }

int64_t elements(const pto_block &b) {
  return b.extent[0] * b.extent[1] * b.extent[2] * b.extent[3];
}

// Row-major strides of the block packed contiguously.
void packed_strides(const pto_block &b, int64_t *stride) {
  stride[3] = 1;
  for (int d = 2; d >= 0; --d)
    stride[d] = stride[d + 1] * b.extent[d + 1];
}

// The heap side of `b` (strides `stride`) as a Layout: unit dims dropped, contiguous ones merged.
Layout layout_of(const pto_block &b, const int64_t *stride) {
  Layout l;
  for (int d = 0; d < 4; ++d) {
    if (b.extent[d] == 1)
      continue;
    if (l.n > 0 && l.stride[l.n - 1] == b.extent[d] * stride[d]) {
      l.extent[l.n - 1] *= b.extent[d];
      l.stride[l.n - 1] = stride[d];
      continue;
    }
    l.extent[l.n] = b.extent[d];
    l.stride[l.n] = stride[d];
    ++l.n;
  }
  if (l.n == 0) {
    l.n = 1;
    l.extent[0] = 1;
    l.stride[0] = 1;
  }
  return l;
}

// Backs off a polling loop: spin (Session::spin_polls), then yield the core.
void relax(int64_t spins, int limit) {
  if (spins > limit)
    sched_yield();
}

class MpiTransport;

// A group's communicator and its arrival words (one int32 per member, counting the collective
// calls the member has entered on the communicator; an MpiHeap over it), made together.
struct CommSet {
  MPI_Comm comm = MPI_COMM_NULL;
  std::shared_ptr<MpiHeap> arrivals;
  int32_t entered = 0; ///< this PE's collective calls on comm so far
  int generation = -1; ///< MpiTransport::generation() when made
};

class MpiGroup final : public transport::Group {
public:
  MpiGroup(MpiTransport &t, std::string name, std::vector<int> world_pe)
      : t_(t), name_(std::move(name)), world_pe_(std::move(world_pe)) {}

  void map_heap(int me, int64_t bytes) override { map_heap_zeroing(me, bytes, INT64_MAX); }
  void map_heap_zeroing(int me, int64_t bytes, int64_t zero_bytes) override;
  int64_t heap_bytes() const override { return bytes_; }
  std::byte *direct_base(int pe) override { return heap_ ? heap_->base(pe) : nullptr; }
  void note_written(int pe, int64_t offset, int64_t bytes) override {
    heap_->mark_written(pe, offset, offset + bytes);
  }

  void put(int, int pe, int32_t op, const void *src, pto_dtype src_dt, int64_t dst_offset,
           pto_dtype dst_dt, const pto_block &b) override {
    const auto *s = static_cast<const std::byte *>(src);
    mark_block(pe, dst_offset, b, b.dst_stride, detail::element_size(dst_dt));
    if (op == PTO_ATOMIC_SET && heap_->is_shared()) {
      detail::copy_block(b, s, src_dt, heap_->base(pe) + dst_offset, dst_dt);
      std::atomic_thread_fence(std::memory_order_release);
      counted();
      return;
    }
    // Packed in the destination dtype; a half-precision ADD adds fp32 values (rounded once).
    const bool half_add = op == PTO_ATOMIC_ADD && is_half(dst_dt);
    const pto_dtype packed_dt = half_add ? pto_dtype(DT_FP32) : dst_dt;
    std::vector<std::byte> packed(size_t(elements(b) * detail::element_size(packed_dt)));
    pto_block pb = b;
    packed_strides(b, pb.dst_stride);
    detail::copy_block(pb, s, src_dt, packed.data(), packed_dt);
    const Layout l = layout_of(b, b.dst_stride);
    if (op == PTO_ATOMIC_ADD)
      heap_->add(pe, dst_offset, l, mpi_type(dst_dt), dst_dt, packed.data());
    else
      heap_->put(pe, dst_offset, l, mpi_type(dst_dt), packed.data());
    counted();
  }

  void get(int, int pe, int64_t src_offset, pto_dtype src_dt, void *dst, pto_dtype dst_dt,
           const pto_block &b) override {
    auto *d = static_cast<std::byte *>(dst);
    if (heap_->is_shared()) {
      std::atomic_thread_fence(std::memory_order_acquire);
      detail::copy_block(b, heap_->base(pe) + src_offset, src_dt, d, dst_dt);
      counted();
      return;
    }
    std::vector<std::byte> packed(size_t(elements(b) * detail::element_size(src_dt)));
    heap_->get(pe, src_offset, layout_of(b, b.src_stride), mpi_type(src_dt), packed.data());
    pto_block pb = b;
    packed_strides(b, pb.src_stride);
    detail::copy_block(pb, packed.data(), src_dt, d, dst_dt);
    counted();
  }

  void clear(int me, int64_t offset, int64_t esize, const pto_block &b) override {
    detail::zero_block(b, heap_->base(me) + offset, esize);
    heap_->clear_local(0, 0); // MPI_Win_sync: the stores are visible to later RMA
    counted();
  }

  void signal(int, int pe, int64_t slot_offset, int32_t op, int32_t value) override {
    heap_->mark_written(pe, slot_offset, slot_offset + 4);
    heap_->signal(pe, slot_offset, op, value);
    counted();
  }
  int32_t load_slot(int, int64_t slot_offset) override { return heap_->load_signal(slot_offset); }
  WaitResult wait(int me, transport::WaitCondition &cond, WaitPolicy &policy) override;
  void atomic(int, int pe, int64_t offset, transport::Amo op, pto_dtype dt, const void *operand,
              const void *compare, void *old) override {
    if (op != transport::Amo::Fetch)
      heap_->mark_written(pe, offset, offset + detail::element_size(dt));
    heap_->atomic(pe, offset, op, dt, operand, compare, old);
    counted();
  }

  // Signals and AMOs complete remotely before they return, puts and ADDs at the next signal,
  // get or AMO to their PE: fence and quiet complete them all and make this PE's direct stores
  // visible (MPI_Win_flush_all + MPI_Win_sync).
  void fence(int) override { heap_->quiet(); }
  void quiet(int) override { heap_->quiet(); }

  WaitResult barrier(int me, WaitPolicy &policy) override;
  WaitResult allgather(int me, const void *mine, size_t bytes, void *all,
                       WaitPolicy &policy) override;
  WaitResult allgather_owned(int me, const void *mine, size_t bytes, void *all,
                             const std::shared_ptr<void> &owner, WaitPolicy &policy) override;
  std::optional<WaitResult> alltoall(int me, const void *send, size_t block, void *recv,
                                     const std::shared_ptr<void> &owner,
                                     WaitPolicy &policy) override;
  std::optional<WaitResult> native_allreduce(int me, void *data, int64_t count, pto_dtype dt,
                                             int32_t reduction, const std::shared_ptr<void> &owner,
                                             WaitPolicy &policy) override;
  std::vector<std::byte *> shared_scratch(int me, size_t bytes) override;
  void reset() override {}

  const std::string &name() const { return name_; }
  const std::vector<int> &members() const { return world_pe_; }
  /// The group of every world PE in order (its communicator is made for every run).
  bool spans_world() const;
  /// Makes the group's communicator if it is missing or older than the transport's generation
  /// (collective over the members: begin_run, while every rank is there).
  void renew();
  /// renew() would make a communicator.
  bool stale() const;

private:
  /// Counts a completed operation for the other ranks' deadlock detectors.
  void counted();
  // Marks the bytes a put of `b` at `offset` of `pe`'s heap writes (map_heap zeroes them).
  void mark_block(int pe, int64_t offset, const pto_block &b, const int64_t *stride,
                  int64_t esize) {
    __int128 lo = 0, hi = 0;
    detail::block_span(b, stride, esize, lo, hi);
    heap_->mark_written(pe, offset + int64_t(lo), offset + int64_t(hi) + 1);
  }
  MPI_Comm comm();
  /// Counts this PE's arrival at the group's next collective (in its arrival word, which the
  /// other members read) and returns the count.
  int32_t arrive();
  WaitResult complete(MPI_Request &req, WaitPolicy &policy, int32_t arrival);
  /// complete(); on a verdict other than Done retains `owner` (MPI may still use its memory).
  WaitResult finish(MPI_Request &req, WaitPolicy &policy, int32_t arrival,
                    const std::shared_ptr<void> &owner);
  /// The members that have not arrived at this PE's collective number `arrival` (refreshed at
  /// most every few ms, after the first few ms of a wait): for messages and for PeerGone.
  std::span<const int> missing(int32_t arrival);

  MpiTransport &t_;
  std::string name_;
  std::vector<int> world_pe_;
  CommSet c_; ///< made in begin_run
  int me_ = -1;
  std::vector<int> missing_;
  std::chrono::steady_clock::time_point wait_start_{}, next_refresh_{};
  std::shared_ptr<MpiHeap> heap_;
  int64_t bytes_ = 0;
  /// allgather's buffers (see there); a group's PE calls it from one thread at a time.
  std::shared_ptr<std::vector<std::byte>> stage_send_, stage_recv_;
  /// shared_scratch()'s window; no_scratch_: the osc component gave no shared window.
  std::shared_ptr<MpiHeap> scratch_;
  bool no_scratch_ = false;
};

class MpiTransport final : public transport::Transport {
public:
  MpiTransport(Session &s, transport::Host &host) : s_(s), host_(host) {}

  const char *name() const override { return "mpi"; }
  std::unique_ptr<transport::Group> make_group(const std::string &name,
                                               const std::vector<int> &world_pe) override {
    auto g = std::make_unique<MpiGroup>(*this, name, world_pe);
    groups_.push_back(g.get()); // alive as long as the transport (the registry keeps them)
    return g;
  }
  void abort(int world_pe, const std::string &what) override {
    seen_abort_.store(true);
    s_.abort_all(world_pe >= 0 ? world_pe : s_.rank(), what);
  }
  void wake_all() override {} // nobody sleeps: every wait polls its policy
  void pe_returned(int) override { s_.publish_returned(s_.runs()); }
  bool returned_elsewhere(int world_pe) override {
    return world_pe >= 0 && size_t(world_pe) < returned_.size() && returned_[size_t(world_pe)];
  }
  /// Reads whether world rank `r`'s PE returned from its function in this run (for
  /// returned_elsewhere).
  void refresh_returned(int r) {
    if (returned_.size() != size_t(s_.size()))
      returned_.assign(size_t(s_.size()), 0);
    returned_[size_t(r)] = s_.returned_run(r) >= s_.runs() ? 1 : 0;
  }
  /// The communicator made in begin_run for a group of every world PE that did not exist yet
  /// (the world group is registered at its first use, inside a run); empty once taken.
  CommSet take_spare() { return std::exchange(spare_, CommSet{}); }
  void progress() override { poll(); }
  uint64_t remote_progress() override { return s_.others_progress(); }
  std::vector<std::string> gather_to_first(const std::string &mine, int64_t timeout_ms) override {
    return s_.gather_to_root(mine, timeout_ms, "World::write_trace");
  }
  void reset() override {} // begin_run: the ranks agree on the previous run's fate first
  void begin_run(int64_t timeout_ms) override;
  /// Bumped when a failed run is forgotten: groups then make new communicators.
  int generation() const { return generation_; }

  Session &session() { return s_; }

  /// Drives MPI's progress; on an abort from another rank tells the host (once per run).
  void poll() {
    if (!s_.poll())
      return;
    if (seen_abort_.exchange(true))
      return;
    const int failed = s_.aborted_by();
    if (failed != s_.rank())
      host_.remote_failed(failed, s_.abort_message());
  }

  /// Polls `ready`, MPI and `policy` until `ready` holds or the policy gives up; `missing()`
  /// gives the policy the group-local PEs not arrived (empty for signal waits).
  template <class Ready, class Missing>
  WaitResult poll_until(Ready &&ready, WaitPolicy &policy, Missing &&missing) {
    for (int64_t spins = 0;; ++spins) {
      if (ready()) {
        s_.count_progress();
        return WaitResult::Done;
      }
      if ((spins & 15) == 0) {
        poll();
        int culprit = -1;
        if (const WaitResult r = policy.check(missing(), culprit); r != WaitResult::Done)
          return ready() ? WaitResult::Done : r;
      }
      relax(spins, s_.spin_polls());
    }
  }
  template <class Ready> WaitResult poll_until(Ready &&ready, WaitPolicy &policy) {
    return poll_until(ready, policy, [] { return std::span<const int>(); });
  }

private:
  Session &s_;
  transport::Host &host_;
  std::atomic<bool> seen_abort_{false};
  int generation_ = 0;
  std::vector<MpiGroup *> groups_; ///< in creation order
  CommSet spare_;                  ///< see take_spare
  std::vector<char> returned_;     ///< by world rank: its PE returned in this run
};

uint64_t text_hash(const std::string &t) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : t)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

// Every rank is between runs here, so every abort of the previous run has landed (abort_all
// completes its RMA before the failing PE's run returns) and none of the next run can have been
// sent. One MPI_Iallreduce (on the session's run communicator, polled) tells the ranks whether
// any saw a failure and whether they define the same groups (World::create_group: a hash of
// every name and member list, compared by its maximum and minimum). After a failure each clears
// its abort word, they meet again (so that nobody starts the run before every word is clear),
// and the groups get new communicators: the old ones may hold a barrier or allgather that a
// released PE left pending. Communicators are made here, while every rank is present, never
// at a collective inside the run (MPI_Comm_create_group blocks until every member calls it).
void MpiTransport::begin_run(int64_t timeout_ms) {
  constexpr const char *kRunOp = "World::run";
  std::string defs;
  for (const MpiGroup *g : groups_)
    if (!g->spans_world() || g->name() != "world")
      defs += fmt::format("'{}' with PEs [{}]; ", g->name(), fmt::join(g->members(), ", "));
  const auto h = int64_t(text_hash(defs) >> 2); // non-negative, so that -h is too
  // Shared, not on the stack: an abandoned request may complete into it later (retain).
  const auto vp = std::make_shared<std::array<int64_t, 3>>(
      std::array<int64_t, 3>{seen_abort_.load() || s_.aborted_by() != -1 ? 1 : 0, h, -h});
  const std::array<int64_t, 3> &v = *vp;
  const MPI_Comm rc = s_.run_comm();
  s_.collective(rc, kRunOp, "World::run", timeout_ms,
                [&](MPI_Request *r) {
                  return MPI_Iallreduce(MPI_IN_PLACE, vp->data(), 3, MPI_INT64_T, MPI_MAX, rc, r);
                },
                false, {vp});
  if (v[1] != -v[2]) {
    if (!defs.empty())
      defs.resize(defs.size() - 2);
    const std::string d = s_.differences(rc, defs, timeout_ms, kRunOp);
    throw DistributedError("<runtime>", kRunOp,
                           fmt::format("the MPI ranks define different groups (World::create_group:"
                                       " {}); every rank must create the same groups, with the "
                                       "same PEs in the same order",
                                       d.empty() ? "their definitions hash differently" : d));
  }
  if (v[0]) {
    s_.clear_abort();
    seen_abort_.store(false);
    ++generation_;
    s_.collective(rc, kRunOp, "World::run (recovering from the failed previous run)", timeout_ms,
                  [&](MPI_Request *r) { return MPI_Ibarrier(rc, r); });
  }
  // The group of every PE first (made whether or not this rank registered it yet), then the
  // others in creation order: the same sequence on every rank. Making them blocks in MPI until
  // every member calls it, so the ranks first meet once more (polled): a rank that abandoned
  // this begin_run's allreduce (its timeout; the late ones then completed it with its
  // contribution) never comes, and the others time out here instead of blocking.
  MpiGroup *world = nullptr;
  for (MpiGroup *g : groups_)
    if (g->spans_world() && g->name() == "world")
      world = g;
  bool stale = !world && spare_.generation != generation_;
  for (const MpiGroup *g : groups_)
    stale = stale || g->stale();
  if (stale)
    s_.collective(rc, kRunOp, "World::run", timeout_ms,
                  [&](MPI_Request *r) { return MPI_Ibarrier(rc, r); });
  if (world)
    world->renew();
  else if (spare_.generation != generation_) {
    std::vector<int> all(size_t(s_.size()));
    for (int r = 0; r < s_.size(); ++r)
      all[size_t(r)] = r;
    spare_.comm = s_.group_comm(all, /*fresh=*/true);
    spare_.arrivals = s_.map_heap(spare_.comm, 4);
    spare_.entered = 0;
    spare_.generation = generation_;
  }
  for (MpiGroup *g : groups_)
    if (g != world)
      g->renew();
  returned_.assign(size_t(s_.size()), 0);
  s_.count_run();
}

void MpiGroup::counted() { t_.session().count_progress(); }

bool MpiGroup::spans_world() const {
  if (int(world_pe_.size()) != t_.session().size())
    return false;
  for (size_t i = 0; i < world_pe_.size(); ++i)
    if (world_pe_[i] != int(i))
      return false;
  return true;
}

bool MpiGroup::stale() const {
  return c_.generation != t_.generation() &&
         std::find(world_pe_.begin(), world_pe_.end(), t_.session().rank()) != world_pe_.end();
}

void MpiGroup::renew() {
  if (c_.generation == t_.generation())
    return;
  me_ = int(std::find(world_pe_.begin(), world_pe_.end(), t_.session().rank()) - world_pe_.begin());
  if (me_ >= int(world_pe_.size()))
    return; // not a member: no communicator here
  // Never another World's (or an earlier generation's) communicator: a failed run may have left
  // a collective pending on it.
  c_.comm = t_.session().group_comm(world_pe_, /*fresh=*/true);
  c_.arrivals = t_.session().map_heap(c_.comm, 4); // this member's arrival count
  c_.entered = 0;
  c_.generation = t_.generation();
}

MPI_Comm MpiGroup::comm() {
  if (c_.generation != t_.generation()) {
    // The world group, registered inside this run: begin_run made its communicator.
    CommSet spare = t_.take_spare();
    if (spare.generation == t_.generation() && spans_world()) {
      c_ = std::move(spare);
      me_ = t_.session().rank();
    } else {
      renew(); // not expected: blocks until every member gets here
    }
  }
  return c_.comm;
}

int32_t MpiGroup::arrive() {
  comm();
  c_.arrivals->add_signal(0, 1);
  wait_start_ = std::chrono::steady_clock::now();
  next_refresh_ = wait_start_ + std::chrono::milliseconds(5);
  missing_.clear();
  return ++c_.entered;
}

std::span<const int> MpiGroup::missing(int32_t arrival) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_refresh_)
    return missing_;
  next_refresh_ = now + std::chrono::milliseconds(20);
  // Who returned first, then who arrived: a PE counts its arrival before it can return, so a
  // PE seen returned whose arrival is not seen never arrived.
  for (size_t p = 0; p < world_pe_.size(); ++p)
    if (int(p) != me_)
      t_.refresh_returned(world_pe_[p]);
  missing_.clear();
  for (int p = 0; p < int(world_pe_.size()); ++p) {
    if (p == me_)
      continue;
    int32_t seen = 0;
    c_.arrivals->atomic(p, 0, transport::Amo::Fetch, pto_dtype(DT_INT32), nullptr, nullptr, &seen);
    if (seen < arrival)
      missing_.push_back(p);
  }
  return missing_;
}

void MpiGroup::map_heap_zeroing(int, int64_t bytes, int64_t zero_bytes) {
  if (!heap_ || heap_->size_bytes() < bytes) {
    heap_.reset();                                // collective free, same order on every member
    heap_ = t_.session().map_heap(comm(), bytes); // zeroed; ends in MPI_Barrier
  } else {
    // Only what was written since, and only below zero_bytes: the program writes the rest
    // before it reads it (ir::Group::zero_bytes).
    heap_->zero_written(zero_bytes);
  }
  bytes_ = bytes;
}

WaitResult MpiGroup::wait(int, transport::WaitCondition &cond, WaitPolicy &policy) {
  return t_.poll_until([&] { return cond.ready(); }, policy);
}

WaitResult MpiGroup::complete(MPI_Request &req, WaitPolicy &policy, int32_t arrival) {
  // On a verdict other than Done the request stays pending: the job is over (an abort ends it,
  // and a stall is reported as a DeadlockError on every rank); begin_run then renews comm.
  return t_.poll_until(
      [&] {
        int flag = 0;
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      policy, [&] { return missing(arrival); });
}

WaitResult MpiGroup::barrier(int, WaitPolicy &policy) {
  if (heap_)
    heap_->quiet();
  const int32_t arrival = arrive();
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm(), &req) != MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Ibarrier of group '{}' failed", name_));
  return complete(req, policy, arrival);
}

WaitResult MpiGroup::allgather(int, const void *mine, size_t bytes, void *all, WaitPolicy &policy) {
  if (bytes > size_t(INT_MAX))
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("an allgather of {} bytes per PE exceeds an MPI count", bytes));
  const int32_t arrival = arrive();
  // Through buffers of the group's own: on a verdict other than Done the request stays pending
  // and MPI may still write into them at a later call (the ranks present go on with a ring
  // without the missing one), after the caller's buffers are gone; they are then retained for
  // the process's life and the next allgather gets new ones.
  const size_t n = size_t(members().size());
  if (!stage_send_ || stage_send_->size() < bytes)
    stage_send_ = std::make_shared<std::vector<std::byte>>(bytes);
  if (!stage_recv_ || stage_recv_->size() < bytes * n)
    stage_recv_ = std::make_shared<std::vector<std::byte>>(bytes * n);
  std::memcpy(stage_send_->data(), mine, bytes);
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Iallgather(stage_send_->data(), int(bytes), MPI_BYTE, stage_recv_->data(), int(bytes),
                     MPI_BYTE, comm(), &req) != MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Iallgather of group '{}' failed", name_));
  const WaitResult r = complete(req, policy, arrival);
  if (r == WaitResult::Done) {
    std::memcpy(all, stage_recv_->data(), bytes * n);
  } else {
    t_.session().retain({std::move(stage_send_), std::move(stage_recv_)});
    stage_send_.reset();
    stage_recv_.reset();
  }
  return r;
}

WaitResult MpiGroup::finish(MPI_Request &req, WaitPolicy &policy, int32_t arrival,
                            const std::shared_ptr<void> &owner) {
  const WaitResult r = complete(req, policy, arrival);
  if (r != WaitResult::Done)
    t_.session().retain({owner}); // the request stays pending: MPI may still use the buffers
  return r;
}

WaitResult MpiGroup::allgather_owned(int, const void *mine, size_t bytes, void *all,
                                     const std::shared_ptr<void> &owner, WaitPolicy &policy) {
  if (bytes > size_t(INT_MAX))
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("an allgather of {} bytes per PE exceeds an MPI count", bytes));
  const int32_t arrival = arrive();
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Iallgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, comm(), &req) !=
      MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Iallgather of group '{}' failed", name_));
  return finish(req, policy, arrival, owner);
}

std::optional<WaitResult> MpiGroup::alltoall(int, const void *send, size_t block, void *recv,
                                             const std::shared_ptr<void> &owner,
                                             WaitPolicy &policy) {
  if (block > size_t(INT_MAX))
    return std::nullopt; // the same on every member: they all take the caller's other path
  const int32_t arrival = arrive();
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Ialltoall(send, int(block), MPI_BYTE, recv, int(block), MPI_BYTE, comm(), &req) !=
      MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Ialltoall of group '{}' failed", name_));
  return finish(req, policy, arrival, owner);
}

// Integer SUM and PROD in the unsigned type of the same width: two's complement wraparound,
// defined behaviour in MPI's C loops too, the bits of the core's own fold.
std::optional<WaitResult> MpiGroup::native_allreduce(int, void *data, int64_t count, pto_dtype dt,
                                                     int32_t reduction,
                                                     const std::shared_ptr<void> &owner,
                                                     WaitPolicy &policy) {
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
  if (reduction < 0 || reduction > 3 || count > INT_MAX)
    return std::nullopt;
  const bool wrap = reduction == 0 || reduction == 3;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  switch (dtype_of(dt)) {
  // Not 8- and 16-bit integers: Open MPI 4.1.4 here gave every element 0xff / 0xffff for an
  // MPI_SUM of MPI_UINT8_T / MPI_UINT16_T (tests/mpi/mpi_allreduce_test.cpp); they take the
  // caller's reduce-scatter.
  case DT_INT32:
    type = wrap ? MPI_UINT32_T : MPI_INT32_T;
    break;
  case DT_INT64:
    type = wrap ? MPI_UINT64_T : MPI_INT64_T;
    break;
  case DT_FP32:
    type = MPI_FLOAT;
    break;
  case DT_DOUBLE:
    type = MPI_DOUBLE;
    break;
  default:
    return std::nullopt; // halves: MPI has no fp16/bf16 arithmetic
  }
  const int32_t arrival = arrive();
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Iallreduce(MPI_IN_PLACE, data, int(count), type, ops[reduction], comm(), &req) !=
      MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Iallreduce of group '{}' failed", name_));
  return finish(req, policy, arrival, owner);
}

// A window of its own (the heap's is remapped at every kernel entry), made at the first call
// and when a call needs more; every member asks for the same size, so all make it together.
std::vector<std::byte *> MpiGroup::shared_scratch(int, size_t bytes) {
  if (!t_.session().shared() || no_scratch_ || bytes > size_t(INT64_MAX / 4))
    return {};
  if (!scratch_ || size_t(scratch_->size_bytes()) < bytes) {
    scratch_.reset();                                         // collective free
    scratch_ = t_.session().map_heap(comm(), int64_t(bytes)); // ends in MPI_Barrier
    if (!scratch_->is_shared()) { // an osc component without shared windows: alike everywhere
      scratch_.reset();
      no_scratch_ = true;
      return {};
    }
  }
  std::vector<std::byte *> bases(world_pe_.size());
  for (size_t p = 0; p < bases.size(); ++p)
    bases[p] = scratch_->base(int(p));
  return bases;
}

} // namespace

std::unique_ptr<transport::Transport> make_transport(Session &s, transport::Host &host) {
  return std::make_unique<MpiTransport>(s, host);
}

} // namespace pto::runtime::mpi
