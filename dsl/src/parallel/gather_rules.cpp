// gather_rules.cpp - The indexing, segment, stacking, loss and Unique rules of kRules (rules.cpp):
// their factor signatures, their local functions (the masked lookup of a split params axis, the
// split class dim of OneHot, the split softmax axis of SoftmaxCrossEntropyWithLogits) and the
// seed table's checks on an explicit strategy.
#include "gather_rules.h"

#include "pto/error.h"
#include "pto/index_ops.h"
#include "pto/nn_ops.h"
#include "pto/ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"
#include "pto/sort_ops.h"

#include <fmt/format.h>

namespace pto::parallel::detail {

namespace {

/// The layout input `i` has in the call: its dims' factors, split on their mesh axes.
Layout input_layout(const Call &c, size_t i) {
  std::vector<int64_t> shape;
  std::vector<Placement> pl(static_cast<size_t>(c.mesh.n_axes()));
  for (size_t d = 0; d < c.sig.in[i].size(); ++d) {
    const int f = c.sig.in[i][d];
    shape.push_back(f < 0 ? 1 : c.sig.factors[static_cast<size_t>(f)].size);
    if (f >= 0)
      for (int a : c.factor_axes[static_cast<size_t>(f)])
        pl[static_cast<size_t>(a)] = Placement::split(static_cast<int>(d));
  }
  return {c.mesh, shape, pl, c.loc};
}

/// `index` looked up in `rows` ([n], rows[k] = k): the index itself, after the lookup op's range
/// check against the global [0, n) (index_select's, or embedding's for ids of rank 1-3), so an
/// index outside it throws the one-PE RuntimeError with its global value and range.
Tensor checked_index(const Tensor &rows, int64_t n, const Tensor &index, bool embedding,
                     SrcLoc loc) {
  if (!embedding)
    return pto::index_select(rows, 0, index, loc);
  Tensor table = pto::reshape(rows, {n, 1}, {}, loc);
  return pto::squeeze(pto::embedding(table, index, {}, loc), {-1}, loc);
}

/// The masked lookup's index: `index` (global row numbers of dim `dim` of input `operand`) made
/// local to this PE's chunk [lo, hi), and in `mask` whether this PE owns the row. Rows outside
/// every chunk stay unmasked on the first PE (below 0) and the last one (>= the dim), so the
/// lookup there throws the one-PE RuntimeError of an index out of range. Before that, every
/// index is looked up in the global [0, n) (index_select's or, for `embedding`, embedding's
/// check), so an index outside the dim is reported with its global value and range, as on one
/// PE, not with this PE's local ones.
Tensor owned_index(const Call &c, size_t operand, int dim, const Tensor &index, Tensor &mask,
                   bool embedding = false) {
  const Layout l = input_layout(c, operand);
  const int64_t n = l.global_shape()[static_cast<size_t>(dim)];
  const SymChunk ch = my_chunk(l, dim, c.loc);
  Tensor ar = pto::cast(pto::arange(int64_t{0}, n + 1, 1, c.loc), DT_INT64, c.loc);
  Tensor lo = pto::view(ar, {1}, {ch.offset}, {}, c.loc);
  Tensor hi = pto::view(ar, {1}, {ch.offset + ch.size}, {}, c.loc);
  // int64 rows: an index beyond 2^31 never wraps.
  Tensor i = checked_index(pto::view(ar, {n}, {0}, {}, c.loc), n, index, embedding, c.loc);
  Tensor lo_ok = pto::logical_or(pto::ge(i, lo, c.loc), pto::eq(lo, int64_t{0}, c.loc), c.loc);
  Tensor hi_ok = pto::logical_or(pto::lt(i, hi, c.loc), pto::eq(hi, n, c.loc), c.loc);
  mask = pto::logical_and(lo_ok, hi_ok, c.loc);
  return pto::where(mask, pto::sub(i, lo, c.loc), int64_t{0}, c.loc);
}

/// Whether dim `dim` of input `operand` is split into more parts than it has rows (some PEs own
/// none).
bool too_few_rows(const Call &c, size_t operand, int dim) {
  const int f = c.sig.in[operand][static_cast<size_t>(dim)];
  int64_t parts = 1;
  for (int a : c.factor_axes[static_cast<size_t>(f)])
    parts *= c.mesh.size(a);
  return c.sig.factors[static_cast<size_t>(f)].size < parts;
}

/// The lookup when some PEs own no row: `x` allgathered along `dim` (its split axes), the whole
/// lookup `fn` on every PE, kept on the split's chunk 0 (offset 0) and -0.0 (0) elsewhere: the
/// same Partial(sum), bitwise.
template <class Fn> Tensor gathered_lookup(const Call &c, int dim, const Fn &fn) {
  const Layout from = input_layout(c, 0);
  std::vector<Placement> to = from.placements();
  for (int a : from.split_axes(dim))
    to[static_cast<size_t>(a)] = Placement::replicate();
  Tensor whole = redistribute_local(c.locals[0], from,
                                    Layout(c.mesh, from.global_shape(), to, c.loc), true, c.loc);
  Tensor r = fn(whole);
  const int64_t n = from.global_shape()[static_cast<size_t>(dim)];
  Tensor lo = pto::view(pto::arange(int64_t{0}, n + 1, 1, c.loc), {1},
                        {my_chunk(from, dim, c.loc).offset}, {}, c.loc);
  Tensor first = pto::eq(lo, int64_t{0}, c.loc);
  for (int d = 1; d < r.dim(c.loc); ++d)
    first = pto::unsqueeze(first, 0, c.loc);
  return is_float(r.dtype(c.loc)) ? pto::where(first, r, -0.0, c.loc)
                                  : pto::where(first, r, int64_t{0}, c.loc);
}

/// r where this PE owns the row, else -0.0 (the identity of IEEE addition: the allreduce(sum) of
/// the Partial gives the owner's value bit for bit, -0.0, NaN and infinities included) or 0.
Tensor masked(const Tensor &r, const Tensor &mask, SrcLoc loc) {
  if (is_float(r.dtype(loc)))
    return pto::where(mask, r, -0.0, loc);
  return pto::where(mask, r, int64_t{0}, loc);
}

/// Appends an input whose every dim is a new FREE factor.
void free_dims(const std::vector<int64_t> &shape, Signature &sig) {
  sig.in.emplace_back();
  for (int64_t n : shape) {
    sig.in.back().push_back(static_cast<int>(sig.factors.size()));
    sig.factors.push_back({n});
  }
}

} // namespace

Signature sig_index_select(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::index_select";
  if (s[1].size() != 1)
    throw ShapeError(
        loc, op,
        fmt::format("indices {} must be 1-D (scalar indices are not taken: [1])", dims_str(s[1])));
  const int axis = norm_axis(a.axis, s[0].size(), op, loc);
  Signature sig;
  free_dims(s[0], sig);
  sig.factors[static_cast<size_t>(axis)].kind = FactorKind::REDUCE;
  free_dims(s[1], sig);
  sig.out = sig.in[0];
  sig.out[static_cast<size_t>(axis)] = sig.in[1][0];
  return sig;
}

Tensor local_index_select(const Call &c) {
  const Tensor &x = c.locals[0];
  const int axis = c.attrs.axis < 0 ? c.attrs.axis + x.dim(c.loc) : c.attrs.axis;
  const auto &axes = c.factor_axes[static_cast<size_t>(c.sig.in[0][static_cast<size_t>(axis)])];
  if (!c.active || axes.empty())
    return pto::index_select(x, axis, c.locals[1], c.loc);
  if (too_few_rows(c, 0, axis))
    return gathered_lookup(
        c, axis, [&](const Tensor &w) { return pto::index_select(w, axis, c.locals[1], c.loc); });
  Tensor mask;
  Tensor r = pto::index_select(x, axis, owned_index(c, 0, axis, c.locals[1], mask), c.loc);
  for (int d = 0; d < axis; ++d)
    mask = pto::unsqueeze(mask, 0, c.loc);
  for (int d = axis + 1; d < r.dim(c.loc); ++d)
    mask = pto::unsqueeze(mask, -1, c.loc);
  return masked(r, mask, c.loc);
}

Signature sig_embedding(const Shapes &s, const Attrs &, SrcLoc loc) {
  const char *op = "parallel::embedding";
  if (s[0].size() != 2 || s[1].empty() || s[1].size() > 3)
    throw ShapeError(loc, op,
                     fmt::format("weight {} must be 2-D [V, D] and ids {} of rank 1-3",
                                 dims_str(s[0]), dims_str(s[1])));
  Signature sig;
  free_dims(s[0], sig);
  sig.factors[0].kind = FactorKind::REDUCE;
  free_dims(s[1], sig);
  sig.out = sig.in[1];
  sig.out.push_back(sig.in[0][1]);
  return sig;
}

Tensor local_embedding(const Call &c) {
  const auto &axes = c.factor_axes[static_cast<size_t>(c.sig.in[0][0])];
  if (!c.active || axes.empty())
    return pto::embedding(c.locals[0], c.locals[1], {}, c.loc);
  if (too_few_rows(c, 0, 0))
    return gathered_lookup(
        c, 0, [&](const Tensor &w) { return pto::embedding(w, c.locals[1], {}, c.loc); });
  Tensor mask;
  Tensor r = pto::embedding(c.locals[0], owned_index(c, 0, 0, c.locals[1], mask, true), {}, c.loc);
  return masked(r, pto::unsqueeze(mask, -1, c.loc), c.loc);
}

Signature sig_one_hot(const Shapes &s, const Attrs &, SrcLoc loc) {
  if (s[0].empty() || s[0].size() > 3)
    throw ShapeError(loc, "parallel::one_hot",
                     fmt::format("indices {} must have rank 1-3", dims_str(s[0])));
  Signature sig;
  free_dims(s[0], sig);
  free_dims(s[1], sig);
  sig.out = sig.in[0];
  sig.out.push_back(sig.in[1][0]);
  return sig;
}

/// With the class dim split: out[.., c] = (index[..] == c) for this PE's classes c (the [C]
/// class tensor's slice), cast to DT_INT64: exact, no communication. The indices are first
/// checked against the GLOBAL classes [0, C) (checked_index, O(indices) work), so an index
/// outside it throws a RuntimeError on the PE that holds it, as on one PE.
Tensor local_one_hot(const Call &c) {
  const int64_t classes = c.sig.factors[static_cast<size_t>(c.sig.in[1][0])].size;
  const auto &axes = c.factor_axes[static_cast<size_t>(c.sig.in[1][0])];
  if (!c.active || axes.empty())
    return pto::one_hot(c.locals[0], classes, c.loc);
  const Tensor &idx = c.locals[0];
  Tensor i = checked_index(pto::arange(int64_t{0}, classes, 1, c.loc), classes, idx, true, c.loc);
  return pto::cast(pto::eq(pto::unsqueeze(i, -1, c.loc), c.locals[1], c.loc), DT_INT64, c.loc);
}

Signature sig_unsorted_segment(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::unsorted_segment";
  const auto &data = s[0], &ids = s[1];
  bool prefix = !ids.empty() && ids.size() <= data.size();
  for (size_t d = 0; prefix && d < ids.size(); ++d)
    prefix = ids[d] == data[d];
  if (!prefix)
    throw ShapeError(loc, op,
                     fmt::format("segment_ids {} must be a prefix of data's shape {}",
                                 dims_str(ids), dims_str(data)));
  static constexpr PartialOp kOp[] = {PartialOp::SUM, PartialOp::MIN, PartialOp::MAX};
  Signature sig;
  free_dims(data, sig);
  sig.in.emplace_back();
  for (size_t d = 0; d < ids.size(); ++d) {
    sig.factors[d].kind = FactorKind::REDUCE;
    sig.factors[d].reduce = kOp[static_cast<size_t>(a.fn)];
    sig.in[1].push_back(static_cast<int>(d));
  }
  sig.out.push_back(static_cast<int>(sig.factors.size()));
  sig.factors.push_back({a.size[0]});
  for (size_t d = ids.size(); d < data.size(); ++d)
    sig.out.push_back(static_cast<int>(d));
  return sig;
}

/// Each PE's segments of its rows: a Partial(sum | min | max) over the split segment_ids dims.
/// Empty segments are 0, the dtype's largest or its lowest value on each PE, so the allreduce
/// (sum, min or max: never a sum of the fill values) gives the one-PE result.
Tensor local_unsorted_segment(const Call &c) {
  const int64_t n = c.attrs.size[0];
  switch (c.attrs.fn) {
  case 0:
    return pto::unsorted_segment_sum(c.locals[0], c.locals[1], n, c.loc);
  case 1:
    return pto::unsorted_segment_min(c.locals[0], c.locals[1], n, c.loc);
  default:
    return pto::unsorted_segment_max(c.locals[0], c.locals[1], n, c.loc);
  }
}

/// UnsortedSegment*: input_x and segment_ids split the same way along the segment_ids dims.
void check_unsorted_segment(const Rule &rule, const Counts &c, const Shapes &, const Attrs &,
                            const Signature &sig, SrcLoc loc) {
  for (size_t d = 0; d < c[1].size(); ++d) {
    if (c[0][d] == c[1][d])
      continue;
    throw StrategyError(loc, rule.op,
                        fmt::format("operand 1 (segment_ids) dim {} is split {}, but operand 0 "
                                    "(input_x) dim {} is split {}: {} needs input_x and "
                                    "segment_ids split the same way along the segment_ids dims; "
                                    "{}",
                                    d, c[1][d], d, c[0][d], rule.mindspore,
                                    nearest(c, sig, 1, d, c[0][d])));
  }
}

Signature sig_stack(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::stack";
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] != s[0])
      throw ShapeError(loc, op,
                       fmt::format("operand {} {} differs from operand 0 {}: stack takes one "
                                   "shape",
                                   i, dims_str(s[i]), dims_str(s[0])));
  const int dim = norm_axis(a.axis, s[0].size() + 1, op, loc);
  Signature sig;
  free_dims(s[0], sig);
  for (size_t i = 1; i < s.size(); ++i)
    sig.in.push_back(sig.in[0]);
  sig.out = sig.in[0];
  sig.out.insert(sig.out.begin() + dim, static_cast<int>(sig.factors.size()));
  sig.factors.push_back({static_cast<int64_t>(s.size())});
  return sig;
}

Tensor local_stack(const Call &c) { return pto::stack(c.locals, c.attrs.axis, c.loc); }

Tensor local_sigmoid_cross_entropy(const Call &c) {
  return pto::sigmoid_cross_entropy_with_logits(c.locals[0], c.locals[1], c.loc);
}

Signature sig_softmax_cross_entropy(const Shapes &s, const Attrs &, SrcLoc loc) {
  const char *op = "parallel::softmax_cross_entropy_with_logits";
  if (s[0] != s[1])
    throw ShapeError(
        loc, op,
        fmt::format("logits {} and labels {} must have one shape", dims_str(s[0]), dims_str(s[1])));
  Attrs last;
  last.axis = -1;
  Signature sig = sig_reduce(s, last, PartialOp::SUM, op, loc);
  sig.in.push_back(sig.in[0]);
  return sig;
}

/// With the last dim split: M = allreduce(max) of the row maxima, S = allreduce(sum) of the
/// local sums of exp(x - M), and each PE's sum of labels * (log S - (x - M)) over its classes: a
/// Partial(sum) loss (the sums reassociated; Megatron's vocab-parallel cross-entropy).
Tensor local_softmax_cross_entropy(const Call &c) {
  const Tensor &x = c.locals[0], &labels = c.locals[1];
  const int last = x.dim(c.loc) - 1;
  const auto &axes = c.factor_axes[static_cast<size_t>(c.sig.in[0][static_cast<size_t>(last)])];
  if (!c.active || axes.empty())
    return pto::softmax_cross_entropy_with_logits(x, labels, c.loc).loss;
  Tensor m = pto::amax(x, last, {.keepdim = true}, c.loc);
  for (int a : axes)
    m = allreduce_axis(m, c.mesh, a, PartialOp::MAX, c.loc);
  Tensor shifted = pto::sub(x, m, c.loc);
  Tensor s = pto::sum(pto::exp(shifted, c.loc), last, {.keepdim = true}, c.loc);
  for (int a : axes)
    s = allreduce_axis(s, c.mesh, a, PartialOp::SUM, c.loc);
  Tensor terms = pto::mul(labels, pto::sub(pto::log(s, c.loc), shifted, c.loc), c.loc);
  return pto::sum(terms, last, {.keepdim = false}, c.loc);
}

Signature sig_unique(const Shapes &s, const Attrs &, SrcLoc) {
  Signature sig;
  free_dims(s[0], sig);
  int64_t n = 1;
  for (auto &f : sig.factors) {
    f.kind = FactorKind::GATHER;
    n *= f.size;
  }
  sig.out.push_back(static_cast<int>(sig.factors.size()));
  sig.factors.push_back({n});
  return sig;
}

Tensor local_unique(const Call &c) {
  UniqueResult r = pto::unique(c.locals[0], {}, c.loc);
  c.extra->push_back(r.count);
  return r.values;
}

/// Unique: the seed table's "only the fully repeated strategy (1,)": every count 1.
void check_unique(const Rule &rule, const Counts &c, const Shapes &, const Attrs &,
                  const Signature &, SrcLoc loc) {
  for (size_t d = 0; d < c[0].size(); ++d) {
    if (c[0][d] == 1)
      continue;
    throw StrategyError(loc, rule.op,
                        fmt::format("operand 0 dim {} is split {}: {} takes only the fully "
                                    "repeated strategy (every count 1; a split input is gathered "
                                    "whole without one); nearest valid strategy: {}",
                                    d, c[0][d], rule.mindspore,
                                    strategy_str({std::vector<int64_t>(c[0].size(), 1)})));
  }
}

} // namespace pto::parallel::detail
