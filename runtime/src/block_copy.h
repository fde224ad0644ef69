// block_copy.h - Internal: the element loops of put, get and clear over a strided pto_block, with
// dtype conversion (abi.h, pto_rt_put). Bounds were checked by the caller; the loops run
// unchecked, with a memmove fast path for contiguous same-dtype rows and ISA-dispatched vector
// loops (chosen at run time) for ADD.
#pragma once

#include "pto/runtime/abi.h"

#include <cstddef>
#include <cstdint>

namespace pto::runtime::detail {

/// Bytes per element of a supported dtype code, 0 for any other code.
int64_t element_size(pto_dtype dt);

/// The byte range [lo, hi] (inclusive) that a non-empty block with `stride` (elements of
/// `esize` bytes) spans from its first element at byte 0; lo <= 0 <= hi. 128-bit: extents
/// times strides cannot overflow.
void block_span(const pto_block &b, const int64_t *stride, int64_t esize, __int128 &lo,
                __int128 &hi);

/// Copies a non-empty block from `src` (dtype src_dt, b.src_stride) to `dst` (dst_dt,
/// b.dst_stride), converting each element. `src` and `dst` may overlap only if they are the same
/// dtype and the block is contiguous on both sides (memmove).
void copy_block(const pto_block &b, const std::byte *src, pto_dtype src_dt, std::byte *dst,
                pto_dtype dst_dt);

/// Adds a non-empty block from `src` into `dst` (dst += convert(src)); dst_dt is not bool.
/// Atomic against every other add_block of this process on the same bytes (no update is lost):
/// the destination is locked in 4 KiB stripes by address, one stripe at a time.
void add_block(const pto_block &b, const std::byte *src, pto_dtype src_dt, std::byte *dst,
               pto_dtype dst_dt);

/// Zeroes a non-empty block of `esize`-byte elements at `dst` (b.dst_stride).
void zero_block(const pto_block &b, std::byte *dst, int64_t esize);

} // namespace pto::runtime::detail
