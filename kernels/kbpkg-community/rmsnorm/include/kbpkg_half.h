/* Host-side bf16/fp16 <-> float conversions (plain C), used by CPU builds and the checks. */
#ifndef KBPKG_HALF_H
#define KBPKG_HALF_H

#include <stdint.h>
#include <string.h>

static inline float kbpkg_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t kbpkg_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float kbpkg_bf16_to_f32(uint16_t h)
{
    return kbpkg_bits_to_f32((uint32_t)h << 16);
}

/* Round to nearest even, NaN stays a quiet NaN (same rule as the device code). */
static inline uint16_t kbpkg_f32_to_bf16(float f)
{
    uint32_t u = kbpkg_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float kbpkg_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) /* inf or NaN */
        return kbpkg_bits_to_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0)
            return kbpkg_bits_to_f32(sign);
        /* subnormal: value = mant * 2^-24 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return kbpkg_bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* Round to nearest even, with overflow to inf and gradual underflow. */
static inline uint16_t kbpkg_f32_to_f16(float f)
{
    uint32_t u = kbpkg_f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* rounds to >= 65520: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        float v = kbpkg_bits_to_f32(a) * 16777216.0f; /* in units of 2^-24 */
        uint32_t q = (uint32_t)v;
        float rem = v - (float)q;
        if (rem > 0.5f || (rem == 0.5f && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t exp = (a >> 23) - 112u;
    uint32_t mant = a & 0x7fffffu;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

#endif
