// shmem_inline_test.cpp - The shmem ops with shape and offsets inline, as PyPTO spells them
// (pto/shmem_inline.h), and shmem_signal's target_pe = -1, through whole kernels on 3 PEs in both
// run modes. The kernel is a port of PyPTO's distributed allgather system test pattern (each PE
// puts its rows into every PE's buffer, signals every PE, waits per sender, gets each window),
// written fresh. Expected values are plain C++ on the inputs.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {
constexpr pto::runtime::WorldOptions kWorldOpts{.deadlock_timeout_ms = 10000};
} // namespace

TEST_CASE("shmem inline: put, signal(target_pe=-1), wait_until, get, clear_data, load") {
  const int n = support::world_pes(3);
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(
        "allgather_inline",
        [](pto::Tensor x, pto::Tensor y, pto::Tensor z, int pes) {
          const auto rows = x.shape(0), cols = x.shape(1);
          pto::set_vec_tile_shapes(rows, cols);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32,
                                               {rows.concrete() * pes, cols.concrete()});
          auto me = dist::my_symbolic_pe("world");
          std::vector<pto::Tensor> puts;
          for (int p = 0; p < pes; ++p)
            puts.push_back(dist::shmem_put(x, {me * rows, 0}, buf, p));
          // PyPTO: shmem_signal(buf, me, 1, [rows, cols], [me * rows, 0], target_pe=-1, pred=...)
          auto sent =
              dist::shmem_signal(buf, me, 1, {rows, cols}, {me * rows, 0}, -1, {.pred = puts});
          std::vector<pto::Tensor> got;
          for (int q = 0; q < pes; ++q) {
            auto ready = dist::shmem_wait_until(buf, q, 1, {rows, cols}, {q * rows, 0},
                                                {.clear_signal = true, .pred = {sent}});
            // Only the first row of the last sender's window is valid: the get copies that.
            std::vector<pto::SymbolicScalar> valid = {q == pes - 1 ? 1 : rows.concrete(), cols};
            auto part = dist::shmem_get(buf, q, {rows, cols}, {q * rows, 0},
                                        {.valid_shape = valid, .pred = {ready}});
            pto::assemble(part, {q * rows, 0}, y);
            got.push_back(part);
          }
          // Everyone has read everything before anyone clears: a barrier, then clear my first
          // window inline and load it back (zeros).
          auto sig = dist::create_shmem_signal("world", pes);
          auto met = dist::shmem_barrier_all(sig, {.pred = got});
          auto cleared = dist::shmem_clear_data(buf, {rows, cols}, {0, 0}, {.pred = {met}});
          auto zeros = dist::shmem_load(buf, me, {rows, cols}, {0, 0}, {.pred = {cleared}});
          pto::assemble(zeros + 7.0, {0, 0}, z);
        },
        support::opts(mode));
    const int64_t rows = 2, cols = 8;
    auto xs = support::tensors(n, pto::DT_FP32, {rows, cols});
    auto ys = support::tensors(n, pto::DT_FP32, {rows * n, cols});
    auto zs = support::tensors(n, pto::DT_FP32, {rows, cols});
    for (int p = 0; p < n; ++p)
      for (int64_t i = 0; i < rows * cols; ++i)
        xs[size_t(p)].set(i, 100.0 * p + double(i));
    auto world = support::make_world(n, kWorldOpts);
    for (int rep = 0; rep < 2; ++rep) {
      for (auto &y : ys)
        for (int64_t i = 0; i < y.numel(); ++i)
          y.set(i, -1.0);
      world->run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], zs[size_t(pe)], n); });
      support::share(ys);
      support::share(zs);
      for (int p = 0; p < n; ++p)
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < rows * cols; ++i) {
            const bool valid = q != n - 1 || i < cols;
            REQUIRE(ys[size_t(p)].get(q * rows * cols + i) ==
                    (valid ? 100.0 * q + double(i) : -1.0));
          }
      for (int p = 0; p < n; ++p)
        for (int64_t i = 0; i < rows * cols; ++i)
          REQUIRE(zs[size_t(p)].get(i) == 7.0);
    }
  }
}

TEST_CASE("shmem inline: a window outside the tensor names shmem_view at the user's line") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto k = pto::jit(
        "inline_bad_window",
        [&](pto::Tensor x, int pes) {
          pto::set_vec_tile_shapes(2, 8);
          auto buf = dist::create_shmem_tensor("world", pes, pto::DT_FP32, {2, 8});
          line = __LINE__ + 1;
          dist::shmem_clear_data(buf, {2, 8}, {2, 0}, {.pred = {x}});
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {2, 8});
    auto world = support::make_world(1, kWorldOpts);
    bool threw = false;
    try {
      world->run([&](int) { k(x, 1); });
    } catch (const pto::Error &e) {
      threw = true;
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find("shmem_inline_test.cpp:" + std::to_string(line) + ": shmem_view: ") !=
            std::string::npos);
    }
    CHECK(threw);
  }
}
