#pragma once
/// @file planjson.h
/// Plans as JSON text (the CLI's `--json`, the report model). Keys end in their unit
/// (`weights_bytes`, `max_resident_tokens`); serialisation is deterministic (sorted keys).

#include "headroom/core/plan.h"

#include <string>
#include <vector>

namespace headroom {

/// One plan as a JSON object with at least: model, weights_format, kv_dtype, card, engine,
/// parameters, weights_bytes, kv_bytes_per_token, card_total_bytes, usable_bytes, kv_budget_bytes,
/// max_resident_tokens, fits, reason, overheads [{name, bytes, note}], reserved, frontier
/// [{users, context_tokens}], and with a context / users given also max_users / max_context;
/// `speed` (the roofline summary) only when the plan loads (Verdict::loads), else
/// `speed_unavailable` with the reason.
/// @param indent -1 for one line.
std::string planToJson(const PlanResult& plan, int indent = 2);

/// An array of plans (`headroom-cli table --json`).
std::string plansToJson(const std::vector<PlanResult>& plans, int indent = 2);

} // namespace headroom
