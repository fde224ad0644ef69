// nn_common.h - The checks and helpers the composites of nn_ops.h share (nn_*.cpp): operand
// dtype rules, widening of fp16/bf16 to fp32 and back, static dims, and the rows tile the
// movement composites trace with.
#pragma once

#include "pto/ir/recorder.h"
#include "pto/nn_ops.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pto::nn {

using ir::Recorder;
using ir::Value;

/// While alive, ops capture a tile of the movement composites' own: their [L, n] and [L, m, k]
/// intermediates may have a higher rank than the caller's tile. Restores the caller's tile.
class RowsTile {
public:
  /// `x_rank`: the rank of the composite's input; the rows tile takes the caller's entries for
  /// its first and last dim. TileShapeError when no tile is set.
  RowsTile(size_t x_rank, const char *op, const SrcLoc &loc)
      : r_(Recorder::current(op, loc)), saved_(r_.vec_tile.vec) {
    if (saved_.empty())
      throw TileShapeError(loc, op, "no vec tile shape is set; call set_vec_tile_shapes first");
    rows_ = x_rank >= 2 ? saved_[0] : 1;
    cols_ = saved_[std::min(x_rank, saved_.size()) - 1];
    r_.vec_tile.vec = {rows_, cols_};
  }
  RowsTile(const RowsTile &) = delete;
  RowsTile &operator=(const RowsTile &) = delete;
  ~RowsTile() { r_.vec_tile.vec = saved_; }
  /// The tile for [L, m, k] intermediates (k the innermost).
  void use_3d(int64_t k) { r_.vec_tile.vec = {rows_, std::max<int64_t>(1, cols_ / k), k}; }
  /// The tile for [pre, n, k, post] intermediates.
  void use_4d(int64_t k) { r_.vec_tile.vec = {rows_, 1, k, cols_}; }
  void use_2d() { r_.vec_tile.vec = {rows_, cols_}; }
  void use_caller() { r_.vec_tile.vec = saved_; }

private:
  Recorder &r_;
  std::vector<int64_t> saved_;
  int64_t rows_ = 1, cols_ = 1;
};

/// A copy of the checked value of a data operand of `op` (copies stay valid as ops are added).
Value operand(const Tensor &t, const char *op, const SrcLoc &loc);

/// True for DT_FP16 and DT_BF16 (computed in fp32 by the composites).
bool is_half(DataType dt);

/// The DTypeError detail for a non-floating operand of dtype `dt`.
std::string float_expected(DataType dt);

/// The dtype of `t`, which must be floating (DTypeError naming `op` otherwise).
DataType float_operand(const Tensor &t, const char *op, const SrcLoc &loc);

/// DTypeError naming `op` unless `b` (described as `what`) has `a`'s dtype.
void same_dtype(const Tensor &a, const Tensor &b, const char *what, const char *op,
                const SrcLoc &loc);

/// Numpy broadcasting check of two shapes (the rule of ops.h), naming `op`.
void check_broadcast(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b,
                     const char *op, const SrcLoc &loc);

/// True when `a` and `b` have the same rank and structurally equal dims.
bool same_shape(const std::vector<SymbolicScalar> &a, const std::vector<SymbolicScalar> &b);

/// Checks the operands of a binary composite (add's rules) and returns their dtype. DT_BOOL is
/// refused; `float_only` refuses ints too.
DataType binary_dtype(const Operand &a, const Operand &b, bool float_only, const char *op,
                      const SrcLoc &loc);

/// `axis` of `x` normalized to [0, rank) (negative counts from the end; ShapeError otherwise).
int axis_of(const Tensor &x, int axis, const char *op, const SrcLoc &loc);

/// fp16/bf16 -> fp32 (exact); other dtypes unchanged.
Tensor widen(const Tensor &x, const SrcLoc &loc);

/// An operand widened like `widen` (scalars unchanged).
Operand widen(const Operand &o, const SrcLoc &loc);

/// y rounded once to `dt` when it was computed wider.
Tensor narrow(const Tensor &y, DataType dt, const SrcLoc &loc);

/// ArgumentError naming `op` unless `eps` (described as `what`) is finite and >= 0.
void check_eps(double eps, const char *what, const char *op, const SrcLoc &loc);

/// ArgumentError naming `op` unless the probability `p` is in [0, 1].
void check_p(double p, const char *op, const SrcLoc &loc);

/// All dims of `v` as static ints (ShapeError naming `op` otherwise).
std::vector<int64_t> static_dims(const Value &v, const char *op, const SrcLoc &loc);

/// Concrete dims as SymbolicScalars.
std::vector<SymbolicScalar> sym(const std::vector<int64_t> &dims);

/// The product of all dims but the last.
int64_t lead_of(const std::vector<int64_t> &dims);

/// x reshaped to `dims`, or x itself when it has them (a reshape is a copy loop).
Tensor reshaped(const Tensor &x, const std::vector<int64_t> &dims, const SrcLoc &loc);

/// x as [L, n] rows (L = the product of the leading dims, n the static last dim).
Tensor as_rows(const Tensor &x, const std::vector<int64_t> &dims, const SrcLoc &loc);

/// For each j of `js`: the elements j, j + k, j + 2k, ... of the last dim of the [L, n] tensor
/// `x2` (n % k == 0), as [L, n / k]. Leaves `tile` on its 2-D setting.
std::vector<Tensor> pick_every(const Tensor &x2, int64_t lead, int64_t n, int64_t k,
                               const std::vector<int64_t> &js, RowsTile &tile, const SrcLoc &loc);

/// `weight` (1-D of length 1 or C = x.shape[channel]) shaped to broadcast over x's channel dim.
Tensor channel_view(const Tensor &w, const Value &x, size_t channel, const SrcLoc &loc);

} // namespace pto::nn
