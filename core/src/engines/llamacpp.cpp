// llama.cpp (llama-server with --fit): keep --fit-target MiB free per device, the KV cells of
// ctx-size padded (256 with flash attention, 32 without), the compute buffer of one ubatch.
// Rules: common/fit.cpp, src/llama-kv-cache.cpp, src/llama-context.cpp (graph_reserve);
// settings: common/arg.cpp.

#include "common.h"

namespace headroom::engines {

namespace {

const std::vector<std::string> kGgmlKvTypes = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"};

const std::vector<SettingSpec>& llamaSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("ctx-size", SettingType::Integer, "",
                 "total KV cells over all sequences; default: --context x --parallel", 0, kMaxTokens, {}, {"c"}),
        makeSpec("parallel", SettingType::Integer, "", "sequences (slots); default: --users, else 1", 1, kMaxSequences, {},
                 {"np"}),
        makeSpec("batch-size", SettingType::Integer, "2048", "logical batch", 1, kMaxSequences, {}, {"b"}),
        makeSpec("ubatch-size", SettingType::Integer, "", "physical batch of the compute buffer; default: --ubatch, else 512",
                 1, kMaxSequences, {}, {"ub"}),
        makeSpec("flash-attn", SettingType::Choice, "", "flash attention: on, off or auto", 0, 0, {"on", "off", "auto"},
                 {"fa"}),
        makeSpec("cache-type-k", SettingType::Choice, "", "K cache type; default: --kv-dtype (f16)", 0, 0, kGgmlKvTypes,
                 {"ctk"}),
        makeSpec("cache-type-v", SettingType::Choice, "", "V cache type; default: --kv-dtype (f16)", 0, 0, kGgmlKvTypes,
                 {"ctv"}),
        makeSpec("swa-full", SettingType::Boolean, "false", "full-size cache for sliding-window layers"),
        makeSpec("kv-unified", SettingType::Boolean, "false", "one KV buffer shared by all sequences"),
        makeSpec("fit-target", SettingType::Integer, "", "MiB kept free per device by --fit; default: the profile's (1024)",
                 0, 1 << 24, {}, {"fitt"}),
    };
    return specs;
}

std::string kvIdFromGgml(const std::string& v)
{
    if (v == "f16")
        return "";
    if (v == "f32")
        return "fp32";
    return v;
}

std::string ggmlFromKvId(const std::string& id)
{
    if (id == "fp16")
        return "f16";
    if (id == "bf16")
        return "bf16";
    if (id == "fp32")
        return "f32";
    return id;
}

class LlamaCppEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::LlamaCpp; }
    const std::vector<SettingSpec>& settings() const override { return llamaSettings(); }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto np = reconcileCount(r.users, "--users", s, "parallel", name, std::uint64_t{1});
        if (!np)
            return tl::unexpected(np.error());
        setup.users = **np;
        setup.usersAsked = r.users.has_value() || s.given("parallel");
        if (s.given("parallel"))
            setup.askedUsers = setup.users;
        // ctx-size is the total over the sequences; --context is per sequence.
        if (s.given("ctx-size")) {
            const std::uint64_t total = *s.integer("ctx-size");
            const std::uint64_t perSeq = total == 0 ? arch.contextLength : total / setup.users;
            if (r.contextTokens && *r.contextTokens != perSeq)
                return tl::unexpected("--context " + std::to_string(*r.contextTokens) + " and " + name + " setting ctx-size="
                                      + std::to_string(total) + " (" + std::to_string(perSeq) + " per sequence of "
                                      + std::to_string(setup.users) + ") disagree: give one of them, or agreeing values");
            setup.contextTokens = perSeq;
            setup.contextAsked = total > 0;
            if (total > 0)
                setup.askedContextTokens = perSeq;
        } else {
            s.setDerived(derivedInteger("ctx-size", checkedMul(setup.contextTokens, setup.users, "ctx-size")));
        }
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "ubatch-size", name, r.engine.ubatchTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto fa = reconcileFlash(r.flashAttention, r.engine.flashAttention, s, "flash-attn", name);
        if (!fa)
            return tl::unexpected(fa.error());
        setup.flashAttention = *fa;
        setup.paging.cellPadding = std::max<std::uint64_t>(*fa ? r.engine.cellPaddingFlash : r.engine.cellPaddingNoFlash, 1);
        auto k = reconcileKvDtype(r.kvDtype, s, "cache-type-k", name, &kvIdFromGgml, &ggmlFromKvId);
        if (!k)
            return tl::unexpected(k.error());
        auto v = reconcileKvDtype(r.kvDtype, s, "cache-type-v", name, &kvIdFromGgml, &ggmlFromKvId);
        if (!v)
            return tl::unexpected(v.error());
        if (*k != *v)
            return tl::unexpected(name + " settings cache-type-k=" + ggmlFromKvId(*k) + " and cache-type-v=" + ggmlFromKvId(*v)
                                  + " differ: separate K and V cache types are not priced yet; give the same type");
        setup.kvDtypeId = *k;
        if (!s.find("fit-target"))
            s.setDerived(derivedInteger("fit-target", r.engine.fixedReserve.value / kMiB));
        return setup;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const Bytes reserve{checkedMul(in.settings.integer("fit-target").value_or(in.request.engine.fixedReserve.value / kMiB),
                                       kMiB, "fit-target")};
        EngineBill b;
        b.usableBytes = saturatingSub(in.request.card.totalBytes, reserve);
        b.reserved.push_back(item("fit_margin", reserve, "llama.cpp --fit target free per device"));
        addRuntimeItems(in, true, b.overheads);
        finishBudget(in, b);
        return b;
    }
};

} // namespace

const Engine& llamaCppEngine()
{
    static const LlamaCppEngine engine;
    return engine;
}

} // namespace headroom::engines
