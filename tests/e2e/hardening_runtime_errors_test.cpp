// hardening_runtime_errors_test.cpp - Issue 8, runtime errors as a kernel's user sees them, in
// both executors: a failure without a call site of its own (scratch memory the host refuses)
// starts with the user's file:line and names the kernel, and a deadlock in a real kernel still
// ends in a DeadlockError at the user's line when no PE makes progress.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace dist = pto::distributed;

namespace {
constexpr const char *kFile = "hardening_runtime_errors_test.cpp:";

using support::thrown;
} // namespace

TEST_CASE("scratch memory the host refuses is a RuntimeError at the user's line" *
          doctest::skip(support::alloc_failure_aborts())) {
  // A local of 2^45 rows of 8 fp32 per input row (2^50 bytes: past any address space), sized
  // at run time from a DYNAMIC dim so that only the run can fail. Both executors name the op
  // that makes the local (`full`) and its line in this file.
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "huge_local",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto big = pto::full({x.shape()[0] * (int64_t{1} << 45), 8}, 3.0, pto::DT_FP32);
          pto::assemble(pto::view(big, {1, 8}, {0, 0}), {0, 0}, y);
        },
        support::opts(mode, {{{pto::DYNAMIC, 8}}, {}}));
    pto::HostTensor x(pto::DT_FP32, {1, 8}), y(pto::DT_FP32, {1, 8});
    const std::string msg = thrown<pto::RuntimeError>([&] { k(x, y); });
    CAPTURE(msg);
    CHECK(msg.rfind(kFile, 0) == 0);
    CHECK(msg.find("cannot allocate") != std::string::npos);
    CHECK(msg.find(": full: cannot allocate") != std::string::npos);
  }
}

TEST_CASE("a kernel that waits for a signal nobody sends is a DeadlockError at the user's line") {
  // Both PEs wait for a signal that nobody sends: no PE can make progress, so a wait fails
  // after the (small) deadlock timeout, naming the PE, slot, the awaited and current value.
  for (auto mode : support::run_modes()) {
    CAPTURE(std::string(support::mode_name(mode)));
    auto k = pto::jit(
        "lonely_wait",
        [](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          auto s = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {1, 8});
          auto me = dist::my_symbolic_pe("world");
          auto got = dist::shmem_wait_until(s, 0, 1, {.pred = {x}}); // slot 0, value 1
          pto::assemble(dist::shmem_get(s, me, {.pred = {got}}), {0, 0}, y);
        },
        support::opts(mode));
    pto::runtime::World world(2, {.deadlock_timeout_ms = 100});
    std::vector<pto::HostTensor> xs(2, pto::HostTensor(pto::DT_FP32, {1, 8})), ys = xs;
    const std::string msg = thrown<pto::DeadlockError>(
        [&] { world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }); });
    CAPTURE(msg);
    CHECK(msg.rfind(kFile, 0) == 0);
    CHECK(msg.find("shmem_wait_until: PE ") != std::string::npos);
    CHECK(msg.find("timed out after 100 ms without progress on any PE, waiting for signal slot 0 "
                   "(group 'world') to be == 1; current value 0") != std::string::npos);
  }
}

TEST_CASE("a bad PTO_DEADLOCK_TIMEOUT_MS is an ArgumentError at the kernel call, without a World") {
  // The implicit 1-PE world of a thread is made at its first kernel call: a fresh thread.
  auto k = pto::jit("timeout_env", [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(1, 8);
    pto::assemble(x + 1.0, {0, 0}, y);
  });
  pto::HostTensor x(pto::DT_FP32, {1, 8}), y(pto::DT_FP32, {1, 8});
  ::setenv("PTO_DEADLOCK_TIMEOUT_MS", "0", 1);
  std::string msg;
  std::thread([&] { msg = thrown<pto::ArgumentError>([&] { k(x, y); }); }).join();
  ::unsetenv("PTO_DEADLOCK_TIMEOUT_MS");
  CAPTURE(msg);
  CHECK(msg.rfind(kFile, 0) == 0);
  CHECK(msg.find("PTO_DEADLOCK_TIMEOUT_MS: '0' is out of range") != std::string::npos);
}
