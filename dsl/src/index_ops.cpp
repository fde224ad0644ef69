// index_ops.cpp - Tracing of the indexing ops of index_ops.h: operand checks, result shapes and
// valid shapes, then one library ir::Op each (attribute layouts in pto/ir/op_kinds.def). The
// routines that run them are in codegen/rtlib/xops_index.cpp.
#include "pto/index_ops.h"

#include "trace_checks.h"

#include <cmath>
#include <functional>

namespace pto {

using ir::OpKind;
using ir::Recorder;
using ir::Value;
using ir::ValueId;
using namespace trace;

namespace {

using Dims = std::vector<SymbolicScalar>;

/// Appends a library op of `kind` with result (dt, shape, valid) and returns the result.
Tensor emit(Recorder &r, OpKind kind, const char *op, std::vector<ValueId> ins, DataType dt,
            Dims shape, Dims valid, const SrcLoc &loc,
            const std::function<void(ir::Op &)> &attrs = {}) {
  if (shape.empty() || shape.size() > 4)
    throw ShapeError(
        loc, op, fmt::format("the result would have rank {}; ops take rank 1 to 4", shape.size()));
  ir::Op o;
  o.kind = kind;
  o.where = loc;
  o.inputs = std::move(ins);
  o.tile = ir::capture_tile(r, shape.size(), op, loc);
  o.user_op = op; // run-time messages name it (embedding is an index_select op)
  if (attrs)
    attrs(o);
  check_result_size(shape, dt, op, loc);
  Tensor out = make_local(r, dt, std::move(shape), std::move(valid));
  o.outputs = {out.id()};
  r.emit(std::move(o));
  return out;
}

/// An index operand: data_operand plus DT_INT32 / DT_INT64.
Value index_operand(Recorder &r, const Tensor &t, const char *op, const SrcLoc &loc,
                    const char *what = "index") {
  Value v = data_operand(r, t, op, loc);
  if (v.dtype != DT_INT32 && v.dtype != DT_INT64)
    throw DTypeError(
        loc, op,
        fmt::format("{} must be DT_INT32 or DT_INT64, got {}; cast it", what, name(v.dtype)));
  return v;
}

void check_not_bool(DataType dt, const char *op, const SrcLoc &loc, const char *why) {
  if (dt == DT_BOOL)
    throw DTypeError(loc, op,
                     fmt::format("{} DT_BOOL data is not defined; cast to an int type", why));
}

void check_same_dtype(const Value &x, const Value &y, const char *what, const char *op,
                      const SrcLoc &loc) {
  if (y.dtype != x.dtype)
    throw DTypeError(loc, op,
                     fmt::format("{} has dtype {}, x has {}; cast one of them", what, name(y.dtype),
                                 name(x.dtype)));
}

void check_rank(const Value &v, size_t rank, const char *what, const char *op, const SrcLoc &loc) {
  if (v.shape.size() != rank)
    throw ShapeError(loc, op,
                     fmt::format("{} has rank {} ({}), expected rank {}", what, v.shape.size(),
                                 str(v.shape), rank));
}

/// ShapeError when the static dims a and b are not `a <= b` (or `a == b` with `equal`).
void check_dim(const SymbolicScalar &a, const SymbolicScalar &b, bool equal, const char *what,
               const char *op, const SrcLoc &loc) {
  if (!a.is_concrete() || !b.is_concrete())
    return;
  if (equal ? a.concrete() != b.concrete() : a.concrete() > b.concrete())
    throw ShapeError(loc, op,
                     fmt::format("{}: {} {} {}", what, a.concrete(),
                                 equal ? "differs from" : "exceeds", b.concrete()));
}

SymbolicScalar min_of(const SymbolicScalar &a, const SymbolicScalar &b) {
  if (a.same_as(b))
    return a;
  if (a.is_concrete() && b.is_concrete())
    return SymbolicScalar(std::min(a.concrete(), b.concrete()));
  return min(a, b);
}

/// A scalar operand converted to x's dtype (PyPTO's Element rules, as ops.h).
ir::Scalar resolve(ir::Scalar s, DataType dt, const char *op, const SrcLoc &loc) {
  if (s.dtype != DT_BOTTOM && s.dtype != dt)
    throw DTypeError(loc, op,
                     fmt::format("scalar of dtype {} with x of dtype {}; cast one of them",
                                 name(s.dtype), name(dt)));
  if (!s.is_int && !is_float(dt))
    throw DTypeError(loc, op,
                     fmt::format("floating scalar {} with an integer x of dtype {}; use an "
                                 "integer or cast x",
                                 s.f, name(dt)));
  if (s.is_int)
    check_int_element(s.i, dt, op, loc);
  return ir::as_element(s, dt);
}

/// Result shape of taking `index` (shape `is`, valid `iv`) at `axis` of x.
void take_shape(const Value &x, int axis, const Dims &is, const Dims &iv, Dims &shape,
                Dims &valid) {
  for (int d = 0; d < static_cast<int>(x.shape.size()); ++d) {
    if (d == axis) {
      shape.insert(shape.end(), is.begin(), is.end());
      valid.insert(valid.end(), iv.begin(), iv.end());
    } else {
      shape.push_back(x.shape[static_cast<size_t>(d)]);
      valid.push_back(x.valid[static_cast<size_t>(d)]);
    }
  }
}

Tensor segment(int64_t mode, const char *op, const Tensor &data, const Tensor &segment_ids,
               int64_t num_segments, const SrcLoc &loc) {
  auto &r = Recorder::current(op, loc);
  const Value x = data_operand(r, data, op, loc);
  const Value ids = index_operand(r, segment_ids, op, loc, "segment_ids");
  check_not_bool(x.dtype, op, loc, "segment reductions of");
  if (num_segments < 1)
    throw ArgumentError(loc, op, fmt::format("num_segments must be >= 1, got {}", num_segments));
  const size_t k = ids.shape.size();
  if (k > x.shape.size())
    throw ShapeError(
        loc, op,
        fmt::format("segment_ids {} has a higher rank than data {}", str(ids.shape), str(x.shape)));
  for (size_t d = 0; d < k; ++d)
    check_dim(ids.shape[d], x.shape[d], true,
              fmt::format("dim {} of segment_ids {} and data {}", d, str(ids.shape), str(x.shape))
                  .c_str(),
              op, loc);
  Dims shape{SymbolicScalar(num_segments)}, valid{SymbolicScalar(num_segments)};
  shape.insert(shape.end(), x.shape.begin() + static_cast<long>(k), x.shape.end());
  valid.insert(valid.end(), x.valid.begin() + static_cast<long>(k), x.valid.end());
  return emit(r, OpKind::SegmentReduce, op, {x.id, ids.id}, x.dtype, std::move(shape),
              std::move(valid), loc, [&](ir::Op &o) { o.ints = {mode, num_segments}; });
}

} // namespace

Tensor gather(const Tensor &x, int axis, const Tensor &index, SrcLoc loc) {
  const char *op = "gather";
  auto &r = Recorder::current(op, loc);
  const Value xv = data_operand(r, x, op, loc);
  const Value iv = index_operand(r, index, op, loc);
  const size_t rank = xv.shape.size();
  const int a = norm_axis(axis, rank, op, loc);
  check_rank(iv, rank, "index", op, loc);
  Dims valid;
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int>(d) == a) {
      valid.push_back(iv.valid[d]);
      continue;
    }
    check_dim(iv.shape[d], xv.shape[d], false,
              fmt::format("dim {} of index {} and x {}", d, str(iv.shape), str(xv.shape)).c_str(),
              op, loc);
    valid.push_back(min_of(iv.valid[d], xv.valid[d]));
  }
  return emit(r, OpKind::Gather, op, {xv.id, iv.id}, xv.dtype, iv.shape, std::move(valid), loc,
              [&](ir::Op &o) { o.axis = a; });
}

Tensor index_select(const Tensor &x, int axis, const Tensor &index, SrcLoc loc) {
  const char *op = "index_select";
  auto &r = Recorder::current(op, loc);
  const Value xv = data_operand(r, x, op, loc);
  const Value iv = index_operand(r, index, op, loc);
  const int a = norm_axis(axis, xv.shape.size(), op, loc);
  check_rank(iv, 1, "index", op, loc);
  Dims shape, valid;
  take_shape(xv, a, iv.shape, iv.valid, shape, valid);
  return emit(r, OpKind::IndexSelect, op, {xv.id, iv.id}, xv.dtype, std::move(shape),
              std::move(valid), loc, [&](ir::Op &o) { o.axis = a; });
}

Tensor embedding(const Tensor &weight, const Tensor &ids, EmbeddingOptions opts, SrcLoc loc) {
  const char *op = "embedding";
  auto &r = Recorder::current(op, loc);
  const Value wv = data_operand(r, weight, op, loc);
  const Value iv = index_operand(r, ids, op, loc, "ids");
  check_rank(wv, 2, "weight", op, loc);
  std::vector<int64_t> ints{1}; // 1: embedding (messages), then padding_idx when given
  if (opts.padding_idx) {
    int64_t p = *opts.padding_idx;
    const SymbolicScalar &rows = wv.shape[0];
    if (!rows.is_concrete() && p < 0)
      throw ArgumentError(loc, op,
                          fmt::format("a negative padding_idx ({}) needs a static row count, "
                                      "weight is {}",
                                      p, str(wv.shape)));
    if (rows.is_concrete() && (p < -rows.concrete() || p >= rows.concrete()))
      throw ArgumentError(loc, op,
                          fmt::format("padding_idx {} is out of range [-{}, {}) of weight {}", p,
                                      rows.concrete(), rows.concrete(), str(wv.shape)));
    ints.push_back(p < 0 ? p + rows.concrete() : p);
  }
  Dims shape, valid;
  take_shape(wv, 0, iv.shape, iv.valid, shape, valid);
  return emit(r, OpKind::IndexSelect, op, {wv.id, iv.id}, wv.dtype, std::move(shape),
              std::move(valid), loc, [&](ir::Op &o) {
                o.axis = 0;
                o.ints = ints;
              });
}

Tensor scatter(const Tensor &x, int axis, const Tensor &index, const Operand &src,
               ScatterOptions opts, SrcLoc loc) {
  const char *op = "scatter";
  auto &r = Recorder::current(op, loc);
  const Value xv = data_operand(r, x, op, loc);
  const Value iv = index_operand(r, index, op, loc);
  const size_t rank = xv.shape.size();
  const int a = norm_axis(axis, rank, op, loc);
  check_rank(iv, rank, "index", op, loc);
  if (opts.reduce != ScatterMode::NONE)
    check_not_bool(xv.dtype, op, loc, "reduce ADD or MULTIPLY of");
  std::vector<ValueId> ins{xv.id, iv.id};
  std::optional<ir::Scalar> scalar;
  if (src.is_tensor()) {
    const Value sv = data_operand(r, src.tensor, op, loc);
    check_same_dtype(xv, sv, "src", op, loc);
    check_rank(sv, rank, "src", op, loc);
    for (size_t d = 0; d < rank; ++d)
      check_dim(
          iv.shape[d], sv.shape[d], false,
          fmt::format("dim {} of index {} and src {}", d, str(iv.shape), str(sv.shape)).c_str(), op,
          loc);
    ins.push_back(sv.id);
  } else {
    scalar = resolve(*src.scalar, xv.dtype, op, loc);
  }
  for (size_t d = 0; d < rank; ++d)
    if (static_cast<int>(d) != a)
      check_dim(iv.shape[d], xv.shape[d], false,
                fmt::format("dim {} of index {} and x {}", d, str(iv.shape), str(xv.shape)).c_str(),
                op, loc);
  const auto mode = static_cast<int64_t>(opts.reduce);
  return emit(r, OpKind::Scatter, op, std::move(ins), xv.dtype, xv.shape, xv.valid, loc,
              [&](ir::Op &o) {
                o.axis = a;
                o.ints = {mode};
                o.scalar = scalar;
              });
}

Tensor index_add(const Tensor &x, int axis, const Tensor &index, const Tensor &src,
                 IndexAddOptions opts, SrcLoc loc) {
  const char *op = "index_add";
  auto &r = Recorder::current(op, loc);
  const Value xv = data_operand(r, x, op, loc);
  const Value iv = index_operand(r, index, op, loc);
  const Value sv = data_operand(r, src, op, loc);
  const size_t rank = xv.shape.size();
  const int a = norm_axis(axis, rank, op, loc);
  check_rank(iv, 1, "index", op, loc);
  check_not_bool(xv.dtype, op, loc, "index_add of");
  check_same_dtype(xv, sv, "src", op, loc);
  check_rank(sv, rank, "src", op, loc);
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int>(d) == a)
      check_dim(sv.shape[d], iv.shape[0], true,
                fmt::format("src {} on axis {} and the length of index {}", str(sv.shape), a,
                            str(iv.shape))
                    .c_str(),
                op, loc);
    else
      check_dim(sv.shape[d], xv.shape[d], true,
                fmt::format("dim {} of src {} and x {}", d, str(sv.shape), str(xv.shape)).c_str(),
                op, loc);
  }
  ir::Scalar alpha{opts.alpha, 0, false, xv.dtype};
  if (!is_float(xv.dtype)) {
    if (!(std::trunc(opts.alpha) == opts.alpha && std::abs(opts.alpha) <= 9.0e15))
      throw DTypeError(loc, op,
                       fmt::format("alpha {} is not an integer, and x has the integer dtype {}",
                                   opts.alpha, name(xv.dtype)));
    alpha.i = static_cast<int64_t>(opts.alpha);
    alpha.is_int = true;
  }
  return emit(r, OpKind::IndexAdd, op, {xv.id, iv.id, sv.id}, xv.dtype, xv.shape, xv.valid, loc,
              [&](ir::Op &o) {
                o.axis = a;
                o.scalar = alpha;
              });
}

Tensor index_put(const Tensor &x, const std::vector<Tensor> &indices, const Operand &values,
                 IndexPutOptions opts, SrcLoc loc) {
  const char *op = "index_put";
  auto &r = Recorder::current(op, loc);
  const Value xv = data_operand(r, x, op, loc);
  const size_t rank = xv.shape.size(), k = indices.size();
  if (k < 1 || k > rank)
    throw ShapeError(
        loc, op,
        fmt::format("takes 1 to {} index tensors for x {}, got {}", rank, str(xv.shape), k));
  if (opts.accumulate)
    check_not_bool(xv.dtype, op, loc, "accumulate into");
  std::vector<ValueId> ins{xv.id};
  SymbolicScalar n(1);
  for (size_t t = 0; t < k; ++t) {
    const Value iv = index_operand(r, indices[t], op, loc);
    check_rank(iv, 1, fmt::format("index tensor {}", t).c_str(), op, loc);
    const SymbolicScalar &len = iv.shape[0];
    if (is_one(n)) {
      n = len; // a length-1 index repeats; the longest sets N
    } else if (!is_one(len) &&
               (len.is_concrete() && n.is_concrete() ? len.concrete() != n.concrete()
                                                     : !len.same_as(n))) {
      throw ShapeError(loc, op,
                       fmt::format("index tensor {} has length {}, an earlier one {}; lengths "
                                   "must be equal or 1",
                                   t, len.str(), n.str()));
    }
    ins.push_back(iv.id);
  }
  std::optional<ir::Scalar> scalar;
  if (values.is_tensor()) {
    const Value vv = data_operand(r, values.tensor, op, loc);
    check_same_dtype(xv, vv, "values", op, loc);
    Dims target{n};
    target.insert(target.end(), xv.shape.begin() + static_cast<long>(k), xv.shape.end());
    bool ok = vv.shape.size() <= target.size();
    for (size_t j = 0; ok && j < vv.shape.size(); ++j) {
      const SymbolicScalar &vd = vv.shape[j];
      const SymbolicScalar &td = target[target.size() - vv.shape.size() + j];
      ok = is_one(vd) || vd.same_as(td) ||
           (vd.is_concrete() && td.is_concrete() && vd.concrete() == td.concrete());
    }
    if (!ok)
      throw ShapeError(loc, op,
                       fmt::format("values {} does not broadcast to the indexed shape {}",
                                   str(vv.shape), str(target)));
    ins.push_back(vv.id);
  } else {
    scalar = resolve(*values.scalar, xv.dtype, op, loc);
  }
  const int64_t acc = opts.accumulate ? 1 : 0, nk = static_cast<int64_t>(k);
  return emit(r, OpKind::IndexPut, op, std::move(ins), xv.dtype, xv.shape, xv.valid, loc,
              [&](ir::Op &o) {
                o.ints = {acc, nk};
                o.scalar = scalar;
              });
}

Tensor one_hot(const Tensor &index, int64_t num_classes, SrcLoc loc) {
  const char *op = "one_hot";
  auto &r = Recorder::current(op, loc);
  const Value iv = index_operand(r, index, op, loc);
  if (num_classes < 1)
    throw ArgumentError(loc, op,
                        fmt::format("num_classes must be >= 1, got {} (-1, max + 1, would make "
                                    "the shape depend on run-time data; give it)",
                                    num_classes));
  Dims shape = iv.shape, valid = iv.valid;
  shape.emplace_back(num_classes);
  valid.emplace_back(num_classes);
  return emit(r, OpKind::OneHot, op, {iv.id}, DT_INT64, std::move(shape), std::move(valid), loc,
              [&](ir::Op &o) { o.ints = {num_classes}; });
}

Tensor unsorted_segment_sum(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                            SrcLoc loc) {
  return segment(0, "unsorted_segment_sum", data, segment_ids, num_segments, loc);
}
Tensor unsorted_segment_min(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                            SrcLoc loc) {
  return segment(1, "unsorted_segment_min", data, segment_ids, num_segments, loc);
}
Tensor unsorted_segment_max(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                            SrcLoc loc) {
  return segment(2, "unsorted_segment_max", data, segment_ids, num_segments, loc);
}
Tensor unsorted_segment_prod(const Tensor &data, const Tensor &segment_ids, int64_t num_segments,
                             SrcLoc loc) {
  return segment(3, "unsorted_segment_prod", data, segment_ids, num_segments, loc);
}

} // namespace pto
