// lower_matmul.h - LLVM IR for OpKind::Matmul (pto/matmul.h): a packed, register-blocked GEMM
// (GotoBLAS/BLIS order) whose blocking and register block come from the CPU the code is
// compiled for, not from the op's cube tile. Called by lower_llvm's region walk for each matmul
// op (always standalone: fuse.cpp never groups it, so its operands and result have storage).
//
// The register block is MR rows x NR = 2 vectors: 14 x 32 in zmm registers (28 accumulators) on
// AVX-512, 6 x 16 in ymm registers (12) below it (matmul_geometry). Per batch element: output
// columns in nc blocks; K in kc chunks, for each of which the kc x nc block of B is packed once
// into NR-wide panels; rows in mc blocks, each packed into MR-wide panels (vector loads, an
// in-register transpose where the source runs along K); then the micro-kernel per MR x NR tile.
// Packed panels hold 32-bit units: an fp32 value (fp16/bf16 widened exactly), or a k pair of
// 16-bit values (int8 sign-extended, for vpmaddwd; bf16 kept as bf16, for vdpbf16ps where the
// target has AVX512_BF16). fp32/int32 outputs accumulate across K chunks in C itself (C is
// written directly); fp16/bf16 outputs keep their partial sums in an fp32 mc x nc buffer (their
// B block is then packed per row block). The last chunk applies bias, relu and the rounding to
// the output dtype in the store, masked on the column and row tails.
#pragma once

#include "llvm/kernel_builder.h"

#include <cstdint>

namespace pto::codegen {

/// The micro-kernel and blocking of one matmul (all in elements, k in 32-bit units: pairs for
/// int8 and dot-product bf16).
struct MatmulGeometry {
  unsigned lanes = 8;  ///< W: 32-bit lanes of one vector (16 on AVX-512, 8 below)
  int64_t mr = 6;      ///< rows of the register block
  int64_t nr = 16;     ///< columns of the register block: 2 vectors
  int64_t kg = 1;      ///< k elements per packed 32-bit unit (2: int8 or vdpbf16ps bf16)
  int64_t kcu = 256;   ///< k units per K chunk (the B micro-panel kcu x nr stays in L1)
  int64_t mc = 96;     ///< rows per block (the A block mc x kcu stays in L2), a multiple of mr
  int64_t nc = 4096;   ///< columns per block, a multiple of nr
  bool dpbf16 = false; ///< bf16 through vdpbf16ps
};

/// The geometry for inputs `in` on the JIT's target (host_target(), PTO_ISA applied) and this
/// host's L1/L2 data cache sizes, the blocks clamped to `m`, `k`, `n` where those are > 0 (the
/// concrete extents, so a small matmul allocates small scratch).
MatmulGeometry matmul_geometry(DataType in, int64_t m, int64_t k, int64_t n);

/// Emits `op` (OpKind::Matmul) at the builder's insertion point.
void lower_matmul(KernelBuilder &kb, const ir::Op &op);

} // namespace pto::codegen
