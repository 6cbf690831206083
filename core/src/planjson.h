#pragma once
// PlanResult -> nlohmann::json, private to core (nlohmann is a PRIVATE dependency).

#include "headroom/core/plan.h"

#include <nlohmann/json.hpp>

namespace headroom {

/// The object planToJson() prints.
nlohmann::json planJsonObject(const PlanResult& plan);

/// The verdict as JSON: {state, limit, reason, detail, cell, headline: {kind, caption, value, unit,
/// users, context_tokens}}; ids from verdict.h (fitStateId, fitLimitId).
nlohmann::json verdictJsonObject(const Verdict& verdict);

} // namespace headroom
