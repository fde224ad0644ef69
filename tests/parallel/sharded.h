// sharded.h - Running a pto::parallel kernel on n PEs and on 1 PE (the oracle, docs/sharding.md)
// and comparing: every PE is given whole copies of the inputs and writes into its own output.
#pragma once

#include "pto/pto.h"
#include "pto/runtime/world.h"

#include "support/pe_world.h"
#include "support/support.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace sharded {

/// Deterministic values in [-1, 1) (a hash of index and seed), exactly representable in fp32.
inline pto::HostTensor data(const std::vector<int64_t> &shape, uint64_t seed,
                            pto::DataType dt = pto::DT_FP32) {
  pto::HostTensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t h = (uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
    h ^= h >> 31;
    t.set(i, double(int64_t(h % 2048) - 1024) / 1024.0);
  }
  return t;
}

/// The element-wise tolerance of a sharded result against the oracle: fp32 sums over a split
/// factor are reassociated (docs/sharding.md, "Determinism and tolerance"): with at most 64 O(1)
/// terms the difference is far below 1e-5 relative + 1e-5 absolute.
inline constexpr support::Tolerance kSumTolerance{1e-5, 1e-5};

/// The number of tensor inputs of a kernel function taking 1-3 inputs and then the output.
template <class Body>
inline constexpr int kInputs =
    std::is_invocable_v<Body, pto::Tensor, pto::Tensor>                             ? 1
    : std::is_invocable_v<Body, pto::Tensor, pto::Tensor, pto::Tensor>              ? 2
    : std::is_invocable_v<Body, pto::Tensor, pto::Tensor, pto::Tensor, pto::Tensor> ? 3
                                                                                    : 0;

/// Runs kernel `k` of N inputs (parameters: the inputs, then the output) on `world` with every
/// PE given `inputs` and a zeroed output of `out_shape`; returns the outputs, shared across ranks
/// (support::share) unless `local` (a threads World inside an MPI process: the oracle).
template <int N, class K>
std::vector<pto::HostTensor>
run(pto::runtime::World &world, int n, K &k, std::vector<pto::HostTensor> &inputs,
    const std::vector<int64_t> &out_shape, bool local = false, pto::DataType dt = pto::DT_FP32) {
  static_assert(N >= 1 && N <= 3, "kernels take 1-3 inputs");
  REQUIRE(inputs.size() == size_t(N));
  auto outs = support::tensors(n, dt, out_shape);
  world.run([&](int pe) {
    auto &y = outs[size_t(pe)];
    if constexpr (N == 1)
      k(inputs[0], y);
    else if constexpr (N == 2)
      k(inputs[0], inputs[1], y);
    else
      k(inputs[0], inputs[1], inputs[2], y);
  });
  if (!local)
    support::share(outs);
  return outs;
}

/// The largest |a - b| - tol(b) over the elements (<= 0 when all are within tolerance); the
/// index of the worst element in `worst`.
inline double excess(const pto::HostTensor &got, const pto::HostTensor &want,
                     support::Tolerance tol, int64_t &worst) {
  double e = -1;
  worst = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.get(i), w = want.get(i);
    const double d = std::fabs(g - w) - (tol.rel * std::fabs(w) + tol.abs);
    if (d > e || std::isnan(g) != std::isnan(w)) {
      e = std::isnan(g) != std::isnan(w) ? 1e300 : d;
      worst = i;
    }
  }
  return e;
}

/// CHECKs that every PE's output equals the oracle's within `tol` (bitwise for tol {0, 0}).
inline void check_all(const std::vector<pto::HostTensor> &outs, const pto::HostTensor &oracle,
                      support::Tolerance tol) {
  for (size_t p = 0; p < outs.size(); ++p) {
    int64_t worst = -1;
    const double e = excess(outs[p], oracle, tol, worst);
    CAPTURE(p);
    CAPTURE(worst);
    CHECK_MESSAGE(e <= 0, "PE " << p << " element " << worst << ": got " << outs[p].get(worst)
                                << ", oracle " << oracle.get(worst));
  }
}

/// The tile shapes every test kernel sets first (local slices may be smaller: tails are masked).
inline void tiles() {
  pto::set_vec_tile_shapes(8, 16);
  pto::set_cube_tile_shapes({16, 16}, {16, 16}, {16, 16});
}

/// Runs `body` (a kernel function: the inputs, then the output) in every run mode (or `modes`) on a
/// 1-PE world (the oracle) and on `n` PEs, and CHECKs that every PE's output equals the oracle's.
template <class Body>
void against_oracle(const char *name, int n, const Body &body, std::vector<pto::HostTensor> inputs,
                    const std::vector<int64_t> &out_shape, support::Tolerance tol,
                    const std::vector<pto::RunMode> &modes = support::run_modes()) {
  for (auto mode : modes) {
    CAPTURE(support::mode_name(mode));
    auto k = pto::jit(name, body, support::opts(mode));
    pto::runtime::World one(1);
    auto oracle = run<kInputs<Body>>(one, 1, k, inputs, out_shape, true);
    auto world = support::make_world(n);
    auto outs = run<kInputs<Body>>(*world, n, k, inputs, out_shape);
    check_all(outs, oracle[0], tol);
  }
}

} // namespace sharded
