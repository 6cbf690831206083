// The 8-row panel GEMV/GEMM of the fast CPU kernels (gemm8.h): ggml's interleaved Q4_0 layout
// (block_q4_0x8, make_block_q4_0x8 in ggml/src/ggml-cpu/repack.cpp, read at ggml d99724f2; the
// kernels below are Headroom's own) for q8_0, q4_0, int8 and int4 codes.

#include "gemm8.h"
#include "kpanel.h"

#include "parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HEADROOM_GEMM8_X86 1
#else
#define HEADROOM_GEMM8_X86 0
#endif

namespace headroom::kernels {

namespace fmt = headroom::formats;

namespace {

/// Columns per panel block (a q8_0 / q4_0 block; the int8 / int4 scale territories are whole ones).
constexpr std::uint32_t kBlockCols = 32;
/// Bytes of the 8 fp16 scales at the head of a panel block.
constexpr std::uint32_t kPanelScaleBytes = detail::kPanelRows * 2;
/// Bytes per interleaved chunk (ggml's blck_size_interleave of Q4_0 for AVX2).
constexpr std::uint32_t kChunkBytes = 8;

/// Code bytes of one row in one 32-column block: 16 for 4-bit codes, 32 for 8-bit ones.
constexpr std::uint32_t codeBytes(fmt::QuantType type) {
    return type == fmt::QuantType::Q4_0 || type == fmt::QuantType::Int4 ? 16 : 32;
}

/// Bytes of one panel block: the 8 scales, then 8 rows of codes.
constexpr std::uint32_t panelBlockBytes(fmt::QuantType type) {
    return kPanelScaleBytes + detail::kPanelRows * codeBytes(type);
}
static_assert(panelBlockBytes(fmt::QuantType::Q4_0) == 8 * fmt::kQ4_0BlockBytes, "block_q4_0x8 is 8 q4_0 blocks");
static_assert(panelBlockBytes(fmt::QuantType::Q8_0) == 8 * fmt::kQ8_0BlockBytes, "8 q8_0 blocks");

/// Writes block @p i of row @p r (< 8) into panel block @p dst: its scale bits @p scale and its
/// codes @p codes [codeBytes] in chunks of 8 bytes at chunk (c * 8 + r); q4_0 nibbles XOR 0x88
/// (q + 8 -> q, ggml's xor_mask).
void placeRowBlock(fmt::QuantType type, std::uint32_t r, std::uint16_t scale, const std::uint8_t* codes, std::uint8_t* dst) {
    std::memcpy(dst + 2 * r, &scale, 2);
    std::uint8_t* qs = dst + kPanelScaleBytes;
    for (std::uint32_t c = 0; c < codeBytes(type) / kChunkBytes; ++c) {
        std::uint8_t* chunk = qs + (c * detail::kPanelRows + r) * kChunkBytes;
        std::memcpy(chunk, codes + c * kChunkBytes, kChunkBytes);
        if (type == fmt::QuantType::Q4_0)
            for (std::uint32_t j = 0; j < kChunkBytes; ++j)
                chunk[j] ^= 0x88u;
    }
}

/// The panel of rows [n0, n0 + 8) of the stored matrix @p w into @p panel [K / 32][panelBlockBytes].
void buildPanel(const WeightMatrix& w, std::uint64_t n0, std::uint8_t* panel) {
    const fmt::QuantType type = w.layout.type;
    const bool ggml = fmt::isGgmlBlockType(type);
    const std::uint32_t blocks = w.cols / kBlockCols;
    const std::uint64_t stride = fmt::rowBytes(w.layout, w.cols);
    for (std::uint32_t r = 0; r < detail::kPanelRows; ++r) {
        const std::uint64_t n = n0 + r;
        const std::uint8_t* row = w.data + n * stride;
        const std::uint16_t* scales = ggml ? nullptr : w.scales + fmt::rowScaleOffset(w.layout, n, w.cols);
        for (std::uint32_t i = 0; i < blocks; ++i) {
            std::uint8_t* dst = panel + std::uint64_t{i} * panelBlockBytes(type);
            if (ggml) {
                const std::uint8_t* block = row + std::uint64_t{i} * fmt::ggmlBlockBytes(type);
                std::uint16_t d;
                std::memcpy(&d, block, 2);
                placeRowBlock(type, r, d, block + 2, dst);
            } else {
                placeRowBlock(type, r, scales[fmt::scaleIndexInRow(w.layout, std::uint64_t{i} * kBlockCols)],
                              row + std::uint64_t{i} * codeBytes(type), dst);
            }
        }
    }
}

/// Column (within its block of 32) of position j of the activation codes in slot order: four
/// slots of 8 codes, slot s multiplying the codes that the kernels take from chunk s / 2 (low
/// nibbles for even s, high for odd s with 4-bit codes; chunk s with 8-bit ones).
std::uint32_t slotColumn(fmt::QuantType type, std::uint32_t j) {
    const std::uint32_t s = j / 8, e = j % 8;
    switch (type) {
    case fmt::QuantType::Q4_0: return (s & 1u) * 16 + (s / 2) * 8 + e; // byte b: weights b and b + 16
    case fmt::QuantType::Int4: return (s / 2) * 16 + 2 * e + (s & 1u); // byte b: columns 2b and 2b + 1
    default: return j;                                                   // 8-bit: byte order
    }
}

#if HEADROOM_GEMM8_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
/// One block of 32 activations quantized to int8 in @p q (column order) with its scale returned,
/// bit for bit as the scalar forms: @p ggmlRounding as quantizeQ8_0Activations (q = roundf(x / d),
/// half away from zero, d rounded to fp16 when returned), else d unrounded and q = lrint(x / d)
/// (the current rounding mode: nearest even).
float quantizeBlock32Avx2(const float* x, bool ggmlRounding, std::int8_t* q) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(signBit, v[i]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const float d = _mm_cvtss_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    __m256i codes[4];
    for (int i = 0; i < 4; ++i) {
        const __m256 scaled = _mm256_mul_ps(v[i], _mm256_set1_ps(id));
        __m256 rounded = _mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        if (ggmlRounding) { // roundf: a tie (fraction exactly 0.5) goes away from zero, not to even
            const __m256 truncated = _mm256_round_ps(scaled, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            const __m256 fraction = _mm256_andnot_ps(signBit, _mm256_sub_ps(scaled, truncated));
            const __m256 tie = _mm256_cmp_ps(fraction, _mm256_set1_ps(0.5f), _CMP_EQ_OQ);
            const __m256 away = _mm256_add_ps(truncated, _mm256_or_ps(_mm256_and_ps(signBit, scaled), _mm256_set1_ps(1.0f)));
            rounded = _mm256_blendv_ps(rounded, away, tie);
        }
        codes[i] = _mm256_cvtps_epi32(rounded);
    }
    // int32 -> int8 with saturation (|code| <= 127 here); packs interleave the 128-bit lanes, the
    // permute puts the 8 dwords back in column order.
    const __m256i words = _mm256_packs_epi16(_mm256_packs_epi32(codes[0], codes[1]), _mm256_packs_epi32(codes[2], codes[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_permutevar8x32_epi32(words, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    return ggmlRounding ? fmt::roundToHalf(d) : d;
}
#pragma GCC pop_options
#endif

/// slotColumn of every position, per code width and nibble order.
struct SlotTable {
    std::uint8_t column[kBlockCols];
    explicit SlotTable(fmt::QuantType type) : column{} {
        for (std::uint32_t j = 0; j < kBlockCols; ++j)
            column[j] = static_cast<std::uint8_t>(slotColumn(type, j));
    }
};

/// B activation rows quantized per 32 columns, codes in slot order.
struct PanelActivations {
    std::vector<std::int8_t> q;   ///< codes [B][K / 32][32], slot order (slotColumn)
    std::vector<float> d;         ///< scales [B][K / 32]
    std::vector<std::int32_t> sum8; ///< 8 x the code sum of each block [B][K / 32] (4-bit: the q + 8 offset)
};

/// Quantizes @p x [B][K]: ggml's q8_0 activations for q8_0 / q4_0 (quantizeQ8_0Activations:
/// d = max|x| / 127 rounded to fp16, q = roundf(x / d)), d unrounded and q = lrint(x / d) for
/// int8 / int4 (as the B = 1 integer dots of cpukernels.cpp).
PanelActivations quantizePanelActivations(const float* x, std::uint32_t B, std::uint32_t K, fmt::QuantType type,
                                          bool useAvx2) {
    const std::uint32_t blocks = K / kBlockCols;
    static const SlotTable q4Slots(fmt::QuantType::Q4_0), int4Slots(fmt::QuantType::Int4), byteSlots(fmt::QuantType::Int8);
    const SlotTable& slots = type == fmt::QuantType::Q4_0 ? q4Slots : type == fmt::QuantType::Int4 ? int4Slots : byteSlots;
    const bool ggml = fmt::isGgmlBlockType(type);
    PanelActivations a;
    a.q.resize(std::uint64_t{B} * blocks * kBlockCols);
    a.d.resize(std::uint64_t{B} * blocks);
    a.sum8.resize(a.d.size());
    std::int8_t natural[kBlockCols];
    for (std::uint32_t b = 0; b < B; ++b)
        for (std::uint32_t i = 0; i < blocks; ++i) {
            const float* xb = x + std::uint64_t{b} * K + std::uint64_t{i} * kBlockCols;
            const std::uint64_t at = std::uint64_t{b} * blocks + i;
            if (useAvx2) {
#if HEADROOM_GEMM8_X86
                a.d[at] = quantizeBlock32Avx2(xb, ggml, natural);
#endif
            } else if (ggml) {
                a.d[at] = fmt::quantizeQ8_0Activations(xb, natural);
            } else {
                float amax = 0.0f;
                for (std::uint32_t j = 0; j < kBlockCols; ++j)
                    amax = std::max(amax, std::fabs(xb[j]));
                const float d = amax / 127.0f;
                const float inv = d > 0.0f ? 1.0f / d : 0.0f;
                for (std::uint32_t j = 0; j < kBlockCols; ++j)
                    natural[j] = static_cast<std::int8_t>(std::lrint(xb[j] * inv));
                a.d[at] = d;
            }
            int sum = 0;
            std::int8_t* q = a.q.data() + at * kBlockCols;
            for (std::uint32_t j = 0; j < kBlockCols; ++j) {
                q[j] = natural[slots.column[j]];
                sum += q[j];
            }
            a.sum8[at] = 8 * sum;
        }
    return a;
}

#if HEADROOM_GEMM8_X86
/// How far ahead of the panel block being multiplied the kernels ask for the panel's bytes
/// (_mm_prefetch): one thread streaming a 300 MB q4_0 matrix from DRAM read it at 0.7 of a plain
/// read loop without, 0.9 with 1.5-3 KB (16 q4_0 panel blocks, 2,304 B, chosen), on this
/// project's KVM Xeon; past the end of a panel it touches the next one or nothing (a prefetch
/// never faults).
constexpr std::uint32_t kPrefetchBytes = 2304;
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define HEADROOM_SUM4_U8S8(c0, x0, c1, x1, c2, x2, c3, x3)                                                             \
    _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(c0, x0), _mm256_maddubs_epi16(c1, x1)),  \
                                       _mm256_add_epi16(_mm256_maddubs_epi16(c2, x2), _mm256_maddubs_epi16(c3, x3))), \
                      ones)
#define HEADROOM_DOT_ACC(acc, u, s) _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), ones))
#include "panel.inc"
#undef HEADROOM_SUM4_U8S8
#undef HEADROOM_DOT_ACC
} // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
namespace vnni {
#define HEADROOM_SUM4_U8S8(c0, x0, c1, x1, c2, x2, c3, x3)                                                             \
    _mm256_dpbusd_avx_epi32(                                                                                           \
        _mm256_dpbusd_avx_epi32(                                                                                       \
            _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), c0, x0), c1, x1), c2, x2),         \
        c3, x3)
#define HEADROOM_DOT_ACC(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#include "panel.inc"
#undef HEADROOM_SUM4_U8S8
#undef HEADROOM_DOT_ACC
} // namespace vnni
#pragma GCC pop_options

/// Whether this CPU has AVX-VNNI (vpdpbusd on 256-bit registers).
bool cpuHasAvxVnni() {
    static const bool has = __builtin_cpu_supports("avxvnni");
    return has;
}
#endif

/// y[at] = @p value as the output type of @p args.
void storeY(const GemvArgs& args, std::uint64_t at, float value) {
    if (args.yType == OutputType::Fp32)
        static_cast<float*>(args.y)[at] = value;
    else
        static_cast<std::uint16_t*>(args.y)[at] = fmt::floatToHalf(value);
}

} // namespace

namespace detail {

bool panelKernelsRun(const GemvArgs& args, bool quantizeActivations, bool useAvx2) {
    const WeightMatrix& w = args.weights;
    if (!HEADROOM_GEMM8_X86 || !useAvx2 || !quantizeActivations || w.rows < kPanelRows || w.cols < kBlockCols)
        return false;
    const fmt::QuantType type = w.layout.type;
    if (type == fmt::QuantType::Q8_0 || type == fmt::QuantType::Q4_0)
        return args.batch >= 2 || w.packing == RowPacking::Interleaved8;
    if (type != fmt::QuantType::Int8 && type != fmt::QuantType::Int4)
        return false;
    const bool wholeBlocks = w.layout.scope != fmt::ScaleScope::Group || w.layout.groupWeights % kBlockCols == 0;
    return wholeBlocks && args.batch >= 2;
}

float quantizeActivationBlock32(const float* x, std::int8_t* q) {
#if HEADROOM_GEMM8_X86
    return quantizeBlock32Avx2(x, true, q);
#else
    return fmt::quantizeQ8_0Activations(x, q);
#endif
}

std::uint32_t gemvPanels(const GemvArgs& args, const float* xNat, unsigned threads, bool allowVnni, bool allowAmx) {
    if (allowAmx && amxKernelsRun(args))
        return gemvAmx(args, xNat, threads);
    const WeightMatrix& w = args.weights;
    const fmt::QuantType type = w.layout.type;
    const std::uint32_t K = w.cols, B = args.batch;
    const std::uint32_t blocks = K / kBlockCols;
    const std::uint32_t groups = w.rows / kPanelRows;
    const std::uint64_t stride = fmt::rowBytes(w.layout, K);
    const bool packed = w.packing == RowPacking::Interleaved8;
    const bool fourBit = codeBytes(type) == 16;
    const PanelActivations a = quantizePanelActivations(xNat, B, K, type, HEADROOM_GEMM8_X86 != 0);
#if HEADROOM_GEMM8_X86
    const bool useVnni = allowVnni && cpuHasAvxVnni();
    parallelFor(groups, threads, [&](std::uint64_t begin, std::uint64_t end) {
        std::vector<std::uint8_t> built(packed ? 0 : std::uint64_t{blocks} * panelBlockBytes(type));
        for (std::uint64_t g = begin; g < end; ++g) {
            const std::uint64_t n0 = g * kPanelRows;
            const std::uint8_t* panel = w.data + n0 * stride;
            if (!packed) {
                buildPanel(w, n0, built.data());
                panel = built.data();
            }
            for (std::uint32_t b0 = 0; b0 < B; b0 += 4) {
                const int count = static_cast<int>(std::min<std::uint32_t>(4, B - b0));
                float out[4][kPanelRows];
                if (useVnni)
                    fourBit ? vnni::panelTileAny<true>(count, panel, blocks, a, b0, out)
                            : vnni::panelTileAny<false>(count, panel, blocks, a, b0, out);
                else
                    fourBit ? avx2::panelTileAny<true>(count, panel, blocks, a, b0, out)
                            : avx2::panelTileAny<false>(count, panel, blocks, a, b0, out);
                for (int b = 0; b < count; ++b)
                    for (std::uint32_t r = 0; r < kPanelRows; ++r) {
                        const std::uint64_t n = n0 + r;
                        float sum = out[b][r];
                        if (blocks * kBlockCols < K) { // int8 / int4 columns past the last whole block
                            const std::uint8_t* row = w.data + n * stride;
                            const std::uint16_t* scales = w.scales + fmt::rowScaleOffset(w.layout, n, K);
                            const float* x = xNat + std::uint64_t{b0 + static_cast<std::uint32_t>(b)} * K;
                            for (std::uint32_t k = blocks * kBlockCols; k < K; ++k)
                                sum += fmt::loadWeight(w.layout, row, scales, k) * x[k];
                        }
                        storeY(args, std::uint64_t{b0 + static_cast<std::uint32_t>(b)} * w.rows + n, sum);
                    }
            }
        }
    });
#else
    (void)threads, (void)stride, (void)packed, (void)fourBit, (void)a, (void)allowVnni;
#endif
    return groups * kPanelRows;
}

void unpackPanelGroup(fmt::QuantType type, std::uint32_t cols, const std::uint8_t* group, std::uint8_t* rows) {
    if (isKQuant(type))
        return unpackKPanelGroup(type, cols, group, rows);
    const std::uint32_t blocks = cols / kBlockCols;
    const std::uint32_t blockBytes = fmt::ggmlBlockBytes(type);
    for (std::uint32_t i = 0; i < blocks; ++i) {
        const std::uint8_t* src = group + std::uint64_t{i} * panelBlockBytes(type);
        for (std::uint32_t r = 0; r < kPanelRows; ++r) {
            std::uint8_t* block = rows + std::uint64_t{r} * blocks * blockBytes + std::uint64_t{i} * blockBytes;
            std::memcpy(block, src + 2 * r, 2);
            for (std::uint32_t c = 0; c < codeBytes(type) / kChunkBytes; ++c) {
                const std::uint8_t* chunk = src + kPanelScaleBytes + (c * kPanelRows + r) * kChunkBytes;
                for (std::uint32_t j = 0; j < kChunkBytes; ++j)
                    block[2 + c * kChunkBytes + j] = type == fmt::QuantType::Q4_0 ? chunk[j] ^ 0x88u : chunk[j];
            }
        }
    }
}

} // namespace detail

bool packsRows8(fmt::QuantLayout layout) {
    return layout.type == fmt::QuantType::Q8_0 || layout.type == fmt::QuantType::Q4_0 || detail::isKQuant(layout.type);
}

Status packRows8(fmt::QuantLayout layout, std::uint32_t rows, std::uint32_t cols, std::uint8_t* data) {
    if (detail::isKQuant(layout.type))
        return detail::packKRows8(layout.type, rows, cols, data);
    if (!packsRows8(layout) || rows == 0 || cols == 0 || cols % kBlockCols != 0 || !data)
        return Status::InvalidArgument;
    WeightMatrix w;
    w.layout = layout;
    w.rows = rows;
    w.cols = cols;
    w.data = data;
    const std::uint64_t groupBytes = std::uint64_t{detail::kPanelRows} * fmt::rowBytes(layout, cols);
    std::vector<std::uint8_t> panel(groupBytes);
    for (std::uint64_t g = 0; g < rows / detail::kPanelRows; ++g) {
        buildPanel(w, g * detail::kPanelRows, panel.data());
        std::memcpy(data + g * groupBytes, panel.data(), groupBytes);
    }
    return Status::Ok;
}

} // namespace headroom::kernels
