// shmem_inline.h - PyPTO's spellings of the shmem ops that take the window's shape and offsets
// inline (reference §6.2): `shmem_signal(src, src_pe, signal, shape, offsets, target_pe)`,
// `shmem_wait_until(src, src_pe, cmp_value, shape, offsets)`, `shmem_clear_data(src, shape,
// offsets)`, `shmem_get(src, src_pe, shape, offsets, valid_shape=...)` and `shmem_load(...)`
// (issue 13, item 5). Each is `shmem_view(src, shape, offsets[, {.valid_shape}])` followed by the
// windowed op of pto/distributed.h, so the rules, dtypes and errors are those two ops' (a bad
// window is a DistributedError or ShapeError naming "shmem_view" at the same line).
#pragma once

#include "pto/distributed.h"
#include "pto/static_dims.h"

#include <optional>
#include <vector>

namespace pto::distributed {

/// As shmem_signal on shmem_view(src, shape, offsets). `target_pe` = -1 (concrete) signals every
/// PE of the group, as PyPTO's `target_pe=-1` (shmem_signal_all); the windowed shmem_signal takes
/// -1 the same way. Shape entries must be static (StaticDims).
Tensor shmem_signal(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                    const StaticDims &shape, const std::vector<SymbolicScalar> &offsets,
                    const SymbolicScalar &target_pe, SignalOptions opts = {},
                    SrcLoc loc = SrcLoc::current());

/// As shmem_wait_until on shmem_view(src, shape, offsets).
Tensor shmem_wait_until(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                        const StaticDims &shape, const std::vector<SymbolicScalar> &offsets,
                        WaitOptions opts = {}, SrcLoc loc = SrcLoc::current());

/// As shmem_clear_data on shmem_view(src, shape, offsets): zeroes exactly that window of this
/// PE's data (PyPTO: a contiguous run from the offset).
Tensor shmem_clear_data(const ShmemTensor &src, const StaticDims &shape,
                        const std::vector<SymbolicScalar> &offsets, ClearOptions opts = {},
                        SrcLoc loc = SrcLoc::current());

/// The keywords of the inline shmem_get, in PyPTO's order (`valid_shape`, `pred`), plus ptojit's
/// `dtype` (GetOptions::dtype).
struct InlineGetOptions {
  std::optional<std::vector<SymbolicScalar>> valid_shape = {};
  std::vector<Tensor> pred = {};
  DataType dtype = DT_BOTTOM;
};
/// As shmem_get on shmem_view(src, shape, offsets, {.valid_shape}): a [shape] local tensor whose
/// valid shape is `valid_shape` (default: the window's).
Tensor shmem_get(const ShmemTensor &src, const SymbolicScalar &src_pe, const StaticDims &shape,
                 const std::vector<SymbolicScalar> &offsets, InlineGetOptions opts = {},
                 SrcLoc loc = SrcLoc::current());

/// The keywords of the inline shmem_load, in PyPTO's order (`pred`, `valid_shape`).
struct InlineLoadOptions {
  std::vector<Tensor> pred = {};
  std::optional<std::vector<SymbolicScalar>> valid_shape = {};
  DataType dtype = DT_BOTTOM;
};
/// As shmem_load on shmem_view(src, shape, offsets, {.valid_shape}).
Tensor shmem_load(const ShmemTensor &src, const SymbolicScalar &src_pe, const StaticDims &shape,
                  const std::vector<SymbolicScalar> &offsets, InlineLoadOptions opts = {},
                  SrcLoc loc = SrcLoc::current());

} // namespace pto::distributed
