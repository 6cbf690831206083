#pragma once
/// @file half.h
/// IEEE 754 binary16 <-> binary32 conversion (round to nearest even) usable on the host without
/// CUDA and on the device, and the HEADROOM_HD qualifier of the block math headers (quantblocks.h,
/// ggmlblocks.h): `__host__ __device__` under nvcc, plain inline under g++.

#include <cstdint>
#include <cstring>

#include <cmath>

#if defined(__CUDACC__)
#define HEADROOM_HD __host__ __device__ __forceinline__
#else
#define HEADROOM_HD inline
#endif

namespace headroom::formats {

// ---------------------------------------------------------------------------------------------
// fp16 <-> fp32 (IEEE 754 binary16, round to nearest even), usable on the host without CUDA
// ---------------------------------------------------------------------------------------------

/// The bits of @p value.
HEADROOM_HD std::uint32_t floatToBits(float value) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(value);
#else
    std::uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
#endif
}

/// The float whose bits are @p bits.
HEADROOM_HD float bitsToFloat(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
#endif
}

/// fp16 bits -> float, exact for every fp16 value (subnormals, infinities, NaN keep their class).
HEADROOM_HD float halfToFloat(std::uint16_t half) {
    const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
    const std::uint32_t exponent = (half >> 10) & 0x1fu;
    const std::uint32_t mantissa = half & 0x3ffu;
    if (exponent == 0) {
        // subnormal or zero: mantissa * 2^-24, exact in float
        const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31)
        return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
    return bitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/// float -> fp16 bits, round to nearest even; overflow gives infinity, NaN stays NaN.
HEADROOM_HD std::uint16_t floatToHalf(float value) {
    const std::uint32_t bits = floatToBits(value);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) // inf or NaN (quiet NaN keeps a mantissa bit)
        return static_cast<std::uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
    if (magnitude >= 0x477ff000u) // >= 65520 rounds to infinity
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (magnitude < 0x38800000u) { // below 2^-14: fp16 subnormal (or zero)
        // |value| * 2^24 is exact in float; rintf rounds half to even; 1024 becomes the smallest normal
        const float scaled = bitsToFloat(magnitude) * 16777216.0f;
        return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(rintf(scaled)));
    }
    std::uint32_t half = (magnitude >> 13) - (112u << 10); // rebias exponent 127 -> 15
    const std::uint32_t rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        ++half; // a carry into the exponent is the correct rounding
    return static_cast<std::uint16_t>(sign | half);
}

/// @p value rounded to the nearest fp16 value, as a float.
HEADROOM_HD float roundToHalf(float value) {
    return halfToFloat(floatToHalf(value));
}

} // namespace headroom::formats
