#include "common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace headroom::engines {

OverheadItem item(const char* name, Bytes bytes, std::string note)
{
    return OverheadItem{name, bytes, std::move(note)};
}

Bytes fraction(Bytes total, double f)
{
    return Bytes{static_cast<std::uint64_t>(std::floor(static_cast<double>(total.value) * f))};
}

std::string percent(double f)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g%%", f * 100);
    return buf;
}

EngineSetup baseSetup(const PlanRequest& r, const Architecture& arch)
{
    const EnginePolicy& e = r.engine;
    EngineSetup s;
    s.flashAttention = r.flashAttention.value_or(e.flashAttention);
    s.ubatchTokens = r.ubatchTokens.value_or(e.ubatchTokens);
    s.paging.blockTokens = std::max<std::uint64_t>(e.blockTokens, 1);
    s.paging.cellPadding = std::max<std::uint64_t>(s.flashAttention ? e.cellPaddingFlash : e.cellPaddingNoFlash, 1);
    s.minContextTokens = e.minContextTokens;
    s.users = r.users.value_or(1);
    s.usersAsked = r.users.has_value();
    s.contextTokens = r.contextTokens.value_or(arch.contextLength);
    s.contextAsked = r.contextTokens.has_value();
    s.askedContextTokens = r.contextTokens;
    s.askedUsers = r.users;
    s.tensorParallel = r.tensorParallel;
    s.pipelineParallel = r.pipelineParallel;
    s.kvDtypeId = r.kvDtype.id;
    return s;
}

void addRuntimeItems(const EngineInputs& in, bool activations, std::vector<OverheadItem>& out)
{
    const EnginePolicy& e = in.request.engine;
    const MeasuredOverheads& m = in.request.measured;
    const EngineSetup& s = in.setup;
    const Bytes runtime = m.runtimeBytes.value_or(e.runtimeBytes);
    out.push_back(item("cuda_context", runtime, m.runtimeBytes ? "measured" : "CUDA context and non-torch memory (engine profile)"));
    if (e.workspaceBytes.value > 0)
        out.push_back(item("workspace", e.workspaceBytes, "cuBLAS/cuBLASLt workspace"));
    if (activations) {
        const Bytes act = m.activationPeakBytes.value_or(
            activationPeakBytes(in.arch, s.ubatchTokens, std::max(s.contextTokens, s.ubatchTokens), s.flashAttention));
        out.push_back(item("activation_peak", act,
                           m.activationPeakBytes ? std::string("measured")
                                                 : "prefill chunk of " + std::to_string(s.ubatchTokens) + " tokens, "
                                                       + (s.flashAttention ? "flash attention" : "full fp32 scores")));
        if (e.logitsOnDevice && !m.activationPeakBytes) { // a measured peak includes the logits
            const std::uint64_t outputs = std::min<std::uint64_t>(s.ubatchTokens, 256);
            out.push_back(item("logits", logitsBytes(in.arch, outputs), "vocab x " + std::to_string(outputs) + " outputs x 4 B"));
        }
    }
    const Bytes graphs = m.cudaGraphBytes.value_or(e.cudaGraphBytes);
    if (graphs.value > 0)
        out.push_back(item("cuda_graphs", graphs, m.cudaGraphBytes ? "measured" : "engine profile"));
}

bool weightsFit(const EngineInputs& in, const EngineBill& bill)
{
    return in.weightsBytes + totalBytes(bill.overheads) <= bill.usableBytes;
}

void finishBudget(const EngineInputs& in, EngineBill& bill)
{
    const double frag = in.request.engine.fragmentationFraction;
    Bytes budget = saturatingSub(bill.usableBytes, in.weightsBytes + totalBytes(bill.overheads));
    if (frag > 0 && budget.value > 0) {
        const Bytes lost = fraction(budget, frag);
        bill.overheads.push_back(item("fragmentation", lost, percent(frag) + " of the KV pool"));
        budget = budget - lost;
    }
    bill.kvBudgetBytes = budget;
}

SettingValue derivedInteger(const std::string& key, std::uint64_t n)
{
    SettingValue v;
    v.key = key;
    v.type = SettingType::Integer;
    v.integer = n;
    v.number = static_cast<double>(n);
    v.text = std::to_string(n);
    return v;
}

SettingValue derivedNumber(const std::string& key, double x)
{
    SettingValue v;
    v.key = key;
    v.type = SettingType::Number;
    v.number = x;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", x);
    v.text = buf;
    return v;
}

SettingValue derivedBoolean(const std::string& key, bool b)
{
    SettingValue v;
    v.key = key;
    v.type = SettingType::Boolean;
    v.integer = b ? 1 : 0;
    v.number = static_cast<double>(v.integer);
    v.text = b ? "true" : "false";
    return v;
}

SettingValue derivedChoice(const std::string& key, const std::string& text)
{
    SettingValue v;
    v.key = key;
    v.type = SettingType::Choice;
    v.text = text;
    return v;
}

namespace {

std::string disagree(const std::string& option, const std::string& generic, const std::string& key,
                     const std::string& value, const std::string& engineName)
{
    return option + (generic.empty() ? "" : " " + generic) + " and " + engineName + " setting " + key + "=" + value
        + " disagree: give one of them, or the same value";
}

} // namespace

tl::expected<std::optional<std::uint64_t>, std::string>
reconcileCount(std::optional<std::uint64_t> generic, const std::string& option, EngineSettings& settings,
               const std::string& key, const std::string& engineName, std::optional<std::uint64_t> fallback)
{
    if (settings.given(key)) {
        const std::uint64_t set = *settings.integer(key);
        if (generic && *generic != set)
            return tl::unexpected(disagree(option, std::to_string(*generic), key, std::to_string(set), engineName));
        return std::optional<std::uint64_t>{set};
    }
    // A default from the profile (or the unit's spec) wins over the fallback.
    const std::optional<std::uint64_t> value = generic ? generic : (settings.find(key) ? settings.integer(key) : fallback);
    if (value)
        settings.setDerived(derivedInteger(key, *value));
    return value;
}

tl::expected<std::uint32_t, std::string> reconcileParallel(std::uint32_t generic, const std::string& option,
                                                           EngineSettings& settings, const std::string& key,
                                                           const std::string& engineName)
{
    auto v = reconcileCount(generic > 1 ? std::optional<std::uint64_t>{generic} : std::nullopt, option, settings, key,
                            engineName, std::uint64_t{generic});
    if (!v)
        return tl::unexpected(v.error());
    if (**v < 1 || **v > 1024)
        return tl::unexpected(engineName + " setting " + key + ": expected 1 to 1024, found " + std::to_string(**v));
    return static_cast<std::uint32_t>(**v);
}

tl::expected<bool, std::string> reconcileFlash(std::optional<bool> generic, bool engineDefault, EngineSettings& settings,
                                               const std::string& key, const std::string& engineName, bool autoValue)
{
    const SettingValue* v = settings.find(key);
    const bool isChoice = v ? v->type == SettingType::Choice : false;
    if (settings.given(key)) {
        const bool set = isChoice ? (v->text == "auto" ? autoValue : v->text == "on") : v->integer != 0;
        if (generic && *generic != set)
            return tl::unexpected(disagree(*generic ? "--flash-attention" : "--no-flash-attention", "", key, v->text,
                                           engineName));
        return set;
    }
    const bool value = generic.value_or(engineDefault);
    if (isChoice || !v)
        settings.setDerived(derivedChoice(key, value ? "on" : "off"));
    else
        settings.setDerived(derivedBoolean(key, value));
    return value;
}

bool isDefaultKvDtype(const std::string& kvId)
{
    return kvId == "fp16" || kvId == "bf16";
}

std::optional<EngineRefusal> ggufFormatRefusal(const PlanRequest& r)
{
    const FormatKind kind = r.format.kind;
    if (kind == FormatKind::Ggml || kind == FormatKind::Float)
        return std::nullopt;
    return EngineRefusal{FitLimit::EngineFormat,
                         r.engine.name + " runs GGUF files of GGML types (F16, BF16, Q8_0, Q4_K, ...), not " + r.format.id
                             + " (GPTQ/AWQ, bitsandbytes, fp8 and int checkpoints are other engines' formats)"};
}

bool kvDtypeAccepted(const std::string& kvId, std::initializer_list<const char*> accepted)
{
    if (kvId.empty() || isDefaultKvDtype(kvId))
        return true;
    for (const char* id : accepted)
        if (kvId == id)
            return true;
    return false;
}

tl::expected<std::string, std::string> reconcileKvDtype(const KvDtype& generic, EngineSettings& settings,
                                                        const std::string& key, const std::string& engineName,
                                                        std::string (*toKvId)(const std::string& engineValue),
                                                        std::string (*fromKvId)(const std::string& kvId))
{
    if (settings.given(key)) {
        const std::string value = *settings.text(key);
        const std::string id = toKvId(value);
        if (!isDefaultKvDtype(generic.id) && id != generic.id)
            return tl::unexpected(disagree("--kv-dtype", generic.id, key, value, engineName));
        return id.empty() ? generic.id : id; // "" is the engine's "auto": the model's 16-bit dtype
    }
    settings.setDerived(derivedChoice(key, fromKvId(generic.id)));
    return generic.id;
}

SettingSpec interconnectSpec()
{
    return makeSpec("interconnect", SettingType::Choice, "",
                    "not an engine flag: the link between the ranks at TP > 1 (nvswitch, nvlink, pcie-p2p, pcie = no "
                    "P2P, network = ranks on different nodes); it prices NCCL's and the all-reduce's buffers per rank "
                    "(core/interconnect.h); default: the card profile's, else nvswitch",
                    0, 0, interconnectNames());
}

std::string PlanInterconnect::note() const
{
    return std::string("interconnect=") + interconnectName(link) + " (" + origin + ")";
}

PlanInterconnect planInterconnect(const PlanRequest& request, const EngineSettings& settings)
{
    PlanInterconnect p;
    if (const SettingValue* v = settings.find("interconnect"); v && v->given) {
        if (const std::optional<Interconnect> link = parseInterconnect(v->text)) {
            p.link = *link;
            p.origin = "set";
            return p;
        }
    }
    if (request.card.interconnect) {
        p.link = *request.card.interconnect;
        p.origin = "the " + request.card.id + " profile's";
        return p;
    }
    p.origin = "assumed: the card profile gives none";
    return p;
}

void recordInterconnect(const PlanRequest& request, EngineSettings& settings)
{
    if (!settings.given("interconnect"))
        settings.setDerived(derivedChoice("interconnect", interconnectName(planInterconnect(request, settings).link)));
}

SettingSpec makeSpec(std::string key, SettingType type, std::string defaultValue, std::string help, double minimum,
                     double maximum, std::vector<std::string> choices, std::vector<std::string> aliases)
{
    SettingSpec s;
    s.key = std::move(key);
    s.type = type;
    s.defaultValue = std::move(defaultValue);
    s.help = std::move(help);
    s.minimum = minimum;
    s.maximum = maximum;
    s.choices = std::move(choices);
    s.aliases = std::move(aliases);
    return s;
}

} // namespace headroom::engines
