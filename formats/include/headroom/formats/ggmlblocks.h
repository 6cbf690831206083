#pragma once
/// @file ggmlblocks.h
/// Block math of the GGML weight types q8_0, q4_0, q4_K and q6_K as GGUF files store them, so a
/// GGUF's weights run as stored: byte layout, one-weight decode, quantizers, the quantization of
/// the activations to int8 blocks and the integer dot product of one weight block with them.
/// Shared by the CPU reference, the fast CPU kernels (scalar fallback) and the CUDA kernels
/// (HEADROOM_HD); no standard-library container.
///
/// Source (read, not copied): ggml commit d99724f2 (2026-08-21):
/// - layouts: `block_q8_0`, `block_q4_0`, `block_q4_K`, `block_q6_K`, `block_q8_K` in
///   `src/ggml-common.h` (QK8_0 = QK4_0 = 32, QK_K = 256, K_SCALE_SIZE = 12);
/// - decode: `dequantize_row_q8_0/q4_0/q4_K/q6_K` and `get_scale_min_k4` in `src/ggml-quants.c`;
/// - quantizers: `quantize_row_q8_0_ref`, `quantize_row_q4_0_ref` (reproduced exactly: the
///   same codes and fp16 scales), `quantize_row_q4_K_ref`, `quantize_row_q6_K_ref` (their
///   outer procedure; the inner scale searches `make_qkx2_quants`/`make_qx_quants` are replaced
///   by their starting point, so q4_K/q6_K blocks are valid ggml blocks with a slightly larger
///   error than llama-quantize writes);
/// - dots: `ggml_vec_dot_q8_0_q8_0_generic`, `ggml_vec_dot_q4_0_q8_0_generic`,
///   `ggml_vec_dot_q4_K_q8_K_generic`, `ggml_vec_dot_q6_K_q8_K_generic` in
///   `src/ggml-cpu/quants.c` (AVX2 forms in `src/ggml-cpu/arch/x86/quants.c`): the weight codes
///   times int8 activations summed in int32, scaled once per block. Activations of q8_0/q4_0 are
///   q8_0 blocks (d = max|x| / 127 as fp16, q = roundf(x / d), per 32); those of q4_K/q6_K are
///   q8_K blocks (one fp32 d per 256 with q = nearest(-127 x / max), and the code sums of every
///   16 (`bsums`), which carry the q4_K minimums and the q6_K code offset of 32).
///
/// Layouts (bytes of one block; a row of K weights is K / blockWeights blocks back to back):
/// - q8_0 (34 B / 32 w): fp16 d, int8 qs[32]; w_i = d qs[i].
/// - q4_0 (18 B / 32 w): fp16 d, qs[16]; w_i = d ((qs[i] & 15) - 8) for i < 16,
///   d ((qs[i - 16] >> 4) - 8) for i >= 16 (halves, not pairs).
/// - q4_K (144 B / 256 w): fp16 d, fp16 dmin, scales[12] (eight 6-bit scales sc_j and minimums
///   m_j, packed as get_scale_min_k4 reads them), qs[128]; sub-block j = i / 32 of 32 weights:
///   w_i = d sc_j q_i - dmin m_j, q_i the low nibble of qs[32 (j / 2) + i % 32] for even j and
///   the high nibble for odd j.
/// - q6_K (210 B / 256 w): ql[128], qh[64], int8 scales[16], fp16 d; w_i = d scales[i / 16]
///   (q_i - 32), q_i six bits: within each half of 128 (ql + 64 h, qh + 32 h), weight 32 c + l
///   (c = 0..3, l < 32) has its low 4 bits in ql[l + 32 (c & 1)] (low nibble for c < 2, high for
///   c >= 2) and its high 2 bits at bit 2c of qh[l].

#include "headroom/formats/ggmltypes.h"
#include "headroom/formats/half.h"

#include <cstdint>
#include <cstring>

#include <cmath>

namespace headroom::formats {

/// Weights per q8_0 / q4_0 block (QK8_0 = QK4_0).
inline constexpr std::uint32_t kQ8_0BlockWeights = 32;
/// Weights per q4_K / q6_K super-block (QK_K).
inline constexpr std::uint32_t kQkK = 256;
inline constexpr std::uint32_t kQ8_0BlockBytes = 34;  ///< sizeof(block_q8_0)
inline constexpr std::uint32_t kQ4_0BlockBytes = 18;  ///< sizeof(block_q4_0)
inline constexpr std::uint32_t kQ4_KBlockBytes = 144; ///< sizeof(block_q4_K)
inline constexpr std::uint32_t kQ6_KBlockBytes = 210; ///< sizeof(block_q6_K)

static_assert(kGgmlTypes[8].blockSize == kQ8_0BlockWeights && kGgmlTypes[8].typeSize == kQ8_0BlockBytes, "q8_0");
static_assert(kGgmlTypes[2].blockSize == kQ8_0BlockWeights && kGgmlTypes[2].typeSize == kQ4_0BlockBytes, "q4_0");
static_assert(kGgmlTypes[12].blockSize == kQkK && kGgmlTypes[12].typeSize == kQ4_KBlockBytes, "q4_K");
static_assert(kGgmlTypes[14].blockSize == kQkK && kGgmlTypes[14].typeSize == kQ6_KBlockBytes, "q6_K");

// Byte offsets inside the blocks (ggml-common.h member order).
inline constexpr std::uint32_t kQ4_KScalesOffset = 4;   ///< after d, dmin
inline constexpr std::uint32_t kQ4_KQsOffset = 16;      ///< after the 12 scale bytes
inline constexpr std::uint32_t kQ6_KQhOffset = 128;     ///< after ql[128]
inline constexpr std::uint32_t kQ6_KScalesOffset = 192; ///< after qh[64]
inline constexpr std::uint32_t kQ6_KDOffset = 208;      ///< after scales[16]
static_assert(kQ4_KQsOffset + kQkK / 2 == kQ4_KBlockBytes, "q4_K: d, dmin, scales[12], qs[128]");
static_assert(kQ6_KDOffset + 2 == kQ6_KBlockBytes, "q6_K: ql[128], qh[64], scales[16], d");

/// The fp16 value stored at @p p (unaligned, little-endian as GGUF).
HEADROOM_HD float loadHalfAt(const std::uint8_t* p) {
    std::uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return halfToFloat(h);
}

/// Stores @p value as fp16 at @p p; returns the stored value as a float.
HEADROOM_HD float storeHalfAt(std::uint8_t* p, float value) {
    const std::uint16_t h = floatToHalf(value);
    std::memcpy(p, &h, sizeof h);
    return halfToFloat(h);
}

/// ggml's nearest_int (round half away from zero for the magnitudes used here).
HEADROOM_HD int nearestInt(float value) {
    return static_cast<int>(roundf(value));
}

/// The value of largest magnitude among @p w [@p n], with its sign (the first one on a tie; 0 for
/// all zeros): the `max` of ggml's q4_0, q6_K and q8_K quantizers.
HEADROOM_HD float signedAbsMax(const float* w, std::uint32_t n) {
    float amax = 0.0f, max = 0.0f;
    for (std::uint32_t j = 0; j < n; ++j)
        if (amax < fabsf(w[j])) {
            amax = fabsf(w[j]);
            max = w[j];
        }
    return max;
}

// ---------------------------------------------------------------------------------------------
// Decode one weight
// ---------------------------------------------------------------------------------------------

/// Weight @p i (< 32) of a q8_0 block.
HEADROOM_HD float q8_0Weight(const std::uint8_t* block, std::uint32_t i) {
    return loadHalfAt(block) * static_cast<float>(static_cast<std::int8_t>(block[2 + i]));
}

/// The code (0..15) of weight @p i (< 32) of a q4_0 block.
HEADROOM_HD int q4_0Code(const std::uint8_t* block, std::uint32_t i) {
    const std::uint8_t byte = block[2 + (i & 15u)];
    return i < 16 ? (byte & 15) : (byte >> 4);
}

/// Weight @p i (< 32) of a q4_0 block.
HEADROOM_HD float q4_0Weight(const std::uint8_t* block, std::uint32_t i) {
    return loadHalfAt(block) * static_cast<float>(q4_0Code(block, i) - 8);
}

/// The 6-bit scale @p sc and minimum @p m of sub-block @p j (< 8) from the 12 scale bytes
/// (ggml get_scale_min_k4).
HEADROOM_HD void q4_KScaleMin(const std::uint8_t* scales, std::uint32_t j, int& sc, int& m) {
    if (j < 4) {
        sc = scales[j] & 63;
        m = scales[j + 4] & 63;
    } else {
        sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4);
        m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
}

/// The code (0..15) of weight @p i (< 256) of a q4_K block.
HEADROOM_HD int q4_KCode(const std::uint8_t* block, std::uint32_t i) {
    const std::uint32_t j = i / 32;
    const std::uint8_t byte = block[kQ4_KQsOffset + 32 * (j / 2) + i % 32];
    return (j & 1u) ? (byte >> 4) : (byte & 15);
}

/// Weight @p i (< 256) of a q4_K block.
HEADROOM_HD float q4_KWeight(const std::uint8_t* block, std::uint32_t i) {
    int sc = 0, m = 0;
    q4_KScaleMin(block + kQ4_KScalesOffset, i / 32, sc, m);
    return loadHalfAt(block) * static_cast<float>(sc) * static_cast<float>(q4_KCode(block, i)) -
           loadHalfAt(block + 2) * static_cast<float>(m);
}

/// The signed code (-32..31) of weight @p i (< 256) of a q6_K block.
HEADROOM_HD int q6_KCode(const std::uint8_t* block, std::uint32_t i) {
    const std::uint32_t half = i / 128, c = (i % 128) / 32, l = i % 32;
    const std::uint8_t low = block[64 * half + l + 32 * (c & 1u)];
    const std::uint8_t high = block[kQ6_KQhOffset + 32 * half + l];
    const int q = (c < 2 ? (low & 15) : (low >> 4)) | (((high >> (2 * c)) & 3) << 4);
    return q - 32;
}

/// Weight @p i (< 256) of a q6_K block.
HEADROOM_HD float q6_KWeight(const std::uint8_t* block, std::uint32_t i) {
    const auto scale = static_cast<std::int8_t>(block[kQ6_KScalesOffset + i / 16]);
    return loadHalfAt(block + kQ6_KDOffset) * static_cast<float>(scale) * static_cast<float>(q6_KCode(block, i));
}

// ---------------------------------------------------------------------------------------------
// Quantize one block
// ---------------------------------------------------------------------------------------------

/// q8_0 block of @p w [32]: d = max|w| / 127 stored as fp16, q = roundf(w / d) with the unrounded
/// d (quantize_row_q8_0_ref).
HEADROOM_HD void quantizeQ8_0Block(const float* w, std::uint8_t* block) {
    float amax = 0.0f;
    for (std::uint32_t j = 0; j < kQ8_0BlockWeights; ++j)
        amax = fabsf(w[j]) > amax ? fabsf(w[j]) : amax;
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    storeHalfAt(block, d);
    for (std::uint32_t j = 0; j < kQ8_0BlockWeights; ++j)
        block[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(roundf(w[j] * id)));
}

/// q4_0 block of @p w [32]: max = the weight of largest magnitude (with its sign), d = max / -8,
/// code = min(15, (int8)(w / d + 8.5)) (quantize_row_q4_0_ref).
HEADROOM_HD void quantizeQ4_0Block(const float* w, std::uint8_t* block) {
    const float d = signedAbsMax(w, kQ8_0BlockWeights) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    storeHalfAt(block, d);
    for (std::uint32_t j = 0; j < 16; ++j) {
        const int lo = static_cast<std::int8_t>(w[j] * id + 8.5f);
        const int hi = static_cast<std::int8_t>(w[j + 16] * id + 8.5f);
        block[2 + j] = static_cast<std::uint8_t>((lo < 15 ? lo : 15) | ((hi < 15 ? hi : 15) << 4));
    }
}

/// q4_K block of @p w [256]: per sub-block of 32 the range [min(0, min w), max w] in 15 steps
/// (scale s_j, minimum -min), d = max s_j / 63, dmin = max minimum / 63 (fp16), 6-bit sc_j and
/// m_j rounded, then code = clamp(nearest((w + dmin m_j) / (d sc_j)), 0, 15) as
/// quantize_row_q4_K_ref's final pass.
HEADROOM_HD void quantizeQ4_KBlock(const float* w, std::uint8_t* block) {
    float scale[8], minimum[8], maxScale = 0.0f, maxMin = 0.0f;
    for (std::uint32_t j = 0; j < 8; ++j) {
        float lo = 0.0f, hi = w[32 * j];
        for (std::uint32_t l = 0; l < 32; ++l) {
            const float v = w[32 * j + l];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        scale[j] = hi > lo ? (hi - lo) / 15.0f : 0.0f;
        minimum[j] = -lo;
        maxScale = scale[j] > maxScale ? scale[j] : maxScale;
        maxMin = minimum[j] > maxMin ? minimum[j] : maxMin;
    }
    const float d = storeHalfAt(block, maxScale / 63.0f);
    const float dmin = storeHalfAt(block + 2, maxMin / 63.0f);
    int sc[8], m[8];
    for (std::uint32_t j = 0; j < 8; ++j) {
        sc[j] = d > 0.0f ? nearestInt(scale[j] / d) : 0;
        m[j] = dmin > 0.0f ? nearestInt(minimum[j] / dmin) : 0;
        sc[j] = sc[j] < 0 ? 0 : sc[j] > 63 ? 63 : sc[j];
        m[j] = m[j] < 0 ? 0 : m[j] > 63 ? 63 : m[j];
    }
    std::uint8_t* scales = block + kQ4_KScalesOffset;
    for (std::uint32_t j = 0; j < 4; ++j) {
        scales[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        scales[j + 4] = static_cast<std::uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
        scales[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    std::uint8_t* qs = block + kQ4_KQsOffset;
    for (std::uint32_t i = 0; i < 128; ++i)
        qs[i] = 0;
    for (std::uint32_t i = 0; i < kQkK; ++i) {
        const std::uint32_t j = i / 32;
        const float ds = d * static_cast<float>(sc[j]);
        int q = ds > 0.0f ? nearestInt((w[i] + dmin * static_cast<float>(m[j])) / ds) : 0;
        q = q < 0 ? 0 : q > 15 ? 15 : q;
        qs[32 * (j / 2) + i % 32] |= static_cast<std::uint8_t>((j & 1u) ? q << 4 : q);
    }
}

/// q6_K block of @p w [256]: per 16 weights the scale s_g = max / -32 (max: the weight of largest
/// magnitude, with its sign), then iscale = -128 / (the s_g of largest magnitude), d = 1 / iscale
/// (fp16), scales[g] = min(127, nearest(iscale s_g)), code = clamp(nearest(w / (d scales[g])),
/// -32, 31) + 32 (quantize_row_q6_K_ref's outer procedure).
HEADROOM_HD void quantizeQ6_KBlock(const float* w, std::uint8_t* block) {
    float s[16], maxScale = 0.0f, maxAbs = 0.0f;
    for (std::uint32_t g = 0; g < 16; ++g) {
        s[g] = signedAbsMax(w + 16 * g, 16) / -32.0f;
        if (fabsf(s[g]) > maxAbs) {
            maxAbs = fabsf(s[g]);
            maxScale = s[g];
        }
    }
    for (std::uint32_t i = 0; i < kQ6_KBlockBytes; ++i)
        block[i] = 0;
    if (maxAbs == 0.0f)
        return; // all-zero block: d = 0 and scales 0 decode every code to 0
    const float iscale = -128.0f / maxScale;
    const float d = storeHalfAt(block + kQ6_KDOffset, 1.0f / iscale);
    int sc[16];
    for (std::uint32_t g = 0; g < 16; ++g) {
        const int v = nearestInt(iscale * s[g]);
        sc[g] = v < -128 ? -128 : v > 127 ? 127 : v;
        block[kQ6_KScalesOffset + g] = static_cast<std::uint8_t>(static_cast<std::int8_t>(sc[g]));
    }
    for (std::uint32_t i = 0; i < kQkK; ++i) {
        const float ds = d * static_cast<float>(sc[i / 16]);
        int q = ds != 0.0f ? nearestInt(w[i] / ds) : 0;
        q = (q < -32 ? -32 : q > 31 ? 31 : q) + 32;
        const std::uint32_t half = i / 128, c = (i % 128) / 32, l = i % 32;
        block[64 * half + l + 32 * (c & 1u)] |= static_cast<std::uint8_t>(c < 2 ? (q & 15) : (q & 15) << 4);
        block[kQ6_KQhOffset + 32 * half + l] |= static_cast<std::uint8_t>((q >> 4) << (2 * c));
    }
}

// ---------------------------------------------------------------------------------------------
// Activations as int8 blocks, and the integer dot of one weight block with them
// ---------------------------------------------------------------------------------------------

/// @p x [32] as a q8_0 block: codes @p q [32] and the scale (fp16-rounded d, as block_q8_0
/// stores it) returned; q = roundf(x / d) with the unrounded d (quantize_row_q8_0_ref).
HEADROOM_HD float quantizeQ8_0Activations(const float* x, std::int8_t* q) {
    float amax = 0.0f;
    for (std::uint32_t j = 0; j < kQ8_0BlockWeights; ++j)
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (std::uint32_t j = 0; j < kQ8_0BlockWeights; ++j)
        q[j] = static_cast<std::int8_t>(roundf(x[j] * id));
    return roundToHalf(d);
}

/// @p x [256] as a q8_K block: codes @p q [256], the code sums of every 16 in @p sums16 [16], and
/// the fp32 scale returned (quantize_row_q8_K_ref: max = the value of largest magnitude,
/// iscale = -127 / max, q = min(127, nearest(iscale x)), d = 1 / iscale; 0 for an all-zero x).
HEADROOM_HD float quantizeQ8_KActivations(const float* x, std::int8_t* q, std::int16_t* sums16) {
    const float max = signedAbsMax(x, kQkK);
    if (max == 0.0f) {
        for (std::uint32_t j = 0; j < kQkK; ++j)
            q[j] = 0;
        for (std::uint32_t g = 0; g < 16; ++g)
            sums16[g] = 0;
        return 0.0f;
    }
    const float iscale = -127.0f / max;
    for (std::uint32_t j = 0; j < kQkK; ++j) {
        const int v = nearestInt(iscale * x[j]);
        q[j] = static_cast<std::int8_t>(v < 127 ? v : 127);
    }
    for (std::uint32_t g = 0; g < 16; ++g) {
        int sum = 0;
        for (std::uint32_t l = 0; l < 16; ++l)
            sum += q[16 * g + l];
        sums16[g] = static_cast<std::int16_t>(sum);
    }
    return 1.0f / iscale;
}

/// sum_i w_i x_i of a q8_0 block and q8_0 activations (@p xq [32], scale @p xd):
/// d_w xd sum_i qs_i xq_i, the sum in int32 (ggml_vec_dot_q8_0_q8_0).
HEADROOM_HD float dotQ8_0Block(const std::uint8_t* block, const std::int8_t* xq, float xd) {
    int sum = 0;
    for (std::uint32_t j = 0; j < kQ8_0BlockWeights; ++j)
        sum += static_cast<std::int8_t>(block[2 + j]) * xq[j];
    return loadHalfAt(block) * xd * static_cast<float>(sum);
}

/// The same for a q4_0 block: d_w xd sum_i (code_i - 8) xq_i (ggml_vec_dot_q4_0_q8_0).
HEADROOM_HD float dotQ4_0Block(const std::uint8_t* block, const std::int8_t* xq, float xd) {
    int sum = 0;
    for (std::uint32_t j = 0; j < 16; ++j) {
        const std::uint8_t byte = block[2 + j];
        sum += ((byte & 15) - 8) * xq[j] + ((byte >> 4) - 8) * xq[j + 16];
    }
    return loadHalfAt(block) * xd * static_cast<float>(sum);
}

/// sum_i w_i x_i of a q4_K block and q8_K activations (@p xq [256], @p sums16 [16], scale @p xd):
/// xd (d sum_j sc_j sum_{i in j} q_i xq_i - dmin sum_j m_j (sums16[2j] + sums16[2j+1]))
/// (ggml_vec_dot_q4_K_q8_K).
HEADROOM_HD float dotQ4_KBlock(const std::uint8_t* block, const std::int8_t* xq, const std::int16_t* sums16, float xd) {
    int sumQ = 0, sumMin = 0;
    for (std::uint32_t j = 0; j < 8; ++j) {
        int sc = 0, m = 0;
        q4_KScaleMin(block + kQ4_KScalesOffset, j, sc, m);
        const std::uint8_t* qs = block + kQ4_KQsOffset + 32 * (j / 2);
        int sub = 0;
        for (std::uint32_t l = 0; l < 32; ++l)
            sub += ((j & 1u) ? (qs[l] >> 4) : (qs[l] & 15)) * xq[32 * j + l];
        sumQ += sc * sub;
        sumMin += m * (sums16[2 * j] + sums16[2 * j + 1]);
    }
    return xd * (loadHalfAt(block) * static_cast<float>(sumQ) - loadHalfAt(block + 2) * static_cast<float>(sumMin));
}

/// sum_i w_i x_i of a q6_K block and q8_K activations (@p xq [256], scale @p xd):
/// d xd sum_g scales[g] sum_{i in g} (q_i - 32) xq_i (ggml_vec_dot_q6_K_q8_K).
HEADROOM_HD float dotQ6_KBlock(const std::uint8_t* block, const std::int8_t* xq, float xd) {
    int sum = 0;
    for (std::uint32_t g = 0; g < 16; ++g) {
        int sub = 0;
        for (std::uint32_t l = 0; l < 16; ++l)
            sub += q6_KCode(block, 16 * g + l) * xq[16 * g + l];
        sum += static_cast<std::int8_t>(block[kQ6_KScalesOffset + g]) * sub;
    }
    return loadHalfAt(block + kQ6_KDOffset) * xd * static_cast<float>(sum);
}

} // namespace headroom::formats
