// threads.cpp - The threads backend: every PE is a std::thread of this process.
#include "pto/error.h"
#include "pto/runtime/backend.h"

#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace pto::runtime {

namespace {
class ThreadsBackend final : public Backend {
public:
  const char *name() const override { return "threads"; }

  void run(int n_pes, const std::function<void(int pe)> &body,
           const std::function<void()> &abort) override {
    std::vector<std::thread> threads;
    threads.reserve(size_t(n_pes));
    std::string failure;
    for (int pe = 0; pe < n_pes; ++pe) {
      try {
        threads.emplace_back(body, pe);
      } catch (const std::system_error &e) {
        failure = "cannot start the thread of PE " + std::to_string(pe) + " of " +
                  std::to_string(n_pes) + ": " + e.what();
        abort(); // the PEs already running are released from their collectives
        break;
      }
    }
    for (auto &t : threads)
      t.join();
    if (!failure.empty())
      throw DistributedError("<runtime>", "World::run", failure);
  }
};
} // namespace

std::unique_ptr<Backend> make_threads_backend() { return std::make_unique<ThreadsBackend>(); }

} // namespace pto::runtime
