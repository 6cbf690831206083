#pragma once
/// @file ollamamemory.h
/// Ollama's own memory estimator, as the figures its logs print ("offload to cuda ...
/// memory.required.kv=... memory.graph.full=... memory.graph.partial=..."), and the launch it now
/// delegates to llama-server's --fit.
///
/// Sources (github.com/ollama/ollama):
///  - v0.5.7 llm/ggml.go GraphSize and kvCacheBytesPerElement, llm/memory.go EstimateGPULayers,
///    llm/server.go NewLlamaServer (the quantized-cache fallback) and server/sched.go (num_ctx is
///    multiplied by OLLAMA_NUM_PARALLEL before the estimate);
///  - the estimator's later rules, each from the first tag that has it (llm/memory.go,
///    fs/ggml/ggml.go): v0.6.0 VisionGraphSize (the projector on GPU 0); v0.6.1 memoryWeights sums
///    blk.i alone (no kv share); v0.6.3 GraphSize returns the kv of each layer (gemma3's sliding
///    layers smaller) and memory.weights.total = repeating + nonrepeating; v0.7.0 layers placed from
///    the last, each that misses counted in the overflow; v0.7.1 (d75557747) the Ollama engine's
///    projector weights and graph placed with the output layer;
///  - fb30760996871fa9460115c753afd2c60d4ab0f7 llm/llama_server.go startLlamaServer: llama-server
///    with -c num_ctx x parallel -np parallel, --cache-type-k and --cache-type-v both
///    OLLAMA_KV_CACHE_TYPE, --flash-attn on/off/auto, no -ngl (llama.cpp --fit places the layers);
///    ml/device.go MinimumMemory 457 MiB per CUDA/ROCm GPU; envconfig OLLAMA_NUM_PARALLEL default 1.

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"
#include "headroom/core/weightformat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::ollama {

/// The settings, in Ollama's spelling.
struct Settings {
    std::uint64_t numCtx = 4096;        ///< num_ctx per request (before x parallel)
    std::uint32_t numParallel = 1;      ///< OLLAMA_NUM_PARALLEL
    std::uint64_t numBatch = 512;       ///< num_batch
    bool flashAttention = false;        ///< OLLAMA_FLASH_ATTENTION, resolved (and supported by GPU and model)
    std::string kvCacheType = "f16";    ///< OLLAMA_KV_CACHE_TYPE: f16, q8_0, q4_0
    Bytes gpuOverhead;                  ///< OLLAMA_GPU_OVERHEAD per GPU
    /// The Ollama version whose estimator rules apply ("0.9.0", "v0.5.7"); the rules change at
    /// v0.6.1, v0.6.3, v0.7.0 and v0.7.1 (see the file comment).
    std::string version = "0.5.7";
};

/// The cache type Ollama really uses: before the llama-server delegation it falls back to f16 when
/// flash attention is off ("quantized kv cache requested but flash attention disabled",
/// v0.5.7 llm/server.go), and it only knows f16, q8_0 and q4_0.
std::string effectiveKvCacheType(const Settings& settings);

/// What Ollama's estimator prints (v0.5.7 llm/memory.go, llm/ggml.go).
struct LegacyEstimate {
    std::uint64_t contextTokens = 0; ///< num_ctx x OLLAMA_NUM_PARALLEL (the runner's --ctx-size)
    Bytes kvBytes;                   ///< memory.required.kv = ctx x layers x (d_k + d_v) x H_kv x bytes/element
    /// The kv of each layer (GraphSize's kv[i], v0.6.3 and later; before it every layer is
    /// charged kv / n_layer): gemma3's sliding layers hold parallel x window + batch cells.
    std::vector<Bytes> kvPerLayerBytes;
    Bytes graphFullBytes;            ///< memory.graph.full (all layers on one GPU)
    Bytes graphPartialBytes;         ///< memory.graph.partial (a split, or several GPUs)
    std::string kvCacheType;         ///< after the f16 fallback
    Bytes projectorGraphBytes;       ///< projector.graph: the vision encoder's graph (VisionGraphSize), 0 without vision
};

/// Ollama's VisionGraphSize graph for @p vision (fs/ggml/ggml.go, the estimator of v0.6 to
/// v0.12): gemma3 (SigLIP) and mistral3 (Pixtral) 4 x (image^2 x channels + hidden x patch +
/// patches^2 x heads), the fp32 attention scores of one image; 0 for the other towers. The
/// projector's weights (projector.weights) are the v.* tensors, priced with the model's weights.
Bytes visionGraphBytes(const VisionConfig& vision);

/// projector.weights: the v.* vision tower of @p arch priced in @p format (parameters.h); Ollama's
/// VisionGraphSize sums the v.* tensors only, leaving the mm.* projector matrices out.
Bytes projectorWeightsBytes(const Architecture& arch, const WeightFormat& format);

/// Ollama's estimate for @p arch. The graph formulas are Ollama's per architecture family (llama,
/// qwen2, gemma/gemma2, command-r, phi2, stablelm; mixtral's are not carried), with batch =
/// min(context, num_batch); gemma3 shares gemma's graph and keeps (parallel x sliding_window +
/// batch) cells in its sliding layers (every 6th layer global, fs/ggml/ggml.go GraphSize of v0.6+);
/// other families fall back as Ollama does: partial = GQA x kv / 6,
/// full = partial. bytes/element: f16 2, q8_0 1, q4_0 0.5 (Ollama's own approximation of the blocks).
LegacyEstimate legacyEstimate(const Architecture& arch, const Settings& settings);

/// Ollama's placement of one model on one GPU (v0.5.7 llm/memory.go EstimateGPULayers, at
/// a420a453b4783841e3e79c248ef0fe9548df6914, with the later rules of Settings::version), the
/// figures of its "offload to cuda" line:
///  - layer i costs its tensors (blk.i, priced per tensor in the file's format) + its kv (kv /
///    n_layer before v0.6.3, kv[i] after);
///  - the GPU must hold overhead + max(graph) + MinimumMemory + 2 x layer 0 (+ the projector's
///    weights and graph, v0.6.0 to v0.7.0) to take any layer, and starts its allocation at
///    MinimumMemory + layer 0 (one layer's worth "as a buffer") + that projector;
///  - layers are added (from the first before v0.7.0, from the last after) while free > overhead +
///    allocation + max(graph partial, full) + layer, stopping at num_gpu when given; then the output
///    layer (output_norm + output, or token_embd when tied; from v0.7.1 plus the projector's weights
///    and graph) the same way;
///  - the graph added is the full one when every layer and the output went, else the partial one.
/// memory.weights.total: before v0.6.1 every layer's cost (kv share included, the output not);
/// v0.6.1 the blk.i tensors alone; from v0.6.3 those plus the output layer. The projector's
/// v.* tensors are never in it (projector.weights). A CPU run (library=cpu) has no MinimumMemory.
struct GpuLayerEstimate {
    std::uint32_t layers = 0;        ///< layers.offload (the output layer counts as one)
    std::uint32_t modelLayers = 0;   ///< layers.model = n_layer + 1
    Bytes allocationBytes;           ///< memory.required.allocations (= partial on one GPU)
    Bytes requiredPartialBytes;      ///< memory.required.partial: what the GPU gets
    Bytes requiredFullBytes;         ///< memory.required.full: partial + what did not fit
    Bytes weightsTotalBytes;         ///< memory.weights.total
    /// memory.weights.repeating: the layers' memoryWeights (before v0.6.1 less the output layer,
    /// saturating at 0, as v0.5.7 prints memoryWeights - memoryLayerOutput).
    Bytes weightsRepeatingBytes;
    Bytes weightsNonRepeatingBytes;  ///< memory.weights.nonrepeating (the output layer)
    /// The weights the estimator places on a GPU when every layer goes: blk.* + the output layer +
    /// the v.* projector (token_embd only where it is the tied output; the mm.* matrices never).
    Bytes gpuWeightsBytes;
    Bytes layerBufferBytes;          ///< layer 0's blk.0 + its kv, allocated first "as a buffer"
    /// layers.split: the layers each GPU took, in the order the GPUs were given (the output layer
    /// counts on its GPU); one entry on one GPU.
    std::vector<std::uint32_t> gpuLayers;
    /// memory.required.allocations: each GPU's allocation in the same order (MinimumMemory + the
    /// buffer layer + its layers + its graph; a GPU without space for two layers 0).
    std::vector<Bytes> gpuAllocationBytes;
    LegacyEstimate estimate;         ///< kv and graphs (on several GPUs graph.full = graph.partial)
};

/// The placement on a GPU with @p freeBytes free (memory.available), @p minimumBytes of
/// MinimumMemory (457 MiB for CUDA and ROCm, discover/gpu.go) and @p numGpu layers asked
/// (num_gpu; negative = as many as fit).
GpuLayerEstimate estimateGpuLayers(const Architecture& arch, const WeightFormat& format, const Settings& settings,
                                   Bytes freeBytes, Bytes minimumBytes, std::int64_t numGpu = -1);

/// The placement over several GPUs of one library, @p freeBytes each GPU's memory.available in
/// the order the scheduler passes them (llm/memory.go EstimateGPULayers, v0.5.11 and v0.9.2, the
/// same per-GPU loop from v0.2 to v0.12):
///  - with more than one GPU the full graph is the partial one ("multigpu should always use the
///    partial graph size");
///  - gpusWithSpace: the GPUs, in order, whose free memory holds overhead + max(graph) +
///    MinimumMemory + 2 x layer 0 (+ the projector on the first of them, v0.6.1 to v0.7.0); each
///    starts at MinimumMemory + layer 0, the first also takes the projector;
///  - layer i (from the first before v0.7.0, from the last after) goes to gpusWithSpace[i % j] for
///    j = |gpusWithSpace| down to 1, each GPU it does not fit (free > overhead + allocation +
///    max(graph) + layer) leaving gpusWithSpace; the output layer goes to
///    gpusWithSpace[layers placed % j], none leaving;
///  - every GPU with a layer adds the full graph when everything went, else the partial one.
/// memory.required.partial is the sum of the allocations; layers.split is gpuLayers. VisionGraphSize
/// counts gemma3's v.* tower from v0.6.1 (PR 9703) only: in v0.6.0 the projector is 0.
/// An empty @p freeBytes is one GPU with nothing free.
GpuLayerEstimate estimateGpuLayers(const Architecture& arch, const WeightFormat& format, const Settings& settings,
                                   const std::vector<Bytes>& freeBytes, Bytes minimumBytes, std::int64_t numGpu = -1);

/// The GPUs Ollama's scheduler gives one model, as indices into @p freeBytes in the order it
/// passes them to the estimator (server/sched.go pickBestFullFitByLibrary and
/// pickBestPartialFitByLibrary, v0.5.11; llm/memory.go from v0.12.0), OLLAMA_SCHED_SPREAD off:
///  - before v0.12.0: the first GPU, by free memory descending, on which the whole model fits
///    alone; else all of them by free memory descending if the model fits on them;
///  - from v0.12.0: the fewest GPUs, by free memory descending, on which it fits;
///  - when it fits on none: every GPU in the order given (a partial offload over all of them).
/// "Fits": every layer and the output layer placed, or num_gpu layers when @p numGpu >= 0
/// (PredictServerFit). One GPU: {0}.
std::vector<std::size_t> scheduleGpus(const Architecture& arch, const WeightFormat& format, const Settings& settings,
                                      const std::vector<Bytes>& freeBytes, Bytes minimumBytes, std::int64_t numGpu = -1);

} // namespace headroom::ollama
