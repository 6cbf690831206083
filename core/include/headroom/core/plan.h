#pragma once
/// @file plan.h
/// One plan: a model in a weight format with a KV dtype on a card under an engine policy,
/// giving the per-device bill (weights, KV, named overheads) and the capacity (max resident
/// tokens, max context for N users, max users at context C, the frontier, fits or not and why).

#include "headroom/core/capacity.h"
#include "headroom/core/card.h"
#include "headroom/core/enginepolicy.h"
#include "headroom/core/engines/bill.h"
#include "headroom/core/engines/settings.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/modelprofile.h"
#include "headroom/core/overheads.h"
#include "headroom/core/speed/planspeed.h"
#include "headroom/core/verdict.h"
#include "headroom/core/weightformat.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// Figures measured on a device (a probe, or an engine's own log) that replace the estimates.
struct MeasuredOverheads {
    std::optional<Bytes> activationPeakBytes;  ///< prefill/profile activation peak beyond weights
    std::optional<Bytes> runtimeBytes;         ///< CUDA context + non-torch memory
    std::optional<Bytes> cudaGraphBytes;       ///< CUDA graph pool
    std::string source;                        ///< what measured them (a calibration's name); the plan names it in its notes
};

/// A draft model for speculative decoding (`--draft MODEL`): the engine loads its weights beside
/// the target's and keeps its KV cache for the same context and users (Engine::draftSetting).
struct DraftRequest {
    ModelProfile model;
    WeightFormat format;
};

/// A further GPU of a plan that places one model over several cards (`-c rtx-3090 -c rtx-3060`):
/// its card and the memory free on it now.
struct GpuDevice {
    Card card;
    std::optional<Bytes> freeBytes; ///< free now (`--free`/`--used`); absent: the card total
};

/// What to plan.
struct PlanRequest {
    ModelProfile model;
    WeightFormat format;
    KvDtype kvDtype;
    Card card;
    EnginePolicy engine;
    std::uint32_t tensorParallel = 1;             ///< TP size: weights and KV heads sharded
    std::uint32_t pipelineParallel = 1;           ///< PP size: layers split
    std::optional<std::uint64_t> contextTokens;   ///< context per user; default: the engine's (Ollama tiers) or the model's
    std::optional<std::uint64_t> users;           ///< concurrent sequences
    std::optional<std::uint64_t> ubatchTokens;    ///< micro-batch; default: the engine's
    std::optional<bool> flashAttention;           ///< default: the engine's
    std::optional<std::uint64_t> nominalParameters; ///< `--params N`: replaces the derived count
    /// Device memory free now (`--free SIZE`, or the card total minus `--used SIZE`: the desktop and
    /// other processes). Engines that size from free memory (llama.cpp --fit, Ollama's
    /// memory.available) start from it; absent: the card total. Never more than the total.
    std::optional<Bytes> freeBytes;
    /// The GPUs after `card` (CUDA1, CUDA2, ... in device order) when the engine places one model's
    /// layers over several cards (Ollama's estimator: layers.split; llama.cpp --tensor-split);
    /// empty: one GPU. Engines that shard over identical cards instead (--tp/--pp: vLLM, SGLang,
    /// TGI, TensorRT-LLM) refuse it (makePlan).
    std::vector<GpuDevice> moreGpus;
    /// Layers on the GPU (`--offload`): absent = the engine's own placement (llama.cpp --fit, Ollama's
    /// estimator: all that fit); 0 = none (everything in host memory); N = N layers counted as
    /// llama.cpp's -ngl counts them (output layer included). Engines that keep every layer on the GPU
    /// refuse a value below the model's layers + 1 (Engine::offloadsLayers).
    std::optional<std::uint32_t> gpuLayers;
    /// Whether `--offload` was typed at all (auto, none or N): an engine without a layer split
    /// (Engine::offloadsLayers false) then says in a note that it does not apply it, and names its
    /// own offload where it has one (Engine::weightOffloadHint).
    bool layerOffloadAsked = false;
    /// Host memory the plan may use (`--host-ram SIZE`: RAM free for the engine, after the OS and the
    /// desktop): what a split keeps in host memory must fit in it (FitLimit::HostMemory); absent:
    /// not checked.
    std::optional<Bytes> hostMemoryBytes;
    /// The host's memory bandwidth in 10^9 B/s (`--host-bandwidth ddr5-5600x2` or a measured figure):
    /// the speed of the layers a split keeps in host memory (speed/splitspeed.h); absent: dual-channel
    /// DDR5-5600 (kDefaultHostBandwidthGBps), said as assumed.
    std::optional<double> hostBandwidthGBps;
    /// Speculative decoding with a draft model (`--draft MODEL`): its weights and its KV cache join
    /// the bill of an engine that runs one; an engine that does not is refused it.
    std::optional<DraftRequest> draft;
    MeasuredOverheads measured;
    SpeedCalibration speedCalibration;            ///< measured bandwidth/compute for the speed figures
    /// The engine's own settings as typed (`--set KEY=VALUE`), spelled as the engine spells them
    /// (engines/settings.h; the keys each engine knows are listed by `headroom-cli engines`).
    /// A setting with a generic twin above (vLLM max-model-len and contextTokens, max-num-batched-tokens
    /// and ubatchTokens, tensor-parallel-size and tensorParallel, kv-cache-dtype and kvDtype, ...) must
    /// agree with it when both are given; either alone sets both. A 16-bit kvDtype counts as the
    /// engine's default ("auto", "f16") and yields to the engine's KV setting.
    std::vector<EngineSetting> engineSettings;
};

/// The per-device result.
struct PlanResult {
    std::string modelId;
    std::string formatId;
    std::string kvDtypeId;
    std::string cardId;
    std::string engineId;
    std::string engineVersion;                ///< the engine version whose rules the plan applies ("0.6", "v0.19.1")
    std::vector<SettingValue> engineSettings; ///< every engine setting the plan applied (given, default or derived)
    std::vector<EngineFigure> engineFigures;  ///< the figures the engine prints ("# GPU blocks", ...)
    std::uint32_t tensorParallel = 1;
    std::uint32_t pipelineParallel = 1;

    std::uint64_t parameters = 0;             ///< whole model
    std::string parametersSource;             ///< "architecture", "nominal", "files"
    Bytes weightsBytes;                       ///< on the busiest device
    std::map<std::string, Bytes> weightsByRole; ///< whole model (before sharding)
    bool weightsExact = false;                ///< sized from the model's own files
    KvLayout kv;                              ///< per device (the draft model's layers included)
    Bytes kvBytesPerToken;                    ///< kv_bytes_per_token per device (the draft model's included)
    std::string draftModelId;                 ///< the draft model of speculative decoding ("" = none)
    std::string draftFormatId;
    Bytes draftWeightsBytes;                  ///< its weights on the busiest device (inside weightsBytes)
    Bytes draftKvBytesPerToken;               ///< its KV per token per device (inside kvBytesPerToken)
    Paging paging;
    std::uint64_t ubatchTokens = 0;
    bool flashAttention = true;

    Bytes cardTotalBytes;                     ///< driver-reported total (0 for the host-only card "cpu")
    bool hostOnly = false;                    ///< no GPU: the plan runs on the host's CPU and RAM (Card::hostOnly)
    Bytes usableBytes;                        ///< what the engine allows for weights + overheads + KV
    std::vector<OverheadItem> overheads;      ///< priced inside usable (context, activations, logits, ...)
    std::vector<OverheadItem> reserved;       ///< kept outside usable (utilization headroom, margins)
    Bytes kvBudgetBytes;                      ///< usable - weights - overheads (0 when negative)
    std::uint64_t maxResidentTokens = 0;
    std::uint64_t kvBlocks = 0;               ///< paged engines: blocks in the pool
    /// The answer (verdict.h): state, binding limit, headline number and reason. Faces print this.
    Verdict verdict;
    bool fits = false;                        ///< = verdict.fits()
    std::string reason;                       ///< = verdict.reason
    /// What the engine refuses about this plan (format, KV dtype, a startup check), set by the
    /// engine's rules before the verdict; the verdict names the first that applies.
    std::vector<EngineRefusal> refusals;
    /// The engine's cap on concurrent sequences (vLLM --max-num-seqs), when it has one.
    std::optional<SequenceCap> sequenceCap;

    std::uint64_t contextTokens = 0;          ///< the context asked about (or defaulted)
    std::uint64_t users = 0;                  ///< the users asked about (or 1)
    std::optional<std::uint64_t> maxUsers;    ///< at contextTokens (when a context was given)
    std::optional<std::uint64_t> maxContext;  ///< for `users` (when users were given), capped at the model's context
    std::optional<double> maxConcurrency;     ///< vLLM's figure at contextTokens
    std::uint64_t modelContextTokens = 0;     ///< the model's trained context (0 = unknown)
    std::vector<FrontierPoint> frontier;
    std::vector<std::string> notes;
    /// Roofline speed at the plan's users and context; absent when the card has no bandwidth figure.
    std::optional<SpeedSummary> speed;

    /// The KV pool, for further capacity questions.
    KvPool pool() const { return {kv, kvBudgetBytes, paging, ubatchTokens}; }
};

/// Computes the plan. Errors (as text naming the input): no architecture and no way to size the
/// KV cache, an invalid architecture, TP not dividing the heads, arithmetic overflow.
tl::expected<PlanResult, std::string> makePlan(const PlanRequest& request);

} // namespace headroom
