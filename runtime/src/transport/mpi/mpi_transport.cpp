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

#include <atomic>
#include <climits>
#include <fmt/format.h>
#include <sched.h>
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
  void reset() override {}

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
  WaitResult complete(MPI_Request &req, WaitPolicy &policy);

  MpiTransport &t_;
  std::string name_;
  std::vector<int> world_pe_;
  MPI_Comm comm_ = MPI_COMM_NULL; ///< made at the group's first collective call
  int comm_generation_ = 0;       ///< MpiTransport::generation() when comm_ was made
  std::shared_ptr<MpiHeap> heap_;
  int64_t bytes_ = 0;
};

class MpiTransport final : public transport::Transport {
public:
  MpiTransport(Session &s, transport::Host &host) : s_(s), host_(host) {}

  const char *name() const override { return "mpi"; }
  std::unique_ptr<transport::Group> make_group(const std::string &name,
                                               const std::vector<int> &world_pe) override {
    return std::make_unique<MpiGroup>(*this, name, world_pe);
  }
  void abort(int world_pe, const std::string &what) override {
    seen_abort_.store(true);
    s_.abort_all(world_pe >= 0 ? world_pe : s_.rank(), what);
  }
  void wake_all() override {} // nobody sleeps: every wait polls its policy
  void progress() override { poll(); }
  uint64_t remote_progress() override { return s_.others_progress(); }
  std::vector<std::string> gather_to_first(const std::string &mine) override {
    return s_.gather_to_root(mine);
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

  /// Polls `ready`, MPI and `policy` until `ready` holds or the policy gives up.
  template <class Ready> WaitResult poll_until(Ready &&ready, WaitPolicy &policy) {
    for (int64_t spins = 0;; ++spins) {
      if (ready()) {
        s_.count_progress();
        return WaitResult::Done;
      }
      if ((spins & 15) == 0) {
        poll();
        int culprit = -1;
        if (const WaitResult r = policy.check({}, culprit); r != WaitResult::Done)
          return ready() ? WaitResult::Done : r;
      }
      relax(spins, s_.spin_polls());
    }
  }

private:
  Session &s_;
  transport::Host &host_;
  std::atomic<bool> seen_abort_{false};
  int generation_ = 0;
};

// Every rank is between runs here, so every abort of the previous run has landed (abort_all
// completes its RMA before the failing PE's run returns) and none of the next run can have been
// sent. The ranks agree whether any saw one; if so each clears its abort word, they meet again
// (so that nobody starts the run before every word is clear), and the groups get new
// communicators: the old ones may hold a barrier or allgather that a released PE left pending.
void MpiTransport::begin_run(int64_t timeout_ms) {
  int64_t failed = seen_abort_.load() || s_.aborted_by() != -1 ? 1 : 0;
  auto fail = [&](const char *when) {
    throw DistributedError("<runtime>", "World::run",
                           fmt::format("the MPI ranks did not all start this run within {} ms "
                                       "({}); every rank must call World::run",
                                       timeout_ms, when));
  };
  if (s_.allreduce_minmax(s_.world(), &failed, 1, /*max=*/true, timeout_ms,
                          /*stop_on_abort=*/false) != WaitOutcome::Done)
    fail("agreeing on the previous run");
  if (!failed)
    return;
  s_.clear_abort();
  seen_abort_.store(false);
  ++generation_;
  if (s_.barrier(s_.world(), timeout_ms, /*stop_on_abort=*/false) != WaitOutcome::Done)
    fail("recovering from the failed previous run");
}

void MpiGroup::counted() { t_.session().count_progress(); }

MPI_Comm MpiGroup::comm() {
  if (comm_ == MPI_COMM_NULL || comm_generation_ != t_.generation()) {
    // Never another World's (or an earlier generation's) communicator: a failed run may have
    // left a collective pending on it.
    comm_ = t_.session().group_comm(world_pe_, /*fresh=*/true);
    comm_generation_ = t_.generation();
  }
  return comm_;
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

WaitResult MpiGroup::complete(MPI_Request &req, WaitPolicy &policy) {
  // On a verdict other than Done the request stays pending: the job is over (an abort ends it,
  // and a stall is reported as a DeadlockError on every rank).
  return t_.poll_until(
      [&] {
        int flag = 0;
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      policy);
}

WaitResult MpiGroup::barrier(int, WaitPolicy &policy) {
  if (heap_)
    heap_->quiet();
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm(), &req) != MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Ibarrier of group '{}' failed", name_));
  return complete(req, policy);
}

WaitResult MpiGroup::allgather(int, const void *mine, size_t bytes, void *all, WaitPolicy &policy) {
  if (bytes > size_t(INT_MAX))
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("an allgather of {} bytes per PE exceeds an MPI count", bytes));
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Iallgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, comm(), &req) !=
      MPI_SUCCESS)
    throw RuntimeError("<runtime>", "MPI backend",
                       fmt::format("MPI_Iallgather of group '{}' failed", name_));
  return complete(req, policy);
}

} // namespace

std::unique_ptr<transport::Transport> make_transport(Session &s, transport::Host &host) {
  return std::make_unique<MpiTransport>(s, host);
}

} // namespace pto::runtime::mpi
