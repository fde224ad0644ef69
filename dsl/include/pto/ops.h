// ops.h - Tensor operations, as PyPTO's (reference §5). Each op snapshots the current vec tile
// shape (tile.h) when it is created; the tile decides how codegen splits it (reference §3.2).
//
// Common rules (PyPTO's unless noted):
// - Operands of binary ops broadcast numpy-style; a scalar may stand for either operand. Tensor
//   operands must have the same dtype (DTypeError otherwise); an integer scalar takes the
//   tensor's dtype, a floating scalar with an integer tensor is a DTypeError.
// - fp16/bf16 are stored as such and computed in fp32; every op's result is rounded to its
//   output dtype (IEEE 754 roundTiesToEven), also inside fused chains.
// - Ops act on the valid region (valid_shape); elements outside it are left untouched.
// - Every op throws TileShapeError when no vec tile is set, or its rank is below the output rank.
// - Errors name the op and the caller's file:line.
#pragma once

#include "pto/tensor.h"

#include <optional>
#include <source_location>
#include <vector>

namespace pto {

using SrcLoc = std::source_location;

/// a + b, elementwise with broadcasting. Dtypes: int8..int64, uint8, fp16, bf16, fp32, double.
Tensor add(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a - b, elementwise with broadcasting.
Tensor sub(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a * b, elementwise with broadcasting.
Tensor mul(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a / b. Floats: IEEE 754 division. Integers: truncating; a zero divisor makes the kernel call
/// throw RuntimeError (a literal zero scalar throws at trace time).
Tensor div(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// Elementwise max; NaN propagates (as PyTorch `maximum`).
Tensor maximum(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// Elementwise min; NaN propagates (as PyTorch `minimum`).
Tensor minimum(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());

/// -x. Dtypes: signed ints, floats.
Tensor neg(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// |x|. Dtypes: signed ints, floats.
Tensor abs(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// e^x. Floats only (DTypeError otherwise). fp32 error <= 1 ULP (SLEEF u10).
Tensor exp(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Natural logarithm. Floats only. log(0) = -inf, log(x < 0) = NaN.
Tensor log(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Square root, correctly rounded. Floats only.
Tensor sqrt(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// 1 / sqrt(x). Floats only.
Tensor rsqrt(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// 1 / x. Floats only.
Tensor reciprocal(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Converts to `dtype`. Float -> float and int -> float round to nearest even; float -> int
/// truncates toward zero (PyPTO's default cast mode), NaN -> 0, out of range saturates;
/// int -> narrower int wraps (two's complement). Any supported dtype pair.
Tensor cast(const Tensor &x, DataType dtype, SrcLoc loc = SrcLoc::current());

struct ReduceOptions {
  bool keepdim = false; ///< keep the reduced axis with size 1 (as PyPTO `keepdim`)
};
/// Sum over `axis` (negative counts from the end). fp16/bf16 accumulate in fp32. The result's
/// valid extent on the axis is 1; the reduction covers the input's valid extent (an empty valid
/// extent sums to 0). Dtypes: ints, floats. ShapeError for an axis out of range.
Tensor sum(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Max over `axis`; NaN propagates; an empty valid extent gives -inf (floats) or the type's min.
Tensor amax(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Min over `axis`; NaN propagates; an empty valid extent gives +inf (floats) or the type's max.
Tensor amin(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct FullOptions {
  std::optional<std::vector<SymbolicScalar>> valid_shape = {}; ///< defaults to the shape
};
/// A new tensor of `shape` filled with `value` converted to `dtype`, as PyPTO `full`.
Tensor full(const std::vector<SymbolicScalar> &shape, Element value, FullOptions opts = {},
            SrcLoc loc = SrcLoc::current());
/// A new tensor of `shape` filled with `value` (cast to `dtype`).
Tensor full(const std::vector<SymbolicScalar> &shape, double value, DataType dtype,
            FullOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// A new tensor of zeros, as PyPTO `zeros`.
Tensor zeros(const std::vector<SymbolicScalar> &shape, DataType dtype = DT_FP32,
             SrcLoc loc = SrcLoc::current());

struct ViewOptions {
  /// Run-time valid extent of the window; default min(max(parent_valid - offset, 0), shape).
  std::optional<std::vector<SymbolicScalar>> valid_shape = {};
};
/// A window of `x` (no copy), as PyPTO `view`: `shape` static, `offsets` may be symbolic, one
/// per dim. ShapeError when ranks differ, a dim is not positive, or a concrete window does not
/// fit in `x`; window bounds that depend on run-time values are checked by the kernel call.
Tensor view(const Tensor &x, const std::vector<int64_t> &shape,
            const std::vector<SymbolicScalar> &offsets, ViewOptions opts = {},
            SrcLoc loc = SrcLoc::current());
/// Writes the valid region of `x` into `out` at `offsets`, as PyPTO `assemble`. `out` is usually
/// a kernel output parameter. Dtypes must match (DTypeError); the window must fit (ShapeError).
void assemble(const Tensor &x, const std::vector<SymbolicScalar> &offsets, const Tensor &out,
              SrcLoc loc = SrcLoc::current());

/// Operators: `+ - * /` as add/sub/mul/div, unary `-` as neg. Comparisons are not overloaded.
Tensor operator+(const Operand &a, const Operand &b);
Tensor operator-(const Operand &a, const Operand &b);
Tensor operator*(const Operand &a, const Operand &b);
Tensor operator/(const Operand &a, const Operand &b);
Tensor operator-(const Operand &a);

} // namespace pto
