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
/// Dtypes: int8, int16, int32, int64, fp16, bf16, fp32, double.
ShmemTensor create_shmem_tensor(const std::string &group, int n_pes, DataType dtype,
                                const std::vector<int64_t> &shape, SrcLoc loc = SrcLoc::current());
/// A signal-only object (no data; signal shape [n_pes, 1, 8]) for barriers, as PyPTO
/// `create_shmem_signal`.
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
ShmemTensor shmem_view(const ShmemTensor &src, const std::vector<int64_t> &shape,
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
/// src_pe and target_pe outside [0, n_pes), and a sig_op outside AtomicType, are
/// DistributedErrors (the checks above).
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

} // namespace pto::distributed
