#pragma once
// "Roofline estimate" of decode speed against batch for the tokens/s plot: the core's speed model
// (core/speed/roofline.h, BRIEF §2) at each batch, with whether that batch's KV fits the plan:
//     step_time = max((weights_bytes + kv_bytes) / bandwidth, flops / peak)
//     tokens/s  = batch / step_time

#include "headroom/core/card.h"
#include "headroom/core/plan.h"

#include <cstdint>
#include <vector>

namespace headroom::app {

struct RooflinePoint {
    std::uint64_t batch = 0;      ///< sequences decoded together
    double stepSeconds = 0;       ///< one decode step
    double tokensPerSecond = 0;   ///< batch / step
    bool computeBound = false;    ///< the FLOP term is the larger
    bool fits = false;            ///< batch x context fits in the plan's KV budget
};

/// Points for batch = 1, 2, 4, ... up to @p maxBatch at @p contextTokens per sequence; empty
/// when the card has no bandwidth or peak figure. A layer split (PlanResult::speed->split) gives
/// the core's own split curve (computed at the plan's context, batches up to 64), the one
/// `speed` prints, not the all-on-GPU roofline.
std::vector<RooflinePoint> rooflineEstimate(const PlanResult& plan, const Card& card, std::uint64_t contextTokens,
                                            std::uint64_t maxBatch = 256);

} // namespace headroom::app
