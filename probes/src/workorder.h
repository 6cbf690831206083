#pragma once
// Work orders: what a child process runs (the limit search, the CUDA context measurement), as
// JSON text so that an exec'ed worker can read it from stdin (private to headroom_probes).

#include "headroom/probes/probes.h"

#include <string>
#include <string_view>

namespace headroom::probes::detail {

/// The limit search of runLimitProbe as a work order.
std::string limitWorkOrder(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                           const LimitProbeOptions& options);
/// "open the device and report total/free memory" (the CUDA context overhead of a second process).
std::string contextWorkOrder(const DeviceSpec& device);

/// Runs a work order in this process.
ProbeResult executeWorkOrder(std::string_view order, ProbeProgress& progress);

/// The limit search itself (limitprobe.cpp), in this process.
ProbeResult runLimitSearch(const DeviceSpec& device, std::optional<Bytes> budget, const ModelInputs& model,
                           const LimitProbeOptions& options, ProbeProgress& progress);

/// Runs @p order under @p isolation: in this process, in a fork()ed child, or in an exec'ed
/// worker; a child's crash becomes a failed result of @p probe naming the signal; cancellation
/// kills the child within ~100 ms.
ProbeResult runIsolated(const std::string& probe, const std::string& order, const Isolation& isolation,
                        DeviceKind kind, ProbeProgress& progress);

} // namespace headroom::probes::detail
