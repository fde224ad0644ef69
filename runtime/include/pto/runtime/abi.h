// abi.h - The C ABI between generated (JIT-compiled) code, the reference interpreter and the
// runtime. Plain types only, so no C++ exception ever crosses a JIT-compiled frame: a call that
// fails records the error in the PE's context and returns a non-zero status; the kernel then
// returns early and the host side throws the recorded typed pto::Error.
//
// Terms are OpenSHMEM's: a PE is one processing element; every group has a symmetric heap, the
// same byte offset naming the same object on every PE of the group.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Opaque per-PE context. One exists per PE thread while a kernel runs.
typedef struct pto_ctx pto_ctx;

/// Status codes returned by every fallible entry point.
enum pto_status {
  PTO_OK = 0,
  PTO_ERR = 1, ///< an error was recorded in the context; unwind and report
};

/// Element codes are pto::DataType ordinals (base/include/pto/dtype.h, PyPTO's numbering):
/// 1 INT8, 2 INT16, 3 INT32, 4 INT64, 6 FP16, 7 FP32, 8 BF16, 11 UINT8, 15 BOOL, 16 DOUBLE.
typedef int32_t pto_dtype;

/// Put/signal operations: as PyPTO `AtomicType`.
enum pto_atomic { PTO_ATOMIC_SET = 0, PTO_ATOMIC_ADD = 1 };

/// Comparisons for shmem_wait_until: as PyPTO `OpType` (only EQ is used by the DSL for now).
enum pto_cmp { PTO_CMP_EQ = 0, PTO_CMP_NE, PTO_CMP_LT, PTO_CMP_LE, PTO_CMP_GT, PTO_CMP_GE };

/// A strided block of up to 4 dims (unused leading dims have extent 1; dim 3 is the innermost).
/// Strides are in elements of the side they describe and may be 0 (broadcast a source element)
/// or negative. `src_stride` describes the side data is read from, `dst_stride` the side it is
/// written to: for put the source is local memory and the destination the heap, for get the
/// reverse; clear uses `dst_stride` only. A block with any extent 0 is empty (a no-op).
typedef struct pto_block {
  int64_t extent[4];
  int64_t src_stride[4];
  int64_t dst_stride[4];
} pto_block;

/// This PE's number within `group` (group-local), as PyPTO `my_symbolic_pe`. Before the first
/// kernel entry, or for a group index the kernel did not declare, the group is the world.
int32_t pto_rt_my_pe(pto_ctx *ctx, int32_t group);
/// Number of PEs in `group`.
int32_t pto_rt_n_pes(pto_ctx *ctx, int32_t group);

/// Collective entry of a kernel that uses shmem tensors. `group_names[g]` names the kernel's
/// group g (a group made by World::create_group, or one spanning the whole world), whose size
/// must be `group_n_pes[g]` and whose members include this PE. For each group, in name order,
/// its members meet: they must propose the same `group_hash[g]` (the layout of the group's shmem
/// tensors) and heap size; the group's symmetric heap is (re)allocated to `heap_bytes[g]` bytes
/// (data and signals) and zeroed, then the members are released together. Errors: unknown
/// group, n_pes mismatch, a PE outside the group, different layouts (DistributedError); a member
/// that never arrives (DeadlockError once no PE of the world has made progress for twice the
/// deadlock timeout; see WorldOptions); a heap the host cannot allocate (RuntimeError).
/// `group_where[g]` (may be null) is the "file:line" of the kernel line that first used group g,
/// for messages; errors of the barrier itself point at the kernel's call (begin_call).
/// `group_layout[g]` (may be null) describes the layout that group_hash[g] hashes, one shmem
/// tensor per line as "what\twhere" ("DT_FP32 [4, 8] with 512 signal bytes\tk.cpp:12"), so that
/// different layouts are reported as the first shmem tensor that differs.
int32_t pto_rt_kernel_enter(pto_ctx *ctx, const uint64_t *group_hash, int32_t n_groups,
                            const int64_t *heap_bytes, const int32_t *group_n_pes,
                            const char *const *group_names, const char *const *group_where,
                            const char *const *group_layout);
/// Limits the zeroing of this PE's next pto_rt_kernel_enter: group g's heap is zero only in
/// bytes [0, zero_bytes[g]) afterwards (every signal array and the data of shmem tensors that
/// start zero), the rest keeps what it held (data the kernel writes before it reads it, laid out
/// past zero_bytes: ir::Group::zero_bytes). `n_groups` must be the kernel_enter's; without this
/// call (or with another n_groups) kernel entry zeroes every heap whole. Cannot fail.
int32_t pto_rt_heap_zeroing(pto_ctx *ctx, int32_t n_groups, const int64_t *zero_bytes);
/// Collective exit: for each group (in name order) no member leaves until every member has
/// finished with the group's heap. Errors as the
/// entry barrier (another PE failed, a PE returned early, DeadlockError after the timeout).
int32_t pto_rt_kernel_exit(pto_ctx *ctx);

/// Base address of PE `pe`'s symmetric heap for `group` (64-byte aligned; valid from kernel
/// entry until the next kernel entry). NULL for an undeclared group, a PE outside it, or a PE
/// whose heap this process cannot address directly (another process, MPI). The caller may store
/// through it: the whole heap then counts as written and is zeroed at the next kernel entry.
void *pto_rt_heap_base(pto_ctx *ctx, int32_t group, int32_t pe);

/// The direct path of generated code (docs/distributed.md, "The shared-memory fast path"): fills
/// `bases[0..n_pes)` with the base of every PE's symmetric heap of `group`, once per kernel entry
/// (valid until the next one), so that puts and gets of this kernel may load and store peer heaps
/// directly; or with nulls, when the heap of some PE is not directly addressable (MPI across
/// nodes or with PTO_MPI_SHARED=0; the shared-memory transport and MPI shared-memory windows
/// have every base), the world records a trace, or PTO_SHMEM_DIRECT=0 is set: the kernel then
/// calls pto_rt_put and pto_rt_get. `ranges` holds `n_ranges` pairs (byte offset, bytes) of the
/// heap that the kernel may store into directly; with non-null bases they count as written on every
/// PE (zeroed at the next kernel entry where they need it). A null base for a PE outside the group
/// is impossible: the group was declared by kernel_enter (else an InternalError).
/// `bases` has 2 * n_pes + 2 entries: after the heap bases, `bases[n_pes + p]` is an int32 word
/// that is non-zero while PE p may sleep in a wait, `bases[2 * n_pes]` this thread's uint64
/// progress counter (relaxed atomic add 1 after each signal or completed wait) and
/// `bases[2 * n_pes + 1]` the calling PE's own heap base (where its waits poll), when the
/// transport lets generated code signal and wait itself (the shared-memory transport: a signal is
/// a release store or atomic add into the slot, a seq_cst fence, and pto_rt_signal(ADD 0) to wake
/// the PE if its word is non-zero; a wait polls its slot with acquire loads, clears it with an
/// atomic add, and calls pto_rt_wait_until when the poll gives up); else nulls. Returns PTO_OK or
/// PTO_ERR.
int32_t pto_rt_heap_table(pto_ctx *ctx, int32_t group, int32_t n_ranges, const int64_t *ranges,
                          void **bases);

/// The allreduce of collectives.h (AUTO, large inputs) over group `group` (index into the
/// groups of pto_rt_kernel_enter), called by every member with its input `x` and its output
/// `y` (both `rank` 2-4, dtype `dtype` (pto::DataType), element strides `x_strides` /
/// `y_strides`, valid extents `valid`, which every member must pass alike) and `reduction`
/// (pto::distributed::Reduction). y's valid region becomes the reduction of every member's x
/// in member order (sums of fp16/bf16 in fp32, rounded once; integers wrap), the same bits on
/// every member; the rest of y is not written. When every member is a thread of this process
/// (the shared-memory transport, not tracing, PTO_SHMEM_DIRECT not 0) and no member's x
/// partly overlaps a member's y, the buffers are registered: member p reduces block p of the
/// valid region straight from every member's x and writes it into every member's y, between
/// two barriers of the group (nobody returns while a peer still reads its x or writes its y).
/// Otherwise the transport's collectives move each member's packed x: its own allreduce where
/// every order of combining gives the same bits, else a reduce-scatter (all-to-all of blocks,
/// each member reducing its block in member order) and an allgather (or, on a transport with
/// neither, an allgather of every x, reduced locally). A DistributedError when the members' valid
/// extents, dtypes or reductions differ. `site` as everywhere. Returns PTO_OK or PTO_ERR.
/// (allreduce_direct.cpp)
int32_t pto_rt_allreduce(pto_ctx *ctx, int32_t group, int32_t reduction, int32_t dtype,
                         int32_t rank, const int64_t *valid, const void *x,
                         const int64_t *x_strides, void *y, const int64_t *y_strides, int32_t site);

/// Copies a block from local memory `src` (dtype `src_dt`) into PE `dst_pe`'s symmetric heap of
/// `group` at byte offset `dst_offset_bytes` (dtype `dst_dt`), with `op` SET or atomic ADD, as
/// PyPTO `shmem_put`. ADD loses no update under contention (exact for ints; a CAS loop for
/// floats); fp16/bf16 src may ADD into fp32 dst. `dst_limit_bytes` is the end of the
/// destination object; a block reaching past it is an error (bounds are checked per call, not
/// per element). `site` indexes the kernel's call-site table for messages.
/// Conversion: float -> float rounds to nearest even; float -> int truncates toward zero and
/// saturates (NaN -> 0); int -> int wraps; anything -> bool is `!= 0`. ADD into bool is a
/// DTypeError. Errors (DistributedError): dst_pe outside [0, n_pes of the group), the block's
/// byte range outside [0, dst_limit_bytes) or the heap, an offset not a multiple of the element
/// size. The source may lie in this PE's own heap.
int32_t pto_rt_put(pto_ctx *ctx, int32_t group, int32_t dst_pe, int32_t op, const void *src,
                   pto_dtype src_dt, int64_t dst_offset_bytes, int64_t dst_limit_bytes,
                   pto_dtype dst_dt, const pto_block *block, int32_t site);

/// Copies a block from PE `src_pe`'s symmetric heap (byte offset `src_offset_bytes`, dtype
/// `src_dt`) into local memory `dst` (dtype `dst_dt`, converting as put does), as PyPTO
/// `shmem_get`. Errors as put, for src_pe and the source range.
int32_t pto_rt_get(pto_ctx *ctx, int32_t group, int32_t src_pe, int64_t src_offset_bytes,
                   int64_t src_limit_bytes, pto_dtype src_dt, void *dst, pto_dtype dst_dt,
                   const pto_block *block, int32_t site);

/// Writes (SET) or atomically adds (ADD) `value` into the int32 signal word at byte offset
/// `slot_offset_bytes` of `target_pe`'s heap; `target_pe == -1` writes every PE of the group.
/// Release ordering: a put issued before the signal is visible before the signal is. Wakes
/// waiters. As PyPTO `shmem_signal` / `shmem_signal_all` (OpenSHMEM `shmem_signal_op`).
/// Errors (DistributedError): target_pe outside [-1, n_pes), a slot that is not an aligned int32
/// inside the heap.
int32_t pto_rt_signal(pto_ctx *ctx, int32_t group, int32_t target_pe, int64_t slot_offset_bytes,
                      int32_t op, int32_t value, int32_t site);

/// Blocks until this PE's own signal word at `slot_offset_bytes` compares `cmp` to `value`
/// (acquire ordering). If `clear`, then atomically subtracts the value it observed (PTO_CMP_GE:
/// subtracts `value`), which is "set it to 0" except that a concurrent ADD is never lost: lower
/// shmem_barrier_all as signal_all ADD 1 + wait GE n_pes with clear, so back-to-back barriers on
/// one slot cannot miss the exact count. Polls for a few microseconds at most (not at all on an
/// overloaded machine), then sleeps in a futex: it does not burn a core. Other PEs failing releases
/// it with a DistributedError. Once no PE of the world has made progress (signal, put, get,
/// clear, completed wait, barrier arrival, kernel call) for the world's deadlock timeout, it
/// records a DeadlockError naming PE, slot (`slot_number`), expected and current value and the
/// timeout; a wait may last far longer while other PEs get on. As PyPTO `shmem_wait_until`.
int32_t pto_rt_wait_until(pto_ctx *ctx, int32_t group, int64_t slot_offset_bytes, int32_t cmp,
                          int32_t value, int32_t clear, int64_t slot_number, int32_t site);

/// Zeroes a block of this PE's own heap (byte offset, dtype for the element size, the block's
/// `dst_stride`), as PyPTO `shmem_clear_data`. Bounds are checked as for put.
int32_t pto_rt_clear(pto_ctx *ctx, int32_t group, int64_t offset_bytes, int64_t limit_bytes,
                     pto_dtype dt, const pto_block *block, int32_t site);

/// The run-time faults generated code (and the interpreter) report through pto_rt_fail, with
/// the error each records. `a` and `b` are the detail values; every message is prefixed with
/// the site's "file:line: op".
enum pto_fail_kind {
  PTO_FAIL_DIV_ZERO = 1,    ///< RuntimeError "integer division by zero"
  PTO_FAIL_INDEX = 2,       ///< RuntimeError "index a out of range [0, b)"
  PTO_FAIL_PE = 3,          ///< DistributedError "PE a out of range [0, b)"
  PTO_FAIL_OFFSET = 4,      ///< DistributedError "offset a out of bounds [0, b)" (shmem window)
  PTO_FAIL_VIEW_BOUNDS = 5, ///< ShapeError: view window index a outside dim [0, b) at run time
  PTO_FAIL_SLOT_ALIGN = 6,  ///< DistributedError: signal/wait window offset a not a multiple of
                            ///< the vec tile size b
};

/// Records the run-time error of fault `kind` (a pto_fail_kind; any other value records an
/// InternalError) at call site `site` with detail values `a`, `b`. Always returns PTO_ERR.
int32_t pto_rt_fail(pto_ctx *ctx, int32_t kind, int32_t site, int64_t a, int64_t b);

/// Error classes of pto_rt_fail_msg.
enum pto_error_class {
  PTO_ERROR_RUNTIME = 0,     ///< pto::RuntimeError
  PTO_ERROR_SHAPE = 1,       ///< pto::ShapeError
  PTO_ERROR_ARGUMENT = 2,    ///< pto::ArgumentError
  PTO_ERROR_INTERNAL = 3,    ///< pto::InternalError
  PTO_ERROR_DISTRIBUTED = 4, ///< pto::DistributedError
  /// pto::DistributedError that every PE of the group raises alike (it checks data all have
  /// exchanged): recorded without aborting the world, so no PE is released with a secondary
  /// error before it reaches the same check.
  PTO_ERROR_DISTRIBUTED_AGREED = 5,
};
/// Records a run-time error with a free-form detail message (library ops, xops.h), prefixed
/// with the site's "file:line: op". Always returns PTO_ERR.
int32_t pto_rt_fail_msg(pto_ctx *ctx, int32_t error_class, int32_t site, const char *detail);

/// Timeline support for compute ops (runtime calls trace themselves): the trace clock in ns, or
/// -1 when the world is not recording a trace.
int64_t pto_rt_trace_now(pto_ctx *ctx);
/// Records a compute event for call site `site` (named by the site's op, "fused" with `n_ops`
/// ops when > 1) from `start_ns` (a pto_rt_trace_now value) to now.
void pto_rt_trace_op(pto_ctx *ctx, int32_t site, int32_t n_ops, int64_t start_ns);

/// Scratch memory for a kernel's local tensors: 64-byte aligned, freed when the call ends
/// (end_call). Returns NULL, with a RuntimeError recorded at call site `site` (the op that
/// creates the local; -1: the user's call of the kernel), if the memory cannot be allocated.
void *pto_rt_alloc(pto_ctx *ctx, int64_t bytes, int32_t site);

/// The entry point of a compiled kernel, `pto_kernel` in generated code: runs the kernel on the
/// PE of `ctx`; `args` are the tensor parameters' data pointers in order, `dims` their shapes
/// concatenated. Returns a pto_status (on PTO_ERR the error is recorded in `ctx`).
typedef int32_t (*pto_kernel_fn)(pto_ctx *ctx, void *const *args, const int64_t *dims);

// ---- The rest of the OpenSHMEM 1.5 model (runtime/src/shmem_amo.cpp) -------------------------
// Ordering on this runtime (docs/distributed.md, "Memory model"): every entry point completes
// before it returns, in program order per PE; signals are release and waits acquire operations
// (seq_cst); fence and quiet are full fences. A transport whose puts complete later (MPI RMA)
// must make fence order the puts to each PE and quiet complete them all.

/// Orders this PE's earlier puts, AMOs and signals to each PE before its later ones to the same
/// PE, as OpenSHMEM `shmem_fence` (every group). Cannot fail.
int32_t pto_rt_fence(pto_ctx *ctx, int32_t site);
/// Completes this PE's earlier puts, AMOs and signals: they are visible to every PE before any
/// later operation of this PE, as OpenSHMEM `shmem_quiet` (every group). Cannot fail.
int32_t pto_rt_quiet(pto_ctx *ctx, int32_t site);

/// pto_rt_put of the block, then pto_rt_signal (op `sig_op`, `sig_value`) of the int32 slot at
/// `slot_offset_bytes` on the same PE `dst_pe`: one operation, as OpenSHMEM `shmem_put_signal`.
/// The signal is never visible before the data. Errors: those of put, then of signal (nothing
/// is signalled when the put fails).
int32_t pto_rt_put_signal(pto_ctx *ctx, int32_t group, int32_t dst_pe, int32_t op, const void *src,
                          pto_dtype src_dt, int64_t dst_offset_bytes, int64_t dst_limit_bytes,
                          pto_dtype dst_dt, const pto_block *block, int64_t slot_offset_bytes,
                          int32_t sig_op, int32_t sig_value, int32_t site);

/// Fetching atomic memory operations, as OpenSHMEM `shmem_atomic_fetch_add`, `shmem_atomic_swap`
/// and `shmem_atomic_compare_swap`.
enum pto_amo { PTO_AMO_FETCH_ADD = 0, PTO_AMO_SWAP = 1, PTO_AMO_COMPARE_SWAP = 2 };
/// Atomically applies `amo` to the word of dtype `dt` at byte offset `offset_bytes` of PE `pe`'s
/// heap of `group` and stores the word's old value at `old` (dtype `dt`): FETCH_ADD adds `*value`
/// (ints wrap; fp32 rounds to nearest even), SWAP stores `*value`, COMPARE_SWAP stores `*value`
/// only when the word equals `*cond`. `value` and `cond` point at one element of dtype `dt`
/// (`cond` may be null except for COMPARE_SWAP). Sequentially consistent; atomic with respect to
/// every other AMO on the word (not with puts: OpenSHMEM's rule). `wake` != 0: the word is a
/// signal slot, wake its waiters. Dtypes: int32, int64, fp32; COMPARE_SWAP int32 and int64
/// (DTypeError otherwise). Errors (DistributedError): pe outside [0, n_pes), a word that is not
/// aligned or not inside [0, limit_bytes) and the heap.
int32_t pto_rt_atomic(pto_ctx *ctx, int32_t group, int32_t pe, int32_t amo, pto_dtype dt,
                      int64_t offset_bytes, int64_t limit_bytes, const void *value,
                      const void *cond, void *old, int32_t wake, int32_t site);

/// Modes of pto_rt_wait_until_set, as OpenSHMEM `shmem_wait_until_{all,any,some}`.
enum pto_wait_set { PTO_WAIT_ALL = 0, PTO_WAIT_ANY = 1, PTO_WAIT_SOME = 2 };
/// Waits on a set of `n_elems` elements, each `slots_per_elem` int32 signal slots of this PE's
/// heap of `group` at byte offsets `slot_offsets[e * slots_per_elem + k]`. An element holds when
/// each of its slots compares `cmp` to `value`. Element e is excluded when `status` is non-null
/// and `status[e * status_stride] != 0` for e < status_valid (elements past status_valid are
/// included). ALL returns once every included element holds; ANY once one does, with its index
/// in out[0] (the lowest; -1 when none is included); SOME once at least one does, with every
/// holding index in out[0..count) ascending (out_stride apart). `out_count` (may be null)
/// receives the number of elements reported (ALL: 1 when they all hold). An empty set (no
/// element included) returns at once (count 0, ANY -1). With `blocking` == 0 nothing blocks: one
/// check, as OpenSHMEM `shmem_test_{all,any,some}` (ALL: count 1 or 0). `clear` subtracts from
/// each slot of every reported element the value it was seen with (GE: `value`), as
/// pto_rt_wait_until. Acquire ordering. `signal_base_bytes` is the signal array's offset, for
/// slot numbers in messages. Errors: slots outside the heap or not aligned (DistributedError);
/// DeadlockError and release on another PE's failure as pto_rt_wait_until.
int32_t pto_rt_wait_until_set(pto_ctx *ctx, int32_t group, int32_t mode, int32_t blocking,
                              const int64_t *slot_offsets, int32_t n_elems, int32_t slots_per_elem,
                              int64_t signal_base_bytes, const int32_t *status,
                              int64_t status_stride, int64_t status_valid, int32_t cmp,
                              int32_t value, int32_t clear, int32_t *out, int64_t out_stride,
                              int32_t *out_count, int32_t site);

#ifdef __cplusplus
}

// The layout generated code builds on its stack (codegen/llvm/abi_decls.cpp derives the LLVM
// type from these fields and checks it against offsetof): fixed here so that a change is a
// deliberate ABI change, not a silent one.
#include <cstddef>
static_assert(sizeof(pto_block) == 96 && alignof(pto_block) == 8, "pto_block layout changed");
static_assert(offsetof(pto_block, extent) == 0 && offsetof(pto_block, src_stride) == 32 &&
                  offsetof(pto_block, dst_stride) == 64,
              "pto_block layout changed");
#endif
