// shm_transport.cpp - The shared-memory transport (transport.h): every PE is a thread of this
// process, so a put is loads and stores straight into the peer's heap, a signal an atomic store
// or add, and a wait polls an acquire load for a few microseconds (spin.h) before it sleeps.
//
// Sleeping: each PE has a doorbell word. A waiter that is about to sleep raises its `sleeping`
// flag, issues a seq_cst fence, re-checks its condition and sleeps in a futex on the doorbell; a
// signal, AMO or barrier release stores, issues a seq_cst fence, and rings the doorbell of a PE
// whose flag is up (store-fence-load on both sides: Dekker, so no wake-up is lost). One word per
// PE, whatever it waits on, so a wait on several slots (wait_until_any) sleeps as cheaply.
#include "pto/dtype.h"
#include "pto/runtime/signal.h"
#include "pto/runtime/symmetric_heap.h"

#include "block_copy.h"
#include "spin.h"
#include "transport/memory_amo.h"
#include "transport/transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <vector>

namespace pto::runtime::transport {

namespace {

using detail::block_span;
using detail::element_size;

struct alignas(64) Sleeper {
  std::atomic<int32_t> doorbell{0};
  std::atomic<int32_t> sleeping{0};
  std::atomic<int64_t> rung_ns{0}; ///< when it was last rung (detail::now_ns)
  detail::AdaptiveSpin spin;       ///< its PE's own, adapted per wait
};

class ShmTransport final : public Transport {
public:
  explicit ShmTransport(int n_pes) : sleepers_(new Sleeper[size_t(n_pes)]), n_pes_(n_pes) {
    for (int p = 0; p < n_pes; ++p)
      sleepers_[size_t(p)].spin.set_cap(detail::spin_budget(n_pes));
  }

  const char *name() const override { return "shm"; }
  std::unique_ptr<Group> make_group(const std::string &name,
                                    const std::vector<int> &world_pe) override;
  void abort(int, const std::string &) override { wake_all(); }
  void wake_all() override {
    // Bump every doorbell, even of PEs not (yet) asleep: a PE reads its doorbell before it checks
    // its policy, so it either sees what changed or sleeps on a stale doorbell and returns at once.
    for (int p = 0; p < n_pes_; ++p)
      sleepers_[size_t(p)].doorbell.fetch_add(1, std::memory_order_acq_rel);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (int p = 0; p < n_pes_; ++p)
      if (sleepers_[size_t(p)].sleeping.load(std::memory_order_relaxed))
        futex_wake_all(reinterpret_cast<int32_t *>(&sleepers_[size_t(p)].doorbell));
  }
  void progress() override {}
  void reset() override {}

  /// Non-zero while PE `world_pe` may sleep in block().
  const std::atomic<int32_t> *sleep_flag(int world_pe) const {
    return &sleepers_[size_t(world_pe)].sleeping;
  }

  /// After a store the PE `world_pe` may wait for, and a seq_cst fence: wakes it if it sleeps.
  void ring(int world_pe) {
    Sleeper &s = sleepers_[size_t(world_pe)];
    if (s.sleeping.load(std::memory_order_relaxed)) {
      s.rung_ns.store(detail::now_ns(), std::memory_order_relaxed);
      s.doorbell.fetch_add(1, std::memory_order_release);
      futex_wake_all(reinterpret_cast<int32_t *>(&s.doorbell));
    }
  }

  /// Polls `ready`, then sleeps on the doorbell of `world_pe` (the caller) until it holds or the
  /// policy gives up. `missing()` lists the members a barrier still waits for.
  template <class Ready, class Missing>
  WaitResult block(int world_pe, Ready &&ready, WaitPolicy &policy, Missing &&missing) {
    if (ready())
      return WaitResult::Done;
    Sleeper &s = sleepers_[size_t(world_pe)];
    if (detail::spin_until(ready, s.spin.budget()))
      return WaitResult::Done;
    for (bool first = true;; first = false) {
      if (!first && ready())
        return WaitResult::Done;
      // The doorbell before the policy: a wake_all after this read changes it (the futex wait
      // then returns at once); one before it is seen by the policy check.
      const int32_t bell = s.doorbell.load(std::memory_order_acquire);
      int culprit = -1;
      const std::vector<int> m = missing();
      // A verdict against a stale `m` (a member that arrived, passed and returned since) is
      // void once the condition holds: what the policy saw happened after the release.
      if (const WaitResult r = policy.check(m, culprit); r != WaitResult::Done)
        return ready() ? WaitResult::Done : r;
      s.sleeping.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!ready()) {
        const auto ns = policy.max_sleep().count();
        const int64_t slept = detail::now_ns();
        futex_wait(reinterpret_cast<int32_t *>(&s.doorbell), bell,
                   std::max<int64_t>(1, (ns + 999999) / 1000000));
        const int64_t rung = s.rung_ns.load(std::memory_order_relaxed);
        if (rung > slept)
          s.spin.woke(detail::now_ns() - rung);
      }
      s.sleeping.store(0, std::memory_order_relaxed);
    }
  }

private:
  std::unique_ptr<Sleeper[]> sleepers_;
  int n_pes_;
};

class ShmGroup final : public Group {
public:
  ShmGroup(ShmTransport &t, std::vector<int> world_pe)
      : t_(t), world_pe_(std::move(world_pe)), n_(int(world_pe_.size())), heap_(n_),
        arrived_(new std::atomic<int32_t>[size_t(n_)]), gather_parity_(size_t(n_), 0) {
    for (auto &g : gather_)
      g.resize(size_t(n_));
  }

  void map_heap(int me, int64_t bytes) override { map_heap_zeroing(me, bytes, bytes); }
  void map_heap_zeroing(int me, int64_t bytes, int64_t zero_bytes) override {
    heap_.prepare(me, bytes, zero_bytes);
    heap_bytes_.store(bytes, std::memory_order_relaxed);
  }
  int64_t heap_bytes() const override { return heap_bytes_.load(std::memory_order_relaxed); }
  std::byte *direct_base(int pe) override { return heap_.base(pe); }
  void note_written(int pe, int64_t offset, int64_t bytes) override {
    heap_.mark_written(pe, offset, bytes);
  }
  const std::atomic<int32_t> *sleep_flag(int pe) override {
    return t_.sleep_flag(world_pe_[size_t(pe)]);
  }

  void put(int, int pe, int32_t op, const void *src, pto_dtype src_dt, int64_t dst_offset,
           pto_dtype dst_dt, const pto_block &b) override {
    std::byte *dst = heap_.base(pe) + dst_offset;
    const auto *s = static_cast<const std::byte *>(src);
    if (op == PTO_ATOMIC_ADD)
      detail::add_block(b, s, src_dt, dst, dst_dt);
    else
      detail::copy_block(b, s, src_dt, dst, dst_dt);
    __int128 lo = 0, hi = 0;
    block_span(b, b.dst_stride, element_size(dst_dt), lo, hi);
    heap_.mark_written(pe, dst_offset + int64_t(lo), int64_t(hi - lo) + 1);
    t_.ring(world_pe_[size_t(pe)]); // no fence: a wait on data re-checks at least every slice
  }

  void get(int, int pe, int64_t src_offset, pto_dtype src_dt, void *dst, pto_dtype dst_dt,
           const pto_block &b) override {
    detail::copy_block(b, heap_.base(pe) + src_offset, src_dt, static_cast<std::byte *>(dst),
                       dst_dt);
  }

  void clear(int me, int64_t offset, int64_t esize, const pto_block &b) override {
    detail::zero_block(b, heap_.base(me) + offset, esize);
  }

  void signal(int, int pe, int64_t slot_offset, int32_t op, int32_t value) override {
    std::atomic_ref<int32_t> a(slot(pe, slot_offset));
    heap_.mark_written(pe, slot_offset, 4);
    if (op == PTO_ATOMIC_SET)
      a.store(value, std::memory_order_release);
    else
      a.fetch_add(value, std::memory_order_acq_rel);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    t_.ring(world_pe_[size_t(pe)]);
  }

  int32_t load_slot(int me, int64_t slot_offset) override {
    return std::atomic_ref<int32_t>(slot(me, slot_offset)).load(std::memory_order_acquire);
  }

  WaitResult wait(int me, WaitCondition &cond, WaitPolicy &policy) override {
    return t_.block(
        world_pe_[size_t(me)], [&] { return cond.ready(); }, policy,
        [] { return std::vector<int>(); });
  }

  void atomic(int, int pe, int64_t offset, Amo op, pto_dtype dt, const void *operand,
              const void *compare, void *old) override {
    std::byte *w = heap_.base(pe) + offset;
    heap_.mark_written(pe, offset, element_size(dt));
    memory_amo(w, op, dt, operand, compare, old); // dt checked by the caller
    std::atomic_thread_fence(std::memory_order_seq_cst);
    t_.ring(world_pe_[size_t(pe)]);
  }

  void fence(int) override { std::atomic_thread_fence(std::memory_order_seq_cst); }
  void quiet(int) override { std::atomic_thread_fence(std::memory_order_seq_cst); }

  WaitResult barrier(int me, WaitPolicy &policy) override {
    const int32_t g = gen_.load(std::memory_order_acquire);
    arrived_[size_t(me)].store(g + 1, std::memory_order_relaxed);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      count_.store(0, std::memory_order_relaxed);
      gen_.store(g + 1, std::memory_order_release);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      for (int p = 0; p < n_; ++p)
        if (p != me)
          t_.ring(world_pe_[size_t(p)]);
      return WaitResult::Done;
    }
    return t_.block(
        world_pe_[size_t(me)], [&] { return gen_.load(std::memory_order_acquire) != g; }, policy,
        [&] {
          std::vector<int> m;
          for (int p = 0; p < n_; ++p)
            if (arrived_[size_t(p)].load(std::memory_order_relaxed) != g + 1)
              m.push_back(p);
          return m;
        });
  }

  WaitResult allgather(int me, const void *mine, size_t bytes, void *all,
                       WaitPolicy &policy) override {
    // Double-buffered: a member writes buffer k % 2 of allgather k only after it passed the
    // barrier of allgather k - 1, which no member passes before it has read allgather k - 2.
    auto &slots = gather_[gather_parity_[size_t(me)]++ & 1];
    const auto *m = static_cast<const std::byte *>(mine);
    slots[size_t(me)].assign(m, m + bytes);
    if (const WaitResult r = barrier(me, policy); r != WaitResult::Done)
      return r;
    for (int p = 0; p < n_; ++p)
      std::memcpy(static_cast<std::byte *>(all) + size_t(p) * bytes, slots[size_t(p)].data(),
                  bytes);
    return WaitResult::Done;
  }

  void reset() override {
    count_.store(0);
    for (int p = 0; p < n_; ++p)
      arrived_[size_t(p)].store(0);
    std::fill(gather_parity_.begin(), gather_parity_.end(), 0);
  }

private:
  int32_t &slot(int pe, int64_t offset) {
    return *reinterpret_cast<int32_t *>(heap_.base(pe) + offset);
  }

  ShmTransport &t_;
  std::vector<int> world_pe_;
  int n_;
  SymmetricHeap heap_;
  std::atomic<int64_t> heap_bytes_{0};
  alignas(64) std::atomic<int32_t> count_{0};
  alignas(64) std::atomic<int32_t> gen_{0};
  std::unique_ptr<std::atomic<int32_t>[]> arrived_; ///< per member: generation arrived in + 1
  std::vector<std::vector<std::byte>> gather_[2];   ///< [parity][member]
  std::vector<int> gather_parity_;                  ///< per member: allgathers done
};

std::unique_ptr<Group> ShmTransport::make_group(const std::string &,
                                                const std::vector<int> &world_pe) {
  return std::make_unique<ShmGroup>(*this, world_pe);
}

} // namespace

std::unique_ptr<Transport> make_shm_transport(int n_pes) {
  return std::make_unique<ShmTransport>(n_pes);
}

} // namespace pto::runtime::transport
