#include "headroom/core/engines/engine.h"

#include "units.h"

#include <array>
#include <utility>

namespace headroom {

namespace {

using Factory = const Engine& (*)();

// One entry per EngineKind.
constexpr std::array<std::pair<EngineKind, Factory>, 7> kUnits = {{
    {EngineKind::Vllm, &engines::vllmEngine},
    {EngineKind::LlamaCpp, &engines::llamaCppEngine},
    {EngineKind::SgLang, &engines::sglangEngine},
    {EngineKind::Tgi, &engines::tgiEngine},
    {EngineKind::TensorRtLlm, &engines::tensorRtLlmEngine},
    {EngineKind::Ollama, &engines::ollamaEngine},
    {EngineKind::Flat, &engines::flatEngine},
}};

} // namespace

std::vector<EngineRefusal> Engine::compatibility(const PlanRequest&, const EngineSetup&) const
{
    return {};
}

std::optional<FractionHolding> Engine::fractionHolding(const PlanRequest&, const PlanResult&, const MeasuredHolding&) const
{
    return std::nullopt;
}

const Engine& engineFor(EngineKind kind)
{
    for (const auto& [k, factory] : kUnits) {
        if (k == kind)
            return factory();
    }
    return engines::flatEngine();
}

std::string appliedEngineVersion(const EnginePolicy& policy)
{
    return policy.requestedVersion.empty() ? policy.version : policy.requestedVersion;
}

} // namespace headroom
