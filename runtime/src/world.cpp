// world.cpp - World: runs the PEs, picks the root-cause error; the state its PEs share (aborts,
// the group registry). Kernel entry and exit are in kernel_entry.cpp.
#include "pto/runtime/world.h"

#include "pto/env.h"

#include "boundary.h"
#include "world_state.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <new>

namespace pto::runtime {

namespace detail {
extern thread_local pto_ctx *tls_ctx;

WorldState::WorldState(int n, int64_t timeout_ms, Backend &backend)
    : n_pes(n), deadlock_timeout_ms(timeout_ms), local_pes(backend.local_pes(n)),
      is_local(size_t(n), 0), ctxs(new pto_ctx[size_t(n)]), groups_version(next_groups_version()) {
  for (int pe = 0; pe < n; ++pe) {
    ctxs[size_t(pe)].world = this;
    ctxs[size_t(pe)].pe = pe;
  }
  for (int pe : local_pes)
    is_local[size_t(pe)] = 1;
  transport = backend.make_transport(n, *this);
  reset_for_run();
}

uint64_t next_groups_version() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

WorldState::~WorldState() {
  registry.clear(); // the groups' transport sides before the transport
  transport.reset();
}

void WorldState::reset_for_run() {
  aborted.store(false);
  first_failed_pe.store(-1);
  {
    std::lock_guard lock(remote_mu);
    remote_failed_pe = -1;
    remote_what.clear();
  }
  transport->reset();
  {
    std::lock_guard lock(registry_mu);
    for (auto &[name, g] : registry)
      g->t->reset();
  }
  for (int pe : local_pes) {
    pto_ctx &c = ctxs[size_t(pe)];
    c.status = PTO_OK;
    c.error = nullptr;
    c.error_released = false;
    c.finished.store(false);
  }
}

void WorldState::mark_failed(int pe, const std::string &what) {
  int expected = -1;
  first_failed_pe.compare_exchange_strong(expected, pe, std::memory_order_acq_rel);
  if (aborted.exchange(true, std::memory_order_acq_rel))
    return;                   // already aborted: the blocked PEs were woken then
  transport->abort(pe, what); // wakes every sleeper: it re-checks `aborted`
}

void WorldState::remote_failed(int world_pe, const std::string &what) {
  {
    std::lock_guard lock(remote_mu);
    if (remote_failed_pe < 0) {
      remote_failed_pe = world_pe;
      remote_what = what;
    }
  }
  int expected = -1;
  first_failed_pe.compare_exchange_strong(expected, world_pe, std::memory_order_acq_rel);
  aborted.store(true, std::memory_order_release);
}

GroupState &WorldState::add_group(const std::string &name, const std::vector<int> &world_pe) {
  auto g = std::make_unique<GroupState>();
  g->name = name;
  g->n_pes = int(world_pe.size());
  g->world_pe = world_pe;
  g->direct_args.resize(world_pe.size());
  g->scratch.resize(world_pe.size());
  g->t = transport->make_group(name, world_pe);
  GroupState &added = *registry.emplace(name, std::move(g)).first->second;
  groups_version.store(next_groups_version(), std::memory_order_release);
  return added;
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
    std::vector<int> all(static_cast<size_t>(n));
    for (int pe = 0; pe < n; ++pe)
      all[size_t(pe)] = pe;
    add_group(name, all);
    it = registry.find(name);
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
  constexpr int64_t max = WorldOptions::kMaxDeadlockTimeoutMs;
  if (requested <= 0 || requested > max)
    throw DistributedError(
        loc, kWorldOp,
        fmt::format("deadlock_timeout_ms must be in [1, {}] (one year), got {}", max, requested));
  // Every PTO_* variable is checked here too (the transport's own, PTO_MPI_*, on every
  // transport), so that a typo fails at once rather than in the first kernel call.
  env::check_all(loc, " (creating a World)");
  if (requested != WorldOptions::kDefaultDeadlockTimeoutMs)
    return requested;
  return env::read_integer(env::var("PTO_DEADLOCK_TIMEOUT_MS"), loc).value_or(requested);
}

// The world's shared state, after the checks of its arguments.
std::unique_ptr<detail::WorldState> make_state(int n_pes, const WorldOptions &opts,
                                               Backend *backend, const std::source_location &loc) {
  if (n_pes < 1 || n_pes > 4096)
    throw DistributedError(loc, kWorldOp, fmt::format("n_pes must be in [1, 4096], got {}", n_pes));
  if (!backend)
    throw DistributedError(loc, kWorldOp, "the backend is null");
  const int64_t timeout_ms = effective_timeout_ms(opts.deadlock_timeout_ms, loc);
  return detail::host_boundary(
      loc, kWorldOp,
      fmt::format("creating {} PE contexts on the {} backend", n_pes, backend->name()), [&] {
        try {
          return std::make_unique<detail::WorldState>(n_pes, timeout_ms, *backend);
        } catch (const DistributedError &e) { // the backend's start-up checks: at the user's line
          if (e.where() != "<runtime>")
            throw;
          throw DistributedError(loc, kWorldOp, e.detail());
        }
      });
}
} // namespace

World::World(int n_pes, WorldOptions opts, std::source_location loc)
    : World(n_pes, opts, make_threads_backend(), loc) {}

World::World(int n_pes, WorldOptions opts, std::unique_ptr<Backend> backend,
             std::source_location loc)
    : state_(make_state(n_pes, opts, backend.get(), loc)), backend_(std::move(backend)) {}

World::~World() = default;

int World::n_pes() const { return state_->n_pes; }
int64_t World::deadlock_timeout_ms() const { return state_->deadlock_timeout_ms; }
const char *World::backend_name() const { return backend_->name(); }
pto_ctx *World::context(int pe, std::source_location loc) {
  if (pe < 0 || pe >= state_->n_pes)
    throw DistributedError(loc, "World::context",
                           fmt::format("PE {} is out of range [0, {})", pe, state_->n_pes));
  if (!state_->is_local[size_t(pe)])
    throw DistributedError(loc, "World::context",
                           fmt::format("PE {} runs in another process (the {} backend runs PEs "
                                       "[{}] here)",
                                       pe, backend_->name(), fmt::join(state_->local_pes, ", ")));
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
    state_->add_group(name, pes);
  });
}

void World::run(const std::function<void(int pe)> &fn, std::source_location loc) {
  constexpr const char *kOp = "World::run";
  if (!fn)
    throw ArgumentError(loc, kOp, "the function to run on every PE is empty");
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
  try {
    w.transport->begin_run(2 * w.deadlock_timeout_ms);
  } catch (const Error &e) { // the other processes did not start this run
    throw DistributedError(loc, kOp, e.detail());
  }
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
        w.mark_failed(pe, detail::describe(errors[size_t(pe)]));
    }
    detail::free_scratch(ctx);
    ctx->sites = nullptr;
    ctx->error = nullptr; // drop the reference before the exception crosses threads
    detail::tls_ctx = nullptr;
    ctx->finished.store(true, std::memory_order_release);
    w.progress.bump();
    w.transport->pe_returned(pe); // PEs waiting for it at a barrier now know it will not come
  };
  try {
    backend_->run(w.n_pes, body,
                  [&] { w.mark_failed(-1, "the backend could not start every PE"); });
  } catch (const Error &e) { // the backend could not start every PE: at the caller's line
    throw DistributedError(loc, kOp, e.detail());
  } catch (...) {
    detail::rethrow_as_pto_error(
        format_location(loc), kOp,
        fmt::format("starting {} PEs on the {} backend", w.n_pes, backend_->name()));
  }

  // A failure another process announced while this one's PEs finished (MPI: a barrier another
  // rank abandoned may still complete here) fails this run too.
  w.transport->progress();
  // Root cause: the first PE to fail, if its own error is primary; else any primary error.
  const int first = w.first_failed_pe.load();
  if (first >= 0 && errors[size_t(first)] && !released[size_t(first)])
    std::rethrow_exception(errors[size_t(first)]);
  for (size_t pe = 0; pe < errors.size(); ++pe)
    if (errors[pe] && !released[pe])
      std::rethrow_exception(errors[pe]);
  {
    std::lock_guard lock(w.remote_mu);
    if (w.remote_failed_pe >= 0) // the root cause is in another process
      throw DistributedError(
          loc, kOp,
          fmt::format("PE {} (another process) failed: {}", w.remote_failed_pe, w.remote_what));
  }
  for (const auto &e : errors)
    if (e)
      std::rethrow_exception(e);
}

} // namespace pto::runtime

namespace pto::runtime::detail {

transport::WaitResult CorePolicy::check(std::span<const int> missing, int &culprit) {
  if (w_.aborted.load(std::memory_order_acquire))
    return transport::WaitResult::Aborted;
  if (group_)
    for (int p : missing)
      if (const int wpe = group_->world_pe[size_t(p)];
          w_.ctxs[size_t(wpe)].finished.load(std::memory_order_acquire) ||
          (!w_.is_local[size_t(wpe)] && w_.transport->returned_elsewhere(wpe))) {
        culprit = culprit_ = p;
        return transport::WaitResult::PeerGone;
      }
  const auto now = ProgressWatch::Clock::now();
  if (!watch_)
    watch_.emplace(collective_ ? w_.collective_watch() : w_.watch());
  // Other processes' progress is fetched once per slice (it costs a round trip per process),
  // and once more before a stall is declared.
  if (now >= remote_next_) {
    remote_ = w_.transport->remote_progress();
    remote_next_ = now + watch_->slice();
  }
  bool stalled = watch_->stalled(now, remote_);
  if (stalled) { // re-check with a fresh sample before declaring it
    remote_ = w_.transport->remote_progress();
    stalled = watch_->stalled(now, remote_);
  }
  if (stalled) {
    missing_.assign(missing.begin(), missing.end());
    return transport::WaitResult::Stalled;
  }
  next_ = watch_->next_sample(now);
  return transport::WaitResult::Done;
}

std::chrono::nanoseconds CorePolicy::max_sleep() const {
  const auto left = next_ - ProgressWatch::Clock::now();
  return std::max<std::chrono::nanoseconds>(left, std::chrono::nanoseconds(0));
}

int64_t CorePolicy::timeout_ms() const {
  return watch_ ? watch_->timeout_ms()
                : (collective_ ? 2 : 1) * w_.deadlock_timeout_ms; // not stalled yet
}

} // namespace pto::runtime::detail
