// reduce_ops.h - Reductions beyond ops.h's single-axis sum/amax/amin, as PyPTO's (reference §5
// "Reductions") with PyTorch's semantics where PyPTO leaves them open: prod, mean, var,
// argmax/argmin, cumsum/cumprod, and sum/amax/amin/prod/mean over a list of axes.
//
// Common rules:
// - Axes count from the end when negative; an axis outside [-rank, rank) is a ShapeError, a
//   repeated axis in a list too. An EMPTY axis list reduces every axis (PyTorch `dim=[]`).
// - A reduction covers the input's valid region; the result's valid extent on a reduced axis is
//   1 (keepdim) and the other axes keep theirs. Without keepdim the reduced axes disappear; a
//   result with no axis left keeps one element of shape [1] (ptojit has no rank-0 tensors).
// - A reduction over a length-1 axis is the identity (argmax/argmin give 0).
// - Empty reductions (a valid extent of 0 on a reduced axis): sum +0, prod 1, amax -inf (floats)
//   or the type's minimum, amin +inf or the type's maximum, mean and var NaN, argmax/argmin -1.
// - Signed zeros follow IEEE 754 and NumPy: a float sum (and mean) of only -0 terms is -0, a +0
//   term or cancelling terms make it +0; cumsum keeps a leading -0 (PyTorch's CPU kernels give
//   +0 for both); amax/amin order -0 below +0. Both run modes give the same bits here
//   (docs/ops.md, "exact", says where else they do).
// - fp16/bf16 accumulate in fp32 and are rounded once to the result dtype (also across the axes
//   of a list: the list forms widen to fp32 first).
// - DT_BOOL inputs are a DTypeError (cast to an int type); so is every op on a token or shmem data.
#pragma once

#include "pto/ops.h"

#include <vector>

namespace pto {

/// Product over `axis`, as PyPTO `prod`. Dtypes: ints (wrap on overflow) and floats; NaN
/// propagates, 0 * inf = NaN (IEEE). Empty: 1.
Tensor prod(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// Sum over every axis of `axes` (see the common rules; as PyTorch `sum(x, dim=list)`).
Tensor sum(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts = {},
           SrcLoc loc = SrcLoc::current());
/// Max over every axis of `axes`; NaN propagates.
Tensor amax(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts = {},
            SrcLoc loc = SrcLoc::current());
/// Min over every axis of `axes`; NaN propagates.
Tensor amin(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts = {},
            SrcLoc loc = SrcLoc::current());
/// Product over every axis of `axes`.
Tensor prod(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts = {},
            SrcLoc loc = SrcLoc::current());

/// Arithmetic mean over `axis`: sum / n, n the valid extent (a run-time value for dynamic
/// shapes), as PyTorch `mean`. Floats only (DTypeError for ints: cast first). Empty: NaN (0/0).
Tensor mean(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Mean over every axis of `axes` (n = the product of their valid extents).
Tensor mean(const Tensor &x, const std::vector<int> &axes, ReduceOptions opts = {},
            SrcLoc loc = SrcLoc::current());

struct VarOptions {
  double correction = 1; ///< Bessel's correction: divide by max(n - correction, 0) (PyTorch)
  bool keepdim = false;
};
/// Variance over every axis of `axes`: sum((x - mean)^2) / max(n - correction, 0), two-pass, as
/// PyPTO / PyTorch `var(x, dim, correction=1, keepdim=False)`. Floats only (DTypeError). n <=
/// correction gives inf (or NaN when the sum is 0), as PyTorch.
Tensor var(const Tensor &x, const std::vector<int> &axes, VarOptions opts = {},
           SrcLoc loc = SrcLoc::current());
/// Variance over one axis.
Tensor var(const Tensor &x, int axis, VarOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// DT_INT32 index of the largest element along `axis`, as PyPTO `argmax`: the first index on
/// ties; a NaN is larger than everything, so a row with NaN gives its first NaN's index
/// (PyTorch). Floats and ints. Empty: -1.
Tensor argmax(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// DT_INT32 index of the smallest element along `axis` (first on ties; first NaN wins).
Tensor argmin(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// Inclusive prefix sum along `axis`, as PyPTO `cumsum`: same shape and valid shape. Integer
/// inputs give DT_INT64 (PyPTO, PyTorch; wraps); floats keep their dtype (fp16/bf16 accumulate
/// in fp32, each output rounded once); a NaN or inf propagates to the end of its row.
Tensor cumsum(const Tensor &x, int axis, SrcLoc loc = SrcLoc::current());
/// Inclusive prefix product along `axis`, as PyPTO / PyTorch `cumprod`; dtypes as cumsum.
Tensor cumprod(const Tensor &x, int axis, SrcLoc loc = SrcLoc::current());

} // namespace pto
