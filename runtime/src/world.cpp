// world.cpp - World: runs the PEs, picks the root-cause error, and implements the collective
// kernel entry and exit (barriers that (re)allocate and zero the symmetric heaps).
#include "pto/runtime/world.h"

#include "pto/runtime/signal.h"

#include "world_state.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fmt/format.h>
#include <new>

namespace pto::runtime {

namespace detail {
extern thread_local pto_ctx *tls_ctx;

WorldState::WorldState(int n, int64_t timeout_ms)
    : n_pes(n), deadlock_timeout_ms(timeout_ms), ctxs(new pto_ctx[size_t(n)]) {
  for (int pe = 0; pe < n; ++pe) {
    ctxs[size_t(pe)].world = this;
    ctxs[size_t(pe)].pe = pe;
  }
  reset_for_run();
}

void WorldState::reset_for_run() {
  aborted.store(false);
  first_failed_pe.store(-1);
  barrier.reset(n_pes);
  enter_error.clear();
  for (int pe = 0; pe < n_pes; ++pe) {
    pto_ctx &c = ctxs[size_t(pe)];
    c.status = PTO_OK;
    c.error = nullptr;
    c.error_released = false;
    c.finished.store(false);
    c.waiting_on.store(nullptr);
  }
}

void WorldState::mark_failed(int pe) {
  int expected = -1;
  first_failed_pe.compare_exchange_strong(expected, pe, std::memory_order_acq_rel);
  if (aborted.exchange(true, std::memory_order_acq_rel))
    return; // already aborted: the blocked PEs were woken then
  barrier.wake_all();
  for (int p = 0; p < n_pes; ++p)
    if (int32_t *word = ctxs[size_t(p)].waiting_on.load(std::memory_order_acquire))
      futex_wake_all(word); // a waiter that registers later sees `aborted` within a wait slice
}
} // namespace detail

namespace {
int64_t effective_timeout_ms(int64_t requested) {
  if (requested <= 0)
    throw DistributedError("<runtime>", "World",
                           fmt::format("deadlock_timeout_ms must be > 0, got {}", requested));
  if (requested != WorldOptions::kDefaultDeadlockTimeoutMs)
    return requested;
  const char *env = std::getenv("PTO_DEADLOCK_TIMEOUT_MS");
  if (!env)
    return requested;
  errno = 0;
  char *end = nullptr;
  const long long v = std::strtoll(env, &end, 10);
  if (errno != 0 || end == env || *end != '\0' || v <= 0)
    throw DistributedError("<runtime>", "World",
                           fmt::format("PTO_DEADLOCK_TIMEOUT_MS='{}' is not a positive integer "
                                       "number of milliseconds",
                                       env));
  return v;
}

int checked_n_pes(int n_pes) {
  if (n_pes < 1 || n_pes > 4096)
    throw DistributedError("<runtime>", "World",
                           fmt::format("n_pes must be in [1, 4096], got {}", n_pes));
  return n_pes;
}
} // namespace

World::World(int n_pes, WorldOptions opts) : World(n_pes, opts, make_threads_backend()) {}

World::World(int n_pes, WorldOptions opts, std::unique_ptr<Backend> backend)
    : state_(std::make_unique<detail::WorldState>(checked_n_pes(n_pes),
                                                  effective_timeout_ms(opts.deadlock_timeout_ms))),
      backend_(std::move(backend)) {}

World::~World() = default;

int World::n_pes() const { return state_->n_pes; }
int64_t World::deadlock_timeout_ms() const { return state_->deadlock_timeout_ms; }
const char *World::backend_name() const { return backend_->name(); }
pto_ctx *World::context(int pe) { return &state_->ctxs[size_t(pe)]; }

void World::run(const std::function<void(int pe)> &fn) {
  if (detail::tls_ctx)
    throw DistributedError("<runtime>", "World::run",
                           "called from inside PE " + std::to_string(detail::tls_ctx->pe) +
                               "; worlds do not nest");
  if (running_.exchange(true))
    throw DistributedError("<runtime>", "World::run",
                           "this world is already running on another thread");
  struct Unmark {
    std::atomic<bool> &flag;
    ~Unmark() { flag.store(false); }
  } unmark{running_};

  detail::WorldState &w = *state_;
  w.reset_for_run();
  std::vector<std::exception_ptr> errors(size_t(w.n_pes));
  std::vector<char> released(size_t(w.n_pes), 0);

  auto body = [&](int pe) {
    pto_ctx *ctx = &w.ctxs[size_t(pe)];
    detail::tls_ctx = ctx;
    try {
      fn(pe);
    } catch (...) {
      errors[size_t(pe)] = std::current_exception();
      // The exact exception recorded as "released" is secondary; anything else is a failure.
      const bool secondary = ctx->error_released && ctx->error == errors[size_t(pe)];
      released[size_t(pe)] = secondary;
      if (!secondary)
        w.mark_failed(pe);
    }
    for (void *p : ctx->scratch)
      ::operator delete(p, std::align_val_t(64));
    ctx->scratch.clear();
    ctx->sites = nullptr;
    ctx->error = nullptr; // drop the reference before the exception crosses threads
    detail::tls_ctx = nullptr;
    ctx->finished.store(true, std::memory_order_release);
    w.barrier.wake_all(); // PEs waiting for this one at a barrier now know it will not come
  };
  backend_->run(w.n_pes, body, [&] { w.mark_failed(-1); });

  // Root cause: the first PE to fail, if its own error is primary; else any primary error.
  const int first = w.first_failed_pe.load();
  if (first >= 0 && errors[size_t(first)] && !released[size_t(first)])
    std::rethrow_exception(errors[size_t(first)]);
  for (size_t pe = 0; pe < errors.size(); ++pe)
    if (errors[pe] && !released[pe])
      std::rethrow_exception(errors[pe]);
  for (const auto &e : errors)
    if (e)
      std::rethrow_exception(e);
}

} // namespace pto::runtime

using namespace pto::runtime;
using pto::runtime::detail::CollectiveBarrier;
using pto::runtime::detail::fail;

namespace {
constexpr const char *kEnterOp = "kernel_enter";

// Waits at the world's collective barrier; on anything but Passed records the error and returns
// PTO_ERR. `what` names the collective in messages ("kernel entry", "kernel exit").
int32_t collective_wait(pto_ctx *ctx, const char *op, const char *what,
                        const std::function<void()> &completion) {
  detail::WorldState &w = *ctx->world;
  const auto r = w.barrier.arrive_and_wait(
      ctx->pe, w.collective_deadline(), [&] { return w.aborted.load(std::memory_order_acquire); },
      [&](int pe) { return w.ctxs[size_t(pe)].finished.load(std::memory_order_acquire); },
      completion);
  switch (r.outcome) {
  case CollectiveBarrier::Outcome::Passed:
    return PTO_OK;
  case CollectiveBarrier::Outcome::Aborted:
    return detail::fail_released(ctx, -1, op);
  case CollectiveBarrier::Outcome::PeerGone:
    return fail<pto::DistributedError>(
        ctx, -1, op,
        fmt::format("PE {} returned from its function without reaching the {}; every PE must "
                    "launch the same kernels in the same order",
                    r.missing.front(), what));
  case CollectiveBarrier::Outcome::TimedOut:
    return fail<pto::DeadlockError>(
        ctx, -1, op,
        fmt::format("PE {} timed out after {} ms at the {}: {} of {} PEs arrived, missing PEs "
                    "[{}]; raise PTO_DEADLOCK_TIMEOUT_MS if a PE is legitimately slow",
                    ctx->pe, 2 * w.deadlock_timeout_ms, what, r.arrived, w.n_pes,
                    fmt::join(r.missing, ", ")));
  }
  return PTO_ERR;
}

// Runs in the last PE to arrive at kernel entry, under the barrier lock: checks that every PE
// proposed the same kernel and heap sizes, then sizes the heaps. Errors go to w.enter_error.
void enter_completion(detail::WorldState &w, const std::vector<std::string> &names,
                      const std::vector<int32_t> &group_n_pes) {
  w.enter_error.clear();
  const pto_ctx &c0 = w.ctxs[0];
  for (int pe = 1; pe < w.n_pes; ++pe) {
    const pto_ctx &c = w.ctxs[size_t(pe)];
    if (c.enter_hash != c0.enter_hash) {
      w.enter_error = fmt::format("PEs launched different kernels: PE 0 runs kernel {:#018x}, "
                                  "PE {} runs {:#018x}; every PE must call the same kernel",
                                  c0.enter_hash, pe, c.enter_hash);
      return;
    }
    if (c.enter_heap_bytes != c0.enter_heap_bytes) {
      size_t g = 0;
      while (g < c.enter_heap_bytes.size() && g < c0.enter_heap_bytes.size() &&
             c.enter_heap_bytes[g] == c0.enter_heap_bytes[g])
        ++g;
      if (g >= c.enter_heap_bytes.size() || g >= c0.enter_heap_bytes.size()) {
        w.enter_error = fmt::format("PEs declared different numbers of groups: PE 0 has {}, "
                                    "PE {} has {}",
                                    c0.enter_heap_bytes.size(), pe, c.enter_heap_bytes.size());
      } else {
        w.enter_error = fmt::format("PEs asked for different symmetric heap sizes for group "
                                    "'{}': PE 0 {} bytes, PE {} {} bytes; shmem tensor shapes "
                                    "must be the same on every PE",
                                    g < names.size() ? names[g] : std::string("?"),
                                    c0.enter_heap_bytes[g], pe, c.enter_heap_bytes[g]);
      }
      return;
    }
  }
  const size_t n_groups = c0.enter_heap_bytes.size();
  w.groups.resize(n_groups);
  for (size_t g = 0; g < n_groups; ++g) {
    detail::GroupState &group = w.groups[g];
    group.name = names[g];
    group.n_pes = group_n_pes[g];
    group.world_pe.resize(size_t(w.n_pes));
    for (int pe = 0; pe < w.n_pes; ++pe)
      group.world_pe[size_t(pe)] = pe;
    try {
      group.heap.resize(w.n_pes, c0.enter_heap_bytes[g]);
    } catch (const std::bad_alloc &) {
      w.enter_error = fmt::format("cannot allocate a symmetric heap of {} bytes on each of {} "
                                  "PEs for group '{}'",
                                  c0.enter_heap_bytes[g], w.n_pes, group.name);
      return;
    }
  }
}
} // namespace

extern "C" {

int32_t pto_rt_kernel_enter(pto_ctx *ctx, uint64_t kernel_hash, int32_t n_groups,
                            const int64_t *heap_bytes, const int32_t *group_n_pes,
                            const char *const *group_names) {
  detail::WorldState &w = *ctx->world;
  if (n_groups < 0 || (n_groups > 0 && (!heap_bytes || !group_n_pes)))
    return fail<pto::InternalError>(ctx, -1, kEnterOp,
                                    fmt::format("bad group table: n_groups {}", n_groups));
  std::vector<std::string> names(static_cast<size_t>(n_groups));
  for (int32_t g = 0; g < n_groups; ++g)
    names[size_t(g)] =
        group_names && group_names[g] ? std::string(group_names[g]) : fmt::format("group {}", g);
  // Local checks first: a PE with a bad group table fails at once and releases the others.
  for (int32_t g = 0; g < n_groups; ++g) {
    if (group_n_pes[g] != w.n_pes)
      return fail<pto::DistributedError>(
          ctx, -1, "create_shmem_tensor",
          fmt::format("group '{}' was created with n_pes {} but the world has {} PEs; groups "
                      "must span the whole world",
                      names[size_t(g)], group_n_pes[g], w.n_pes));
    if (heap_bytes[g] < 0)
      return fail<pto::InternalError>(
          ctx, -1, kEnterOp,
          fmt::format("negative heap size {} for group '{}'", heap_bytes[g], names[size_t(g)]));
  }
  ctx->enter_hash = kernel_hash;
  ctx->enter_heap_bytes.assign(heap_bytes, heap_bytes + n_groups);
  std::vector<int32_t> n_pes_of(group_n_pes, group_n_pes + n_groups);

  if (collective_wait(ctx, kEnterOp, "kernel entry barrier",
                      [&] { enter_completion(w, names, n_pes_of); }) != PTO_OK)
    return PTO_ERR;
  // Every PE reads the verdict written by the last arriver (ordered by the barrier's lock).
  if (!w.enter_error.empty())
    return fail<pto::DistributedError>(ctx, -1, kEnterOp, w.enter_error);
  // Each PE zeroes its own heaps (in parallel, and first-touched by the PE that uses them);
  // a second barrier keeps everyone from writing a peer's heap before the peer has zeroed it.
  ctx->group_pe.assign(size_t(n_groups), ctx->pe);
  for (auto &group : w.groups)
    group.heap.zero(ctx->pe);
  return collective_wait(ctx, kEnterOp, "kernel entry barrier", [] {});
}

int32_t pto_rt_kernel_exit(pto_ctx *ctx) {
  return collective_wait(ctx, "kernel_exit", "kernel exit barrier", [] {});
}

} // extern "C"
