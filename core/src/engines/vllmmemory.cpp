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

/// Elements per token kept at the peak of one layer's forward pass (see ProfilePeak::forwardBytes).
std::uint64_t forwardElementsPerToken(const Architecture& a, std::uint32_t tp)
{
    const std::uint64_t h = a.hiddenSize;
    const std::uint64_t dense = add(mul(3, h), mul(3, a.intermediateSize) / tp);
    if (!a.moe.enabled())
        return dense;
    // fused_moe (model_executor/layers/fused_moe): per routed expert slot the gate_up cache
    // (2 I), the activation cache (I) and the down output (H), I = expert width / TP; the
    // shared experts run as a dense MLP of sharedExperts x expert width.
    const std::uint64_t expert = a.moe.expertFfnSize / tp;
    std::uint64_t moe = add(mul(3, h), mul(a.moe.expertsPerToken, add(mul(3, expert), h)));
    moe = add(moe, mul(3, mul(a.moe.sharedExperts, expert)));
    return a.moe.denseFirstLayers > 0 || a.moe.layerStep > 1 ? std::max(dense, moe) : moe;
}

} // namespace

ProfilerRule profilerRule(const std::string& version)
{
    return atLeast(version, "0.9") ? ProfilerRule::SnapshotDelta : ProfilerRule::TotalPeak;
}

bool isV0(const std::string& version)
{
    return !atLeast(version, "0.8");
}

BatchDefaults batchDefaults(const std::string& version, Bytes deviceTotalBytes, const std::string& deviceName,
                            std::uint64_t maxModelLenTokens, const std::optional<bool>& chunkedPrefill)
{
    BatchDefaults d;
    const bool v0 = isV0(version);
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
    p.forwardBytes = Bytes{mul(mul(s.batchedTokens, forwardElementsPerToken(a, tp)), act)};
    std::uint64_t hidden = mul(add(s.batchedTokens, s.samplerRows), a.hiddenSize);
    if (s.pipelineParallel > 1)
        hidden = add(hidden, mul(2, mul(s.batchedTokens, a.hiddenSize))); // received hidden + residual
    const std::uint64_t logits = mul(mul(s.samplerRows, a.vocabSize), add(act, s.samplerExtraBytes));
    p.samplerBytes = Bytes{add(mul(hidden, act), logits)};
    return p;
}

Bytes rotaryCacheBytes(const Architecture& a, std::uint32_t activationBytes)
{
    const std::uint64_t rotaryDim = a.mla.kvLoraRank > 0 ? a.mla.qkRopeHeadDim : a.headDim;
    return Bytes{mul(mul(a.contextLength, rotaryDim), activationBytes)};
}

std::uint32_t samplerExtraBytesPerEntry(const std::string& version)
{
    return atLeast(version, "0.17") ? 13 : 36;
}

Bytes nonTorchBytes(const std::string& version, std::uint32_t tensorParallel, std::uint32_t pipelineParallel,
                    Bytes singleGpuBytes)
{
    if (profilerRule(version) == ProfilerRule::TotalPeak)
        return singleGpuBytes;
    const bool current = atLeast(version, "0.17");
    const auto gib = [](double x) { return Bytes{static_cast<std::uint64_t>(x * static_cast<double>(kGiB))}; };
    if (tensorParallel > 1)
        return gib(current ? 2.1 : 0.55);
    if (pipelineParallel > 1 && current)
        return gib(0.07);
    return singleGpuBytes;
}

} // namespace headroom::vllm
