// hardening_shmem_window_test.cpp - Issue 8 (found by the fuzz target, shmem/put-outside-rt): a
// shmem_put whose offset is known only at run time and so large that offset + window size
// wraps past INT64_MAX must be refused by the window rule (a DistributedError naming shmem_put,
// before any memory is touched) in both executors, not wrap to a negative end and pass.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using doctest::Contains;
namespace dist = pto::distributed;

namespace {

constexpr double kSentinel = -777; // never a value the kernel computes

/// One PE puts x [2, 4] into the [2, 8] buffer at columns {0, idx[0]}, then gets the buffer's
/// first four columns back into y.
void put_body(pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
  pto::set_vec_tile_shapes(2, 4);
  auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
  auto me = dist::my_symbolic_pe("world");
  auto put = dist::shmem_put(x, {0, idx.at({0})}, buf, me);
  auto win = dist::shmem_view(buf, {2, 4}, {0, 0});
  pto::assemble(dist::shmem_get(win, me, {.pred = {put}}), {0, 0}, y);
}

/// Runs the kernel on one PE with column offset `col`; y starts as the sentinel.
void run_put(pto::RunMode m, int64_t col, pto::HostTensor &y) {
  auto k = pto::jit("shmem_put_huge_offset", put_body, support::opts(m));
  pto::HostTensor idx(pto::DT_INT64, {1}), x(pto::DT_FP32, {2, 4});
  idx.data_as<int64_t>()[0] = col;
  x.fill(1);
  pto::runtime::World world(1);
  world.run([&](int) { k(idx, x, y); });
}

} // namespace

TEST_CASE("shmem_put: a run-time offset near INT64_MAX is a DistributedError, not a wrapped "
          "window end") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    for (int64_t col : {INT64_MAX - 2, INT64_MAX, int64_t{1} << 62, int64_t{5}}) {
      CAPTURE(col);
      pto::HostTensor y(pto::DT_FP32, {2, 4});
      y.fill(kSentinel);
      // The offending index: the window's last column when the offset is inside the data
      // (5 + 4 - 1 = 8), else the offset itself; never a wrapped value.
      const std::string want = "shmem_put: offset " + std::to_string(col <= 8 ? col + 3 : col) +
                               " out of bounds [0, 8)";
      CHECK_THROWS_WITH_AS(run_put(m, col, y), Contains(want.c_str()), pto::DistributedError);
      CHECK_THROWS_WITH_AS(run_put(m, col, y), Contains("hardening_shmem_window_test.cpp:"),
                           pto::DistributedError);
      for (int64_t i = 0; i < 8; ++i)
        CHECK(y.get(i) == kSentinel); // nothing reached y: the call failed before the get
    }
  }
}
