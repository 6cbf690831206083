// Fast CPU kernels: threads over rows (GEMV) or (sequence, KV head) pairs (attention), with the
// loops of cpuloops.inc built twice (portable, and AVX2/FMA/F16C chosen at run time).

#include "headroom/kernels/cpukernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "gemm8.h"
#include "kpanel.h"
#include "kvaccess.h"
#include "parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HEADROOM_CPU_X86 1
#else
#define HEADROOM_CPU_X86 0
#endif

namespace headroom::kernels {

namespace fmt = headroom::formats;

namespace portable {
#define HEADROOM_DECODE_HALF8(src, dst)                                                                                \
    do {                                                                                                               \
        for (int i_ = 0; i_ < 8; ++i_)                                                                                 \
            (dst)[i_] = fmt::halfToFloat((src)[i_]);                                                                   \
    } while (0)
#include "cpuloops.inc"
#undef HEADROOM_DECODE_HALF8
} // namespace portable

#if HEADROOM_CPU_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
/// The levels of 8 NF4 codes: a 16-entry table lookup as two 8-lane permutes and a blend.
inline __m256 nf4Lookup(__m256i index, __m256 levels0to7, __m256 levels8to15) {
    const __m256 low = _mm256_permutevar8x32_ps(levels0to7, index); // uses index & 7
    const __m256 high = _mm256_permutevar8x32_ps(levels8to15, index);
    const __m256 upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(index, _mm256_set1_epi32(7)));
    return _mm256_blendv_ps(low, high, upper);
}
/// 8 bytes of NF4 codes -> levels of the 8 low nibbles at @p lo and of the 8 high nibbles at @p hi.
inline void nf4Decode8(const std::uint8_t* bytes, const float* levels, float* lo, float* hi) {
    const __m256i codes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
    const __m256 t0 = _mm256_loadu_ps(levels), t1 = _mm256_loadu_ps(levels + 8);
    _mm256_storeu_ps(lo, nf4Lookup(_mm256_and_si256(codes, _mm256_set1_epi32(15)), t0, t1));
    _mm256_storeu_ps(hi, nf4Lookup(_mm256_srli_epi32(codes, 4), t0, t1));
}
/// exp of 8 floats in place: x = n ln2 + r, |r| <= ln2 / 2, exp(r) by a degree-6 polynomial
/// (Cephes expf coefficients), times 2^n through the exponent bits; relative error ~2e-7 for
/// x in [-87, 88], 0 below (the softmax only takes exp of x <= 0).
inline void exp8(float* x) {
    __m256 v = _mm256_loadu_ps(x);
    v = _mm256_min_ps(v, _mm256_set1_ps(88.0f));
    const __m256 tooSmall = _mm256_cmp_ps(v, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), v);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    _mm256_storeu_ps(x, _mm256_andnot_ps(tooSmall, result));
}
#define HEADROOM_DECODE_HALF8(src, dst)                                                                                \
    _mm256_storeu_ps((dst), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))))
#define HEADROOM_NF4_DECODE8(bytes, levels, lo, hi) nf4Decode8((bytes), (levels), (lo), (hi))
#define HEADROOM_EXP8(x) exp8(x)
#include "cpuloops.inc"
#undef HEADROOM_DECODE_HALF8
#undef HEADROOM_NF4_DECODE8
#undef HEADROOM_EXP8

/// Horizontal sum of 8 floats.
inline float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

/// q . k over @p vectors x 8 floats (two accumulators).
inline float dot8(const float* q, const float* k, std::uint32_t vectors) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    std::uint32_t i = 0;
    for (; i + 2 <= vectors; i += 2) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 8 * i), _mm256_loadu_ps(k + 8 * i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 8 * i + 8), _mm256_loadu_ps(k + 8 * i + 8), a1);
    }
    if (i < vectors)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + 8 * i), _mm256_loadu_ps(k + 8 * i), a0);
    return hsum(_mm256_add_ps(a0, a1));
}

/// acc[0 .. 8 NV) += sum_i p[i] * rows[i][0 .. 8 NV) over @p n rows of @p stride floats, with
/// the NV accumulators in registers for the whole tile.
template <int NV>
inline void weightedSum(float* acc, const float* p, const float* rows, std::uint32_t n, std::uint32_t stride) {
    __m256 a[NV];
    for (int j = 0; j < NV; ++j)
        a[j] = _mm256_loadu_ps(acc + 8 * j);
    for (std::uint32_t i = 0; i < n; ++i) {
        const __m256 w = _mm256_set1_ps(p[i]);
        const float* r = rows + std::uint64_t{i} * stride;
        for (int j = 0; j < NV; ++j)
            a[j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(r + 8 * j), a[j]);
    }
    for (int j = 0; j < NV; ++j)
        _mm256_storeu_ps(acc + 8 * j, a[j]);
}

/// weightedSum over D = 8 x vectors floats in chunks of at most 64.
inline void weightedSumAll(float* acc, const float* p, const float* rows, std::uint32_t n, std::uint32_t D) {
    std::uint32_t d0 = 0;
    for (; d0 + 64 <= D; d0 += 64)
        weightedSum<8>(acc + d0, p, rows + d0, n, D);
    switch ((D - d0) / 8) {
    case 7: weightedSum<7>(acc + d0, p, rows + d0, n, D); break;
    case 6: weightedSum<6>(acc + d0, p, rows + d0, n, D); break;
    case 5: weightedSum<5>(acc + d0, p, rows + d0, n, D); break;
    case 4: weightedSum<4>(acc + d0, p, rows + d0, n, D); break;
    case 3: weightedSum<3>(acc + d0, p, rows + d0, n, D); break;
    case 2: weightedSum<2>(acc + d0, p, rows + d0, n, D); break;
    case 1: weightedSum<1>(acc + d0, p, rows + d0, n, D); break;
    default: break;
    }
}

/// y[b][r] for R rows x BT batch rows over @p vectors x 8 columns: the R x BT accumulators stay
/// in registers for the whole row (the register-blocked micro-kernel of a GEMM); @p w: R decoded
/// rows of @p ldw floats; @p x: BT activation rows of @p ldx floats.
template <int R, int BT>
inline void microKernel(const float* w, std::uint64_t ldw, const float* x, std::uint64_t ldx, std::uint32_t vectors,
                        float out[R][BT]) {
    __m256 acc[R][BT];
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < BT; ++b)
            acc[r][b] = _mm256_setzero_ps();
    for (std::uint32_t j = 0; j < vectors; ++j) {
        __m256 wv[R];
        for (int r = 0; r < R; ++r)
            wv[r] = _mm256_loadu_ps(w + r * ldw + 8 * j);
        for (int b = 0; b < BT; ++b) {
            const __m256 xv = _mm256_loadu_ps(x + b * ldx + 8 * j);
            for (int r = 0; r < R; ++r)
                acc[r][b] = _mm256_fmadd_ps(wv[r], xv, acc[r][b]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < BT; ++b)
            out[r][b] = hsum(acc[r][b]);
}

/// Rows [begin, end) of y = x W^T for B >= 2 with whole chunks (the chunked layouts): each block
/// of 3 rows is decoded once into fp32 (chunk order), then multiplied with every batch row in
/// register tiles of 3 rows x 4 batch rows; tail columns past the last chunk as gemvRows does.
inline void gemmRows(const GemvArgs& args, const float* xNat, const float* xChunk, std::uint64_t begin, std::uint64_t end) {
    constexpr int R = 3, BT = 4;
    const WeightMatrix& w = args.weights;
    const fmt::QuantLayout layout = w.layout;
    const std::uint32_t K = w.cols;
    const std::uint32_t B = args.batch;
    const std::uint64_t stride = fmt::rowBytes(layout, K);
    const std::uint32_t fullChunks = K / kChunk;
    const std::uint32_t chunkCols = fullChunks * kChunk;
    const std::uint32_t vectors = chunkCols / 8;
    std::vector<float> wbuf(std::uint64_t{R} * chunkCols);
    std::vector<float> sums(std::uint64_t{R} * B);
    for (std::uint64_t n0 = begin; n0 < end; n0 += R) {
        const int rows = static_cast<int>(std::min<std::uint64_t>(R, end - n0));
        for (int r = 0; r < rows; ++r) {
            const std::uint64_t n = n0 + static_cast<std::uint64_t>(r);
            const std::uint8_t* row = w.data + n * stride;
            const std::uint16_t* scales = w.scales ? w.scales + fmt::rowScaleOffset(layout, n, K) : nullptr;
            for (std::uint32_t c = 0; c < fullChunks; ++c) {
                const std::uint32_t k0 = c * kChunk;
                const float scale = scales ? fmt::halfToFloat(scales[fmt::scaleIndexInRow(layout, k0)]) : 1.0f;
                decodeChunk(layout, row, scale, k0, wbuf.data() + std::uint64_t{static_cast<std::uint32_t>(r)} * chunkCols + k0);
            }
        }
        for (int r = rows; r < R; ++r) // unused rows of the last block multiply zeros
            std::fill_n(wbuf.data() + std::uint64_t{static_cast<std::uint32_t>(r)} * chunkCols, chunkCols, 0.0f);
        std::uint32_t b0 = 0;
        for (; b0 + BT <= B; b0 += BT) {
            float out[R][BT];
            microKernel<R, BT>(wbuf.data(), chunkCols, xChunk + std::uint64_t{b0} * chunkCols, chunkCols, vectors, out);
            for (int r = 0; r < R; ++r)
                for (int b = 0; b < BT; ++b)
                    sums[static_cast<std::uint64_t>(r) * B + b0 + static_cast<std::uint32_t>(b)] = out[r][b];
        }
        for (; b0 < B; ++b0) {
            float out[R][1];
            microKernel<R, 1>(wbuf.data(), chunkCols, xChunk + std::uint64_t{b0} * chunkCols, chunkCols, vectors, out);
            for (int r = 0; r < R; ++r)
                sums[static_cast<std::uint64_t>(r) * B + b0] = out[r][0];
        }
        for (int r = 0; r < rows; ++r) {
            const std::uint64_t n = n0 + static_cast<std::uint64_t>(r);
            const std::uint8_t* row = w.data + n * stride;
            const std::uint16_t* scales = w.scales ? w.scales + fmt::rowScaleOffset(layout, n, K) : nullptr;
            for (std::uint32_t b = 0; b < B; ++b) {
                float sum = sums[static_cast<std::uint64_t>(r) * B + b];
                for (std::uint32_t k = chunkCols; k < K; ++k)
                    sum += fmt::loadWeight(layout, row, scales, k) * xNat[std::uint64_t{b} * K + k];
                const std::uint64_t at = std::uint64_t{b} * w.rows + n;
                if (args.yType == OutputType::Fp32)
                    static_cast<float*>(args.y)[at] = sum;
                else
                    static_cast<std::uint16_t*>(args.y)[at] = fmt::floatToHalf(sum);
            }
        }
    }
}

/// Rows [begin, end) of y = x W^T for B = 1 on the integer codes (int8 layouts whose scale
/// territories are whole 32-column blocks; int4 runs in gemvRowsInt4): per 32 columns, sum_k w_k q_k in int32 by
/// maddubs (|w| x sign(q, w), as ggml's q8 dot products do), then scaled once by the weight scale
/// times the activation block's scale @p xScale. @p xq: x quantized per 32 columns
/// (quantizeActivations32); columns past the last whole block in fp32 from @p xNat.
inline void gemvRowsQ8(const GemvArgs& args, const float* xNat, const std::int8_t* xq, const float* xScale,
                       std::uint64_t begin, std::uint64_t end) {
    const WeightMatrix& w = args.weights;
    const fmt::QuantLayout layout = w.layout;
    const std::uint32_t K = w.cols;
    const std::uint32_t blocks = K / 32;
    const std::uint64_t stride = fmt::rowBytes(layout, K);
    const __m256i ones = _mm256_set1_epi16(1);
    for (std::uint64_t n = begin; n < end; ++n) {
        const std::uint8_t* row = w.data + n * stride;
        const std::uint16_t* scales = w.scales + fmt::rowScaleOffset(layout, n, K);
        __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}; // two chains of FMAs
        for (std::uint32_t blk = 0; blk < blocks; ++blk) {
            const std::uint32_t k0 = blk * 32;
            const float scale = _cvtsh_ss(scales[fmt::scaleIndexInRow(layout, k0)]);
            const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k0));
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + k0));
            const __m256i products = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
            const __m256i sums = _mm256_madd_epi16(products, ones);
            acc[blk & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(scale * xScale[blk]), acc[blk & 1]);
        }
        float sum = hsum(_mm256_add_ps(acc[0], acc[1]));
        for (std::uint32_t k = blocks * 32; k < K; ++k)
            sum += fmt::loadWeight(layout, row, scales, k) * xNat[k];
        if (args.yType == OutputType::Fp32)
            static_cast<float*>(args.y)[n] = sum;
        else
            static_cast<std::uint16_t*>(args.y)[n] = fmt::floatToHalf(sum);
    }
}

/// Rows [begin, end) of y = x W^T for B = 1 int4 codes whose scale territories are whole
/// 32-column blocks, 4 rows at a time sharing each activation block: the 16 code bytes of a block
/// XOR 0x88 are the unsigned codes q + 8 (low nibbles = even columns, high = odd ones), so
/// maddubs(q + 8, x) needs no sign trick and no byte interleave when @p xqPerm holds each block's
/// x codes as [even columns][odd columns]; the + 8 is taken back per block as 8 d_x sum(x codes)
/// (@p xOffset). Columns past the last whole block in fp32 from @p xNat.
inline void gemvRowsInt4(const GemvArgs& args, const float* xNat, const std::int8_t* xqPerm, const float* xScale,
                         const float* xOffset, std::uint64_t begin, std::uint64_t end) {
    constexpr int R = 4;
    const WeightMatrix& w = args.weights;
    const fmt::QuantLayout layout = w.layout;
    const std::uint32_t K = w.cols;
    const std::uint32_t blocks = K / 32;
    const std::uint64_t stride = fmt::rowBytes(layout, K);
    const std::uint32_t blocksPerScale = layout.scope == fmt::ScaleScope::Group ? layout.groupWeights / 32 : blocks;
    const __m128i mask = _mm_set1_epi8(0x0f), flip = _mm_set1_epi8(static_cast<char>(0x88));
    const __m256i ones = _mm256_set1_epi16(1);
    for (std::uint64_t n0 = begin; n0 < end; n0 += R) {
        const int rows = static_cast<int>(std::min<std::uint64_t>(R, end - n0));
        const std::uint8_t* row[R];
        const std::uint16_t* scales[R];
        for (int r = 0; r < R; ++r) { // missing rows of the last group repeat the first (not stored)
            const std::uint64_t n = n0 + static_cast<std::uint64_t>(r < rows ? r : 0);
            row[r] = w.data + n * stride;
            scales[r] = w.scales + fmt::rowScaleOffset(layout, n, K);
        }
        __m256 acc[R];
        float offset[R] = {};
        for (int r = 0; r < R; ++r)
            acc[r] = _mm256_setzero_ps();
        for (std::uint32_t b0 = 0; b0 < blocks; b0 += blocksPerScale) {
            const std::uint32_t b1 = std::min(blocks, b0 + blocksPerScale);
            float scale[R];
            for (int r = 0; r < R; ++r)
                scale[r] = _cvtsh_ss(scales[r][b0 / blocksPerScale]);
            float groupOffset = 0.0f;
            for (std::uint32_t blk = b0; blk < b1; ++blk) {
                const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xqPerm + 32 * std::uint64_t{blk}));
                groupOffset += xOffset[blk];
                for (int r = 0; r < R; ++r) {
                    const __m128i packed = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[r] + 16 * std::uint64_t{blk})), flip);
                    const __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
                    const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), ones);
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(scale[r] * xScale[blk]), acc[r]);
                }
            }
            for (int r = 0; r < R; ++r)
                offset[r] += scale[r] * groupOffset;
        }
        for (int r = 0; r < rows; ++r) {
            const std::uint64_t n = n0 + static_cast<std::uint64_t>(r);
            float sum = hsum(acc[r]) - offset[r];
            for (std::uint32_t k = blocks * 32; k < K; ++k)
                sum += fmt::loadWeight(layout, row[r], scales[r], k) * xNat[k];
            if (args.yType == OutputType::Fp32)
                static_cast<float*>(args.y)[n] = sum;
            else
                static_cast<std::uint16_t*>(args.y)[n] = fmt::floatToHalf(sum);
        }
    }
}

/// Prefetches (into L2) every cache line of the K or V rows of tokens [t0, t0 + n), run by run.
inline void prefetchTile(const DecodeAttentionArgs& args, const std::uint16_t* base, std::uint32_t b, std::uint32_t kvHead,
                         std::uint32_t t0, std::uint32_t n) {
    const std::uint64_t D = args.headDim;
    detail::forKvRuns(args, base, b, kvHead, t0, n, [&](std::uint32_t, const std::uint16_t* src, std::uint32_t count) {
        const char* p = reinterpret_cast<const char*>(src);
        for (std::uint64_t at = 0; at < count * D * 2; at += 64)
            _mm_prefetch(p + at, _MM_HINT_T1);
    });
}

/// attentionSpan's scratch: decoded rows of one tile, and the scores of one KV head's G query heads.
struct AttentionScratch {
    std::vector<float> rows, scores;
    AttentionScratch(std::uint32_t D, std::uint32_t G)
        : rows(std::uint64_t{kAttentionTile} * D), scores(std::uint64_t{G} * kAttentionTile) {}
};

/// One tile, tokens [t0, t0 + n) of sequence b, for the G query heads of @p kvHead: scores,
/// running-max update and rescale (Milakov & Gimelshein 2018), exp, weighted V sum into the
/// head's partial (q: scaled queries [G][D]; partial: [G][D + 2] = acc[D], max, sum).
inline void attendTile(const DecodeAttentionArgs& args, std::uint32_t b, std::uint32_t kvHead, std::uint32_t t0,
                       std::uint32_t n, const float* q, float* partial, AttentionScratch& scratch) {
    const std::uint32_t D = args.headDim;
    const std::uint32_t G = args.numHeads / args.numKvHeads;
    const std::uint64_t stride = std::uint64_t{D} + 2;
    float* rows = scratch.rows.data();
    decodeTile(args, args.k, b, kvHead, t0, n, rows);
    for (std::uint32_t g = 0; g < G; ++g) {
        float* sc = scratch.scores.data() + std::uint64_t{g} * kAttentionTile;
        const float* qg = q + std::uint64_t{g} * D;
        float* a = partial + g * stride;
        float& maxScore = a[D];
        float& sum = a[D + 1];
        float tileMax = -std::numeric_limits<float>::infinity();
        for (std::uint32_t i = 0; i < n; ++i) {
            sc[i] = dot8(qg, rows + std::uint64_t{i} * D, D / 8);
            tileMax = std::max(tileMax, sc[i]);
        }
        const float newMax = std::max(maxScore, tileMax);
        if (newMax > maxScore) {
            const float correction = std::exp(maxScore - newMax); // 0 on the first tile
            for (std::uint32_t d = 0; d < D; ++d)
                a[d] *= correction;
            sum *= correction;
            maxScore = newMax;
        }
        for (std::uint32_t i = 0; i < n; ++i)
            sc[i] -= newMax;
        expInPlace(sc, n);
        float tileSum = 0.0f;
        for (std::uint32_t i = 0; i < n; ++i)
            tileSum += sc[i];
        sum += tileSum;
    }
    decodeTile(args, args.v, b, kvHead, t0, n, rows);
    for (std::uint32_t g = 0; g < G; ++g)
        weightedSumAll(partial + g * stride, scratch.scores.data() + std::uint64_t{g} * kAttentionTile, rows, n, D);
}

/// Decode attention of sequence @p b over the tokens [s0, s1) (a span; D a multiple of 8), all
/// its KV heads, into @p partial [H][D + 2]: per query head the unnormalized weighted V sum acc[D],
/// the running max and the sum of exps (merged over spans by mergeAttentionSpans). The tile loop
/// is outside the KV-head loop, so a paged cache's block ([H_kv][blockTokens][D], every head) is
/// read whole and back to back, as a contiguous cache's rows are; the tile after next is
/// prefetched into L2 (a scattered block is where the hardware prefetcher cannot follow).
inline void attentionSpan8(const DecodeAttentionArgs& args, std::uint32_t b, std::uint32_t s0, std::uint32_t s1,
                           float* partial, AttentionScratch& scratch, std::vector<float>& q) {
    const std::uint32_t D = args.headDim;
    const std::uint32_t H = args.numHeads, Hkv = args.numKvHeads, G = H / Hkv;
    const std::uint64_t stride = std::uint64_t{D} + 2;
    decodeHalves(args.q + std::uint64_t{b} * H * D, q.data(), H * D);
    const float scale = args.effectiveScale();
    for (float& x : q)
        x *= scale;
    for (std::uint32_t h = 0; h < H; ++h) {
        float* a = partial + h * stride;
        std::fill(a, a + D, 0.0f);
        a[D] = -std::numeric_limits<float>::infinity();
        a[D + 1] = 0.0f;
    }
    for (std::uint32_t t0 = s0; t0 < s1; t0 += kAttentionTile) {
        const std::uint32_t n = std::min(kAttentionTile, s1 - t0);
        if (t0 + 2 * kAttentionTile < s1) {
            const std::uint32_t ahead = t0 + 2 * kAttentionTile;
            const std::uint32_t next = std::min(kAttentionTile, s1 - ahead);
            for (std::uint32_t kvHead = 0; kvHead < Hkv; ++kvHead) {
                prefetchTile(args, args.k, b, kvHead, ahead, next);
                prefetchTile(args, args.v, b, kvHead, ahead, next);
            }
        }
        for (std::uint32_t kvHead = 0; kvHead < Hkv; ++kvHead)
            attendTile(args, b, kvHead, t0, n, q.data() + std::uint64_t{kvHead} * G * D,
                       partial + std::uint64_t{kvHead} * G * stride, scratch);
    }
}

// --- GGML block dots (the layouts and formulas of formats/ggmlblocks.h; the integer forms of
// ggml-cpu arch/x86/quants.c at ggml d99724f2: maddubs of unsigned codes or |w| x sign(x, w),
// madd into int32, one fp32 scale per block) ---

/// sum of the 32 int8 products w_i x_i as 8 int32 partial sums (|w| x sign(x, w) by maddubs).
inline __m256i dotI8(__m256i w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1));
}

/// The fp16 scale at @p p.
inline float halfAt(const std::uint8_t* p) {
    std::uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/// sum_k w_k x_k of @p R q8_0 rows (@p rows) of @p blocks blocks with q8_0 activations @p xq,
/// scales @p xd, into @p out [R]: each activation block is loaded once for the R rows, whose
/// independent accumulators keep the multiply units busy.
template <int R>
inline void rowsDotQ8_0(const std::uint8_t* const* rows, const std::int8_t* xq, const float* xd, std::uint32_t blocks,
                        float* out) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * std::uint64_t{i}));
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* b = rows[r] + std::uint64_t{i} * fmt::kQ8_0BlockBytes;
            const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dotI8(w, x)), _mm256_set1_ps(halfAt(b) * xd[i]), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r)
        out[r] = hsum(acc[r]);
}

/// The same for q4_0: the 16 code bytes are the unsigned codes c = q + 8 (low nibbles = weights
/// 0..15, high = 16..31), so maddubs(c, x) runs without the sign trick and the + 8 comes back
/// as d_w 8 d_x sum(x codes) per block (@p xSums: the code sums of each activation block).
template <int R>
inline void rowsDotQ4_0(const std::uint8_t* const* rows, const std::int8_t* xq, const float* xd,
                        const std::int32_t* xSums, std::uint32_t blocks, float* out) {
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[R];
    float offset[R] = {};
    for (int r = 0; r < R; ++r)
        acc[r] = _mm256_setzero_ps();
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * std::uint64_t{i}));
        const float xo = static_cast<float>(8 * xSums[i]) * xd[i];
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* b = rows[r] + std::uint64_t{i} * fmt::kQ4_0BlockBytes;
            const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
            const __m256i codes = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
            const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(codes, x), ones);
            const float dw = halfAt(b);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(dw * xd[i]), acc[r]);
            offset[r] += dw * xo;
        }
    }
    for (int r = 0; r < R; ++r)
        out[r] = hsum(acc[r]) - offset[r];
}

/// y tile of R q8_0 or q4_0 (@p kQ4) weight rows @p rows x BT activation rows from @p b0, the
/// register-blocked integer GEMM of B >= 2: each weight block is loaded (and its nibbles
/// unpacked) once for the BT activation rows, the R x BT fp32 accumulators stay in registers.
/// Products as rowsDotQ8_0 / rowsDotQ4_0. @p xq, @p xd, @p xSums: the activations [B][K],
/// [B][blocks] (xSums for q4_0 only); @p out [R][BT].
template <int R, int BT, bool kQ4>
inline void gemmTileQ(const std::uint8_t* const* rows, const std::int8_t* xq, const float* xd, const std::int32_t* xSums,
                      std::uint32_t blocks, std::uint32_t b0, float (*out)[BT]) {
    const std::uint64_t bytes = kQ4 ? fmt::kQ4_0BlockBytes : fmt::kQ8_0BlockBytes;
    const __m128i mask = _mm_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[R][BT];
    float offset[R][BT] = {};
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < BT; ++b)
            acc[r][b] = _mm256_setzero_ps();
    for (std::uint32_t i = 0; i < blocks; ++i) {
        __m256i w[R];
        float d[R];
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = rows[r] + i * bytes;
            d[r] = halfAt(blk);
            if constexpr (kQ4) {
                const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
                w[r] = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask), _mm_and_si128(packed, mask));
            } else {
                w[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
            }
        }
        for (int b = 0; b < BT; ++b) {
            const std::uint64_t at = std::uint64_t{b0 + static_cast<std::uint32_t>(b)} * blocks + i;
            const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * at));
            const float dx = xd[at];
            for (int r = 0; r < R; ++r) {
                const __m256i products = kQ4 ? _mm256_maddubs_epi16(w[r], x)
                                             : _mm256_maddubs_epi16(_mm256_sign_epi8(w[r], w[r]), _mm256_sign_epi8(x, w[r]));
                const __m256i sums = _mm256_madd_epi16(products, ones);
                acc[r][b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_set1_ps(d[r] * dx), acc[r][b]);
                if constexpr (kQ4)
                    offset[r][b] += d[r] * dx * static_cast<float>(8 * xSums[at]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int b = 0; b < BT; ++b)
            out[r][b] = hsum(acc[r][b]) - offset[r][b];
}

/// The 8 sub-block scales (bytes 0..7) and minimums (bytes 8..15) of a q4_K block's 12 packed
/// scale bytes @p packed, as q4_KScaleMin decodes them, by ggml's word trick (utmp and kmask1..3
/// in ggml_vec_dot_q4_K_q8_K, ggml/src/ggml-cpu/arch/x86/quants.c at ggml d99724f2).
inline __m128i q4_KScalesMins(const std::uint8_t* packed) {
    std::uint32_t u[4];
    std::memcpy(u, packed, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4); // minimums 4..7
    const std::uint32_t mins03 = u[1] & 0x3f3f3f3fu;                          // minimums 0..3
    u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);          // scales 4..7
    u[2] = mins03;
    u[0] &= 0x3f3f3f3fu;                                                       // scales 0..3
    // From the four words in registers (a 16-byte load of u would wait for the four word stores:
    // a failed store forwarding a block).
    return _mm_set_epi32(static_cast<int>(u[3]), static_cast<int>(u[2]), static_cast<int>(u[1]), static_cast<int>(u[0]));
}

/// sum_k w_k x_k of a q4_K row with q8_K activations (@p xq, code sums of 16 @p sums16, one
/// scale per 256 @p xd): per sub-block j maddubs(code, x) (codes 0..15 are unsigned), madd by
/// sc_j broadcast from one register of the 8 scales (a byte shuffle), two int32 sums; the
/// minimums as one madd of the 8 m_j with the 8 sums of 32 activation codes (sums16 pairs added).
inline float rowDotQ4_K(const std::uint8_t* row, const std::int8_t* xq, const std::int16_t* sums16, const float* xd,
                        std::uint32_t blocks) {
    const __m256i mask = _mm256_set1_epi8(0x0f);
    __m256i pick[8]; // pick[j]: int16 lane j of a register in every lane
    for (int j = 0; j < 8; ++j)
        pick[j] = _mm256_set1_epi16(static_cast<short>(((2 * j + 1) << 8) | (2 * j)));
    __m256 acc = _mm256_setzero_ps();
    __m128 accMin = _mm_setzero_ps();
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const std::uint8_t* b = row + std::uint64_t{i} * fmt::kQ4_KBlockBytes;
        const std::int8_t* x = xq + std::uint64_t{i} * fmt::kQkK;
        const __m256i both = _mm256_cvtepu8_epi16(q4_KScalesMins(b + fmt::kQ4_KScalesOffset)); // sc[0..7], m[0..7]
        const __m256i scales = _mm256_permute2x128_si256(both, both, 0x00);
        const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums16 + std::uint64_t{i} * 16));
        const __m128i s32 = _mm_hadd_epi16(_mm256_castsi256_si128(s16), _mm256_extracti128_si256(s16, 1));
        const __m128i mins = _mm_madd_epi16(_mm256_extracti128_si256(both, 1), s32);
        accMin = _mm_fmadd_ps(_mm_set1_ps(halfAt(b + 2) * xd[i]), _mm_cvtepi32_ps(mins), accMin);
        __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
        for (std::uint32_t c = 0; c < 4; ++c) {
            const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + fmt::kQ4_KQsOffset + 32 * c));
            const __m256i lo = _mm256_and_si256(bytes, mask);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
            const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64 * c)));
            const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64 * c + 32)));
            sum0 = _mm256_add_epi32(sum0, _mm256_madd_epi16(p0, _mm256_shuffle_epi8(scales, pick[2 * c])));
            sum1 = _mm256_add_epi32(sum1, _mm256_madd_epi16(p1, _mm256_shuffle_epi8(scales, pick[2 * c + 1])));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(sum0, sum1)), _mm256_set1_ps(halfAt(b) * xd[i]), acc);
    }
    __m128 m = _mm_add_ps(accMin, _mm_movehl_ps(accMin, accMin));
    m = _mm_add_ss(m, _mm_shuffle_ps(m, m, 1));
    return hsum(acc) - _mm_cvtss_f32(m);
}

/// sum_k w_k x_k of a q6_K row with q8_K activations: the unsigned 6-bit codes (0..63) by
/// maddubs, times the int8 scale of each 16 by madd (the pair of scales of 32 codes picked from
/// one register of the 16 by a dword permute and a byte shuffle), minus 32 sum_g scale_g sums16[g]
/// (one madd of the 16 scales with the 16 code sums).
inline float rowDotQ6_K(const std::uint8_t* row, const std::int8_t* xq, const std::int16_t* sums16, const float* xd,
                        std::uint32_t blocks) {
    const __m256i mask4 = _mm256_set1_epi8(0x0f), mask2 = _mm256_set1_epi8(0x03);
    // int16 0 of a dword in the low 128 bits, int16 1 in the high 128 bits.
    const __m256i pairLanes = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                                               2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    __m256 acc = _mm256_setzero_ps();
    __m256 accOffset = _mm256_setzero_ps();
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const std::uint8_t* b = row + std::uint64_t{i} * fmt::kQ6_KBlockBytes;
        const std::int8_t* x = xq + std::uint64_t{i} * fmt::kQkK;
        const __m256i scales16 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + fmt::kQ6_KScalesOffset)));
        const __m256i s16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums16 + std::uint64_t{i} * 16));
        const float d = halfAt(b + fmt::kQ6_KDOffset) * xd[i];
        accOffset = _mm256_fmadd_ps(_mm256_set1_ps(32.0f * d), _mm256_cvtepi32_ps(_mm256_madd_epi16(scales16, s16)), accOffset);
        __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
        for (std::uint32_t h = 0; h < 2; ++h) {
            const __m256i qlA = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h));
            const __m256i qlB = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + fmt::kQ6_KQhOffset + 32 * h));
            const __m256i low[4] = {_mm256_and_si256(qlA, mask4), _mm256_and_si256(qlB, mask4),
                                    _mm256_and_si256(_mm256_srli_epi16(qlA, 4), mask4),
                                    _mm256_and_si256(_mm256_srli_epi16(qlB, 4), mask4)};
            const __m256i high[4] = {_mm256_and_si256(qh, mask2), _mm256_and_si256(_mm256_srli_epi16(qh, 2), mask2),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 4), mask2),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 6), mask2)};
            for (std::uint32_t c = 0; c < 4; ++c) {
                const __m256i q = _mm256_or_si256(low[c], _mm256_slli_epi16(high[c], 4));
                const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 128 * h + 32 * c));
                // The scales of weights 0..15 and 16..31 of these 32: int16 g and g + 1 (dword 4 h + c).
                const __m256i pair = _mm256_permutevar8x32_epi32(scales16, _mm256_set1_epi32(static_cast<int>(4 * h + c)));
                const __m256i sc = _mm256_shuffle_epi8(pair, pairLanes);
                const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv), sc);
                if (c & 1u)
                    sum1 = _mm256_add_epi32(sum1, p);
                else
                    sum0 = _mm256_add_epi32(sum0, p);
            }
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(sum0, sum1)), _mm256_set1_ps(d), acc);
    }
    return hsum(acc) - hsum(accOffset);
}

/// out[i] = the fp16 @p in[i] as fp32 (F16C; the same values as formats::halfToFloat), i < @p count.
void halvesToFloats(const std::uint16_t* in, float* out, std::uint64_t count) {
    std::uint64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    for (; i < count; ++i)
        out[i] = fmt::halfToFloat(in[i]);
}
} // namespace avx2
#pragma GCC pop_options
#endif

unsigned cpuThreads() {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return static_cast<unsigned>(CPU_COUNT(&set));
#endif
    return std::max(1u, std::thread::hardware_concurrency());
}

bool cpuUsesAvx2() {
#if HEADROOM_CPU_X86
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                             __builtin_cpu_supports("f16c");
    return has;
#else
    return false;
#endif
}

namespace {

/// x [K] quantized per 32 columns as ggml's q8_0 does: d = max |x| / 127, q = round(x / d); the
/// columns past the last whole block are left to the fp32 tail.
void quantizeActivations32(const float* x, std::uint32_t K, std::int8_t* q, float* d) {
    for (std::uint32_t blk = 0; blk < K / 32; ++blk) {
        const float* xb = x + std::uint64_t{blk} * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j)
            amax = std::max(amax, std::fabs(xb[j]));
        const float scale = amax / 127.0f;
        const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
        d[blk] = scale;
        for (int j = 0; j < 32; ++j)
            q[std::uint64_t{blk} * 32 + j] = static_cast<std::int8_t>(std::lrint(xb[j] * inv));
    }
}

/// True when the integer-code GEMV runs @p w: int8 or int4 codes with scale territories of whole
/// 32-column blocks, at least one block.
bool integerDotLayout(const WeightMatrix& w) {
    const fmt::QuantLayout l = w.layout;
    if (l.type != fmt::QuantType::Int8 && l.type != fmt::QuantType::Int4)
        return false;
    return w.cols >= 32 && (l.scope != fmt::ScaleScope::Group || l.groupWeights % 32 == 0);
}


/// B activation rows quantized for the GGML block dots: q8_0 blocks of 32 for q8_0/q4_0 weights,
/// q8_K blocks of 256 (with the code sums of every 16) for q4_K/q6_K (ggmlblocks.h).
struct BlockActivations {
    std::vector<std::int8_t> q;        ///< codes [B][K]
    std::vector<float> d;              ///< scales [B][K / block]
    std::vector<std::int16_t> sums16;  ///< q8_K code sums [B][K / 16]; empty for q8_0 blocks
    std::vector<std::int32_t> sums32;  ///< q8_0 code sums [B][K / 32] (for q4_0's offset of 8); else empty
    std::uint32_t blocksPerRow = 0;    ///< K / block
};

/// Quantizes @p x [B][K] (fp32) for weights of GGML @p type (K a multiple of its block).
BlockActivations quantizeBlockActivations(const float* x, std::uint32_t B, std::uint32_t K, fmt::QuantType type) {
    const bool superBlocks = fmt::ggmlBlockWeights(type) == fmt::kQkK;
    BlockActivations a;
    a.blocksPerRow = K / fmt::ggmlBlockWeights(type);
    a.q.resize(std::uint64_t{B} * K);
    a.d.resize(std::uint64_t{B} * a.blocksPerRow);
    if (superBlocks)
        a.sums16.resize(std::uint64_t{B} * (K / 16));
    if (type == fmt::QuantType::Q4_0)
        a.sums32.resize(a.d.size());
    for (std::uint64_t i = 0; i < a.d.size(); ++i) {
        const std::uint64_t at = i * fmt::ggmlBlockWeights(type);
        a.d[i] = superBlocks ? fmt::quantizeQ8_KActivations(x + at, a.q.data() + at, a.sums16.data() + at / 16)
                             : fmt::quantizeQ8_0Activations(x + at, a.q.data() + at);
        if (!a.sums32.empty()) {
            int sum = 0;
            for (std::uint32_t j = 0; j < fmt::kQ8_0BlockWeights; ++j)
                sum += a.q[at + j];
            a.sums32[i] = sum;
        }
    }
    return a;
}

/// y[at] = @p value as the output type of @p args.
inline void storeOutput(const GemvArgs& args, std::uint64_t at, float value) {
    if (args.yType == OutputType::Fp32)
        static_cast<float*>(args.y)[at] = value;
    else
        static_cast<std::uint16_t*>(args.y)[at] = fmt::floatToHalf(value);
}

/// sum_k w_k x_k of GGML row @p row with activation row @p b: the scalar block dots of
/// ggmlblocks.h (the portable fallback).
float rowDotGgmlPortable(fmt::QuantType type, const std::uint8_t* row, const BlockActivations& a, std::uint32_t b) {
    const std::uint32_t per = fmt::ggmlBlockWeights(type), bytes = fmt::ggmlBlockBytes(type);
    const std::uint64_t first = std::uint64_t{b} * a.blocksPerRow;
    float sum = 0.0f;
    for (std::uint32_t i = 0; i < a.blocksPerRow; ++i) {
        const std::uint8_t* block = row + std::uint64_t{i} * bytes;
        const std::int8_t* xq = a.q.data() + (first + i) * per;
        const float xd = a.d[first + i];
        switch (type) {
        case fmt::QuantType::Q8_0: sum += fmt::dotQ8_0Block(block, xq, xd); break;
        case fmt::QuantType::Q4_0: sum += fmt::dotQ4_0Block(block, xq, xd); break;
        case fmt::QuantType::Q4_K: sum += fmt::dotQ4_KBlock(block, xq, a.sums16.data() + (first + i) * 16, xd); break;
        case fmt::QuantType::Q6_K: sum += fmt::dotQ6_KBlock(block, xq, xd); break;
        default: break;
        }
    }
    return sum;
}

#if HEADROOM_CPU_X86
/// Rows per step of the AVX2 block dots (q8_0 and q4_0 share each activation block over them).
constexpr int kGgmlRowTile = 4;

/// The AVX2 form of rowDotGgmlPortable for @p count <= kGgmlRowTile rows @p rows into @p out.
void rowsDotGgmlAvx2(fmt::QuantType type, const std::uint8_t* const* rows, int count, const BlockActivations& a,
                     std::uint32_t b, float* out) {
    const std::uint64_t first = std::uint64_t{b} * a.blocksPerRow;
    const std::int8_t* xq = a.q.data() + first * fmt::ggmlBlockWeights(type);
    const float* xd = a.d.data() + first;
    const std::int16_t* sums16 = a.sums16.empty() ? nullptr : a.sums16.data() + first * 16;
    const std::uint32_t blocks = a.blocksPerRow;
    if (type == fmt::QuantType::Q8_0 && count == kGgmlRowTile)
        return avx2::rowsDotQ8_0<kGgmlRowTile>(rows, xq, xd, blocks, out);
    if (type == fmt::QuantType::Q4_0 && count == kGgmlRowTile)
        return avx2::rowsDotQ4_0<kGgmlRowTile>(rows, xq, xd, a.sums32.data() + first, blocks, out);
    for (int r = 0; r < count; ++r) {
        switch (type) {
        case fmt::QuantType::Q8_0: avx2::rowsDotQ8_0<1>(rows + r, xq, xd, blocks, out + r); break;
        case fmt::QuantType::Q4_0: avx2::rowsDotQ4_0<1>(rows + r, xq, xd, a.sums32.data() + first, blocks, out + r); break;
        case fmt::QuantType::Q4_K: out[r] = avx2::rowDotQ4_K(rows[r], xq, sums16, xd, blocks); break;
        case fmt::QuantType::Q6_K: out[r] = avx2::rowDotQ6_K(rows[r], xq, sums16, xd, blocks); break;
        default: out[r] = 0.0f; break;
        }
    }
}
#endif

#if HEADROOM_CPU_X86
/// Rows [begin, end) of y = x W^T for q8_0/q4_0 weights and B >= 2: tiles of 2 weight rows x 4
/// activation rows (avx2::gemmTileQ), with 1-row and 1-batch-row tiles for the remainders.
void gemmGgmlAvx2(const GemvArgs& args, const BlockActivations& a, std::uint64_t begin, std::uint64_t end) {
    constexpr int R = 2, BT = 4;
    const WeightMatrix& w = args.weights;
    const bool q4 = w.layout.type == fmt::QuantType::Q4_0;
    const std::uint64_t stride = fmt::rowBytes(w.layout, w.cols);
    const std::int32_t* sums = a.sums32.empty() ? nullptr : a.sums32.data();
    for (std::uint64_t n0 = begin; n0 < end; n0 += R) {
        const int count = static_cast<int>(std::min<std::uint64_t>(R, end - n0));
        const std::uint8_t* rows[R];
        for (int r = 0; r < count; ++r)
            rows[r] = w.data + (n0 + static_cast<std::uint64_t>(r)) * stride;
        std::uint32_t b0 = 0;
        for (; b0 < args.batch; b0 += BT) {
            const std::uint32_t tile = std::min<std::uint32_t>(BT, args.batch - b0);
            float out[R][BT];
            if (tile == BT && count == R) {
                if (q4) avx2::gemmTileQ<R, BT, true>(rows, a.q.data(), a.d.data(), sums, a.blocksPerRow, b0, out);
                else avx2::gemmTileQ<R, BT, false>(rows, a.q.data(), a.d.data(), sums, a.blocksPerRow, b0, out);
            } else {
                for (int r = 0; r < count; ++r)
                    for (std::uint32_t b = 0; b < tile; ++b) {
                        float one[1][1];
                        if (q4) avx2::gemmTileQ<1, 1, true>(rows + r, a.q.data(), a.d.data(), sums, a.blocksPerRow, b0 + b, one);
                        else avx2::gemmTileQ<1, 1, false>(rows + r, a.q.data(), a.d.data(), sums, a.blocksPerRow, b0 + b, one);
                        out[r][b] = one[0][0];
                    }
            }
            for (int r = 0; r < count; ++r)
                for (std::uint32_t b = 0; b < tile; ++b)
                    storeOutput(args, std::uint64_t{b0 + b} * w.rows + n0 + static_cast<std::uint64_t>(r), out[r][b]);
        }
    }
}
#endif

/// y = x W^T for GGML block weights: with quantized activations the integer block dots (AVX2 or
/// the scalar fallback), each weight row read once for all B activation rows; without, every
/// row dequantized to fp32 and dotted with the fp32 x (the reference's arithmetic, reordered).
void gemvGgml(const GemvArgs& args, const float* xNat, bool useAvx2, CpuOptions options) {
    const WeightMatrix& w = args.weights;
    const fmt::QuantType type = w.layout.type;
    const std::uint32_t K = w.cols;
    const std::uint64_t stride = fmt::rowBytes(w.layout, K);
    // Rows [0, first) by the 8-row panels; the rest (and every row elsewhere) below.
    const std::uint32_t first =
        detail::kPanelsRun(args, options.quantizeActivations, useAvx2)        ? detail::gemvKPanels(args, xNat, options.threads, options.vnni)
        : detail::panelKernelsRun(args, options.quantizeActivations, useAvx2) ? detail::gemvPanels(args, xNat, options.threads, options.vnni, options.amx)
                                                                              : 0;
    if (first == w.rows)
        return;
    if (w.packing == RowPacking::Interleaved8 && first == 0) {
        // The portable and exact paths read rows as stored: run them on an unpacked copy.
        std::vector<std::uint8_t> rows(std::uint64_t{w.rows} * stride);
        const std::uint64_t groupBytes = std::uint64_t{detail::kPanelRows} * stride;
        for (std::uint64_t g = 0; g < w.rows / detail::kPanelRows; ++g)
            detail::unpackPanelGroup(type, K, w.data + g * groupBytes, rows.data() + g * groupBytes);
        const std::uint64_t packedBytes = std::uint64_t{w.rows / detail::kPanelRows} * groupBytes;
        std::memcpy(rows.data() + packedBytes, w.data + packedBytes, rows.size() - packedBytes);
        GemvArgs stored = args;
        stored.weights.data = rows.data();
        stored.weights.packing = RowPacking::AsStored;
        gemvGgml(stored, xNat, useAvx2, options);
        return;
    }
    if (!options.quantizeActivations) {
        detail::parallelFor(w.rows, options.threads, [&](std::uint64_t begin, std::uint64_t end) {
            std::vector<float> decoded(K);
            for (std::uint64_t n = begin; n < end; ++n) {
                fmt::dequantizeRow(w.layout, w.data + n * stride, nullptr, K, decoded.data());
                for (std::uint32_t b = 0; b < args.batch; ++b) {
                    const float* x = xNat + std::uint64_t{b} * K;
                    float sum = 0.0f;
                    for (std::uint32_t k = 0; k < K; ++k)
                        sum += decoded[k] * x[k];
                    storeOutput(args, std::uint64_t{b} * w.rows + n, sum);
                }
            }
        });
        return;
    }
    const BlockActivations a = quantizeBlockActivations(xNat, args.batch, K, type);
    detail::parallelFor(w.rows - first, options.threads, [&](std::uint64_t begin, std::uint64_t end) {
        begin += first;
        end += first;
#if HEADROOM_CPU_X86
        if (useAvx2 && args.batch >= 2 && (type == fmt::QuantType::Q8_0 || type == fmt::QuantType::Q4_0)) {
            gemmGgmlAvx2(args, a, begin, end);
            return;
        }
        if (useAvx2) {
            for (std::uint64_t n0 = begin; n0 < end; n0 += kGgmlRowTile) {
                const int count = static_cast<int>(std::min<std::uint64_t>(kGgmlRowTile, end - n0));
                const std::uint8_t* rows[kGgmlRowTile];
                for (int r = 0; r < count; ++r)
                    rows[r] = w.data + (n0 + static_cast<std::uint64_t>(r)) * stride;
                for (std::uint32_t b = 0; b < args.batch; ++b) {
                    float out[kGgmlRowTile];
                    rowsDotGgmlAvx2(type, rows, count, a, b, out);
                    for (int r = 0; r < count; ++r)
                        storeOutput(args, std::uint64_t{b} * w.rows + n0 + static_cast<std::uint64_t>(r), out[r]);
                }
            }
            return;
        }
#endif
        (void)useAvx2;
        for (std::uint64_t n = begin; n < end; ++n) {
            const std::uint8_t* row = w.data + n * stride;
            for (std::uint32_t b = 0; b < args.batch; ++b)
                storeOutput(args, std::uint64_t{b} * w.rows + n, rowDotGgmlPortable(type, row, a, b));
        }
    });
}
} // namespace

bool supportsGemvCpu(const GemvArgs& args) {
    return validate(args) == Status::Ok;
}

Status gemvCpu(const GemvArgs& args, CpuOptions options) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    const WeightMatrix& w = args.weights;
    const std::uint32_t K = w.cols;
    if (fmt::isGgmlBlockType(w.layout.type)) {
        std::vector<float> x(std::uint64_t{args.batch} * K);
#if HEADROOM_CPU_X86
        if (cpuUsesAvx2())
            avx2::halvesToFloats(args.x, x.data(), x.size());
        else
#endif
            for (std::uint64_t i = 0; i < x.size(); ++i)
                x[i] = fmt::halfToFloat(args.x[i]);
        gemvGgml(args, x.data(), cpuUsesAvx2() && !options.portable, options);
        return Status::Ok;
    }
    constexpr std::uint32_t chunk = portable::kChunk;
    const bool chunked = w.layout.scope != fmt::ScaleScope::Group || w.layout.groupWeights % chunk == 0;
    const std::uint32_t chunkCols = chunked ? K / chunk * chunk : 0;
    const bool fourBit = w.layout.type == fmt::QuantType::Int4 || w.layout.type == fmt::QuantType::Nf4;

    std::vector<float> xNat(std::uint64_t{args.batch} * K);
    for (std::uint64_t i = 0; i < xNat.size(); ++i)
        xNat[i] = fmt::halfToFloat(args.x[i]);
    // x in the order of the decoded chunks: 4-bit chunks decode even columns first, then odd ones.
    std::vector<float> xChunk(std::uint64_t{args.batch} * chunkCols);
    for (std::uint32_t b = 0; b < args.batch; ++b) {
        const float* src = xNat.data() + std::uint64_t{b} * K;
        float* dst = xChunk.data() + std::uint64_t{b} * chunkCols;
        for (std::uint32_t k0 = 0; k0 < chunkCols; k0 += chunk)
            for (std::uint32_t j = 0; j < chunk; ++j)
                dst[k0 + j] = fourBit ? src[k0 + (j < chunk / 2 ? 2 * j : 2 * (j - chunk / 2) + 1)] : src[k0 + j];
    }
    const bool useAvx2 = cpuUsesAvx2() && !options.portable;
#if HEADROOM_CPU_X86
    if (useAvx2 && options.quantizeActivations && args.batch == 1 && integerDotLayout(w)) {
        std::vector<std::int8_t> xq(K / 32 * 32);
        std::vector<float> xScale(K / 32);
        quantizeActivations32(xNat.data(), K, xq.data(), xScale.data());
        if (w.layout.type == fmt::QuantType::Int4) {
            // Each block's codes as [even columns][odd columns], and 8 d sum(codes) per block.
            std::vector<std::int8_t> xqPerm(xq.size());
            std::vector<float> xOffset(K / 32);
            for (std::uint32_t blk = 0; blk < K / 32; ++blk) {
                const std::int8_t* src = xq.data() + std::uint64_t{blk} * 32;
                std::int8_t* dst = xqPerm.data() + std::uint64_t{blk} * 32;
                int sum = 0;
                for (int j = 0; j < 16; ++j) {
                    dst[j] = src[2 * j];
                    dst[16 + j] = src[2 * j + 1];
                    sum += src[2 * j] + src[2 * j + 1];
                }
                xOffset[blk] = 8.0f * xScale[blk] * static_cast<float>(sum);
            }
            detail::parallelFor(w.rows, options.threads, [&](std::uint64_t begin, std::uint64_t end) {
                avx2::gemvRowsInt4(args, xNat.data(), xqPerm.data(), xScale.data(), xOffset.data(), begin, end);
            });
            return Status::Ok;
        }
        detail::parallelFor(w.rows, options.threads, [&](std::uint64_t begin, std::uint64_t end) {
            avx2::gemvRowsQ8(args, xNat.data(), xq.data(), xScale.data(), begin, end);
        });
        return Status::Ok;
    }
#endif
    // B >= 2 int8 / int4 rows [0, first) by the 8-row panels, the rest below.
    const std::uint32_t first = detail::panelKernelsRun(args, options.quantizeActivations, useAvx2)
                                    ? detail::gemvPanels(args, xNat.data(), options.threads, options.vnni, options.amx)
                                    : 0;
    detail::parallelFor(w.rows - first, options.threads, [&](std::uint64_t begin, std::uint64_t end) {
        begin += first;
        end += first;
#if HEADROOM_CPU_X86
        if (useAvx2) {
            if (args.batch >= 2 && chunked && chunkCols > 0)
                avx2::gemmRows(args, xNat.data(), xChunk.data(), begin, end);
            else
                avx2::gemvRows(args, xNat.data(), xChunk.data(), begin, end);
            return;
        }
#endif
        (void)useAvx2;
        portable::gemvRows(args, xNat.data(), xChunk.data(), begin, end);
    });
    return Status::Ok;
}

namespace {

/// Tokens [s0, s1) of sequence b: one work item of the span-split decode attention.
struct AttentionSpan {
    std::uint32_t b, s0, s1;
};

/// Fewest tokens a span gets when a sequence is split over threads (the merge costs one pass over
/// H x D floats a span; a span of 256 tokens reads 256 x H_kv x D x 4 bytes of K and V).
constexpr std::uint32_t kMinSpanTokens = 256;

/// The work items of decodeAttentionCpu: the tokens of every sequence in spans of about
/// total / workers tokens (whole tiles, at least kMinSpanTokens), so one long sequence is split
/// over the threads (as flash-decoding splits the KV sequence) and many sequences are one span
/// each.
std::vector<AttentionSpan> attentionSpans(const DecodeAttentionArgs& args, unsigned threads) {
    std::uint64_t total = 0;
    for (std::uint32_t b = 0; b < args.batch; ++b)
        total += static_cast<std::uint32_t>(args.seqLens[b]);
    const unsigned workers = detail::workerCount(threads, total);
    const std::uint64_t share = (total + workers - 1) / workers;
    const std::uint64_t tiles = (share + portable::kAttentionTile - 1) / portable::kAttentionTile;
    const auto spanTokens = static_cast<std::uint32_t>(
        std::max<std::uint64_t>(kMinSpanTokens, std::min<std::uint64_t>(tiles * portable::kAttentionTile, args.maxSeqTokens())));
    std::vector<AttentionSpan> spans;
    for (std::uint32_t b = 0; b < args.batch; ++b) {
        const auto tokens = static_cast<std::uint32_t>(args.seqLens[b]);
        for (std::uint32_t s0 = 0; s0 < tokens; s0 += spanTokens)
            spans.push_back({b, s0, std::min(tokens, s0 + spanTokens)});
    }
    return spans;
}

/// out[b][h] = (sum over b's spans of acc e^(max - M)) / (sum of sum e^(max - M)), M the largest
/// max: the spans' partials [H][D + 2] (acc[D], max, sum; attentionSpan8) merged per query head.
void mergeAttentionSpans(const DecodeAttentionArgs& args, const std::vector<AttentionSpan>& spans, const float* partials) {
    const std::uint32_t D = args.headDim, H = args.numHeads;
    const std::uint64_t headStride = std::uint64_t{D} + 2, spanStride = H * headStride;
    for (std::size_t first = 0; first < spans.size();) {
        std::size_t last = first;
        while (last < spans.size() && spans[last].b == spans[first].b)
            ++last;
        for (std::uint32_t h = 0; h < H; ++h) {
            float* out = args.out + (std::uint64_t{spans[first].b} * H + h) * D;
            float maxScore = -std::numeric_limits<float>::infinity();
            for (std::size_t i = first; i < last; ++i)
                maxScore = std::max(maxScore, partials[i * spanStride + h * headStride + D]);
            std::fill(out, out + D, 0.0f);
            float sum = 0.0f;
            for (std::size_t i = first; i < last; ++i) {
                const float* p = partials + i * spanStride + h * headStride;
                const float weight = std::exp(p[D] - maxScore);
                sum += p[D + 1] * weight;
                for (std::uint32_t d = 0; d < D; ++d)
                    out[d] += p[d] * weight;
            }
            const float inv = 1.0f / sum;
            for (std::uint32_t d = 0; d < D; ++d)
                out[d] *= inv;
        }
        first = last;
    }
}

} // namespace

bool supportsDecodeAttentionCpu(const DecodeAttentionArgs& args) {
    return validate(args) == Status::Ok;
}

Status decodeAttentionCpu(const DecodeAttentionArgs& args, CpuOptions options) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    if (Status status = detail::checkKvIndices(args); status != Status::Ok)
        return status;
    const bool useAvx2 = cpuUsesAvx2() && !options.portable;
#if HEADROOM_CPU_X86
    if (useAvx2 && args.headDim % 8 == 0) {
        const std::vector<AttentionSpan> spans = attentionSpans(args, options.threads);
        const std::uint64_t stride = std::uint64_t{args.numHeads} * (args.headDim + 2);
        std::vector<float> partials(spans.size() * stride);
        detail::parallelFor(spans.size(), options.threads, [&](std::uint64_t begin, std::uint64_t end) {
            avx2::AttentionScratch scratch(args.headDim, args.numHeads / args.numKvHeads);
            std::vector<float> q(std::uint64_t{args.numHeads} * args.headDim);
            for (std::uint64_t i = begin; i < end; ++i)
                avx2::attentionSpan8(args, spans[i].b, spans[i].s0, spans[i].s1, partials.data() + i * stride, scratch, q);
        });
        mergeAttentionSpans(args, spans, partials.data());
        return Status::Ok;
    }
#endif
    detail::parallelFor(std::uint64_t{args.batch} * args.numKvHeads, options.threads,
                        [&](std::uint64_t begin, std::uint64_t end) {
#if HEADROOM_CPU_X86
                            if (useAvx2) {
                                avx2::attentionPairs(args, begin, end);
                                return;
                            }
#endif
                            (void)useAvx2;
                            portable::attentionPairs(args, begin, end);
                        });
    return Status::Ok;
}

} // namespace headroom::kernels
