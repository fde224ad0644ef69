// distributed.h - pto::distributed: shmem tensors, puts/gets, signals, waits and barriers, as
// PyPTO `pypto.distributed` (reference §6). Every op takes `pred` (tensors it must run after)
// and returns a dependency token (a DT_INT32 tensor whose contents are meaningless).
//
// Runtime terms are OpenSHMEM's: a PE is one processing element; a group's shmem tensors live in
// its symmetric heap, at the same offset on every PE.
//
// Checks (as the common rules of ops.h): windows follow ops.h's window rule per dim
// (0 <= offset, offset + extent <= the size of the window they lie in) and PE numbers must lie in
// [0, n_pes) of the group. What is concrete is checked at trace time; what is known only at run
// time (loop indices, PE numbers, tensor elements) by the kernel call, at the op that takes the
// value and before it touches memory (a check reading a tensor element where it was traced, the
// others before any op of their loop body or kernel). Either way it is the same
// DistributedError at the user's line naming that op, in the JIT and the interpreter, e.g.
// `shmem_put: window [3, 5) of dim 1 exceeds the size 4 of the shmem view [2, 4]` or
// `shmem_put: dst_pe 2 is out of range [0, 2) for group 'world'`.
#pragma once

#include "pto/static_dims.h"
#include "pto/tensor.h"

#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace pto::distributed {

using SrcLoc = std::source_location;

/// Put and signal modes, as PyPTO `AtomicType`: SET overwrites; ADD accumulates atomically.
enum class AtomicType { SET, ADD };
/// Wait comparisons, as PyPTO `OpType`. PyPTO's shmem_wait_until accepts only EQ; so do we.
enum class OpType { EQ, NE, LT, LE, GT, GE };

/// A symmetric tensor: `data` in the group's heap on every PE plus its signal slot array
/// (reference §6.1). A view (shmem_view) keeps the tensor and narrows the window.
struct ShmemTensor {
  int index = -1; ///< in the traced program's shmem table
  std::string group;
  int n_pes = 0;
  Tensor data;                     ///< empty for create_shmem_signal
  std::vector<int64_t> view_shape; ///< the window (the whole data by default)
  std::vector<SymbolicScalar> view_offsets;
  std::vector<SymbolicScalar> view_valid;
};

/// Allocates a symmetric tensor of `shape` and `dtype` (zeroed when the kernel starts) plus its
/// signals, as PyPTO `create_shmem_tensor`. Rank 2-4; dims > 0. `group` is "world" (every PE
/// running the kernel) or a group made with World::create_group (1-127 bytes; any other name is
/// a DistributedError), and `n_pes` must be its size (DistributedError). Data and signals are
/// zero when the kernel starts. ShapeError when the data would need more than 2^62 bytes, or
/// when it and the group's other shmem tensors and signal arrays exceed the symmetric heap's
/// limit of kMaxSymmetricHeapBytes (2^40, pto/size_math.h) per PE; the message gives the limit
/// and what was asked. Signal and wait ops check their signal arrays against the same limit.
/// Dtypes: int8, int16, int32, int64, fp16, bf16, fp32, double. Created in a pto::loop body that
/// may run more than once (a trip count above 1 or run-time bounds), it is fresh (zero data and
/// signals) in every iteration, as in PyPTO: the body runs reference §7.6's reuse protocol on it
/// here (a barrier of `group`, clear this PE's data and signals, a barrier), so every PE of the
/// group must reach this line in every iteration (as every collective). docs/distributed.md.
ShmemTensor create_shmem_tensor(const std::string &group, int n_pes, DataType dtype,
                                const std::vector<int64_t> &shape, SrcLoc loc = SrcLoc::current());
/// A signal-only object (no data; signal shape [n_pes, 1, 8]) for barriers, as PyPTO
/// `create_shmem_signal`. Fresh in every iteration of a loop body as create_shmem_tensor.
ShmemTensor create_shmem_signal(const std::string &group, int n_pes,
                                SrcLoc loc = SrcLoc::current());

struct ShmemViewOptions {
  std::optional<std::vector<SymbolicScalar>> valid_shape = {};
};
/// A sub-window of the data (signals are viewed alike), as PyPTO `shmem_view`; `offsets` are
/// relative to `src`'s window. Rank must match and dims be > 0 (ShapeError). The whole window
/// `shape` at `offsets` must lie in `src`'s window: the data, or the view `src` is
/// (DistributedError by the checks above, reported by shmem_view; a valid_shape does not narrow
/// it, since clears and signals use the whole view). A valid_shape follows the valid-shape rule
/// of ops.h: one entry per dim, each in [0, shape[d]] (ShapeError, by the call when symbolic), so
/// a get never copies past its window. A signal-only object cannot be viewed. Every op below
/// that takes a view also requires it to lie in the data (a view whose public fields were edited
/// by hand is reported there).
ShmemTensor shmem_view(const ShmemTensor &src, const StaticDims &shape,
                       const std::vector<SymbolicScalar> &offsets, ShmemViewOptions opts = {},
                       SrcLoc loc = SrcLoc::current());

/// This PE's number in `group` (group-local), a run-time SymbolicScalar, as PyPTO
/// `my_symbolic_pe`.
SymbolicScalar my_symbolic_pe(const std::string &group, SrcLoc loc = SrcLoc::current());

struct PutOptions {
  AtomicType put_op = AtomicType::SET;
  std::vector<Tensor> pred = {};
};
/// Copies the valid region of local `src` into `dst`'s data on PE `dst_pe`, at `offsets` within
/// `dst`'s window, as PyPTO `shmem_put`. SET overwrites; ADD accumulates atomically and loses no
/// update (fp16/bf16 src may ADD into fp32 data). src rank 2-4 with static dims; dst dtype must
/// equal src's except that ADD allows fp16/bf16 -> fp32 (DTypeError). DistributedError (the
/// checks above) when dst_pe is outside [0, n_pes), or src's whole shape at `offsets` leaves
/// dst's window (the view, not just the data), or put_op is outside AtomicType (a cast
/// integer). Returns a token of src's shape.
Tensor shmem_put(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                 const ShmemTensor &dst, const SymbolicScalar &dst_pe, PutOptions opts = {},
                 SrcLoc loc = SrcLoc::current());

struct GetOptions {
  std::vector<Tensor> pred = {};
  DataType dtype = DT_BOTTOM; ///< convert to this dtype (DT_BOTTOM: keep the data's)
};
/// Copies `src`'s window on PE `src_pe` into a new local tensor of the window's shape (valid
/// shape carried over), as PyPTO `shmem_get`. src_pe outside [0, n_pes) is a DistributedError
/// (the checks above). The vec tile rank must equal the data rank. The
/// valid shape follows the valid-shape rule of ops.h here too, and every shmem op takes a
/// ShapeError for view fields edited by hand into another rank or a dim < 1.
Tensor shmem_get(const ShmemTensor &src, const SymbolicScalar &src_pe, GetOptions opts = {},
                 SrcLoc loc = SrcLoc::current());
/// The same, also returning the dependency token of the get (first) and the data (second).
std::pair<Tensor, Tensor> shmem_get_with_token(const ShmemTensor &src, const SymbolicScalar &src_pe,
                                               GetOptions opts = {},
                                               SrcLoc loc = SrcLoc::current());

struct SignalOptions {
  AtomicType sig_op = AtomicType::SET;
  std::vector<Tensor> pred = {};
};
/// For every vec tile of `src`'s window, writes (SET) or adds (ADD) `signal` into slot
/// (row `src_pe`, tile) in the signal memory of PE `target_pe`, as PyPTO `shmem_signal` and the
/// slot model of reference §6.3. `src_pe` names a slot row, not the sender: by convention the
/// sender passes the receiver's PE as both src_pe and target_pe, and the receiver waits with
/// src_pe = my_symbolic_pe (see docs/distributed.md). The matching wait must use the same window
/// and tile. Release ordering: puts issued earlier by this PE are visible before the signal is.
/// A concrete target_pe of -1 signals every PE of the group, as PyPTO `target_pe=-1`
/// (shmem_signal_all). src_pe and other target_pes outside [0, n_pes), and a sig_op outside
/// AtomicType, are DistributedErrors (the checks above). pto/shmem_inline.h has the spelling with
/// shape and offsets inline.
Tensor shmem_signal(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                    const SymbolicScalar &target_pe, SignalOptions opts = {},
                    SrcLoc loc = SrcLoc::current());
/// As shmem_signal, on every PE of the group (PyPTO `target_pe=-1`, C++ `ShmemSignalAll`).
Tensor shmem_signal_all(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                        SignalOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct WaitOptions {
  OpType cmp = OpType::EQ;   ///< PyPTO allows only EQ; ptojit also NE, LT, LE, GT, GE
  bool clear_signal = false; ///< reset each slot to 0 once satisfied
  std::vector<Tensor> pred = {};
};
/// Blocks until, for every vec tile of `src`'s window, this PE's own slot (row `src_pe`, tile)
/// compares `cmp` (default EQ) to `cmp_value`, as PyPTO `shmem_wait_until`. With clear_signal
/// the slot is decreased by the value it was seen with (0 afterwards unless a newer ADD landed,
/// which is then kept). Every signal and wait on one shmem tensor must use the same view shape
/// and vec tile (DistributedError at trace time otherwise; also for a cmp outside OpType). Does
/// not burn a core. A wait that
/// cannot complete throws DeadlockError after the world's timeout (default 30 s), naming PE, slot,
/// expected and current value.
Tensor shmem_wait_until(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                        WaitOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct BarrierOptions {
  std::vector<Tensor> pred = {};
};
/// All PEs of the group meet: signal_all ADD 1 on slot row 0, then wait until my row-0 slot
/// equals n_pes, with clear (PyPTO `shmem_barrier_all`). Usually given a create_shmem_signal
/// object. Returns the wait's token.
Tensor shmem_barrier_all(const ShmemTensor &signal, BarrierOptions opts = {},
                         SrcLoc loc = SrcLoc::current());

struct ClearOptions {
  std::vector<Tensor> pred = {};
};
/// Zeroes this PE's data in `src`'s window, as PyPTO `shmem_clear_data`. Returns a [1,1] token.
Tensor shmem_clear_data(const ShmemTensor &src, ClearOptions opts = {},
                        SrcLoc loc = SrcLoc::current());

/// Zeroes this PE's whole signal array of `src` (every slot row), as PyPTO
/// `shmem_clear_signal`. Returns a [1,1] token. Part of the reuse protocol (reference §7.6).
Tensor shmem_clear_signal(const ShmemTensor &src, ClearOptions opts = {},
                          SrcLoc loc = SrcLoc::current());

/// As shmem_put, for a just-computed tile (PyPTO `experimental.shmem_store`). On this CPU there
/// is no separate on-chip buffer, so the data path is the same as shmem_put's.
Tensor shmem_store(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                   const ShmemTensor &dst, const SymbolicScalar &dst_pe, PutOptions opts = {},
                   SrcLoc loc = SrcLoc::current());
/// As shmem_get, feeding the next compute op (PyPTO `experimental.shmem_load`).
Tensor shmem_load(const ShmemTensor &src, const SymbolicScalar &src_pe, GetOptions opts = {},
                  SrcLoc loc = SrcLoc::current());

/// Joins tokens into one, as PyPTO `experimental.nop`.
Tensor nop(const std::vector<Tensor> &tokens, SrcLoc loc = SrcLoc::current());

// ---- The rest of the OpenSHMEM 1.5 model ------------------------------------------------------
// Fence, quiet, put-with-signal, waits on sets of signal slots, test and fetching AMOs, spelled
// as OpenSHMEM 1.5 (§9.9 point-to-point synchronization, §9.8 AMOs, §9.10 memory ordering) with
// PyPTO's conventions: every op takes `pred` and returns a token first; results are tensors.
// What is ordered after what: docs/distributed.md, "Memory model".

struct SyncOptions {
  std::vector<Tensor> pred = {};
};
/// Orders this PE's puts, put_signals, AMOs and signals to each PE: those issued before the fence
/// are delivered to that PE before those issued after it, as OpenSHMEM `shmem_fence`. Applies to
/// every group and PE. Returns a [1, 1] token. On the threads runtime every put has completed
/// when it returns, so this is a full memory fence; on a transport with asynchronous puts it
/// orders them. No errors.
Tensor shmem_fence(SyncOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Completes every put, put_signal, AMO and signal this PE issued before it: their effects are
/// visible to every PE before any later op of this PE, as OpenSHMEM `shmem_quiet`. Use it before
/// signalling a PE other than the one the data went to. Returns a [1, 1] token. No errors.
Tensor shmem_quiet(SyncOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct PutSignalOptions {
  AtomicType put_op = AtomicType::SET; ///< as shmem_put's put_op
  AtomicType sig_op = AtomicType::SET; ///< as shmem_signal's sig_op
  /// The slot row (shmem_signal's src_pe); default dst_pe, the convention of docs/distributed.md
  /// (the receiver waits with src_pe = my_symbolic_pe).
  std::optional<SymbolicScalar> src_pe = {};
  std::vector<Tensor> pred = {};
};
/// Put-with-signal as one operation, as OpenSHMEM `shmem_put_signal`: shmem_put of `src` into
/// `dst` at `offsets` on PE `dst_pe`, then, on the same PE, shmem_signal of `signal` into the
/// slots of the written window (shmem_view(dst, src's shape, offsets)), row opts.src_pe. Per vec
/// tile (pipelined): tile i's signal is written right after tile i's data and is never visible
/// before it, so a receiver waiting on the window (shmem_wait_until(shmem_view(dst, shape,
/// offsets), my_symbolic_pe, signal)) may start on tile 0 while tile 1 is in flight. The rules of
/// both ops apply (dtypes, windows, PEs, and the slot rules: the window's shape divides the data,
/// it is tile-aligned, and every signal and wait on `dst` uses that shape and vec tile), with
/// their errors reported as shmem_put_signal. Returns a token of src's shape.
Tensor shmem_put_signal(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                        const ShmemTensor &dst, const SymbolicScalar &dst_pe, int32_t signal,
                        PutSignalOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// One element of a wait set: the slots of `window` (one per vec tile) in slot row `src_pe` of
/// this PE's signal memory, i.e. what shmem_wait_until(window, src_pe, ...) waits on. It holds
/// when each of its slots compares true.
struct SignalSlot {
  ShmemTensor window;
  SymbolicScalar src_pe;
};
/// The n_pes elements {window, 0}, ..., {window, n_pes - 1}: "a signal from any PE" when every
/// PE p signals row p (shmem_signal(window, my_symbolic_pe, v, target)).
std::vector<SignalSlot> signal_rows(const ShmemTensor &window);

struct WaitSetOptions {
  OpType cmp = OpType::EQ;
  /// Consume what was reported: each slot of each element the op reports (all included ones for
  /// _all) is decreased by the value it was seen with (GE: by cmp_value), as shmem_wait_until.
  bool clear_signal = false;
  /// OpenSHMEM's status array: element i is excluded when status[i] != 0. A DT_INT32 tensor of
  /// n elements, shape [n] or [1, ..., 1, n] (a run-time tensor: e.g. an earlier _some's result
  /// turned into a mask); elements past its valid shape count as 0 (included). None: all
  /// included.
  std::optional<Tensor> status = {};
  std::vector<Tensor> pred = {};
};
struct WaitAnyResult {
  Tensor token;
  Tensor index; ///< DT_INT32 [1, 1]: the element that holds (the lowest), -1 for an empty set
};
struct WaitSomeResult {
  Tensor token;
  Tensor indices; ///< DT_INT32 [1, n]: the elements that hold, ascending, then -1s
  Tensor count;   ///< DT_INT32 [1, 1]: how many (0 for an empty set)
};
/// Blocks until every element of `slots` not excluded by opts.status holds (`cmp` cmp_value), as
/// OpenSHMEM `shmem_wait_until_all`. An empty set (no element, or all excluded) returns at once.
/// Every element is a window of one shmem tensor (DistributedError otherwise) and follows the
/// slot rules of shmem_wait_until (same view shape and vec tile as every signal on it,
/// tile-aligned windows, src_pe in [0, n_pes): DistributedError, at run time when symbolic).
/// Status: DTypeError unless DT_INT32 (tokens and shmem data are DTypeErrors too), ShapeError
/// unless it has n elements as above. Acquire ordering. DeadlockError after the world's timeout
/// as shmem_wait_until (naming PE, slot, expected and current value). Returns a token (pred's
/// shape, or [1, 1]). Semantics: OpenSHMEM 1.5 §9.9.2.
Tensor shmem_wait_until_all(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                            WaitSetOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Blocks until one included element holds and returns its index (the lowest that holds when the
/// slots are read), as OpenSHMEM `shmem_wait_until_any`; an empty set returns -1 at once
/// (OpenSHMEM: SIZE_MAX). `index.at({0, 0})` is a run-time scalar usable as a PE number, view
/// offset or pto::cond condition. Rules and errors as shmem_wait_until_all.
WaitAnyResult shmem_wait_until_any(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                                   WaitSetOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Blocks until at least one included element holds and returns every element that holds at
/// that moment, as OpenSHMEM `shmem_wait_until_some`; an empty set returns count 0 at once.
/// Rules and errors as shmem_wait_until_all.
WaitSomeResult shmem_wait_until_some(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                                     WaitSetOptions opts = {}, SrcLoc loc = SrcLoc::current());

struct TestResult {
  Tensor token;
  Tensor holds; ///< DT_INT32 [1, 1]: 1 when every slot of the window compares true, else 0
};
/// Never blocks: whether shmem_wait_until(src, src_pe, cmp_value, opts) would return at once, as
/// OpenSHMEM `shmem_test`. With opts.clear_signal a condition that holds is consumed as the wait
/// would. `holds.at({0, 0})` drives control flow (pto::cond) or a later op. Rules and errors as
/// shmem_wait_until (no DeadlockError: it never waits).
TestResult shmem_test(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                      WaitOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// The non-blocking forms of the wait sets (OpenSHMEM 1.5 §9.9.4-9.9.6, `shmem_test_all`,
/// `shmem_test_any`, `shmem_test_some`): each reads the included elements of `slots` once and
/// returns at once, never blocking, so no DeadlockError. Operands, rules and errors are those of
/// shmem_wait_until_all (one shmem tensor, slot rules, DT_INT32 status of n elements: the same
/// DistributedError, DTypeError and ShapeError, reported as the op's name).
/// shmem_test_all: `holds` (DT_INT32 [1, 1]) is 1 when every included element holds (also for
/// an empty set), else 0.
TestResult shmem_test_all(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                          WaitSetOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// shmem_test_any: `index` (DT_INT32 [1, 1]) is the lowest included element that holds, or -1
/// when none does or the set is empty (OpenSHMEM: SIZE_MAX).
WaitAnyResult shmem_test_any(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                             WaitSetOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// shmem_test_some: `indices` (DT_INT32 [1, n]) the included elements that hold, ascending, then
/// -1s, and `count` (DT_INT32 [1, 1]) how many: 0 when none does or the set is empty.
WaitSomeResult shmem_test_some(const std::vector<SignalSlot> &slots, int32_t cmp_value,
                               WaitSetOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// The operand of an AMO: an integer (a literal or a run-time SymbolicScalar such as
/// my_symbolic_pe or `t.at({i})`; truncated to int32 for int32 words) or a floating literal (fp32
/// words only).
struct AmoValue {
  AmoValue(int v) : i(int64_t(v)) {}
  AmoValue(int64_t v) : i(v) {}
  AmoValue(const SymbolicScalar &v) : i(v) {}
  AmoValue(double v) : real(v) {}
  AmoValue(float v) : real(double(v)) {}
  SymbolicScalar i = SymbolicScalar(0);
  std::optional<double> real = {};
};
struct AmoOptions {
  std::vector<Tensor> pred = {};
};
struct AmoResult {
  Tensor token;
  Tensor old; ///< [1, 1] of the word's dtype: its value just before the AMO
};
/// Atomically adds `value` to element `index` (within `dst`'s window) of `dst`'s data on PE `pe`
/// and returns the old value, as OpenSHMEM `shmem_atomic_fetch_add`. Dtypes: int32, int64 (wrap)
/// and fp32 (rounded to nearest even; a ptojit extension); others are a DTypeError, as is a
/// floating value for an integer word. An integer literal must fit the word (ArgumentError).
/// `index` has one entry per data dim, each in [0, window extent), and `pe` lies in [0, n_pes)
/// (DistributedError; at run time when symbolic, before memory is touched). Concurrent AMOs on
/// one word never lose an update; AMOs are atomic only with other AMOs, not with puts to the same
/// word (OpenSHMEM §9.8). Sequentially consistent. `old.at({0, 0})` is a run-time scalar (integer
/// words) for control flow. Signal-only objects have no data (DistributedError).
AmoResult shmem_atomic_fetch_add(const ShmemTensor &dst, const std::vector<SymbolicScalar> &index,
                                 const AmoValue &value, const SymbolicScalar &pe,
                                 AmoOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// Atomically stores `value` into the word and returns the old value, as OpenSHMEM
/// `shmem_atomic_swap`. Dtypes int32, int64, fp32; rules and errors as shmem_atomic_fetch_add.
AmoResult shmem_atomic_swap(const ShmemTensor &dst, const std::vector<SymbolicScalar> &index,
                            const AmoValue &value, const SymbolicScalar &pe, AmoOptions opts = {},
                            SrcLoc loc = SrcLoc::current());
/// Atomically stores `value` into the word if it equals `cond` and returns the old value (the
/// swap happened iff old == cond), as OpenSHMEM `shmem_atomic_compare_swap`. Dtypes int32 and
/// int64 only (DTypeError for fp32 and the rest: float equality is not bitwise); rules and errors
/// as shmem_atomic_fetch_add.
AmoResult shmem_atomic_compare_swap(const ShmemTensor &dst,
                                    const std::vector<SymbolicScalar> &index, const AmoValue &cond,
                                    const AmoValue &value, const SymbolicScalar &pe,
                                    AmoOptions opts = {}, SrcLoc loc = SrcLoc::current());
/// The AMOs on a signal word (int32): the slot of `slot.window` in row `slot.src_pe` of PE
/// `pe`'s signal memory, as OpenSHMEM's AMOs on a signal (`shmem_signal_fetch` is a fetch_add of
/// 0). The window must have one vec tile, so one slot per row (DistributedError otherwise), and
/// follows the slot rules of shmem_signal; waiters of the slot are woken. A ticket counter or a
/// lock: compare_swap(slot, 0, me + 1, owner). Values and errors as the data forms (the word is
/// int32).
AmoResult shmem_atomic_fetch_add(const SignalSlot &slot, const AmoValue &value,
                                 const SymbolicScalar &pe, AmoOptions opts = {},
                                 SrcLoc loc = SrcLoc::current());
AmoResult shmem_atomic_swap(const SignalSlot &slot, const AmoValue &value, const SymbolicScalar &pe,
                            AmoOptions opts = {}, SrcLoc loc = SrcLoc::current());
AmoResult shmem_atomic_compare_swap(const SignalSlot &slot, const AmoValue &cond,
                                    const AmoValue &value, const SymbolicScalar &pe,
                                    AmoOptions opts = {}, SrcLoc loc = SrcLoc::current());

} // namespace pto::distributed
