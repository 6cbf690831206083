#include "headroom/core/enginerules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace headroom {

std::uint64_t vllmGpuBlocks(Bytes totalBytes, double gpuMemoryUtilization, Bytes peakTorchBytes, Bytes nonTorchBytes,
                            Bytes cudaGraphBytes, Bytes cacheBlockBytes)
{
    if (cacheBlockBytes.value == 0)
        return 0;
    // Python computes total * utilization in double; so do we.
    const double available = static_cast<double>(totalBytes.value) * gpuMemoryUtilization
        - static_cast<double>(peakTorchBytes.value) - static_cast<double>(nonTorchBytes.value)
        - static_cast<double>(cudaGraphBytes.value);
    if (available <= 0)
        return 0;
    return static_cast<std::uint64_t>(std::floor(available / static_cast<double>(cacheBlockBytes.value)));
}

double vllmMaxConcurrency(std::uint64_t gpuBlocks, std::uint64_t blockTokens, std::uint64_t maxModelLenTokens)
{
    if (maxModelLenTokens == 0)
        return 0;
    return static_cast<double>(gpuBlocks) * static_cast<double>(blockTokens) / static_cast<double>(maxModelLenTokens);
}

std::string formatConcurrency(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x);
    return buf;
}

SglangMemoryDefaults sglangMemoryDefaults(Bytes totalBytes, std::uint32_t tp)
{
    const double gpuMemMb = static_cast<double>(totalBytes.value) / static_cast<double>(kMiB);
    if (gpuMemMb < 20 * 1024.0)
        return {2048, 8};
    if (gpuMemMb < 35 * 1024.0)
        return {2048, tp < 4 ? 24u : 80u};
    if (gpuMemMb < 60 * 1024.0)
        return {4096, tp < 4 ? 32u : 160u};
    if (gpuMemMb < 160 * 1024.0)
        return {8192, tp < 4 ? 256u : 512u};
    return {16384, 512};
}

double sglangMemFractionStatic(Bytes totalBytes, std::uint32_t tp, std::uint32_t pp,
                               std::optional<std::uint64_t> chunkedPrefillTokens, std::optional<std::uint64_t> cudaGraphMaxBs)
{
    const double gpuMemMb = static_cast<double>(totalBytes.value) / static_cast<double>(kMiB);
    if (gpuMemMb <= 0)
        return 0.0;
    const SglangMemoryDefaults d = sglangMemoryDefaults(totalBytes, tp);
    const double chunked = static_cast<double>(chunkedPrefillTokens.value_or(d.chunkedPrefillTokens));
    const double graphBs = static_cast<double>(cudaGraphMaxBs.value_or(d.cudaGraphMaxBs));
    double reserved = 512 + std::max(chunked, 2048.0) * 1.5 + graphBs * 2 + static_cast<double>(tp) * pp / 8.0 * 1024;
    if (gpuMemMb > 60 * 1024.0)
        reserved = std::max(reserved, 10 * 1024.0);
    const double fraction = std::round((gpuMemMb - reserved) / gpuMemMb * 1000.0) / 1000.0; // Python round(x, 3)
    return fraction > 0 ? fraction : 0.0;
}

std::uint64_t ollamaDefaultContextTokens(Bytes totalBytes)
{
    if (totalBytes.value >= 47 * kGiB)
        return 262'144;
    if (totalBytes.value >= 23 * kGiB)
        return 32'768;
    return 4'096;
}

} // namespace headroom
