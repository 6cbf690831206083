// vLLM: gpu_memory_utilization of the card total, less the weights, the profile run's torch
// peak, the non-torch memory (and the CUDA-graph estimate where it is subtracted), in blocks of
// block_size tokens. Rules: vllm/worker/worker.py determine_num_available_blocks (V0, v0.6.x);
// vllm/v1/worker/gpu_worker.py determine_available_memory and vllm/v1/core/kv_cache_utils.py
// (V1); settings: vllm/engine/arg_utils.py (EngineArgs). The terms are engines/vllmmemory.h,
// the block arithmetic enginerules.h.

#include "common.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/engines/vllmmemory.h"
#include "headroom/core/engines/vllmoffload.h"

#include <algorithm>
#include <cstdio>

namespace headroom::engines {

namespace {

// vLLM's argparse accepts both spellings (FlexibleArgumentParser, vllm/utils/__init__.py).
SettingSpec spec(std::string key, SettingType type, std::string defaultValue, std::string help, double lo = 0,
                 double hi = 0, std::vector<std::string> choices = {})
{
    std::string underscored = key;
    for (char& c : underscored)
        if (c == '-')
            c = '_';
    return makeSpec(std::move(key), type, std::move(defaultValue), std::move(help), lo, hi, std::move(choices),
                    {underscored});
}

const std::vector<SettingSpec>& vllmSettings()
{
    static const std::vector<SettingSpec> specs = {
        spec("gpu-memory-utilization", SettingType::Number, "",
             "fraction of the card total vLLM may use; default: the profile's memory_fraction (0.9)", 0, 1),
        spec("max-model-len", SettingType::Integer, "", "context per request; default: --context, else the model's", 1,
             1ull << 36),
        spec("max-num-seqs", SettingType::Integer, "", "most sequences running at once: caps max_users", 1, 1 << 24),
        spec("max-num-batched-tokens", SettingType::Integer, "",
             "tokens of one forward pass (the profile run's batch); default: --ubatch, else the profile's", 1, 1 << 24),
        spec("block-size", SettingType::Integer, "", "tokens per KV block; default: the profile's (16)", 1, 1024),
        spec("kv-cache-dtype", SettingType::Choice, "", "KV cache dtype; auto = the model's 16-bit dtype", 0, 0,
             {"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_per_token_head", "int8_per_token_head",
              "nvfp4"}),
        spec("enforce-eager", SettingType::Boolean, "false", "CUDA graphs off: no graph pool"),
        spec("kv-cache-memory-bytes", SettingType::Size, "", "KV cache size in bytes, bypassing the utilization rule"),
        spec("swap-space", SettingType::Number, "4", "CPU swap space per GPU in GiB (host memory, not on the card)", 0,
             1 << 20),
        spec("cpu-offload-gb", SettingType::Number, "0",
             "GiB of each GPU's weights kept in pinned host memory, read over PCIe every step (engines/vllmoffload.h)", 0,
             1 << 20),
        spec("enable-chunked-prefill", SettingType::Boolean, "", "prefill in chunks of max-num-batched-tokens"),
        makeSpec("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", SettingType::Boolean, "",
                 "environment: charge the pool for the CUDA graphs captured after it (vllm/envs.py); default: the "
                 "version's (on from v0.21.0, off before)"),
        makeSpec("VLLM_USE_V1", SettingType::Boolean, "",
                 "environment: the V1 engine, opt-in on the 0.7 line and the default from v0.8.0 (vllm/envs.py); default: "
                 "the version's (engines/vllmmemory.h runsV1)"),
        makeSpec("VLLM_USE_FLASHINFER_SAMPLER", SettingType::Boolean, "",
                 "environment: the sampler's top-k/top-p path, 1 FlashInfer (where installed), 0 PyTorch-native; default: "
                 "the version's (FlashInfer from v0.17, native before; engines/vllmmemory.h flashInferSampler)"),
        spec("tensor-parallel-size", SettingType::Integer, "", "TP size; default: --tp", 1, 1024),
        spec("pipeline-parallel-size", SettingType::Integer, "", "PP size; default: --pp", 1, 1024),
        interconnectSpec(),
    };
    return specs;
}

std::string kvIdFromVllm(const std::string& v)
{
    if (v == "auto")
        return "";
    if (v == "bfloat16")
        return "bf16";
    if (v == "float16")
        return "fp16";
    return v; // fp8, fp8_e4m3, fp8_e5m2, fp8/int8_per_token_head, nvfp4 are kvcache.h ids
}

std::string vllmFromKvId(const std::string& id)
{
    return isDefaultKvDtype(id) ? "auto" : id;
}

/// The model dtype's bytes: 4 for an fp32 checkpoint, else 2 (fp8/int weights run bf16/fp16).
std::uint32_t activationBytes(const WeightFormat& f)
{
    return f.kind == FormatKind::Float && f.bits == 32 ? 4 : 2;
}

std::string gib(Bytes b)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b.value) / static_cast<double>(kGiB));
    return buf;
}

/// The CUDA-graph estimate vLLM's profiler charges when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is
/// on and the profile carries none (before v0.21): the median of the "Estimated CUDA graph memory:
/// X GiB total" figures of the 59 completed v0.19.0 H100 logs of the llm-d-planner sweep
/// (accuracy/results/v0.19.0/logs at d3121e05), 0.84 GiB; the vllm-0.21 profile carries the same.
/// A figure, not a rule by model shape: vLLM measures the estimate (vllm/v1/worker/gpu_model_runner.py
/// profile_cudagraph_memory at 000fc94b: per mode, the free-memory drop of capturing the largest and
/// the second-largest size into a throw-away pool; the largest first capture over the modes + (graphs
/// - 1) x the second, at least 1 MiB, per mode), and the printed estimates follow neither hidden
/// size, layers nor TP (Llama-3.1-8B 0.84 / 1.69 / 0.57 GiB at TP 1 / 2 / 4 in the same sweep).
constexpr std::uint64_t kEstimatedGraphBytes = 901943132;

/// What the TP > 1 non-torch figure of @p link holds (vllmmemory.h nonTorchTensorParallelBytes).
std::string tensorParallelNonTorchHow(Interconnect link, std::uint32_t tp)
{
    switch (link) {
    case Interconnect::NvSwitch:
        return "NCCL channels and NVLS buffers and custom all-reduce buffers (vLLM's printed H100 NVSwitch figures)";
    case Interconnect::NvLink:
        return "NCCL's NVLink channels and custom all-reduce buffers (vLLM's printed H100 NVSwitch figures, an upper bound "
               "without a switch)";
    case Interconnect::PciePeer:
        return std::string("the single-GPU figure (engine profile) + NCCL's P2P buffers of 2 channels in device memory")
            + (tp == 2 ? " + the custom all-reduce's two 8 MiB IPC buffers" : " (custom all-reduce off on more than two PCIe GPUs)");
    case Interconnect::Pcie:
        return "the single-GPU figure (engine profile): NCCL's buffers in host memory without P2P, no custom all-reduce";
    case Interconnect::Network:
        return "the single-GPU figure (engine profile): NCCL's network buffers in host memory, no custom all-reduce "
               "across nodes";
    }
    return {};
}

/// The terms vLLM's profiler subtracts besides the weights (vllmmemory.h), each replaced by its
/// measured figure when given: the rotary cache loaded with the model, the torch peak increase
/// of the profile run, the non-torch memory, and the CUDA-graph pool where subtracted.
void billProfileRun(const EngineInputs& in, vllm::ProfilerRule rule, std::vector<OverheadItem>& out)
{
    const PlanRequest& r = in.request;
    const MeasuredOverheads& m = r.measured;
    const EngineSetup& s = in.setup;
    const std::uint32_t act = activationBytes(r.format);
    out.push_back(item("rotary_cache", vllm::rotaryCacheBytes(in.arch, act),
                       "cos/sin cache, max_position_embeddings x rotary dim (part of vLLM's \"Model loading took\")"));

    const std::string version = appliedEngineVersion(r.engine);
    const bool v1 = vllm::runsV1(version, in.settings.boolean("VLLM_USE_V1"));
    const std::uint64_t seqs = in.settings.integer("max-num-seqs").value_or(256);
    vllm::ProfileShape shape;
    // V1 before v0.8: the forward pass and the logits of all its rows, no sampler (vllmmemory.h).
    shape.samplerRun = !v1 || vllm::v1ProfileSamples(version);
    shape.batchedTokens = s.ubatchTokens;
    shape.samplerRows = std::min(seqs, s.ubatchTokens);
    shape.tensorParallel = s.tensorParallel;
    shape.pipelineParallel = s.pipelineParallel;
    shape.activationBytes = act;
    const bool flashInfer = vllm::flashInferSampler(appliedEngineVersion(r.engine), in.settings.boolean("VLLM_USE_FLASHINFER_SAMPLER"));
    shape.samplerExtraBytes = vllm::samplerExtraBytesForPath(flashInfer);
    shape.persistentMoeWorkspace = vllm::persistentMoeWorkspace(appliedEngineVersion(r.engine));
    const vllm::ProfilePeak peak = vllm::profilePeak(in.arch, shape);
    const bool samplerBinds = peak.samplerBytes.value >= peak.forwardBytes.value;
    const std::string workspace = peak.moeWorkspaceBytes.value == 0
        ? std::string()
        : gib(peak.moeWorkspaceBytes) + " fused-MoE workspace (kept by the workspace manager) + ";
    const std::string last = shape.samplerRun
        ? "sampler of " + formatThousands(shape.samplerRows) + " rows x "
        : "logits (no sampler: V1 before v0.8) of " + formatThousands(shape.batchedTokens) + " rows x ";
    out.push_back(item("activation_peak", m.activationPeakBytes.value_or(peak.peakBytes()),
                       m.activationPeakBytes
                           ? std::string("measured")
                           : "profile run torch peak: " + workspace + "max(forward of " + formatThousands(shape.batchedTokens) + " tokens "
                                 + gib(peak.forwardBytes) + ", " + last + formatThousands(in.arch.vocabSize) + " vocab "
                                 + gib(peak.samplerBytes) + ") = "
                                 + (samplerBinds ? (shape.samplerRun ? "sampler" : "logits") : "forward")));

    const PlanInterconnect link = planInterconnect(r, in.settings);
    const Bytes nonTorch = m.runtimeBytes.value_or(vllm::nonTorchBytes(
        appliedEngineVersion(r.engine), s.tensorParallel, s.pipelineParallel, r.engine.runtimeBytes, link.link));
    std::string how;
    if (m.runtimeBytes)
        how = "measured";
    else if (rule == vllm::ProfilerRule::TotalPeak)
        how = "non-torch memory after the profile run, CUDA context included (engine profile)";
    else if (s.tensorParallel > 1)
        how = "non-torch increase of the profile run per rank with TP " + std::to_string(s.tensorParallel) + ", "
            + link.note() + ": " + tensorParallelNonTorchHow(link.link, s.tensorParallel);
    else if (s.pipelineParallel > 1)
        how = "non-torch increase of the profile run per rank with PP (from vLLM's printed figures)";
    else
        how = "non-torch increase of the profile run (engine profile)";
    out.push_back(item("non_torch", nonTorch, how));

    // CUDA graphs are captured after the KV cache is allocated; vLLM subtracts a graph estimate
    // when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is on (vllm/envs.py: off by default before
    // v0.21, on from v0.21.0: the profile's cuda_graph_bytes), never with --enforce-eager.
    const bool eager = in.settings.boolean("enforce-eager").value_or(false);
    const std::optional<bool> estimate = in.settings.boolean("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS");
    Bytes estimated = r.engine.cudaGraphBytes;
    if (estimate && !*estimate)
        estimated = Bytes{};
    else if (estimate && estimated.value == 0)
        estimated = Bytes{kEstimatedGraphBytes};
    const Bytes graphs = eager ? Bytes{} : m.cudaGraphBytes.value_or(estimated);
    if (graphs.value > 0)
        out.push_back(item("cuda_graphs", graphs, m.cudaGraphBytes ? "measured" : "engine profile"));
}

/// The pool as vLLM lays it out from the KV budget.
struct VllmPool {
    std::uint64_t engineBlocks = 0; ///< vLLM's num_blocks (of one layer-group page each when hybrid)
    std::uint64_t modelBlocks = 0;  ///< blocks of blockTokens tokens of every layer: tokens / block
    std::optional<double> concurrency; ///< "Maximum concurrency" at max-model-len (context > 0)
    std::string how;                ///< a note for hybrid models, else empty
};

/// One group of every layer (vllmMaxConcurrency), or the hybrid KV cache manager's groups for a
/// model of full and sliding-window layers of one page size (vllmmemory.h HybridKvGroups; not
/// with pipeline parallelism, whose per-stage projection is not modelled).
VllmPool vllmPool(const EngineInputs& in, Bytes budget)
{
    const std::uint64_t block = std::max<std::uint64_t>(in.setup.paging.blockTokens, 1);
    const std::uint64_t ctx = in.setup.contextTokens;
    const KvLayout& kv = in.kv;
    const std::string version = appliedEngineVersion(in.request.engine);
    VllmPool p;
    // Attention and Mamba layers share pages of one size (the state padded to block x the attention
    // bytes a token, vllmmemory.h hybridMambaBlockTokens), grouped as full and sliding layers are;
    // a request holds ceil(context / block) pages of each attention group and one page of each
    // Mamba group (kv_cache_interface.py MambaSpec.max_memory_usage_bytes = one page).
    if (kv.recurrentLayers > 0 && kv.fullLayers > 0 && kv.slidingLayers == 0 && !vllm::isV0(version)
        && vllm::hybridKvCacheManager(version) && in.setup.pipelineParallel <= 1) {
        const std::optional<vllm::HybridKvGroups> mamba = vllm::hybridKvGroups(kv.fullLayers, kv.recurrentLayers);
        const std::uint64_t pageBytes = kv.fullBytesPerToken.value / kv.fullLayers * block;
        if (mamba && pageBytes > 0) {
            p.engineBlocks = budget.value / pageBytes / mamba->groupSize;
            p.modelBlocks = p.engineBlocks / mamba->groups();
            if (ctx > 0) {
                const std::uint64_t perRequest = mamba->fullGroups * vllm::requestBlocksPerGroup(ctx, block, 0, 0, false)
                    + mamba->localGroups;
                p.concurrency = perRequest == 0 ? 0.0 : static_cast<double>(p.engineBlocks) / static_cast<double>(perRequest);
            }
            p.how = "vLLM's hybrid attention + Mamba pool: attention block " + std::to_string(block)
                + " tokens so that a page holds one layer's state (the state padded to " + formatBytes(Bytes{pageBytes})
                + "); " + std::to_string(mamba->fullGroups) + " attention and " + std::to_string(mamba->localGroups)
                + " Mamba groups of " + std::to_string(mamba->groupSize) + " layers share "
                + formatThousands(p.engineBlocks) + " pages; GPU KV cache size = pages // groups x block size "
                + "(vllm/v1/core/kv_cache_utils.py)";
            return p;
        }
    }
    const bool samePage = kv.fullLayers > 0 && kv.slidingLayers > 0
        && kv.fullBytesPerToken.value * kv.slidingLayers == kv.slidingBytesPerToken.value * kv.fullLayers;
    const std::optional<vllm::HybridKvGroups> groups = samePage && !vllm::isV0(version) && vllm::hybridKvCacheManager(version)
            && in.setup.pipelineParallel <= 1
        ? vllm::hybridKvGroups(kv.fullLayers, kv.slidingLayers)
        : std::nullopt;
    if (!groups) {
        const Bytes blockBytes = in.kvBytesPerToken * block;
        p.engineBlocks = p.modelBlocks = blockBytes.value == 0 ? 0 : budget.value / blockBytes.value;
        if (ctx > 0)
            p.concurrency = vllmMaxConcurrency(p.engineBlocks, block, ctx);
        return p;
    }
    const std::uint64_t pageBytes = kv.fullBytesPerToken.value / kv.fullLayers * block;
    p.engineBlocks = pageBytes == 0 ? 0 : budget.value / pageBytes / groups->groupSize;
    p.modelBlocks = p.engineBlocks / groups->groups();
    // Llama 4's local layers are chunked (ChunkedLocalAttentionSpec), the others slide.
    const bool chunked = in.arch.family == "llama4";
    const std::uint64_t batched = in.setup.ubatchTokens;
    if (ctx > 0) {
        const std::uint64_t perRequest = groups->fullGroups * vllm::requestBlocksPerGroup(ctx, block, 0, batched, false)
            + groups->localGroups * vllm::requestBlocksPerGroup(ctx, block, kv.windowTokens, batched, chunked);
        p.concurrency = perRequest == 0 ? 0.0 : static_cast<double>(p.engineBlocks) / static_cast<double>(perRequest);
    }
    const std::uint32_t padded = groups->groupSize * groups->groups() - kv.fullLayers - kv.slidingLayers;
    p.how = "vLLM's hybrid KV cache manager: " + std::to_string(groups->fullGroups) + " full-attention and "
        + std::to_string(groups->localGroups) + (chunked ? " chunked-local" : " sliding-window") + " groups of "
        + std::to_string(groups->groupSize) + " layers" + (padded > 0 ? " (" + std::to_string(padded) + " padding layers)" : "")
        + " share " + formatThousands(p.engineBlocks) + " pages; GPU KV cache size = pages // groups x block size "
        + "(vllm/v1/core/kv_cache_utils.py)";
    return p;
}

/// The rotary cache item of @p overheads (0 when absent): part of "Model loading took".
Bytes rotaryItem(const std::vector<OverheadItem>& overheads)
{
    for (const OverheadItem& i : overheads)
        if (i.name == "rotary_cache")
            return i.bytes;
    return {};
}

/// The weights (and rotary cache) the device holds after loading, as the version prints them:
/// V0 "Loading model weights took %.4f GB" (vllm/worker/model_runner.py load_model, GB of 2^30 B),
/// V1 "Model loading took %.4f GiB" (vllm/v1/worker/gpu_model_runner.py load_model).
EngineFigure modelLoadingFigure(const std::string& version, Bytes loaded)
{
    char line[96];
    const double g = static_cast<double>(loaded.value) / static_cast<double>(kGiB);
    if (vllm::isV0(version))
        std::snprintf(line, sizeof line, "Loading model weights took %.4f GB", g);
    else
        std::snprintf(line, sizeof line, "Model loading took %.4f GiB", g);
    return {"model_loading_bytes", static_cast<double>(loaded.value), "bytes", line,
            vllm::isV0(version) ? "vllm/worker/model_runner.py load_model (V0)" : "vllm/v1/worker/gpu_model_runner.py load_model (V1)"};
}

/// Whether @p version applies --cpu-offload-gb to @p arch. The offloader is installed only by the
/// V1 model runner (vllm/v1/worker/gpu_model_runner.py set_offloader); Model Runner V2 never
/// installs it, so the setting is accepted and ignored (vllm#51396, 2026-08; open fixes PR 48468,
/// PR 51462). MRv2 became the default for dense models with PR 44443 (merged 2026-07-02; the
/// no-op seen on 0.25.1 in defilantech/LLMKube#1320) and for all models in v0.29.0 (release
/// notes: "the default runner for all models").
bool offloadApplied(const std::string& version, const Architecture& arch, std::string& why)
{
    const bool moe = arch.moe.expertCount > 0;
    if (compareVersions(version, "0.29.0") >= 0 || (!moe && compareVersions(version, "0.25.0") >= 0)) {
        why = "vLLM " + version + " runs " + (moe ? "every model" : "dense models") + " on Model Runner V2, which ignores "
            + "--cpu-offload-gb (vllm#51396): every weight stays on the GPU; VLLM_USE_V2_MODEL_RUNNER=0 selects the V1 "
              "runner, where the offload applies";
        return false;
    }
    return true;
}

/// --cpu-offload-gb on the busiest rank (engines/vllmoffload.h): the weights left on the device,
/// the host side as figures (host_weights_bytes, read by the verdict's host bill and --host-ram)
/// and a note. Returns the offloaded bytes (0 when the setting is 0 or not applied).
Bytes billCpuOffload(const EngineInputs& in, EngineBill& b)
{
    const double offloadGib = in.settings.number("cpu-offload-gb").value_or(0);
    if (offloadGib <= 0)
        return {};
    const std::string version = appliedEngineVersion(in.request.engine);
    if (compareVersions(version, "0.5.2") < 0) {
        b.refusals.push_back({FitLimit::EngineRefusesToStart,
                              "vLLM " + version + " has no --cpu-offload-gb (PR 6496, from the 0.5.2 development line; "
                                                  "released in 0.5.3)"});
        return {};
    }
    std::string why;
    if (!offloadApplied(version, in.arch, why)) {
        b.notes.push_back(why);
        return {};
    }
    const std::uint32_t stage = static_cast<std::uint32_t>(ceilDiv(in.arch.layers, std::max<std::uint32_t>(in.setup.pipelineParallel, 1)));
    const Bytes cap{static_cast<std::uint64_t>(offloadGib * static_cast<double>(kGiB))};
    const vllm::CpuOffload off = vllm::cpuOffload(in.arch, in.request.format, in.setup.tensorParallel, stage, cap);
    const Bytes moved = std::min(off.offloadedBytes, in.weightsBytes);
    const std::string src = "vllm/model_executor/models/utils.py maybe_offload_to_cpu";
    // Printed by the offloader of later versions ("Total CPU offloaded parameters: N GiB", quoted
    // in vllm#58185); not by V0.
    b.figures.push_back({"cpu_offloaded_bytes", static_cast<double>(moved.value), "bytes",
                         vllm::isV0(version) ? std::string() : "Total CPU offloaded parameters: " + gib(moved), src});
    // Not a line vLLM prints (empty `printed`): the host side of the bill, for the verdict.
    b.figures.push_back({"host_weights_bytes", static_cast<double>(off.pinnedHostBytes.value), "bytes", "", src});
    char asked[32];
    std::snprintf(asked, sizeof asked, "%g", offloadGib);
    b.notes.push_back(std::string("--cpu-offload-gb ") + asked + ": " + gib(moved) + " of weights (" + std::to_string(off.parameters)
                      + " parameters, " + std::to_string(off.wholeLayers) + " whole decoder layers) stay in pinned host memory, "
                      + gib(off.pinnedHostBytes) + " of it as torch's pinned allocator rounds each to a power of two "
                        "(pytorch#150517); they cross PCIe every forward pass");
    if (off.offloadedBytes < cap)
        b.notes.push_back("--cpu-offload-gb asks for more than the " + gib(off.layerBytes)
                          + " of decoder layers on this GPU: embeddings and lm_head never leave it");
    return moved;
}

/// Memory in use at vLLM's init snapshot, before it sizes anything: the CUDA context of the worker
/// (with TP or PP > 1, NCCL's too). "worker init memory snapshot: ... cuda_memory=0.51GiB" on every
/// single-GPU run of the llm-d-planner v0.19.0 H100 sweep, 1.43-1.55 GiB per rank with TP or PP
/// 2-4 (accuracy/results/v0.19.0/logs at d3121e05); the TP 2 MoE runs print up to 2.07 GiB.
constexpr std::uint64_t kInitContextBytes = 547608330;         // 0.51 GiB
constexpr std::uint64_t kInitContextDistributedBytes = 1642824990; // 1.53 GiB

/// The CUDA graphs vLLM captures after the KV cache is sized, when the pool is not charged for
/// them: "Graph capturing finished in S secs, took X GiB", 0.51-1.85 GiB over the same sweep (median
/// 0.94 GiB, Llama-3.1-8B 0.91 GiB), used when the log printed none.
constexpr std::uint64_t kCapturedGraphBytes = 1009317315;      // 0.94 GiB

class VllmEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::Vllm; }
    const std::vector<SettingSpec>& settings() const override { return vllmSettings(); }
    /// A draft model through --speculative-config '{"model": ..., "num_speculative_tokens": N}'
    /// (vllm/config/speculative.py SpeculativeConfig), in the same KV cache dtype.
    DraftSupport draftSupport() const override { return {"--speculative-config", {}, false}; }

    /// No layer split: vLLM's offload is --cpu-offload-gb (billCpuOffload). When the weights miss
    /// the card by @p shortfall, the whole GiB that covers it, checked by the same walk the bill
    /// prices (vllm::cpuOffload on the busiest rank's stage): the walk moves whole parameters
    /// until the cap is reached, so it moves at least the cap unless the decoder layers run out.
    std::string weightOffloadHint(const EngineInputs& in, Bytes shortfall) const override
    {
        std::string hint = "vLLM's offload is --cpu-offload-gb (weights in pinned host memory, per GPU: "
                           "--set cpu-offload-gb=N, which Headroom models)";
        const std::string version = appliedEngineVersion(in.request.engine);
        std::string why;
        if (shortfall.value == 0 || in.settings.number("cpu-offload-gb").value_or(0) > 0
            || compareVersions(version, "0.5.2") < 0 || !offloadApplied(version, in.arch, why))
            return hint;
        const std::uint64_t neededGib = ceilDiv(shortfall.value, kGiB);
        const std::uint32_t stage = static_cast<std::uint32_t>(ceilDiv(in.arch.layers, std::max<std::uint32_t>(in.setup.pipelineParallel, 1)));
        const vllm::CpuOffload off = vllm::cpuOffload(in.arch, in.request.format, in.setup.tensorParallel, stage, Bytes{neededGib * kGiB});
        if (off.offloadedBytes < shortfall)
            return hint + "; the weights are " + gib(shortfall) + " short and all " + gib(off.layerBytes)
                 + " of decoder layers on this GPU would not cover it (embeddings and lm_head never leave it)";
        return hint + "; the weights are " + gib(shortfall) + " short: --set cpu-offload-gb=" + std::to_string(neededGib)
             + " would make them fit";
    }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "max-model-len", name, std::uint64_t{arch.contextLength});
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("max-model-len");
        if (s.given("max-model-len"))
            setup.askedContextTokens = setup.contextTokens;
        // get_batch_defaults of the version for this card (vllmmemory.h).
        const std::string version = appliedEngineVersion(r.engine);
        const vllm::BatchDefaults defaults = vllm::batchDefaults(version, r.card.totalBytes, r.card.name + " " + r.card.id,
                                                                 setup.contextTokens, s.boolean("enable-chunked-prefill"),
                                                                 s.boolean("VLLM_USE_V1"));
        if (!s.given("enable-chunked-prefill"))
            s.setDerived(derivedBoolean("enable-chunked-prefill", defaults.chunkedPrefill));
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "max-num-batched-tokens", name, defaults.maxNumBatchedTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto block = reconcileCount(std::nullopt, "", s, "block-size", name, std::max<std::uint64_t>(r.engine.blockTokens, 1));
        if (!block)
            return tl::unexpected(block.error());
        setup.paging.blockTokens = **block;
        auto tp = reconcileParallel(r.tensorParallel, "--tp", s, "tensor-parallel-size", name);
        if (!tp)
            return tl::unexpected(tp.error());
        setup.tensorParallel = *tp;
        auto pp = reconcileParallel(r.pipelineParallel, "--pp", s, "pipeline-parallel-size", name);
        if (!pp)
            return tl::unexpected(pp.error());
        setup.pipelineParallel = *pp;
        if (setup.tensorParallel > 1)
            recordInterconnect(r, s);
        auto kv = reconcileKvDtype(r.kvDtype, s, "kv-cache-dtype", name, &kvIdFromVllm, &vllmFromKvId);
        if (!kv)
            return tl::unexpected(kv.error());
        setup.kvDtypeId = *kv;
        if (s.given("max-num-seqs")) {
            setup.maxSequences = s.integer("max-num-seqs");
            setup.maxSequencesSetting = "--max-num-seqs";
        } else {
            s.setDerived(derivedInteger("max-num-seqs", defaults.maxNumSeqs));
        }
        if (!s.find("gpu-memory-utilization"))
            s.setDerived(derivedNumber("gpu-memory-utilization", r.engine.memoryFraction));
        // Attention and Mamba (or Gated DeltaNet) layers in one pool: the attention block grows
        // until one page holds one layer's state (vllmmemory.h hybridMambaBlockTokens; V1 only).
        if (!vllm::isV0(version) && vllm::hybridKvCacheManager(version) && arch.hybrid.enabled()) {
            const std::optional<KvDtype> dtype = findKvDtype(setup.kvDtypeId.empty() ? "bf16" : setup.kvDtypeId);
            const KvLayout kv = dtype ? kvLayout(arch, *dtype, setup.tensorParallel) : KvLayout{};
            if (kv.recurrentLayers > 0 && kv.fullLayers > 0 && kv.slidingLayers == 0) {
                setup.paging.blockTokens = vllm::hybridMambaBlockTokens(
                    kv.fullBytesPerToken.value / kv.fullLayers, kv.stateBytesPerSequence.value / kv.recurrentLayers,
                    setup.paging.blockTokens);
                if (!s.given("block-size")) // the settings line shows the block vLLM sets, not the default
                    s.setDerived(derivedInteger("block-size", setup.paging.blockTokens));
            }
        }
        return setup;
    }

    /// vLLM serves Hugging Face checkpoints (fp16/bf16, fp8, GPTQ/AWQ, bitsandbytes); its GGUF loader
    /// (vllm/model_executor/model_loader/gguf_loader.py, experimental) is not modelled, so GGML types
    /// are refused. Its KV cache dtypes are auto/bfloat16/fp8/fp8_e4m3/fp8_e5m2 (vllm/config/cache.py
    /// CacheDType, v0.19): no block-quantized q8_0/q4_0 cache. Later versions add
    /// fp8_per_token_head / int8_per_token_head (PR 38378, merged 2026-03-27, Triton attention) and
    /// nvfp4 (PR 40177, merged 2026-04-17, FlashInfer trtllm-gen on Blackwell SM100), present in
    /// vllm/config/cache.py at commit 002f10e0; v0.19.0 was tagged 2026-04-03 and its CacheDType has
    /// none of them, so Headroom takes them from v0.20.0 on. They price standard attention only:
    /// MLAAttentionSpec has no NVFP4 page layout and the per-token-head path is Triton attention's,
    /// not an MLA backend's, so an MLA model is refused them.
    std::vector<EngineRefusal> compatibility(const PlanRequest& r, const EngineSetup& setup) const override
    {
        std::vector<EngineRefusal> out = Engine::compatibility(r, setup);
        if (r.format.kind == FormatKind::Ggml)
            out.push_back({FitLimit::EngineFormat, "vLLM serves Hugging Face checkpoints (fp16/bf16, fp8, GPTQ/AWQ, "
                                                   "bitsandbytes), not GGML type " + r.format.id
                                                   + " (its experimental GGUF loader is not modelled)"});
        const std::string& kv = setup.kvDtypeId;
        const bool newer = kv == "fp8_per_token_head" || kv == "int8_per_token_head" || kv == "nvfp4";
        if (!kvDtypeAccepted(kv, {"fp8", "fp8_e4m3", "fp8_e5m2"}) && !newer)
            out.push_back({FitLimit::EngineKvDtype, "vLLM has no " + kv
                                                        + " KV cache (--kv-cache-dtype: auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, "
                                                          "fp8_per_token_head, int8_per_token_head, nvfp4; vllm/config/cache.py)"});
        const std::string version = appliedEngineVersion(r.engine);
        if (newer && compareVersions(version, "0.20.0") < 0)
            out.push_back({FitLimit::EngineKvDtype, "vLLM " + version + " has no " + kv + " KV cache (vllm/config/cache.py "
                                                    "CacheDType: it came after v0.19, with "
                                                    + (kv == "nvfp4" ? std::string("PR 40177") : std::string("PR 38378"))
                                                    + "); plan with --engine vllm@0.20 or later"});
        else if (newer && r.model.architecture && r.model.architecture->mla.cachesLatent())
            out.push_back({FitLimit::EngineKvDtype, "vLLM's MLA cache (MLAAttentionSpec) has no " + kv
                                                    + " layout: an MLA model takes fp8 or fp8_ds_mla (vllm/v1/kv_cache_interface.py)"});
        return out;
    }

    /// vLLM claims gpu_memory_utilization x the card total (v1/worker/gpu_worker.py
    /// requested_memory) and sizes the KV cache inside it; its process also holds (v0.19.0
    /// gpu_worker.py compile_or_warm_up_model, which prints "Free memory on device (F/T GiB) on
    /// startup ... Actual usage is W GiB for weight, A GiB for peak activation, N GiB for non-torch
    /// memory, and G GiB for CUDAGraph memory" and sizes "--kv-cache-memory=... to fully utilize gpu
    /// memory" as init free - (W + A + N + G) - 150 MiB):
    ///   - from V1 0.9 on (the profile measured against the init snapshot), what was in use at that
    ///     snapshot (total - free_memory: the CUDA context), outside the claim;
    ///   - the CUDA graphs captured after the pool is sized, unless the pool was charged for them
    ///     (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, an overhead of the plan) or --enforce-eager.
    /// V0 and v0.8 count all non-torch memory, the context included, inside the claim.
    std::optional<FractionHolding> fractionHolding(const PlanRequest& r, const PlanResult& plan,
                                                   const MeasuredHolding& m) const override
    {
        FractionHolding h;
        h.baseBytes = r.card.totalBytes;
        const std::string version = appliedEngineVersion(r.engine);
        if (vllm::profilerRule(version) == vllm::ProfilerRule::SnapshotDelta) {
            const bool distributed = plan.tensorParallel * plan.pipelineParallel > 1;
            const Bytes context = m.cardUsedAtStartBytes.value_or(
                Bytes{distributed ? kInitContextDistributedBytes : kInitContextBytes});
            h.held.push_back(item("cuda_context", context,
                                  m.cardUsedAtStartBytes
                                      ? "in use at the init snapshot (total - free_memory, measured): outside gpu-memory-utilization"
                                      : "in use at the init snapshot, the CUDA context (llm-d-planner v0.19.0 H100 logs): "
                                        "outside gpu-memory-utilization"));
        }
        const bool eager = std::any_of(plan.engineSettings.begin(), plan.engineSettings.end(), [](const SettingValue& v) {
            return v.key == "enforce-eager" && v.integer != 0;
        });
        const bool charged = std::any_of(plan.overheads.begin(), plan.overheads.end(),
                                         [](const OverheadItem& i) { return i.name == "cuda_graphs"; });
        if (!eager && !charged)
            h.held.push_back(item("cuda_graphs", m.cudaGraphBytes.value_or(Bytes{kCapturedGraphBytes}),
                                  std::string(m.cudaGraphBytes ? "captured (measured)" : "captured (median of the llm-d-planner "
                                                                                          "v0.19.0 H100 logs)")
                                      + " after the KV cache is sized: outside gpu-memory-utilization"));
        return h;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const PlanRequest& r = in.request;
        const EnginePolicy& e = r.engine;
        const vllm::ProfilerRule rule = vllm::profilerRule(appliedEngineVersion(e));
        const double utilization = in.settings.number("gpu-memory-utilization").value_or(e.memoryFraction);
        const Bytes total = r.card.totalBytes;
        EngineBill b;
        b.usableBytes = fraction(total, utilization);
        b.reserved.push_back(item("utilization_headroom", total - b.usableBytes,
                                  "1 - " + percent(utilization) + " of the card total"
                                      + (rule == vllm::ProfilerRule::SnapshotDelta
                                             ? " (holds the CUDA context: vLLM counts only what its profile run adds)"
                                             : "")));
        billProfileRun(in, rule, b.overheads);
        if (const std::optional<bool> useV1 = in.settings.boolean("VLLM_USE_V1");
            useV1 && !*useV1 && !vllm::isV0(appliedEngineVersion(e)))
            b.notes.push_back("VLLM_USE_V1=0: vLLM " + appliedEngineVersion(e) + " runs its V0 engine, which is modelled up to "
                              "0.7 only; planned with the V1 rules of the version");
        else if (useV1 && *useV1 && vllm::isV0(appliedEngineVersion(e)) && !vllm::runsV1(appliedEngineVersion(e), useV1))
            b.notes.push_back("VLLM_USE_V1=1: vLLM " + appliedEngineVersion(e) + " predates the V1 alpha (v0.7.0); planned "
                              "with its V0 rules");
        else if (useV1 && *useV1 && vllm::isV0(appliedEngineVersion(e)))
            b.notes.push_back("VLLM_USE_V1=1: the V1 engine of the 0.7 line (v1/worker/gpu_worker.py): total x utilization - "
                              "torch's peak (weights included) - all non-torch memory, after a profile run of the forward "
                              "pass and its logits, no sampler");
        const Bytes offloaded = billCpuOffload(in, b);
        const Bytes deviceWeights = in.weightsBytes - offloaded;
        b.figures.push_back(modelLoadingFigure(appliedEngineVersion(e), deviceWeights + rotaryItem(b.overheads)));
        if (in.setup.kvDtypeId == "nvfp4")
            b.notes.push_back("vLLM's nvfp4 KV cache runs on Blackwell SM100 (FlashInfer trtllm-gen, PR 40177); the card's "
                              "compute capability is not checked here");

        const std::uint64_t blockTokens = in.setup.paging.blockTokens;
        if (const std::optional<std::uint64_t> fixed = in.settings.integer("kv-cache-memory-bytes");
            fixed && in.settings.given("kv-cache-memory-bytes")) {
            // --kv-cache-memory-bytes: determine_available_memory returns it and skips the
            // utilization rule (gpu_worker.py, v0.11 on).
            b.kvBudgetBytes = Bytes{*fixed};
            b.notes.push_back("--kv-cache-memory-bytes " + std::to_string(*fixed)
                              + " sizes the KV cache; gpu-memory-utilization is not applied (vllm/v1/worker/gpu_worker.py)");
        } else {
            b.kvBudgetBytes = saturatingSub(b.usableBytes, deviceWeights + totalBytes(b.overheads));
        }
        const std::uint64_t ctx = in.setup.contextTokens;
        const VllmPool pool = vllmPool(in, b.kvBudgetBytes);
        b.kvBlocks = pool.modelBlocks;
        const std::uint64_t tokens = pool.modelBlocks * blockTokens;
        b.figures.push_back({"num_gpu_blocks", static_cast<double>(pool.engineBlocks), "blocks",
                             "# GPU blocks: " + std::to_string(pool.engineBlocks), "vllm/worker/worker.py (V0)"});
        b.figures.push_back({"gpu_kv_cache_tokens", static_cast<double>(tokens), "tokens",
                             "GPU KV cache size: " + formatThousands(tokens) + " tokens", "vllm/v1/core/kv_cache_utils.py (V1)"});
        if (!pool.how.empty())
            b.notes.push_back(pool.how);
        if (ctx > 0) {
            b.maxConcurrency = pool.concurrency;
            b.figures.push_back({"maximum_concurrency", *b.maxConcurrency, "x",
                                 "Maximum concurrency for " + formatThousands(ctx) + " tokens per request: "
                                     + formatConcurrency(*b.maxConcurrency),
                                 "vllm/v1/core/kv_cache_utils.py"});
            // vLLM refuses to start when one max_model_len sequence exceeds the KV cache.
            if (*b.maxConcurrency < 1.0 && deviceWeights + totalBytes(b.overheads) <= b.usableBytes) {
                const std::string why = "vLLM with max_model_len " + formatThousands(ctx) + " would refuse to start ("
                    + formatConcurrency(*b.maxConcurrency) + "): lower --max-model-len to at most " + formatThousands(tokens);
                // vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (V1); V0 raises in
                // vllm/worker/worker.py raise_if_cache_size_invalid.
                b.refusals.push_back({FitLimit::EngineRefusesToStart, why});
            }
        }
        return b;
    }
};

} // namespace

const Engine& vllmEngine()
{
    static const VllmEngine engine;
    return engine;
}

} // namespace headroom::engines
