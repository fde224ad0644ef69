// rules.cpp - THE rule table of pto::parallel (kRules): one entry per op with its factor
// signature, what splitting each factor costs, and which pending partials each input may carry
// (docs/sharding.md, "One rule table"); the public ops are thin calls of apply().
#include "pto/error.h"
#include "pto/index_ops.h"
#include "pto/matmul.h"
#include "pto/nn_ops.h"
#include "pto/ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"
#include "pto/sort_ops.h"

#include "gather_rules.h"
#include "parallel_internal.h"
#include "random_rules.h"
#include "rule_index.h"
#include "rule_signatures.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>

namespace pto::parallel::detail {

namespace {

constexpr auto R = PartialRule::RESOLVE;
// --- local functions: the pto op on this PE's slices ---

Tensor local_matmul(const Call &c) {
  DataType out =
      c.attrs.mm.out_dtype == DT_BOTTOM ? c.locals[0].dtype(c.loc) : c.attrs.mm.out_dtype;
  return pto::matmul(c.locals[0], c.locals[1], out,
                     {.a_trans = c.attrs.mm.a_trans, .b_trans = c.attrs.mm.b_trans}, c.loc);
}

using BinaryFn = Tensor (*)(const Operand &, const Operand &, SrcLoc);
constexpr BinaryFn kBinary[] = {
#define PTO_PAR_BINARY(NAME, MS, PARTIALS) pto::NAME,
#define PTO_PAR_UNARY(NAME, MS, PARTIALS)
#include "elementwise_rules.def"
#undef PTO_PAR_BINARY
#undef PTO_PAR_UNARY
};
Tensor local_binary(const Call &c) {
  return kBinary[c.attrs.fn](Operand(c.locals[0], c.loc), Operand(c.locals[1], c.loc), c.loc);
}

using UnaryFn = Tensor (*)(const Tensor &, SrcLoc);
/// pto::round has an overload with decimals: the one-argument form is meant.
constexpr UnaryFn kUnary[] = {
#define PTO_PAR_BINARY(NAME, MS, PARTIALS)
#define PTO_PAR_UNARY(NAME, MS, PARTIALS) static_cast<UnaryFn>(pto::NAME),
#include "elementwise_rules.def"
#undef PTO_PAR_BINARY
#undef PTO_PAR_UNARY
};
Tensor local_unary(const Call &c) { return kUnary[c.attrs.fn](c.locals[0], c.loc); }
Tensor local_elu(const Call &c) { return pto::elu(c.locals[0], c.attrs.alpha, c.loc); }
/// ExpandDims / Squeeze on the slice itself (unlike a reshape, they keep an uneven split's
/// run-time valid extents): the dims to drop are the GLOBAL size-1 dims, since a slice of an
/// unevenly split dim may be 1 long too.
Tensor local_unsqueeze(const Call &c) { return pto::unsqueeze(c.locals[0], c.attrs.axis, c.loc); }
Tensor local_squeeze(const Call &c) {
  std::vector<int> dims;
  const int r = c.locals[0].dim(c.loc);
  for (int d = 0; d < r; ++d) {
    const bool listed =
        c.attrs.dims.empty() || std::find_if(c.attrs.dims.begin(), c.attrs.dims.end(), [&](int x) {
                                  return (x < 0 ? x + r : x) == d;
                                }) != c.attrs.dims.end();
    if (listed && c.sig.factors[static_cast<size_t>(c.sig.in[0][static_cast<size_t>(d)])].size == 1)
      dims.push_back(d);
  }
  if (dims.empty())
    return c.locals[0];
  return pto::squeeze(c.locals[0], dims, c.loc);
}
Tensor local_cast(const Call &c) { return pto::cast(c.locals[0], c.attrs.dtype, c.loc); }
Tensor local_full_like(const Call &c) {
  return pto::full_like(c.locals[0], c.attrs.alpha, DT_BOTTOM, c.loc);
}
Tensor local_bias_add(const Call &c) {
  return pto::bias_add(c.locals[0], c.locals[1], c.attrs.format, c.loc);
}
Tensor local_broadcast_to(const Call &c) {
  std::vector<SymbolicScalar> shape(c.out_local_shape.begin(), c.out_local_shape.end());
  return pto::expand(c.locals[0], shape, c.loc);
}

Tensor local_sum(const Call &c) {
  return pto::sum(c.locals[0], c.attrs.axis, {.keepdim = c.attrs.keepdim}, c.loc);
}
Tensor local_amax(const Call &c) {
  return pto::amax(c.locals[0], c.attrs.axis, {.keepdim = c.attrs.keepdim}, c.loc);
}
Tensor local_amin(const Call &c) {
  return pto::amin(c.locals[0], c.attrs.axis, {.keepdim = c.attrs.keepdim}, c.loc);
}
/// ReduceMean: with the axis split, the local sum times 1 / the GLOBAL length, a Partial(sum)
/// (never DTensor's Partial(avg), which is wrong for uneven splits: #162692).
Tensor local_mean(const Call &c) {
  const int axis = c.attrs.axis < 0 ? c.attrs.axis + c.locals[0].dim(c.loc) : c.attrs.axis;
  if (c.factor_axes[static_cast<size_t>(axis)].empty())
    return pto::mean(c.locals[0], axis, {.keepdim = c.attrs.keepdim}, c.loc);
  const double n = static_cast<double>(c.sig.factors[static_cast<size_t>(axis)].size);
  return pto::mul(pto::sum(c.locals[0], axis, {.keepdim = c.attrs.keepdim}, c.loc), 1.0 / n, c.loc);
}

Tensor local_approximate_equal(const Call &c) {
  return pto::approximate_equal(c.locals[0], c.locals[1], c.attrs.alpha, c.loc);
}
Tensor local_prelu(const Call &c) { return pto::prelu(c.locals[0], c.locals[1], c.loc); }
/// L2Normalize with a split axis: x / sqrt(max(S, epsilon)), S the allreduce(sum) over the axis's
/// mesh axes of each PE's sum of squares (pto::l2_normalize's formula, composed).
Tensor local_l2_normalize(const Call &c) {
  const int axis = c.attrs.axis < 0 ? c.attrs.axis + c.locals[0].dim(c.loc) : c.attrs.axis;
  const auto &axes = c.factor_axes[static_cast<size_t>(axis)];
  const Tensor &x = c.locals[0];
  if (!c.active || axes.empty())
    return pto::l2_normalize(x, axis, c.attrs.alpha, c.loc);
  if (!(c.attrs.alpha >= 0) || !std::isfinite(c.attrs.alpha))
    return pto::l2_normalize(x, axis, c.attrs.alpha, c.loc); // its ArgumentError
  Tensor s = pto::sum(pto::mul(x, x, c.loc), axis, {.keepdim = true}, c.loc);
  for (int a : axes)
    s = allreduce_axis(s, c.mesh, a, PartialOp::SUM, c.loc);
  return pto::div(x, pto::sqrt(pto::maximum(s, c.attrs.alpha, c.loc), c.loc), c.loc);
}
/// ArgMaxWithValue / ArgMinWithValue (attrs.fn 0 / 1) with the reduced axis split: each PE's
/// local {index, value}, the index made global (+ this PE's chunk offset); then per mesh axis
/// of the split, m = allreduce(max|min) of the values and the index = allreduce(min) of the
/// indices whose value is m (or NaN: NaN wins), else INT32_MAX: the lowest index wins ties, so
/// both results are bitwise one PE's (-0 and +0 tie, as in one PE's argmax; the value is then
/// pto::maximum's / minimum's, -0 < +0).
Tensor local_arg_with_value(const Call &c) {
  const bool is_max = c.attrs.fn == 0;
  const Tensor &x = c.locals[0];
  const int axis = c.attrs.axis < 0 ? c.attrs.axis + x.dim(c.loc) : c.attrs.axis;
  const auto &axes = c.factor_axes[static_cast<size_t>(axis)];
  ReduceOptions o{.keepdim = c.attrs.keepdim};
  pto::IndexValue r = is_max ? pto::argmax_with_value(x, axis, o, c.loc)
                             : pto::argmin_with_value(x, axis, o, c.loc);
  if (c.active && !axes.empty()) {
    std::vector<Placement> pl(static_cast<size_t>(c.mesh.n_axes()));
    for (int a : axes)
      pl[static_cast<size_t>(a)] = Placement::split(axis);
    std::vector<int64_t> shape;
    for (int f : c.sig.in[0])
      shape.push_back(c.sig.factors[static_cast<size_t>(f)].size);
    const SymChunk chunk = my_chunk(Layout(c.mesh, shape, pl, c.loc), axis, c.loc);
    // The offset as a [1] tensor: a view of arange(n + 1) at the (run-time) offset (an empty
    // chunk of a split into more parts than elements is at offset n).
    Tensor offset =
        pto::view(pto::arange(int64_t{0}, shape[static_cast<size_t>(axis)] + 1, 1, c.loc), {1},
                  {chunk.offset}, {}, c.loc);
    Tensor index = pto::cast(pto::add(r.index, offset, c.loc), DT_INT32, c.loc);
    Tensor value = r.values;
    const PartialOp op = is_max ? PartialOp::MAX : PartialOp::MIN;
    for (int a : axes) {
      Tensor m = allreduce_axis(value, c.mesh, a, op, c.loc);
      Tensor wins = pto::logical_or(pto::eq(value, m, c.loc), pto::isnan(value, c.loc), c.loc);
      Tensor cand = pto::where(wins, index, int64_t{INT32_MAX}, c.loc);
      index = allreduce_axis(cand, c.mesh, a, PartialOp::MIN, c.loc);
      value = m;
    }
    r = {index, value};
  }
  c.extra->push_back(r.values);
  return r.index;
}

/// TopK with the last dim split: each PE's local top k (indices made global), an allgather of
/// the k candidates per PE along the dim (in coordinate order, so among equal values the lower
/// global index comes first, as in one PE's sort order), and the top k of those; the indices
/// are picked by pto::gather. Every PE's chunk must hold k elements (StrategyError otherwise).
Tensor local_topk(const Call &c) {
  const Tensor &x = c.locals[0];
  const int last = x.dim(c.loc) - 1;
  const int64_t k = c.attrs.axis;
  const auto &axes = c.factor_axes[static_cast<size_t>(last)];
  SortResult r;
  std::vector<int64_t> shape;
  std::vector<Placement> from(static_cast<size_t>(c.mesh.n_axes()));
  if (!axes.empty()) {
    for (size_t d = 0; d < c.sig.in[0].size(); ++d) {
      shape.push_back(c.sig.factors[d].size);
      for (int a : c.factor_axes[d])
        from[static_cast<size_t>(a)] = Placement::split(static_cast<int>(d));
    }
    // Checked on the 1-PE oracle too, so both give the same error.
    const Layout in(c.mesh, shape, from, c.loc);
    if (shape.back() / in.parts(last) < k)
      throw StrategyError(c.loc, c.rule.op,
                          fmt::format("operand 0 dim {} of size {} is split {}: a PE's chunk has "
                                      "fewer than k = {} elements (chunks smaller than k are "
                                      "planned); split it at most {} ways",
                                      last, shape.back(), in.parts(last), k, shape.back() / k));
  }
  if (!c.active || axes.empty()) {
    r = pto::topk(x, k, last, c.attrs.topk, c.loc);
  } else {
    const Layout in(c.mesh, shape, from, c.loc);
    r = pto::topk(x, k, last, c.attrs.topk, c.loc);
    const SymChunk chunk = my_chunk(in, last, c.loc);
    Tensor offset = pto::view(pto::arange(int64_t{0}, shape.back() + 1, 1, c.loc), {1},
                              {chunk.offset}, {}, c.loc);
    Tensor index = pto::cast(pto::add(r.indices, offset, c.loc), DT_INT32, c.loc);
    shape.back() = k * in.parts(last);
    const Layout cand(c.mesh, shape, from, c.loc);
    std::vector<Placement> to = from;
    for (int a : axes)
      to[static_cast<size_t>(a)] = Placement::replicate();
    const Layout whole(c.mesh, shape, to, c.loc);
    Tensor values = redistribute_local(r.values, cand, whole, true, c.loc);
    index = redistribute_local(index, cand, whole, true, c.loc);
    SortResult m = pto::topk(values, k, last, c.attrs.topk, c.loc);
    r = {m.values, pto::gather(index, last, m.indices, c.loc)};
  }
  c.extra->push_back(r.indices);
  return r.values;
}

Tensor local_concat(const Call &c) { return pto::concat(c.locals, c.attrs.axis, c.loc); }
/// Split's piece and Slice's window: a view of the slice (whole along every windowed dim).
Tensor local_window(const Call &c) {
  std::vector<int64_t> shape;
  std::vector<SymbolicScalar> offsets;
  for (size_t d = 0; d < c.attrs.begin.size(); ++d) {
    const auto &f = c.sig.factors[static_cast<size_t>(c.sig.in[0][d])];
    const bool whole = f.kind == FactorKind::FREE; // keeps the slice's extent and valid shape
    shape.push_back(whole ? c.locals[0].shape(static_cast<int>(d), c.loc).concrete(c.loc) : f.size);
    offsets.emplace_back(whole ? 0 : c.attrs.begin[d]);
  }
  return pto::view(c.locals[0], shape, offsets, {}, c.loc);
}
/// StridedSlice: the window as Slice, then every stride != 1 dim picked by index_select of
/// arange(0, extent, stride) (pto::view takes stride 1 only: composed, exact).
Tensor local_strided_slice(const Call &c) {
  std::vector<int64_t> shape;
  std::vector<SymbolicScalar> offsets;
  for (size_t d = 0; d < c.attrs.begin.size(); ++d) {
    const auto &f = c.sig.factors[d];
    const bool whole = f.kind == FactorKind::FREE;
    shape.push_back(whole ? c.locals[0].shape(static_cast<int>(d), c.loc).concrete(c.loc)
                          : c.attrs.size[d] - c.attrs.begin[d]);
    offsets.emplace_back(whole ? 0 : c.attrs.begin[d]);
  }
  Tensor x = pto::view(c.locals[0], shape, offsets, {}, c.loc);
  for (size_t d = 0; d < c.attrs.strides.size(); ++d)
    if (c.attrs.strides[d] != 1)
      x = pto::index_select(x, static_cast<int>(d),
                            pto::arange(int64_t{0}, shape[d], c.attrs.strides[d], c.loc), c.loc);
  return x;
}
/// Tile: each PE tiles multiple / count copies along a split repeated dim (its chunk of the
/// output, since the count divides the multiple).
Tensor local_tile(const Call &c) {
  std::vector<int64_t> reps = c.attrs.size;
  for (size_t d = 0; c.active && d < reps.size(); ++d)
    for (int a : c.factor_axes[static_cast<size_t>(c.sig.out[d])])
      if (c.sig.factors[static_cast<size_t>(c.sig.out[d])].kind == FactorKind::REPEAT)
        reps[d] /= c.mesh.size(a);
  return pto::tile(c.locals[0], reps, c.loc);
}

/// Exact (log-)softmax with a split axis: the global row max and row sum by allreduce over the
/// axis's mesh axes (max is exact; the sum adds the PEs' partial sums in coordinate order).
Tensor softmax_recipe(const Call &c, bool log) {
  const int axis = c.attrs.axis < 0 ? c.attrs.axis + c.locals[0].dim(c.loc) : c.attrs.axis;
  const auto &axes = c.factor_axes[static_cast<size_t>(axis)];
  const Tensor &x = c.locals[0];
  if (!c.active || axes.empty())
    return log ? pto::log_softmax(x, axis, c.loc) : pto::softmax(x, axis, c.loc);
  Tensor m = pto::amax(x, axis, {.keepdim = true}, c.loc);
  for (int a : axes)
    m = allreduce_axis(m, c.mesh, a, PartialOp::MAX, c.loc);
  Tensor shifted = pto::sub(x, m, c.loc);
  Tensor e = pto::exp(shifted, c.loc);
  Tensor s = pto::sum(e, axis, {.keepdim = true}, c.loc);
  for (int a : axes)
    s = allreduce_axis(s, c.mesh, a, PartialOp::SUM, c.loc);
  return log ? pto::sub(shifted, pto::log(s, c.loc), c.loc) : pto::div(e, s, c.loc);
}
Tensor local_softmax(const Call &c) { return softmax_recipe(c, false); }
Tensor local_log_softmax(const Call &c) { return softmax_recipe(c, true); }

Tensor local_permute(const Call &c) { return pto::permute(c.locals[0], c.attrs.perm, c.loc); }

Tensor local_reshape(const Call &c) {
  for (size_t f = 0; f < c.sig.factors.size(); ++f) {
    int64_t p = 1;
    for (int a : c.factor_axes[f])
      p *= c.mesh.size(a);
    if (c.sig.factors[f].size % p != 0)
      throw StrategyError(c.loc, c.rule.op,
                          fmt::format("a kept dim of size {} is split {} unevenly: reshape of "
                                      "uneven splits is planned; redistribute first",
                                      c.sig.factors[f].size, p));
  }
  std::vector<SymbolicScalar> shape(c.out_local_shape.begin(), c.out_local_shape.end());
  return pto::reshape(c.locals[0], shape, {}, c.loc);
}

constexpr std::array<PartialRule, 4> kResolve = {R, R, R, R};
constexpr std::array<PartialRule, 4> kLinearAll = {PartialRule::LINEAR_ALL, R, R, R};
constexpr std::array<PartialRule, 4> kLinearOne = {PartialRule::LINEAR_ONE, R, R, R};
constexpr std::array<PartialRule, 4> kLinearFirst = {PartialRule::LINEAR_FIRST, R, R, R};
constexpr std::array<PartialRule, 4> kMaxMonotone = {R, PartialRule::MONOTONE, R, R};
/// Pure movement of one input commutes with every elementwise reduction: any partial is kept.
constexpr std::array<PartialRule, 4> kMovement = {PartialRule::LINEAR_ALL, PartialRule::LINEAR_ALL,
                                                  PartialRule::LINEAR_ALL, PartialRule::LINEAR_ALL};
/// A selection from input 0 (index_select, embedding) commutes with sum, max and min: a partial
/// of input 0 is kept when the indices are replicated (not prod: the masked lookup's -0.0).
constexpr std::array<PartialRule, 4> kSelectFirst = {
    PartialRule::LINEAR_FIRST, PartialRule::LINEAR_FIRST, PartialRule::LINEAR_FIRST, R};
constexpr std::array<PartialRule, 4> kFirstSum = {PartialRule::LINEAR_FIRST, R, R, R};
constexpr std::array<PartialRule, 4> kFirstMin = {R, R, PartialRule::LINEAR_FIRST, R};
constexpr std::array<PartialRule, 4> kFirstMax = {R, PartialRule::LINEAR_FIRST, R, R};
constexpr std::array<PartialRule, 4> kMinMonotone = {R, R, PartialRule::MONOTONE, R};
/// f(max x_i) == max f(x_i) and likewise for min, bit for bit, for an f that is non-decreasing
/// in IEEE 754's order with -0 < +0 and maps NaN to NaN (floor, ceil, round, sign, relu6).
constexpr std::array<PartialRule, 4> kMaxMinMonotone = {R, PartialRule::MONOTONE,
                                                        PartialRule::MONOTONE, R};

} // namespace

/// THE table. Index constants below (kMatMul, ...) name its rows.
const Rule kRules[] = {
    {"parallel::matmul", "MatMul", 2, true, kLinearOne, sig_matmul, local_matmul,
     "m, n: none; k: Partial(sum), allreduce of the output when a consumer needs it"},
#define PTO_PAR_BINARY(NAME, MS, PARTIALS)                                                         \
  {"parallel::" #NAME, MS, 2, true, PARTIALS, sig_elementwise, local_binary, "none"},
#define PTO_PAR_UNARY(NAME, MS, PARTIALS)                                                          \
  {"parallel::" #NAME, MS, 1, true, PARTIALS, sig_elementwise, local_unary, "none"},
#include "elementwise_rules.def"
#undef PTO_PAR_BINARY
#undef PTO_PAR_UNARY
    {"parallel::elu", "Elu", 1, true, kResolve, sig_elementwise, local_elu, "none"},
    {"parallel::cast", "Cast", 1, true, kResolve, sig_elementwise, local_cast, "none"},
    {"parallel::ones_like", "OnesLike", 1, true, kResolve, sig_elementwise, local_full_like,
     "none"},
    {"parallel::zeros_like", "ZerosLike", 1, true, kResolve, sig_elementwise, local_full_like,
     "none"},
    {"parallel::bias_add", "BiasAdd", 2, true, kResolve, sig_bias_add, local_bias_add, "none"},
    {"parallel::broadcast_to", "BroadcastTo", 1, true, kMovement, sig_broadcast_to,
     local_broadcast_to, "none (new leading and broadcast dims are replicated)"},
    {"parallel::unsqueeze", "ExpandDims", 1, true, kMovement, sig_unsqueeze, local_unsqueeze,
     "none"},
    {"parallel::squeeze", "Squeeze", 1, true, kMovement, sig_squeeze, local_squeeze, "none"},
    {"parallel::sum", "ReduceSum", 1, true, kResolve, sig_sum, local_sum,
     "reduced axis: Partial(sum), allreduce when needed"},
    {"parallel::amax", "ReduceMax", 1, true, kResolve, sig_amax, local_amax,
     "reduced axis: Partial(max), allreduce(max) when needed (bitwise exact)"},
    {"parallel::amin", "ReduceMin", 1, true, kResolve, sig_amin, local_amin,
     "reduced axis: Partial(min), allreduce(min) when needed (bitwise exact)"},
    {"parallel::mean", "ReduceMean", 1, true, kResolve, sig_mean, local_mean,
     "reduced axis: Partial(sum) of local sums / the global length, allreduce when needed"},
    {"parallel::softmax", "Softmax", 1, true, kResolve, sig_softmax, local_softmax,
     "softmax axis: allreduce(max) and allreduce(sum) of one value per row"},
    {"parallel::log_softmax", "LogSoftmax", 1, true, kResolve, sig_log_softmax, local_log_softmax,
     "softmax axis: allreduce(max) and allreduce(sum) of one value per row"},
    {"parallel::permute", "Transpose", 1, true, kResolve, sig_permute, local_permute, "none"},
    {"parallel::reshape", "Reshape", 1, false, kResolve, sig_reshape, local_reshape,
     "none (merged or split dims must be whole)"},
    {"parallel::approximate_equal", "ApproximateEqual", 2, true, kResolve, sig_elementwise,
     local_approximate_equal, "none"},
    {"parallel::prelu", "PReLU", 2, true, kResolve, sig_prelu, local_prelu,
     "none (a weight [C] is split as x's channels; a weight [1] is replicated)", "", check_prelu},
    {"parallel::l2_normalize", "L2Normalize", 1, true, kResolve, sig_l2_normalize,
     local_l2_normalize, "normalized axis: allreduce(sum) of one squared sum per row",
     "axis split (beyond the seed table, which forbids it): composed as x / sqrt(max(S, "
     "epsilon)), S the allreduced sums of squares; a sum: reassociated"},
    {"parallel::concat", "Concat", 0, true, kMovement, sig_concat, local_concat,
     "other dims: none; concat axis: allgather of each input along it, then a local view",
     "concat axis split (beyond the seed table, which forbids it): the output keeps the split; "
     "bitwise"},
    {"parallel::split", "Split", 1, true, kMovement, sig_split, local_window,
     "other dims: none; split axis: allgather of the input along it (once per piece), then a "
     "local view",
     "one rule call per piece; split axis split (beyond the seed table, which forbids it): each "
     "piece keeps the split; bitwise"},
    {"parallel::slice", "Slice", 1, true, kMovement, sig_slice, local_window,
     "none; a strategy must not split a dim not taken whole; without one, such a dim is "
     "allgathered and the window cut to this PE's chunk",
     "", check_window},
    {"parallel::strided_slice", "StridedSlice", 1, true, kMovement, sig_strided_slice,
     local_strided_slice, "as Slice; a dim with stride != 1 counts as not taken whole",
     "stride != 1: pto::view, then pto::index_select of pto::arange along the dim (composed); "
     "masks are not taken (all zero)",
     check_window},
    {"parallel::argmax_with_value", "ArgMaxWithValue", 1, true, kResolve, sig_arg_with_value,
     local_arg_with_value,
     "reduced axis: per mesh axis, allreduce(max) of one value and allreduce(min) of one index "
     "per row",
     "reduced axis split (the seed table: may differ from one device): global index = local + "
     "chunk offset, lowest index wins ties, NaN wins; bitwise"},
    {"parallel::argmin_with_value", "ArgMinWithValue", 1, true, kResolve, sig_arg_with_value,
     local_arg_with_value,
     "reduced axis: per mesh axis, allreduce(min) of one value and allreduce(min) of one index "
     "per row",
     "as ArgMaxWithValue; bitwise"},
    {"parallel::topk", "TopK", 1, true, kResolve, sig_topk, local_topk,
     "last dim: an allgather of k candidates (value, index) per PE along it",
     "last dim split (beyond the seed table, which forbids it): local top k, allgather of the "
     "candidates, top k of them; every chunk must hold k elements; bitwise"},
    {"parallel::tile", "Tile", 1, true, kMovement, sig_tile, local_tile,
     "none (the input is made whole along a repeated dim; a count divides the multiple)", "",
     check_tile},
    {"parallel::index_select", "GatherV2", 2, true, kSelectFirst, sig_index_select,
     local_index_select,
     "params' other dims and indices: none; params' axis: Partial(sum) of a masked lookup, "
     "allreduce when needed",
     "params split along axis (the seed table forbids repeated computation then, and splitting "
     "params and indices together; both are allowed here): each PE looks up only the rows it "
     "owns and writes -0.0 elsewhere, the output is Partial(sum): one allreduce of the output "
     "(L x D elements per PE) when resolved, bitwise exact since -0.0 is the identity of "
     "addition; split into more parts than rows, params are allgathered along the axis and "
     "the split's chunk 0 looks up (the others -0.0). params of rank 1-4 (the seed: 1-2); the "
     "32-byte alignment of the last dim is Ascend's and not needed"},
    {"parallel::embedding", "EmbeddingLookup", 2, true, kSelectFirst, sig_embedding,
     local_embedding, "ids and D: none; V: Partial(sum) of a masked lookup, allreduce when needed",
     "as GatherV2 on axis 0: each PE looks up the rows of V it owns, -0.0 elsewhere; bitwise "
     "exact; ids of rank 1-3"},
    {"parallel::one_hot", "OneHot", 1, true, kResolve, sig_one_hot, local_one_hot,
     "none (the class dim is split by the strategy's output tuple: each PE compares the indices "
     "with its classes)",
     "MindSpore's strategy form: the output's tuple, then () () for on_value and off_value; "
     "indices of rank 1-3 (the seed: 1-D); class dim split: each PE checks its indices against "
     "the global C (a lookup in arange(C), so an index outside [0, C) throws the one-PE "
     "RuntimeError), then eq(index, class) for its classes; bitwise",
     nullptr},
    {"parallel::unsorted_segment_sum", "UnsortedSegmentSum", 2, true, kFirstSum,
     sig_unsorted_segment, local_unsorted_segment,
     "segment_ids dims: Partial(sum), allreduce when needed; data's other dims: none", "",
     check_unsorted_segment},
    {"parallel::unsorted_segment_min", "UnsortedSegmentMin", 2, true, kFirstMin,
     sig_unsorted_segment, local_unsorted_segment,
     "segment_ids dims: Partial(min), allreduce(min) when needed; data's other dims: none",
     "an empty segment is the dtype's largest value on every PE and the partial is resolved by "
     "min (never summed), so nothing overflows; bitwise",
     check_unsorted_segment},
    {"parallel::unsorted_segment_max", "UnsortedSegmentMax", 2, true, kFirstMax,
     sig_unsorted_segment, local_unsorted_segment,
     "segment_ids dims: Partial(max), allreduce(max) when needed; data's other dims: none",
     "as UnsortedSegmentMin with max and the dtype's lowest value; bitwise",
     check_unsorted_segment},
    {"parallel::stack", "Pack", 0, true, kMovement, sig_stack, local_stack,
     "none (the new dim is replicated)"},
    {"parallel::sigmoid_cross_entropy_with_logits", "SigmoidCrossEntropyWithLogits", 2, true,
     kResolve, sig_elementwise, local_sigmoid_cross_entropy, "none"},
    {"parallel::softmax_cross_entropy_with_logits", "SoftmaxCrossEntropyWithLogits", 2, true,
     kResolve, sig_softmax_cross_entropy, local_softmax_cross_entropy,
     "last dim: allreduce(max) and allreduce(sum) of one value per row; the loss Partial(sum)",
     "the loss (output 0) only, as the seed table; last dim split (the seed forbids it): row max "
     "and sum of exp allreduced, each PE sums labels * (log S - (x - M)) over its classes; sums "
     "reassociated"},
    {"parallel::unique", "Unique", 1, true, kResolve, sig_unique, local_unique,
     "a split input is allgathered whole; values and count are replicated",
     "the seed table's fully repeated strategy only (every count 1)", check_unique},
    {"parallel::dropout_gen_mask", "DropoutGenMask", 1, true, kResolve, sig_elementwise,
     local_dropout_gen_mask,
     "none (every PE generates the whole global mask and keeps its slice, a view: O(global) RNG "
     "work per PE)",
     "the strategy is one tuple, the mask's; each PE's mask is its slice of the GLOBAL mask "
     "(Philox counters are global flat indices), bitwise equal to one PE for every split, uneven "
     "and repeated ones included; must be used with parallel::dropout_do_mask (the seed table's "
     "pairing). Generating only the local slice needs an index offset in pto::uniform (planned)"},
    {"parallel::dropout_do_mask", "DropoutDoMask", 2, false, kResolve, sig_elementwise,
     local_dropout_do_mask, "none (follows its mask's layout)",
     "the seed table's pairing: no strategy (its split is dropout_gen_mask's), the mask a "
     "parallel::dropout_gen_mask DTensor of x's global shape split as x on every dim "
     "(StrategyError naming the dim and the mask's nearest valid strategy otherwise); a pending "
     "partial of x is resolved first; bitwise. parallel::dropout(x, p, key, counter) pairs both "
     "on x's layout"},
};

static_assert(std::size(kRules) == kRuleCount, "kRules and RuleIndex must list the same ops");
static_assert(std::size(kBinary) == kFirstUnary - kFirstBinary);
static_assert(std::size(kUnary) == kElu - kFirstUnary);

} // namespace pto::parallel::detail
