// The device probe: name, memory, context overhead, copy bandwidth B_copy and read bandwidth
// B_read (shared/reference/gpus.md §6.1: a device-to-device copy of >= max(8 x L2, 256 MiB),
// bytes read + written, median of >= 20 timed repetitions after warm-up).

#include "probeplan.h"
#include "stats.h"
#include "workorder.h"

#include "headroom/probes/probes.h"

#include <algorithm>

namespace headroom::probes {

ProbeResult runDeviceProbe(Device& device, const DeviceProbeOptions& options, ProbeProgress& progress)
{
    ProbeResult r;
    r.probe = "device";
    progress.report(0.0, "reading device facts");
    auto info = device.memoryInfo();
    if (!info)
        return failedResult("device", info.error().message);
    r.set("name", device.name());
    r.set("device", toString(device.spec()));
    r.set("total_bytes", info->totalBytes.value);
    r.set("free_bytes", info->freeBytes.value);
    r.set("used_bytes", saturatingSub(info->totalBytes, info->freeBytes).value);
    r.set("cache_bytes", device.cacheBytes().value);
    if (device.budget())
        r.set("budget_bytes", device.budget()->value);

    bool overheadOk = true;
    if (device.kind() == DeviceKind::Cpu) {
        r.set("context_overhead_bytes", std::uint64_t{0});
        r.notes.push_back("the CPU backend has no context: its overhead is 0 by construction");
    } else if (options.isolation.mode == Isolation::Mode::Exec && !options.isolation.workerCommand.empty()) {
        // A second process creates its own context; the drop of free memory it sees against ours
        // is one context's overhead (other processes' use cancels out).
        progress.report(0.05, "measuring the context overhead in a second process");
        auto before = device.memoryInfo();
        const ProbeResult child = detail::runIsolated("device", detail::contextWorkOrder(device.spec()), options.isolation,
                                                      device.kind(), progress);
        const auto childFree = child.integer("free_bytes");
        if (before && childFree) {
            const std::uint64_t overhead = saturatingSub(before->freeBytes, Bytes{*childFree}).value;
            r.set("context_overhead_bytes", overhead);
            overheadOk = overhead <= (1ull << 30);
            if (!overheadOk)
                r.notes.push_back("context overhead above 1 GiB (gpus.md §6.4: expect 250-600 MiB on Linux)");
        } else {
            r.notes.push_back("context overhead not measured: " + child.summary);
        }
    } else {
        r.notes.push_back("context overhead not measured (needs a worker process); used_bytes includes this context and other processes");
    }
    if (progress.cancelled())
        return cancelledResult("device");

    // Buffers: max(8 x cache, 256 MiB) each, within half the budget and a quarter of free memory.
    std::uint64_t size = options.copyBytes.value;
    if (size == 0)
        size = std::max<std::uint64_t>(8 * device.cacheBytes().value, 256ull << 20);
    if (device.budget())
        size = std::min(size, saturatingSub(*device.budget(), device.allocatedBytes()).value / 2);
    size = std::min(size, info->freeBytes.value / 4);
    size = size / 4096 * 4096;
    if (size < (1u << 20))
        return failedResult("device", "not enough memory for the bandwidth buffers (" + detail::bytesText(size) + ")");
    auto src = DeviceBuffer::make(device, Bytes{size}, "copy source");
    if (!src)
        return failedResult("device", src.error().message);
    auto dst = DeviceBuffer::make(device, Bytes{size}, "copy destination");
    if (!dst)
        return failedResult("device", dst.error().message);
    if (auto s = device.fill(src->get(), 0, Bytes{size}); !s)
        return failedResult("device", s.error().message);
    if (auto s = device.fill(dst->get(), 0, Bytes{size}); !s)
        return failedResult("device", s.error().message);
    r.set("copy_buffer_bytes", size);

    const std::uint32_t reps = std::max<std::uint32_t>(options.reps, 1);
    constexpr std::uint32_t kWarmup = 2;
    std::vector<double> copyMs;
    std::vector<double> readMs;
    for (std::uint32_t i = 0; i < kWarmup + reps; ++i) {
        if (progress.cancelled())
            return cancelledResult("device");
        auto t = device.timeMs([&] { return device.copy(dst->get(), src->get(), Bytes{size}); });
        if (!t)
            return failedResult("device", t.error().message);
        if (i >= kWarmup)
            copyMs.push_back(*t);
        progress.report(0.1 + 0.45 * (i + 1) / (kWarmup + reps), "copy bandwidth");
    }
    for (std::uint32_t i = 0; i < kWarmup + reps; ++i) {
        if (progress.cancelled())
            return cancelledResult("device");
        auto t = device.timeMs([&] { return device.readAll(src->get(), Bytes{size}); });
        if (!t)
            return failedResult("device", t.error().message);
        if (i >= kWarmup)
            readMs.push_back(*t);
        progress.report(0.55 + 0.45 * (i + 1) / (kWarmup + reps), "read bandwidth");
    }
    const double copyMedian = detail::median(copyMs);
    const double readMedian = detail::median(readMs);
    const double copyGBps = copyMedian > 0 ? 2.0 * static_cast<double>(size) / (copyMedian * 1e6) : 0;
    const double readGBps = readMedian > 0 ? static_cast<double>(size) / (readMedian * 1e6) : 0;
    r.set("reps", std::uint64_t{reps});
    r.set("copy_ms", copyMedian);
    r.set("copy_bandwidth_gbps", copyGBps);
    r.set("copy_cv", detail::coefficientOfVariation(copyMs));
    r.set("read_ms", readMedian);
    r.set("read_bandwidth_gbps", readGBps);
    r.set("read_cv", detail::coefficientOfVariation(readMs));
    r.notes.push_back("B_copy counts bytes read + written (2 x buffer) per copy; B_read reads the buffer once; medians of "
                      + std::to_string(reps) + " after 2 warm-ups; GB/s = 10^9 B/s");
    if (device.kind() == DeviceKind::Cuda)
        r.notes.push_back("timed with CUDA events around cudaMemcpyAsync (D2D) and a read-only reduction kernel");
    else
        r.notes.push_back("timed with a steady clock around threaded memcpy and a threaded XOR read");
    r.pass = copyGBps > 0 && readGBps > 0 && overheadOk;
    char line[200];
    std::snprintf(line, sizeof line, "%s: B_copy %.1f GB/s, B_read %.1f GB/s, %s free of %s", device.name().c_str(), copyGBps,
                  readGBps, formatBytes(info->freeBytes).c_str(), formatBytes(info->totalBytes).c_str());
    r.summary = line;
    return r;
}

} // namespace headroom::probes
