// lower_matmul_geometry.h - The register block and cache blocking lower_matmul.h's GEMM uses on
// the JIT's target (no LLVM types: the matmul tests size their cases past every block with it).
#pragma once

#include "pto/dtype.h"

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

} // namespace pto::codegen
