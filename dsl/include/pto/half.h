// half.h - IEEE 754 binary16 (fp16) and bfloat16 conversions to and from fp32, rounding to
// nearest even (IEEE 754 roundTiesToEven); NaN stays NaN, overflow goes to infinity.
// Header-only: the runtime, the interpreter and host tensors share these.
#pragma once

#include <cstdint>
#include <cstring>

namespace pto {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// bfloat16 bits -> fp32 (exact).
inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

/// fp32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// IEEE binary16 bits -> fp32 (exact, subnormals included).
inline float fp16_to_float(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f)
    return bits_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return bits_float(sign);
    float v = static_cast<float>(man) * (1.0f / 16777216.0f); // man * 2^-24
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

/// fp32 -> IEEE binary16 bits, round to nearest even; overflow -> inf; NaN stays NaN.
inline uint16_t float_to_fp16(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // rounds to >= 65520: infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < 0x38800000u) { // below the smallest normal half (2^-14): subnormal or zero
    // Scale to units of 2^-24 and let the FPU round to nearest even.
    float v = bits_float(a) * 16777216.0f;
    float r = v + 12582912.0f - 12582912.0f; // 1.5 * 2^23: rounds v to an integer, ties to even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  uint32_t mant_odd = (a >> 13) & 1u;
  a += 0xfffu + mant_odd;
  return static_cast<uint16_t>(sign | ((a - 0x38000000u) >> 13));
}

} // namespace pto
