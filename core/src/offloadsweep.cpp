#include "headroom/core/offloadsweep.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/splitbill.h"

#include <algorithm>

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

namespace {

/// --fit's overrides as llama-fit-params prints them, one item a layer ("blk\.21\.PART=CPU,
/// blk\.22\.PART=CPU,..."; llamacppfit.cpp fitArguments), with the layers of consecutive items
/// that send the same PART to the same buffer joined into one regex ("blk\.(21|22)\.PART=CPU"):
/// each name matches the one item of its layer either way, so llama.cpp places the same tensors
/// (src/llama-model.cpp load_tensors: the first matching pattern wins), in fewer characters than
/// the per-layer list, which runs past the settings' text limit on a 48-layer MoE.
std::string joinedOverrides(const std::string& items)
{
    const std::string head = "blk\\.";
    struct Group {
        std::string layers;
        std::string rest; // "\\.PART=BUFT"
    };
    std::vector<Group> groups;
    std::size_t at = 0;
    while (at <= items.size()) {
        const std::size_t comma = std::min(items.find(',', at), items.size());
        const std::string item = items.substr(at, comma - at);
        at = comma + 1;
        const std::size_t dot = item.find("\\.", head.size());
        if (item.rfind(head, 0) != 0 || dot == std::string::npos)
            return items; // not fitArguments' shape: kept as printed
        const std::string layer = item.substr(head.size(), dot - head.size());
        const std::string rest = item.substr(dot);
        if (!groups.empty() && groups.back().rest == rest)
            groups.back().layers += "|" + layer;
        else
            groups.push_back({layer, rest});
    }
    std::string out;
    for (const Group& g : groups) {
        const bool several = g.layers.find('|') != std::string::npos;
        out += (out.empty() ? "" : ",") + head + (several ? "(" + g.layers + ")" : g.layers) + g.rest;
    }
    return out;
}

/// The longest setting text an engine setting takes (engines/settings.cpp kMaxSettingText): a longer
/// list is not kept (the sweep then plans -ngl N alone, as llama.cpp loads it).
constexpr std::size_t kMaxOverrideText = 256;

} // namespace

PlanRequest keepFitPlacement(const PlanRequest& request, const PlanResult& chosen)
{
    PlanRequest r = request;
    for (const EngineSetting& s : request.engineSettings)
        if (s.key == "override-tensor" || s.key == "ot")
            return r;
    for (const EngineFigure& f : chosen.engineFigures)
        if (f.name == "fit_tensor_overrides" && f.printed.rfind("-ot ", 0) == 0)
            if (std::string ot = joinedOverrides(f.printed.substr(4)); ot.size() <= kMaxOverrideText)
                r.engineSettings.push_back({"override-tensor", std::move(ot)});
    return r;
}

} // namespace headroom
