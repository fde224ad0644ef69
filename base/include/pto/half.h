// half.h - Bit-exact conversions between fp32/fp64/int64 and the 16-bit float formats fp16
// (IEEE 754 binary16) and bf16 (bfloat16), rounding once to nearest even. Used by put/get dtype
// conversion and fp16/bf16 atomic ADD; header-only so the reference interpreter can share the
// exact rounding.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace pto {

/// fp16 bits -> fp32. Exact for every input (subnormals, +-0, +-inf); NaN stays NaN with its
/// sign and payload (quiet).
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) // inf or NaN: keep the payload, force quiet
    return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u));
  if (exp == 0) { // zero or subnormal: mant * 2^-24, exact in fp32
    const float v = float(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// fp32 -> fp16 bits, round to nearest even. Values at or above 65520 round to inf; NaN maps to
/// a quiet NaN of the same sign. Relies on the default floating-point rounding mode.
inline uint16_t fp32_to_fp16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) // inf or NaN
    return uint16_t(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u | ((x >> 13) & 0x3ffu) : 0u));
  if (x >= 0x477ff000u) // >= 65520: the halfway point above 65504 rounds (to even) to inf
    return uint16_t(sign | 0x7c00u);
  if (x < 0x38800000u) { // below 2^-14: fp16 subnormal or zero
    // Adding 0.5 puts the value in a binade whose ulp is 2^-24, so the FPU rounds it (to nearest
    // even) exactly as fp16 would; the low mantissa bits are then the fp16 subnormal.
    const float shifted = std::bit_cast<float>(x) + 0.5f;
    return uint16_t(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd; // rebias the exponent (127 -> 15) and round to nearest even
  return uint16_t(sign | (x >> 13));
}

/// bf16 bits -> fp32. Exact.
inline float bf16_to_fp32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

/// fp32 -> bf16 bits, round to nearest even; overflow rounds to inf, NaN stays a quiet NaN.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// fp64 -> fp32 rounded to odd (truncate, then set the last bit if inexact). Rounding that
/// result to nearest even in a format with at least 2 fewer significand bits (fp16, bf16) gives
/// the correctly rounded fp64 -> fp16/bf16 result, which double rounding through fp32 would not.
inline float fp64_to_fp32_round_to_odd(double d) {
  float f = float(d);
  if (!std::isfinite(d) || double(f) == d)
    return f;
  if (std::fabs(double(f)) > std::fabs(d)) // rounded away from zero: step back towards zero
    f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

/// int64 -> fp32 rounded to odd: exact below 2^24 in magnitude, else truncated to 24
/// significant bits with the last one set when bits were dropped. Rounding that to nearest even
/// in fp16 or bf16 gives the correctly rounded int64 -> fp16/bf16 result, which rounding through
/// fp32 (or fp64, above 2^53) to nearest would not: 16842753 = 2^24 + 2^16 + 1 is bf16 16908288
/// (2^24 + 2^17), but fp32 first rounds it to the tie 2^24 + 2^16, which bf16 rounds to 2^24.
inline float int64_to_fp32_round_to_odd(int64_t v) {
  const bool neg = v < 0;
  const uint64_t m = neg ? 0 - uint64_t(v) : uint64_t(v); // |INT64_MIN| = 2^63 fits
  if (m < (uint64_t{1} << 24))
    return neg ? -float(m) : float(m);
  const int drop = 64 - std::countl_zero(m) - 24;
  uint64_t kept = m >> drop;
  if ((m & ((uint64_t{1} << drop) - 1)) != 0)
    kept |= 1;
  const float f = std::ldexp(float(kept), drop); // exact: kept < 2^24, drop <= 40
  return neg ? -f : f;
}

/// int64 -> fp16 bits, correctly rounded to nearest even (65520 and above: inf).
inline uint16_t int64_to_fp16(int64_t v) { return fp32_to_fp16(int64_to_fp32_round_to_odd(v)); }
/// int64 -> bf16 bits, correctly rounded to nearest even.
inline uint16_t int64_to_bf16(int64_t v) { return fp32_to_bf16(int64_to_fp32_round_to_odd(v)); }

/// fp64 -> fp16 bits, correctly rounded to nearest even.
inline uint16_t fp64_to_fp16(double d) { return fp32_to_fp16(fp64_to_fp32_round_to_odd(d)); }
/// fp64 -> bf16 bits, correctly rounded to nearest even.
inline uint16_t fp64_to_bf16(double d) { return fp32_to_bf16(fp64_to_fp32_round_to_odd(d)); }

} // namespace pto
