// nn_ops.h - Composite ops built from the ops of ops.h, reduce_ops.h, shape_ops.h and matmul.h:
// normalizations (softmax, log_softmax, logsumexp, layer_norm, rms_norm, l2_normalize), losses,
// dropout, and the elementwise ops of PyPTO's catalogue (reference §5) and of MindSpore's
// distributed operator table (reference/sharding.md) that are not single ops. Every function
// traces into existing op kinds (no IR of its own), so it fuses, runs JIT-compiled and in the
// interpreter like the ops it is made of.
//
// Common rules:
// - "Floating" means fp16, bf16, fp32 and fp64; a floating composite given another dtype throws
//   DTypeError naming the composite. fp16/bf16 inputs are widened to fp32, the whole composite
//   runs in fp32, and the result is rounded once to the input dtype (IEEE 754 roundTiesToEven),
//   as PyPTO computes its composites (softmax, rms_norm, sigmoid "in fp32"). fp32 and fp64 run
//   in their own precision.
// - Tensor operands of one op must share a dtype (DTypeError) unless the op says otherwise;
//   shapes broadcast numpy-style (ShapeError) unless the op says otherwise. An axis outside
//   [-rank, rank) is a ShapeError.
// - Reductions cover the input's valid region. A reduced axis of length 1 gives the identity
//   (softmax 1, log_softmax 0, logsumexp x, normalizations of one element 0 before the affine
//   part). EMPTY reductions (valid extent 0 on the reduced axis) follow the rules of
//   reduce_ops.h (sum 0, amax -inf): logsumexp gives -inf (as PyTorch), the cross-entropy losses
//   0; the elementwise results (softmax, norms) have no valid element on that axis.
// - Every composite captures the current vec tile like the ops it is made of (TileShapeError
//   when none is set or its rank is below the result's); the movement composites (gathermask,
//   interleave, deinterleave, strided_slice) give their own [rows, n] / [rows, m, k] /
//   [pre, n, k, post] intermediates a tile made of the caller's first and last entries.
// - Errors name the composite as the user spelled it and the caller's file:line.
#pragma once

#include "pto/matmul.h"
#include "pto/ops.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace pto {

// ---- softmax family ------------------------------------------------------------------------

/// exp(x - max) / sum(exp(x - max)) along `axis`, as PyTorch `torch.softmax` / PyPTO `softmax`
/// (amax, sub, exp, sum, then a multiply by the reciprocal of the sum: one division per row,
/// within 1 ulp of the quotient, as oneDNN). Floating. A row of equal values is uniform however
/// large they are (1e30 in fp32, 60000 in fp16); a row of all -inf, or with +inf or NaN, is NaN
/// (as PyTorch).
Tensor softmax(const Tensor &x, int axis, SrcLoc loc = SrcLoc::current());
/// x - max - log(sum(exp(x - max))) along `axis`, as PyTorch `torch.log_softmax` / MindSpore
/// LogSoftmax: never log(0) for finite rows. A row of all -inf is NaN (as PyTorch).
Tensor log_softmax(const Tensor &x, int axis, SrcLoc loc = SrcLoc::current());
/// log(sum(exp(x))) along `axis`, as PyTorch `torch.logsumexp`: computed as m + log(sum(exp(x -
/// m))) with m = max, replaced by 0 when it is infinite, so a row of all -inf gives -inf and a
/// row with +inf gives +inf. Floating. Empty: -inf.
Tensor logsumexp(const Tensor &x, int axis, ReduceOptions opts = {},
                 SrcLoc loc = SrcLoc::current());

// ---- normalizations ------------------------------------------------------------------------

struct LayerNormOptions {
  /// Scale; its shape must equal x's dims [begin_axis, rank) and its dtype x's (PyTorch rule).
  std::optional<Tensor> weight = std::nullopt;
  std::optional<Tensor> bias = std::nullopt; ///< shift; same rules as weight
  double eps = 1e-5;                         ///< added to the variance; finite and >= 0
};
/// (x - mean) / sqrt(var + eps) * weight + bias over the dims [begin_axis, rank), mean and the
/// biased variance (divide by n) over those dims: PyTorch `layer_norm` with normalized_shape =
/// x.shape[begin_axis:], MindSpore LayerNorm with begin_norm_axis = begin_params_axis. Two-pass
/// (the variance is the mean of squared deviations). Floating. ShapeError for a bad axis or a
/// weight/bias shape, DTypeError for a weight/bias dtype, ArgumentError for a bad eps.
Tensor layer_norm(const Tensor &x, int begin_axis = -1, LayerNormOptions opts = {},
                  SrcLoc loc = SrcLoc::current());

struct RmsNormOptions {
  std::optional<Tensor> gamma = std::nullopt; ///< scale of shape [C] (the last dim), x's dtype
  double epsilon = 1e-6;                      ///< finite and >= 0
};
/// x / sqrt(mean(x^2) + epsilon) * gamma over the last dim, as PyPTO `rms_norm(input,
/// gamma=None, epsilon=1e-6)` (computed in fp32, cast back to x's dtype). Floating.
/// ShapeError / DTypeError for a gamma that is not [C] of x's dtype; ArgumentError for epsilon.
Tensor rms_norm(const Tensor &x, RmsNormOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// x / sqrt(max(sum(x^2, axis), epsilon)), as MindSpore L2Normalize(axis, epsilon) (default
/// epsilon 1e-4 as MindSpore). Floating. ArgumentError unless epsilon is finite and >= 0.
Tensor l2_normalize(const Tensor &x, int axis, double epsilon = 1e-4,
                    SrcLoc loc = SrcLoc::current());

// ---- losses --------------------------------------------------------------------------------

/// Elementwise max(x, 0) - x * z + log1p(exp(-|x|)), the stable form of -(z log sigmoid(x) +
/// (1 - z) log(1 - sigmoid(x))), as MindSpore SigmoidCrossEntropyWithLogits / TensorFlow
/// `sigmoid_cross_entropy_with_logits`. logits and labels broadcast. Floating.
Tensor sigmoid_cross_entropy_with_logits(const Tensor &logits, const Tensor &labels,
                                         SrcLoc loc = SrcLoc::current());

/// The two results of softmax_cross_entropy_with_logits.
struct SoftmaxCrossEntropy {
  Tensor loss;     ///< -sum(labels * log_softmax(logits)) over the last dim: shape without it
  Tensor backprop; ///< softmax(logits) - labels: logits' shape
};
/// Per row (the last dim), as MindSpore SoftmaxCrossEntropyWithLogits / TensorFlow
/// `softmax_cross_entropy_with_logits`: loss = sum(labels * (log(sum(exp(x - m))) - (x - m))), m
/// the row max. logits and labels must have the same shape (ShapeError) and dtype. Floating.
/// A rank-1 input gives a loss of shape [1]. A -inf logit with label 0 makes the loss NaN.
SoftmaxCrossEntropy softmax_cross_entropy_with_logits(const Tensor &logits, const Tensor &labels,
                                                      SrcLoc loc = SrcLoc::current());

// ---- dropout -------------------------------------------------------------------------------

/// DT_BOOL keep-mask of `shape`: element i is kept when u_i >= p, u = pto::uniform(shape, key,
/// counter, DT_FP32) (Philox4x32-10, shape_ops.h), p rounded to fp32; so it is kept with
/// probability 1 - p, and the same (shape, key, counter) give the same mask on every run, PE and
/// tile shape. As MindSpore DropoutGenMask (a bool mask instead of packed bits). ArgumentError
/// unless 0 <= p <= 1; ShapeError for a rank outside 1..4 or a dim < 1.
Tensor dropout_gen_mask(const std::vector<SymbolicScalar> &shape, double p, uint64_t key,
                        uint64_t counter, SrcLoc loc = SrcLoc::current());
/// where(mask, x / (1 - p), 0), as MindSpore DropoutDoMask: dropped elements are exactly 0 (NaN
/// and inf inputs too). mask is DT_BOOL (DTypeError) and broadcasts to x. Floating x. p = 1 gives
/// zeros. ArgumentError unless 0 <= p <= 1.
Tensor dropout_do_mask(const Tensor &x, const Tensor &mask, double p,
                       SrcLoc loc = SrcLoc::current());
/// Inverted dropout, as PyTorch `dropout(x, p, training=True)` with a counter-based RNG:
/// dropout_do_mask(x, dropout_gen_mask(x.shape(), p, key, counter), p). p = 0 is the identity
/// (a copy), p = 1 gives zeros. Floating. ArgumentError unless 0 <= p <= 1.
Tensor dropout(const Tensor &x, double p, uint64_t key, uint64_t counter,
               SrcLoc loc = SrcLoc::current());

// ---- bias, activations ---------------------------------------------------------------------

enum class DataFormat : uint8_t { NCHW, NHWC };
/// x + bias along the channel dim, as MindSpore BiasAdd: bias is 1-D of length C, the channel
/// being dim 1 for NCHW and the last dim for NHWC (the same for rank 2). x of rank 2..4
/// (ShapeError), bias of x's dtype (DTypeError). Floats and ints (ints wrap; DT_BOOL is a
/// DTypeError). A `format` outside DataFormat (a cast integer) is an ArgumentError.
Tensor bias_add(const Tensor &x, const Tensor &bias, DataFormat format = DataFormat::NCHW,
                SrcLoc loc = SrcLoc::current());

/// x for x >= 0, weight * x otherwise, as PyTorch `prelu` / PyPTO `prelu` / MindSpore PReLU:
/// weight is 1-D of length 1 (shared) or C = x.shape[1] (per channel; rank >= 2). NaN
/// propagates. Floating; weight of x's dtype (DTypeError) and a fitting length (ShapeError).
Tensor prelu(const Tensor &x, const Tensor &weight, SrcLoc loc = SrcLoc::current());

// ---- elementwise arithmetic ----------------------------------------------------------------

/// a / b, and 0 where b == 0 (even when a is 0, NaN or inf), as MindSpore DivNoNan. Floats and
/// ints (ints truncate, as div; a zero divisor gives 0 instead of failing).
Tensor div_no_nan(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// MindSpore FloorMod: a - b * floor(a / b), the sign of b (= pto::remainder, PyPTO floor_mod).
Tensor floor_mod(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// MindSpore Mod: the truncated remainder with the sign of a (MindSpore's example: Mod(-4, 3) =
/// -1), i.e. C `fmod` (= pto::fmod).
Tensor mod(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// ceil(a / b), as PyPTO `ceil_div`. Ints: exact (the truncated quotient, plus 1 when the
/// remainder is non-zero with the sign of b); a zero divisor fails the kernel call with
/// RuntimeError (as div). Floats: ceil(a / b) with IEEE division.
Tensor ceil_div(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());
/// DT_BOOL |a - b| < tolerance, as MindSpore ApproximateEqual (default 1e-5). Floating; NaN
/// gives false. ArgumentError unless tolerance is >= 0 and not NaN.
Tensor approximate_equal(const Tensor &a, const Tensor &b, double tolerance = 1e-5,
                         SrcLoc loc = SrcLoc::current());
/// a > b, PyPTO's `greater` (= pto::gt).
Tensor greater(const Operand &a, const Operand &b, SrcLoc loc = SrcLoc::current());

/// x rounded to `decimals` decimal places, ties to even at the scaled value, as PyTorch
/// `round(x, decimals=d)` / PyPTO `round`: round(x * 10^d) / 10^d for d > 0, round(x / 10^-d) *
/// 10^-d for d < 0, in fp32 for fp16/bf16 (then rounded once). Ints: d >= 0 is the identity, d <
/// 0 rounds to a multiple of 10^-d, ties to the even multiple (exact; wraps on overflow).
/// DT_BOOL is a DTypeError.
Tensor round(const Tensor &x, int decimals, SrcLoc loc = SrcLoc::current());

/// start + weight * (end - start), as PyTorch `lerp` (its two-sided form: end - (end - start) *
/// (1 - weight) for |weight| >= 0.5, so lerp(a, b, 1) = b exactly). Floating; broadcasts.
Tensor lerp(const Tensor &start, const Tensor &end, const Operand &weight,
            SrcLoc loc = SrcLoc::current());
/// input + value * t1 * t2, as PyTorch `addcmul`. Floats and ints (value must then be integral:
/// DTypeError otherwise); broadcasts.
Tensor addcmul(const Tensor &input, const Tensor &t1, const Tensor &t2, double value = 1,
               SrcLoc loc = SrcLoc::current());
/// input + value * t1 / t2, as PyTorch `addcdiv`. Floating; broadcasts.
Tensor addcdiv(const Tensor &input, const Tensor &t1, const Tensor &t2, double value = 1,
               SrcLoc loc = SrcLoc::current());
/// e^(a - b) with broadcasting, as PyPTO `expand_exp_dif`. Floating.
Tensor expand_exp_dif(const Tensor &a, const Tensor &b, SrcLoc loc = SrcLoc::current());
/// y + alpha * x, as PyPTO `axpy_` without the in-place update (assemble the result into y's
/// storage for that). x broadcasts to y; y is never broadcast (ShapeError). Dtypes: equal
/// floating dtypes, or y fp32 with x fp16 (PyPTO's mixed case; x is widened exactly), else
/// DTypeError. ArgumentError for a non-finite alpha.
Tensor axpy(const Tensor &y, const Tensor &x, double alpha = 1.0, SrcLoc loc = SrcLoc::current());

/// PyPTO / Ascend cast rounding modes (reference §2.3).
enum class CastMode : uint8_t {
  CAST_NONE,  ///< the default: TRUNC for float -> int, RINT otherwise
  CAST_RINT,  ///< nearest, ties to even
  CAST_ROUND, ///< nearest, ties away from zero
  CAST_FLOOR, ///< toward -inf
  CAST_CEIL,  ///< toward +inf
  CAST_TRUNC, ///< toward zero
  CAST_ODD,   ///< round to odd (PyPTO: fp32 -> fp16 only)
};
/// cast(x, dtype) with PyPTO's rounding `mode` for float -> int (then saturating, NaN -> 0, as
/// pto::cast). Widening and int -> float casts ignore the mode (PyPTO). For float -> narrower
/// float only CAST_NONE and CAST_RINT are supported (ArgumentError otherwise: CAST_ODD, the
/// directed modes), and CAST_ODD is an ArgumentError for float -> int too, as is a `mode`
/// outside CastMode (a cast integer). DTypeError for a dtype ptojit does not support.
Tensor cast(const Tensor &x, DataType dtype, CastMode mode, SrcLoc loc = SrcLoc::current());

// ---- creation and selection ----------------------------------------------------------------

/// A tensor of x's shape and dtype (or `dtype`) filled with `value`, valid everywhere, as
/// MindSpore OnesLike / ZerosLike and PyTorch `full_like`. Every dtype `full` takes.
Tensor full_like(const Tensor &x, double value, DataType dtype = DT_BOTTOM,
                 SrcLoc loc = SrcLoc::current());
Tensor zeros_like(const Tensor &x, SrcLoc loc = SrcLoc::current());
Tensor ones_like(const Tensor &x, SrcLoc loc = SrcLoc::current());

/// The two results of argmax_with_value / argmin_with_value.
struct IndexValue {
  Tensor index;  ///< DT_INT32, as pto::argmax
  Tensor values; ///< as pto::amax / amin
};
/// {argmax, amax} along `axis`, as MindSpore ArgMaxWithValue (first index on ties, NaN wins).
IndexValue argmax_with_value(const Tensor &x, int axis, ReduceOptions opts = {},
                             SrcLoc loc = SrcLoc::current());
/// {argmin, amin} along `axis`, as MindSpore ArgMinWithValue.
IndexValue argmin_with_value(const Tensor &x, int axis, ReduceOptions opts = {},
                             SrcLoc loc = SrcLoc::current());

/// x with every element outside its valid region set to `value`; same shape, valid everywhere,
/// as PyPTO `fillpad(input, 'constant', value)` (ptojit takes rank 1..4). `value` is converted
/// as by `full` (DTypeError for a non-integral value with an integer dtype).
Tensor fillpad(const Tensor &x, double value = 0, SrcLoc loc = SrcLoc::current());

/// Picks elements of the last dim by a fixed pattern, as PyPTO `gathermask(x, pattern_mode)`:
/// 1 = every 2nd from 0, 2 = every 2nd from 1, 3..6 = every 4th from 0..3, 7 = all (a copy).
/// Every dim must be static and the last a multiple of 2 (modes 1, 2) or 4 (modes 3..6)
/// (ShapeError); ArgumentError for another mode. Every dtype. The result's valid extent on the
/// last dim counts the picked positions below x's; the other dims keep x's.
Tensor gathermask(const Tensor &x, int pattern_mode, SrcLoc loc = SrcLoc::current());

/// Two tensors of a's shape, as PyPTO `interleave(input, other)`: the stream a0 b0 a1 b1 ... of
/// the last dims, split at its middle (first half, second half). Same shape (static, last dim
/// even: ShapeError) and dtype (DTypeError). Every dtype. The results are valid over their full
/// shape; input elements outside the inputs' valid regions read as 0.
std::pair<Tensor, Tensor> interleave(const Tensor &a, const Tensor &b,
                                     SrcLoc loc = SrcLoc::current());
/// The inverse, as PyPTO `deinterleave(input, other)`: the even and odd elements of the last
/// dims of concat(a, b) (same shapes as interleave's).
std::pair<Tensor, Tensor> deinterleave(const Tensor &a, const Tensor &b,
                                       SrcLoc loc = SrcLoc::current());
/// The even and odd elements of a's last dim (static and even: ShapeError), as PyPTO
/// `deinterleave(input)`: two tensors with the last dim halved.
std::pair<Tensor, Tensor> deinterleave(const Tensor &a, SrcLoc loc = SrcLoc::current());

/// x[begin:end:strides] per dim, as MindSpore StridedSlice with all masks 0 (Python slicing: a
/// negative begin or end counts from the end of the dim, both are clamped to [0, dim]). Every
/// dim static (ShapeError); strides > 0 (ArgumentError: negative strides are not supported);
/// begin, end and strides one entry per dim and every dim selecting at least one element
/// (ShapeError). Every dtype. A view of x when every stride is 1 (valid shape as `view` infers
/// it); a copy otherwise, valid over its full shape (elements picked from outside x's valid
/// region are undefined).
Tensor strided_slice(const Tensor &x, const std::vector<int64_t> &begin,
                     const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                     SrcLoc loc = SrcLoc::current());

// ---- quantization --------------------------------------------------------------------------

/// PyPTO `quantize(x, scale, otype, axis, zero_points)`: x DT_FP32 (DTypeError), otype DT_INT8
/// (symmetric) or DT_UINT8 (asymmetric) (DTypeError); round(x * scale + zero_points), ties to
/// even, saturated to otype (NaN -> 0) — the formula of PyPTO's documentation (its example
/// subtracts zero_points instead). `axis` is -1 or -2 (or their positive forms; rank 1: -1 only):
/// scale (and zero_points) are DT_FP32 with x's shape minus that axis, one value per slice along
/// it (ShapeError). zero_points may be omitted.
Tensor quantize(const Tensor &x, const Tensor &scale, DataType otype, int axis,
                std::optional<Tensor> zero_points = std::nullopt, SrcLoc loc = SrcLoc::current());
/// PyPTO `dequantize(x, scale, otype, axis, zero_points)`: (float(x) + zero_points) * scale,
/// x DT_INT8/DT_INT16/DT_UINT8, otype DT_FP32 (DTypeError); scale and zero_points as quantize.
Tensor dequantize(const Tensor &x, const Tensor &scale, DataType otype, int axis,
                  std::optional<Tensor> zero_points = std::nullopt, SrcLoc loc = SrcLoc::current());

namespace experimental {

/// The three results of online_softmax / online_softmax_update.
struct OnlineSoftmax {
  Tensor exp_scores; ///< online_softmax: exp(scale * scores - column_max), DT_BF16
  Tensor max;        ///< [1, q] column maxima, DT_FP32
  Tensor sum;        ///< [1, q] column sums of the exponentials (unrounded), DT_FP32
  Tensor output;     ///< online_softmax_update: the merged unnormalized output, DT_FP32
};
/// PyPTO `experimental.online_softmax(scores, scale)` for FlashAttention blocks: scores [k, q]
/// DT_FP32 (DTypeError, ShapeError); s = scale * scores (scale rounded to fp32; ArgumentError
/// unless finite); max = amax(s, 0) and sum = sum(exp(s - max), 0), both [1, q]; exp_scores =
/// exp(s - max) rounded to DT_BF16.
OnlineSoftmax online_softmax(const Tensor &scores, double scale, SrcLoc loc = SrcLoc::current());
/// PyPTO `experimental.online_softmax_update`: merges a previous state (max, sum [1, q], output
/// [d, q]) with the current block's: m = max(pm, cm), a = exp(pm - m), c = exp(cm - m) (0 for a
/// -inf block max, so an all -inf block adds nothing), sum = a * ps + c * cs, output = a * po +
/// c * co. All DT_FP32 (DTypeError); shapes as above (ShapeError).
OnlineSoftmax online_softmax_update(const Tensor &previous_max, const Tensor &previous_sum,
                                    const Tensor &previous_output, const Tensor &current_max,
                                    const Tensor &current_sum, const Tensor &current_output,
                                    SrcLoc loc = SrcLoc::current());
/// PyPTO `experimental.transposed_batchmatmul(a, b, out_dtype)`: a [M, B, K], b [B, K, N] ->
/// [M, B, N], out[m, i, n] = sum_k a[m, i, k] b[i, k, n]; as permute + matmul (matmul.h's dtype
/// rules and cube tile) + permute. ShapeError for ranks other than 3 or mismatched B, K.
Tensor transposed_batchmatmul(const Tensor &a, const Tensor &b, DataType out_dtype,
                              SrcLoc loc = SrcLoc::current());

} // namespace experimental
} // namespace pto
