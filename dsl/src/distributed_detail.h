// distributed_detail.h - Internal to the shmem front-ends (distributed.cpp, distributed_sync.cpp):
// the argument checks, slot geometry and token helpers they share.
#pragma once

#include "pto/distributed.h"
#include "pto/ir/recorder.h"

#include <string>
#include <vector>

namespace pto::distributed::detail {

/// create_shmem_tensor and create_shmem_signal without the fresh-per-iteration protocol: for
/// the library collectives, which run their own reuse protocol (collectives_internal.h).
ShmemTensor make_shmem_tensor(const std::string &group, int n_pes, DataType dtype,
                              const std::vector<int64_t> &shape, const SrcLoc &loc);
ShmemTensor make_shmem_signal(const std::string &group, int n_pes, const SrcLoc &loc);

/// The tile of a signal-only object: a [1, 8] window with one tile (one slot per row).
ir::TileShape signal_only_tile();
/// "[2, 8]".
std::string dims_str(const std::vector<int64_t> &d);
/// The shmem tensor `t` of the traced program (DistributedError when it is not one; ShapeError
/// for view fields edited by hand).
const ir::ShmemInfo &shmem_of(ir::Recorder &r, const ShmemTensor &t, const char *op,
                              const SrcLoc &loc);
/// The values of `pred`, used by op `op`.
std::vector<ir::ValueId> use_preds(ir::Recorder &r, const std::vector<Tensor> &pred, const char *op,
                                   const SrcLoc &loc);
/// A new dependency token of `shape`.
Tensor make_token(ir::Recorder &r, std::vector<SymbolicScalar> shape);
/// The token shape of signal/wait ops: pred's shape (one pred), else [1, 1].
std::vector<SymbolicScalar> pred_token_shape(ir::Recorder &r,
                                             const std::vector<ir::ValueId> &preds);
/// PE number `pe` (`what` names it) must lie in [0, n_pes): DistributedError now when known,
/// else by the call.
void check_pe(ir::Recorder &r, const SymbolicScalar &pe, int n_pes, const char *what,
              const ir::ShmemInfo &s, const char *op, const SrcLoc &loc);
/// `d` as concrete SymbolicScalars.
std::vector<SymbolicScalar> sym_dims(const std::vector<int64_t> &d);
/// How messages name the window `t` of shmem tensor `s`.
std::string window_phrase(const ir::ShmemInfo &s, const ShmemTensor &t);
/// The whole `shape` at `offsets` must lie in a shmem window of `parent_shape`, named `parent`.
void check_shmem_window(ir::Recorder &r, const std::vector<int64_t> &shape,
                        const std::vector<SymbolicScalar> &offsets,
                        const std::vector<int64_t> &parent_shape, std::string parent,
                        const char *op, const SrcLoc &loc);
/// The view `t` must lie in the data of `s`.
void check_view(ir::Recorder &r, const ir::ShmemInfo &s, const ShmemTensor &t, const char *op,
                const SrcLoc &loc);
/// Reference §6.3: the slot geometry of a signal/wait over `t`'s window with tile `tile` (and
/// the congruence rule: one view shape and tile per shmem tensor).
ir::SlotGeometry slot_geometry(ir::Recorder &r, const ShmemTensor &t, const ir::TileShape &tile,
                               const char *op, const SrcLoc &loc);
/// The checked ShmemPut op of shmem_put (not emitted; its token is outputs[0]), its errors
/// naming `op`.
ir::Op trace_put(const Tensor &src, const std::vector<SymbolicScalar> &offsets,
                 const ShmemTensor &dst, const SymbolicScalar &dst_pe, const PutOptions &opts,
                 const char *op, const SrcLoc &loc);
/// The IR's atomic for the user's `field` (put_op, sig_op); DistributedError naming `op` for a
/// value outside the enum (a cast integer).
ir::Atomic to_atomic(AtomicType a, const char *field, const char *op, const SrcLoc &loc);
/// The IR's comparison for the user's `cmp`; DistributedError naming `op` outside the enum.
ir::Cmp to_cmp(OpType c, const char *op, const SrcLoc &loc);

} // namespace pto::distributed::detail
