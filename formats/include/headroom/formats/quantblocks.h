#pragma once
/// @file quantblocks.h
/// Block math of the weight formats that Headroom's kernels run, shared by the CPU reference, the
/// fast CPU kernels and the CUDA kernels (STYLE §9: one header per block layout, sizes pinned by
/// static_assert). Compiled by g++ as plain inline functions and by nvcc as
/// `__host__ __device__` functions; it needs neither the CUDA headers nor <vector>/<string>.
///
/// Formulas (BRIEF §3, shared/reference/quant-formats.md):
/// - Symmetric absmax int8/int4: qmax = 2^(bits-1) - 1; scale = max|W| / qmax over the scale's
///   territory (the tensor, one row, or a group of g consecutive weights of one row);
///   q = clamp(round(W / scale), -qmax - 1, qmax); W_hat = q * scale. round() is round half to
///   even (as numpy/torch round), done by rintf. Scales are stored as fp16 and the quantizer uses
///   the fp16-rounded scale, so that quantize and dequantize agree exactly.
/// - NF4 (QLoRA, arXiv 2305.14314; bitsandbytes `get_4bit_type('nf4')`): 16 fixed levels in
///   [-1, 1]; each block of 64 consecutive weights of a row stores its absmax as fp16; a weight
///   is stored as the index of the level nearest to W / absmax; W_hat = level * absmax.
///
/// Storage of a weight matrix W [N rows = output features, K cols = input features], row-major
/// (the layout of nn.Linear and GGML ne1 x ne0):
/// - Fp16: uint16 fp16 bits [N][K].
/// - Int8: int8 [N][K].
/// - Int4 / Nf4: two 4-bit codes per byte, [N][ceil(K/2)] bytes; weight k of a row is in byte
///   k/2, the low nibble for even k and the high nibble for odd k (GGML q4_0 instead puts the
///   first 16 weights of a block in the low nibbles). Int4 codes are two's complement (-8..7);
///   NF4 codes are level indices (0..15).
/// - Scales: fp16 bits. Tensor scope: 1 scale. Row scope: [N]. Group scope: [N][ceil(K/g)]
///   (groups and NF4 blocks run along each row; the last one of a row may be partial).
/// - GGML q8_0, q4_0, q4_K, q6_K: each row is its GGML blocks back to back, scales inside the
///   blocks (ggmlblocks.h), [N][K / blockWeights][blockBytes]; no separate scales.

#include "headroom/formats/ggmlblocks.h"
#include "headroom/formats/half.h"

#include <cstdint>
#include <cstring>

#include <cmath>

namespace headroom::formats {

// ---------------------------------------------------------------------------------------------
// Pinned sizes
// ---------------------------------------------------------------------------------------------

/// Weights per NF4 block (one fp16 absmax per block; "nf4-b64", 4.25 bits per weight).
inline constexpr std::uint32_t kNf4BlockWeights = 64;
/// Default weights per scale group of the group-quantized int formats ("int4-g128").
inline constexpr std::uint32_t kDefaultGroupWeights = 128;
/// 4-bit codes per byte.
inline constexpr std::uint32_t kInt4PerByte = 2;
/// Levels of the NF4 code book.
inline constexpr std::uint32_t kNf4Levels = 16;
/// Bytes of one stored scale (fp16).
inline constexpr std::uint32_t kScaleBytes = 2;

static_assert(kNf4BlockWeights == 64, "nf4-b64: one fp16 absmax per 64 weights (quant-formats.md)");
static_assert(kNf4BlockWeights % kInt4PerByte == 0, "an NF4 block fills whole bytes");
static_assert(kDefaultGroupWeights == 128, "int4-g128 groups hold 128 weights");
static_assert(kDefaultGroupWeights % kInt4PerByte == 0, "a group fills whole bytes");
static_assert(kInt4PerByte == 2, "two 4-bit codes per byte");
static_assert(kScaleBytes == sizeof(std::uint16_t), "scales are fp16");
static_assert(kNf4Levels == 16, "NF4 has 16 levels");

// ---------------------------------------------------------------------------------------------
// Symmetric absmax int8 / int4
// ---------------------------------------------------------------------------------------------

/// qmax = 2^(bits-1) - 1: 127 for int8, 7 for int4.
HEADROOM_HD constexpr int symmetricQmax(int bits) {
    return (1 << (bits - 1)) - 1;
}
static_assert(symmetricQmax(8) == 127 && symmetricQmax(4) == 7, "qmax = 2^(bits-1) - 1");

/// The stored (fp16-rounded) scale of a territory whose largest magnitude is @p absmax:
/// absmax / qmax, rounded to fp16. 0 when absmax is 0.
HEADROOM_HD float symmetricScale(float absmax, int bits) {
    return roundToHalf(absmax / static_cast<float>(symmetricQmax(bits)));
}

/// q = clamp(round(w / scale), -qmax - 1, qmax); 0 when scale is 0 (an all-zero territory).
HEADROOM_HD int quantizeSymmetric(float w, float scale, int bits) {
    if (!(scale > 0.0f))
        return 0;
    const int qmax = symmetricQmax(bits);
    float q = rintf(w / scale);
    q = q < static_cast<float>(-qmax - 1) ? static_cast<float>(-qmax - 1) : q;
    q = q > static_cast<float>(qmax) ? static_cast<float>(qmax) : q;
    return static_cast<int>(q);
}

/// W_hat = q * scale.
HEADROOM_HD float dequantizeSymmetric(int q, float scale) {
    return static_cast<float>(q) * scale;
}

/// Packs two int4 codes (-8..7) into one byte: @p low in bits 0-3, @p high in bits 4-7.
HEADROOM_HD std::uint8_t packInt4(int low, int high) {
    return static_cast<std::uint8_t>((static_cast<unsigned>(low) & 0xfu) | ((static_cast<unsigned>(high) & 0xfu) << 4));
}

/// The signed int4 code in bits 0-3 of @p byte (-8..7).
HEADROOM_HD int unpackInt4Low(std::uint8_t byte) {
    return static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint8_t>(byte << 4))) >> 4;
}

/// The signed int4 code in bits 4-7 of @p byte (-8..7).
HEADROOM_HD int unpackInt4High(std::uint8_t byte) {
    return static_cast<int>(static_cast<std::int8_t>(byte)) >> 4;
}

// ---------------------------------------------------------------------------------------------
// NF4
// ---------------------------------------------------------------------------------------------

/// NF4 level @p index (0..15) of the bitsandbytes code book (quant-formats.md §5.1).
/// Out-of-range indices are masked to 4 bits.
HEADROOM_HD constexpr float nf4Level(unsigned index) {
    constexpr float kLevels[kNf4Levels] = {
        -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
        -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
        0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
        0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};
    return kLevels[index & 0xfu];
}

/// Index of the NF4 level nearest to @p normalized (= w / absmax, in [-1, 1]); a value exactly
/// half-way between two levels takes the lower one. Counts the midpoints below the value.
HEADROOM_HD unsigned nf4Index(float normalized) {
    unsigned index = 0;
    for (unsigned i = 0; i + 1 < kNf4Levels; ++i) {
        const float midpoint = 0.5f * (nf4Level(i) + nf4Level(i + 1));
        index += normalized > midpoint ? 1u : 0u;
    }
    return index;
}

// ---------------------------------------------------------------------------------------------
// Matrix layouts
// ---------------------------------------------------------------------------------------------

/// Element type of a stored weight matrix.
enum class QuantType : std::uint8_t {
    Fp16, ///< IEEE fp16, no scale
    Int8, ///< symmetric absmax int8
    Int4, ///< symmetric absmax int4, two per byte
    Nf4,  ///< NF4 code, two per byte, fp16 absmax per block of 64 along the row
    // GGML block types as GGUF stores them (ggmlblocks.h): the scales live inside each block, so
    // the layout's scope is None and the matrix has no separate scales.
    Q8_0, ///< GGML q8_0: 34-byte blocks of 32 weights
    Q4_0, ///< GGML q4_0: 18-byte blocks of 32 weights
    Q4_K, ///< GGML q4_K: 144-byte super-blocks of 256 weights
    Q6_K, ///< GGML q6_K: 210-byte super-blocks of 256 weights
};

/// True for the GGML block types (Q8_0, Q4_0, Q4_K, Q6_K).
HEADROOM_HD constexpr bool isGgmlBlockType(QuantType type) {
    return type == QuantType::Q8_0 || type == QuantType::Q4_0 || type == QuantType::Q4_K || type == QuantType::Q6_K;
}

/// Weights per block of a GGML block type (32 or 256); 1 for the other types.
HEADROOM_HD constexpr std::uint32_t ggmlBlockWeights(QuantType type) {
    return type == QuantType::Q8_0 || type == QuantType::Q4_0 ? kQ8_0BlockWeights : isGgmlBlockType(type) ? kQkK : 1u;
}

/// Bytes per block of a GGML block type; 0 for the other types.
HEADROOM_HD constexpr std::uint32_t ggmlBlockBytes(QuantType type) {
    return type == QuantType::Q8_0   ? kQ8_0BlockBytes
         : type == QuantType::Q4_0   ? kQ4_0BlockBytes
         : type == QuantType::Q4_K   ? kQ4_KBlockBytes
         : type == QuantType::Q6_K   ? kQ6_KBlockBytes
                                     : 0u;
}

/// Territory of one scale.
enum class ScaleScope : std::uint8_t {
    None,   ///< no scale (fp16)
    Tensor, ///< one scale for the whole matrix
    Row,    ///< one scale per row (output feature)
    Group,  ///< one scale per group of `groupWeights` consecutive weights of a row
};

/// How one weight matrix is stored. Plain data, usable in kernels.
struct QuantLayout {
    QuantType type = QuantType::Fp16;  ///< element type
    ScaleScope scope = ScaleScope::None; ///< territory of one scale
    std::uint32_t groupWeights = 0;    ///< weights per group for ScaleScope::Group (NF4: 64)
};

/// fp16, no scale.
HEADROOM_HD constexpr QuantLayout fp16Layout() {
    return {QuantType::Fp16, ScaleScope::None, 0};
}
/// int8 or int4 (@p bits 8 or 4) with one scale per tensor, row or group of @p group weights.
HEADROOM_HD constexpr QuantLayout symmetricLayout(int bits, ScaleScope scope, std::uint32_t group = 0) {
    return {bits == 8 ? QuantType::Int8 : QuantType::Int4, scope, scope == ScaleScope::Group ? group : 0u};
}
/// NF4 with an fp16 absmax per 64 weights of a row.
HEADROOM_HD constexpr QuantLayout nf4Layout() {
    return {QuantType::Nf4, ScaleScope::Group, kNf4BlockWeights};
}
/// A GGML block type (@p type with isGgmlBlockType) as stored in a GGUF file: no separate scales.
HEADROOM_HD constexpr QuantLayout ggmlLayout(QuantType type) {
    return {type, ScaleScope::None, 0};
}
/// True when the layout keeps fp16 scales apart from the codes (WeightMatrix::scales).
HEADROOM_HD constexpr bool hasSeparateScales(QuantLayout layout) {
    return layout.scope != ScaleScope::None;
}

/// Bits of one stored code: 16, 8, 6 (q6_K) or 4 (without the block scales).
HEADROOM_HD constexpr int codeBits(QuantType type) {
    return type == QuantType::Fp16                                ? 16
         : type == QuantType::Int8 || type == QuantType::Q8_0     ? 8
         : type == QuantType::Q6_K                                ? 6
                                                                  : 4;
}

/// True when the layout is one Headroom's kernels run: fp16 without scale; int8/int4 with a
/// Tensor, Row or Group scope (group >= 2 and even); NF4 with groups of 64; the GGML block
/// types as ggmlLayout() (a matrix of them also needs cols % ggmlBlockWeights == 0).
HEADROOM_HD constexpr bool layoutValid(QuantLayout layout) {
    if (layout.type == QuantType::Fp16 || isGgmlBlockType(layout.type))
        return layout.scope == ScaleScope::None && layout.groupWeights == 0;
    if (layout.type == QuantType::Nf4)
        return layout.scope == ScaleScope::Group && layout.groupWeights == kNf4BlockWeights;
    if (layout.scope == ScaleScope::None)
        return false;
    if (layout.scope == ScaleScope::Group)
        return layout.groupWeights >= 2 && layout.groupWeights % 2 == 0;
    return true;
}

/// Bytes of one stored row of @p cols weights (4-bit rows are padded to a whole byte; GGML rows
/// to whole blocks, ggml_row_size).
HEADROOM_HD constexpr std::uint64_t rowBytes(QuantLayout layout, std::uint64_t cols) {
    if (isGgmlBlockType(layout.type))
        return (cols + ggmlBlockWeights(layout.type) - 1) / ggmlBlockWeights(layout.type) * ggmlBlockBytes(layout.type);
    return layout.type == QuantType::Fp16 ? 2 * cols
         : layout.type == QuantType::Int8 ? cols
                                          : (cols + 1) / 2;
}

/// Scales stored per row (Group scope: ceil(cols / g)); 0 for Tensor and None scope.
HEADROOM_HD constexpr std::uint64_t scalesPerRow(QuantLayout layout, std::uint64_t cols) {
    return layout.scope == ScaleScope::Row ? 1
         : layout.scope == ScaleScope::Group ? (cols + layout.groupWeights - 1) / layout.groupWeights
                                             : 0;
}

/// Scales of a whole matrix of @p rows x @p cols.
HEADROOM_HD constexpr std::uint64_t scaleCount(QuantLayout layout, std::uint64_t rows, std::uint64_t cols) {
    return layout.scope == ScaleScope::Tensor ? 1 : rows * scalesPerRow(layout, cols);
}

/// Index of the first scale of row @p row (Tensor scope: always 0).
HEADROOM_HD constexpr std::uint64_t rowScaleOffset(QuantLayout layout, std::uint64_t row, std::uint64_t cols) {
    return layout.scope == ScaleScope::Tensor ? 0 : row * scalesPerRow(layout, cols);
}

/// Index, within the row's scales, of the scale of column @p col.
HEADROOM_HD constexpr std::uint64_t scaleIndexInRow(QuantLayout layout, std::uint64_t col) {
    return layout.scope == ScaleScope::Group ? col / layout.groupWeights : 0;
}

/// Exact bytes of a stored matrix (codes + fp16 scales).
HEADROOM_HD constexpr std::uint64_t matrixStorageBytes(QuantLayout layout, std::uint64_t rows, std::uint64_t cols) {
    return rows * rowBytes(layout, cols) + kScaleBytes * scaleCount(layout, rows, cols);
}

static_assert(rowBytes(QuantLayout{QuantType::Int4, ScaleScope::Row, 0}, 129) == 65, "odd rows pad to a byte");
static_assert(matrixStorageBytes(nf4Layout(), 1, 64) == 34, "nf4-b64: 32 B codes + 2 B absmax per 64 weights");
static_assert(matrixStorageBytes(symmetricLayout(4, ScaleScope::Group, 128), 1, 128) == 66,
              "int4-g128: 64 B codes + 2 B scale = 4.125 bits per weight");
static_assert(matrixStorageBytes(ggmlLayout(QuantType::Q4_0), 2, 64) == 72, "q4_0: 18 B per 32 weights = 4.5 bpw");
static_assert(matrixStorageBytes(ggmlLayout(QuantType::Q6_K), 1, 512) == 420, "q6_K: 210 B per 256 weights");

/// Weight @p col of a row of GGML blocks @p rowData (isGgmlBlockType(type)).
HEADROOM_HD float loadGgmlWeight(QuantType type, const std::uint8_t* rowData, std::uint64_t col) {
    const std::uint32_t per = ggmlBlockWeights(type);
    const std::uint8_t* block = rowData + col / per * ggmlBlockBytes(type);
    const auto i = static_cast<std::uint32_t>(col % per);
    switch (type) {
    case QuantType::Q8_0: return q8_0Weight(block, i);
    case QuantType::Q4_0: return q4_0Weight(block, i);
    case QuantType::Q4_K: return q4_KWeight(block, i);
    case QuantType::Q6_K: return q6_KWeight(block, i);
    default: return 0.0f;
    }
}

/// Quantizes one GGML block of @p type from @p w [ggmlBlockWeights(type)] into @p block.
HEADROOM_HD void quantizeGgmlBlock(QuantType type, const float* w, std::uint8_t* block) {
    switch (type) {
    case QuantType::Q8_0: quantizeQ8_0Block(w, block); break;
    case QuantType::Q4_0: quantizeQ4_0Block(w, block); break;
    case QuantType::Q4_K: quantizeQ4_KBlock(w, block); break;
    case QuantType::Q6_K: quantizeQ6_KBlock(w, block); break;
    default: break;
    }
}

/// Weight @p col of a row, dequantized. @p rowData: the row's stored bytes
/// [rowBytes(layout, cols)]; @p rowScales: fp16 scales of the row from rowScaleOffset()
/// [scalesPerRow(layout, cols)] (or the single tensor scale). The simplest, slowest accessor: the
/// reference kernels use it, the fast ones decode whole blocks.
HEADROOM_HD float loadWeight(QuantLayout layout, const std::uint8_t* rowData, const std::uint16_t* rowScales,
                             std::uint64_t col) {
    switch (layout.type) {
    case QuantType::Fp16: {
        std::uint16_t half;
        std::memcpy(&half, rowData + 2 * col, sizeof half);
        return halfToFloat(half);
    }
    case QuantType::Int8:
        return dequantizeSymmetric(static_cast<std::int8_t>(rowData[col]),
                                   halfToFloat(rowScales[scaleIndexInRow(layout, col)]));
    case QuantType::Int4: {
        const std::uint8_t byte = rowData[col / 2];
        const int q = (col & 1) ? unpackInt4High(byte) : unpackInt4Low(byte);
        return dequantizeSymmetric(q, halfToFloat(rowScales[scaleIndexInRow(layout, col)]));
    }
    case QuantType::Nf4: {
        const std::uint8_t byte = rowData[col / 2];
        const unsigned index = (col & 1) ? (byte >> 4) : (byte & 0xfu);
        return nf4Level(index) * halfToFloat(rowScales[scaleIndexInRow(layout, col)]);
    }
    case QuantType::Q8_0:
    case QuantType::Q4_0:
    case QuantType::Q4_K:
    case QuantType::Q6_K: return loadGgmlWeight(layout.type, rowData, col);
    }
    return 0.0f;
}

/// Quantizes one row of @p cols weights @p w [cols] into @p rowData [rowBytes(layout, cols)] (GGML
/// types: block by block, ggmlblocks.h) and,
/// for Row and Group scope (and NF4), its scales @p rowScales [scalesPerRow(layout, cols)].
/// For Tensor scope the caller computes the matrix absmax once and passes the stored scale
/// symmetricScale(absmax, bits) in @p tensorScale; @p rowScales is then not written.
/// Scales are computed with the formulas of the file comment and stored as fp16.
HEADROOM_HD void quantizeRow(QuantLayout layout, const float* w, std::uint64_t cols, float tensorScale,
                             std::uint8_t* rowData, std::uint16_t* rowScales) {
    if (layout.type == QuantType::Fp16) {
        for (std::uint64_t k = 0; k < cols; ++k) {
            const std::uint16_t half = floatToHalf(w[k]);
            std::memcpy(rowData + 2 * k, &half, sizeof half);
        }
        return;
    }
    if (isGgmlBlockType(layout.type)) { // a partial last block is padded with zeros
        const std::uint32_t per = ggmlBlockWeights(layout.type);
        float padded[kQkK];
        for (std::uint64_t start = 0; start < cols; start += per) {
            const float* src = w + start;
            if (start + per > cols) {
                for (std::uint64_t k = 0; k < per; ++k)
                    padded[k] = start + k < cols ? w[start + k] : 0.0f;
                src = padded;
            }
            quantizeGgmlBlock(layout.type, src, rowData + start / per * ggmlBlockBytes(layout.type));
        }
        return;
    }
    const int bits = codeBits(layout.type);
    const std::uint64_t territory = layout.scope == ScaleScope::Group ? layout.groupWeights : cols;
    for (std::uint64_t start = 0; start < cols; start += territory) {
        const std::uint64_t end = start + territory < cols ? start + territory : cols;
        float scale = tensorScale;
        if (layout.scope != ScaleScope::Tensor) {
            float absmax = 0.0f;
            for (std::uint64_t k = start; k < end; ++k)
                absmax = fabsf(w[k]) > absmax ? fabsf(w[k]) : absmax;
            const std::uint16_t stored = layout.type == QuantType::Nf4
                                           ? floatToHalf(absmax)
                                           : floatToHalf(absmax / static_cast<float>(symmetricQmax(bits)));
            rowScales[scaleIndexInRow(layout, start)] = stored;
            scale = halfToFloat(stored);
        }
        for (std::uint64_t k = start; k < end; ++k) {
            int code;
            if (layout.type == QuantType::Nf4)
                code = scale > 0.0f ? static_cast<int>(nf4Index(w[k] / scale)) : 7; // level 7 is 0.0
            else
                code = quantizeSymmetric(w[k], scale, bits);
            if (layout.type == QuantType::Int8) {
                rowData[k] = static_cast<std::uint8_t>(static_cast<std::int8_t>(code));
            } else {
                std::uint8_t& byte = rowData[k / 2];
                const unsigned nibble = static_cast<unsigned>(code) & 0xfu;
                byte = (k & 1) ? static_cast<std::uint8_t>((byte & 0x0fu) | (nibble << 4))
                               : static_cast<std::uint8_t>((byte & 0xf0u) | nibble);
            }
        }
    }
}

/// Dequantizes one stored row into @p out [cols] (inverse of quantizeRow; see loadWeight).
HEADROOM_HD void dequantizeRow(QuantLayout layout, const std::uint8_t* rowData, const std::uint16_t* rowScales,
                               std::uint64_t cols, float* out) {
    for (std::uint64_t k = 0; k < cols; ++k)
        out[k] = loadWeight(layout, rowData, rowScales, k);
}

} // namespace headroom::formats
