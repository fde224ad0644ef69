// rule_signatures.cpp - Each op's factor signature (which factors its dims carry, what a split
// of each costs) and the seed table's per-op constraints as StrategyErrors, for kRules (rules.cpp).
#include "rule_signatures.h"

#include "pto/error.h"
#include "pto/index_ops.h"
#include "pto/matmul.h"
#include "pto/nn_ops.h"
#include "pto/ops.h"
#include "pto/reduce_ops.h"
#include "pto/shape_ops.h"
#include "pto/size_math.h"
#include "pto/sort_ops.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>

namespace pto::parallel::detail {

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
  sig.factors.push_back({m, FactorKind::FREE, PartialOp::SUM, "m"});
  sig.factors.push_back({ka, FactorKind::REDUCE, PartialOp::SUM, "k"});
  sig.factors.push_back({n, FactorKind::FREE, PartialOp::SUM, "n"});
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

} // namespace pto::parallel::detail
