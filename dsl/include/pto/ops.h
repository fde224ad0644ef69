// ops.h - Tensor operations, as PyPTO's (reference §5). Each op snapshots the current vec tile
// shape (tile.h) when it is created; the tile decides how codegen splits it (reference §3.2).
//
// Common rules (PyPTO's unless noted):
// - Operands of binary ops broadcast numpy-style; a scalar may stand for either operand. Tensor
//   operands must have the same dtype (DTypeError otherwise); an integer scalar takes the
//   tensor's dtype, a floating scalar with an integer tensor is a DTypeError.
// - A scalar that becomes an element of an integer dtype (an operand as above, the value of
//   full, full_like, pad, addcmul, clip's bounds, ...) must fit that dtype's range after
//   truncation toward zero: int8 [-128, 127], uint8 [0, 255], int16, int32 (int64 takes every
//   int64); otherwise, and for NaN or +-inf, it is a DTypeError naming the op (as PyTorch's
//   "value cannot be converted without overflow"), never a wrapped or saturated element.
// - fp16/bf16 are stored as such and computed in fp32; every op's result is rounded to its
//   output dtype (IEEE 754 roundTiesToEven), also inside fused chains.
// - Ops act on the valid region (valid_shape); elements outside it are left untouched.
// - One valid-shape rule for every op that takes a valid_shape (full, view, reshape,
//   shmem_view): one entry per dim and 0 <= valid_shape[d] <= shape[d]. One window rule for
//   view and assemble: per dim 0 <= offset and offset + extent <= the size of the tensor it
//   lies in, unless the extent is 0 (see view). Both are checked at trace time for what is
//   concrete and by the kernel call, once each time the op's position runs and before any op
//   of that loop body (or kernel) touches memory, for what is known only at run time (loop
//   indices, DYNAMIC dims, PE numbers; a check reading a tensor element runs where it was
//   traced, the element read there). Either way it is the same ShapeError,
//   "file:line: op: detail" with the user's line and op, in the JIT and the interpreter.
// - Every op throws TileShapeError when no vec tile is set, or its rank is below the output rank.
// - Sizes: every result (of every op in every header) needs at most 2^62 bytes, counting zero dims
//   as 1 (kMaxExtent, pto/size_math.h), and dims computed from arguments are overflow-checked:
//   ShapeError at the call when the static dims say so; when dynamic dims decide it, the kernel
//   call fails with ShapeError naming the op's line, before the result is written.
// - Errors name the op and the caller's file:line.
#pragma once

#include "pto/static_dims.h"
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
/// PyPTO's `PrecisionType` (reference §2.3): INTRINSIC (the chip's raw instruction) or
/// HIGH_PRECISION (Ascend 950). A CPU has no cheaper, less accurate variant: ptojit computes each
/// op at the accuracy its header and docs/ops.md give whichever is asked, so both values give the
/// same bits. The overloads below take it so that `precision_type=` ports line by line.
enum class PrecisionType : int { INTRINSIC = 0, HIGH_PRECISION = 1 };
/// div(a, b) (above); `precision_type` must be one of the two enumerators (ArgumentError naming
/// `div` otherwise, e.g. a cast int). The same holds for every PrecisionType overload here.
Tensor div(const Operand &a, const Operand &b, PrecisionType precision_type,
           SrcLoc loc = SrcLoc::current());
/// Elementwise max; NaN propagates (as PyTorch `maximum`), and -0 < +0 (IEEE 754 maximum).
Tensor maximum(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// Elementwise min; NaN propagates (as PyTorch `minimum`), and -0 < +0 (IEEE 754 minimum).
Tensor minimum(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());

/// -x. Dtypes: signed ints, floats.
Tensor neg(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// |x|. Dtypes: signed ints, floats.
Tensor abs(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// e^x. Floats only (DTypeError otherwise). Error <= 1 ULP (SLEEF u10), finite up to ln of the
/// largest finite value.
Tensor exp(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Natural logarithm. Floats only. log(0) = -inf, log(x < 0) = NaN.
Tensor log(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Square root, correctly rounded. Floats only.
Tensor sqrt(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// 1 / sqrt(x), two roundings: <= 1.5 ULP (measured 1.47 fp32, 1.46 fp64). Floats only.
Tensor rsqrt(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// 1 / x. Floats only.
Tensor reciprocal(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// exp, log, log2, log10, sqrt, rsqrt and reciprocal with PyPTO's `precision_type` argument:
/// the functions above (same dtypes, accuracy and errors); see PrecisionType.
Tensor exp(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
Tensor log(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
Tensor log2(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
Tensor log10(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
Tensor sqrt(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
Tensor rsqrt(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
Tensor reciprocal(const Tensor &x, PrecisionType precision_type, SrcLoc loc = SrcLoc::current());
/// Converts to `dtype`. Float -> float and int -> float round once to nearest even (correctly
/// rounded: int32/int64 -> bf16 and fp64 -> fp16/bf16 never round through fp32 or fp64 first);
/// float -> int truncates toward zero (PyPTO's default cast mode), NaN -> 0, out of range and
/// +-inf saturate; int -> narrower int wraps (two's complement); any -> bool is x != 0 (NaN is
/// true). Any supported dtype pair; both run modes give the same bits.
Tensor cast(const Tensor &x, DataType dtype, SrcLoc loc = SrcLoc::current());

// ---- Elementwise math of the op catalogue (reference §5) ----------------------------------
// Unless noted: floating dtypes only (fp16, bf16, fp32, fp64; DTypeError otherwise, "cast
// first"); semantics and edge values (NaN, +-inf, +-0) as C99 Annex F / PyTorch; fp16/bf16 are
// computed in fp32 and rounded once. Generated code uses SLEEF's vector functions: error <= 1 ULP
// (u10; erfc 1.5 ULP, hypot 0.5 ULP), except as measured (docs/ops.md): erf fp32 1.02 ULP near
// 3.6e-38 and hypot 0.90 (fp32) / 0.85 (fp64) ULP near the smallest normals. Composite
// activations (sigmoid ... gelu_tanh) are one op each, computed in the compute type and rounded
// once; their measured max errors (fp32 / fp64) are stated on each.

Tensor exp2(const Tensor &x, SrcLoc loc = SrcLoc::current());  ///< 2^x
Tensor expm1(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< e^x - 1, exact near 0
Tensor log2(const Tensor &x, SrcLoc loc = SrcLoc::current());  ///< log base 2
Tensor log10(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< log base 10
Tensor log1p(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< ln(1 + x), exact near 0
Tensor sin(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor cos(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor tan(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor asin(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< NaN outside [-1, 1]
Tensor acos(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< NaN outside [-1, 1]
Tensor atan(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor sinh(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor cosh(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor tanh(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor asinh(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor acosh(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< NaN below 1
Tensor atanh(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< +-inf at +-1, NaN beyond
Tensor erf(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor erfc(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< 1 - erf(x), exact in the tail
Tensor cbrt(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< real cube root (negative x ok)
/// 1 / (1 + e^-x), as PyTorch `sigmoid`; 0 and 1 at -inf and +inf. <= 2.11 / 1.89 ULP,
/// subnormal results included (computed as e^x / (1 + e^x) for x < 0).
Tensor sigmoid(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// log(1 + e^x), and x itself for x > 20: PyTorch `softplus` with beta = 1, threshold = 20.
/// <= 1.50 / 1.40 ULP.
Tensor softplus(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// x / (1 + |x|), as PyTorch `softsign`. <= 1.47 / 1.48 ULP (two roundings).
Tensor softsign(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// x for x > 0, alpha * (e^x - 1) otherwise, as PyTorch `elu`.
Tensor elu(const Tensor &x, double alpha = 1.0, SrcLoc loc = SrcLoc::current());
/// Exact GELU, x/2 * (1 + erf(x / sqrt 2)), as PyTorch `gelu(approximate='none')`. Computed as
/// x/2 * erfc(-x / sqrt 2), which stays accurate where 1 + erf cancels (x << 0), corrected for
/// the rounding of -x / sqrt 2 that the tail amplifies: <= 6.8 / 18 ULP (near x = -13 / -38,
/// where the result approaches the subnormals).
Tensor gelu(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Tanh GELU, x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as PyTorch
/// `gelu(approximate='tanh')`; computed as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) with the
/// stable sigmoid (no overflow to -0). The rounding of the argument u is amplified by |2u| in
/// the negative tail: up to 178 / 399 ULP (near x = -9.7 / -11.6).
Tensor gelu_tanh(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Leaky ReLU: x for x >= 0, negative_slope * x otherwise (PyPTO `lrelu`). ArgumentError when
/// the slope is negative or not finite (as PyPTO).
Tensor lrelu(const Tensor &x, double negative_slope = 0.01, SrcLoc loc = SrcLoc::current());

// The ops below also take integer dtypes where noted (never DT_BOOL unless noted).
/// max(x, 0); NaN propagates, -0 gives +0. Floats and ints.
Tensor relu(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// min(max(x, 0), 6); NaN propagates. Floats and ints.
Tensor relu6(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// 1 for x > 0, -1 for x < 0, x itself for +-0 and NaN (NaN propagates, as NumPy). Floats, ints.
Tensor sign(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// DT_BOOL: the sign bit of x (true for -0.0 and negative NaN; x < 0 for ints). Floats, ints.
Tensor signbit(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Rounding to an integral value in the same dtype; integers pass through unchanged.
Tensor ceil(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor floor(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor trunc(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// Round to nearest, ties to even (2.5 -> 2, -0.5 -> -0), as PyTorch `round` (decimals = 0).
Tensor round(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// DT_BOOL results. Floats and ints (ints are always finite, never NaN or inf, as PyTorch).
Tensor isfinite(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor isnan(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor isinf(const Tensor &x, SrcLoc loc = SrcLoc::current()); ///< +inf or -inf
/// DT_BOOL: x == 0 (NaN is true, so its negation is false). Every dtype, DT_BOOL included.
Tensor logical_not(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// ~x for ints; logical not for DT_BOOL (as PyTorch). DTypeError for floats.
Tensor bitwise_not(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// x * x (ints wrap). Floats and ints.
Tensor square(const Tensor &x, SrcLoc loc = SrcLoc::current());
/// A copy of x (valid region), as PyPTO `clone`. Every dtype.
Tensor clone(const Tensor &x, SrcLoc loc = SrcLoc::current());

// Binary, with add's broadcasting and scalar rules. Floats only unless noted.
/// a^b, as C `pow` (pow(x, 0) = 1 even for NaN, pow(-8, 1/3) = NaN). Ints too (PyPTO `pow`):
/// exact square-and-multiply that wraps, as PyTorch's integral pow (0^0 = 1); a negative
/// exponent gives 1 for a = 1, +-1 for a = -1 and 0 otherwise, and a negative scalar exponent is
/// an ArgumentError (as PyTorch).
Tensor pow(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// Greatest common divisor, >= 0, with gcd(a, 0) = |a| and gcd(0, 0) = 0, as PyPTO / PyTorch
/// `gcd` (Euclid on the magnitudes). Ints only (DTypeError); gcd(INT_MIN, 0) wraps to INT_MIN.
Tensor gcd(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// sqrt(a^2 + b^2) without overflow; inf if either is inf (even with NaN).
Tensor hypot(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// atan2(y, x) in [-pi, pi], quadrant from both signs (also of zeros).
Tensor atan2(const Operand &y, const Operand &x, SrcLoc loc = SrcLoc::current());
/// |a| with the sign bit of b, as C / NumPy `copysign` (PyPTO `copysign`): exact, and the sign
/// bit counts also for -0 and NaN, so copysign(x, -0.0) = -|x|, copysign(x, b) is negative for a
/// negative NaN b, and a NaN a gives a NaN with b's sign.
Tensor copysign(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// The Heaviside step function, as NumPy `heaviside(x1, x2)`: 0 for a < 0, b for a == 0 (-0
/// too), 1 for a > 0, and a itself (NaN) for a NaN a (PyTorch `heaviside` gives 0 there). Exact.
/// Floats and ints (not DT_BOOL); b is usually a scalar (`heaviside(x, 0.5)`).
Tensor heaviside(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a - b * trunc(a / b), exact: the result has the sign of a (C `fmod`, PyTorch `fmod`). Floats:
/// NaN for b = 0 or a = +-inf. Ints too: a zero divisor fails the call with RuntimeError.
Tensor fmod(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a - b * floor(a / b): the result has the sign of b (Python `%`, PyTorch `remainder`, PyPTO
/// floor_mod). Floats: fmod(a, b), plus b when the signs differ. Ints as fmod.
Tensor remainder(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// pow, fmod and remainder with PyPTO's `precision_type` argument: the functions above; see
/// PrecisionType.
Tensor pow(const Operand &a, const Operand &b, PrecisionType precision_type,
           SrcLoc loc = SrcLoc::current());
Tensor fmod(const Operand &a, const Operand &b, PrecisionType precision_type,
            SrcLoc loc = SrcLoc::current());
Tensor remainder(const Operand &a, const Operand &b, PrecisionType precision_type,
                 SrcLoc loc = SrcLoc::current());
/// floor(a / b), as PyTorch `floor_divide` (rounding_mode='floor'). Floats: PyTorch's exact
/// algorithm from fmod (a / b when b = 0; NaN when a is infinite). Ints: floored, INT_MIN / -1
/// wraps, a zero divisor fails the call with RuntimeError (a literal zero scalar at trace time).
Tensor floor_div(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// DT_BOOL results; an operand is true when != 0 (NaN is true). Every dtype, DT_BOOL included.
Tensor logical_and(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor logical_or(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor logical_xor(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// Bitwise ops on ints and DT_BOOL (DTypeError for floats).
Tensor bitwise_and(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor bitwise_or(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor bitwise_xor(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a << b on ints (wraps); 0 when b < 0 or b >= the bit width (no UB).
Tensor bitwise_left_shift(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// a >> b on ints: arithmetic for signed, logical for uint8; for b < 0 or b >= the bit width,
/// -1 for negative a and 0 otherwise.
Tensor bitwise_right_shift(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// Comparisons -> DT_BOOL of the broadcast shape. Every dtype (ints compare exactly, uint8 and
/// bool unsigned). IEEE: a comparison with NaN is false, except ne, which is true. Not spelled
/// as C++ operators (`==` on a Tensor stays unavailable).
Tensor eq(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor ne(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor lt(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor le(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor gt(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
Tensor ge(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// cond ? a : b elementwise, as PyTorch/PyPTO `where`; cond, a and b broadcast together. cond
/// must be a DT_BOOL tensor (DTypeError otherwise; compare with ne(x, 0) first). a and b are
/// tensors of one dtype or scalars (taking the tensor's dtype; two scalars give DT_INT32 or
/// DT_FP32 as `full`). Every dtype.
Tensor where(const Tensor &cond, const Operand &a, const Operand &b,
             SrcLoc loc = SrcLoc::current());
/// min(max(x, min), max), as PyTorch `clamp`: NaN in x propagates; min > max gives max.
/// Bounds are tensors (x's dtype, broadcasting) or scalars. Floats and ints.
Tensor clip(const Tensor &x, const Operand &min, const Operand &max,
            SrcLoc loc = SrcLoc::current());

struct ReduceOptions {
  bool keepdim = false; ///< keep the reduced axis with size 1 (as PyPTO `keepdim`)
};
/// Sum over `axis` (negative counts from the end). fp16/bf16 accumulate in fp32. The result's
/// valid extent on the axis is 1; the reduction covers the input's valid extent (an empty valid
/// extent sums to +0; only -0 terms sum to -0, as IEEE 754 and NumPy). Dtypes: ints, floats.
/// ShapeError for an axis out of range.
Tensor sum(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Max over `axis`; NaN propagates; an empty valid extent gives -inf (floats) or the type's min.
Tensor amax(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Min over `axis`; NaN propagates; an empty valid extent gives +inf (floats) or the type's max.
Tensor amin(const Tensor &x, int axis, ReduceOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct FullOptions {
  std::optional<std::vector<SymbolicScalar>> valid_shape = {}; ///< defaults to the shape
};
/// A new tensor of `shape` filled with `value` converted to `dtype`, as PyPTO `full`. Only its
/// valid region is written. ShapeError for a valid_shape of another rank or an entry outside
/// [0, shape[d]] (at run time when symbolic, see the common rules). For an integer dtype the
/// value truncates toward zero and must fit the dtype (DTypeError otherwise, see the common
/// rules: full({4}, 300.0, DT_INT8) is an error, not 44).
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
/// per dim. The window that must lie in `x` (per dim: 0 <= offset, offset + extent <= size) is
/// what the view declares it covers:
/// - without a valid_shape, its whole shape, in x's shape; its valid shape is then inferred
///   within it (a partly valid x gives a partly valid view);
/// - with a valid_shape (each entry in [0, shape[d]]), only that valid extent: a static tile may
///   run past the end of x when its valid part does not, as PyPTO's tails (reference §3.3:
///   `view(x, {16, 200}, {i * 16, 0}, {.valid_shape = {min(n - i * 16, 16), 200}})`). For an
///   x that is itself a view given a valid_shape, the extent must lie in that valid_shape.
///   An empty extent (0) may lie anywhere.
/// PyPTO would silently clip a window without a valid_shape that leaves x (through the inferred
/// valid shape); ptojit makes it an error, concrete or not. ShapeError when ranks differ, a dim
/// is not positive, or a rule above fails (at trace time when concrete, else by the call: see
/// the common rules), e.g. `view: window [6, 10) of dim 0 exceeds the size 8 of 'arg1'`.
/// `shape` is a StaticDims: ints or concrete SymbolicScalars (`{x.shape(0), 16}`); a run-time
/// entry is a ShapeError (pto/static_dims.h).
Tensor view(const Tensor &x, const StaticDims &shape, const std::vector<SymbolicScalar> &offsets,
            ViewOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Writes the valid region of `x` into `out` at `offsets`, as PyPTO `assemble`. `out` is usually
/// a kernel output parameter. Dtypes must match (DTypeError). The window that must fit in `out`
/// (ShapeError, by the window rule: trace time when concrete, else by the call) is x's valid
/// region at `offsets`; for an `out` that is a view given a valid_shape, in that valid_shape.
void assemble(const Tensor &x, const std::vector<SymbolicScalar> &offsets, const Tensor &out,
              SrcLoc loc = SrcLoc::current());
/// `t[i, j] = value`, as PyPTO `SetTensorData` (`__setitem__` with all-index keys): writes one
/// element of `t` (a kernel parameter or a local, or a view of one), in program order with the
/// ops around it. One index per dim; indices may be symbolic; a concrete negative index counts
/// from the end of a static dim, as `Tensor::at`. `value` is converted to t's dtype by `full`'s
/// rules (an integer dtype truncates toward zero and must hold the value: DTypeError
/// otherwise). Every dtype (PyPTO allows only DT_INT32). Needs no vec tile. Errors, naming
/// "set_tensor_data": ShapeError for a wrong index count or a concrete index out of range (at
/// run time, by the assemble window rule, for a symbolic one); DTypeError for a token or shmem
/// data. The value is a number known at trace time; to store a run-time scalar, assemble a
/// tensor computed from it.
void set_tensor_data(const Tensor &t, const std::vector<SymbolicScalar> &indices, double value,
                     SrcLoc loc = SrcLoc::current());

/// Operators: `+ - * /` as add/sub/mul/div, unary `-` as neg. Comparisons are not overloaded.
Tensor operator+(const Operand &a, const Operand &b);
Tensor operator-(const Operand &a, const Operand &b);
Tensor operator*(const Operand &a, const Operand &b);
Tensor operator/(const Operand &a, const Operand &b);
Tensor operator-(const Operand &a);

} // namespace pto
