// Ollama: llama.cpp's cache and buffers, MinimumMemory (457 MiB) kept free per CUDA GPU plus
// OLLAMA_GPU_OVERHEAD, default num_ctx by VRAM tier (server/routes.go), settings from
// envconfig/config.go and api/types.go (Options.NumCtx).

#include "common.h"

#include "headroom/core/enginerules.h"

namespace headroom::engines {

namespace {

const std::vector<SettingSpec>& ollamaSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("num_ctx", SettingType::Integer, "", "context per sequence; default: --context, else Ollama's tier by VRAM",
                 1, kMaxTokens),
        makeSpec("OLLAMA_NUM_PARALLEL", SettingType::Integer, "", "sequences; default: --users, else 1", 1, kMaxSequences),
        makeSpec("OLLAMA_FLASH_ATTENTION", SettingType::Boolean, "", "flash attention; default: the profile's (off)"),
        makeSpec("OLLAMA_KV_CACHE_TYPE", SettingType::Choice, "", "KV cache type (needs flash attention); default: f16", 0, 0,
                 {"f16", "q8_0", "q4_0"}),
        makeSpec("OLLAMA_GPU_OVERHEAD", SettingType::Size, "0", "bytes reserved per GPU besides MinimumMemory"),
    };
    return specs;
}

std::string kvIdFromOllama(const std::string& v)
{
    return v == "f16" ? "" : v;
}

std::string ollamaFromKvId(const std::string& id)
{
    return id == "fp16" || id == "bf16" ? "f16" : id;
}

class OllamaEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::Ollama; }
    const std::vector<SettingSpec>& settings() const override { return ollamaSettings(); }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "num_ctx", name, ollamaDefaultContextTokens(r.card.totalBytes));
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = true; // Ollama always runs at num_ctx
        if (s.given("num_ctx"))
            setup.askedContextTokens = setup.contextTokens;
        auto np = reconcileCount(r.users, "--users", s, "OLLAMA_NUM_PARALLEL", name, std::uint64_t{1});
        if (!np)
            return tl::unexpected(np.error());
        setup.users = **np;
        setup.usersAsked = r.users.has_value() || s.given("OLLAMA_NUM_PARALLEL");
        if (s.given("OLLAMA_NUM_PARALLEL"))
            setup.askedUsers = setup.users;
        auto fa = reconcileFlash(r.flashAttention, r.engine.flashAttention, s, "OLLAMA_FLASH_ATTENTION", name);
        if (!fa)
            return tl::unexpected(fa.error());
        setup.flashAttention = *fa;
        setup.paging.cellPadding = std::max<std::uint64_t>(*fa ? r.engine.cellPaddingFlash : r.engine.cellPaddingNoFlash, 1);
        auto kv = reconcileKvDtype(r.kvDtype, s, "OLLAMA_KV_CACHE_TYPE", name, &kvIdFromOllama, &ollamaFromKvId);
        if (!kv)
            return tl::unexpected(kv.error());
        setup.kvDtypeId = *kv;
        return setup;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const EnginePolicy& e = in.request.engine;
        const Bytes overhead{in.settings.integer("OLLAMA_GPU_OVERHEAD").value_or(0)};
        EngineBill b;
        b.usableBytes = saturatingSub(in.request.card.totalBytes, e.fixedReserve + overhead);
        b.reserved.push_back(item("minimum_memory", e.fixedReserve, "Ollama MinimumMemory per CUDA GPU"));
        if (overhead.value > 0)
            b.reserved.push_back(item("gpu_overhead", overhead, "OLLAMA_GPU_OVERHEAD"));
        addRuntimeItems(in, true, b.overheads);
        finishBudget(in, b);
        return b;
    }
};

} // namespace

const Engine& ollamaEngine()
{
    static const OllamaEngine engine;
    return engine;
}

} // namespace headroom::engines
