// collectives_into_test.cpp - Issue 13 item 6: PyPTO's C++ library collectives on the caller's
// shmem tensor and output (pto/collectives_into.h), in PyPTO's argument order, on 4 PEs in both
// run modes, with a valid shape smaller than the input as in PyPTO's test-case tables (§7.10).
// Expected values are plain C++ over every PE's input. Also the shape, dtype and reduction errors.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <typeinfo>
#include <vector>

namespace dist = pto::distributed;

namespace {

constexpr int64_t kRows = 8, kCols = 8, kValidRows = 5, kValidCols = 6;

int32_t input(int pe, int64_t r, int64_t c) {
  return static_cast<int32_t>((r * 13 + c * 7 + pe * 5) % 19 - 9);
}

/// Runs `which` (0 one-shot, 1 two-shot, 2 allgather, 3 reduce-scatter) on n PEs; returns each
/// PE's output (filled with -100 before).
std::vector<pto::HostTensor> run(int which, pto::RunMode mode, int n) {
  const int64_t out_rows = which == 2 ? n * kRows : which == 3 ? kRows / n : kRows;
  auto k = pto::jit(
      "into_" + std::to_string(which),
      [which](pto::Tensor x, pto::Tensor y, int pes) {
        pto::set_vec_tile_shapes(2, 8);
        auto in = pto::view(x, {kRows, kCols}, {0, 0}, {.valid_shape = {{kValidRows, kValidCols}}});
        const std::vector<int64_t> shape = {which == 2   ? pes * kRows
                                            : which == 0 ? kRows
                                                         : kRows / pes,
                                            kCols};
        auto buf = dist::create_shmem_tensor("world", pes, pto::DT_INT32, shape);
        pto::Tensor none;
        if (which == 0)
          dist::one_shot_allreduce(none, in, buf, y);
        else if (which == 1)
          dist::two_shot_allreduce(none, in, buf, y);
        else if (which == 2)
          dist::allgather(none, in, buf, y);
        else
          dist::reduce_scatter(none, in, buf, y, dist::Reduction::SUM);
      },
      support::opts(mode));
  auto xs = support::tensors(n, pto::DT_INT32, {kRows, kCols});
  auto ys = support::tensors(n, pto::DT_INT32, {out_rows, kCols});
  for (int p = 0; p < n; ++p) {
    for (int64_t i = 0; i < kRows * kCols; ++i)
      xs[size_t(p)].set(i, input(p, i / kCols, i % kCols));
    ys[size_t(p)].fill(-100);
  }
  auto world = support::make_world(n, {.deadlock_timeout_ms = 10000});
  world->run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)], n); });
  support::share(ys);
  return ys;
}

} // namespace

TEST_CASE("collectives into the caller's buffers: PyPTO's protocols, valid region only") {
  const int n = support::world_pes(4);
  if (kRows % n != 0)
    return;
  auto sum = [&](int64_t r, int64_t c) {
    int32_t s = 0;
    for (int q = 0; q < n; ++q)
      s += input(q, r, c);
    return s;
  };
  for (auto mode : support::run_modes())
    for (int which : {0, 1, 2, 3}) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(which);
      auto ys = run(which, mode, n);
      for (int p = 0; p < n; ++p) {
        CAPTURE(p);
        const auto &y = ys[size_t(p)];
        for (int64_t r = 0; r < y.shape()[0]; ++r)
          for (int64_t c = 0; c < kCols; ++c) {
            CAPTURE(r);
            CAPTURE(c);
            const int32_t got = static_cast<int32_t>(y.get(r * kCols + c));
            if (which == 0 || which == 1) { // the valid region holds the sum; the rest untouched
              if (r < kValidRows && c < kValidCols)
                REQUIRE(got == sum(r, c));
              else if (which == 0)
                REQUIRE(got == -100);
            } else if (which == 2) { // sender q's valid rows at q * kValidRows
              const int64_t q = r / kValidRows, rr = r % kValidRows;
              if (q < n && c < kValidCols)
                REQUIRE(got == input(static_cast<int>(q), rr, c));
            } else { // block p of the rows
              const int64_t gr = p * (kRows / n) + r;
              if (gr < kValidRows && c < kValidCols)
                REQUIRE(got == sum(gr, c));
            }
          }
      }
    }
}

TEST_CASE("collectives into the caller's buffers: shapes, dtypes and reductions are checked") {
  // The message of the exception of exactly type E (typeid), or what else happened.
  auto trace =
      []<class E>(E *, const std::function<void(pto::Tensor, pto::Tensor)> &body) -> std::string {
    auto k = pto::jit("into_errors", [&body](pto::Tensor x, pto::Tensor y) {
      pto::set_vec_tile_shapes(2, 8);
      body(x, y);
    });
    pto::HostTensor x(pto::DT_FP32, {8, 8}), y(pto::DT_FP32, {16, 8});
    try {
      k(x, y);
    } catch (const pto::Error &e) {
      return typeid(e) == typeid(E) ? std::string(e.what())
                                    : std::string("wrong type ") + typeid(e).name();
    }
    return "none";
  };
  pto::Tensor none;
  auto e1 = trace(static_cast<pto::ShapeError *>(nullptr), [&](pto::Tensor x, pto::Tensor y) {
    auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
    dist::one_shot_allreduce(none, x, buf, y);
  });
  CHECK(e1.find("collectives_into_test.cpp") != std::string::npos);
  CHECK(e1.find("one_shot_allreduce: the shmem tensor must be [8, 8]") != std::string::npos);
  CHECK(e1.find("got [4, 8]") != std::string::npos);
  auto e2 = trace(static_cast<pto::DTypeError *>(nullptr), [&](pto::Tensor x, pto::Tensor y) {
    auto buf = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {8, 8});
    dist::allgather(none, x, buf, y);
  });
  INFO(e2);
  CHECK(e2.find("allgather: the shmem tensor must be DT_FP32, got DT_INT32") != std::string::npos);
  auto e3 = trace(static_cast<pto::DistributedError *>(nullptr), [&](pto::Tensor x, pto::Tensor y) {
    auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {8, 8});
    dist::reduce_scatter(none, x, buf, y, dist::Reduction::MAX);
  });
  CHECK(e3.find("reduce_scatter: PyPTO's ReduceScatter protocol adds") != std::string::npos);
  CHECK(e3.find("got max") != std::string::npos);
}
