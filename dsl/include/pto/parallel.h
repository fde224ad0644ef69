// parallel.h - Sharded operators, as MindSpore's semi-auto parallel strategies (`op.shard(((2,
// 1), (1, 4)))`) and PyTorch DTensor's placements (Shard / Replicate / Partial), on the
// collectives of pto/collectives.h. The design, its rules and what is planned: docs/sharding.md.
//
// A kernel is written with GLOBAL shapes: its tensor parameters are whole tensors (every PE is
// given the whole input, as MindSpore's end-to-end tests) and the ops below take each PE's slice
// (a view at the PE's offset, no copy), run the op on the slices and insert the collectives that
// make the result equal to the single-PE result. A DTensor carries the local slice and its
// Layout; a pending reduction (Partial) is kept until a consumer needs it resolved. Run on a
// 1-PE world, the same kernel is the oracle: every slice is the whole tensor, no collective is
// traced, and every check below still runs, so both give the same errors.
//
// Common rules of every function here (called while a kernel is traced):
// - Errors are pto::StrategyError at the caller's `file:line`, naming the op as written
//   (`parallel::matmul`), the operand, the dim, what was given and the nearest valid strategy;
//   the ops' own errors (ShapeError, DTypeError, ...) come from the pto op on the slices, at the
//   caller's line too.
// - A Mesh's PE count must equal the world's ("world" group) or the world has 1 PE.
// - Uneven splits are balanced (balanced_chunk): a slice has the static shape ceil(n / k) and a
//   run-time valid shape (its chunk); an uneven split over several mesh axes of one dim is a
//   StrategyError (planned), and so is reshaping an unevenly split kept dim.
// - Tensors of rank 1-4 whose shapes are static; dtypes are those of the pto op on the slices
//   and of the collectives (int8-int64, fp16, bf16, fp32, fp64).
// - Determinism: movement, max and min are bitwise equal to one PE; sums over a split factor add
//   the PEs' partial sums in mesh-coordinate order (the same bits on every PE, a reassociation
//   of the single-PE sum).
#pragma once

#include "pto/dtype.h"
#include "pto/nn_ops.h"
#include "pto/tensor.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace pto::parallel {

using SrcLoc = std::source_location;

/// The reduction a Partial placement is waiting for (DTensor's Partial reduce_op; HCCL's op).
enum class PartialOp { SUM, MAX, MIN, PROD };
/// "sum" | "max" | "min" | "prod".
const char *name(PartialOp op);

/// A logical grid of PEs with named axes, as JAX's Mesh / DTensor's DeviceMesh / MindSpore's
/// device matrix. PE p has coordinates in row-major order: p = c0 * (d1 * .. * dk) + .. + ck.
class Mesh {
public:
  /// `shape` = the size of each axis (each >= 1, product <= 2^31), `axis_names` one unique
  /// non-empty name per axis. StrategyError otherwise (at `loc`, op "parallel::Mesh").
  Mesh(std::vector<int64_t> shape, std::vector<std::string> axis_names,
       SrcLoc loc = SrcLoc::current());
  int n_axes() const { return static_cast<int>(shape_.size()); }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// The size / name of axis `axis` in [0, n_axes()) (StrategyError at `loc` otherwise).
  int64_t size(int axis, SrcLoc loc = SrcLoc::current()) const;
  const std::string &axis_name(int axis, SrcLoc loc = SrcLoc::current()) const;
  /// The product of the axis sizes: the PEs the mesh spans.
  int64_t n_pes() const { return n_pes_; }
  /// The index of axis `name`, or -1 when the mesh has none.
  int find_axis(const std::string &name) const;
  /// PE number `pe` in [0, n_pes()) to coordinates (row-major), and the stride of axis `axis`
  /// in PE numbers. StrategyError at `loc` for a PE or axis outside the mesh.
  std::vector<int64_t> coords(int64_t pe, SrcLoc loc = SrcLoc::current()) const;
  int64_t stride(int axis, SrcLoc loc = SrcLoc::current()) const;
  /// "dp=2, mp=4".
  std::string to_string() const;
  bool operator==(const Mesh &o) const { return shape_ == o.shape_ && names_ == o.names_; }

private:
  std::vector<int64_t> shape_;
  std::vector<std::string> names_;
  int64_t n_pes_ = 1;
};

/// How a tensor lies along one mesh axis (DTensor's Placement; MindSpore's tensor map entry).
struct Placement {
  enum class Kind { REPLICATE, SPLIT, PARTIAL };
  Kind kind = Kind::REPLICATE;
  int dim = -1;                  ///< SPLIT: the tensor dim the axis splits
  PartialOp op = PartialOp::SUM; ///< PARTIAL: the pending reduction
  static Placement replicate() { return {}; }
  static Placement split(int dim) { return {Kind::SPLIT, dim, PartialOp::SUM}; }
  static Placement partial(PartialOp op = PartialOp::SUM) { return {Kind::PARTIAL, -1, op}; }
  bool operator==(const Placement &o) const {
    return kind == o.kind && (kind != Kind::SPLIT || dim == o.dim) &&
           (kind != Kind::PARTIAL || op == o.op);
  }
  /// "R", "S(1)", "P(sum)".
  std::string to_string() const;
};

/// One part of a balanced split (OneFlow's BalancedSplitter): `n` elements into `parts` gives
/// part i `n / parts + (i < n % parts)` elements at offset `i * (n / parts) + min(i, n % parts)`.
/// No part is empty unless n < parts. StrategyError for n < 0, parts < 1 or i outside
/// [0, parts).
struct Chunk {
  int64_t offset = 0, size = 0;
};
Chunk balanced_chunk(int64_t n, int64_t parts, int64_t index, SrcLoc loc = SrcLoc::current());

/// Where a tensor of `global_shape` lives on `mesh`: one Placement per mesh axis. Several axes
/// may split one dim (the lower-numbered axis is the major one: the part index is mixed-radix
/// over the dim's axes in axis order), as JAX's tuple PartitionSpec.
class Layout {
public:
  /// StrategyError when placements.size() != mesh.n_axes(), a placement's kind or partial op is
  /// not one of the enum's values, a SPLIT dim is outside [0, rank), or a global dim is negative.
  Layout(Mesh mesh, std::vector<int64_t> global_shape, std::vector<Placement> placements,
         SrcLoc loc = SrcLoc::current());
  const Mesh &mesh() const { return mesh_; }
  const std::vector<int64_t> &global_shape() const { return shape_; }
  const std::vector<Placement> &placements() const { return placements_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  /// The mesh axes splitting dim `dim`, ascending (major first). StrategyError at `loc` unless
  /// 0 <= dim < rank().
  std::vector<int> split_axes(int dim, SrcLoc loc = SrcLoc::current()) const;
  /// The number of parts dim `dim` is split into (the product of its axes' sizes). StrategyError
  /// at `loc` unless 0 <= dim < rank().
  int64_t parts(int dim, SrcLoc loc = SrcLoc::current()) const;
  /// The index of the part of dim `dim` held at mesh coordinates `coord` (one per mesh axis,
  /// each in [0, size(axis)); dim in [0, rank()); StrategyError at `loc` otherwise).
  int64_t part_index(int dim, const std::vector<int64_t> &coord,
                     SrcLoc loc = SrcLoc::current()) const;
  /// The shape / global offset of the slice held at mesh coordinates `coord` (balanced splits;
  /// PARTIAL and REPLICATE axes do not change them). `coord` as part_index.
  std::vector<int64_t> local_shape(const std::vector<int64_t> &coord,
                                   SrcLoc loc = SrcLoc::current()) const;
  std::vector<int64_t> local_offset(const std::vector<int64_t> &coord,
                                    SrcLoc loc = SrcLoc::current()) const;
  /// The largest local shape over the mesh: ceil(n / parts) per dim.
  std::vector<int64_t> max_local_shape() const;
  /// The first dim whose split is uneven (n % parts != 0), or -1.
  int first_uneven_dim() const;
  bool has_partial() const;
  /// "[8@dp, 16] {P(sum)@mp}" (JAX's explicit-sharding notation, with DTensor's partials).
  std::string to_string() const;
  bool operator==(const Layout &o) const {
    return mesh_ == o.mesh_ && shape_ == o.shape_ && placements_ == o.placements_;
  }

private:
  /// StrategyError naming `op` unless `coord` is a point of the mesh.
  void check_coord(const std::vector<int64_t> &coord, const char *op, const SrcLoc &loc) const;
  Mesh mesh_;
  std::vector<int64_t> shape_;
  std::vector<Placement> placements_;
};

/// A tensor sharded over a mesh (PyTorch DTensor): this PE's `local()` slice, of shape
/// layout().local_shape(my coordinates) (the whole tensor on a 1-PE world), and its layout.
class DTensor {
public:
  /// `local` must be this PE's slice as the ops of this header make it: its static shape is
  /// layout.max_local_shape() on a world of the mesh's PE count (the valid shape narrows an
  /// uneven part) and layout.global_shape() on a 1-PE world (the oracle). Throws
  /// StrategyError at `loc` for another rank or shape (or a mesh that is not the world's PE
  /// count), so an inconsistent DTensor fails where it is made, not at a later op. Call it
  /// inside a kernel trace.
  DTensor(const Tensor &local, Layout layout, SrcLoc loc = SrcLoc::current());
  const Tensor &local() const { return local_; }
  const Layout &layout() const { return layout_; }
  const Mesh &mesh() const { return layout_.mesh(); }

private:
  Tensor local_;
  Layout layout_;
};

/// One dim of a strategy or spec: a part count (MindSpore's strategy value; 1 = not split) or
/// a mesh axis name (JAX's PartitionSpec entry). `{}` is 1.
struct DimSpec {
  DimSpec() = default;
  DimSpec(int parts_) : parts(parts_) {}
  DimSpec(const char *axis_) : axis(axis_) {}
  DimSpec(std::string axis_) : axis(std::move(axis_)) {}
  int64_t parts = 1;
  std::string axis; ///< non-empty: this mesh axis splits the dim (parts is then its size)
};
/// One DimSpec per dim of a tensor: `{"dp", {}}`, `{2, 1}`.
using Spec = std::vector<DimSpec>;
/// One Spec per input of an op, as MindSpore's `shard(((2, 1), (1, 4)))`: `{{2, 1}, {1, 4}}`.
/// Empty: the op follows its inputs' layouts (docs/sharding.md, "Strategies").
using Strategy = std::vector<Spec>;

/// An op's input: a DTensor, or a whole pto::Tensor (a kernel parameter or a local computed on
/// every PE: replicated; the op slices it as its strategy requires, with no communication).
struct Input {
  Input(const Tensor &t) : tensor(t) {}
  Input(const DTensor &d) : dtensor(d) {}
  /// The DTensor, or nullptr for a whole pto::Tensor.
  const DTensor *get() const { return dtensor ? &*dtensor : nullptr; }
  Tensor tensor;
  std::optional<DTensor> dtensor;
};

/// `x` (whole, on every PE) split over `mesh` as `spec` (one DimSpec per dim of x: counts or axis
/// names; other mesh axes replicate), as DTensor's `distribute_tensor`: the local slice is a
/// view of x at this PE's offset. StrategyError for a spec of the wrong length, a count that
/// does not map onto the mesh, an unknown or repeated axis, an uneven split over several axes,
/// or a mesh whose PE count is not the world's.
DTensor shard(const Tensor &x, const Mesh &mesh, const Spec &spec, SrcLoc loc = SrcLoc::current());
/// `x` moved to the layout `spec` describes, as DTensor's `redistribute`: partials resolved by
/// allreduce over their axis (by reduce_scatter when the spec splits dim 0 over a mesh axis that
/// spans the world), split dims regathered and resliced. Errors as shard.
DTensor redistribute(const DTensor &x, const Spec &spec, SrcLoc loc = SrcLoc::current());
/// The whole global tensor on every PE (partials resolved, splits allgathered), as DTensor's
/// `full_tensor`.
Tensor full_tensor(const DTensor &x, SrcLoc loc = SrcLoc::current());
/// Writes this PE's part of x (partials resolved first) into `out` at `offsets` + its slice's
/// global offset, as pto::assemble; PEs that hold the same part (replicated axes) write the same
/// values. `out` is whole (global shape), like the kernel's inputs.
void assemble(const DTensor &x, const std::vector<SymbolicScalar> &offsets, const Tensor &out,
              SrcLoc loc = SrcLoc::current());

/// MatMul / BatchMatMul (pto::matmul on the slices): factors `...mk,...kn->...mn` (a_trans: `km`;
/// b_trans: `nk`), ranks 2-4, both the same; batch dims broadcast (a size-1 batch dim is no
/// factor of its operand and must not be split). Batch, m and n split freely; a k split gives a
/// Partial(sum) output, resolved when a consumer needs it (MindSpore inserts the AllReduce at
/// once). An input with
/// Partial(sum) is accepted when the other is replicated on that axis (OneFlow's P x B -> P).
/// Dtypes as pto::matmul; out_dtype DT_BOTTOM means a's dtype. The strategy: one Spec per input
/// in the stored order (MindSpore's MatMul, transpose flags included).
struct MatmulOptions {
  DataType out_dtype = DT_BOTTOM;
  bool a_trans = false;
  bool b_trans = false;
};
DTensor matmul(const Input &a, const Input &b, const Strategy &strategy = {},
               MatmulOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// Elementwise binary ops with numpy broadcasting, the seed table's (MindSpore's names in the
/// comments): pto::NAME on the slices, so dtypes, edge values and errors are pto::NAME's. Factors
/// aligned from the right; a dim of size 1 broadcast against a larger one is not a factor of that
/// operand and must not be split; every other split is allowed and costs no communication.
/// Partials accepted (result Partial of the same op): add/sub P(sum) on both operands; mul P(sum)
/// on one with the other replicated on that axis; div P(sum) numerator over a replicated
/// denominator; maximum/minimum P(max)/P(min) on any operand with the others replicated or of the
/// same partial. Anything else is resolved first (so P(sum) + replicated is correct: DTensor
/// #163193).
DTensor add(const Input &a, const Input &b, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Add, TensorAdd
DTensor sub(const Input &a, const Input &b, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Sub
DTensor mul(const Input &a, const Input &b, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Mul
DTensor div(const Input &a, const Input &b, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< RealDiv, Div
DTensor maximum(const Input &a, const Input &b, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current()); ///< Maximum
DTensor minimum(const Input &a, const Input &b, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current()); ///< Minimum
DTensor atan2(const Input &y, const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Atan2
DTensor div_no_nan(const Input &a, const Input &b, const Strategy &strategy = {},
                   SrcLoc loc = SrcLoc::current()); ///< DivNoNan
DTensor floor_div(const Input &a, const Input &b, const Strategy &strategy = {},
                  SrcLoc loc = SrcLoc::current()); ///< FloorDiv
DTensor remainder(const Input &a, const Input &b, const Strategy &strategy = {},
                  SrcLoc loc = SrcLoc::current()); ///< FloorMod
DTensor fmod(const Input &a, const Input &b, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Mod
DTensor pow(const Input &a, const Input &b, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Pow
DTensor eq(const Input &a, const Input &b, const Strategy &strategy = {},
           SrcLoc loc = SrcLoc::current()); ///< Equal
DTensor ne(const Input &a, const Input &b, const Strategy &strategy = {},
           SrcLoc loc = SrcLoc::current()); ///< NotEqual
DTensor lt(const Input &a, const Input &b, const Strategy &strategy = {},
           SrcLoc loc = SrcLoc::current()); ///< Less
DTensor le(const Input &a, const Input &b, const Strategy &strategy = {},
           SrcLoc loc = SrcLoc::current()); ///< LessEqual
DTensor gt(const Input &a, const Input &b, const Strategy &strategy = {},
           SrcLoc loc = SrcLoc::current()); ///< Greater
DTensor ge(const Input &a, const Input &b, const Strategy &strategy = {},
           SrcLoc loc = SrcLoc::current()); ///< GreaterEqual
DTensor logical_and(const Input &a, const Input &b, const Strategy &strategy = {},
                    SrcLoc loc = SrcLoc::current()); ///< LogicalAnd
DTensor logical_or(const Input &a, const Input &b, const Strategy &strategy = {},
                   SrcLoc loc = SrcLoc::current()); ///< LogicalOr

/// Elementwise unary ops, the seed table's (MindSpore's names in the comments; seed table:
/// "none", every strategy allowed, no communication): pto::NAME on the slice, so dtypes, edge
/// values and errors are pto::NAME's. Neg keeps P(sum); relu keeps P(max); floor, ceil, round,
/// sign and relu6 keep P(max) and P(min) (exact: they are non-decreasing with -0 < +0); other
/// partials are resolved first.
DTensor neg(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Neg
DTensor exp(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Exp
DTensor gelu(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< GeLU, Gelu
DTensor relu(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< ReLU, ReLUV2 (the output only)
DTensor sigmoid(const Input &x, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current()); ///< Sigmoid
DTensor tanh(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Tanh
DTensor abs(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Abs
DTensor sqrt(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Sqrt
DTensor acos(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< ACos
DTensor acosh(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Acosh
DTensor asin(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Asin
DTensor asinh(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Asinh
DTensor atan(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Atan
DTensor atanh(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Atanh
DTensor bessel_i0e(const Input &x, const Strategy &strategy = {},
                   SrcLoc loc = SrcLoc::current()); ///< BesselI0e
DTensor bessel_i1e(const Input &x, const Strategy &strategy = {},
                   SrcLoc loc = SrcLoc::current()); ///< BesselI1e
DTensor ceil(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Ceil
DTensor cos(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Cos
DTensor cosh(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Cosh
DTensor erf(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Erf
DTensor erfc(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Erfc
DTensor expm1(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Expm1
DTensor floor(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Floor
DTensor log(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Log
DTensor log1p(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Log1p
DTensor logical_not(const Input &x, const Strategy &strategy = {},
                    SrcLoc loc = SrcLoc::current()); ///< LogicalNot
DTensor reciprocal(const Input &x, const Strategy &strategy = {},
                   SrcLoc loc = SrcLoc::current()); ///< Reciprocal, Inv
DTensor relu6(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< ReLU6
DTensor round(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Round (half to even, as pto::round)
DTensor rsqrt(const Input &x, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current()); ///< Rsqrt
DTensor sign(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Sign
DTensor sin(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Sin
DTensor sinh(const Input &x, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current()); ///< Sinh
DTensor softplus(const Input &x, const Strategy &strategy = {},
                 SrcLoc loc = SrcLoc::current()); ///< Softplus
DTensor softsign(const Input &x, const Strategy &strategy = {},
                 SrcLoc loc = SrcLoc::current()); ///< Softsign
DTensor square(const Input &x, const Strategy &strategy = {},
               SrcLoc loc = SrcLoc::current()); ///< Square
DTensor tan(const Input &x, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current()); ///< Tan
/// Elu (pto::elu with `alpha`): as the unary ops above; partials are resolved first.
DTensor elu(const Input &x, double alpha = 1.0, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current());

/// Cast (pto::cast to `dtype`): elementwise, every strategy allowed; pending partials are
/// resolved first (a cast is not linear). MindSpore ignores a Cast strategy; ptojit applies it.
DTensor cast(const Input &x, DataType dtype, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current());
/// OnesLike / ZerosLike (pto::ones_like / zeros_like): x's layout, every strategy allowed.
DTensor ones_like(const Input &x, const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
DTensor zeros_like(const Input &x, const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// BiasAdd (pto::bias_add): bias [C] shares x's channel factor (dim 1 for NCHW, the last for
/// NHWC); every dim may be split, the bias alike on the channel. A pending P(sum) x is resolved
/// first (the bias is added once). ShapeError as pto::bias_add.
DTensor bias_add(const Input &x, const Input &bias, DataFormat format = DataFormat::NCHW,
                 const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// BroadcastTo (pto::expand to `shape`, right-aligned; -1 keeps the dim): a dim equal to its
/// target keeps its split; broadcast size-1 dims and new leading dims are replicated. Pure
/// movement: pending partials stay pending. ShapeError for a dim that is neither 1 nor the
/// target.
DTensor broadcast_to(const Input &x, const std::vector<int64_t> &shape,
                     const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// ExpandDims (pto::unsqueeze at `dim`, in [-rank-1, rank]) and Squeeze (pto::squeeze of the
/// size-1 dims among `dims`, all when empty): every other dim keeps its split; pure movement, so
/// pending partials stay pending. ShapeError for a dim out of range.
DTensor unsqueeze(const Input &x, int dim, const Strategy &strategy = {},
                  SrcLoc loc = SrcLoc::current());
DTensor squeeze(const Input &x, const std::vector<int> &dims = {}, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current());

/// ReduceSum / ReduceMax over one axis (pto::sum / pto::amax on the slices; keepdim as theirs).
/// A split reduced axis gives a Partial(sum) / Partial(max) output (MindSpore inserts the
/// AllReduce at once); max is bitwise equal to one PE.
DTensor sum(const Input &x, int axis, bool keepdim = false, const Strategy &strategy = {},
            SrcLoc loc = SrcLoc::current());
DTensor amax(const Input &x, int axis, bool keepdim = false, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current());
/// ReduceMin (pto::amin): as amax with Partial(min).
DTensor amin(const Input &x, int axis, bool keepdim = false, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current());
/// ReduceMean (pto::mean): with the axis split, each PE's sum times 1 / the global length is a
/// Partial(sum) (never a Partial(avg): correct for uneven splits too, DTensor #162692); floats
/// only, as pto::mean.
DTensor mean(const Input &x, int axis, bool keepdim = false, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current());

/// Softmax over `axis` (pto::softmax). Unlike MindSpore, the axis may be split: the exact recipe
/// (Megatron's vocab-parallel cross-entropy) is the local row max, allreduce(max), exp(x - max),
/// the local row sum, allreduce(sum), divide; the output keeps the input's split.
DTensor softmax(const Input &x, int axis, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current());
/// LogSoftmax (pto::log_softmax), the axis may be split: x - M - log(S) with M and S as softmax's.
DTensor log_softmax(const Input &x, int axis, const Strategy &strategy = {},
                    SrcLoc loc = SrcLoc::current());

/// Transpose (pto::permute): the output's dim i is the input's dim perm[i]; splits follow their
/// dims (seed table: "none").
DTensor permute(const Input &x, const std::vector<int> &perm, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current());

/// Reshape (pto::reshape) where every dim is kept, or split into / merged from consecutive dims
/// (Shardy's compound factors): a kept dim keeps its split; a merged or split dim must be whole
/// (StrategyError naming the input dim: redistribute first). Other shape changes are a
/// StrategyError. As MindSpore's Reshape it takes no strategy: a non-empty `strategy` is a
/// StrategyError saying so (the output layout follows the input's).
DTensor reshape(const Input &x, const std::vector<int64_t> &shape, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current());

/// ApproximateEqual (pto::approximate_equal: DT_BOOL |a - b| < tolerance): elementwise, as the
/// binary ops above (broadcasting as pto::approximate_equal allows); partials are resolved first.
DTensor approximate_equal(const Input &a, const Input &b, double tolerance = 1e-5,
                          const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// PReLU (pto::prelu): every dim of x may be split. A per-channel weight [C] shares x's dim 1:
/// it must be split as x's channels (the seed table's rule: StrategyError naming operand 1 dim 0
/// and the channel split otherwise); a weight [1] is replicated (splitting it is the broadcast
/// error). Partials are resolved first. ShapeError for a weight that is neither [1] nor [C].
DTensor prelu(const Input &x, const Input &weight, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current());
/// L2Normalize (pto::l2_normalize: x / sqrt(max(sum(x^2, axis), epsilon))). Unlike MindSpore
/// the axis may be split: each PE's sum of squares is allreduced (sum) over the axis's mesh
/// axes, then x / sqrt(max(S, epsilon)) (composed; the sum is reassociated, docs/sharding.md).
DTensor l2_normalize(const Input &x, int axis, double epsilon = 1e-4, const Strategy &strategy = {},
                     SrcLoc loc = SrcLoc::current());
/// Concat (pto::concat of 1-128 inputs along `dim`): the other dims split alike in every input,
/// no communication. Unlike MindSpore the concat axis may be split: each input is allgathered
/// along it, concatenated, and the result cut to this PE's balanced chunk of the output (a view):
/// the output is split on that axis like the inputs; bitwise. A strategy has one tuple per input.
/// Pending partials are kept when every input has the same one (movement).
DTensor concat(const std::vector<Input> &xs, int dim = 0, const Strategy &strategy = {},
               SrcLoc loc = SrcLoc::current());
/// Split (pto::split into pieces of `sizes`, which sum to dim `dim`; ShapeError otherwise): one
/// DTensor per piece, each with x's layout (pieces of a split `dim` are split alike, unlike
/// MindSpore, which forbids it: the input is allgathered along `dim`, once per piece, and each
/// piece cut to this PE's chunk; bitwise). Pending partials stay pending.
std::vector<DTensor> split(const Input &x, const std::vector<int64_t> &sizes, int dim = 0,
                           const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// Slice (MindSpore's Slice(begin, size); pto::view): size -1 takes the rest of the dim. The
/// seed table's whole-dim rule: a dim the window does not take whole must not be split
/// (StrategyError naming the dim; with no strategy, redistribute first). Pending partials stay
/// pending. ShapeError for a window outside x.
DTensor slice(const Input &x, const std::vector<int64_t> &begin, const std::vector<int64_t> &size,
              const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// StridedSlice with all-zero masks (begin, end exclusive, strides >= 1, one each per dim): as
/// slice, and a dim with stride != 1 must not be split either (the seed table's rule). pto::view
/// takes stride 1 only: a stride != 1 dim is picked by pto::index_select of pto::arange.
DTensor strided_slice(const Input &x, const std::vector<int64_t> &begin,
                      const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                      const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// Tile (pto::tile with one multiple per dim of x): the seed table's multiples-only rule: a
/// strategy splits only the repeated dims, each count dividing its multiple (PE i then tiles
/// multiple / count copies: its chunk, no communication); a count on a dim with multiple 1 or
/// one that does not divide it is a StrategyError. x is made whole along its repeated dims; its
/// other splits are kept. Pending partials stay pending.
DTensor tile(const Input &x, const std::vector<int64_t> &multiples, const Strategy &strategy = {},
             SrcLoc loc = SrcLoc::current());

/// The two results of argmax_with_value / argmin_with_value: the index (DT_INT32, global along
/// the reduced axis) and the value, of one layout.
struct IndexValue {
  DTensor index;
  DTensor values;
};
/// ArgMaxWithValue (pto::argmax_with_value along `axis`, keepdim as pto's): the other dims may be
/// split freely. Unlike MindSpore (whose result may then differ from one device) the reduced
/// axis may be split too, bitwise equal to one PE: each PE's local index plus its chunk offset,
/// then per mesh axis an allreduce(max) of the values and an allreduce(min) of the indices that
/// hold the maximum (the lowest index wins ties; NaN wins, as pto's). The outputs are replicated
/// on the reduced axis's mesh axes. Pending partials are resolved first.
IndexValue argmax_with_value(const Input &x, int axis, bool keepdim = false,
                             const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// ArgMinWithValue (pto::argmin_with_value): as argmax_with_value with min.
IndexValue argmin_with_value(const Input &x, int axis, bool keepdim = false,
                             const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());

/// The two results of topk, of one layout: values, and indices (DT_INT32, global along the last
/// dim).
struct TopK {
  DTensor values;
  DTensor indices;
};
/// TopK (pto::topk along the last dim, as MindSpore's TopK; largest / sorted as pto's): the other
/// dims may be split freely. Unlike MindSpore the last dim may be split too, bitwise equal to
/// one PE: each PE's local top k with global indices, an allgather of those k candidates per PE
/// along the dim, and the top k of them (among equal values the lower index first, NaN the
/// largest, as pto::topk). Every PE's chunk must hold at least k elements (StrategyError naming
/// the dim and the largest split that works; smaller chunks are planned). The outputs are
/// replicated on the last dim's mesh axes. Pending partials are resolved first. ShapeError for k
/// outside [1, the last dim].
TopK topk(const Input &x, int64_t k, bool largest = true, bool sorted = true,
          const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());

/// GatherV2 / Gather / SparseGatherV2 (pto::index_select(params, axis, indices), indices 1-D;
/// the strategy is (params' tuple, indices' tuple), MindSpore's order). params' other dims and
/// indices split freely, no communication (the output's `axis` dim follows the indices). Unlike
/// MindSpore, params may be split along `axis` too, with repeated computation and together with
/// the indices: each PE looks up only the rows it owns (-0.0, or 0 for ints, elsewhere) and the
/// output is a Partial(sum), resolved by one allreduce of the output when a consumer needs it:
/// bitwise equal to one PE (-0.0 is the identity of addition). A split into more parts than
/// rows (some PEs own none) allgathers params along `axis` first (docs/sharding.md). An index
/// outside the dim, int64 included, throws the one-PE RuntimeError, with the global index and
/// range in its message. Params of rank 1-4.
/// A pending partial of params (sum, max, min) is kept when the indices are replicated; the
/// indices' partials are resolved first.
DTensor index_select(const Input &params, int axis, const Input &indices,
                     const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// EmbeddingLookup (pto::embedding(weight [V, D], ids of rank 1-3); strategy (weight's, ids')):
/// as index_select on axis 0: ids and D split freely; a split V is the masked lookup, a
/// Partial(sum) output, bitwise equal to one PE.
DTensor embedding(const Input &weight, const Input &ids, const Strategy &strategy = {},
                  SrcLoc loc = SrcLoc::current());
/// OneHot (pto::one_hot: DT_INT64 [index.shape..., num_classes], indices of rank 1-3; the seed:
/// 1-D). The strategy is MindSpore's: the OUTPUT's tuple (rank of index + 1), then () and ()
/// for on_value and off_value (or the output's tuple alone); StrategyError for another tuple
/// count, a non-empty scalar tuple or an output tuple of the wrong rank. The index dims split
/// freely; a split class dim makes each PE compare the indices with its classes (bitwise, no
/// communication), after checking them against the GLOBAL class count: an index outside [0,
/// num_classes) throws a pto::RuntimeError ("... out of range [0, num_classes) ...") on the PE
/// that holds it, as on one PE. ArgumentError for num_classes outside [1, 2^31).
DTensor one_hot(const Input &index, int64_t num_classes, const Strategy &strategy = {},
                SrcLoc loc = SrcLoc::current());
/// UnsortedSegmentSum / Min / Max (pto::unsorted_segment_*: segment_ids' shape a prefix of
/// data's; the output [num_segments, data.shape[k:]...]). The seed table's rule: data and
/// segment_ids are split the same way along the segment_ids dims (StrategyError naming
/// operand 1 otherwise); splitting them gives a Partial(sum | min | max) output, resolved by
/// allreduce when needed (min and max bitwise; empty segments stay the dtype's largest / lowest
/// value and are never summed, so nothing overflows). data's other dims split freely. A pending
/// partial of data of the same reduction is kept when segment_ids is replicated. ArgumentError
/// for num_segments < 1.
DTensor unsorted_segment_sum(const Input &data, const Input &segment_ids, int64_t num_segments,
                             const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
DTensor unsorted_segment_min(const Input &data, const Input &segment_ids, int64_t num_segments,
                             const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
DTensor unsorted_segment_max(const Input &data, const Input &segment_ids, int64_t num_segments,
                             const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());
/// Pack (pto::stack of 1-128 inputs of one shape, the new dim at `dim` in [-rank-1, rank]):
/// every dim split alike in every input (seed table: none), the new dim replicated; pure
/// movement, so pending partials stay pending when every input has the same one.
DTensor stack(const std::vector<Input> &xs, int dim = 0, const Strategy &strategy = {},
              SrcLoc loc = SrcLoc::current());
/// SigmoidCrossEntropyWithLogits (pto::sigmoid_cross_entropy_with_logits): elementwise, as the
/// binary ops above; partials are resolved first.
DTensor sigmoid_cross_entropy_with_logits(const Input &logits, const Input &labels,
                                          const Strategy &strategy = {},
                                          SrcLoc loc = SrcLoc::current());
/// SoftmaxCrossEntropyWithLogits' loss (output 0 of pto::softmax_cross_entropy_with_logits, the
/// only one the seed table supports): logits and labels of one shape, split alike. Unlike
/// MindSpore the last dim may be split: the row max and the row sum of exp are allreduced (max,
/// then sum) and each PE sums labels * (log S - (x - M)) over its classes, a Partial(sum) loss
/// (sums reassociated, docs/sharding.md). Partials are resolved first.
DTensor softmax_cross_entropy_with_logits(const Input &logits, const Input &labels,
                                          const Strategy &strategy = {},
                                          SrcLoc loc = SrcLoc::current());
/// The two results of unique, replicated: values ([N], N = x's element count) and count
/// (DT_INT32 [1]), as pto::unique's.
struct Unique {
  DTensor values;
  DTensor count;
};
/// Unique (pto::unique of the flattened x, sorted): the seed table's "only the fully repeated
/// strategy": a strategy with a count other than 1 is a StrategyError; without one, a split x
/// is allgathered whole and every PE computes the whole result. Partials are resolved first.
Unique unique(const Input &x, const Strategy &strategy = {}, SrcLoc loc = SrcLoc::current());

/// DropoutGenMask (pto::dropout_gen_mask of the GLOBAL `shape` under (p, key, counter)) over
/// `mesh`: the strategy is one tuple, the mask's (counts or axis names; none: replicated). Each
/// PE's mask is its slice of the global mask, bitwise equal to one PE's for every split (uneven
/// and repeated ones included): every PE generates the whole mask and keeps its slice (a view;
/// no communication, O(global) random numbers per PE). Must be used with dropout_do_mask (the
/// seed table's pairing). Errors: as pto::dropout_gen_mask (ArgumentError for p outside [0, 1],
/// ShapeError for a rank outside 1..4 or a dim < 1), StrategyError as every rule's strategy.
DTensor dropout_gen_mask(const Mesh &mesh, const std::vector<int64_t> &shape, double p,
                         uint64_t key, uint64_t counter, const Strategy &strategy = {},
                         SrcLoc loc = SrcLoc::current());
/// DropoutDoMask (pto::dropout_do_mask(x, mask, p) on the slices): the seed table's pairing,
/// each a StrategyError naming the operand and dim: no strategy may be given (the split is
/// dropout_gen_mask's; the message gives that nearest valid strategy); `mask` must be a DTensor
/// (dropout_gen_mask's, not a whole pto::Tensor) of x's global shape, without partials, split
/// on every dim as a DTensor x is (a whole x is sliced as its mask). A pending partial of x is
/// resolved first. p must be the p of the mask's dropout_gen_mask (not checked: the scale is
/// 1 / (1 - p)). Bitwise equal to one PE.
DTensor dropout_do_mask(const Input &x, const Input &mask, double p, const Strategy &strategy = {},
                        SrcLoc loc = SrcLoc::current());
/// Inverted dropout of x on x's layout (its partials replaced by replicate): dropout_do_mask(x,
/// the dropout_gen_mask(x's mesh, x's global shape, p, key, counter) slice of x's layout, p),
/// bitwise equal to one PE's pto::dropout(x, p, key, counter).
DTensor dropout(const DTensor &x, double p, uint64_t key, uint64_t counter,
                SrcLoc loc = SrcLoc::current());

/// One row of the rule table, as tools and docs read it (docs/sharding_ops.md is generated from
/// it): the op as written, the seed table's MindSpore name, the number of inputs, whether a
/// strategy may be given, the communication a split costs, and per pending Partial(sum|max|min|
/// prod) input what the op does with it ("resolve": allreduce first; otherwise the rule that
/// keeps it pending).
struct RuleInfo {
  std::string op;
  std::string mindspore;
  int arity = 0; ///< 0: any number (Concat's 1-128)
  bool takes_strategy = true;
  std::string cost;
  std::string partials; ///< e.g. "sum: kept when every input has it; max, min, prod: resolve"
  /// How the rule computes the op when no single pto op does, and where it goes beyond the
  /// seed table (exactness included); empty when there is nothing to say.
  std::string notes;
};
/// Every rule of the table, in table order.
std::vector<RuleInfo> rules();

} // namespace pto::parallel
