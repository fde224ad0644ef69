// collectives.h - Collective operations written in the DSL itself with the shmem primitives of
// distributed.h (readable as examples: dsl/src/collectives.cpp). Semantics follow HCCL's
// (seed 001: allreduce(tensor, op, group)) and PyPTO's library collectives (reference §7).
//
// Every collective is traced into the calling kernel: it creates its own shmem tensors in
// `group`, unrolls its loops over the group's PEs at trace time, and is safe to call repeatedly
// and inside pto::loop (inside a loop body each call starts with a barrier, so a fast PE never
// overwrites data a slow PE has not read yet; in the kernel body its buffers are fresh and it
// needs none). Inputs are local tensors of rank 2-4 with static shapes; the
// exchange is over dim 0 (rows). Shmem dtypes: int8, int16, int32, int64, fp16, bf16, fp32, fp64.
//
// Valid shapes: a collective reads only its input's valid region (elements outside it are never
// sent or combined into a valid result element) and says below which valid shape its result
// has; elements of the result outside that valid shape are unspecified, so an assemble of the
// result writes only its valid region. Every PE of the group must pass the same valid shape,
// except where noted. This holds for every algorithm (one-shot, two-shot, AUTO, fusion).
#pragma once

#include "pto/distributed.h"

#include <source_location>
#include <string>
#include <vector>

namespace pto::distributed {

/// Reductions, as HCCL's `op`: sum, max, min, prod. Every dtype above supports every reduction
/// (HCCL lacks prod for int16 and bf16). Ints wrap; floats follow IEEE 754 (NaN propagates
/// through max/min); fp16/bf16 sums accumulate in fp32.
enum class Reduction { SUM, MAX, MIN, PROD };
/// "sum" | "max" | "min" | "prod" (for command lines); throws ArgumentError at the caller's
/// line on anything else, listing the four names.
Reduction parse_reduction(const std::string &s,
                          std::source_location loc = std::source_location::current());
const char *name(Reduction r);

/// Allreduce algorithms (the names of TRT-LLM's and PyTorch symmetric memory's one-shot /
/// two-shot allreduce, and NCCL's reduce-scatter + allgather). Per PE, for an input of S bytes
/// on n PEs, B = S / n:
/// - ONE_SHOT: every PE SET-puts its whole x into its own slot of every PE's [n*R, ...] buffer;
///   each PE reduces the n slots itself. One round of signals (the least latency); each PE puts
///   and gets n*S bytes, so total traffic grows with n^2.
/// - TWO_SHOT: PyPTO's TwoShotAllReduce (reference §7.4) for sums: ADD-puts of row blocks into
///   one accumulator per PE (atomic, in arrival order), then an allgather of the reduced blocks.
///   For max, min and prod it runs as RS_AG.
/// - RS_AG: reduce-scatter + allgather with single-writer SET puts (no atomics, no cleared
///   buffers): PE p owns a block of rows; the others put their rows of it into their own slots
///   of p's buffer; p reduces its block in PE order and puts it into every PE's result buffer.
///   With AllreduceOptions::chunk_bytes the block is pipelined in chunks: each reduced chunk is
///   put (and signalled) as soon as it is done, while the next one is reduced, and one chunk's
///   terms stay in cache. Each PE puts and gets about 2*S bytes whatever n is (the
///   bandwidth-bound choice).
/// - AUTO: ONE_SHOT when n == 1, or when x has at most kAllreduceOneShotMaxBytes and all n
///   inputs together at most kAllreduceOneShotMaxTotalBytes; otherwise, on at most 2 PEs,
///   registered user buffers (above 2 PEs RS_AG: measured faster there on 2 cores) (one runtime
///   call, pto_rt_allreduce in pto/runtime/abi.h): when every PE is a thread of one process (the
///   shared-memory transport, not while tracing, PTO_SHMEM_DIRECT not 0), PE p reduces block p of
///   the valid region straight from every PE's x and writes it into every PE's result, between two
///   barriers: each PE reads S and writes S bytes, with no staging copy and no heap round trip. In
///   place (x the output) and handles of one buffer work; buffers that partly overlap, other
///   transports (MPI) and traces allgather every x through the transport and reduce locally. Either
///   way the reduction is RS_AG's, in PE order.
/// Above 16 PEs ONE_SHOT and RS_AG (without chunk_bytes) run their per-PE puts and their
/// reductions as pto::loops, so the kernel's size (and JIT compile time) does not grow with n;
/// the results are the same bits.
/// Determinism: ONE_SHOT, RS_AG and AUTO reduce every element in PE order 0, 1, ..., n-1
/// (fp16/bf16 sums in fp32, rounded once at the end), so for a fixed PE count the result is
/// the same bits on every PE, in every run, and for each of them. TWO_SHOT's floating-
/// point sums depend on the order the ADDs land in (integer sums are exact), and start from a
/// zeroed accumulator, so an element whose terms are all -0 sums to +0 (the others give -0).
enum class AllreduceAlgorithm { AUTO, ONE_SHOT, TWO_SHOT, RS_AG };

/// The largest input (bytes per PE) AUTO sends one-shot: 64 KiB. Below it the allreduce is
/// latency-bound and one-shot's single signal round wins; above it RS_AG's n-fold smaller
/// traffic does (measured in bench/RESULTS.md, "Allreduce algorithms").
inline constexpr int64_t kAllreduceOneShotMaxBytes = int64_t{64} << 10;
/// The most bytes of all n PEs' inputs together (n * bytes per PE) AUTO sends one-shot: 1 MiB.
/// One-shot's traffic is n times that per PE; on 64 PEs it measured faster than RS_AG at 8 KiB
/// per PE and slower at 48 KiB (bench/RESULTS.md, "Many PEs").
inline constexpr int64_t kAllreduceOneShotMaxTotalBytes = int64_t{1} << 20;

struct CollectiveOptions {
  std::string group = "world";   ///< "world" (all PEs) or a World::create_group name
  std::vector<Tensor> pred = {}; ///< run after these
};

/// The default bucket capacity of allreduce fusion 1, in bytes of the packed buffer: 32 MiB, as
/// MindSpore's `comm_fusion` size mode (its HCCL backend; `"config": 32` MB in its guide). HCCL
/// itself splits a whole model's gradients by ratio (96.54% / 3.46% by default), which needs
/// the whole graph; a trace fuses as it goes, so it caps each bucket instead.
inline constexpr int64_t kAllreduceFusionBucketBytes = int64_t{32} << 20;

struct AllreduceOptions {
  std::string group = "world";
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::AUTO;
  /// HCCL's fusion flag: 0 never fuse (ptojit's default; HCCL's is 1), 1 fuse into size
  /// buckets, 2 fuse the calls that share `fusion_id`. See "Fusion" at allreduce.
  int fusion = 0;
  /// fusion 2: calls with the same id (>= 0) are one exchange. Ignored for fusion 0 and 1.
  int fusion_id = -1;
  /// fusion 1: the most bytes one bucket's packed buffer may hold (> 0).
  int64_t fusion_bucket_bytes = kAllreduceFusionBucketBytes;
  /// RS_AG's pipeline chunk in bytes (rounded down to whole rows, at least one row; at most 16
  /// chunks per PE's block). 0: one chunk per block (no pipelining): on today's runtime each
  /// chunk costs n wait hand-offs, which measured slower than the cache it saves
  /// (bench/RESULTS.md). As NCCL's chunk size: a tuning knob that never changes the result.
  int64_t chunk_bytes = 0;
  std::vector<Tensor> pred = {};
};

/// Number of PEs of `group` while tracing: "world" (all PEs) or a group made with
/// World::create_group. DistributedError for any other name.
int n_pes(const std::string &group = "world",
          std::source_location loc = std::source_location::current());

/// Every PE gets the elementwise reduction of all PEs' `x` (same shape and dtype on every PE;
/// PEs that differ get a DistributedError at kernel entry). Result: x's shape, dtype and valid
/// shape, whichever algorithm runs; elements outside the valid shape are unspecified. Every PE
/// must pass the same valid shape (as must every collective's input; all_to_all's valid rows may
/// differ): a concrete one is checked at kernel entry, a run-time one by a small exchange before
/// any data moves; PEs that differ get a DistributedError on every PE naming the collective,
/// the PEs and both valid shapes. As HCCL `allreduce` (seed 001).
///
/// Fusion (HCCL's `fusion` / `fusion_id`). With fusion 1 or 2 the call is deferred: it returns
/// at once a tensor with x's shape, dtype and valid shape, and joins a group of calls that are
/// traced later as ONE exchange: their inputs are packed into one [R, W] buffer (call i's
/// [d0, .., dk] is reshaped to [d0*..*d(k-1), dk] rows, stacked in call order; W is the largest
/// dk, narrower rows are zero-padded), that buffer is allreduced as one tensor (AUTO picks the
/// algorithm for the packed size), and each call's rows are copied out into its result.
/// - fusion 1: calls with the same group, reduction, dtype, algorithm and fusion_bucket_bytes
///   share a bucket while its packed buffer stays within fusion_bucket_bytes; a call that would
///   overflow it closes the bucket (traced then) and opens the next; a call that alone fills a
///   bucket is not deferred.
/// - fusion 2: calls with the same fusion_id share one exchange, however large. Every call with
///   a given fusion_id must use the same group, reduction, dtype and algorithm (the first call
///   fixes them for the whole trace): a mismatch is a DistributedError naming both lines.
/// A group is traced, at the latest, right before: the first op that uses (reads or writes,
///   through any view) a deferred result or input of the group; any shmem primitive or other
///   collective (barriers included) and any non-fused allreduce; a pto::loop opening or
///   closing; the end of the traced function. Results equal the unfused ones bit for bit
///   (every element is reduced in PE order, see AllreduceAlgorithm; TWO_SHOT float sums in the
///   order the ADDs land, as unfused). HCCL fuses sum only; ptojit fuses every reduction.
/// Errors: ShapeError for a rank outside 2-4 or non-static dims; DistributedError for an
/// unknown group, an `op` or `algorithm` value outside its enum, fusion outside 0-2, fusion 2 with
/// fusion_id < 0, fusion_bucket_bytes <= 0, chunk_bytes < 0, or mismatched options within a
/// fusion_id; DTypeError for a token, shmem data, or a dtype other than int8, int16, int32, int64,
/// fp16, bf16, fp32, fp64.
Tensor allreduce(const Tensor &x, Reduction op, AllreduceOptions opts = {},
                 std::source_location loc = std::source_location::current());
/// Every PE gets [n_pes * R, ...]: rows [p*R, (p+1)*R) hold PE p's x. When x has a valid shape
/// [vr, vc, ...] smaller than its shape, the valid parts are packed instead, PE p's at rows
/// [p*vr, (p+1)*vr), the result's valid shape is [n_pes*vr, vc, ...] and everything else is
/// zero (as PyPTO's AllGather, reference §7.1). As HCCL `allgather`.
Tensor allgather(const Tensor &x, CollectiveOptions opts = {},
                 std::source_location loc = std::source_location::current());
/// The reduction of all PEs' x, scattered by row blocks (SET puts into per-sender slots, then
/// the reduction in PE order as allreduce's RS_AG: the same bits every run): with
/// B = ceil(R / n_pes), PE p gets
/// rows [p*B, min((p+1)*B, R)) as a [B, ...] tensor whose valid shape is x's valid region in
/// those rows: min(max(vr - p*B, 0), B) rows for x's valid rows vr (0 for PEs past the end),
/// and x's valid extents in the other dims. As HCCL `reduce_scatter` (which requires
/// R % n_pes == 0; we do not).
/// Every collective taking an x checks it as allreduce does (ShapeError, DTypeError, naming the
/// collective); DistributedError for an `op` outside Reduction.
Tensor reduce_scatter(const Tensor &x, Reduction op, CollectiveOptions opts = {},
                      std::source_location loc = std::source_location::current());
/// Every PE gets PE `root`'s x, with x's shape, dtype and valid shape (the valid region of
/// root's x). As HCCL `broadcast`.
Tensor broadcast(const Tensor &x, int root, CollectiveOptions opts = {},
                 std::source_location loc = std::source_location::current());
/// Personalized exchange of row blocks. `counts[i][j]` = rows PE i sends to PE j (the same
/// n_pes x n_pes matrix on every PE); PE i's x holds its blocks for PE 0, 1, ... back to back.
/// PE j gets [max_j sum_i counts[i][j], ...] holding the blocks from PE 0, 1, ... back to back,
/// with valid rows sum_i counts[i][j] and x's valid extents in the other dims. The rows a PE
/// sends must lie in x's valid rows (ShapeError, at run time when the valid shape is only known
/// then); PEs may differ in x's valid rows. ShapeError for a negative count or a sum of counts
/// past 2^62 (pto/size_math.h). As HCCL `alltoallv`.
Tensor all_to_all(const Tensor &x, const std::vector<std::vector<int64_t>> &counts,
                  CollectiveOptions opts = {},
                  std::source_location loc = std::source_location::current());
/// Equal blocks: x is [n_pes * B, ...]; block p goes to PE p; the result's block q came from PE
/// q. As HCCL `alltoall`.
Tensor all_to_all(const Tensor &x, CollectiveOptions opts = {},
                  std::source_location loc = std::source_location::current());
/// All PEs of the group meet; returns the barrier's token.
Tensor barrier(CollectiveOptions opts = {},
               std::source_location loc = std::source_location::current());

/// The reuse protocol of reference §7.6, so `t` can be used again (e.g. in the next loop
/// iteration): barrier on `signal`, clear t's data and signals, join, barrier again. Returns the
/// last barrier's token; pass it as `pred` to the next use of `t`.
Tensor shmem_reset(const ShmemTensor &t, const ShmemTensor &signal, std::vector<Tensor> pred = {},
                   std::source_location loc = std::source_location::current());

} // namespace pto::distributed
