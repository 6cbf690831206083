#include "headroom/core/speed/calibration.h"

namespace headroom {

double calibratedBandwidthGBps(const SpeedInputs& in, std::uint64_t batch, std::uint64_t contextTokens, double measuredMs)
{
    if (!(measuredMs > 0))
        return 0;
    SpeedInputs unit = in;
    unit.bandwidthGBps = 1.0; // memoryMs is then the step's bytes in ms at 1 GB/s
    unit.peakTflops = 0;
    return decodeStep(unit, batch, contextTokens).memoryMs / measuredMs;
}

double calibratedPeakTflops(const SpeedInputs& in, std::uint64_t promptTokens, double measuredMs)
{
    if (!(measuredMs > 0))
        return 0;
    SpeedInputs unit = in;
    unit.bandwidthGBps = 0;
    unit.peakTflops = 1.0; // computeMs is then the prefill's FLOPs in ms at 1 TFLOP/s
    return prefill(unit, promptTokens).computeMs / measuredMs;
}

SpeedInputs calibrate(SpeedInputs in, const SpeedCalibration& calibration)
{
    const bool bandwidth = calibration.bandwidthGBps && *calibration.bandwidthGBps > 0;
    const bool peak = calibration.peakTflops && *calibration.peakTflops > 0;
    if (bandwidth)
        in.bandwidthGBps = *calibration.bandwidthGBps;
    if (peak)
        in.peakTflops = *calibration.peakTflops;
    in.calibrated = bandwidth || peak;
    return in;
}

} // namespace headroom
