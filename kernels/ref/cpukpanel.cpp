// The 8-row panels of q4_K and q6_K (kpanel.h): rows repacked once at load into 8 interleaved
// rows per 256-column superblock, as ggml's CPU backend repacks Q4_K (block_q4_Kx8,
// make_block_q4_Kx8 in ggml/src/ggml-cpu/repack.cpp, read at ggml d99724f2); the byte order
// inside a panel block and the kernels below are Headroom's own: 4-byte chunks (one int32 lane a
// row, the operand of vpdpbusd), so one register holds 4 codes of each of the 8 rows and one
// broadcast of 4 activation codes serves all 8.

#include "kpanel.h"

#include "parallel.h"

#include "headroom/formats/ggmlblocks.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HEADROOM_KPANEL_X86 1
#else
#define HEADROOM_KPANEL_X86 0
#endif

namespace headroom::kernels {

namespace fmt = headroom::formats;

namespace {

constexpr std::uint32_t kRows = detail::kPanelRows;

// q4_K panel block (8 x 144 = 1,152 bytes): d[8] fp16, dmin[8] fp16, the 8 rows' 8 scales and
// 8 minimums (6 bits each, 96 bytes: see q4ScaleIndex), then the codes: 32 chunks of 32 bytes,
// chunk (4 l4 + c) = row r's qs[32 c + 4 l4 .. + 4] at bytes 4 r .. 4 r + 3.
constexpr std::uint32_t kQ4PanelDOffset = 0;
constexpr std::uint32_t kQ4PanelDminOffset = 16;
constexpr std::uint32_t kQ4PanelScalesOffset = 32;
constexpr std::uint32_t kQ4PanelQsOffset = 128;
static_assert(kQ4PanelQsOffset + kRows * fmt::kQkK / 2 == kRows * fmt::kQ4_KBlockBytes, "8 q4_K blocks");

// q6_K panel block (8 x 210 = 1,680 bytes): d[8] fp16, scales [16 groups][8 rows] int8, then ql
// in 32 chunks (chunk 2 (8 h + l4) + p = row r's ql[64 h + 32 p + 4 l4 .. + 4]), then qh in 16
// chunks (chunk 8 h + l4 = row r's qh[32 h + 4 l4 .. + 4]), each row's 4 bytes at 4 r.
constexpr std::uint32_t kQ6PanelDOffset = 0;
constexpr std::uint32_t kQ6PanelScalesOffset = 16;
constexpr std::uint32_t kQ6PanelQlOffset = 144;
constexpr std::uint32_t kQ6PanelQhOffset = kQ6PanelQlOffset + kRows * 128;
static_assert(kQ6PanelQhOffset + kRows * 64 == kRows * fmt::kQ6_KBlockBytes, "8 q6_K blocks");

/// Offset in a panel block of byte @p k (< block bytes) of row @p r's block, for every byte that
/// moves as a byte (q4_K's 12 scale bytes, k = 4..15, are re-encoded instead: q4PackScales).
std::uint32_t panelOffset(fmt::QuantType type, std::uint32_t r, std::uint32_t k) {
    if (type == fmt::QuantType::Q4_K) {
        if (k < 2) return kQ4PanelDOffset + 2 * r + k;
        if (k < 4) return kQ4PanelDminOffset + 2 * r + (k - 2);
        const std::uint32_t q = k - fmt::kQ4_KQsOffset, c = q / 32, l = q % 32;
        return kQ4PanelQsOffset + (4 * (l / 4) + c) * 32 + 4 * r + l % 4;
    }
    if (k < fmt::kQ6_KQhOffset) { // ql
        const std::uint32_t h = k / 64, p = (k % 64) / 32, l = k % 32;
        return kQ6PanelQlOffset + (2 * (8 * h + l / 4) + p) * 32 + 4 * r + l % 4;
    }
    if (k < fmt::kQ6_KScalesOffset) { // qh
        const std::uint32_t q = k - fmt::kQ6_KQhOffset, h = q / 32, l = q % 32;
        return kQ6PanelQhOffset + (8 * h + l / 4) * 32 + 4 * r + l % 4;
    }
    if (k < fmt::kQ6_KDOffset) return kQ6PanelScalesOffset + 8 * (k - fmt::kQ6_KScalesOffset) + r;
    return kQ6PanelDOffset + 2 * r + (k - fmt::kQ6_KDOffset);
}

/// Index (< 128) of the 6-bit value of row r's scale (t = 0) or minimum (t = 1) of sub-block j in
/// a q4_K panel's 96 scale bytes: v = 64 t + 8 j + r, its low 4 bits in the nibble of byte v % 64
/// (low nibble for v < 64), its high 2 bits in bits 2 (v / 32) .. + 1 of byte 64 + v % 32. The
/// kernel decodes all 128 with a few AVX2 masks and shifts, in [j][r] order.
constexpr std::uint32_t q4ScaleIndex(std::uint32_t t, std::uint32_t j, std::uint32_t r) { return 64 * t + 8 * j + r; }

/// Writes the 8 rows' scales and minimums (@p blocks: the 8 rows' q4_K blocks) into the 96 bytes @p dst.
void q4PackScales(const std::uint8_t* const* blocks, std::uint8_t* dst) {
    std::uint8_t v[128];
    for (std::uint32_t r = 0; r < kRows; ++r)
        for (std::uint32_t j = 0; j < 8; ++j) {
            int sc = 0, m = 0;
            fmt::q4_KScaleMin(blocks[r] + fmt::kQ4_KScalesOffset, j, sc, m);
            v[q4ScaleIndex(0, j, r)] = static_cast<std::uint8_t>(sc);
            v[q4ScaleIndex(1, j, r)] = static_cast<std::uint8_t>(m);
        }
    for (std::uint32_t b = 0; b < 64; ++b)
        dst[b] = static_cast<std::uint8_t>((v[b] & 15u) | ((v[b + 64] & 15u) << 4));
    for (std::uint32_t b = 0; b < 32; ++b)
        dst[64 + b] = static_cast<std::uint8_t>((v[b] >> 4) | ((v[b + 32] >> 4) << 2) | ((v[b + 64] >> 4) << 4) |
                                                ((v[b + 96] >> 4) << 6));
}

/// The inverse of q4PackScales: row @p r's 12 scale bytes in ggml's encoding (get_scale_min_k4 read
/// backwards: bytes j and j + 4 (j < 4) hold sc_j, m_j and the top 2 bits of sc_{j+4}, m_{j+4};
/// byte j + 8 their low 4 bits) into @p dst.
void q4UnpackScales(const std::uint8_t* src, std::uint32_t r, std::uint8_t* dst) {
    int sc[8], m[8];
    for (std::uint32_t j = 0; j < 8; ++j)
        for (std::uint32_t t = 0; t < 2; ++t) {
            const std::uint32_t v = q4ScaleIndex(t, j, r);
            const int low = v < 64 ? src[v] & 15 : src[v - 64] >> 4;
            const int high = (src[64 + v % 32] >> (2 * (v / 32))) & 3;
            (t == 0 ? sc : m)[j] = low | (high << 4);
        }
    for (std::uint32_t j = 0; j < 4; ++j) {
        dst[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
        dst[j + 4] = static_cast<std::uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
        dst[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

/// The panel of the 8 stored rows @p rows [8][K / 256 blocks] into @p panel (blocks x 8 x block bytes).
void buildKPanel(fmt::QuantType type, std::uint32_t blocks, const std::uint8_t* rows, std::uint64_t stride,
                 std::uint8_t* panel) {
    const std::uint32_t bytes = fmt::ggmlBlockBytes(type);
    for (std::uint32_t i = 0; i < blocks; ++i) {
        std::uint8_t* dst = panel + std::uint64_t{i} * kRows * bytes;
        const std::uint8_t* in[kRows];
        for (std::uint32_t r = 0; r < kRows; ++r)
            in[r] = rows + r * stride + std::uint64_t{i} * bytes;
        for (std::uint32_t r = 0; r < kRows; ++r)
            for (std::uint32_t k = 0; k < bytes; ++k)
                if (type != fmt::QuantType::Q4_K || k < fmt::kQ4_KScalesOffset || k >= fmt::kQ4_KQsOffset)
                    dst[panelOffset(type, r, k)] = in[r][k];
        if (type == fmt::QuantType::Q4_K)
            q4PackScales(in, dst + kQ4PanelScalesOffset);
    }
}

#if HEADROOM_KPANEL_X86
/// Bytes ahead of the superblock being multiplied that the kernels prefetch (two panel blocks of
/// q4_K; the q4_0 panels' 2,304 B of cpugemm8.cpp). Measured in bench_ggml_kernels (q6_K
/// 4096 x 14336, one thread, 2026-12-02): 7.1 ms CPU without, 3.9 ms at 2,304 B, 3.9 ms at 4,608 B.
constexpr std::uint32_t kPrefetchBytes = 2304;

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define HEADROOM_DOT_ACC(acc, u, s)                                                                                    \
    _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#include "kpanel.inc"
#undef HEADROOM_DOT_ACC
} // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
namespace vnni {
#define HEADROOM_DOT_ACC(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#include "kpanel.inc"
#undef HEADROOM_DOT_ACC
} // namespace vnni
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
/// formats::quantizeQ8_KActivations in AVX2, bit for bit: max = the first value of largest
/// magnitude, iscale = -127 / max, q = min(127, roundf(iscale x)) (ties away from zero, as
/// nearestInt), the code sums of every 16, d = 1 / iscale returned (0 for an all-zero x).
float quantizeQ8_KAvx2(const float* x, std::int8_t* q, std::int16_t* sums16) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    __m256 amax = _mm256_setzero_ps();
    for (std::uint32_t j = 0; j < fmt::kQkK; j += 8)
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(signBit, _mm256_loadu_ps(x + j)));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const float largest = _mm_cvtss_f32(m);
    if (!(largest > 0.0f)) // all zeros (or NaN: the scalar form's answer)
        return fmt::quantizeQ8_KActivations(x, q, sums16);
    float max = 0.0f;
    const __m256 target = _mm256_set1_ps(largest);
    for (std::uint32_t j = 0; j < fmt::kQkK; j += 8) {
        const int hits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(signBit, _mm256_loadu_ps(x + j)), target, _CMP_EQ_OQ));
        if (hits != 0) {
            max = x[j + static_cast<std::uint32_t>(__builtin_ctz(static_cast<unsigned>(hits)))];
            break;
        }
    }
    const float iscale = -127.0f / max;
    const __m256 scale = _mm256_set1_ps(iscale);
    for (std::uint32_t j = 0; j < fmt::kQkK; j += 32) {
        __m256i codes[4];
        for (int t = 0; t < 4; ++t) {
            const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * t), scale);
            // roundf: round to nearest, a tie (fraction exactly 0.5) away from zero.
            const __m256 truncated = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            const __m256 fraction = _mm256_andnot_ps(signBit, _mm256_sub_ps(v, truncated));
            const __m256 away = _mm256_add_ps(truncated, _mm256_or_ps(_mm256_and_ps(signBit, v), _mm256_set1_ps(1.0f)));
            const __m256 rounded = _mm256_blendv_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), away,
                                                    _mm256_cmp_ps(fraction, _mm256_set1_ps(0.5f), _CMP_EQ_OQ));
            codes[t] = _mm256_min_epi32(_mm256_cvtps_epi32(rounded), _mm256_set1_epi32(127));
        }
        // 16 sums of 16 codes: codes[2 g'] + codes[2 g' + 1] summed over their 8 lanes.
        for (int g = 0; g < 2; ++g) {
            const __m256i pair = _mm256_add_epi32(codes[2 * g], codes[2 * g + 1]);
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(pair), _mm256_extracti128_si256(pair, 1));
            s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
            sums16[j / 16 + static_cast<std::uint32_t>(g)] = static_cast<std::int16_t>(_mm_cvtsi128_si32(s4));
        }
        const __m256i words = _mm256_packs_epi16(_mm256_packs_epi32(codes[0], codes[1]), _mm256_packs_epi32(codes[2], codes[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j),
                            _mm256_permutevar8x32_epi32(words, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
    return 1.0f / iscale;
}
#pragma GCC pop_options

bool cpuHasAvxVnniK() {
    static const bool has = __builtin_cpu_supports("avxvnni");
    return has;
}
#endif

/// y[at] = @p value as the output type of @p args.
[[maybe_unused]] void storeY(const GemvArgs& args, std::uint64_t at, float value) {
    if (args.yType == OutputType::Fp32)
        static_cast<float*>(args.y)[at] = value;
    else
        static_cast<std::uint16_t*>(args.y)[at] = fmt::floatToHalf(value);
}

} // namespace

namespace detail {

bool isKQuant(fmt::QuantType type) {
    return type == fmt::QuantType::Q4_K || type == fmt::QuantType::Q6_K;
}

bool kPanelsRun(const GemvArgs& args, bool quantizeActivations, bool useAvx2) {
    const WeightMatrix& w = args.weights;
    return HEADROOM_KPANEL_X86 && useAvx2 && quantizeActivations && isKQuant(w.layout.type) &&
           w.packing == RowPacking::Interleaved8 && w.rows >= kRows;
}

std::uint32_t gemvKPanels(const GemvArgs& args, const float* xNat, unsigned threads, bool allowVnni) {
    const WeightMatrix& w = args.weights;
    const fmt::QuantType type = w.layout.type;
    const std::uint32_t K = w.cols, B = args.batch, blocks = K / fmt::kQkK;
    const std::uint32_t groups = w.rows / kRows;
    const std::uint64_t groupBytes = std::uint64_t{kRows} * fmt::rowBytes(w.layout, K);
    // x as ggml's q8_K (quantize_row_q8_K_ref): codes, one scale per 256, code sums per 16.
    std::vector<std::int8_t> xq(std::uint64_t{B} * K);
    std::vector<float> xd(std::uint64_t{B} * blocks);
    std::vector<std::int16_t> sums16(std::uint64_t{B} * K / 16);
#if HEADROOM_KPANEL_X86
    for (std::uint64_t i = 0; i < xd.size(); ++i)
        xd[i] = quantizeQ8_KAvx2(xNat + i * fmt::kQkK, xq.data() + i * fmt::kQkK, sums16.data() + i * 16);
    const bool useVnni = allowVnni && cpuHasAvxVnniK();
    const bool q4 = type == fmt::QuantType::Q4_K;
    parallelFor(groups, threads, [&](std::uint64_t begin, std::uint64_t end) {
        for (std::uint64_t g = begin; g < end; ++g) {
            const std::uint8_t* panel = w.data + g * groupBytes;
            for (std::uint32_t b = 0; b < B; ++b) {
                const std::int8_t* x = xq.data() + std::uint64_t{b} * K;
                const float* d = xd.data() + std::uint64_t{b} * blocks;
                const std::int16_t* s = sums16.data() + std::uint64_t{b} * K / 16;
                alignas(32) float out[kRows];
                if (useVnni)
                    q4 ? vnni::q4_KPanel(panel, blocks, x, d, s, out) : vnni::q6_KPanel(panel, blocks, x, d, s, out);
                else
                    q4 ? avx2::q4_KPanel(panel, blocks, x, d, s, out) : avx2::q6_KPanel(panel, blocks, x, d, s, out);
                for (std::uint32_t r = 0; r < kRows; ++r)
                    storeY(args, std::uint64_t{b} * w.rows + g * kRows + r, out[r]);
            }
        }
    });
#else
    for (std::uint64_t i = 0; i < xd.size(); ++i)
        xd[i] = fmt::quantizeQ8_KActivations(xNat + i * fmt::kQkK, xq.data() + i * fmt::kQkK, sums16.data() + i * 16);
    (void)threads, (void)allowVnni, (void)groupBytes, (void)type;
#endif
    return groups * kRows;
}

Status packKRows8(fmt::QuantType type, std::uint32_t rows, std::uint32_t cols, std::uint8_t* data) {
    if (!isKQuant(type) || rows == 0 || cols == 0 || cols % fmt::kQkK != 0 || !data)
        return Status::InvalidArgument;
    const std::uint64_t stride = fmt::rowBytes(fmt::ggmlLayout(type), cols);
    const std::uint64_t groupBytes = kRows * stride;
    std::vector<std::uint8_t> panel(groupBytes);
    for (std::uint64_t g = 0; g < rows / kRows; ++g) {
        buildKPanel(type, cols / fmt::kQkK, data + g * groupBytes, stride, panel.data());
        std::memcpy(data + g * groupBytes, panel.data(), groupBytes);
    }
    return Status::Ok;
}

void unpackKPanelGroup(fmt::QuantType type, std::uint32_t cols, const std::uint8_t* group, std::uint8_t* rows) {
    const std::uint32_t blocks = cols / fmt::kQkK, bytes = fmt::ggmlBlockBytes(type);
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const std::uint8_t* src = group + std::uint64_t{i} * kRows * bytes;
        for (std::uint32_t r = 0; r < kRows; ++r) {
            std::uint8_t* block = rows + std::uint64_t{r} * blocks * bytes + std::uint64_t{i} * bytes;
            for (std::uint32_t k = 0; k < bytes; ++k)
                if (type != fmt::QuantType::Q4_K || k < fmt::kQ4_KScalesOffset || k >= fmt::kQ4_KQsOffset)
                    block[k] = src[panelOffset(type, r, k)];
            if (type == fmt::QuantType::Q4_K)
                q4UnpackScales(src + kQ4PanelScalesOffset, r, block + fmt::kQ4_KScalesOffset);
        }
    }
}

} // namespace detail

} // namespace headroom::kernels
