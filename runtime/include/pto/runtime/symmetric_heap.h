// symmetric_heap.h - One group's symmetric heap on shared memory: a buffer per PE of the group,
// all of the same size, so one byte offset names the same object on every PE (remote address =
// PE base + offset). Each buffer remembers which 4 KiB chunks were written since it was last
// zeroed, so that making it zero again at the next kernel entry clears only those.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace pto::runtime {

/// Per-PE buffers of one group: page-aligned, zero-filled when first mapped.
class SymmetricHeap {
public:
  /// Bytes per dirty-tracking chunk.
  static constexpr int64_t kChunkBytes = 4096;

  /// A heap of `n_pes` buffers, none mapped yet.
  explicit SymmetricHeap(int n_pes);
  ~SymmetricHeap();
  SymmetricHeap(const SymmetricHeap &) = delete;
  SymmetricHeap &operator=(const SymmetricHeap &) = delete;

  /// Makes PE `pe`'s buffer at least `size_bytes` long with bytes [0, zero_bytes) zero: a buffer
  /// that is large enough is kept and only its chunks written since the last zeroing that meet
  /// [0, zero_bytes) are cleared (the others stay marked for a later prepare), else a new
  /// zero-filled one is mapped. Bytes past zero_bytes keep what they held. Called by PE `pe`
  /// alone while no PE accesses that buffer (kernel entry). Throws std::bad_alloc.
  void prepare(int pe, int64_t size_bytes, int64_t zero_bytes = INT64_MAX);
  /// Records that bytes [offset, offset + bytes) of PE `pe`'s buffer were written (any thread;
  /// cheap when the chunks are already marked). Bytes past the buffer are ignored.
  void mark_written(int pe, int64_t offset, int64_t bytes);
  /// Base address of PE `pe`'s buffer, or null before its first prepare().
  std::byte *base(int pe) const { return bufs_[size_t(pe)].base; }
  /// The usable size in bytes requested by PE `pe`'s last prepare().
  int64_t size_bytes(int pe) const { return bufs_[size_t(pe)].size; }
  /// Number of PE buffers.
  int n_pes() const { return int(bufs_.size()); }
  /// Bytes zeroed by PE `pe`'s last prepare() (0 for a freshly mapped buffer), for tests.
  int64_t last_zeroed_bytes(int pe) const { return bufs_[size_t(pe)].last_zeroed; }

private:
  struct Buffer {
    std::byte *base = nullptr;
    int64_t size = 0, capacity = 0, last_zeroed = 0;
    std::unique_ptr<std::atomic<uint64_t>[]> dirty; ///< one bit per chunk of the capacity
  };
  std::vector<Buffer> bufs_;
};

} // namespace pto::runtime
