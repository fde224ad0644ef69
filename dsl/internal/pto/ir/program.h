// program.h - The traced program: values (tensors, views, tokens), ops and structured loops.
// Built only by the tracing recorder (dsl/src/trace.cpp) through checking functions; read by the
// verifier, the printer, codegen and the reference interpreter.
#pragma once

#include "pto/dtype.h"
#include "pto/element.h"
#include "pto/error.h"
#include "pto/symbolic.h"
#include "pto/value.h"

#include <array>
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace pto::ir {

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
  int param_index = -1;                ///< ValueKind::Param
  int shmem = -1;                      ///< ValueKind::ShmemData (and views of it): Program::shmems
  ValueId base = kNoValue;             ///< ValueKind::View: the viewed value (never itself a view)
  std::vector<SymbolicScalar> offsets; ///< ValueKind::View: offset of the window in `base`
  /// ValueKind::View: the extent per dim its window was checked to fit in its parent with (the
  /// valid_shape given to view, else the view's shape; shape_rules.h). A view of this view, or
  /// an assemble into it, must fit in this extent. Trace-time only (not printed).
  std::vector<SymbolicScalar> extent;
  int region = 0; ///< the loop region that defines it (0 = kernel body)
};

/// `s` as an element of `dt` (its dtype set to `dt`): an integer scalar meeting a floating dtype
/// becomes the floating scalar nearest to it in `dt` (rounded once, to nearest even; not through
/// fp64 or fp32), so every consumer sees a value `dt` holds exactly and rounds it no further.
Scalar as_element(Scalar s, DataType dt);

/// Families used by the front-ends, codegen and the verifier: each executor dispatches on the
/// family first (an exhaustive switch), then on the family's own kind enum (UnaryKind, ...).
/// Standalone ops are never fused: codegen lowers each as scalar loops over its output's valid
/// region (its inputs and output get storage). Library ops are run by precompiled routines
/// (codegen/rtlib/xops.h) in both the JIT and the interpreter; like Standalone ops they are never
/// fused. Check ops touch no memory.
enum class OpFamily : uint8_t {
  Unary,
  Binary,
  Select,
  Reduce,
  Create,
  Move,
  Shmem,
  Control,
  Matmul,
  Standalone,
  Library,
  Check
};

/// The op kinds, in the order of op_kinds.def (each row there states the kind's semantics).
enum class OpKind : uint8_t {
#define PTO_OP(family, kind, ...) kind,
#include "pto/ir/op_kinds.def"
};

// The kinds of one family, as their own enums, so that a switch over a family's kinds can be
// exhaustive (no `default:`; -Wswitch names every switch a new kind must be added to). Each
// enumerator has its OpKind's value; kind_as converts.
enum class UnaryKind : uint8_t {
#define PTO_UNARY(kind, ...) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};
enum class BinaryKind : uint8_t {
#define PTO_BINARY(kind, ...) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};
enum class ReduceKind : uint8_t {
#define PTO_REDUCE(kind, name) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};
enum class StandaloneKind : uint8_t {
#define PTO_STANDALONE(kind, name) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};
enum class LibraryKind : uint8_t {
#define PTO_LIBRARY(kind, name) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};
enum class ShmemKind : uint8_t {
#define PTO_SHMEM(kind, name) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};
enum class ControlKind : uint8_t {
#define PTO_CONTROL(kind, name) kind = static_cast<uint8_t>(OpKind::kind),
#include "pto/ir/op_kinds.def"
};

/// The operand dtypes an elementwise op accepts (the front-end throws DTypeError otherwise).
enum class Accepts : uint8_t {
  Arith,   ///< ints and floats (not DT_BOOL)
  Signed,  ///< signed ints and floats (not DT_BOOL, not DT_UINT8)
  Float,   ///< floats only
  Any,     ///< every dtype, DT_BOOL included
  IntBool, ///< ints and DT_BOOL
  Int,     ///< ints only
  Own,     ///< not elementwise: the op's front-end checks its dtypes itself
};
/// The result dtype of an elementwise op.
enum class ResultType : uint8_t {
  Same, ///< the operands' dtype
  Bool, ///< DT_BOOL
  To,   ///< the op's `to` (Cast)
  Own,  ///< not elementwise: the op's front-end sets it
};

/// The facts of one op kind: one row of op_kinds.def.
struct OpInfo {
  OpKind kind;
  const char *name; ///< as the user spells it (`add`, `shmem_put`)
  OpFamily family;
  Accepts accepts;
  ResultType result;
  int arity;           ///< data inputs (a Binary op with a Scalar operand has one); -1: varies
  const char *vec_fn;  ///< SLEEF function that computes it alone in generated code, or nullptr
  const char *vec_acc; ///< its accuracy suffix ("u10", "u05", "u15"); nullptr with vec_fn
};

/// The data inputs of an op of `f` (-1: they vary by kind, see the kind's front-end).
constexpr int family_arity(OpFamily f) {
  switch (f) {
  case OpFamily::Unary:
    return 1;
  case OpFamily::Binary:
    return 2;
  case OpFamily::Select:
    return 3;
  case OpFamily::Reduce:
    return 1;
  case OpFamily::Create:
    return 0;
  case OpFamily::Move:
    return 1;
  case OpFamily::Check:
    return 0;
  case OpFamily::Control:
    return 0;
  case OpFamily::Shmem:
  case OpFamily::Matmul:
  case OpFamily::Standalone:
  case OpFamily::Library:
    return -1;
  }
  return -1;
}

/// The per-kind facts table, indexed by OpKind (generated from op_kinds.def).
inline constexpr OpInfo kOpInfo[] = {
#define PTO_OP(family, kind, name, accepts, result, vec_fn, vec_acc, api)                          \
  {OpKind::kind,                                                                                   \
   #name,                                                                                          \
   OpFamily::family,                                                                               \
   Accepts::accepts,                                                                               \
   ResultType::result,                                                                             \
   family_arity(OpFamily::family),                                                                 \
   vec_fn,                                                                                         \
   vec_acc},
#include "pto/ir/op_kinds.def"
};
inline constexpr size_t kNumOpKinds = sizeof(kOpInfo) / sizeof(kOpInfo[0]);

namespace detail {
constexpr bool op_table_in_order() {
  for (size_t i = 0; i < kNumOpKinds; ++i)
    if (static_cast<size_t>(kOpInfo[i].kind) != i)
      return false;
  return true;
}
constexpr bool op_table_consistent() {
  for (const OpInfo &r : kOpInfo) {
    const bool elementwise = r.family == OpFamily::Unary || r.family == OpFamily::Binary;
    if (elementwise != (r.accepts != Accepts::Own) || elementwise != (r.result != ResultType::Own))
      return false; // dtype facts exactly for the elementwise rows
    if ((r.vec_fn == nullptr) != (r.vec_acc == nullptr) || (r.vec_fn && !elementwise))
      return false;
  }
  return true;
}
} // namespace detail
static_assert(detail::op_table_in_order(), "kOpInfo row i must describe OpKind i");
static_assert(kNumOpKinds == static_cast<size_t>(OpKind::Loop) + 1,
              "Loop must stay the last kind (op_kinds.def)");
static_assert(detail::op_table_consistent(),
              "op_kinds.def: accepts/result are set exactly for Unary and Binary rows, and a "
              "vector function comes with its accuracy");

/// The facts of kind `k`.
constexpr const OpInfo &op_info(OpKind k) { return kOpInfo[static_cast<size_t>(k)]; }

/// How many kinds family `f` has (a switch over a family of one kind may route by family alone;
/// it static_asserts this is 1).
constexpr int kinds_in(OpFamily f) {
  int n = 0;
  for (const OpInfo &r : kOpInfo)
    n += r.family == f ? 1 : 0;
  return n;
}

/// The family each per-family kind enum lists (a trait of those enums only).
template <class Sub> struct FamilyOf;
#define PTO_FAMILY_OF(Sub, F)                                                                      \
  template <> struct FamilyOf<Sub> {                                                               \
    static constexpr OpFamily value = OpFamily::F;                                                 \
  };
PTO_FAMILY_OF(UnaryKind, Unary)
PTO_FAMILY_OF(BinaryKind, Binary)
PTO_FAMILY_OF(ReduceKind, Reduce)
PTO_FAMILY_OF(StandaloneKind, Standalone)
PTO_FAMILY_OF(LibraryKind, Library)
PTO_FAMILY_OF(ShmemKind, Shmem)
PTO_FAMILY_OF(ControlKind, Control)
#undef PTO_FAMILY_OF

/// The facts of a kind given in its family's enum.
template <class Sub>
  requires requires { FamilyOf<Sub>::value; }
constexpr const OpInfo &op_info(Sub k) {
  return op_info(static_cast<OpKind>(k));
}

/// `k` as a kind of its family's enum `Sub` (UnaryKind, ...), for an exhaustive switch. Throws
/// InternalError (a ptojit bug) when `k` is of another family.
template <class Sub> Sub kind_as(OpKind k) {
  if (op_info(k).family != FamilyOf<Sub>::value)
    throw InternalError("<ir>", op_info(k).name, "op kind used as one of another family");
  return static_cast<Sub>(k);
}

/// The pto::Error subclass a failing Check op raises: ShapeError for the valid-shape and
/// window rules of tensors, DistributedError for shmem windows and PE numbers (distributed.h).
/// Agreed: a DistributedError that every PE of the group raises alike (a check of data every PE
/// has exchanged, dsl/src/collectives.cpp): the failing PE does not abort the world, so the
/// others reach the same check instead of being released with a secondary error.
enum class CheckError : uint8_t { Shape, Distributed, Agreed };

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
  std::vector<int64_t> data_shape;          ///< R
  std::vector<int64_t> view_shape;          ///< V
  std::vector<SymbolicScalar> view_offsets; ///< O
  std::vector<int64_t> tile;                ///< T (the op's vec tile, rank = data rank)
  int64_t view_tile_num = 0;                ///< prod ceil(V/T)
  int64_t total_tile_num = 0;               ///< view_tile_num * prod(R/V)
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
  DataType to = DT_BOTTOM;         ///< Cast target
  int shmem = -1;                  ///< shmem ops: Program::shmems index
  std::vector<int64_t> view_shape; ///< shmem ops: the view of the shmem data
  std::vector<SymbolicScalar> view_offsets;
  std::vector<SymbolicScalar> view_valid;
  SymbolicScalar pe;           ///< put: dst_pe; get: src_pe; signal/wait: src_pe (slot row)
  SymbolicScalar target_pe;    ///< signal: target PE
  bool target_all = false;     ///< signal: every PE of the group (shmem_signal_all)
  Atomic atomic = Atomic::Set; ///< put_op / sig_op
  Cmp cmp = Cmp::EQ;
  int32_t signal = 0; ///< signal value / wait cmp_value
  bool clear = false; ///< wait: clear_signal
  bool test = false;  ///< ShmemWaitUntilAny/Some: never block (shmem_test_any/some)
  /// get: the result may be the heap window itself instead of a copy (the direct path of
  /// lower_shmem.cpp, where the heap is addressable; the interpreter copies). Set only where the
  /// program provably leaves the window unchanged while the result is live: the collectives'
  /// reads of their own staging buffers after the wait (borrowed_get, dsl/src/collectives.cpp).
  bool borrow = false;
  std::optional<SlotGeometry> slots; ///< signal/wait (wait sets: every element's)
  // The rest of the OpenSHMEM model (distributed.h).
  Atomic sig_atomic =
      Atomic::Set; ///< put_signal: sig_op (`atomic` is the put's, `target_pe` the row)
  /// Wait sets (shmem_wait_until_all/any/some, shmem_test): per element, the view offsets of its
  /// window and its slot row; every element is a window of `shmem` with `slots`' view and tile.
  std::vector<std::vector<SymbolicScalar>> set_offsets;
  std::vector<SymbolicScalar> set_rows;
  /// AMOs: the operand and compare_swap's comparand as integers (run-time values allowed), or a
  /// floating literal operand (`amo_is_real`, `amo_real`). The word is element `view_offsets`
  /// of the data, or (with `slots`) the int32 signal slot of set_offsets[0], set_rows[0].
  SymbolicScalar amo_value, amo_cond;
  double amo_real = 0;
  bool amo_is_real = false;
  bool a_trans = false, b_trans = false, relu = false; ///< Matmul
  // Shape, creation and reduction ops of shape_ops.h / reduce_ops.h.
  std::vector<int> perm;     ///< Permute: output dim d reads input dim perm[d]
  SymbolicScalar diagonal;   ///< Tril / Triu
  std::vector<double> reals; ///< Arange (fp): start, step; Uniform: low, high; Normal: mean, std
  std::vector<int64_t> ints; ///< integer attributes of Library ops (meaning per kind); printed
  uint64_t rng_key = 0, rng_counter = 0; ///< Uniform / Normal (Philox4x32-10)
  // Check.
  std::string label;    ///< the user's op (`view`, `full`), named in the call site
  SymbolicScalar holds; ///< the requirement: non-zero when it is met
  std::string message;  ///< the error detail; format_check fills its `{}` with `args`
  std::vector<SymbolicScalar> args;
  CheckError check_error = CheckError::Shape; ///< the error class of a failing check
  // Loop.
  int loop_id = -1; ///< SymKind::LoopIndex id of the index symbol
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
  std::vector<int64_t> shape;      ///< empty for create_shmem_signal (signal only)
  ValueId data = kNoValue;         ///< ValueKind::ShmemData value (kNoValue for signal-only)
  int64_t data_offset_bytes = 0;   ///< in the group's heap (set by layout_shmem)
  int64_t data_bytes = 0;          ///< rounded up to 512 B, as PyPTO
  int64_t signal_offset_bytes = 0; ///< in the group's heap
  int64_t max_tile_num = 1;        ///< the largest total_tile_num of its signal ops
  /// The slot geometry every signal/wait on this tensor must share (reference §6.3: a signal and
  /// its wait address the same slot only with the same view shape and tile).
  std::vector<int64_t> slot_view, slot_tile;
  std::string slot_where;   ///< "file:line" of the first signal/wait, for messages
  int64_t signal_bytes = 0; ///< n_pes * 8 * max_tile_num int32, rounded up to 512 B
  std::string where;        ///< "file:line" of its create_shmem_tensor/_signal
  /// The data is zero when the kernel starts (PyPTO's create_shmem_tensor). False for buffers
  /// the program provably writes before it reads them (the collectives' SET-put staging,
  /// mark_overwritten in dsl/src/collectives.cpp): layout_shmem puts their data past the
  /// group's zero_bytes, which kernel entry leaves as it was. Signals are always zeroed.
  bool zero_data = true;
};

struct Group {
  std::string name;
  int n_pes = 0;
  int64_t heap_bytes = 0; ///< set by layout_shmem
  /// Set by layout_shmem: kernel entry zeroes bytes [0, zero_bytes) of the heap (every signal
  /// array and the data of shmem tensors with zero_data); the rest holds only data the program
  /// writes before reading.
  int64_t zero_bytes = 0;
  uint64_t layout_hash = 0; ///< set by layout_shmem: the group's shmem tensors (dtype, shape,
                            ///< offsets); every PE of the group must present the same one
  std::string where;        ///< "file:line" of the first use, for run-time messages
  /// Set by layout_shmem: what layout_hash hashes, readable, one shmem tensor per line as
  /// "what\twhere" (pto_rt_kernel_enter's group_layout), then one line per agreement.
  std::string layout;
  /// What else every PE of the group must pass alike, known at trace time, one "what\twhere"
  /// line each: a collective's concrete valid shape ("allreduce of valid shape [8, 6]\tf.cpp:9",
  /// dsl/src/collectives.cpp). layout_shmem hashes them into layout_hash and appends them to
  /// layout, so kernel entry reports PEs that differ (symbolic valid shapes are checked at run
  /// time by the collective itself).
  std::vector<std::string> agreements = {};
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
  /// Where each Tensor::at call of the trace is (SymExpr::read indexes it): a run-time index
  /// error of an element read names that line and the op "at".
  std::vector<std::source_location> element_reads;
  /// pto::parallel's record of the trace, one line per sharded op (its inputs' and output's
  /// layouts) and per collective it inserted (reason and bytes): the PTO_DUMP=sharding stage.
  /// Not part of the printed IR (the cache key): the collectives themselves are in the IR.
  std::vector<std::string> sharding;

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

/// `*op.scalar` of an op whose kind carries one (the tensor-scalar forms, Full, Pad). Throws
/// InternalError, naming the op, when it has none (a ptojit bug).
const Scalar &scalar_of(const Op &op);
/// `*op.slots` of a signal or wait op. Throws InternalError when it has none (a ptojit bug).
const SlotGeometry &slots_of(const Op &op);

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
