#include "roofline.h"

#include "catalog.h"

#include "headroom/core/speed/roofline.h"

#include <algorithm>

namespace headroom::app {

std::vector<RooflinePoint> rooflineEstimate(const PlanResult& plan, const Card& card, std::uint64_t contextTokens,
                                            std::uint64_t maxBatch)
{
    std::vector<RooflinePoint> out;
    if (!plan.speed || card.bandwidthGBps <= 0 || card.fp16Tflops <= 0)
        return out;
    for (std::uint64_t batch = 1; batch <= maxBatch; batch *= 2) {
        // The core's roofline (core/speed/roofline.h), fed with the plan's own inputs.
        const StepEstimate e = decodeStep(plan.speed->inputs, batch, contextTokens);
        const Bytes kv = kvAtPoint(plan, batch, contextTokens);
        RooflinePoint p;
        p.batch = batch;
        p.stepSeconds = e.stepMs / 1e3;
        p.computeBound = e.computeBound;
        p.tokensPerSecond = e.tokensPerSecond;
        p.fits = plan.weightsBytes <= plan.usableBytes && kv <= plan.kvBudgetBytes;
        out.push_back(p);
    }
    return out;
}

} // namespace headroom::app
