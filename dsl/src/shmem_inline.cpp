// shmem_inline.cpp - The shmem ops with shape and offsets inline, as PyPTO spells them
// (pto/shmem_inline.h): a shmem_view, then the windowed op.
#include "pto/shmem_inline.h"

namespace pto::distributed {

Tensor shmem_signal(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t signal,
                    const StaticDims &shape, const std::vector<SymbolicScalar> &offsets,
                    const SymbolicScalar &target_pe, SignalOptions opts, SrcLoc loc) {
  return shmem_signal(shmem_view(src, shape, offsets, {}, loc), src_pe, signal, target_pe,
                      std::move(opts), loc);
}

Tensor shmem_wait_until(const ShmemTensor &src, const SymbolicScalar &src_pe, int32_t cmp_value,
                        const StaticDims &shape, const std::vector<SymbolicScalar> &offsets,
                        WaitOptions opts, SrcLoc loc) {
  return shmem_wait_until(shmem_view(src, shape, offsets, {}, loc), src_pe, cmp_value,
                          std::move(opts), loc);
}

Tensor shmem_clear_data(const ShmemTensor &src, const StaticDims &shape,
                        const std::vector<SymbolicScalar> &offsets, ClearOptions opts, SrcLoc loc) {
  return shmem_clear_data(shmem_view(src, shape, offsets, {}, loc), std::move(opts), loc);
}

Tensor shmem_get(const ShmemTensor &src, const SymbolicScalar &src_pe, const StaticDims &shape,
                 const std::vector<SymbolicScalar> &offsets, InlineGetOptions opts, SrcLoc loc) {
  auto window = shmem_view(src, shape, offsets, {.valid_shape = std::move(opts.valid_shape)}, loc);
  return shmem_get(window, src_pe, {.pred = std::move(opts.pred), .dtype = opts.dtype}, loc);
}

Tensor shmem_load(const ShmemTensor &src, const SymbolicScalar &src_pe, const StaticDims &shape,
                  const std::vector<SymbolicScalar> &offsets, InlineLoadOptions opts, SrcLoc loc) {
  auto window = shmem_view(src, shape, offsets, {.valid_shape = std::move(opts.valid_shape)}, loc);
  return shmem_load(window, src_pe, {.pred = std::move(opts.pred), .dtype = opts.dtype}, loc);
}

} // namespace pto::distributed
