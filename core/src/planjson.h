#pragma once
// PlanResult -> nlohmann::json, private to core (nlohmann is a PRIVATE dependency).

#include "headroom/core/plan.h"

#include <nlohmann/json.hpp>

namespace headroom {

/// The object planToJson() prints.
nlohmann::json planJsonObject(const PlanResult& plan);

} // namespace headroom
