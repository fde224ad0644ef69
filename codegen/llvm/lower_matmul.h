// lower_matmul.h - LLVM IR for OpKind::Matmul (pto/matmul.h): a packed, register-blocked GEMM
// blocked by the op's cube tile. Called by lower_llvm's region walk for each matmul op (always
// standalone: fuse.cpp never groups it, so its operands and result have storage).
//
// Blocking (GotoBLAS order, per batch element): output columns in nL1 blocks, rows in mL1 blocks
// (rounded up to the 6-row register block), K in kL1 chunks. Per (row block, K chunk) the A and
// B chunks are packed into contiguous panels (fp16/bf16 widened to fp32, int8 to int16 pairs,
// transposes resolved, tails zero-padded), then a 6 x 16 micro-kernel keeps the C block in 12
// <8 x float> (or <8 x i32>) registers: per k one broadcast of A and two FMAs per row (int8:
// vpmaddwd on k pairs). Partial sums of a multi-chunk K live in an fp32/int32 block buffer; the
// last chunk applies bias, relu and the rounding to the output dtype in the store, masked on the
// column tail and skipped past the row tail.
#pragma once

#include "llvm/kernel_builder.h"

namespace pto::codegen {

/// Emits `op` (OpKind::Matmul) at the builder's insertion point.
void lower_matmul(KernelBuilder &kb, const ir::Op &op);

} // namespace pto::codegen
