#include "roofline.h"

#include "catalog.h"

#include <algorithm>

namespace headroom::app {

std::vector<RooflinePoint> rooflineEstimate(const PlanResult& plan, const Card& card, std::uint64_t contextTokens,
                                            std::uint64_t maxBatch)
{
    std::vector<RooflinePoint> out;
    if (card.bandwidthGBps <= 0 || card.fp16Tflops <= 0 || plan.parameters == 0)
        return out;
    const double bandwidth = card.bandwidthGBps * 1e9;   // B/s
    const double peak = card.fp16Tflops * 1e12;          // FLOP/s
    for (std::uint64_t batch = 1; batch <= maxBatch; batch *= 2) {
        const Bytes kv = kvAtPoint(plan, batch, contextTokens);
        const double bytes = static_cast<double>(plan.weightsBytes.value) + static_cast<double>(kv.value);
        const double flops = 2.0 * static_cast<double>(plan.parameters) * static_cast<double>(batch);
        RooflinePoint p;
        p.batch = batch;
        const double memoryTime = bytes / bandwidth;
        const double computeTime = flops / peak;
        p.stepSeconds = std::max(memoryTime, computeTime);
        p.computeBound = computeTime > memoryTime;
        p.tokensPerSecond = static_cast<double>(batch) / p.stepSeconds;
        p.fits = plan.weightsBytes <= plan.usableBytes && kv <= plan.kvBudgetBytes;
        out.push_back(p);
    }
    return out;
}

} // namespace headroom::app
