// shape_ops.h - Shape, movement and creation ops, as PyPTO's (reference §2.4 and §5 "Shape and
// movement", "Creation") with PyTorch's semantics where PyPTO leaves them open.
//
// Common rules:
// - Results are new tensors (copies), except `split`, which returns views (as PyTorch).
// - Ranks stay within 1..4 (ShapeError); a dim given as an int must be > 0 (no empty tensors).
// - Result dims computed from the arguments (tile's products, pad's and concat's sums, reshape's
//   element counts) and result sizes are overflow-checked as ops.h says: ShapeError past 2^62.
// - Movement ops read only the valid region of their input: an output element whose source lies
//   outside it reads as 0 (never out of bounds). Valid shapes follow the data (each op says how).
// - Every dtype (DT_BOOL included) unless noted; the result has the input's dtype.
// - Every op captures the current vec tile (TileShapeError when none is set or its rank is below
//   the output rank); codegen lowers these ops as scalar loops over the output's valid region.
// - Errors name the op and the caller's file:line.
#pragma once

#include "pto/ops.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace pto {

struct ReshapeOptions {
  /// The result's valid shape. Default: the input's valid shape with size-1 dims inserted or
  /// removed when the reshape only does that, the full shape otherwise.
  std::optional<std::vector<SymbolicScalar>> valid_shape = {};
  /// PyPTO's `inplace=True` (reuse x's buffer). ptojit tensors are values, so the result is the
  /// same either way; as in PyPTO, a tensor made by `view` may not be reshaped in place
  /// (ShapeError naming `reshape`).
  bool inplace = false;
};
/// The elements of `x` in row-major order, laid out in `shape`, as PyPTO `reshape` (a copy; the
/// same values with `inplace`). One dim may be -1 (inferred) when every dim of x is static.
/// ShapeError when the element counts differ (or cannot be shown equal for run-time dims), for more
/// than one -1, a dim < 1 other than -1, or a valid_shape breaking the valid-shape rule of ops.h
/// (one entry per dim, each in [0, shape[d]]; at run time when symbolic).
Tensor reshape(const Tensor &x, const std::vector<SymbolicScalar> &shape, ReshapeOptions opts = {},
               SrcLoc loc = SrcLoc::current());
/// Inserts a size-1 dim at `dim` (in [-rank-1, rank]), as PyTorch/PyPTO `unsqueeze`.
Tensor unsqueeze(const Tensor &x, int dim, SrcLoc loc = SrcLoc::current());
/// Removes the size-1 dims among `dims` (all size-1 dims when empty); listed dims that are not
/// 1 stay, as PyTorch `squeeze`. A result with no dim left keeps shape [1].
Tensor squeeze(const Tensor &x, const std::vector<int> &dims = {}, SrcLoc loc = SrcLoc::current());

/// Materialized broadcast to `shape` (right-aligned, numpy rules; -1 keeps the dim), as PyPTO
/// `expand_clone` / PyTorch `expand`. A broadcast dim is valid over its full extent, the others
/// keep x's valid extent. ShapeError when a dim of x is neither 1 nor the target.
Tensor expand(const Tensor &x, const std::vector<SymbolicScalar> &shape,
              SrcLoc loc = SrcLoc::current());
/// The same as `expand` (PyTorch's name).
Tensor broadcast_to(const Tensor &x, const std::vector<SymbolicScalar> &shape,
                    SrcLoc loc = SrcLoc::current());

/// Swaps dims `d0` and `d1` (negative count from the end), as PyPTO `transpose` (ptojit takes
/// every pair at every rank). ShapeError for a dim out of range.
Tensor transpose(const Tensor &x, int d0, int d1, SrcLoc loc = SrcLoc::current());
/// Output dim d is input dim perm[d], as PyPTO `permute`. ShapeError unless `perm` is a
/// permutation of 0..rank-1 (negative entries count from the end).
Tensor permute(const Tensor &x, const std::vector<int> &perm, SrcLoc loc = SrcLoc::current());

/// Joins 1..128 tensors along `dim`, as PyPTO `concat`: input k starts at the sum of the shapes
/// of inputs 0..k-1 on `dim` (static dims). Same dtype (DTypeError), same rank and the same
/// other dims (ShapeError). Valid shape: on `dim`, the last input's start plus its valid extent
/// (elements in a gap left by an earlier input's smaller valid extent are undefined); other dims,
/// the smallest valid extent of the inputs.
Tensor concat(const std::vector<Tensor> &xs, int dim = 0, SrcLoc loc = SrcLoc::current());
/// Splits `dim` into pieces of `size` (the last one smaller when it does not divide), as PyTorch
/// `split`. Views of x, no copy; x must have static dims (ShapeError).
std::vector<Tensor> split(const Tensor &x, int64_t size, int dim = 0,
                          SrcLoc loc = SrcLoc::current());
/// Splits `dim` into pieces of the given sizes, which must sum to the dim (ShapeError).
std::vector<Tensor> split(const Tensor &x, const std::vector<int64_t> &sizes, int dim = 0,
                          SrcLoc loc = SrcLoc::current());
/// Stacks 1..128 tensors of one shape along a new dim `dim` (in [-rank-1, rank]), as PyTorch
/// `stack` / PyPTO's Pack: concat of the unsqueezed inputs.
Tensor stack(const std::vector<Tensor> &xs, int dim = 0, SrcLoc loc = SrcLoc::current());
/// Repeats x `reps[d]` times along each dim, as PyTorch `tile` (a shorter `reps` is padded with
/// leading 1s; a longer one prepends size-1 dims to x). out[o] = x[o mod x.shape]; valid extent
/// of a repeated dim: (reps - 1) * shape + valid. ShapeError for a rep < 1 or a dynamic
/// repeated dim.
Tensor tile(const Tensor &x, const std::vector<int64_t> &reps, SrcLoc loc = SrcLoc::current());
/// Constant right/bottom padding, as PyPTO `pad(x, pad, mode='constant', value)`: `pad` is
/// PyTorch's (left, right) for the last dim or (left, right, top, bottom) for the last two; left
/// and top must be 0 and every entry >= 0 (ShapeError). The result is valid everywhere: x's valid
/// region is copied and every other element is `value` (its padding included). `value` is
/// converted as by `full` (DTypeError for a non-integral value with an integer dtype, or one
/// outside its range).
Tensor pad(const Tensor &x, const std::vector<int64_t> &pad, double value = 0,
           SrcLoc loc = SrcLoc::current());
/// Lower triangle of the last two dims: elements with col - row > diagonal become 0, as PyPTO
/// `tril`. `diagonal` may be a run-time SymbolicScalar. Rank >= 2 (ShapeError).
Tensor tril(const Tensor &x, const SymbolicScalar &diagonal = 0, SrcLoc loc = SrcLoc::current());
/// Upper triangle: elements with col - row < diagonal become 0, as PyPTO `triu`.
Tensor triu(const Tensor &x, const SymbolicScalar &diagonal = 0, SrcLoc loc = SrcLoc::current());

// ---- creation ------------------------------------------------------------------------------
/// A new tensor of ones, as PyPTO `ones` (dtype defaults to FP32).
Tensor ones(const std::vector<SymbolicScalar> &shape, DataType dtype = DT_FP32,
            SrcLoc loc = SrcLoc::current());

/// An arange bound: an integer or a float, as a Python number.
struct ArangeValue {
  ArangeValue(int v) : i(v), f(v), is_int(true) {}
  ArangeValue(int64_t v) : i(v), f(static_cast<double>(v)), is_int(true) {}
  ArangeValue(double v) : i(ir::trunc_saturate_int64(v)), f(v), is_int(false) {}
  int64_t i;
  double f;
  bool is_int;
};
/// [0, end) with step 1, as PyPTO `arange(end)`.
Tensor arange(ArangeValue end, SrcLoc loc = SrcLoc::current());
/// 1-D [start, end) with `step`, as PyPTO `arange`: DT_INT32 when all three are integers (out[i]
/// = start + i * step), else DT_FP32 (start + i * step computed in double, rounded once, as
/// NumPy). Length ceil((end - start) / step). ArgumentError for step 0; ShapeError for an empty
/// result or more than INT32_MAX elements (or int values beyond int32).
Tensor arange(ArangeValue start, ArangeValue end, ArangeValue step = 1,
              SrcLoc loc = SrcLoc::current());

struct UniformOptions {
  double low = 0, high = 1;
};
struct NormalOptions {
  double mean = 0, std = 1;
};
/// Counter-based random numbers, as PyPTO `uniform(shape, key, counter, alg=PHILOX, dtype)`:
/// the same (key, counter, shape, dtype) give the same tensor on every run, PE and tile shape.
/// Mapping (Philox4x32-10, Salmon et al. 2011, Random123's constants): element i of the
/// row-major flat order of `shape` takes word i % 4 of
///   philox4x32_10(ctr = {lo32(b), hi32(b), lo32(counter), hi32(counter)},
///                 key = {lo32(key), hi32(key)}),  b = i / 4,
/// u = (word >> 8) * 2^-24 in [0, 1), and the value low + (high - low) * u computed in double
/// and rounded once to `dtype`. Floating dtypes only (DTypeError); ArgumentError unless low <=
/// high and both are finite. For fresh numbers pass another counter (or key): the block index
/// b fills the low 64 counter bits, so calls with different counters never share a block.
Tensor uniform(const std::vector<SymbolicScalar> &shape, uint64_t key, uint64_t counter,
               DataType dtype = DT_FP32, UniformOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Normal numbers from the same words as `uniform` by Box-Muller: for the word pairs (w0, w1)
/// and (w2, w3) of each block, u1 = ((w_even >> 8) + 1) * 2^-24 in (0, 1], u2 = (w_odd >> 8) *
/// 2^-24, r = sqrt(-2 ln u1); the even element is r cos(2 pi u2), the odd one r sin(2 pi u2);
/// value mean + std * z computed in double, rounded once. ArgumentError unless std >= 0 and both
/// are finite.
Tensor normal(const std::vector<SymbolicScalar> &shape, uint64_t key, uint64_t counter,
              DataType dtype = DT_FP32, NormalOptions opts = {}, SrcLoc loc = SrcLoc::current());

} // namespace pto
