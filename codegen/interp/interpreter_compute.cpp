// interpreter_compute.cpp - The reference interpreter's compute ops: elementwise unary and
// binary ops, reductions, full and assemble, as loops over tiles; the per-element numerics are
// scalar_ops.h's (see interpreter.cpp).
#include "pto/error.h"
#include "pto/half.h"

#include "interp/interpreter.h"
#include "interp/scalar_ops.h"
#include "passes/tile_expand.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pto::codegen::interp {

using ir::Op;
using ir::OpKind;
using U = ir::UnaryKind;
using B = ir::BinaryKind;
using R = ir::ReduceKind;
using namespace scalar;

namespace {

/// Calls f(idx) for every idx in the box [off, off + ext), row-major (last dim fastest).
template <class F>
void for_box(const std::vector<int64_t> &off, const std::vector<int64_t> &ext, F &&f) {
  size_t r = off.size();
  for (auto e : ext)
    if (e <= 0)
      return;
  std::vector<int64_t> idx = off;
  while (true) {
    f(idx);
    size_t d = r;
    while (true) {
      if (d == 0)
        return;
      --d;
      if (++idx[d] < off[d] + ext[d])
        break;
      idx[d] = off[d];
    }
  }
}

/// The per-element strides of an operand broadcast to an output of rank `r` (numpy,
/// right-aligned; a size-1 operand dim gets stride 0).
std::vector<int64_t> broadcast_strides(const Ref &in, size_t r) {
  std::vector<int64_t> s(r, 0);
  size_t ra = in.shape.size();
  for (size_t i = 0; i < ra; ++i)
    if (in.shape[i] != 1)
      s[i + r - ra] = in.strides[i];
  return s;
}

/// Touched extents of a broadcast operand for output extents `ext`.
std::vector<int64_t> broadcast_ext(const Ref &in, const std::vector<int64_t> &ext) {
  size_t r = ext.size(), ra = in.shape.size();
  std::vector<int64_t> e(ra);
  for (size_t i = 0; i < ra; ++i)
    e[i] = in.shape[i] == 1 ? std::min<int64_t>(1, ext[i + r - ra]) : ext[i + r - ra];
  return e;
}

} // namespace

int32_t Run::unary(const Op &op) {
  Ref x, y;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  if (int32_t st = check_window(x, yv))
    return st;
  const DataType in = x.dt, out = y.dt;
  const U k = ir::kind_as<U>(op.kind);
  const double attr = op.scalar ? op.scalar->f : 0.0;
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(t.size.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.at(idx);
      uint8_t *dst = y.at(idx);
      if (k == U::Cast) {
        if (is_float(in))
          store_f(dst, out, load_f(src, in));
        else
          store_i(dst, out, load_i(src, in));
      } else if (in == DT_DOUBLE) {
        store_f(dst, out, unary_f<double>(k, load_f(src, in), attr));
      } else if (is_float(in)) {
        store_f(dst, out,
                unary_f<float>(k, static_cast<float>(load_f(src, in)), static_cast<float>(attr)));
      } else {
        store_i(dst, out, unary_i(k, load_i(src, in), in));
      }
    });
  }
  return PTO_OK;
}

int32_t Run::binary(const Op &op) {
  Ref a, b, y;
  const bool has_scalar = op.scalar.has_value();
  if (int32_t st = ref(op.inputs[0], a))
    return st;
  if (!has_scalar)
    if (int32_t st = ref(op.inputs[1], b))
      return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  if (int32_t st = check_window(a, broadcast_ext(a, yv)))
    return st;
  if (!has_scalar)
    if (int32_t st = check_window(b, broadcast_ext(b, yv)))
      return st;
  const size_t r = y.shape.size();
  const auto as = broadcast_strides(a, r);
  const auto bs = has_scalar ? std::vector<int64_t>(r, 0) : broadcast_strides(b, r);
  const DataType dt = a.dt, out = y.dt; // compares and logical ops store DT_BOOL
  const bool fp = is_float(dt);
  const B k = ir::kind_as<B>(op.kind);
  // A scalar operand is an element of the tensor's dtype: round it once (as generated code does).
  const double scalar_f = has_scalar ? round_scalar(ir::as_element(*op.scalar, dt).f, dt) : 0.0;
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(r);
    for (size_t d = 0; d < r; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    bool div_zero = false;
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      if (div_zero)
        return;
      uint8_t *dst = y.at(idx);
      const uint8_t *pa = a.root + (a.lin0 + dot(idx, as)) * a.esize;
      if (fp) {
        double va = load_f(pa, a.dt);
        double vb =
            has_scalar ? scalar_f : load_f(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        if (dt == DT_DOUBLE)
          store_f(dst, out, binary_f<double>(k, va, vb));
        else
          store_f(dst, out, binary_f<float>(k, static_cast<float>(va), static_cast<float>(vb)));
      } else {
        int64_t va = load_i(pa, a.dt);
        int64_t vb =
            has_scalar ? op.scalar->i : load_i(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        int64_t res = 0;
        if (!binary_i(k, va, vb, dt, res)) {
          div_zero = true;
          return;
        }
        store_i(dst, out, res);
      }
    });
    if (div_zero)
      return fail(PTO_FAIL_DIV_ZERO, 0, 0);
  }
  return PTO_OK;
}

int32_t Run::select(const Op &op) {
  Ref c, a, b, y;
  for (auto [id, r] : {std::pair{op.inputs[0], &c}, std::pair{op.inputs[1], &a},
                       std::pair{op.inputs[2], &b}, std::pair{op.outputs[0], &y}})
    if (int32_t st = ref(id, *r))
      return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  for (const Ref *in : {&c, &a, &b})
    if (int32_t st = check_window(*in, broadcast_ext(*in, yv)))
      return st;
  const size_t r = y.shape.size();
  const auto cs = broadcast_strides(c, r), as = broadcast_strides(a, r),
             bs = broadcast_strides(b, r);
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(r);
    for (size_t d = 0; d < r; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      bool take_a = load_i(c.root + (c.lin0 + dot(idx, cs)) * c.esize, c.dt) != 0;
      const Ref &src = take_a ? a : b;
      const auto &ss = take_a ? as : bs;
      std::memmove(y.at(idx), src.root + (src.lin0 + dot(idx, ss)) * src.esize,
                   static_cast<size_t>(y.esize));
    });
  }
  return PTO_OK;
}

int32_t Run::reduce(const Op &op) {
  Ref x, y;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> xv, yv;
  if (int32_t st = valid_of(op.inputs[0], x.shape, xv))
    return st;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  const size_t xr = x.shape.size(), yr = y.shape.size(), axis = static_cast<size_t>(op.axis);
  // Output dim -> input dim (or none, for the kept-away axis of a rank-1 full reduction).
  std::vector<int> in_dim(yr, -1);
  for (size_t od = 0; od < yr; ++od) {
    if (op.keepdim)
      in_dim[od] = od == axis ? -1 : static_cast<int>(od);
    else if (xr > 1)
      in_dim[od] = static_cast<int>(od < axis ? od : od + 1);
  }
  // Tile entries index output dims; without keepdim the axis entry of the input-rank tile goes.
  std::vector<int64_t> tile;
  if (op.keepdim) {
    tile.assign(op.tile.vec.begin(), op.tile.vec.begin() + static_cast<long>(yr));
  } else {
    for (size_t d = 0; d < xr && d < op.tile.vec.size(); ++d)
      if (d != axis)
        tile.push_back(op.tile.vec[d]);
    while (tile.size() < yr)
      tile.push_back(1);
  }
  std::vector<int64_t> xs(yr, 0);
  std::vector<int64_t> touched(xr, 0);
  for (size_t od = 0; od < yr; ++od)
    if (in_dim[od] >= 0) {
      xs[od] = x.strides[static_cast<size_t>(in_dim[od])];
      touched[static_cast<size_t>(in_dim[od])] = yv[od];
    }
  const int64_t n = xv[axis], astride = x.strides[axis];
  touched[axis] = n;
  if (int32_t st = check_window(x, touched))
    return st;
  const DataType dt = x.dt;
  const R rk = ir::kind_as<R>(op.kind);
  for (const auto &t : tile_expand(y.shape, tile)) {
    std::vector<int64_t> ext(yr);
    for (size_t d = 0; d < yr; ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.root + (x.lin0 + dot(idx, xs)) * x.esize;
      const int64_t step = astride * x.esize;
      uint8_t *dst = y.at(idx);
      if (is_float(dt)) {
        auto run = [&](auto zero) {
          using C = decltype(zero);
          // A float sum starts at -0, the identity that keeps every addend (-0 + -0 = -0, as
          // IEEE 754 and NumPy sum only -0 to -0); an empty one is +0 (reduce_ops.h).
          C acc = reduce_init_f<C>(rk, n);
          for (int64_t k = 0; k < n; ++k)
            acc = reduce_step_f(rk, acc, static_cast<C>(load_f(src + k * step, dt)));
          store_f(dst, dt, static_cast<double>(acc));
        };
        if (dt == DT_DOUBLE)
          run(0.0);
        else
          run(0.0f);
      } else {
        int64_t acc = reduce_init_i(rk, dt);
        for (int64_t k = 0; k < n; ++k)
          acc = reduce_step_i(rk, acc, load_i(src + k * step, dt));
        store_i(dst, dt, acc);
      }
    });
  }
  return PTO_OK;
}

int32_t Run::full(const Op &op) {
  Ref y;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  uint8_t pattern[8] = {};
  const ir::Scalar &s = ir::scalar_of(op);
  if (s.is_int)
    store_i(pattern, y.dt, s.i);
  else
    store_f(pattern, y.dt, s.f);
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(y.shape.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      std::memcpy(y.at(idx), pattern, static_cast<size_t>(y.esize));
    });
  }
  return PTO_OK;
}

int32_t Run::assemble(const Op &op) {
  Ref x, w;
  if (int32_t st = ref(op.inputs[0], x))
    return st;
  if (int32_t st = ref(op.outputs[0], w))
    return st;
  std::vector<int64_t> wv;
  if (int32_t st = valid_of(op.outputs[0], w.shape, wv))
    return st;
  if (int32_t st = check_window(x, wv))
    return st;
  if (int32_t st = check_window(w, wv))
    return st;
  for (const auto &t : tile_expand(w.shape, op.tile.vec)) {
    std::vector<int64_t> ext(w.shape.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(wv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      std::memmove(w.at(idx), x.at(idx), static_cast<size_t>(w.esize));
    });
  }
  return PTO_OK;
}

} // namespace pto::codegen::interp
