// matmul.h - Matrix multiplication, as PyPTO `matmul` (reference §5 "Matrix"), with the
// cube tile shapes of `set_cube_tile_shapes` (reference §3.4).
//
// The cube tile is checked and recorded as PyPTO's; the CPU kernel blocks for the CPU it runs
// on instead (codegen/llvm/lower_matmul.h: fp32 or int32 accumulation, fp16/bf16 operands
// widened to fp32 exactly or multiplied in bf16 pairs by vdpbf16ps, a register-blocked
// micro-kernel at the host's vector width, int8 by widening multiply-add into int32). The L0
// sizes are checked as PyPTO checks them.
#pragma once

#include "pto/tensor.h"

#include <cstdint>
#include <optional>
#include <source_location>
#include <vector>

namespace pto {

struct CubeTileOptions {
  /// Also split K across cores, accumulating in global memory (PyPTO): only for fp32/int32
  /// outputs without bias or relu (checked by matmul). On a CPU the result is the same.
  bool enable_split_k = false;
};

/// The vec tile edge a rank-2 matmul sets when no vec tile is set (PyPTO's [128, 128]).
inline constexpr int64_t kMatmulDefaultVecTile = 128;

/// The scratch one cube tile may use: as PyPTO bounds the blocks by its L1/L0 buffers, ptojit
/// bounds (mL1*kAL1 + kBL1*nL1 + mL1*nL1) * 4 by 2^28 bytes (256 MiB). (The CPU kernel's own
/// per-call scratch, its packed blocks, is a few MiB whatever the cube tile.)
inline constexpr int64_t kMaxCubeScratchBytes = int64_t{1} << 28;

/// Sets the cube tile captured by every later `matmul`, as PyPTO `set_cube_tile_shapes`:
/// `m = [mL0, mL1]`, `n = [nL0, nL1]`, `k = [kL0, kL1]` or `[kL0, kAL1, kBL1]` (elements; with
/// two entries kBL1 = kAL1). Throws TileShapeError unless m and n have exactly 2 entries and k 2
/// or 3, every entry is > 0, each L1 entry is a multiple of its L0 entry (so L0 <= L1), kL0
/// and nL0 are multiples of 16, and the blocks fit kMaxCubeScratchBytes.
void set_cube_tile_shapes(const std::vector<int64_t> &m, const std::vector<int64_t> &k,
                          const std::vector<int64_t> &n, CubeTileOptions opts = {},
                          std::source_location loc = std::source_location::current());

/// The current cube tile (empty vectors when none is set), as PyPTO `get_cube_tile_shapes`.
struct CubeTileShapes {
  std::vector<int64_t> m, k, n;
  bool enable_split_k = false;
};
CubeTileShapes get_cube_tile_shapes();

struct MatmulOptions {
  bool a_trans = false; ///< a is stored [..., K, M]
  bool b_trans = false; ///< b is stored [..., N, K]
  /// Added to every output row: shape [1, N] (PyPTO `bias_tensor`) or [N], of the output dtype.
  std::optional<Tensor> bias = std::nullopt;
  bool relu = false; ///< max(x, 0) after the bias (PyPTO `relu_type = RELU`); NaN propagates
};

/// a @ b, as PyPTO `matmul(a, b, out_dtype, a_trans=, b_trans=, extend_params=)`.
/// - Ranks 2, 3 or 4, both operands the same rank (ShapeError otherwise); a is [..., M, K] and b
///   [..., K, N] (after the transposes); the batch dims broadcast numpy-style; the K dims must
///   be equal. The result is [batch..., M, N] of `out_dtype`.
/// - Dtypes (DTypeError otherwise): fp16 x fp16 -> fp16 | fp32, bf16 x bf16 -> bf16 | fp32,
///   fp32 x fp32 -> fp32, int8 x int8 -> int32. Floats accumulate in fp32 (products of
///   fp16/bf16 are exact in fp32) and are rounded once to `out_dtype`; int8 accumulates in int32,
///   wrapping on overflow.
/// - Valid shapes: M and N from the operands' valid extents, the contraction over the smaller
///   valid K of the two.
/// - Throws TileShapeError when no cube tile is set ("call set_cube_tile_shapes first"), and for
///   enable_split_k with a bias, relu, or an fp16/bf16 output.
/// - Vec tile: as PyPTO, a rank-2 matmul traced while no vec tile is set sets the current one
///   to [kMatmulDefaultVecTile, kMatmulDefaultVecTile] (the later ops of the scope, such as the
///   assemble of `out[:] = matmul(...)`, capture it). Rank 3 and 4 need a vec tile set by the
///   user (PyPTO's rule), else the next vector op's TileShapeError says none is set.
Tensor matmul(const Tensor &a, const Tensor &b, DataType out_dtype, MatmulOptions opts = {},
              std::source_location loc = std::source_location::current());

} // namespace pto
