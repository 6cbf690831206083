#pragma once
/// @file ollamalayout.h
/// Ollama's own layer layout of v0.12.11 to v0.29 (issue 11): after its memory.go estimator
/// (ollamamemory.h) and before llama-server's --fit (ollamalaunch.h), Ollama placed the layers
/// itself and handed the runner the list. Read from llm/server.go at v0.12.11
/// (github.com/ollama/ollama, commit of the tag v0.12.11):
///  - llamaServer.Load: each layer costs its blk.i tensors + its kv[i] (fs/ggml GraphSize, the
///    estimator's per-layer cache), the output layer output_norm + output (token_embd when tied);
///    every GPU's free memory loses blk.0 + kv[0] first ("use the size of one layer as a buffer");
///    the graph, max(graph partial, full), is reserved on each GPU the layout uses, and the layout is
///    made again while it uses more GPUs than the one before;
///  - buildLayout: the GPUs by free memory, most first; each keeps MinimumMemory +
///    OLLAMA_GPU_OVERHEAD + its graph;
///  - assignLayers: as few GPUs as hold everything (or num_gpu layers), the last of them forced
///    to take num_gpu when set; when not everything fits, once more without the output layer;
///  - findBestFit: the smallest capacity factor (binary search in float32 down to 1e-6; up to 1000
///    when num_gpu is forced) that places as many layers as at factor 1 (1000), which balances the
///    layers over the GPUs;
///  - greedyFit: from the last layer down, on the GPU with the least free memory first, moving to
///    the next GPU when a layer does not fit.
/// The runner then loads that many layers (the llama.cpp buffers of llamacppoffload.h).
/// The Ollama engine's models (ollamaServer.Load) use the same createLayout on the sizes their
/// runner measures; those are not modelled: both are sized here as the llama runner estimates them.

#include "headroom/core/architecture.h"
#include "headroom/core/engines/ollamamemory.h"
#include "headroom/core/units.h"
#include "headroom/core/weightformat.h"

#include <cstdint>
#include <vector>

namespace headroom::ollama {

/// What llamaServer.Load sizes before the layout.
struct RunnerLayers {
    std::vector<Bytes> layerBytes; ///< blk.i + kv[i] for each block, then the output layer
    Bytes bufferBytes;             ///< blk.0 + kv[0], taken from every GPU first
    Bytes graphBytes;              ///< max(graph partial, full): what a GPU the layout uses keeps
};

/// The sizes of @p arch in @p format under @p settings (num_ctx x parallel, num_batch, the cache).
RunnerLayers runnerLayers(const Architecture& arch, const WeightFormat& format, const Settings& settings);

/// One GPU as buildLayout sees it.
struct LayoutGpu {
    Bytes freeBytes;     ///< memory.available (the card's free memory)
    Bytes reservedBytes; ///< MinimumMemory + OLLAMA_GPU_OVERHEAD
};

/// createLayout as llamaServer.Load runs it: the layers each GPU takes, in the order of @p gpus
/// (the output layer counted on its GPU); @p numGpu < 0 = as many as fit.
std::vector<std::uint32_t> createLayout(const RunnerLayers& layers, const std::vector<LayoutGpu>& gpus, std::int64_t numGpu);

} // namespace headroom::ollama
