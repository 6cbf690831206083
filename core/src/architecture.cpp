#include "headroom/core/architecture.h"

#include "headroom/core/units.h"

#include <algorithm>

namespace headroom {

namespace {
// Bounds well beyond any published model (the largest have ~160 layers, 2^14 hidden, 2^18 vocab)
// and well inside what 64-bit products of them need.
constexpr std::uint64_t kMaxLayers = 10'000;
constexpr std::uint64_t kMaxHidden = 1ull << 20;
constexpr std::uint64_t kMaxHeads = 1ull << 14;
constexpr std::uint64_t kMaxHeadDim = 1ull << 14;
constexpr std::uint64_t kMaxVocab = 1ull << 24;
constexpr std::uint64_t kMaxIntermediate = 1ull << 22;
constexpr std::uint64_t kMaxExperts = 1ull << 12;

std::string outOfRange(const char* key, std::uint64_t value, std::uint64_t lo, std::uint64_t hi)
{
    return std::string(key) + " " + std::to_string(value) + " is outside " + std::to_string(lo) + ".."
        + std::to_string(hi);
}
// A vision tower: the same bounds as the text model, plus pixels (image and patch sizes) and the
// per-patch factors, so that every product in parameters.cpp stays far inside 64 bits.
std::string validateVision(const VisionConfig& v)
{
    if (v.layers > kMaxLayers)
        return outOfRange("vision layers", v.layers, 1, kMaxLayers);
    if (v.hiddenSize < 1 || v.hiddenSize > kMaxHidden)
        return outOfRange("vision hidden_size", v.hiddenSize, 1, kMaxHidden);
    if (v.intermediateSize < 1 || v.intermediateSize > kMaxIntermediate)
        return outOfRange("vision intermediate_size", v.intermediateSize, 1, kMaxIntermediate);
    if (v.heads < 1 || v.heads > kMaxHeads || v.hiddenSize % v.heads != 0)
        return "vision heads " + std::to_string(v.heads) + " must be in 1.." + std::to_string(kMaxHeads)
            + " and divide hidden_size " + std::to_string(v.hiddenSize);
    if (v.patchSize < 1 || v.patchSize > 1024)
        return outOfRange("vision patch_size", v.patchSize, 1, 1024);
    if (v.imageSize > (1u << 16))
        return outOfRange("vision image_size", v.imageSize, 0, 1u << 16);
    if (v.channels < 1 || v.channels > 16 || v.temporalPatchSize < 1 || v.temporalPatchSize > 16 || v.mergeSize < 1
        || v.mergeSize > 16)
        return "vision channels, temporal_patch_size and spatial_merge_size must be in 1..16";
    if (v.outputSize < 1 || v.outputSize > kMaxHidden)
        return outOfRange("vision output size", v.outputSize, 1, kMaxHidden);
    if (v.kind == VisionKind::Llama4 && (v.adapterSize < 1 || v.adapterSize > kMaxHidden))
        return outOfRange("vision adapter size (projector_input_dim)", v.adapterSize, 1, kMaxHidden);
    if (v.kind != VisionKind::Llama4 && v.adapterSize != 0)
        return "vision adapter size is a Llama 4 field; " + std::string(visionKindName(v.kind)) + " has none";
    return {};
}
// Mamba shapes: d_inner, d_state, kernel and (Mamba-2) heads x head_dim = d_inner, groups dividing
// the heads; bounded so that every state and weight product stays far below 2^64.
std::string validateSsm(const Architecture& a)
{
    const auto& mixers = a.hybrid.layerMixers;
    const bool mamba1 = std::find(mixers.begin(), mixers.end(), MixerKind::Mamba) != mixers.end();
    const bool mamba2 = std::find(mixers.begin(), mixers.end(), MixerKind::Mamba2) != mixers.end()
        || std::find(mixers.begin(), mixers.end(), MixerKind::AttentionMamba2) != mixers.end();
    if (!mamba1 && !mamba2)
        return {};
    if (mamba1 && mamba2)
        return "a model mixes Mamba-1 and Mamba-2 layers";
    const SsmConfig& m = a.hybrid.ssm;
    if (m.innerSize < 1 || m.innerSize > kMaxIntermediate)
        return outOfRange("ssm inner_size", m.innerSize, 1, kMaxIntermediate);
    if (m.stateSize < 1 || m.stateSize > 4096)
        return outOfRange("ssm state_size", m.stateSize, 1, 4096);
    if (m.convKernel < 1 || m.convKernel > 64)
        return outOfRange("ssm conv_kernel", m.convKernel, 1, 64);
    if (mamba1 && (m.dtRank < 1 || m.dtRank > kMaxHidden))
        return outOfRange("ssm dt_rank", m.dtRank, 1, kMaxHidden);
    if (mamba2) {
        if (m.heads < 1 || m.heads > kMaxHeads || m.headDim < 1 || m.headDim > kMaxHeadDim)
            return "ssm heads and head_dim must be in 1..16384";
        if (std::uint64_t{m.heads} * m.headDim != m.innerSize)
            return "ssm heads x head_dim (" + std::to_string(std::uint64_t{m.heads} * m.headDim)
                + ") must equal inner_size " + std::to_string(m.innerSize);
        if (m.groups < 1 || m.heads % m.groups != 0)
            return "ssm groups " + std::to_string(m.groups) + " must divide the heads (" + std::to_string(m.heads) + ")";
    }
    return {};
}

} // namespace

std::string validateArchitecture(const Architecture& a)
{
    if (a.layers < 1 || a.layers > kMaxLayers)
        return outOfRange("layers", a.layers, 1, kMaxLayers);
    if (a.hiddenSize < 1 || a.hiddenSize > kMaxHidden)
        return outOfRange("hidden_size", a.hiddenSize, 1, kMaxHidden);
    if (a.attentionHeads < 1 || a.attentionHeads > kMaxHeads)
        return outOfRange("attention_heads", a.attentionHeads, 1, kMaxHeads);
    if (a.headDim < 1 || a.headDim > kMaxHeadDim)
        return outOfRange("head_dim", a.headDim, 1, kMaxHeadDim);
    if (a.valueHeadDim > kMaxHeadDim)
        return outOfRange("value_head_dim", a.valueHeadDim, 0, kMaxHeadDim);
    if (a.vocabSize > kMaxVocab)
        return outOfRange("vocab_size", a.vocabSize, 0, kMaxVocab);
    if (a.intermediateSize > kMaxIntermediate)
        return outOfRange("intermediate_size", a.intermediateSize, 0, kMaxIntermediate);
    if (!a.kvHeadsPerLayer.empty() && a.kvHeadsPerLayer.size() != a.layers)
        return "kv_heads_per_layer has " + std::to_string(a.kvHeadsPerLayer.size()) + " entries, expected "
            + std::to_string(a.layers) + " (one per layer)";
    if (!a.mla.enabled()) {
        for (std::uint32_t i = 0; i < a.layers; ++i) {
            const std::uint32_t kv = a.kvHeadsOf(i);
            // Per-layer lists may hold 0 for layers without attention (none of our families).
            if (kv > a.attentionHeads)
                return "kv_heads " + std::to_string(kv) + " exceeds attention_heads " + std::to_string(a.attentionHeads);
            if (kv == 0 && a.kvHeadsPerLayer.empty())
                return "kv_heads is 0";
            if (kv != 0 && a.attentionHeads % kv != 0)
                return "kv_heads " + std::to_string(kv) + " does not divide attention_heads "
                    + std::to_string(a.attentionHeads);
        }
    } else {
        if (a.mla.kvLoraRank > kMaxHidden || a.mla.qkRopeHeadDim > kMaxHeadDim || a.mla.qkNopeHeadDim > kMaxHeadDim
            || a.mla.vHeadDim > kMaxHeadDim || a.mla.qLoraRank > kMaxHidden)
            return "MLA dimensions out of range";
    }
    if (a.moe.expertCount > kMaxExperts)
        return outOfRange("expert_count", a.moe.expertCount, 0, kMaxExperts);
    if (a.moe.enabled()) {
        if (a.moe.expertsPerToken < 1 || a.moe.expertsPerToken > a.moe.expertCount)
            return "experts_per_token " + std::to_string(a.moe.expertsPerToken) + " must be in 1.."
                + std::to_string(a.moe.expertCount);
        if (a.moe.expertFfnSize < 1 || a.moe.expertFfnSize > kMaxIntermediate)
            return outOfRange("expert_ffn_size", a.moe.expertFfnSize, 1, kMaxIntermediate);
        if (a.moe.denseFirstLayers > a.layers)
            return "dense_first_layers exceeds layers";
        if (a.moe.layerStep < 1 || a.moe.layerStep > a.layers)
            return "moe layer_step " + std::to_string(a.moe.layerStep) + " must be in 1.." + std::to_string(a.layers);
    }
    if (!a.sliding.slidingLayers.empty() && a.sliding.slidingLayers.size() != a.layers)
        return "sliding window layer list has " + std::to_string(a.sliding.slidingLayers.size())
            + " entries, expected " + std::to_string(a.layers);
    if (a.normsPerLayer > 8)
        return outOfRange("norms_per_layer", a.normsPerLayer, 0, 8);
    if (a.positionEmbeddingRows > (1ull << 24))
        return outOfRange("position_embedding_rows", a.positionEmbeddingRows, 0, 1ull << 24);
    if (a.hybrid.enabled()) {
        if (a.hybrid.layerMixers.size() != a.layers)
            return "layer mixer list has " + std::to_string(a.hybrid.layerMixers.size()) + " entries, expected "
                + std::to_string(a.layers);
        const LinearAttentionConfig& l = a.hybrid.linear;
        const bool linear = std::find(a.hybrid.layerMixers.begin(), a.hybrid.layerMixers.end(), MixerKind::GatedDeltaNet)
            != a.hybrid.layerMixers.end();
        if (linear
            && (l.keyHeads < 1 || l.keyHeads > kMaxHeads || l.valueHeads < 1 || l.valueHeads > kMaxHeads || l.keyHeadDim < 1
                || l.keyHeadDim > kMaxHeadDim || l.valueHeadDim < 1 || l.valueHeadDim > kMaxHeadDim || l.convKernel < 1
                || l.convKernel > 64))
            return "linear attention heads and dims must be in 1..16384, conv kernel in 1..64";
        if (std::string problem = validateSsm(a); !problem.empty())
            return problem;
    }
    if (a.moe.sharedExpertFfnSize > kMaxIntermediate)
        return outOfRange("shared_expert_ffn_size", a.moe.sharedExpertFfnSize, 0, kMaxIntermediate);
    if (a.vision.enabled())
        return validateVision(a.vision);
    return {};
}

const char* mixerKindName(MixerKind kind)
{
    switch (kind) {
    case MixerKind::GatedDeltaNet: return "gated_deltanet";
    case MixerKind::Mamba: return "mamba";
    case MixerKind::Mamba2: return "mamba2";
    case MixerKind::MlpOnly: return "mlp";
    case MixerKind::AttentionMamba2: return "attention_mamba2";
    case MixerKind::Attention: break;
    }
    return "attention";
}

RecurrentState recurrentState(const Architecture& a, std::uint32_t layer, std::uint32_t tp)
{
    tp = std::max<std::uint32_t>(tp, 1);
    RecurrentState out;
    const MixerKind kind = a.hybrid.mixerOf(layer);
    if (kind == MixerKind::GatedDeltaNet) {
        const LinearAttentionConfig& l = a.hybrid.linear;
        out.convElements = (std::uint64_t{l.convKernel} - 1) * ceilDiv(l.convChannels(), tp);
        out.ssmElements = ceilDiv(l.valueHeads, tp) * l.keyHeadDim * l.valueHeadDim;
    } else if (kind == MixerKind::Mamba) {
        const SsmConfig& m = a.hybrid.ssm;
        out.convElements = (std::uint64_t{m.convKernel} - 1) * ceilDiv(m.innerSize, tp);
        out.ssmElements = ceilDiv(m.innerSize, tp) * m.stateSize;
    } else if (kind == MixerKind::Mamba2 || kind == MixerKind::AttentionMamba2) {
        const SsmConfig& m = a.hybrid.ssm;
        const std::uint64_t groups = m.groups % tp == 0 ? m.groups : m.groups + (tp > m.groups ? tp - m.groups : 0);
        const std::uint64_t channels = m.innerSize + 2 * groups * m.stateSize;
        out.convElements = (std::uint64_t{m.convKernel} - 1) * ceilDiv(channels, tp);
        out.ssmElements = ceilDiv(m.heads, tp) * m.headDim * m.stateSize;
    }
    return out;
}

std::optional<MixerKind> mixerKindFromName(const std::string& name)
{
    if (name == "attention" || name == "full_attention" || name == "sliding_attention")
        return MixerKind::Attention;
    if (name == "gated_deltanet" || name == "linear_attention")
        return MixerKind::GatedDeltaNet;
    if (name == "mamba")
        return MixerKind::Mamba;
    if (name == "mamba2")
        return MixerKind::Mamba2;
    if (name == "mlp")
        return MixerKind::MlpOnly;
    if (name == "attention_mamba2")
        return MixerKind::AttentionMamba2;
    return std::nullopt;
}

const char* visionKindName(VisionKind kind)
{
    switch (kind) {
    case VisionKind::None:
        return "";
    case VisionKind::Siglip:
        return "siglip";
    case VisionKind::Clip:
        return "clip";
    case VisionKind::Pixtral:
        return "pixtral";
    case VisionKind::Qwen2Vl:
        return "qwen2-vl";
    case VisionKind::Qwen25Vl:
        return "qwen2.5-vl";
    case VisionKind::Llama4:
        return "llama4";
    }
    return "";
}

VisionKind visionKindFromName(const std::string& name)
{
    for (VisionKind k : {VisionKind::Siglip, VisionKind::Clip, VisionKind::Pixtral, VisionKind::Qwen2Vl, VisionKind::Qwen25Vl,
                         VisionKind::Llama4})
        if (name == visionKindName(k))
            return k;
    return VisionKind::None;
}

} // namespace headroom
