// symmetric_heap.h - One group's symmetric heap: a buffer per PE of the group, all of the same
// size, so one byte offset names the same object on every PE (remote address = PE base + offset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace pto::runtime {

/// Per-PE buffers of one group, 64-byte aligned. Not thread-safe: resize() runs while every PE
/// is held in the kernel-entry barrier; zero(pe) is called by PE `pe` alone.
class SymmetricHeap {
public:
  /// Makes `n_pes` buffers of at least `size_bytes` bytes each, reusing the existing ones if they
  /// are large enough (contents are then unspecified until zero()). Throws std::bad_alloc.
  void resize(int n_pes, int64_t size_bytes);
  /// Zeroes PE `pe`'s buffer (the first size_bytes() bytes).
  void zero(int pe);
  /// Base address of PE `pe`'s buffer (64-byte aligned), or null before the first resize().
  std::byte *base(int pe) const { return pe_base_[size_t(pe)]; }
  /// The usable size in bytes, as requested by the last resize().
  int64_t size_bytes() const { return size_bytes_; }
  /// Number of PE buffers.
  int n_pes() const { return int(pe_base_.size()); }

private:
  struct FreeAligned {
    void operator()(std::byte *p) const;
  };
  std::vector<std::unique_ptr<std::byte, FreeAligned>> buffers_;
  std::vector<std::byte *> pe_base_;
  int64_t size_bytes_ = 0;
  int64_t capacity_bytes_ = 0;
};

} // namespace pto::runtime
