// Ollama from v0.30.0: the scheduler's GPU choice and llama-server's command line (ollamalaunch.h;
// llm/llama_server.go and server/sched.go at fb30760996871fa9460115c753afd2c60d4ab0f7).

#include "headroom/core/engines/ollamalaunch.h"

#include <algorithm>

namespace headroom::ollama {

std::vector<EngineSetting> llamaServerSettings(const LlamaServerLaunch& launch)
{
    const std::uint64_t parallel = std::max<std::uint64_t>(launch.numParallel, 1);
    std::vector<EngineSetting> out = {
        {"ctx-size", std::to_string(launch.numCtx * parallel)},
        {"parallel", std::to_string(parallel)},
        {"flash-attn", launch.flashAttention ? "on" : "off"},
        {"cache-type-k", launch.kvCacheType},
        {"cache-type-v", launch.kvCacheType},
    };
    if (launch.numBatch > 0) { // appendBatchArgs: -b and -ub the same
        out.push_back({"batch-size", std::to_string(launch.numBatch)});
        out.push_back({"ubatch-size", std::to_string(launch.numBatch)});
    }
    if (launch.numGpu >= 0)
        out.push_back({"n-gpu-layers", std::to_string(launch.numGpu)});
    return out;
}

Bytes predictServerVramBytes(const Architecture& arch, Bytes fileBytes, std::uint64_t numCtx, std::uint64_t numParallel)
{
    std::uint64_t kvHeads = arch.kvHeads;
    for (std::uint32_t h : arch.kvHeadsPerLayer) // HeadCountKVMin
        if (h > 0)
            kvHeads = std::min<std::uint64_t>(kvHeads == 0 ? h : kvHeads, h);
    kvHeads = std::max<std::uint64_t>(kvHeads, 1);
    const std::uint64_t headDim = arch.attentionHeads > 0 ? arch.hiddenSize / arch.attentionHeads : 0;
    const std::uint64_t ctx = (arch.contextLength > 0 ? std::min(numCtx, arch.contextLength) : numCtx)
                              * std::max<std::uint64_t>(numParallel, 1);
    return fileBytes + Bytes{2 * std::uint64_t{arch.layers} * kvHeads * headDim * ctx * 2};
}

std::optional<std::size_t> singleGpuPlacement(Bytes predictedBytes, const std::vector<Bytes>& freeBytes, std::int64_t numGpu)
{
    if (freeBytes.size() <= 1 || numGpu == 0)
        return std::nullopt;
    std::optional<std::size_t> best;
    for (std::size_t g = 0; g < freeBytes.size(); ++g) {
        if (predictedBytes.value > freeBytes[g].value * 80 / 100)
            continue;
        if (!best || freeBytes[g] > freeBytes[*best])
            best = g;
    }
    return best;
}

std::uint64_t automaticNumBatch(bool flashAttention, std::uint64_t contextTokens, Bytes predictedBytes, Bytes availableBytes,
                                Bytes smallestGpuFreeBytes)
{
    if (!flashAttention)
        return contextTokens > 4096 && smallestGpuFreeBytes.value > 0 && smallestGpuFreeBytes.value <= 8 * kGiB ? 256 : 512;
    std::uint64_t batch = contextTokens > 32768 ? 2048 : (contextTokens > 4096 ? 1024 : 512);
    const auto fits = [&](std::uint64_t b) {
        const std::uint64_t predicted = predictedBytes.value;
        const std::uint64_t available = availableBytes.value;
        if (predicted == 0 || available == 0)
            return true;
        const std::uint64_t threshold = available * 80 / 100;
        if (predicted > threshold)
            return false;
        if (b >= 2048 && predicted > available * 60 / 100)
            return false;
        if (b >= 1024 && b < 2048 && predicted > available * 75 / 100)
            return false;
        const std::uint64_t surcharge = b >= 2048 ? 2 * kGiB : (b >= 1024 ? 768 * kMiB : 0);
        return surcharge <= threshold - predicted;
    };
    while (batch > 512 && !fits(batch))
        batch = batch > 1024 ? 1024 : 512;
    return batch;
}

} // namespace headroom::ollama
