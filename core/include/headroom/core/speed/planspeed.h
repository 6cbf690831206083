#pragma once
/// @file planspeed.h
/// Speed figures of a plan: the roofline of roofline.h fed with the plan's weights, KV and the
/// card's bandwidth and compute (datasheet, or measured by the timing probe).

#include "headroom/core/architecture.h"
#include "headroom/core/parameters.h"
#include "headroom/core/speed/roofline.h"
#include "headroom/core/speed/splitspeed.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace headroom {

/// Bandwidth and compute measured on the device (timing probe), replacing the datasheet.
struct SpeedCalibration {
    std::optional<double> bandwidthGBps;  ///< measured copy or read bandwidth, 10^9 B/s
    std::optional<double> peakTflops;     ///< measured dense fp16 TFLOP/s
};

/// The speed section of a plan.
struct SpeedSummary {
    double bandwidthGBps = 0;          ///< used for the roofline
    double peakTflops = 0;
    bool calibrated = false;           ///< from a measurement, not the datasheet
    double decodeTokensPerSecond = 0;  ///< one sequence at the plan's context
    double tpotMs = 0;                 ///< time per output token at `users` sequences
    double aggregateTokensPerSecond = 0; ///< all `users` sequences together
    double ttftMs = 0;                 ///< prefill of one prompt of the plan's context
    std::optional<std::uint64_t> kneeBatch; ///< batch where decode turns compute-bound
    std::uint64_t users = 1;
    std::uint64_t contextTokens = 0;
    std::vector<SpeedPoint> curve;     ///< tokens/s against batch 1..64
    SpeedInputs inputs;                ///< what the figures were computed from (for other batches and contexts)
    /// With a layer split (llama.cpp/Ollama layers in host memory): the decode step of one sequence
    /// over the GPU and the host (splitspeed.h); decodeTokensPerSecond, tpotMs, the aggregate and
    /// the batch curve are then the split's (memory-bound, no knee), and ttftMs adds the copies of
    /// the host-resident weights over the link for each micro-batch of the prefill (plan.cpp).
    std::optional<SplitDecode> split;
};

/// Roofline inputs for @p arch with @p weightsBytes resident (expert bytes split out by the tensor
/// list), @p kvBytesPerToken, on a card of @p bandwidthGBps and @p peakTflops.
SpeedInputs speedInputs(const Architecture& arch, Bytes weightsBytes, Bytes kvBytesPerToken, double bandwidthGBps,
                        double peakTflops);
/// The same from @p tensors, the architecture's listTensors() already made (the planner's list).
SpeedInputs speedInputs(const Architecture& arch, const std::vector<TensorSpec>& tensors, Bytes weightsBytes,
                        Bytes kvBytesPerToken, double bandwidthGBps, double peakTflops);

/// Decode tokens/s, TPOT, TTFT and the knee at @p users x @p contextTokens.
SpeedSummary summarizeSpeed(const SpeedInputs& in, std::uint64_t users, std::uint64_t contextTokens);

} // namespace headroom
