// apply.cpp - One op under a strategy: the checks of docs/sharding.md ("Errors"), the mapping of
// MindSpore counts onto mesh axes, pending partials, the inputs' redistribution, the local op
// and the output's layout. Every rule of rules.cpp runs through apply().
#include "pto/error.h"
#include "pto/size_math.h"

#include "parallel_internal.h"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

namespace pto::parallel::detail {

namespace {

/// The strategy as counts (axis names as their sizes), for "nearest valid strategy" hints.
std::vector<std::vector<int64_t>> as_counts(const Strategy &s, const Mesh &mesh) {
  std::vector<std::vector<int64_t>> c;
  for (const auto &spec : s) {
    c.emplace_back();
    for (const auto &d : spec) {
      int a = d.axis.empty() ? -1 : mesh.find_axis(d.axis);
      c.back().push_back(a >= 0 ? mesh.size(a) : d.parts);
    }
  }
  return c;
}

std::string hint(const Strategy &s, const Mesh &mesh, const Signature &sig, size_t operand,
                 size_t dim, int64_t value) {
  return nearest(as_counts(s, mesh), sig, operand, dim, value);
}

/// How messages name factor `f` of `sig`: its own name ("k"), else its dim of the result.
std::string factor_label(const Signature &sig, size_t f) {
  if (sig.factors[f].name)
    return sig.factors[f].name;
  for (size_t j = 0; j < sig.out.size(); ++j)
    if (sig.out[j] == static_cast<int>(f))
      return fmt::format("result dim {}", j);
  return sig.factors[f].kind == FactorKind::REDUCE ? "the reduced dim" : fmt::format("#{}", f);
}

/// The StrategyError detail when operands `a` and `b` (operand, dim) of one factor `f` are
/// split differently: both splits, the rule, and the nearest strategy, which keeps the larger
/// split (the one the user asked for) on every dim of the factor.
std::string factor_mismatch(const Strategy &s, const Mesh &mesh, const Signature &sig, size_t f,
                            std::pair<size_t, size_t> a, std::pair<size_t, size_t> b) {
  auto count = [&](std::pair<size_t, size_t> at) {
    const auto &e = s[at.first][at.second];
    return e.axis.empty() ? e.parts : mesh.size(mesh.find_axis(e.axis));
  };
  auto split = [&](std::pair<size_t, size_t> at) {
    const auto &e = s[at.first][at.second];
    return e.axis.empty() ? fmt::format("{}", e.parts)
                          : fmt::format("{} (axis '{}')", count(at), e.axis);
  };
  const Factor &fac = sig.factors[f];
  const std::string both_one =
      fac.size == 1 ? fmt::format("; both dims have size 1, so neither is a broadcast (a size-1 "
                                  "dim is broadcast only against a larger one): split both {} "
                                  "or neither",
                                  std::max(count(a), count(b)))
                    : "";
  return fmt::format("operand {} dim {} and operand {} dim {} are one factor, {} (size {}, {}), "
                     "which every operand must split alike, but operand {} dim {} is split {} "
                     "and operand {} dim {} is split {}{}; {}",
                     a.first, a.second, b.first, b.second, factor_label(sig, f), fac.size,
                     fac.kind == FactorKind::REDUCE ? "contracted together"
                                                    : "one dim of the result",
                     a.first, a.second, split(a), b.first, b.second, split(b), both_one,
                     hint(s, mesh, sig, b.first, b.second, std::max(count(a), count(b))));
}

struct Resolved {
  std::vector<std::vector<int>> axes; ///< per factor
  std::vector<bool> used;             ///< per mesh axis
};

/// The factor -> mesh axes assignment an explicit strategy gives.
Resolved resolve_strategy(const Rule &rule, const Strategy &s, const Signature &sig,
                          const Mesh &mesh, const std::vector<std::vector<int64_t>> &shapes,
                          const Attrs &attrs, SrcLoc loc) {
  const char *op = rule.op;
  if (s.size() != shapes.size()) {
    std::vector<std::vector<int64_t>> ones;
    for (const auto &sh : shapes)
      ones.emplace_back(sh.size(), 1);
    throw StrategyError(loc, op,
                        fmt::format("the strategy has {} tuples but {} ({}) has {} inputs: one "
                                    "tuple per input; e.g. {}",
                                    s.size(), rule.op, rule.mindspore, shapes.size(),
                                    strategy_str(ones)));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].size() != shapes[i].size()) {
      auto c = as_counts(s, mesh);
      c[i].resize(shapes[i].size(), 1);
      throw StrategyError(loc, op,
                          fmt::format("operand {} has rank {} ({}) but its strategy has {} "
                                      "entries; nearest valid strategy: {}",
                                      i, shapes[i].size(), dims_str(shapes[i]), s[i].size(),
                                      strategy_str(c)));
    }
    for (size_t d = 0; d < s[i].size(); ++d) {
      if (s[i][d].axis.empty() && s[i][d].parts < 1)
        throw StrategyError(loc, op,
                            fmt::format("operand {} dim {} is split {}: counts must be >= 1; {}", i,
                                        d, s[i][d].parts, hint(s, mesh, sig, i, d, 1)));
      if (!s[i][d].axis.empty() && mesh.find_axis(s[i][d].axis) < 0)
        throw StrategyError(loc, op,
                            fmt::format("operand {} dim {} names axis '{}', which the mesh ({}) "
                                        "does not have",
                                        i, d, s[i][d].axis, mesh.to_string()));
    }
  }
  if (rule.check)
    rule.check(rule, as_counts(s, mesh), shapes, attrs, sig, loc);
  Resolved r{std::vector<std::vector<int>>(sig.factors.size()),
             std::vector<bool>(static_cast<size_t>(mesh.n_axes()), false)};
  // The count of each factor, checked equal across operands; named axes first.
  for (size_t f = 0; f < sig.factors.size(); ++f) {
    std::optional<int64_t> count;
    size_t first_i = 0, first_d = 0;
    std::vector<int> named;
    for (size_t i = 0; i < s.size(); ++i)
      for (size_t d = 0; d < s[i].size(); ++d) {
        if (sig.in[i][d] != static_cast<int>(f))
          continue;
        const auto &e = s[i][d];
        int64_t c = e.axis.empty() ? e.parts : mesh.size(mesh.find_axis(e.axis));
        if (!count) {
          count = c;
          first_i = i;
          first_d = d;
          if (!e.axis.empty())
            named = {mesh.find_axis(e.axis)};
        } else if (*count != c) {
          throw StrategyError(loc, op,
                              factor_mismatch(s, mesh, sig, f, {first_i, first_d}, {i, d}));
        }
      }
    if (!count || *count == 1)
      continue;
    std::vector<int> axes = named;
    if (axes.empty())
      axes = map_count(mesh, *count, r.used);
    else if (r.used[static_cast<size_t>(axes[0])])
      throw StrategyError(loc, op,
                          fmt::format("operand {} dim {} names axis '{}', which another dim of "
                                      "the strategy already uses",
                                      first_i, first_d, mesh.axis_name(axes[0])));
    if (axes.empty())
      throw StrategyError(loc, op,
                          fmt::format("operand {} dim {} is split {}, which does not map onto the "
                                      "mesh ({}, {} PEs): a count must be the size of an unused "
                                      "mesh axis or of a run of consecutive ones; {}",
                                      first_i, first_d, *count, mesh.to_string(), mesh.n_pes(),
                                      hint(s, mesh, sig, first_i, first_d, 1)));
    if (sig.factors[f].kind == FactorKind::WHOLE)
      throw StrategyError(loc, op,
                          fmt::format("operand {} dim {} must not be split ({} forbids it), got "
                                      "{}; {}",
                                      first_i, first_d, rule.mindspore, *count,
                                      hint(s, mesh, sig, first_i, first_d, 1)));
    for (int a : axes)
      r.used[static_cast<size_t>(a)] = true;
    r.axes[f] = axes;
  }
  // Broadcast dims (not a factor of their operand) cannot be split.
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t d = 0; d < s[i].size(); ++d)
      if (sig.in[i][d] < 0 && (!s[i][d].axis.empty() || s[i][d].parts != 1))
        throw StrategyError(loc, op,
                            fmt::format("operand {} dim {} has size 1 and is broadcast: it cannot "
                                        "be split; {}",
                                        i, d, hint(s, mesh, sig, i, d, 1)));
  return r;
}

/// Without a strategy: each factor takes the split of the first DTensor operand that splits it.
Resolved follow_inputs(const Rule &rule, const std::vector<Input> &in, const Signature &sig,
                       const Mesh &mesh, SrcLoc loc) {
  Resolved r{std::vector<std::vector<int>>(sig.factors.size()),
             std::vector<bool>(static_cast<size_t>(mesh.n_axes()), false)};
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].get())
      continue;
    const Layout &l = in[i].get()->layout();
    for (int d = 0; d < l.rank(); ++d) {
      const int f = sig.in[i][static_cast<size_t>(d)];
      auto axes = l.split_axes(d);
      if (f < 0 || axes.empty() || !r.axes[static_cast<size_t>(f)].empty() ||
          sig.factors[static_cast<size_t>(f)].kind == FactorKind::REPEAT)
        continue; // a REPEAT factor is split only by a strategy: the input is gathered
      if (sig.factors[static_cast<size_t>(f)].kind == FactorKind::WHOLE)
        throw StrategyError(loc, rule.op,
                            fmt::format("operand {} dim {} is split {} ({}), but {} needs it "
                                        "whole: redistribute it first",
                                        i, d, l.parts(d), l.to_string(), rule.mindspore));
      bool free = true;
      for (int a : axes)
        free = free && !r.used[static_cast<size_t>(a)];
      if (!free)
        continue;
      for (int a : axes)
        r.used[static_cast<size_t>(a)] = true;
      r.axes[static_cast<size_t>(f)] = axes;
    }
  }
  return r;
}

/// Whether `rule` keeps the partials of `in` on axis `a` pending (true: output Partial(op)).
bool keeps_partial(const Rule &rule, const std::vector<Placement> &on_axis, PartialOp &op) {
  size_t n_partial = 0;
  bool same_op = true, first_partial = false;
  std::optional<PartialOp> seen;
  for (size_t i = 0; i < on_axis.size(); ++i) {
    const auto &p = on_axis[i];
    if (p.kind == Placement::Kind::SPLIT)
      return false; // cannot be: the axis is not used by any factor
    if (p.kind != Placement::Kind::PARTIAL)
      continue;
    ++n_partial;
    if (seen && *seen != p.op)
      same_op = false;
    seen = p.op;
    if (i == 0)
      first_partial = true;
  }
  if (!n_partial || !same_op || !seen)
    return false;
  op = *seen;
  switch (rule.partials[static_cast<size_t>(op)]) {
  case PartialRule::RESOLVE:
    return false;
  case PartialRule::LINEAR_ALL:
    return n_partial == on_axis.size();
  case PartialRule::LINEAR_ONE:
    return n_partial == 1;
  case PartialRule::LINEAR_FIRST:
    return n_partial == 1 && first_partial;
  case PartialRule::MONOTONE:
    return true;
  }
  return false;
}

} // namespace

DTensor apply(const Rule &rule, const std::vector<Input> &inputs, const Strategy &strategy,
              const Attrs &attrs, SrcLoc loc) {
  return apply_n(rule, inputs, strategy, attrs, loc).front();
}

std::vector<DTensor> apply_n(const Rule &rule, const std::vector<Input> &inputs,
                             const Strategy &strategy, const Attrs &attrs, SrcLoc loc) {
  const char *op = rule.op;
  if (!rule.takes_strategy && !strategy.empty())
    throw StrategyError(loc, op,
                        fmt::format("{} takes no strategy (MindSpore: none may be configured); its "
                                    "output follows its input's layout: drop the strategy",
                                    rule.mindspore));
  const Mesh *mesh = nullptr;
  for (const auto &in : inputs)
    if (in.get()) {
      if (!mesh)
        mesh = &in.get()->mesh();
      else if (!(*mesh == in.get()->mesh()))
        throw StrategyError(loc, op,
                            fmt::format("operands on different meshes ({} and {})",
                                        mesh->to_string(), in.get()->mesh().to_string()));
    }
  if (!mesh)
    throw StrategyError(loc, op,
                        "no operand is a DTensor, so the op has no mesh: shard one operand "
                        "first (parallel::shard(x, mesh, spec))");
  const bool active = mesh_active(*mesh, op, loc);
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < inputs.size(); ++i)
    shapes.push_back(inputs[i].get()
                         ? inputs[i].get()->layout().global_shape()
                         : static_shape(inputs[i].tensor, op, static_cast<int>(i), loc));
  const Signature sig = [&] {
    UserOpScope user_op(rule.op); // a shared signature ("parallel elementwise") names the op
    return rule.signature(shapes, attrs, loc);
  }();
  Resolved r = strategy.empty() ? follow_inputs(rule, inputs, sig, *mesh, loc)
                                : resolve_strategy(rule, strategy, sig, *mesh, shapes, attrs, loc);
  // Uneven splits: balanced, over one mesh axis per dim (several axes are planned).
  for (size_t f = 0; f < sig.factors.size(); ++f) {
    int64_t p = 1;
    for (int a : r.axes[f])
      p *= mesh->size(a);
    if (sig.factors[f].size % p == 0 || r.axes[f].size() <= 1)
      continue;
    for (size_t i = 0; i < sig.in.size(); ++i)
      for (size_t d = 0; d < sig.in[i].size(); ++d)
        if (sig.in[i][d] == static_cast<int>(f))
          throw StrategyError(loc, op,
                              fmt::format("operand {} dim {} of size {} is split {} over {} mesh "
                                          "axes: an uneven split must use one mesh axis "
                                          "(planned: several)",
                                          i, d, sig.factors[f].size, p, r.axes[f].size()));
  }
  // Pending partials on axes no factor uses: kept when the rule is linear in them.
  std::vector<std::optional<PartialOp>> kept(static_cast<size_t>(mesh->n_axes()));
  for (int a = 0; a < mesh->n_axes(); ++a) {
    if (r.used[static_cast<size_t>(a)])
      continue;
    std::vector<Placement> on_axis;
    for (const auto &in : inputs)
      on_axis.push_back(in.get() ? in.get()->layout().placements()[static_cast<size_t>(a)]
                                 : Placement::replicate());
    PartialOp pop = PartialOp::SUM;
    if (keeps_partial(rule, on_axis, pop))
      kept[static_cast<size_t>(a)] = pop;
  }
  // Each input's required layout, and its slice in it.
  std::vector<Tensor> locals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<Placement> pl(static_cast<size_t>(mesh->n_axes()));
    for (size_t d = 0; d < sig.in[i].size(); ++d)
      if (int f = sig.in[i][d]; f >= 0 &&
                                sig.factors[static_cast<size_t>(f)].kind != FactorKind::GATHER &&
                                sig.factors[static_cast<size_t>(f)].kind != FactorKind::REPEAT)
        for (int a : r.axes[static_cast<size_t>(f)])
          pl[static_cast<size_t>(a)] = Placement::split(static_cast<int>(d));
    const DTensor *dt = inputs[i].get();
    for (int a = 0; a < mesh->n_axes(); ++a) {
      const auto &k = kept[static_cast<size_t>(a)];
      if (k && dt &&
          dt->layout().placements()[static_cast<size_t>(a)].kind == Placement::Kind::PARTIAL)
        pl[static_cast<size_t>(a)] = Placement::partial(*k);
    }
    Layout target(*mesh, shapes[i], pl, loc);
    locals.push_back(dt ? redistribute_local(dt->local(), dt->layout(), target, active, loc)
                        : slice_whole(inputs[i].tensor, target, active, loc));
  }
  // The output's layout.
  std::vector<int64_t> out_shape;
  std::vector<Placement> out_pl(static_cast<size_t>(mesh->n_axes()));
  for (size_t d = 0; d < sig.out.size(); ++d) {
    const int f = sig.out[d];
    out_shape.push_back(f < 0 ? 1 : sig.factors[static_cast<size_t>(f)].size);
    if (f >= 0)
      for (int a : r.axes[static_cast<size_t>(f)])
        out_pl[static_cast<size_t>(a)] = Placement::split(static_cast<int>(d));
  }
  for (size_t f = 0; f < sig.factors.size(); ++f)
    if (sig.factors[f].kind == FactorKind::REDUCE)
      for (int a : r.axes[f])
        out_pl[static_cast<size_t>(a)] = Placement::partial(sig.factors[f].reduce);
  for (int a = 0; a < mesh->n_axes(); ++a)
    if (const auto &k = kept[static_cast<size_t>(a)])
      out_pl[static_cast<size_t>(a)] = Placement::partial(*k);
  Layout out(*mesh, out_shape, out_pl, loc);
  std::vector<int64_t> out_local = out_shape;
  std::vector<bool> gathered(out_shape.size(), false); // whole in the local result, then cut
  for (size_t d = 0; d < out_local.size(); ++d) {
    const int f = sig.out[d];
    gathered[d] = active && f >= 0 &&
                  sig.factors[static_cast<size_t>(f)].kind == FactorKind::GATHER &&
                  !r.axes[static_cast<size_t>(f)].empty();
    if (active && !gathered[d])
      out_local[d] = out.max_local_shape()[d];
  }
  std::string ins;
  for (const auto &in : inputs)
    ins += (ins.empty() ? "" : ", ") +
           (in.get() ? in.get()->layout().to_string() : std::string("whole"));
  record(fmt::format("{}: {}({}) -> {}{}", format_location(loc), op, ins, out.to_string(),
                     active ? "" : " (1 PE: whole tensors, no collective)"),
         loc);
  std::vector<Tensor> results;
  Call call{rule, attrs, std::move(locals), sig, r.axes, *mesh, active, out_local, loc, &results};
  results.insert(results.begin(), rule.local(call));
  std::vector<DTensor> outs;
  const bool replicated_out =
      std::all_of(out.placements().begin(), out.placements().end(),
                  [](const Placement &p) { return p.kind == Placement::Kind::REPLICATE; });
  for (Tensor &t : results) {
    if (std::find(gathered.begin(), gathered.end(), true) != gathered.end())
      t = reslice(t, out, gathered, loc);
    // A fully replicated op's further outputs (Unique's count) have their own whole shape.
    if (!outs.empty() && replicated_out)
      outs.emplace_back(t, replicated(*mesh, static_shape(t, op, 0, loc), loc), loc);
    else
      outs.emplace_back(t, out, loc);
  }
  return outs;
}

std::string nearest(const Counts &counts, const Signature &sig, size_t operand, size_t dim,
                    int64_t value) {
  auto c = counts;
  const int f = operand < sig.in.size() && dim < sig.in[operand].size() ? sig.in[operand][dim] : -1;
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t d = 0; d < c[i].size(); ++d)
      if ((i == operand && d == dim) ||
          (f >= 0 && i < sig.in.size() && d < sig.in[i].size() && sig.in[i][d] == f))
        c[i][d] = value;
  return "nearest valid strategy: " + strategy_str(c);
}

} // namespace pto::parallel::detail
