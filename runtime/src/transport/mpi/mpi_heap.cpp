// mpi_heap.cpp - See mpi_session.h: a symmetric heap as an MPI window. Puts and gets of strided
// blocks are one MPI_Put / MPI_Get with a derived target datatype (or load/store on a shared
// window); ADD is MPI_Accumulate(MPI_SUM), or for fp16/bf16 (no MPI type) get + add + put under
// a per-PE lock word; signals are int32 accumulates (atomics on a shared window), each ordered
// after the earlier operations to that PE by MPI_Win_flush.
#include "pto/element.h"
#include "pto/error.h"

#include "mpi_session.h"
#include "transport/memory_amo.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <fmt/format.h>
#include <sched.h>
#include <type_traits>

namespace pto::runtime::mpi {

namespace {
constexpr const char *kOp = "MPI backend";

void check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return;
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RuntimeError("<runtime>", kOp, fmt::format("{} failed: {}", what, msg));
}

int type_size(MPI_Datatype t) {
  int s = 0;
  MPI_Type_size(t, &s);
  return s;
}

int as_count(int64_t v, const char *what) {
  if (v < 0 || v > INT_MAX)
    throw RuntimeError(
        "<runtime>", kOp,
        fmt::format("{} {} does not fit an MPI count (at most {})", what, v, INT_MAX));
  return int(v);
}

// The target datatype of `l` (committed; the caller frees it), or `type` itself when the layout
// is contiguous (then `count` is the element count).
struct TargetType {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 1;
  bool derived = false;
  TargetType(const Layout &l, MPI_Datatype elem) {
    const int64_t esize = type_size(elem);
    if (l.n == 1 && l.stride[0] == 1) {
      type = elem;
      count = as_count(l.extent[0], "block size");
      return;
    }
    MPI_Datatype t = elem;
    for (int d = l.n - 1; d >= 0; --d) {
      MPI_Datatype next = MPI_DATATYPE_NULL;
      const int e = as_count(l.extent[d], "block extent");
      if (d == l.n - 1 && l.stride[d] == 1)
        MPI_Type_contiguous(e, t, &next);
      else
        MPI_Type_create_hvector(e, 1, MPI_Aint(l.stride[d] * esize), t, &next);
      if (t != elem)
        MPI_Type_free(&t);
      t = next;
    }
    MPI_Type_commit(&t);
    type = t;
    derived = true;
  }
  ~TargetType() {
    if (derived)
      MPI_Type_free(&type);
  }
  TargetType(const TargetType &) = delete;
  TargetType &operator=(const TargetType &) = delete;
};

// Calls f(offset_elems, packed_index) for every element of `l` in packed order.
template <class F> void for_each_element(const Layout &l, F &&f) {
  int64_t idx[4] = {0, 0, 0, 0};
  const int64_t total = l.elements();
  for (int64_t k = 0; k < total; ++k) {
    int64_t off = 0;
    for (int d = 0; d < l.n; ++d)
      off += idx[d] * l.stride[d];
    f(off, k);
    for (int d = l.n - 1; d >= 0; --d) {
      if (++idx[d] < l.extent[d])
        break;
      idx[d] = 0;
    }
  }
}

uint16_t add_half(pto_dtype dt, uint16_t old, float v) {
  if (static_cast<DataType>(dt) == DT_FP16)
    return pto::fp32_to_fp16(pto::fp16_to_fp32(old) + v);
  return pto::fp32_to_bf16(pto::bf16_to_fp32(old) + v);
}
} // namespace

MpiHeap::MpiHeap(Session &s, MPI_Comm comm, int64_t bytes) : s_(s), comm_(comm) {
  MPI_Comm_rank(comm, &me_);
  MPI_Comm_size(comm, &n_);
  pending_.assign(size_t(n_), 0);
  bytes_ = std::max<int64_t>(bytes, 8);
  // The dirty map follows the heap, 64-byte aligned: one bit per kDirtyChunk bytes.
  if (bytes_ > INT64_MAX / 2)
    throw std::bad_alloc();
  dirty_disp_ = (bytes_ + 63) & ~int64_t{63};
  dirty_words_ = ((bytes_ + kDirtyChunk - 1) / kDirtyChunk + 63) / 64;
  const int64_t window = dirty_disp_ + dirty_words_ * 8;
  MPI_Info info = MPI_INFO_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_size", "true");
  MPI_Info_set(info, "same_disp_unit", "true");
  int rc = MPI_ERR_OTHER;
  if (s.shared()) {
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    rc = MPI_Win_allocate_shared(MPI_Aint(window), 1, info, comm, &local_, &win_);
    // An osc component without shared windows (--mca osc pt2pt): fall back to plain RMA.
    shared_ = rc == MPI_SUCCESS;
  }
  if (!shared_)
    rc = MPI_Win_allocate(MPI_Aint(window), 1, info, comm, &local_, &win_);
  MPI_Info_free(&info);
  check(rc, fmt::format("MPI_Win_allocate of a {}-byte symmetric heap", bytes_).c_str());
  if (shared_) {
    bases_.resize(size_t(n_));
    for (int p = 0; p < n_; ++p) {
      MPI_Aint size = 0;
      int disp = 0;
      check(MPI_Win_shared_query(win_, p, &size, &disp, &bases_[size_t(p)]),
            "MPI_Win_shared_query");
    }
  }
  std::memset(local_, 0, size_t(window));
  // On a shared heap the lock words are a shared window too (osc/sm): Open MPI 4.1.4's osc/rdma
  // names its segment by communicator id, so windows of disjoint groups would collide.
  rc = shared_ ? MPI_Win_allocate_shared(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm,
                                         &lock_word_, &lock_win_)
               : MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm,
                                  &lock_word_, &lock_win_);
  check(rc, "MPI_Win_allocate (ADD lock words)");
  lock_word_[0] = lock_word_[1] = 0;
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN); // errors become RuntimeErrors, not aborts
  MPI_Win_set_errhandler(lock_win_, MPI_ERRORS_RETURN);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, lock_win_);
  MPI_Barrier(comm); // nobody writes a peer's heap before the peer has zeroed it
}

MpiHeap::~MpiHeap() { free_windows(); }

void MpiHeap::free_windows() {
  if (win_ == MPI_WIN_NULL)
    return;
  MPI_Win_unlock_all(win_);
  MPI_Win_unlock_all(lock_win_);
  MPI_Win_free(&win_);
  MPI_Win_free(&lock_win_);
  local_ = nullptr;
  bases_.clear();
}

std::byte *MpiHeap::base(int pe) const {
  if (pe == me_)
    return local_;
  return shared_ ? bases_[size_t(pe)] : nullptr;
}

void MpiHeap::put(int pe, int64_t disp, const Layout &l, MPI_Datatype type, const void *src) {
  if (shared_) {
    const int64_t es = type_size(type);
    std::byte *dst = bases_[size_t(pe)] + disp;
    const auto *s = static_cast<const std::byte *>(src);
    for_each_element(
        l, [&](int64_t off, int64_t k) { std::memcpy(dst + off * es, s + k * es, size_t(es)); });
    std::atomic_thread_fence(std::memory_order_release);
    return;
  }
  const TargetType t(l, type);
  check(MPI_Put(src, as_count(l.elements(), "block size"), type, pe, MPI_Aint(disp), t.count,
                t.type, win_),
        "MPI_Put");
  // Local completion only (src reusable); the next signal, get, AMO, fence or quiet to `pe`
  // completes it remotely (complete()): puts to one PE cost one round trip per signal.
  check(MPI_Win_flush_local(pe, win_), "MPI_Win_flush_local");
  pending_[size_t(pe)] = 1;
}

void MpiHeap::complete(int pe) {
  if (!pending_[size_t(pe)])
    return;
  check(MPI_Win_flush(pe, win_), "MPI_Win_flush");
  pending_[size_t(pe)] = 0;
}

void MpiHeap::get(int pe, int64_t disp, const Layout &l, MPI_Datatype type, void *dst) {
  if (shared_) {
    std::atomic_thread_fence(std::memory_order_acquire);
    const int64_t es = type_size(type);
    const std::byte *src = bases_[size_t(pe)] + disp;
    auto *d = static_cast<std::byte *>(dst);
    for_each_element(
        l, [&](int64_t off, int64_t k) { std::memcpy(d + k * es, src + off * es, size_t(es)); });
    return;
  }
  complete(pe); // an earlier put or ADD to the same bytes lands first
  const TargetType t(l, type);
  check(MPI_Get(dst, as_count(l.elements(), "block size"), type, pe, MPI_Aint(disp), t.count,
                t.type, win_),
        "MPI_Get");
  check(MPI_Win_flush(pe, win_), "MPI_Win_flush");
}

// A ticket lock on PE `pe`'s lock window (next ticket, now serving), built on MPI_Fetch_and_op
// only: Open MPI 4.1's osc/rdma over the vader BTL crashes in MPI_Compare_and_swap (seen here).
void MpiHeap::lock_pe(int pe) {
  const int64_t one = 1;
  int64_t ticket = 0, serving = -1;
  check(MPI_Fetch_and_op(&one, &ticket, MPI_INT64_T, pe, 0, MPI_SUM, lock_win_),
        "MPI_Fetch_and_op (lock)");
  check(MPI_Win_flush(pe, lock_win_), "MPI_Win_flush");
  for (int64_t spins = 0;; ++spins) {
    check(MPI_Fetch_and_op(nullptr, &serving, MPI_INT64_T, pe, 1, MPI_NO_OP, lock_win_),
          "MPI_Fetch_and_op (lock)");
    check(MPI_Win_flush(pe, lock_win_), "MPI_Win_flush");
    if (serving == ticket)
      return;
    s_.poll();
    if (spins > 16)
      sched_yield();
  }
}

void MpiHeap::unlock_pe(int pe) {
  const int64_t one = 1;
  int64_t old = 0;
  check(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, pe, 1, MPI_SUM, lock_win_),
        "MPI_Fetch_and_op (unlock)");
  check(MPI_Win_flush(pe, lock_win_), "MPI_Win_flush");
}

void MpiHeap::add(int pe, int64_t disp, const Layout &l, MPI_Datatype type, pto_dtype dt,
                  const void *src) {
  const int count = as_count(l.elements(), "block size");
  const auto d = static_cast<DataType>(dt);
  // A read-modify-write of the block under PE `pe`'s lock word, element i becoming
  // update(current, i): every such ADD to `pe` takes the lock, so none is lost.
  auto locked = [&](auto &cur, MPI_Datatype as, auto &&update) {
    lock_pe(pe);
    try {
      get(pe, disp, l, as, cur.data());
      for (int i = 0; i < count; ++i)
        cur[size_t(i)] = update(cur[size_t(i)], i);
      put(pe, disp, l, as, cur.data());
      complete(pe); // before the next holder of the lock reads it
    } catch (...) {
      unlock_pe(pe);
      throw;
    }
    unlock_pe(pe);
  };
  if (d == DT_FP16 || d == DT_BF16) {
    // MPI has no half-precision type; the sum is rounded once per element, as the threads
    // backend does.
    std::vector<uint16_t> cur(static_cast<size_t>(count));
    const auto *v = static_cast<const float *>(src);
    locked(cur, MPI_UINT16_T, [&](uint16_t c, int i) { return add_half(dt, c, v[i]); });
    return;
  }
  // Open MPI 4.1.4's MPI_SUM of 8- and 16-bit integers saturated here (127 + 1 gave 127): these
  // wrap, as on threads (unsigned arithmetic, mod 2^8 / 2^16).
  if (d == DT_INT8) {
    std::vector<uint8_t> cur(static_cast<size_t>(count));
    const auto *v = static_cast<const uint8_t *>(src);
    locked(cur, MPI_UINT8_T, [&](uint8_t c, int i) { return static_cast<uint8_t>(c + v[i]); });
    return;
  }
  if (d == DT_INT16) {
    std::vector<uint16_t> cur(static_cast<size_t>(count));
    const auto *v = static_cast<const uint16_t *>(src);
    locked(cur, MPI_UINT16_T, [&](uint16_t c, int i) { return static_cast<uint16_t>(c + v[i]); });
    return;
  }
  const TargetType t(l, type);
  check(MPI_Accumulate(src, count, type, pe, MPI_Aint(disp), t.count, t.type, MPI_SUM, win_),
        "MPI_Accumulate(MPI_SUM)");
  check(MPI_Win_flush_local(pe, win_), "MPI_Win_flush_local"); // remotely: complete()
  pending_[size_t(pe)] = 1;
}

void MpiHeap::signal(int pe, int64_t disp, int32_t op, int32_t value) {
  if (shared_) {
    std::atomic_ref<int32_t> a(*reinterpret_cast<int32_t *>(bases_[size_t(pe)] + disp));
    if (op == PTO_ATOMIC_SET)
      a.store(value, std::memory_order_seq_cst);
    else
      a.fetch_add(value, std::memory_order_seq_cst);
    return;
  }
  complete(pe); // earlier puts and ADDs to `pe` land before the signal
  check(MPI_Accumulate(&value, 1, MPI_INT32_T, pe, MPI_Aint(disp), 1, MPI_INT32_T,
                       op == PTO_ATOMIC_SET ? MPI_REPLACE : MPI_SUM, win_),
        "MPI_Accumulate (signal)");
  check(MPI_Win_flush(pe, win_), "MPI_Win_flush");
}

int32_t MpiHeap::load_signal(int64_t disp) {
  if (shared_)
    return std::atomic_ref<int32_t>(*reinterpret_cast<int32_t *>(local_ + disp))
        .load(std::memory_order_acquire);
  int32_t v = 0;
  check(MPI_Fetch_and_op(nullptr, &v, MPI_INT32_T, me_, MPI_Aint(disp), MPI_NO_OP, win_),
        "MPI_Fetch_and_op");
  check(MPI_Win_flush(me_, win_), "MPI_Win_flush");
  return v;
}

void MpiHeap::add_signal(int64_t disp, int32_t delta) {
  if (shared_) {
    std::atomic_ref<int32_t>(*reinterpret_cast<int32_t *>(local_ + disp))
        .fetch_add(delta, std::memory_order_acq_rel);
    return;
  }
  check(MPI_Accumulate(&delta, 1, MPI_INT32_T, me_, MPI_Aint(disp), 1, MPI_INT32_T, MPI_SUM, win_),
        "MPI_Accumulate (signal)");
  check(MPI_Win_flush(me_, win_), "MPI_Win_flush");
}

void MpiHeap::atomic(int pe, int64_t disp, transport::Amo op, pto_dtype dt, const void *operand,
                     const void *compare, void *old) {
  const auto d = static_cast<DataType>(dt);
  if (shared_) {
    transport::memory_amo(bases_[size_t(pe)] + disp, op, dt, operand, compare, old);
    return;
  }
  const MPI_Datatype t = d == DT_INT32 ? MPI_INT32_T : d == DT_INT64 ? MPI_INT64_T : MPI_FLOAT;
  complete(pe); // after the puts and ADDs issued before it
  alignas(8) std::byte got[8] = {};
  auto fetch_op = [&](const void *in, MPI_Op mop) {
    check(MPI_Fetch_and_op(in, got, t, pe, MPI_Aint(disp), mop, win_), "MPI_Fetch_and_op");
    check(MPI_Win_flush(pe, win_), "MPI_Win_flush");
  };
  if (op == transport::Amo::Fetch) { // a read: atomic with every accumulate (MPI_NO_OP)
    fetch_op(nullptr, MPI_NO_OP);
  } else {
    // CompareSwap is a fetch and a conditional replace (no MPI_Compare_and_swap: it crashes in
    // Open MPI 4.1's osc/rdma over vader), so every read-modify-write AMO takes `pe`'s lock:
    // they are atomic with respect to each other whatever mix of them hits one word.
    lock_pe(pe);
    try {
      switch (op) {
      case transport::Amo::FetchAdd:
        fetch_op(operand, MPI_SUM);
        break;
      case transport::Amo::Swap:
        fetch_op(operand, MPI_REPLACE);
        break;
      case transport::Amo::CompareSwap: {
        const size_t es = d == DT_INT64 ? 8 : 4;
        fetch_op(nullptr, MPI_NO_OP);
        if (std::memcmp(got, compare, es) == 0) {
          alignas(8) std::byte seen[8];
          std::memcpy(seen, got, es);
          fetch_op(operand, MPI_REPLACE);
          std::memcpy(got, seen, es);
        }
        break;
      }
      case transport::Amo::Fetch:
        break;
      }
    } catch (...) {
      unlock_pe(pe);
      throw;
    }
    unlock_pe(pe);
  }
  if (old)
    std::memcpy(old, got, d == DT_INT64 ? 8 : 4);
}

void MpiHeap::mark_written(int pe, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return;
  const int64_t c0 = lo / kDirtyChunk, c1 = (hi - 1) / kDirtyChunk;
  const int64_t w0 = c0 / 64, w1 = c1 / 64;
  uint64_t bits[64];
  if (w1 - w0 >= 64) { // a huge range: mark it in pieces
    const int64_t mid = (w0 + 32) * 64 * kDirtyChunk;
    mark_written(pe, lo, mid);
    mark_written(pe, mid, hi);
    return;
  }
  for (int64_t w = w0; w <= w1; ++w) {
    const int64_t first = w == w0 ? c0 % 64 : 0, last = w == w1 ? c1 % 64 : 63;
    const uint64_t upto = last == 63 ? ~uint64_t{0} : (uint64_t{1} << (last + 1)) - 1;
    bits[w - w0] = upto & ~((uint64_t{1} << first) - 1);
  }
  const int count = int(w1 - w0 + 1);
  if (shared_ || pe == me_) {
    auto *words = reinterpret_cast<uint64_t *>(base(pe) + dirty_disp_);
    for (int i = 0; i < count; ++i)
      if ((std::atomic_ref<uint64_t>(words[w0 + i]).load(std::memory_order_relaxed) & bits[i]) !=
          bits[i])
        std::atomic_ref<uint64_t>(words[w0 + i]).fetch_or(bits[i], std::memory_order_relaxed);
    if (!shared_)
      MPI_Win_sync(win_);
    return;
  }
  check(MPI_Accumulate(bits, count, MPI_UINT64_T, pe, MPI_Aint(dirty_disp_ + w0 * 8), count,
                       MPI_UINT64_T, MPI_BOR, win_),
        "MPI_Accumulate (dirty map)");
}

int64_t MpiHeap::zero_written(int64_t limit) {
  MPI_Win_sync(win_); // marks that arrived by RMA are visible to the loads below
  auto *words = reinterpret_cast<uint64_t *>(local_ + dirty_disp_);
  // The chunks that meet [0, limit).
  const int64_t chunks = limit <= 0 ? 0 : (std::min(limit, bytes_) + kDirtyChunk - 1) / kDirtyChunk;
  int64_t zeroed = 0;
  for (int64_t w = 0; w < std::min(dirty_words_, (chunks + 63) / 64); ++w) {
    const int64_t in_word = std::min<int64_t>(64, chunks - w * 64);
    const uint64_t mask = in_word == 64 ? ~uint64_t{0} : (uint64_t{1} << in_word) - 1;
    uint64_t bits =
        std::atomic_ref<uint64_t>(words[w]).fetch_and(~mask, std::memory_order_relaxed) & mask;
    while (bits) { // each run of consecutive dirty chunks is one memset
      const int lo = __builtin_ctzll(bits);
      const uint64_t rest = ~(bits >> lo);
      const int n = rest == 0 ? 64 - lo : __builtin_ctzll(rest);
      const int64_t at = (w * 64 + lo) * kDirtyChunk;
      const int64_t len = std::min<int64_t>(int64_t(n) * kDirtyChunk, bytes_ - at);
      if (len > 0) {
        std::memset(local_ + at, 0, size_t(len));
        zeroed += len;
      }
      bits &= n + lo >= 64 ? (uint64_t{1} << lo) - 1 : ~(((uint64_t{1} << n) - 1) << lo);
    }
  }
  MPI_Win_sync(win_);
  return zeroed;
}

void MpiHeap::clear_local(int64_t disp, int64_t len) {
  std::memset(local_ + disp, 0, size_t(len));
  MPI_Win_sync(win_);
}

void MpiHeap::quiet() {
  if (shared_) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  check(MPI_Win_flush_all(win_), "MPI_Win_flush_all");
  std::fill(pending_.begin(), pending_.end(), 0);
  MPI_Win_sync(win_);
}

} // namespace pto::runtime::mpi
