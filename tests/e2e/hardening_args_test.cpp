// hardening_args_test.cpp - Issue 8, a second attacker pass: arguments at the edges of their
// types. Constant symbolic arithmetic that overflows int64 is never folded to a wrapped value
// (the run-time check reports it at the user's op); loop_unroll's step * factor never wraps; a
// view whose shape needs more than 2^62 bytes fails at the view; enum arguments outside their
// enum (a cast integer) and collective inputs of a dtype no collective moves are errors naming
// the op the user called; a deadlock timeout past its documented maximum is refused. Both
// executors.
#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/expect_error.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr const char *kFile = "hardening_args_test.cpp";
constexpr int64_t kMax = INT64_MAX;
constexpr int64_t kMin = INT64_MIN;
namespace dist = pto::distributed;
using S = pto::SymbolicScalar;

} // namespace

TEST_CASE("symbolic constants: an overflowing op is not folded; the run-time check reports it") {
  // Folding keeps every op that fits.
  CHECK((S(kMax - 1) + S(1)).concrete() == kMax);
  CHECK((S(kMin) / S(1)).concrete() == kMin);
  CHECK((S(kMin + 1) * S(-1)).concrete() == kMax);
  // An op that does not fit stays an expression (not a wrapped constant).
  CHECK_FALSE((S(kMax) + S(1)).is_concrete());
  CHECK_FALSE((S(kMin) - S(1)).is_concrete());
  CHECK_FALSE((S(int64_t{1} << 62) * S(4)).is_concrete());
  CHECK_FALSE((S(kMin) / S(-1)).is_concrete());
  CHECK_FALSE((-S(kMin)).is_concrete());
  const std::vector<std::pair<const char *, std::function<S()>>> stops{
      {"max + 1", [] { return S(kMax) + S(1); }},
      {"min / -1", [] { return S(kMin) / S(-1); }},
  };
  for (auto mode : support::run_modes())
    for (size_t c = 0; c < stops.size(); ++c) {
      const auto &[what, stop] = stops[c];
      CAPTURE(support::mode_name(mode));
      CAPTURE(what);
      int line = 0;
      auto k = pto::jit(
          "fold_overflow_" + std::to_string(c),
          [&](pto::Tensor y) {
            pto::set_vec_tile_shapes(1, 8);
            line = __LINE__ + 1;
            for (auto i : pto::loop(stop())) {
              (void)i;
              pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {0, 0}, y);
            }
          },
          support::opts(mode));
      pto::HostTensor y(pto::DT_FP32, {1, 8});
      auto msg =
          support::expect_error<pto::RuntimeError>([&] { k(y); }, kFile, line, "loop", "stop `");
      CHECK(msg.find("overflows int64 at run time") != std::string::npos);
      for (int64_t i = 0; i < y.numel(); ++i)
        CHECK(y.get(i) == 0); // no iteration ran
    }
}

TEST_CASE("loop_unroll: a run-time step times the factor past int64 runs the loop exactly") {
  // loop_unroll(0, 10, step, {4}) with step = 2^62 at run time: 4 * 2^62 wraps to 0, which
  // made the unrolled loop's end a division by zero. No unrolled step fits: the factor-1 loop
  // runs from 0, once (ceil(10 / 2^62)). Worked out by hand: step 2 runs one factor-4
  // iteration at 0 (covering 0, 2, 4, 6: 8 <= 10), then factor 1 at 8.
  struct Case {
    int64_t step;
    std::vector<std::pair<int64_t, int64_t>> want; // (index, factor) per traced iteration
  };
  const Case cases[] = {
      {int64_t{1} << 62, {{0, 1}}},
      {kMax, {{0, 1}}},
      {2, {{0, 4}, {8, 1}}},
  };
  for (auto mode : support::run_modes())
    for (const auto &c : cases) {
      CAPTURE(support::mode_name(mode));
      CAPTURE(c.step);
      auto k = pto::jit(
          "unroll_step_overflow",
          [](pto::Tensor n, pto::Tensor marks) {
            pto::set_vec_tile_shapes(1, 1);
            for (auto [i, f] : pto::loop_unroll(0, 10, n.at({0}), {4})) {
              // marks[i] = the factor of the iteration that started at i
              pto::assemble(pto::full({1, 1}, double(f), pto::DT_FP32), {i, 0}, marks);
            }
          },
          support::opts(mode));
      pto::HostTensor n(pto::DT_INT64, {1});
      n.data_as<int64_t>()[0] = c.step;
      pto::HostTensor marks(pto::DT_FP32, {10, 1});
      k(n, marks);
      std::vector<double> want(10, 0.0);
      for (auto [i, f] : c.want)
        want[size_t(i)] = double(f);
      for (int64_t i = 0; i < 10; ++i) {
        CAPTURE(i);
        CHECK(marks.get(i) == want[size_t(i)]);
      }
    }
}

TEST_CASE("view: a shape needing more than 2^62 bytes fails at the view, whatever its valid "
          "shape") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto k = pto::jit(
        "view_too_large",
        [&](pto::Tensor x, pto::Tensor y) {
          pto::set_vec_tile_shapes(4, 8);
          line = __LINE__ + 1;
          auto v = pto::view(x, {kMax, 8}, {0, 0}, {.valid_shape = {{4, 8}}});
          pto::assemble(v, {0, 0}, y);
        },
        support::opts(mode));
    pto::HostTensor x(pto::DT_FP32, {4, 8}), y(pto::DT_FP32, {4, 8});
    support::expect_error<pto::ShapeError>([&] { k(x, y); }, kFile, line, "view",
                                           "needs more than 4611686018427387904 bytes");
  }
}

TEST_CASE("collectives: an enum value outside its enum and a dtype no collective moves are "
          "errors naming the collective") {
  using Call = std::function<pto::Tensor(const pto::Tensor &)>;
  const auto bad_op = static_cast<dist::Reduction>(77);
  struct Bad {
    std::string op;
    Call call;
    pto::DataType dt;
    bool dtype_error; // DTypeError, else DistributedError
    std::string detail;
  };
  int line = 0; // set by each call, on the line before the collective
  const std::vector<Bad> bad{
      {"allreduce",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::allreduce(x, bad_op);
       },
       pto::DT_FP32, false, "the reduction must be SUM, MAX, MIN or PROD, got the value 77"},
      {"allreduce",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::allreduce(x, dist::Reduction::SUM,
                                {.algorithm = static_cast<dist::AllreduceAlgorithm>(9)});
       },
       pto::DT_FP32, false, "algorithm must be AUTO, ONE_SHOT, TWO_SHOT or RS_AG, got the value 9"},
      {"reduce_scatter",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::reduce_scatter(x, bad_op);
       },
       pto::DT_FP32, false, "got the value 77"},
      {"allreduce",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::allreduce(x, dist::Reduction::SUM);
       },
       pto::DT_BOOL, true, "dtype must be one of int8"},
      {"allreduce",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::allreduce(x, dist::Reduction::SUM, {.fusion = 1});
       },
       pto::DT_BOOL, true, "dtype must be one of int8"},
      {"allgather",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::allgather(x);
       },
       pto::DT_BOOL, true, "dtype must be one of int8"},
      {"reduce_scatter",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::reduce_scatter(x, dist::Reduction::MAX);
       },
       pto::DT_BOOL, true, "dtype must be one of int8"},
      {"broadcast",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::broadcast(x, 0);
       },
       pto::DT_BOOL, true, "dtype must be one of int8"},
      {"all_to_all",
       [&](const pto::Tensor &x) {
         line = __LINE__ + 1;
         return dist::all_to_all(x);
       },
       pto::DT_BOOL, true, "dtype must be one of int8"},
  };

  for (auto m : support::run_modes())
    for (size_t c = 0; c < bad.size(); ++c) {
      const auto &b = bad[c];
      CAPTURE(support::mode_name(m));
      CAPTURE(c);
      auto k = pto::jit(
          "coll_bad_arg_" + std::to_string(c),
          [&](pto::Tensor x, pto::Tensor y) {
            pto::set_vec_tile_shapes(4, 8);
            auto r = b.call(x);
            pto::assemble(pto::view(r, {4, 8}, {0, 0}), {0, 0}, y);
          },
          support::opts(m));
      pto::runtime::World world(2);
      std::vector<pto::HostTensor> xs(2, pto::HostTensor(b.dt, {4, 8}));
      std::vector<pto::HostTensor> ys(2, pto::HostTensor(b.dt, {4, 8}));
      auto run = [&] { world.run([&](int pe) { k(xs[size_t(pe)], ys[size_t(pe)]); }); };
      if (b.dtype_error)
        support::expect_error<pto::DTypeError>(run, kFile, line, b.op, b.detail);
      else
        support::expect_error<pto::DistributedError>(run, kFile, line, b.op, b.detail);
    }
}

TEST_CASE("shmem ops: put_op, sig_op and cmp outside their enums are DistributedErrors") {
  struct Bad {
    std::string op, detail;
    std::function<void(const pto::Tensor &, const dist::ShmemTensor &)> call;
  };
  int line = 0; // set by each call, on the line before the shmem op
  const std::vector<Bad> bad{
      {"shmem_put", "put_op must be SET or ADD, got the value 5",
       [&](const pto::Tensor &x, const dist::ShmemTensor &s) {
         line = __LINE__ + 1;
         dist::shmem_put(x, {0, 0}, s, 0, {.put_op = static_cast<dist::AtomicType>(5)});
       }},
      {"shmem_signal", "sig_op must be SET or ADD, got the value 6",
       [&](const pto::Tensor &, const dist::ShmemTensor &s) {
         line = __LINE__ + 1;
         dist::shmem_signal(s, 0, 1, 0, {.sig_op = static_cast<dist::AtomicType>(6)});
       }},
      {"shmem_wait_until", "cmp must be EQ, NE, LT, LE, GT or GE, got the value 42",
       [&](const pto::Tensor &, const dist::ShmemTensor &s) {
         line = __LINE__ + 1;
         dist::shmem_wait_until(s, 0, 1, {.cmp = static_cast<dist::OpType>(42)});
       }},
      {"shmem_wait_until_all", "cmp must be EQ, NE, LT, LE, GT or GE, got the value 43",
       [&](const pto::Tensor &, const dist::ShmemTensor &s) {
         line = __LINE__ + 1;
         dist::shmem_wait_until_all({{s, 0}}, 1, {.cmp = static_cast<dist::OpType>(43)});
       }},
      {"shmem_test", "cmp must be EQ, NE, LT, LE, GT or GE, got the value 44",
       [&](const pto::Tensor &, const dist::ShmemTensor &s) {
         line = __LINE__ + 1;
         dist::shmem_test(s, 0, 1, {.cmp = static_cast<dist::OpType>(44)});
       }},
      {"shmem_put_signal", "sig_op must be SET or ADD, got the value 7",
       [&](const pto::Tensor &x, const dist::ShmemTensor &s) {
         line = __LINE__ + 1;
         dist::shmem_put_signal(x, {0, 0}, s, 0, 1, {.sig_op = static_cast<dist::AtomicType>(7)});
       }},
  };
  for (auto m : support::run_modes())
    for (size_t c = 0; c < bad.size(); ++c) {
      const auto &b = bad[c];
      CAPTURE(support::mode_name(m));
      CAPTURE(b.op);
      auto k = pto::jit(
          "shmem_bad_enum_" + std::to_string(c),
          [&](pto::Tensor x) {
            pto::set_vec_tile_shapes(4, 8);
            auto s = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
            b.call(x, s);
          },
          support::opts(m));
      pto::runtime::World world(2);
      std::vector<pto::HostTensor> xs(2, pto::HostTensor(pto::DT_FP32, {4, 8}));
      support::expect_error<pto::DistributedError>(
          [&] { world.run([&](int pe) { k(xs[size_t(pe)]); }); }, kFile, line, b.op, b.detail);
    }
}

TEST_CASE("World: a deadlock timeout past its maximum is refused; an empty variable is unset") {
  constexpr int64_t max = pto::runtime::WorldOptions::kMaxDeadlockTimeoutMs;
  CHECK(max == 31536000000); // one year in ms, as documented
  for (int64_t t : {max + 1, int64_t{1} << 62, kMax}) {
    CAPTURE(t);
    const int line = __LINE__ + 1;
    auto make = [&] { pto::runtime::World w(2, {.deadlock_timeout_ms = t}); };
    support::expect_error<pto::DistributedError>(make, kFile, line, "World",
                                                 "deadlock_timeout_ms must be in [1, 31536000000]");
  }
  // The maximum itself works: a kernel entry barrier (twice the timeout) does not time out.
  pto::runtime::World w(2, {.deadlock_timeout_ms = max});
  CHECK(w.deadlock_timeout_ms() == max);
  auto k = pto::jit("timeout_max", [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    auto s = dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
    auto me = dist::my_symbolic_pe("world");
    auto p = dist::shmem_put(x, {0, 0}, s, me);
    dist::shmem_barrier_all(dist::create_shmem_signal("world", 2), {.pred = {p}});
  });
  std::vector<pto::HostTensor> xs(2, pto::HostTensor(pto::DT_FP32, {4, 8}));
  CHECK_NOTHROW(w.run([&](int pe) { k(xs[size_t(pe)]); }));

  const char *saved = std::getenv("PTO_DEADLOCK_TIMEOUT_MS");
  const std::string keep = saved ? saved : "";
  ::setenv("PTO_DEADLOCK_TIMEOUT_MS", "", 1);
  CHECK(pto::runtime::World(2).deadlock_timeout_ms() ==
        pto::runtime::WorldOptions::kDefaultDeadlockTimeoutMs);
  for (const char *v : {"9223372036854775807", "4611686018427387904", "31536000001", "abc"}) {
    CAPTURE(v);
    ::setenv("PTO_DEADLOCK_TIMEOUT_MS", v, 1);
    const int line = __LINE__ + 1;
    auto make = [&] { pto::runtime::World bad(2); };
    support::expect_error<pto::ArgumentError>(make, kFile, line, "PTO_DEADLOCK_TIMEOUT_MS",
                                              "expected a decimal integer in [1, 31536000000]");
  }
  if (saved)
    ::setenv("PTO_DEADLOCK_TIMEOUT_MS", keep.c_str(), 1);
  else
    ::unsetenv("PTO_DEADLOCK_TIMEOUT_MS");
}

TEST_CASE("a run-time integer division by zero inside a fused group names the dividing op") {
  int line = 0; // set by each op, on the line before it
  using Fn = std::function<pto::Tensor(const pto::Tensor &, const pto::Tensor &)>;
  const std::vector<std::pair<std::string, Fn>> ops{
      {"div",
       [&](const pto::Tensor &a, const pto::Tensor &b) {
         line = __LINE__ + 1;
         return pto::div(a + 5, b);
       }},
      {"floor_mod",
       [&](const pto::Tensor &a, const pto::Tensor &b) {
         line = __LINE__ + 1;
         return pto::floor_mod(a + 5, b);
       }},
      {"ceil_div",
       [&](const pto::Tensor &a, const pto::Tensor &b) {
         line = __LINE__ + 1;
         return pto::ceil_div(a + 5, b);
       }},
      {"fmod",
       [&](const pto::Tensor &a, const pto::Tensor &b) {
         line = __LINE__ + 1;
         return pto::fmod(a + 5, b);
       }},
      {"remainder",
       [&](const pto::Tensor &a, const pto::Tensor &b) {
         line = __LINE__ + 1;
         return pto::remainder(a + 5, b);
       }},
  };
  for (auto mode : support::run_modes())
    for (size_t c = 0; c < ops.size(); ++c) {
      const auto &[name, fn] = ops[c];
      CAPTURE(support::mode_name(mode));
      CAPTURE(name);
      auto k = pto::jit(
          "fused_div_zero_" + std::to_string(c),
          [&](pto::Tensor a, pto::Tensor b, pto::Tensor y) {
            pto::set_vec_tile_shapes(4, 8);
            auto q = fn(a, b); // fused with the add before it and the mul after it
            pto::assemble(q * 2, {0, 0}, y);
          },
          support::opts(mode));
      pto::HostTensor a(pto::DT_INT32, {4, 8}), b(pto::DT_INT32, {4, 8}), y(pto::DT_INT32, {4, 8});
      a.fill(7);
      b.fill(2);
      b.set(13, 0);
      support::expect_error<pto::RuntimeError>([&] { k(a, b, y); }, kFile, line, name,
                                               "integer division by zero");
    }
}

TEST_CASE("a run-time Tensor::at index error in a cond guard names cond, not an internal op") {
  for (auto mode : support::run_modes()) {
    CAPTURE(support::mode_name(mode));
    int line = 0;
    auto k = pto::jit(
        "cond_at_range",
        [&](pto::Tensor n, pto::Tensor y) {
          pto::set_vec_tile_shapes(1, 8);
          for (auto i : pto::loop(1)) {
            (void)i;
            line = __LINE__ + 1;
            if (pto::cond(n.at({n.at({0})}) > 0))
              pto::assemble(pto::full({1, 8}, 1.0, pto::DT_FP32), {0, 0}, y);
          }
        },
        support::opts(mode));
    pto::HostTensor n(pto::DT_INT32, {3}), y(pto::DT_FP32, {1, 8});
    n.set(0, 3); // n[3] is past n's 3 elements
    support::expect_error<pto::RuntimeError>([&] { k(n, y); }, kFile, line, "at",
                                             "index 3 is out of range [0, 3) in dim 0 of tensor "
                                             "'arg0' (read at run time for `cond` at");
  }
}

TEST_CASE("ops: a CastMode, DataFormat or ScatterMode outside its enum is an ArgumentError") {
  struct Bad {
    std::string op, detail;
    std::function<pto::Tensor(const pto::Tensor &, const pto::Tensor &)> call;
  };
  int line = 0; // set by each call, on the line before the op
  const std::vector<Bad> bad{
      {"cast", "mode must be a CastMode (CAST_NONE .. CAST_ODD), got the value 200",
       [&](const pto::Tensor &x, const pto::Tensor &) {
         line = __LINE__ + 1;
         return pto::cast(x, pto::DT_INT32, static_cast<pto::CastMode>(200));
       }},
      {"bias_add", "format must be NCHW or NHWC, got the value 7",
       [&](const pto::Tensor &x, const pto::Tensor &b) {
         line = __LINE__ + 1;
         return pto::bias_add(x, b, static_cast<pto::DataFormat>(7));
       }},
      {"scatter", "reduce must be NONE, ADD or MULTIPLY, got the value 9",
       [&](const pto::Tensor &x, const pto::Tensor &) {
         line = __LINE__ + 1;
         return pto::scatter(x, 0, pto::cast(x, pto::DT_INT32), 1.0,
                             {.reduce = static_cast<pto::ScatterMode>(9)});
       }},
  };
  for (auto m : support::run_modes())
    for (size_t c = 0; c < bad.size(); ++c) {
      const auto &b = bad[c];
      CAPTURE(support::mode_name(m));
      CAPTURE(b.op);
      auto k = pto::jit(
          "op_bad_enum_" + std::to_string(c),
          [&](pto::Tensor x, pto::Tensor bias, pto::Tensor y) {
            pto::set_vec_tile_shapes(4, 8);
            pto::assemble(pto::cast(b.call(x, bias), pto::DT_FP32), {0, 0}, y);
          },
          support::opts(m));
      pto::HostTensor x(pto::DT_FP32, {4, 8}), bias(pto::DT_FP32, {8}), y(pto::DT_FP32, {4, 8});
      support::expect_error<pto::ArgumentError>([&] { k(x, bias, y); }, kFile, line, b.op,
                                                b.detail);
    }
}
