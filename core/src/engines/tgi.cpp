// Text Generation Inference: the KV blocks are sized after the warm-up, from the memory free
// then (server/text_generation_server/models/flash_causal_lm.py FlashCausalLM.warmup):
//   - the warm-up batch is the largest prefill the router will ever send: max-batch-prefill-tokens
//     tokens, sent with prefill_logprobs (router/client/src/client.rs warmup, v2.0.4), so the
//     logits of every prefill token stay alive next to the activations, which the caching
//     allocator keeps reserved when free memory is read;
//   - free = max(0, free_now - (1 - fraction) x total)   (utils/import_utils.py get_cuda_free_memory)
//   - up to 2.4: num_blocks = int(free(CUDA_MEMORY_FRACTION) x wiggle // block_bytes) + warm-up blocks
//     (no wiggle room up to 1.4.0: int(free // block_bytes), v0.9.4 to v1.4.0; 0.95 written in the
//     code from 1.4.1 to 2.2; TGI_WIGGLE_ROOM 0.95 in 2.3 and 0.90 in 2.4, models/globals.py): the
//     wiggle room is a share of the free memory after the warm-up;
//   - from 3.0: num_blocks = int(free(CUDA_MEMORY_FRACTION x TGI_WIGGLE_ROOM) // block_bytes) + warm-up
//     blocks: the wiggle room is a share of the total (TGI_WIGGLE_ROOM 0.95 in 3.0, 0.93 in
//     3.1-3.2, 0.90 from 3.3);
//   - the warm-up batch's blocks are allocated before free memory is read and added back whole: in
//     3.x they cancel, in 2.x they escape the wiggle room (blocks = 0.95 x (free - warm-up) + warm-up);
//   - the warm-up activations are TGI's layer live set, 7 x hidden + 4 x intermediate a token
//     (tgiWarmupActivationBytes), next to the logits of every prefill token (gathered whole on every
//     shard when tp > 1) and, up to 2.3, their log-softmax (in place from 2.4; tgiWarmupLogitsBytes);
//   - max batch total tokens = num_blocks x BLOCK_SIZE; BLOCK_SIZE 16 (paged attention), 256
//     (flashdecoding), 1 (flashinfer) (models/globals.py);
//   - CUDA graphs are captured after the blocks are allocated;
//   - 1.x launcher defaults (launcher/src/main.rs v1.0.0 to v1.4.5, clap default_value):
//     max-input-length 1024, max-total-tokens 2048, max-batch-prefill-tokens 4096; the 1.0-1.1
//     warm-up requests ask 2 new tokens (warmupNewTokens);
//   - the attention backend (the KV block size) is the launcher's resolve_attention from 2.3
//     (defaultAttention);
//   - 2.x launcher defaults (launcher/src/main.rs, v2.0.4 and v2.2.0): max_position_embeddings =
//     min(the model's, 4096); max-input-tokens = that - 1; max-total-tokens = that;
//     max-batch-prefill-tokens = max-input-tokens + 50 ("some edge ... for block_size alignment").
//     From 3.0 the prefill default is computed from the card and the model (compute_optimal,
//     vram_maximum; tgi3PrefillDefault).

#include "common.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

namespace headroom::engines {

namespace {

const std::vector<SettingSpec>& tgiSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("cuda-memory-fraction", SettingType::Number, "1",
                 "fraction of the card TGI may use (launcher --cuda-memory-fraction, CUDA_MEMORY_FRACTION)", 0, 1, {},
                 {"CUDA_MEMORY_FRACTION"}),
        makeSpec("TGI_WIGGLE_ROOM", SettingType::Number, "",
                 "share kept for the wiggle room (env, models/globals.py); default: the version's (profile)", 0, 1),
        makeSpec("max-batch-prefill-tokens", SettingType::Integer, "",
                 "tokens of the warm-up prefill; default: --ubatch, else 2.x max-input-tokens + 50, 3.x the launcher's "
                 "compute_optimal from the card and the model, capped by vram_maximum (launcher/src/main.rs)", 1, kMaxSequences,
                 {}, {"MAX_BATCH_PREFILL_TOKENS"}),
        makeSpec("max-total-tokens", SettingType::Integer, "",
                 "input + output tokens per request; default: --context, else (2.x) min(model positions, 4096)", 1,
                 kMaxTokens, {}, {"MAX_TOTAL_TOKENS"}),
        makeSpec("max-input-tokens", SettingType::Integer, "",
                 "prompt tokens per request; 2.x default min(model positions, 4096) - 1, and the warm-up prefill "
                 "(max-batch-prefill-tokens) defaults to it + 50 (launcher/src/main.rs)",
                 1, kMaxTokens, {},
                 {"max-input-length", "MAX_INPUT_TOKENS", "MAX_INPUT_LENGTH"}),
        makeSpec("num-shard", SettingType::Integer, "", "tensor-parallel shards; default: --tp", 1, 1024, {},
                 {"NUM_SHARD"}),
        makeSpec("ATTENTION", SettingType::Choice, "",
                 "attention backend: the KV block size (models/globals.py); default: the launcher's for the version, "
                 "the model and the card (launcher/src/main.rs resolve_attention: paged up to 2.2, flashinfer from 2.3)",
                 0, 0, {"paged", "flashinfer", "flashdecoding"}),
    };
    return specs;
}

std::uint64_t blockSizeOf(const std::string& attention)
{
    if (attention == "flashdecoding")
        return 256;
    if (attention == "flashinfer")
        return 1;
    return 16;
}

/// TGI 2.x caps its default context at 4,096 tokens (launcher/src/main.rs v2.0.4
/// get_max_position_embeddings: "tgi will now set its default to 4096 instead").
constexpr std::uint64_t kTgi2DefaultContextTokens = 4096;

/// The 2.x launcher's edge of max-batch-prefill-tokens over max-input-tokens.
constexpr std::uint64_t kTgi2PrefillEdgeTokens = 50;

/// From 3.0 the wiggle room is a share of the total (flash_causal_lm.py warmup, v3.0.0).
bool wiggleOfTotal(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "3.0") >= 0;
}

/// A card of the 3.x launcher's compute table (launcher/src/main.rs, `impl From<&str> for Gpu` and
/// ComputeType::f16_flop): its name as the launcher matches it (nvidia-smi's gpu_name, spaces to
/// '-', lower case), its f16 tensor throughput in 10^12 FLOP/s and the release that added it.
struct TgiComputeCard {
    const char* smiName;
    std::uint64_t f16Tflops;
    const char* since;
};

/// The table as written in v3.0.0 and v3.1.0 (unchanged to v3.3.7). "nvidia-4090" and "nvidia-t4"
/// never match what nvidia-smi prints for those cards ("NVIDIA GeForce RTX 4090", "Tesla T4"), so
/// there the launcher falls back to 4,096 like any card it does not know.
constexpr TgiComputeCard kTgiComputeCards[] = {
    {"nvidia-4090", 82, "3.0"},           {"nvidia-t4", 65, "3.0"},
    {"nvidia-l4", 121, "3.0"},            {"nvidia-l40", 181, "3.0"},
    {"nvidia-l40s", 363, "3.0"},          {"nvidia-a10g", 125, "3.0"},
    {"nvidia-h100-80gb-hbm3", 900, "3.0"}, {"nvidia-a100-sxm4-80gb", 312, "3.0"},
    {"nvidia-a100", 312, "3.0"},          {"nvidia-a40", 149, "3.1"},
    {"nvidia-h100-nvl", 900, "3.1"},      {"nvidia-h100", 900, "3.1"},
    {"nvidia-a100-sxm4-40gb", 312, "3.1"}, {"nvidia-a100-80gb-pcie", 312, "3.1"},
    {"nvidia-h200", 989, "3.1"},
};

/// The 3.x launcher's default max-batch-prefill-tokens when it cannot compute one.
constexpr std::uint64_t kTgi3DefaultPrefillTokens = 4096;

/// The card's name as the launcher compares it (compute_type): nvidia-smi's gpu_name with spaces
/// as '-', lower case. The card profile's name, less a trailing " (...)" annotation, stands in for
/// nvidia-smi's.
std::string launcherCardName(const std::string& profileName)
{
    std::string name = profileName.substr(0, profileName.find(" ("));
    for (char& c : name)
        c = c == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
}

/// ComputeType::f16_flop: the table's throughput x num_shard; none for a card it does not know.
std::optional<double> launcherCardFlops(const PlanRequest& r, std::uint32_t shards)
{
    const std::string name = launcherCardName(r.card.name);
    for (const TgiComputeCard& c : kTgiComputeCards)
        if (name == c.smiName && compareVersions(appliedEngineVersion(r.engine), c.since) >= 0)
            return static_cast<double>(c.f16Tflops) * 1e12 * shards;
    return std::nullopt;
}

/// Config::flop of the 3.x launcher: per layer 2 x hidden x head_dim x (3 query heads + 2 KV heads)
/// (q, attention, o and k, v) + 2 x 3 x hidden x intermediate; times the layers. Dense models only
/// here (the launcher's MoE key names are not mirrored): none for MoE, as for a VLM.
std::optional<double> launcherModelFlops(const Architecture& a)
{
    if (a.moe.enabled() || a.layers == 0)
        return std::nullopt;
    const double hd = static_cast<double>(a.headDim) * static_cast<double>(a.hiddenSize);
    const double attention = 2.0 * hd * (3.0 * a.attentionHeads + 2.0 * a.kvHeads);
    const double mlp = 2.0 * 3.0 * static_cast<double>(a.hiddenSize) * static_cast<double>(a.intermediateSize);
    return (attention + mlp) * a.layers;
}

/// vram_maximum of the 3.x launcher: (total MiB x num_shard x cuda-memory-fraction x TGI_WIGGLE_ROOM
/// (its own default 0.95), in f32) - Config::model_vram, over Config::token_vram. model_vram =
/// 2 B x (layers x ((heads + 2 x kv_heads) x head_dim + heads x head_dim x hidden + 3 x intermediate
/// x hidden) + 2 x hidden x vocab); token_vram = kv_heads x 2 x head_dim x 2 B x layers + (intermediate
/// + intermediate / 2) x 2 B x 3. Both are none for a checkpoint with a quantization_config (GPTQ/AWQ,
/// fp8 here), and then the launcher does not cap the prefill.
std::optional<std::uint64_t> launcherVramMaximum(const PlanRequest& r, const Architecture& a, const EngineSettings& s,
                                                 std::uint32_t shards)
{
    if (r.format.kind == FormatKind::GptqAwq || r.format.kind == FormatKind::Fp8 || a.moe.enabled())
        return std::nullopt;
    const std::uint64_t mib = std::uint64_t{1} << 20;
    const std::uint64_t total = r.card.totalBytes.value / mib * mib * shards;
    const float fraction = static_cast<float>(s.number("cuda-memory-fraction").value_or(1.0));
    const float wiggle = s.given("TGI_WIGGLE_ROOM") ? static_cast<float>(*s.number("TGI_WIGGLE_ROOM")) : 0.95f;
    const auto available = static_cast<std::uint64_t>(static_cast<float>(total) * fraction * wiggle);
    const std::uint64_t d = a.headDim;
    const std::uint64_t layer = (std::uint64_t{a.attentionHeads} + 2 * a.kvHeads) * d
        + std::uint64_t{a.attentionHeads} * d * a.hiddenSize + 3 * a.intermediateSize * a.hiddenSize;
    const std::uint64_t model = 2 * (layer * a.layers + 2 * a.hiddenSize * a.vocabSize);
    const std::uint64_t perToken = std::uint64_t{a.kvHeads} * 2 * d * 2 * a.layers
        + (a.intermediateSize + a.intermediateSize / 2) * 2 * 3;
    if (available < model || perToken == 0)
        return std::nullopt; // "Not enough VRAM to run the model": no cap
    return (available - model) / perToken;
}

/// The 3.x launcher's computed max-batch-prefill-tokens (launcher/src/main.rs v3.0.0, main:
/// `let max_batch_prefill_tokens`): compute_optimal = card f16 FLOP/s over the model's FLOP per
/// token (kept only above 100), else 4,096; capped at the model's positions; then at vram_maximum.
std::uint64_t tgi3PrefillDefault(const PlanRequest& r, const Architecture& a, const EngineSettings& s, std::uint32_t shards)
{
    std::uint64_t value = kTgi3DefaultPrefillTokens;
    if (const auto card = launcherCardFlops(r, shards))
        if (const auto model = launcherModelFlops(a); model && *model > 0) {
            const auto optimal = static_cast<std::uint64_t>(*card / *model);
            if (optimal > 100)
                value = optimal;
        }
    if (a.contextLength > 0)
        value = std::min<std::uint64_t>(value, a.contextLength);
    if (const auto vram = launcherVramMaximum(r, a, s, shards))
        value = std::min(value, *vram);
    return std::max<std::uint64_t>(value, 1);
}

/// The warm-up prefill's activation peak as TGI's flash models hold it, in bytes: @p tokens x
/// (7 x hidden + 4 x intermediate/tp) x @p elementBytes. Read from the layer code
/// (server/text_generation_server/models/custom_modeling/flash_mistral_modeling.py, v2.0.4 and
/// v3.3.7, MistralLayer.forward and MistralMLP.forward; flash_llama_modeling.py has the same shape):
/// at the MLP's product the caller's hidden_states and residual, the layer's normed_hidden_states and
/// res (input_layernorm: dropout_add_ln_fwd returns new tensors on CUDA, layers/layernorm.py),
/// attn_output, normed_attn_res_output and attn_res are alive (7 x hidden), next to gate_up_states
/// (2 x intermediate), act(gate) and its product with up (1 x intermediate each). An MoE prices the
/// top-k experts' intermediate, as activationPeakBytes (overheads.h) does.
Bytes tgiWarmupActivationBytes(const Architecture& a, std::uint64_t tokens, std::uint32_t tp, std::uint64_t elementBytes)
{
    std::uint64_t ffn = a.intermediateSize;
    if (a.moe.enabled())
        ffn = std::max<std::uint64_t>(ffn, (std::uint64_t{a.moe.expertsPerToken} + a.moe.sharedExperts) * a.moe.expertFfnSize);
    const std::uint64_t perToken = 7 * std::uint64_t{a.hiddenSize} + 4 * (ffn / std::max<std::uint32_t>(tp, 1));
    return Bytes{checkedMul(checkedMul(tokens, perToken, "TGI warm-up activations"), elementBytes, "TGI warm-up activations")};
}

/// From 2.4.0 the prefill log-softmax overwrites the logits (flash_causal_lm.py generate_token,
/// `torch.log_softmax(out, -1, out=out)`, v2.4.0 to v3.3.7); up to 2.3.1 it is a second tensor
/// (`prefill_logprobs_tensor = torch.log_softmax(out, -1)`, v2.0.4 to v2.3.1).
bool logSoftmaxInPlace(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "2.4") >= 0;
}

/// The warm-up batch's prefill_logprobs logits as TGI holds them, in bytes: @p tokens x (vocab
/// [the logits] + vocab / tp [the shard's own output, when tp > 1] + vocab [the log-softmax, up to
/// 2.3]) x 2 B (the model dtype). With tp > 1 the lm_head output is gathered whole on every shard:
/// TensorParallelHead.forward computes the shard's [vocab / tp, tokens] into gather_input and
/// all_gather_into_tensor's it into world_out [vocab, tokens] (layers/tensor_parallel.py, v2.0.4 to
/// v3.3.7), so both are alive at the gather.
Bytes tgiWarmupLogitsBytes(std::uint64_t vocab, std::uint64_t tokens, std::uint32_t tp, bool logSoftmaxInPlace)
{
    const std::uint64_t shards = std::max<std::uint32_t>(tp, 1);
    std::uint64_t columns = vocab;
    if (shards > 1)
        columns += (vocab + shards - 1) / shards;
    if (!logSoftmaxInPlace)
        columns += vocab;
    return Bytes{checkedMul(checkedMul(tokens, columns, "TGI warm-up logits"), 2, "TGI warm-up logits")};
}

/// TGI 1.x: the launcher's fixed defaults and the 1.x warm-up (before 2.0.0).
bool isTgi1(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "2.0") < 0;
}

/// The 1.x launcher's clap defaults (launcher/src/main.rs v1.0.0 to v1.4.5): max_input_length 1024,
/// max_total_tokens 2048, max_batch_prefill_tokens 4096, whatever the model's positions.
constexpr std::uint64_t kTgi1DefaultInputTokens = 1024;
constexpr std::uint64_t kTgi1DefaultTotalTokens = 2048;

/// The max_new_tokens of a warm-up request (router/client/src/client.rs warmup): 2 up to 1.1.1
/// (v1.0.0, v1.1.0: `max_new_tokens: 2`), max-total-tokens - truncate from 1.2.0 (v1.2.0 to v3.3.7).
std::uint64_t warmupNewTokens(const EnginePolicy& policy, std::uint64_t total, std::uint64_t truncate)
{
    if (compareVersions(appliedEngineVersion(policy), "1.2") < 0)
        return 2;
    return total > truncate ? total - truncate : 1;
}

/// The KV blocks of the warm-up batch (TGI 1.x and 2.x), in blocks. The router's warmup builds
/// requests while n < max-batch-prefill-tokens: truncate = min(max-input-tokens, prefill - n),
/// n += max-input-tokens (router/client/src/client.rs warmup, v1.0.0 to v2.4.1), and the batch
/// reserves ceil((truncate + max_new_tokens - 1) / BLOCK_SIZE) blocks a request
/// (flash_causal_lm.py FlashCausalLMBatch.from_pb: total_tokens = input_length + max_new_tokens - 1
/// [+ speculative_length, 0 without --speculate], v1.0.0 to v2.4.1).
std::uint64_t warmupBatchBlocks(const EnginePolicy& policy, std::uint64_t prefill, std::uint64_t input,
                                std::uint64_t total, std::uint64_t block)
{
    block = std::max<std::uint64_t>(block, 1);
    input = std::max<std::uint64_t>(input, 1);
    std::uint64_t blocks = 0;
    for (std::uint64_t n = 0; n < prefill; n += input) {
        const std::uint64_t truncate = std::min(input, prefill - n);
        const std::uint64_t tokens = truncate + warmupNewTokens(policy, total, truncate) - 1;
        blocks = checkedAdd(blocks, (tokens + block - 1) / block, "TGI warm-up blocks");
    }
    return blocks;
}

/// The KV bytes of the warm-up batch's blocks (warmupBatchBlocks x BLOCK_SIZE x KV bytes a token).
Bytes warmupBatchKvBytes(const EngineInputs& in)
{
    const std::uint64_t block = std::max<std::uint64_t>(in.setup.paging.blockTokens, 1);
    const std::uint64_t total = std::max<std::uint64_t>(in.setup.contextTokens, 1);
    const std::uint64_t input = std::max<std::uint64_t>(in.settings.integer("max-input-tokens").value_or(total - 1), 1);
    const std::uint64_t blocks =
        warmupBatchBlocks(in.request.engine, std::max<std::uint64_t>(in.setup.ubatchTokens, 1), input, total, block);
    return in.kvBytesPerToken * checkedMul(blocks, block, "TGI warm-up blocks");
}

/// Cards of compute capability below 8.0 among the card profiles (NVIDIA's CUDA GPUs table: Tesla
/// T4 7.5, V100 7.0); every other NVIDIA profile is Ampere or newer (8.0 and up).
bool computeCapabilityBelow8(const Card& card)
{
    return card.id == "t4" || card.id.rfind("v100", 0) == 0;
}

/// The attention backend TGI's launcher picks when ATTENTION is not set (launcher/src/main.rs
/// resolve_attention, as the server reads it in models/globals.py):
///   - up to 2.2: paged attention (no resolve_attention; BLOCK_SIZE 16, models/globals.py v2.2.0);
///   - 2.3: flashinfer, but flashdecoding for gemma2, falcon and deepseek_v2 and for a head dim other
///     than 64, 128 or 256 (v2.3.0, v2.3.1);
///   - from 2.4: flashinfer, but for falcon and deepseek_v2 and an unsupported head dim the fallback:
///     paged below compute capability 8.0, else flashdecoding (v2.4.0 to v3.3.7).
std::string defaultAttention(const PlanRequest& r, const Architecture& a)
{
    const std::string& v = appliedEngineVersion(r.engine);
    if (compareVersions(v, "2.3") < 0)
        return "paged";
    const bool headDimOk = a.headDim == 64 || a.headDim == 128 || a.headDim == 256;
    const bool forced = a.family == "falcon" || a.family == "deepseek2";
    if (compareVersions(v, "2.4") < 0)
        return headDimOk && !forced && a.family != "gemma2" ? "flashinfer" : "flashdecoding";
    if (headDimOk && !forced)
        return "flashinfer";
    return computeCapabilityBelow8(r.card) ? "paged" : "flashdecoding";
}

class TgiEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::Tgi; }
    const std::vector<SettingSpec>& settings() const override { return tgiSettings(); }
    /// TGI speculates with Medusa heads or n-grams (--speculate), not with a draft model.
    DraftSupport draftSupport() const override
    {
        return {{}, "has no speculative decoding with a draft model (--speculate takes Medusa heads or n-grams)", false};
    }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        // 1.x: the launcher's fixed defaults; 2.x: its own defaults from the model's positions,
        // capped at 4,096; 3.x: the positions.
        const bool launcher1 = isTgi1(r.engine);
        const bool launcher2 = !launcher1 && !wiggleOfTotal(r.engine);
        std::uint64_t positions = arch.contextLength;
        if (launcher1)
            positions = kTgi1DefaultTotalTokens;
        else if (launcher2)
            positions = std::min<std::uint64_t>(arch.contextLength, kTgi2DefaultContextTokens);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "max-total-tokens", name, positions);
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("max-total-tokens");
        // max-input-tokens: the launcher's positions - 1, kept below max-total-tokens (TGI refuses
        // max-input-tokens >= max-total-tokens; a plan at a smaller --context asks for a launch that starts).
        if (!s.given("max-input-tokens") && launcher2 && setup.contextTokens > 1)
            s.setDerived(derivedInteger("max-input-tokens", std::min(positions, setup.contextTokens) - 1));
        if (!s.given("max-input-tokens") && launcher1 && setup.contextTokens > 1)
            s.setDerived(derivedInteger("max-input-tokens", std::min(kTgi1DefaultInputTokens, setup.contextTokens - 1)));
        if (const auto input = s.integer("max-input-tokens"); input && *input >= setup.contextTokens && s.given("max-input-tokens"))
            return tl::unexpected(name + ": max-input-tokens " + std::to_string(*input) + " must be below max-total-tokens "
                                  + std::to_string(setup.contextTokens) + " (launcher/src/main.rs refuses it)");
        // 1.x: the profile's 4,096 (the launcher's clap default max_batch_prefill_tokens).
        std::optional<std::uint64_t> prefillDefault = r.engine.ubatchTokens;
        if (launcher1) {
        } else if (launcher2) {
            if (const auto input = s.integer("max-input-tokens"))
                prefillDefault = *input + kTgi2PrefillEdgeTokens;
        } else {
            const auto shards = static_cast<std::uint32_t>(s.integer("num-shard").value_or(std::max<std::uint32_t>(r.tensorParallel, 1)));
            prefillDefault = tgi3PrefillDefault(r, arch, s, std::max<std::uint32_t>(shards, 1));
        }
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "max-batch-prefill-tokens", name, prefillDefault);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto tp = reconcileParallel(r.tensorParallel, "--tp", s, "num-shard", name);
        if (!tp)
            return tl::unexpected(tp.error());
        setup.tensorParallel = *tp;
        if (!s.given("ATTENTION"))
            s.setDerived(derivedChoice("ATTENTION", defaultAttention(r, arch)));
        setup.paging.blockTokens = blockSizeOf(s.text("ATTENTION").value_or("paged"));
        if (!s.find("TGI_WIGGLE_ROOM"))
            s.setDerived(derivedNumber("TGI_WIGGLE_ROOM", r.engine.memoryFraction));
        return setup;
    }

    std::vector<EngineRefusal> compatibility(const PlanRequest& r, const EngineSetup& setup) const override
    {
        std::vector<EngineRefusal> out = Engine::compatibility(r, setup);
        if (r.format.kind == FormatKind::Ggml)
            out.push_back({FitLimit::EngineFormat,
                           "TGI loads safetensors checkpoints (fp16/bf16, fp8, GPTQ/AWQ, bitsandbytes), not GGML type "
                               + r.format.id + " (server/text_generation_server/models/__init__.py)"});
        if (!kvDtypeAccepted(setup.kvDtypeId, {"fp8", "fp8_e4m3", "fp8_e5m2"}))
            out.push_back({FitLimit::EngineKvDtype, "TGI has no " + setup.kvDtypeId + " KV cache (--kv-cache-dtype fp8_e4m3, fp8_e5m2)" + " (launcher/src/main.rs)"});
        return out;
    }

    /// TGI sizes its blocks from free - (1 - cuda-memory-fraction) x the card total
    /// (utils/import_utils.py get_cuda_free_memory), after the context, the weights and the warm-up:
    /// all of them are inside fraction x total. The CUDA graphs it captures after the blocks are
    /// allocated are held beyond it; they are counted when a log measured them (TGI prints no size).
    std::optional<FractionHolding> fractionHolding(const PlanRequest& r, const PlanResult&, const MeasuredHolding& m) const override
    {
        FractionHolding h{r.card.totalBytes, {}};
        if (m.cudaGraphBytes)
            h.held.push_back(item("cuda_graphs", *m.cudaGraphBytes, "captured after the blocks are allocated (measured)"));
        return h;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const PlanRequest& r = in.request;
        const EnginePolicy& e = r.engine;
        const Bytes total = r.card.totalBytes;
        const double memoryFraction = in.settings.number("cuda-memory-fraction").value_or(1.0);
        const double wiggle = in.settings.number("TGI_WIGGLE_ROOM").value_or(e.memoryFraction);
        const std::uint64_t prefill = in.setup.ubatchTokens;
        EngineBill b;
        const Bytes context = r.measured.runtimeBytes.value_or(e.runtimeBytes);
        b.overheads.push_back(item("cuda_context", context, r.measured.runtimeBytes ? "measured" : "CUDA context (engine profile)"));
        const Bytes act = r.measured.activationPeakBytes.value_or(
            tgiWarmupActivationBytes(in.arch, prefill, in.setup.tensorParallel, 2));
        b.overheads.push_back(item("warmup_activations", act,
                                   r.measured.activationPeakBytes
                                       ? std::string("measured")
                                       : "warm-up prefill of max-batch-prefill-tokens " + formatThousands(prefill)
                                           + " tokens x (7 x hidden + 4 x intermediate) x 2 B, the layer's live set,"
                                             " kept by the caching allocator"));
        if (!r.measured.activationPeakBytes) {
            const Bytes logits = tgiWarmupLogitsBytes(in.arch.vocabSize, prefill, in.setup.tensorParallel, logSoftmaxInPlace(e));
            b.overheads.push_back(item("warmup_logits", logits,
                                       "prefill_logprobs of " + formatThousands(prefill) + " tokens x vocab, 2 B each: the logits"
                                           + std::string(in.setup.tensorParallel > 1 ? " gathered whole next to the shard's own" : "")
                                           + (logSoftmaxInPlace(e) ? ", log-softmax in place (2.4 on)" : " and their log-softmax (to 2.3)")));
        }
        const Bytes spent = in.weightsBytes + totalBytes(b.overheads);
        const Bytes freeNow = saturatingSub(total, spent);
        Bytes kv;
        if (wiggleOfTotal(e)) {
            const Bytes kept = saturatingSub(total, fraction(total, memoryFraction * wiggle));
            kv = saturatingSub(freeNow, kept);
            b.reserved.push_back(item("wiggle_room", kept,
                                      "1 - cuda-memory-fraction x TGI_WIGGLE_ROOM " + percent(memoryFraction * wiggle)
                                          + " of the card total (TGI 3.x)"));
        } else {
            const Bytes keptTotal = saturatingSub(total, fraction(total, memoryFraction));
            const Bytes freeFraction = saturatingSub(freeNow, keptTotal);
            // The warm-up batch's own blocks are in use when free memory is read and are added back
            // whole, outside the wiggle room: blocks = int(free x wiggle // block) + warm-up blocks.
            const Bytes warmupKv = std::min(warmupBatchKvBytes(in), freeFraction);
            kv = fraction(saturatingSub(freeFraction, warmupKv), wiggle) + warmupKv;
            b.reserved.push_back(item("wiggle_room", saturatingSub(freeNow, kv),
                                      "1 - " + percent(wiggle) + " of the memory free after the warm-up (TGI 2.x)"
                                          + (memoryFraction < 1 ? ", and 1 - cuda-memory-fraction of the total" : "")));
        }
        // When the weights and buffers do not fit, usable is the card (the verdict names what overflows).
        b.usableBytes = std::min(spent + kv, total);
        finishBudget(in, b);
        const std::uint64_t blockTokens = std::max<std::uint64_t>(in.setup.paging.blockTokens, 1);
        const Bytes blockBytes = in.kvBytesPerToken * blockTokens;
        const std::uint64_t blocks = blockBytes.value > 0 ? b.kvBudgetBytes.value / blockBytes.value : 0;
        b.kvBlocks = blocks;
        b.kvBudgetBytes = blockBytes * blocks;
        const std::uint64_t tokens = blocks * blockTokens;
        b.figures.push_back({"kv_cache_blocks", static_cast<double>(blocks), "blocks",
                             "KV-cache blocks: " + std::to_string(blocks) + ", size: " + std::to_string(blockTokens) + " (server/text_generation_server/models/flash_causal_lm.py)"});
        b.figures.push_back({"max_batch_total_tokens", static_cast<double>(tokens), "tokens",
                             "Setting max batch total tokens to " + std::to_string(tokens), "router/src/main.rs, backends/v3"});
        return b;
    }
};

} // namespace

const Engine& tgiEngine()
{
    static const TgiEngine engine;
    return engine;
}

} // namespace headroom::engines
