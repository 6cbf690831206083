#pragma once
/// @file verdict.h
/// The one answer to "does it fit?": the state of a plan, the limit that binds or stops it, and the
/// headline number of a cell, each defined once here and only printed by the faces (CLI, app,
/// reports). A face never compares capacities itself: it prints Verdict::state, Verdict::limit,
/// Verdict::headline and Verdict::reason, and captions a table with headlineCaption() of the
/// request's own question.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct PlanRequest;
struct PlanResult;

/// The answer to "does it fit?". States are ordered from best to worst; a new state (for example
/// one set by a planner that splits layers between the card and host memory) is added here and
/// handled by fitStateId() and fitStateLabel(), and every face prints it without change.
enum class FitState {
    Fits,           ///< the request is served as asked
    FitsWithLess,   ///< it loads and serves, but less than asked; Verdict::limit names what binds
    PartialOffload, ///< it loads only with some layers in host memory (llama.cpp / Ollama -ngl below the layer count)
    DoesNotFit,     ///< it cannot be served at all; Verdict::limit names why
};

/// What binds a FitsWithLess plan, or what stops a DoesNotFit one.
enum class FitLimit {
    None,                 ///< nothing binds (FitState::Fits)
    Memory,               ///< the KV cache holds less than asked
    ModelContext,         ///< the context asked for is above the model's trained context
    EngineCap,            ///< an engine cap on concurrent sequences (vLLM --max-num-seqs, SGLang --max-running-requests)
    Weights,              ///< the weights alone exceed the memory the engine allows
    Overheads,            ///< weights plus the engine's overheads exceed the memory the engine allows
    KvRoom,               ///< the KV room is below the engine's minimum (llama.cpp --fit's 4,096 tokens, one block)
    EngineRefusesToStart, ///< the engine would refuse to start (vLLM: one max_model_len sequence exceeds the KV cache)
    EngineFormat,         ///< the engine cannot load this weight format
    EngineKvDtype,        ///< the engine has no such KV cache dtype (or not in this setup)
    HostMemory,           ///< what stays in host memory does not fit there (partial offload)
    EngineNeedsGpu,       ///< the engine is planned on a GPU only and the plan has none (the host-only card "cpu")
};

/// The headline number of a cell: which quantity answers the request's question.
enum class HeadlineKind {
    MaxContextPerUser, ///< the longest context each of N users can hold (users given, or the defaults)
    MaxUsersAtContext, ///< how many users fit at context C each (only a context given)
    MaxResidentTokens, ///< the most tokens the KV cache holds, all users together (neither given)
};

/// The headline number of a cell, with the question it answers.
struct Headline {
    HeadlineKind kind = HeadlineKind::MaxResidentTokens;
    std::uint64_t value = 0;         ///< tokens (MaxContextPerUser, MaxResidentTokens) or users (MaxUsersAtContext); 0 when nothing fits
    std::uint64_t users = 1;         ///< the users asked about
    std::uint64_t contextTokens = 0; ///< the context per user asked about
};

/// Why an engine will not run a plan at all, filled into PlanResult::refusals by the engine's rules
/// before the verdict is decided (the compatibility of a weight format or KV dtype, a startup check).
struct EngineRefusal {
    FitLimit limit = FitLimit::EngineFormat; ///< EngineFormat, EngineKvDtype or EngineRefusesToStart
    std::string reason;                      ///< one sentence naming the engine and its setting, e.g. "vLLM has no 'q4_0' KV cache"
};

/// An engine cap on concurrent sequences, filled into PlanResult::sequenceCap by the engine's rules.
struct SequenceCap {
    std::uint64_t sequences = 0; ///< the most sequences the engine runs at once
    std::string setting;         ///< the engine's own name for it, e.g. "--max-num-seqs"
};

/// The answer: state, limit, headline and one sentence saying it.
struct Verdict {
    FitState state = FitState::DoesNotFit;
    FitLimit limit = FitLimit::None;
    Headline headline;
    /// One sentence starting with the state: "fits: ...", "fits with less: ...", "does not fit: ...".
    std::string reason;
    /// A few words for a table cell: the binding limit ("memory", "trained context", "--max-num-seqs
    /// 256") or why not ("weights 14.96 > 7.01 GiB"); empty when it fits.
    std::string detail;

    /// True only when the request is served as asked (what `--check` tests).
    bool fits() const { return state == FitState::Fits; }
    /// True when the plan loads at all (speed figures are meaningful only then).
    bool loads() const { return state != FitState::DoesNotFit; }
    /// True when the engine cannot run the request at all (see engineCannotRun(FitLimit)).
    bool engineCannotRun() const;
};

/// True for the limits that mean the engine never starts on this request: it cannot load the
/// weight format (FitLimit::EngineFormat), has no such KV cache dtype (FitLimit::EngineKvDtype) or
/// needs a GPU the plan does not have (FitLimit::EngineNeedsGpu).
/// No memory bill of such a plan exists, so every face (the app, `plan`, the reports) prints only
/// the verdict and its reason for it: no bill, no capacity, no speed.
bool engineCannotRun(FitLimit limit);

/// The users and context a face asks about when the user gave none: 4 users (the desktop app's
/// default) and 8,192 tokens each, capped at the model's trained context.
inline constexpr std::uint64_t kDefaultUsers = 4;
/// See kDefaultUsers.
inline constexpr std::uint64_t kDefaultContextTokens = 8192;

/// The context a request gets when only users (or nothing) are given: Ollama's own num_ctx tier for
/// the card (its default), else kDefaultContextTokens capped at the model's trained context.
std::uint64_t defaultContextTokens(const PlanRequest& request);

/// Fills the question of @p request the same way in every face: neither users nor context gives
/// kDefaultUsers x defaultContextTokens(); users alone gives defaultContextTokens(); a context
/// alone stays as it is (the question is then "how many users at that context"). Returns it.
PlanRequest withQuestionDefaults(PlanRequest request);

/// The headline kind of a request's question: users given (with or without a context) asks for the
/// max context per user; a context alone asks for the max users; neither asks for resident tokens.
HeadlineKind headlineKind(const std::optional<std::uint64_t>& users, const std::optional<std::uint64_t>& contextTokens);

/// The caption of a headline, from the question (never from a cell): "max context per user for 4
/// users", "max users at 8,192 tokens each", "max resident tokens (all users together)".
std::string headlineCaption(HeadlineKind kind, std::uint64_t users, std::uint64_t contextTokens);
/// headlineCaption() of @p h's own question.
std::string headlineCaption(const Headline& h);

/// The unit of a headline value: "tokens" or "users".
std::string headlineUnit(HeadlineKind kind);

/// Stable ids for JSON: "fits", "fits_with_less", "partial_offload", "does_not_fit".
std::string fitStateId(FitState state);
/// Words for people: "fits", "fits with less", "partial offload", "does not fit".
std::string fitStateLabel(FitState state);
/// Stable ids for JSON: "none", "memory", "model_context", "engine_cap", "weights", "overheads",
/// "kv_room", "engine_refuses_to_start", "engine_format", "engine_kv_dtype", "host_memory", "engine_needs_gpu".
std::string fitLimitId(FitLimit limit);
/// The FitLimit of a fitLimitId() (a report's or plan's JSON); nullopt for an unknown id.
std::optional<FitLimit> fitLimitFromId(const std::string& id);
/// Words for people, e.g. "memory", "the model's trained context", "the engine would refuse to start".
std::string fitLimitLabel(FitLimit limit);

/// The short text of a cell: the headline number, "(less)" after it when the plan fits with less,
/// or "no: " and the limit when it does not fit. The same text in the CLI table and the reports.
std::string verdictCellText(const Verdict& v);

/// Where a plan puts the model, in LM Studio's terms (the app's fit indicator per cell).
enum class Placement {
    FullGpu,  ///< every layer on the GPU
    Partial,  ///< some layers in host memory (llama.cpp -ngl, Ollama num_gpu)
    CpuOnly,  ///< no layer on the GPU (-ngl 0, --offload none)
    TooLarge, ///< does not load on this machine
};

/// The placement of @p plan (its verdict and the engine's offload_gpu_layers figure).
Placement placementOf(const PlanResult& plan);

/// "full GPU", "partial", "CPU only", "too large".
std::string placementLabel(Placement placement);

/// The verdict of @p plan in words: fitStateLabel() of its state, except a split with no layer on
/// a GPU (Placement::CpuOnly: the card cpu, --offload none / -ngl 0), whose verdict reads "CPU only",
/// the state its placement names, not "partial offload" (issue 11 review, S2). The JSON state id
/// stays fitStateId()'s "partial_offload" (a stable id; the placement says CPU only).
std::string verdictLabel(const PlanResult& plan);

/// Decides the verdict of a priced plan. Order: an engine refusal of the format or KV dtype; the
/// weights, then weights plus overheads, against the usable memory; the KV room against the
/// engine's minimum; an engine's refusal to start; then the question (users x context) against the
/// KV pool, the model's trained context and the engine's sequence cap. The headline is computed
/// here from the pool (capacity.h) and capped at the trained context and the sequence cap.
Verdict decideVerdict(const PlanRequest& request, const PlanResult& plan);

} // namespace headroom
