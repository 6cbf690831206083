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
    // A layer split (llama.cpp/Ollama partial offload): the core's curve is already the split's
    // (plan.cpp splitBatchFigures: host layers at the host's bandwidth, the link at each crossing);
    // decodeStep over the plan's inputs would be the all-on-GPU roofline of a model that does not
    // fit. The core computed it at the plan's context, so that curve is drawn as it is.
    if (plan.speed->split) {
        for (const SpeedPoint& pt : plan.speed->curve) {
            if (pt.batch > maxBatch)
                break;
            RooflinePoint p;
            p.batch = pt.batch;
            p.stepSeconds = pt.stepMs / 1e3;
            p.computeBound = pt.computeBound;
            p.tokensPerSecond = pt.tokensPerSecond;
            p.fits = kvAtPoint(plan, pt.batch, contextTokens) <= plan.kvBudgetBytes;
            out.push_back(p);
        }
        return out;
    }
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
