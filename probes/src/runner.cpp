// runProbes: opens the device and runs the requested probes in order (the CLI's `probe`).

#include "headroom/probes/probes.h"

#include <algorithm>

namespace headroom::probes {

namespace {

/// Maps a probe's [0, 1] progress onto its share of the whole run and prefixes the stage.
class ScaledProgress final : public ProbeProgress {
public:
    ScaledProgress(ProbeProgress& parent, std::size_t index, std::size_t count, std::string name)
        : m_parent(parent), m_index(index), m_count(std::max<std::size_t>(count, 1)), m_name(std::move(name))
    {
    }
    void report(double fraction, std::string_view stage) override
    {
        const double f = std::clamp(fraction, 0.0, 1.0);
        m_parent.report((static_cast<double>(m_index) + f) / static_cast<double>(m_count), m_name + ": " + std::string(stage));
    }
    bool cancelled() const override { return m_parent.cancelled(); }

private:
    ProbeProgress& m_parent;
    std::size_t m_index;
    std::size_t m_count;
    std::string m_name;
};

} // namespace

bool ProbeReport::allPassed() const
{
    return device.error.empty() && !results.empty() && std::none_of(results.begin(), results.end(), [](const ProbeResult& r) {
        return r.verdict() == ProbeVerdict::Fail || r.verdict() == ProbeVerdict::Cancelled;
    });
}

std::string budgetRefusal(DeviceKind kind, Bytes budget, Bytes freeBytes)
{
    if (budget.value <= freeBytes.value)
        return {};
    return "the budget of " + formatBytes(budget) + " is larger than the device's free memory, " + formatBytes(freeBytes)
        + (kind == DeviceKind::Cpu ? " (MemAvailable of /proc/meminfo)" : " (cudaMemGetInfo)")
        + ": refused before allocating anything; give a smaller --budget";
}

ProbeReport runProbes(const ProbeRequest& request, ProbeProgress& progress)
{
    ProbeReport report;
    report.device.spec = toString(request.device);
    std::optional<Bytes> budget = request.budget;
    if (!budget && request.device.kind == DeviceKind::Cpu)
        budget = Bytes{kDefaultCpuBudgetBytes};
    if (budget)
        report.device.budgetBytes = budget->value;

    // A model's architecture comes from a user's file or profile: one out of range (a billion
    // layers, zero heads) is refused here, before any probe sizes an allocation from it.
    if (request.model.model.architecture) {
        if (const std::string problem = validateArchitecture(*request.model.model.architecture); !problem.empty()) {
            for (ProbeKind k : request.probes)
                report.results.push_back(failedResult(probeKindName(k), "the model's architecture is out of range: " + problem));
            return report;
        }
    }
    progress.report(0.0, "opening " + report.device.spec);
    auto opened = openDevice(request.device);
    if (!opened) {
        report.device.error = opened.error().message;
        for (ProbeKind k : request.probes)
            report.results.push_back(failedResult(probeKindName(k), opened.error().message));
        return report;
    }
    Device& device = **opened;
    device.setBudget(budget);
    report.device.name = device.name();
    report.device.facts = device.facts();
    if (auto info = device.memoryInfo()) {
        report.device.totalBytes = info->totalBytes.value;
        report.device.freeBytes = info->freeBytes.value;
        if (budget) {
            if (std::string why = budgetRefusal(request.device.kind, *budget, info->freeBytes); !why.empty()) {
                report.device.error = why;
                for (ProbeKind k : request.probes)
                    report.results.push_back(failedResult(probeKindName(k), why));
                return report;
            }
        }
    }

    double readGBps = 0;
    const std::size_t count = request.probes.size();
    for (std::size_t i = 0; i < count; ++i) {
        const ProbeKind kind = request.probes[i];
        if (progress.cancelled()) {
            report.results.push_back(cancelledResult(probeKindName(kind)));
            continue;
        }
        ScaledProgress sub(progress, i, count, probeKindName(kind));
        ProbeResult result;
        switch (kind) {
        case ProbeKind::Device:
            result = runDeviceProbe(device, request.deviceOptions, sub);
            readGBps = result.number("read_bandwidth_gbps").value_or(0);
            break;
        case ProbeKind::Allocation:
            result = runAllocationProbe(device, request.model, sub);
            break;
        case ProbeKind::Limit:
            result = runLimitProbe(request.device, budget, request.model, request.limitOptions, sub);
            break;
        case ProbeKind::Timing: {
            TimingProbeOptions options = request.timingOptions;
            if (options.bandwidthGBps <= 0)
                options.bandwidthGBps = readGBps;
            result = runTimingProbe(device, request.model, options, sub);
            break;
        }
        case ProbeKind::QuantError:
            result = runQuantErrorProbe(request.quantOptions, sub);
            break;
        }
        report.results.push_back(std::move(result));
    }
    progress.report(1.0, "done");
    return report;
}

} // namespace headroom::probes
