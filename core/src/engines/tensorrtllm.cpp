// TensorRT-LLM (PyTorch backend): the KV cache takes free_gpu_memory_fraction of the memory
// free after the profiling forward pass (tensorrt_llm/_torch/pyexecutor/_util.py
// KvCacheCreator; settings: tensorrt_llm/llmapi/llm_args.py KvCacheConfig and BaseLlmArgs).

#include "common.h"

#include <algorithm>

namespace headroom::engines {

namespace {

const std::vector<SettingSpec>& trtSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("free_gpu_memory_fraction", SettingType::Number, "",
                 "fraction of the free memory the KV cache takes; default: the profile's (0.9)", 0, 1),
        makeSpec("max_batch_size", SettingType::Integer, "", "most requests in one batch: caps max_users", 1, kMaxSequences),
        makeSpec("max_seq_len", SettingType::Integer, "", "context per request; default: --context", 1, kMaxTokens),
        makeSpec("max_num_tokens", SettingType::Integer, "",
                 "tokens of one forward pass; default: --ubatch, else the profile's", 1, kMaxSequences),
        makeSpec("max_tokens", SettingType::Integer, "", "caps the KV cache at this many tokens", 1, kMaxTokens),
        makeSpec("tokens_per_block", SettingType::Integer, "", "tokens per KV block; default: the profile's (32)", 1, 1024),
    };
    return specs;
}

class TensorRtLlmEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::TensorRtLlm; }
    const std::vector<SettingSpec>& settings() const override { return trtSettings(); }

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
        if (s.given("max_seq_len"))
            setup.askedContextTokens = setup.contextTokens;
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "max_num_tokens", name, r.engine.ubatchTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto block = reconcileCount(std::nullopt, "", s, "tokens_per_block", name, std::max<std::uint64_t>(r.engine.blockTokens, 1));
        if (!block)
            return tl::unexpected(block.error());
        setup.paging.blockTokens = **block;
        if (s.given("max_batch_size")) {
            setup.maxSequences = s.integer("max_batch_size");
            setup.maxSequencesSetting = "max_batch_size";
        }
        if (!s.find("free_gpu_memory_fraction"))
            s.setDerived(derivedNumber("free_gpu_memory_fraction", r.engine.memoryFraction));
        return setup;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const Bytes total = in.request.card.totalBytes;
        const double f = in.settings.number("free_gpu_memory_fraction").value_or(in.request.engine.memoryFraction);
        EngineBill b;
        addRuntimeItems(in, true, b.overheads);
        const Bytes peak = in.weightsBytes + totalBytes(b.overheads);
        const Bytes freeAfter = saturatingSub(total, peak);
        const Bytes kept = saturatingSub(freeAfter, fraction(freeAfter, f));
        b.reserved.push_back(item("free_fraction_headroom", kept,
                                  "1 - free_gpu_memory_fraction " + percent(f) + " of free memory"));
        b.usableBytes = saturatingSub(total, kept);
        finishBudget(in, b);
        if (const auto cap = in.settings.integer("max_tokens")) {
            const Bytes capped = in.kvBytesPerToken * *cap;
            if (capped < b.kvBudgetBytes) {
                b.kvBudgetBytes = capped;
                b.notes.push_back("KV cache capped by max_tokens=" + formatThousands(*cap));
            }
        }
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
