#pragma once
/// @file enginerules.h
/// The arithmetic of each engine's own memory rule, exactly as the engine does it, so that a
/// plan reproduces what the engine prints (shared/reference/engines.md).

#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

/// vLLM's GPU block count (vllm/worker/worker.py determine_num_available_blocks, v0.6.4;
/// v1/worker/gpu_worker.py + kv_cache_utils.py later):
///     available = total * gpu_memory_utilization - peak_torch - non_torch - cuda_graphs
///     num_gpu_blocks = int(available // cache_block_size)
/// with cache_block_size = block_size * kv_bytes_per_token (all layers). Negative -> 0.
/// @param peakTorchBytes the torch allocator's peak during profiling, weights included.
std::uint64_t vllmGpuBlocks(Bytes totalBytes, double gpuMemoryUtilization, Bytes peakTorchBytes, Bytes nonTorchBytes,
                            Bytes cudaGraphBytes, Bytes cacheBlockBytes);

/// vLLM's "Maximum concurrency for {max_model_len} tokens per request: {x:.2f}x":
/// x = num_gpu_blocks * block_size / max_model_len (kv_cache_utils.py).
double vllmMaxConcurrency(std::uint64_t gpuBlocks, std::uint64_t blockTokens, std::uint64_t maxModelLenTokens);

/// The same figure as vLLM prints it: "1.56x".
std::string formatConcurrency(double x);

/// SGLang's defaults of chunked_prefill_size and cuda_graph_max_bs by card size, the inputs of its
/// reserved-memory rule (python/sglang/srt/server_args.py _handle_gpu_memory_settings @ 469c63e5;
/// gpu_mem in MiB): < 20 GiB 2048 / 8; < 35 GiB 2048 / 24 (80 at tp >= 4); < 60 GiB 4096 / 32
/// (160 at tp >= 4); < 160 GiB 8192 / 256 (512 at tp >= 4); else 16384 / 512.
struct SglangMemoryDefaults {
    std::uint64_t chunkedPrefillTokens = 0;
    std::uint64_t cudaGraphMaxBs = 0;
};
SglangMemoryDefaults sglangMemoryDefaults(Bytes totalBytes, std::uint32_t tp);

/// SGLang's default mem_fraction_static (server_args.py _handle_gpu_memory_settings @ 469c63e5),
/// MiB units:
///     reserved = 512 + max(chunked_prefill_size, 2048) x 1.5 + cuda_graph_max_bs x 2 + tp x pp / 8 x 1024
///     reserved = max(reserved, 10 GiB) on cards over 60 GiB
///     mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)
/// with chunked_prefill_size and cuda_graph_max_bs the user's (`--chunked-prefill-size`,
/// `--cuda-graph-max-bs`) or else sglangMemoryDefaults. Worked values (engines.md): 24 GB card
/// ~0.85, 16 GB ~0.77, 8 GB ~0.55; an 80 GB H100 at tp 1 0.835.
double sglangMemFractionStatic(Bytes totalBytes, std::uint32_t tp, std::uint32_t pp,
                               std::optional<std::uint64_t> chunkedPrefillTokens = std::nullopt,
                               std::optional<std::uint64_t> cudaGraphMaxBs = std::nullopt);

/// Ollama's default num_ctx by total VRAM (server/routes.go): >= 47 GiB -> 262,144;
/// >= 23 GiB -> 32,768; else 4,096.
std::uint64_t ollamaDefaultContextTokens(Bytes totalBytes);

} // namespace headroom
