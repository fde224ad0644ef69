// validator_test.cpp - The rule validator of issue 12, in the spirit of DTensor's op sweep: for
// every rule of pto::parallel's table that the sweep knows how to call (each elementwise and
// movement rule, the reductions, concat / split / slice / tile round trips, prelu, l2_normalize,
// argmax / argmin_with_value), every placement of each input on a 1-D mesh of n PEs
// (replicate, a split of every dim, a pending Partial(sum) and Partial(max)), with uneven splits
// (shapes [5, 7] and a broadcast [1, 7]), run sharded and made whole, against the same kernel on
// one PE. A wrong rule (a partial kept through a non-linear op, a factor mapped to the wrong dim,
// a broadcast split) gives different values; a rule the sweep does not call fails the coverage
// check. The partial inputs are sums and maxima over a split dim of exactly representable values
// (k / 1024, at most 8 terms), so every partial resolves to the same bits in any order and the
// comparison is bitwise (but for div and the softmax-like ops, whose kept or split sums round
// differently). Quick: n = 2 and 3; the suite "slow" adds 4 and 8.
#include "pto/parallel.h"

#include "parallel/sharded.h"

#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <string>

namespace par = pto::parallel;
using pto::Tensor;

namespace {

using Fn = std::function<par::DTensor(const std::vector<par::DTensor> &)>;

struct Op {
  std::string name; ///< the rule's op, as pto::parallel::rules() names it
  int arity;
  Fn fn;
  /// Exact, except where a split factor sums inexact terms (the softmax denominator).
  support::Tolerance tol{0, 0};
};

const std::vector<Op> &ops() {
  static const std::vector<Op> v = [] {
    std::vector<Op> o;
    auto u = [&](const char *n,
                 par::DTensor (*f)(const par::Input &, const par::Strategy &, pto::SrcLoc)) {
      o.push_back(
          {std::string("parallel::") + n, 1, [f](const auto &x) { return f(x[0], {}, {}); }});
    };
    auto b = [&](const char *n, par::DTensor (*f)(const par::Input &, const par::Input &,
                                                  const par::Strategy &, pto::SrcLoc)) {
      o.push_back(
          {std::string("parallel::") + n, 2, [f](const auto &x) { return f(x[0], x[1], {}, {}); }});
    };
    b("add", par::add), b("sub", par::sub), b("mul", par::mul);
    // div keeps a P(sum) numerator pending: sum(a_p / b) is (sum a_p) / b up to rounding.
    o.push_back({"parallel::div", 2, [](const auto &x) { return par::div(x[0], x[1]); },
                 sharded::kSumTolerance});
    b("maximum", par::maximum), b("minimum", par::minimum), b("atan2", par::atan2);
    b("div_no_nan", par::div_no_nan), b("floor_div", par::floor_div);
    b("remainder", par::remainder), b("fmod", par::fmod), b("pow", par::pow);
    b("eq", par::eq), b("ne", par::ne), b("lt", par::lt), b("le", par::le), b("gt", par::gt);
    b("ge", par::ge);
    u("neg", par::neg), u("exp", par::exp), u("gelu", par::gelu), u("relu", par::relu);
    u("sigmoid", par::sigmoid), u("tanh", par::tanh), u("abs", par::abs), u("sqrt", par::sqrt);
    u("acos", par::acos), u("acosh", par::acosh), u("asin", par::asin), u("asinh", par::asinh);
    u("atan", par::atan), u("atanh", par::atanh), u("bessel_i0e", par::bessel_i0e);
    u("bessel_i1e", par::bessel_i1e), u("ceil", par::ceil), u("cos", par::cos);
    u("cosh", par::cosh), u("erf", par::erf), u("erfc", par::erfc), u("expm1", par::expm1);
    u("floor", par::floor), u("log", par::log), u("log1p", par::log1p);
    u("reciprocal", par::reciprocal), u("relu6", par::relu6), u("round", par::round);
    u("rsqrt", par::rsqrt), u("sign", par::sign), u("sin", par::sin), u("sinh", par::sinh);
    u("softplus", par::softplus), u("softsign", par::softsign), u("square", par::square);
    u("tan", par::tan), u("ones_like", par::ones_like), u("zeros_like", par::zeros_like);
    o.push_back({"parallel::elu", 1, [](const auto &x) { return par::elu(x[0], 0.75); }});
    o.push_back({"parallel::cast", 1, [](const auto &x) {
                   return par::cast(par::cast(x[0], pto::DT_BF16), pto::DT_FP32);
                 }});
    o.push_back({"parallel::unsqueeze", 1,
                 [](const auto &x) { return par::squeeze(par::unsqueeze(x[0], 1), {1}); }});
    o.push_back({"parallel::broadcast_to", 1,
                 [](const auto &x) { return par::amax(par::broadcast_to(x[0], {3, 5, 7}), 0); }});
    o.push_back({"parallel::permute", 1,
                 [](const auto &x) { return par::permute(par::permute(x[0], {1, 0}), {1, 0}); }});
    o.push_back({"parallel::sum", 1, [](const auto &x) { return par::sum(x[0], 1, true); }});
    o.push_back({"parallel::amax", 1, [](const auto &x) { return par::amax(x[0], 0, true); }});
    o.push_back({"parallel::amin", 1, [](const auto &x) { return par::amin(x[0], 1, true); }});
    o.push_back({"parallel::softmax", 1, [](const auto &x) { return par::softmax(x[0], 1); },
                 sharded::kSumTolerance});
    o.push_back({"parallel::log_softmax", 1,
                 [](const auto &x) { return par::log_softmax(x[0], 0); }, sharded::kSumTolerance});
    o.push_back({"parallel::approximate_equal", 2,
                 [](const auto &x) { return par::approximate_equal(x[0], x[1], 0.25); }});
    // The weight [7] (x's dim 1, the channels) from the second input: a split of the channels
    // reaches the weight.
    o.push_back(
        {"parallel::prelu", 2, [](const auto &x) { return par::prelu(x[0], par::amax(x[1], 0)); }});
    o.push_back({"parallel::l2_normalize", 1,
                 [](const auto &x) { return par::l2_normalize(x[0], 1, 0.5); },
                 sharded::kSumTolerance});
    o.push_back({"parallel::l2_normalize", 1,
                 [](const auto &x) { return par::l2_normalize(x[0], 0); }, sharded::kSumTolerance});
    // Concat along dim 0 (split or not), then split back into the inputs (along a split axis).
    o.push_back({"parallel::concat", 2, [](const auto &x) {
                   const int64_t r = x[1].layout().global_shape()[0];
                   auto p = par::split(par::concat({x[1], x[0]}, 0), {r, 5}, 0);
                   return par::add(p[1], p[0]);
                 }});
    o.push_back({"parallel::split", 1, [](const auto &x) {
                   auto p = par::split(x[0], {2, 3, 2}, 1);
                   return par::concat({p[2], p[0], p[1]}, 1);
                 }});
    o.push_back({"parallel::slice", 1, [](const auto &x) {
                   return par::concat(
                       {par::slice(x[0], {0, 3}, {-1, 4}), par::slice(x[0], {0, 0}, {5, 3})}, 1);
                 }});
    o.push_back({"parallel::strided_slice", 1, [](const auto &x) {
                   return par::concat({par::strided_slice(x[0], {1, 0}, {5, 7}, {2, 1}),
                                       par::strided_slice(x[0], {0, 0}, {5, 7}, {2, 1})},
                                      0);
                 }});
    // index + value: both exact in fp32 (indices < 8, values k / 1024).
    o.push_back({"parallel::argmax_with_value", 1, [](const auto &x) {
                   auto r = par::argmax_with_value(x[0], 1, true);
                   return par::add(par::cast(r.index, pto::DT_FP32), r.values);
                 }});
    o.push_back({"parallel::argmin_with_value", 1, [](const auto &x) {
                   auto r = par::argmin_with_value(x[0], 0, true);
                   return par::add(par::cast(r.index, pto::DT_FP32), r.values);
                 }});
    // The last dim 21 = three copies of x (ties in every row), k = 2: values + indices (exact),
    // then 5 columns of x to make [5, 7].
    o.push_back({"parallel::topk", 1, [](const auto &x) {
                   auto r = par::topk(par::concat({x[0], x[0], x[0]}, 1), 2);
                   return par::concat({par::add(par::cast(r.indices, pto::DT_FP32), r.values),
                                       par::slice(x[0], {0, 0}, {5, 5})},
                                      1);
                 }});
    o.push_back({"parallel::tile", 1, [](const auto &x) {
                   return par::slice(par::tile(x[0], {1, 2}), {0, 3}, {5, 7});
                 }});
    // Session 12's rules. Integer indices from argmax_with_value of an input (exact, global,
    // with the input's layout on the other dims): a split params axis is the masked lookup.
    o.push_back({"parallel::index_select", 2, [](const auto &x) {
                   auto idx = par::argmax_with_value(x[1], 0).index; // [7] in [0, rows of x[1])
                   return par::slice(par::index_select(x[0], 0, idx), {0, 0}, {5, 7});
                 }});
    o.push_back({"parallel::index_select", 2, [](const auto &x) {
                   auto idx = par::argmax_with_value(x[1], 1).index; // [rows of x[1]] in [0, 7)
                   auto sel = par::index_select(x[0], 1, idx);
                   return par::slice(par::concat({sel, x[0]}, 1), {0, 0}, {5, 7});
                 }});
    o.push_back({"parallel::embedding", 2, [](const auto &x) {
                   auto ids = par::argmax_with_value(x[1], 0).index;
                   return par::slice(par::embedding(x[0], ids), {0, 0}, {5, 7});
                 }});
    o.push_back({"parallel::one_hot", 1, [](const auto &x) {
                   auto idx = par::argmax_with_value(x[0], 0).index; // [7] in [0, 5)
                   return par::permute(par::cast(par::one_hot(idx, 5), pto::DT_FP32), {1, 0});
                 }});
    // Segment ids [5] in [0, 7) (broadcast from [1] for the [1, 7] operand); 6 segments, so
    // id 6 is dropped and some segments are empty (0, FLT_MAX, -FLT_MAX).
    auto seg = [&](const char *n, par::DTensor (*f)(const par::Input &, const par::Input &, int64_t,
                                                    const par::Strategy &, pto::SrcLoc)) {
      o.push_back({std::string("parallel::") + n, 2, [f](const auto &x) {
                     auto ids = par::argmax_with_value(x[1], 1).index;
                     if (x[1].layout().global_shape()[0] == 1)
                       ids = par::broadcast_to(ids, {5});
                     return par::slice(f(x[0], ids, 6, {}, {}), {0, 0}, {5, 7});
                   }});
    };
    seg("unsorted_segment_sum", par::unsorted_segment_sum);
    seg("unsorted_segment_min", par::unsorted_segment_min);
    seg("unsorted_segment_max", par::unsorted_segment_max);
    o.push_back({"parallel::stack", 1, [](const auto &x) {
                   auto st = par::stack({x[0], par::neg(x[0])}, 1); // [5, 2, 7]
                   return par::squeeze(par::slice(st, {0, 1, 0}, {5, 1, 7}), {1});
                 }});
    b("sigmoid_cross_entropy_with_logits", par::sigmoid_cross_entropy_with_logits);
    o.push_back({"parallel::softmax_cross_entropy_with_logits", 2,
                 [](const auto &x) {
                   auto labels = par::broadcast_to(x[1], {5, 7});
                   return par::unsqueeze(par::softmax_cross_entropy_with_logits(x[0], labels), 1);
                 },
                 sharded::kSumTolerance});
    o.push_back({"parallel::unique", 1, [](const auto &x) {
                   auto u = par::unique(x[0]);
                   return par::add(par::reshape(u.values, {5, 7}),
                                   par::cast(u.count, pto::DT_FP32));
                 }});
    return o;
  }();
  return v;
}

/// The rules the sweep calls through another op's entry (named there) or validates elsewhere,
/// with the test that does.
const std::set<std::string> kElsewhere = {
    "parallel::dropout_gen_mask", // dropout_test.cpp: every split against one PE, bitwise
    "parallel::dropout_do_mask",  // dropout_test.cpp: the pairing errors
    "parallel::matmul",           // rules_test.cpp: m, n, k, batch splits, partials (sum tolerance)
    "parallel::mean",        // rules_test.cpp: uneven splits (1 / global length, sum tolerance)
    "parallel::reshape",     // rules_test.cpp: kept, merged and split dims
    "parallel::squeeze",     // here, through parallel::unsqueeze
    "parallel::logical_and", // rules_test.cpp: bool inputs
    "parallel::logical_or",
    "parallel::logical_not",
    "parallel::bias_add"};

enum class Place { R, S0, S1, PSUM, PMAX };
const char *place_name(Place p) {
  switch (p) {
  case Place::R:
    return "R";
  case Place::S0:
    return "S(0)";
  case Place::S1:
    return "S(1)";
  case Place::PSUM:
    return "P(sum)";
  case Place::PMAX:
    return "P(max)";
  }
  return "?";
}

/// Input i ([5, 7], or [1, 7] for the broadcast case) with placement p: from whole x ([2, 5, 7],
/// slice i) or, for a partial, from the sum / max over the split dim 0 of z ([2, n, 5, 7]).
par::DTensor make_input(const Tensor &z, const Tensor &x, int i, int64_t rows, Place p,
                        const par::Mesh &mesh, int64_t n) {
  const int64_t ii = i;
  switch (p) {
  case Place::R:
  case Place::S0:
  case Place::S1: {
    Tensor xi = pto::reshape(pto::view(x, {1, rows, 7}, {ii, 0, 0}), {rows, 7});
    par::Spec s = {{}, {}};
    if (p != Place::R)
      s[p == Place::S0 ? 0 : 1] = "x";
    return par::shard(xi, mesh, s);
  }
  case Place::PSUM:
  case Place::PMAX: {
    Tensor zi = pto::reshape(pto::view(z, {1, n, rows, 7}, {ii, 0, 0, 0}), {n, rows, 7});
    auto zs = par::shard(zi, mesh, {"x", {}, {}});
    return p == Place::PSUM ? par::sum(zs, 0) : par::amax(zs, 0);
  }
  }
  return par::shard(x, mesh, {{}, {}, {}});
}

/// Runs op `o` for every placement combination on n PEs against one PE in run mode `mode`;
/// `b_rows` 1 makes the second operand the broadcast [1, 7].
void sweep(const Op &o, int n, int64_t b_rows, pto::RunMode mode) {
  CAPTURE(o.name);
  CAPTURE(n);
  CAPTURE(b_rows);
  std::vector<std::vector<Place>> combos;
  const std::vector<Place> all = {Place::R, Place::S0, Place::S1, Place::PSUM, Place::PMAX};
  for (Place a : all) {
    if (o.arity == 1) {
      combos.push_back({a});
      continue;
    }
    for (Place b : all)
      if (!(b_rows == 1 && b == Place::S0)) // a size-1 broadcast dim cannot be split
        combos.push_back({a, b});
  }
  // Output rows [5c, 5c + 5) hold combination c.
  std::string listed;
  for (size_t c = 0; c < combos.size(); ++c) {
    listed += std::to_string(c) + ":";
    for (Place p : combos[c])
      listed += std::string(" ") + place_name(p);
    listed += "; ";
  }
  CAPTURE(listed);
  // Values k / 1024 in [-1, 1); x = the exact sum over z's dim 1, so R/S and P(sum) inputs
  // describe the same tensor.
  auto z = sharded::data({2, n, 5, 7}, 41 + uint64_t(n));
  pto::HostTensor x(pto::DT_FP32, {2, 5, 7});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t e = 0; e < 35; ++e) {
      double s = 0;
      for (int64_t p = 0; p < n; ++p)
        s += z.get((i * n + p) * 35 + e);
      x.set(i * 35 + e, s);
    }
  const par::Mesh mesh({n}, {"x"});
  const int64_t rows_out = 5;
  sharded::against_oracle(
      "validator", n,
      [&](Tensor zt, Tensor xt, Tensor y) {
        pto::set_vec_tile_shapes(1, 1, 8, 8);
        for (size_t c = 0; c < combos.size(); ++c) {
          std::vector<par::DTensor> in;
          for (size_t i = 0; i < combos[c].size(); ++i)
            in.push_back(make_input(zt, xt, int(i), i == 1 ? b_rows : 5, combos[c][i], mesh, n));
          Tensor r = par::full_tensor(o.fn(in));
          if (r.dtype() != pto::DT_FP32)
            r = pto::cast(r, pto::DT_FP32);
          r = pto::expand(r, {rows_out, 7}); // the keepdim reductions: [5, 1] or [1, 7]
          pto::assemble(r, {pto::SymbolicScalar(int64_t(c) * rows_out), 0}, y);
        }
      },
      {z, x}, {int64_t(combos.size()) * rows_out, 7}, o.tol, {mode});
}

/// The rules added in sessions 9 and 12, swept on 2 PEs in the quick tier (3 in the slow one) to
/// keep the quick tier's time.
const std::set<std::string> kSlowOnThree = {"parallel::approximate_equal",
                                            "parallel::prelu",
                                            "parallel::l2_normalize",
                                            "parallel::concat",
                                            "parallel::split",
                                            "parallel::slice",
                                            "parallel::strided_slice",
                                            "parallel::tile",
                                            "parallel::argmax_with_value",
                                            "parallel::argmin_with_value",
                                            "parallel::topk",
                                            "parallel::index_select",
                                            "parallel::embedding",
                                            "parallel::one_hot",
                                            "parallel::unsorted_segment_sum",
                                            "parallel::unsorted_segment_min",
                                            "parallel::unsorted_segment_max",
                                            "parallel::stack",
                                            "parallel::sigmoid_cross_entropy_with_logits",
                                            "parallel::softmax_cross_entropy_with_logits",
                                            "parallel::unique"};

/// Every op (or those named in `only`, but for those in `skip`) on each PE count of `ns`, in
/// `mode`. The rules rewrite
/// the trace, which both executors run alike; the interpreter sweeps every op (no compile per
/// kernel), the JIT a sample in the quick tier and every op in the slow one.
void sweep_all(const std::vector<int> &ns, pto::RunMode mode,
               const std::set<std::string> &only = {}, const std::set<std::string> &skip = {}) {
  for (const auto &o : ops())
    if ((only.empty() || only.count(o.name)) && !skip.count(o.name))
      for (int n : ns) {
        sweep(o, n, 5, mode);
        if (o.arity == 2)
          sweep(o, n, 1, mode);
      }
}

} // namespace

TEST_CASE("parallel validator: every rule is swept or validated elsewhere") {
  std::set<std::string> swept;
  for (const auto &o : ops())
    swept.insert(o.name);
  for (const auto &r : par::rules()) {
    CAPTURE(r.op);
    CHECK((swept.count(r.op) + kElsewhere.count(r.op)) == 1);
  }
}

TEST_CASE("parallel validator: every placement combination on 2 and 3 PEs") {
  sweep_all({2}, pto::RunMode::Interpret);
  sweep_all({3}, pto::RunMode::Interpret, {}, kSlowOnThree);
  sweep_all({3}, pto::RunMode::Jit,
            {"parallel::div", "parallel::exp", "parallel::unsqueeze", "parallel::sum",
             "parallel::softmax"});
}

TEST_CASE("parallel validator: 4 and 8 PEs, and every op JIT-compiled" *
          doctest::test_suite("slow")) {
  sweep_all({4, 8}, pto::RunMode::Interpret);
  sweep_all({3}, pto::RunMode::Interpret, kSlowOnThree);
  sweep_all({2}, pto::RunMode::Jit);
}

namespace {
/// A DT_INT32 [n] host tensor of `v`.
pto::HostTensor ints(const std::vector<int64_t> &v) {
  pto::HostTensor t(pto::DT_INT32, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.set(int64_t(i), double(v[i]));
  return t;
}
} // namespace

TEST_CASE("parallel validator: strategies of the lookup, one-hot, segment, stack and loss rules") {
  // Dims of 5, 7 and 9 split 2, 3 and 4 ways: uneven splits (all but 9 in 3).
  const auto p = sharded::data({5, 7}, 7), labels = sharded::data({5, 7}, 9);
  const auto data = sharded::data({9, 7}, 8);
  const auto rows = ints({4, 0, 2, 2, 1, 3, 0, 4, 1});  // into 5 rows, repeats
  const auto cols = ints({6, 0, 3, 3, 5, 1, 2, 6, 4});  // into 7 columns
  const auto segs = ints({0, 5, 2, -1, 2, 6, 1, 0, 3}); // 6 segments: 4 empty; -1, 6 dropped
  const std::vector<pto::RunMode> interp = {pto::RunMode::Interpret};
  const support::Tolerance exact{0, 0};
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    const par::Mesh mesh({n}, {"x"});
    using S = par::Strategy;
    auto rep = [&](Tensor t) { return par::shard(t, mesh, par::Spec(size_t(t.dim()))); };
    auto two = [&](const char *name, const std::function<par::DTensor(Tensor, Tensor)> &f,
                   const pto::HostTensor &a, const pto::HostTensor &b,
                   const std::vector<int64_t> &out, support::Tolerance tol) {
      CAPTURE(name);
      sharded::against_oracle(
          name, n,
          [&](Tensor at, Tensor bt, Tensor y) {
            pto::set_vec_tile_shapes(1, 1, 8, 8);
            Tensor r = par::full_tensor(f(at, bt));
            if (r.dtype() != pto::DT_FP32)
              r = pto::cast(r, pto::DT_FP32);
            pto::assemble(pto::reshape(r, std::vector<pto::SymbolicScalar>(out.begin(), out.end())),
                          std::vector<pto::SymbolicScalar>(out.size(), 0), y);
          },
          {a, b}, out, tol, interp);
    };
    // GatherV2 with params split along the axis (the masked lookup, Partial(sum)): bitwise.
    two(
        "gather_rows",
        [&](Tensor a, Tensor i) { return par::index_select(rep(a), 0, i, S{{n, 1}, {1}}); }, p,
        rows, {9, 7}, exact);
    two(
        "gather_cols",
        [&](Tensor a, Tensor i) { return par::index_select(rep(a), 1, i, S{{1, n}, {1}}); }, p,
        cols, {5, 9}, exact);
    two(
        "gather_indices",
        [&](Tensor a, Tensor i) { return par::index_select(rep(a), 0, i, S{{1, 1}, {n}}); }, p,
        rows, {9, 7}, exact);
    two(
        "embedding_v",
        [&](Tensor a, Tensor i) { return par::embedding(rep(a), i, S{{n, 1}, {1}}); }, p, rows,
        {9, 7}, exact);
    two(
        "embedding_ids",
        [&](Tensor a, Tensor i) { return par::embedding(rep(a), i, S{{1, 1}, {n}}); }, p, rows,
        {9, 7}, exact);
    // OneHot, MindSpore's form: the output's tuple, then () () for on_value and off_value.
    two(
        "one_hot_classes",
        [&](Tensor, Tensor i) { return par::one_hot(rep(i), 5, S{{1, n}, {}, {}}); }, p, rows,
        {9, 5}, exact);
    two(
        "one_hot_rows", [&](Tensor, Tensor i) { return par::one_hot(rep(i), 5, S{{n, 1}}); }, p,
        rows, {9, 5}, exact);
    two(
        "segment_sum",
        [&](Tensor d, Tensor i) { return par::unsorted_segment_sum(rep(d), i, 6, S{{n, 1}, {n}}); },
        data, segs, {6, 7}, exact);
    two(
        "segment_min",
        [&](Tensor d, Tensor i) { return par::unsorted_segment_min(rep(d), i, 6, S{{n, 1}, {n}}); },
        data, segs, {6, 7}, exact);
    two(
        "segment_max",
        [&](Tensor d, Tensor i) { return par::unsorted_segment_max(rep(d), i, 6, S{{n, 1}, {n}}); },
        data, segs, {6, 7}, exact);
    two(
        "stack", [&](Tensor a, Tensor b) { return par::stack({rep(a), b}, 2, S{{1, n}, {1, n}}); },
        p, labels, {5, 7, 2}, exact);
    two(
        "softmax_ce",
        [&](Tensor a, Tensor b) {
          return par::softmax_cross_entropy_with_logits(rep(a), b, S{{1, n}, {1, n}});
        },
        p, labels, {5, 1}, sharded::kSumTolerance);
    if (n == 4) { // params and indices split together, on two mesh axes
      const par::Mesh m2({2, 2}, {"a", "b"});
      two(
          "gather_both",
          [&](Tensor a, Tensor i) {
            return par::index_select(par::shard(a, m2, {"a", {}}), 0, par::shard(i, m2, {"b"}));
          },
          p, rows, {9, 7}, exact);
    }
  }
}
