// program.h - The traced program: values (tensors, views, tokens), ops and structured loops.
// Built only by the tracing recorder (dsl/src/trace.cpp) through checking functions; read by the
// verifier, the printer, codegen and the reference interpreter.
#pragma once

#include "pto/dtype.h"
#include "pto/element.h"
#include "pto/symbolic.h"

#include <array>
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace pto::ir {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

/// Where a value's elements live.
enum class ValueKind : uint8_t {
  Param,     ///< a kernel tensor parameter (caller's memory; outputs are written in place)
  Local,     ///< an intermediate; storage in per-call scratch when codegen materializes it
  View,      ///< a window into `base` at `offsets` (no copy), as PyPTO `view`
  ShmemData, ///< the data of a shmem tensor, in its group's symmetric heap
  Token,     ///< a dependency token (DT_INT32, contents meaningless), as PyPTO `pred` tokens
};

struct Value {
  ValueId id = kNoValue;
  ValueKind kind = ValueKind::Local;
  DataType dtype = DT_FP32;
  std::vector<SymbolicScalar> shape; ///< static except dynamic input dims (SymKind::InputDim)
  std::vector<SymbolicScalar> valid; ///< run-time valid extent per dim (<= shape)
  std::string name;
  int param_index = -1;               ///< ValueKind::Param
  int shmem = -1;                     ///< ValueKind::ShmemData (and views of it): Program::shmems
  ValueId base = kNoValue;            ///< ValueKind::View: the viewed value (never itself a view)
  std::vector<SymbolicScalar> offsets; ///< ValueKind::View: offset of the window in `base`
  /// ValueKind::View: the extent per dim its window was checked to fit in its parent with (the
  /// valid_shape given to view, else the view's shape; shape_rules.h). A view of this view, or
  /// an assemble into it, must fit in this extent. Trace-time only (not printed).
  std::vector<SymbolicScalar> extent;
  int region = 0;                     ///< the loop region that defines it (0 = kernel body)
};

/// A typed scalar operand (PyPTO `Element`). `dtype` DT_BOTTOM means "the tensor's dtype".
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_int = false;
  DataType dtype = DT_BOTTOM;
};

/// `s` as an element of `dt` (its dtype set to `dt`): an integer scalar meeting a floating dtype
/// becomes the floating scalar nearest to it in `dt` (rounded once, to nearest even; not through
/// fp64 or fp32), so every consumer sees a value `dt` holds exactly and rounds it no further.
Scalar as_element(Scalar s, DataType dt);

/// `v` truncated toward zero and saturated to int64, NaN -> 0: the integer companion `i` of a
/// floating scalar the user wrote (a plain static_cast is undefined behaviour for 1e30, inf or
/// NaN). The rule of a float -> int64 store (pto/element.h).
inline int64_t trunc_saturate_int64(double v) { return element::from_double<int64_t>(v); }

/// Per-kind semantics; the facts table (op_info) gives name, arity and family.
enum class OpKind : uint8_t {
  // Elementwise unary; fp16/bf16 are computed in fp32 and rounded to nearest even.
  Neg,        ///< -x
  Abs,        ///< |x|
  Exp,        ///< e^x (SLEEF u10 in generated code)
  Log,        ///< natural log; log(0) = -inf, log(<0) = NaN
  Sqrt,       ///< square root (IEEE 754 correctly rounded)
  Rsqrt,      ///< 1 / sqrt(x)
  Reciprocal, ///< 1 / x
  Cast,       ///< convert to `to`: floats round to nearest even; float->int truncates (PyPTO default)
  // Elementwise binary, numpy broadcasting; a Scalar may stand for either operand.
  Add, Sub, Mul,
  Div,     ///< floats: IEEE division; ints: truncating, a zero divisor fails the call
  Maximum, ///< elementwise max; NaN propagates
  Minimum, ///< elementwise min; NaN propagates
  // Reductions over one axis (`axis`, `keepdim`); fp16/bf16 accumulate in fp32.
  Sum,
  Amax, ///< NaN propagates
  Amin, ///< NaN propagates
  Prod, ///< product; ints wrap; an empty valid extent gives 1
  // Reductions lowered on their own (reduce_ops.h), over `axis` with `keepdim`.
  Argmax, ///< -> DT_INT32: first index of the max; a NaN wins (first NaN); empty -> -1
  Argmin, ///< -> DT_INT32: first index of the min; a NaN wins (first NaN); empty -> -1
  Cumsum, ///< inclusive prefix sum along `axis`; int inputs give DT_INT64
  Cumprod, ///< inclusive prefix product along `axis`; int inputs give DT_INT64
  // Elementwise unary of the op catalogue (ops.h documents dtypes and edge values). Floating
  // math runs in fp32 for fp16/bf16 (SLEEF u10 vector functions in generated code).
  Exp2, Expm1, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh,
  Acosh, Atanh, Erf, Erfc, Cbrt,
  Sigmoid,    ///< 1 / (1 + e^-x)
  Softplus,   ///< log1p(e^x), x for x > 20 (PyTorch beta = 1, threshold = 20)
  Softsign,   ///< x / (1 + |x|)
  Elu,        ///< x > 0 ? x : scalar * expm1(x)
  Gelu,       ///< x/2 * erfc(-x/sqrt 2) (= x/2 * (1 + erf(x/sqrt 2)))
  GeluTanh,   ///< x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3) (= PyTorch tanh form)
  Lrelu,      ///< x >= 0 ? x : scalar * x
  Relu,       ///< max(x, 0); NaN propagates
  Relu6,      ///< min(max(x, 0), 6); NaN propagates
  Sign,       ///< 1, -1, or x itself for +-0 and NaN
  Signbit,    ///< -> DT_BOOL: the sign bit (true for -0)
  Ceil, Floor, Trunc,
  Round,      ///< to nearest integer, ties to even
  IsFinite, IsNan, IsInf, ///< -> DT_BOOL
  LogicalNot, ///< -> DT_BOOL: x == 0
  BitwiseNot, ///< ~x (bool: !x)
  Square,     ///< x * x
  Clone,      ///< copy
  // Elementwise binary of the op catalogue, numpy broadcasting, scalar forms.
  Pow, Hypot, Atan2, Copysign, ///< Pow also on ints: square-and-multiply, wrapping
  Gcd,       ///< ints: greatest common divisor of the magnitudes (>= 0; wraps for INT_MIN)
  Fmod,      ///< remainder with the sign of the dividend (C fmod)
  Remainder, ///< remainder with the sign of the divisor (Python %, PyTorch remainder)
  FloorDiv,  ///< floor(a / b) (PyTorch floor_divide); ints: a zero divisor fails the call
  LogicalAnd, LogicalOr, LogicalXor, ///< -> DT_BOOL, operands are true when != 0
  BitwiseAnd, BitwiseOr, BitwiseXor,
  ShiftLeft,  ///< a << b; 0 when b < 0 or b >= bits
  ShiftRight, ///< arithmetic (logical for unsigned); sign fill when b < 0 or b >= bits
  Eq, Ne, Lt, Le, Gt, Ge, ///< -> DT_BOOL; IEEE: any comparison with NaN is false but ne
  // Selection: inputs (cond DT_BOOL, a, b), all broadcast.
  Where, ///< cond ? a : b
  // Creation and movement.
  Full,     ///< every element of the output = `scalar` (cast to the output dtype)
  // Creation and movement lowered on their own (shape_ops.h). Movement ops read only their
  // inputs' valid regions: a source element outside it reads as 0.
  Arange,  ///< out[i] = start + i * step: ints from `start`/`step`, floats from `reals` (start, step)
  Uniform, ///< Philox4x32-10 (`rng_key`, `rng_counter`) -> reals[0] + (reals[1] - reals[0]) * u
  Normal,  ///< Philox4x32-10 + Box-Muller -> reals[0] + reals[1] * z
  Reshape, ///< out[o] = in[unravel(ravel(o))] over the full (not valid) shapes, row-major
  Expand,  ///< materialized broadcast: size-1 input dims are read at 0 (right-aligned)
  Permute, ///< out[o] = in[i] with i[perm[d]] = o[d]
  Concat,  ///< inputs placed along `axis` at the running sum of their shapes
  Tile,    ///< repeat: out[o] = in[o mod in.shape]
  Pad,     ///< out[o] = in[o] inside the input's valid region, `scalar` elsewhere
  Tril,    ///< out[.., r, c] = c - r <= diagonal ? in : 0
  Triu,    ///< out[.., r, c] = c - r >= diagonal ? in : 0
  Assemble, ///< writes inputs[0] into outputs[0]'s window (a View value) — PyPTO `assemble`
  Matmul,   ///< inputs (a, b[, bias]): out = relu?(op(a) @ op(b) + bias), batch dims broadcast;
            ///< fp32/int32 accumulation (matmul.h); blocked by the op's cube tile
  // Distributed (runtime calls); each returns a Token in outputs[0].
  ShmemPut,       ///< inputs[0] -> shmem view `dst` on PE `pe`, `atomic` SET/ADD
  ShmemGet,       ///< shmem view on PE `pe` -> new local outputs[1] (converted to its dtype)
  ShmemSignal,    ///< per tile of the view: signal slot (row `pe`) on PE `target_pe` (or all)
  ShmemWaitUntil, ///< per tile of the view: block until own slot (row `pe`) `cmp` `signal`
  ShmemClearData, ///< zero a view of the local data window
  Nop,            ///< joins preds into one token, as PyPTO `experimental.nop`
  ShmemClearSignal, ///< zero this PE's whole signal array of a shmem tensor
  // Library ops (OpFamily::Library): run by a precompiled routine (codegen/rtlib/xops*.cpp) that
  // the JIT calls and the interpreter calls too. Inputs, then outputs; attributes in `axis`,
  // `keepdim`, `ints`, `scalar`, `reals` (meaning per kind, documented at the DSL function).
  // Indexing (index_ops.h); index tensors are DT_INT32 / DT_INT64.
  Gather,       ///< (x, index) -> out[..i..] = x[..index[..i..]..] along `axis` (torch.gather)
  IndexSelect,  ///< (x, index of rank r) -> x with dim `axis` replaced by index's r dims, picked
                ///< by index (numpy take); ints {} = index_select, {1[, padding_idx]} = embedding
                ///< (ids equal to padding_idx give zeros)
  Scatter,      ///< (x, index[, src]) -> copy of x with src (or `scalar`) scattered along `axis`;
                ///< ints[0] = reduce: 0 NONE, 1 ADD, 2 MULTIPLY
  IndexAdd,     ///< (x, index 1-D, src) -> copy of x plus `scalar` (alpha) * src at index along
                ///< `axis`
  IndexPut,     ///< (x, i_0..i_{k-1} 1-D[, values]) -> copy of x with values (or `scalar`) at
                ///< the tuple indices; ints[0] = accumulate, ints[1] = k
  OneHot,       ///< (index) -> DT_INT64 out[..., c] = index[...] == c; ints[0] = num_classes
  SegmentReduce, ///< (data, segment_ids) -> unsorted_segment_{sum,min,max,prod}; ints[0] = mode
                 ///< (0 sum, 1 min, 2 max, 3 prod), ints[1] = num_segments
  Sort,         ///< stable sort along `axis` (NaN largest, -0 == +0; sort_ops.h); inputs (x);
                ///< outputs (values, indices) or (indices) for argsort; ints = [descending]
  Topk,         ///< first k of each row in sort order along `axis`; inputs (x); outputs
                ///< (values, indices); ints = [k, largest, sorted]
  Unique,       ///< distinct values of the flattened valid region; inputs (x); outputs
                ///< (values [N], count [1] DT_INT32[, inverse][, counts [N]]);
                ///< ints = [sorted, return_inverse, return_counts]
  BesselI0e,    ///< exp(-|x|) I0(x), elementwise; inputs (x); outputs (y); no attributes
  BesselI1e,    ///< exp(-|x|) I1(x), elementwise; inputs (x); outputs (y); no attributes
  // Run-time requirements.
  Check, ///< fails the call with the error `check_error` names (ShapeError by default) and
         ///< `message` (its `{}` replaced by `args`, evaluated; format_check) unless `holds` is
         ///< non-zero; traced by the shape rules (shape_rules.h) for the parts of a valid shape,
         ///< a window or a PE number known only at run time. Named `label` (the user's op) in
         ///< messages. No inputs or outputs.
  // Structured control flow.
  Paths, ///< PyPTO path enumeration (pto::cond): a loop body's only op; the guards (disjoint
         ///< conjunctions of cond outcomes) are evaluated at body entry, before any path runs,
         ///< and the first of `paths` whose guard is non-zero runs
  Loop, ///< for (idx = start; idx < stop; idx += step) body — traced once, not unrolled
};

/// Families used by codegen and the verifier. Standalone ops are never fused: codegen lowers each
/// as scalar loops over its output's valid region (its inputs and output get storage).
/// Library ops are run by precompiled routines (codegen/rtlib/xops.h) in both the JIT and the
/// interpreter; like Standalone ops they are never fused. Check ops touch no memory.
enum class OpFamily : uint8_t { Unary, Binary, Select, Reduce, Create, Move, Shmem, Control, Matmul,
                                Standalone, Library, Check };

struct OpInfo {
  const char *name; ///< as the user spells it (`add`, `shmem_put`)
  OpFamily family;
};
/// The per-kind facts table.
const OpInfo &op_info(OpKind k);

/// The pto::Error subclass a failing Check op raises: ShapeError for the valid-shape and
/// window rules of tensors, DistributedError for shmem windows and PE numbers (distributed.h).
enum class CheckError : uint8_t { Shape, Distributed };

/// The tile shape captured from set_vec_tile_shapes when the op was created.
struct TileShape {
  std::vector<int64_t> vec;
  /// Matmul only, from set_cube_tile_shapes: [mL0, mL1, kL0, kAL1, kBL1, nL0, nL1].
  std::vector<int64_t> cube = {};
  bool split_k = false; ///< set_cube_tile_shapes(..., {.enable_split_k})
  bool operator==(const TileShape &) const = default;
};

/// Atomic modes of puts and signals: as PyPTO `AtomicType`.
enum class Atomic : uint8_t { Set, Add };
/// Comparisons of shmem_wait_until: as PyPTO `OpType`.
enum class Cmp : uint8_t { EQ, NE, LT, LE, GT, GE };

/// The signal-slot geometry of a signal/wait op (reference §6.3), fixed at trace time.
struct SlotGeometry {
  std::vector<int64_t> data_shape; ///< R
  std::vector<int64_t> view_shape; ///< V
  std::vector<SymbolicScalar> view_offsets; ///< O
  std::vector<int64_t> tile;       ///< T (the op's vec tile, rank = data rank)
  int64_t view_tile_num = 0;       ///< prod ceil(V/T)
  int64_t total_tile_num = 0;      ///< view_tile_num * prod(R/V)
};

struct Op {
  OpKind kind = OpKind::Add;
  std::vector<ValueId> inputs;  ///< data operands, in PyPTO argument order
  std::vector<ValueId> preds;   ///< ordering-only tokens (`pred`)
  std::vector<ValueId> outputs; ///< results (a Token first for shmem ops)
  TileShape tile;               ///< captured at trace time
  std::source_location where;   ///< the user's call site
  /// The public op the user called when this op is part of a composite (pto::UserOpScope), for
  /// run-time messages; nullptr otherwise (the op's own name, op_info, is the user's).
  const char *user_op = nullptr;
  // Attributes (meaning per kind).
  std::optional<Scalar> scalar; ///< tensor-scalar forms, Full's fill value
  bool scalar_first = false;    ///< the scalar is the left operand (`2 - x`)
  int axis = -1;                ///< reductions: normalized to [0, rank)
  bool keepdim = false;
  DataType to = DT_BOTTOM;      ///< Cast target
  int shmem = -1;               ///< shmem ops: Program::shmems index
  std::vector<int64_t> view_shape; ///< shmem ops: the view of the shmem data
  std::vector<SymbolicScalar> view_offsets;
  std::vector<SymbolicScalar> view_valid;
  SymbolicScalar pe;           ///< put: dst_pe; get: src_pe; signal/wait: src_pe (slot row)
  SymbolicScalar target_pe;    ///< signal: target PE
  bool target_all = false;     ///< signal: every PE of the group (shmem_signal_all)
  Atomic atomic = Atomic::Set; ///< put_op / sig_op
  Cmp cmp = Cmp::EQ;
  int32_t signal = 0;          ///< signal value / wait cmp_value
  bool clear = false;          ///< wait: clear_signal
  std::optional<SlotGeometry> slots; ///< signal/wait
  bool a_trans = false, b_trans = false, relu = false; ///< Matmul
  // Shape, creation and reduction ops of shape_ops.h / reduce_ops.h.
  std::vector<int> perm;       ///< Permute: output dim d reads input dim perm[d]
  SymbolicScalar diagonal;     ///< Tril / Triu
  std::vector<double> reals;   ///< Arange (fp): start, step; Uniform: low, high; Normal: mean, std
  std::vector<int64_t> ints;   ///< integer attributes of Library ops (meaning per kind); printed
  uint64_t rng_key = 0, rng_counter = 0; ///< Uniform / Normal (Philox4x32-10)
  // Check.
  std::string label;            ///< the user's op (`view`, `full`), named in the call site
  SymbolicScalar holds;         ///< the requirement: non-zero when it is met
  std::string message;          ///< the error detail; format_check fills its `{}` with `args`
  std::vector<SymbolicScalar> args;
  CheckError check_error = CheckError::Shape; ///< the error class of a failing check
  // Loop.
  int loop_id = -1;            ///< SymKind::LoopIndex id of the index symbol
  SymbolicScalar start, stop, step;
  std::vector<Op> body;
  // Paths: alternatives in order, each a guard (run-time 0/1) and its ops; `body` unused.
  struct Path {
    SymbolicScalar guard;
    std::vector<Op> body;
  };
  std::vector<Path> paths;
};

/// A shmem tensor: data in the group's symmetric heap, plus its signal slot array.
struct ShmemInfo {
  std::string group;
  int group_index = 0;
  int n_pes = 0;
  DataType dtype = DT_FP32;
  std::vector<int64_t> shape; ///< empty for create_shmem_signal (signal only)
  ValueId data = kNoValue;    ///< ValueKind::ShmemData value (kNoValue for signal-only)
  int64_t data_offset_bytes = 0;   ///< in the group's heap (set by layout_shmem)
  int64_t data_bytes = 0;          ///< rounded up to 512 B, as PyPTO
  int64_t signal_offset_bytes = 0; ///< in the group's heap
  int64_t max_tile_num = 1;        ///< the largest total_tile_num of its signal ops
  /// The slot geometry every signal/wait on this tensor must share (reference §6.3: a signal and
  /// its wait address the same slot only with the same view shape and tile).
  std::vector<int64_t> slot_view, slot_tile;
  std::string slot_where; ///< "file:line" of the first signal/wait, for messages
  int64_t signal_bytes = 0;        ///< n_pes * 8 * max_tile_num int32, rounded up to 512 B
  std::string where;               ///< "file:line" of its create_shmem_tensor/_signal
};

struct Group {
  std::string name;
  int n_pes = 0;
  int64_t heap_bytes = 0;   ///< set by layout_shmem
  uint64_t layout_hash = 0; ///< set by layout_shmem: the group's shmem tensors (dtype, shape,
                            ///< offsets); every PE of the group must present the same one
  std::string where;        ///< "file:line" of the first use, for run-time messages
  /// Set by layout_shmem: what layout_hash hashes, readable, one shmem tensor per line as
  /// "what\twhere" (pto_rt_kernel_enter's group_layout).
  std::string layout;
};

/// The name of the group that spans every PE running the kernel (always exists).
inline constexpr const char *kWorldGroup = "world";

/// A kernel parameter that is a compile-time constant (printed, part of the cache key).
struct ConstParam {
  std::string repr;
};

struct Program {
  std::string name;
  uint64_t trace_id = 0; ///< unique per trace in the process (tensors remember it)
  std::vector<Value> values;
  std::vector<Op> body;
  std::vector<ValueId> params;       ///< tensor parameters, in order
  std::vector<ConstParam> constants; ///< non-tensor parameters, in order
  std::vector<ShmemInfo> shmems;
  std::vector<Group> groups;
  int n_loops = 0;

  const Value &value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  Value &value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  /// The value that owns the storage of `id` (follows View::base).
  const Value &root(ValueId id) const;
};

/// Assigns every shmem tensor its data and signal offsets in its group's heap and sets each
/// group's heap size. Idempotent. Called by the recorder when tracing ends. The sizes were
/// checked while tracing (group_heap_bytes); throws InternalError if they were not.
void layout_shmem(Program &p);

/// The bytes group `group` of `p` needs on each PE for the shmem tensors traced so far (data
/// rounded up to 512 B, signal arrays of n_pes * max_tile_num 32-byte slots, as layout_shmem
/// lays them out), or nullopt when that exceeds kMaxSymmetricHeapBytes (pto/size_math.h).
std::optional<int64_t> group_heap_bytes(const Program &p, int group);
/// The op as the user spelled it, for call sites and messages: a Check op's label, else the
/// kind's name (op_info).
const char *site_name(const Op &op);

/// A Check op's message with each `{}` replaced by the next of `args` and each `{+}` by the sum
/// of the next two, computed exactly (in 128 bits, so the end of a window near INT64_MAX never
/// prints wrapped; `a + b` when either is not a decimal integer). `{{` and `}}` stand for `{`
/// and `}`; missing args print as `?`. The trace-time error and the run-time one of a
/// requirement are both made by this function, so they read the same.
std::string format_check(const std::string &message, const std::vector<std::string> &args);
/// `text` with `{` and `}` doubled, for user-given names inside a Check message.
std::string escape_check(const std::string &text);

/// Row-major element strides of `shape` (last dim stride 1). Dims may be symbolic.
std::vector<SymbolicScalar> row_major_strides(const std::vector<SymbolicScalar> &shape);

} // namespace pto::ir
