#pragma once
/// @file weightformat.h
/// Weight formats as data: every format's bytes come from its block layout, never from its name
/// (BRIEF §1.2). A format prices one tensor of a given shape; parameters.h lists the tensors.
///
/// Sources: shared/reference/quant-formats.md (bits per weight, NF4, GPTQ/AWQ layouts),
/// shared/reference/ggml-types.md (GGML blocks), QLoRA arXiv 2305.14314 §3 (bitsandbytes NF4 and
/// double quantization), AutoGPTQ/AutoAWQ layouts (qweight, qzeros, scales, g_idx).

#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// What kind of storage a format is.
enum class FormatKind {
    Float,          ///< fp32, fp16, bf16: one element = bytesPerElement
    Fp8,            ///< 1 byte per element + one fp32 scale per tensor
    SymmetricInt,   ///< symmetric absmax int8/int4: q = round(w / s), s = max|w| / qmax (BRIEF §3)
    Nf4,            ///< NF4 code book scaled by a per-block absmax (QLoRA)
    GptqAwq,        ///< 4-bit with fp16 scales and packed 4-bit zeros per group (GPTQ, AWQ)
    Ggml,           ///< a GGML block type from the GGUF table
};

/// Where one scale applies.
enum class ScaleGranularity { Tensor, Row, Group };

/// A weight format. Plain data; `builtinFormats()` has every id Headroom knows.
struct WeightFormat {
    std::string id;                 ///< "fp16", "int4-g128", "nf4-b64", "q4_k", ...
    std::string description;        ///< one line for listings
    FormatKind kind = FormatKind::Float;
    std::uint32_t bits = 16;        ///< bits of one stored weight (before scales)
    ScaleGranularity granularity = ScaleGranularity::Tensor;
    std::uint32_t groupSize = 0;    ///< weights per scale for Group granularity (and NF4 blocks)
    std::uint32_t scaleBytes = 0;   ///< bytes of one scale (2 = fp16, 4 = fp32)
    bool doubleQuant = false;       ///< bitsandbytes double quantization: 8-bit absmax per block + fp32 per 256 blocks
    std::uint32_t zeroBits = 0;     ///< bits of one packed zero point per group (GPTQ/AWQ: 4)
    bool groupIndex = false;        ///< GPTQ g_idx: one int32 per input channel
    std::uint32_t ggmlType = 0;     ///< GGML type id when kind == Ggml
    std::uint32_t ggmlBlockSize = 0;///< elements per GGML block
    std::uint32_t ggmlTypeSize = 0; ///< bytes per GGML block
    /// Non-zero for a llama-quantize preset (ggufpreset.h): its `general.file_type` value (Q4_K_M
    /// = 15). The tensors then get the mix of types llama.cpp's quantizer assigns (priced with the
    /// architecture in parameters.h); ggmlType/ggmlBlockSize/ggmlTypeSize describe its default type.
    std::uint32_t ggufFileType = 0;
    /// The preset's dated rules (GgufPreset::rulesBuild): 0 for today's quantizer, N for the rules
    /// of llama.cpp build N ("iq2_xxs-b1971").
    std::uint32_t ggufRulesBuild = 0;
    /// bytes per element of tensors this format leaves unquantized (norms, biases; embeddings
    /// and lm_head for the GPU quantization formats): 2 (fp16) or 4 (GGUF keeps norms in f32).
    std::uint32_t smallTensorBytes = 2;
    /// True when the token embedding and lm_head are stored in this format too (GGML types,
    /// fp16/bf16/fp32); false for the GPU weight-only formats, which keep them in fp16 as
    /// GPTQ, AWQ, bitsandbytes and vLLM's fp8 do.
    bool quantizesEmbeddings = true;

    /// Exact bits per weight of a large matrix from the block layout (for GPTQ excluding g_idx,
    /// which adds 32/rows). fp16 16, int8-row 8 (+16/cols), int4-g128 4.125, nf4-b64 4.25,
    /// nf4-bnb 4.5, nf4-bnb-dq 4.126953125, gptq-g128 4.15625, q4_k 4.5, q6_k 6.5625.
    double bitsPerWeight() const;
    /// The nominal bpw used when only a parameter count is known (fp16 16, int8 8,
    /// int4-g128 4.125, nf4-b64 4.25): bitsPerWeight() for group/block formats, `bits` for
    /// per-tensor and per-row formats whose scale cost vanishes on large matrices.
    double nominalBitsPerWeight() const;
    /// Member-wise equality (the priced-tensor cache of parameters.h keys on it).
    bool operator==(const WeightFormat&) const = default;
};

/// Exact bytes of a weight matrix of @p rows x @p cols (rows = output features, cols = input
/// features, the layout of nn.Linear and of GGML's ne1 x ne0) stored in @p format.
/// - Float: rows*cols*bytes. Fp8: rows*cols + 4.
/// - SymmetricInt: ceil(rows*cols*bits/8) + scales (1 per tensor, 1 per row, or 1 per group of
///   `groupSize` along each row, ceil(cols/g) per row).
/// - Nf4: ceil(n/2) + one absmax per block of 64 consecutive weights (fp16 or fp32), or with
///   double quantization 1 byte per block + 4 bytes per 256 blocks.
/// - GptqAwq: n/2 + (ceil(cols/g) * rows) * (2 + zeroBits/8) (+ 4*cols for g_idx).
/// - Ggml: rows * ceil(cols/blockSize) * typeSize (ggml_row_size; ggml requires cols % blockSize == 0,
///   see `ggmlRowAligned`).
/// Throws OverflowError past 2^64.
Bytes matrixBytes(const WeightFormat& format, std::uint64_t rows, std::uint64_t cols);

/// Bytes of a tensor of @p elements elements that the format stores unquantized (norms, biases).
Bytes smallTensorBytes(const WeightFormat& format, std::uint64_t elements);

/// True when @p cols is a multiple of the GGML block size (always true for non-GGML formats).
bool ggmlRowAligned(const WeightFormat& format, std::uint64_t cols);

/// Every built-in format: fp32, fp16, bf16, fp8; int8, int8-row, int4, int4-row, int4-g32/64/128;
/// nf4-b64, nf4-bnb, nf4-bnb-dq; gptq-g128, awq-g128; every sizable GGML type by its GGUF
/// name, each meaning every matrix in that one type (llama-quantize --pure: q4_0, q4_1, ...,
/// q6_k, iq4_xs, ...); and every llama-quantize preset (ggufPresets()): "q4_k_m", "q5_k_s",
/// "iq3_m", ..., with a "gguf-" prefix where the name is also a GGML type's ("gguf-q6_k",
/// "gguf-q8_0", "gguf-q2_k", "gguf-iq4_xs": what llama-quantize Q6_K writes).
const std::vector<WeightFormat>& builtinFormats();

/// Finds a format by id, case-insensitive; also accepts any `int4-gN` / `int8-gN` (N a power of
/// two from 8 to 4096), GGML names with upper-case K ("Q4_K"), and "gguf-" before any preset
/// name ("gguf-q4_k_m" = "q4_k_m"). nullopt if unknown.
std::optional<WeightFormat> findFormat(std::string_view id);

} // namespace headroom
