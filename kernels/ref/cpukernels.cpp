// Fast CPU kernels: threads over rows (GEMV) or (sequence, KV head) pairs (attention), with the
// loops of cpuloops.inc built twice (portable, and AVX2/FMA/F16C chosen at run time).

#include "headroom/kernels/cpukernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

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
#define HEADROOM_DECODE_HALF8(src, dst)                                                                                \
    _mm256_storeu_ps((dst), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))))
#define HEADROOM_NF4_DECODE8(bytes, levels, lo, hi) nf4Decode8((bytes), (levels), (lo), (hi))
#include "cpuloops.inc"
#undef HEADROOM_DECODE_HALF8
#undef HEADROOM_NF4_DECODE8
} // namespace avx2
#pragma GCC pop_options
#endif

bool cpuUsesAvx2() {
#if HEADROOM_CPU_X86
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                             __builtin_cpu_supports("f16c");
    return has;
#else
    return false;
#endif
}

bool supportsGemvCpu(const GemvArgs& args) {
    return validate(args) == Status::Ok;
}

Status gemvCpu(const GemvArgs& args, CpuOptions options) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    const WeightMatrix& w = args.weights;
    const std::uint32_t K = w.cols;
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
    detail::parallelFor(w.rows, options.threads, [&](std::uint64_t begin, std::uint64_t end) {
#if HEADROOM_CPU_X86
        if (useAvx2) {
            avx2::gemvRows(args, xNat.data(), xChunk.data(), begin, end);
            return;
        }
#endif
        (void)useAvx2;
        portable::gemvRows(args, xNat.data(), xChunk.data(), begin, end);
    });
    return Status::Ok;
}

bool supportsDecodeAttentionCpu(const DecodeAttentionArgs& args) {
    return validate(args) == Status::Ok;
}

Status decodeAttentionCpu(const DecodeAttentionArgs& args, CpuOptions options) {
    if (Status status = validate(args); status != Status::Ok)
        return status;
    if (Status status = detail::checkKvIndices(args); status != Status::Ok)
        return status;
    const bool useAvx2 = cpuUsesAvx2() && !options.portable;
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
