#include "headroom/core/speed/planspeed.h"

#include "headroom/core/parameters.h"

#include <algorithm>

namespace headroom {

SpeedInputs speedInputs(const Architecture& arch, Bytes weightsBytes, Bytes kvBytesPerToken, double bandwidthGBps,
                        double peakTflops)
{
    return speedInputs(arch, listTensors(arch), weightsBytes, kvBytesPerToken, bandwidthGBps, peakTflops);
}

SpeedInputs speedInputs(const Architecture& arch, const std::vector<TensorSpec>& tensors, Bytes weightsBytes,
                        Bytes kvBytesPerToken, double bandwidthGBps, double peakTflops)
{
    SpeedInputs in;
    in.weightsBytes = weightsBytes;
    in.kvBytesPerToken = kvBytesPerToken;
    in.bandwidthGBps = bandwidthGBps;
    in.peakTflops = peakTflops;
    in.layers = arch.layers;
    in.attentionWidth = std::uint64_t{arch.attentionHeads} * (arch.mla.enabled() ? arch.mla.vHeadDim : arch.headDim);
    in.expertCount = arch.moe.expertCount;
    in.expertsPerToken = arch.moe.expertsPerToken;
    std::uint64_t total = 0;
    std::uint64_t routed = 0;
    for (const TensorSpec& t : tensors) {
        if (t.role == TensorRole::VisionMatrix || t.role == TensorRole::VisionVector)
            continue; // the vision tower runs once per image, not per decoded token
        total += t.elements();
        if (t.role == TensorRole::ExpertMatrix && t.copies > 1)
            routed += t.elements();
    }
    // Only top-k of the routed experts multiply each token; embeddings are a lookup.
    const std::uint64_t embed = arch.vocabSize * arch.hiddenSize;
    std::uint64_t active = total - std::min(total, embed * (arch.tiedEmbeddings ? 0 : 1));
    if (arch.moe.enabled())
        active -= routed - routed / arch.moe.expertCount * arch.moe.expertsPerToken;
    in.activeParameters = active;
    if (total > 0 && routed > 0)
        in.expertBytes = Bytes{static_cast<std::uint64_t>(static_cast<double>(weightsBytes.value) * routed / total)};
    return in;
}

SpeedSummary summarizeSpeed(const SpeedInputs& in, std::uint64_t users, std::uint64_t contextTokens)
{
    SpeedSummary s;
    s.bandwidthGBps = in.bandwidthGBps;
    s.peakTflops = in.peakTflops;
    s.calibrated = in.calibrated;
    s.users = std::max<std::uint64_t>(users, 1);
    s.contextTokens = contextTokens;
    s.decodeTokensPerSecond = decodeStep(in, 1, contextTokens).tokensPerSecond;
    const StepEstimate atUsers = decodeStep(in, s.users, contextTokens);
    s.tpotMs = atUsers.stepMs;
    s.aggregateTokensPerSecond = atUsers.tokensPerSecond;
    s.ttftMs = prefill(in, contextTokens).stepMs;
    s.kneeBatch = kneeBatch(in, contextTokens);
    s.curve = speedCurve(in, contextTokens);
    s.inputs = in;
    return s;
}

} // namespace headroom
