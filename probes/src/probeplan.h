#pragma once
// The core plan that predicts what a probe should measure (private to headroom_probes).

#include "headroom/core/plan.h"
#include "headroom/probes/probes.h"

#include <tl/expected.hpp>

#include <string>

namespace headroom::probes::detail {

/// makePlan() for @p inputs on an anonymous card of @p budget bytes under a flat-reserve policy
/// whose reserve is @p reserve (the probe's own scratch), paged in 16-token blocks, with the
/// weights priced from the architecture (exact file sizes and nominal counts are dropped, so the
/// plan counts what the probe allocates: listTensors x tensorBytes).
tl::expected<PlanResult, std::string> probePlan(const ModelInputs& inputs, Bytes budget, Bytes reserve);

/// The context per user the probes use: inputs.contextTokens, else the model's, else 4,096.
std::uint64_t contextOf(const ModelInputs& inputs);

/// "1.23 GiB (1,320,702,464 B)".
std::string bytesText(std::uint64_t bytes);

} // namespace headroom::probes::detail
