// lower_matmul_geometry.h - The register block and cache blocking lower_matmul.h's GEMM uses on
// the JIT's target (no LLVM types: the matmul tests size their cases past every block with it).
#pragma once

#include "pto/dtype.h"

#include <cstdint>
#include <optional>

namespace pto::codegen {

/// The micro-kernel and blocking of one matmul (all in elements, k in 32-bit units: pairs for
/// int8 and dot-product bf16).
struct MatmulGeometry {
  unsigned lanes = 8;  ///< W: 32-bit lanes of one vector (16 on AVX-512, 8 below)
  int64_t mr = 6;      ///< rows of the register block
  int64_t nr = 16;     ///< columns of the register block: 2 vectors
  int64_t kg = 1;      ///< k elements per packed 32-bit unit (2: int8 or vdpbf16ps bf16)
  int64_t kcu = 256;   ///< k units per K chunk (an A micro-panel mr x kcu stays in L1)
  int64_t mc = 96;     ///< rows per packed A block, a multiple of mr
  int64_t nc = 1024;   ///< columns per block (the B block kcu x nc stays in L2), a multiple of nr
  bool dpbf16 = false; ///< bf16 through vdpbf16ps
};

/// The geometry for inputs `in`. bf16 runs on vdpbf16ps where the target has AVX512_BF16 but not
/// AMX: Intel's cores with AMX (Sapphire Rapids on) issue a zmm vdpbf16ps (64 FLOP) at a quarter
/// of the zmm FMA rate (32 FLOP, two per cycle), so there fp32 FMAs on widened bf16 are twice as
/// fast (bench/compare's limits on a Xeon with AMX: vdpbf16ps 52 vs FMA 104 GFLOP/s, one core);
/// on the AMD EPYC of issue 11 vdpbf16ps ran at twice the FMA peak (530 vs 267 GFLOP/s). on the
/// JIT's target (host_target(), PTO_ISA applied) and this host's L1/L2 data cache sizes, the blocks
/// clamped to `m`, `k`, `n` where those are > 0 (the concrete extents, so a small matmul allocates
/// small scratch).
MatmulGeometry matmul_geometry(DataType in, int64_t m, int64_t k, int64_t n);

/// Tests only: forces bf16's vdpbf16ps path on (true) or off (false) where the target has
/// AVX512_BF16, or restores the rule above (nullopt). Affects kernels compiled afterwards (the
/// JIT cache keeps programs already built: tests use shapes no other test compiles).
void set_matmul_dpbf16_for_tests(std::optional<bool> use);

} // namespace pto::codegen
