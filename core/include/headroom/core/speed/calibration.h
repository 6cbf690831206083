#pragma once
/// @file calibration.h
/// Calibrating the roofline (roofline.h) by what a device measured (the timing probe): the
/// decode bandwidth from a batch-1 decode step (decode is memory-bound: bytes moved / time) and
/// the compute peak from a prefill (prefill is compute-bound: FLOPs / time). Predictions made
/// with the calibrated inputs say so (SpeedInputs::calibrated).

#include "headroom/core/speed/planspeed.h"
#include "headroom/core/speed/roofline.h"

#include <cstdint>

namespace headroom {

/// Bandwidth that makes decodeStep(in, batch, context) take @p measuredMs: the step's bytes
/// (weights + batch x context x kv_bytes_per_token) / time, in 10^9 B/s. 0 when @p measuredMs <= 0.
double calibratedBandwidthGBps(const SpeedInputs& in, std::uint64_t batch, std::uint64_t contextTokens, double measuredMs);

/// Compute peak that makes prefill(in, prompt) take @p measuredMs: the prefill's FLOPs
/// (2 x active x P + 2 x layers x width x P^2) / time, in 10^12 FLOP/s. 0 when @p measuredMs <= 0.
double calibratedPeakTflops(const SpeedInputs& in, std::uint64_t promptTokens, double measuredMs);

/// @p in with the measured bandwidth and peak put in (an absent or non-positive field keeps the
/// input's) and calibrated set when either was measured. The same SpeedCalibration goes into
/// PlanRequest::speedCalibration so that a plan's speed figures use what the probe measured.
SpeedInputs calibrate(SpeedInputs in, const SpeedCalibration& calibration);

} // namespace headroom
