#include "headroom/core/offloadsweep.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/splitbill.h"

namespace headroom {

std::uint32_t offloadLayerCount(const PlanRequest& request)
{
    if (!request.model.architecture || !engineFor(request.engine.kind).offloadsLayers())
        return 0;
    return request.model.architecture->layers + 1;
}

tl::expected<std::vector<OffloadStep>, std::string> offloadSweep(const PlanRequest& request)
{
    std::vector<OffloadStep> steps;
    const std::uint32_t total = offloadLayerCount(request);
    if (total == 0)
        return steps;
    steps.reserve(total + 1);
    for (std::uint32_t n = 0; n <= total; ++n) {
        PlanRequest r = request;
        r.gpuLayers = n;
        auto plan = makePlan(r);
        if (!plan)
            return tl::unexpected("--offload " + std::to_string(n) + ": " + plan.error());
        OffloadStep s;
        s.gpuLayers = n;
        s.state = plan->verdict.state;
        s.placement = placementOf(*plan);
        s.headline = plan->verdict.headline.value;
        s.hostBytes = hostMemoryBytes(*plan);
        s.decodeTokensPerSecond = plan->speed ? plan->speed->decodeTokensPerSecond : 0;
        steps.push_back(s);
    }
    return steps;
}

} // namespace headroom
