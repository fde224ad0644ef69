// nn_select.cpp - Tracing of the creation, selection and movement composites of
// nn_ops.h. Each checks its operands first (so errors name the
// composite, not an inner op), then traces existing ops.
#include "pto/nn_ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"

#include "nn/nn_common.h"
#include "trace_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace pto {

using ir::Recorder;
using ir::Value;
using namespace trace;
using namespace nn;

// ---- creation and selection ----------------------------------------------------------------

Tensor full_like(const Tensor &x, double value, DataType dtype, SrcLoc loc) {
  UserOpScope user_op("full_like");
  Value v = operand(x, "full_like", loc);
  return full(v.shape, value, dtype == DT_BOTTOM ? v.dtype : dtype, {}, loc);
}
Tensor zeros_like(const Tensor &x, SrcLoc loc) {
  UserOpScope user_op("zeros_like");
  return full_like(x, 0, DT_BOTTOM, loc);
}
Tensor ones_like(const Tensor &x, SrcLoc loc) {
  UserOpScope user_op("ones_like");
  return full_like(x, 1, DT_BOTTOM, loc);
}

namespace {
IndexValue arg_with_value(bool is_max, const Tensor &x, int axis, ReduceOptions opts,
                          const SrcLoc &loc) {
  const char *op = is_max ? "argmax_with_value" : "argmin_with_value";
  Value v = operand(x, op, loc);
  if (v.dtype == DT_BOOL)
    throw DTypeError(loc, op, "reductions over DT_BOOL are not defined; cast to an int type");
  norm_axis(axis, v.shape.size(), op, loc);
  if (is_max)
    return {argmax(x, axis, opts, loc), amax(x, axis, opts, loc)};
  return {argmin(x, axis, opts, loc), amin(x, axis, opts, loc)};
}
} // namespace

IndexValue argmax_with_value(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  UserOpScope user_op("argmax_with_value");
  return arg_with_value(true, x, axis, opts, loc);
}
IndexValue argmin_with_value(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  UserOpScope user_op("argmin_with_value");
  return arg_with_value(false, x, axis, opts, loc);
}

Tensor fillpad(const Tensor &x, double value, SrcLoc loc) {
  UserOpScope user_op("fillpad");
  const char *op = "fillpad";
  Value v = operand(x, op, loc);
  if (!is_float(v.dtype) && (!std::isfinite(value) || value != std::trunc(value)))
    throw DTypeError(
        loc, op,
        fmt::format("non-integral value {} for a tensor of dtype {}", value, name(v.dtype)));
  // A pad of nothing: pad copies the valid region and writes `value` everywhere else.
  return pad(x, {0, 0}, value, loc);
}

Tensor gathermask(const Tensor &x, int pattern_mode, SrcLoc loc) {
  UserOpScope user_op("gathermask");
  const char *op = "gathermask";
  Value v = operand(x, op, loc);
  if (pattern_mode < 1 || pattern_mode > 7)
    throw ArgumentError(loc, op, fmt::format("pattern_mode must be 1..7, got {}", pattern_mode));
  if (pattern_mode == 7)
    return clone(x, loc);
  auto dims = static_dims(v, op, loc);
  int64_t k = pattern_mode <= 2 ? 2 : 4;
  int64_t j = pattern_mode <= 2 ? pattern_mode - 1 : pattern_mode - 3;
  int64_t n = dims.back();
  if (n % k != 0)
    throw ShapeError(
        loc, op,
        fmt::format("pattern_mode {} needs a last dim that is a multiple of {}, got {}",
                    pattern_mode, k, n));
  Tensor picked;
  {
    RowsTile tile(dims.size(), op, loc);
    picked = pick_every(as_rows(x, dims, loc), lead_of(dims), n, k, {j}, tile, loc)[0];
  }
  // Valid: the leading dims keep x's; on the last, the picked positions j, j + k, ... below the
  // valid extent.
  std::vector<SymbolicScalar> valid = v.valid;
  valid.back() = (valid.back() - j + (k - 1)) / k;
  std::vector<int64_t> out = dims;
  out.back() = n / k;
  if (same_shape(picked.shape(), sym(out))) // a view sets the valid extent without a copy
    return view(picked, out, std::vector<SymbolicScalar>(out.size(), 0), {.valid_shape = valid},
                loc);
  return reshape(picked, sym(out), {.valid_shape = valid}, loc);
}

namespace {
/// [L, 2n] rows -> their even and odd elements, each as [L, n].
std::pair<Tensor, Tensor> even_odd(const Tensor &rows2, int64_t lead, int64_t n2, RowsTile &tile,
                                   const SrcLoc &loc) {
  auto parts = pick_every(rows2, lead, n2, 2, {0, 1}, tile, loc);
  return {parts[0], parts[1]};
}

std::pair<Tensor, Tensor> reshaped_pair(const std::pair<Tensor, Tensor> &p,
                                        const std::vector<int64_t> &dims, const SrcLoc &loc) {
  return {reshaped(p.first, dims, loc), reshaped(p.second, dims, loc)};
}

/// The static dims of a and b, which must be equal with an even last dim.
std::vector<int64_t> pair_dims(const Tensor &a, const Tensor &b, const char *op,
                               const SrcLoc &loc) {
  same_dtype(a, b, "other", op, loc);
  auto da = static_dims(operand(a, op, loc), op, loc);
  auto db = static_dims(operand(b, op, loc), op, loc);
  if (da != db)
    throw ShapeError(loc, op,
                     "input " + str(sym(da)) + " and other " + str(sym(db)) +
                         " must have the same shape");
  if (da.back() % 2 != 0)
    throw ShapeError(loc, op, fmt::format("the last dim must be even, got {}", da.back()));
  return da;
}
} // namespace

std::pair<Tensor, Tensor> interleave(const Tensor &a, const Tensor &b, SrcLoc loc) {
  UserOpScope user_op("interleave");
  const char *op = "interleave";
  auto dims = pair_dims(a, b, op, loc);
  int64_t lead = lead_of(dims), n = dims.back();
  std::pair<Tensor, Tensor> halves;
  {
    RowsTile tile(dims.size(), op, loc);
    Tensor ra = as_rows(a, dims, loc), rb = as_rows(b, dims, loc);
    // [L, n, 2] holds the stream a0 b0 a1 b1 ... row-major; its halves are the two results.
    tile.use_3d(2);
    Tensor pairs = stack({ra, rb}, 2, loc);
    tile.use_2d();
    Tensor stream = reshape(pairs, {lead, 2 * n}, {}, loc);
    halves = {view(stream, {lead, n}, {0, 0}, {}, loc), view(stream, {lead, n}, {0, n}, {}, loc)};
  }
  return reshaped_pair(halves, dims, loc);
}

std::pair<Tensor, Tensor> deinterleave(const Tensor &a, const Tensor &b, SrcLoc loc) {
  UserOpScope user_op("deinterleave");
  const char *op = "deinterleave";
  auto dims = pair_dims(a, b, op, loc);
  int64_t lead = lead_of(dims), n = dims.back();
  std::pair<Tensor, Tensor> parts;
  {
    RowsTile tile(dims.size(), op, loc);
    Tensor stream = concat({as_rows(a, dims, loc), as_rows(b, dims, loc)}, 1, loc);
    parts = even_odd(stream, lead, 2 * n, tile, loc);
  }
  return reshaped_pair(parts, dims, loc);
}

std::pair<Tensor, Tensor> deinterleave(const Tensor &a, SrcLoc loc) {
  UserOpScope user_op("deinterleave");
  const char *op = "deinterleave";
  auto dims = static_dims(operand(a, op, loc), op, loc);
  if (dims.back() % 2 != 0)
    throw ShapeError(loc, op, fmt::format("the last dim must be even, got {}", dims.back()));
  int64_t n2 = dims.back();
  auto out = dims;
  out.back() = n2 / 2;
  std::pair<Tensor, Tensor> parts;
  {
    RowsTile tile(dims.size(), op, loc);
    parts = even_odd(as_rows(a, dims, loc), lead_of(dims), n2, tile, loc);
  }
  return reshaped_pair(parts, out, loc);
}

Tensor strided_slice(const Tensor &x, const std::vector<int64_t> &begin,
                     const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                     SrcLoc loc) {
  UserOpScope user_op("strided_slice");
  const char *op = "strided_slice";
  Value v = operand(x, op, loc);
  auto dims = static_dims(v, op, loc);
  size_t r = dims.size();
  if (begin.size() != r || end.size() != r || strides.size() != r)
    throw ShapeError(loc, op,
                     fmt::format("begin, end and strides need {} entries (the rank of x), got {}, "
                                 "{} and {}",
                                 r, begin.size(), end.size(), strides.size()));
  std::vector<int64_t> start(r), count(r), step(r);
  for (size_t d = 0; d < r; ++d) {
    int64_t s = strides[d];
    if (s <= 0)
      throw ArgumentError(loc, op,
                          fmt::format("strides must be > 0 (negative strides are not supported), "
                                      "got {} for dim {}",
                                      s, d));
    auto clamped = [&](int64_t i) {
      return std::clamp<int64_t>(i < 0 ? i + dims[d] : i, 0, dims[d]);
    };
    int64_t b = clamped(begin[d]), e = clamped(end[d]);
    count[d] = e > b ? 1 + (e - b - 1) / s : 0; // ceil((e - b) / s) without overflow
    if (count[d] == 0)
      throw ShapeError(
          loc, op,
          fmt::format("dim {}: [{}, {}) with stride {} of a dim of {} selects nothing; "
                      "ptojit has no empty tensors",
                      d, begin[d], end[d], s, dims[d]));
    start[d] = b;
    // One pick needs no stride; with more, s < e - b <= the dim, so count * s stays below
    // twice the dim (no overflow).
    step[d] = count[d] == 1 ? 1 : s;
  }
  // The window from `start` holding every picked element: count * stride elements, or fewer at
  // the end of a dim (the missing tail is padded with zeros that are never picked).
  std::vector<int64_t> cur(r);
  for (size_t d = 0; d < r; ++d)
    cur[d] = step[d] == 1 ? count[d] : std::min(count[d] * step[d], dims[d] - start[d]);
  Tensor y = view(x, cur, sym(start), {}, loc);
  RowsTile tile(r, op, loc);
  for (size_t d = 0; d < r; ++d) {
    int64_t s = step[d], n = count[d];
    if (s == 1)
      continue;
    tile.use_caller();
    if (cur[d] < n * s) {
      auto pad_shape = sym(cur);
      pad_shape[d] = SymbolicScalar(n * s - cur[d]);
      y = concat({y, full(pad_shape, 0.0, v.dtype, {}, loc)}, static_cast<int>(d), loc);
      cur[d] = n * s;
    }
    // [pre, n, s, post]: element 0 of each group of s along dim d.
    int64_t pre = 1, post = 1;
    for (size_t e = 0; e < d; ++e)
      pre *= cur[e];
    for (size_t e = d + 1; e < r; ++e)
      post *= cur[e];
    tile.use_4d(s);
    Tensor groups = reshape(y, {pre, n, s, post}, {}, loc);
    Tensor firsts = view(groups, {pre, n, 1, post}, {0, 0, 0, 0}, {}, loc);
    tile.use_caller();
    cur[d] = n;
    y = reshape(firsts, sym(cur), {}, loc);
  }
  return y;
}

} // namespace pto
