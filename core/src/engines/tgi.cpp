// Text Generation Inference: the KV blocks are sized after the warm-up, from the memory free
// then (server/text_generation_server/models/flash_causal_lm.py FlashCausalLM.warmup):
//   - the warm-up batch is the largest prefill the router will ever send: max-batch-prefill-tokens
//     tokens, sent with prefill_logprobs (router/client/src/client.rs warmup, v2.0.4), so the
//     logits of every prefill token stay alive next to the activations, which the caching
//     allocator keeps reserved when free memory is read;
//   - free = max(0, free_now - (1 - fraction) x total)   (utils/import_utils.py get_cuda_free_memory)
//   - up to 2.4: num_blocks = int(free(CUDA_MEMORY_FRACTION) x wiggle // block_bytes) + warm-up blocks
//     (0.95 written in the code up to 2.2; TGI_WIGGLE_ROOM 0.95 in 2.3 and 0.90 in 2.4,
//     models/globals.py): the wiggle room is a share of the free memory after the warm-up;
//   - from 3.0: num_blocks = int(free(CUDA_MEMORY_FRACTION x TGI_WIGGLE_ROOM) // block_bytes) + warm-up
//     blocks: the wiggle room is a share of the total (TGI_WIGGLE_ROOM 0.95 in 3.0, 0.93 in
//     3.1-3.2, 0.90 from 3.3);
//   - the warm-up blocks are allocated before free memory is read and added back, so they cancel;
//   - max batch total tokens = num_blocks x BLOCK_SIZE; BLOCK_SIZE 16 (paged attention), 256
//     (flashdecoding), 1 (flashinfer) (models/globals.py);
//   - CUDA graphs are captured after the blocks are allocated;
//   - 2.x launcher defaults (launcher/src/main.rs, v2.0.4 and v2.2.0): max_position_embeddings =
//     min(the model's, 4096); max-input-tokens = that - 1; max-total-tokens = that;
//     max-batch-prefill-tokens = max-input-tokens + 50 ("some edge ... for block_size alignment").
//     From 3.0 the prefill default is computed from the card (compute_optimal, vram_maximum): the
//     version's profile default stands in for it.

#include "common.h"

#include <algorithm>
#include <cmath>

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
                 "tokens of the warm-up prefill; default: --ubatch, else the version's (profile)", 1, kMaxSequences,
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
        makeSpec("ATTENTION", SettingType::Choice, "paged", "attention backend: the KV block size (models/globals.py)",
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

class TgiEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::Tgi; }
    const std::vector<SettingSpec>& settings() const override { return tgiSettings(); }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        // 2.x: the launcher's own defaults from the model's positions, capped at 4,096.
        const bool launcher2 = !wiggleOfTotal(r.engine);
        const std::uint64_t positions =
            launcher2 ? std::min<std::uint64_t>(arch.contextLength, kTgi2DefaultContextTokens) : std::uint64_t{arch.contextLength};
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "max-total-tokens", name, positions);
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("max-total-tokens");
        // max-input-tokens: the launcher's positions - 1, kept below max-total-tokens (TGI refuses
        // max-input-tokens >= max-total-tokens; a plan at a smaller --context asks for a launch that starts).
        if (!s.given("max-input-tokens") && launcher2 && setup.contextTokens > 1)
            s.setDerived(derivedInteger("max-input-tokens", std::min(positions, setup.contextTokens) - 1));
        if (const auto input = s.integer("max-input-tokens"); input && *input >= setup.contextTokens && s.given("max-input-tokens"))
            return tl::unexpected(name + ": max-input-tokens " + std::to_string(*input) + " must be below max-total-tokens "
                                  + std::to_string(setup.contextTokens) + " (launcher/src/main.rs refuses it)");
        std::optional<std::uint64_t> prefillDefault = r.engine.ubatchTokens;
        if (launcher2)
            if (const auto input = s.integer("max-input-tokens"))
                prefillDefault = *input + kTgi2PrefillEdgeTokens;
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "max-batch-prefill-tokens", name, prefillDefault);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto tp = reconcileParallel(r.tensorParallel, "--tp", s, "num-shard", name);
        if (!tp)
            return tl::unexpected(tp.error());
        setup.tensorParallel = *tp;
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
        if (setup.kvDtypeId == "q8_0" || setup.kvDtypeId == "q4_0")
            out.push_back({FitLimit::EngineKvDtype, "TGI has no " + setup.kvDtypeId + " KV cache (--kv-cache-dtype fp8_e4m3, fp8_e5m2)" + " (launcher/src/main.rs)"});
        return out;
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
            activationPeakBytes(in.arch, prefill, prefill, in.setup.flashAttention));
        b.overheads.push_back(item("warmup_activations", act,
                                   r.measured.activationPeakBytes
                                       ? std::string("measured")
                                       : "warm-up prefill of max-batch-prefill-tokens " + formatThousands(prefill)
                                           + " tokens, kept by the caching allocator"));
        if (!r.measured.activationPeakBytes) {
            // prefill_logprobs: logits [tokens, vocab] and their log-softmax, both in the model dtype.
            const std::uint64_t vocab = (in.arch.vocabSize + in.setup.tensorParallel - 1) / in.setup.tensorParallel;
            const Bytes logits{checkedMul(checkedMul(prefill, vocab, "TGI warm-up logits"), 4, "TGI warm-up logits")};
            b.overheads.push_back(item("warmup_logits", logits,
                                       "prefill_logprobs of " + formatThousands(prefill)
                                           + " tokens x vocab: logits and log-softmax, 2 B each"));
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
            kv = fraction(freeFraction, wiggle);
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
