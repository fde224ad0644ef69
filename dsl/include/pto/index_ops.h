// index_ops.h - Indexing ops, as PyPTO's (reference §5 "Indexing, gather and scatter") with
// PyTorch's semantics where PyPTO leaves them open: gather, index_select, scatter, index_add,
// index_put, one_hot, embedding, and MindSpore's unsorted_segment_{sum,min,max,prod}.
//
// Common rules:
// - Every op is functional: it returns a new tensor and leaves its inputs untouched (PyPTO's
//   in-place `scatter_` / `index_add_` / `index_put_` are these ops plus `assemble` into the
//   destination).
// - Index tensors are DT_INT32 or DT_INT64 (DTypeError otherwise). Data may be any dtype
//   (int8..int64, uint8, fp16, bf16, fp32, fp64, and DT_BOOL) except where an op adds or
//   multiplies (DTypeError for DT_BOOL).
// - Axes count from the end when negative; an axis outside [-rank, rank) is a ShapeError.
// - Valid shapes (reference §2.4): an op reads its inputs only inside their valid regions. The
//   positions it walks are those where every operand that covers them is valid (each op says
//   which); the rest of the result's valid region is copied from x (scatter, index_add,
//   index_put), and elements outside a result's valid shape are undefined. An index value is
//   checked against the VALID extent n of the dim it indexes: outside [0, n) the kernel
//   call throws RuntimeError naming the op's call site, the bad value, the range and the
//   position in the index tensor. Nothing is ever read or written out of bounds.
// - Negative index values are errors, as PyTorch's gather / index_select / scatter / index_add
//   / embedding / one_hot; only index_put wraps them (-1 is the last, as PyTorch advanced
//   indexing), and unsorted_segment_* drops them (TensorFlow / MindSpore).
// - Adds and multiplies happen in the data's dtype, one rounding per step: ints wrap (two's
//   complement); fp16/bf16 compute each step in fp32 and round it to fp16/bf16 (IEEE 754 nearest
//   even); fp32 in fp32; fp64 in fp64. unsorted_segment_* is a reduction and says otherwise.
// - Dims given to the checks below are compared when both are static; run-time dims are not
//   compared at trace time, the valid-region rule above covers them at run time.
// - Every op captures the current vec tile (TileShapeError when none is set or its rank is below
//   the result rank) but is not split by it: a precompiled library routine runs it over the
//   whole tensors, in the JIT and in the interpreter alike. Ranks stay within 1..4 (ShapeError).
// - Errors name the op and the caller's file:line.
#pragma once

#include "pto/ops.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace pto {

/// out[i][j][k] = x[index[i][j][k]][j][k] (axis 0; likewise for other axes), as PyPTO / PyTorch
/// `gather(x, dim, index)`. `index` has x's rank (ShapeError) and, on every dim but `axis`, a
/// size <= x's (ShapeError). The result has index's shape and x's dtype. Walks the positions
/// valid in index and (on the dims but `axis`) in x: the result's valid shape is index's, clamped
/// to x's valid extent on those dims. Index values must lie in [0, x.valid[axis]).
Tensor gather(const Tensor &x, int axis, const Tensor &index, SrcLoc loc = SrcLoc::current());

/// The slices of x along `axis` picked by the 1-D `index` (ShapeError for another rank), as
/// PyPTO / PyTorch `index_select(x, dim, index)`: the result is x's shape with dim `axis` =
/// index's length, valid shape x's with dim `axis` = index's valid length. Index values must
/// lie in [0, x.valid[axis]); repeats are allowed.
Tensor index_select(const Tensor &x, int axis, const Tensor &index, SrcLoc loc = SrcLoc::current());

/// Reduction of scatter, as PyPTO `ScatterMode` (PyTorch's `reduce=None|'add'|'multiply'`).
enum class ScatterMode { NONE, ADD, MULTIPLY };
struct ScatterOptions {
  ScatterMode reduce = ScatterMode::NONE;
};
/// A copy of x with, for every position p walked in `index` (along axis 0; likewise for other
/// axes), out[index[p]][p1][p2] = src[p] (NONE), += src[p] (ADD) or *= src[p] (MULTIPLY), as
/// PyPTO `scatter` / PyTorch `scatter(x, dim, index, src, reduce=...)`. Functional: x is not
/// changed. `src` is a tensor of x's dtype (DTypeError) and rank with every dim >= index's
/// (ShapeError), or a scalar converted to x's dtype (ints wrap; a floating scalar with an
/// integer x is a DTypeError). index has x's rank, and on every dim but `axis` a size <= x's
/// (ShapeError). Duplicate indices: with NONE the last write in row-major order of index wins
/// (deterministic); ADD and MULTIPLY apply every update in that order. ADD/MULTIPLY reject
/// DT_BOOL (DTypeError); a `reduce` outside ScatterMode is an ArgumentError. Walks the positions
/// valid in index, in a tensor src, and (on the dims but `axis`) in x; the result has x's shape and
/// valid shape. Index values must lie in [0, x.valid[axis]).
Tensor scatter(const Tensor &x, int axis, const Tensor &index, const Operand &src,
               ScatterOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct IndexAddOptions {
  /// Multiplies src. With an integer x it must be an integral value (DTypeError otherwise, as
  /// PyTorch's "alpha must not be a floating point number"); it is then exact up to 2^53.
  double alpha = 1;
};
/// A copy of x with alpha * src[.., i, ..] added at x[.., index[i], ..] along `axis`, as PyPTO
/// `index_add` / PyTorch `index_add(x, dim, index, source, alpha=1)`. `index` is 1-D; src has
/// x's dtype (DTypeError), rank and dims except on `axis`, where its size is index's length
/// (ShapeError). Duplicate indices accumulate, in index order. Each update is old + alpha * src
/// in the data's dtype (see the common rules; fp16/bf16/fp32: p = fp32(alpha) * src rounded to
/// fp32, then old + p rounded to fp32, then to the dtype; no fused multiply-add). DT_BOOL is a
/// DTypeError. Walks the positions valid in src, in index (along `axis`) and in x (the other
/// dims); the result has x's shape and valid shape. Index values must lie in [0, x.valid[axis]).
Tensor index_add(const Tensor &x, int axis, const Tensor &index, const Tensor &src,
                 IndexAddOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct IndexPutOptions {
  bool accumulate = false; ///< add `values` instead of writing them (DTypeError for DT_BOOL)
};
/// A copy of x with out[i0[n], .., ik-1[n], r...] = values[n, r...] (or += with accumulate), as
/// PyPTO `index_put_` / PyTorch `index_put(x, indices, values, accumulate)` (advanced indexing
/// with k = indices.size() index tensors, 1 <= k <= rank, ShapeError otherwise). Each index
/// tensor is 1-D; their lengths are equal or 1 (a length-1 index repeats), and N is the largest
/// (ShapeError otherwise). `values` is a tensor of x's dtype (DTypeError) that broadcasts
/// (numpy, right-aligned) to [N, x.shape[k:]...] (ShapeError), or a scalar (converted as for
/// scatter). Index values may be negative: -1 is the last, so they must lie in [-n, n) with n
/// the valid extent of the dim they index. Duplicates: without accumulate the last write in
/// order of n wins (PyTorch leaves it undefined); with accumulate every update adds, in order.
/// Walks the n valid in every index tensor of length N and the positions valid in x and in the
/// non-broadcast dims of values; the result has x's shape and valid shape.
Tensor index_put(const Tensor &x, const std::vector<Tensor> &indices, const Operand &values,
                 IndexPutOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// DT_INT64 [index.shape..., num_classes]: 1 where the last coordinate equals index[...], 0
/// elsewhere, as PyPTO / PyTorch `one_hot(x, num_classes)`. `index` has rank 1..3 (ShapeError).
/// `num_classes` must be given and >= 1 (ArgumentError): PyTorch's -1 (max + 1) would make the
/// result's shape depend on run-time data. Index values must lie in [0, num_classes). Valid
/// shape: index's, then num_classes.
Tensor one_hot(const Tensor &index, int64_t num_classes, SrcLoc loc = SrcLoc::current());

struct EmbeddingOptions {
  /// Ids equal to it give a row of zeros (what PyTorch's nn.Embedding yields, since it keeps that
  /// weight row zero; PyTorch's F.embedding reads the row as is). Negative counts from the end of
  /// weight's rows: it must lie in [-rows, rows) of a static row count (ArgumentError; a negative
  /// one needs a static row count).
  std::optional<int64_t> padding_idx = {};
};
/// The rows of the 2-D `weight` [V, D] (ShapeError for another rank) picked by `ids` of any rank
/// r (r + 1 <= 4, ShapeError): a result [ids.shape..., D] of weight's dtype, as PyTorch
/// `embedding(ids, weight)` (index_select on axis 0 with ids of any rank). Ids must lie in
/// [0, weight.valid[0]). Valid shape: ids', then weight's valid D.
Tensor embedding(const Tensor &weight, const Tensor &ids, EmbeddingOptions opts = {},
                 SrcLoc loc = SrcLoc::current());

/// out[s, r...] = the sum of data[p..., r...] over the positions p (of segment_ids' shape) with
/// segment_ids[p] == s, as MindSpore / TensorFlow `UnsortedSegmentSum(data, segment_ids,
/// num_segments)`. segment_ids' shape is a prefix of data's (ShapeError); the result is
/// [num_segments, data.shape[k:]...] (k = segment_ids' rank) of data's dtype; num_segments >= 1
/// (ArgumentError). Ids that are negative or >= num_segments are dropped (TensorFlow, MindSpore).
/// An empty segment gives 0. Accumulation: fp16/bf16 in fp32, rounded once at the end (a
/// reduction, as reduce_ops.h); fp32 in fp32 and fp64 in fp64, adding in row-major order of p;
/// ints wrap. DT_BOOL is a DTypeError. Walks the positions valid in segment_ids and in data; valid
/// shape: num_segments, then data's valid extents of the dims after k.
Tensor unsorted_segment_sum(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                            SrcLoc loc = SrcLoc::current());
/// As unsorted_segment_sum with the product; an empty segment gives 1.
Tensor unsorted_segment_prod(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                             SrcLoc loc = SrcLoc::current());
/// As unsorted_segment_sum with the minimum; NaN propagates; an empty segment gives the dtype's
/// largest finite value (MindSpore's rule, reference sharding.md: mask it before reducing
/// across PEs): 127, 32767, INT32_MAX, INT64_MAX, 255, 65504 (fp16), 3.3895e38 (bf16), FLT_MAX,
/// DBL_MAX.
Tensor unsorted_segment_min(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                            SrcLoc loc = SrcLoc::current());
/// As unsorted_segment_min with the maximum; an empty segment gives the dtype's lowest finite
/// value (-128, ..., 0 for uint8, -65504, -3.3895e38, -FLT_MAX, -DBL_MAX).
Tensor unsorted_segment_max(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                            SrcLoc loc = SrcLoc::current());

} // namespace pto
