#include "architecturejson.h"

#include "headroom/core/architecturetext.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <string_view>
#include <vector>

namespace headroom {

namespace {

using nlohmann::json;

/// Reads typed members of one JSON object and records the first problem as (pointer, message).
class ObjectReader {
public:
    ObjectReader(const json& obj, std::string pointer, std::string& errorKey, std::string& errorMessage)
        : m_obj(obj), m_pointer(std::move(pointer)), m_errorKey(errorKey), m_errorMessage(errorMessage)
    {
    }

    /// Fails with @p message on member @p name ("" = the object itself).
    bool fail(std::string_view name, std::string message)
    {
        m_errorKey = name.empty() ? m_pointer : m_pointer + "/" + std::string(name);
        m_errorMessage = std::move(message);
        return false;
    }

    /// The object must be a JSON object whose keys are all in @p allowed.
    bool checkObject(std::initializer_list<std::string_view> allowed)
    {
        if (!m_obj.is_object())
            return fail("", std::string("expected an object, found ") + m_obj.type_name());
        for (const auto& item : m_obj.items()) {
            bool known = false;
            for (std::string_view a : allowed)
                known = known || item.key() == a;
            if (!known)
                return fail(item.key(), "unknown key");
        }
        return true;
    }

    bool has(const char* name) const { return m_obj.contains(name); }
    const json& at(const char* name) const { return m_obj.at(name); }
    std::string pointer(const char* name) const { return m_pointer + "/" + name; }

    /// An unsigned integer in [minimum, max of T]. Absent: error when @p required, else untouched.
    template <typename T>
    bool unsignedValue(const char* name, T& out, bool required, std::uint64_t minimum = 0)
    {
        if (!has(name))
            return required ? fail(name, "missing required key") : true;
        const json& v = at(name);
        if (!v.is_number_integer())
            return fail(name, std::string("expected an integer, found ") + describe(v));
        if (!v.is_number_unsigned())
            return fail(name, "expected a non-negative integer, found " + v.dump());
        const auto value = v.get<std::uint64_t>();
        if (value < minimum)
            return fail(name, "must be at least " + std::to_string(minimum) + ", found " + std::to_string(value));
        if (value > std::numeric_limits<T>::max())
            return fail(name, "too large: " + std::to_string(value));
        out = static_cast<T>(value);
        return true;
    }

    /// A number in [minimum, maximum]. Absent: error when @p required, else untouched.
    bool numberValue(const char* name, double& out, bool required, double minimum, double maximum)
    {
        if (!has(name))
            return required ? fail(name, "missing required key") : true;
        const json& v = at(name);
        if (!v.is_number())
            return fail(name, std::string("expected a number, found ") + describe(v));
        const double value = v.get<double>();
        if (!(value >= minimum && value <= maximum))
            return fail(name, "expected a number in " + json(minimum).dump() + ".." + json(maximum).dump() + ", found "
                                  + v.dump());
        out = value;
        return true;
    }

    /// A boolean (always required).
    bool boolValue(const char* name, bool& out)
    {
        if (!has(name))
            return fail(name, "missing required key");
        const json& v = at(name);
        if (!v.is_boolean())
            return fail(name, std::string("expected a boolean, found ") + describe(v));
        out = v.get<bool>();
        return true;
    }

    /// A non-empty string (always required).
    bool stringValue(const char* name, std::string& out)
    {
        if (!has(name))
            return fail(name, "missing required key");
        const json& v = at(name);
        if (!v.is_string())
            return fail(name, std::string("expected a string, found ") + describe(v));
        out = v.get<std::string>();
        if (out.empty())
            return fail(name, "must not be empty");
        return true;
    }

    /// "string \"32\"", "number 1.5", "null".
    static std::string describe(const json& v)
    {
        std::string text = v.dump();
        if (text.size() > 40)
            text = text.substr(0, 37) + "...";
        return std::string(v.type_name()) + (v.is_null() ? "" : " " + text);
    }

private:
    const json& m_obj;
    std::string m_pointer;
    std::string& m_errorKey;
    std::string& m_errorMessage;
};

/// Reads an array of booleans at @p name of @p r.
bool boolArray(ObjectReader& r, const char* name, std::vector<bool>& out)
{
    const json& v = r.at(name);
    if (!v.is_array())
        return r.fail(name, std::string("expected an array of booleans, found ") + ObjectReader::describe(v));
    if (v.empty())
        return r.fail(name, "must not be empty");
    out.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_boolean())
            return r.fail(std::string(name) + "/" + std::to_string(i),
                          std::string("expected a boolean, found ") + ObjectReader::describe(v[i]));
        out.push_back(v[i].get<bool>());
    }
    return true;
}

bool readMoe(const json& j, const std::string& pointer, MoeConfig& moe, std::string& key, std::string& message)
{
    ObjectReader r(j, pointer, key, message);
    return r.checkObject(
               {"expert_count", "experts_per_token", "shared_experts", "expert_ffn_size", "dense_first_layers",
                "layer_step", "shared_expert_ffn_size", "shared_expert_gate"})
        && r.unsignedValue("expert_count", moe.expertCount, true, 1)
        && r.unsignedValue("experts_per_token", moe.expertsPerToken, true, 1)
        && r.unsignedValue("shared_experts", moe.sharedExperts, true)
        && r.unsignedValue("expert_ffn_size", moe.expertFfnSize, true, 1)
        && r.unsignedValue("dense_first_layers", moe.denseFirstLayers, true)
        && (!r.has("layer_step") || r.unsignedValue("layer_step", moe.layerStep, true, 1))
        && r.unsignedValue("shared_expert_ffn_size", moe.sharedExpertFfnSize, false)
        && (!r.has("shared_expert_gate") || r.boolValue("shared_expert_gate", moe.sharedExpertGate))
        && (moe.expertsPerToken <= moe.expertCount
            || r.fail("experts_per_token", "experts_per_token " + std::to_string(moe.expertsPerToken)
                                               + " exceeds expert_count " + std::to_string(moe.expertCount)));
}

bool readMla(const json& j, const std::string& pointer, MlaConfig& mla, std::string& key, std::string& message)
{
    ObjectReader r(j, pointer, key, message);
    return r.checkObject({"kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank",
                          "full_kv_cache"})
        && r.unsignedValue("kv_lora_rank", mla.kvLoraRank, true, 1)
        && r.unsignedValue("qk_rope_head_dim", mla.qkRopeHeadDim, true)
        && r.unsignedValue("qk_nope_head_dim", mla.qkNopeHeadDim, true)
        && r.unsignedValue("v_head_dim", mla.vHeadDim, true, 1)
        && r.unsignedValue("q_lora_rank", mla.qLoraRank, true)
        && (!r.has("full_kv_cache") || r.boolValue("full_kv_cache", mla.fullKvCache));
}

bool readSliding(const json& j, const std::string& pointer, std::uint32_t layers, SlidingWindowConfig& sw,
                 std::string& key, std::string& message)
{
    ObjectReader r(j, pointer, key, message);
    if (!r.checkObject({"window_tokens", "pattern", "layers"})
        || !r.unsignedValue("window_tokens", sw.windowTokens, true, 1))
        return false;
    sw.slidingLayers.clear();
    if (r.has("pattern") && r.has("layers"))
        return r.fail("", "give either pattern or layers, not both");
    std::vector<bool> flags;
    if (r.has("pattern")) {
        if (!boolArray(r, "pattern", flags))
            return false;
        if (flags.size() > layers)
            return r.fail("pattern", "pattern has " + std::to_string(flags.size()) + " entries, more than the "
                                         + std::to_string(layers) + " layers");
        // The pattern repeats over the layers: gemma-2's [true, false] slides on even layers.
        for (std::uint32_t i = 0; i < layers; ++i)
            sw.slidingLayers.push_back(flags[i % flags.size()]);
    } else if (r.has("layers")) {
        if (!boolArray(r, "layers", flags))
            return false;
        if (flags.size() != layers)
            return r.fail("layers", "layers has " + std::to_string(flags.size()) + " entries, expected "
                                        + std::to_string(layers) + " (one per layer)");
        sw.slidingLayers = std::move(flags);
    }
    return true;
}

/// Shortest period p with list[i] == list[i % p] for every i (list.size() when none is shorter).
template <typename List>
std::size_t shortestPeriod(const List& list)
{
    for (std::size_t p = 1; p < list.size(); ++p) {
        bool repeats = true;
        for (std::size_t i = p; i < list.size() && repeats; ++i)
            repeats = list[i] == list[i % p];
        if (repeats)
            return p;
    }
    return list.size();
}

bool readHybrid(const json& j, const std::string& pointer, std::uint32_t layers, HybridConfig& h, std::string& key,
                std::string& message)
{
    ObjectReader r(j, pointer, key, message);
    if (!r.checkObject({"pattern", "linear_attention", "attention_output_gate", "ssm", "block_is_mixer_or_mlp"}))
        return false;
    if (!r.has("pattern"))
        return r.fail("pattern", "missing required key");
    const json& list = r.at("pattern");
    if (!list.is_array() || list.empty() || list.size() > layers)
        return r.fail("pattern", "expected 1.." + std::to_string(layers) + " mixer names, found " + ObjectReader::describe(list));
    std::vector<MixerKind> pattern;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const auto kind = list[i].is_string() ? mixerKindFromName(list[i].get<std::string>()) : std::nullopt;
        if (!kind)
            return r.fail("pattern/" + std::to_string(i),
                          "expected \"attention\", \"gated_deltanet\", \"mamba\", \"mamba2\", \"mlp\" or \"attention_mamba2\", found "
                              + ObjectReader::describe(list[i]));
        pattern.push_back(*kind);
    }
    // The pattern repeats over the layers, as sliding_window/pattern does.
    h.layerMixers.clear();
    for (std::uint32_t i = 0; i < layers; ++i)
        h.layerMixers.push_back(pattern[i % pattern.size()]);
    if (r.has("attention_output_gate") && !r.boolValue("attention_output_gate", h.attentionOutputGate))
        return false;
    if (r.has("block_is_mixer_or_mlp") && !r.boolValue("block_is_mixer_or_mlp", h.blockIsMixerOrMlp))
        return false;
    if (r.has("ssm")) {
        ObjectReader m(r.at("ssm"), r.pointer("ssm"), key, message);
        SsmConfig& c = h.ssm;
        if (!(m.checkObject({"inner_size", "state_size", "conv_kernel", "heads", "head_dim", "groups", "dt_rank", "conv_bias",
                             "proj_bias"})
              && m.unsignedValue("inner_size", c.innerSize, true, 1) && m.unsignedValue("state_size", c.stateSize, true, 1)
              && m.unsignedValue("conv_kernel", c.convKernel, true, 1) && m.unsignedValue("heads", c.heads, false)
              && m.unsignedValue("head_dim", c.headDim, false) && m.unsignedValue("groups", c.groups, false)
              && m.unsignedValue("dt_rank", c.dtRank, false)
              && (!m.has("conv_bias") || m.boolValue("conv_bias", c.convBias))
              && (!m.has("proj_bias") || m.boolValue("proj_bias", c.projBias))))
            return false;
    }
    if (!r.has("linear_attention"))
        return true;
    ObjectReader l(r.at("linear_attention"), r.pointer("linear_attention"), key, message);
    return l.checkObject({"key_heads", "value_heads", "key_head_dim", "value_head_dim", "conv_kernel"})
        && l.unsignedValue("key_heads", h.linear.keyHeads, true, 1) && l.unsignedValue("value_heads", h.linear.valueHeads, true, 1)
        && l.unsignedValue("key_head_dim", h.linear.keyHeadDim, true, 1)
        && l.unsignedValue("value_head_dim", h.linear.valueHeadDim, true, 1)
        && l.unsignedValue("conv_kernel", h.linear.convKernel, true, 1);
}

bool readRopeScaling(const json& j, const std::string& pointer, RopeScaling& rs, std::string& key, std::string& message)
{
    ObjectReader r(j, pointer, key, message);
    return r.checkObject({"type", "factor", "original_context_length"}) && r.stringValue("type", rs.type)
        && r.numberValue("factor", rs.factor, false, 1.0, 1024.0)
        && r.unsignedValue("original_context_length", rs.originalContextLength, false, 1);
}

bool readVision(const json& j, const std::string& pointer, VisionConfig& v, std::string& key, std::string& message)
{
    ObjectReader r(j, pointer, key, message);
    std::string kind;
    if (!r.checkObject({"kind", "layers", "hidden_size", "intermediate_size", "heads", "patch_size", "image_size",
                        "channels", "temporal_patch_size", "merge_size", "output_size", "adapter_size"})
        || !r.stringValue("kind", kind))
        return false;
    v.kind = visionKindFromName(kind);
    if (v.kind == VisionKind::None)
        return r.fail("kind", "expected siglip, clip, pixtral, qwen2-vl, qwen2.5-vl or llama4, found \"" + kind + "\"");
    return r.unsignedValue("layers", v.layers, true, 1) && r.unsignedValue("hidden_size", v.hiddenSize, true, 1)
        && r.unsignedValue("intermediate_size", v.intermediateSize, true, 1) && r.unsignedValue("heads", v.heads, true, 1)
        && r.unsignedValue("patch_size", v.patchSize, true, 1) && r.unsignedValue("image_size", v.imageSize, true)
        && r.unsignedValue("channels", v.channels, false, 1)
        && r.unsignedValue("temporal_patch_size", v.temporalPatchSize, false, 1)
        && r.unsignedValue("merge_size", v.mergeSize, false, 1) && r.unsignedValue("output_size", v.outputSize, true, 1)
        && r.unsignedValue("adapter_size", v.adapterSize, v.kind == VisionKind::Llama4, 1);
}

} // namespace

bool architectureFromJson(const nlohmann::json& j, Architecture& out, std::string& errorKey, std::string& errorMessage)
{
    errorKey.clear();
    errorMessage.clear();
    Architecture a;
    ObjectReader r(j, "", errorKey, errorMessage);
    if (!r.checkObject({"family", "layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
                        "intermediate_size", "vocab_size", "tied_embeddings", "qkv_bias", "output_proj_bias",
                        "mlp_bias", "qk_norm", "norm", "mlp",
                        "norms_per_layer", "position_embedding_rows", "context_length", "kv_heads_per_layer",
                        "value_head_dim", "moe", "mla", "sliding_window", "vision", "hybrid", "rope_scaling"}))
        return false;

    std::string norm;
    std::string mlp;
    if (!r.stringValue("family", a.family) || !r.unsignedValue("layers", a.layers, true, 1)
        || !r.unsignedValue("hidden_size", a.hiddenSize, true, 1)
        || !r.unsignedValue("attention_heads", a.attentionHeads, true, 1)
        || !r.unsignedValue("kv_heads", a.kvHeads, true, 1) || !r.unsignedValue("head_dim", a.headDim, true, 1)
        || !r.unsignedValue("intermediate_size", a.intermediateSize, true, 1)
        || !r.unsignedValue("vocab_size", a.vocabSize, true, 1) || !r.boolValue("tied_embeddings", a.tiedEmbeddings)
        || !r.boolValue("qkv_bias", a.qkvBias) || !r.boolValue("output_proj_bias", a.outputProjBias)
        || !r.boolValue("mlp_bias", a.mlpBias) || !r.stringValue("norm", norm) || !r.stringValue("mlp", mlp)
        || !r.unsignedValue("norms_per_layer", a.normsPerLayer, true)
        || !r.unsignedValue("position_embedding_rows", a.positionEmbeddingRows, true)
        || !r.unsignedValue("context_length", a.contextLength, true, 1)
        || !r.unsignedValue("value_head_dim", a.valueHeadDim, false, 1))
        return false;

    if (r.has("qk_norm") && !r.boolValue("qk_norm", a.qkNorm))
        return false;

    if (norm == "rmsnorm")
        a.norm = NormKind::RmsNorm;
    else if (norm == "layernorm")
        a.norm = NormKind::LayerNorm;
    else
        return r.fail("norm", "expected \"rmsnorm\" or \"layernorm\", found \"" + norm + "\"");
    if (mlp == "gated")
        a.mlp = MlpKind::Gated;
    else if (mlp == "plain")
        a.mlp = MlpKind::Plain;
    else
        return r.fail("mlp", "expected \"gated\" or \"plain\", found \"" + mlp + "\"");

    if (r.has("kv_heads_per_layer")) {
        const json& list = r.at("kv_heads_per_layer");
        if (!list.is_array())
            return r.fail("kv_heads_per_layer",
                          std::string("expected an array of integers, found ") + ObjectReader::describe(list));
        if (list.size() != a.layers)
            return r.fail("kv_heads_per_layer", "has " + std::to_string(list.size()) + " entries, expected "
                                                    + std::to_string(a.layers) + " (one per layer)");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const json& v = list[i];
            if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > (1u << 14))
                return r.fail("kv_heads_per_layer/" + std::to_string(i),
                              "expected an integer in 1..16384, found " + ObjectReader::describe(v));
            a.kvHeadsPerLayer.push_back(static_cast<std::uint32_t>(v.get<std::uint64_t>()));
        }
    }
    if (r.has("moe") && !readMoe(r.at("moe"), r.pointer("moe"), a.moe, errorKey, errorMessage))
        return false;
    if (a.moe.enabled() && a.moe.denseFirstLayers > a.layers)
        return r.fail("moe/dense_first_layers", "dense_first_layers " + std::to_string(a.moe.denseFirstLayers)
                                                    + " exceeds layers " + std::to_string(a.layers));
    if (r.has("mla") && !readMla(r.at("mla"), r.pointer("mla"), a.mla, errorKey, errorMessage))
        return false;
    if (r.has("sliding_window")
        && !readSliding(r.at("sliding_window"), r.pointer("sliding_window"), a.layers, a.sliding, errorKey,
                        errorMessage))
        return false;
    if (r.has("vision") && !readVision(r.at("vision"), r.pointer("vision"), a.vision, errorKey, errorMessage))
        return false;
    if (r.has("hybrid") && !readHybrid(r.at("hybrid"), r.pointer("hybrid"), a.layers, a.hybrid, errorKey, errorMessage))
        return false;
    if (r.has("rope_scaling")
        && !readRopeScaling(r.at("rope_scaling"), r.pointer("rope_scaling"), a.ropeScaling, errorKey, errorMessage))
        return false;

    out = std::move(a);
    return true;
}

nlohmann::json architectureToJson(const Architecture& a)
{
    // nlohmann::ordered_json would keep the schema's order, but json is what the callers hold;
    // key order does not matter to the schema or to architectureFromJson.
    json j;
    j["family"] = a.family;
    j["layers"] = a.layers;
    j["hidden_size"] = a.hiddenSize;
    j["attention_heads"] = a.attentionHeads;
    j["kv_heads"] = a.kvHeads;
    j["head_dim"] = a.headDim;
    j["intermediate_size"] = a.intermediateSize;
    j["vocab_size"] = a.vocabSize;
    j["tied_embeddings"] = a.tiedEmbeddings;
    j["qkv_bias"] = a.qkvBias;
    j["output_proj_bias"] = a.outputProjBias;
    j["mlp_bias"] = a.mlpBias;
    if (a.qkNorm)
        j["qk_norm"] = true;
    j["norm"] = a.norm == NormKind::RmsNorm ? "rmsnorm" : "layernorm";
    j["mlp"] = a.mlp == MlpKind::Gated ? "gated" : "plain";
    j["norms_per_layer"] = a.normsPerLayer;
    j["position_embedding_rows"] = a.positionEmbeddingRows;
    j["context_length"] = a.contextLength;
    if (!a.kvHeadsPerLayer.empty())
        j["kv_heads_per_layer"] = a.kvHeadsPerLayer;
    if (a.valueHeadDim != 0)
        j["value_head_dim"] = a.valueHeadDim;
    if (a.moe.enabled()) {
        j["moe"] = {{"expert_count", a.moe.expertCount},
                    {"experts_per_token", a.moe.expertsPerToken},
                    {"shared_experts", a.moe.sharedExperts},
                    {"expert_ffn_size", a.moe.expertFfnSize},
                    {"dense_first_layers", a.moe.denseFirstLayers}};
        if (a.moe.layerStep > 1)
            j["moe"]["layer_step"] = a.moe.layerStep;
        if (a.moe.sharedExpertFfnSize > 0)
            j["moe"]["shared_expert_ffn_size"] = a.moe.sharedExpertFfnSize;
        if (a.moe.sharedExpertFfnSize > 0 && !a.moe.sharedExpertGate)
            j["moe"]["shared_expert_gate"] = false;
    }
    if (a.mla.enabled()) {
        j["mla"] = {{"kv_lora_rank", a.mla.kvLoraRank},
                    {"qk_rope_head_dim", a.mla.qkRopeHeadDim},
                    {"qk_nope_head_dim", a.mla.qkNopeHeadDim},
                    {"v_head_dim", a.mla.vHeadDim},
                    {"q_lora_rank", a.mla.qLoraRank}};
        if (a.mla.fullKvCache)
            j["mla"]["full_kv_cache"] = true;
    }
    if (a.sliding.enabled()) {
        json sw = {{"window_tokens", a.sliding.windowTokens}};
        const std::vector<bool>& flags = a.sliding.slidingLayers;
        if (!flags.empty()) {
            const std::size_t period = shortestPeriod(flags);
            json list = json::array();
            for (std::size_t i = 0; i < period; ++i)
                list.push_back(static_cast<bool>(flags[i]));
            sw[period < flags.size() ? "pattern" : "layers"] = std::move(list);
        }
        j["sliding_window"] = std::move(sw);
    }
    if (a.hybrid.enabled()) {
        // The shortest period of the mixers, as the sliding-window flags are written.
        const std::vector<MixerKind>& mixers = a.hybrid.layerMixers;
        const std::size_t period = shortestPeriod(mixers);
        json list = json::array();
        for (std::size_t i = 0; i < period; ++i)
            list.push_back(mixerKindName(mixers[i]));
        j["hybrid"] = {{"pattern", std::move(list)}, {"attention_output_gate", a.hybrid.attentionOutputGate}};
        if (std::find(mixers.begin(), mixers.end(), MixerKind::GatedDeltaNet) != mixers.end())
            j["hybrid"]["linear_attention"] = {{"key_heads", a.hybrid.linear.keyHeads},
                                               {"value_heads", a.hybrid.linear.valueHeads},
                                               {"key_head_dim", a.hybrid.linear.keyHeadDim},
                                               {"value_head_dim", a.hybrid.linear.valueHeadDim},
                                               {"conv_kernel", a.hybrid.linear.convKernel}};
        if (a.hybrid.ssm.innerSize > 0) {
            const SsmConfig& c = a.hybrid.ssm;
            json ssm = {{"inner_size", c.innerSize}, {"state_size", c.stateSize}, {"conv_kernel", c.convKernel},
                        {"conv_bias", c.convBias},   {"proj_bias", c.projBias}};
            for (const auto& [name, value] : {std::pair<const char*, std::uint32_t>{"heads", c.heads},
                                              {"head_dim", c.headDim}, {"groups", c.groups}, {"dt_rank", c.dtRank}})
                if (value > 0)
                    ssm[name] = value;
            j["hybrid"]["ssm"] = std::move(ssm);
        }
        if (a.hybrid.blockIsMixerOrMlp)
            j["hybrid"]["block_is_mixer_or_mlp"] = true;
    }
    if (a.vision.enabled()) {
        const VisionConfig& v = a.vision;
        j["vision"] = {{"kind", visionKindName(v.kind)}, {"layers", v.layers}, {"hidden_size", v.hiddenSize},
                       {"intermediate_size", v.intermediateSize}, {"heads", v.heads}, {"patch_size", v.patchSize},
                       {"image_size", v.imageSize}, {"output_size", v.outputSize}};
        if (v.channels != 3)
            j["vision"]["channels"] = v.channels;
        if (v.temporalPatchSize != 1)
            j["vision"]["temporal_patch_size"] = v.temporalPatchSize;
        if (v.mergeSize != 1)
            j["vision"]["merge_size"] = v.mergeSize;
        if (v.adapterSize != 0)
            j["vision"]["adapter_size"] = v.adapterSize;
    }
    if (a.ropeScaling.enabled()) {
        j["rope_scaling"] = {{"type", a.ropeScaling.type}, {"factor", a.ropeScaling.factor}};
        if (a.ropeScaling.originalContextLength > 0)
            j["rope_scaling"]["original_context_length"] = a.ropeScaling.originalContextLength;
    }
    return j;
}

} // namespace headroom

namespace headroom {

std::string architectureToJsonText(const Architecture& arch) { return architectureToJson(arch).dump(); }

tl::expected<Architecture, std::string> architectureFromJsonText(std::string_view text)
{
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded())
        return tl::unexpected(std::string("architecture: invalid JSON"));
    Architecture arch;
    std::string key;
    std::string message;
    if (!architectureFromJson(j, arch, key, message))
        return tl::unexpected("architecture" + key + ": " + message);
    return arch;
}

} // namespace headroom
