#pragma once
/// @file engine.h
/// One serving engine as a module (core/src/engines/<engine>.cpp). The planner (plan.cpp) prices
/// the shared parts (weights per device, the KV layout, capacity from the pool) and asks the
/// engine, in this order:
///   1. settings():      the keys it knows, their types and defaults (settings.h);
///   2. configure():     the plan's inputs from those settings and the generic request fields
///                       (--context, --users, --ubatch, --kv-dtype, --tp, --pp, flash attention),
///                       which must not disagree with the engine's own spelling of them;
///   3. compatibility(): what it cannot run (weight format, KV dtype), as data for the verdict;
///   4. bill():          usable memory, overheads, KV budget and the engine's own figures.
/// Adding an engine version is a profile entry (profiles/engines/, its `versions` range and
/// `settings` defaults) plus, where the rule changed, a branch in that engine's unit on
/// EngineInputs::policy.version / versionFrom.

#include "headroom/core/engines/bill.h"
#include "headroom/core/engines/settings.h"
#include "headroom/core/plan.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// What an engine decided from its settings before pricing: the planner's shared inputs.
struct EngineSetup {
    std::uint64_t contextTokens = 0;            ///< context per sequence the plan asks about (vLLM max-model-len)
    bool contextAsked = false;                  ///< given by the user or the engine's own default (Ollama num_ctx)
    std::uint64_t users = 1;                    ///< sequences the plan asks about
    bool usersAsked = false;                    ///< given (--users, OLLAMA_NUM_PARALLEL, -np)
    std::optional<std::uint64_t> maxSequences;  ///< the engine's cap on running sequences (vLLM max-num-seqs)
    std::string maxSequencesSetting;            ///< that cap as the engine spells it ("--max-num-seqs"), for the verdict
    /// The question as asked in either spelling (--context or max-model-len, --users or -np):
    /// what the verdict answers. baseSetup copies the request's; a unit sets them from a given setting.
    std::optional<std::uint64_t> askedContextTokens;
    std::optional<std::uint64_t> askedUsers;
    std::uint64_t ubatchTokens = 0;             ///< tokens of one forward pass (vLLM max-num-batched-tokens, llama.cpp -ub)
    bool flashAttention = true;
    Paging paging;                              ///< block size, cell padding
    std::uint64_t minContextTokens = 0;         ///< smallest context the engine plans (llama.cpp --fit 4,096)
    std::uint32_t tensorParallel = 1;
    std::uint32_t pipelineParallel = 1;
    std::string kvDtypeId;                      ///< the KV dtype the engine will use (kvcache.h id)
    std::string kvDtypeVId;                     ///< the V cache dtype when it differs (llama.cpp -ctv); "" = kvDtypeId
    /// Bytes of one recurrent-state element (kvcache.h kvLayout): 2, the model dtype, in vLLM; 4 in
    /// llama.cpp, whose R/S caches are f32.
    std::uint32_t stateElementBytes = 2;
};

/// How an engine runs a draft model for speculative decoding (`--draft MODEL`).
struct DraftSupport {
    std::string setting;       ///< its own setting that loads one (vLLM --speculative-config, llama.cpp -md); empty = not priced
    std::string whyNot;        ///< when setting is empty: why the plan is refused the draft ("has no ...")
    bool sixteenBitKv = false; ///< the draft's KV cache stays 16-bit whatever the target's (llama.cpp -ctkd/-ctvd default f16)
};

/// What the planner hands the engine for its bill.
struct EngineInputs {
    const PlanRequest& request;     ///< card, policy (profile of the version), measured figures
    const Architecture& arch;
    const EngineSettings& settings; ///< parsed and completed by configure()
    const EngineSetup& setup;
    Bytes weightsBytes;             ///< on the busiest device
    KvLayout kv;                    ///< per device
    Bytes kvBytesPerToken;          ///< per device
};

/// Figures a log measured that replace an engine's estimates of what it holds beyond its memory
/// fraction (Engine::fractionHolding).
struct MeasuredHolding {
    std::optional<Bytes> cardUsedAtStartBytes; ///< in use before the engine sized anything (vLLM: total - free_memory of the init snapshot)
    std::optional<Bytes> cudaGraphBytes;       ///< the CUDA graphs as captured ("Graph capturing finished ..., took X GiB")
};

/// How an engine's memory fraction (vLLM gpu-memory-utilization, SGLang mem-fraction-static)
/// maps to what its process holds on the card, as nvidia-smi counts it: the engine claims
/// fraction x baseBytes, and holds `held` besides. The largest fraction that leaves F bytes free
/// is then floor((total - F - sum(held)) / baseBytes, 0.01).
struct FractionHolding {
    Bytes baseBytes;                ///< what the fraction multiplies (vLLM: the card total; SGLang: the memory free at start-up)
    std::vector<OverheadItem> held; ///< held outside fraction x base, each with the rule it comes from
};

/// One engine.
class Engine {
public:
    virtual ~Engine() = default;

    /// Which profile kind it serves.
    virtual EngineKind kind() const = 0;

    /// The settings it knows, spelled as the engine spells them, with the built-in defaults of
    /// the current release (a profile's `settings` overrides them per version).
    virtual const std::vector<SettingSpec>& settings() const = 0;

    /// The plan's inputs: reads @p settings and the generic fields of @p request, errors (naming
    /// both spellings) when they disagree, and completes @p settings with the values it derived
    /// (EngineSettings::setDerived) so that the plan lists every setting it applied.
    virtual tl::expected<EngineSetup, std::string> configure(const PlanRequest& request, EngineSettings& settings) const = 0;

    /// What the engine cannot run (weight format, KV dtype), each with the reason; empty = runs.
    virtual std::vector<EngineRefusal> compatibility(const PlanRequest& request, const EngineSetup& setup) const;

    /// The engine's bill of the busiest device.
    virtual EngineBill bill(const EngineInputs& in) const = 0;

    /// What the engine holds beyond its memory fraction, for @p plan of @p request (the planned
    /// terms, replaced by @p measured where given); nullopt for an engine without a fraction of
    /// the card (llama.cpp, Ollama, TensorRT-LLM's fraction of free memory after the build, flat).
    virtual std::optional<FractionHolding> fractionHolding(const PlanRequest& request, const PlanResult& plan,
                                                           const MeasuredHolding& measured) const;

    /// Whether it can keep some layers in host memory (llama.cpp -ngl, Ollama num_gpu); an engine
    /// that cannot refuses PlanRequest::gpuLayers below all layers, saying so.
    virtual bool offloadsLayers() const { return false; }
    /// For an engine without a layer split that was asked for one (PlanRequest::layerOffloadAsked):
    /// its own offload of the weights to host memory, and how much of it would make them fit when
    /// they do not (@p shortfall: weights + overheads beyond the usable memory, 0 when they fit);
    /// empty: it has none (TGI, TensorRT-LLM), the plan's note then says only that.
    virtual std::string weightOffloadHint(const EngineInputs& /*in*/, Bytes /*shortfall*/) const { return {}; }
    /// Whether Headroom plans it with no GPU at all (the host-only card "cpu", Card::hostOnly):
    /// llama.cpp's CPU backend. The others refuse such a plan (FitLimit::EngineNeedsGpu), saying so.
    virtual bool runsOnHost() const { return false; }
    /// How it runs a draft model for speculative decoding (PlanRequest::draft).
    virtual DraftSupport draftSupport() const { return {{}, "has no speculative decoding with a draft model", false}; }
};

/// The unit of @p kind (a static instance; never null).
const Engine& engineFor(EngineKind kind);

/// The version a plan applies: the version asked (`--engine vllm@0.6`, EnginePolicy::requestedVersion)
/// or else the profile's release.
std::string appliedEngineVersion(const EnginePolicy& policy);

} // namespace headroom
