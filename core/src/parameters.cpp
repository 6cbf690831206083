#include "headroom/core/parameters.h"

#include "headroom/core/ggufpreset.h"
#include "headroom/formats/ggmltypes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <mutex>

namespace headroom {

namespace {

// Appends tensors for one architecture; names follow HF transformers' modules.
class TensorLister {
public:
    explicit TensorLister(const Architecture& arch) : m_arch(arch) {}

    std::vector<TensorSpec> run()
    {
        const std::uint64_t h = m_arch.hiddenSize;
        m_out.reserve(std::size_t{m_arch.layers} * 16 + 4); // a block lists at most ~16 entries
        add("model.embed_tokens.weight", TensorRole::TokenEmbedding, m_arch.vocabSize, h);
        if (m_arch.positionEmbeddingRows > 0)
            add("model.embed_positions.weight", TensorRole::PositionEmbedding, m_arch.positionEmbeddingRows, h);
        for (std::uint32_t i = 0; i < m_arch.layers; ++i) {
            m_layer = static_cast<std::int32_t>(i);
            m_prefix = "model.layers." + std::to_string(i) + ".";
            addLayerNorms();
            const MixerKind mixer = m_arch.hybrid.mixerOf(i);
            if (mixer == MixerKind::GatedDeltaNet)
                addGatedDeltaNet();
            else if (mixer == MixerKind::Mamba)
                addMamba();
            else if (mixer == MixerKind::Mamba2)
                addMamba2();
            else if (mixer == MixerKind::MlpOnly)
                ; // the block is its MLP
            else if (mixer == MixerKind::AttentionMamba2) {
                addAttention(i); // Falcon-H1: self_attn and mamba side by side (modeling_falcon_h1.py)
                addMamba2();
            }
            else if (m_arch.mla.enabled())
                addMlaAttention();
            else
                addAttention(i);
            if (!m_arch.hybrid.hasMlp(i))
                continue;
            if (m_arch.moe.isMoeLayer(i))
                addMoe();
            else
                addDenseMlp("mlp.", m_arch.intermediateSize, TensorRole::MlpMatrix);
        }
        m_layer = -1;
        m_prefix = "model.";
        addNorm("norm", h);
        if (!m_arch.tiedEmbeddings)
            add("lm_head.weight", TensorRole::Output, m_arch.vocabSize, h);
        if (m_arch.vision.enabled())
            addVision(m_arch.vision);
        return std::move(m_out);
    }

private:
    void add(std::string name, TensorRole role, std::uint64_t rows, std::uint64_t cols, std::uint32_t copies = 1)
    {
        TensorSpec t;
        t.name = std::move(name);
        t.role = role;
        t.rows = rows;
        t.cols = cols;
        t.copies = copies;
        t.layer = m_layer;
        m_out.push_back(std::move(t));
    }
    void addLocal(const std::string& name, TensorRole role, std::uint64_t rows, std::uint64_t cols,
                  std::uint32_t copies = 1)
    {
        add(m_prefix + name, role, rows, cols, copies);
    }
    // RMSNorm: weight; LayerNorm: weight and bias.
    void addNorm(const std::string& name, std::uint64_t n)
    {
        addLocal(name + ".weight", TensorRole::Norm, 1, n);
        if (m_arch.norm == NormKind::LayerNorm)
            addLocal(name + ".bias", TensorRole::Norm, 1, n);
    }
    void addLayerNorms()
    {
        static const char* const names[] = {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                                            "post_feedforward_layernorm"};
        for (std::uint32_t k = 0; k < m_arch.normsPerLayer; ++k)
            addNorm(k < 4 ? names[k] : "extra_layernorm_" + std::to_string(k), m_arch.hiddenSize);
    }
    void addAttention(std::uint32_t layer)
    {
        const std::uint64_t h = m_arch.hiddenSize;
        const std::uint64_t q = std::uint64_t{m_arch.attentionHeads} * m_arch.headDim;
        // An output gate doubles q_proj (Qwen3-Next: query and gate per head, modeling_qwen3_next.py).
        const std::uint64_t qRows = m_arch.hybrid.attentionOutputGate ? 2 * q : q;
        const std::uint64_t kv = std::uint64_t{m_arch.kvHeadsOf(layer)};
        const std::uint64_t k = kv * m_arch.headDim;
        const std::uint64_t v = kv * m_arch.valueDim();
        const std::uint64_t o = std::uint64_t{m_arch.attentionHeads} * m_arch.valueDim();
        addLocal("self_attn.q_proj.weight", TensorRole::AttentionMatrix, qRows, h);
        addLocal("self_attn.k_proj.weight", TensorRole::AttentionMatrix, k, h);
        addLocal("self_attn.v_proj.weight", TensorRole::AttentionMatrix, v, h);
        addLocal("self_attn.o_proj.weight", TensorRole::AttentionMatrix, h, o);
        if (m_arch.qkvBias) {
            addLocal("self_attn.q_proj.bias", TensorRole::Bias, 1, q);
            addLocal("self_attn.k_proj.bias", TensorRole::Bias, 1, k);
            addLocal("self_attn.v_proj.bias", TensorRole::Bias, 1, v);
        }
        if (m_arch.outputProjBias)
            addLocal("self_attn.o_proj.bias", TensorRole::Bias, 1, h);
        if (m_arch.qkNorm) {
            addLocal("self_attn.q_norm.weight", TensorRole::Norm, 1, m_arch.headDim);
            addLocal("self_attn.k_norm.weight", TensorRole::Norm, 1, m_arch.headDim);
        }
    }
    // Gated DeltaNet (modeling_qwen3_next.py Qwen3NextGatedDeltaNet): fused q/k/v/z and b/a input
    // projections, a depthwise conv (no bias), per-head dt_bias and A_log, a gated RMSNorm over
    // the value head dim, out_proj.
    void addGatedDeltaNet()
    {
        const LinearAttentionConfig& l = m_arch.hybrid.linear;
        const std::uint64_t h = m_arch.hiddenSize;
        const std::uint64_t keyDim = std::uint64_t{l.keyHeads} * l.keyHeadDim;
        const std::uint64_t valueDim = std::uint64_t{l.valueHeads} * l.valueHeadDim;
        addLocal("linear_attn.in_proj_qkvz.weight", TensorRole::AttentionMatrix, 2 * keyDim + 2 * valueDim, h);
        addLocal("linear_attn.in_proj_ba.weight", TensorRole::AttentionMatrix, 2 * std::uint64_t{l.valueHeads}, h);
        addLocal("linear_attn.conv1d.weight", TensorRole::Norm, l.convChannels(), l.convKernel);
        addLocal("linear_attn.dt_bias", TensorRole::Norm, 1, l.valueHeads);
        addLocal("linear_attn.A_log", TensorRole::Norm, 1, l.valueHeads);
        addLocal("linear_attn.norm.weight", TensorRole::Norm, 1, l.valueHeadDim);
        addLocal("linear_attn.out_proj.weight", TensorRole::AttentionMatrix, h, valueDim);
    }
    // The projections every Mamba mixer has: in_proj [inRows, hidden] and the depthwise conv over
    // @p channels (with its bias when conv_bias) before the scan, out_proj [hidden, d_inner] after
    // it; in_proj and out_proj biases when proj_bias.
    void addMambaInput(std::uint64_t inRows, std::uint64_t channels)
    {
        const SsmConfig& m = m_arch.hybrid.ssm;
        addLocal("mamba.in_proj.weight", TensorRole::AttentionMatrix, inRows, m_arch.hiddenSize);
        addLocal("mamba.conv1d.weight", TensorRole::Norm, channels, m.convKernel);
        if (m.convBias)
            addLocal("mamba.conv1d.bias", TensorRole::Bias, 1, channels);
    }
    void addMambaOutput(std::uint64_t inRows)
    {
        const SsmConfig& m = m_arch.hybrid.ssm;
        addLocal("mamba.out_proj.weight", TensorRole::AttentionMatrix, m_arch.hiddenSize, m.innerSize);
        if (m.projBias) {
            addLocal("mamba.in_proj.bias", TensorRole::Bias, 1, inRows);
            addLocal("mamba.out_proj.bias", TensorRole::Bias, 1, m_arch.hiddenSize);
        }
    }
    // Mamba-1 (modeling_jamba.py JambaMambaMixer): in_proj to x and z, the conv over x, x_proj to
    // dt, B and C, dt_proj with bias, A_log [d_inner, d_state], D, out_proj; Jamba's RMSNorms over
    // dt, B and C (dt_layernorm / b_layernorm / c_layernorm).
    void addMamba()
    {
        const SsmConfig& m = m_arch.hybrid.ssm;
        addMambaInput(2 * m.innerSize, m.innerSize);
        addLocal("mamba.x_proj.weight", TensorRole::AttentionMatrix, std::uint64_t{m.dtRank} + 2 * std::uint64_t{m.stateSize},
                 m.innerSize);
        addLocal("mamba.dt_proj.weight", TensorRole::AttentionMatrix, m.innerSize, m.dtRank);
        addLocal("mamba.dt_proj.bias", TensorRole::Bias, 1, m.innerSize);
        addLocal("mamba.A_log", TensorRole::Norm, m.innerSize, m.stateSize);
        addLocal("mamba.D", TensorRole::Norm, 1, m.innerSize);
        addLocal("mamba.dt_layernorm.weight", TensorRole::Norm, 1, m.dtRank);
        addLocal("mamba.b_layernorm.weight", TensorRole::Norm, 1, m.stateSize);
        addLocal("mamba.c_layernorm.weight", TensorRole::Norm, 1, m.stateSize);
        addMambaOutput(2 * m.innerSize);
    }
    // Mamba-2 (modeling_granitemoehybrid.py GraniteMoeHybridMambaLayer, modeling_nemotron_h.py
    // NemotronHMamba2Mixer): in_proj to z, x, B, C and dt; the conv over x, B and C; per-head
    // dt_bias, A_log and D; the gated RMSNorm over d_inner; out_proj.
    void addMamba2()
    {
        const SsmConfig& m = m_arch.hybrid.ssm;
        const std::uint64_t inProj = 2 * m.innerSize + 2 * std::uint64_t{m.groups} * m.stateSize + m.heads;
        addMambaInput(inProj, m.convChannels());
        for (const char* name : {"mamba.dt_bias", "mamba.A_log", "mamba.D"})
            addLocal(name, TensorRole::Norm, 1, m.heads);
        addLocal("mamba.norm.weight", TensorRole::Norm, 1, m.innerSize);
        addMambaOutput(inProj);
    }
    // DeepSeek-V2 MLA (modeling_deepseek.py DeepseekV2Attention).
    void addMlaAttention()
    {
        const MlaConfig& m = m_arch.mla;
        const std::uint64_t h = m_arch.hiddenSize;
        const std::uint64_t heads = m_arch.attentionHeads;
        const std::uint64_t qHead = std::uint64_t{m.qkNopeHeadDim} + m.qkRopeHeadDim;
        if (m.qLoraRank > 0) {
            addLocal("self_attn.q_a_proj.weight", TensorRole::AttentionMatrix, m.qLoraRank, h);
            addLocal("self_attn.q_a_layernorm.weight", TensorRole::Norm, 1, m.qLoraRank);
            addLocal("self_attn.q_b_proj.weight", TensorRole::AttentionMatrix, heads * qHead, m.qLoraRank);
        } else {
            addLocal("self_attn.q_proj.weight", TensorRole::AttentionMatrix, heads * qHead, h);
        }
        addLocal("self_attn.kv_a_proj_with_mqa.weight", TensorRole::AttentionMatrix,
                 std::uint64_t{m.kvLoraRank} + m.qkRopeHeadDim, h);
        addLocal("self_attn.kv_a_layernorm.weight", TensorRole::Norm, 1, m.kvLoraRank);
        addLocal("self_attn.kv_b_proj.weight", TensorRole::AttentionMatrix,
                 heads * (std::uint64_t{m.qkNopeHeadDim} + m.vHeadDim), m.kvLoraRank);
        addLocal("self_attn.o_proj.weight", TensorRole::AttentionMatrix, h, heads * m.vHeadDim);
    }
    void addDenseMlp(const std::string& at, std::uint64_t width, TensorRole role, std::uint32_t copies = 1)
    {
        const std::uint64_t h = m_arch.hiddenSize;
        if (m_arch.mlp == MlpKind::Gated) {
            addLocal(at + "gate_proj.weight", role, width, h, copies);
            addLocal(at + "up_proj.weight", role, width, h, copies);
            addLocal(at + "down_proj.weight", role, h, width, copies);
        } else {
            addLocal(at + "fc1.weight", role, width, h, copies);
            addLocal(at + "fc2.weight", role, h, width, copies);
            if (m_arch.mlpBias) {
                addLocal(at + "fc1.bias", TensorRole::Bias, 1, width, copies);
                addLocal(at + "fc2.bias", TensorRole::Bias, 1, h, copies);
            }
        }
    }
    // Mixtral block_sparse_moe / DeepSeek DeepseekV2MoE: router, routed experts, shared experts.
    void addMoe()
    {
        const MoeConfig& moe = m_arch.moe;
        addLocal("mlp.gate.weight", TensorRole::Router, moe.expertCount, m_arch.hiddenSize);
        addDenseMlp("mlp.experts.", moe.expertFfnSize, TensorRole::ExpertMatrix, moe.expertCount);
        if (moe.sharedExperts > 0)
            addDenseMlp("mlp.shared_experts.", std::uint64_t{moe.sharedExperts} * moe.expertFfnSize,
                        TensorRole::ExpertMatrix);
        // Qwen2-MoE / Qwen3-Next: one shared expert of its own width behind a sigmoid gate.
        if (moe.sharedExpertFfnSize > 0) {
            addDenseMlp("mlp.shared_expert.", moe.sharedExpertFfnSize, TensorRole::ExpertMatrix);
            if (moe.sharedExpertGate)
                addLocal("mlp.shared_expert_gate.weight", TensorRole::Router, 1, m_arch.hiddenSize);
        }
    }

    // Vision tower and projector, outside the blocks (layer -1): names and shapes as in
    // transformers' modeling_siglip.py / modeling_clip.py / modeling_pixtral.py / modeling_qwen2_vl.py /
    // modeling_qwen2_5_vl.py / modeling_llama4.py and the projectors of modeling_gemma3.py / modeling_llava.py / modeling_mistral3.py.
    void addVision(const VisionConfig& v)
    {
        const std::uint64_t h = v.hiddenSize;
        const std::uint64_t in = v.intermediateSize;
        const std::uint64_t patch = std::uint64_t{v.channels} * v.temporalPatchSize * v.patchSize * v.patchSize;
        const bool layerNorm = v.kind == VisionKind::Siglip || v.kind == VisionKind::Clip || v.kind == VisionKind::Qwen2Vl;
        auto matrix = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols) {
            add(name, TensorRole::VisionMatrix, rows, cols);
        };
        auto vector = [&](const std::string& name, std::uint64_t n) { add(name, TensorRole::VisionVector, 1, n); };
        auto linear = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols, bool bias) {
            matrix(name + ".weight", rows, cols);
            if (bias)
                vector(name + ".bias", rows);
        };
        auto norm = [&](const std::string& name, bool withBias) {
            vector(name + ".weight", h);
            if (withBias)
                vector(name + ".bias", h);
        };
        std::string prefix;
        switch (v.kind) {
        case VisionKind::Siglip:
        case VisionKind::Clip: {
            const bool clip = v.kind == VisionKind::Clip;
            prefix = "vision_tower.vision_model.";
            if (clip)
                vector(prefix + "embeddings.class_embedding", h);
            linear(prefix + "embeddings.patch_embedding", h, patch, !clip);
            matrix(prefix + "embeddings.position_embedding.weight", v.patchesPerImage() + (clip ? 1 : 0), h);
            if (clip)
                norm(prefix + "pre_layrnorm", true);
            for (std::uint32_t i = 0; i < v.layers; ++i) {
                const std::string l = prefix + "encoder.layers." + std::to_string(i) + ".";
                norm(l + "layer_norm1", true);
                for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"})
                    linear(l + "self_attn." + p, h, h, true);
                norm(l + "layer_norm2", true);
                linear(l + "mlp.fc1", in, h, true);
                linear(l + "mlp.fc2", h, in, true);
            }
            norm(prefix + "post_layernorm", true);
            if (clip) {
                linear("multi_modal_projector.linear_1", v.outputSize, h, true);
                linear("multi_modal_projector.linear_2", v.outputSize, v.outputSize, true);
            } else {
                matrix("multi_modal_projector.mm_input_projection_weight", h, v.outputSize);
                vector("multi_modal_projector.mm_soft_emb_norm.weight", h);
            }
            return;
        }
        case VisionKind::Pixtral:
            prefix = "vision_tower.";
            matrix(prefix + "patch_conv.weight", h, patch);
            norm(prefix + "ln_pre", false);
            for (std::uint32_t i = 0; i < v.layers; ++i) {
                const std::string l = prefix + "transformer.layers." + std::to_string(i) + ".";
                norm(l + "attention_norm", false);
                for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"})
                    linear(l + "attention." + p, h, h, false);
                norm(l + "ffn_norm", false);
                linear(l + "feed_forward.gate_proj", in, h, false);
                linear(l + "feed_forward.up_proj", in, h, false);
                linear(l + "feed_forward.down_proj", h, in, false);
            }
            norm("multi_modal_projector.norm", false);
            matrix("multi_modal_projector.patch_merger.merging_layer.weight", h,
                   h * v.mergeSize * v.mergeSize);
            linear("multi_modal_projector.linear_1", v.outputSize, h, false);
            linear("multi_modal_projector.linear_2", v.outputSize, v.outputSize, false);
            return;
        case VisionKind::Qwen2Vl:
        case VisionKind::Qwen25Vl: {
            prefix = "visual.";
            matrix(prefix + "patch_embed.proj.weight", h, patch);
            for (std::uint32_t i = 0; i < v.layers; ++i) {
                const std::string l = prefix + "blocks." + std::to_string(i) + ".";
                norm(l + "norm1", layerNorm);
                linear(l + "attn.qkv", 3 * h, h, true);
                linear(l + "attn.proj", h, h, true);
                norm(l + "norm2", layerNorm);
                if (v.kind == VisionKind::Qwen2Vl) {
                    linear(l + "mlp.fc1", in, h, true);
                    linear(l + "mlp.fc2", h, in, true);
                } else {
                    linear(l + "mlp.gate_proj", in, h, true);
                    linear(l + "mlp.up_proj", in, h, true);
                    linear(l + "mlp.down_proj", h, in, true);
                }
            }
            const std::uint64_t merged = h * v.mergeSize * v.mergeSize;
            norm(prefix + "merger.ln_q", layerNorm);
            linear(prefix + "merger.mlp.0", merged, merged, true);
            linear(prefix + "merger.mlp.2", v.outputSize, merged, true);
            return;
        }
        case VisionKind::Llama4: {
            // modeling_llama4.py Llama4VisionModel / Llama4VisionPixelShuffleMLP /
            // Llama4MultiModalProjector (Scout: 871.9 M parameters, 34 layers of 1408).
            prefix = "vision_model.";
            vector(prefix + "class_embedding", h);
            matrix(prefix + "positional_embedding_vlm", v.patchesPerImage() + 1, h);
            matrix(prefix + "patch_embedding.linear.weight", h, patch);
            norm(prefix + "layernorm_pre", true);
            norm(prefix + "layernorm_post", true);
            for (std::uint32_t i = 0; i < v.layers; ++i) {
                const std::string l = prefix + "model.layers." + std::to_string(i) + ".";
                for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"})
                    linear(l + "self_attn." + p, h, h, true);
                linear(l + "mlp.fc1", in, h, true);
                linear(l + "mlp.fc2", h, in, true);
                norm(l + "input_layernorm", true);
                norm(l + "post_attention_layernorm", true);
            }
            linear(prefix + "vision_adapter.mlp.fc1", v.adapterSize, in, false);
            linear(prefix + "vision_adapter.mlp.fc2", v.adapterSize, v.adapterSize, false);
            linear("multi_modal_projector.linear_1", v.outputSize, v.adapterSize, false);
            return;
        }
        case VisionKind::None:
            return;
        }
    }

    const Architecture& m_arch;
    std::vector<TensorSpec> m_out;
    std::string m_prefix;
    std::int32_t m_layer = -1;
};

// GGML types need whole blocks per row; llama.cpp's quantizer falls back to a type whose block
// divides the row (llama-quant.cpp: q8_0 for 32-multiples, else f16).
using Priced = PricedTensor;

Priced priceMatrix(const WeightFormat& format, std::uint64_t rows, std::uint64_t cols)
{
    if (ggmlRowAligned(format, cols))
        return {matrixBytes(format, rows, cols), format.id};
    if (cols % 32 == 0)
        return {matrixBytes(*findFormat("q8_0"), rows, cols), "q8_0"};
    return {Bytes{checkedMul(checkedMul(rows, cols), 2)}, "fp16"};
}

Priced priceVisionTensor(const TensorSpec& t, const WeightFormat& format);

Priced priceTensor(const TensorSpec& t, const WeightFormat& format)
{
    const std::string smallType = format.smallTensorBytes == 4 ? "fp32" : "fp16";
    switch (t.role) {
    case TensorRole::TokenEmbedding:
    case TensorRole::PositionEmbedding:
    case TensorRole::Output:
        if (!format.quantizesEmbeddings)
            return {Bytes{checkedMul(t.elements(), 2)}, "fp16"};
        return priceMatrix(format, t.rows, t.cols);
    case TensorRole::AttentionMatrix:
    case TensorRole::MlpMatrix:
    case TensorRole::ExpertMatrix: {
        Priced p = priceMatrix(format, t.rows, t.cols);
        p.bytes = p.bytes * t.copies;
        return p;
    }
    case TensorRole::VisionMatrix:
    case TensorRole::VisionVector:
        return priceVisionTensor(t, format);
    case TensorRole::Router:
    case TensorRole::Norm:
    case TensorRole::Bias:
        if (format.kind == FormatKind::Float)
            return {smallTensorBytes(format, t.elements()), format.id};
        return {smallTensorBytes(format, t.elements()), smallType};
    }
    return {};
}

// A llama-quantize preset: the quantizer's type for this tensor (ggufpreset.h); norms, biases,
// routers and learned positions are not quantized (tensor_allows_quantization) and stay f32, as
// convert_hf_to_gguf.py writes them.
Priced pricePresetTensor(const TensorSpec& t, const WeightFormat& format, const Architecture& arch)
{
    const std::optional<GgufPreset> preset = ggufPresetOfFileType(format.ggufFileType, format.ggufRulesBuild);
    if (!preset || !t.isMatrix() || t.role == TensorRole::PositionEmbedding)
        return {smallTensorBytes(format, t.elements()), "fp32"};
    const bool expert = t.role == TensorRole::ExpertMatrix && t.name.find("mlp.experts.") != std::string::npos;
    const std::uint32_t id = ggufTensorType(*preset, quantCategory(t, arch), t.layer, t.cols, expert,
                                            QuantModelFacts::of(arch));
    const formats::GgmlType* type = formats::ggmlType(id);
    const std::uint64_t rowBytes = checkedMul(ceilDiv(t.cols, type->blockSize), type->typeSize, "tensor bytes");
    const Bytes bytes{checkedMul(checkedMul(t.rows, rowBytes, "tensor bytes"), t.copies, "tensor bytes")};
    return {bytes, id == 1 ? std::string("fp16") : asciiLower(type->name)};
}

// Vision tensors stay in 16-bit: a GGUF projector (mmproj, or the v.* tensors of Ollama's files)
// stores matrices f16 and vectors f32 (llama.cpp convert_hf_to_gguf.py MmprojModel; Ollama's
// gemma3 blob: v.blk.0.attn_k.weight dtype 1, attn_k.bias dtype 0), a safetensors checkpoint keeps
// its 16-bit dtype (fp32 formats: 4 B), and quantized checkpoints leave the tower unquantized.
Priced priceVisionTensor(const TensorSpec& t, const WeightFormat& format)
{
    const std::uint64_t n = t.elements();
    if (format.kind == FormatKind::Ggml || format.ggufFileType != 0) {
        if (t.role == TensorRole::VisionVector)
            return {Bytes{checkedMul(n, 4, "vision bytes")}, "fp32"};
        return {Bytes{checkedMul(n, 2, "vision bytes")}, "fp16"};
    }
    if (format.kind == FormatKind::Float && format.id == "fp32")
        return {Bytes{checkedMul(n, 4, "vision bytes")}, "fp32"};
    return {Bytes{checkedMul(n, 2, "vision bytes")}, format.kind == FormatKind::Float ? format.id : std::string("bf16")};
}

} // namespace

PricedTensor priceTensor(const TensorSpec& tensor, const WeightFormat& format, const Architecture& arch)
{
    if (tensor.role == TensorRole::VisionMatrix || tensor.role == TensorRole::VisionVector)
        return priceVisionTensor(tensor, format);
    if (format.ggufFileType != 0)
        return pricePresetTensor(tensor, format, arch);
    return priceTensor(tensor, format);
}

std::uint64_t TensorSpec::elements() const
{
    return checkedMul(checkedMul(rows, cols, "tensor elements"), copies, "tensor elements");
}

bool TensorSpec::isMatrix() const
{
    return role == TensorRole::AttentionMatrix || role == TensorRole::MlpMatrix || role == TensorRole::ExpertMatrix
        || role == TensorRole::TokenEmbedding || role == TensorRole::Output || role == TensorRole::PositionEmbedding;
}

std::vector<TensorSpec> listTensors(const Architecture& arch) { return TensorLister(arch).run(); }

std::uint64_t parameterCount(const Architecture& arch)
{
    std::uint64_t n = 0;
    for (const TensorSpec& t : listTensors(arch))
        n = checkedAdd(n, t.elements(), "parameter count");
    return n;
}

Bytes tensorBytes(const TensorSpec& tensor, const WeightFormat& format) { return priceTensor(tensor, format).bytes; }

const char* roleName(TensorRole role)
{
    switch (role) {
    case TensorRole::TokenEmbedding:
    case TensorRole::PositionEmbedding:
        return "embeddings";
    case TensorRole::Output:
        return "output";
    case TensorRole::AttentionMatrix:
        return "attention";
    case TensorRole::MlpMatrix:
        return "mlp";
    case TensorRole::ExpertMatrix:
        return "experts";
    case TensorRole::Router:
        return "router";
    case TensorRole::Norm:
        return "norms";
    case TensorRole::Bias:
        return "biases";
    case TensorRole::VisionMatrix:
    case TensorRole::VisionVector:
        return "vision";
    }
    return "other";
}

std::vector<TensorSpec> ggufOnlyTensors(const Architecture& arch)
{
    std::vector<TensorSpec> out;
    if (arch.family == "llama" && arch.ropeScaling.type == "llama3" && arch.headDim >= 2) {
        TensorSpec t;
        t.name = "rope_freqs.weight";
        t.role = TensorRole::Norm;
        t.cols = arch.headDim / 2;
        out.push_back(std::move(t));
    }
    return out;
}

PricedTensors priceTensors(const Architecture& arch, const WeightFormat& format)
{
    PricedTensors out;
    out.tensors = listTensors(arch);
    if (format.ggufFileType != 0)
        for (TensorSpec& t : ggufOnlyTensors(arch))
            out.tensors.push_back(std::move(t));
    out.priced.reserve(out.tensors.size());
    for (const TensorSpec& t : out.tensors)
        out.priced.push_back(priceTensor(t, format, arch));
    return out;
}

WeightBill weightBill(const PricedTensors& list)
{
    // Sums per role and per stored type in small flat tables (a handful of distinct keys), then
    // into the bill's maps once: a map lookup with a string key per tensor was a tenth of a plan.
    constexpr std::size_t kRoles = static_cast<std::size_t>(TensorRole::VisionVector) + 1; // VisionVector is the last role
    std::array<Bytes, kRoles> byRole{};
    std::array<bool, kRoles> roleSeen{};
    std::vector<std::pair<const std::string*, Bytes>> byType;
    WeightBill bill;
    for (std::size_t i = 0; i < list.tensors.size(); ++i) {
        const TensorSpec& t = list.tensors[i];
        const PricedTensor& p = list.priced[i];
        bill.parameters = checkedAdd(bill.parameters, t.elements(), "parameter count");
        bill.totalBytes += p.bytes;
        const auto role = static_cast<std::size_t>(t.role);
        byRole[role] += p.bytes;
        roleSeen[role] = true;
        auto it = std::find_if(byType.begin(), byType.end(), [&](const auto& e) { return *e.first == p.type; });
        if (it == byType.end())
            byType.emplace_back(&p.type, p.bytes);
        else
            it->second += p.bytes;
    }
    for (std::size_t r = 0; r < kRoles; ++r)
        if (roleSeen[r])
            bill.bytesByRole[roleName(static_cast<TensorRole>(r))] += byRole[r];
    for (const auto& [type, bytes] : byType)
        bill.bytesByType[*type] += bytes;
    return bill;
}

WeightBill priceWeights(const Architecture& arch, const WeightFormat& format)
{
    return weightBill(priceTensors(arch, format));
}

Bytes nominalWeightBytes(std::uint64_t parameters, const WeightFormat& format)
{
    const long double bits = static_cast<long double>(parameters) * format.nominalBitsPerWeight();
    return Bytes{static_cast<std::uint64_t>(std::ceil(bits / 8.0L))};
}

std::shared_ptr<const PricedTensorsEntry> sharedPricedTensors(const Architecture& arch, const WeightFormat& format)
{
    struct Slot {
        Architecture arch;
        WeightFormat format;
        std::shared_ptr<const PricedTensorsEntry> entry;
    };
    constexpr std::size_t kSlots = 32;
    static std::mutex mutex;
    static std::deque<Slot> slots; // most recently used first
    {
        const std::lock_guard<std::mutex> lock(mutex);
        for (auto it = slots.begin(); it != slots.end(); ++it)
            if (it->format == format && it->arch == arch) {
                std::shared_ptr<const PricedTensorsEntry> hit = it->entry;
                if (it != slots.begin()) {
                    Slot moved = std::move(*it);
                    slots.erase(it);
                    slots.push_front(std::move(moved));
                }
                return hit;
            }
    }
    // Priced outside the lock (a miss costs a plan's listing); two threads missing on the same
    // key both price it and the second insert is a duplicate that ages out.
    auto entry = std::make_shared<PricedTensorsEntry>();
    entry->list = priceTensors(arch, format);
    entry->bill = weightBill(entry->list);
    const std::lock_guard<std::mutex> lock(mutex);
    slots.push_front(Slot{arch, format, entry});
    if (slots.size() > kSlots)
        slots.pop_back();
    return entry;
}

} // namespace headroom
