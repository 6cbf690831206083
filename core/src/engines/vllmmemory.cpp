#include "headroom/core/engines/vllmmemory.h"

#include "headroom/core/enginepolicy.h"

#include <algorithm>
#include <cctype>

namespace headroom::vllm {

namespace {

std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return checkedMul(a, b, "vLLM profile run"); }
std::uint64_t add(std::uint64_t a, std::uint64_t b) { return checkedAdd(a, b, "vLLM profile run"); }

bool atLeast(const std::string& version, const char* release)
{
    return version.empty() || compareVersions(version, release) >= 0;
}

bool nameHas(std::string name, const char* needle)
{
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return name.find(needle) != std::string::npos;
}

/// Elements per token of a dense layer's forward peak (see ProfilePeak::forwardBytes).
std::uint64_t denseElementsPerToken(const Architecture& a, std::uint32_t tp)
{
    return add(mul(3, a.hiddenSize), mul(3, a.intermediateSize) / tp);
}

/// Elements per token kept at the peak of one MoE layer's forward pass outside a persistent
/// workspace, or with the transient fused-MoE caches when @p cachesIncluded.
std::uint64_t moeElementsPerToken(const Architecture& a, std::uint32_t tp, bool cachesIncluded)
{
    const std::uint64_t h = a.hiddenSize;
    const std::uint64_t expert = a.moe.expertFfnSize / tp;
    const std::uint64_t shared = mul(3, mul(a.moe.sharedExperts, expert));
    if (!cachesIncluded)
        return add(mul(4, h), shared);
    // fused_moe (model_executor/layers/fused_moe): per routed expert slot the gate_up cache
    // (2 I), the activation cache (I) and the down output (H), I = expert width / TP; the
    // shared experts run as a dense MLP of sharedExperts x expert width.
    return add(add(mul(3, h), mul(a.moe.expertsPerToken, add(mul(3, expert), h))), shared);
}

std::uint64_t roundUp256(std::uint64_t bytes)
{
    return add(bytes, 255) / 256 * 256;
}

} // namespace

bool persistentMoeWorkspace(const std::string& version)
{
    return atLeast(version, "0.13");
}

Bytes fusedMoeWorkspaceBytes(const Architecture& a, std::uint64_t batchedTokens, std::uint32_t tensorParallel,
                             std::uint32_t activationBytes)
{
    if (!a.moe.enabled())
        return Bytes{};
    constexpr std::uint64_t kChunkTokens = 16 * 1024; // VLLM_FUSED_MOE_CHUNK_SIZE (envs.py)
    const std::uint32_t tp = std::max<std::uint32_t>(tensorParallel, 1);
    const std::uint64_t m = std::min(batchedTokens, kChunkTokens);
    const std::uint64_t n = mul(2, a.moe.expertFfnSize) / tp;
    const std::uint64_t k = a.hiddenSize;
    const std::uint64_t rows = mul(m, a.moe.expertsPerToken);
    const std::uint64_t workspace13 = std::max(mul(rows, std::max(n / 2, k)), mul(m, k));
    const std::uint64_t workspace2 = mul(rows, std::max(n, k));
    return Bytes{add(roundUp256(mul(workspace13, activationBytes)), roundUp256(mul(workspace2, activationBytes)))};
}

ProfilerRule profilerRule(const std::string& version)
{
    return atLeast(version, "0.9") ? ProfilerRule::SnapshotDelta : ProfilerRule::TotalPeak;
}

bool isV0(const std::string& version)
{
    return !atLeast(version, "0.8");
}

bool runsV1(const std::string& version, const std::optional<bool>& useV1)
{
    if (!isV0(version))
        return true;
    return useV1.value_or(false) && atLeast(version, "0.7");
}

bool v1ProfileSamples(const std::string& version)
{
    return atLeast(version, "0.8");
}

BatchDefaults batchDefaults(const std::string& version, Bytes deviceTotalBytes, const std::string& deviceName,
                            std::uint64_t maxModelLenTokens, const std::optional<bool>& chunkedPrefill,
                            const std::optional<bool>& useV1)
{
    BatchDefaults d;
    const bool v0 = !runsV1(version, useV1);
    if (!v0 && isV0(version)) {
        // V1 on the 0.7 line (_override_v1_engine_args, v0.7.1): always chunked, 2048 / 1024.
        d.chunkedPrefill = true;
        d.maxNumBatchedTokens = 2048;
        d.maxNumSeqs = 1024;
        return d;
    }
    // V0 (vllm/engine/arg_utils.py v0.6.x): chunked prefill by default past 32K tokens, then
    // max_num_batched_tokens 512; V1 always chunks.
    d.chunkedPrefill = chunkedPrefill.value_or(v0 ? maxModelLenTokens > 32768 : true);
    // get_batch_defaults (v0.9 on): the large defaults on >= 70 GiB devices other than the A100.
    const bool large = !v0 && atLeast(version, "0.9") && deviceTotalBytes.value >= 70 * kGiB && !nameHas(deviceName, "a100");
    d.maxNumSeqs = large ? 1024 : 256;
    if (!d.chunkedPrefill)
        d.maxNumBatchedTokens = std::max<std::uint64_t>(maxModelLenTokens, 2048);
    else
        d.maxNumBatchedTokens = v0 ? 512 : (large ? 8192 : 2048);
    return d;
}

ProfilePeak profilePeak(const Architecture& a, const ProfileShape& s)
{
    const std::uint32_t tp = std::max<std::uint32_t>(s.tensorParallel, 1);
    const std::uint64_t act = s.activationBytes;
    ProfilePeak p;
    const std::uint64_t dense = denseElementsPerToken(a, tp);
    if (!a.moe.enabled()) {
        p.forwardBytes = Bytes{mul(mul(s.batchedTokens, dense), act)};
    } else {
        const bool persistent = s.persistentMoeWorkspace;
        std::uint64_t perToken = moeElementsPerToken(a, tp, !persistent);
        const bool interleaved = a.moe.layerStep > 1;
        if (interleaved || (!persistent && a.moe.denseFirstLayers > 0))
            perToken = std::max(perToken, dense);
        p.forwardBytes = Bytes{mul(mul(s.batchedTokens, perToken), act)};
        if (persistent) {
            p.moeWorkspaceBytes = fusedMoeWorkspaceBytes(a, s.batchedTokens, tp, s.activationBytes);
            if (a.moe.denseFirstLayers > 0 && !interleaved)
                p.leadingDenseBytes = Bytes{mul(mul(s.batchedTokens, dense), act)};
        }
    }
    // With the sampler: every token's hidden states and the gathered copy of the sampled rows;
    // without it (V1 before v0.8) the logits of every row of the forward output itself.
    const std::uint64_t rows = s.samplerRun ? s.samplerRows : s.batchedTokens;
    std::uint64_t hidden = mul(s.samplerRun ? add(s.batchedTokens, s.samplerRows) : s.batchedTokens, a.hiddenSize);
    if (s.pipelineParallel > 1)
        hidden = add(hidden, mul(2, mul(s.batchedTokens, a.hiddenSize))); // received hidden + residual
    const std::uint64_t logits = mul(mul(rows, a.vocabSize), add(act, s.samplerRun ? s.samplerExtraBytes : 0));
    p.samplerBytes = Bytes{add(mul(hidden, act), logits)};
    return p;
}

std::uint64_t rotaryCacheRows(const Architecture& a)
{
    const RopeScaling& rs = a.ropeScaling;
    const bool extends = rs.type == "linear" || rs.type == "dynamic" || rs.type == "yarn" || rs.type == "deepseek_yarn";
    if (!extends || rs.factor <= 1.0)
        return a.contextLength;
    const bool yarn = rs.type == "yarn" || rs.type == "deepseek_yarn";
    const std::uint64_t base = yarn && rs.originalContextLength > 0 ? rs.originalContextLength : a.contextLength;
    return static_cast<std::uint64_t>(static_cast<double>(base) * rs.factor);
}

Bytes rotaryCacheBytes(const Architecture& a, std::uint32_t activationBytes)
{
    const std::uint64_t rotaryDim = a.mla.kvLoraRank > 0 ? a.mla.qkRopeHeadDim : a.headDim;
    const std::uint64_t rows = rotaryCacheRows(a);
    std::uint64_t cache = mul(mul(rows, rotaryDim), activationBytes);
    // Gemma 3 (model_executor/models/gemma3.py Gemma3Attention): the sliding layers take their own
    // rotary embedding, rope_local_base_freq with rope_scaling {"rope_type": "default"}, the global
    // layers config.rope_scaling; get_rope keys its cache on both, so there are two tables.
    if (a.family == "gemma3" && a.sliding.enabled() && rows != a.contextLength)
        cache = add(cache, mul(mul(a.contextLength, rotaryDim), activationBytes));
    return Bytes{cache};
}

std::uint32_t samplerExtraBytesPerEntry(const std::string& version)
{
    return samplerExtraBytesForPath(flashInferSampler(version, std::nullopt));
}

bool flashInferSampler(const std::string& version, const std::optional<bool>& setting)
{
    return setting.value_or(atLeast(version, "0.17"));
}

std::uint32_t samplerExtraBytesForPath(bool flashInfer)
{
    return flashInfer ? 13 : 36;
}

Bytes nonTorchBytes(const std::string& version, std::uint32_t tensorParallel, std::uint32_t pipelineParallel,
                    Bytes singleGpuBytes, Interconnect link)
{
    if (profilerRule(version) == ProfilerRule::TotalPeak)
        return singleGpuBytes;
    if (tensorParallel > 1)
        return nonTorchTensorParallelBytes(version, tensorParallel, singleGpuBytes, link);
    if (pipelineParallel > 1 && atLeast(version, "0.17"))
        return Bytes{static_cast<std::uint64_t>(0.07 * static_cast<double>(kGiB))};
    return singleGpuBytes;
}

Bytes nonTorchTensorParallelBytes(const std::string& version, std::uint32_t tensorParallel, Bytes singleGpuBytes,
                                  Interconnect link)
{
    switch (link) {
    case Interconnect::NvSwitch:
    case Interconnect::NvLink: {
        const double gib = atLeast(version, "0.17") ? 2.1 : 0.55;
        return Bytes{static_cast<std::uint64_t>(gib * static_cast<double>(kGiB))};
    }
    case Interconnect::PciePeer: {
        // custom_all_reduce.py: meta (meta_size() + max_size) and buffer (max_size), max_size 8 MiB;
        // meta_size() is a few KiB of flags, left out.
        const std::uint64_t customAllReduce = tensorParallel == 2 ? 2 * 8 * kMiB : 0;
        // src/init.cc: DEFAULT_LL_BUFFSIZE = 8 lines x 512 threads x 8 steps x 16 B,
        // DEFAULT_LL128_BUFFSIZE = 120 x 640 x 8 x 8 B, DEFAULT_BUFFSIZE = 4 MiB; two ring channels.
        constexpr std::uint64_t kLl = 8ull * 512 * 8 * 16;
        constexpr std::uint64_t kLl128 = 120ull * 640 * 8 * 8;
        constexpr std::uint64_t kSimple = 4 * kMiB;
        constexpr std::uint64_t kChannels = 2;
        return Bytes{singleGpuBytes.value + customAllReduce + kChannels * (kLl + kLl128 + kSimple)};
    }
    case Interconnect::Pcie:
    case Interconnect::Network:
        return singleGpuBytes;
    }
    return singleGpuBytes;
}

bool hybridKvCacheManager(const std::string& version)
{
    return atLeast(version, "0.10");
}

std::optional<HybridKvGroups> hybridKvGroups(std::uint32_t fullLayers, std::uint32_t localLayers)
{
    if (fullLayers == 0 || localLayers == 0)
        return std::nullopt;
    const std::uint32_t smaller = std::min(fullLayers, localLayers);
    const std::uint32_t larger = std::max(fullLayers, localLayers);
    HybridKvGroups g;
    // max_num_layers < min_num_layers * 1.5, in integers.
    g.groupSize = 2ull * larger < 3ull * smaller ? larger : smaller;
    g.fullGroups = (fullLayers + g.groupSize - 1) / g.groupSize;
    g.localGroups = (localLayers + g.groupSize - 1) / g.groupSize;
    return g;
}

std::uint64_t hybridMambaBlockTokens(std::uint64_t attentionBytesPerTokenPerLayer, std::uint64_t stateBytesPerLayer,
                                     std::uint64_t requestedTokens, std::uint64_t alignTokens)
{
    const std::uint64_t align = std::max<std::uint64_t>(alignTokens, 1);
    if (attentionBytesPerTokenPerLayer == 0 || stateBytesPerLayer == 0)
        return requestedTokens;
    const std::uint64_t alignBytes = align * attentionBytesPerTokenPerLayer;
    const std::uint64_t aligned = align * ((stateBytesPerLayer + alignBytes - 1) / alignBytes);
    return std::max(requestedTokens, aligned);
}

std::uint64_t requestBlocksPerGroup(std::uint64_t maxModelLenTokens, std::uint64_t blockTokens, std::uint64_t windowTokens,
                                    std::uint64_t maxNumBatchedTokens, bool chunkedLocal)
{
    const std::uint64_t block = std::max<std::uint64_t>(blockTokens, 1);
    const auto blocksOf = [block](std::uint64_t tokens) { return tokens / block + (tokens % block != 0 ? 1 : 0); };
    if (windowTokens == 0)
        return blocksOf(maxModelLenTokens);
    if (chunkedLocal)
        return blocksOf(std::min(add(windowTokens, maxNumBatchedTokens), maxModelLenTokens));
    const std::uint64_t held = std::min(add(windowTokens, maxNumBatchedTokens) - 1, maxModelLenTokens);
    return add(blocksOf(held), 1);
}

} // namespace headroom::vllm
