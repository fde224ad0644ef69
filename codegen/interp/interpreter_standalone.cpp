// interpreter_standalone.cpp - The reference interpreter's standalone ops (ir::OpFamily::
// Standalone: argmax/argmin, cumsum/cumprod, arange, uniform/normal, reshape, expand, permute,
// concat, tile, pad, tril/triu): plain loops over the output's valid region with the semantics
// documented in op_kinds.def, shape_ops.h and reduce_ops.h. Movement ops copy element bytes; a
// source element outside its input's valid region reads as 0.
#include "pto/error.h"

#include "interp/interpreter.h"

#include <cmath>
#include <cstring>

namespace pto::codegen::interp {

using ir::Op;
using ir::OpKind;
using S = ir::StandaloneKind;

namespace {

/// Calls f(idx) for every index of the box [0, ext) in row-major order.
template <class F> void for_each_index(const std::vector<int64_t> &ext, F &&f) {
  for (auto e : ext)
    if (e <= 0)
      return;
  std::vector<int64_t> idx(ext.size(), 0);
  while (true) {
    f(idx);
    size_t d = ext.size();
    while (true) {
      if (d == 0)
        return;
      --d;
      if (++idx[d] < ext[d])
        break;
      idx[d] = 0;
    }
  }
}

bool inside(const std::vector<int64_t> &i, const std::vector<int64_t> &valid) {
  for (size_t d = 0; d < i.size(); ++d)
    if (i[d] < 0 || i[d] >= valid[d])
      return false;
  return true;
}

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11), Random123's constants.
void philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{0xD2511F53} * ctr[0];
    uint64_t p1 = uint64_t{0xCD9E8D57} * ctr[2];
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ k0;
    uint32_t n1 = static_cast<uint32_t>(p1);
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ k1;
    uint32_t n3 = static_cast<uint32_t>(p0);
    ctr[0] = n0;
    ctr[1] = n1;
    ctr[2] = n2;
    ctr[3] = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

/// The value of flat element `i` of a Uniform/Normal op (shape_ops.h gives the mapping).
double random_at(const Op &op, int64_t i) {
  auto b = static_cast<uint64_t>(i / 4);
  int lane = static_cast<int>(i % 4);
  uint32_t w[4] = {static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                   static_cast<uint32_t>(op.rng_counter),
                   static_cast<uint32_t>(op.rng_counter >> 32)};
  philox4x32_10(w, static_cast<uint32_t>(op.rng_key), static_cast<uint32_t>(op.rng_key >> 32));
  const double a = op.reals.at(0), c = op.reals.at(1);
  if (op.kind == OpKind::Uniform)
    return a + (c - a) * (static_cast<double>(w[lane] >> 8) * 0x1p-24);
  int even = lane & ~1;
  double u1 = (static_cast<double>(w[even] >> 8) + 1.0) * 0x1p-24;
  double u2 = static_cast<double>(w[even + 1] >> 8) * 0x1p-24;
  double r = std::sqrt(-2.0 * std::log(u1));
  double t = 6.283185307179586 * u2; // 2 pi
  return a + c * (lane == even ? r * std::cos(t) : r * std::sin(t));
}

} // namespace

int32_t Run::standalone(const Op &op) {
  Ref y;
  if (int32_t st = ref(op.outputs[0], y))
    return st;
  std::vector<int64_t> yv;
  if (int32_t st = valid_of(op.outputs[0], y.shape, yv))
    return st;
  std::vector<Ref> xs(op.inputs.size());
  std::vector<std::vector<int64_t>> xv(op.inputs.size());
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    if (int32_t st = ref(op.inputs[k], xs[k]))
      return st;
    if (int32_t st = valid_of(op.inputs[k], xs[k].shape, xv[k]))
      return st;
    if (int32_t st = check_window(xs[k], xv[k]))
      return st;
  }
  const size_t yr = y.shape.size();
  const auto es = static_cast<size_t>(y.esize);
  // Copies source element `i` of input 0 to `dst`, or zero when it lies outside the valid region.
  auto copy_in = [&](const std::vector<int64_t> &i, uint8_t *dst) {
    if (inside(i, xv[0]))
      std::memcpy(dst, xs[0].at(i), es);
    else
      std::memset(dst, 0, es);
  };
  switch (ir::kind_as<S>(op.kind)) {
  case S::Argmax:
  case S::Argmin: {
    const Ref &x = xs[0];
    const size_t axis = static_cast<size_t>(op.axis), xr = x.shape.size();
    const int64_t n = xv[0][axis];
    const bool is_max = op.kind == OpKind::Argmax;
    for_each_index(yv, [&](const std::vector<int64_t> &o) {
      std::vector<int64_t> i;
      if (op.keepdim)
        i = o;
      else if (xr == 1)
        i = {0};
      else {
        i = o;
        i.insert(i.begin() + static_cast<long>(axis), 0);
      }
      int64_t best_k = -1;
      if (is_float(x.dt)) {
        double best = 0;
        for (int64_t k = 0; k < n; ++k) {
          i[axis] = k;
          double v = load_f(x.at(i), x.dt);
          if (std::isnan(v)) { // the first NaN wins
            best_k = k;
            break;
          }
          if (best_k < 0 || (is_max ? v > best : v < best)) {
            best = v;
            best_k = k;
          }
        }
      } else {
        int64_t best = 0;
        for (int64_t k = 0; k < n; ++k) {
          i[axis] = k;
          int64_t v = load_i(x.at(i), x.dt);
          if (best_k < 0 || (is_max ? v > best : v < best)) {
            best = v;
            best_k = k;
          }
        }
      }
      store_i(y.at(o), y.dt, best_k);
    });
    return PTO_OK;
  }
  case S::Cumsum:
  case S::Cumprod: {
    const Ref &x = xs[0];
    const size_t axis = static_cast<size_t>(op.axis);
    const bool sum = op.kind == OpKind::Cumsum;
    std::vector<int64_t> outer = xv[0];
    const int64_t n = outer[axis];
    outer[axis] = n > 0 ? 1 : 0;
    for_each_index(outer, [&](const std::vector<int64_t> &o) {
      std::vector<int64_t> i = o;
      if (!is_float(x.dt)) {
        uint64_t acc = sum ? 0 : 1;
        for (int64_t k = 0; k < n; ++k) {
          i[axis] = k;
          auto v = static_cast<uint64_t>(load_i(x.at(i), x.dt));
          acc = sum ? acc + v : acc * v; // wraps (two's complement)
          store_i(y.at(i), y.dt, static_cast<int64_t>(acc));
        }
        return;
      }
      auto run = [&](auto zero) {
        using C = decltype(zero);
        C acc = sum ? -C(0) : C(1); // -0 keeps the first element's sign (cumsum([-0]) = -0)
        for (int64_t k = 0; k < n; ++k) {
          i[axis] = k;
          C v = static_cast<C>(load_f(x.at(i), x.dt));
          acc = sum ? acc + v : acc * v;
          store_f(y.at(i), y.dt, static_cast<double>(acc));
        }
      };
      if (x.dt == DT_DOUBLE)
        run(0.0);
      else
        run(0.0f);
    });
    return PTO_OK;
  }
  case S::Arange: {
    int64_t start = 0, step = 0;
    if (int32_t st = eval(op.start, start))
      return st;
    if (int32_t st = eval(op.step, step))
      return st;
    for (int64_t i = 0; i < yv[0]; ++i) {
      if (is_float(y.dt))
        store_f(y.at({i}), y.dt, op.reals.at(0) + static_cast<double>(i) * op.reals.at(1));
      else
        store_i(y.at({i}), y.dt, start + i * step);
    }
    return PTO_OK;
  }
  case S::Uniform:
  case S::Normal: {
    const auto ys = row_major(y.shape);
    for_each_index(yv, [&](const std::vector<int64_t> &o) {
      store_f(y.at(o), y.dt, random_at(op, dot(o, ys)));
    });
    return PTO_OK;
  }
  case S::Reshape: {
    const auto ys = row_major(y.shape), xst = row_major(xs[0].shape);
    const size_t xr = xs[0].shape.size();
    std::vector<int64_t> i(xr);
    for_each_index(yv, [&](const std::vector<int64_t> &o) {
      int64_t lin = dot(o, ys);
      for (size_t d = 0; d < xr; ++d)
        i[d] = (lin / xst[d]) % xs[0].shape[d];
      copy_in(i, y.at(o));
    });
    return PTO_OK;
  }
  case S::Expand:
  case S::Tile:
  case S::Permute: {
    const size_t xr = xs[0].shape.size(), off = yr - xr;
    std::vector<int64_t> i(xr);
    for_each_index(yv, [&](const std::vector<int64_t> &o) {
      for (size_t d = 0; d < xr; ++d) {
        if (op.kind == OpKind::Permute)
          i[static_cast<size_t>(op.perm[d])] = o[d];
        else if (op.kind == OpKind::Expand)
          i[d] = xs[0].shape[d] == 1 ? 0 : o[d + off];
        else
          i[d] = o[d + off] % xs[0].shape[d];
      }
      copy_in(i, y.at(o));
    });
    return PTO_OK;
  }
  case S::Concat: {
    const size_t axis = static_cast<size_t>(op.axis);
    int64_t start = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      for_each_index(xv[k], [&](const std::vector<int64_t> &i) {
        std::vector<int64_t> o = i;
        o[axis] += start;
        std::memcpy(y.at(o), xs[k].at(i), es);
      });
      start += xs[k].shape[axis];
    }
    return PTO_OK;
  }
  case S::Pad: {
    uint8_t pattern[8] = {};
    const ir::Scalar &s = ir::scalar_of(op);
    if (s.is_int)
      store_i(pattern, y.dt, s.i);
    else
      store_f(pattern, y.dt, s.f);
    for_each_index(yv, [&](const std::vector<int64_t> &o) {
      if (inside(o, xv[0]))
        std::memcpy(y.at(o), xs[0].at(o), es);
      else
        std::memcpy(y.at(o), pattern, es);
    });
    return PTO_OK;
  }
  case S::Tril:
  case S::Triu: {
    int64_t diag = 0;
    if (int32_t st = eval(op.diagonal, diag))
      return st;
    for_each_index(yv, [&](const std::vector<int64_t> &o) {
      int64_t c_minus_r = o[yr - 1] - o[yr - 2];
      bool keep = op.kind == OpKind::Tril ? c_minus_r <= diag : c_minus_r >= diag;
      if (keep)
        std::memcpy(y.at(o), xs[0].at(o), es);
      else
        std::memset(y.at(o), 0, es);
    });
    return PTO_OK;
  }
  }
  throw InternalError(op.where, ir::op_info(op.kind).name,
                      "no interpreter rule for this standalone op (a ptojit bug)");
}

} // namespace pto::codegen::interp
