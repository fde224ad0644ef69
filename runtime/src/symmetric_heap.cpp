// symmetric_heap.cpp - Per-PE heap buffers: mapped anonymous (zero-filled, first touched by the
// PE that prepares them), grown only when too small; dirty 4 KiB chunks zeroed at kernel entry.
#include "pto/runtime/symmetric_heap.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <sys/mman.h>

namespace pto::runtime {

namespace {
constexpr int kChunkShift = 12;
static_assert(SymmetricHeap::kChunkBytes == int64_t{1} << kChunkShift);

void unmap(std::byte *p, int64_t capacity) {
  if (p)
    munmap(p, size_t(capacity));
}
} // namespace

SymmetricHeap::SymmetricHeap(int n_pes) : bufs_(size_t(n_pes)) {}

SymmetricHeap::~SymmetricHeap() {
  for (auto &b : bufs_)
    unmap(b.base, b.capacity);
}

void SymmetricHeap::prepare(int pe, int64_t size_bytes, int64_t zero_bytes) {
  Buffer &b = bufs_[size_t(pe)];
  b.last_zeroed = 0;
  if (size_bytes > b.capacity) {
    // Whole chunks; at least one, so every base is a valid address.
    if (size_bytes > INT64_MAX - kChunkBytes)
      throw std::bad_alloc();
    const int64_t capacity =
        (size_bytes < 1 ? 1 : size_bytes + kChunkBytes - 1) & ~(kChunkBytes - 1);
    const int64_t words = (capacity / kChunkBytes + 63) / 64;
    auto dirty = std::make_unique<std::atomic<uint64_t>[]>(size_t(words));
    void *p =
        mmap(nullptr, size_t(capacity), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    unmap(b.base, b.capacity);
    b.base = static_cast<std::byte *>(p);
    b.capacity = capacity;
    b.dirty = std::move(dirty); // value-initialized: all clean, as the fresh pages are zero
  } else {
    // The chunks that meet [0, zero_bytes); the dirty bits of the others are kept.
    const int64_t chunks =
        zero_bytes <= 0 ? 0
                        : std::min(b.capacity, std::min(zero_bytes, INT64_MAX - kChunkBytes) +
                                                   kChunkBytes - 1) /
                              kChunkBytes;
    for (int64_t w = 0; w < (chunks + 63) / 64; ++w) {
      const int64_t in_word = std::min<int64_t>(64, chunks - w * 64);
      const uint64_t mask = in_word == 64 ? ~uint64_t{0} : (uint64_t{1} << in_word) - 1;
      uint64_t bits = b.dirty[size_t(w)].fetch_and(~mask, std::memory_order_relaxed) & mask;
      while (bits) { // each run of consecutive dirty chunks is one memset
        const int lo = __builtin_ctzll(bits);
        const uint64_t rest = ~(bits >> lo);
        const int n = rest == 0 ? 64 - lo : __builtin_ctzll(rest);
        std::memset(b.base + (w * 64 + lo) * kChunkBytes, 0, size_t(n) * size_t(kChunkBytes));
        b.last_zeroed += n * kChunkBytes;
        bits &= n + lo >= 64 ? (uint64_t{1} << lo) - 1 : ~(((uint64_t{1} << n) - 1) << lo);
      }
    }
  }
  b.size = size_bytes;
}

void SymmetricHeap::mark_written(int pe, int64_t offset, int64_t bytes) {
  Buffer &b = bufs_[size_t(pe)];
  if (bytes <= 0 || offset < 0 || offset >= b.capacity)
    return;
  const int64_t last = std::min(offset + bytes, b.capacity) - 1;
  int64_t c = offset >> kChunkShift;
  const int64_t c_end = last >> kChunkShift;
  while (c <= c_end) {
    const int64_t w = c / 64, lo = c % 64, hi = std::min<int64_t>(63, c_end - w * 64);
    const uint64_t mask =
        (hi == 63 ? ~uint64_t{0} : (uint64_t{1} << (hi + 1)) - 1) & ~((uint64_t{1} << lo) - 1);
    std::atomic<uint64_t> &word = b.dirty[size_t(w)];
    if ((word.load(std::memory_order_relaxed) & mask) != mask)
      word.fetch_or(mask, std::memory_order_relaxed);
    c = (w + 1) * 64;
  }
}

} // namespace pto::runtime
