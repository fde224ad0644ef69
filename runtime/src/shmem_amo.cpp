// shmem_amo.cpp - The rest of the OpenSHMEM 1.5 model in the ABI (abi.h): fence, quiet,
// put-with-signal, fetching AMOs (fetch_add, swap, compare_swap) and waits on sets of signal
// slots (wait_until_all/any/some and their non-blocking test forms). Checks here, the bytes and
// the blocking through the transport (transport/transport.h: Group::atomic, fence, quiet, wait),
// so the same entry points serve the shared-memory and the MPI transport.
#include "pto/dtype.h"
#include "pto/runtime/signal.h"

#include "boundary.h"
#include "shmem_checks.h"
#include "transport/transport.h"
#include "world_state.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <vector>

using namespace pto::runtime;
using namespace pto::runtime::detail;

namespace {

/// The word of `size` bytes at `offset` lies inside [0, limit) (check_word checks alignment and
/// the heap).
bool word_in_object(pto_ctx *ctx, int32_t group, int pe, int64_t offset, int64_t size,
                    int64_t limit, int32_t site, const char *op) {
  if (!check_word(ctx, group, offset, size, site, op))
    return false;
  if (offset <= limit - size)
    return true;
  fail<pto::DistributedError>(ctx, site, op,
                              fmt::format("the {}-byte word at byte {} of PE {}'s heap for group "
                                          "'{}' is not inside the object, which ends at byte {}",
                                          size, offset, pe, group_name(ctx, group), limit));
  return false;
}

transport::Amo transport_amo(int32_t amo) {
  return amo == PTO_AMO_SWAP           ? transport::Amo::Swap
         : amo == PTO_AMO_COMPARE_SWAP ? transport::Amo::CompareSwap
                                       : transport::Amo::FetchAdd;
}

const char *amo_name(int32_t amo) {
  switch (amo) {
  case PTO_AMO_FETCH_ADD:
    return "shmem_atomic_fetch_add";
  case PTO_AMO_SWAP:
    return "shmem_atomic_swap";
  case PTO_AMO_COMPARE_SWAP:
    return "shmem_atomic_compare_swap";
  default:
    return "shmem_atomic";
  }
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

/// Fence or quiet on every group of the running kernel.
void each_group(pto_ctx *ctx, void (transport::Group::*f)(int)) {
  for (size_t g = 0; g < ctx->groups.size(); ++g)
    (tgroup(ctx, int32_t(g)).*f)(pto_rt_my_pe(ctx, int32_t(g)));
}

/// A set of elements, each `per` slots of this PE's heap, scanned as pto_rt_wait_until_set
/// says; ready() when the mode's condition holds, with the reported indices in `hits`.
class SetCondition final : public transport::WaitCondition {
public:
  SetCondition(transport::Group &g, int me, int32_t mode, const int64_t *slots, int32_t n,
               int32_t per, const int32_t *status, int64_t status_stride, int64_t status_valid,
               int32_t cmp, int32_t value)
      : g_(g), me_(me), mode_(mode), slots_(slots), n_(n), per_(per), status_(status),
        status_stride_(status_stride), status_valid_(status_valid), cmp_(cmp), value_(value) {}
  bool included(int32_t e) const {
    return !status_ || e >= status_valid_ || status_[e * status_stride_] == 0;
  }
  bool ready() override {
    hits.clear();
    first_bad = -1;
    bool all = true;
    for (int32_t e = 0; e < n_; ++e) {
      if (!included(e))
        continue;
      if (holds(e)) {
        hits.push_back(e);
        if (mode_ == PTO_WAIT_ANY)
          break;
      } else {
        all = false;
        if (mode_ == PTO_WAIT_ALL)
          break;
      }
    }
    return mode_ == PTO_WAIT_ALL ? all : !hits.empty();
  }
  std::vector<int32_t> hits; ///< the elements that held at the last scan (ANY: the first)
  int64_t first_bad = -1;    ///< the first slot that did not hold at the last scan

private:
  bool holds(int32_t e) {
    for (int32_t s = 0; s < per_; ++s) {
      const int64_t k = int64_t(e) * per_ + s;
      if (!signal_compare(g_.load_slot(me_, slots_[k]), cmp_, value_)) {
        if (first_bad < 0)
          first_bad = k;
        return false;
      }
    }
    return true;
  }
  transport::Group &g_;
  int me_;
  int32_t mode_;
  const int64_t *slots_;
  int32_t n_, per_;
  const int32_t *status_;
  int64_t status_stride_, status_valid_;
  int32_t cmp_, value_;
};

} // namespace

extern "C" {

int32_t pto_rt_fence(pto_ctx *ctx, int32_t site) {
  (void)site;
  return abi_boundary(ctx, [&]() -> int32_t {
    TraceScope trace(ctx, "shmem_fence", "sync");
    // The compiler and the CPU (non-temporal stores of a fast path included) do not reorder
    // across it; the transport orders what it has in flight.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    each_group(ctx, &transport::Group::fence);
    return PTO_OK;
  });
}

int32_t pto_rt_quiet(pto_ctx *ctx, int32_t site) {
  (void)site;
  return abi_boundary(ctx, [&]() -> int32_t {
    TraceScope trace(ctx, "shmem_quiet", "sync");
    std::atomic_thread_fence(std::memory_order_seq_cst);
    each_group(ctx, &transport::Group::quiet);
    return PTO_OK;
  });
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
    if (!check_group(ctx, group, site, kOp))
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
    if (!check_pe(ctx, group, pe, "pe", site, kOp) ||
        !word_in_object(ctx, group, pe, offset_bytes, pto::bytes_of(dtype), limit_bytes, site, kOp))
      return PTO_ERR;
    if (!value || !old || (amo == PTO_AMO_COMPARE_SWAP && !cond))
      return fail<pto::InternalError>(ctx, site, kOp, "null operand");
    (void)wake_waiters; // the transport wakes `pe` after every AMO
    tgroup(ctx, group)
        .atomic(pto_rt_my_pe(ctx, group), pe, offset_bytes, transport_amo(amo), dt, value,
                amo == PTO_AMO_COMPARE_SWAP ? cond : nullptr, old);
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
    auto report = [&](int32_t count) {
      if (out_count)
        *out_count = count;
      if (out && mode == PTO_WAIT_ANY && count == 0)
        out[0] = -1;
      return PTO_OK;
    };
    int32_t n_included = 0;
    for (int32_t e = 0; e < n_elems; ++e)
      n_included += !status || e >= status_valid || status[e * status_stride] == 0 ? 1 : 0;
    if (n_included == 0) // OpenSHMEM: an empty set returns at once
      return report(mode == PTO_WAIT_ALL ? 1 : 0);
    if (!check_group(ctx, group, site, kOp))
      return PTO_ERR;
    for (int64_t k = 0; k < int64_t(n_elems) * slots_per_elem; ++k)
      if (!check_word(ctx, group, slot_offsets[k], 4, site, kOp))
        return PTO_ERR;
    WorldState &world = *ctx->world;
    const int me = pto_rt_my_pe(ctx, group);
    transport::Group &tg = tgroup(ctx, group);
    SetCondition cond(tg, me, mode, slot_offsets, n_elems, slots_per_elem, status, status_stride,
                      status_valid, cmp, value);
    if (!cond.ready()) {
      if (!blocking)
        return report(0);
      CorePolicy policy(world, /*collective=*/false, nullptr);
      if (const int32_t st =
              wait_status(ctx, tg.wait(me, cond, policy), policy, me, site, kOp, [&] {
                const int64_t bad = cond.first_bad >= 0 ? cond.first_bad : 0;
                return fmt::format("{} of {} signal elements (group '{}') to be {} {}; signal slot "
                                   "{} has current value {}",
                                   mode == PTO_WAIT_ALL   ? "all"
                                   : mode == PTO_WAIT_ANY ? "any"
                                                          : "some",
                                   n_included, group_name(ctx, group), signal_compare_name(cmp),
                                   value, (slot_offsets[bad] - signal_base_bytes) / 32,
                                   tg.load_slot(me, slot_offsets[bad]));
              }))
        return st;
    }
    // Report, then consume what was reported (subtracting what was seen, as pto_rt_wait_until:
    // an ADD landing meanwhile is kept).
    std::vector<int32_t> reported = cond.hits;
    if (mode == PTO_WAIT_ALL) {
      reported.clear();
      for (int32_t e = 0; e < n_elems; ++e)
        if (cond.included(e))
          reported.push_back(e);
    } else {
      for (size_t i = 0; i < reported.size(); ++i)
        out[int64_t(i) * out_stride] = reported[i];
    }
    if (clear)
      for (int32_t e : reported)
        for (int32_t k = 0; k < slots_per_elem; ++k) {
          const int64_t off = slot_offsets[int64_t(e) * slots_per_elem + k];
          const int32_t minus = clear_delta(cmp, value, tg.load_slot(me, off));
          tg.atomic(me, me, off, transport::Amo::FetchAdd, pto::DT_INT32, &minus, nullptr, nullptr);
        }
    world.progress.bump();
    return report(mode == PTO_WAIT_ALL ? 1 : int32_t(cond.hits.size()));
  });
}

} // extern "C"
