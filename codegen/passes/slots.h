// slots.h - The signal-slot number of one tile of a shmem_signal / shmem_wait_until, as the slot
// model of PyPTO (reference §6.3). Shared by the interpreter, the LLVM lowering and the tests.
#pragma once

#include "pto/ir/program.h"

#include <cstdint>
#include <vector>

namespace pto::codegen {

/// Slot number (in 32-byte slots from the start of the tensor's signal array) of the tile at
/// `tile_offset` (elements, relative to the view) of a view at `view_offsets` (evaluated O),
/// for slot row `row` (the op's src_pe). With R = g.data_shape, V = g.view_shape, T = g.tile,
/// per dim d: viewIdx_d = O_d / V_d, tileIdx_d = (O_d % V_d + tile_off_d) / T_d, and
///   tileIndex = Σ_d tileIdx_d·Π_{e<d} ceil(V_e/T_e) + view_tile_num·Σ_d viewIdx_d·Π_{e<d} R_e/V_e
///   slot      = row·total_tile_num + tileIndex            (dim 0 varies fastest)
/// The caller checks that O lies inside R and row inside [0, n_pes).
inline int64_t slot_number(const ir::SlotGeometry &g, const std::vector<int64_t> &view_offsets,
                           const std::vector<int64_t> &tile_offset, int64_t row) {
  int64_t tile_index = 0, view_index = 0;
  int64_t tile_mul = 1, view_mul = 1;
  for (size_t d = 0; d < g.view_shape.size(); ++d) {
    const int64_t o = view_offsets[d], v = g.view_shape[d], t = g.tile[d];
    tile_index += (o % v + tile_offset[d]) / t * tile_mul;
    view_index += o / v * view_mul;
    tile_mul *= (v + t - 1) / t;
    view_mul *= g.data_shape[d] / v;
  }
  return row * g.total_tile_num + tile_index + g.view_tile_num * view_index;
}

} // namespace pto::codegen
