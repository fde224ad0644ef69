// hardening_shmem_window_test.cpp - Issue 8, the shmem classes found by the fuzz target
// (tests/e2e/fuzz_test.cpp). Every value a shmem op takes is checked by the op the user wrote,
// by the rule its trace-time check applies (the window rule of dsl/src/shape_rules.h, PE ranges),
// with the same DistributedError text in both executors, before any memory is touched:
// - shmem/put-outside-rt: a put's window lies in the shmem_view it writes, not just somewhere in
//   the buffer; an offset near INT64_MAX does not wrap the window's end.
// - shmem/view-outside: a shmem_view outside its buffer (or the view it was made from) is
//   reported by shmem_view, not by the put or get that uses it; a view edited by hand by the op
//   that takes it.
// - shmem/dst-pe-bad-rt: a PE number out of range is reported by the op that takes it (the put,
//   not the signal after it), in the trace-time wording.
// - messages: the dim that fails, exact values, tensors named as the user knows them.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dist = pto::distributed;

namespace {

constexpr const char *kFile = "hardening_shmem_window_test.cpp";
constexpr double kSentinel = -777; // never a value the kernels compute

using Body = std::function<void(pto::Tensor idx, pto::Tensor x, pto::Tensor y)>;

/// Runs `body` on `n_pes` PEs with idx = `vals` (int64 [4]), x = 1 [2, 2] and y [2, 4] starting
/// as the sentinel; CHECKs afterwards that no PE's y was written (every case below fails before
/// its get).
void run(pto::RunMode m, const Body &body, const std::vector<int64_t> &vals, int n_pes = 1) {
  auto k = pto::jit("shmem_window", body, support::opts(m));
  std::vector<pto::HostTensor> idx, x, y;
  for (int p = 0; p < n_pes; ++p) {
    idx.emplace_back(pto::DT_INT64, std::vector<int64_t>{4});
    x.emplace_back(pto::DT_FP32, std::vector<int64_t>{2, 2});
    y.emplace_back(pto::DT_FP32, std::vector<int64_t>{2, 4});
    for (size_t i = 0; i < vals.size(); ++i)
      idx.back().data_as<int64_t>()[i] = vals[i];
    x.back().fill(1);
    y.back().fill(kSentinel);
  }
  pto::runtime::World world(n_pes);
  auto untouched = [&] {
    for (auto &t : y)
      for (int64_t i = 0; i < t.numel(); ++i)
        CHECK(t.get(i) == kSentinel);
  };
  try {
    world.run([&](int pe) { k(idx[size_t(pe)], x[size_t(pe)], y[size_t(pe)]); });
  } catch (...) {
    untouched();
    throw;
  }
  untouched();
}

/// The detail of the DistributedError `call` throws at `line` naming `op` (both executors'
/// texts are compared with this by the callers).
std::string distributed_detail(const std::function<void()> &call, const int &line,
                               const std::string &op, const std::string &want) {
  const std::string msg = support::expect_error<pto::DistributedError>(call, kFile, line, op, want);
  const auto at = msg.find(op + ": ");
  return at == std::string::npos ? msg : msg.substr(at + op.size() + 2);
}

/// `a + b` in decimal, exactly (the end of a window near INT64_MAX).
std::string exact_sum(int64_t a, int64_t b) {
  const __int128 s = static_cast<__int128>(a) + b;
  if (s <= INT64_MAX)
    return std::to_string(static_cast<int64_t>(s));
  const auto u = static_cast<unsigned __int128>(s);
  return std::to_string(static_cast<uint64_t>(u / 10)) + std::to_string(static_cast<int>(u % 10));
}

} // namespace

TEST_CASE("shmem_put: a run-time offset is checked against the shmem_view it writes, not the "
          "buffer") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    std::string texts[2];
    for (bool rt : {false, true}) {
      CAPTURE(rt);
      int line = 0;
      auto body = [&](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
        pto::set_vec_tile_shapes(2, 2);
        auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
        auto me = dist::my_symbolic_pe("world");
        auto win = dist::shmem_view(buf, {2, 4}, {0, 2}); // cols 2..5 of the buffer
        pto::SymbolicScalar col = rt ? idx.at({0}) : pto::SymbolicScalar(3);
        line = __LINE__ + 1; // cols 3..4 of the view: inside the buffer (5..6), not the view
        auto put = dist::shmem_put(x, {0, col}, win, me);
        pto::assemble(dist::shmem_get(win, me, {.pred = {put}}), {0, 0}, y);
      };
      texts[rt] = distributed_detail([&] { run(m, body, {3}); }, line, "shmem_put",
                                     "window [3, 5) of dim 1 exceeds the size 4 of the shmem "
                                     "view [2, 4]");
    }
    CHECK(texts[0] == texts[1]); // the same rule, concrete or not
  }
}

TEST_CASE("shmem_put: a run-time offset near INT64_MAX is a DistributedError with the exact "
          "window end") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    for (int64_t col : {INT64_MAX - 2, INT64_MAX, int64_t{1} << 62, int64_t{7}}) {
      CAPTURE(col);
      int line = 0;
      auto body = [&](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
        pto::set_vec_tile_shapes(2, 2);
        auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
        auto me = dist::my_symbolic_pe("world");
        line = __LINE__ + 1;
        auto put = dist::shmem_put(x, {0, idx.at({0})}, buf, me);
        pto::assemble(dist::shmem_get(dist::shmem_view(buf, {2, 4}, {0, 0}), me, {.pred = {put}}),
                      {0, 0}, y);
      };
      // The end is offset + 2 as a number, never a wrapped negative one; the dim is named.
      distributed_detail([&] { run(m, body, {col}); }, line, "shmem_put",
                         "window [" + std::to_string(col) + ", " + exact_sum(col, 2) +
                             ") of dim 1 exceeds the size 8 of the shmem data [2, 8]");
    }
  }
}

TEST_CASE("shmem_view: a run-time window outside its buffer or parent view is reported by "
          "shmem_view") {
  struct Case {
    const char *name;
    int64_t col;
    bool nested; ///< a view [2, 2] of the view [2, 4] at cols 2..5, else [2, 4] of the buffer
    const char *want;
  };
  const Case cases[] = {
      {"past the end", 6, false,
       "window [6, 10) of dim 1 exceeds the size 8 of the shmem data [2, 8]"},
      {"negative", -1, false, "offset -1 of dim 1 is negative"},
      {"huge", INT64_MAX, false, "window [9223372036854775807, 9223372036854775811) of dim 1"},
      // Inside the buffer (cols 5..6) but not inside the view it is made from (cols 2..5).
      {"nested", 3, true, "window [3, 5) of dim 1 exceeds the size 4 of the shmem view [2, 4]"},
  };
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    for (const auto &c : cases) {
      CAPTURE(c.name);
      std::string texts[2];
      for (bool rt : {false, true}) {
        CAPTURE(rt);
        int line = 0;
        auto body = [&](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 2);
          auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
          auto me = dist::my_symbolic_pe("world");
          pto::SymbolicScalar col = rt ? idx.at({0}) : pto::SymbolicScalar(c.col);
          auto parent = c.nested ? dist::shmem_view(buf, {2, 4}, {0, 2}) : buf;
          line = __LINE__ + 1;
          auto win = dist::shmem_view(parent, {2, c.nested ? 2 : 4}, {0, col});
          // The put and the get use the window: the view reports it first.
          auto put = dist::shmem_put(x, {0, 0}, win, me);
          pto::assemble(dist::shmem_get(win, me, {.pred = {put}}), {0, 0}, y);
        };
        texts[rt] = distributed_detail([&] { run(m, body, {c.col}); }, line, "shmem_view", c.want);
      }
      CHECK(texts[0] == texts[1]);
    }
  }
}

TEST_CASE("shmem_get, shmem_signal, shmem_clear_data: a view edited by hand is checked by the op "
          "that takes it") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    for (int which = 0; which < 3; ++which) {
      CAPTURE(which);
      int line = 0;
      auto body = [&](pto::Tensor idx, pto::Tensor, pto::Tensor y) {
        pto::set_vec_tile_shapes(2, 2);
        auto buf = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {2, 8});
        auto me = dist::my_symbolic_pe("world");
        auto v = buf; // ShmemTensor's fields are public
        v.view_shape = {2, 4};
        v.view_offsets = {0, idx.at({0})};
        v.view_valid = {2, 4};
        if (which == 0) {
          line = __LINE__ + 1;
          pto::assemble(dist::shmem_get(v, me), {0, 0}, y);
        } else if (which == 1) {
          line = __LINE__ + 1;
          dist::shmem_signal(v, me, 1, me);
        } else {
          line = __LINE__ + 1;
          dist::shmem_clear_data(v);
        }
        if (which != 0)
          pto::assemble(pto::full({2, 4}, 1.0, pto::DT_FP32), {0, 0}, y);
      };
      const char *op = which == 0 ? "shmem_get" : which == 1 ? "shmem_signal" : "shmem_clear_data";
      distributed_detail([&] { run(m, body, {6}); }, line, op,
                         "window [6, 10) of dim 1 exceeds the size 8 of the shmem data [2, 8]");
    }
  }
}

TEST_CASE("shmem PE numbers known at run time are checked by the op that takes them, in the "
          "trace-time wording") {
  struct Case {
    const char *op;
    int64_t pe;
    const char *want;
  };
  const Case cases[] = {
      {"shmem_put", 2, "dst_pe 2 is out of range [0, 2) for group 'world'"},
      {"shmem_put", INT64_MIN,
       "dst_pe -9223372036854775808 is out of range [0, 2) for group 'world'"},
      {"shmem_get", -1, "src_pe -1 is out of range [0, 2) for group 'world'"},
      {"shmem_signal", 7, "target_pe 7 is out of range [0, 2) for group 'world'"},
  };
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    for (const auto &c : cases) {
      CAPTURE(c.op);
      CAPTURE(c.pe);
      std::string texts[2];
      for (bool rt : {false, true}) {
        CAPTURE(rt);
        int line = 0;
        const std::string op = c.op;
        auto body = [&](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 2);
          auto buf = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {2, 4});
          auto me = dist::my_symbolic_pe("world");
          pto::SymbolicScalar pe = rt ? idx.at({0}) : pto::SymbolicScalar(c.pe);
          pto::SymbolicScalar peer = (me + 1) % 2;
          if (op == "shmem_put") {
            line = __LINE__ + 1; // the signal after it (pipelined per tile in the JIT) takes it too
            auto put = dist::shmem_put(x, {0, 0}, buf, pe);
            dist::shmem_signal(buf, pe, 1, pe, {.pred = {put}});
          } else if (op == "shmem_get") {
            line = __LINE__ + 1;
            pto::assemble(dist::shmem_get(buf, pe), {0, 0}, y);
          } else {
            line = __LINE__ + 1;
            dist::shmem_signal(buf, peer, 1, pe);
          }
        };
        texts[rt] = distributed_detail([&] { run(m, body, {c.pe}, 2); }, line, c.op, c.want);
      }
      CHECK(texts[0] == texts[1]);
    }
  }
}

TEST_CASE("view windows: messages print exact ends and name tensors as the user knows them") {
  for (auto m : support::run_modes()) {
    CAPTURE(support::mode_name(m));
    int line = 0;
    auto k = pto::jit(
        "view_messages",
        [&](pto::Tensor idx, pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(2, 4);
          auto t = pto::add(x, 1); // a local tensor: no internal name ('t3') in the message
          line = __LINE__ + 1;
          auto v = pto::view(t, {2, 4}, {0, idx.at({0})});
          pto::assemble(v, {0, 0}, y);
        },
        support::opts(m));
    pto::HostTensor idx(pto::DT_INT64, {1}), x(pto::DT_FP32, {2, 8}), y(pto::DT_FP32, {2, 4});
    idx.data_as<int64_t>()[0] = INT64_MAX - 1;
    const std::string msg = support::expect_error<pto::ShapeError>(
        [&] { k(idx, x, y); }, kFile, line, "view",
        "window [9223372036854775806, 9223372036854775810) of dim 1 exceeds the size 8 of the "
        "local tensor [2, 8]");
    CHECK(msg.find("'t") == std::string::npos);
  }
}
