// shmem_amo.cpp - The rest of the OpenSHMEM 1.5 model in the ABI (abi.h): fence, quiet,
// put-with-signal, fetching AMOs (fetch_add, swap, compare_swap) and waits on sets of signal
// slots (wait_until_all/any/some and their non-blocking test forms). On the threads runtime every
// put has completed when its call returns, so fence and quiet are full fences; AMOs are
// std::atomic_ref operations on the heap word, sequentially consistent.
#include "pto/dtype.h"
#include "pto/runtime/signal.h"

#include "boundary.h"
#include "world_state.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <thread>

using namespace pto::runtime;
using namespace pto::runtime::detail;

namespace {

/// The kernel declared `group` (else a code generation bug, InternalError).
bool group_ok(pto_ctx *ctx, int32_t group, int32_t site, const char *op) {
  if (group >= 0 && size_t(group) < ctx->groups.size())
    return true;
  fail<pto::InternalError>(ctx, site, op,
                           fmt::format("group index {} was not declared by kernel_enter ({} "
                                       "groups); rerun with PTO_DUMP=ir",
                                       group, ctx->groups.size()));
  return false;
}

int64_t heap_bytes(pto_ctx *ctx, int32_t group) {
  return ctx->groups[size_t(group)]->heap.size_bytes();
}

std::byte *heap_at(pto_ctx *ctx, int32_t group, int pe, int64_t offset) {
  return ctx->groups[size_t(group)]->heap.base(pe) + offset;
}

/// A word of `size` bytes at `offset`: aligned, inside [0, limit) and the heap.
bool word_ok(pto_ctx *ctx, int32_t group, int pe, int64_t offset, int64_t size, int64_t limit,
             int32_t site, const char *op) {
  const int64_t heap = heap_bytes(ctx, group);
  if (offset >= 0 && offset % size == 0 && offset <= std::min(limit, heap) - size)
    return true;
  fail<pto::DistributedError>(ctx, site, op,
                              fmt::format("the {}-byte word at byte {} of PE {}'s heap for group "
                                          "'{}' is not aligned or not inside the object (which "
                                          "ends at byte {}; heap size {} bytes)",
                                          size, offset, pe, group_name(ctx, group), limit, heap));
  return false;
}

template <class T> T read_value(const void *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// The AMO on a word of type T; returns the old value.
template <class T> T apply_amo(T *word, int32_t amo, const void *value, const void *cond) {
  std::atomic_ref<T> a(*word);
  const T v = read_value<T>(value);
  switch (amo) {
  case PTO_AMO_FETCH_ADD:
    if constexpr (std::is_integral_v<T>) { // wraps: two's complement, as an ADD put
      using U = std::make_unsigned_t<T>;
      std::atomic_ref<U> u(*reinterpret_cast<U *>(word));
      return T(u.fetch_add(U(v), std::memory_order_seq_cst));
    } else {
      return a.fetch_add(v, std::memory_order_seq_cst);
    }
  case PTO_AMO_SWAP:
    return a.exchange(v, std::memory_order_seq_cst);
  default: { // PTO_AMO_COMPARE_SWAP (checked by the caller)
    T expected = read_value<T>(cond);
    a.compare_exchange_strong(expected, v, std::memory_order_seq_cst);
    return expected; // the old value either way
  }
  }
}

const char *amo_name(int32_t amo) {
  switch (amo) {
  case PTO_AMO_FETCH_ADD:
    return "shmem_atomic_fetch_add";
  case PTO_AMO_SWAP:
    return "shmem_atomic_swap";
  case PTO_AMO_COMPARE_SWAP:
    return "shmem_atomic_compare_swap";
  }
  return "shmem_atomic";
}

const char *set_name(int32_t mode, int32_t blocking) {
  if (!blocking)
    return mode == PTO_WAIT_ANY    ? "shmem_test_any"
           : mode == PTO_WAIT_SOME ? "shmem_test_some"
                                   : "shmem_test";
  return mode == PTO_WAIT_ANY    ? "shmem_wait_until_any"
         : mode == PTO_WAIT_SOME ? "shmem_wait_until_some"
                                 : "shmem_wait_until_all";
}

/// Wakes the waiters of signal word `word` (the Dekker handshake of pto_rt_signal: the write
/// before this was seq_cst).
void wake(WorldState &world, int32_t *word) {
  if (world.futex_waiters.load(std::memory_order_seq_cst) > 0)
    futex_wake_all(word);
}

} // namespace

extern "C" {

int32_t pto_rt_fence(pto_ctx *ctx, int32_t site) {
  (void)site;
  TraceScope trace(ctx, "shmem_fence", "sync");
  // Every put, AMO and signal of this PE has completed when its call returned; the fence keeps
  // the compiler and the CPU (non-temporal stores of a fast path included) from reordering them.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return PTO_OK;
}

int32_t pto_rt_quiet(pto_ctx *ctx, int32_t site) {
  (void)site;
  TraceScope trace(ctx, "shmem_quiet", "sync");
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return PTO_OK;
}

int32_t pto_rt_put_signal(pto_ctx *ctx, int32_t group, int32_t dst_pe, int32_t op, const void *src,
                          pto_dtype src_dt, int64_t dst_offset_bytes, int64_t dst_limit_bytes,
                          pto_dtype dst_dt, const pto_block *block, int64_t slot_offset_bytes,
                          int32_t sig_op, int32_t sig_value, int32_t site) {
  // The signal's seq_cst write follows the put's stores in program order: it is never seen
  // before the data (a transport with asynchronous puts must flush the put first).
  if (int32_t st = pto_rt_put(ctx, group, dst_pe, op, src, src_dt, dst_offset_bytes,
                              dst_limit_bytes, dst_dt, block, site))
    return st;
  return pto_rt_signal(ctx, group, dst_pe, slot_offset_bytes, sig_op, sig_value, site);
}

int32_t pto_rt_atomic(pto_ctx *ctx, int32_t group, int32_t pe, int32_t amo, pto_dtype dt,
                      int64_t offset_bytes, int64_t limit_bytes, const void *value,
                      const void *cond, void *old, int32_t wake_waiters, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    const char *kOp = amo_name(amo);
    TraceScope trace(ctx, kOp, "amo");
    if (auto *e = trace.event())
      e->peer = pe;
    if (!group_ok(ctx, group, site, kOp))
      return PTO_ERR;
    if (amo < PTO_AMO_FETCH_ADD || amo > PTO_AMO_COMPARE_SWAP)
      return fail<pto::InternalError>(ctx, site, kOp, fmt::format("unknown AMO {}", amo));
    const auto dtype = static_cast<pto::DataType>(dt);
    const bool ok_dtype = dtype == pto::DT_INT32 || dtype == pto::DT_INT64 ||
                          (dtype == pto::DT_FP32 && amo != PTO_AMO_COMPARE_SWAP);
    if (!ok_dtype)
      return fail<pto::DTypeError>(
          ctx, site, kOp,
          fmt::format("the word's dtype must be {}, got {}",
                      amo == PTO_AMO_COMPARE_SWAP ? "int32 or int64" : "int32, int64 or fp32",
                      pto::is_supported(dtype) ? pto::name(dtype) : std::to_string(dt)));
    const int n = ctx->groups[size_t(group)]->n_pes;
    if (pe < 0 || pe >= n)
      return fail<pto::DistributedError>(ctx, site, kOp,
                                         fmt::format("pe {} is out of range [0, {}) for group "
                                                     "'{}'",
                                                     pe, n, group_name(ctx, group)));
    if (!word_ok(ctx, group, pe, offset_bytes, pto::bytes_of(dtype), limit_bytes, site, kOp))
      return PTO_ERR;
    if (!value || !old || (amo == PTO_AMO_COMPARE_SWAP && !cond))
      return fail<pto::InternalError>(ctx, site, kOp, "null operand");
    std::byte *word = heap_at(ctx, group, pe, offset_bytes);
    if (dtype == pto::DT_INT32) {
      const int32_t o = apply_amo(reinterpret_cast<int32_t *>(word), amo, value, cond);
      std::memcpy(old, &o, sizeof o);
    } else if (dtype == pto::DT_INT64) {
      const int64_t o = apply_amo(reinterpret_cast<int64_t *>(word), amo, value, cond);
      std::memcpy(old, &o, sizeof o);
    } else {
      const float o = apply_amo(reinterpret_cast<float *>(word), amo, value, cond);
      std::memcpy(old, &o, sizeof o);
    }
    if (wake_waiters && dtype == pto::DT_INT32)
      wake(*ctx->world, reinterpret_cast<int32_t *>(word));
    ctx->world->progress.bump();
    return PTO_OK;
  });
}

int32_t pto_rt_wait_until_set(pto_ctx *ctx, int32_t group, int32_t mode, int32_t blocking,
                              const int64_t *slot_offsets, int32_t n_elems, int32_t slots_per_elem,
                              int64_t signal_base_bytes, const int32_t *status,
                              int64_t status_stride, int64_t status_valid, int32_t cmp,
                              int32_t value, int32_t clear, int32_t *out, int64_t out_stride,
                              int32_t *out_count, int32_t site) {
  return abi_boundary(ctx, [&]() -> int32_t {
    const char *kOp = set_name(mode, blocking);
    TraceScope trace(ctx, kOp, "wait");
    if (auto *e = trace.event())
      e->value = value;
    if (mode < PTO_WAIT_ALL || mode > PTO_WAIT_SOME || cmp < PTO_CMP_EQ || cmp > PTO_CMP_GE ||
        n_elems < 0 || slots_per_elem < 1 || (n_elems > 0 && !slot_offsets) ||
        (mode != PTO_WAIT_ALL && !out))
      return fail<pto::InternalError>(ctx, site, kOp, "malformed wait set");
    auto included = [&](int32_t e) {
      return !status || e >= status_valid || status[e * status_stride] == 0;
    };
    int32_t n_included = 0;
    for (int32_t e = 0; e < n_elems; ++e)
      n_included += included(e) ? 1 : 0;
    auto report = [&](int32_t count) {
      if (out_count)
        *out_count = count;
      if (out && mode == PTO_WAIT_ANY && count == 0)
        out[0] = -1;
      return PTO_OK;
    };
    if (n_included == 0) // OpenSHMEM: an empty set returns at once
      return report(mode == PTO_WAIT_ALL ? 1 : 0);
    if (!group_ok(ctx, group, site, kOp))
      return PTO_ERR;
    const int64_t heap = heap_bytes(ctx, group);
    const int64_t n_slots = int64_t(n_elems) * slots_per_elem;
    for (int64_t k = 0; k < n_slots; ++k) {
      const int64_t off = slot_offsets[k];
      if (off < 0 || off % 4 != 0 || off > heap - 4)
        return fail<pto::DistributedError>(
            ctx, site, kOp,
            fmt::format("signal slot offset {} bytes is not an aligned int32 inside the heap of "
                        "group '{}' ({} bytes)",
                        off, group_name(ctx, group), heap));
    }
    WorldState &world = *ctx->world;
    const int me = pto_rt_my_pe(ctx, group);
    auto word = [&](int64_t k) {
      return reinterpret_cast<int32_t *>(heap_at(ctx, group, me, slot_offsets[k]));
    };
    auto load = [&](int64_t k) {
      return std::atomic_ref<int32_t>(*word(k)).load(std::memory_order_acquire);
    };
    // Element e holds when all its slots compare; `first_bad` is its first slot that does not.
    auto holds = [&](int32_t e, int64_t &first_bad) {
      for (int32_t s = 0; s < slots_per_elem; ++s) {
        const int64_t k = int64_t(e) * slots_per_elem + s;
        if (!signal_compare(load(k), cmp, value)) {
          first_bad = k;
          return false;
        }
      }
      return true;
    };
    auto consume = [&](int32_t e) {
      for (int32_t s = 0; s < slots_per_elem; ++s) {
        std::atomic_ref<int32_t> a(*word(int64_t(e) * slots_per_elem + s));
        const int32_t v = a.load(std::memory_order_acquire);
        a.fetch_sub(cmp == PTO_CMP_GE ? value : v, std::memory_order_acq_rel);
      }
    };
    std::optional<ProgressWatch> watch;
    for (int spins = 0;; ++spins) {
      int32_t count = 0;
      int64_t first_bad = -1;
      bool all = true;
      for (int32_t e = 0; e < n_elems; ++e) {
        if (!included(e))
          continue;
        int64_t bad = -1;
        if (holds(e, bad)) {
          if (mode != PTO_WAIT_ALL && out)
            out[int64_t(count) * out_stride] = e;
          ++count;
          if (mode == PTO_WAIT_ANY)
            break;
        } else {
          all = false;
          if (first_bad < 0)
            first_bad = bad;
          if (mode == PTO_WAIT_ALL)
            break;
        }
      }
      const bool done = mode == PTO_WAIT_ALL ? all : count > 0;
      if (done || !blocking) {
        if (done && clear) {
          if (mode == PTO_WAIT_ALL) {
            for (int32_t e = 0; e < n_elems; ++e)
              if (included(e))
                consume(e);
          } else {
            for (int32_t i = 0; i < count; ++i)
              consume(out ? out[int64_t(i) * out_stride] : -1);
          }
        }
        if (done)
          world.progress.bump();
        return report(mode == PTO_WAIT_ALL ? (done ? 1 : 0) : count);
      }
      if (world.aborted.load(std::memory_order_acquire))
        return fail_released(ctx, site, kOp);
      const auto now = ProgressWatch::Clock::now();
      if (!watch)
        watch.emplace(world.watch());
      if (watch->stalled(now))
        return fail<pto::DeadlockError>(
            ctx, site, kOp,
            fmt::format("PE {} timed out after {} ms without progress on any PE, waiting for {} "
                        "of {} signal elements (group '{}') to be {} {}; signal slot {} has "
                        "current value {}; raise PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately "
                        "computes that long without communicating",
                        me, watch->timeout_ms(),
                        mode == PTO_WAIT_ALL   ? "all"
                        : mode == PTO_WAIT_ANY ? "any"
                                               : "some",
                        n_included, group_name(ctx, group), signal_compare_name(cmp), value,
                        (slot_offsets[first_bad] - signal_base_bytes) / 32, load(first_bad)));
      // Several words cannot share one futex wait: poll briefly, then sleep on the first slot
      // that does not hold, in short slices so that a signal to another slot is seen soon.
      if (spins < 64) {
        std::this_thread::yield();
        continue;
      }
      int32_t *w = word(first_bad);
      const int32_t v = std::atomic_ref<int32_t>(*w).load(std::memory_order_seq_cst);
      ctx->waiting_on.store(w, std::memory_order_seq_cst);
      world.futex_waiters.fetch_add(1, std::memory_order_seq_cst);
      if (std::atomic_ref<int32_t>(*w).load(std::memory_order_seq_cst) == v &&
          !world.aborted.load(std::memory_order_seq_cst))
        futex_wait(w, v, 1);
      world.futex_waiters.fetch_sub(1, std::memory_order_seq_cst);
      ctx->waiting_on.store(nullptr, std::memory_order_relaxed);
    }
  });
}

} // extern "C"
