// matmul_check.h - what the matmul tests share: a case (dtypes, shapes, transposes, bias, relu,
// cube tile), its run as a kernel in one run mode, and the comparison with naive::matmul (a double
// triple loop) within a tolerance grown with K. Used by matmul_test.cpp (both executors, also
// linked into test_interp) and matmul_kernel_test.cpp (the JIT kernel's blocking).
#pragma once

#include "pto/pto.h"

#include "support/naive.h"
#include "support/support.h"

#include <string>
#include <utility>
#include <vector>

namespace matmul_check {

struct Case {
  pto::DataType in = pto::DT_FP32, out = pto::DT_FP32;
  std::vector<int64_t> a_shape, b_shape; ///< as stored (already transposed when *_trans)
  bool a_trans = false, b_trans = false, relu = false;
  int bias_rank = 0;                                    ///< 0: no bias; 1: [N]; 2: [1, N]
  std::vector<int64_t> m{16, 32}, k{16, 32}, n{16, 32}; ///< the cube tile
};

/// Tolerance of a K-long dot product of inputs in [-1, 1]: the table's, with the absolute term
/// grown by K (the fp32 accumulation error grows with the number of terms, and results that
/// cancel to near zero have no meaningful relative error).
inline support::Tolerance mm_tolerance(pto::DataType out, int64_t K) {
  auto t = support::tolerance(out);
  if (out == pto::DT_FP32)
    t.abs = 1e-6 * static_cast<double>(K);
  return t;
}

inline std::vector<int64_t> out_shape(const Case &c) {
  size_t r = c.a_shape.size();
  std::vector<int64_t> s;
  for (size_t d = 0; d + 2 < r; ++d)
    s.push_back(std::max(c.a_shape[d], c.b_shape[d]));
  s.push_back(c.a_trans ? c.a_shape[r - 1] : c.a_shape[r - 2]);
  s.push_back(c.b_trans ? c.b_shape[r - 2] : c.b_shape[r - 1]);
  return s;
}

/// A vec tile of the output's rank for the final assemble.
inline std::vector<int64_t> vec_tile(size_t rank) {
  std::vector<int64_t> t(rank, 1);
  t[rank - 2] = 16;
  t[rank - 1] = 64;
  return t;
}

inline std::vector<pto::SymbolicScalar> origin(size_t rank) {
  return std::vector<pto::SymbolicScalar>(rank, pto::SymbolicScalar(0));
}

/// Runs the case as a kernel and compares it with naive::matmul; "" when it matches. The result
/// is also copied to `*got` when given.
inline std::string check(const Case &c, pto::RunMode mode, uint64_t seed,
                         pto::HostTensor *got = nullptr) {
  bool is_int = c.in == pto::DT_INT8;
  double lo = is_int ? -128 : -1, hi = is_int ? 127 : 1;
  auto a = naive::random_tensor(c.in, c.a_shape, seed, lo, hi);
  auto b = naive::random_tensor(c.in, c.b_shape, seed + 1, lo, hi);
  auto shape = out_shape(c);
  int64_t N = shape.back();
  std::vector<int64_t> bias_shape =
      c.bias_rank == 1 ? std::vector<int64_t>{N} : std::vector<int64_t>{1, N};
  auto bias =
      naive::random_tensor(c.out, bias_shape, seed + 2, is_int ? -1000 : -1, is_int ? 1000 : 1);
  pto::HostTensor y(c.out, shape);
  pto::MatmulOptions o{.a_trans = c.a_trans, .b_trans = c.b_trans, .relu = c.relu};
  auto setup = [&] {
    pto::set_cube_tile_shapes(c.m, c.k, c.n);
    pto::set_vec_tile_shapes(vec_tile(shape.size()));
  };
  if (c.bias_rank == 0) {
    auto k = pto::jit(
        "mm",
        [&](pto::Tensor ta, pto::Tensor tb, pto::Tensor ty) {
          setup();
          pto::assemble(pto::matmul(ta, tb, c.out, o), origin(shape.size()), ty);
        },
        support::opts(mode));
    k(a, b, y);
  } else {
    auto k = pto::jit(
        "mm_bias",
        [&](pto::Tensor ta, pto::Tensor tb, pto::Tensor tbias, pto::Tensor ty) {
          setup();
          auto oo = o;
          oo.bias = tbias;
          pto::assemble(pto::matmul(ta, tb, c.out, oo), origin(shape.size()), ty);
        },
        support::opts(mode));
    k(a, b, bias, y);
  }
  auto nb = naive::from(bias);
  auto want = naive::matmul(naive::from(a), naive::from(b), c.a_trans, c.b_trans,
                            c.bias_rank ? &nb : nullptr, c.relu);
  int64_t K = c.a_trans ? c.a_shape[c.a_shape.size() - 2] : c.a_shape.back();
  if (got)
    *got = y;
  return support::mismatch(y, want, mm_tolerance(c.out, K));
}

inline const std::pair<pto::DataType, pto::DataType> kPairs[] = {
    {pto::DT_FP32, pto::DT_FP32}, {pto::DT_FP16, pto::DT_FP16}, {pto::DT_FP16, pto::DT_FP32},
    {pto::DT_BF16, pto::DT_BF16}, {pto::DT_BF16, pto::DT_FP32}, {pto::DT_INT8, pto::DT_INT32}};

inline std::string pair_name(pto::DataType in, pto::DataType out) {
  return pto::name(in) + "->" + pto::name(out);
}

/// fp32, bf16 (vdpbf16ps where the target has AVX512_BF16), int8 and a narrow output (partial
/// sums in scratch instead of C).
inline const std::pair<pto::DataType, pto::DataType> kKernelPairs[] = {
    {pto::DT_FP32, pto::DT_FP32},
    {pto::DT_BF16, pto::DT_FP32},
    {pto::DT_INT8, pto::DT_INT32},
    {pto::DT_BF16, pto::DT_BF16}};

inline Case kernel_case(pto::DataType in, pto::DataType out, int64_t M, int64_t K, int64_t N,
                        bool at, bool bt) {
  Case c;
  c.in = in;
  c.out = out;
  c.a_trans = at;
  c.b_trans = bt;
  c.a_shape = at ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
  c.b_shape = bt ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
  return c;
}

} // namespace matmul_check
