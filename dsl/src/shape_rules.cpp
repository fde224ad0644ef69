// shape_rules.cpp - See shape_rules.h. What is provable at trace time (from constants, min/max,
// dims >= 0 and the bounds of open loops) is not checked again at run time, so the common
// shapes of tails (`min(n - i * 16, 16)`) cost no Check op.
#include "shape_rules.h"

#include "pto/size_math.h"

#include <fmt/format.h>
#include <optional>

namespace pto::trace {

using ir::Recorder;

namespace {

/// What is known at trace time of an int64 run-time scalar: inclusive bounds.
struct Range {
  std::optional<int64_t> lo, hi;
};

using Bound = std::optional<int64_t>;

/// `f(a, b)` when both bounds are known, else unknown (f may say unknown: an overflow).
template <class F> Bound known(Bound a, Bound b, F f) {
  return a && b ? Bound(f(*a, *b)) : std::nullopt;
}
Bound add(Bound a, Bound b) { return known(a, b, add_checked); }
Bound mul(Bound a, Bound b) { return known(a, b, mul_checked); }
Bound sub(Bound a, Bound b) {
  return known(a, b, [](int64_t x, int64_t y) {
    int64_t r = 0;
    return __builtin_sub_overflow(x, y, &r) ? Bound() : Bound(r);
  });
}
Bound lower(Bound a, Bound b) {
  return known(a, b, [](int64_t x, int64_t y) { return std::min(x, y); });
}
Bound upper(Bound a, Bound b) {
  return known(a, b, [](int64_t x, int64_t y) { return std::max(x, y); });
}
/// The tighter of two bounds that both hold (either may be unknown).
Bound tighter_hi(Bound a, Bound b) { return a && b ? lower(a, b) : (a ? a : b); }
Bound tighter_lo(Bound a, Bound b) { return a && b ? upper(a, b) : (a ? a : b); }

/// The range of an op non-decreasing in both operands: {lo(a.lo, b.lo), hi(a.hi, b.hi)}.
Range monotone(const Range &a, const Range &b, Bound (*lo)(Bound, Bound),
               Bound (*hi)(Bound, Bound)) {
  return {lo(a.lo, b.lo), hi(a.hi, b.hi)};
}

Range range_of(const Recorder &r, const SymExpr &e);

Range symbol_range(const Recorder &r, const SymExpr &e) {
  switch (e.sym) {
  case SymKind::InputDim:
    return {0, std::nullopt};
  case SymKind::MyPe: { // a PE of group `a`: [0, its size)
    const auto &groups = r.program().groups;
    if (e.a >= 0 && static_cast<size_t>(e.a) < groups.size() &&
        groups[static_cast<size_t>(e.a)].n_pes > 0)
      return {0, groups[static_cast<size_t>(e.a)].n_pes - 1};
    return {0, std::nullopt};
  }
  case SymKind::LoopBegin:
  case SymKind::LoopEnd:
    return {0, 1};
  case SymKind::LoopIndex:
    // An iteration runs only for start <= index < stop (control.h: step > 0).
    if (const ir::Op *loop = r.open_loop_op(static_cast<int>(e.a)))
      return {range_of(r, loop->start.expr()).lo, sub(range_of(r, loop->stop.expr()).hi, 1)};
    return {};
  case SymKind::Named:
  case SymKind::TensorElement:
    return {};
  }
  return {};
}

// Expressions larger than this (written out as a tree) get no range: the analysis only proves
// checks away, so an unknown range costs a run-time check, never a wrong answer, and the
// recursion below stays shallow and linear for any expression the user builds.
constexpr uint64_t kMaxRangeNodes = 1024;

Range range_of(const Recorder &r, const SymExpr &e) {
  if (e.nodes > kMaxRangeNodes)
    return {};
  switch (e.tag) {
  case SymExpr::Tag::Const:
    return {e.value, e.value};
  case SymExpr::Tag::Symbol:
    return symbol_range(r, e);
  case SymExpr::Tag::Op:
    break;
  }
  auto arg = [&](size_t i) { return range_of(r, *e.args[i]); };
  switch (e.op) {
  case SymOp::Add:
    return monotone(arg(0), arg(1), add, add);
  case SymOp::Sub: {
    Range a = arg(0), b = arg(1);
    return {sub(a.lo, b.hi), sub(a.hi, b.lo)};
  }
  case SymOp::Mul: { // only for non-negative factors
    Range a = arg(0), b = arg(1);
    if (a.lo && b.lo && *a.lo >= 0 && *b.lo >= 0)
      return monotone(a, b, mul, mul);
    return {};
  }
  case SymOp::Min:
    return monotone(arg(0), arg(1), lower, tighter_hi);
  case SymOp::Max:
    return monotone(arg(0), arg(1), tighter_lo, upper);
  case SymOp::Select: // either branch
    return monotone(arg(1), arg(2), lower, upper);
  case SymOp::Eq:
  case SymOp::Ne:
  case SymOp::Lt:
  case SymOp::Le:
  case SymOp::Gt:
  case SymOp::Ge:
  case SymOp::And:
  case SymOp::Or:
  case SymOp::Not:
    return {0, 1};
  case SymOp::Mod: { // C's %: a non-negative dividend and a positive constant divisor
    Range a = arg(0), b = arg(1);
    if (a.lo && *a.lo >= 0 && b.lo && b.hi && *b.lo == *b.hi && *b.lo > 0)
      return {0, tighter_hi(a.hi, *b.lo - 1)};
    return {};
  }
  case SymOp::Div:
  case SymOp::Neg:
    return {};
  }
  return {};
}

/// True when a <= b is known now (structurally, or from the ranges).
bool provably_le(const Recorder &r, const SymbolicScalar &a, const SymbolicScalar &b) {
  if (a.same_as(b))
    return true;
  const SymExpr &e = a.expr();
  if (e.tag == SymExpr::Tag::Op && e.op == SymOp::Min)
    for (const auto &x : e.args)
      if (provably_le(r, SymbolicScalar(x), b))
        return true;
  Range ra = range_of(r, e), rb = range_of(r, b.expr());
  return ra.hi && rb.lo && *ra.hi <= *rb.lo;
}

/// `a & b`, folded when either is known.
SymbolicScalar both(const SymbolicScalar &a, const SymbolicScalar &b) {
  if (a.is_concrete())
    return a.concrete() != 0 ? b : a;
  if (b.is_concrete())
    return b.concrete() != 0 ? a : b;
  return a & b;
}

/// `a | b`, folded when either is known.
SymbolicScalar either(const SymbolicScalar &a, const SymbolicScalar &b) {
  if (a.is_concrete())
    return a.concrete() != 0 ? a : b;
  if (b.is_concrete())
    return b.concrete() != 0 ? b : a;
  return a | b;
}

/// Requires `holds` of every kernel call: nothing when it is known to hold, the error `err`
/// names now when it is known not to, else a Check op with the same message.
void require(Recorder &r, const SymbolicScalar &holds, const std::string &message,
             const std::vector<SymbolicScalar> &args, const char *op, const SrcLoc &loc,
             ir::CheckError err = ir::CheckError::Shape) {
  if (holds.is_concrete()) {
    if (holds.concrete() != 0)
      return;
    std::vector<std::string> shown;
    for (const auto &a : args)
      shown.push_back(a.str());
    const std::string detail = ir::format_check(message, shown);
    if (err != ir::CheckError::Shape)
      throw DistributedError(loc, op, detail);
    throw ShapeError(loc, op, detail);
  }
  ir::Op o;
  o.kind = ir::OpKind::Check;
  o.where = loc;
  o.label = op;
  o.holds = holds;
  o.message = message;
  o.args = args;
  o.check_error = err;
  r.emit_check(std::move(o));
}

} // namespace

void check_valid_shape(Recorder &r, const std::vector<SymbolicScalar> &valid,
                       const std::vector<SymbolicScalar> &shape, const char *op,
                       const SrcLoc &loc) {
  if (valid.size() != shape.size())
    throw ShapeError(
        loc, op,
        fmt::format("valid_shape needs {} entries (one per dim of the shape {}), got {}",
                    shape.size(), str(shape), valid.size()));
  for (size_t d = 0; d < valid.size(); ++d) {
    const SymbolicScalar &v = valid[d], &s = shape[d];
    SymbolicScalar lo_ok = provably_le(r, 0, v) ? SymbolicScalar(1) : v >= 0;
    SymbolicScalar hi_ok = provably_le(r, v, s) ? SymbolicScalar(1) : v <= s;
    require(r, both(lo_ok, hi_ok),
            fmt::format("valid_shape[{}] = {{}} is outside [0, {{}}], the size of dim {}", d, d),
            {v, s}, op, loc);
  }
}

void check_window(Recorder &r, const Window &w, const char *op, const SrcLoc &loc) {
  for (size_t d = 0; d < w.offsets.size(); ++d) {
    const SymbolicScalar &off = w.offsets[d], &ext = w.extent[d], &size = w.parent_extent[d];
    if (!provably_le(r, 0, off))
      require(r, off >= 0, fmt::format("offset {{}} of dim {} is negative", d), {off}, op, loc,
              w.error);
    // size - off cannot overflow: off >= 0 was required first, and sizes are >= 0. An empty
    // extent touches nothing, so it may lie anywhere (a tile past a valid region).
    SymbolicScalar room = size - off;
    if (provably_le(r, w.bound[d], room) || provably_le(r, ext, room) ||
        (ext.is_concrete() && ext.concrete() == 0))
      continue;
    const bool valid_size = !size.same_as(w.parent_shape[d]);
    // The end prints as {+} (off + ext, exact): evaluated as int64 it could wrap.
    require(r, either(ext == 0, room >= ext),
            fmt::format("window [{{}}, {{+}}) of dim {} exceeds the {} {{}} of {}{}", d,
                        valid_size ? "valid size" : "size", ir::escape_check(w.parent),
                        w.hint ? "; pass a valid_shape to view a tail that runs past the end" : ""),
            {off, off, ext, size}, op, loc, w.error);
  }
}

void require_le(Recorder &r, const SymbolicScalar &a, const SymbolicScalar &b,
                const std::string &message, const std::vector<SymbolicScalar> &args, const char *op,
                const SrcLoc &loc, ir::CheckError err) {
  if (!provably_le(r, a, b))
    require(r, a <= b, message, args, op, loc, err);
}

void require_index(Recorder &r, const SymbolicScalar &i, const SymbolicScalar &n,
                   const std::string &message, const std::vector<SymbolicScalar> &args,
                   const char *op, const SrcLoc &loc, ir::CheckError err) {
  const Range ri = range_of(r, i.expr()), rn = range_of(r, n.expr());
  SymbolicScalar lo_ok = provably_le(r, 0, i) ? SymbolicScalar(1) : i >= 0;
  SymbolicScalar hi_ok = ri.hi && rn.lo && *ri.hi < *rn.lo ? SymbolicScalar(1) : i < n;
  require(r, both(lo_ok, hi_ok), message, args, op, loc, err);
}

std::string value_phrase(const ir::Program &p, const ir::Value &v) {
  switch (v.kind) {
  case ir::ValueKind::Param:
    return "'" + v.name + "'";
  case ir::ValueKind::View:
    return "the view " + str(v.shape) + " of " + value_phrase(p, p.value(v.base));
  case ir::ValueKind::ShmemData:
    return "the shmem data " + str(v.shape);
  case ir::ValueKind::Local:
  case ir::ValueKind::Token:
    break;
  }
  return "the local tensor " + str(v.shape);
}

const std::vector<SymbolicScalar> &window_extent(const ir::Value &v) {
  return v.kind == ir::ValueKind::View && v.extent.size() == v.shape.size() ? v.extent : v.shape;
}

} // namespace pto::trace
