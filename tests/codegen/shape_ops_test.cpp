// shape_ops_test.cpp - The shape, movement and creation ops of shape_ops.h, run as kernels in
// each run mode against naive index loops written here (support/multi_op.h runs many ops per
// kernel). Random numbers are checked against an independent Philox4x32-10 written here from the
// published algorithm (Salmon et al., SC'11), itself checked on Random123's known-answer vectors.
#include "pto/pto.h"

#include "support/multi_op.h"
#include "support/naive.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>

using naive::Array;
using support::Case;
using T = pto::Tensor;
using Idx = std::vector<int64_t>;

namespace {

const std::vector<int64_t> kTile{2, 3, 4, 16};

int64_t numel(const Idx &s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}
/// Row-major multi-index of flat `i` in `shape`.
Idx unravel(int64_t i, const Idx &shape) {
  Idx idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}
double at(const Array &a, const Idx &i) {
  int64_t f = 0;
  for (size_t d = 0; d < i.size(); ++d)
    f = f * a.shape[d] + i[d];
  return a.v[static_cast<size_t>(f)];
}
/// out[o] = f(o) over `shape`.
Array build(const Idx &shape, const std::function<double(const Idx &)> &f) {
  Array out;
  out.shape = shape;
  for (int64_t i = 0; i < numel(shape); ++i)
    out.v.push_back(f(unravel(i, shape)));
  return out;
}
Array reshaped(Array a, Idx shape) {
  a.shape = std::move(shape);
  return a;
}
/// Window [off, off + shape) of a.
Array window(const Array &a, const Idx &shape, const Idx &off) {
  return build(shape, [&](const Idx &o) {
    Idx i = o;
    for (size_t d = 0; d < i.size(); ++d)
      i[d] += off[d];
    return at(a, i);
  });
}

/// Philox4x32-10 from the paper: rounds of two 32x32->64 multiplies, Weyl key schedule.
std::array<uint32_t, 4> philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  const uint64_t M0 = 0xD2511F53, M1 = 0xCD9E8D57;
  const uint32_t W0 = 0x9E3779B9, W1 = 0xBB67AE85;
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = M0 * c[0], p1 = M1 * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k = {k[0] + W0, k[1] + W1};
  }
  return c;
}
/// The 32-bit word of flat element i (shape_ops.h's mapping).
uint32_t word(uint64_t key, uint64_t counter, int64_t i) {
  auto b = static_cast<uint64_t>(i / 4);
  auto w = philox({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                   static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32)},
                  {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  return w[static_cast<size_t>(i % 4)];
}
Array uniform_ref(const Idx &shape, uint64_t key, uint64_t counter, double lo, double hi,
                  pto::DataType dt) {
  Array out = build(shape, [](const Idx &) { return 0.0; });
  for (int64_t i = 0; i < out.numel(); ++i) {
    double u = static_cast<double>(word(key, counter, i) >> 8) / 16777216.0;
    out.v[static_cast<size_t>(i)] = naive::round_to(lo + (hi - lo) * u, dt);
  }
  return out;
}
Array normal_ref(const Idx &shape, uint64_t key, uint64_t counter, double mean, double sd,
                 pto::DataType dt) {
  Array out = build(shape, [](const Idx &) { return 0.0; });
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t even = i - i % 2; // Box-Muller on the pair (word[even], word[even + 1])
    double u1 = (static_cast<double>(word(key, counter, even) >> 8) + 1) / 16777216.0;
    double u2 = static_cast<double>(word(key, counter, even + 1) >> 8) / 16777216.0;
    double r = std::sqrt(-2 * std::log(u1)), t = 2 * M_PI * u2;
    double z = i % 2 == 0 ? r * std::cos(t) : r * std::sin(t);
    out.v[static_cast<size_t>(i)] = naive::round_to(mean + sd * z, dt);
  }
  return out;
}

void check_all(const pto::HostTensor &a, const pto::HostTensor &b, const std::vector<Case> &cases) {
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      CHECK_MESSAGE(support::run_cases(m, a, b, cases, kTile) == "", "mode ",
                    support::mode_name(m));
    }
  }
}

/// The movement cases, over a [5, 37] and b [3, 37] of any dtype.
std::vector<Case> movement_cases(const Array &A, const Array &Bv, support::Tolerance tol) {
  Array X4 = reshaped(window(A, {4, 30}, {0, 0}), {2, 3, 4, 5});
  auto x4 = [](const T &a) { return pto::reshape(pto::view(a, {4, 30}, {0, 0}), {2, 3, 4, 5}); };
  auto same = [&](const Idx &shape) { return reshaped(A, shape); };
  return {
      {"reshape [37, 5]", [](T a, T) { return pto::reshape(a, {37, 5}); }, same({37, 5}), tol},
      {"reshape [-1]", [](T a, T) { return pto::reshape(a, {-1}); }, same({185}), tol},
      {"reshape [5, -1, 37]", [](T a, T) { return pto::reshape(a, {5, -1, 37}); }, same({5, 1, 37}),
       tol},
      {"unsqueeze 1", [](T a, T) { return pto::unsqueeze(a, 1); }, same({5, 1, 37}), tol},
      {"unsqueeze -1", [](T a, T) { return pto::unsqueeze(a, -1); }, same({5, 37, 1}), tol},
      {"squeeze all", [](T a, T) { return pto::squeeze(pto::unsqueeze(a, 0)); }, A, tol},
      {"squeeze dim 0 of a row",
       [](T a, T) { return pto::squeeze(pto::view(a, {1, 37}, {2, 0}), {0}); },
       reshaped(window(A, {1, 37}, {2, 0}), {37}), tol},
      {"expand a row", [](T a, T) { return pto::expand(pto::view(a, {1, 37}, {1, 0}), {4, 37}); },
       build({4, 37}, [&](const Idx &o) { return at(A, {1, o[1]}); }), tol},
      {"expand a column -1",
       [](T a, T) { return pto::expand(pto::view(a, {5, 1}, {0, 2}), {-1, 7}); },
       build({5, 7}, [&](const Idx &o) { return at(A, {o[0], 2}); }), tol},
      {"broadcast_to rank 3",
       [](T a, T) { return pto::broadcast_to(pto::view(a, {1, 37}, {0, 0}), {2, 3, 37}); },
       build({2, 3, 37}, [&](const Idx &o) { return at(A, {0, o[2]}); }), tol},
      {"transpose 0 1", [](T a, T) { return pto::transpose(a, 0, 1); },
       build({37, 5}, [&](const Idx &o) { return at(A, {o[1], o[0]}); }), tol},
      {"transpose rank 4 (1, 3)", [&](T a, T) { return pto::transpose(x4(a), 1, -1); },
       build({2, 5, 4, 3}, [&](const Idx &o) { return at(X4, {o[0], o[3], o[2], o[1]}); }), tol},
      {"permute rank 4", [&](T a, T) { return pto::permute(x4(a), {3, 1, 0, 2}); },
       build({5, 3, 2, 4}, [&](const Idx &o) { return at(X4, {o[2], o[1], o[3], o[0]}); }), tol},
      {"concat dim 0", [](T a, T b) { return pto::concat({a, b}, 0); },
       build({8, 37}, [&](const Idx &o) { return o[0] < 5 ? at(A, o) : at(Bv, {o[0] - 5, o[1]}); }),
       tol},
      {"concat three dim 1", [](T a, T) { return pto::concat({a, a, a}, 1); },
       build({5, 111}, [&](const Idx &o) { return at(A, {o[0], o[1] % 37}); }), tol},
      {"split 2 piece 1", [](T a, T) { return pto::split(a, 2, 0).at(1); },
       window(A, {2, 37}, {2, 0}), tol},
      {"split 2 piece 2 (tail)", [](T a, T) { return pto::split(a, 2, 0).at(2); },
       window(A, {1, 37}, {4, 0}), tol},
      {"split sizes piece 1", [](T a, T) { return pto::split(a, {10, 27}, -1).at(1); },
       window(A, {5, 27}, {0, 10}), tol},
      {"stack dim 1", [](T a, T) { return pto::stack({a, a}, 1); },
       build({5, 2, 37}, [&](const Idx &o) { return at(A, {o[0], o[2]}); }), tol},
      {"stack dim 0", [](T, T b) { return pto::stack({b, b, b}, 0); },
       build({3, 3, 37}, [&](const Idx &o) { return at(Bv, {o[1], o[2]}); }), tol},
      {"tile {2, 1}", [](T a, T) { return pto::tile(a, {2, 1}); },
       build({10, 37}, [&](const Idx &o) { return at(A, {o[0] % 5, o[1]}); }), tol},
      {"tile {2}", [](T a, T) { return pto::tile(a, {2}); },
       build({5, 74}, [&](const Idx &o) { return at(A, {o[0], o[1] % 37}); }), tol},
      {"tile {2, 2, 3} adds a dim",
       [](T a, T) { return pto::tile(pto::view(a, {2, 3}, {0, 0}), {2, 2, 3}); },
       build({2, 4, 9}, [&](const Idx &o) { return at(A, {o[1] % 2, o[2] % 3}); }), tol},
      {"pad right 3 with 1", [](T a, T) { return pto::pad(a, {0, 3}, 1); },
       build({5, 40}, [&](const Idx &o) { return o[1] < 37 ? at(A, o) : 1.0; }), tol},
      {"pad right 2 bottom 1", [](T a, T) { return pto::pad(a, {0, 2, 0, 1}); },
       build({6, 39}, [&](const Idx &o) { return o[0] < 5 && o[1] < 37 ? at(A, o) : 0.0; }), tol},
      {"tril", [](T a, T) { return pto::tril(a); },
       build({5, 37}, [&](const Idx &o) { return o[1] - o[0] <= 0 ? at(A, o) : 0.0; }), tol},
      {"triu 1", [](T a, T) { return pto::triu(a, 1); },
       build({5, 37}, [&](const Idx &o) { return o[1] - o[0] >= 1 ? at(A, o) : 0.0; }), tol},
      {"tril -2", [](T a, T) { return pto::tril(a, -2); },
       build({5, 37}, [&](const Idx &o) { return o[1] - o[0] <= -2 ? at(A, o) : 0.0; }), tol},
      {"triu 30 rank 3", [](T, T b) { return pto::triu(pto::unsqueeze(b, 0), 30); },
       build({1, 3, 37},
             [&](const Idx &o) { return o[2] - o[1] >= 30 ? at(Bv, {o[1], o[2]}) : 0.0; }),
       tol},
  };
}

} // namespace

TEST_CASE("philox4x32_10 reference matches Random123's known-answer vectors") {
  // Random123 kat_vectors, "philox4x32 10" lines: counter, key -> output.
  CHECK(philox({0, 0, 0, 0}, {0, 0}) ==
        std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}) ==
        std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("fp32 movement and creation ops match naive index loops") {
  auto a = naive::random_tensor(pto::DT_FP32, {5, 37}, 51);
  auto b = naive::random_tensor(pto::DT_FP32, {3, 37}, 52);
  Array A = naive::from(a), Bv = naive::from(b);
  support::Tolerance exact{};
  auto cases = movement_cases(A, Bv, exact);
  const uint64_t key = 0x0123456789abcdefull, ctr = 0xfeedface00000007ull;
  std::vector<Case> more = {
      {"ones fp32", [](T, T) { return pto::ones({3, 4}); },
       build({3, 4}, [](const Idx &) { return 1.0; }), exact},
      {"ones int32", [](T, T) { return pto::ones({2, 5}, pto::DT_INT32); },
       build({2, 5}, [](const Idx &) { return 1.0; }), exact},
      {"arange 10", [](T, T) { return pto::arange(10); },
       build({10}, [](const Idx &o) { return static_cast<double>(o[0]); }), exact},
      {"arange 2 11 3", [](T, T) { return pto::arange(2, 11, 3); }, Array{{3}, {2, 5, 8}}, exact},
      {"arange 5 -5 -3", [](T, T) { return pto::arange(5, -5, -3); }, Array{{4}, {5, 2, -1, -4}},
       exact},
      {"arange 0.5 3.0 0.25 fp32", [](T, T) { return pto::arange(0.5, 3.0, 0.25); },
       build({10}, [](const Idx &o) { return 0.5 + 0.25 * static_cast<double>(o[0]); }), exact},
      {"arange 0 1 0.1 fp32 rounded once", [](T, T) { return pto::arange(0.0, 1.0, 0.1); },
       build({10},
             [](const Idx &o) {
               return static_cast<double>(static_cast<float>(0.1 * static_cast<double>(o[0])));
             }),
       exact},
      {"uniform fp32", [=](T, T) { return pto::uniform({4, 37}, key, ctr); },
       uniform_ref({4, 37}, key, ctr, 0, 1, pto::DT_FP32), exact},
      {"uniform fp16 [-2, 3)",
       [=](T, T) {
         return pto::cast(pto::uniform({3, 5}, key, ctr + 1, pto::DT_FP16, {.low = -2, .high = 3}),
                          pto::DT_FP32);
       },
       uniform_ref({3, 5}, key, ctr + 1, -2, 3, pto::DT_FP16), exact},
      {"normal fp32", [=](T, T) { return pto::normal({6, 37}, key, ctr); },
       normal_ref({6, 37}, key, ctr, 0, 1, pto::DT_FP32), support::tolerance(pto::DT_FP32)},
      {"normal bf16 mean 1 std 2",
       [=](T, T) { return pto::normal({2, 9}, 7, 0, pto::DT_BF16, {.mean = 1, .std = 2}); },
       normal_ref({2, 9}, 7, 0, 1, 2, pto::DT_BF16), support::tolerance(pto::DT_BF16)},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  check_all(a, b, cases);
}

TEST_CASE("movement ops copy every dtype bit for bit") {
  for (pto::DataType dt : {pto::DT_FP16, pto::DT_INT8, pto::DT_INT64, pto::DT_BOOL}) {
    SUBCASE(pto::name(dt).c_str()) {
      auto a = naive::random_tensor(dt, {5, 37}, 61, -100, 100);
      auto b = naive::random_tensor(dt, {3, 37}, 62, -100, 100);
      auto all = movement_cases(naive::from(a), naive::from(b), {});
      // A few representative ones per dtype (fp32 above runs them all).
      std::vector<Case> cases;
      for (auto &c : all)
        if (c.name == "reshape [37, 5]" || c.name == "transpose rank 4 (1, 3)" ||
            c.name == "concat dim 0" || c.name == "expand a column -1" || c.name == "tile {2}" ||
            c.name == "pad right 2 bottom 1" || c.name == "triu 1")
          cases.push_back(c);
      check_all(a, b, cases);
    }
  }
}

TEST_CASE("random numbers do not depend on the tile shape, the run mode or the PE") {
  // The same (key, counter) under two tile shapes and both modes give the reference values.
  for (auto m : support::run_modes()) {
    for (std::vector<int64_t> tile : {std::vector<int64_t>{1, 8}, std::vector<int64_t>{4, 64}}) {
      pto::HostTensor y(pto::DT_FP32, {3, 50});
      auto k = pto::jit(
          "rng",
          [&](pto::Tensor ty) {
            pto::set_vec_tile_shapes(tile);
            pto::assemble(pto::uniform({3, 50}, 42, 9), {0, 0}, ty);
          },
          support::opts(m));
      k(y);
      CHECK(support::mismatch(y, uniform_ref({3, 50}, 42, 9, 0, 1, pto::DT_FP32), {}) == "");
    }
  }
}

TEST_CASE("tril with a run-time diagonal; reshape and concat of DYNAMIC dims") {
  auto x = naive::random_tensor(pto::DT_FP32, {6, 37}, 71);
  Array X = naive::from(x);
  for (auto m : support::run_modes()) {
    SUBCASE(support::mode_name(m)) {
      pto::HostTensor y(pto::DT_FP32, {6, 37}), z(pto::DT_FP32, {12, 37});
      auto k = pto::jit(
          "dyn",
          [](pto::Tensor tx, pto::Tensor ty, pto::Tensor tz) {
            pto::set_vec_tile_shapes(4, 16);
            pto::SymbolicScalar diag = tx.shape(0) - 4; // 2 at run time
            pto::assemble(pto::tril(tx, diag), {0, 0}, ty);
            pto::assemble(pto::concat({tx, tx}, 0), {0, 0}, tz);
          },
          support::opts(m, {{{pto::DYNAMIC, 37}}, {{pto::DYNAMIC, 37}}, {{pto::DYNAMIC, 37}}}));
      k(x, y, z);
      CHECK(support::mismatch(
                y, build({6, 37}, [&](const Idx &o) { return o[1] - o[0] <= 2 ? at(X, o) : 0.0; }),
                {}) == "");
      CHECK(support::mismatch(
                z, build({12, 37}, [&](const Idx &o) { return at(X, {o[0] % 6, o[1]}); }), {}) ==
            "");
    }
  }
}

TEST_CASE("shape_ops: bad shapes, dims and dtypes are typed errors naming the call site") {
  auto run = [](auto fn, pto::DataType dt = pto::DT_FP32) {
    pto::HostTensor x(dt, {4, 6}), y(pto::DT_INT32, {4, 6});
    auto k = pto::jit(
        "bad",
        [&](pto::Tensor t, pto::Tensor u) {
          pto::set_vec_tile_shapes(4, 8, 8, 8);
          fn(t, u);
        },
        support::opts(pto::RunMode::Interpret));
    k(x, y);
  };
  using doctest::Contains;
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::reshape(t, {5, 5}); }),
                       Contains("shape_ops_test.cpp:"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::reshape(t, {5, 5}); }),
                       Contains("reshape: cannot reshape [4, 6] (24 elements) into [5, 5]"),
                       pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::reshape(t, {-1, -1}); }),
                       Contains("only one dim may be -1"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::reshape(t, {5, -1}); }), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::reshape(t, {1, 2, 3, 4, 1}); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::unsqueeze(t, 3); }),
                       Contains("unsqueeze: dim 3 is out of range for rank 3"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::unsqueeze(pto::reshape(t, {1, 2, 3, 4}), 0); }),
                  pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::expand(t, {4, 7}); }),
                       Contains("expand: cannot expand [4, 6] to [4, 7]"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::transpose(t, 0, 2); }),
                       Contains("transpose: dim 2 is out of range for rank 2"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::permute(t, {0, 0}); }),
                       Contains("permute: dim 0 appears twice"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::permute(t, {1, 0, 2}); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T u) { pto::concat({t, u}, 0); }),
                       Contains("concat: tensor 1 has dtype"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::concat({t, pto::transpose(t, 0, 1)}, 0); }),
                       Contains("they may differ only in dim 0"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T, T) { pto::concat({}, 0); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::split(t, {1, 2}, 0); }),
                       Contains("split: piece sizes sum to 3, dim 0 has size 4"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::split(t, 0, 0); }), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::stack({t, pto::transpose(t, 0, 1)}, 0); }),
                  pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::tile(t, {0, 1}); }),
                       Contains("tile: repeats must be >= 1"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::pad(t, {1, 2}); }),
                       Contains("pad: only right/bottom padding"), pto::ShapeError);
  CHECK_THROWS_AS(run([](T t, T) { pto::pad(t, {0, 1, 0}); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T, T u) { pto::pad(u, {0, 1}, 0.5); }),
                       Contains("pad: non-integral value 0.5"), pto::DTypeError);
  CHECK_THROWS_WITH_AS(run([](T t, T) { pto::tril(pto::reshape(t, {24})); }),
                       Contains("tril: needs rank >= 2"), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T, T) { pto::arange(0, 10, 0); }),
                       Contains("arange: step must not be 0"), pto::ArgumentError);
  CHECK_THROWS_WITH_AS(run([](T, T) { pto::arange(5, 1); }), Contains("arange(5, 1, 1) is empty"),
                       pto::ShapeError);
  CHECK_THROWS_AS(run([](T, T) { pto::arange(0, int64_t{1} << 40); }), pto::ShapeError);
  CHECK_THROWS_WITH_AS(run([](T, T) { pto::uniform({4, 4}, 1, 2, pto::DT_INT32); }),
                       Contains("uniform: expected a floating dtype"), pto::DTypeError);
  CHECK_THROWS_AS(
      run([](T, T) { pto::uniform({4, 4}, 1, 2, pto::DT_FP32, {.low = 2, .high = 1}); }),
      pto::ArgumentError);
  CHECK_THROWS_AS(run([](T, T) { pto::normal({4, 4}, 1, 2, pto::DT_FP32, {.std = -1}); }),
                  pto::ArgumentError);
  CHECK_THROWS_AS(run([](T, T) { pto::ones({4, 0}); }), pto::ShapeError);
}
