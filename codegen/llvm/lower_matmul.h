// lower_matmul.h - LLVM IR for OpKind::Matmul (pto/matmul.h): a packed, register-blocked GEMM
// (GotoBLAS/BLIS order) whose blocking and register block come from the CPU the code is
// compiled for, not from the op's cube tile. Called by lower_llvm's region walk for each matmul
// op (always standalone: fuse.cpp never groups it, so its operands and result have storage).
//
// The register block is MR rows x NR = 2 vectors: 14 x 32 in zmm registers (28 accumulators) on
// AVX-512, 6 x 16 in ymm registers (12) below it (matmul_geometry). Per batch element: output
// columns in nc blocks; K in kc chunks, for each of which the kc x nc block of B is packed once
// into NR-wide panels (it stays in L2); rows in mc blocks, each packed into MR-wide panels
// (vector loads, an in-register transpose where the source runs along K); then per MR-row panel
// of A (in L1) the micro-kernel along the block's NR-wide tiles.
// Packed panels hold 32-bit units: an fp32 value (fp16/bf16 widened exactly), or a k pair of
// 16-bit values (int8 sign-extended, for vpmaddwd; bf16 kept as bf16, for vdpbf16ps where the
// target has AVX512_BF16 and no AMX, lower_matmul_geometry.h). fp32/int32 outputs accumulate across
// K chunks in C itself (C is written directly); fp16/bf16 outputs keep their partial sums in an
// fp32 mc x nc buffer (their B block is then packed per row block). The last chunk applies bias,
// relu and the rounding to the output dtype in the store, masked on the column and row tails.
#pragma once

#include "llvm/kernel_builder.h"
#include "llvm/lower_matmul_geometry.h"
#include "llvm/parallel_outline.h"

#include <vector>

namespace pto::codegen {

/// A range of row panels on the pool gets at least this many multiply-adds per thread.
inline constexpr int64_t kMatmulGrainMacs = int64_t{1} << 21;

/// Emits `op` (OpKind::Matmul) at the builder's insertion point. Its row blocks (per nc column
/// block and, for fp32/int32 outputs, per K chunk after B's block is packed) are a region of
/// `regions` (parallel_outline.h), to be run on the pool after lowering: split over whole
/// mr-row panels with per-worker packing buffers, never over K, so any split gives the same bits.
void lower_matmul(KernelBuilder &kb, const ir::Op &op, std::vector<ParRegion> &regions);

} // namespace pto::codegen
