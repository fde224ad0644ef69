// sort_ops.h - Sorting and selection (sort, argsort, topk, unique) and the exponentially scaled
// modified Bessel functions (bessel_i0e, bessel_i1e), as PyPTO's "Sort and top-k" (reference §5)
// with PyTorch's semantics where PyPTO leaves them open. Each op is one library routine
// (codegen/rtlib/xops_sort.cpp, xops_special.cpp) that the JIT and the interpreter both run.
//
// Common rules:
// - Input: any rank 1..4 (ShapeError otherwise), not a token or shmem data (DTypeError).
// - Sorting order (every dtype: int8/16/32/64, uint8, fp16, bf16, fp32, fp64 and bool), as
//   PyTorch: NaN is larger than every number (NaNs last ascending, first descending; all NaNs
//   are equal to each other); -0 and +0 are equal. Equal elements keep their index order (lower
//   index first) in BOTH directions, so results are deterministic. O(n log n) per row.
// - A row is the valid part of one line along `axis` (negative counts from the end; ShapeError
//   outside [-rank, rank)); rows outside the valid region of the other dims are not sorted. The
//   results' valid shape is the input's (topk: see there); their elements outside it hold
//   unspecified values (reshape and assemble read them as 0 / skip them, ops.h).
// - Values are copied bit for bit (NaN payloads and the sign of zero survive). Indices count
//   from 0 along `axis`, in `index_dtype`: DT_INT32 (default, PyPTO's index type as `argmax`) or
//   DT_INT64 (PyTorch's); another dtype is a DTypeError. A concrete axis length above INT32_MAX
//   with DT_INT32 indices is a ShapeError, and so is an element count above INT32_MAX for
//   unique (its `count` is DT_INT32).
// - Every op captures the current vec tile (TileShapeError when none is set or its rank is
//   below the input rank); the routine itself works on whole rows, whatever the tile.
// - Errors name the op and the caller's file:line.
#pragma once

#include "pto/ops.h"

#include <cstdint>

namespace pto {

/// Values and their indices along the sorted axis.
struct SortResult {
  Tensor values;
  Tensor indices;
};

struct SortOptions {
  bool descending = false; ///< PyTorch's default
  /// Accepted for PyTorch's signature; the sort is always stable (PyTorch allows any order of
  /// equal elements when false, so a stable order is a valid answer).
  bool stable = true;
  DataType index_dtype = DT_INT32;
};
/// Sorts every row along `axis`, as PyTorch `sort(x, dim, descending, stable)`: values (x's
/// dtype and shape) and the index each value came from. Order and ties: see the common rules.
SortResult sort(const Tensor &x, int axis = -1, SortOptions opts = {},
                SrcLoc loc = SrcLoc::current());

struct ArgsortOptions {
  bool descending = true; ///< PyPTO's default (PyTorch's is false)
  DataType index_dtype = DT_INT32;
};
/// The indices that sort every row along `axis` (stable), as PyPTO `argsort(x, dim,
/// descending=True)`: the `indices` of `sort`, without materializing the values. Note the
/// default: DESCENDING, as PyPTO.
Tensor argsort(const Tensor &x, int axis = -1, ArgsortOptions opts = {},
               SrcLoc loc = SrcLoc::current());

struct TopkOptions {
  bool largest = true; ///< the k largest (PyPTO / PyTorch default), else the k smallest
  /// true: best first (descending for largest, ascending for smallest). false: the same k
  /// elements in ascending index order (PyTorch leaves this order unspecified).
  bool sorted = true;
  DataType index_dtype = DT_INT32;
};
/// The k largest (or smallest) elements of every row along `axis` and their indices, as PyPTO
/// `topk(x, k, dim, largest)` / PyTorch `topk(x, k, dim, largest, sorted)`. Which k: the first
/// k of the row in `sort` order (descending for largest), so among equal elements the lower
/// index is taken first and a NaN counts as the largest value. Results have x's shape with k on
/// `axis`; their valid extent on `axis` is min(k, the row's valid length) (a run-time value when
/// that length is), the other dims keep x's. ShapeError when k < 1 or k is above a concrete
/// length of `axis`.
SortResult topk(const Tensor &x, int64_t k, int axis = -1, TopkOptions opts = {},
                SrcLoc loc = SrcLoc::current());

struct UniqueOptions {
  /// true: distinct values in ascending order (sort order above). false: in order of first
  /// occurrence (row-major over the valid region).
  bool sorted = true;
  bool return_inverse = false;
  bool return_counts = false;
  DataType index_dtype = DT_INT32; ///< dtype of `inverse` and `counts`
};
/// Results of `unique`; `inverse` and `counts` are empty handles unless requested.
struct UniqueResult {
  /// [N], N = x's element count (static shape, fully valid), x's dtype: the `count` distinct
  /// values first, then zeros (all bits 0: +0 for floats) up to N.
  Tensor values;
  /// DT_INT32 [1]: the number of distinct values.
  Tensor count;
  /// x's shape and valid shape, index_dtype: the position in `values` of each element's value.
  Tensor inverse;
  /// [N], index_dtype: occurrences of values[j] for j < count, then zeros.
  Tensor counts;
};
/// The distinct values of the flattened valid region of `x`, as PyTorch `unique(x, sorted,
/// return_inverse, return_counts)` with a static-size result (a traced kernel cannot size its
/// outputs at run time): `count` says how many entries of `values` are real. Equality as the
/// sort order: all NaNs are one value (numpy's `equal_nan`), -0 and +0 are one value; a value is
/// represented by its first occurrence (bit for bit).
UniqueResult unique(const Tensor &x, UniqueOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// exp(-|x|) I0(x), the exponentially scaled modified Bessel function of the first kind of order
/// 0, as PyTorch `special.i0e` and MindSpore `BesselI0e`. Even; i0e(+-0) = 1, i0e(+-inf) = 0,
/// NaN -> NaN. Floats only (fp16, bf16, fp32, fp64; DTypeError otherwise, "cast first"); same
/// dtype and valid shape as x. fp16/bf16/fp32 are evaluated in double and rounded once; fp64 in
/// long double. Power series for |x| <= 25, Hankel's asymptotic expansion beyond. Max error
/// measured against a long-double trapezoidal integral over 96,000 points of [1e-40, 1e6]
/// (tests/codegen/sort_ops_test.cpp checks a 9,600-point subset plus 0, -0, subnormals, huge,
/// +-inf, NaN): fp32 0.500 ULP (correctly rounded but for ties within 1e-8 ULP), fp64 0.503
/// ULP; fp16/bf16 0.500 ULP.
Tensor bessel_i0e(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// exp(-|x|) I1(x), order 1, as PyTorch `special.i1e` and MindSpore `BesselI1e`. Odd;
/// i1e(+-0) = +-0, i1e(+-inf) = +-0, NaN -> NaN. Dtypes, evaluation and measured error as
/// bessel_i0e: fp32 0.500 ULP, fp64 0.503 ULP, fp16/bf16 0.500 ULP.
Tensor bessel_i1e(const Tensor &x, SrcLoc loc = SrcLoc::current());

} // namespace pto
