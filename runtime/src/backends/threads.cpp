// threads.cpp - The threads backend: PE 0 runs on the caller's thread, every other PE on a
// persistent thread of this process. Between runs a PE thread polls the run epoch for a few
// microseconds (spin.h), then sleeps in a futex on it; World::run hands a run over by bumping
// the epoch and waits for the last PE thread the same way, so a trivial run costs a few
// microseconds instead of a thread creation per PE.
#include "pto/error.h"
#include "pto/runtime/backend.h"
#include "pto/runtime/signal.h"

#include "spin.h"
#include "transport/transport.h"

#include <atomic>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace pto::runtime {

namespace {

// A futex word with a "somebody sleeps on it" count (Dekker: the waker changes the word, fences,
// then reads the count; the sleeper raises the count, fences, then re-reads the word).
struct Gate {
  std::atomic<int32_t> word{0};
  std::atomic<int32_t> sleepers{0};
  std::atomic<int64_t> rung_ns{0}; ///< when a sleeper was last woken (detail::now_ns)

  int32_t *futex() { return reinterpret_cast<int32_t *>(&word); }
  void wake() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) > 0) {
      rung_ns.store(detail::now_ns(), std::memory_order_relaxed);
      futex_wake_all(futex());
    }
  }
  /// Waits until word != seen: polls for spin.budget(), then sleeps.
  void wait_change(int32_t seen, detail::AdaptiveSpin &spin) {
    auto changed = [&] { return word.load(std::memory_order_acquire) != seen; };
    if (detail::spin_until(changed, spin.budget()))
      return;
    sleepers.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const int64_t slept = detail::now_ns();
    while (!changed())
      futex_wait(futex(), seen, 1000);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (const int64_t rung = rung_ns.load(std::memory_order_relaxed); rung > slept)
      spin.woke(detail::now_ns() - rung);
  }
};

class ThreadsBackend final : public Backend {
public:
  ~ThreadsBackend() override {
    stop_.store(true, std::memory_order_relaxed);
    start_.word.fetch_add(1, std::memory_order_release);
    start_.wake();
    for (auto &t : threads_)
      t.join();
  }

  const char *name() const override { return "threads"; }

  std::vector<int> local_pes(int n_pes) const override {
    std::vector<int> v(static_cast<size_t>(n_pes));
    for (int pe = 0; pe < n_pes; ++pe)
      v[size_t(pe)] = pe;
    return v;
  }

  std::unique_ptr<transport::Transport> make_transport(int n_pes, transport::Host &) override {
    return transport::make_shm_transport(n_pes);
  }

  void run(int n_pes, const std::function<void(int pe)> &body,
           const std::function<void()> &) override {
    const auto spin = detail::spin_budget(n_pes);
    if (main_spin_.budget().count() == 0 && spin.count() > 0)
      main_spin_.set_cap(spin);
    // Start the missing PE threads before any PE runs: if one cannot start, nothing has run.
    while (int(threads_.size()) < n_pes - 1) {
      const int pe = int(threads_.size()) + 1;
      try {
        const int32_t epoch = start_.word.load(std::memory_order_relaxed);
        threads_.emplace_back([this, pe, epoch, spin] { thread_main(pe, epoch, spin); });
      } catch (const std::system_error &e) {
        throw DistributedError("<runtime>", "World::run",
                               "cannot start the thread of PE " + std::to_string(pe) + " of " +
                                   std::to_string(n_pes) + ": " + e.what());
      }
    }
    body_ = &body;
    n_run_ = n_pes;
    done_.word.store(n_pes - 1, std::memory_order_relaxed);
    start_.word.fetch_add(1, std::memory_order_release); // publishes body_, n_run_, done_
    start_.wake();
    body(0);
    for (int32_t left; (left = done_.word.load(std::memory_order_acquire)) != 0;)
      done_.wait_change(left, main_spin_);
    body_ = nullptr;
  }

private:
  // `seen`: the run epoch when the thread was made (it waits for the next one).
  void thread_main(int pe, int32_t seen, std::chrono::nanoseconds cap) {
    detail::AdaptiveSpin spin(cap);
    for (;;) {
      start_.wait_change(seen, spin);
      seen = start_.word.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_relaxed))
        return;
      if (pe < n_run_)
        (*body_)(pe);
      if (done_.word.fetch_sub(1, std::memory_order_acq_rel) == 1)
        done_.wake();
    }
  }

  std::vector<std::thread> threads_; ///< PE k + 1's thread at k
  Gate start_;                       ///< the run epoch, bumped per run (and to stop)
  Gate done_;                        ///< PE threads still running the current run
  const std::function<void(int)> *body_ = nullptr;
  int n_run_ = 0;
  std::atomic<bool> stop_{false};
  detail::AdaptiveSpin main_spin_; ///< the caller's, waiting for the PE threads
};

} // namespace

std::unique_ptr<Backend> make_threads_backend() { return std::make_unique<ThreadsBackend>(); }

} // namespace pto::runtime
