#pragma once
/// @file architecture.h
/// The shape of a decoder-only transformer, as far as memory is concerned: enough to list every
/// weight tensor (parameters.h) and to size the KV cache (kvcache.h). Filled from a model
/// profile, a Hugging Face config.json or GGUF metadata (importers).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Normalisation layers: RMSNorm has a weight vector; LayerNorm a weight and a bias.
enum class NormKind { RmsNorm, LayerNorm };

/// Feed-forward block: gated (gate, up, down: llama, mistral, qwen2, gemma, phi3, deepseek) or
/// plain (up and down with an activation between them: gpt2, opt, falcon).
enum class MlpKind { Gated, Plain };

/// Mixture of experts (Mixtral, DeepSeek-V2). All experts stay resident; only top-k compute.
/// Source of the names: HF config keys num_local_experts / n_routed_experts,
/// num_experts_per_tok, n_shared_experts, moe_intermediate_size, first_k_dense_replace.
struct MoeConfig {
    std::uint32_t expertCount = 0;       ///< routed experts per MoE layer; 0 = dense model
    std::uint32_t expertsPerToken = 0;   ///< top-k routed experts computed per token
    std::uint32_t sharedExperts = 0;     ///< always-on experts (DeepSeek), each expertFfnSize wide
    std::uint64_t expertFfnSize = 0;     ///< intermediate size of one expert
    std::uint32_t denseFirstLayers = 0;  ///< leading layers with a dense MLP (first_k_dense_replace)
    /// Every layerStep-th layer is MoE, the others dense (Llama 4 interleave_moe_layer_step,
    /// transformers modeling_llama4.py: layer i is MoE when (i + 1) % step == 0); 1 = every layer.
    std::uint32_t layerStep = 1;
    /// Width of one separate shared expert with a sigmoid gate [1, hidden] (Qwen2-MoE / Qwen3-Next
    /// shared_expert_intermediate_size); 0 = none (DeepSeek's shared experts use sharedExperts).
    std::uint64_t sharedExpertFfnSize = 0;
    /// That shared expert has its sigmoid gate (Qwen); Granite 4's shared_mlp has none.
    bool sharedExpertGate = true;

    bool enabled() const { return expertCount > 0; }
    /// Whether layer @p i has the MoE block (past the dense first layers, on the interleave).
    bool isMoeLayer(std::uint32_t i) const
    {
        return enabled() && i >= denseFirstLayers && (layerStep <= 1 || (i + 1) % layerStep == 0);
    }
    /// Member-wise equality.
    bool operator==(const MoeConfig&) const = default;
};

/// Multi-head latent attention (DeepSeek-V2/V3, arXiv 2405.04434 §2.1): the cache holds one
/// compressed latent of kvLoraRank plus a shared RoPE key of qkRopeHeadDim per token and layer.
struct MlaConfig {
    std::uint32_t kvLoraRank = 0;     ///< latent width d_c; 0 = no MLA
    std::uint32_t qkRopeHeadDim = 0;  ///< decoupled RoPE key dim d_h^R
    std::uint32_t qkNopeHeadDim = 0;  ///< per-head non-RoPE query/key dim
    std::uint32_t vHeadDim = 0;       ///< per-head value dim
    std::uint32_t qLoraRank = 0;      ///< query compression rank; 0 = queries projected directly
    /// The engine caches full per-head K (qk_nope + qk_rope) and V (v_head) for every head instead
    /// of the latent: DeepSeek GGUF files written before llama.cpp's MLA cache (ggml-org/llama.cpp
    /// PR 12801, 2025-04; such files lack `<arch>.attention.key_length_mla`) are loaded that way,
    /// `llama_kv_cache_init: layer N: n_embd_k_gqa = 24576, n_embd_v_gqa = 16384` for DeepSeek-R1
    /// (ggml-org/llama.cpp PR 11397): 71x the 576-value latent of V3/R1, 8.9x for V2-Lite.
    bool fullKvCache = false;

    bool enabled() const { return kvLoraRank > 0; }
    /// True when the cache holds the compressed latent (MLA enabled and not fullKvCache).
    bool cachesLatent() const { return enabled() && !fullKvCache; }
    /// Member-wise equality.
    bool operator==(const MlaConfig&) const = default;
};

/// Sliding-window attention: some layers attend only to the last windowTokens tokens, so their
/// cache holds about min(context, window + micro-batch) cells (BRIEF §1.1).
struct SlidingWindowConfig {
    std::uint64_t windowTokens = 0;  ///< 0 = no sliding window
    /// One flag per layer (true = sliding). Empty with windowTokens > 0 means every layer slides
    /// (Mistral-7B-v0.1); gemma-2 alternates (sliding_window_pattern / layer_types).
    std::vector<bool> slidingLayers;

    bool enabled() const { return windowTokens > 0; }
    /// Whether layer @p i slides.
    bool isSliding(std::uint32_t i) const
    {
        if (!enabled())
            return false;
        return slidingLayers.empty() || (i < slidingLayers.size() && slidingLayers[i]);
    }
    /// Member-wise equality.
    bool operator==(const SlidingWindowConfig&) const = default;
};

/// What mixes tokens in a layer. Recurrent mixers keep a fixed state per sequence instead of K
/// and V per token (vLLM kv_cache_interface.py MambaSpec; llama.cpp llama-memory-recurrent.cpp).
enum class MixerKind {
    Attention,      ///< softmax attention with a KV cache (the default)
    /// Gated DeltaNet linear attention (Qwen3-Next, modeling_qwen3_next.py Qwen3NextGatedDeltaNet):
    /// in_proj_qkvz [2 k_heads d_k + 2 v_heads d_v, hidden], in_proj_ba [2 v_heads, hidden], a depthwise
    /// conv over 2 k_heads d_k + v_heads d_v channels, out_proj [hidden, v_heads d_v]. State per sequence:
    /// conv (kernel - 1) x channels, recurrent v_heads x d_k x d_v.
    GatedDeltaNet,
    /// Mamba-1 selective scan (Jamba, modeling_jamba.py JambaMambaMixer): in_proj [2 d_inner, hidden], a
    /// depthwise conv over d_inner channels, x_proj [dt_rank + 2 d_state, d_inner], dt_proj [d_inner,
    /// dt_rank], A_log [d_inner, d_state], D [d_inner], out_proj [hidden, d_inner]. State per sequence:
    /// conv (kernel - 1) x d_inner, ssm d_inner x d_state.
    Mamba,
    /// Mamba-2 (Granite 4 modeling_granitemoehybrid.py, Nemotron-H modeling_nemotron_h.py): in_proj
    /// [2 d_inner + 2 groups d_state + heads, hidden], a depthwise conv over d_inner + 2 groups d_state
    /// channels, per-head dt_bias / A_log / D, a gated RMSNorm over d_inner, out_proj [hidden, d_inner].
    /// State per sequence: conv (kernel - 1) x channels, ssm heads x head_dim x d_state.
    Mamba2,
    /// No token mixer: the block is an MLP alone (Nemotron-H hybrid_override_pattern "-").
    MlpOnly,
    /// Attention and a Mamba-2 mixer side by side in one block (Falcon-H1, modeling_falcon_h1.py
    /// FalconH1DecoderLayer: self_attn and mamba read the same input, their outputs are summed): the
    /// layer keeps a KV cache and a Mamba-2 state. llama.cpp allocates both for every Falcon-H1 layer
    /// (src/llama-model.cpp llama_model::create_memory, LLM_ARCH_FALCON_H1: filter_attn and
    /// filter_recr true for every layer; ggml-org/llama.cpp commit 00342301).
    AttentionMamba2,
};

/// Linear-attention (Gated DeltaNet) shapes: config.json linear_* keys.
struct LinearAttentionConfig {
    std::uint32_t keyHeads = 0;      ///< linear_num_key_heads
    std::uint32_t valueHeads = 0;    ///< linear_num_value_heads
    std::uint32_t keyHeadDim = 0;    ///< linear_key_head_dim
    std::uint32_t valueHeadDim = 0;  ///< linear_value_head_dim
    std::uint32_t convKernel = 0;    ///< linear_conv_kernel_dim

    /// Channels of the depthwise conv: 2 x keyHeads x keyHeadDim + valueHeads x valueHeadDim.
    std::uint64_t convChannels() const
    {
        return 2 * std::uint64_t{keyHeads} * keyHeadDim + std::uint64_t{valueHeads} * valueHeadDim;
    }
    /// Member-wise equality.
    bool operator==(const LinearAttentionConfig&) const = default;
};

/// Mamba (state-space) mixer shapes: config.json mamba_* / ssm_* keys (element counts).
struct SsmConfig {
    std::uint64_t innerSize = 0;   ///< d_inner = mamba_expand x hidden (Mamba-2: heads x head_dim)
    std::uint32_t stateSize = 0;   ///< d_state (mamba_d_state, ssm_state_size)
    std::uint32_t convKernel = 0;  ///< d_conv (mamba_d_conv, conv_kernel)
    std::uint32_t heads = 0;       ///< Mamba-2 heads (mamba_n_heads, mamba_num_heads); 0 for Mamba-1
    std::uint32_t headDim = 0;     ///< Mamba-2 head dim (mamba_d_head, mamba_head_dim)
    std::uint32_t groups = 0;      ///< Mamba-2 B/C groups (mamba_n_groups, n_groups); 0 for Mamba-1
    std::uint32_t dtRank = 0;      ///< Mamba-1 dt rank (mamba_dt_rank; "auto" = ceil(hidden / 16))
    bool convBias = true;          ///< conv1d has a bias (mamba_conv_bias, use_conv_bias)
    bool projBias = false;         ///< in_proj / out_proj have biases (mamba_proj_bias, use_bias)

    /// Channels of the depthwise conv: d_inner + 2 x groups x d_state (Mamba-1: groups 0, d_inner).
    std::uint64_t convChannels() const { return innerSize + 2 * std::uint64_t{groups} * stateSize; }
    /// Member-wise equality.
    bool operator==(const SsmConfig&) const = default;
};

/// Hybrid models: the mixer of each layer. Empty = attention everywhere.
struct HybridConfig {
    std::vector<MixerKind> layerMixers;  ///< one per layer (config layer_types / full_attention_interval)
    LinearAttentionConfig linear;
    SsmConfig ssm;                       ///< the Mamba layers' shapes
    /// A block is a mixer or an MLP, not both (Nemotron-H: "M" and "*" blocks have no MLP, "-" blocks
    /// no mixer); false = every block has its mixer and its MLP (Granite 4, Jamba, Qwen3-Next).
    bool blockIsMixerOrMlp = false;
    /// Attention layers gate their output: q_proj is twice as wide (Qwen3-Next attn_output_gate).
    bool attentionOutputGate = false;

    bool enabled() const { return !layerMixers.empty(); }
    MixerKind mixerOf(std::uint32_t i) const { return i < layerMixers.size() ? layerMixers[i] : MixerKind::Attention; }
    /// Whether layer @p i keeps a recurrent state (Gated DeltaNet, Mamba; a parallel Falcon-H1 layer
    /// keeps one beside its KV cache).
    bool isRecurrent(std::uint32_t i) const
    {
        const MixerKind k = mixerOf(i);
        return k == MixerKind::GatedDeltaNet || k == MixerKind::Mamba || k == MixerKind::Mamba2
            || k == MixerKind::AttentionMamba2;
    }
    /// Whether layer @p i has an attention KV cache (an attention layer, or a parallel attention +
    /// Mamba-2 layer).
    bool isAttention(std::uint32_t i) const
    {
        const MixerKind k = mixerOf(i);
        return k == MixerKind::Attention || k == MixerKind::AttentionMamba2;
    }
    /// Whether layer @p i has an MLP (or MoE) block.
    bool hasMlp(std::uint32_t i) const { return !blockIsMixerOrMlp || mixerOf(i) == MixerKind::MlpOnly; }
    /// Member-wise equality.
    bool operator==(const HybridConfig&) const = default;
};

/// The recurrent state of one layer for one sequence on one rank, in elements: what vLLM's
/// MambaSpec page holds (vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator,
/// vLLM commit 02d71083) and llama.cpp's one cell of cache_r_l / cache_s_l (src/llama-memory-recurrent.cpp,
/// n_embd_r / n_embd_s in src/llama-hparams.cpp, llama.cpp commit 0054ee8c).
struct RecurrentState {
    std::uint64_t convElements = 0; ///< conv state: (kernel - 1) x channels / tp (llama.cpp R)
    std::uint64_t ssmElements = 0;  ///< temporal state: heads / tp x d_k x d_v, or d_inner / tp x d_state (S)
};



/// config.json rope_scaling as it sizes an engine's rotary cos/sin tables; the trained context
/// stays contextLength (max_position_embeddings). vLLM's get_rope (model_executor/layers/
/// rotary_embedding) caches max_position x factor rows for linear, dynamic and YaRN scaling
/// (original_max_position_embeddings x factor where the config gives it), max_position rows
/// otherwise (default, llama3, longrope).
struct RopeScaling {
    std::string type;                        ///< rope_type (or type): "linear", "dynamic", "yarn", "llama3", ...; "" = none
    double factor = 1.0;                     ///< factor (1..1024)
    std::uint64_t originalContextLength = 0; ///< original_max_position_embeddings; 0 = not given

    bool enabled() const { return !type.empty(); }
    /// Member-wise equality.
    bool operator==(const RopeScaling&) const = default;
};

/// The vision encoder of a multimodal model; each kind has its own tensor list (parameters.cpp,
/// named after transformers' modeling files) and its own projector into the language model.
enum class VisionKind {
    None,
    /// SigLIP ViT (Gemma 3, modeling_siglip.py): LayerNorm, biased q/k/v/out and fc1/fc2, a learned
    /// position table of (image/patch)^2 rows; projector mm_input_projection [vision, text] + RMSNorm
    /// (modeling_gemma3.py Gemma3MultiModalProjector).
    Siglip,
    /// CLIP ViT (LLaVA, modeling_clip.py): as SigLIP plus a class embedding (one more position row),
    /// pre_layrnorm, a patch conv without bias; projector linear_1/linear_2 with biases
    /// (modeling_llava.py LlavaMultiModalProjector).
    Clip,
    /// Pixtral (Mistral 3.1, modeling_pixtral.py): RMSNorm, no biases, gated MLP, 2-D RoPE (no
    /// position table); projector RMSNorm, patch merger [h, h*m^2], linear_1/linear_2 without biases
    /// (modeling_mistral3.py, multimodal_projector_bias false).
    Pixtral,
    /// Qwen2-VL (modeling_qwen2_vl.py VisionTransformer): LayerNorm, fused biased qkv, fc1/fc2, a 3-D
    /// patch conv over temporal_patch_size frames; PatchMerger LayerNorm + two biased linears.
    Qwen2Vl,
    /// Qwen2.5-VL (modeling_qwen2_5_vl.py): RMSNorm, fused biased qkv, gated biased MLP; merger as
    /// Qwen2-VL with an RMSNorm.
    Qwen25Vl,
    /// Llama 4 (modeling_llama4.py Llama4VisionModel): an unfolded patch linear without bias, a class
    /// embedding and a position table of (image/patch)^2 + 1 rows, LayerNorm pre/post and per layer,
    /// biased q/k/v/o and fc1/fc2; the pixel-shuffle adapter vision_adapter.mlp fc1 [adapter,
    /// intermediate] and fc2 [adapter, adapter] without biases (multi_modal_projector_bias false), then
    /// multi_modal_projector.linear_1 [text hidden, adapter] without bias.
    Llama4,
};

/// Vision tower and projector shapes, from config.json `vision_config` (element counts).
struct VisionConfig {
    VisionKind kind = VisionKind::None;
    std::uint32_t layers = 0;            ///< num_hidden_layers / depth
    std::uint64_t hiddenSize = 0;        ///< hidden_size / embed_dim
    std::uint64_t intermediateSize = 0;  ///< intermediate_size (Qwen2-VL: embed_dim * mlp_ratio)
    std::uint32_t heads = 0;             ///< num_attention_heads / num_heads
    std::uint32_t patchSize = 0;         ///< patch_size (pixels)
    std::uint32_t imageSize = 0;         ///< image_size (pixels); sizes the position table and the encoder graph
    std::uint32_t channels = 3;          ///< num_channels / in_chans
    std::uint32_t temporalPatchSize = 1; ///< Qwen2-VL frames per patch (2)
    std::uint32_t mergeSize = 1;         ///< spatial_merge_size (Qwen2-VL, Pixtral: 2)
    std::uint64_t outputSize = 0;        ///< projector output width: the text hidden size (Qwen: out_hidden_size)
    /// Llama 4's pixel-shuffle adapter width (projector_input_dim = projector_output_dim =
    /// vision_output_dim, 4096 in Scout and Maverick); 0 for the other kinds.
    std::uint64_t adapterSize = 0;

    bool enabled() const { return kind != VisionKind::None && layers > 0; }
    /// Patches of one image: (imageSize / patchSize)^2 (0 when either is unknown).
    std::uint64_t patchesPerImage() const
    {
        return patchSize > 0 ? std::uint64_t{imageSize / patchSize} * (imageSize / patchSize) : 0;
    }
    /// Member-wise equality.
    bool operator==(const VisionConfig&) const = default;
};

/// "attention", "gated_deltanet", "mamba", "mamba2", "mlp", "attention_mamba2".
const char* mixerKindName(MixerKind kind);
/// The mixer named @p name: mixerKindName, or config.json layer_types' "full_attention",
/// "sliding_attention", "linear_attention"; nullopt for another name. ("mamba" is Mamba-1 here;
/// Granite 4's layer_types "mamba" are Mamba-2 layers, which its importer says.)
std::optional<MixerKind> mixerKindFromName(const std::string& name);

/// "siglip", "clip", "pixtral", "qwen2-vl", "qwen2.5-vl", "llama4" ("" for None).
const char* visionKindName(VisionKind kind);
/// The kind named @p name (visionKindName), or None.
VisionKind visionKindFromName(const std::string& name);

/// A decoder-only transformer. Dimensions are element counts; no bytes here.
struct Architecture {
    std::string family;                   ///< "llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "deepseek2", "falcon", "gpt2", "opt", ...
    std::uint32_t layers = 0;             ///< transformer blocks (num_hidden_layers, n_layer, block_count)
    std::uint64_t hiddenSize = 0;         ///< residual width (hidden_size, n_embd, embedding_length)
    std::uint32_t attentionHeads = 0;     ///< query heads H
    std::uint32_t kvHeads = 0;            ///< KV heads H_kv (H = MHA, 1 = MQA, between = GQA)
    std::vector<std::uint32_t> kvHeadsPerLayer; ///< per-layer H_kv when it varies; empty = kvHeads everywhere
    std::uint32_t headDim = 0;            ///< key/query head dim d_k (explicit head_dim, else hidden/heads)
    std::uint32_t valueHeadDim = 0;       ///< value head dim d_v; 0 = same as headDim
    std::uint64_t intermediateSize = 0;   ///< dense MLP width (intermediate_size, ffn_dim, 4*hidden for gpt2)
    std::uint64_t vocabSize = 0;          ///< rows of the token embedding
    bool tiedEmbeddings = false;          ///< lm_head shares the token embedding
    bool qkvBias = false;                 ///< q/k/v projections have biases (qwen2, gpt2, opt)
    bool outputProjBias = false;          ///< attention output projection has a bias (gpt2, opt)
    bool mlpBias = false;                 ///< MLP projections have biases (gpt2, opt)
    bool qkNorm = false;                  ///< per-head RMSNorm on queries and keys, [head_dim] each (qwen3)
    NormKind norm = NormKind::RmsNorm;
    MlpKind mlp = MlpKind::Gated;
    std::uint32_t normsPerLayer = 2;      ///< 2 (pre-attention, pre-MLP); 1 for falcon-7b's parallel block; 4 for gemma-2
    std::uint64_t positionEmbeddingRows = 0; ///< learned absolute positions (gpt2: n_positions; opt: max+2); 0 = RoPE/ALiBi
    std::uint64_t contextLength = 0;      ///< trained context (max_position_embeddings, n_positions, context_length)
    MoeConfig moe;
    MlaConfig mla;
    SlidingWindowConfig sliding;
    VisionConfig vision;                  ///< vision tower + projector; kind None for text-only models
    HybridConfig hybrid;                  ///< per-layer mixers (linear attention); empty for plain transformers
    RopeScaling ropeScaling;              ///< rope_scaling; type "" for none

    /// H_kv of layer @p i.
    std::uint32_t kvHeadsOf(std::uint32_t i) const
    {
        return i < kvHeadsPerLayer.size() ? kvHeadsPerLayer[i] : kvHeads;
    }
    /// d_v.
    std::uint32_t valueDim() const { return valueHeadDim != 0 ? valueHeadDim : headDim; }
    /// Member-wise equality (the priced-tensor cache of parameters.h keys on it).
    bool operator==(const Architecture&) const = default;
};

/// The state of layer @p layer of @p arch per sequence on one of @p tp ranks ({0, 0} for a layer
/// that is not recurrent). Gated DeltaNet: conv (k - 1) x (2 k_heads d_k + v_heads d_v) / tp, ssm
/// v_heads / tp x d_k x d_v (gated_delta_net_state_shape). Mamba-1: conv (k - 1) x d_inner / tp, ssm
/// d_inner / tp x d_state (mamba1_state_shape). Mamba-2: conv (k - 1) x (d_inner + 2 g' d_state) / tp,
/// where g' = groups + (tp - groups when tp does not divide them: the groups are replicated to go
/// with their heads, extra_groups_for_head_shards), ssm heads / tp x head_dim x d_state
/// (mamba2_state_shape). llama.cpp (tp 1) sizes the same: R = (d_conv - 1) x (d_inner + 2 n_group
/// d_state), S = d_state x d_inner. Divisions round up.
RecurrentState recurrentState(const Architecture& arch, std::uint32_t layer, std::uint32_t tp = 1);

/// Checks an architecture for the bounds every formula relies on: layers in 1..10,000, hidden
/// size in 1..2^20, heads in 1..2^14, H divisible by H_kv, head dims in 1..2^14, vocab up to 2^24,
/// per-layer lists of length `layers`. Returns an empty string when valid, else the problem
/// ("kv_heads 3 does not divide attention_heads 32").
std::string validateArchitecture(const Architecture& arch);

} // namespace headroom
