#pragma once
/// @file ggufpreset.h
/// GGUF file types as llama.cpp's quantizer writes them ("Q4_K_M", "Q6_K", "IQ4_XS", ...): a
/// preset is not one GGML type but a mix, chosen tensor by tensor. A Q4_K_M file keeps half of
/// its attn_v and ffn_down matrices (the `use_more_bits` layers) and its output matrix in Q6_K,
/// which is why pricing it as plain q4_k comes out 6-9 % low. With the file at hand its tensor
/// table stays the truth (importers); these rules price the file before it is downloaded.
///
/// Source: llama.cpp `llama_tensor_get_type` (src/llama-quant.cpp; src/llama.cpp before 2025-01),
/// in the name-matching form that wrote the published files of 2024-2025, as run by llama.cpp's own
/// CI at commit c9b00a70 (ggml-org/ci llama.cpp/c9/b00a70.../ggml-2-x86-cpu/pythia_1_4b-tg-*.log
/// print the per-type tensor counts these rules reproduce). Read at ggml-org/llama.cpp 007dbbf3,
/// whose 2026 refactor (`tensor_get_category`) also sends attn_qkv and attn_kv_b through the attn_v
/// rule; files written by that version differ for fused-QKV models (phi3, gptneox, falcon) only.
/// Fallbacks for rows that are not a multiple of the block: `tensor_type_fallback` (Q4_K -> Q5_0,
/// Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/IQ* -> IQ4_NL (18 B per 32, as Q4_0), then F16).

#include "headroom/core/architecture.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

struct TensorSpec;

/// One llama-quantize file type.
struct GgufPreset {
    const char* name;           ///< llama-quantize spelling ("Q4_K_M")
    std::uint32_t fileType;     ///< `enum llama_ftype` value, as stored in general.file_type (Q4_K_M = 15)
    std::uint32_t defaultType;  ///< GGML type id every other tensor gets (`llama_ftype_get_default_type`)
    bool assumesImatrix;        ///< rules read `has_imatrix`: true for the IQ presets (published with one)
    /// 0: the rules of today's quantizer (the name-matching form of 2024-2025 above). N: the rules
    /// as llama-quantize had them at build N, for files written then (a dated rule): IQ2_XXS and
    /// IQ2_XS at b1971 (llama.cpp get_k_quant_type, read at ggerganov/llama.cpp 1182cf4d, January
    /// 2024) did not yet give the 8-expert models' attn_k Q4_K and attn_output Q5_K.
    std::uint32_t rulesBuild = 0;
};

/// The preset's id as formats list it: the lower-case name, with "-bN" for a dated rule
/// ("iq2_xxs", "iq2_xxs-b1971").
std::string ggufPresetId(const GgufPreset& preset);

/// Every preset Headroom prices: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q2_K_S, Q3_K_S/M/L,
/// Q4_K_S/M, Q5_K_S/M, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, IQ3_S,
/// IQ3_M, IQ4_NL, IQ4_XS, MXFP4_MOE.
const std::vector<GgufPreset>& ggufPresets();

/// Finds a preset by llama-quantize name, case-insensitive ("q4_k_m", "Q6_K"), or a dated one by
/// its id ("iq2_xxs-b1971"); also the llama-quantize aliases Q3_K = Q3_K_M, Q4_K = Q4_K_M,
/// Q5_K = Q5_K_M. nullopt if unknown.
std::optional<GgufPreset> findGgufPreset(std::string_view name);

/// The preset of a `general.file_type` value with the rules of @p rulesBuild (0: today's; a build
/// no dated rule covers gets today's), nullopt for F32/F16/BF16 and unknown values.
std::optional<GgufPreset> ggufPresetOfFileType(std::uint32_t fileType, std::uint32_t rulesBuild = 0);

/// What a tensor is to the quantizer (llama-quant.cpp `tensor_get_category`).
enum class QuantCategory {
    TokenEmbd, Output, AttnQ, AttnK, AttnV, AttnQkv, AttnKvB, AttnOutput, FfnUp, FfnGate, FfnDown, Other,
};

/// The category of one of listTensors()'s tensors. Families whose GGUF fuses q/k/v into one
/// attn_qkv tensor (gptneox, falcon, phi3, gpt2, bloom, mpt, starcoder) give AttnQkv for each part.
QuantCategory quantCategory(const TensorSpec& tensor, const Architecture& arch);

/// The model facts llama_tensor_get_type reads: n_gqa = H / H_kv, n_expert, the 70B model type
/// (80-layer GQA llama / qwen2: LLM_TYPE_70B in llama-model.cpp), falcon, tied embeddings.
struct QuantModelFacts {
    std::uint32_t layers = 0;
    std::uint32_t gqa = 1;
    std::uint32_t experts = 0;
    bool is70B = false;
    bool falcon = false;
    bool tiedEmbeddings = false;

    /// Reads them from @p arch.
    static QuantModelFacts of(const Architecture& arch);
};

/// The GGML type id llama-quantize gives a tensor of category @p category in block @p layer
/// (-1 outside the blocks) whose rows are @p cols wide, in a file of @p preset. @p expertTensor is
/// true for the stacked routed-expert tensors (3-D in GGUF: ffn_*_exps). The result is always a
/// type whose block divides @p cols (fallbacks applied); F16 (1) when none does.
std::uint32_t ggufTensorType(const GgufPreset& preset, QuantCategory category, std::int32_t layer,
                             std::uint64_t cols, bool expertTensor, const QuantModelFacts& facts);

} // namespace headroom
