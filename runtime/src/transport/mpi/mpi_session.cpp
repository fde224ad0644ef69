// mpi_session.cpp - See mpi_session.h: MPI initialization and finalization, the abort window,
// communicators per group, polled barriers and the progress thread.
#include "mpi_session.h"

#include "pto/env.h"
#include "pto/error.h"
#include "pto/runtime/mpi.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <sched.h>

namespace pto::runtime::mpi {

namespace {
constexpr const char *kOp = "MPI backend";
constexpr int64_t kAbortHdr = 64;   // the abort word's line
constexpr int64_t kAbortMsg = 512;  // bytes of message per sending rank, NUL-terminated
constexpr int64_t kReturnedAt = 16; // the returned-run word in the abort window
// How long the ranks wait for each other at MPI start (twice the default deadlock timeout).
constexpr int64_t kSetupTimeoutMs = 60000;

// PTO_MPI_SHARED and PTO_MPI_PROGRESS (0 or 1), checked (env.h): MPI may start before any World
// (mpi_size), so a bad value is an ArgumentError naming the variable here too.
bool env_is_zero(const char *name) {
  return env::read_choice(env::var(name), std::source_location::current(), " (starting MPI)") ==
         "0";
}

[[noreturn]] void mpi_fail(const char *what, int rc) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw RuntimeError("<runtime>", kOp, fmt::format("{} failed: {}", what, msg));
}

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS)
    mpi_fail(what, rc);
}

Session *g_session = nullptr;
std::once_flag g_once;

void at_exit() {
  if (g_session)
    g_session->shutdown();
}

// Backs off a polling loop: spin (Session::spin_polls), then yield the core.
void relax(int64_t &spins, int limit) {
  if (++spins > limit)
    sched_yield();
}
} // namespace

bool launched_by_mpirun() { return pto::runtime::launched_by_mpirun(); }

int64_t Layout::elements() const {
  int64_t e = 1;
  for (int d = 0; d < n; ++d)
    e *= extent[d];
  return e;
}

Session::Session() {
  int inited = 0;
  MPI_Initialized(&inited);
  int provided = MPI_THREAD_SINGLE;
  const bool want_progress = !env_is_zero("PTO_MPI_PROGRESS");
  if (!inited)
    check(MPI_Init_thread(nullptr, nullptr,
                          want_progress ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided),
          "MPI_Init_thread");
  else
    MPI_Query_thread(&provided);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  check(MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_),
        "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  check(MPI_Comm_dup(world_, &run_comm_), "MPI_Comm_dup");
  check(MPI_Comm_dup(world_, &host_comm_), "MPI_Comm_dup");
  int node_size = 0;
  MPI_Comm_size(node_, &node_size);
  shared_ = node_size == size_ && !env_is_zero("PTO_MPI_SHARED");
  const unsigned cpus = std::thread::hardware_concurrency();
  spin_polls_ = cpus > 0 && unsigned(node_size) <= cpus ? 1 << 15 : 64;

  const int rc = MPI_Win_allocate(MPI_Aint(kAbortHdr + kAbortMsg * size_), 1, MPI_INFO_NULL, world_,
                                  &abort_mem_, &abort_win_);
  if (rc != MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE)
    throw RuntimeError("<runtime>", kOp,
                       "MPI_Win_allocate failed under MPI_THREAD_MULTIPLE (Open MPI's osc/pt2pt "
                       "refuses it): set PTO_MPI_PROGRESS=0 to run without the progress thread");
  check(rc, "MPI_Win_allocate (abort word)");
  MPI_Win_set_errhandler(abort_win_, MPI_ERRORS_RETURN);
  std::memset(abort_mem_, 0, size_t(kAbortHdr + kAbortMsg * size_));
  abort_word_ = reinterpret_cast<int32_t *>(abort_mem_);
  progress_word_ = reinterpret_cast<uint64_t *>(abort_mem_ + 8);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, abort_win_);
  MPI_Barrier(world_);
  // The settings that select collective MPI calls (the window kind; the thread level and the
  // progress thread) must be the same on every rank, else the ranks call different collectives
  // and block in MPI: compared here once, before any of them is used.
  for (const char *name : {"PTO_MPI_SHARED", "PTO_MPI_PROGRESS"}) {
    const std::optional<std::string> v = env::raw(env::var(name));
    const std::string d =
        differences(host_comm_, v ? fmt::format("'{}'", *v) : "", kSetupTimeoutMs, kOp);
    if (!d.empty() && setup_error_.empty())
      setup_error_ = fmt::format("{} differs across the MPI ranks ({}); every rank must run with "
                                 "the same value",
                                 name, d);
  }
  if (!setup_error_.empty()) {
    shared_ = false;
    return; // session() reports it on every rank; at exit the job ends non-zero
  }
  // Passive-target RMA over a network completes only while the target calls MPI (Open MPI has no
  // general asynchronous progress): a thread pokes the progress engine while this PE computes.
  if (!shared_ && provided == MPI_THREAD_MULTIPLE && want_progress)
    progress_ = std::thread([this] { progress_loop(); });
}

void Session::progress_loop() {
  while (!stop_.load(std::memory_order_acquire)) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world_, &flag, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::string Session::describe() const {
  return shared_ ? fmt::format("MPI, {} ranks, shared-memory windows (load/store)", size_)
                 : fmt::format("MPI, {} ranks, RMA windows (MPI_Win_allocate{})", size_,
                               progress_.joinable() ? ", progress thread" : "");
}

MPI_Comm Session::group_comm(const std::vector<int> &members, bool fresh) {
  if (!fresh) {
    std::lock_guard lock(mu_);
    for (auto &[m, c] : comms_)
      if (m == members)
        return c;
  }
  MPI_Group wg = MPI_GROUP_NULL, g = MPI_GROUP_NULL;
  MPI_Comm_group(world_, &wg);
  check(MPI_Group_incl(wg, int(members.size()), members.data(), &g), "MPI_Group_incl");
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = MPI_Comm_create_group(world_, g, 0, &c);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  check(rc, "MPI_Comm_create_group");
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  std::lock_guard lock(mu_);
  for (auto &[m, cached] : comms_)
    if (m == members) {
      cached = c;
      return c;
    }
  comms_.emplace_back(members, c);
  return c;
}

std::shared_ptr<MpiHeap> Session::map_heap(MPI_Comm comm, int64_t bytes) {
  auto h = std::make_shared<MpiHeap>(*this, comm, bytes);
  std::lock_guard lock(mu_);
  heaps_.push_back(h);
  return h;
}

void Session::abort_all(int failed, const std::string &what) {
  const int32_t v = failed >= 0 ? failed + 1 : -1;
  int32_t expected = 0;
  if (!std::atomic_ref<int32_t>(*abort_word_)
           .compare_exchange_strong(expected, v, std::memory_order_acq_rel))
    return; // already aborted: the others were told then
  char msg[kAbortMsg] = {0};
  what.copy(msg, size_t(kAbortMsg - 1)); // at most that many: msg stays NUL-terminated
  const MPI_Aint at = MPI_Aint(kAbortHdr + kAbortMsg * rank_);
  std::memcpy(abort_mem_ + at, msg, size_t(kAbortMsg)); // this rank's own abort_message()
  for (int r = 0; r < size_; ++r)
    if (r != rank_)
      MPI_Put(msg, int(kAbortMsg), MPI_BYTE, r, at, int(kAbortMsg), MPI_BYTE, abort_win_);
  MPI_Win_flush_all(abort_win_); // the message lands before the word that points at it
  for (int r = 0; r < size_; ++r)
    if (r != rank_)
      MPI_Accumulate(&v, 1, MPI_INT32_T, r, 0, 1, MPI_INT32_T, MPI_REPLACE, abort_win_);
  MPI_Win_flush_all(abort_win_);
}

int Session::aborted_by() {
  int32_t v = 0;
  MPI_Fetch_and_op(nullptr, &v, MPI_INT32_T, rank_, 0, MPI_NO_OP, abort_win_);
  MPI_Win_flush(rank_, abort_win_);
  return v == 0 ? -1 : v < 0 ? -2 : v - 1;
}

std::string Session::abort_message() {
  const int failed = aborted_by();
  if (failed < 0 || failed >= size_)
    return "";
  MPI_Win_sync(abort_win_);
  const char *m = reinterpret_cast<const char *>(abort_mem_ + kAbortHdr + kAbortMsg * failed);
  return std::string(m, strnlen(m, size_t(kAbortMsg - 1)));
}

void Session::clear_abort() {
  const int32_t zero = 0;
  MPI_Accumulate(&zero, 1, MPI_INT32_T, rank_, 0, 1, MPI_INT32_T, MPI_REPLACE, abort_win_);
  MPI_Win_flush(rank_, abort_win_);
}

uint64_t Session::others_progress() {
  uint64_t sum = 0;
  std::vector<uint64_t> v(size_t(size_), 0);
  for (int r = 0; r < size_; ++r)
    if (r != rank_)
      MPI_Fetch_and_op(nullptr, &v[size_t(r)], MPI_UINT64_T, r, 8, MPI_NO_OP, abort_win_);
  MPI_Win_flush_all(abort_win_);
  for (uint64_t x : v)
    sum += x;
  return sum;
}

bool Session::poll() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world_, &flag, MPI_STATUS_IGNORE);
  return aborted_by() != -1;
}

namespace {
WaitOutcome wait_request(Session &s, MPI_Request &req, int64_t timeout_ms, bool stop_on_abort) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int64_t spins = 0;
  for (;;) {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag)
      return WaitOutcome::Done;
    if (s.poll() && stop_on_abort)
      return WaitOutcome::Aborted; // the request stays pending: the job is over
    if ((spins & 255) == 255 && std::chrono::steady_clock::now() >= deadline)
      return WaitOutcome::TimedOut;
    relax(spins, s.spin_polls());
  }
}
} // namespace

WaitOutcome Session::barrier(MPI_Comm comm, int64_t timeout_ms, bool stop_on_abort) {
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
  return wait_request(*this, req, timeout_ms, stop_on_abort);
}

WaitOutcome Session::collective(MPI_Comm comm, const char *op, const std::string &what,
                                int64_t timeout_ms, const std::function<int(MPI_Request *)> &start,
                                bool stop_on_abort, std::vector<std::shared_ptr<void>> keep) {
  {
    std::lock_guard lock(mu_);
    if (std::find(abandoned_.begin(), abandoned_.end(), comm) != abandoned_.end())
      throw DistributedError("<runtime>", op,
                             fmt::format("cannot run {}: an earlier collective call of this kind "
                                         "did not meet the other MPI ranks, so the job cannot "
                                         "go on",
                                         what));
  }
  MPI_Request req = MPI_REQUEST_NULL;
  check(start(&req), what.c_str());
  const WaitOutcome r = wait_request(*this, req, timeout_ms, stop_on_abort);
  if (r == WaitOutcome::Done)
    return r;
  {
    std::lock_guard lock(mu_);
    abandoned_.push_back(comm); // its request stays pending: never matched by another call
  }
  retain(std::move(keep)); // MPI may still complete it, into this memory
  if (r == WaitOutcome::Aborted)
    return r;
  const std::string msg = fmt::format("the MPI ranks did not all call {} within {} ms; every "
                                      "rank must make the same collective calls in the same order",
                                      what, timeout_ms);
  abort_all(rank_, msg);
  throw DistributedError("<runtime>", op, msg);
}

void Session::retain(std::vector<std::shared_ptr<void>> buffers) {
  std::lock_guard lock(mu_);
  for (auto &b : buffers)
    if (b)
      retained_.push_back(std::move(b));
}

namespace {
uint64_t fnv1a(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}
} // namespace

std::string Session::differences(MPI_Comm comm, const std::string &mine, int64_t timeout_ms,
                                 const char *op) {
  if (mine.size() > size_t(INT_MAX / 2))
    throw RuntimeError("<runtime>", op,
                       fmt::format("{} bytes to compare exceed an MPI count", mine.size()));
  int n = 1;
  MPI_Comm_size(comm, &n);
  // The buffers outlive an abandoned request (retain): shared, never on the stack.
  const auto hp =
      std::make_shared<std::array<uint64_t, 2>>(std::array<uint64_t, 2>{fnv1a(mine), mine.size()});
  const auto &h = *hp;
  const auto allp = std::make_shared<std::vector<uint64_t>>(static_cast<size_t>(2 * n));
  const auto &all = *allp;
  collective(comm, op, "the ranks' agreement on their settings", timeout_ms,
             [&](MPI_Request *r) {
               return MPI_Iallgather(hp->data(), 2, MPI_UINT64_T, allp->data(), 2, MPI_UINT64_T,
                                     comm, r);
             },
             false, {hp, allp});
  bool same = true;
  std::vector<int> lens(static_cast<size_t>(n)), displs(static_cast<size_t>(n));
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    const uint64_t hash = all[2 * size_t(r)], len = all[2 * size_t(r) + 1];
    same = same && hash == h[0] && len == h[1];
    lens[size_t(r)] = int(len);
    displs[size_t(r)] = int(total);
    total += lens[size_t(r)];
  }
  if (same)
    return "";
  if (total > INT_MAX)
    throw RuntimeError("<runtime>", op,
                       fmt::format("{} bytes to compare exceed an MPI count", total));
  const auto minep = std::make_shared<std::string>(mine);
  const auto textsp = std::make_shared<std::string>(size_t(total), '\0');
  const auto countsp =
      std::make_shared<std::pair<std::vector<int>, std::vector<int>>>(lens, displs);
  const std::string &texts = *textsp;
  collective(comm, op, "the ranks' agreement on their settings", timeout_ms,
             [&](MPI_Request *r) {
               return MPI_Iallgatherv(minep->data(), int(minep->size()), MPI_CHAR, textsp->data(),
                                      countsp->first.data(), countsp->second.data(), MPI_CHAR, comm,
                                      r);
             },
             false, {minep, textsp, countsp});
  // Ranks grouped by text, in order of their first rank.
  std::vector<std::pair<std::string, std::vector<int>>> by_text;
  for (int r = 0; r < n; ++r) {
    std::string t = texts.substr(size_t(displs[size_t(r)]), size_t(lens[size_t(r)]));
    auto it = std::find_if(by_text.begin(), by_text.end(), [&](auto &e) { return e.first == t; });
    if (it == by_text.end())
      by_text.emplace_back(std::move(t), std::vector<int>{r});
    else
      it->second.push_back(r);
  }
  std::string out;
  for (const auto &[t, ranks] : by_text) {
    if (!out.empty())
      out += "; ";
    out += fmt::format("rank{} {}: {}", ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "),
                       t.empty() ? "unset" : t);
  }
  return out;
}

std::vector<std::string> Session::gather_to_root(const std::string &mine, int64_t timeout_ms,
                                                 const char *op) {
  if (mine.size() > size_t(INT_MAX))
    throw RuntimeError("<runtime>", kOp,
                       fmt::format("{} bytes to gather exceed an MPI count", mine.size()));
  // The buffers outlive an abandoned request (retain): shared, never on the stack.
  const auto lenp = std::make_shared<int>(int(mine.size()));
  const int len = *lenp;
  const auto countsp = std::make_shared<std::pair<std::vector<int>, std::vector<int>>>(
      std::vector<int>(size_t(rank_ == 0 ? size_ : 0)),
      std::vector<int>(size_t(rank_ == 0 ? size_ : 0)));
  std::vector<int> &lens = countsp->first, &displs = countsp->second;
  collective(host_comm_, op, "World::write_trace (collective on MPI)", timeout_ms,
             [&](MPI_Request *r) {
               return MPI_Igather(lenp.get(), 1, MPI_INT, lens.data(), 1, MPI_INT, 0, host_comm_,
                                  r);
             },
             false, {lenp, countsp});
  const auto minep = std::make_shared<std::string>(mine);
  const auto allp = std::make_shared<std::string>();
  std::string &all = *allp;
  if (rank_ == 0) {
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[size_t(r)] = int(total);
      total += lens[size_t(r)];
      if (total > INT_MAX)
        throw RuntimeError("<runtime>", kOp,
                           fmt::format("{} bytes to gather exceed an MPI count", total));
    }
    all.resize(size_t(total));
  }
  collective(host_comm_, op, "World::write_trace (collective on MPI)", timeout_ms,
             [&](MPI_Request *r) {
               return MPI_Igatherv(minep->data(), len, MPI_CHAR, all.data(), lens.data(),
                                   displs.data(), MPI_CHAR, 0, host_comm_, r);
             },
             false, {minep, allp, countsp});
  std::vector<std::string> out;
  for (int r = 0; r < int(lens.size()); ++r)
    out.push_back(all.substr(size_t(displs[size_t(r)]), size_t(lens[size_t(r)])));
  return out;
}

void Session::publish_returned(int64_t run) {
  MPI_Accumulate(&run, 1, MPI_INT64_T, rank_, kReturnedAt, 1, MPI_INT64_T, MPI_REPLACE, abort_win_);
  MPI_Win_flush(rank_, abort_win_);
}

int64_t Session::returned_run(int r) {
  int64_t v = 0;
  MPI_Fetch_and_op(nullptr, &v, MPI_INT64_T, r, kReturnedAt, MPI_NO_OP, abort_win_);
  MPI_Win_flush(r, abort_win_);
  return v;
}

void Session::shutdown() {
  if (finalized_)
    return;
  finalized_ = true;
  stop_.store(true, std::memory_order_release);
  if (progress_.joinable())
    progress_.join();
  std::fflush(stdout);
  std::fflush(stderr);
  // A run that failed earlier is not a failed job: its error reached the user's program, which
  // went on to exit (with the status it chose). Only ranks that cannot meet, or a setup that
  // differs across the ranks, end in MPI_Abort.
  const bool failed = !setup_error_.empty();
  // Every rank reaches here at exit; a rank that never does (stuck outside the runtime) must not
  // hang the job: after 10 s the watchdog aborts it, non-zero.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 1000 && !done.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!done.load()) {
      std::fprintf(stderr,
                   "ptojit: MPI rank %d: the ranks did not meet at exit within 10 s; "
                   "MPI_Abort\n",
                   rank_);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  });
  if (barrier(world_, 10000, /*stop_on_abort=*/false) == WaitOutcome::Done && !failed) {
    std::vector<std::shared_ptr<MpiHeap>> live;
    {
      std::lock_guard lock(mu_);
      for (auto &w : heaps_)
        if (auto h = w.lock())
          live.push_back(h);
    }
    for (auto &h : live) // in creation order on every rank: the frees are collective
      h->free_windows();
    MPI_Win_unlock_all(abort_win_);
    MPI_Win_free(&abort_win_);
    MPI_Finalize();
    done.store(true);
    watchdog.join();
    return;
  }
  done.store(true);
  watchdog.join();
  // The ranks did not all arrive, or their setups differ: end them all with a non-zero status
  // rather than finalize windows whose collectives may never complete.
  MPI_Abort(MPI_COMM_WORLD, 1);
}

Session &session() {
  if (!launched_by_mpirun())
    throw DistributedError("<runtime>", kOp,
                           "the MPI backend needs one process per PE started by mpirun, e.g. "
                           "`mpirun -np 4 prog --backend mpi` (as root add --allow-run-as-root; "
                           "on few cores --oversubscribe)");
  std::call_once(g_once, [] {
    g_session = new Session(); // never deleted: at_exit finalizes, static destructors may follow
    std::atexit(at_exit);
  });
  if (!g_session->setup_error().empty())
    throw DistributedError("<runtime>", kOp, g_session->setup_error());
  return *g_session;
}

} // namespace pto::runtime::mpi
