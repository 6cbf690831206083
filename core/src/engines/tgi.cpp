// Text Generation Inference: the KV blocks of free memory x the wiggle room after the warm-up
// prefill (server/text_generation_server/models/flash_causal_lm.py warmup; launcher/src/main.rs
// for the settings). The version rules (2.x: of free memory after warm-up; 3.x: of the total)
// belong to this unit.

#include "common.h"

namespace headroom::engines {

namespace {

const std::vector<SettingSpec>& tgiSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("cuda-memory-fraction", SettingType::Number, "1",
                 "fraction of the card TGI may use (launcher --cuda-memory-fraction, CUDA_MEMORY_FRACTION)", 0, 1),
        makeSpec("max-batch-prefill-tokens", SettingType::Integer, "",
                 "tokens of the warm-up prefill; default: --ubatch, else the profile's", 1, kMaxSequences),
        makeSpec("max-total-tokens", SettingType::Integer, "", "input + output tokens per request; default: --context", 1,
                 kMaxTokens),
        makeSpec("max-input-tokens", SettingType::Integer, "", "prompt tokens per request", 1, kMaxTokens),
    };
    return specs;
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
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "max-total-tokens", name, std::uint64_t{arch.contextLength});
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("max-total-tokens");
        if (s.given("max-total-tokens"))
            setup.askedContextTokens = setup.contextTokens;
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "max-batch-prefill-tokens", name, r.engine.ubatchTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        return setup;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const EnginePolicy& e = in.request.engine;
        const double f = e.memoryFraction * in.settings.number("cuda-memory-fraction").value_or(1.0);
        const Bytes total = in.request.card.totalBytes;
        EngineBill b;
        b.usableBytes = fraction(total, f);
        b.reserved.push_back(item("wiggle_room", total - b.usableBytes, "1 - " + percent(f) + " of the card total"));
        addRuntimeItems(in, true, b.overheads);
        finishBudget(in, b);
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
