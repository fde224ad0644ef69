// runtime_harness.h - Helpers for the runtime tests: run a body as one kernel call on a PE the
// way generated code does (begin_call, kernel_enter, body, kernel_exit, end_call), and build
// pto_blocks. Header-only; no code shared with the runtime beyond its public API.
#pragma once

#include "pto/runtime/abi.h"
#include "pto/runtime/context.h"

#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

namespace support {

/// One group of a test kernel: name, n_pes it was created with, heap size in bytes.
struct RtGroup {
  std::string name = "g";
  int n_pes = 1;
  int64_t heap_bytes = 4096;
};

/// Runs `body(ctx)` as one kernel call on the calling PE, as generated code does: the kernel
/// returns early on the first non-zero status, and end_call throws the recorded typed error.
/// `kernel_name` and `call_loc` are passed to begin_call (as pto::jit passes the kernel's name
/// and the user's line).
inline void rt_kernel(const std::vector<RtGroup> &groups,
                      const std::function<int32_t(pto_ctx *)> &body, uint64_t layout_hash = 42,
                      const std::vector<std::string> *sites = nullptr,
                      const char *kernel_name = nullptr, std::source_location call_loc = {}) {
  pto_ctx *ctx = pto::runtime::current_ctx();
  pto::runtime::begin_call(ctx, sites, kernel_name, call_loc);
  std::vector<int64_t> heap;
  std::vector<int32_t> n_pes;
  std::vector<const char *> names;
  std::vector<uint64_t> hashes;
  for (const auto &g : groups) {
    hashes.push_back(layout_hash);
    heap.push_back(g.heap_bytes);
    n_pes.push_back(g.n_pes);
    names.push_back(g.name.c_str());
  }
  int32_t st = pto_rt_kernel_enter(ctx, hashes.data(), int32_t(groups.size()), heap.data(),
                                   n_pes.data(), names.data(), nullptr, nullptr);
  if (st == PTO_OK)
    st = body(ctx);
  if (st == PTO_OK)
    pto_rt_kernel_exit(ctx);
  pto::runtime::end_call(ctx);
}

/// A row-major block of rows x cols with the given row strides (elements) for src and dst.
inline pto_block rt_block_2d(int64_t rows, int64_t cols, int64_t src_row_stride,
                             int64_t dst_row_stride) {
  return pto_block{{1, 1, rows, cols}, {0, 0, src_row_stride, 1}, {0, 0, dst_row_stride, 1}};
}

/// A contiguous 1-D block of n elements.
inline pto_block rt_block_1d(int64_t n) { return rt_block_2d(1, n, n, n); }

/// A barrier built from the primitives, as PyPTO shmem_barrier_all: signal_all ADD 1 on the
/// slot at `slot_offset`, then wait until it reaches n_pes, consuming n_pes. GE rather than EQ:
/// a fast PE may already have added its next round's 1 before a slow PE looks.
inline int32_t rt_barrier(pto_ctx *ctx, int64_t slot_offset, int32_t group = 0) {
  int32_t st = pto_rt_signal(ctx, group, -1, slot_offset, PTO_ATOMIC_ADD, 1, -1);
  if (st != PTO_OK)
    return st;
  return pto_rt_wait_until(ctx, group, slot_offset, PTO_CMP_GE, pto_rt_n_pes(ctx, group),
                           /*clear=*/1, /*slot_number=*/slot_offset / 32, -1);
}

} // namespace support
