// The AMX batched GEMM of the fast CPU kernels (gemm8.h, gemvAmx): q8_0 / q4_0 weights, as
// stored or in 8-row panels, times ggml's q8_0 activations, on the tile unit of Intel AMX
// (TDPBSSD / TDPBUSD: a 16 x 64-byte tile times a 16 x 64-byte tile into 16 x 16 int32 in one
// instruction; Intel 64 and IA-32 Architectures Software Developer's Manual, vol. 1 ch. 18 "Intel
// AMX"; the Linux permission request of Documentation/arch/x86/xstate.rst). The idea of running
// ggml's blocks on AMX per 32-column block with the scales applied in fp32 afterwards is ggml-cpu's
// (ggml/src/ggml-cpu/amx/mmq.cpp); the code is Headroom's own.

#include "gemm8.h"

#include "parallel.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define HEADROOM_AMX_X86 1
#else
#define HEADROOM_AMX_X86 0
#endif

namespace headroom::kernels {

namespace fmt = headroom::formats;

namespace {

/// Weight rows per AMX group (the rows of the A tile and of the C tile).
constexpr std::uint32_t kAmxRows = 16;
/// Activation rows per C tile (its int32 columns).
constexpr std::uint32_t kAmxBatch = 16;
/// Columns per block (a q8_0 / q4_0 block; one TDPB* per block, so each block's int32 sums can
/// take its own weight and activation scales).
constexpr std::uint32_t kCols = 32;
/// Panel blocks ahead of the one being unpacked whose bytes are prefetched (16 q4_0 panel blocks:
/// 2,304 B, the distance of the panels' kPrefetchBytes; a prefetch never faults).
constexpr std::uint32_t kPrefetchBlocks = 16;

#if HEADROOM_AMX_X86
/// True once the kernel granted this process the AMX tile data state (arch_prctl
/// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16+) and the CPU has AMX-TILE, AMX-INT8,
/// AVX512F/BW/VL and F16C.
bool amxUsable() {
    static const bool usable = [] {
        if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
            return false;
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
        const bool tile = (edx >> 24) & 1u, int8 = (edx >> 25) & 1u;
        if (!tile || !int8)
            return false;
        constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
        return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
    }();
    return usable;
}

/// The tile configuration (palette 1): tiles 0, 1 = C [16 rows][4 batch bytes], 2, 3 = A
/// (weights) [16 rows][32 bytes], 4, 5 = B (activations, VNNI order) [8 rows][4 batch bytes].
struct alignas(64) TileConfig {
    std::uint8_t palette = 1;
    std::uint8_t startRow = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};
};

TileConfig tileConfig(std::uint32_t batch) {
    TileConfig c;
    for (int t = 0; t < 2; ++t) {
        c.colsb[t] = static_cast<std::uint16_t>(4 * batch);
        c.rows[t] = kAmxRows;
        c.colsb[2 + t] = kCols;
        c.rows[2 + t] = kAmxRows;
        c.colsb[4 + t] = static_cast<std::uint16_t>(4 * batch);
        c.rows[4 + t] = kCols / 4;
    }
    return c;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,amx-tile,amx-int8")
// GCC 12 warns that _mm512_undefined_ps's self-initialized register in _mm512_cvtepi32_ps may be
// used uninitialized (a false positive of the intrinsic header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// The activations of one batch chunk (at most 16 rows) in the B-tile order of every block:
/// [blocks][8 column quads][16 batch][4 bytes] int8 codes (ggml's q8_0 activations, natural
/// column order) and their scales [blocks][16] (0 past the chunk).
struct AmxActivations {
    std::vector<std::int8_t> q;
    std::vector<float> d;
};

AmxActivations amxActivations(const float* x, std::uint32_t K, std::uint32_t b0, std::uint32_t batch) {
    const std::uint32_t blocks = K / kCols;
    AmxActivations a;
    a.q.assign(std::uint64_t{blocks} * kCols * kAmxBatch, 0);
    a.d.assign(std::uint64_t{blocks} * kAmxBatch, 0.0f);
    std::int8_t codes[kCols];
    for (std::uint32_t b = 0; b < batch; ++b)
        for (std::uint32_t i = 0; i < blocks; ++i) {
            const float* xb = x + std::uint64_t{b0 + b} * K + std::uint64_t{i} * kCols;
            a.d[std::uint64_t{i} * kAmxBatch + b] = detail::quantizeActivationBlock32(xb, codes);
            for (std::uint32_t j = 0; j < kCols; ++j)
                a.q[(std::uint64_t{i} * kCols / 4 + j / 4) * kAmxBatch * 4 + b * 4 + j % 4] = codes[j];
        }
    return a;
}

/// Rows 8 h .. 8 h + 7 of an A tile from one panel block @p blk (gemm8.h: 8 fp16 scales, then
/// chunks of 8 bytes, chunk c of row p at (c * 8 + p) * 8; q4_0 nibbles XOR 0x88 are q + 8): the
/// codes as 4 registers of [8 rows][8 bytes] (q4_0: low nibbles of chunks 0 and 1 = columns 0-15,
/// high nibbles = columns 16-31, made signed q by - 8) transposed by qword permutes into
/// [8 rows][32 bytes] at @p tile; the 8 scales as floats at @p scales.
template <bool kFourBit>
inline void panelBlockToTile(const std::uint8_t* blk, std::uint8_t* tile, float* scales) {
    _mm256_storeu_ps(scales, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk))));
    const std::uint8_t* qs = blk + 2 * detail::kPanelRows;
    __m512i p[4];
    if constexpr (kFourBit) {
        const __m512i mask = _mm512_set1_epi8(0x0f), flip = _mm512_set1_epi8(static_cast<char>(0x88));
        const __m512i eight = _mm512_set1_epi8(8);
        const __m512i c0 = _mm512_xor_si512(_mm512_loadu_si512(qs), flip);
        const __m512i c1 = _mm512_xor_si512(_mm512_loadu_si512(qs + 64), flip);
        p[0] = _mm512_sub_epi8(_mm512_and_si512(c0, mask), eight);
        p[1] = _mm512_sub_epi8(_mm512_and_si512(c1, mask), eight);
        p[2] = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(c0, 4), mask), eight);
        p[3] = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(c1, 4), mask), eight);
    } else {
        for (int c = 0; c < 4; ++c)
            p[c] = _mm512_loadu_si512(qs + 64 * c);
    }
    // t01*: rows 0-3 (a) / 4-7 (b) of p0 and p1 side by side; t23* the same of p2, p3.
    const __m512i lowRows = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), highRows = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    const __m512i t01a = _mm512_permutex2var_epi64(p[0], lowRows, p[1]), t01b = _mm512_permutex2var_epi64(p[0], highRows, p[1]);
    const __m512i t23a = _mm512_permutex2var_epi64(p[2], lowRows, p[3]), t23b = _mm512_permutex2var_epi64(p[2], highRows, p[3]);
    const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    _mm512_storeu_si512(tile, _mm512_permutex2var_epi64(t01a, first, t23a));
    _mm512_storeu_si512(tile + 64, _mm512_permutex2var_epi64(t01a, second, t23a));
    _mm512_storeu_si512(tile + 128, _mm512_permutex2var_epi64(t01b, first, t23b));
    _mm512_storeu_si512(tile + 192, _mm512_permutex2var_epi64(t01b, second, t23b));
}

/// The A tile of block @p i of rows [n0, n0 + rows) (rows <= 16, a multiple of 8 when packed;
/// missing rows left as they are: zeros from the caller) into @p tile [16][32] (signed codes,
/// natural column order) and their scales as floats into @p scales [16].
template <bool kFourBit>
inline void buildAmxTile(const WeightMatrix& w, std::uint64_t n0, std::uint32_t rows, std::uint32_t i, std::uint8_t* tile,
                         float* scales) {
    const std::uint64_t stride = fmt::rowBytes(w.layout, w.cols);
    const std::uint32_t blockBytes = kFourBit ? fmt::kQ4_0BlockBytes : fmt::kQ8_0BlockBytes;
    if (w.packing == RowPacking::Interleaved8) {
        for (std::uint32_t h = 0; h < rows / detail::kPanelRows; ++h) {
            const std::uint8_t* blk = w.data + (n0 + std::uint64_t{h} * detail::kPanelRows) * stride
                                    + std::uint64_t{i} * detail::kPanelRows * blockBytes;
            for (std::uint32_t at = 0; at < detail::kPanelRows * blockBytes; at += 64)
                _mm_prefetch(reinterpret_cast<const char*>(blk + kPrefetchBlocks * detail::kPanelRows * blockBytes + at), _MM_HINT_T0);
            panelBlockToTile<kFourBit>(blk, tile + h * detail::kPanelRows * kCols, scales + h * detail::kPanelRows);
        }
        return;
    }
    const __m128i mask = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    for (std::uint32_t r = 0; r < rows; ++r) {
        const std::uint8_t* blk = w.data + (n0 + r) * stride + std::uint64_t{i} * blockBytes;
        std::uint8_t* dst = tile + r * kCols;
        scales[r] = _cvtsh_ss(static_cast<unsigned short>(blk[0] | (blk[1] << 8)));
        if constexpr (kFourBit) { // byte j: q + 8 of column j in the low nibble, of column j + 16 in the high one
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_sub_epi8(_mm_and_si128(v, mask), eight));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), mask), eight));
        } else {
            std::memcpy(dst, blk + 2, kCols);
        }
    }
}

/// acc[r] += C[r] x (weight scale r x activation scales) for the 16 rows of one block's int32 sums @p c.
inline void scaleBlock(const std::int32_t (*c)[kAmxBatch], const float* dw, __m512 dx, __m512* acc) {
    for (std::uint32_t r = 0; r < kAmxRows; ++r)
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[r])), _mm512_mul_ps(_mm512_set1_ps(dw[r]), dx), acc[r]);
}

/// Block @p i into C tile kC (A tile kA, B tile kB): zero C, load its A tile (built two blocks
/// earlier into tile[i % 4], so the stores have long retired) and its activations, one TDPBSSD;
/// then the A tile of block i + 2 is built.
#define HEADROOM_AMX_BLOCK(kC, kA, kB, i)                                                                              \
    do {                                                                                                               \
        _tile_zero(kC);                                                                                                \
        _tile_loadd(kA, tile[(i) & 3], kCols);                                                                         \
        _tile_loadd(kB, a.q.data() + std::uint64_t{i} * kCols * kAmxBatch, 4 * kAmxBatch);                             \
        _tile_dpbssd(kC, kA, kB);                                                                                      \
        if ((i) + 2 < blocks)                                                                                          \
            buildAmxTile<kFourBit>(w, n0, rows, (i) + 2, tile[((i) + 2) & 3], dw[((i) + 2) & 7]);                      \
    } while (0)

/// y for weight rows [n0, n0 + rows) and batch rows [b0, b0 + batch) (rows <= 16, batch <= 16;
/// the tile configuration of @p batch loaded): per block its A tile built from the weights
/// (signed codes), one TDPBSSD into a C tile [16 rows][batch] int32, software-pipelined: the sums
/// of block i are stored and scaled after blocks i + 1 and i + 2 were issued (C tiles 0 and 1),
/// so the multiply's latency is hidden; per weight row one fp32 multiply-add of the int32 sums by
/// (weight scale x activation scale), the order and the products of the 8-row panels
/// (panel.inc), so both give the same floats.
template <bool kFourBit>
void amxGroup(const GemvArgs& args, const AmxActivations& a, std::uint64_t n0, std::uint32_t rows, std::uint32_t b0,
              std::uint32_t batch) {
    const WeightMatrix& w = args.weights;
    const std::uint32_t blocks = w.cols / kCols;
    alignas(64) std::int32_t c[2][kAmxRows][kAmxBatch]; // one per C tile in flight
    alignas(64) std::uint8_t tile[4][kAmxRows * kCols] = {};
    alignas(64) float dw[8][kAmxRows] = {}; // block i's scales until scale(i), after block i + 4 was built
    __m512 acc[kAmxRows];
    for (auto& v : acc)
        v = _mm512_setzero_ps();
    const auto scale = [&](std::uint32_t i) {
        scaleBlock(c[i & 1], dw[i & 7], _mm512_loadu_ps(a.d.data() + std::uint64_t{i} * kAmxBatch), acc);
    };
    for (std::uint32_t i = 0; i < std::min(blocks, 2u); ++i)
        buildAmxTile<kFourBit>(w, n0, rows, i, tile[i], dw[i]);
    HEADROOM_AMX_BLOCK(0, 2, 4, 0u);
    if (blocks > 1)
        HEADROOM_AMX_BLOCK(1, 3, 5, 1u);
    for (std::uint32_t i = 0; i < blocks; i += 2) {
        _tile_stored(0, c[0], 4 * kAmxBatch);
        if (i + 2 < blocks)
            HEADROOM_AMX_BLOCK(0, 2, 4, i + 2);
        scale(i);
        if (i + 1 >= blocks)
            break;
        _tile_stored(1, c[1], 4 * kAmxBatch);
        if (i + 3 < blocks)
            HEADROOM_AMX_BLOCK(1, 3, 5, i + 3);
        scale(i + 1);
    }
    alignas(64) float out[kAmxRows][kAmxBatch];
    for (std::uint32_t r = 0; r < kAmxRows; ++r)
        _mm512_store_ps(out[r], acc[r]);
    for (std::uint32_t b = 0; b < batch; ++b)
        for (std::uint32_t r = 0; r < rows; ++r) {
            const std::uint64_t at = std::uint64_t{b0 + b} * w.rows + n0 + r;
            if (args.yType == OutputType::Fp32)
                static_cast<float*>(args.y)[at] = out[r][b];
            else
                static_cast<std::uint16_t*>(args.y)[at] = fmt::floatToHalf(out[r][b]);
        }
}
#undef HEADROOM_AMX_BLOCK

/// The rows [0, rows) of y = x W^T in groups of 16 over the threads, batch chunks of 16.
void amxRowsRun(const GemvArgs& args, const float* xNat, std::uint32_t rows, unsigned threads) {
    const WeightMatrix& w = args.weights;
    const std::uint32_t B = args.batch;
    std::vector<AmxActivations> chunks;
    for (std::uint32_t b0 = 0; b0 < B; b0 += kAmxBatch)
        chunks.push_back(amxActivations(xNat, w.cols, b0, std::min(kAmxBatch, B - b0)));
    const std::uint64_t groups = (rows + kAmxRows - 1) / kAmxRows;
    detail::parallelFor(groups, threads, [&](std::uint64_t begin, std::uint64_t end) {
        std::uint32_t configured = 0;
        for (std::uint64_t g = begin; g < end; ++g) {
            const std::uint64_t n0 = g * kAmxRows;
            const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(kAmxRows, rows - n0));
            for (std::uint32_t k = 0; k < chunks.size(); ++k) {
                const std::uint32_t b0 = k * kAmxBatch, batch = std::min(kAmxBatch, B - b0);
                if (batch != configured) {
                    const TileConfig config = tileConfig(batch);
                    _tile_loadconfig(&config);
                    configured = batch;
                }
                if (w.layout.type == fmt::QuantType::Q4_0)
                    amxGroup<true>(args, chunks[k], n0, count, b0, batch);
                else
                    amxGroup<false>(args, chunks[k], n0, count, b0, batch);
            }
        }
        if (configured)
            _tile_release();
    });
}
#pragma GCC pop_options
#endif

} // namespace

namespace detail {

bool amxKernelsRun(const GemvArgs& args) {
#if HEADROOM_AMX_X86
    const fmt::QuantType type = args.weights.layout.type;
    return args.batch >= kAmxMinBatch && (type == fmt::QuantType::Q8_0 || type == fmt::QuantType::Q4_0)
        && args.weights.cols >= kCols && amxUsable();
#else
    (void)args;
    return false;
#endif
}

std::uint32_t gemvAmx(const GemvArgs& args, const float* xNat, unsigned threads) {
    const WeightMatrix& w = args.weights;
    // Packed matrices: the whole panels (the N % 8 tail rows are stored plain, run by the caller).
    const std::uint32_t rows = w.packing == RowPacking::Interleaved8 ? w.rows / kPanelRows * kPanelRows : w.rows;
#if HEADROOM_AMX_X86
    amxRowsRun(args, xNat, rows, threads);
#else
    (void)xNat, (void)threads;
#endif
    return rows;
}

} // namespace detail

} // namespace headroom::kernels
