#pragma once
/// @file enginerules.h
/// The arithmetic of each engine's own memory rule, exactly as the engine does it, so that a
/// plan reproduces what the engine prints (shared/reference/engines.md).

#include "headroom/core/units.h"

#include <cstdint>
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

/// SGLang's default mem_fraction_static (server_args._handle_gpu_memory_settings), MB units:
///     reserved = 512 + max(chunked_prefill, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp * pp / 8 * 1024
///     (tiers: < 20 GiB -> chunked 2048, graph bs 8; < 35 GiB -> 2048, 24; < 60 GiB -> 4096, 32;
///      else 8192, 80 with reserved at least 10 GiB)
///     mem_fraction_static = (gpu_mem - reserved) / gpu_mem
/// Worked values (engines.md): 24 GB card ~0.85, 16 GB ~0.77, 8 GB ~0.55.
double sglangMemFractionStatic(Bytes totalBytes, std::uint32_t tp, std::uint32_t pp);

/// Ollama's default num_ctx by total VRAM (server/routes.go): >= 47 GiB -> 262,144;
/// >= 23 GiB -> 32,768; else 4,096.
std::uint64_t ollamaDefaultContextTokens(Bytes totalBytes);

} // namespace headroom
