// symmetric_heap.cpp - Per-PE heap buffers: grown only when too small, zeroed at kernel entry.
#include "pto/runtime/symmetric_heap.h"

#include <cstring>
#include <new>

namespace pto::runtime {

namespace {
constexpr std::align_val_t kHeapAlign{64};
}

void SymmetricHeap::FreeAligned::operator()(std::byte *p) const {
  ::operator delete(p, kHeapAlign);
}

void SymmetricHeap::resize(int n_pes, int64_t size_bytes) {
  if (n_pes != int(buffers_.size()) || size_bytes > capacity_bytes_) {
    buffers_.clear();
    pe_base_.clear();
    capacity_bytes_ = 0;
    // Round up to whole cache lines; allocate at least one so every base is a valid address.
    const int64_t capacity = (size_bytes < 64 ? 64 : size_bytes + 63) / 64 * 64;
    for (int pe = 0; pe < n_pes; ++pe) {
      buffers_.emplace_back(static_cast<std::byte *>(::operator new(size_t(capacity), kHeapAlign)));
      pe_base_.push_back(buffers_.back().get());
    }
    capacity_bytes_ = capacity;
  }
  size_bytes_ = size_bytes;
}

void SymmetricHeap::zero(int pe) {
  if (size_bytes_ > 0)
    std::memset(pe_base_[size_t(pe)], 0, size_t(size_bytes_));
}

} // namespace pto::runtime
