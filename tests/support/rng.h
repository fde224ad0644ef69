// rng.h - The seeded random source of the test generators (property_gen.cpp, fuzz_gen.cpp):
// a 64-bit Mersenne Twister with the few draws they use. Header-only; deterministic per seed on
// every platform the standard library's distributions agree on (libstdc++ here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace support {

class Rng {
public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  /// Uniform in [lo, hi] (both included).
  int64_t irand(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  /// Uniform in [lo, hi).
  double frand(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  /// True with probability p.
  bool coin(double p) { return frand(0, 1) < p; }
  /// One element of a non-empty `v`, uniformly.
  template <class T> T pick(const std::vector<T> &v) {
    return v[static_cast<size_t>(irand(0, static_cast<int64_t>(v.size()) - 1))];
  }
  /// An index drawn with the given weights.
  size_t weighted(const std::vector<double> &w) {
    return std::discrete_distribution<size_t>(w.begin(), w.end())(rng_);
  }
  /// The engine itself (std::shuffle).
  std::mt19937_64 &engine() { return rng_; }

private:
  std::mt19937_64 rng_;
};

} // namespace support
