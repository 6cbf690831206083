#include "headroom/core/verdict.h"

#include "headroom/core/capacity.h"
#include "headroom/core/enginerules.h"
#include "headroom/core/plan.h"
#include "headroom/core/splitbill.h"

#include <algorithm>

namespace headroom {

namespace {

std::string users(std::uint64_t n) { return formatThousands(n) + (n == 1 ? " user" : " users"); }
std::string tokens(std::uint64_t n) { return formatThousands(n) + (n == 1 ? " token" : " tokens"); }
std::string question(std::uint64_t u, std::uint64_t c) { return users(u) + " x " + tokens(c); }

Verdict with(Verdict v, FitState state, FitLimit limit, std::string detail, std::string reason)
{
    v.state = state;
    v.limit = limit;
    v.detail = std::move(detail);
    v.reason = std::move(reason);
    return v;
}

Verdict doesNotFit(Verdict v, FitLimit limit, std::string detail, const std::string& why)
{
    return with(std::move(v), FitState::DoesNotFit, limit, std::move(detail), "does not fit: " + why);
}

// "14.96 > 7.01 GiB" when both share a unit, else "14.96 GiB > 900.00 MiB".
std::string comparison(Bytes a, Bytes b)
{
    const std::string ta = formatBytes(a);
    const std::string tb = formatBytes(b);
    const std::size_t space = ta.rfind(' ');
    if (space != std::string::npos && tb.size() >= ta.size() - space && tb.compare(tb.size() - (ta.size() - space), ta.size() - space, ta, space) == 0)
        return ta.substr(0, space) + " > " + tb;
    return ta + " > " + tb;
}

const EngineRefusal* firstRefusal(const PlanResult& plan, std::initializer_list<FitLimit> limits)
{
    for (const EngineRefusal& r : plan.refusals)
        if (std::find(limits.begin(), limits.end(), r.limit) != limits.end())
            return &r;
    return nullptr;
}

const EngineFigure* engineFigure(const PlanResult& plan, const char* name)
{
    for (const EngineFigure& f : plan.engineFigures)
        if (f.name == name)
            return &f;
    return nullptr;
}

// What a split keeps in host memory: splitbill.h's host terms (the weights left there, mapped pages
// with mmap, and their AVX2 repack copy, the KV of host layers, the host compute and output buffers).
Bytes hostBill(const PlanResult& plan) { return hostMemoryBytes(plan); }

// The split in words when the engine split the layers (its figure "offloaded N/M layers to GPU"
// with N < M, splitbill.h): the reason's "28/33 layers on the GPU, 4.1 GiB in host memory" and
// the cell's "partial: 28/33 layers, 4.1 GiB RAM" (issue 11's table cell).
struct SplitWords {
    std::string reason;
    std::string cell;
};

std::optional<SplitWords> partialOffload(const PlanResult& plan)
{
    const SplitBill split = splitBill(plan);
    if (!split.partial)
        return std::nullopt;
    const std::string host = formatBytes(split.hostBytes());
    const std::string layers = formatThousands(split.gpuLayers) + "/" + formatThousands(split.totalLayers);
    if (split.hostOnly)
        return SplitWords{"CPU only: no GPU, all " + formatThousands(split.totalLayers) + " layers on the host, " + host
                              + " in host memory",
                          "CPU only: " + host + " RAM"};
    if (split.gpuLayers == 0)
        return SplitWords{"CPU only (" + layers + " layers on the GPU), " + host + " in host memory",
                          "CPU only: " + layers + " layers, " + host + " RAM"};
    if (split.hostTensorsOnly()) {
        // Every layer on the GPU, some of their tensors or their KV in host memory (--n-cpu-moe,
        // -ot, --fit's overrides; --no-kv-offload).
        const bool tensors = split.hostExpertBytes.value > 0 || split.hostLayerWeightsBytes.value > 0;
        const bool kv = split.hostKvBytes.value > 0;
        const std::string what = split.hostExpertBytes.value > 0 ? "experts" : "FFN tensors";
        const std::string onHost = tensors && kv ? what + ", KV" : (tensors ? what : std::string("KV"));
        std::string reason = layers + " layers on the GPU with ";
        if (tensors)
            reason += (split.hostExpertBytes.value > 0 ? "routed experts " + formatBytes(split.hostExpertBytes)
                                                       : "FFN tensors " + formatBytes(split.hostLayerWeightsBytes));
        if (kv)
            reason += std::string(tensors ? " and " : "") + "the KV cache " + formatBytes(split.hostKvBytes);
        return SplitWords{reason + " in host memory, " + host + " there in all",
                          "partial: " + layers + " layers, " + onHost + " on CPU, " + host + " RAM"};
    }
    return SplitWords{layers + " layers on the GPU, " + host + " in host memory", "partial: " + layers + " layers, " + host + " RAM"};
}

std::uint64_t capped(std::uint64_t value, std::uint64_t cap) { return cap > 0 ? std::min(value, cap) : value; }

// The question once the plan loads: users x context against the pool, the trained context and the cap.
class QuestionJudge {
public:
    QuestionJudge(const PlanRequest& r, const PlanResult& p, Verdict v)
        : m_r(r), m_p(p), m_v(std::move(v)), m_pool(p.pool()), m_trained(p.modelContextTokens),
          m_cap(p.sequenceCap ? p.sequenceCap->sequences : 0)
    {
    }

    Verdict judge()
    {
        switch (m_v.headline.kind) {
        case HeadlineKind::MaxResidentTokens:
            m_v.headline.value = m_p.maxResidentTokens;
            return with(m_v, FitState::Fits, FitLimit::None, {},
                        "fits: " + tokens(m_p.maxResidentTokens) + " resident (all users together)");
        case HeadlineKind::MaxContextPerUser:
            return contextPerUser();
        case HeadlineKind::MaxUsersAtContext:
            return usersAtContext();
        }
        return m_v;
    }

private:
    Verdict contextPerUser()
    {
        const std::uint64_t u = m_p.users;
        const std::uint64_t ctx = m_p.contextTokens;
        const std::uint64_t memoryContext = maxContextTokens(m_pool, u);
        m_v.headline.value = capped(memoryContext, m_trained);
        const std::uint64_t value = m_v.headline.value;
        if (value == 0)
            return doesNotFit(m_v, FitLimit::Memory, "KV room " + formatThousands(m_p.maxResidentTokens) + " tokens",
                              "KV room for " + tokens(m_p.maxResidentTokens) + ", less than one block for each of "
                                  + users(u));
        if (value < ctx && m_trained > 0 && ctx > m_trained && memoryContext >= m_trained)
            return with(m_v, FitState::FitsWithLess, FitLimit::ModelContext, "trained context",
                        "fits with less: " + tokens(ctx) + " exceed the model's trained context of "
                            + formatThousands(m_trained) + "; " + question(u, m_trained) + " fit (memory holds "
                            + users(maxUsers(m_pool, m_trained)) + " at " + formatThousands(m_trained) + ")");
        if (value < ctx) {
            const Bytes need = kvBytes(m_p.kv, u, ctx, m_p.paging, m_p.ubatchTokens);
            return with(m_v, FitState::FitsWithLess, FitLimit::Memory, "memory",
                        "fits with less: " + question(u, ctx) + " need " + formatBytes(need) + " of KV, room for "
                            + formatBytes(m_p.kvBudgetBytes) + ": " + formatThousands(value) + " tokens each for "
                            + users(u) + ", or " + users(maxUsers(m_pool, ctx)) + " at " + formatThousands(ctx));
        }
        if (m_cap > 0 && u > m_cap)
            return engineCap(u, ctx);
        return with(m_v, FitState::Fits, FitLimit::None, {},
                    "fits: " + question(u, ctx) + " (up to " + formatThousands(value) + " tokens each for " + users(u)
                        + "; " + users(capped(maxUsers(m_pool, ctx), m_cap)) + " at " + formatThousands(ctx) + ")");
    }

    Verdict usersAtContext()
    {
        const std::uint64_t u = m_p.users;
        const std::uint64_t ctx = m_p.contextTokens;
        const bool aboveTrained = m_trained > 0 && ctx > m_trained;
        const std::uint64_t at = aboveTrained ? m_trained : ctx;
        const std::uint64_t memoryUsers = maxUsers(m_pool, at);
        m_v.headline.value = capped(memoryUsers, m_cap);
        if (memoryUsers < u)
            return doesNotFit(m_v, FitLimit::Memory, "KV room " + formatThousands(m_p.maxResidentTokens) + " tokens",
                              question(u, at) + " need "
                                  + formatBytes(kvBytes(m_p.kv, u, at, m_p.paging, m_p.ubatchTokens)) + " of KV, room for "
                                  + formatBytes(m_p.kvBudgetBytes) + " (at most " + tokens(maxContextTokens(m_pool, u))
                                  + " each)");
        if (aboveTrained)
            return with(m_v, FitState::FitsWithLess, FitLimit::ModelContext, "trained context",
                        "fits with less: " + tokens(ctx) + " exceed the model's trained context of "
                            + formatThousands(m_trained) + "; at " + formatThousands(m_trained) + ": "
                            + users(m_v.headline.value));
        if (m_cap > 0 && u > m_cap)
            return engineCap(u, ctx);
        // The number answers "how many users at C": say when the engine's cap, not memory, sets it.
        const std::string bound = m_cap > 0 && memoryUsers > m_cap
            ? " (" + m_p.sequenceCap->setting + " " + formatThousands(m_cap) + "; memory holds " + formatThousands(memoryUsers) + ")"
            : std::string();
        return with(m_v, FitState::Fits, FitLimit::None, {},
                    "fits: " + users(m_v.headline.value) + " at " + tokens(ctx) + " each" + bound);
    }

    Verdict engineCap(std::uint64_t u, std::uint64_t ctx)
    {
        const SequenceCap& cap = *m_p.sequenceCap;
        return with(m_v, FitState::FitsWithLess, FitLimit::EngineCap, cap.setting + " " + formatThousands(cap.sequences),
                    "fits with less: " + m_r.engine.name + " runs at most " + formatThousands(cap.sequences)
                        + " sequences at once (" + cap.setting + "); of " + question(u, ctx) + ", the rest wait");
    }

    const PlanRequest& m_r;
    const PlanResult& m_p;
    Verdict m_v;
    KvPool m_pool;
    std::uint64_t m_trained;
    std::uint64_t m_cap;
};

} // namespace

std::uint64_t defaultContextTokens(const PlanRequest& request)
{
    if (request.engine.kind == EngineKind::Ollama)
        return ollamaDefaultContextTokens(request.card.totalBytes);
    const std::uint64_t trained = request.model.architecture ? request.model.architecture->contextLength : 0;
    return trained > 0 ? std::min(kDefaultContextTokens, trained) : kDefaultContextTokens;
}

namespace {

PlanRequest withPlainDefaults(PlanRequest request)
{
    if (!request.users && !request.contextTokens)
        request.users = kDefaultUsers;
    if (request.users && !request.contextTokens)
        request.contextTokens = defaultContextTokens(request);
    return request;
}

} // namespace

PlanRequest withQuestionDefaults(PlanRequest request)
{
    PlanRequest asked = withPlainDefaults(request);
    if (request.engineSettings.empty() || makePlan(asked))
        return asked;
    // A setting the user gave answers part of the question (vLLM max-model-len, llama.cpp
    // parallel, Ollama num_ctx, ...): a default it disagrees with gives way, the other stays.
    PlanRequest usersOnly = request;
    usersOnly.users = asked.users;
    if (!request.contextTokens && makePlan(usersOnly))
        return usersOnly;
    PlanRequest contextOnly = request;
    contextOnly.contextTokens = asked.contextTokens;
    if (!request.users && makePlan(contextOnly))
        return contextOnly;
    return makePlan(request) ? request : asked;
}

HeadlineKind headlineKind(const std::optional<std::uint64_t>& users, const std::optional<std::uint64_t>& contextTokens)
{
    if (users)
        return HeadlineKind::MaxContextPerUser;
    if (contextTokens)
        return HeadlineKind::MaxUsersAtContext;
    return HeadlineKind::MaxResidentTokens;
}

std::string headlineCaption(HeadlineKind kind, std::uint64_t u, std::uint64_t contextTokens)
{
    switch (kind) {
    case HeadlineKind::MaxContextPerUser:
        return "max context per user for " + users(u);
    case HeadlineKind::MaxUsersAtContext:
        return "max users at " + tokens(contextTokens) + " each";
    case HeadlineKind::MaxResidentTokens:
        return "max resident tokens (all users together)";
    }
    return {};
}

std::string headlineCaption(const Headline& h) { return headlineCaption(h.kind, h.users, h.contextTokens); }

std::string headlineUnit(HeadlineKind kind) { return kind == HeadlineKind::MaxUsersAtContext ? "users" : "tokens"; }

std::string fitStateId(FitState state)
{
    switch (state) {
    case FitState::Fits: return "fits";
    case FitState::FitsWithLess: return "fits_with_less";
    case FitState::PartialOffload: return "partial_offload";
    case FitState::DoesNotFit: return "does_not_fit";
    }
    return "does_not_fit";
}

std::string fitStateLabel(FitState state)
{
    switch (state) {
    case FitState::Fits: return "fits";
    case FitState::FitsWithLess: return "fits with less";
    case FitState::PartialOffload: return "partial offload";
    case FitState::DoesNotFit: return "does not fit";
    }
    return "does not fit";
}

std::string fitLimitId(FitLimit limit)
{
    switch (limit) {
    case FitLimit::None: return "none";
    case FitLimit::Memory: return "memory";
    case FitLimit::ModelContext: return "model_context";
    case FitLimit::EngineCap: return "engine_cap";
    case FitLimit::Weights: return "weights";
    case FitLimit::Overheads: return "overheads";
    case FitLimit::KvRoom: return "kv_room";
    case FitLimit::EngineRefusesToStart: return "engine_refuses_to_start";
    case FitLimit::EngineFormat: return "engine_format";
    case FitLimit::EngineKvDtype: return "engine_kv_dtype";
    case FitLimit::HostMemory: return "host_memory";
    case FitLimit::EngineNeedsGpu: return "engine_needs_gpu";
    }
    return "none";
}

std::optional<FitLimit> fitLimitFromId(const std::string& id)
{
    for (FitLimit limit : {FitLimit::None, FitLimit::Memory, FitLimit::ModelContext, FitLimit::EngineCap, FitLimit::Weights,
                           FitLimit::Overheads, FitLimit::KvRoom, FitLimit::EngineRefusesToStart, FitLimit::EngineFormat,
                           FitLimit::EngineKvDtype, FitLimit::HostMemory, FitLimit::EngineNeedsGpu})
        if (fitLimitId(limit) == id)
            return limit;
    return std::nullopt;
}

bool engineCannotRun(FitLimit limit)
{
    return limit == FitLimit::EngineFormat || limit == FitLimit::EngineKvDtype || limit == FitLimit::EngineNeedsGpu;
}

bool Verdict::engineCannotRun() const { return state == FitState::DoesNotFit && headroom::engineCannotRun(limit); }

std::string fitLimitLabel(FitLimit limit)
{
    switch (limit) {
    case FitLimit::None: return "nothing";
    case FitLimit::Memory: return "memory";
    case FitLimit::ModelContext: return "the model's trained context";
    case FitLimit::EngineCap: return "the engine's sequence cap";
    case FitLimit::Weights: return "the weights";
    case FitLimit::Overheads: return "the weights and overheads";
    case FitLimit::KvRoom: return "too little KV room";
    case FitLimit::EngineRefusesToStart: return "the engine would refuse to start";
    case FitLimit::EngineFormat: return "the engine cannot load this weight format";
    case FitLimit::EngineKvDtype: return "the engine has no such KV cache dtype";
    case FitLimit::HostMemory: return "host memory";
    case FitLimit::EngineNeedsGpu: return "the engine is not planned without a GPU";
    }
    return "nothing";
}

std::string verdictCellText(const Verdict& v)
{
    switch (v.state) {
    case FitState::Fits:
        return formatThousands(v.headline.value);
    case FitState::FitsWithLess:
    case FitState::PartialOffload:
        return formatThousands(v.headline.value) + " (" + (v.detail.empty() ? fitStateLabel(v.state) : v.detail) + ")";
    case FitState::DoesNotFit:
        return "no: " + (v.detail.empty() ? fitLimitLabel(v.limit) : v.detail);
    }
    return {};
}

Verdict decideVerdict(const PlanRequest& request, const PlanResult& plan)
{
    Verdict v;
    v.headline.kind = headlineKind(request.users, request.contextTokens);
    v.headline.users = plan.users;
    v.headline.contextTokens = plan.contextTokens;

    if (const EngineRefusal* r = firstRefusal(plan, {FitLimit::EngineNeedsGpu}))
        return doesNotFit(v, r->limit, "no GPU", r->reason);
    if (const EngineRefusal* r = firstRefusal(plan, {FitLimit::EngineFormat, FitLimit::EngineKvDtype}))
        return doesNotFit(v, r->limit, r->limit == FitLimit::EngineFormat ? "engine format" : "engine KV dtype", r->reason);

    // A layer split (llama.cpp -ngl below n_layer + 1, engines/llamacppoffload.h): it loads with
    // some layers in host memory.
    if (const auto split = partialOffload(plan)) {
        // A split the engine cannot start (-ngl asked beyond the GPU, -np over its limit) loads nothing.
        if (const EngineRefusal* r = firstRefusal(plan, {FitLimit::EngineRefusesToStart}))
            return doesNotFit(v, r->limit, request.engine.name + " would refuse to start", r->reason);
        const Bytes host = hostBill(plan);
        if (request.hostMemoryBytes && host > *request.hostMemoryBytes)
            return doesNotFit(v, FitLimit::HostMemory, "host " + comparison(host, *request.hostMemoryBytes),
                              split->reason + ": more than the " + formatBytes(*request.hostMemoryBytes) + " of host memory (--host-ram)");
        // The host-only card: the whole model on the CPU by choice, not because the weights miss a GPU.
        // So is --offload none (-ngl 0) asked on a GPU card: no layer on the GPU because the user
        // said so, not because the weights miss it; no limit binds.
        const bool cpuByChoice = plan.hostOnly || (request.gpuLayers && *request.gpuLayers == 0);
        Verdict partial = cpuByChoice ? with(v, FitState::PartialOffload, FitLimit::None, split->cell, split->reason)
                                        : with(v, FitState::PartialOffload, FitLimit::Weights, split->cell,
                                               "partial offload: " + split->reason);
        // The split holds the context the engine placed it for (splitbill.h: per sequence, the
        // asked context or --fit's minimum when none was asked) for every user.
        const std::uint64_t perUser = splitBill(plan).contextTokensPerSequence;
        switch (v.headline.kind) {
        case HeadlineKind::MaxContextPerUser: partial.headline.value = perUser; break;
        case HeadlineKind::MaxUsersAtContext: partial.headline.value = perUser >= plan.contextTokens ? plan.users : 0; break;
        case HeadlineKind::MaxResidentTokens: partial.headline.value = perUser * std::max<std::uint64_t>(plan.users, 1); break;
        }
        return partial;
    }
    // Weights the engine keeps in host memory without a layer split (vLLM --cpu-offload-gb's
    // pinned parameters, engines/vllmoffload.h) count against --host-ram too.
    if (const Bytes host = hostBill(plan); request.hostMemoryBytes && engineFigure(plan, "cpu_offloaded_bytes")
                                            && host > *request.hostMemoryBytes)
        return doesNotFit(v, FitLimit::HostMemory, "host " + comparison(host, *request.hostMemoryBytes),
                          formatBytes(host) + " of pinned host memory for the offloaded weights: more than the "
                              + formatBytes(*request.hostMemoryBytes) + " of host memory (--host-ram)");
    const Bytes overheads = totalBytes(plan.overheads);
    const Bytes spent = plan.weightsBytes + overheads;
    if (plan.weightsBytes > plan.usableBytes)
        return doesNotFit(v, FitLimit::Weights, "weights " + comparison(plan.weightsBytes, plan.usableBytes),
                          "weights " + formatBytes(plan.weightsBytes) + " > usable " + formatBytes(plan.usableBytes)
                              + " of the " + formatBytes(plan.cardTotalBytes) + " card");
    if (spent > plan.usableBytes)
        return doesNotFit(v, FitLimit::Overheads, "weights + overheads " + comparison(spent, plan.usableBytes),
                          "weights " + formatBytes(plan.weightsBytes) + " + overheads " + formatBytes(overheads) + " = "
                              + formatBytes(spent) + " > usable " + formatBytes(plan.usableBytes));

    const std::uint64_t minTokens = std::max<std::uint64_t>(request.engine.minContextTokens, plan.paging.blockTokens);
    if (plan.maxResidentTokens < minTokens)
        return doesNotFit(v, FitLimit::KvRoom, "KV room " + formatThousands(plan.maxResidentTokens) + " tokens",
                          "KV room for " + tokens(plan.maxResidentTokens) + ", "
                              + (request.engine.minContextTokens > 0 ? request.engine.name + " needs at least "
                                                                     : std::string("less than one block of "))
                              + formatThousands(minTokens));

    if (const EngineRefusal* r = firstRefusal(plan, {FitLimit::EngineRefusesToStart})) {
        // Nothing is served: the headline is 0 (Headline::value), as for every plan that does not
        // fit; the memory figures (max context, max resident tokens) stay in the plan.
        return doesNotFit(v, r->limit, request.engine.name + " would refuse to start", r->reason);
    }
    return QuestionJudge(request, plan, v).judge();
}

Placement placementOf(const PlanResult& plan)
{
    if (!plan.verdict.loads())
        return Placement::TooLarge;
    if (plan.verdict.state != FitState::PartialOffload)
        return Placement::FullGpu;
    if (plan.hostOnly)
        return Placement::CpuOnly;
    const EngineFigure* gpu = engineFigure(plan, "offload_gpu_layers");
    return gpu && gpu->value < 1 ? Placement::CpuOnly : Placement::Partial;
}

std::string verdictLabel(const PlanResult& plan)
{
    if (plan.verdict.state == FitState::PartialOffload && placementOf(plan) == Placement::CpuOnly)
        return placementLabel(Placement::CpuOnly);
    return fitStateLabel(plan.verdict.state);
}

std::string placementLabel(Placement placement)
{
    switch (placement) {
    case Placement::FullGpu: return "full GPU";
    case Placement::Partial: return "partial";
    case Placement::CpuOnly: return "CPU only";
    case Placement::TooLarge: return "too large";
    }
    return {};
}

} // namespace headroom
