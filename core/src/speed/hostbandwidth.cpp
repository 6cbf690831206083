#include "headroom/core/speed/hostbandwidth.h"

#include "headroom/core/speed/splitspeed.h"

#include <cstdio>

namespace headroom {

std::string hostBandwidthText(std::optional<double> hostBandwidthGBps)
{
    char text[96];
    if (hostBandwidthGBps)
        std::snprintf(text, sizeof text, "%.1f GB/s, as given", *hostBandwidthGBps);
    else
        std::snprintf(text, sizeof text, "%.1f GB/s assumed: dual-channel DDR5-5600", kDefaultHostBandwidthGBps);
    return text;
}

} // namespace headroom
