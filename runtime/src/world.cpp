// world.cpp - World: runs the PEs, picks the root-cause error, and implements the collective
// kernel entry and exit (barriers that (re)allocate and zero the symmetric heaps).
#include "pto/runtime/world.h"

#include "pto/runtime/signal.h"

#include "boundary.h"
#include "world_state.h"
#if PTO_HAVE_MPI
#include "transport/mpi_ops.h"
#endif

#include <algorithm>
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
  {
    std::lock_guard lock(registry_mu);
    for (auto &[name, g] : registry)
      g->barrier.reset(g->n_pes);
  }
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
#if PTO_HAVE_MPI
  if (mpi)
    mpi_abort(pe); // every rank's waits and barriers poll the abort word
#endif
  int expected = -1;
  first_failed_pe.compare_exchange_strong(expected, pe, std::memory_order_acq_rel);
  if (aborted.exchange(true, std::memory_order_acq_rel))
    return; // already aborted: the blocked PEs were woken then
  wake_barriers();
  for (int p = 0; p < n_pes; ++p)
    if (int32_t *word = ctxs[size_t(p)].waiting_on.load(std::memory_order_acquire))
      futex_wake_all(word); // a waiter that registers later sees `aborted` within a wait slice
}
void WorldState::wake_barriers() {
  std::lock_guard lock(registry_mu);
  for (auto &[name, g] : registry)
    g->barrier.wake_all();
}

GroupState &WorldState::group(const std::string &name, int n) {
  std::lock_guard lock(registry_mu);
  auto it = registry.find(name);
  if (it == registry.end()) {
    if (name != kWorldGroupName)
      throw DistributedError(
          "<runtime>", "create_shmem_tensor",
          fmt::format("unknown group '{}'; use \"{}\" for all PEs or create it first with "
                      "World::create_group",
                      name, kWorldGroupName));
    auto g = std::make_unique<GroupState>();
    g->name = name;
    g->n_pes = n;
    for (int pe = 0; pe < n; ++pe)
      g->world_pe.push_back(pe);
    g->barrier.reset(n);
    it = registry.emplace(name, std::move(g)).first;
  }
  GroupState &g = *it->second;
  if (g.n_pes != n)
    throw DistributedError("<runtime>", "create_shmem_tensor",
                           fmt::format("n_pes mismatch for group '{}': the kernel says {}, the "
                                       "group has {} PEs",
                                       name, n, g.n_pes));
  return g;
}
} // namespace detail

namespace {
constexpr const char *kWorldOp = "World";

int64_t effective_timeout_ms(int64_t requested, const std::source_location &loc) {
  if (requested <= 0)
    throw DistributedError(loc, kWorldOp,
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
    throw ArgumentError(loc, kWorldOp,
                        fmt::format("PTO_DEADLOCK_TIMEOUT_MS='{}' is not a positive integer "
                                    "number of milliseconds",
                                    env));
  return v;
}

// The world's shared state, after the checks of its arguments.
std::unique_ptr<detail::WorldState> make_state(int n_pes, const WorldOptions &opts,
                                               const Backend *backend,
                                               const std::source_location &loc) {
  if (n_pes < 1 || n_pes > 4096)
    throw DistributedError(loc, kWorldOp, fmt::format("n_pes must be in [1, 4096], got {}", n_pes));
  if (!backend)
    throw DistributedError(loc, kWorldOp, "the backend is null");
  const int64_t timeout_ms = effective_timeout_ms(opts.deadlock_timeout_ms, loc);
  return detail::host_boundary(loc, kWorldOp, fmt::format("creating {} PE contexts", n_pes), [&] {
    return std::make_unique<detail::WorldState>(n_pes, timeout_ms);
  });
}
} // namespace

World::World(int n_pes, WorldOptions opts, std::source_location loc)
    : World(n_pes, opts, make_threads_backend(), loc) {}

World::World(int n_pes, WorldOptions opts, std::unique_ptr<Backend> backend,
             std::source_location loc)
    : state_(make_state(n_pes, opts, backend.get(), loc)), backend_(std::move(backend)) {
  state_->mpi = std::string(backend_->name()) == "mpi";
}

World::~World() = default;

int World::n_pes() const { return state_->n_pes; }
int64_t World::deadlock_timeout_ms() const { return state_->deadlock_timeout_ms; }
const char *World::backend_name() const { return backend_->name(); }
pto_ctx *World::context(int pe, std::source_location loc) {
  if (pe < 0 || pe >= state_->n_pes)
    throw DistributedError(loc, "World::context",
                           fmt::format("PE {} is out of range [0, {})", pe, state_->n_pes));
  return &state_->ctxs[size_t(pe)];
}

void World::create_group(const std::string &name, const std::vector<int> &pes,
                         std::source_location loc) {
  detail::host_boundary(loc, "World::create_group", "creating group '" + name + "'", [&] {
    auto bad = [&](const std::string &what) {
      throw DistributedError(loc, "World::create_group", what);
    };
    if (name.empty() || name.size() > 127)
      bad(fmt::format("group name must be 1-127 bytes, got {} bytes", name.size()));
    if (name == detail::kWorldGroupName)
      bad(fmt::format("the name \"{}\" is reserved for the group of all PEs",
                      detail::kWorldGroupName));
    if (pes.empty())
      bad("group '" + name + "' has no PEs");
    std::vector<char> seen(size_t(state_->n_pes), 0);
    for (int pe : pes) {
      if (pe < 0 || pe >= state_->n_pes)
        bad(fmt::format("PE {} of group '{}' is out of range [0, {})", pe, name, state_->n_pes));
      if (seen[size_t(pe)]++)
        bad(fmt::format("PE {} appears twice in group '{}'", pe, name));
    }
    if (running_.load())
      bad("cannot create group '" + name + "' while the world is running");
    std::lock_guard lock(state_->registry_mu);
    auto it = state_->registry.find(name);
    if (it != state_->registry.end()) {
      if (it->second->world_pe != pes)
        bad("group '" + name + "' already exists with other PEs");
      return;
    }
    auto g = std::make_unique<detail::GroupState>();
    g->name = name;
    g->n_pes = int(pes.size());
    g->world_pe = pes;
    g->barrier.reset(g->n_pes);
    state_->registry.emplace(name, std::move(g));
  });
}

void World::run(const std::function<void(int pe)> &fn, std::source_location loc) {
  constexpr const char *kOp = "World::run";
  if (detail::tls_ctx)
    throw DistributedError(loc, kOp,
                           "called from inside PE " + std::to_string(detail::tls_ctx->pe) +
                               " of a running world; worlds do not nest");
  if (running_.exchange(true))
    throw DistributedError(loc, kOp, "this world is already running on another thread");
  struct Unmark {
    std::atomic<bool> &flag;
    ~Unmark() { flag.store(false); }
  } unmark{running_};

  detail::WorldState &w = *state_;
  w.reset_for_run();
  std::vector<std::exception_ptr> errors;
  std::vector<char> released;
  detail::host_boundary(loc, kOp, "preparing the run", [&] {
    errors.resize(size_t(w.n_pes));
    released.resize(size_t(w.n_pes), 0);
  });

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
    detail::free_scratch(ctx);
    ctx->sites = nullptr;
    ctx->error = nullptr; // drop the reference before the exception crosses threads
    detail::tls_ctx = nullptr;
    ctx->finished.store(true, std::memory_order_release);
    w.progress.bump();
    w.wake_barriers(); // PEs waiting for this one at a barrier now know it will not come
  };
  try {
    backend_->run(w.n_pes, body, [&] { w.mark_failed(-1); });
  } catch (const Error &e) { // the backend could not start every PE: at the caller's line
    throw DistributedError(loc, kOp, e.detail());
  } catch (...) {
    detail::rethrow_as_pto_error(
        format_location(loc), kOp,
        fmt::format("starting {} PEs on the {} backend", w.n_pes, backend_->name()));
  }

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
using pto::runtime::detail::abi_boundary;
using pto::runtime::detail::CollectiveBarrier;
using pto::runtime::detail::fail;

namespace {
constexpr const char *kEnterOp = "kernel_enter";

// Waits at group `g`'s barrier; on anything but Passed records the error and returns PTO_ERR.
// `what` names the collective in messages ("kernel entry", "kernel exit").
int32_t group_wait(pto_ctx *ctx, detail::GroupState &g, int local_pe, const char *op,
                   const char *what, const std::function<void()> &completion) {
  detail::WorldState &w = *ctx->world;
  w.progress.bump(); // this arrival
  auto watch = w.collective_watch();
  const auto r = g.barrier.arrive_and_wait(
      local_pe, watch, [&] { return w.aborted.load(std::memory_order_acquire); },
      [&](int p) {
        return w.ctxs[size_t(g.world_pe[size_t(p)])].finished.load(std::memory_order_acquire);
      },
      completion);
  auto world_pes = [&](const std::vector<int> &local) {
    std::vector<int> v;
    for (int p : local)
      v.push_back(g.world_pe[size_t(p)]);
    return v;
  };
  switch (r.outcome) {
  case CollectiveBarrier::Outcome::Passed:
    return PTO_OK;
  case CollectiveBarrier::Outcome::Aborted:
    return detail::fail_released(ctx, -1, op);
  case CollectiveBarrier::Outcome::PeerGone:
    return fail<pto::DistributedError>(
        ctx, -1, op,
        fmt::format("PE {} returned from its function without reaching the {} of group '{}'; "
                    "every PE of a group must launch the same kernels in the same order",
                    world_pes(r.missing).front(), what, g.name));
  case CollectiveBarrier::Outcome::TimedOut:
    return fail<pto::DeadlockError>(
        ctx, -1, op,
        fmt::format("PE {} timed out after {} ms (twice the deadlock timeout) without progress "
                    "on any PE at the {} of group '{}': {} of {} PEs arrived, missing PEs [{}]; "
                    "raise PTO_DEADLOCK_TIMEOUT_MS if a PE legitimately computes that long "
                    "without communicating",
                    ctx->pe, watch.timeout_ms(), what, g.name, r.arrived, g.n_pes,
                    fmt::join(world_pes(r.missing), ", ")));
  }
  return PTO_ERR;
}

std::vector<std::string> split_lines(const char *text) {
  std::vector<std::string> out;
  std::string line;
  for (const char *c = text; *c; ++c)
    if (*c == '\n') {
      out.push_back(std::move(line));
      line.clear();
    } else {
      line += *c;
    }
  if (!line.empty())
    out.push_back(std::move(line));
  return out;
}

// What differs between two layout descriptions (abi.h, pto_rt_kernel_enter's group_layout: one
// shmem tensor per line, "what\twhere"): the first shmem tensor that differs, or the counts.
std::string layout_difference(const char *a, const char *b, int pe_a, int pe_b) {
  const auto la = split_lines(a), lb = split_lines(b);
  auto what = [](const std::string &l) { return l.substr(0, l.find('\t')); };
  auto where = [](const std::string &l) {
    auto tab = l.find('\t');
    return tab == std::string::npos ? std::string("?") : l.substr(tab + 1);
  };
  for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
    if (what(la[i]) != what(lb[i]))
      return fmt::format("shmem tensor {} is {} on PE {} (created at {}) but {} on PE {} (created "
                         "at {})",
                         i, what(la[i]), pe_a, where(la[i]), what(lb[i]), pe_b, where(lb[i]));
  if (la.size() == lb.size())
    return ""; // the difference is not in the description
  return fmt::format("PE {} creates {} shmem tensors in the group, PE {} creates {}", pe_a,
                     la.size(), pe_b, lb.size());
}

// Runs in the last member to arrive at kernel entry, under the barrier lock: checks that every
// member proposed the same shmem layout for the group, then sizes its heap.
void enter_completion(const detail::WorldState &w, detail::GroupState &g) {
  g.enter_error.clear();
  for (int p = 1; p < g.n_pes; ++p) {
    if (g.proposed_hash[size_t(p)] != g.proposed_hash[0] ||
        g.proposed_bytes[size_t(p)] != g.proposed_bytes[0]) {
      const int pe0 = g.world_pe[0], pe = g.world_pe[size_t(p)];
      const char *l0 = g.proposed_layout[0], *lp = g.proposed_layout[size_t(p)];
      std::string what = l0 && lp ? layout_difference(l0, lp, pe0, pe) : "";
      if (what.empty())
        what = fmt::format("{} and {} heap bytes, layouts {:#018x} and {:#018x}",
                           g.proposed_bytes[0], g.proposed_bytes[size_t(p)], g.proposed_hash[0],
                           g.proposed_hash[size_t(p)]);
      const char *k0 = w.ctxs[size_t(pe0)].kernel_name, *kp = w.ctxs[size_t(pe)].kernel_name;
      if (k0 && kp && std::string(k0) != kp)
        what += fmt::format("; PE {} runs kernel '{}', PE {} kernel '{}'", pe0, k0, pe, kp);
      g.enter_error = fmt::format(
          "PEs {} and {} of group '{}' declared different shmem tensors ({}); every PE of a "
          "group must create the same shmem tensors (same shapes and dtypes) in the same order",
          pe0, pe, g.name, what);
      return;
    }
  }
  try {
    g.heap.resize(g.n_pes, g.proposed_bytes[0]);
  } catch (const std::bad_alloc &) {
    g.enter_error = fmt::format("cannot allocate a symmetric heap of {} bytes on each of {} PEs "
                                "for group '{}'",
                                g.proposed_bytes[0], g.n_pes, g.name);
  }
}

// The kernel's groups in name order: every PE takes group barriers in one global order, so PEs
// that share several groups cannot wait on each other in a cycle.
std::vector<int32_t> barrier_order(const pto_ctx *ctx) {
  std::vector<int32_t> order;
  for (size_t g = 0; g < ctx->groups.size(); ++g) {
    bool dup = false;
    for (size_t h = 0; h < g; ++h)
      dup = dup || ctx->groups[h] == ctx->groups[g];
    if (!dup)
      order.push_back(int32_t(g));
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return ctx->groups[size_t(a)]->name < ctx->groups[size_t(b)]->name;
  });
  return order;
}
} // namespace

extern "C" {

int32_t pto_rt_kernel_enter(pto_ctx *ctx, const uint64_t *group_hash, int32_t n_groups,
                            const int64_t *heap_bytes, const int32_t *group_n_pes,
                            const char *const *group_names, const char *const *group_where,
                            const char *const *group_layout) {
  return abi_boundary(ctx, [&]() -> int32_t {
    detail::WorldState &w = *ctx->world;
    detail::TraceScope trace(ctx, "kernel entry barrier", "barrier");
    if (n_groups < 0 || (n_groups > 0 && (!heap_bytes || !group_n_pes || !group_hash)))
      return fail<pto::InternalError>(ctx, -1, kEnterOp,
                                      fmt::format("bad group table: n_groups {}", n_groups));
    // Resolve the groups (local checks first: a PE with a bad table fails at once and releases
    // the others).
    ctx->groups.clear();
    ctx->group_pe.clear();
    for (int32_t g = 0; g < n_groups; ++g) {
      std::string name =
          group_names && group_names[g] ? std::string(group_names[g]) : fmt::format("group {}", g);
      if (heap_bytes[g] < 0)
        return fail<pto::InternalError>(
            ctx, -1, kEnterOp,
            fmt::format("negative heap size {} for group '{}'", heap_bytes[g], name));
      // Errors point at the kernel line that first used the group.
      const std::string where =
          group_where && group_where[g] ? std::string(group_where[g]) : std::string("<runtime>");
      auto fail_here = [&](const std::string &detail) {
        return detail::record_error(
            ctx,
            std::make_exception_ptr(pto::DistributedError(where, "create_shmem_tensor", detail)),
            /*released=*/false);
      };
      detail::GroupState *gs = nullptr;
      try {
        gs = &w.group(name, group_n_pes[g]);
      } catch (const pto::DistributedError &e) {
        return fail_here(e.detail());
      }
      auto it = std::find(gs->world_pe.begin(), gs->world_pe.end(), ctx->pe);
      if (it == gs->world_pe.end())
        return fail_here(fmt::format("PE {} is not a member of group '{}' (PEs [{}]); each PE may "
                                     "only use groups it belongs to",
                                     ctx->pe, name, fmt::join(gs->world_pe, ", ")));
      ctx->groups.push_back(gs);
      ctx->group_pe.push_back(int(it - gs->world_pe.begin()));
    }
#if PTO_HAVE_MPI
    if (w.mpi)
      return detail::mpi_kernel_enter(ctx, group_hash, heap_bytes);
#endif
    for (int32_t g : barrier_order(ctx)) {
      detail::GroupState &gs = *ctx->groups[size_t(g)];
      const int me = ctx->group_pe[size_t(g)];
      {
        // Proposals are written before arriving and read by the last arriver under the lock.
        std::lock_guard lock(w.registry_mu);
        gs.proposed_hash.resize(size_t(gs.n_pes));
        gs.proposed_bytes.resize(size_t(gs.n_pes));
        gs.proposed_layout.resize(size_t(gs.n_pes));
        gs.proposed_hash[size_t(me)] = group_hash[g];
        gs.proposed_bytes[size_t(me)] = heap_bytes[g];
        gs.proposed_layout[size_t(me)] = group_layout ? group_layout[g] : nullptr;
      }
      if (group_wait(ctx, gs, me, kEnterOp, "kernel entry barrier",
                     [&] { enter_completion(w, gs); }) != PTO_OK)
        return PTO_ERR;
      if (!gs.enter_error.empty())
        return fail<pto::DistributedError>(ctx, -1, kEnterOp, gs.enter_error);
      // Each PE zeroes its own heap (in parallel, first-touched by its user); the second barrier
      // keeps everyone from writing a peer's heap before the peer has zeroed it.
      gs.heap.zero(me);
      if (group_wait(ctx, gs, me, kEnterOp, "kernel entry barrier", [] {}) != PTO_OK)
        return PTO_ERR;
    }
    return PTO_OK;
  });
}

int32_t pto_rt_kernel_exit(pto_ctx *ctx) {
  return abi_boundary(ctx, [&]() -> int32_t {
    detail::TraceScope trace(ctx, "kernel exit barrier", "barrier");
#if PTO_HAVE_MPI
    if (ctx->world->mpi)
      return detail::mpi_kernel_exit(ctx);
#endif
    for (int32_t g : barrier_order(ctx)) {
      detail::GroupState &gs = *ctx->groups[size_t(g)];
      if (group_wait(ctx, gs, ctx->group_pe[size_t(g)], "kernel_exit", "kernel exit barrier",
                     [] {}) != PTO_OK)
        return PTO_ERR;
    }
    return PTO_OK;
  });
}

} // extern "C"
