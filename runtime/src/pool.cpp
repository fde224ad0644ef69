// pool.cpp - See pto/runtime/pool.h. One process-wide pool: a queue of ranges under one mutex,
// workers made on demand (never more than pool_threads() - 1), and a count of the threads that
// run kernel code (`busy_`: the PE threads' seats plus the workers lent out), which bounds how
// many workers a parallel_for may borrow.
#include "pto/runtime/pool.h"

#include "pto/env.h"
#include "pto/error.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <sched.h>
#include <thread>
#include <vector>

namespace pto::runtime {

namespace {

/// The CPUs this process may run on, divided among the MPI ranks of this node.
int default_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0
                 ? CPU_COUNT(&set)
                 : static_cast<int>(std::thread::hardware_concurrency());
  // Not a PTO_* variable: Open MPI's own, read leniently (a rank count, or nothing).
  if (const char *local =
          std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) { // NOLINT(concurrency-mt-unsafe)
    const long ranks = std::strtol(local, nullptr, 10);
    if (ranks > 1)
      cpus = static_cast<int>(cpus / ranks);
  }
  return std::clamp(cpus, 1, 1024);
}

/// Chunks per thread of a parallel_for: enough that a delayed thread leaves little to wait for.
constexpr int64_t kChunksPerThread = 8;

class Pool {
public:
  /// One parallel_for: its chunks, taken in turn by whoever is free (the caller first), so a
  /// worker the OS delays delays only the chunk it holds.
  struct Batch {
    pto_par_body body = nullptr;
    void *env = nullptr;
    int64_t begin = 0, n = 0, chunks = 0;
    std::atomic<int64_t> next{0};
    size_t left = 0; ///< tasks queued or running (under mu_)
    [[nodiscard]] int64_t bound(int64_t i) const {
      return begin + n / chunks * i + std::min(i, n % chunks);
    }
    void drain(int32_t worker) {
      for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
        body(env, bound(i), bound(i + 1), worker);
    }
  };
  struct Task {
    Batch *batch = nullptr;
    int32_t worker = 0;
  };

  void init(std::source_location loc) {
    std::call_once(once_, [&] {
      const auto n = env::read_integer(env::var("PTO_NUM_THREADS"), loc, " (calling a kernel)");
      limit_.store(n ? static_cast<int>(*n) : default_threads(), std::memory_order_relaxed);
    });
  }
  [[nodiscard]] int limit() const { return limit_.load(std::memory_order_relaxed); }
  void set_limit(int n) { limit_.store(n, std::memory_order_relaxed); }
  void seat(int d) { busy_.fetch_add(d, std::memory_order_relaxed); }
  [[nodiscard]] uint64_t lent() const { return lent_.load(std::memory_order_relaxed); }

  /// Takes up to `want` free seats for workers; returns how many it took.
  int reserve(int want) {
    int cur = busy_.load(std::memory_order_relaxed);
    for (;;) {
      const int take = std::min(want, limit() - cur);
      if (take <= 0)
        return 0;
      if (busy_.compare_exchange_weak(cur, cur + take, std::memory_order_relaxed))
        return take;
    }
  }

  void run(pto_par_body body, void *env, int64_t begin, int64_t end, int64_t grain,
           int32_t max_threads) {
    const int64_t n = end - begin;
    grain = std::max<int64_t>(grain, 1);
    const int64_t ranges = std::min<int64_t>({n / grain, max_threads, limit()});
    const int extra = ranges >= 2 ? reserve(static_cast<int>(ranges - 1)) : 0;
    if (extra == 0) {
      body(env, begin, end, 0);
      return;
    }
    // Up to kChunksPerThread chunks per thread, of at least `grain` iterations.
    Batch batch;
    batch.body = body;
    batch.env = env;
    batch.begin = begin;
    batch.n = n;
    batch.chunks = std::min<int64_t>(n / grain, int64_t{extra + 1} * kChunksPerThread);
    batch.left = static_cast<size_t>(extra);
    lent_.fetch_add(static_cast<uint64_t>(extra), std::memory_order_relaxed);
    bool alone = false;
    {
      std::lock_guard lk(mu_);
      // As many workers as seats could be lent at once (limit - 1: the caller holds one), so a
      // queued task never waits for another call's; a thread the system refuses leaves the
      // chunks to the caller (this entry point cannot fail).
      try {
        while (static_cast<int>(workers_.size()) < limit() - 1)
          workers_.emplace_back([this] { work(); });
      } catch (...) { // NOLINT(bugprone-empty-catch): std::system_error; fall back to one thread
      }
      alone = workers_.empty();
      for (int w = 1; w <= extra && !alone; ++w)
        queue_.push_back({&batch, w});
    }
    if (alone) {
      busy_.fetch_sub(extra, std::memory_order_relaxed);
      lent_.fetch_sub(static_cast<uint64_t>(extra), std::memory_order_relaxed);
      body(env, begin, end, 0);
      return;
    }
    todo_cv_.notify_all();
    batch.drain(0);
    // Every chunk is taken: tasks no worker has started yet are withdrawn (their seats freed),
    // then the caller waits only for the chunks still running.
    std::unique_lock lk(mu_);
    const auto before = queue_.size();
    std::erase_if(queue_, [&](const Task &t) { return t.batch == &batch; });
    const auto withdrawn = before - queue_.size();
    batch.left -= withdrawn;
    busy_.fetch_sub(static_cast<int>(withdrawn), std::memory_order_relaxed);
    done_cv_.wait(lk, [&] { return batch.left == 0; });
  }

private:
  std::once_flag once_;
  std::atomic<int> limit_{1};
  std::atomic<int> busy_{0};
  std::atomic<uint64_t> lent_{0};
  std::mutex mu_;
  std::condition_variable todo_cv_, done_cv_;
  std::deque<Task> queue_;
  std::vector<std::thread> workers_; ///< never joined: the pool lives as long as the process

  [[noreturn]] void work() {
    for (;;) {
      Task t;
      {
        std::unique_lock lk(mu_);
        todo_cv_.wait(lk, [&] { return !queue_.empty(); });
        t = queue_.front();
        queue_.pop_front();
      }
      t.batch->drain(t.worker);
      busy_.fetch_sub(1, std::memory_order_relaxed);
      std::lock_guard lk(mu_); // the caller reads batch.left under mu_ only: it outlives this
      if (--t.batch->left == 0)
        done_cv_.notify_all();
    }
  }
};

/// Leaked on purpose: workers may still wait on it while static destructors run.
Pool &pool() {
  static auto *p = new Pool; // NOLINT(cppcoreguidelines-owning-memory)
  return *p;
}

} // namespace

void init_pool(std::source_location loc) { pool().init(loc); }

int pool_threads() {
  pool().init(std::source_location::current());
  return pool().limit();
}

void set_pool_threads(int n, std::source_location loc) {
  if (n < 1 || n > 1024)
    throw ArgumentError(loc, "set_pool_threads",
                        "expected a thread count in [1, 1024], got " + std::to_string(n));
  pool().init(loc);
  pool().set_limit(n);
}

uint64_t pool_ranges_lent() { return pool().lent(); }

PoolSeat::PoolSeat() { pool().seat(1); }
PoolSeat::~PoolSeat() { pool().seat(-1); }

} // namespace pto::runtime

extern "C" int32_t pto_rt_workers(void) { return pto::runtime::pool().limit(); }

extern "C" void pto_rt_parallel_for(void * /*ctx*/, pto_par_body body, void *env, int64_t begin,
                                    int64_t end, int64_t grain, int32_t max_threads) {
  pto::runtime::pool().run(body, env, begin, end, grain, max_threads);
}
