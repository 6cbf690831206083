#include "headroom/core/importers/hfconfig.h"

#include "headroom/core/units.h"

#include "importutil.h"
#include "jsonutil.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace headroom {

using importers::JsonFailure;
using importers::JsonObject;
using importers::makeError;

namespace {

/// Families whose checkpoints are encoder-only or not transformer decoders at all.
const std::set<std::string> kUnsupported = {"bert", "roberta", "distilbert", "albert", "electra", "deberta",
                                            "deberta-v2", "xlm-roberta", "t5", "mt5", "bart", "whisper",
                                            "clip", "vit", "wav2vec2", "mpnet", "nomic_bert"};

/// transformers model_type -> Headroom family.
std::string familyOf(const std::string& modelType, bool* known)
{
    static const std::map<std::string, std::string> map = {
        {"llama", "llama"},         {"mistral", "mistral"},   {"mixtral", "mixtral"},
        {"qwen2", "qwen2"},         {"qwen3", "qwen3"},       {"qwen2_moe", "qwen2moe"},
        {"qwen3_moe", "qwen3moe"},  {"gemma", "gemma"},       {"gemma2", "gemma2"},
        {"gemma3", "gemma3"},       {"gemma3_text", "gemma3"},{"phi3", "phi3"},
        {"deepseek_v2", "deepseek2"}, {"deepseek_v3", "deepseek2"},
        {"falcon", "falcon"},       {"RefinedWebModel", "falcon"}, {"RefinedWeb", "falcon"},
        {"gpt2", "gpt2"},           {"opt", "opt"},           {"cohere", "command-r"},
        {"cohere2", "command-r"},   {"qwen2_vl", "qwen2"},    {"qwen2_5_vl", "qwen2"},
        {"qwen3_next", "qwen3next"}, {"qwen3_5", "qwen35"}, {"qwen3_5_text", "qwen35"},
        // GraniteForCausalLM (transformers modeling_granite.py, vLLM granite.py): Llama's tensors;
        // its embedding/attention/residual multipliers and logits_scaling change no shape.
        {"granite", "llama"},
        // PhiForCausalLM (transformers modeling_phi.py; llama.cpp's GGUF architecture "phi2"):
        // parallel attention + MLP from one LayerNorm, q/k/v/dense and fc1/fc2 with biases.
        {"phi", "phi2"},
        // Mamba hybrids, named as llama.cpp's GGUF architectures (src/llama-arch.cpp).
        {"granitemoehybrid", "granitehybrid"}, {"nemotron_h", "nemotron_h"}, {"jamba", "jamba"},
        {"falcon_h1", "falcon-h1"},
        // Llama4ForConditionalGeneration's text_config (transformers modeling_llama4.py).
        {"llama4", "llama4"}, {"llama4_text", "llama4"},
    };
    auto it = map.find(modelType);
    *known = it != map.end();
    return *known ? it->second : modelType;
}

std::string dtypeId(const std::string& torchDtype)
{
    if (torchDtype == "bfloat16")
        return "bf16";
    if (torchDtype == "float16" || torchDtype == "half")
        return "fp16";
    if (torchDtype == "float32" || torchDtype == "float")
        return "fp32";
    return {};
}

/// quantization_config -> Headroom weight format id (weightformat.h).
std::optional<std::string> quantFormat(const JsonObject& q, std::vector<std::string>& warnings)
{
    const std::string method = q.stringOf("quant_method").value_or("");
    const std::uint64_t bits = q.uintOf("bits").value_or(q.uintOf("w_bit").value_or(4));
    if (method == "gptq" || method == "awq") {
        std::uint64_t group = q.firstUint({"group_size", "q_group_size"}).value_or(128);
        if (bits != 4)
            warnings.push_back(method + " with " + std::to_string(bits) + " bits: priced as 4-bit");
        if (group == 0 || group > 4096) { // -1 (per-column) is read as absent or rejected
            warnings.push_back(method + " group_size " + std::to_string(group) + ": priced with groups of 128");
            group = 128;
        }
        return method + "-g" + std::to_string(group);
    }
    if (method == "bitsandbytes" || q.has("load_in_4bit") || q.has("load_in_8bit")) {
        if (q.boolOf("load_in_4bit").value_or(false)) {
            const std::string type = q.stringOf("bnb_4bit_quant_type").value_or("fp4");
            if (type != "nf4")
                warnings.push_back("bitsandbytes 4-bit type \"" + type + "\" priced as nf4 (same block layout)");
            return q.boolOf("bnb_4bit_use_double_quant").value_or(false) ? "nf4-bnb-dq" : "nf4-bnb";
        }
        if (q.boolOf("load_in_8bit").value_or(false))
            return std::string("int8-row"); // LLM.int8(): int8 weights with one absmax per row
        warnings.push_back("bitsandbytes quantization_config without load_in_4bit/load_in_8bit: ignored");
        return std::nullopt;
    }
    if (method == "fp8" || method == "fbgemm_fp8")
        return std::string("fp8");
    warnings.push_back("quantization_config quant_method \"" + method + "\" is not mapped to a weight format");
    return std::nullopt;
}

/// The vision tower of a multimodal config (`vision_config`), keyed by the top-level model_type;
/// absent keys take transformers' config-class defaults (SiglipVisionConfig, CLIPVisionConfig,
/// PixtralVisionConfig, Qwen2VLVisionConfig, Qwen2_5_VLVisionConfig, Llama4VisionConfig). A vision_config of another
/// model type is reported in the warnings and not priced.
void readVision(const JsonObject& top, const std::string& topType, const Architecture& text, VisionConfig& v,
                std::vector<std::string>& warnings)
{
    const nlohmann::json* vc = top.objectOf("vision_config");
    if (!vc)
        return;
    JsonObject c(*vc, top.file(), top.path("vision_config"));
    struct Defaults {
        VisionKind kind;
        std::uint64_t layers, hidden, intermediate, heads, image, patch;
    };
    static const std::map<std::string, Defaults> kinds = {
        {"gemma3", {VisionKind::Siglip, 12, 768, 3072, 12, 224, 16}},
        {"llava", {VisionKind::Clip, 12, 768, 3072, 12, 224, 32}},
        {"mistral3", {VisionKind::Pixtral, 24, 1024, 4096, 16, 1024, 16}},
        {"qwen2_vl", {VisionKind::Qwen2Vl, 32, 1280, 5120, 16, 0, 14}},
        {"qwen2_5_vl", {VisionKind::Qwen25Vl, 32, 3584, 3420, 16, 0, 14}},
        {"llama4", {VisionKind::Llama4, 34, 768, 5632, 16, 448, 14}},
    };
    const auto it = kinds.find(topType);
    if (it == kinds.end()) {
        warnings.push_back("vision_config of model_type \"" + topType + "\": the vision tower is not priced");
        return;
    }
    const Defaults& d = it->second;
    auto bounded = [&](std::initializer_list<const char*> keys, std::uint64_t fallback, std::uint64_t hi) {
        const std::uint64_t value = c.firstUint(keys).value_or(fallback);
        if (value > hi)
            c.fail(ImportErrorCode::BadValue, *keys.begin(),
                   std::string(*keys.begin()) + " " + std::to_string(value) + ", expected at most " + std::to_string(hi));
        return value;
    };
    v.kind = d.kind;
    const bool qwen = d.kind == VisionKind::Qwen2Vl || d.kind == VisionKind::Qwen25Vl;
    v.layers = static_cast<std::uint32_t>(bounded({"num_hidden_layers", "depth"}, d.layers, 10'000));
    v.hiddenSize = bounded(d.kind == VisionKind::Qwen2Vl ? std::initializer_list<const char*>{"embed_dim"}
                                                          : std::initializer_list<const char*>{"hidden_size"},
                           d.hidden, 1u << 20);
    if (d.kind == VisionKind::Qwen2Vl)
        v.intermediateSize = v.hiddenSize * bounded({"mlp_ratio"}, 4, 64);
    else
        v.intermediateSize = bounded({"intermediate_size"}, d.intermediate, 1u << 22);
    v.heads = static_cast<std::uint32_t>(bounded({"num_attention_heads", "num_heads"}, d.heads, 1u << 14));
    v.imageSize = static_cast<std::uint32_t>(bounded({"image_size"}, d.image, 1u << 16));
    v.patchSize = static_cast<std::uint32_t>(bounded({"patch_size", "spatial_patch_size"}, d.patch, 1024));
    v.channels = static_cast<std::uint32_t>(bounded({"num_channels", "in_channels", "in_chans"}, 3, 16));
    if (qwen) {
        v.temporalPatchSize = static_cast<std::uint32_t>(bounded({"temporal_patch_size"}, 2, 16));
        v.mergeSize = static_cast<std::uint32_t>(bounded({"spatial_merge_size"}, 2, 16));
        // Qwen2-VL's vision hidden_size is the merger's output; Qwen2.5-VL calls it out_hidden_size.
        v.outputSize = bounded({d.kind == VisionKind::Qwen2Vl ? "hidden_size" : "out_hidden_size"}, text.hiddenSize, 1u << 20);
    } else {
        if (d.kind == VisionKind::Pixtral)
            v.mergeSize = static_cast<std::uint32_t>(bounded({"spatial_merge_size"}, top.uintOf("spatial_merge_size").value_or(2), 16));
        v.outputSize = text.hiddenSize;
    }
    if (d.kind == VisionKind::Llama4) {
        // The adapter maps intermediate_size -> projector_input_dim -> projector_output_dim, and the
        // projector takes vision_output_dim: one width in every published Llama 4 (4096).
        v.adapterSize = bounded({"projector_input_dim"}, 4096, 1u << 20);
        const std::uint64_t out = bounded({"projector_output_dim"}, 4096, 1u << 20);
        const std::uint64_t visionOut = bounded({"vision_output_dim"}, 7680, 1u << 20);
        if (out != v.adapterSize || visionOut != v.adapterSize) {
            warnings.push_back(c.path("") + ": projector_input_dim " + std::to_string(v.adapterSize) + ", projector_output_dim "
                               + std::to_string(out) + " and vision_output_dim " + std::to_string(visionOut)
                               + " differ: the vision tower is not priced");
            v = VisionConfig{};
            return;
        }
        if (c.boolOf("multi_modal_projector_bias").value_or(false))
            warnings.push_back("multi_modal_projector_bias true: the adapter biases are not counted");
    }
    if (d.kind == VisionKind::Clip && !top.boolOf("multimodal_projector_bias").value_or(true))
        warnings.push_back("multimodal_projector_bias false: the projector biases are counted anyway");
    // A partial vision_config whose keys disagree with the class defaults (hidden 1024 with the
    // default 12 heads) is not priced rather than refused: the text model still plans.
    Architecture check = text;
    check.vision = v;
    if (std::string problem = validateArchitecture(check); !problem.empty()) {
        warnings.push_back(c.path("") + ": " + problem + ": the vision tower is not priced");
        v = VisionConfig{};
    }
}

/// Per-layer mixers, from whichever key the family uses:
///   layer_types        Qwen3-Next / Qwen3.5 ("linear_attention" / "full_attention"), Granite 4
///                      granitemoehybrid ("mamba" = a Mamba-2 layer / "attention");
///   full_attention_interval  Qwen3NextConfig (layer i full when (i + 1) % n == 0);
///   hybrid_override_pattern  Nemotron-H (one character a block: "M" Mamba-2, "*" attention, "-" an MLP
///                      alone; configuration_nemotron_h.py), where a block is a mixer or an MLP;
///   attn_layer_period / attn_layer_offset  Jamba (attention where i % period == offset, Mamba-1 elsewhere;
///                      configuration_jamba.py layers_block_type).
/// Then the shapes: the Gated DeltaNet linear_* keys, Granite's mamba_* keys (mamba_n_heads, mamba_d_head,
/// mamba_d_state, mamba_n_groups, mamba_d_conv, mamba_expand, mamba_conv_bias, mamba_proj_bias),
/// Nemotron-H's (mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel, use_conv_bias,
/// use_bias) or Jamba's (mamba_d_state, mamba_d_conv, mamba_expand, mamba_dt_rank). Falcon-H1
/// (model_type falcon_h1) has attention and a Mamba-2 mixer side by side in every layer
/// (FalconH1Config.layers_block_type is "hybrid" for every layer, configuration_falcon_h1.py), its
/// Mamba width mamba_d_ssm (default mamba_expand x hidden_size) and mamba_d_head "auto" = d_ssm /
/// mamba_n_heads.
void readHybrid(const JsonObject& c, const std::string& family, std::uint64_t layers, std::uint64_t hidden, HybridConfig& h,
                std::vector<std::string>& warnings)
{
    std::vector<MixerKind> mixers;
    bool mixerOrMlp = false;
    if (family == "falcon-h1") {
        mixers.assign(layers, MixerKind::AttentionMamba2);
    } else if (const nlohmann::json* types = c.arrayOf("layer_types")) {
        for (const auto& t : *types) {
            if (!t.is_string())
                return; // the sliding-window reader refuses it
            auto kind = mixerKindFromName(t.get<std::string>());
            if (kind == MixerKind::Mamba && family == "granitehybrid")
                kind = MixerKind::Mamba2; // GraniteMoeHybridMambaLayer is a Mamba-2 mixer
            if (!kind || kind == MixerKind::MlpOnly) {
                warnings.push_back("layer_types \"" + t.get<std::string>().substr(0, 40)
                                   + "\": recurrent state and weights of such layers are not modelled (priced as attention)");
                return;
            }
            mixers.push_back(*kind);
        }
    } else if (auto n = c.uintOf("full_attention_interval"); n && *n > 0 && c.has("linear_num_value_heads")) {
        for (std::uint64_t i = 0; i < layers; ++i)
            mixers.push_back((i + 1) % *n == 0 ? MixerKind::Attention : MixerKind::GatedDeltaNet);
    } else if (auto pattern = c.stringOf("hybrid_override_pattern")) {
        for (std::size_t i = 0; i < pattern->size() && i <= layers; ++i) {
            const char ch = (*pattern)[i];
            if (ch != 'M' && ch != '*' && ch != '-') {
                warnings.push_back(std::string("hybrid_override_pattern block '") + (std::isprint(static_cast<unsigned char>(ch)) ? ch : '?')
                                   + "': only M, * and - blocks are modelled; the Mamba layers are priced as attention");
                return;
            }
            mixers.push_back(ch == 'M' ? MixerKind::Mamba2 : ch == '*' ? MixerKind::Attention : MixerKind::MlpOnly);
        }
        mixerOrMlp = true;
    } else if (auto period = c.uintOf("attn_layer_period"); period && *period > 0 && c.has("mamba_d_state")) {
        const std::uint64_t offset = c.uintOf("attn_layer_offset").value_or(0);
        for (std::uint64_t i = 0; i < layers; ++i)
            mixers.push_back(i % *period == offset ? MixerKind::Attention : MixerKind::Mamba);
    } else if (c.has("mamba_d_state") || c.has("ssm_cfg")) {
        warnings.push_back("Mamba layers of model_type \"" + family + "\" are not modelled (their state and weights are priced as attention)");
        return;
    }
    const auto has = [&](MixerKind k) { return std::find(mixers.begin(), mixers.end(), k) != mixers.end(); };
    const bool mamba2 = has(MixerKind::Mamba2) || has(MixerKind::AttentionMamba2);
    if (!has(MixerKind::GatedDeltaNet) && !has(MixerKind::Mamba) && !mamba2)
        return;
    if (mixers.size() != layers)
        c.fail(ImportErrorCode::BadValue, mixerOrMlp ? "hybrid_override_pattern" : "layer_types",
               std::to_string(mixers.size()) + " entries, expected one per layer (" + std::to_string(layers) + ")");
    auto dim = [&](std::initializer_list<const char*> keys, std::uint64_t fallback = 0) {
        std::string key;
        const std::uint64_t v = c.firstUint(keys, &key).value_or(fallback);
        if (key.empty())
            key = *keys.begin();
        if (v == 0 || v > (1u << 14))
            c.fail(ImportErrorCode::BadValue, key, key + " " + std::to_string(v) + ", expected 1..16384");
        return static_cast<std::uint32_t>(v);
    };
    if (has(MixerKind::GatedDeltaNet)) {
        h.linear.keyHeads = dim({"linear_num_key_heads"});
        h.linear.valueHeads = dim({"linear_num_value_heads"});
        h.linear.keyHeadDim = dim({"linear_key_head_dim"});
        h.linear.valueHeadDim = dim({"linear_value_head_dim"});
        h.linear.convKernel = dim({"linear_conv_kernel_dim"});
        // Qwen3-Next always gates the attention output; Qwen3.5 says so with attn_output_gate.
        h.attentionOutputGate = c.boolOf("attn_output_gate").value_or(true);
    }
    h.blockIsMixerOrMlp = mixerOrMlp;
    if (!has(MixerKind::Mamba) && !mamba2) {
        h.layerMixers = std::move(mixers);
        return;
    }
    SsmConfig& m = h.ssm;
    m.stateSize = dim({"mamba_d_state", "ssm_state_size"});
    m.convKernel = dim({"mamba_d_conv", "conv_kernel"}, 4);
    m.convBias = c.boolOf("mamba_conv_bias").value_or(c.boolOf("use_conv_bias").value_or(true));
    m.projBias = c.boolOf("mamba_proj_bias").value_or(c.boolOf("use_bias").value_or(false));
    const std::uint64_t expand = dim({"mamba_expand", "expand"}, 2);
    if (mamba2) {
        m.heads = dim({"mamba_n_heads", "mamba_num_heads"});
        m.groups = dim({"mamba_n_groups", "n_groups"}, 1);
        // Falcon-H1: the Mamba width is mamba_d_ssm, and mamba_d_head may be "auto" (d_ssm / heads).
        const std::uint64_t dSsm = c.uintOf("mamba_d_ssm").value_or(0);
        const bool headAuto = !c.has("mamba_head_dim") && (!c.has("mamba_d_head") || c.isString("mamba_d_head"));
        if (headAuto && c.isString("mamba_d_head") && c.stringOf("mamba_d_head") != std::optional<std::string>("auto"))
            c.fail(ImportErrorCode::BadValue, "mamba_d_head",
                   "expected an integer or \"auto\", found \"" + c.stringOf("mamba_d_head")->substr(0, 40) + "\"");
        if (headAuto && (dSsm > 0 || c.isString("mamba_d_head")))
            m.headDim = static_cast<std::uint32_t>(std::min<std::uint64_t>((dSsm > 0 ? dSsm : expand * hidden) / m.heads, 1u << 14));
        else
            m.headDim = dim({"mamba_d_head", "mamba_head_dim"});
        if (m.headDim == 0)
            c.fail(ImportErrorCode::BadValue, "mamba_d_ssm", "the Mamba width (mamba_d_ssm " + std::to_string(dSsm)
                   + ", else mamba_expand x hidden_size) is smaller than mamba_n_heads " + std::to_string(m.heads));
        m.innerSize = std::uint64_t{m.heads} * m.headDim;
        if (dSsm > 0 && m.innerSize != dSsm)
            warnings.push_back("Mamba-2 heads x head_dim (" + std::to_string(m.innerSize) + ") differs from mamba_d_ssm ("
                               + std::to_string(dSsm) + "): the heads are priced");
        else if (dSsm == 0 && m.innerSize != expand * hidden)
            warnings.push_back("Mamba-2 heads x head_dim (" + std::to_string(m.innerSize) + ") differs from expand x hidden_size ("
                               + std::to_string(expand * hidden) + "): the heads are priced");
    } else if (has(MixerKind::Mamba)) {
        m.innerSize = expand * hidden;
        // mamba_dt_rank "auto" = ceil(hidden / 16) (configuration_jamba.py).
        m.dtRank = c.uintOf("mamba_dt_rank") ? dim({"mamba_dt_rank"}) : static_cast<std::uint32_t>(ceilDiv(hidden, 16));
    }
    h.layerMixers = std::move(mixers);
}

HfConfig parse(const nlohmann::json& root, const std::string& file)
{
    HfConfig out;
    JsonObject top(root, file);
    // Multimodal configs nest the language model under text_config (llava, gemma3, mllama, ...).
    const nlohmann::json* textConfig = top.objectOf("text_config");
    const bool nested = textConfig && !top.has("num_hidden_layers") && !top.has("n_layer");
    const nlohmann::json& j = nested ? *textConfig : root;
    JsonObject c(j, file, nested ? "text_config" : "");
    std::vector<std::string>& warnings = out.warnings;

    std::string modelType = c.stringOf("model_type").value_or("");
    if (modelType.empty())
        modelType = top.stringOf("model_type").value_or("");
    if (modelType.empty())
        c.fail(ImportErrorCode::MissingKey, "model_type", "no model_type: cannot tell the model family");
    out.modelType = modelType;
    // The name transformers saved the model under, bounded: a label, never a path we open.
    if (const auto name = top.stringOf("_name_or_path"); name && !name->empty() && name->size() <= 256)
        out.nameOrPath = *name;
    if (kUnsupported.count(modelType))
        c.fail(ImportErrorCode::UnsupportedArchitecture, "model_type",
               "model_type \"" + modelType + "\" is not a decoder-only language model");
    bool known = false;
    Architecture& a = out.architecture;
    a.family = familyOf(modelType, &known);
    if (!known)
        warnings.push_back("model_type \"" + modelType + "\" is not known to Headroom: read as a llama-like decoder");
    const std::string& f = a.family;
    const bool isFalcon = f == "falcon";
    const bool isGpt2 = f == "gpt2";
    const bool isOpt = f == "opt";
    const bool isPhi2 = f == "phi2";

    auto required = [&](std::initializer_list<const char*> keys, const char* what) -> std::uint64_t {
        auto v = c.firstUint(keys);
        if (!v) {
            std::string names;
            for (const char* k : keys)
                names += (names.empty() ? "" : " / ") + std::string(k);
            c.fail(ImportErrorCode::MissingKey, *keys.begin(), std::string("no ") + what + " (" + names + ")");
        }
        return *v;
    };
    const std::uint64_t layers = required({"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, "layer count");
    const std::uint64_t hidden = required({"hidden_size", "n_embd", "d_model", "dim"}, "hidden size");
    const std::uint64_t heads = required({"num_attention_heads", "n_head", "n_heads", "num_heads"}, "attention head count");
    if (layers == 0 || layers > 10'000)
        c.fail(ImportErrorCode::BadValue, "num_hidden_layers", "layer count " + std::to_string(layers) + ", expected 1..10000");
    if (hidden == 0 || hidden > (1u << 20))
        c.fail(ImportErrorCode::BadValue, "hidden_size", "hidden size " + std::to_string(hidden) + ", expected 1..2^20");
    if (heads == 0 || heads > (1u << 14))
        c.fail(ImportErrorCode::BadValue, "num_attention_heads", "head count " + std::to_string(heads) + ", expected 1..16384");
    a.layers = static_cast<std::uint32_t>(layers);
    a.hiddenSize = hidden;
    a.attentionHeads = static_cast<std::uint32_t>(heads);

    // KV heads: num_key_value_heads; falcon's multi_query / num_kv_heads; absent = MHA.
    std::optional<std::uint64_t> kv = c.firstUint({"num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"});
    if (isFalcon) {
        const bool newArch = c.boolOf("new_decoder_architecture").value_or(false);
        if (newArch)
            kv = c.uintOf("num_kv_heads").value_or(heads);
        else if (c.boolOf("multi_query").value_or(modelType == "falcon")) // FalconConfig defaults multi_query=True, RWConfig False
            kv = 1;
        else if (!kv)
            kv = heads;
    }
    if (!kv)
        kv = heads; // no num_key_value_heads: multi-head attention (llama-1, gpt2, opt)
    if (*kv == 0 || *kv > heads || heads % *kv != 0)
        c.fail(ImportErrorCode::BadValue, "num_key_value_heads",
               "KV head count " + std::to_string(*kv) + " must divide the " + std::to_string(heads) + " attention heads");
    a.kvHeads = static_cast<std::uint32_t>(*kv);

    if (auto hd = c.uintOf("head_dim")) {
        if (*hd == 0 || *hd > (1u << 14))
            c.fail(ImportErrorCode::BadValue, "head_dim", "head_dim " + std::to_string(*hd) + ", expected 1..16384");
        a.headDim = static_cast<std::uint32_t>(*hd);
    } else {
        if (hidden % heads != 0)
            c.fail(ImportErrorCode::BadValue, "hidden_size",
                   "hidden size " + std::to_string(hidden) + " is not a multiple of the " + std::to_string(heads) +
                       " heads and there is no head_dim");
        a.headDim = static_cast<std::uint32_t>(hidden / heads);
    }

    // MLP width.
    if (isGpt2)
        a.intermediateSize = c.uintOf("n_inner").value_or(4 * hidden);
    else if (isFalcon)
        a.intermediateSize = c.uintOf("ffn_hidden_size").value_or(4 * hidden);
    else if (auto ff = c.firstUint({"intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"}))
        a.intermediateSize = *ff;
    else
        c.fail(ImportErrorCode::MissingKey, "intermediate_size", "no MLP width (intermediate_size / ffn_dim)");

    a.vocabSize = required({"vocab_size", "padded_vocab_size", "n_vocab"}, "vocabulary size");
    if (a.vocabSize == 0 || a.vocabSize > (1u << 24))
        c.fail(ImportErrorCode::BadValue, "vocab_size", "vocabulary size " + std::to_string(a.vocabSize) + ", expected 1..2^24");

    // Context.
    std::string ctxKey;
    if (auto ctx = c.firstUint({"max_position_embeddings", "n_positions", "max_sequence_length", "seq_length",
                                "n_ctx", "max_seq_len"}, &ctxKey))
        out.contextLength = *ctx;
    else if (isFalcon) {
        out.contextLength = 2048; // falcon-7b/40b were trained with 2,048 tokens (RW configs omit the key)
        warnings.push_back("no max_position_embeddings: falcon's trained context of 2048 assumed");
    } else
        warnings.push_back("no max_position_embeddings: context length unknown");
    a.contextLength = out.contextLength;

    // Embeddings, norms, biases, MLP kind.
    static const std::set<std::string> tiedByDefault = {"gemma", "gemma2", "gemma3", "gpt2", "opt", "falcon", "command-r"};
    a.tiedEmbeddings = c.boolOf("tie_word_embeddings").value_or(tiedByDefault.count(f) > 0);
    if (nested && !c.has("tie_word_embeddings"))
        if (auto t = top.boolOf("tie_word_embeddings"))
            a.tiedEmbeddings = *t;
    if (isGpt2 || isOpt || isFalcon || isPhi2 || f == "command-r")
        a.norm = NormKind::LayerNorm;
    if (isGpt2 || isOpt || isFalcon || isPhi2)
        a.mlp = MlpKind::Plain;
    if (isGpt2) {
        a.qkvBias = a.outputProjBias = a.mlpBias = true;
        a.positionEmbeddingRows = c.uintOf("n_positions").value_or(out.contextLength);
    } else if (isOpt) {
        const bool bias = c.boolOf("enable_bias").value_or(true);
        a.qkvBias = a.outputProjBias = a.mlpBias = bias;
        a.positionEmbeddingRows = out.contextLength + 2; // OPTLearnedPositionalEmbedding offset of 2
        if (auto proj = c.uintOf("word_embed_proj_dim"); proj && *proj != hidden)
            warnings.push_back("word_embed_proj_dim " + std::to_string(*proj) +
                               " differs from hidden_size: project_in/project_out are not counted");
    } else if (isFalcon) {
        const bool bias = c.boolOf("bias").value_or(false);
        a.qkvBias = a.outputProjBias = a.mlpBias = bias;
        if (c.boolOf("alibi").value_or(false))
            warnings.push_back("falcon with alibi: no rotary embedding");
        if (c.boolOf("new_decoder_architecture").value_or(false))
            a.normsPerLayer = 2; // ln_attn + ln_mlp
        else
            a.normsPerLayer = c.boolOf("parallel_attn").value_or(true) ? 1 : 2;
    } else if (isPhi2) {
        // PhiAttention: q_proj/k_proj/v_proj and dense with bias; PhiMLP fc1/fc2 with bias
        // (modeling_phi.py). The lm_head's own bias (vocab entries) is not counted.
        a.qkvBias = a.outputProjBias = a.mlpBias = true;
        a.normsPerLayer = 1; // PhiDecoderLayer: attention and MLP both read input_layernorm's output
    } else if (f == "qwen2" || f == "qwen2moe") {
        a.qkvBias = true; // Qwen2Attention: q/k/v projections with bias, o_proj without
    } else {
        const bool attnBias = c.boolOf("attention_bias").value_or(false);
        a.qkvBias = attnBias;
        a.outputProjBias = attnBias;
        a.mlpBias = c.boolOf("mlp_bias").value_or(false);
    }
    if (f == "gemma2" || f == "gemma3")
        a.normsPerLayer = 4; // input, post_attention, pre_feedforward, post_feedforward
    if (f == "qwen3" || f == "qwen3moe" || f == "gemma3" || f == "qwen3next" || f == "qwen35")
        a.qkNorm = true; // Qwen3Attention / Gemma3Attention: RMSNorm on q and k per head, [head_dim] each
    if (f == "command-r")
        a.normsPerLayer = 1; // parallel attention + MLP from one input_layernorm

    // Mixture of experts.
    if (auto experts = c.firstUint({"num_local_experts", "n_routed_experts", "num_experts"}); experts && *experts > 0) {
        a.moe.expertCount = static_cast<std::uint32_t>(std::min<std::uint64_t>(*experts, 1u << 20));
        a.moe.expertsPerToken = static_cast<std::uint32_t>(std::min<std::uint64_t>(
            c.firstUint({"num_experts_per_tok", "num_experts_per_token", "top_k"}).value_or(2), 1u << 20));
        a.moe.expertFfnSize = c.uintOf("moe_intermediate_size").value_or(a.intermediateSize);
        a.moe.sharedExperts = static_cast<std::uint32_t>(std::min<std::uint64_t>(c.uintOf("n_shared_experts").value_or(0), 1u << 20));
        a.moe.denseFirstLayers = static_cast<std::uint32_t>(std::min<std::uint64_t>(c.uintOf("first_k_dense_replace").value_or(0), layers));
        if (auto freq = c.uintOf("moe_layer_freq"); freq && *freq != 1)
            warnings.push_back("moe_layer_freq " + std::to_string(*freq) + ": every layer after the dense ones is counted as MoE");
        a.moe.sharedExpertFfnSize = std::min<std::uint64_t>(c.uintOf("shared_expert_intermediate_size").value_or(0), 1u << 22);
    }

    // Multi-head latent attention (DeepSeek-V2/V3).
    if (auto rank = c.uintOf("kv_lora_rank"); rank && *rank > 0) {
        auto dim = [&](const char* key) {
            const std::uint64_t v = c.uintOf(key).value_or(0);
            if (v > (1u << 20))
                c.fail(ImportErrorCode::BadValue, key, std::string(key) + " " + std::to_string(v) + " is absurd");
            return static_cast<std::uint32_t>(v);
        };
        a.mla.kvLoraRank = dim("kv_lora_rank");
        a.mla.qLoraRank = dim("q_lora_rank");
        a.mla.qkRopeHeadDim = dim("qk_rope_head_dim");
        a.mla.qkNopeHeadDim = dim("qk_nope_head_dim");
        a.mla.vHeadDim = dim("v_head_dim");
        if (a.mla.qkNopeHeadDim + a.mla.qkRopeHeadDim > 0)
            a.headDim = a.mla.qkNopeHeadDim + a.mla.qkRopeHeadDim;
        if (a.mla.vHeadDim > 0 && a.mla.vHeadDim != a.headDim)
            a.valueHeadDim = a.mla.vHeadDim;
    }

    // Sliding window (which layers slide follows each family's modeling_*.py).
    std::optional<std::uint64_t> window = c.uintOf("sliding_window");
    if (c.has("use_sliding_window") && !c.boolOf("use_sliding_window").value_or(false))
        window.reset(); // qwen2: the key is present but unused
    if (const nlohmann::json* types = c.arrayOf("layer_types")) {
        std::vector<bool> flags;
        for (const auto& t : *types) {
            if (!t.is_string())
                c.fail(ImportErrorCode::WrongKeyType, "layer_types", "expected strings, found " + std::string(t.type_name()));
            flags.push_back(t.get<std::string>().find("sliding") != std::string::npos);
        }
        if (flags.size() != layers)
            c.fail(ImportErrorCode::BadValue, "layer_types",
                   std::to_string(flags.size()) + " entries, expected one per layer (" + std::to_string(layers) + ")");
        if (window && std::find(flags.begin(), flags.end(), true) != flags.end())
            a.sliding.slidingLayers = flags;
        else if (std::find(flags.begin(), flags.end(), true) == flags.end())
            window.reset();
    } else if (window && *window > 0) {
        std::uint64_t pattern = 0;
        if (f == "gemma2")
            pattern = 2; // Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2)
        if (auto p = c.uintOf("sliding_window_pattern"))
            pattern = *p;
        if (f == "gemma2" && pattern == 2) {
            for (std::uint64_t i = 0; i < layers; ++i)
                a.sliding.slidingLayers.push_back(i % 2 == 0);
        } else if (pattern > 1) {
            // gemma3 / cohere2: every pattern-th layer is global: sliding = (i + 1) % pattern != 0
            for (std::uint64_t i = 0; i < layers; ++i)
                a.sliding.slidingLayers.push_back((i + 1) % pattern != 0);
        } else if (f == "qwen2" || f == "qwen2moe" || f == "qwen3") {
            const std::uint64_t first = c.uintOf("max_window_layers").value_or(0);
            if (first > 0 && first < layers)
                for (std::uint64_t i = 0; i < layers; ++i)
                    a.sliding.slidingLayers.push_back(i >= first);
        }
    }
    if (window && *window > 0)
        a.sliding.windowTokens = *window;

    readHybrid(c, f, layers, hidden, a.hybrid, warnings);
    if (f == "granitehybrid") {
        // GraniteMoeHybrid: a shared_mlp of shared_intermediate_size beside the experts, without a
        // gate (modeling_granitemoehybrid.py GraniteMoeHybridMLP); the dense models' only MLP.
        if (auto shared = c.uintOf("shared_intermediate_size"); shared && *shared > 0 && *shared <= (1u << 22)) {
            if (a.moe.enabled()) {
                a.moe.sharedExpertFfnSize = *shared;
                a.moe.sharedExpertGate = false;
            } else {
                a.intermediateSize = *shared;
            }
        }
    }
    if (f == "llama4" && a.moe.enabled()) {
        // Llama4TextMoe (transformers modeling_llama4.py): the routed experts and one shared_expert
        // (a Llama4TextMLP), both intermediate_size wide; the dense layers' Llama4TextMLP is
        // intermediate_size_mlp wide; layer i is MoE when (i + 1) % interleave_moe_layer_step == 0.
        a.moe.sharedExperts = 1;
        a.moe.expertFfnSize = a.intermediateSize;
        if (auto dense = c.uintOf("intermediate_size_mlp"); dense && *dense > 0 && *dense <= (1u << 22))
            a.intermediateSize = *dense;
        if (auto step = c.uintOf("interleave_moe_layer_step"); step && *step >= 1 && *step <= layers)
            a.moe.layerStep = static_cast<std::uint32_t>(*step);
    }
    if (f == "llama4") {
        // Chunked local attention on the RoPE layers (Llama4TextConfig: no_rope_layers[i] = 1 on
        // the RoPE layers, by default all but every no_rope_layer_interval-th (4)), priced as an
        // attention_chunk_size window, as the llama-4 profiles are.
        const std::uint64_t chunk = c.uintOf("attention_chunk_size").value_or(0);
        const std::uint64_t interval = c.uintOf("no_rope_layer_interval").value_or(4);
        if (chunk > 0 && interval > 1 && a.sliding.slidingLayers.empty()) {
            a.sliding.windowTokens = chunk;
            const nlohmann::json* rope = c.arrayOf("no_rope_layers");
            const bool listed = rope && rope->size() == layers;
            for (std::uint64_t i = 0; i < layers; ++i)
                a.sliding.slidingLayers.push_back(listed ? (*rope)[i].is_number_integer() && (*rope)[i].get<std::int64_t>() == 1
                                                         : (i + 1) % interval != 0);
        }
    }
    if (f == "jamba" && a.moe.enabled()) {
        // JambaConfig: layer i has the MoE block when i % expert_layer_period == expert_layer_offset.
        const std::uint64_t period = c.uintOf("expert_layer_period").value_or(2);
        const std::uint64_t offset = c.uintOf("expert_layer_offset").value_or(1);
        if (period >= 1 && period <= layers && offset + 1 == period)
            a.moe.layerStep = static_cast<std::uint32_t>(period);
        else
            warnings.push_back("expert_layer_period " + std::to_string(period) + " / offset " + std::to_string(offset)
                               + ": every layer is counted as MoE");
    }
    if (f == "nemotron_h") {
        // NemotronHBlock: one RMSNorm, then its mixer or its MLP; the MLP is up/down with relu^2.
        a.normsPerLayer = 1;
        a.mlp = MlpKind::Plain;
        if (auto hd = c.uintOf("attention_head_dim"); hd && *hd > 0 && *hd <= (1u << 14))
            a.headDim = static_cast<std::uint32_t>(*hd);
    }

    // rope_scaling: the trained context stays max_position_embeddings; note the scaling.
    if (const nlohmann::json* rs = c.objectOf("rope_scaling")) {
        JsonObject r(*rs, file, c.path("rope_scaling"));
        const std::string type = r.stringOf("rope_type").value_or(r.stringOf("type").value_or(""));
        const double factor = r.numberOf("factor").value_or(1.0);
        // Kept when bounded (a plain id, factor 1..1024): it sizes the engines' rotary caches.
        const bool plainType = !type.empty() && type.size() <= 32
            && std::all_of(type.begin(), type.end(), [](unsigned char ch) { return std::isalnum(ch) || ch == '_' || ch == '-'; });
        if (plainType && factor >= 1.0 && factor <= 1024.0) {
            a.ropeScaling.type = type;
            a.ropeScaling.factor = factor;
            if (auto original = r.uintOf("original_max_position_embeddings"); original && *original > 0 && *original <= (1ull << 36))
                a.ropeScaling.originalContextLength = *original;
        }
        if ((type == "linear" || type == "dynamic") && factor > 1.0)
            warnings.push_back("rope_scaling " + type + " factor " + std::to_string(factor) +
                               ": max_position_embeddings " + std::to_string(out.contextLength) +
                               " may be extended by the engine");
    }

    // Checkpoint dtype and quantization.
    const std::string torchDtype = c.stringOf("torch_dtype").value_or(top.stringOf("torch_dtype").value_or(
        c.stringOf("dtype").value_or(top.stringOf("dtype").value_or(""))));
    out.checkpointDtype = dtypeId(torchDtype);
    if (out.checkpointDtype.empty()) {
        out.checkpointDtype = "bf16";
        warnings.push_back(torchDtype.empty() ? "no torch_dtype: weights priced in bf16"
                                              : "torch_dtype \"" + torchDtype + "\" unknown: weights priced in bf16");
    }
    if (const nlohmann::json* q = top.objectOf("quantization_config"))
        out.weightFormatId = quantFormat(JsonObject(*q, file, "quantization_config"), warnings);
    else if (const nlohmann::json* q2 = c.objectOf("quantization_config"))
        out.weightFormatId = quantFormat(JsonObject(*q2, file, c.path("quantization_config")), warnings);
    out.transformersVersion = top.stringOf("transformers_version").value_or("");
    readVision(top, top.stringOf("model_type").value_or(modelType), a, a.vision, warnings);

    if (std::string problem = validateArchitecture(a); !problem.empty())
        c.fail(ImportErrorCode::BadValue, "", problem);
    return out;
}

} // namespace

tl::expected<HfConfig, ImportError> parseHfConfig(std::string_view json, std::string fileName)
{
    if (json.size() > kHfConfigMaxBytes)
        return tl::unexpected(makeError(ImportErrorCode::BadValue, fileName,
                                        std::to_string(json.size()) + " bytes, more than the " + std::to_string(kHfConfigMaxBytes)
                                            + " a config.json may hold"));
    auto root = importers::parseJson(json, fileName);
    if (!root)
        return tl::unexpected(root.error());
    if (!root->is_object())
        return tl::unexpected(makeError(ImportErrorCode::BadJson, fileName,
                                        std::string("expected a JSON object, found ") + root->type_name(), 0));
    try {
        return parse(*root, fileName);
    } catch (const JsonFailure& f) {
        return tl::unexpected(f.error);
    } catch (const std::exception& e) { // nlohmann type errors that slipped through
        return tl::unexpected(makeError(ImportErrorCode::BadJson, fileName, e.what()));
    }
}

tl::expected<HfConfig, ImportError> readHfConfig(const std::filesystem::path& path)
{
    auto text = importers::readSmallFile(path, kHfConfigMaxBytes);
    if (!text)
        return tl::unexpected(text.error());
    return parseHfConfig(*text, path.string());
}

} // namespace headroom
