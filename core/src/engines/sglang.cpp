// SGLang: mem_fraction_static of the card (python/sglang/srt/server_args.py
// _handle_gpu_memory_settings; the pool in python/sglang/srt/model_executor/model_runner.py
// profile_max_num_token). The rule arithmetic is enginerules.h sglangMemFractionStatic.

#include "common.h"

#include "headroom/core/enginerules.h"

#include <algorithm>

namespace headroom::engines {

namespace {

// SGLang's argparse takes the dashed spelling; the Python API (ServerArgs) the underscored one.
SettingSpec spec(std::string key, SettingType type, std::string defaultValue, std::string help, double lo = 0, double hi = 0)
{
    std::string underscored = key;
    for (char& c : underscored)
        if (c == '-')
            c = '_';
    return makeSpec(std::move(key), type, std::move(defaultValue), std::move(help), lo, hi, {}, {underscored});
}

const std::vector<SettingSpec>& sglangSettings()
{
    static const std::vector<SettingSpec> specs = {
        spec("mem-fraction-static", SettingType::Number, "",
             "fraction of the card for weights + KV pool; default: SGLang's rule by card size", 0, 1),
        spec("max-running-requests", SettingType::Integer, "", "most requests running at once: caps max_users", 1, kMaxSequences),
        spec("chunked-prefill-size", SettingType::Integer, "", "prefill chunk; default: --ubatch, else the profile's", 1,
             kMaxSequences),
        spec("cuda-graph-max-bs", SettingType::Integer, "", "largest batch captured in CUDA graphs", 1, kMaxSequences),
        spec("page-size", SettingType::Integer, "", "tokens per KV page; default: the profile's (1)", 1, 1024),
        spec("max-total-tokens", SettingType::Integer, "", "caps the KV pool at this many tokens", 1, kMaxTokens),
        spec("context-length", SettingType::Integer, "", "context per request; default: --context", 1, kMaxTokens),
    };
    return specs;
}

class SgLangEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::SgLang; }
    const std::vector<SettingSpec>& settings() const override { return sglangSettings(); }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "context-length", name, std::uint64_t{arch.contextLength});
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("context-length");
        if (s.given("context-length"))
            setup.askedContextTokens = setup.contextTokens;
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "chunked-prefill-size", name, r.engine.ubatchTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto page = reconcileCount(std::nullopt, "", s, "page-size", name, std::max<std::uint64_t>(r.engine.blockTokens, 1));
        if (!page)
            return tl::unexpected(page.error());
        setup.paging.blockTokens = **page;
        if (s.given("max-running-requests")) {
            setup.maxSequences = s.integer("max-running-requests");
            setup.maxSequencesSetting = "--max-running-requests";
        }
        if (!s.find("mem-fraction-static")) {
            const double mfs = r.engine.memoryFraction > 0
                ? r.engine.memoryFraction
                : sglangMemFractionStatic(r.card.totalBytes, setup.tensorParallel, setup.pipelineParallel);
            s.setDerived(derivedNumber("mem-fraction-static", mfs));
        }
        return setup;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const Bytes total = in.request.card.totalBytes;
        const double mfs = in.settings.number("mem-fraction-static").value_or(0);
        EngineBill b;
        b.usableBytes = fraction(total, mfs);
        b.reserved.push_back(item("mem_fraction_static_headroom", total - b.usableBytes,
                                  "mem_fraction_static " + std::to_string(mfs).substr(0, 5)));
        addRuntimeItems(in, false, b.overheads);
        finishBudget(in, b);
        if (const auto cap = in.settings.integer("max-total-tokens")) {
            const Bytes capped = in.kvBytesPerToken * *cap;
            if (capped < b.kvBudgetBytes) {
                b.kvBudgetBytes = capped;
                b.notes.push_back("KV pool capped by max-total-tokens=" + formatThousands(*cap));
            }
        }
        return b;
    }
};

} // namespace

const Engine& sglangEngine()
{
    static const SgLangEngine engine;
    return engine;
}

} // namespace headroom::engines
