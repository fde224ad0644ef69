// collectives_into.h - PyPTO's C++ library collectives (reference §7.1, 7.3, 7.4:
// `Distributed::AllGather`, `ReduceScatter`, `OneShotAllReduce`, `TwoShotAllReduce`), which work
// in a shmem tensor the caller created and write into an output the caller made, with the
// arguments in PyPTO's order (pred token, input, shmem tensor, output). Each runs PyPTO's own
// protocol on the primitives of distributed.h, so a ported program behaves as upstream,
// including when it reuses the shmem tensor (issue 13, item 6). The collectives of
// collectives.h (their own buffers, a returned result, any reduction, deterministic algorithms)
// remain the ptojit form.
//
// Common rules (errors name the op as PyPTO spells it, snake_case, at the user's line):
// - `pred`: run after this token (an empty Tensor: no dependency); the result is a token of the
//   last gets (pass it as `pred` to what follows, e.g. dist::shmem_reset of the shmem tensor).
// - `in`: a local tensor of rank 2-4 with static dims; the exchange is over dim 0 (rows). Only
//   its valid region is sent; every PE of the shmem tensor's group must pass the same shape and
//   valid shape (DistributedError at kernel entry when they differ at trace time).
// - `shmem`: the caller's create_shmem_tensor, whose group and PE count are the collective's;
//   it must be fresh for every call: created in the kernel body or in a loop body
//   (pto/distributed.h), or reset with dist::shmem_reset before each further use in the same
//   kernel. This holds for every protocol, the SET ones (allgather) too: a fast PE's signals of
//   the next call would land before a slow PE's wait of this call clears its slot, so reuse
//   without a reset ends in a DeadlockError (ONE_SHOT, allgather, reduce_scatter) or, for
//   TWO_SHOT's ADD accumulator, a sum counted twice. Its shape
//   and dtype are checked (ShapeError / DTypeError, naming what was expected).
// - `out`: a kernel output or local tensor (pto::tensor) the result is assembled into at
//   offset 0 (assemble's rules and errors apply).
// - The current vec tile (set_vec_tile_shapes) tiles the puts, signals and waits, as upstream
//   (one signal slot per tile of the window).
#pragma once

#include "pto/collectives.h"
#include "pto/distributed.h"

#include <source_location>

namespace pto::distributed {

/// PyPTO `OneShotAllReduce(pred, in, shmem, out)` (§7.4): every PE ADD-puts its valid region of
/// `in` [R, C...] into `shmem` [R, C...] on every PE, then ADD-signals that PE; each waits until
/// its slots count n_pes (with clear) and gets its shmem data (in's valid shape, converted to
/// in's dtype) into `out` [R, C...]. Sum only; floating-point sums are in arrival order.
/// shmem's dtype is in's, or fp32 for fp16/bf16 inputs.
Tensor one_shot_allreduce(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
                          const Tensor &out,
                          std::source_location loc = std::source_location::current());

/// PyPTO `TwoShotAllReduce(pred, in, shmem, out)` (§7.4): with B = R / n_pes rows per block
/// (R % n_pes == 0, ShapeError otherwise), every PE ADD-puts rows block p of `in` into `shmem`
/// [B, C...] on PE p and signals slot row p on every PE; then for each p waits until row p counts
/// n_pes (with clear) and gets block p from PE p into `out` [R, C...] at row p * B. The valid
/// shape of `in` is kept per block (block p's valid rows: min(max(vr - p * B, 0), B)).
Tensor two_shot_allreduce(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
                          const Tensor &out,
                          std::source_location loc = std::source_location::current());

/// PyPTO `AllGather(pred, in, shmem, out)` (§7.1): every PE SET-puts `in` [R, C...] into rows
/// [me * R, (me + 1) * R) of `shmem` [n_pes * R, C...] on every PE and signals there; each PE
/// waits for every sender's window (with clear) and assembles sender p's valid region [vr, vc...]
/// into `out` at row p * vr, as upstream (the valid parts packed; out is [n_pes * R, C...]).
/// shmem's dtype must be in's.
Tensor allgather(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem, const Tensor &out,
                 std::source_location loc = std::source_location::current());

/// PyPTO `ReduceScatter(pred, in, shmem, out, reduce_type)` (§7.3): with B = R / n_pes
/// (R % n_pes == 0), every PE ADD-puts rows block p of `in` into `shmem` [B, C...] on PE p and
/// signals it; each waits until its slots count n_pes (with clear) and gets its block (converted
/// to in's dtype) into `out` [B, C...]. Only Reduction::SUM (the protocol adds with ADD puts):
/// another reduction is a DistributedError pointing at dist::reduce_scatter(x, op).
Tensor reduce_scatter(const Tensor &pred, const Tensor &in, const ShmemTensor &shmem,
                      const Tensor &out, Reduction reduce_type = Reduction::SUM,
                      std::source_location loc = std::source_location::current());

} // namespace pto::distributed
