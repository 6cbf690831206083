#pragma once
/// @file batching.h
/// Static against continuous batching, simulated in decode steps over a set of requests that all
/// arrive at step 0 (BRIEF §2: "static batching waits for the longest member; continuous batching
/// admits a queued request into any free slot at the next step"). A step emits one token for
/// every running sequence; its duration is taken as constant (decode is memory-bound below the
/// knee), so times are in steps.

#include <cstdint>
#include <vector>

namespace headroom {

/// Outcome of one schedule.
struct BatchingResult {
    std::uint64_t totalSteps = 0;        ///< steps until the last request finishes
    std::uint64_t totalTokens = 0;       ///< tokens generated (sum of output lengths)
    double tokensPerStep = 0;            ///< throughput = totalTokens / totalSteps
    double meanLatencySteps = 0;         ///< mean over requests of the step their output is complete (from arrival)
    double meanServiceSteps = 0;         ///< mean over requests of steps from admission to completion
};

/// Static batching: requests taken in order in groups of @p slots; a group runs until its longest
/// member ends, and every member's result is returned then.
BatchingResult simulateStaticBatching(const std::vector<std::uint64_t>& outputTokens, std::uint64_t slots);

/// Continuous batching: a finished sequence's slot is given to the next queued request at the next
/// step; each request's result is returned when it ends.
BatchingResult simulateContinuousBatching(const std::vector<std::uint64_t>& outputTokens, std::uint64_t slots);

/// A deterministic skewed (log-normal) set of @p count output lengths with median @p medianTokens
/// and geometric spread @p sigma, in an interleaved order (long and short mixed).
std::vector<std::uint64_t> skewedOutputLengths(std::uint64_t count, double medianTokens, double sigma);

} // namespace headroom
