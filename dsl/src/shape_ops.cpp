// shape_ops.cpp - Tracing of the shape, movement and creation ops of shape_ops.h: argument
// checks, result shapes and valid shapes, then one standalone ir::Op (split and stack are
// compositions of view / unsqueeze / concat; ones is full).
#include "pto/shape_ops.h"

#include "shape_rules.h"
#include "trace_checks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace pto {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using ir::ValueId;
using namespace trace;

namespace {

/// Appends a standalone op of `kind` and returns its result. `user_op` names the op in errors.
Tensor emit(Recorder &r, OpKind kind, const char *user_op, std::vector<ValueId> ins, DataType dt,
            std::vector<SymbolicScalar> shape, std::vector<SymbolicScalar> valid, const SrcLoc &loc,
            const std::function<void(ir::Op &)> &attrs = {}) {
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = std::move(ins);
  o.tile = ir::capture_tile(r, shape.size(), user_op, loc);
  o.user_op = user_op; // run-time messages too (a UserOpScope of a composite still wins)
  if (attrs)
    attrs(o);
  check_result_size(shape, dt, user_op, loc);
  Tensor out = make_local(r, dt, std::move(shape), std::move(valid));
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

void check_out_rank(size_t rank, const char *op, const SrcLoc &loc) {
  if (rank < 1 || rank > 4)
    throw ShapeError(loc, op,
                     fmt::format("the result would have rank {}; ops take rank 1 to 4", rank));
}

/// The element count of `s` (checked when static: ShapeError naming `op` past 2^62).
SymbolicScalar numel(const std::vector<SymbolicScalar> &s, const char *op, const SrcLoc &loc) {
  SymbolicScalar n(1);
  for (auto &d : s)
    n = dim_mul(n, d, "element count", op, loc);
  return n;
}

bool all_concrete(const std::vector<SymbolicScalar> &s) {
  return std::all_of(s.begin(), s.end(), [](const SymbolicScalar &d) { return d.is_concrete(); });
}

bool fully_valid(const Value &v) {
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (!v.valid[d].same_as(v.shape[d]))
      return false;
  return true;
}

/// Positions of the dims that are not the constant 1.
std::vector<size_t> non_ones(const std::vector<SymbolicScalar> &s) {
  std::vector<size_t> out;
  for (size_t d = 0; d < s.size(); ++d)
    if (!is_one(s[d]))
      out.push_back(d);
  return out;
}

/// Reshape with the result's valid shape given or inferred (see ReshapeOptions).
Tensor reshape_impl(const Tensor &x, std::vector<SymbolicScalar> s,
                    std::optional<std::vector<SymbolicScalar>> valid, const char *op,
                    const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const Value v = data_operand(r, x, op, loc);
  check_out_rank(s.size(), op, loc);
  int infer = -1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!s[d].is_concrete())
      continue;
    int64_t n = s[d].concrete();
    if (n == -1) {
      if (infer >= 0)
        throw ShapeError(loc, op, "only one dim may be -1");
      infer = static_cast<int>(d);
    } else if (n < 1) {
      throw ShapeError(loc, op, fmt::format("dim {} must be > 0 or -1, got {}", d, n));
    }
  }
  if (infer >= 0) {
    if (!all_concrete(v.shape))
      throw ShapeError(loc, op,
                       "-1 needs static input dims, got " + str(v.shape) + "; give every dim");
    int64_t known = 1;
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int>(d) != infer) {
        if (!s[d].is_concrete())
          throw ShapeError(loc, op, "-1 needs the other dims static, got " + str(s));
        known = checked_extent_mul(known, s[d].concrete(), "element count", op, loc);
      }
    int64_t total = numel(v.shape, op, loc).concrete();
    if (total % known != 0)
      throw ShapeError(
          loc, op,
          fmt::format("cannot reshape {} ({} elements) into {}", str(v.shape), total, str(s)));
    s[static_cast<size_t>(infer)] = SymbolicScalar(total / known);
  }
  SymbolicScalar nin = numel(v.shape, op, loc), nout = numel(s, op, loc);
  if (nin.is_concrete() && nout.is_concrete()) {
    if (nin.concrete() != nout.concrete())
      throw ShapeError(loc, op,
                       fmt::format("cannot reshape {} ({} elements) into {} ({} elements)",
                                   str(v.shape), nin.concrete(), str(s), nout.concrete()));
  } else if (!nin.same_as(nout)) {
    throw ShapeError(loc, op,
                     "cannot show that " + str(v.shape) + " and " + str(s) +
                         " have the same element count; give dims built from the input's");
  }
  std::vector<SymbolicScalar> out_valid;
  if (valid) {
    check_valid_shape(r, *valid, s, op, loc);
    out_valid = *valid;
  } else if (fully_valid(v)) {
    out_valid = s;
  } else {
    auto a = non_ones(v.shape), b = non_ones(s);
    bool same = a.size() == b.size();
    for (size_t k = 0; same && k < a.size(); ++k)
      same = v.shape[a[k]].same_as(s[b[k]]);
    if (same) { // only size-1 dims inserted or removed: the valid extents move with the data
      out_valid.assign(s.size(), SymbolicScalar(1));
      for (size_t k = 0; k < b.size(); ++k)
        out_valid[b[k]] = v.valid[a[k]];
    } else {
      out_valid = s;
    }
  }
  return emit(r, OpKind::Reshape, op, {v.id}, v.dtype, s, std::move(out_valid), loc);
}

Tensor permute_impl(const Tensor &x, std::vector<int> perm, const char *op, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const Value v = data_operand(r, x, op, loc);
  size_t rank = v.shape.size();
  if (perm.size() != rank)
    throw ShapeError(loc, op, fmt::format("perm has {} entries for rank {}", perm.size(), rank));
  std::vector<bool> seen(rank, false);
  for (auto &p : perm) {
    p = norm_axis(p, rank, op, loc, "dim");
    if (seen[static_cast<size_t>(p)])
      throw ShapeError(loc, op, fmt::format("dim {} appears twice in the permutation", p));
    seen[static_cast<size_t>(p)] = true;
  }
  std::vector<SymbolicScalar> shape, valid;
  for (int p : perm) {
    shape.push_back(v.shape[static_cast<size_t>(p)]);
    valid.push_back(v.valid[static_cast<size_t>(p)]);
  }
  return emit(r, OpKind::Permute, op, {v.id}, v.dtype, std::move(shape), std::move(valid), loc,
              [&](ir::Op &o) { o.perm = perm; });
}

/// Checks 1..128 operands of one dtype and rank; returns their values (copies).
std::vector<Value> list_operands(Recorder &r, const std::vector<Tensor> &xs, const char *op,
                                 const SrcLoc &loc) {
  if (xs.empty() || xs.size() > 128)
    throw ShapeError(loc, op, fmt::format("takes 1 to 128 tensors, got {}", xs.size()));
  std::vector<Value> vs;
  for (auto &t : xs)
    vs.push_back(data_operand(r, t, op, loc));
  for (size_t k = 1; k < vs.size(); ++k) {
    if (vs[k].dtype != vs[0].dtype)
      throw DTypeError(loc, op,
                       fmt::format("tensor {} has dtype {}, tensor 0 has {}; cast first", k,
                                   name(vs[k].dtype), name(vs[0].dtype)));
    if (vs[k].shape.size() != vs[0].shape.size())
      throw ShapeError(loc, op,
                       fmt::format("tensor {} has rank {}, tensor 0 has rank {}", k,
                                   vs[k].shape.size(), vs[0].shape.size()));
  }
  return vs;
}

SymbolicScalar min_of(const SymbolicScalar &a, const SymbolicScalar &b) {
  return a.same_as(b) ? a : min(a, b);
}

} // namespace

Tensor trace::count_tensor(const SymbolicScalar &n, DataType dt, const SrcLoc &loc) {
  auto &r = Recorder::current("arange", loc);
  Tensor c = emit(r, OpKind::Arange, "arange", {}, DT_INT64, {SymbolicScalar(1)},
                  {SymbolicScalar(1)}, loc, [&](ir::Op &o) {
                    o.start = n;
                    o.step = SymbolicScalar(0);
                  });
  return cast(c, dt, loc);
}

Tensor reshape(const Tensor &x, const std::vector<SymbolicScalar> &shape, ReshapeOptions opts,
               SrcLoc loc) {
  if (opts.inplace) {
    auto &r = Recorder::current("reshape", loc);
    const Value v = data_operand(r, x, "reshape", loc);
    if (v.kind == ir::ValueKind::View)
      throw ShapeError(loc, "reshape",
                       fmt::format("inplace = true on '{}', a view; as PyPTO, a view is reshaped "
                                   "only with inplace = false (the default)",
                                   v.name));
  }
  return reshape_impl(x, shape, opts.valid_shape, "reshape", loc);
}

Tensor unsqueeze(const Tensor &x, int dim, SrcLoc loc) {
  auto &r = Recorder::current("unsqueeze", loc);
  const Value v = data_operand(r, x, "unsqueeze", loc);
  int d = norm_axis(dim, v.shape.size() + 1, "unsqueeze", loc, "dim");
  auto s = v.shape, val = v.valid;
  s.insert(s.begin() + d, SymbolicScalar(1));
  val.insert(val.begin() + d, SymbolicScalar(1));
  return reshape_impl(x, s, val, "unsqueeze", loc);
}

Tensor squeeze(const Tensor &x, const std::vector<int> &dims, SrcLoc loc) {
  auto &r = Recorder::current("squeeze", loc);
  const Value v = data_operand(r, x, "squeeze", loc);
  size_t rank = v.shape.size();
  std::vector<bool> drop(rank, dims.empty());
  for (int d : dims)
    drop[static_cast<size_t>(norm_axis(d, rank, "squeeze", loc, "dim"))] = true;
  std::vector<SymbolicScalar> s, val;
  for (size_t d = 0; d < rank; ++d)
    if (!(drop[d] && is_one(v.shape[d]))) {
      s.push_back(v.shape[d]);
      val.push_back(v.valid[d]);
    }
  if (s.empty()) {
    s.emplace_back(1);
    val.emplace_back(1);
  }
  return reshape_impl(x, s, val, "squeeze", loc);
}

Tensor expand(const Tensor &x, const std::vector<SymbolicScalar> &shape, SrcLoc loc) {
  const char *op = "expand";
  auto &r = Recorder::current(op, loc);
  const Value v = data_operand(r, x, op, loc);
  size_t tr = shape.size(), xr = v.shape.size();
  check_out_rank(tr, op, loc);
  if (tr < xr)
    throw ShapeError(
        loc, op,
        fmt::format("target {} has fewer dims than the input {}", str(shape), str(v.shape)));
  std::vector<SymbolicScalar> out, valid;
  for (size_t d = 0; d < tr; ++d) {
    const SymbolicScalar &t = shape[d];
    bool keep = t.is_concrete() && t.concrete() == -1;
    if (t.is_concrete() && t.concrete() < 1 && !keep)
      throw ShapeError(loc, op, fmt::format("dim {} must be > 0 or -1, got {}", d, t.concrete()));
    if (d < tr - xr) { // a new leading dim
      if (keep)
        throw ShapeError(loc, op, fmt::format("dim {} is new; -1 is not allowed there", d));
      out.push_back(t);
      valid.push_back(t);
      continue;
    }
    size_t xd = d - (tr - xr);
    if (keep || v.shape[xd].same_as(t)) {
      out.push_back(v.shape[xd]);
      valid.push_back(v.valid[xd]);
    } else if (is_one(v.shape[xd])) {
      out.push_back(t);
      valid.push_back(t);
    } else {
      throw ShapeError(loc, op,
                       "cannot expand " + str(v.shape) + " to " + str(shape) + ": dim " +
                           std::to_string(d) + " is neither 1 nor the target");
    }
  }
  return emit(r, OpKind::Expand, op, {v.id}, v.dtype, std::move(out), std::move(valid), loc);
}

Tensor broadcast_to(const Tensor &x, const std::vector<SymbolicScalar> &shape, SrcLoc loc) {
  UserOpScope user_op("broadcast_to");
  return expand(x, shape, loc);
}

Tensor transpose(const Tensor &x, int d0, int d1, SrcLoc loc) {
  auto &r = Recorder::current("transpose", loc);
  size_t rank = data_operand(r, x, "transpose", loc).shape.size();
  int a = norm_axis(d0, rank, "transpose", loc, "dim");
  int b = norm_axis(d1, rank, "transpose", loc, "dim");
  std::vector<int> perm(rank);
  for (size_t d = 0; d < rank; ++d)
    perm[d] = static_cast<int>(d);
  std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
  return permute_impl(x, perm, "transpose", loc);
}

Tensor permute(const Tensor &x, const std::vector<int> &perm, SrcLoc loc) {
  return permute_impl(x, perm, "permute", loc);
}

Tensor concat(const std::vector<Tensor> &xs, int dim, SrcLoc loc) {
  const char *op = "concat";
  auto &r = Recorder::current(op, loc);
  auto vs = list_operands(r, xs, op, loc);
  size_t rank = vs[0].shape.size();
  int a = norm_axis(dim, rank, op, loc, "dim");
  auto ua = static_cast<size_t>(a);
  std::vector<SymbolicScalar> shape = vs[0].shape, valid = vs[0].valid;
  SymbolicScalar start(0);
  std::vector<ValueId> ids;
  for (size_t k = 0; k < vs.size(); ++k) {
    for (size_t d = 0; d < rank; ++d) {
      if (d == ua)
        continue;
      if (!vs[k].shape[d].same_as(vs[0].shape[d]))
        throw ShapeError(loc, op,
                         fmt::format("tensor {} has shape {}, tensor 0 has {}; they may differ "
                                     "only in dim {}",
                                     k, str(vs[k].shape), str(vs[0].shape), a));
      valid[d] = min_of(valid[d], vs[k].valid[d]);
    }
    valid[ua] = dim_add(start, vs[k].valid[ua], "the valid extent of the concat dim", op, loc);
    start = dim_add(start, vs[k].shape[ua], "the concat dim", op, loc);
    ids.push_back(vs[k].id);
  }
  shape[ua] = start;
  return emit(r, OpKind::Concat, op, std::move(ids), vs[0].dtype, std::move(shape),
              std::move(valid), loc, [&](ir::Op &o) { o.axis = a; });
}

std::vector<Tensor> split(const Tensor &x, const std::vector<int64_t> &sizes, int dim, SrcLoc loc) {
  UserOpScope user_op("split");
  const char *op = "split";
  auto &r = Recorder::current(op, loc);
  const Value v = data_operand(r, x, op, loc);
  auto ua = static_cast<size_t>(norm_axis(dim, v.shape.size(), op, loc, "dim"));
  if (!all_concrete(v.shape))
    throw ShapeError(loc, op, "needs static dims, got " + str(v.shape));
  int64_t total = 0;
  for (auto s : sizes) {
    if (s < 1)
      throw ShapeError(loc, op, fmt::format("piece sizes must be > 0, got {}", s));
    total = checked_extent_add(total, s, "the piece sizes' sum", op, loc);
  }
  if (sizes.empty() || total != v.shape[ua].concrete())
    throw ShapeError(loc, op,
                     fmt::format("piece sizes sum to {}, dim {} has size {}", total, dim,
                                 v.shape[ua].concrete()));
  std::vector<int64_t> shape;
  for (auto &d : v.shape)
    shape.push_back(d.concrete());
  std::vector<Tensor> out;
  int64_t off = 0;
  for (auto s : sizes) {
    shape[ua] = s;
    std::vector<SymbolicScalar> offs(shape.size(), SymbolicScalar(0));
    offs[ua] = SymbolicScalar(off);
    out.push_back(view(x, shape, offs, {}, loc));
    off += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor &x, int64_t size, int dim, SrcLoc loc) {
  auto &r = Recorder::current("split", loc);
  const Value v = data_operand(r, x, "split", loc);
  auto ua = static_cast<size_t>(norm_axis(dim, v.shape.size(), "split", loc, "dim"));
  if (size < 1)
    throw ShapeError(loc, "split", fmt::format("piece size must be > 0, got {}", size));
  if (!v.shape[ua].is_concrete())
    throw ShapeError(loc, "split", "needs static dims, got " + str(v.shape));
  std::vector<int64_t> sizes;
  for (int64_t left = v.shape[ua].concrete(); left > 0; left -= size)
    sizes.push_back(std::min(size, left));
  return split(x, sizes, dim, loc);
}

Tensor stack(const std::vector<Tensor> &xs, int dim, SrcLoc loc) {
  UserOpScope user_op("stack");
  const char *op = "stack";
  auto &r = Recorder::current(op, loc);
  auto vs = list_operands(r, xs, op, loc);
  for (size_t k = 1; k < vs.size(); ++k)
    for (size_t d = 0; d < vs[0].shape.size(); ++d)
      if (!vs[k].shape[d].same_as(vs[0].shape[d]))
        throw ShapeError(loc, op,
                         fmt::format("tensor {} has shape {}, tensor 0 has {}; stack needs one "
                                     "shape",
                                     k, str(vs[k].shape), str(vs[0].shape)));
  int d = norm_axis(dim, vs[0].shape.size() + 1, op, loc, "dim");
  check_out_rank(vs[0].shape.size() + 1, op, loc);
  std::vector<Tensor> us;
  for (auto &t : xs)
    us.push_back(unsqueeze(t, d, loc));
  return concat(us, d, loc);
}

Tensor tile(const Tensor &x, const std::vector<int64_t> &reps, SrcLoc loc) {
  const char *op = "tile";
  auto &r = Recorder::current(op, loc);
  const Value v0 = data_operand(r, x, op, loc);
  check_out_rank(std::max(reps.size(), v0.shape.size()), op, loc);
  for (auto k : reps)
    if (k < 1)
      throw ShapeError(loc, op, fmt::format("repeats must be >= 1, got {}", k));
  Tensor src = x;
  while (static_cast<size_t>(src.dim()) < reps.size())
    src = unsqueeze(src, 0, loc);
  const Value v = r.program().value(src.id());
  std::vector<int64_t> rp(v.shape.size() - reps.size(), 1);
  rp.insert(rp.end(), reps.begin(), reps.end());
  std::vector<SymbolicScalar> shape, valid;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (rp[d] == 1) {
      shape.push_back(v.shape[d]);
      valid.push_back(v.valid[d]);
      continue;
    }
    if (!v.shape[d].is_concrete())
      throw ShapeError(loc, op, fmt::format("dim {} is dynamic; only static dims repeat", d));
    const std::string what = fmt::format("dim {} of the result", d);
    shape.emplace_back(checked_extent_mul(v.shape[d].concrete(), rp[d], what.c_str(), op, loc));
    // (reps - 1) whole copies, then the last copy's valid extent: below the dim just checked.
    valid.push_back(SymbolicScalar(v.shape[d].concrete() * (rp[d] - 1)) + v.valid[d]);
  }
  return emit(r, OpKind::Tile, op, {v.id}, v.dtype, std::move(shape), std::move(valid), loc);
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &pad, double value, SrcLoc loc) {
  const char *op = "pad";
  auto &r = Recorder::current(op, loc);
  const Value v = data_operand(r, x, op, loc);
  if (pad.size() != 2 && pad.size() != 4)
    throw ShapeError(loc, op,
                     fmt::format("pad needs 2 entries (left, right) or 4 (left, right, top, "
                                 "bottom), got {}",
                                 pad.size()));
  if (pad.size() / 2 > v.shape.size())
    throw ShapeError(
        loc, op, fmt::format("pads {} dims of a rank-{} tensor", pad.size() / 2, v.shape.size()));
  for (size_t k = 0; k < pad.size(); ++k) {
    if (pad[k] < 0)
      throw ShapeError(loc, op, fmt::format("pad entries must be >= 0, got {}", pad[k]));
    if (k % 2 == 0 && pad[k] != 0)
      throw ShapeError(loc, op,
                       fmt::format("only right/bottom padding is supported; entry {} (left/top) "
                                   "is {}",
                                   k, pad[k]));
  }
  if (!std::isfinite(value) && !is_float(v.dtype))
    throw DTypeError(loc, op, fmt::format("value {} for an integer tensor", value));
  if (!is_float(v.dtype) && value != std::trunc(value))
    throw DTypeError(
        loc, op,
        fmt::format("non-integral value {} for a tensor of dtype {}", value, name(v.dtype)));
  check_int_element(value, v.dtype, op, loc);
  std::vector<SymbolicScalar> shape = v.shape;
  size_t rank = shape.size();
  shape[rank - 1] = dim_add(shape[rank - 1], pad[1], "the padded last dim", op, loc);
  if (pad.size() == 4)
    shape[rank - 2] = dim_add(shape[rank - 2], pad[3], "the padded second-to-last dim", op, loc);
  ir::Scalar sc{value, ir::trunc_saturate_int64(value), !is_float(v.dtype), v.dtype};
  return emit(r, OpKind::Pad, op, {v.id}, v.dtype, shape, shape, loc,
              [&](ir::Op &o) { o.scalar = sc; });
}

namespace {
Tensor triangle(OpKind kind, const Tensor &x, const SymbolicScalar &diagonal, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value v = data_operand(r, x, op, loc);
  if (v.shape.size() < 2)
    throw ShapeError(loc, op, fmt::format("needs rank >= 2, got {}", v.shape.size()));
  return emit(r, kind, op, {v.id}, v.dtype, v.shape, v.valid, loc,
              [&](ir::Op &o) { o.diagonal = diagonal; });
}
} // namespace

Tensor tril(const Tensor &x, const SymbolicScalar &diagonal, SrcLoc loc) {
  return triangle(OpKind::Tril, x, diagonal, loc);
}
Tensor triu(const Tensor &x, const SymbolicScalar &diagonal, SrcLoc loc) {
  return triangle(OpKind::Triu, x, diagonal, loc);
}

Tensor ones(const std::vector<SymbolicScalar> &shape, DataType dtype, SrcLoc loc) {
  UserOpScope user_op("ones");
  return full_as("ones", shape, 1.0, dtype, {}, loc);
}

Tensor arange(ArangeValue end, SrcLoc loc) { return arange(0, end, 1, loc); }

Tensor arange(ArangeValue start, ArangeValue end, ArangeValue step, SrcLoc loc) {
  const char *op = "arange";
  auto &r = Recorder::current(op, loc);
  bool ints = start.is_int && end.is_int && step.is_int;
  if (!std::isfinite(start.f) || !std::isfinite(end.f) || !std::isfinite(step.f))
    throw ArgumentError(loc, op, "start, end and step must be finite");
  if (step.f == 0)
    throw ArgumentError(loc, op, "step must not be 0");
  int64_t n = 0;
  if (ints) {
    __int128 span = static_cast<__int128>(end.i) - start.i;
    __int128 q = span / step.i + (span % step.i != 0 && ((span > 0) == (step.i > 0)) ? 1 : 0);
    n = q > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int64_t>::max()
                                                : static_cast<int64_t>(q);
  } else {
    double q = std::ceil((end.f - start.f) / step.f);
    n = q > static_cast<double>(std::numeric_limits<int32_t>::max())
            ? std::numeric_limits<int64_t>::max()
            : static_cast<int64_t>(q);
  }
  if (n <= 0)
    throw ShapeError(loc, op,
                     fmt::format("arange({}, {}, {}) is empty; ptojit has no empty tensors",
                                 start.f, end.f, step.f));
  if (n > std::numeric_limits<int32_t>::max())
    throw ShapeError(loc, op, "more than INT32_MAX elements");
  if (ints) {
    __int128 last = static_cast<__int128>(start.i) + static_cast<__int128>(n - 1) * step.i;
    auto fits = [](__int128 v) {
      return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    };
    if (!fits(start.i) || !fits(last))
      throw ArgumentError(loc, op,
                          fmt::format("values from {} to {} do not fit DT_INT32", start.i,
                                      static_cast<int64_t>(last)));
  }
  SymbolicScalar len(n);
  return emit(r, OpKind::Arange, op, {}, ints ? DT_INT32 : DT_FP32, {len}, {len}, loc,
              [&](ir::Op &o) {
                if (ints) {
                  o.start = SymbolicScalar(start.i);
                  o.step = SymbolicScalar(step.i);
                } else {
                  o.reals = {start.f, step.f};
                }
              });
}

namespace {
Tensor random(OpKind kind, const std::vector<SymbolicScalar> &shape, uint64_t key, uint64_t counter,
              DataType dtype, double a, double b, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  check_out_rank(shape.size(), op, loc);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d].is_concrete() && shape[d].concrete() <= 0)
      throw ShapeError(loc, op, fmt::format("dim {} must be > 0, got {}", d, shape[d].concrete()));
  if (!is_float(dtype))
    throw DTypeError(loc, op,
                     "expected a floating dtype (fp16, bf16, fp32, fp64), got " + name(dtype));
  check_dtype_supported(dtype, op, loc);
  return emit(r, kind, op, {}, dtype, shape, shape, loc, [&](ir::Op &o) {
    o.rng_key = key;
    o.rng_counter = counter;
    o.reals = {a, b};
  });
}
} // namespace

Tensor uniform(const std::vector<SymbolicScalar> &shape, uint64_t key, uint64_t counter,
               DataType dtype, UniformOptions opts, SrcLoc loc) {
  if (!std::isfinite(opts.low) || !std::isfinite(opts.high) || opts.low > opts.high)
    throw ArgumentError(loc, "uniform",
                        fmt::format("needs finite low <= high, got [{}, {})", opts.low, opts.high));
  return random(OpKind::Uniform, shape, key, counter, dtype, opts.low, opts.high, loc);
}

Tensor normal(const std::vector<SymbolicScalar> &shape, uint64_t key, uint64_t counter,
              DataType dtype, NormalOptions opts, SrcLoc loc) {
  if (!std::isfinite(opts.mean) || !std::isfinite(opts.std) || opts.std < 0)
    throw ArgumentError(
        loc, "normal",
        fmt::format("needs a finite mean and std >= 0, got mean {} std {}", opts.mean, opts.std));
  return random(OpKind::Normal, shape, key, counter, dtype, opts.mean, opts.std, loc);
}

} // namespace pto
