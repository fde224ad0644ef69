// size_math.h - The one place where sizes computed from user input are overflow-checked: int64
// multiply/add that report overflow, the byte size of a dense tensor, and the size limits every
// layer (HostTensor, the tracer, codegen, the runtime) enforces. Header-only, like error.h.
//
// The rule: no extent exceeds kMaxExtent = 2^62 — not a tensor's size in bytes (its dims
// multiplied with every zero dim counted as 1, so that every row-major stride in bytes fits
// too), not a dim, not a tile entry. The sum of two extents (an offset plus a size, a size plus
// a tile minus one) then never overflows int64, so code that adds two checked extents needs no
// further check.
#pragma once

#include "pto/error.h"

#include <cstdint>
#include <optional>
#include <source_location>
#include <span>
#include <string>

namespace pto {

/// The largest extent (bytes of a tensor, a dim, a tile entry): 2^62.
inline constexpr int64_t kMaxExtent = int64_t{1} << 62;

/// The most bytes one group's symmetric heap may hold on each PE (the data and signal arrays of
/// its shmem tensors): 2^40 (1 TiB). create_shmem_tensor and the signal ops check it at trace
/// time, so a layout that cannot be allocated fails at the user's line, not at a later put.
inline constexpr int64_t kMaxSymmetricHeapBytes = int64_t{1} << 40;

/// `a * b`, or nullopt when it overflows int64.
inline std::optional<int64_t> mul_checked(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// `a + b`, or nullopt when it overflows int64.
inline std::optional<int64_t> add_checked(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// True when the window [offset, offset + size) lies inside [0, dim), computed without
/// overflow (offset and size may be any int64, dim >= 0).
inline bool window_fits(int64_t offset, int64_t size, int64_t dim) {
  return offset >= 0 && size >= 0 && size <= dim && offset <= dim - size;
}

/// The size in bytes of a dense row-major tensor of `dims` with `elem_bytes` per element, or
/// nullopt when a dim is negative or the size, counting zero dims as 1, exceeds kMaxExtent.
/// A zero dim gives 0 bytes.
inline std::optional<int64_t> dense_bytes(std::span<const int64_t> dims, int64_t elem_bytes) {
  int64_t bound = elem_bytes; // the size with zero dims counted as 1: the largest stride
  bool empty = false;
  for (int64_t d : dims) {
    if (d < 0)
      return std::nullopt;
    empty = empty || d == 0;
    auto b = mul_checked(bound, d == 0 ? 1 : d);
    if (!b || *b > kMaxExtent)
      return std::nullopt;
    bound = *b;
  }
  return empty ? 0 : bound;
}

/// "[2, 3, 4]".
inline std::string dims_str(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// The detail of the error for a tensor too large for kMaxExtent: "shape [..] of fp32 needs more
/// than 4611686018427387904 bytes (2^62, the largest tensor ptojit supports)".
inline std::string too_large_detail(std::span<const int64_t> dims, const std::string &dtype) {
  return "shape " + dims_str(dims) + " of " + dtype + " needs more than " +
         std::to_string(kMaxExtent) +
         " bytes (2^62, the largest tensor ptojit supports; counting zero dims as 1)";
}

/// dense_bytes, or ShapeError at `loc` naming `op` (see too_large_detail) when it fails. Negative
/// dims are the caller's to reject first (this names them only as too large).
inline int64_t checked_dense_bytes(std::span<const int64_t> dims, int64_t elem_bytes,
                                   const std::string &dtype, const char *op,
                                   const std::source_location &loc) {
  auto b = dense_bytes(dims, elem_bytes);
  if (!b)
    throw ShapeError(loc, op, too_large_detail(dims, dtype));
  return *b;
}

/// `a * b` for a size the user's input determines (`what` names it in the message, e.g. "dim 0
/// of the result"); ShapeError at `loc` naming `op` when the product is negative, overflows
/// int64 or exceeds kMaxExtent.
inline int64_t checked_extent_mul(int64_t a, int64_t b, const char *what, const char *op,
                                  const std::source_location &loc) {
  auto r = mul_checked(a, b);
  if (!r || *r < 0 || *r > kMaxExtent)
    throw ShapeError(loc, op,
                     std::string(what) + " " + std::to_string(a) + " * " + std::to_string(b) +
                         " exceeds " + std::to_string(kMaxExtent) +
                         " (2^62, the largest extent ptojit supports)");
  return *r;
}

/// `a + b` for a size the user's input determines; errors as checked_extent_mul.
inline int64_t checked_extent_add(int64_t a, int64_t b, const char *what, const char *op,
                                  const std::source_location &loc) {
  auto r = add_checked(a, b);
  if (!r || *r < 0 || *r > kMaxExtent)
    throw ShapeError(loc, op,
                     std::string(what) + " " + std::to_string(a) + " + " + std::to_string(b) +
                         " exceeds " + std::to_string(kMaxExtent) +
                         " (2^62, the largest extent ptojit supports)");
  return *r;
}

} // namespace pto
