// collectives_internal.h - What the collectives' source files share (collectives.h is the API):
// the checks on inputs, row-block geometry, the reuse barrier, the ordered reduction, and the
// allreduce exchange that fusion packs its buffers into. Internal to dsl/src/collectives*.cpp.
#pragma once

#include "pto/collectives.h"
#include "pto/ir/recorder.h"

#include <functional>
#include <source_location>
#include <string>
#include <vector>

namespace pto::distributed::detail {

using SrcLoc = std::source_location;

/// Collectives trace with a vec tile of their own choosing (one runtime call and one signal
/// slot per block or chunk) and restore the caller's tile afterwards.
class TileScope {
public:
  TileScope(const std::vector<int64_t> &shape, const SrcLoc &loc);
  ~TileScope();
  TileScope(const TileScope &) = delete;
  TileScope &operator=(const TileScope &) = delete;

private:
  ir::Recorder &r_;
  ir::TileShape saved_;
};

/// The checks every collective makes of its input x, naming `op`: DTypeError for a token,
/// shmem data or a dtype a collective does not move (collectives.h); ShapeError unless x has
/// concrete dims (rank 2-4). Returns x's static shape.
std::vector<int64_t> static_shape(const Tensor &x, const char *op, const SrcLoc &loc);
/// Every PE of `group` (n PEs) must pass x with the same valid extents in dims >= `first_dim`
/// (all_to_all lets dim 0 differ). Concrete extents are the same on every PE running one trace;
/// they are added to the group's agreements (ir::Group), so PEs running traces that differ get
/// a DistributedError at kernel entry. Symbolic ones are exchanged at run time: each PE stores
/// its extents into row `me` of a small int64 shmem tensor on every PE (AMOs, then one counted
/// signal per PE), waits for all n, and checks every row against PE 0's; every PE sees the same
/// rows, so either all go on or all fail with the same DistributedError naming `op`, the PEs
/// and both valid shapes, before any data is put. Returns `pred` with that check appended (as
/// is when every extent is concrete: no run-time cost).
std::vector<Tensor> agree_valid_shape(const Tensor &x, size_t first_dim, const char *op,
                                      const std::string &group, int n, std::vector<Tensor> pred,
                                      const SrcLoc &loc);
/// DistributedError naming `op` for a Reduction value outside the enum (a cast integer).
void check_reduction(Reduction r, const char *op, const SrcLoc &loc);

std::vector<SymbolicScalar> zeros_at(size_t rank);
/// Offsets of row `row` (dim 0), zero elsewhere.
std::vector<SymbolicScalar> at_row(const SymbolicScalar &row, size_t rank);
std::vector<int64_t> with_rows(std::vector<int64_t> shape, int64_t rows);
std::vector<SymbolicScalar> sym(const std::vector<int64_t> &v);
/// `valid` with dim 0 replaced by `rows`.
std::vector<SymbolicScalar> with_valid_rows(std::vector<SymbolicScalar> valid,
                                            const SymbolicScalar &rows);
/// The valid rows of the `rows` rows starting at row `off` of a tensor with `valid_rows` valid
/// rows: min(max(valid_rows - off, 0), rows).
SymbolicScalar valid_rows_at(const SymbolicScalar &valid_rows, const SymbolicScalar &off,
                             int64_t rows);

/// A shmem tensor of `shape` for a SET-put staging buffer: every element the collective reads
/// (within the valid shapes every PE passes alike) is written in the same call before it is
/// read, so kernel entry need not zero its data (ir::ShmemInfo::zero_data false); its signals
/// are zeroed as always. Not for ADD targets.
ShmemTensor staging_tensor(const std::string &group, int n, DataType dt,
                           const std::vector<int64_t> &shape, const SrcLoc &loc);

/// shmem_get of `src` (a staging_tensor window this PE reads after its wait) that may return
/// the heap window itself rather than a copy (ir::Op::borrow): the caller guarantees that no PE
/// writes the window while the result is live (the next writes come after the next reuse
/// barrier or kernel entry). A dtype conversion or a window narrower than the buffer's rows
/// copies as shmem_get does (lower_shmem.cpp decides).
Tensor borrowed_get(const ShmemTensor &src, const SymbolicScalar &pe, GetOptions opts,
                    const SrcLoc &loc);

/// This PE's number in `group` (registering the group with its size first).
SymbolicScalar me_in(const std::string &group, int n, const SrcLoc &loc);
/// `v[me]` for a run-time `me`, as a chain of selects (v is known at trace time).
SymbolicScalar pick(const std::vector<int64_t> &v, const SymbolicScalar &me);
/// The PEs of `group` while tracing, for `op`. DistributedError for an unknown group.
int group_pes(const std::string &group, const char *op, const SrcLoc &loc);

/// A barrier of the group (its own signal object) after `pred`.
Tensor group_barrier(const std::string &group, int n, std::vector<Tensor> pred, const SrcLoc &loc);
/// The start of a collective that writes its own shmem buffers on other PEs: inside a pto::loop
/// body (or cond path), where the same buffers are written again on the next pass, a barrier
/// (every PE has finished reading the previous pass's data); in the kernel body, where the
/// buffers are fresh, just the join of `pred` (no barrier).
Tensor reuse_barrier(const std::string &group, int n, std::vector<Tensor> pred, const SrcLoc &loc);

/// A shmem tensor or signal object `t` the user creates inside a loop body that may run more
/// than once is fresh in every iteration, as in PyPTO (each pass of the body has its own): at its
/// creation, reference §7.6's reuse protocol (a barrier of t's group: every PE is done with the
/// previous iteration's; clear this PE's data and signals; a barrier: all are clear before any
/// PE writes). Elsewhere nothing: the kernel entry zeroes it.
void fresh_each_iteration(const ShmemTensor &t, const SrcLoc &loc);

/// Counted arrivals in one slot per buffer: a sender ADDs 1 into the slot of `buf`'s whole
/// window on PE p (row p) after `put`; a receiver waits once for `n` of them (with clear), however
/// many windows the senders filled (their puts are visible before their signals). `buf` is the
/// whole shmem tensor; every signal and wait on it must go through these two.
Tensor signal_arrival(const ShmemTensor &buf, const SymbolicScalar &p, const Tensor &put,
                      const SrcLoc &loc);
Tensor wait_arrivals(const ShmemTensor &buf, const SymbolicScalar &me, int n, const Tensor &begin,
                     const SrcLoc &loc);

Tensor combine(Reduction op, const Tensor &a, const Tensor &b, const SrcLoc &loc);
/// Accumulation dtype of sums: fp16/bf16 sum in fp32 (one rounding at the end).
DataType sum_dtype(DataType dt);
/// The dtype `op` reduces `dt` in.
DataType reduce_dtype(Reduction op, DataType dt);
/// terms[0] op terms[1] op ... in that order (PE order: the same bits on every PE, every run),
/// converted back to `dt`.
Tensor reduce_in_order(Reduction op, const std::vector<Tensor> &terms, DataType dt,
                       const SrcLoc &loc);

/// Bytes of a tensor of `shape` and `dt` (shapes are checked to fit already).
int64_t bytes_of_shape(const std::vector<int64_t> &shape, DataType dt);

/// The algorithm AUTO picks for `bytes` per PE on `n` PEs (collectives.h).
AllreduceAlgorithm resolve_algorithm(AllreduceAlgorithm algo, int64_t bytes, int n);
const char *algorithm_name(AllreduceAlgorithm a);

/// One allreduce of x (static `shape`) after `pred`: the algorithm, resolved. Returns a tensor
/// with x's shape, dtype and valid shape. (collectives_allreduce.cpp)
Tensor exchange(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                AllreduceAlgorithm algo, const std::string &group, int n,
                const std::vector<Tensor> &pred, int64_t chunk_bytes, const SrcLoc &loc);
/// reduce_scatter's exchange (collectives.h), with SET puts and the ordered reduction.
Tensor reduce_scatter_blocks(const Tensor &x, Reduction op, const std::vector<int64_t> &shape,
                             const std::string &group, int n, const Tensor &start,
                             const SrcLoc &loc);
/// allgather of x's whole blocks into [n*R, ...] (the full-valid case of collectives.h).
Tensor gather_whole(const Tensor &x, const std::vector<int64_t> &shape, const std::string &group,
                    int n, std::vector<Tensor> pred, const SrcLoc &loc);

/// allreduce with fusion 1 or 2 (collectives_fusion.cpp).
Tensor defer_allreduce(const Tensor &x, const std::vector<int64_t> &shape, Reduction op,
                       const AllreduceOptions &opts, int n, const SrcLoc &loc);

} // namespace pto::distributed::detail
