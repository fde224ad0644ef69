// strategy_errors_test.cpp - Every check of pto::parallel as a pto::StrategyError at trace time
// (docs/sharding.md, "Errors"): the exact type, the user's line, the op as written, and the
// operand, dim, given value and nearest valid strategy in the message. Traced on a 1-PE world
// (the oracle runs every check too), except the mesh-size mismatch, which needs 2 PEs.
#include "pto/parallel.h"

#include "parallel/sharded.h"
#include "support/expect_error.h"

#include <doctest/doctest.h>

#include <functional>

namespace par = pto::parallel;
using pto::Tensor;

namespace {

const char *const kFile = "strategy_errors_test.cpp";
const par::Mesh kMesh({2, 4}, {"dp", "mp"});

/// Traces `body(x [16, 32], w [32, 16])` on a world of `n` PEs (the error comes from the trace).
void trace(const std::function<void(Tensor, Tensor)> &body, int n = 1) {
  auto k = pto::jit("errors", [&](Tensor x, Tensor w, Tensor y) {
    sharded::tiles();
    body(x, w);
    pto::assemble(pto::full({16, 16}, 0.0, pto::DT_FP32), {0, 0}, y);
  });
  std::vector<pto::HostTensor> in{sharded::data({16, 32}, 1), sharded::data({32, 16}, 2)};
  pto::runtime::World world(n);
  sharded::run<2>(world, n, k, in, {16, 16}, true);
}

} // namespace

TEST_CASE("parallel errors: strategy arity, rank and counts") {
  int line = 0;
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(par::shard(x, kMesh, {{}, {}}), w, {{2, 1}, {1, 4}, {1, 1}});
        });
      },
      kFile, line, "parallel::matmul",
      "the strategy has 3 tuples but parallel::matmul (MatMul) has 2 inputs");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(par::shard(x, kMesh, {{}, {}}), w, {{2, 1, 1}, {1, 4}});
        });
      },
      kFile, line, "parallel::matmul",
      "operand 0 has rank 2 ([16, 32]) but its strategy has 3 entries; nearest valid strategy: "
      "((2, 1), (1, 4))");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(par::shard(x, kMesh, {{}, {}}), w, {{0, 1}, {1, 4}});
        });
      },
      kFile, line, "parallel::matmul", "operand 0 dim 0 is split 0: counts must be >= 1");
  // 3 is no mesh axis; 8 = dp * mp is a run of axes, so only 3 fails.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(par::shard(x, kMesh, {{}, {}}), w, {{1, 1}, {1, 3}});
        });
      },
      kFile, line, "parallel::matmul",
      "operand 1 dim 1 is split 3, which does not map onto the mesh (dp=2, mp=4, 8 PEs)");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(par::shard(x, kMesh, {{}, {}}), w, {{"tp", 1}, {1, 1}});
        });
      },
      kFile, line, "parallel::matmul", "operand 0 dim 0 names axis 'tp', which the mesh");
}

TEST_CASE("parallel errors: a factor split differently in two operands") {
  int line = 0;
  // MatMul's k: split 4 in a (dim 1), 2 in b (dim 0): MindSpore's "the shard num of first
  // input's column is 4, but the shard num of second input's row is 2".
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(par::shard(x, kMesh, {{}, {}}), w, {{2, 4}, {2, 1}});
        });
      },
      kFile, line, "parallel::matmul",
      "operand 0 dim 1 and operand 1 dim 0 are one factor, k (size 32, contracted together), "
      "which every operand must split alike, but operand 0 dim 1 is split 4 and operand 1 dim 0 "
      "is split 2; nearest valid strategy: ((2, 4), (4, 1))");
  // Named axes are shown with their size; a dim of the result is named by its index.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::add(par::shard(x, kMesh, {{}, {}}), x, {{"mp", 1}, {"dp", 1}});
        });
      },
      kFile, line, "parallel::add",
      "operand 0 dim 0 and operand 1 dim 0 are one factor, result dim 0 (size 16, one dim of "
      "the result), which every operand must split alike, but operand 0 dim 0 is split 4 (axis "
      "'mp') and operand 1 dim 0 is split 2 (axis 'dp'); nearest valid strategy: ((4, 1), (4, "
      "1))");
  // Two size-1 dims are one factor, not a broadcast (issue 8's sharded_attention --heads 1):
  // the message says so and keeps the split the user asked for.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          pto::set_vec_tile_shapes(1, 16, 32);
          auto a = pto::reshape(x, {1, 16, 32});
          auto b = pto::reshape(w, {1, 32, 16});
          line = __LINE__ + 1;
          par::matmul(par::shard(a, kMesh, {{}, {}, {}}), b, {{1, 1, 1}, {"dp", 1, 1}});
        });
      },
      kFile, line, "parallel::matmul",
      "operand 0 dim 0 and operand 1 dim 0 are one factor, result dim 0 (size 1, one dim of the "
      "result), which every operand must split alike, but operand 0 dim 0 is split 1 and "
      "operand 1 dim 0 is split 2 (axis 'dp'); both dims have size 1, so neither is a broadcast "
      "(a size-1 dim is broadcast only against a larger one): split both 2 or neither; nearest "
      "valid strategy: ((2, 1, 1), (2, 1, 1))");
  // Elementwise: the two operands' dim 0 are one dim of the result.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::add(par::shard(x, kMesh, {{}, {}}), x, {{2, 1}, {4, 1}});
        });
      },
      kFile, line, "parallel::add",
      "operand 0 dim 0 and operand 1 dim 0 are one factor, result dim 0 (size 16, one dim of "
      "the result), which every operand must split alike, but operand 0 dim 0 is split 2 and "
      "operand 1 dim 0 is split 4; nearest valid strategy: ((4, 1), (4, 1))");
  // Shapes that do not broadcast: the shared elementwise signature names the op as written.
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::add(par::shard(x, kMesh, {{}, {}}), w);
        });
      },
      kFile, line, "parallel::add", "shapes [16, 32] and [32, 16] do not broadcast");
}

TEST_CASE("parallel errors: forbidden splits, strategies where none is taken, uneven splits") {
  int line = 0;
  // A broadcast size-1 dim cannot be split.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          auto row = pto::full({1, 32}, 1.0, pto::DT_FP32);
          line = __LINE__ + 1;
          par::add(par::shard(x, kMesh, {{}, {}}), row, {{2, 1}, {2, 1}});
        });
      },
      kFile, line, "parallel::add",
      "operand 1 dim 0 has size 1 and is broadcast: it cannot be split; nearest valid strategy: "
      "((2, 1), (1, 1))");
  // Reshape merges dims 0 and 1: a split dim 1 must be made whole first.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          auto xs = par::shard(x, kMesh, {{}, "mp"});
          line = __LINE__ + 1;
          par::reshape(xs, {512});
        });
      },
      kFile, line, "parallel::reshape",
      "operand 0 dim 1 is split 4 ([16, 32@mp]), but Reshape needs it whole: redistribute it "
      "first");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          auto xs = par::shard(x, kMesh, {"dp", {}});
          line = __LINE__ + 1;
          par::reshape(xs, {16, 4, 8}, {{2, 1}});
        });
      },
      kFile, line, "parallel::reshape",
      "Reshape takes no strategy (MindSpore: none may be configured)");
  // Uneven splits are executed over one mesh axis; over several (6 columns into dp x mp = 8)
  // they are refused.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          auto v = pto::view(x, {16, 6}, {0, 0});
          line = __LINE__ + 1;
          par::shard(v, kMesh, {{}, 8});
        });
      },
      kFile, line, "parallel::shard",
      "dim 1 of size 6 is split 8 over 2 mesh axes: an uneven split must use one mesh axis");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          auto v = pto::view(x, {16, 6}, {0, 0});
          line = __LINE__ + 1;
          par::gelu(par::shard(v, kMesh, {{}, {}}), {{1, 8}});
        });
      },
      kFile, line, "parallel::gelu",
      "operand 0 dim 1 of size 6 is split 8 over 2 mesh axes: an uneven split must use one");
}

TEST_CASE("parallel errors: meshes and operands") {
  int line = 0;
  // An 8-PE mesh on a 2-PE world.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace(
            [&](Tensor x, Tensor) {
              line = __LINE__ + 1;
              par::shard(x, kMesh, {"dp", {}});
            },
            2);
      },
      kFile, line, "parallel::shard",
      "the mesh (dp=2, mp=4) spans 8 PEs but the world has 2: a mesh must span the world");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::matmul(x, w, {{2, 1}, {1, 4}});
        });
      },
      kFile, line, "parallel::matmul", "no operand is a DTensor, so the op has no mesh");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          const par::Mesh other({8}, {"x"});
          line = __LINE__ + 1;
          par::add(par::shard(x, kMesh, {{}, {}}), par::shard(x, other, {{}, {}}));
        });
      },
      kFile, line, "parallel::add", "operands on different meshes (dp=2, mp=4 and x=8)");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::shard(x, kMesh, {"dp"});
        });
      },
      kFile, line, "parallel::shard", "the spec has 1 entries for a tensor of rank 2 ([16, 32])");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::shard(x, kMesh, {"dp", "dp"});
        });
      },
      kFile, line, "parallel::shard", "dim 1 names axis 'dp', already used");
  // A DTensor whose local tensor is not the slice its layout gives this PE: refused where it
  // is made (session 12's attack, F5), on 2 PEs (whole x for a half) and on the 1-PE oracle
  // (a half for the whole).
  const par::Mesh two({2}, {"a"});
  const par::Layout rows(two, {16, 32}, {par::Placement::split(0)});
  support::expect_error<pto::StrategyError>(
      [&] {
        trace(
            [&](Tensor x, Tensor) {
              line = __LINE__ + 1;
              par::DTensor d(x, rows);
            },
            2);
      },
      kFile, line, "parallel::DTensor",
      "the local tensor has shape [16, 32] but the layout [16@a, 32] gives this PE a slice of "
      "shape [8, 32] on a 2-PE world");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          auto half = pto::view(x, {8, 32}, {0, 0});
          line = __LINE__ + 1;
          par::DTensor d(half, rows);
        });
      },
      kFile, line, "parallel::DTensor",
      "the local tensor has shape [8, 32] but the layout [16@a, 32] gives this PE a slice of "
      "shape [16, 32] on a 1-PE world");
  trace([&](Tensor x, Tensor) { par::DTensor d(x, rows); }); // the oracle's whole tensor
}

TEST_CASE("parallel errors: shapes of BroadcastTo, BiasAdd, ExpandDims and Squeeze") {
  int line = 0;
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::broadcast_to(par::shard(x, kMesh, {"dp", {}}), {16, 8});
        });
      },
      kFile, line, "parallel::broadcast_to",
      "dim 1 of [16, 32] is 32: it must be 1 or the target's 8");
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::broadcast_to(par::shard(x, kMesh, {"dp", {}}), {32});
        });
      },
      kFile, line, "parallel::broadcast_to", "target [32] has fewer dims than [16, 32]");
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor w) {
          line = __LINE__ + 1;
          par::bias_add(par::shard(x, kMesh, {"dp", {}}),
                        pto::reshape(pto::view(w, {1, 16}, {0, 0}), {16}));
        });
      },
      kFile, line, "parallel::bias_add", "must have x's 32 channels");
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::unsqueeze(par::shard(x, kMesh, {"dp", {}}), 3);
        });
      },
      kFile, line, "parallel::unsqueeze", "axis 3 is out of range for rank 3");
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::squeeze(par::shard(x, kMesh, {"dp", {}}), {-3});
        });
      },
      kFile, line, "parallel::squeeze", "axis -3 is out of range for rank 2");
}

TEST_CASE("parallel errors: the seed table's PReLU, Slice, StridedSlice and Tile rules") {
  int line = 0;
  // PReLU: a per-channel weight [32] must be split as x's channels (dim 1).
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 2;
          auto weight = pto::reshape(pto::view(x, {1, 32}, {0, 0}), {32});
          par::prelu(par::shard(x, kMesh, {{}, {}}), weight, {{2, 4}, {2}});
        });
      },
      kFile, line, "parallel::prelu",
      "operand 1 (weight) dim 0 is split 2, but operand 0 (x) dim 1, the channel dim, is split 4: "
      "PReLU's weight [32] must be split as x's channels; nearest valid strategy: ((2, 4), (4,))");
  // Slice: a split dim must be taken whole.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::slice(par::shard(x, kMesh, {{}, {}}), {0, 8}, {16, 8}, {{2, 4}});
        });
      },
      kFile, line, "parallel::slice",
      "operand 0 dim 1 is split 4, but the slice takes 8 of its 32 elements: Slice takes a split "
      "dim only whole; nearest valid strategy: ((2, 1)) (or redistribute after the slice)");
  // StridedSlice: a dim with stride != 1 must not be split, even over its whole extent.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::strided_slice(par::shard(x, kMesh, {{}, {}}), {0, 0}, {16, 32}, {2, 1}, {{2, 4}});
        });
      },
      kFile, line, "parallel::strided_slice",
      "operand 0 dim 0 is split 2, but the strided slice takes 8 of its 16 elements with stride "
      "2: StridedSlice takes a split dim only whole; nearest valid strategy: ((1, 4))");
  // Tile: only the multiples may be split; a dim with multiple 1 takes no count.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::tile(par::shard(x, kMesh, {{}, {}}), {4, 1}, {{2, 4}});
        });
      },
      kFile, line, "parallel::tile",
      "operand 0 dim 1 is split 4, but its multiple is 1: Tile takes a strategy only for its "
      "multiples (a count must divide the dim's multiple); nearest valid strategy: ((2, 1))");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::tile(par::shard(x, kMesh, {{}, {}}), {3, 1}, {{2, 1}});
        });
      },
      kFile, line, "parallel::tile",
      "operand 0 dim 0 is split 2, but its multiple is 3: Tile takes a strategy only for its "
      "multiples");
  // Concat: every input splits the concat axis alike (one factor).
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::concat({par::shard(x, kMesh, {{}, {}}), x}, 0, {{2, 1}, {4, 1}});
        });
      },
      kFile, line, "parallel::concat",
      "operand 0 dim 0 and operand 1 dim 0 are one factor, result dim 0 (size 32, one dim of "
      "the result), which every operand must split alike, but operand 0 dim 0 is split 2 and "
      "operand 1 dim 0 is split 4");
  // TopK: every PE's chunk of the split last dim must hold k elements.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace(
            [&](Tensor x, Tensor) {
              line = __LINE__ + 1;
              par::topk(par::shard(x, kMesh, {{}, {}}), 5, true, true, {{1, 8}});
            },
            8);
      },
      kFile, line, "parallel::topk",
      "operand 0 dim 1 of size 32 is split 8: a PE's chunk has fewer than k = 5 elements");
  // The same on a 1-PE world (the oracle): the check does not depend on the PEs running it.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::topk(par::shard(x, kMesh, {{}, {}}), 5, true, true, {{1, 8}});
        });
      },
      kFile, line, "parallel::topk",
      "operand 0 dim 1 of size 32 is split 8: a PE's chunk has fewer than k = 5 elements");
}

TEST_CASE("parallel errors: the seed table's Gather, OneHot, UnsortedSegment and Unique rules") {
  int line = 0;
  // GatherV2: the indices are 1-D (MindSpore: no scalar indices).
  support::expect_error<pto::ShapeError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 2;
          auto idx = pto::reshape(pto::arange(4), {2, 2});
          par::index_select(par::shard(x, kMesh, {{}, {}}), 0, idx);
        });
      },
      kFile, line, "parallel::index_select", "indices [2, 2] must be 1-D");
  // OneHot: MindSpore's strategy, the output's tuple then () () for on_value and off_value.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor, Tensor) {
          line = __LINE__ + 1;
          par::one_hot(par::shard(pto::arange(16), kMesh, {{}}), 4, {{2, 4}, {}});
        });
      },
      kFile, line, "parallel::one_hot",
      "the strategy has 2 tuples: OneHot takes the output's tuple, then () and () for on_value "
      "and off_value; nearest valid strategy: ((2, 4), (), ())");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor, Tensor) {
          line = __LINE__ + 1;
          par::one_hot(par::shard(pto::arange(16), kMesh, {{}}), 4, {{2, 4}, {}, {2}});
        });
      },
      kFile, line, "parallel::one_hot",
      "tuple 2 (off_value) has 1 entries, but off_value is a scalar: its tuple must be ()");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor, Tensor) {
          line = __LINE__ + 1;
          par::one_hot(par::shard(pto::arange(16), kMesh, {{}}), 4, {{2}, {}, {}});
        });
      },
      kFile, line, "parallel::one_hot",
      "the output's tuple has 1 entries, but the output (the indices' 1 dims, then the 4 "
      "classes) has rank 2; nearest valid strategy: ((2, 1), (), ())");
  // UnsortedSegmentSum / Min / Max: input_x and segment_ids split alike along segment_ids' dims.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::unsorted_segment_sum(par::shard(x, kMesh, {{}, {}}), pto::arange(16), 4,
                                    {{2, 1}, {4}});
        });
      },
      kFile, line, "parallel::unsorted_segment_sum",
      "operand 1 (segment_ids) dim 0 is split 4, but operand 0 (input_x) dim 0 is split 2: "
      "UnsortedSegmentSum needs input_x and segment_ids split the same way along the segment_ids "
      "dims; nearest valid strategy: ((2, 1), (2,))");
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::unsorted_segment_max(par::shard(x, kMesh, {{}, {}}), pto::arange(16), 4,
                                    {{1, 4}, {2}});
        });
      },
      kFile, line, "parallel::unsorted_segment_max",
      "operand 1 (segment_ids) dim 0 is split 2, but operand 0 (input_x) dim 0 is split 1: "
      "UnsortedSegmentMax needs");
  // Unique: only the fully repeated strategy.
  support::expect_error<pto::StrategyError>(
      [&] {
        trace([&](Tensor x, Tensor) {
          line = __LINE__ + 1;
          par::unique(par::shard(x, kMesh, {{}, {}}), {{1, 4}});
        });
      },
      kFile, line, "parallel::unique",
      "operand 0 dim 1 is split 4: Unique takes only the fully repeated strategy (every count 1; "
      "a split input is gathered whole without one); nearest valid strategy: ((1, 1))");
}
