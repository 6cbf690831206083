#pragma once
/// @file hostbandwidth.h
/// The host's memory bandwidth in words, the same in every face: the plan's split-speed note, the
/// app's Speed per split caption and its Host row (issue 11: the caption once said "DDR5" whatever
/// host the plan was priced for).

#include <optional>
#include <string>

namespace headroom {

/// How the layers a split keeps in host memory were priced: "51.2 GB/s, as given" for a given
/// figure in 10^9 B/s (PlanRequest::hostBandwidthGBps: `--host-bandwidth`, the app's Host row),
/// else "89.6 GB/s assumed: dual-channel DDR5-5600" (speed/splitspeed.h kDefaultHostBandwidthGBps).
/// One decimal.
std::string hostBandwidthText(std::optional<double> hostBandwidthGBps);

} // namespace headroom
