// collectives.h - Collective operations written in the DSL itself with the shmem primitives of
// distributed.h (readable as examples: dsl/src/collectives.cpp). Semantics follow HCCL's
// (seed 001: allreduce(tensor, op, group)) and PyPTO's library collectives (reference §7).
//
// Every collective is traced into the calling kernel: it creates its own shmem tensors in
// `group`, unrolls its loops over the group's PEs at trace time, and is safe to call repeatedly
// and inside pto::loop (each call starts with a barrier, so a fast PE never overwrites data a
// slow PE has not read yet). Inputs are local tensors of rank 2-4 with static shapes; the
// exchange is over dim 0 (rows). Shmem dtypes: int8, int16, int32, int64, fp16, bf16, fp32, fp64.
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
/// "sum" | "max" | "min" | "prod" (for command lines); throws Error on anything else.
Reduction parse_reduction(const std::string &s);
const char *name(Reduction r);

/// One-shot: every PE sends its whole tensor to every PE (latency-bound sizes). Two-shot: a
/// reduce-scatter then an allgather of row blocks (bandwidth-bound sizes). AUTO picks one-shot
/// up to 64 KiB per PE or when there are fewer rows than PEs (reference §7.4).
enum class AllreduceAlgorithm { AUTO, ONE_SHOT, TWO_SHOT };

struct CollectiveOptions {
  std::string group = "world"; ///< "world" (all PEs) or a World::create_group name
  std::vector<Tensor> pred = {}; ///< run after these
};

struct AllreduceOptions {
  std::string group = "world";
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::AUTO;
  /// HCCL's fusion flag; ptojit accepts 0 (never fuse) and treats 1 and 2 like 0 for now: every
  /// call is its own exchange (results are the same; only the message count differs).
  int fusion = 0;
  int fusion_id = -1;
  std::vector<Tensor> pred = {};
};

/// Number of PEs of `group` while tracing: "world" (all PEs) or a group made with
/// World::create_group. DistributedError for any other name.
int n_pes(const std::string &group = "world",
          std::source_location loc = std::source_location::current());

/// Every PE gets the elementwise reduction of all PEs' `x` (same shape and dtype on every PE;
/// PEs that differ get a DistributedError at kernel entry). Result: x's shape, dtype and valid
/// shape. As HCCL `allreduce`.
Tensor allreduce(const Tensor &x, Reduction op, AllreduceOptions opts = {},
                 std::source_location loc = std::source_location::current());
/// Every PE gets [n_pes * R, ...]: rows [p*R, (p+1)*R) hold PE p's x. When x has a valid shape
/// [vr, vc, ...] smaller than its shape, the valid parts are packed instead, PE p's at rows
/// [p*vr, (p+1)*vr), the result's valid shape is [n_pes*vr, vc, ...] and everything else is
/// zero (as PyPTO's AllGather, reference §7.1). As HCCL `allgather`.
Tensor allgather(const Tensor &x, CollectiveOptions opts = {},
                 std::source_location loc = std::source_location::current());
/// The reduction of all PEs' x, scattered by row blocks: with B = ceil(R / n_pes), PE p gets
/// rows [p*B, min((p+1)*B, R)) as a [B, ...] tensor whose valid rows are that count (0 for
/// PEs past the end). As HCCL `reduce_scatter` (which requires R % n_pes == 0; we do not).
Tensor reduce_scatter(const Tensor &x, Reduction op, CollectiveOptions opts = {},
                      std::source_location loc = std::source_location::current());
/// Every PE gets PE `root`'s x. As HCCL `broadcast`.
Tensor broadcast(const Tensor &x, int root, CollectiveOptions opts = {},
                 std::source_location loc = std::source_location::current());
/// Personalized exchange of row blocks. `counts[i][j]` = rows PE i sends to PE j (the same
/// n_pes x n_pes matrix on every PE); PE i's x holds its blocks for PE 0, 1, ... back to back.
/// PE j gets [max_j sum_i counts[i][j], ...] holding the blocks from PE 0, 1, ... back to back,
/// with valid rows sum_i counts[i][j]. As HCCL `alltoallv`.
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
