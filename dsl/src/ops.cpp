// ops.cpp - Tracing of tensor ops: operand checks, broadcasting, dtype rules, valid-shape
// inference, then one ir::Op appended to the current recorder.
#include "pto/ops.h"

#include "pto/host_tensor.h"
#include "pto/ir/recorder.h"

#include "shape_rules.h"
#include "trace_checks.h"

#include <cmath>
#include <fmt/format.h>

namespace pto {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;
using trace::check_valid_shape;
using trace::check_window;
using trace::scalar_of;
using trace::Window;
using trace::window_extent;

namespace {

std::string dims_str(const std::vector<SymbolicScalar> &d) { return str(d); }

bool is_one(const SymbolicScalar &s) { return s.is_concrete() && s.concrete() == 1; }

/// Numpy broadcasting of two shapes (right-aligned). Symbolic dims broadcast only when equal or
/// when one side is the constant 1.
std::vector<SymbolicScalar> broadcast_shapes(const std::vector<SymbolicScalar> &a,
                                             const std::vector<SymbolicScalar> &b, const char *op,
                                             const SrcLoc &loc) {
  size_t r = std::max(a.size(), b.size());
  std::vector<SymbolicScalar> out(r);
  for (size_t i = 0; i < r; ++i) {
    const SymbolicScalar *da = i + a.size() >= r ? &a[i + a.size() - r] : nullptr;
    const SymbolicScalar *db = i + b.size() >= r ? &b[i + b.size() - r] : nullptr;
    if (!da)
      out[i] = *db;
    else if (!db)
      out[i] = *da;
    else if (da->same_as(*db))
      out[i] = *da;
    else if (is_one(*da))
      out[i] = *db;
    else if (is_one(*db))
      out[i] = *da;
    else
      throw ShapeError(loc, op,
                       "shapes " + dims_str(a) + " and " + dims_str(b) + " do not broadcast");
  }
  return out;
}

/// The valid shape of a broadcast result: per dim, the operand's valid extent unless that
/// operand's dim is 1 (broadcast), the smaller of both otherwise.
std::vector<SymbolicScalar> broadcast_valid(const Value &a, const Value &b, size_t r) {
  std::vector<SymbolicScalar> out(r);
  for (size_t i = 0; i < r; ++i) {
    const SymbolicScalar *sa = nullptr, *va = nullptr, *sb = nullptr, *vb = nullptr;
    if (i + a.shape.size() >= r) {
      sa = &a.shape[i + a.shape.size() - r];
      va = &a.valid[i + a.shape.size() - r];
    }
    if (i + b.shape.size() >= r) {
      sb = &b.shape[i + b.shape.size() - r];
      vb = &b.valid[i + b.shape.size() - r];
    }
    // A missing dim broadcasts; a size-1 dim broadcasts only against a present non-1 dim (a
    // [1, C] operand with a rank-1 [1] one keeps its own valid extent on dim 0).
    bool a_bc = !sa || (is_one(*sa) && sb && !is_one(*sb));
    bool b_bc = !sb || (is_one(*sb) && sa && !is_one(*sa));
    if (a_bc)
      out[i] = *vb;
    else if (b_bc)
      out[i] = *va;
    else
      out[i] = va->same_as(*vb) ? *va : min(*va, *vb);
  }
  return out;
}

void check_rank(const Value &v, const char *op, const SrcLoc &loc) {
  if (v.shape.empty() || v.shape.size() > 4)
    throw ShapeError(
        loc, op,
        fmt::format("tensor '{}' has rank {}; ops take rank 1 to 4", v.name, v.shape.size()));
}

void check_dtype_supported(DataType dt, const char *op, const SrcLoc &loc) {
  if (!is_supported(dt))
    throw DTypeError(loc, op,
                     "dtype " + name(dt) +
                         " is not supported by ptojit; supported: " + kSupportedDtypes);
}

bool is_token(const Value &v) { return v.kind == ValueKind::Token; }

const Value &data_operand(const Recorder &r, const Tensor &t, const char *op, const SrcLoc &loc) {
  ValueId id = r.use(t, op, loc);
  const Value &v = const_cast<Recorder &>(r).program().value(id);
  if (is_token(v))
    throw DTypeError(loc, op,
                     "tensor '" + v.name +
                         "' is a dependency token (its contents are meaningless); pass it as "
                         "`pred`, not as data");
  if (v.shmem >= 0)
    throw DTypeError(loc, op,
                     "tensor '" + v.name +
                         "' is shmem data; read it with pto::distributed::shmem_get first");
  check_rank(v, op, loc);
  return v;
}

Tensor make_local(Recorder &r, DataType dt, std::vector<SymbolicScalar> shape,
                  std::vector<SymbolicScalar> valid) {
  Value v;
  v.kind = ValueKind::Local;
  v.dtype = dt;
  v.shape = std::move(shape);
  v.valid = std::move(valid);
  return r.tensor(r.add_value(std::move(v)));
}

/// Resolves a scalar operand against the tensor dtype (PyPTO's Element rules).
ir::Scalar resolve_scalar(ir::Scalar s, DataType tensor_dt, const char *op, const SrcLoc &loc) {
  if (s.dtype != DT_BOTTOM && s.dtype != tensor_dt)
    throw DTypeError(loc, op,
                     "scalar of dtype " + name(s.dtype) + " with a tensor of dtype " +
                         name(tensor_dt) + "; cast one of them");
  if (!s.is_int && !is_float(tensor_dt))
    throw DTypeError(loc, op,
                     fmt::format("floating scalar {} with an integer tensor of dtype {}; use an "
                                 "integer or cast the tensor",
                                 s.f, name(tensor_dt)));
  if (s.is_int)
    trace::check_int_element(s.i, tensor_dt, op, loc);
  return ir::as_element(s, tensor_dt);
}

using ir::Accepts;

/// The result dtype of elementwise `kind` on operands of dtype `in` (`to`: Cast's target).
DataType result_dtype(OpKind kind, DataType in, DataType to, const char *op, const SrcLoc &loc) {
  switch (ir::op_info(kind).result) {
  case ir::ResultType::Same:
    return in;
  case ir::ResultType::Bool:
    return DT_BOOL;
  case ir::ResultType::To:
    return to;
  case ir::ResultType::Own:
    break;
  }
  throw InternalError(loc, op, "not an elementwise op (a ptojit bug)");
}

/// Integer ops whose zero divisor is a run-time failure (a literal zero scalar fails at trace).
bool int_divides(OpKind k) {
  return k == OpKind::Div || k == OpKind::FloorDiv || k == OpKind::Remainder || k == OpKind::Fmod;
}

/// The dtype rule of `kind` (op_kinds.def) applied to operand dtype `dt`.
void check_accepts(OpKind kind, DataType dt, const char *op, const SrcLoc &loc) {
  const Accepts a = ir::op_info(kind).accepts;
  switch (a) {
  case Accepts::Any:
    return;
  case Accepts::Arith:
  case Accepts::Signed:
    if (dt == DT_BOOL)
      throw DTypeError(loc, op, "arithmetic on DT_BOOL is not defined; cast to an int type");
    if (a == Accepts::Signed && dt == DT_UINT8)
      throw DTypeError(loc, op, "expected a signed dtype, got " + name(dt));
    return;
  case Accepts::Float:
    if (!is_float(dt))
      throw DTypeError(loc, op,
                       "expected a floating dtype (fp16, bf16, fp32, fp64), got " + name(dt) +
                           "; cast first");
    return;
  case Accepts::IntBool:
  case Accepts::Int:
    if (is_float(dt) || (dt == DT_BOOL && a == Accepts::Int))
      throw DTypeError(loc, op,
                       "expected an integer dtype" +
                           std::string(a == Accepts::IntBool ? " or DT_BOOL" : "") + ", got " +
                           name(dt));
    return;
  case Accepts::Own:
    throw InternalError(loc, op, "not an elementwise op (a ptojit bug)");
  }
}

Tensor binary(OpKind kind, const Operand &a, const Operand &b, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  if (!a.is_tensor() && !b.is_tensor())
    throw ShapeError(loc, op, "both operands are scalars; at least one must be a tensor");
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  if (a.is_tensor() && b.is_tensor()) {
    const Value &va = data_operand(r, a.tensor, op, loc);
    const Value &vb = data_operand(r, b.tensor, op, loc);
    if (va.dtype != vb.dtype)
      throw DTypeError(loc, op,
                       "operands have dtypes " + name(va.dtype) + " and " + name(vb.dtype) +
                           "; cast one of them");
    check_dtype_supported(va.dtype, op, loc);
    check_accepts(kind, va.dtype, op, loc);
    auto shape = broadcast_shapes(va.shape, vb.shape, op, loc);
    auto valid = broadcast_valid(va, vb, shape.size());
    DataType dt = result_dtype(kind, va.dtype, DT_BOTTOM, op, loc);
    o.inputs = {va.id, vb.id};
    o.tile = ir::capture_tile(r, shape.size(), op, loc);
    Tensor out = make_local(r, dt, std::move(shape), std::move(valid));
    o.outputs = {out.id()};
    r.emit(std::move(o));
    return out;
  }
  const Operand &t = a.is_tensor() ? a : b;
  const Operand &s = a.is_tensor() ? b : a;
  const Value &vt = data_operand(r, t.tensor, op, loc);
  check_dtype_supported(vt.dtype, op, loc);
  check_accepts(kind, vt.dtype, op, loc);
  o.scalar = resolve_scalar(scalar_of(s, op), vt.dtype, op, loc);
  o.scalar_first = !a.is_tensor();
  if (int_divides(kind) && !o.scalar_first && !is_float(vt.dtype) && o.scalar->i == 0)
    throw RuntimeError(loc, op, "integer division by a zero scalar");
  if (kind == OpKind::Pow && !o.scalar_first && !is_float(vt.dtype) && o.scalar->i < 0)
    throw ArgumentError(loc, op,
                        fmt::format("integers to negative integer powers are not allowed, got "
                                    "exponent {} (as PyTorch)",
                                    o.scalar->i));
  o.inputs = {vt.id};
  o.tile = ir::capture_tile(r, vt.shape.size(), op, loc);
  Tensor out = make_local(r, result_dtype(kind, vt.dtype, DT_BOTTOM, op, loc), vt.shape, vt.valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

Tensor unary(OpKind kind, const Tensor &x, const SrcLoc &loc, DataType to = DT_BOTTOM,
             std::optional<ir::Scalar> attr = std::nullopt) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_dtype_supported(v.dtype, op, loc);
  check_accepts(kind, v.dtype, op, loc);
  const bool to_target = ir::op_info(kind).result == ir::ResultType::To;
  if (to_target)
    check_dtype_supported(to, op, loc);
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {v.id};
  o.to = to_target ? to : DT_BOTTOM;
  o.scalar = attr;
  o.tile = ir::capture_tile(r, v.shape.size(), op, loc);
  Tensor out = make_local(r, result_dtype(kind, v.dtype, to, op, loc), v.shape, v.valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

Tensor reduce(OpKind kind, const Tensor &x, int axis, ReduceOptions opts, const SrcLoc &loc) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_dtype_supported(v.dtype, op, loc);
  if (v.dtype == DT_BOOL)
    throw DTypeError(loc, op, "reductions over DT_BOOL are not defined; cast to an int type");
  int rank = static_cast<int>(v.shape.size());
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw ShapeError(loc, op, fmt::format("axis {} is out of range for rank {}", axis, rank));
  std::vector<SymbolicScalar> shape, valid;
  for (int d = 0; d < rank; ++d) {
    if (d == a) {
      if (opts.keepdim) {
        shape.emplace_back(1);
        valid.emplace_back(1);
      }
      continue;
    }
    shape.push_back(v.shape[static_cast<size_t>(d)]);
    valid.push_back(v.valid[static_cast<size_t>(d)]);
  }
  if (shape.empty()) { // a full reduction of a rank-1 tensor keeps one element
    shape.emplace_back(1);
    valid.emplace_back(1);
  }
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {v.id};
  o.axis = a;
  o.keepdim = opts.keepdim;
  o.tile = ir::capture_tile(r, static_cast<size_t>(rank), op, loc);
  Tensor out = make_local(r, v.dtype, std::move(shape), std::move(valid));
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

std::vector<SymbolicScalar> check_shape_dims(const std::vector<SymbolicScalar> &shape,
                                             const char *op, const SrcLoc &loc) {
  if (shape.empty() || shape.size() > 4)
    throw ShapeError(loc, op, fmt::format("expected rank 1 to 4, got {}", shape.size()));
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i].is_concrete() && shape[i].concrete() <= 0)
      throw ShapeError(loc, op, fmt::format("dim {} must be > 0, got {}", i, shape[i].concrete()));
  return shape;
}

} // namespace

// The public function of every Plain row of op_kinds.def: `Tensor name(const Tensor &x, SrcLoc)`
// for unary rows, `Tensor name(const Operand &a, const Operand &b, SrcLoc)` for binary rows. Each
// first takes the address of its declaration, so a row whose function ops.h does not declare
// (with that signature) fails to compile here.
using UnaryFn = Tensor (*)(const Tensor &, SrcLoc);
using BinaryFn = Tensor (*)(const Operand &, const Operand &, SrcLoc);
#define PTO_OP(...)
#define PTO_UNARY(kind, name, accepts, result, vec_fn, vec_acc, api) PTO_UNARY_##api(kind, name)
#define PTO_BINARY(kind, name, accepts, result, vec_fn, vec_acc, api) PTO_BINARY_##api(kind, name)
#define PTO_UNARY_Own(kind, name)
#define PTO_BINARY_Own(kind, name)
#define PTO_UNARY_Plain(kind, name)                                                                \
  [[maybe_unused]] constexpr UnaryFn declared_##name = &pto::name;                                 \
  Tensor name(const Tensor &x, SrcLoc loc) { return unary(OpKind::kind, x, loc); }
#define PTO_BINARY_Plain(kind, name)                                                               \
  [[maybe_unused]] constexpr BinaryFn declared_##name = &pto::name;                                \
  Tensor name(const Operand &a, const Operand &b, SrcLoc loc) {                                    \
    return binary(OpKind::kind, a, b, loc);                                                        \
  }
#include "pto/ir/op_kinds.def"
#undef PTO_UNARY_Own
#undef PTO_BINARY_Own
#undef PTO_UNARY_Plain
#undef PTO_BINARY_Plain

Tensor cast(const Tensor &x, DataType dtype, SrcLoc loc) {
  return unary(OpKind::Cast, x, loc, dtype);
}

namespace {
ir::Scalar float_attr(double v) { return ir::Scalar{v, 0, false, DT_BOTTOM}; }
} // namespace

Tensor elu(const Tensor &x, double alpha, SrcLoc loc) {
  if (!std::isfinite(alpha))
    throw ArgumentError(loc, "elu", fmt::format("alpha must be finite, got {}", alpha));
  return unary(OpKind::Elu, x, loc, DT_BOTTOM, float_attr(alpha));
}
Tensor lrelu(const Tensor &x, double negative_slope, SrcLoc loc) {
  if (!std::isfinite(negative_slope) || negative_slope < 0)
    throw ArgumentError(
        loc, "lrelu",
        fmt::format("negative_slope must be finite and >= 0, got {}", negative_slope));
  return unary(OpKind::Lrelu, x, loc, DT_BOTTOM, float_attr(negative_slope));
}

Tensor where(const Tensor &cond, const Operand &a, const Operand &b, SrcLoc loc) {
  const char *op = "where";
  auto &r = Recorder::current(op, loc);
  ValueId cid = data_operand(r, cond, op, loc).id;
  if (r.program().value(cid).dtype != DT_BOOL)
    throw DTypeError(loc, op,
                     "cond has dtype " + name(r.program().value(cid).dtype) +
                         ", expected DT_BOOL; compare first, e.g. ne(x, 0)");
  // The value dtype: the tensors' (which must agree), else the scalars' as `full` infers it.
  DataType dt = DT_BOTTOM;
  for (const Operand *o : {&a, &b}) {
    if (!o->is_tensor())
      continue;
    DataType odt = data_operand(r, o->tensor, op, loc).dtype;
    if (dt != DT_BOTTOM && odt != dt)
      throw DTypeError(
          loc, op, "a and b have dtypes " + name(dt) + " and " + name(odt) + "; cast one of them");
    dt = odt;
  }
  if (dt == DT_BOTTOM) {
    const ir::Scalar &sa = scalar_of(a, op), &sb = scalar_of(b, op);
    dt = sa.dtype != DT_BOTTOM ? sa.dtype : sb.dtype;
    if (dt == DT_BOTTOM)
      dt = sa.is_int && sb.is_int ? DT_INT32 : DT_FP32;
  }
  check_dtype_supported(dt, op, loc);
  // Scalars become one-element tensors of rank 1 that broadcast everywhere (they fuse).
  auto value_of = [&](const Operand &o) -> ValueId {
    if (o.is_tensor())
      return r.use(o.tensor, op, loc);
    ir::Scalar sc = resolve_scalar(*o.scalar, dt, op, loc);
    Element e = sc.is_int ? Element(dt, sc.i) : Element(dt, sc.f);
    return r.use(full({1}, e, {}, loc), op, loc);
  };
  ValueId ids[3] = {cid, value_of(a), value_of(b)};
  // Broadcast the three shapes, pairwise (valid extents follow broadcast_valid).
  Value acc = r.program().value(ids[0]);
  for (int i = 1; i < 3; ++i) {
    const Value &vi = r.program().value(ids[i]);
    auto shape = broadcast_shapes(acc.shape, vi.shape, op, loc);
    auto valid = broadcast_valid(acc, vi, shape.size());
    acc.shape = std::move(shape);
    acc.valid = std::move(valid);
  }
  ir::Op o;
  o.kind = OpKind::Where;
  o.where = loc;
  o.inputs = {ids[0], ids[1], ids[2]};
  o.tile = ir::capture_tile(r, acc.shape.size(), op, loc);
  Tensor out = make_local(r, dt, std::move(acc.shape), std::move(acc.valid));
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

Tensor clip(const Tensor &x, const Operand &min, const Operand &max, SrcLoc loc) {
  UserOpScope user_op("clip"); // errors of the maximum and minimum below name clip
  if (min.is_tensor() != max.is_tensor())
    throw DTypeError(loc, "clip", "min and max must both be tensors or both be scalars");
  // clamp(x, lo, hi) = minimum(maximum(x, lo), hi): NaN in x propagates, lo > hi gives hi.
  return minimum(maximum(x, min, loc), max, loc);
}

Tensor sum(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return reduce(OpKind::Sum, x, axis, opts, loc);
}
Tensor amax(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return reduce(OpKind::Amax, x, axis, opts, loc);
}
Tensor amin(const Tensor &x, int axis, ReduceOptions opts, SrcLoc loc) {
  return reduce(OpKind::Amin, x, axis, opts, loc);
}

Tensor trace::full_as(const char *op, const std::vector<SymbolicScalar> &shape, Element value,
                      FullOptions opts, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  auto s = check_shape_dims(shape, op, loc);
  DataType dt = value.scalar.dtype == DT_BOTTOM ? (value.scalar.is_int ? DT_INT32 : DT_FP32)
                                                : value.scalar.dtype;
  check_dtype_supported(dt, op, loc);
  if (!is_float(dt) && dt != DT_BOOL) {
    // An integer element: the value must fit dt (a non-integral one truncates toward zero).
    if (value.scalar.is_int) {
      check_int_element(value.scalar.i, dt, op, loc);
    } else {
      check_int_element(value.scalar.f, dt, op, loc);
      value.scalar.i = ir::trunc_saturate_int64(value.scalar.f);
      value.scalar.f = static_cast<double>(value.scalar.i);
      value.scalar.is_int = true;
    }
  }
  trace::check_result_size(s, dt, op, loc);
  std::vector<SymbolicScalar> valid = opts.valid_shape ? *opts.valid_shape : s;
  if (opts.valid_shape)
    check_valid_shape(r, valid, s, op, loc);
  ir::Op o;
  o.kind = OpKind::Full;
  o.where = loc;
  o.scalar = ir::as_element(value.scalar, dt);
  o.tile = ir::capture_tile(r, s.size(), op, loc);
  Tensor out = make_local(r, dt, s, valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

Tensor trace::full_as(const char *op, const std::vector<SymbolicScalar> &shape, double value,
                      DataType dtype, FullOptions opts, const SrcLoc &loc) {
  if (!is_float(dtype))
    check_int_element(value, dtype, op, loc); // before the value is truncated to int64
  Element e =
      is_float(dtype) ? Element(dtype, value) : Element(dtype, ir::trunc_saturate_int64(value));
  return full_as(op, shape, e, std::move(opts), loc);
}

Tensor full(const std::vector<SymbolicScalar> &shape, Element value, FullOptions opts, SrcLoc loc) {
  return trace::full_as("full", shape, value, std::move(opts), loc);
}

Tensor full(const std::vector<SymbolicScalar> &shape, double value, DataType dtype,
            FullOptions opts, SrcLoc loc) {
  return trace::full_as("full", shape, value, dtype, std::move(opts), loc);
}

Tensor zeros(const std::vector<SymbolicScalar> &shape, DataType dtype, SrcLoc loc) {
  return trace::full_as("zeros", shape, 0.0, dtype, {}, loc);
}

Tensor view(const Tensor &x, const StaticDims &static_shape,
            const std::vector<SymbolicScalar> &offsets, ViewOptions opts, SrcLoc loc) {
  const std::vector<int64_t> shape = static_shape.resolve("view", loc);
  auto &r = Recorder::current("view", loc);
  ValueId id = r.use(x, "view", loc);
  const Value &v = r.program().value(id);
  if (v.kind == ValueKind::Token)
    throw DTypeError(loc, "view", "cannot view a dependency token");
  size_t rank = v.shape.size();
  if (shape.size() != rank || offsets.size() != rank)
    throw ShapeError(loc, "view",
                     fmt::format("shape and offsets need {} entries (the rank of '{}'), got {} "
                                 "and {}",
                                 rank, v.name, shape.size(), offsets.size()));
  std::vector<SymbolicScalar> shape_s(shape.begin(), shape.end());
  for (size_t d = 0; d < rank; ++d)
    if (shape[d] <= 0)
      throw ShapeError(loc, "view", fmt::format("view dim {} must be > 0, got {}", d, shape[d]));
  // A view is a tensor later ops size their tiles and results by: it obeys the size limit.
  trace::check_result_size(shape_s, v.dtype, "view", loc);
  if (opts.valid_shape)
    check_valid_shape(r, *opts.valid_shape, shape_s, "view", loc);
  Window win{.offsets = offsets,
             .extent = opts.valid_shape ? *opts.valid_shape : shape_s,
             .bound = shape_s,
             .parent_extent = opts.valid_shape ? window_extent(v) : v.shape,
             .parent_shape = v.shape,
             .parent = trace::value_phrase(r.program(), v),
             .hint = !opts.valid_shape};
  check_window(r, win, "view", loc);
  Value w;
  w.kind = ValueKind::View;
  w.dtype = v.dtype;
  w.shmem = v.shmem;
  w.base = v.kind == ValueKind::View ? v.base : v.id;
  w.shape = shape_s;
  w.extent = win.extent;
  for (size_t d = 0; d < rank; ++d) {
    w.offsets.push_back(v.kind == ValueKind::View ? v.offsets[d] + offsets[d] : offsets[d]);
    w.valid.push_back(opts.valid_shape ? (*opts.valid_shape)[d]
                                       : min(max(v.valid[d] - offsets[d], 0), shape[d]));
  }
  return r.tensor(r.add_value(std::move(w)));
}

void trace::assemble_as(const char *op, const Tensor &x, const std::vector<SymbolicScalar> &offsets,
                        const Tensor &out, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const Value &vx = data_operand(r, x, op, loc);
  ValueId oid = r.use(out, op, loc);
  const Value &vo = r.program().value(oid);
  if (vo.kind == ValueKind::Token)
    throw DTypeError(loc, op, "cannot assemble into a dependency token");
  if (vo.kind == ValueKind::ShmemData)
    throw DTypeError(loc, op, "cannot assemble into shmem data; use pto::distributed::shmem_put");
  if (vx.dtype != vo.dtype)
    throw DTypeError(loc, op,
                     "input dtype " + name(vx.dtype) + " differs from output dtype " +
                         name(vo.dtype) + "; cast first");
  if (vx.shape.size() != vo.shape.size())
    throw ShapeError(
        loc, op,
        fmt::format("input rank {} differs from output rank {}", vx.shape.size(), vo.shape.size()));
  if (offsets.size() != vx.shape.size())
    throw ShapeError(
        loc, op, fmt::format("offsets need {} entries, got {}", vx.shape.size(), offsets.size()));
  // The destination window is a view of `out` with the input's shape (dynamic dims span it);
  // assemble writes the input's valid region, so that is what must fit.
  check_window(r,
               Window{.offsets = offsets,
                      .extent = vx.valid,
                      .bound = vx.shape,
                      .parent_extent = window_extent(vo),
                      .parent_shape = vo.shape,
                      .parent = trace::value_phrase(r.program(), vo)},
               op, loc);
  Value w;
  w.kind = ValueKind::View;
  w.dtype = vo.dtype;
  w.base = vo.kind == ValueKind::View ? vo.base : vo.id;
  w.shape = vx.shape;
  w.valid = vx.valid;
  w.extent = vx.valid;
  for (size_t d = 0; d < vx.shape.size(); ++d)
    w.offsets.push_back(vo.kind == ValueKind::View ? vo.offsets[d] + offsets[d] : offsets[d]);
  ValueId xid = vx.id;
  size_t xrank = vx.shape.size();
  ValueId wid = r.add_value(std::move(w)); // invalidates vx and vo
  ir::Op o;
  o.kind = OpKind::Assemble;
  o.where = loc;
  o.inputs = {xid};
  o.outputs = {wid};
  o.tile = ir::capture_tile(r, xrank, op, loc);
  r.emit(std::move(o));
}

void assemble(const Tensor &x, const std::vector<SymbolicScalar> &offsets, const Tensor &out,
              SrcLoc loc) {
  trace::assemble_as("assemble", x, offsets, out, loc);
}

void set_tensor_data(const Tensor &t, const std::vector<SymbolicScalar> &indices, double value,
                     SrcLoc loc) {
  const char *op = "set_tensor_data";
  auto &r = Recorder::current(op, loc);
  const Value &v = r.program().value(r.use(t, op, loc));
  if (v.kind == ValueKind::Token)
    throw DTypeError(loc, op, "tensor '" + v.name + "' is a dependency token; it has no elements");
  if (v.shmem >= 0)
    throw DTypeError(loc, op,
                     "tensor '" + v.name +
                         "' is shmem data; write it with pto::distributed::shmem_put");
  if (indices.size() != v.shape.size())
    throw ShapeError(loc, op,
                     fmt::format("tensor '{}' has rank {}, got {} indices", v.name, v.shape.size(),
                                 indices.size()));
  std::vector<SymbolicScalar> idx = indices;
  for (size_t d = 0; d < idx.size(); ++d) {
    r.check_symbols(idx[d], op, loc);
    if (!idx[d].is_concrete())
      continue; // checked at run time by the assemble's window check
    int64_t i = idx[d].concrete();
    const SymbolicScalar &dim = v.shape[d];
    if (i < 0 && dim.is_concrete()) // a negative index counts from the end, as PyPTO
      i += dim.concrete();
    if (i < 0 || (dim.is_concrete() && i >= dim.concrete()))
      throw ShapeError(loc, op,
                       fmt::format("index {} is out of range [0, {}) in dim {} of tensor '{}'",
                                   idx[d].concrete(), dim.str(), d, v.name));
    idx[d] = i;
  }
  const DataType dt = v.dtype;
  const std::vector<SymbolicScalar> one(idx.size(), SymbolicScalar(1));
  // One element needs no user tile: trace the fill and the store with a [1, .., 1] tile.
  const std::vector<int64_t> saved = r.vec_tile.vec;
  r.vec_tile.vec.assign(idx.size(), 1);
  try {
    Tensor e = trace::full_as(op, one, value, dt, {}, loc);
    trace::assemble_as(op, e, idx, t, loc);
  } catch (...) {
    r.vec_tile.vec = saved;
    throw;
  }
  r.vec_tile.vec = saved;
}

Tensor operator+(const Operand &a, const Operand &b) { return add(a, b, a.loc); }
Tensor operator-(const Operand &a, const Operand &b) { return sub(a, b, a.loc); }
Tensor operator*(const Operand &a, const Operand &b) { return mul(a, b, a.loc); }
Tensor operator/(const Operand &a, const Operand &b) { return div(a, b, a.loc); }
Tensor operator-(const Operand &a) {
  if (!a.is_tensor())
    throw ShapeError(a.loc, "neg", "operand is a scalar; unary minus needs a tensor");
  return neg(a.tensor, a.loc);
}

} // namespace pto
