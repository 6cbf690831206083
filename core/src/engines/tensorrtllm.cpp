// TensorRT-LLM: the paged KV cache takes free_gpu_memory_fraction of the memory free once the
// engine is loaded, and the engine's own buffers are sized by its build limits, not by the
// requests (docs/source/reference/memory.md @ 5a211b9: "TensorRT pre-computes the activation
// tensors memory requirement at build time ... close to max number of input tokens x some
// constant factor"; with packed tensors the max input tokens are max_num_tokens, or
// max_batch_size x max_input_len when max_num_tokens is not given):
//     free  = total - CUDA context - weights (+ a tied output layer stored a second time)
//             - activations(max_num_tokens) - logits(max_batch_size x beam x vocab x fp32)
//             - the C++ runtime decoder's buffers sized by the build limits (0.x, one term a
//               buffer and each from its version: engines/tensorrtllmdecoder.h)
//     kv    = free x free_gpu_memory_fraction                      (C++ runtime KVCacheManager
//             calculateMaxNumBlocks; tensorrt_llm/_torch/pyexecutor/_util.py for the PyTorch backend)
//     blocks = kv // (tokens_per_block x kv bytes per token); tokens = min(blocks x tokens_per_block, max_tokens)
// Up to 0.8 the runtime prints the tokens before rounding to blocks ("Using N tokens in paged KV
// cache"; TrtGptModelInflightBatching, issue #224), from 0.9 the block-rounded count
// ("[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (N)", kvCacheManager.cpp).
// The activation constant per token is the one-layer prefill peak of overheads.h
// activationPeakBytes (TensorRT reuses the buffers of one decoder block for the next).

#include "common.h"

#include "headroom/core/engines/tensorrtllmdecoder.h"
#include "headroom/core/parameters.h"

#include <algorithm>

namespace headroom::engines {

namespace {

const std::vector<SettingSpec>& trtSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("free_gpu_memory_fraction", SettingType::Number, "",
                 "share of the memory free after the engine loads that the KV cache takes (KvCacheConfig; "
                 "Triton kv_cache_free_gpu_mem_fraction); default: the version's (profile)",
                 0, 1, {}, {"kv_cache_free_gpu_mem_fraction"}),
        makeSpec("max_batch_size", SettingType::Integer, "",
                 "build limit: most requests in one batch (sizes the logits buffer; caps max_users)", 1, kMaxSequences),
        makeSpec("max_seq_len", SettingType::Integer, "", "build limit: context per request; default: --context", 1,
                 kMaxTokens),
        makeSpec("max_input_len", SettingType::Integer, "", "build limit: prompt tokens per request", 1, kMaxTokens),
        makeSpec("max_output_len", SettingType::Integer, "", "build limit (up to 0.10): generated tokens per request", 1,
                 kMaxTokens),
        makeSpec("max_num_tokens", SettingType::Integer, "",
                 "build limit: tokens of one forward pass (sizes the activations); default: the version's rule", 1,
                 kMaxSequences),
        makeSpec("max_beam_width", SettingType::Integer, "1", "build limit: beams per request", 1, 64),
        makeSpec("max_tokens", SettingType::Integer, "", "caps the KV cache at this many tokens (KvCacheConfig)", 1,
                 kMaxTokens, {}, {"max_tokens_in_paged_kv_cache"}),
        makeSpec("tokens_per_block", SettingType::Integer, "", "tokens per KV block; default: the version's (profile)", 1,
                 1024),
        makeSpec("tp_size", SettingType::Integer, "", "tensor parallel size; default: --tp", 1, 1024, {},
                 {"tensor_parallel_size", "world_size"}),
        makeSpec("pp_size", SettingType::Integer, "", "pipeline parallel size; default: --pp", 1, 1024, {},
                 {"pipeline_parallel_size"}),
    };
    return specs;
}

/// The output layer as its own [vocab, hidden] matrix.
TensorSpec lmHeadSpec(const Architecture& arch)
{
    TensorSpec t;
    t.name = "lm_head.weight";
    t.role = TensorRole::Output;
    t.rows = arch.vocabSize;
    t.cols = arch.hiddenSize;
    return t;
}

/// Up to 0.10 an engine built without max_num_tokens takes max_batch_size x max_input_len (the
/// packed-tensor rule of memory.md); from 0.11 trtllm-build defaults max_num_tokens to 8192
/// (tensorrt_llm/builder.py BuildConfig).
bool maxNumTokensFromBatch(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "0.11") < 0;
}

/// The C++ runtime's decoder (0.x) preallocates its output ids by the build limits; the PyTorch
/// backend (1.x) samples on the fly.
bool usesCppDecoder(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "1.0") < 0;
}

/// The build's max sequence length: max_seq_len, else (up to 0.10) max_input_len + max_output_len,
/// else the plan's context.
std::uint64_t maxSequenceLength(const EngineInputs& in)
{
    if (in.settings.given("max_seq_len"))
        return *in.settings.integer("max_seq_len");
    if (const auto input = in.settings.integer("max_input_len"))
        if (const auto output = in.settings.integer("max_output_len"))
            return *input + *output;
    return std::max<std::uint64_t>(in.setup.contextTokens, 1);
}

/// The logits dtype of a trtllm-build engine (fp32 unless --logits_dtype float16;
/// tensorrt_llm/models/modeling_utils.py PretrainedConfig logits_dtype 'float32').
constexpr std::uint64_t kLogitsBytes = 4;

/// Up to 0.8 the printed count is the tokens before block rounding.
bool printsUnroundedTokens(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "0.9") < 0;
}

class TensorRtLlmEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::TensorRtLlm; }
    const std::vector<SettingSpec>& settings() const override { return trtSettings(); }
    /// TensorRT-LLM's draft-target mode builds a second engine (speculative_decoding_mode
    /// draft_tokens_external), which is not modelled.
    DraftSupport draftSupport() const override
    {
        return {{}, "runs a draft model as a second engine (speculative_decoding_mode draft_tokens_external), which is not modelled", false};
    }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "max_seq_len", name, std::uint64_t{arch.contextLength});
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("max_seq_len");
        std::optional<std::uint64_t> fallback = r.engine.ubatchTokens;
        if (maxNumTokensFromBatch(r.engine) && s.find("max_batch_size") && s.find("max_input_len"))
            fallback = checkedMul(*s.integer("max_batch_size"), *s.integer("max_input_len"), "max_num_tokens");
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "max_num_tokens", name, fallback);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto block = reconcileCount(std::nullopt, "", s, "tokens_per_block", name, std::max<std::uint64_t>(r.engine.blockTokens, 1));
        if (!block)
            return tl::unexpected(block.error());
        setup.paging.blockTokens = **block;
        auto tp = reconcileParallel(r.tensorParallel, "--tp", s, "tp_size", name);
        if (!tp)
            return tl::unexpected(tp.error());
        setup.tensorParallel = *tp;
        auto pp = reconcileParallel(r.pipelineParallel, "--pp", s, "pp_size", name);
        if (!pp)
            return tl::unexpected(pp.error());
        setup.pipelineParallel = *pp;
        if (s.given("max_batch_size")) {
            setup.maxSequences = s.integer("max_batch_size");
            setup.maxSequencesSetting = "max_batch_size";
        }
        if (!s.find("free_gpu_memory_fraction"))
            s.setDerived(derivedNumber("free_gpu_memory_fraction", r.engine.memoryFraction));
        return setup;
    }

    std::vector<EngineRefusal> compatibility(const PlanRequest& r, const EngineSetup& setup) const override
    {
        std::vector<EngineRefusal> out = Engine::compatibility(r, setup);
        if (r.format.kind == FormatKind::Ggml)
            out.push_back({FitLimit::EngineFormat,
                           "TensorRT-LLM builds engines from Hugging Face checkpoints (fp16/bf16, fp8, int8/int4 "
                           "weight-only, SmoothQuant, GPTQ/AWQ), not GGML type " + r.format.id + " (tensorrt_llm/quantization/mode.py)"});
        if (!kvDtypeAccepted(setup.kvDtypeId, {"fp8", "fp8_e4m3"}))
            out.push_back({FitLimit::EngineKvDtype, "TensorRT-LLM has no " + setup.kvDtypeId + " KV cache modelled here (fp16/bf16, fp8; "
                                                        "its NVFP4 cache, NVIDIA/TensorRT-LLM PR 6244, is not)" + " (tensorrt_llm/quantization/mode.py)"});
        return out;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const PlanRequest& r = in.request;
        const EnginePolicy& e = r.engine;
        const Architecture& arch = in.arch;
        const Bytes total = r.card.totalBytes;
        const double f = in.settings.number("free_gpu_memory_fraction").value_or(e.memoryFraction);
        const std::uint32_t tp = std::max<std::uint32_t>(in.setup.tensorParallel, 1);
        const std::uint64_t numTokens = in.setup.ubatchTokens;
        const std::uint64_t batch = in.settings.integer("max_batch_size").value_or(1)
            * in.settings.integer("max_beam_width").value_or(1);
        EngineBill b;
        const Bytes context = r.measured.runtimeBytes.value_or(e.runtimeBytes);
        b.overheads.push_back(item("cuda_context", context, r.measured.runtimeBytes ? "measured" : "CUDA context (engine profile)"));
        if (arch.tiedEmbeddings) {
            // TensorRT keeps lm_head as its own weight even when the checkpoint ties it to the embedding.
            const Bytes lmHead{ceilDiv(tensorBytes(lmHeadSpec(arch), r.format).value,
                                       tp)};
            b.overheads.push_back(item("tied_output_copy", lmHead, "the tied output layer stored a second time"));
        }
        const Bytes act = r.measured.activationPeakBytes.value_or(activationPeakBytes(arch, numTokens, numTokens, true));
        b.overheads.push_back(item("engine_activations", act,
                                   r.measured.activationPeakBytes
                                       ? std::string("measured")
                                       : "TensorRT activations of the build's max_num_tokens " + formatThousands(numTokens)));
        if (!r.measured.activationPeakBytes && batch > 0) {
            const std::uint64_t vocab = ceilDiv(arch.vocabSize, tp);
            b.overheads.push_back(item("logits_buffer", Bytes{checkedMul(checkedMul(batch, vocab, "logits"), 4, "logits")},
                                       "max_batch_size x beam " + formatThousands(batch) + " x vocab x fp32"));
        }
        if (usesCppDecoder(e) && batch > 0) {
            tensorrtllm::DecoderShape shape;
            shape.maxBatchSize = in.settings.integer("max_batch_size").value_or(1);
            shape.maxBeamWidth = in.settings.integer("max_beam_width").value_or(1);
            shape.maxSequenceLength = maxSequenceLength(in);
            shape.vocabSize = arch.vocabSize;
            shape.tensorParallel = tp;
            shape.logitsBytes = kLogitsBytes;
            for (const tensorrtllm::DecoderBuffer& buffer : tensorrtllm::decoderBuffers(appliedEngineVersion(e), shape))
                b.overheads.push_back(item(buffer.name.c_str(), Bytes{buffer.bytes}, buffer.source));
        }
        const Bytes spent = in.weightsBytes + totalBytes(b.overheads);
        const Bytes freeAfter = saturatingSub(total, spent);
        const Bytes kv = fraction(freeAfter, f);
        b.reserved.push_back(item("free_fraction_headroom", saturatingSub(freeAfter, kv),
                                  "1 - free_gpu_memory_fraction " + percent(f) + " of the memory free after the engine loads"));
        // When the weights and buffers do not fit, usable is the card (the verdict names what overflows).
        b.usableBytes = std::min(spent + kv, total);
        finishBudget(in, b);

        const std::uint64_t tpb = std::max<std::uint64_t>(in.setup.paging.blockTokens, 1);
        const std::uint64_t perToken = std::max<std::uint64_t>(in.kvBytesPerToken.value, 1);
        std::uint64_t blocks = b.kvBudgetBytes.value / (perToken * tpb);
        std::uint64_t tokens = printsUnroundedTokens(e) ? b.kvBudgetBytes.value / perToken : blocks * tpb;
        if (const auto cap = in.settings.integer("max_tokens"); cap && *cap < tokens) {
            tokens = *cap;
            blocks = ceilDiv(*cap, tpb);
            b.notes.push_back("KV cache capped by max_tokens=" + formatThousands(*cap));
        }
        b.kvBlocks = blocks;
        b.kvBudgetBytes = Bytes{tokens * perToken};
        b.figures.push_back({"max_kv_tokens", static_cast<double>(tokens), "tokens",
                             printsUnroundedTokens(e) ? "Using " + std::to_string(tokens) + " tokens in paged KV cache."
                                                      : "Allocated for max tokens in paged KV cache (" + std::to_string(tokens) + ")" + " (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp)"});
        b.figures.push_back({"kv_blocks", static_cast<double>(blocks), "blocks",
                             "Number of blocks in KV cache primary pool: " + std::to_string(blocks) + " (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp)"});
        return b;
    }
};

} // namespace

const Engine& tensorRtLlmEngine()
{
    static const TensorRtLlmEngine engine;
    return engine;
}

} // namespace headroom::engines
