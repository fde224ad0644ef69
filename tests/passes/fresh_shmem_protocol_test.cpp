// fresh_shmem_protocol_test.cpp - Issue 13 item 9: which shmem tensors get the fresh-per-iteration
// protocol (collectives_internal.h, fresh_each_iteration). Created in a loop body that may run
// more than once (a concrete trip count above 1, or run-time bounds): a barrier, clears of the
// data and signals, a barrier, in the body before the tensor's first use. In the kernel body or
// in PyPTO's implicit loop(1): nothing (kernel entry zeroes it). The library collectives' own
// buffers never get it (they run their own reuse protocol). Counted in the traced program's text.
#include "pto/collectives.h"
#include "pto/pto.h"

#include "passes/planned.h"

#include <doctest/doctest.h>

#include <string>

namespace dist = pto::distributed;
using passes_test::plan;

namespace {

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

/// The traced program of a kernel that creates, puts into and gets from one shmem tensor, in
/// the body (`where` 0), in loop(1) (1), in loop(3) (2), in a loop with run-time bounds (3).
std::string program_text(int where) {
  auto c = plan("fresh", {{pto::DT_FP32, {pto::DYNAMIC, 8}}, {pto::DT_FP32, {2, 8}}},
                [where](const std::vector<pto::Tensor> &a) {
                  pto::set_vec_tile_shapes(2, 8);
                  auto body = [&] {
                    auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
                    auto x = pto::view(a[0], {2, 8}, {0, 0});
                    auto put = dist::shmem_put(x, {0, 0}, buf, 0);
                    pto::assemble(dist::shmem_get(buf, 0, {.pred = {put}}), {0, 0}, a[1]);
                  };
                  if (where == 0)
                    body();
                  else if (where == 1)
                    for (auto _ : pto::loop(1))
                      body();
                  else if (where == 2)
                    for (auto _ : pto::loop(3))
                      body();
                  else
                    for (auto _ : pto::loop(a[0].shape(0)))
                      body();
                });
  return c.planned->printed;
}

} // namespace

TEST_CASE("fresh shmem: only a loop body that may repeat gets the protocol") {
  for (int where : {0, 1, 2, 3}) {
    CAPTURE(where);
    const std::string text = program_text(where);
    INFO(text);
    const bool fresh = where >= 2;
    CHECK(count(text, "shmem_clear_data(") == (fresh ? 1 : 0));
    CHECK(count(text, "shmem_clear_signal(") == (fresh ? 1 : 0));
    CHECK(count(text, "shmem_wait_until(") == (fresh ? 2 : 0)); // the two barriers
  }
}

TEST_CASE("fresh shmem: a collective in a loop body adds no protocol for its own buffers") {
  auto c = plan("coll", {{pto::DT_FP32, {4, 8}}, {pto::DT_FP32, {4, 8}}},
                [](const std::vector<pto::Tensor> &a) {
                  pto::set_vec_tile_shapes(4, 8);
                  for (auto _ : pto::loop(3))
                    pto::assemble(dist::allgather(a[0]), {0, 0}, a[1]);
                });
  CHECK(count(c.planned->printed, "shmem_clear_data(") == 0);
}
