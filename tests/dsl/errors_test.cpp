// errors_test.cpp - Bad input gets the exact typed pto::Error (README.md, "Errors"), never a
// crash, and the message names the user's source file. Kernels run in interpret mode: these errors
// come from tracing and the runtime, not from code generation.
#include "pto/pto.h"

#include "support/support.h"

#include <doctest/doctest.h>

#include <string>

using doctest::Contains;
namespace dist = pto::distributed;

namespace {

pto::HostTensor t(pto::DataType dt, std::vector<int64_t> shape) {
  return pto::HostTensor(dt, std::move(shape));
}

/// Traces and runs `fn` as a one-tensor kernel on the calling thread (one PE).
template <class F> void run1(F fn, pto::HostTensor x) {
  auto k = pto::jit("bad", fn, support::opts(pto::RunMode::Interpret));
  k(x);
}
/// The same for two tensors.
template <class F> void run2(F fn, pto::HostTensor x, pto::HostTensor y) {
  auto k = pto::jit("bad", fn, support::opts(pto::RunMode::Interpret));
  k(x, y);
}

const auto kF32 = pto::DT_FP32;
const auto kI32 = pto::DT_INT32;

} // namespace

TEST_CASE("shapes that do not broadcast are a ShapeError naming the shapes and the call site") {
  auto bad = [](pto::Tensor a, pto::Tensor b) {
    pto::set_vec_tile_shapes(4, 8);
    pto::add(a, b);
  };
  CHECK_THROWS_AS(run2(bad, t(kF32, {4, 8}), t(kF32, {4, 9})), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run2(bad, t(kF32, {4, 8}), t(kF32, {4, 9})),
                       Contains("add: shapes [4, 8] and [4, 9] do not broadcast"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run2(bad, t(kF32, {4, 8}), t(kF32, {4, 9})), Contains("errors_test.cpp:"),
                       pto::ShapeError);
}

TEST_CASE("an op on a dtype it does not support is a DTypeError") {
  auto bad = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    pto::exp(x);
  };
  CHECK_THROWS_WITH_AS(run1(bad, t(kI32, {4, 8})), Contains("exp: expected a floating dtype"),
                       pto::DTypeError);
  auto neg_bool = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    pto::neg(x);
  };
  CHECK_THROWS_AS(run1(neg_bool, t(pto::DT_BOOL, {4, 8})), pto::DTypeError);
  // A dtype HostTensor itself does not support.
  CHECK_THROWS_AS(pto::HostTensor(pto::DT_INT4, {4}), pto::DTypeError);
}

TEST_CASE("operands of different dtypes are a DTypeError") {
  auto bad = [](pto::Tensor a, pto::Tensor b) {
    pto::set_vec_tile_shapes(4, 8);
    pto::mul(a, b);
  };
  CHECK_THROWS_WITH_AS(run2(bad, t(kF32, {4, 8}), t(pto::DT_FP16, {4, 8})),
                       Contains("operands have dtypes DT_FP32 and DT_FP16"), pto::DTypeError);
}

TEST_CASE("a floating scalar with an integer tensor is a DTypeError") {
  auto bad = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    auto y = x * 2.5;
    (void)y;
  };
  CHECK_THROWS_WITH_AS(run1(bad, t(kI32, {4, 8})), Contains("floating scalar"), pto::DTypeError);
}

TEST_CASE("zero or negative tile dims are a TileShapeError") {
  auto zero = [](pto::Tensor) { pto::set_vec_tile_shapes(0, 16); };
  auto negative = [](pto::Tensor) { pto::set_vec_tile_shapes(-4); };
  auto five = [](pto::Tensor) { pto::set_vec_tile_shapes({1, 2, 3, 4, 5}); };
  CHECK_THROWS_WITH_AS(run1(zero, t(kF32, {4, 8})), Contains("tile dim 0 must be > 0, got 0"),
                       pto::TileShapeError);
  CHECK_THROWS_AS(run1(negative, t(kF32, {4, 8})), pto::TileShapeError);
  CHECK_THROWS_AS(run1(five, t(kF32, {4, 8})), pto::TileShapeError);
}

TEST_CASE("a tile of lower rank than the output, or no tile at all, is a TileShapeError") {
  auto low_rank = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(16);
    pto::exp(x);
  };
  CHECK_THROWS_WITH_AS(run1(low_rank, t(kF32, {4, 8})),
                       Contains("tile shape rank 1 is below the output rank 2"),
                       pto::TileShapeError);
  auto no_tile = [](pto::Tensor x) { pto::exp(x); };
  CHECK_THROWS_WITH_AS(run1(no_tile, t(kF32, {4, 8})), Contains("call set_vec_tile_shapes first"),
                       pto::TileShapeError);
  CHECK_THROWS_WITH_AS(run1(no_tile, t(kF32, {4, 8})), Contains("errors_test.cpp:"),
                       pto::TileShapeError);
}

TEST_CASE("concrete() of a dynamic dim is a SymbolicError") {
  auto bad = [](pto::Tensor x) { (void)x.shape(0).concrete(); };
  auto k = pto::jit("dyn", bad, support::opts(pto::RunMode::Interpret, {{{pto::DYNAMIC, 8}}}));
  auto x = t(kF32, {4, 8});
  CHECK_THROWS_WITH_AS(k(x), Contains("not concrete"), pto::SymbolicError);
  CHECK_THROWS_WITH_AS(k(x), Contains("errors_test.cpp:"), pto::SymbolicError);
}

TEST_CASE("division by a literal zero SymbolicScalar is a SymbolicError") {
  auto bad = [](pto::Tensor x) { (void)(x.shape(0) / 0); };
  CHECK_THROWS_WITH_AS(run1(bad, t(kF32, {4, 8})), Contains("errors_test.cpp:"),
                       pto::SymbolicError);
  auto step0 = [](pto::Tensor) {
    for (auto i : pto::loop(0, 10, 0))
      (void)i;
  };
  CHECK_THROWS_WITH_AS(run1(step0, t(kF32, {4, 8})), Contains("step must be > 0"),
                       pto::SymbolicError);
}

TEST_CASE("reduction axis out of range is a ShapeError") {
  auto bad = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    pto::sum(x, 2);
  };
  CHECK_THROWS_WITH_AS(run1(bad, t(kF32, {4, 8})), Contains("axis 2 is out of range for rank 2"),
                       pto::ShapeError);
  auto neg = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    pto::amax(x, -3);
  };
  CHECK_THROWS_AS(run1(neg, t(kF32, {4, 8})), pto::ShapeError);
}

TEST_CASE("a view window outside its tensor is a ShapeError") {
  auto bad = [](pto::Tensor x) { pto::view(x, {4, 8}, {1, 0}); };
  CHECK_THROWS_WITH_AS(run1(bad, t(kF32, {4, 8})),
                       Contains("window [1, 5) of dim 0 exceeds the size 4"), pto::ShapeError);
  auto rank = [](pto::Tensor x) { pto::view(x, {4}, {0}); };
  CHECK_THROWS_AS(run1(rank, t(kF32, {4, 8})), pto::ShapeError);
  auto valid = [](pto::Tensor x) { pto::view(x, {2, 8}, {0, 0}, {.valid_shape = {{3, 8}}}); };
  CHECK_THROWS_WITH_AS(run1(valid, t(kF32, {4, 8})), Contains("valid_shape[0] = 3"),
                       pto::ShapeError);
}

TEST_CASE("a view window that leaves its tensor at run time fails the call, not the process") {
  // Row blocks of 4 over 8 rows, but the loop runs 3 times with an explicit full valid shape:
  // the third window [8, 12) is outside. Checked once per op before memory is touched.
  auto bad = [](pto::Tensor x, pto::Tensor y) {
    for (auto i : pto::loop(3)) {
      auto v = pto::view(x, {4, 8}, {i * 4, 0}, {.valid_shape = {{4, 8}}});
      pto::set_vec_tile_shapes(4, 8);
      pto::assemble(pto::exp(v), {0, 0}, y);
    }
  };
  // Iteration 2 views rows [8, 12) of an 8-row tensor with a fixed valid shape of 4 rows.
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto k = pto::jit("oob", bad, support::opts(m));
      auto x = t(kF32, {8, 8}), y = t(kF32, {4, 8});
      // The run-time check reads as the trace-time one (shape_rules.h), at the view's line.
      CHECK_THROWS_WITH_AS(k(x, y), Contains("view: window [8, 12) of dim 0 exceeds the size 8"),
                           pto::ShapeError);
      CHECK_THROWS_WITH_AS(k(x, y), Contains("errors_test.cpp:"), pto::ShapeError);
    }
  }
}

TEST_CASE("assemble with another dtype is a DTypeError, outside the output a ShapeError") {
  auto dtype = [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    pto::assemble(x, {0, 0}, y);
  };
  CHECK_THROWS_WITH_AS(run2(dtype, t(kF32, {4, 8}), t(pto::DT_FP16, {4, 8})),
                       Contains("assemble: input dtype DT_FP32 differs from output dtype DT_FP16"),
                       pto::DTypeError);
  auto window = [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    pto::assemble(x, {0, 4}, y);
  };
  CHECK_THROWS_AS(run2(window, t(kF32, {4, 8}), t(kF32, {4, 8})), pto::ShapeError);
}

TEST_CASE("a tensor created in a loop body and used after the loop is a ShapeError") {
  auto bad = [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    pto::Tensor inner;
    for (auto i : pto::loop(2)) {
      (void)i;
      inner = pto::exp(x);
    }
    pto::assemble(inner, {0, 0}, y);
  };
  CHECK_THROWS_WITH_AS(run2(bad, t(kF32, {4, 8}), t(kF32, {4, 8})), Contains("used after the loop"),
                       pto::ShapeError);
}

TEST_CASE("kernel arguments against the declared signature are ArgumentErrors") {
  auto body = [](pto::Tensor x, pto::Tensor y) {
    pto::set_vec_tile_shapes(4, 8);
    pto::assemble(pto::exp(x), {0, 0}, y);
  };
  // Declared dtype fp32: the second call with int32 is rejected.
  auto k =
      pto::jit("typed", body,
               support::opts(pto::RunMode::Interpret, {{{}, pto::DT_FP32}, {{}, pto::DT_FP32}}));
  auto x = t(kF32, {4, 8}), y = t(kF32, {4, 8});
  CHECK_NOTHROW(k(x, y));
  auto xi = t(kI32, {4, 8});
  CHECK_THROWS_WITH_AS(k(xi, y), Contains("has dtype DT_INT32, the kernel declares DT_FP32"),
                       pto::ArgumentError);
  // A fixed dim of 8 called with 9.
  auto fixed =
      pto::jit("fixed", body, support::opts(pto::RunMode::Interpret, {{{4, 8}}, {{4, 8}}}));
  auto x9 = t(kF32, {4, 9}), y9 = t(kF32, {4, 9});
  CHECK_THROWS_WITH_AS(fixed(x9, y9), Contains("dim 1 is 9, the kernel fixes it to 8"),
                       pto::ArgumentError);
  // A spec of another rank.
  auto ranked = pto::jit("ranked", body, support::opts(pto::RunMode::Interpret, {{{4, 8, 1}}}));
  CHECK_THROWS_AS(ranked(x, y), pto::ArgumentError);
}

TEST_CASE("integer division by zero at run time is a RuntimeError after the kernel, no crash") {
  auto body = [](pto::Tensor a, pto::Tensor b) {
    pto::set_vec_tile_shapes(2, 16);
    pto::assemble(a / b, {0, 0}, a);
  };
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      auto k = pto::jit("idiv", body, support::opts(m));
      auto a = t(kI32, {4, 8}), b = t(kI32, {4, 8});
      a.fill(6);
      b.fill(3);
      b.set(13, 0);
      CHECK_THROWS_WITH_AS(k(a, b), Contains("integer division by zero"), pto::RuntimeError);
      CHECK_THROWS_WITH_AS(k(a, b), Contains("errors_test.cpp:"), pto::RuntimeError);
      // The PE is usable again: the same kernel with a good divisor runs.
      b.fill(3);
      a.fill(6);
      CHECK_NOTHROW(k(a, b));
      CHECK(a.get(13) == 2);
    }
  }
  // A literal zero scalar divisor is caught while tracing.
  auto lit = [](pto::Tensor x) {
    pto::set_vec_tile_shapes(4, 8);
    (void)(x / 0);
  };
  CHECK_THROWS_AS(run1(lit, t(kI32, {4, 8})), pto::RuntimeError);
}

TEST_CASE("an op outside a kernel is a pto::Error") {
  pto::Tensor none;
  CHECK_THROWS_WITH_AS(pto::exp(none), Contains("no kernel is being traced"), pto::ArgumentError);
  CHECK_THROWS_AS(pto::set_vec_tile_shapes(4, 8), pto::Error);
  CHECK_THROWS_WITH_AS(pto::set_vec_tile_shapes(4, 8), Contains("errors_test.cpp:"), pto::Error);
}

// ---- distributed ----------------------------------------------------------------------------

TEST_CASE("shmem_put: dst_pe out of range and offsets out of bounds are DistributedErrors") {
  auto pe = [](pto::Tensor x) {
    auto s = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
    pto::set_vec_tile_shapes(4, 8);
    dist::shmem_put(x, {0, 0}, s, 1);
  };
  CHECK_THROWS_WITH_AS(run1(pe, t(kF32, {4, 8})),
                       Contains("dst_pe 1 is out of range [0, 1) for group 'world'"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(run1(pe, t(kF32, {4, 8})), Contains("errors_test.cpp:"),
                       pto::DistributedError);
  auto offs = [](pto::Tensor x) {
    auto s = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
    pto::set_vec_tile_shapes(2, 8);
    dist::shmem_put(x, {3, 0}, s, 0);
  };
  CHECK_THROWS_WITH_AS(run1(offs, t(kF32, {2, 8})),
                       Contains("window [3, 5) of dim 0 exceeds the size 4 of the shmem data"),
                       pto::DistributedError);
}

TEST_CASE("group names must be 1-127 bytes, and a group keeps one n_pes") {
  auto empty = [](pto::Tensor) { dist::create_shmem_tensor("", 1, pto::DT_FP32, {4, 8}); };
  auto long_name = [](pto::Tensor) {
    dist::create_shmem_tensor(std::string(128, 'g'), 1, pto::DT_FP32, {4, 8});
  };
  auto unknown = [](pto::Tensor) {
    dist::create_shmem_tensor(std::string(127, 'g'), 1, pto::DT_FP32, {4, 8});
  };
  auto mismatch = [](pto::Tensor) {
    dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
    dist::create_shmem_tensor("world", 2, pto::DT_FP32, {4, 8});
  };
  auto bigger_than_world = [](pto::Tensor) {
    dist::create_shmem_tensor("world", 4, pto::DT_FP32, {4, 8});
  };
  CHECK_THROWS_WITH_AS(
      run1(bigger_than_world, t(kF32, {1, 1})),
      Contains("n_pes mismatch for group 'world': 4 here, but the group has 1 PEs"),
      pto::DistributedError);
  CHECK_THROWS_WITH_AS(run1(empty, t(kF32, {1, 1})), Contains("group name must be 1-127 bytes"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(run1(long_name, t(kF32, {1, 1})), Contains("got 128 bytes"),
                       pto::DistributedError);
  // 127 bytes is a valid name, but a group other than "world" must be created first.
  CHECK_THROWS_WITH_AS(run1(unknown, t(kF32, {1, 1})), Contains("unknown group"),
                       pto::DistributedError);
  CHECK_THROWS_WITH_AS(run1(mismatch, t(kF32, {1, 1})),
                       Contains("n_pes mismatch for group 'world'"), pto::DistributedError);
}

TEST_CASE("a group whose n_pes differs from the PEs running the kernel is a DistributedError") {
  // An unknown group name fails at trace time, at the user's line.
  auto two = [](pto::Tensor x) {
    auto s = dist::create_shmem_tensor("pair", 2, pto::DT_FP32, {4, 8});
    pto::set_vec_tile_shapes(4, 8);
    dist::shmem_put(x, {0, 0}, s, 1);
  };
  CHECK_THROWS_AS(run1(two, t(kF32, {4, 8})), pto::DistributedError);
}

TEST_CASE("shmem dtype and rank rules") {
  auto dtype = [](pto::Tensor x) {
    auto s = dist::create_shmem_tensor("world", 1, pto::DT_INT32, {4, 8});
    pto::set_vec_tile_shapes(4, 8);
    dist::shmem_put(x, {0, 0}, s, 0);
  };
  CHECK_THROWS_WITH_AS(
      run1(dtype, t(kF32, {4, 8})),
      Contains("shmem tensor dtype DT_INT32 must match input tensor dtype DT_FP32"),
      pto::DTypeError);
  auto rank1 = [](pto::Tensor) { dist::create_shmem_tensor("world", 1, pto::DT_FP32, {8}); };
  CHECK_THROWS_WITH_AS(
      run1(rank1, t(kF32, {1, 1})),
      Contains("create_shmem_tensor: the shape must have 2, 3 or 4 dims, got 1 dims (shape [8])"),
      pto::ShapeError);
  auto bool_data = [](pto::Tensor) { dist::create_shmem_tensor("world", 1, pto::DT_BOOL, {8, 8}); };
  CHECK_THROWS_AS(run1(bool_data, t(kF32, {1, 1})), pto::DTypeError);
  auto incongruent = [](pto::Tensor) {
    auto d = dist::create_shmem_tensor("world", 1, pto::DT_FP32, {4, 8});
    pto::set_vec_tile_shapes(4, 8);
    dist::shmem_signal(d, 0, 1, 0);
    pto::set_vec_tile_shapes(2, 8); // the wait would address other slots
    dist::shmem_wait_until(d, 0, 1);
  };
  CHECK_THROWS_WITH_AS(run1(incongruent, t(kF32, {1, 1})), Contains("is not congruent"),
                       pto::DistributedError);
}
