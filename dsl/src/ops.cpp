// ops.cpp - Tracing of tensor ops: operand checks, broadcasting, dtype rules, valid-shape
// inference, then one ir::Op appended to the current recorder.
#include "pto/ops.h"

#include "pto/ir/recorder.h"

#include <fmt/format.h>

#include <cmath>

namespace pto {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using ir::ValueId;
using ir::ValueKind;

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
    bool a_bc = !sa || (is_one(*sa) && !(sb && is_one(*sb)));
    bool b_bc = !sb || (is_one(*sb) && !(sa && is_one(*sa)));
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
    throw ShapeError(loc, op, fmt::format("tensor '{}' has rank {}; ops take rank 1 to 4", v.name,
                                          v.shape.size()));
}

void check_dtype_supported(DataType dt, const char *op, const SrcLoc &loc) {
  if (!is_supported(dt))
    throw DTypeError(loc, op, "dtype " + name(dt) + " is not supported by ptojit");
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
  s.dtype = tensor_dt;
  if (s.is_int && is_float(tensor_dt))
    s.f = static_cast<double>(s.i);
  return s;
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
    if (va.dtype == DT_BOOL)
      throw DTypeError(loc, op, "arithmetic on DT_BOOL is not defined; cast to an int type");
    auto shape = broadcast_shapes(va.shape, vb.shape, op, loc);
    auto valid = broadcast_valid(va, vb, shape.size());
    DataType dt = va.dtype;
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
  if (vt.dtype == DT_BOOL)
    throw DTypeError(loc, op, "arithmetic on DT_BOOL is not defined; cast to an int type");
  o.scalar = resolve_scalar(*s.scalar, vt.dtype, op, loc);
  o.scalar_first = !a.is_tensor();
  if (kind == OpKind::Div && !o.scalar_first && is_int(vt.dtype) && o.scalar->i == 0)
    throw RuntimeError(loc, op, "integer division by a zero scalar");
  o.inputs = {vt.id};
  o.tile = ir::capture_tile(r, vt.shape.size(), op, loc);
  Tensor out = make_local(r, vt.dtype, vt.shape, vt.valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

Tensor unary(OpKind kind, const Tensor &x, const SrcLoc &loc, DataType to = DT_BOTTOM) {
  const char *op = ir::op_info(kind).name;
  auto &r = Recorder::current(op, loc);
  const Value &v = data_operand(r, x, op, loc);
  check_dtype_supported(v.dtype, op, loc);
  bool float_only = kind == OpKind::Exp || kind == OpKind::Log || kind == OpKind::Sqrt ||
                    kind == OpKind::Rsqrt || kind == OpKind::Reciprocal;
  if (float_only && !is_float(v.dtype))
    throw DTypeError(loc, op,
                     "expected a floating dtype (fp16, bf16, fp32, fp64), got " + name(v.dtype) +
                         "; cast first");
  if ((kind == OpKind::Neg || kind == OpKind::Abs) &&
      (v.dtype == DT_BOOL || v.dtype == DT_UINT8))
    throw DTypeError(loc, op, "expected a signed dtype, got " + name(v.dtype));
  if (kind == OpKind::Cast)
    check_dtype_supported(to, op, loc);
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = {v.id};
  o.to = to;
  o.tile = ir::capture_tile(r, v.shape.size(), op, loc);
  Tensor out = make_local(r, kind == OpKind::Cast ? to : v.dtype, v.shape, v.valid);
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
      throw ShapeError(loc, op,
                       fmt::format("dim {} must be > 0, got {}", i, shape[i].concrete()));
  return shape;
}

} // namespace

Tensor add(const Operand &a, const Operand &b, SrcLoc loc) { return binary(OpKind::Add, a, b, loc); }
Tensor sub(const Operand &a, const Operand &b, SrcLoc loc) { return binary(OpKind::Sub, a, b, loc); }
Tensor mul(const Operand &a, const Operand &b, SrcLoc loc) { return binary(OpKind::Mul, a, b, loc); }
Tensor div(const Operand &a, const Operand &b, SrcLoc loc) { return binary(OpKind::Div, a, b, loc); }
Tensor maximum(const Operand &a, const Operand &b, SrcLoc loc) {
  return binary(OpKind::Maximum, a, b, loc);
}
Tensor minimum(const Operand &a, const Operand &b, SrcLoc loc) {
  return binary(OpKind::Minimum, a, b, loc);
}

Tensor neg(const Tensor &x, SrcLoc loc) { return unary(OpKind::Neg, x, loc); }
Tensor abs(const Tensor &x, SrcLoc loc) { return unary(OpKind::Abs, x, loc); }
Tensor exp(const Tensor &x, SrcLoc loc) { return unary(OpKind::Exp, x, loc); }
Tensor log(const Tensor &x, SrcLoc loc) { return unary(OpKind::Log, x, loc); }
Tensor sqrt(const Tensor &x, SrcLoc loc) { return unary(OpKind::Sqrt, x, loc); }
Tensor rsqrt(const Tensor &x, SrcLoc loc) { return unary(OpKind::Rsqrt, x, loc); }
Tensor reciprocal(const Tensor &x, SrcLoc loc) { return unary(OpKind::Reciprocal, x, loc); }
Tensor cast(const Tensor &x, DataType dtype, SrcLoc loc) {
  return unary(OpKind::Cast, x, loc, dtype);
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

Tensor full(const std::vector<SymbolicScalar> &shape, Element value, FullOptions opts,
            SrcLoc loc) {
  auto &r = Recorder::current("full", loc);
  auto s = check_shape_dims(shape, "full", loc);
  DataType dt = value.scalar.dtype == DT_BOTTOM ? (value.scalar.is_int ? DT_INT32 : DT_FP32)
                                                : value.scalar.dtype;
  check_dtype_supported(dt, "full", loc);
  std::vector<SymbolicScalar> valid = opts.valid_shape ? *opts.valid_shape : s;
  if (valid.size() != s.size())
    throw ShapeError(loc, "full",
                     fmt::format("valid_shape rank {} differs from shape rank {}", valid.size(),
                                 s.size()));
  ir::Op o;
  o.kind = OpKind::Full;
  o.where = loc;
  ir::Scalar sc = value.scalar;
  sc.dtype = dt;
  o.scalar = sc;
  o.tile = ir::capture_tile(r, s.size(), "full", loc);
  Tensor out = make_local(r, dt, s, valid);
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

Tensor full(const std::vector<SymbolicScalar> &shape, double value, DataType dtype,
            FullOptions opts, SrcLoc loc) {
  Element e = is_float(dtype) ? Element(dtype, value)
                              : Element(dtype, static_cast<int64_t>(std::trunc(value)));
  return full(shape, e, std::move(opts), loc);
}

Tensor zeros(const std::vector<SymbolicScalar> &shape, DataType dtype, SrcLoc loc) {
  return full(shape, 0.0, dtype, {}, loc);
}

Tensor view(const Tensor &x, const std::vector<int64_t> &shape,
            const std::vector<SymbolicScalar> &offsets, ViewOptions opts, SrcLoc loc) {
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
  Value w;
  w.kind = ValueKind::View;
  w.dtype = v.dtype;
  w.shmem = v.shmem;
  w.base = v.kind == ValueKind::View ? v.base : v.id;
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] <= 0)
      throw ShapeError(loc, "view", fmt::format("view dim {} must be > 0, got {}", d, shape[d]));
    const SymbolicScalar &off = offsets[d];
    if (off.is_concrete() && off.concrete() < 0)
      throw ShapeError(loc, "view",
                       fmt::format("offset {} of dim {} is negative", off.concrete(), d));
    if (off.is_concrete() && v.shape[d].is_concrete() &&
        off.concrete() + shape[d] > v.shape[d].concrete())
      throw ShapeError(loc, "view",
                       fmt::format("window [{}, {}) of dim {} exceeds the size {} of '{}'",
                                   off.concrete(), off.concrete() + shape[d], d,
                                   v.shape[d].concrete(), v.name));
    w.shape.emplace_back(shape[d]);
    w.offsets.push_back(v.kind == ValueKind::View ? v.offsets[d] + off : off);
  }
  if (opts.valid_shape) {
    if (opts.valid_shape->size() != rank)
      throw ShapeError(loc, "view",
                       fmt::format("valid_shape needs {} entries, got {}", rank,
                                   opts.valid_shape->size()));
    for (size_t d = 0; d < rank; ++d) {
      const auto &vs = (*opts.valid_shape)[d];
      if (vs.is_concrete() && (vs.concrete() < 0 || vs.concrete() > shape[d]))
        throw ShapeError(loc, "view",
                         fmt::format("valid_shape[{}] = {} must be in [0, {}] (the view shape)", d,
                                     vs.concrete(), shape[d]));
    }
    w.valid = *opts.valid_shape;
  } else {
    for (size_t d = 0; d < rank; ++d)
      w.valid.push_back(min(max(v.valid[d] - offsets[d], 0), shape[d]));
  }
  return r.tensor(r.add_value(std::move(w)));
}

void assemble(const Tensor &x, const std::vector<SymbolicScalar> &offsets, const Tensor &out,
              SrcLoc loc) {
  auto &r = Recorder::current("assemble", loc);
  const Value &vx = data_operand(r, x, "assemble", loc);
  ValueId oid = r.use(out, "assemble", loc);
  const Value &vo = r.program().value(oid);
  if (vo.kind == ValueKind::Token)
    throw DTypeError(loc, "assemble", "cannot assemble into a dependency token");
  if (vo.kind == ValueKind::ShmemData)
    throw DTypeError(loc, "assemble",
                     "cannot assemble into shmem data; use pto::distributed::shmem_put");
  if (vx.dtype != vo.dtype)
    throw DTypeError(loc, "assemble",
                     "input dtype " + name(vx.dtype) + " differs from output dtype " +
                         name(vo.dtype) + "; cast first");
  if (vx.shape.size() != vo.shape.size())
    throw ShapeError(loc, "assemble",
                     fmt::format("input rank {} differs from output rank {}", vx.shape.size(),
                                 vo.shape.size()));
  std::vector<int64_t> shape;
  for (size_t d = 0; d < vx.shape.size(); ++d) {
    if (!vx.shape[d].is_concrete()) {
      // A dynamic input dim: the window is the whole output dim (offsets must be 0 there).
      if (!(offsets.size() == vx.shape.size() && offsets[d].is_concrete() &&
            offsets[d].concrete() == 0 && vx.shape[d].same_as(vo.shape[d])))
        throw ShapeError(loc, "assemble",
                         fmt::format("dim {} of the input is dynamic ({}); it can only be "
                                     "assembled at offset 0 into an output of the same dim",
                                     d, vx.shape[d].str()));
      shape.push_back(-1);
    } else {
      shape.push_back(vx.shape[d].concrete());
    }
  }
  if (offsets.size() != vx.shape.size())
    throw ShapeError(loc, "assemble",
                     fmt::format("offsets need {} entries, got {}", vx.shape.size(),
                                 offsets.size()));
  // The destination window is a view of `out` with the input's shape; dynamic dims span it.
  Value w;
  w.kind = ValueKind::View;
  w.dtype = vo.dtype;
  w.base = vo.kind == ValueKind::View ? vo.base : vo.id;
  for (size_t d = 0; d < vx.shape.size(); ++d) {
    const SymbolicScalar &off = offsets[d];
    if (off.is_concrete() && off.concrete() < 0)
      throw ShapeError(loc, "assemble", fmt::format("offset {} of dim {} is negative",
                                                    off.concrete(), d));
    if (shape[d] >= 0 && off.is_concrete() && vo.shape[d].is_concrete() &&
        off.concrete() + shape[d] > vo.shape[d].concrete())
      throw ShapeError(loc, "assemble",
                       fmt::format("window [{}, {}) of dim {} exceeds the size {} of '{}'",
                                   off.concrete(), off.concrete() + shape[d], d,
                                   vo.shape[d].concrete(), vo.name));
    w.shape.push_back(shape[d] >= 0 ? SymbolicScalar(shape[d]) : vx.shape[d]);
    w.offsets.push_back(vo.kind == ValueKind::View ? vo.offsets[d] + off : off);
    w.valid.push_back(vx.valid[d]);
  }
  ValueId xid = vx.id;
  size_t xrank = vx.shape.size();
  ValueId wid = r.add_value(std::move(w)); // invalidates vx and vo
  ir::Op o;
  o.kind = OpKind::Assemble;
  o.where = loc;
  o.inputs = {xid};
  o.outputs = {wid};
  o.tile = ir::capture_tile(r, xrank, "assemble", loc);
  r.emit(std::move(o));
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
