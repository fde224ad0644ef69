// interpreter_compute.cpp - The reference interpreter's compute ops: elementwise unary and
// binary ops, reductions, full and assemble, with their scalar numerics (see interpreter.cpp).
#include "interpreter.h"

#include "pto/codegen/tile_expand.h"
#include "pto/error.h"
#include "pto/half.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace pto::codegen::interp {

using ir::Op;
using ir::OpKind;

namespace {

// ---------------------------------------------------------------------------------------------
// Element conversions.


double load_f(const uint8_t *p, DataType dt) {
  switch (dt) {
  case DT_FP32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DT_DOUBLE: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case DT_FP16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_fp32(h);
  }
  case DT_BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16_to_fp32(h);
  }
  default: break;
  }
  throw InternalError("<interpreter>", "load", "not a floating dtype: " + name(dt));
}

int64_t load_i(const uint8_t *p, DataType dt) {
  switch (dt) {
  case DT_INT8: return static_cast<int8_t>(*p);
  case DT_UINT8: return *p;
  case DT_BOOL: return *p != 0;
  case DT_INT16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case DT_INT32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DT_INT64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default: break;
  }
  throw InternalError("<interpreter>", "load", "not an integer dtype: " + name(dt));
}

template <class T> T saturate(double v) {
  if (std::isnan(v))
    return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (t >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

template <class T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

/// Stores a floating value: floats round to nearest even, ints truncate toward zero and
/// saturate (NaN -> 0), bool is v != 0.
void store_f(uint8_t *p, DataType dt, double v) {
  switch (dt) {
  case DT_FP32: put(p, static_cast<float>(v)); return;
  case DT_DOUBLE: put(p, v); return;
  case DT_FP16: put(p, fp32_to_fp16(fp64_to_fp32_round_to_odd(v))); return;
  case DT_BF16: put(p, fp32_to_bf16(fp64_to_fp32_round_to_odd(v))); return;
  case DT_INT8: put(p, saturate<int8_t>(v)); return;
  case DT_INT16: put(p, saturate<int16_t>(v)); return;
  case DT_INT32: put(p, saturate<int32_t>(v)); return;
  case DT_INT64: put(p, saturate<int64_t>(v)); return;
  case DT_UINT8: put(p, saturate<uint8_t>(v)); return;
  case DT_BOOL: put(p, static_cast<uint8_t>(v != 0)); return;
  default: break;
  }
  throw InternalError("<interpreter>", "store", "unsupported dtype " + name(dt));
}

/// Stores an integer value: ints wrap (two's complement), floats round to nearest even, bool
/// is v != 0.
void store_i(uint8_t *p, DataType dt, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  switch (dt) {
  case DT_INT8: put(p, static_cast<int8_t>(static_cast<uint8_t>(u))); return;
  case DT_UINT8: put(p, static_cast<uint8_t>(u)); return;
  case DT_INT16: put(p, static_cast<int16_t>(static_cast<uint16_t>(u))); return;
  case DT_INT32: put(p, static_cast<int32_t>(static_cast<uint32_t>(u))); return;
  case DT_INT64: put(p, v); return;
  case DT_BOOL: put(p, static_cast<uint8_t>(v != 0)); return;
  case DT_FP32: put(p, static_cast<float>(v)); return; // one rounding, nearest even
  case DT_DOUBLE: put(p, static_cast<double>(v)); return;
  case DT_FP16:
  case DT_BF16: store_f(p, dt, static_cast<double>(v)); return;
  default: break;
  }
  throw InternalError("<interpreter>", "store", "unsupported dtype " + name(dt));
}

int64_t int_min(DataType dt) {
  switch (dt) {
  case DT_INT8: return std::numeric_limits<int8_t>::min();
  case DT_INT16: return std::numeric_limits<int16_t>::min();
  case DT_INT32: return std::numeric_limits<int32_t>::min();
  case DT_UINT8: return 0;
  default: return std::numeric_limits<int64_t>::min();
  }
}
int64_t int_max(DataType dt) {
  switch (dt) {
  case DT_INT8: return std::numeric_limits<int8_t>::max();
  case DT_INT16: return std::numeric_limits<int16_t>::max();
  case DT_INT32: return std::numeric_limits<int32_t>::max();
  case DT_UINT8: return std::numeric_limits<uint8_t>::max();
  default: return std::numeric_limits<int64_t>::max();
  }
}

// ---------------------------------------------------------------------------------------------
// Scalar op semantics.

template <class C> C nan_max(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  return a > b ? a : b;
}
template <class C> C nan_min(C a, C b) {
  if (std::isnan(a))
    return a;
  if (std::isnan(b))
    return b;
  return a < b ? a : b;
}

/// A floating unary op in compute type C (float for fp16/bf16/fp32, double for DT_DOUBLE).
template <class C> C unary_f(OpKind k, C x) {
  switch (k) {
  case OpKind::Neg: return -x;
  case OpKind::Abs: return std::fabs(x);
  case OpKind::Exp: return std::exp(x);
  case OpKind::Log: return std::log(x);
  case OpKind::Sqrt: return std::sqrt(x);
  case OpKind::Rsqrt: return C(1) / std::sqrt(x);
  case OpKind::Reciprocal: return C(1) / x;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a floating unary op");
}

template <class C> C binary_f(OpKind k, C a, C b) {
  switch (k) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  case OpKind::Maximum: return nan_max(a, b);
  case OpKind::Minimum: return nan_min(a, b);
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}

int64_t wrap(uint64_t u) { return static_cast<int64_t>(u); }

int64_t unary_i(OpKind k, int64_t x) {
  switch (k) {
  case OpKind::Neg: return wrap(0 - static_cast<uint64_t>(x));
  case OpKind::Abs: return x < 0 ? wrap(0 - static_cast<uint64_t>(x)) : x;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not an integer unary op");
}

/// An integer binary op in int64 (wrapping); false for a zero divisor.
bool binary_i(OpKind k, int64_t a, int64_t b, int64_t &r) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (k) {
  case OpKind::Add: r = wrap(ua + ub); return true;
  case OpKind::Sub: r = wrap(ua - ub); return true;
  case OpKind::Mul: r = wrap(ua * ub); return true;
  case OpKind::Div:
    if (b == 0)
      return false;
    r = b == -1 ? wrap(0 - ua) : a / b; // INT64_MIN / -1 wraps instead of trapping
    return true;
  case OpKind::Maximum: r = a > b ? a : b; return true;
  case OpKind::Minimum: r = a < b ? a : b; return true;
  default: break;
  }
  throw InternalError("<interpreter>", ir::op_info(k).name, "not a binary op");
}


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
  for (const auto &t : tile_expand(y.shape, op.tile.vec)) {
    std::vector<int64_t> ext(t.size.size());
    for (size_t d = 0; d < ext.size(); ++d)
      ext[d] = tile_valid(yv[d], t.offset[d], t.size[d]);
    for_box(t.offset, ext, [&](const std::vector<int64_t> &idx) {
      const uint8_t *src = x.at(idx);
      uint8_t *dst = y.at(idx);
      if (op.kind == OpKind::Cast) {
        if (is_float(in))
          store_f(dst, out, load_f(src, in));
        else
          store_i(dst, out, load_i(src, in));
      } else if (in == DT_DOUBLE) {
        store_f(dst, out, unary_f<double>(op.kind, load_f(src, in)));
      } else if (is_float(in)) {
        store_f(dst, out, unary_f<float>(op.kind, static_cast<float>(load_f(src, in))));
      } else {
        store_i(dst, out, unary_i(op.kind, load_i(src, in)));
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
  const DataType dt = y.dt;
  const bool fp = is_float(dt);
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
        double vb = has_scalar ? op.scalar->f : load_f(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        if (dt == DT_DOUBLE)
          store_f(dst, dt, binary_f<double>(op.kind, va, vb));
        else
          store_f(dst, dt,
                  binary_f<float>(op.kind, static_cast<float>(va), static_cast<float>(vb)));
      } else {
        int64_t va = load_i(pa, a.dt);
        int64_t vb = has_scalar ? op.scalar->i : load_i(b.root + (b.lin0 + dot(idx, bs)) * b.esize, b.dt);
        if (has_scalar && op.scalar_first)
          std::swap(va, vb);
        int64_t res = 0;
        if (!binary_i(op.kind, va, vb, res)) {
          div_zero = true;
          return;
        }
        store_i(dst, dt, res);
      }
    });
    if (div_zero)
      return fail(kFailDivZero, 0, 0);
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
          C acc = op.kind == OpKind::Sum    ? C(0)
                  : op.kind == OpKind::Amax ? -std::numeric_limits<C>::infinity()
                                            : std::numeric_limits<C>::infinity();
          for (int64_t k = 0; k < n; ++k) {
            C v = static_cast<C>(load_f(src + k * step, dt));
            if (op.kind == OpKind::Sum)
              acc += v;
            else if (op.kind == OpKind::Amax)
              acc = nan_max(acc, v);
            else
              acc = nan_min(acc, v);
          }
          store_f(dst, dt, static_cast<double>(acc));
        };
        if (dt == DT_DOUBLE)
          run(0.0);
        else
          run(0.0f);
      } else {
        int64_t acc = op.kind == OpKind::Sum    ? 0
                      : op.kind == OpKind::Amax ? int_min(dt)
                                                : int_max(dt);
        for (int64_t k = 0; k < n; ++k) {
          int64_t v = load_i(src + k * step, dt);
          if (op.kind == OpKind::Sum)
            acc = wrap(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
          else if (op.kind == OpKind::Amax)
            acc = v > acc ? v : acc;
          else
            acc = v < acc ? v : acc;
        }
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
  const ir::Scalar &s = *op.scalar;
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
