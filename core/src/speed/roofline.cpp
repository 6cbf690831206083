#include "headroom/core/speed/roofline.h"

#include <algorithm>
#include <cmath>

namespace headroom {

double expertsTouchedFraction(std::uint32_t expertCount, std::uint32_t expertsPerToken, std::uint64_t batch)
{
    if (expertCount == 0)
        return 1.0;
    const double p = static_cast<double>(expertsPerToken) / expertCount;
    return 1.0 - std::pow(1.0 - p, static_cast<double>(batch));
}

namespace {

StepEstimate finish(double bytes, double flops, const SpeedInputs& in, std::uint64_t sequences, std::uint64_t tokens)
{
    StepEstimate e;
    e.memoryMs = in.bandwidthGBps > 0 ? bytes / (in.bandwidthGBps * 1e9) * 1e3 : 0;
    e.computeMs = in.peakTflops > 0 ? flops / (in.peakTflops * 1e12) * 1e3 : 0;
    e.stepMs = std::max(e.memoryMs, e.computeMs);
    e.computeBound = e.computeMs > e.memoryMs;
    if (e.stepMs > 0) {
        e.tokensPerSecond = static_cast<double>(tokens) / (e.stepMs / 1e3);
        e.perSequenceTokensPerSecond = e.tokensPerSecond / static_cast<double>(std::max<std::uint64_t>(sequences, 1));
    }
    return e;
}

} // namespace

StepEstimate decodeStep(const SpeedInputs& in, std::uint64_t batch, std::uint64_t contextTokens)
{
    const double b = static_cast<double>(batch);
    const double dense = static_cast<double>(in.weightsBytes.value - std::min(in.weightsBytes.value, in.expertBytes.value));
    const double experts = static_cast<double>(in.expertBytes.value)
        * expertsTouchedFraction(in.expertCount, in.expertsPerToken, batch);
    const double kv = b * static_cast<double>(contextTokens) * static_cast<double>(in.kvBytesPerToken.value);
    const double flops = 2.0 * static_cast<double>(in.activeParameters) * b
        + 4.0 * in.layers * static_cast<double>(in.attentionWidth) * static_cast<double>(contextTokens) * b;
    return finish(dense + experts + kv, flops, in, batch, batch);
}

StepEstimate prefill(const SpeedInputs& in, std::uint64_t promptTokens)
{
    const double p = static_cast<double>(promptTokens);
    const double flops = 2.0 * static_cast<double>(in.activeParameters) * p
        + 2.0 * in.layers * static_cast<double>(in.attentionWidth) * p * p;
    const double bytes = static_cast<double>(in.weightsBytes.value) + p * static_cast<double>(in.kvBytesPerToken.value);
    return finish(bytes, flops, in, 1, promptTokens);
}

std::optional<std::uint64_t> kneeBatch(const SpeedInputs& in, std::uint64_t contextTokens)
{
    for (std::uint64_t b = 1; b <= 1024; ++b)
        if (decodeStep(in, b, contextTokens).computeBound)
            return b;
    return std::nullopt;
}

std::vector<SpeedPoint> speedCurve(const SpeedInputs& in, std::uint64_t contextTokens, std::uint64_t maxBatch)
{
    std::vector<SpeedPoint> out;
    for (std::uint64_t b = 1; b <= maxBatch; b *= 2) {
        const StepEstimate e = decodeStep(in, b, contextTokens);
        out.push_back({b, e.stepMs, e.tokensPerSecond, e.computeBound});
    }
    return out;
}

} // namespace headroom
