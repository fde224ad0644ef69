// parallel_internal.h - The sharding engine behind pto/parallel.h: the rule format (one table,
// rules.cpp), strategy resolution and checks (apply.cpp) and redistribution over mesh axes
// (redistribute.cpp). docs/sharding.md describes the model.
#pragma once

#include "pto/nn_ops.h"
#include "pto/parallel.h"
#include "pto/sort_ops.h"

#include <array>
#include <string>
#include <vector>

namespace pto::parallel::detail {

/// What splitting a factor on a mesh axis means (docs/sharding.md, "One rule table").
enum class FactorKind {
  FREE,    ///< every tensor with the factor is split alike; no communication
  REDUCE,  ///< absent from the output, which becomes Partial(reduce) on the axis
  SOFTMAX, ///< the softmax axis: the exact recipe (allreduce of row max, then of row sums)
  WHOLE,   ///< must not be split (Reshape's merged or split dims)
  /// The inputs are made whole along it (allgathered when split) and the op's whole result is
  /// cut to this PE's chunk by a view (Concat's and Split's axis: exact, bitwise).
  GATHER,
  /// The inputs are whole along it and the local op computes only this PE's chunk of the output
  /// (Tile's repeated dims: each PE tiles multiples / count copies; no communication).
  REPEAT,
};

struct Factor {
  int64_t size = 1;
  FactorKind kind = FactorKind::FREE;
  PartialOp reduce = PartialOp::SUM; ///< REDUCE: the partial the output carries
  const char *name = nullptr;        ///< messages' name ("k"); null: named by its result dim
};

/// A factor signature, Shardy style: per input dim and per output dim, the factor it is, or -1
/// (a broadcast size-1 dim of an input; a kept size-1 dim of the output).
struct Signature {
  std::vector<Factor> factors;
  std::vector<std::vector<int>> in;
  std::vector<int> out;
};

/// How an op treats inputs that carry a pending Partial(op) on a mesh axis no factor uses.
enum class PartialRule {
  RESOLVE,      ///< not linear: resolve (allreduce) first
  LINEAR_ALL,   ///< every input Partial(op) on the axis -> output Partial(op) (add of sums)
  LINEAR_ONE,   ///< exactly one input Partial(op), the others replicated (mul, matmul)
  LINEAR_FIRST, ///< input 0 Partial(op), the others replicated (div's numerator)
  MONOTONE,     ///< any inputs Partial(op), the others replicated (max of maxes; relu)
};

/// The attributes an op was called with.
struct Attrs {
  int axis = 0;
  bool keepdim = false;
  std::vector<int> perm;
  std::vector<int64_t> shape;
  MatmulOptions mm;
  int fn = 0;                           ///< the unary or binary function (rules.cpp's tables)
  double alpha = 1.0;                   ///< elu's alpha; the fill value of ones_like / zeros_like
  std::vector<int> dims;                ///< squeeze's dims
  DataType dtype = DT_BOTTOM;           ///< cast's target
  DataFormat format = DataFormat::NCHW; ///< bias_add's
  std::vector<int64_t> begin, size;     ///< slice's window; tile's multiples in `size`
  std::vector<int64_t> strides;         ///< strided_slice's (empty: all 1)
  TopkOptions topk;                     ///< topk's (k in `axis`)
};

struct Rule;

/// What a rule's local function gets: this PE's input slices and where its output lies.
struct Call {
  const Rule &rule;
  const Attrs &attrs;
  std::vector<Tensor> locals;
  const Signature &sig;
  std::vector<std::vector<int>> factor_axes; ///< per factor, the mesh axes splitting it
  const Mesh &mesh;
  bool active; ///< false on a 1-PE world: slices are whole and no collective runs
  std::vector<int64_t> out_local_shape;
  SrcLoc loc;
  /// A rule with several outputs (ArgMaxWithValue, TopK) returns the first and appends the
  /// others here; every output has the first one's layout.
  std::vector<Tensor> *extra = nullptr;
};

/// The strategy as part counts (axis names as their sizes), one vector per input: what a rule's
/// own check (Rule::check) reads.
using Counts = std::vector<std::vector<int64_t>>;

/// One entry of the rule table (rules.cpp, kRules).
struct Rule {
  const char *op;        ///< as the user writes it: "parallel::matmul"
  const char *mindspore; ///< the seed table's name: "MatMul"
  int arity;
  bool takes_strategy;
  /// Per PartialOp (indexed by its value), how a pending partial input is treated.
  std::array<PartialRule, 4> partials;
  Signature (*signature)(const std::vector<std::vector<int64_t>> &shapes, const Attrs &a,
                         SrcLoc loc);
  Tensor (*local)(const Call &c);
  const char *cost;       ///< the communication a split costs, for the docs
  const char *notes = ""; ///< how the rule is computed when no single pto op does it, exactness
  /// The seed table's own constraint on an explicit strategy (PReLU's channel rule, Tile's
  /// multiples-only rule, ...), run after the arity and rank checks: throws StrategyError.
  void (*check)(const Rule &rule, const Counts &counts,
                const std::vector<std::vector<int64_t>> &shapes, const Attrs &a,
                const Signature &sig, SrcLoc loc) = nullptr;
};

/// "nearest valid strategy: ((1, 4), (4,))": `counts` with entry (operand, dim) set to `value`,
/// and every other dim of the same factor too.
std::string nearest(const Counts &counts, const Signature &sig, size_t operand, size_t dim,
                    int64_t value);

/// Runs `rule` on `inputs` under `strategy` (empty: follow the inputs' layouts).
DTensor apply(const Rule &rule, const std::vector<Input> &inputs, const Strategy &strategy,
              const Attrs &attrs, SrcLoc loc);
/// As apply, for a rule with several outputs (all of one layout), in the rule's order.
std::vector<DTensor> apply_n(const Rule &rule, const std::vector<Input> &inputs,
                             const Strategy &strategy, const Attrs &attrs, SrcLoc loc);

// --- redistribute.cpp ---

/// False on a 1-PE world (the oracle); true when the world's PE count equals the mesh's;
/// StrategyError (naming `op`) otherwise.
bool mesh_active(const Mesh &mesh, const char *op, SrcLoc loc);
/// This PE's coordinate on `axis` (run time).
SymbolicScalar my_coord(const Mesh &mesh, int axis, SrcLoc loc);
/// This PE's chunk of one dim of a layout: its global offset and size (run time; balanced), and
/// the largest chunk of the dim (the static extent of every PE's slice).
struct SymChunk {
  SymbolicScalar offset, size;
  int64_t max = 0;
};
SymChunk my_chunk(const Layout &l, int dim, SrcLoc loc);
/// StrategyError for an uneven split over more than one mesh axis (not executed yet).
void check_uneven(const Layout &l, const char *op, SrcLoc loc);
/// A view of x that takes this PE's chunk of `target` along the dims marked in `dims` (x whole
/// along them; the other dims keep x's extents).
Tensor reslice(const Tensor &x, const Layout &target, const std::vector<bool> &dims, SrcLoc loc);
/// The slice `target` gives this PE of a whole tensor (a view; `whole` itself when inactive).
Tensor slice_whole(const Tensor &whole, const Layout &target, bool active, SrcLoc loc);
/// The reduction over mesh axis `axis` of every PE's x (PEs that differ only in that axis), in
/// coordinate order.
Tensor allreduce_axis(const Tensor &x, const Mesh &mesh, int axis, PartialOp op, SrcLoc loc);
/// x moved to `target` (same mesh and global shape): partials resolved, splits regathered and
/// resliced (docs/sharding.md, "Redistribution").
Tensor redistribute_local(const Tensor &local, const Layout &from, const Layout &target,
                          bool active, SrcLoc loc);
/// The whole-tensor layout (every axis Replicate) of `global_shape` on `mesh`.
Layout replicated(const Mesh &mesh, const std::vector<int64_t> &global_shape, SrcLoc loc);
/// The layout `spec` describes for a tensor of `global_shape` (shard / redistribute).
Layout layout_from_spec(const Mesh &mesh, const std::vector<int64_t> &global_shape,
                        const Spec &spec, const char *op, SrcLoc loc);
/// Static shape of a whole tensor; StrategyError for a dynamic dim.
std::vector<int64_t> static_shape(const Tensor &t, const char *op, int operand, SrcLoc loc);
/// Appends `line` to the traced program's sharding record (PTO_DUMP=sharding; ir::Program).
void record(const std::string &line, SrcLoc loc);
/// The bytes of x's static (largest) local shape: what a collective moves per PE for it.
int64_t local_bytes(const Tensor &x, SrcLoc loc);
/// "((2, 4), (4, 1))".
std::string strategy_str(const std::vector<std::vector<int64_t>> &counts);
/// The run of consecutive mesh axes, all unused (used[a] false), whose sizes multiply to
/// `parts`, lowest start first; empty when there is none.
std::vector<int> map_count(const Mesh &mesh, int64_t parts, const std::vector<bool> &used);

} // namespace pto::parallel::detail
