#include "headroom/core/ggufpreset.h"

#include "headroom/core/parameters.h"
#include "headroom/core/units.h"
#include "headroom/formats/ggmltypes.h"

namespace headroom {

namespace {

// enum ggml_type (ggml.h).
enum : std::uint32_t {
    kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ2_K = 10, kQ3_K = 11, kQ4_K = 12,
    kQ5_K = 13, kQ6_K = 14, kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20,
    kIQ3_S = 21, kIQ2_S = 22, kIQ4_XS = 23, kIQ1_M = 29, kMXFP4 = 39,
};

// enum llama_ftype (llama.h): the general.file_type values.
enum Ftype : std::uint32_t {
    Q4_0 = 2, Q4_1 = 3, Q8_0 = 7, Q5_0 = 8, Q5_1 = 9, Q2_K = 10, Q3_K_S = 11, Q3_K_M = 12, Q3_K_L = 13,
    Q4_K_S = 14, Q4_K_M = 15, Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, IQ2_XXS = 19, IQ2_XS = 20, Q2_K_S = 21,
    IQ3_XS = 22, IQ3_XXS = 23, IQ1_S = 24, IQ4_NL = 25, IQ3_S = 26, IQ3_M = 27, IQ2_S = 28, IQ2_M = 29,
    IQ4_XS = 30, IQ1_M = 31, MXFP4_MOE = 38,
};

/// llama.cpp build 1971 (1182cf4d, 2024-01-26): its get_k_quant_type sends every IQ2_XXS/IQ2_XS
/// tensor but output, attn_v, the first eighth of ffn_down and token_embd to the default type, so
/// an 8-expert model's attn_k and attn_output stay IQ2 (the Q4_K/Q5_K bumps came later).
constexpr std::uint32_t kIq2RulesJan2024 = 1971;

const std::vector<GgufPreset> kPresets = {
    {"Q4_0", Q4_0, kQ4_0, false},       {"Q4_1", Q4_1, kQ4_1, false},
    {"Q5_0", Q5_0, kQ5_0, false},       {"Q5_1", Q5_1, kQ5_1, false},
    {"Q8_0", Q8_0, kQ8_0, false},       {"Q2_K", Q2_K, kQ2_K, false},
    {"Q2_K_S", Q2_K_S, kQ2_K, false},   {"Q3_K_S", Q3_K_S, kQ3_K, false},
    {"Q3_K_M", Q3_K_M, kQ3_K, false},   {"Q3_K_L", Q3_K_L, kQ3_K, false},
    {"Q4_K_S", Q4_K_S, kQ4_K, false},   {"Q4_K_M", Q4_K_M, kQ4_K, false},
    {"Q5_K_S", Q5_K_S, kQ5_K, false},   {"Q5_K_M", Q5_K_M, kQ5_K, false},
    {"Q6_K", Q6_K, kQ6_K, false},       {"IQ1_S", IQ1_S, kIQ1_S, true},
    {"IQ1_M", IQ1_M, kIQ1_M, true},     {"IQ2_XXS", IQ2_XXS, kIQ2_XXS, true},
    {"IQ2_XS", IQ2_XS, kIQ2_XS, true},  {"IQ2_S", IQ2_S, kIQ2_XS, true},
    {"IQ2_M", IQ2_M, kIQ2_S, true},     {"IQ3_XXS", IQ3_XXS, kIQ3_XXS, true},
    {"IQ3_XS", IQ3_XS, kIQ3_S, true},   {"IQ3_S", IQ3_S, kIQ3_S, true},
    {"IQ3_M", IQ3_M, kIQ3_S, true},     {"IQ4_NL", IQ4_NL, kIQ4_NL, true},
    {"IQ4_XS", IQ4_XS, kIQ4_XS, true},  {"MXFP4_MOE", MXFP4_MOE, kMXFP4, false},
    // Dated rules (GgufPreset::rulesBuild): the IQ2 presets as the quantizer of January 2024 wrote them.
    {"IQ2_XXS", IQ2_XXS, kIQ2_XXS, true, kIq2RulesJan2024}, {"IQ2_XS", IQ2_XS, kIQ2_XS, true, kIq2RulesJan2024},
};

std::uint32_t blockOf(std::uint32_t type)
{
    const formats::GgmlType* t = formats::ggmlType(type);
    return t != nullptr && t->blockSize != 0 ? t->blockSize : 1;
}

bool oneOf(std::uint32_t f, std::initializer_list<std::uint32_t> set)
{
    for (std::uint32_t s : set)
        if (f == s)
            return true;
    return false;
}

bool endsWith(const std::string& s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool fusesQkv(const std::string& family)
{
    return family == "gptneox" || family == "falcon" || family == "phi3" || family == "gpt2" || family == "bloom"
        || family == "mpt" || family == "starcoder";
}

// The "more bits" layers of Q4_K_M / Q5_K_M: the first and last eighth and every third between.
bool useMoreBits(std::int32_t i, std::int32_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// The output matrix, and the token embedding when it doubles as output.
std::uint32_t outputType(std::uint32_t f, std::uint32_t type, std::uint64_t cols, const QuantModelFacts& m)
{
    if (f == MXFP4_MOE)
        return kQ8_0;
    if (m.falcon || cols % blockOf(type) != 0)
        return kQ8_0;
    if (oneOf(f, {IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ2_S, IQ2_M, IQ1_M}))
        return kQ5_K;
    return type != kQ8_0 ? kQ6_K : type;
}

std::uint32_t tokenEmbdType(std::uint32_t f, std::uint32_t type)
{
    if (oneOf(f, {IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M}))
        return kQ2_K;
    if (oneOf(f, {IQ2_S, IQ2_M, IQ3_XXS}))
        return kIQ3_S;
    return type;
}

// The IQ1/IQ2 family's own branch; @p jan2024: the IQ2 rules of b1971, without the 8-expert bumps.
std::uint32_t lowBitType(std::uint32_t f, std::uint32_t type, QuantCategory c, std::int32_t layer,
                         const QuantModelFacts& m, bool jan2024)
{
    const bool s = f == IQ2_S || f == IQ2_M;
    if (c == QuantCategory::AttnV)
        return m.gqa >= 4 || m.experts >= 4 ? kQ4_K : (s ? kIQ3_S : kQ2_K);
    if (c == QuantCategory::FfnDown)
        return layer < static_cast<std::int32_t>(m.layers / 8) ? (s ? kIQ3_S : kQ2_K) : type;
    if (jan2024)
        return type;
    if (c == QuantCategory::AttnK && m.experts == 8)
        return kQ4_K;
    if (c == QuantCategory::AttnOutput) {
        if (m.experts == 8)
            return kQ5_K;
        if (f == IQ1_S || f == IQ1_M)
            return kIQ2_XXS;
        if (s)
            return kIQ3_S;
    }
    return type;
}

std::uint32_t attnVType(std::uint32_t f, std::uint32_t type, std::int32_t i, const QuantModelFacts& m, bool imatrix)
{
    const std::int32_t n = static_cast<std::int32_t>(m.layers);
    if (f == Q2_K)
        type = m.gqa >= 4 ? kQ4_K : kQ3_K;
    else if (f == Q2_K_S && m.gqa >= 4)
        type = kQ4_K;
    else if (f == IQ3_XXS)
        type = m.gqa >= 4 ? kQ4_K : !imatrix ? kIQ3_S : kIQ3_XXS;
    else if ((f == IQ3_XS || f == IQ3_S) && m.gqa >= 4)
        type = kQ4_K;
    else if (f == IQ3_M)
        type = kQ4_K;
    else if (f == Q3_K_M)
        type = i < 2 ? kQ5_K : kQ4_K;
    else if (f == Q3_K_L)
        type = kQ5_K;
    else if ((f == IQ4_NL || f == IQ4_XS) && m.gqa >= 4)
        type = kQ5_K;
    else if ((f == Q4_K_M || f == Q5_K_M) && useMoreBits(i, n))
        type = kQ6_K;
    else if (f == Q4_K_S && i < 4)
        type = kQ5_K;
    if (m.is70B && (type == kQ3_K || type == kQ4_K))
        type = kQ5_K;
    if (m.experts == 8)
        type = kQ8_0;
    return type;
}

std::uint32_t ffnDownType(std::uint32_t f, std::uint32_t type, std::int32_t i, const QuantModelFacts& m, bool imatrix)
{
    const std::int32_t n = static_cast<std::int32_t>(m.layers);
    if (f == Q2_K)
        return kQ3_K;
    if (f == Q2_K_S)
        return i < n / 8 ? kQ4_K : type;
    if (f == IQ3_XXS && !imatrix)
        return i < n / 8 ? kQ4_K : kQ3_K;
    if (f == Q3_K_M)
        return i < n / 16 ? kQ5_K : (!m.falcon || useMoreBits(i, n)) ? kQ4_K : kQ3_K;
    if (f == IQ3_M && (i < n / 8 || (m.experts == 8 && useMoreBits(i, n))))
        return kQ4_K;
    if (f == Q3_K_L)
        return m.falcon ? kQ4_K : kQ5_K;
    if (f == Q4_K_M) {
        if (m.falcon)
            return i < n / 16 ? kQ6_K : useMoreBits(i, n) ? kQ5_K : kQ4_K;
        return useMoreBits(i, n) ? kQ6_K : type;
    }
    if (i < n / 8 && (f == IQ4_NL || f == IQ4_XS) && !imatrix)
        return kQ5_K;
    if (f == Q5_K_M && useMoreBits(i, n))
        return kQ6_K;
    if (f == Q4_K_S && !m.falcon && i < n / 8)
        return kQ5_K;
    if ((f == Q4_0 || f == Q5_0) && imatrix && i < n / 8)
        return f == Q4_0 ? kQ4_1 : kQ5_1;
    return type;
}

std::uint32_t attnOutputType(std::uint32_t f, std::uint32_t type, const QuantModelFacts& m)
{
    if (m.falcon)
        return f == Q3_K_L ? kQ4_K : type;
    if (m.experts == 8)
        return oneOf(f, {Q2_K, IQ3_XS, IQ3_XXS, Q3_K_S, Q3_K_M, IQ4_NL, Q4_K_S, Q4_K_M, IQ3_S, IQ3_M, IQ4_XS}) ? kQ5_K
                                                                                                              : type;
    if (f == Q2_K)
        return kQ3_K;
    if (f == IQ3_XXS)
        return kIQ3_S;
    if (f == Q3_K_M || f == IQ3_M)
        return kQ4_K;
    if (f == Q3_K_L)
        return kQ5_K;
    return type;
}

// tensor_type_fallback: a type whose block divides the row.
std::uint32_t fallback(std::uint32_t type, std::uint64_t cols)
{
    if (cols % blockOf(type) == 0)
        return type;
    switch (type) {
    case kIQ1_S: case kIQ1_M: case kIQ2_XXS: case kIQ2_XS: case kIQ2_S: case kIQ3_XXS: case kIQ3_S: case kIQ4_XS:
    case kQ2_K: case kQ3_K:
        type = kIQ4_NL;
        break;
    case kQ4_K:
        type = kQ5_0;
        break;
    case kQ5_K:
        type = kQ5_1;
        break;
    case kQ6_K:
        type = kQ8_0;
        break;
    default:
        return kF16;
    }
    return cols % blockOf(type) == 0 ? type : kF16;
}

} // namespace

const std::vector<GgufPreset>& ggufPresets() { return kPresets; }

std::string ggufPresetId(const GgufPreset& preset)
{
    std::string id = asciiLower(preset.name);
    if (preset.rulesBuild != 0)
        id += "-b" + std::to_string(preset.rulesBuild);
    return id;
}

std::optional<GgufPreset> findGgufPreset(std::string_view nameText)
{
    std::string name = asciiLower(nameText);
    if (name == "q3_k" || name == "q4_k" || name == "q5_k")
        name += "_m";
    for (const GgufPreset& p : kPresets)
        if (ggufPresetId(p) == name)
            return p;
    return std::nullopt;
}

std::optional<GgufPreset> ggufPresetOfFileType(std::uint32_t fileType, std::uint32_t rulesBuild)
{
    std::optional<GgufPreset> current;
    for (const GgufPreset& p : kPresets) {
        if (p.fileType != fileType)
            continue;
        if (rulesBuild != 0 && p.rulesBuild == rulesBuild)
            return p;
        if (p.rulesBuild == 0 && !current)
            current = p;
    }
    return current;
}

QuantCategory quantCategory(const TensorSpec& t, const Architecture& arch)
{
    if (t.role == TensorRole::TokenEmbedding)
        return QuantCategory::TokenEmbd;
    if (t.role == TensorRole::Output)
        return QuantCategory::Output;
    const std::string& n = t.name;
    const bool fused = fusesQkv(arch.family);
    if (endsWith(n, "q_proj.weight"))
        return fused ? QuantCategory::AttnQkv : QuantCategory::AttnQ;
    if (endsWith(n, ".k_proj.weight"))
        return fused ? QuantCategory::AttnQkv : QuantCategory::AttnK;
    if (endsWith(n, ".v_proj.weight"))
        return fused ? QuantCategory::AttnQkv : QuantCategory::AttnV;
    if (endsWith(n, "kv_b_proj.weight"))
        return QuantCategory::AttnKvB;
    if (endsWith(n, "o_proj.weight"))
        return QuantCategory::AttnOutput;
    if (endsWith(n, "gate_proj.weight"))
        return QuantCategory::FfnGate;
    if (endsWith(n, "up_proj.weight") || endsWith(n, "fc1.weight"))
        return QuantCategory::FfnUp;
    if (endsWith(n, "down_proj.weight") || endsWith(n, "fc2.weight"))
        return QuantCategory::FfnDown;
    return QuantCategory::Other;
}

QuantModelFacts QuantModelFacts::of(const Architecture& arch)
{
    QuantModelFacts m;
    m.layers = arch.layers;
    m.gqa = arch.kvHeads > 0 ? arch.attentionHeads / arch.kvHeads : 1;
    m.experts = arch.moe.expertCount;
    // llama-model.cpp load_hparams: LLM_ARCH_LLAMA 80 layers with GQA and LLM_ARCH_QWEN2 80 layers
    // are LLM_TYPE_70B.
    m.is70B = arch.layers == 80
        && ((arch.family == "llama" && arch.kvHeads != arch.attentionHeads) || arch.family == "qwen2");
    m.falcon = arch.family == "falcon";
    m.tiedEmbeddings = arch.tiedEmbeddings;
    return m;
}

std::uint32_t ggufTensorType(const GgufPreset& preset, QuantCategory c, std::int32_t layer, std::uint64_t cols,
                             bool expertTensor, const QuantModelFacts& m)
{
    const std::uint32_t f = preset.fileType;
    const bool imatrix = preset.assumesImatrix;
    std::uint32_t type = preset.defaultType;
    if (c == QuantCategory::Output || (m.tiedEmbeddings && c == QuantCategory::TokenEmbd))
        type = outputType(f, type, cols, m);
    else if (f == MXFP4_MOE)
        type = expertTensor ? kMXFP4 : kQ8_0;
    else if (c == QuantCategory::TokenEmbd)
        type = tokenEmbdType(f, type);
    else if (oneOf(f, {IQ2_XXS, IQ2_XS, IQ1_S, IQ2_S, IQ2_M, IQ1_M}))
        type = lowBitType(f, type, c, layer, m, preset.rulesBuild != 0 && preset.rulesBuild <= kIq2RulesJan2024);
    else if (c == QuantCategory::AttnV)
        type = attnVType(f, type, layer, m, imatrix);
    else if (c == QuantCategory::AttnK) {
        if (m.experts == 8)
            type = kQ8_0;
        else if (f == IQ3_XS)
            type = kIQ3_XXS;
        else if (f == IQ3_XXS)
            type = kIQ2_S;
    } else if (c == QuantCategory::AttnQ) {
        if (f == IQ3_XS)
            type = kIQ3_XXS;
        else if (f == IQ3_XXS)
            type = kIQ2_S;
    } else if (c == QuantCategory::FfnDown)
        type = ffnDownType(f, type, layer, m, imatrix);
    else if (c == QuantCategory::AttnOutput)
        type = attnOutputType(f, type, m);
    else if (c == QuantCategory::AttnQkv) {
        if (f == Q3_K_M || f == Q3_K_L || f == IQ3_M)
            type = kQ4_K;
        else if (f == Q4_K_M)
            type = kQ5_K;
        else if (f == Q5_K_M)
            type = kQ6_K;
    } else if (c == QuantCategory::FfnGate || c == QuantCategory::FfnUp) {
        const std::int32_t n = static_cast<std::int32_t>(m.layers);
        if (f == IQ3_XS && layer >= n / 8 && layer < 7 * n / 8)
            type = kIQ3_XXS;
    }
    return fallback(type, cols);
}

} // namespace headroom
