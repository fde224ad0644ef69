// hardening_threads_test.cpp - pto::jit called from several threads at once (issue 8): a kernel
// whose trace starts a thread that calls the kernel again never hangs (bounded: a typed error
// naming the kernel once too many traces are in flight), and concurrent first calls of one
// kernel, from the PEs of a World or from plain threads, all run the right program and compile
// it once. Expected values are plain loops.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string at(int line) { return "hardening_threads_test.cpp:" + std::to_string(line); }

pto::HostTensor ramp() {
  pto::HostTensor t(pto::DT_FP32, {4, 8});
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, double(i) * 0.5);
  return t;
}

/// Every y[i] == x[i] + c.
bool is_x_plus(const pto::HostTensor &x, const pto::HostTensor &y, double c) {
  for (int64_t i = 0; i < x.numel(); ++i)
    if (y.get(i) != x.get(i) + c)
      return false;
  return true;
}

int jit_compiles(pto::RunMode mode) { return mode == pto::RunMode::Jit ? 1 : 0; }

/// The errors thrown on the threads a kernel's trace started.
struct Errors {
  std::mutex mu;
  std::vector<std::exception_ptr> list;
  void add(std::exception_ptr e) {
    std::lock_guard lk(mu);
    list.push_back(std::move(e));
  }
};

} // namespace

TEST_CASE("hardening threads: a trace that calls its kernel from another thread never hangs") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto x = ramp();
    pto::HostTensor y(pto::DT_FP32, {4, 8});
    Errors errors;
    std::atomic<int> levels{-1}; // < 0: no limit; else how many more threads may start
    double c = 1; // each subcase its own program, so that its first JIT call compiles
    int line = 0;
    std::function<void()> again;
    auto k = pto::jit(
        "self_thread",
        [&](pto::Tensor a, pto::Tensor b) {
          if (levels.load() != 0) {
            levels.fetch_sub(levels.load() > 0 ? 1 : 0);
            std::thread t([&] {
              try {
                again();
              } catch (...) {
                errors.add(std::current_exception());
              }
            });
            t.join();
          }
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::add(a, c), {0, 0}, b);
        },
        support::opts(mode));
    again = [&] {
      line = __LINE__ + 1;
      k(x, y);
    };
    SUBCASE("unbounded: the deepest call is an ArgumentError, the others run") {
      k(x, y);
      REQUIRE(errors.list.size() == 1);
      std::string msg =
          support::thrown<pto::ArgumentError>([&] { std::rethrow_exception(errors.list[0]); });
      CHECK(msg.find(at(line) + ": self_thread: kernel 'self_thread' already has 64 traces in "
                                "flight: its function starts a thread that calls the kernel "
                                "again") == 0);
      CHECK(is_x_plus(x, y, 1.0));
      // Every level but the refused one traced; one program was published and compiled.
      CHECK(k.stats().traces == 64);
      CHECK(k.stats().compiles == jit_compiles(mode));
      CHECK(k.stats().calls == 64);
    }
    SUBCASE("bounded: every level runs") {
      levels = 3;
      c = 3;
      k(x, y);
      CHECK(errors.list.empty());
      CHECK(is_x_plus(x, y, 3.0));
      CHECK(k.stats().traces == 4);
      CHECK(k.stats().compiles == jit_compiles(mode));
      k(x, y); // published: no new trace
      CHECK(k.stats().traces == 4);
      CHECK(k.stats().calls == 5);
    }
  }
}

TEST_CASE("hardening threads: concurrent first calls of one kernel trace and compile once") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto x = ramp();
    std::atomic<int> traces_running{0}, most{0};
    double c = 2; // each subcase its own program, so that its first JIT call compiles
    auto k = pto::jit(
        "many_firsts",
        [&](pto::Tensor a, pto::Tensor b) {
          int now = ++traces_running;
          most = std::max(most.load(), now);
          std::this_thread::sleep_for(std::chrono::milliseconds(20)); // let the others arrive
          pto::set_vec_tile_shapes(4, 8);
          pto::assemble(pto::add(a, c), {0, 0}, b);
          --traces_running;
        },
        support::opts(mode));
    SUBCASE("the PEs of one World wait for one trace") {
      std::vector<pto::HostTensor> ys;
      for (int p = 0; p < 8; ++p)
        ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
      pto::runtime::World world(8);
      world.run([&](int pe) { k(x, ys[size_t(pe)]); });
      for (auto &y : ys)
        CHECK(is_x_plus(x, y, 2.0));
      CHECK(k.stats().traces == 1);
      CHECK(most == 1);
      CHECK(k.stats().compiles == jit_compiles(mode));
      CHECK(k.stats().calls == 8);
    }
    SUBCASE("plain threads may trace at once; every one runs the one published program") {
      c = 5;
      std::vector<pto::HostTensor> ys;
      for (int p = 0; p < 6; ++p)
        ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
      std::vector<std::thread> threads;
      for (size_t t = 0; t < ys.size(); ++t)
        threads.emplace_back([&, t] { k(x, ys[t]); });
      for (auto &t : threads)
        t.join();
      for (auto &y : ys)
        CHECK(is_x_plus(x, y, 5.0));
      CHECK(k.stats().traces >= 1);
      CHECK(k.stats().traces <= 6);
      CHECK(k.stats().compiles == jit_compiles(mode));
      CHECK(k.stats().calls == 6);
    }
  }
}

TEST_CASE("hardening threads: a trace that fails fails every PE waiting for it, then retraces") {
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto x = ramp();
    std::atomic<bool> broken{true};
    int line = 0;
    auto k = pto::jit(
        "fails_once",
        [&](pto::Tensor a, pto::Tensor b) {
          pto::set_vec_tile_shapes(4, 8);
          line = __LINE__ + 1;
          auto v = pto::view(a, {4, 8}, {broken ? 1 : 0, 0}); // rows [1, 5) of 4: a ShapeError
          pto::assemble(pto::add(v, 1.0), {0, 0}, b);
        },
        support::opts(mode));
    std::vector<pto::HostTensor> ys;
    for (int p = 0; p < 4; ++p)
      ys.emplace_back(pto::DT_FP32, std::vector<int64_t>{4, 8});
    pto::runtime::World world(4);
    support::expect_error<pto::ShapeError>(
        [&] { world.run([&](int pe) { k(x, ys[size_t(pe)]); }); }, "hardening_threads_test.cpp",
        line, "view");
    CHECK(k.stats().traces == 0); // nothing was published
    broken = false;
    world.run([&](int pe) { k(x, ys[size_t(pe)]); });
    for (auto &y : ys)
      CHECK(is_x_plus(x, y, 1.0));
    CHECK(k.stats().traces == 1);
  }
}
