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

#include "parallel_internal.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>

namespace pto::parallel::detail {

namespace {

using Shapes = std::vector<std::vector<int64_t>>;
constexpr auto R = PartialRule::RESOLVE;

int norm_axis(int axis, size_t rank, const char *op, SrcLoc loc) {
  const int r = static_cast<int>(rank);
  if (axis < -r || axis >= r)
    throw ShapeError(loc, op, fmt::format("axis {} is out of range for rank {}", axis, r));
  return axis < 0 ? axis + r : axis;
}

/// `ij,ij->ij` per output dim, numpy broadcasting from the right: a size-1 dim against a larger
/// one is not a factor of that operand.
Signature sig_elementwise(const Shapes &s, const Attrs &, SrcLoc loc) {
  size_t rank = 0;
  for (const auto &x : s)
    rank = std::max(rank, x.size());
  Signature sig;
  sig.in.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    sig.in[i].assign(s[i].size(), -1);
  for (size_t k = 0; k < rank; ++k) { // k-th dim from the right
    int64_t n = 1;
    for (const auto &x : s)
      if (k < x.size() && x[x.size() - 1 - k] != 1) {
        if (n != 1 && x[x.size() - 1 - k] != n)
          throw ShapeError(
              loc, "parallel elementwise",
              fmt::format("shapes {} and {} do not broadcast", dims_str(s[0]), dims_str(s.back())));
        n = x[x.size() - 1 - k];
      }
    const int f = static_cast<int>(sig.factors.size());
    sig.factors.push_back({n, FactorKind::FREE, PartialOp::SUM});
    for (size_t i = 0; i < s.size(); ++i)
      if (k < s[i].size() && (s[i][s[i].size() - 1 - k] == n))
        sig.in[i][s[i].size() - 1 - k] = f;
    sig.out.insert(sig.out.begin(), f);
  }
  return sig;
}

/// `...mk,...kn->...mn` (a_trans: `km`; b_trans: `nk`), the batch dims broadcast numpy-style
/// (a size-1 batch dim against a larger one is no factor of its operand); factor order batch...,
/// m, k, n (MindSpore's device matrix).
Signature sig_matmul(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::matmul";
  for (size_t i = 0; i < 2; ++i)
    if (s[i].size() < 2 || s[i].size() > 4 || s[i].size() != s[0].size())
      throw ShapeError(loc, op,
                       fmt::format("operand {} has rank {} ({}): ranks 2-4, both the same", i,
                                   s[i].size(), dims_str(s[i])));
  const size_t r = s[0].size(), nb = r - 2;
  const auto &A = s[0], &B = s[1];
  const int64_t m = a.mm.a_trans ? A[r - 1] : A[r - 2], ka = a.mm.a_trans ? A[r - 2] : A[r - 1];
  const int64_t kb = a.mm.b_trans ? B[r - 1] : B[r - 2], n = a.mm.b_trans ? B[r - 2] : B[r - 1];
  if (ka != kb)
    throw ShapeError(
        loc, op,
        fmt::format("K differs: a {} has {}, b {} has {}", dims_str(A), ka, dims_str(B), kb));
  Signature sig;
  sig.in.assign(2, std::vector<int>(r, -1));
  for (size_t d = 0; d < nb; ++d) {
    if (A[d] != B[d] && A[d] != 1 && B[d] != 1)
      throw ShapeError(
          loc, op,
          fmt::format("batch dim {} does not broadcast: a {}, b {}", d, dims_str(A), dims_str(B)));
    const int64_t size = std::max(A[d], B[d]);
    const int f = static_cast<int>(sig.factors.size());
    sig.factors.push_back({size});
    if (A[d] == size)
      sig.in[0][d] = f;
    if (B[d] == size)
      sig.in[1][d] = f;
    sig.out.push_back(f);
  }
  const int fm = static_cast<int>(nb), fk = fm + 1, fn = fm + 2;
  sig.factors.push_back({m});
  sig.factors.push_back({ka, FactorKind::REDUCE, PartialOp::SUM});
  sig.factors.push_back({n});
  sig.in[0][nb] = a.mm.a_trans ? fk : fm;
  sig.in[0][nb + 1] = a.mm.a_trans ? fm : fk;
  sig.in[1][nb] = a.mm.b_trans ? fn : fk;
  sig.in[1][nb + 1] = a.mm.b_trans ? fk : fn;
  sig.out.push_back(fm);
  sig.out.push_back(fn);
  return sig;
}

/// One factor per dim; `axis` is REDUCE(op) (gone, or a kept size-1 dim, in the output).
Signature sig_reduce(const Shapes &s, const Attrs &a, PartialOp op, const char *name, SrcLoc loc) {
  const int axis = norm_axis(a.axis, s[0].size(), name, loc);
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < s[0].size(); ++d) {
    const bool red = static_cast<int>(d) == axis;
    sig.factors.push_back({s[0][d], red ? FactorKind::REDUCE : FactorKind::FREE, op});
    sig.in[0].push_back(static_cast<int>(d));
    if (!red)
      sig.out.push_back(static_cast<int>(d));
    else if (a.keepdim)
      sig.out.push_back(-1);
  }
  if (sig.out.empty())
    sig.out.push_back(-1); // ptojit has no rank-0 tensors: [1]
  return sig;
}
Signature sig_sum(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_reduce(s, a, PartialOp::SUM, "parallel::sum", loc);
}
Signature sig_amax(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_reduce(s, a, PartialOp::MAX, "parallel::amax", loc);
}
Signature sig_amin(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_reduce(s, a, PartialOp::MIN, "parallel::amin", loc);
}
Signature sig_mean(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_reduce(s, a, PartialOp::SUM, "parallel::mean", loc);
}

Signature sig_softmax_axis(const Shapes &s, const Attrs &a, const char *name, SrcLoc loc) {
  const int axis = norm_axis(a.axis, s[0].size(), name, loc);
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < s[0].size(); ++d) {
    sig.factors.push_back(
        {s[0][d], static_cast<int>(d) == axis ? FactorKind::SOFTMAX : FactorKind::FREE});
    sig.in[0].push_back(static_cast<int>(d));
    sig.out.push_back(static_cast<int>(d));
  }
  return sig;
}

Signature sig_softmax(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_softmax_axis(s, a, "parallel::softmax", loc);
}
Signature sig_log_softmax(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_softmax_axis(s, a, "parallel::log_softmax", loc);
}

Signature sig_permute(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const size_t r = s[0].size();
  std::vector<bool> seen(r, false);
  if (a.perm.size() != r)
    throw ShapeError(loc, "parallel::permute",
                     fmt::format("perm has {} entries for rank {}", a.perm.size(), r));
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < r; ++d) {
    sig.factors.push_back({s[0][d]});
    sig.in[0].push_back(static_cast<int>(d));
  }
  for (int p : a.perm) {
    const int d = norm_axis(p, r, "parallel::permute", loc);
    if (seen[static_cast<size_t>(d)])
      throw ShapeError(loc, "parallel::permute", fmt::format("perm repeats dim {}", d));
    seen[static_cast<size_t>(d)] = true;
    sig.out.push_back(d);
  }
  return sig;
}

/// Groups of consecutive dims with equal products: a 1:1 group keeps its factor; the dims of
/// any other group are WHOLE in the input and fresh (unsplit) factors in the output. Size-1 dims
/// stand apart (ExpandDims / Squeeze keep every other dim's split): an input one is a factor of
/// its own that the output drops, an output one is a kept size-1 dim (-1).
Signature reshape_signature(const std::vector<int64_t> &in, const std::vector<int64_t> &out,
                            const char *op, SrcLoc loc) {
  auto numel = [&](const std::vector<int64_t> &v) {
    int64_t n = 1;
    for (int64_t x : v)
      n = checked_extent_mul(n, x, "the element count", op, loc);
    return n;
  };
  for (int64_t x : out)
    if (x < 1)
      throw ShapeError(loc, op, fmt::format("shape {} has a dim < 1", dims_str(out)));
  if (numel(in) != numel(out))
    throw ShapeError(loc, op,
                     fmt::format("{} has {} elements, {} has {}", dims_str(in), numel(in),
                                 dims_str(out), numel(out)));
  Signature sig;
  sig.in.emplace_back(in.size(), -1);
  sig.out.assign(out.size(), -1);
  std::vector<size_t> ii, jj; // the dims other than 1
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1) {
      ii.push_back(d);
      continue;
    }
    sig.in[0][d] = static_cast<int>(sig.factors.size());
    sig.factors.push_back({1});
  }
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d] != 1)
      jj.push_back(d);
  size_t i = 0, j = 0;
  while (i < ii.size() || j < jj.size()) {
    const size_t i0 = i, j0 = j;
    int64_t p = i < ii.size() ? in[ii[i++]] : 1, q = j < jj.size() ? out[jj[j++]] : 1;
    while (p != q) {
      if (p < q && i < ii.size())
        p *= in[ii[i++]];
      else if (j < jj.size())
        q *= out[jj[j++]];
      else
        p *= in[ii[i++]];
    }
    const bool kept = i - i0 == 1 && j - j0 == 1;
    for (size_t k = i0; k < i; ++k) {
      sig.in[0][ii[k]] = static_cast<int>(sig.factors.size());
      sig.factors.push_back({in[ii[k]], kept ? FactorKind::FREE : FactorKind::WHOLE});
    }
    if (kept) {
      sig.out[jj[j0]] = sig.in[0][ii[i0]];
      continue;
    }
    for (size_t k = j0; k < j; ++k) {
      sig.out[jj[k]] = static_cast<int>(sig.factors.size());
      sig.factors.push_back({out[jj[k]]});
    }
  }
  return sig;
}
Signature sig_reshape(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return reshape_signature(s[0], a.shape, "parallel::reshape", loc);
}
/// ExpandDims: a size-1 dim inserted at attrs.axis (in [-rank-1, rank]).
Signature sig_unsqueeze(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::unsqueeze";
  std::vector<int64_t> out = s[0];
  const int dim = norm_axis(a.axis, out.size() + 1, op, loc);
  out.insert(out.begin() + dim, 1);
  return reshape_signature(s[0], out, op, loc);
}
/// Squeeze: the size-1 dims among attrs.dims removed (all size-1 dims when empty), as
/// pto::squeeze; a result with no dim left keeps [1].
Signature sig_squeeze(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::squeeze";
  std::vector<bool> drop(s[0].size(), a.dims.empty());
  for (int d : a.dims)
    drop[static_cast<size_t>(norm_axis(d, s[0].size(), op, loc))] = true;
  std::vector<int64_t> out;
  for (size_t d = 0; d < s[0].size(); ++d)
    if (!drop[d] || s[0][d] != 1)
      out.push_back(s[0][d]);
  if (out.empty())
    out.push_back(1);
  return reshape_signature(s[0], out, op, loc);
}

/// BroadcastTo (attrs.shape, right-aligned; -1 keeps the dim): an input dim equal to its target
/// shares the output's factor, a size-1 input dim broadcast to more is no factor of the input,
/// and new leading dims are fresh (unsplit) factors of the output.
Signature sig_broadcast_to(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::broadcast_to";
  const auto &in = s[0];
  if (a.shape.size() < in.size())
    throw ShapeError(
        loc, op, fmt::format("target {} has fewer dims than {}", dims_str(a.shape), dims_str(in)));
  const size_t lead = a.shape.size() - in.size();
  Signature sig;
  sig.in.emplace_back(in.size(), -1);
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const int64_t want = a.shape[d] == -1 && d >= lead ? in[d - lead] : a.shape[d];
    if (want < 1)
      throw ShapeError(loc, op, fmt::format("target {} has a dim < 1", dims_str(a.shape)));
    sig.out.push_back(static_cast<int>(sig.factors.size()));
    sig.factors.push_back({want});
    if (d < lead)
      continue;
    const int64_t have = in[d - lead];
    if (have == want)
      sig.in[0][d - lead] = sig.out.back();
    else if (have != 1)
      throw ShapeError(loc, op,
                       fmt::format("dim {} of {} is {}: it must be 1 or the target's {}", d - lead,
                                   dims_str(in), have, want));
  }
  return sig;
}

/// BiasAdd: every dim of x a factor; bias [C] shares the channel factor (dim 1 for NCHW, the
/// last for NHWC, as pto::bias_add).
Signature sig_bias_add(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::bias_add";
  if (s[0].size() < 2 || s[0].size() > 4 || s[1].size() != 1)
    throw ShapeError(
        loc, op,
        fmt::format("x {} must have rank 2-4 and bias {} rank 1", dims_str(s[0]), dims_str(s[1])));
  const size_t c = a.format == DataFormat::NHWC ? s[0].size() - 1 : 1;
  if (s[1][0] != s[0][c])
    throw ShapeError(loc, op,
                     fmt::format("bias {} must have x's {} channels (x {})", dims_str(s[1]),
                                 s[0][c], dims_str(s[0])));
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < s[0].size(); ++d) {
    sig.factors.push_back({s[0][d]});
    sig.in[0].push_back(static_cast<int>(d));
    sig.out.push_back(static_cast<int>(d));
  }
  sig.in.push_back({static_cast<int>(c)});
  return sig;
}

/// PReLU: every dim of x a factor; weight [C] shares x's channel factor (dim 1), weight [1] is
/// shared by every channel (no factor: it cannot be split).
Signature sig_prelu(const Shapes &s, const Attrs &, SrcLoc loc) {
  const char *op = "parallel::prelu";
  if (s[1].size() != 1 || (s[1][0] != 1 && (s[0].size() < 2 || s[1][0] != s[0][1])))
    throw ShapeError(loc, op,
                     fmt::format("weight {} must be [1] or [C] with C = x's dim 1 (x {})",
                                 dims_str(s[1]), dims_str(s[0])));
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < s[0].size(); ++d) {
    sig.factors.push_back({s[0][d]});
    sig.in[0].push_back(static_cast<int>(d));
    sig.out.push_back(static_cast<int>(d));
  }
  sig.in.push_back({s[1][0] == 1 && (s[0].size() < 2 || s[0][1] != 1) ? -1 : 1});
  return sig;
}

/// L2Normalize: the normalized axis is a combine factor (allreduce of the squared sums).
Signature sig_l2_normalize(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_softmax_axis(s, a, "parallel::l2_normalize", loc);
}

/// ArgMaxWithValue / ArgMinWithValue: one factor per dim; the reduced axis a combine factor
/// (the recipe of local_arg_with_value), gone from the outputs (or a kept size-1 dim).
Signature sig_arg_with_value(const Shapes &s, const Attrs &a, SrcLoc loc) {
  Signature sig = sig_reduce(s, a, PartialOp::MAX, "parallel::argmax_with_value", loc);
  for (auto &f : sig.factors)
    if (f.kind == FactorKind::REDUCE)
      f.kind = FactorKind::SOFTMAX;
  return sig;
}

/// TopK (k = attrs.axis) along the last dim: that dim a combine factor of the input, the
/// output's last dim a fresh (unsplit) factor of size k.
Signature sig_topk(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::topk";
  const int64_t k = a.axis, n = s[0].back();
  if (k < 1 || k > n)
    throw ShapeError(loc, op,
                     fmt::format("k = {} for a last dim of {} (x {})", k, n, dims_str(s[0])));
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < s[0].size(); ++d) {
    const bool last = d + 1 == s[0].size();
    sig.factors.push_back({s[0][d], last ? FactorKind::SOFTMAX : FactorKind::FREE});
    sig.in[0].push_back(static_cast<int>(d));
    if (!last)
      sig.out.push_back(static_cast<int>(d));
  }
  sig.out.push_back(static_cast<int>(sig.factors.size()));
  sig.factors.push_back({k});
  return sig;
}

/// Concat: the other dims FREE factors shared by every input; the concat axis one GATHER factor
/// of the output's length (each input made whole along it, the result cut to this PE's chunk).
Signature sig_concat(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::concat";
  const size_t r = s[0].size();
  const int axis = norm_axis(a.axis, r, op, loc);
  int64_t total = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].size() != r)
      throw ShapeError(loc, op,
                       fmt::format("operand {} {} has another rank than operand 0 {}", i,
                                   dims_str(s[i]), dims_str(s[0])));
    for (size_t d = 0; d < r; ++d)
      if (static_cast<int>(d) != axis && s[i][d] != s[0][d])
        throw ShapeError(loc, op,
                         fmt::format("operand {} {} differs from operand 0 {} in dim {}", i,
                                     dims_str(s[i]), dims_str(s[0]), d));
    total =
        checked_extent_add(total, s[i][static_cast<size_t>(axis)], "the concat length", op, loc);
  }
  Signature sig;
  sig.in.assign(s.size(), std::vector<int>(r, -1));
  for (size_t d = 0; d < r; ++d) {
    const bool cat = static_cast<int>(d) == axis;
    sig.factors.push_back({cat ? total : s[0][d], cat ? FactorKind::GATHER : FactorKind::FREE});
    for (auto &in : sig.in)
      in[d] = static_cast<int>(d);
    sig.out.push_back(static_cast<int>(d));
  }
  return sig;
}

/// Split's piece / Slice's window: attrs.begin and attrs.size per dim (size -1: to the end).
/// A dim taken whole is a FREE factor; another one is GATHER: the input made whole along it, the
/// window cut to this PE's chunk. (Slice's and StridedSlice's "every split dimension must be
/// taken whole" is check_window's, on an explicit strategy.)
Signature sig_window(const Shapes &s, const Attrs &a, const char *op, SrcLoc loc) {
  const size_t r = s[0].size();
  if (a.begin.size() != r || a.size.size() != r)
    throw ShapeError(loc, op,
                     fmt::format("begin has {} and size {} entries for x {} of rank {}",
                                 a.begin.size(), a.size.size(), dims_str(s[0]), r));
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < r; ++d) {
    const int64_t n = s[0][d], b = a.begin[d], e = a.size[d] == -1 ? n - b : a.size[d];
    if (b < 0 || e < 1 || b > n || e > n - b)
      throw ShapeError(
          loc, op,
          fmt::format("dim {}: begin {} and size {} leave x {}", d, b, a.size[d], dims_str(s[0])));
    const bool whole = b == 0 && e == n;
    sig.factors.push_back({e, whole ? FactorKind::FREE : FactorKind::GATHER});
    sig.in[0].push_back(static_cast<int>(d));
    sig.out.push_back(static_cast<int>(d));
  }
  return sig;
}
Signature sig_split(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_window(s, a, "parallel::split", loc);
}
Signature sig_slice(const Shapes &s, const Attrs &a, SrcLoc loc) {
  return sig_window(s, a, "parallel::slice", loc);
}
/// StridedSlice (attrs.begin, attrs.size = end, attrs.strides; all masks zero): as Slice, and a
/// dim with stride != 1 is WHOLE even when it spans the dim (the seed table's rule).
Signature sig_strided_slice(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::strided_slice";
  const size_t r = s[0].size();
  if (a.begin.size() != r || a.size.size() != r || a.strides.size() != r)
    throw ShapeError(loc, op,
                     fmt::format("begin, end and strides have {}, {} and {} entries for x {} of "
                                 "rank {}",
                                 a.begin.size(), a.size.size(), a.strides.size(), dims_str(s[0]),
                                 r));
  Attrs w = a;
  for (size_t d = 0; d < r; ++d) {
    if (a.strides[d] < 1)
      throw ShapeError(loc, op,
                       fmt::format("dim {}: stride {} (strides must be >= 1)", d, a.strides[d]));
    if (a.size[d] > s[0][d] || a.size[d] <= a.begin[d])
      throw ShapeError(loc, op,
                       fmt::format("dim {}: the window [{}, {}) is empty or leaves x {}", d,
                                   a.begin[d], a.size[d], dims_str(s[0])));
    w.size[d] = a.size[d] - a.begin[d];
  }
  Signature sig = sig_window(s, w, op, loc);
  for (size_t d = 0; d < r; ++d)
    if (a.strides[d] != 1) {
      auto &f = sig.factors[d];
      f.kind = FactorKind::GATHER;
      f.size = (w.size[d] + a.strides[d] - 1) / a.strides[d];
    }
  return sig;
}

/// Tile (attrs.size = the multiples, one per dim of x): a dim with multiple 1 is a FREE factor
/// shared by x and the output; a repeated dim is a REPEAT factor of the output (x whole along
/// it; a count c dividing the multiple gives each PE multiple / c copies).
Signature sig_tile(const Shapes &s, const Attrs &a, SrcLoc loc) {
  const char *op = "parallel::tile";
  if (a.size.size() != s[0].size())
    throw ShapeError(loc, op,
                     fmt::format("{} multiples for x {} of rank {}: give one per dim",
                                 a.size.size(), dims_str(s[0]), s[0].size()));
  Signature sig;
  sig.in.emplace_back();
  for (size_t d = 0; d < s[0].size(); ++d) {
    if (a.size[d] < 1)
      throw ShapeError(loc, op, fmt::format("multiple {} of dim {} is < 1", a.size[d], d));
    const int f = static_cast<int>(sig.factors.size());
    if (a.size[d] == 1) {
      sig.factors.push_back({s[0][d]});
      sig.in[0].push_back(f);
    } else {
      sig.factors.push_back({checked_extent_mul(s[0][d], a.size[d], "the tiled length", op, loc),
                             FactorKind::REPEAT});
      sig.in[0].push_back(f); // the input's dim: never split (REPEAT inputs are whole)
    }
    sig.out.push_back(f);
  }
  return sig;
}

// --- the seed table's own constraints on an explicit strategy (Rule::check) ---

/// PReLU: a per-channel weight [C] is split exactly as x's channel dim (dim 1).
void check_prelu(const Rule &rule, const Counts &c, const Shapes &s, const Attrs &,
                 const Signature &sig, SrcLoc loc) {
  if (s[1][0] == 1 || c[0].size() < 2 || c[1][0] == c[0][1])
    return;
  throw StrategyError(loc, rule.op,
                      fmt::format("operand 1 (weight) dim 0 is split {}, but operand 0 (x) dim 1, "
                                  "the channel dim, is split {}: PReLU's weight [{}] must be split "
                                  "as x's channels; {}",
                                  c[1][0], c[0][1], s[1][0], nearest(c, sig, 1, 0, c[0][1])));
}

/// Slice / StridedSlice: every split dim must be taken whole (stride 1, the whole extent).
void check_window(const Rule &rule, const Counts &c, const Shapes &s, const Attrs &a,
                  const Signature &sig, SrcLoc loc) {
  for (size_t d = 0; d < c[0].size(); ++d) {
    if (c[0][d] == 1 || sig.factors[d].kind == FactorKind::FREE)
      continue;
    const bool strided = !a.strides.empty() && a.strides[d] != 1;
    throw StrategyError(
        loc, rule.op,
        fmt::format("operand 0 dim {} is split {}, but the {} takes {} of its {} elements{}: {} "
                    "takes a split dim only whole; {} (or redistribute after the slice)",
                    d, c[0][d], strided ? "strided slice" : "slice", sig.factors[d].size, s[0][d],
                    strided ? fmt::format(" with stride {}", a.strides[d]) : "", rule.mindspore,
                    nearest(c, sig, 0, d, 1)));
  }
}

/// Tile: only the multiples may be split: a count on a dim with multiple 1 (which would split
/// the input) or one that does not divide its multiple is an error.
void check_tile(const Rule &rule, const Counts &c, const Shapes &, const Attrs &a,
                const Signature &sig, SrcLoc loc) {
  for (size_t d = 0; d < c[0].size(); ++d) {
    if (c[0][d] == 1 || (a.size[d] > 1 && a.size[d] % c[0][d] == 0))
      continue;
    throw StrategyError(
        loc, rule.op,
        fmt::format("operand 0 dim {} is split {}, but its multiple is {}: Tile takes a strategy "
                    "only for its multiples (a count must divide the dim's multiple); {}",
                    d, c[0][d], a.size[d], nearest(c, sig, 0, d, 1)));
  }
}

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
  if (!c.active || axes.empty()) {
    r = pto::topk(x, k, last, c.attrs.topk, c.loc);
  } else {
    std::vector<int64_t> shape;
    std::vector<Placement> from(static_cast<size_t>(c.mesh.n_axes()));
    for (size_t d = 0; d < c.sig.in[0].size(); ++d) {
      shape.push_back(c.sig.factors[d].size);
      for (int a : c.factor_axes[d])
        from[static_cast<size_t>(a)] = Placement::split(static_cast<int>(d));
    }
    const Layout in(c.mesh, shape, from, c.loc);
    if (shape.back() / in.parts(last) < k)
      throw StrategyError(c.loc, c.rule.op,
                          fmt::format("operand 0 dim {} of size {} is split {}: a PE's chunk has "
                                      "fewer than k = {} elements (chunks smaller than k are "
                                      "planned); split it at most {} ways",
                                      last, shape.back(), in.parts(last), k, shape.back() / k));
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
};

namespace {
enum RuleIndex : size_t {
  kMatMul,
#define PTO_PAR_BINARY(NAME, MS, PARTIALS) k_##NAME,
#define PTO_PAR_UNARY(NAME, MS, PARTIALS) k_##NAME,
#include "elementwise_rules.def"
#undef PTO_PAR_BINARY
#undef PTO_PAR_UNARY
  kElu,
  kCast,
  kOnesLike,
  kZerosLike,
  kBiasAdd,
  kBroadcastTo,
  kUnsqueeze,
  kSqueeze,
  kSum,
  kAmax,
  kAmin,
  kMean,
  kSoftmax,
  kLogSoftmax,
  kPermute,
  kReshape,
  kApproximateEqual,
  kPrelu,
  kL2Normalize,
  kConcat,
  kSplit,
  kSlice,
  kStridedSlice,
  kArgMaxWithValue,
  kArgMinWithValue,
  kTopk,
  kTile,
  kRuleCount
};
static_assert(std::size(kRules) == kRuleCount, "kRules and RuleIndex must list the same ops");
constexpr size_t kFirstBinary = k_add, kFirstUnary = k_neg;
static_assert(std::size(kBinary) == kFirstUnary - kFirstBinary);
static_assert(std::size(kUnary) == kElu - kFirstUnary);

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
