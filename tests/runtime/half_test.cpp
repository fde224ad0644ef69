// half_test.cpp - fp16/bf16 conversions (pto/half.h) against published encodings and a
// brute-force nearest-value search over a naive decoder.
#include "pto/half.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace pto;

namespace {
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16 decoded by the textbook formula, in double (independent of half.h).
double naive_fp16(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return s ? -mag : mag;
}
} // namespace

TEST_CASE("fp16: published encodings (IEEE 754 binary16)") {
  CHECK(fp32_to_fp16(1.0f) == 0x3c00);
  CHECK(fp32_to_fp16(-2.0f) == 0xc000);
  CHECK(fp32_to_fp16(65504.0f) == 0x7bff);              // largest finite
  CHECK(fp32_to_fp16(65520.0f) == 0x7c00);              // midpoint rounds (to even) to inf
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -14)) == 0x0400); // smallest normal
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001); // smallest subnormal
  CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000); // half of it: tie to even (0)
  CHECK(fp32_to_fp16(std::ldexp(3.0f, -25)) == 0x0002); // 1.5 ulp: tie to even (2)
  CHECK(fp32_to_fp16(-0.0f) == 0x8000);
  CHECK(fp32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK((fp32_to_fp16(std::nanf("")) & 0x7c00) == 0x7c00);
  CHECK((fp32_to_fp16(std::nanf("")) & 0x03ff) != 0);
  CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00); // tie between 1 and 1+2^-10
  CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(fp16_to_fp32(0x3555) == float_of(0x3eaaa000)); // 0.333251953125
  CHECK(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(std::isnan(fp16_to_fp32(0x7e00)));
  CHECK(std::signbit(fp16_to_fp32(0x8000)));
}

TEST_CASE("fp16: every finite value round-trips and matches the naive decoder") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00)
      continue;
    CAPTURE(h);
    REQUIRE(double(fp16_to_fp32(uint16_t(h))) == naive_fp16(uint16_t(h)));
    REQUIRE(fp32_to_fp16(fp16_to_fp32(uint16_t(h))) == h);
  }
}

TEST_CASE("fp16: random floats round to the nearest value, ties to even") {
  std::vector<std::pair<double, uint16_t>> table; // positive finite values, ascending
  for (uint16_t h = 0; h < 0x7c00; ++h)
    table.emplace_back(naive_fp16(h), h);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-26.0, 16.0);
  for (int i = 0; i < 20000; ++i) {
    const float f = float(std::exp2(exponent(rng)));
    auto it = std::lower_bound(table.begin(), table.end(), std::pair<double, uint16_t>{f, 0});
    uint16_t want;
    if (it == table.end()) {
      want = f >= 65520.0 ? 0x7c00 : 0x7bff;
    } else if (it == table.begin() || it->first == f) {
      want = it->second;
    } else {
      const auto lo = *(it - 1), hi = *it;
      const double dl = f - lo.first, dh = hi.first - f;
      want = dl < dh   ? lo.second
             : dh < dl ? hi.second
                       : (lo.second % 2 == 0 ? lo.second : hi.second);
    }
    CAPTURE(f);
    REQUIRE(fp32_to_fp16(f) == want);
    REQUIRE(fp32_to_fp16(-f) == (want | 0x8000));
  }
}

TEST_CASE("bf16: published encodings and round to nearest even") {
  CHECK(fp32_to_bf16(1.0f) == 0x3f80);
  CHECK(fp32_to_bf16(-2.0f) == 0xc000);
  CHECK(fp32_to_bf16(float_of(0x3f808000)) == 0x3f80); // tie, even stays
  CHECK(fp32_to_bf16(float_of(0x3f818000)) == 0x3f82); // tie, odd rounds up
  CHECK(fp32_to_bf16(float_of(0x3f808001)) == 0x3f81); // above the tie
  CHECK(fp32_to_bf16(float_of(0x7f7fffff)) == 0x7f80); // FLT_MAX overflows to inf
  CHECK(fp32_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::nanf("")))));
  CHECK(fp32_to_bf16(float_of(0x00010000)) == 0x0001); // subnormal keeps its bits
  CHECK(bits_of(bf16_to_fp32(0x4049)) == 0x40490000u);
}

TEST_CASE("fp64 -> fp16/bf16 rounds once, not twice through fp32") {
  // 1 + 2^-11 + 2^-40: just above the fp16 tie between 1 and 1 + 2^-10, so it rounds up. Through
  // fp32 (RNE) the 2^-40 is lost, the tie remains, and ties-to-even would wrongly give 1.0.
  CHECK(fp64_to_fp16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) == 0x3c01);
  CHECK(fp64_to_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)) == 0x3f81);
  CHECK(fp64_to_fp16(1e300) == 0x7c00);
  CHECK(fp64_to_bf16(-1e300) == 0xff80);
}
