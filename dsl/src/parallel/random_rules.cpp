// random_rules.cpp - DropoutGenMask and DropoutDoMask (the seed table's pair): the rules' local
// functions, the pairing check and the public ops parallel::dropout_gen_mask, dropout_do_mask
// and dropout. The mask of every PE is its slice of the GLOBAL mask (pto::dropout_gen_mask
// numbers Philox counters by the global flat index), so a sharded dropout equals one PE's
// bitwise, for any split.
#include "random_rules.h"

#include "pto/error.h"
#include "pto/nn_ops.h"
#include "pto/size_math.h"

#include "rule_index.h"

#include <fmt/format.h>

namespace pto::parallel {

namespace detail {

Tensor local_dropout_gen_mask(const Call &c) { return c.locals[0]; }

Tensor local_dropout_do_mask(const Call &c) {
  return pto::dropout_do_mask(c.locals[0], c.locals[1], c.attrs.alpha, c.loc);
}

namespace {

/// The part count of each dim of `l` (1 for a dim no mesh axis splits).
std::vector<int64_t> counts_of(const Layout &l) {
  std::vector<int64_t> c;
  for (int d = 0; d < l.rank(); ++d)
    c.push_back(l.parts(d));
  return c;
}

/// "the whole tensor" or "split 2 (axis 'dp')" for dim d of l.
std::string split_str(const Layout &l, int d) {
  const auto axes = l.split_axes(d);
  if (axes.empty())
    return "not split";
  std::string names;
  for (int a : axes)
    names += (names.empty() ? "'" : ", '") + l.mesh().axis_name(a) + "'";
  return fmt::format("split {} (axis {})", l.parts(d), names);
}

/// The seed table's pairing of DropoutDoMask with DropoutGenMask: no strategy on DoMask, the
/// mask a DTensor (parallel::dropout_gen_mask's) of x's global shape, split as x on every dim.
void check_pairing(const Input &x, const Input &mask, const Strategy &s, SrcLoc loc) {
  const char *op = kRules[kDropoutDoMask].op;
  const DTensor *m = mask.get();
  if (!m)
    throw StrategyError(loc, op,
                        "operand 1 (mask) is a whole pto::Tensor, but DropoutDoMask must be used "
                        "with DropoutGenMask: make the mask with parallel::dropout_gen_mask(mesh, "
                        "x's global shape, p, key, counter, strategy)");
  const Layout &ml = m->layout();
  const std::vector<int64_t> xs =
      x.get() ? x.get()->layout().global_shape() : static_shape(x.tensor, op, 0, loc);
  if (!s.empty()) {
    std::vector<int64_t> c = counts_of(ml);
    throw StrategyError(loc, op,
                        fmt::format("DropoutDoMask takes no strategy (the seed table: none may be "
                                    "configured; {} tuples given): it follows its mask, so give "
                                    "the split to parallel::dropout_gen_mask; nearest valid "
                                    "strategy: none here, and {} on dropout_gen_mask",
                                    s.size(), strategy_str({c})));
  }
  if (ml.global_shape() != xs) {
    const size_t r = std::min(xs.size(), ml.global_shape().size());
    size_t d = 0;
    while (d < r && xs[d] == ml.global_shape()[d])
      ++d;
    throw StrategyError(loc, op,
                        fmt::format("operand 1 (mask) has the global shape {} but operand 0 (x) "
                                    "{} (they differ at dim {}): DropoutDoMask must be used with "
                                    "the DropoutGenMask of x's shape; nearest valid: "
                                    "parallel::dropout_gen_mask(mesh, {}, ...)",
                                    dims_str(ml.global_shape()), dims_str(xs), d, dims_str(xs)));
  }
  if (ml.has_partial())
    throw StrategyError(loc, op,
                        fmt::format("operand 1 (mask) {} carries a pending partial: a "
                                    "DropoutGenMask mask is split or replicated, never partial",
                                    ml.to_string()));
  const DTensor *xd = x.get();
  if (!xd)
    return; // a whole x is sliced as its mask
  const Layout &xl = xd->layout();
  for (int d = 0; d < xl.rank(); ++d) {
    if (xl.split_axes(d) == ml.split_axes(d))
      continue;
    std::vector<int64_t> c = counts_of(xl);
    throw StrategyError(loc, op,
                        fmt::format("operand 1 (mask) dim {} is {}, but operand 0 (x) dim {} is "
                                    "{}: DropoutDoMask must be used with the DropoutGenMask of "
                                    "x's layout (both split alike on every dim); nearest valid "
                                    "strategy: {} on dropout_gen_mask (or redistribute x to "
                                    "the mask's layout)",
                                    d, split_str(ml, d), d, split_str(xl, d), strategy_str({c})));
  }
}

} // namespace

} // namespace detail

using detail::kDropoutDoMask;
using detail::kDropoutGenMask;
using detail::kRules;

DTensor dropout_gen_mask(const Mesh &mesh, const std::vector<int64_t> &shape, double p,
                         uint64_t key, uint64_t counter, const Strategy &strategy, SrcLoc loc) {
  std::vector<SymbolicScalar> sh(shape.begin(), shape.end());
  Tensor whole = pto::dropout_gen_mask(sh, p, key, counter, loc);
  return detail::apply(kRules[kDropoutGenMask],
                       {DTensor(whole, detail::replicated(mesh, shape, loc))}, strategy, {}, loc);
}

DTensor dropout_do_mask(const Input &x, const Input &mask, double p, const Strategy &strategy,
                        SrcLoc loc) {
  detail::check_pairing(x, mask, strategy, loc);
  detail::Attrs at;
  at.alpha = p;
  return detail::apply(kRules[kDropoutDoMask], {x, mask}, {}, at, loc);
}

DTensor dropout(const DTensor &x, double p, uint64_t key, uint64_t counter, SrcLoc loc) {
  const Layout &xl = x.layout();
  std::vector<Placement> pl = xl.placements();
  for (auto &q : pl)
    if (q.kind == Placement::Kind::PARTIAL)
      q = Placement::replicate();
  const Layout ml(x.mesh(), xl.global_shape(), pl, loc);
  const bool active = detail::mesh_active(x.mesh(), kRules[kDropoutGenMask].op, loc);
  std::vector<SymbolicScalar> sh(xl.global_shape().begin(), xl.global_shape().end());
  Tensor whole = pto::dropout_gen_mask(sh, p, key, counter, loc);
  DTensor mask(detail::slice_whole(whole, ml, active, loc), ml);
  return dropout_do_mask(x, mask, p, {}, loc);
}

} // namespace pto::parallel
