// rules_api.cpp - The public ops of pto/parallel.h: each a thin call of apply() with its row of
// the rule table (rules.cpp, kRules), and rules(), the table described for docs and tools.
#include "pto/error.h"
#include "pto/index_ops.h"
#include "pto/matmul.h"
#include "pto/nn_ops.h"
#include "pto/ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"
#include "pto/sort_ops.h"

#include "parallel_internal.h"
#include "rule_index.h"
#include "rule_signatures.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>

namespace pto::parallel::detail {

namespace {
DTensor binary(RuleIndex r, const Input &a, const Input &b, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.fn = static_cast<int>(r - kFirstBinary);
  return apply(kRules[r], {a, b}, s, at, loc);
}
DTensor unary(RuleIndex r, const Input &x, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.fn = static_cast<int>(r - kFirstUnary);
  return apply(kRules[r], {x}, s, at, loc);
}
/// An op over one axis: reductions (with keepdim) and the softmax-like ops (keepdim unused).
DTensor along_axis(RuleIndex r, const Input &x, int axis, bool keepdim, const Strategy &s,
                   SrcLoc loc) {
  Attrs at;
  at.axis = axis;
  at.keepdim = keepdim;
  return apply(kRules[r], {x}, s, at, loc);
}
} // namespace

} // namespace pto::parallel::detail

namespace pto::parallel {

using namespace detail;

DTensor matmul(const Input &a, const Input &b, const Strategy &strategy, MatmulOptions opts,
               SrcLoc loc) {
  Attrs at;
  at.mm = opts;
  return apply(kRules[kMatMul], {a, b}, strategy, at, loc);
}

#define PTO_PAR_BINARY(NAME, MS, PARTIALS)                                                         \
  DTensor NAME(const Input &a, const Input &b, const Strategy &s, SrcLoc loc) {                    \
    return binary(k_##NAME, a, b, s, loc);                                                         \
  }
#define PTO_PAR_UNARY(NAME, MS, PARTIALS)                                                          \
  DTensor NAME(const Input &x, const Strategy &s, SrcLoc loc) { return unary(k_##NAME, x, s, loc); }
#include "elementwise_rules.def"
#undef PTO_PAR_BINARY
#undef PTO_PAR_UNARY

std::vector<RuleInfo> rules() {
  auto text = [](PartialRule r) {
    switch (r) {
    case PartialRule::RESOLVE:
      return "resolve";
    case PartialRule::LINEAR_ALL:
      return "kept when every input has it";
    case PartialRule::LINEAR_ONE:
      return "kept when one input has it and the others are replicated";
    case PartialRule::LINEAR_FIRST:
      return "kept when input 0 has it and the others are replicated";
    case PartialRule::MONOTONE:
      return "kept (the others replicated or of the same partial)";
    }
    return "?";
  };
  std::vector<RuleInfo> out;
  for (const Rule &r : kRules) {
    std::string partials, resolved;
    for (size_t i = 0; i < r.partials.size(); ++i) {
      const char *op = name(static_cast<PartialOp>(i));
      if (r.partials[i] == PartialRule::RESOLVE)
        resolved += (resolved.empty() ? "" : ", ") + std::string(op);
      else
        partials += fmt::format("{}{}: {}", partials.empty() ? "" : "; ", op, text(r.partials[i]));
    }
    if (!resolved.empty())
      partials += fmt::format("{}{}: resolve", partials.empty() ? "" : "; ", resolved);
    out.push_back({r.op, r.mindspore, r.arity, r.takes_strategy, r.cost, partials, r.notes});
  }
  return out;
}

DTensor cast(const Input &x, DataType dtype, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.dtype = dtype;
  return apply(kRules[kCast], {x}, s, at, loc);
}
DTensor ones_like(const Input &x, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.alpha = 1.0;
  return apply(kRules[kOnesLike], {x}, s, at, loc);
}
DTensor zeros_like(const Input &x, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.alpha = 0.0;
  return apply(kRules[kZerosLike], {x}, s, at, loc);
}
DTensor bias_add(const Input &x, const Input &bias, DataFormat format, const Strategy &s,
                 SrcLoc loc) {
  Attrs at;
  at.format = format;
  return apply(kRules[kBiasAdd], {x, bias}, s, at, loc);
}
DTensor broadcast_to(const Input &x, const std::vector<int64_t> &shape, const Strategy &s,
                     SrcLoc loc) {
  Attrs at;
  at.shape = shape;
  return apply(kRules[kBroadcastTo], {x}, s, at, loc);
}
DTensor unsqueeze(const Input &x, int dim, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.axis = dim;
  return apply(kRules[kUnsqueeze], {x}, s, at, loc);
}
DTensor squeeze(const Input &x, const std::vector<int> &dims, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.dims = dims;
  return apply(kRules[kSqueeze], {x}, s, at, loc);
}

DTensor elu(const Input &x, double alpha, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.alpha = alpha;
  return apply(kRules[kElu], {x}, s, at, loc);
}

DTensor sum(const Input &x, int axis, bool keepdim, const Strategy &s, SrcLoc loc) {
  return along_axis(kSum, x, axis, keepdim, s, loc);
}
DTensor amax(const Input &x, int axis, bool keepdim, const Strategy &s, SrcLoc loc) {
  return along_axis(kAmax, x, axis, keepdim, s, loc);
}
DTensor softmax(const Input &x, int axis, const Strategy &s, SrcLoc loc) {
  return along_axis(kSoftmax, x, axis, false, s, loc);
}
DTensor log_softmax(const Input &x, int axis, const Strategy &s, SrcLoc loc) {
  return along_axis(kLogSoftmax, x, axis, false, s, loc);
}
DTensor amin(const Input &x, int axis, bool keepdim, const Strategy &s, SrcLoc loc) {
  return along_axis(kAmin, x, axis, keepdim, s, loc);
}
DTensor mean(const Input &x, int axis, bool keepdim, const Strategy &s, SrcLoc loc) {
  return along_axis(kMean, x, axis, keepdim, s, loc);
}
DTensor permute(const Input &x, const std::vector<int> &perm, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.perm = perm;
  return apply(kRules[kPermute], {x}, s, at, loc);
}
DTensor reshape(const Input &x, const std::vector<int64_t> &shape, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.shape = shape;
  return apply(kRules[kReshape], {x}, s, at, loc);
}

DTensor approximate_equal(const Input &a, const Input &b, double tolerance, const Strategy &s,
                          SrcLoc loc) {
  Attrs at;
  at.alpha = tolerance;
  return apply(kRules[kApproximateEqual], {a, b}, s, at, loc);
}
DTensor prelu(const Input &x, const Input &weight, const Strategy &s, SrcLoc loc) {
  return apply(kRules[kPrelu], {x, weight}, s, {}, loc);
}
DTensor l2_normalize(const Input &x, int axis, double epsilon, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.axis = axis;
  at.alpha = epsilon;
  return apply(kRules[kL2Normalize], {x}, s, at, loc);
}
DTensor concat(const std::vector<Input> &xs, int dim, const Strategy &s, SrcLoc loc) {
  if (xs.empty() || xs.size() > 128)
    throw ShapeError(loc, "parallel::concat",
                     fmt::format("{} inputs: concat takes 1-128", xs.size()));
  Attrs at;
  at.axis = dim;
  return apply(kRules[kConcat], xs, s, at, loc);
}
std::vector<DTensor> split(const Input &x, const std::vector<int64_t> &sizes, int dim,
                           const Strategy &s, SrcLoc loc) {
  const char *op = "parallel::split";
  const std::vector<int64_t> shape =
      x.get() ? x.get()->layout().global_shape() : static_shape(x.tensor, op, 0, loc);
  const int d = norm_axis(dim, shape.size(), op, loc);
  int64_t total = 0;
  for (int64_t n : sizes) {
    if (n < 1)
      throw ShapeError(loc, op, fmt::format("sizes {} has a piece < 1", dims_str(sizes)));
    total = checked_extent_add(total, n, "the sum of the sizes", op, loc);
  }
  if (total != shape[static_cast<size_t>(d)])
    throw ShapeError(loc, op,
                     fmt::format("sizes {} sum to {}, but dim {} of {} is {}", dims_str(sizes),
                                 total, d, dims_str(shape), shape[static_cast<size_t>(d)]));
  std::vector<DTensor> out;
  int64_t begin = 0;
  for (int64_t n : sizes) {
    Attrs at;
    at.begin.assign(shape.size(), 0);
    at.size = shape;
    at.begin[static_cast<size_t>(d)] = begin;
    at.size[static_cast<size_t>(d)] = n;
    out.push_back(apply(kRules[kSplit], {x}, s, at, loc));
    begin += n;
  }
  return out;
}
DTensor slice(const Input &x, const std::vector<int64_t> &begin, const std::vector<int64_t> &size,
              const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.begin = begin;
  at.size = size;
  return apply(kRules[kSlice], {x}, s, at, loc);
}
DTensor strided_slice(const Input &x, const std::vector<int64_t> &begin,
                      const std::vector<int64_t> &end, const std::vector<int64_t> &strides,
                      const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.begin = begin;
  at.size = end;
  at.strides = strides;
  return apply(kRules[kStridedSlice], {x}, s, at, loc);
}
IndexValue argmax_with_value(const Input &x, int axis, bool keepdim, const Strategy &s,
                             SrcLoc loc) {
  Attrs at;
  at.axis = axis;
  at.keepdim = keepdim;
  at.fn = 0;
  auto r = apply_n(kRules[kArgMaxWithValue], {x}, s, at, loc);
  return {r[0], r[1]};
}
IndexValue argmin_with_value(const Input &x, int axis, bool keepdim, const Strategy &s,
                             SrcLoc loc) {
  Attrs at;
  at.axis = axis;
  at.keepdim = keepdim;
  at.fn = 1;
  auto r = apply_n(kRules[kArgMinWithValue], {x}, s, at, loc);
  return {r[0], r[1]};
}
TopK topk(const Input &x, int64_t k, bool largest, bool sorted, const Strategy &s, SrcLoc loc) {
  if (k < 1 || k > INT32_MAX)
    throw ShapeError(loc, "parallel::topk", fmt::format("k = {} must be in [1, 2^31)", k));
  Attrs at;
  at.axis = static_cast<int>(k);
  at.topk.largest = largest;
  at.topk.sorted = sorted;
  auto r = apply_n(kRules[kTopk], {x}, s, at, loc);
  return {r[0], r[1]};
}
DTensor tile(const Input &x, const std::vector<int64_t> &multiples, const Strategy &s, SrcLoc loc) {
  Attrs at;
  at.size = multiples;
  return apply(kRules[kTile], {x}, s, at, loc);
}

} // namespace pto::parallel

namespace pto::parallel {

DTensor index_select(const Input &params, int axis, const Input &indices, const Strategy &s,
                     SrcLoc loc) {
  Attrs at;
  at.axis = axis;
  return apply(kRules[kIndexSelect], {params, indices}, s, at, loc);
}
DTensor embedding(const Input &weight, const Input &ids, const Strategy &s, SrcLoc loc) {
  return apply(kRules[kEmbedding], {weight, ids}, s, {}, loc);
}

DTensor one_hot(const Input &index, int64_t num_classes, const Strategy &s, SrcLoc loc) {
  const char *op = "parallel::one_hot";
  if (num_classes < 1 || num_classes > INT32_MAX)
    throw ArgumentError(loc, op, fmt::format("num_classes = {} must be in [1, 2^31)", num_classes));
  const size_t rank = index.get() ? index.get()->layout().global_shape().size()
                                  : static_cast<size_t>(index.tensor.dim(loc));
  Strategy in;
  if (!s.empty()) {
    auto spec_str = [](const Spec &spec) {
      std::string t = "(";
      for (size_t d = 0; d < spec.size(); ++d)
        t += fmt::format("{}{}", d ? ", " : "",
                         spec[d].axis.empty() ? std::to_string(spec[d].parts)
                                              : "'" + spec[d].axis + "'");
      return t + (spec.size() == 1 ? ",)" : ")");
    };
    Spec out = s[0];
    out.resize(rank + 1);
    const std::string hint = fmt::format("nearest valid strategy: ({}, (), ())", spec_str(out));
    if (s.size() != 1 && s.size() != 3)
      throw StrategyError(loc, op,
                          fmt::format("the strategy has {} tuples: OneHot takes the output's "
                                      "tuple, then () and () for on_value and off_value; {}",
                                      s.size(), hint));
    for (size_t i = 1; i < s.size(); ++i)
      if (!s[i].empty())
        throw StrategyError(loc, op,
                            fmt::format("tuple {} ({}) has {} entries, but {} is a scalar: its "
                                        "tuple must be (); {}",
                                        i, i == 1 ? "on_value" : "off_value", s[i].size(),
                                        i == 1 ? "on_value" : "off_value", hint));
    if (s[0].size() != rank + 1)
      throw StrategyError(loc, op,
                          fmt::format("the output's tuple has {} entries, but the output (the "
                                      "indices' {} dims, then the {} classes) has rank {}; {}",
                                      s[0].size(), rank, num_classes, rank + 1, hint));
    in = {Spec(s[0].begin(), s[0].end() - 1), Spec{s[0].back()}};
  }
  Attrs at;
  at.size = {num_classes};
  return apply(kRules[kOneHot], {index, pto::arange(int64_t{0}, num_classes, 1, loc)}, in, at, loc);
}

namespace {
DTensor segment(RuleIndex r, int fn, const Input &data, const Input &ids, int64_t n,
                const Strategy &s, SrcLoc loc) {
  if (n < 1)
    throw ArgumentError(loc, kRules[r].op, fmt::format("num_segments = {} must be >= 1", n));
  Attrs at;
  at.fn = fn;
  at.size = {n};
  return apply(kRules[r], {data, ids}, s, at, loc);
}
} // namespace

DTensor unsorted_segment_sum(const Input &data, const Input &segment_ids, int64_t num_segments,
                             const Strategy &s, SrcLoc loc) {
  return segment(kUnsortedSegmentSum, 0, data, segment_ids, num_segments, s, loc);
}
DTensor unsorted_segment_min(const Input &data, const Input &segment_ids, int64_t num_segments,
                             const Strategy &s, SrcLoc loc) {
  return segment(kUnsortedSegmentMin, 1, data, segment_ids, num_segments, s, loc);
}
DTensor unsorted_segment_max(const Input &data, const Input &segment_ids, int64_t num_segments,
                             const Strategy &s, SrcLoc loc) {
  return segment(kUnsortedSegmentMax, 2, data, segment_ids, num_segments, s, loc);
}

DTensor stack(const std::vector<Input> &xs, int dim, const Strategy &s, SrcLoc loc) {
  if (xs.empty() || xs.size() > 128)
    throw ShapeError(loc, "parallel::stack",
                     fmt::format("{} inputs: stack takes 1-128", xs.size()));
  Attrs at;
  at.axis = dim;
  return apply(kRules[kStack], xs, s, at, loc);
}

DTensor sigmoid_cross_entropy_with_logits(const Input &logits, const Input &labels,
                                          const Strategy &s, SrcLoc loc) {
  return apply(kRules[kSigmoidCrossEntropy], {logits, labels}, s, {}, loc);
}
DTensor softmax_cross_entropy_with_logits(const Input &logits, const Input &labels,
                                          const Strategy &s, SrcLoc loc) {
  return apply(kRules[kSoftmaxCrossEntropy], {logits, labels}, s, {}, loc);
}

Unique unique(const Input &x, const Strategy &s, SrcLoc loc) {
  auto r = apply_n(kRules[kUnique], {x}, s, {}, loc);
  return {r[0], DTensor(r[1].local(), replicated(r[1].mesh(), {1}, loc))};
}

} // namespace pto::parallel
