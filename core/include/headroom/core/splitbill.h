#pragma once
/// @file splitbill.h
/// Where a plan keeps its memory when the engine splits the model between the GPU and host RAM
/// (issue 11): the GPU's own bill of a layer split and the host's (weights left in host memory,
/// with mmap the mapped file pages rather than a copy; llama.cpp's CPU_REPACK copy; the KV of the
/// host layers; the host compute and output buffers; vLLM --cpu-offload-gb's pinned weights).
/// Every term is one of the engine's printed figures (PlanResult::engineFigures, filled by
/// engines/llamacpp.cpp, engines/ollama.cpp and engines/vllm.cpp from the engines' own buffer
/// lines); this file only names and orders them, so that the verdict (FitLimit::HostMemory), the
/// CLI and the app's memory bar add up the same terms.

#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct PlanResult;

/// One term of one device's bill.
struct SplitBillItem {
    std::string name;   ///< the engine figure's name ("host_weights_bytes", "gpu_kv_buffer_bytes", ...) or the overhead's
    std::string label;  ///< words for people: "weights (mapped file pages, mmap)", "KV cache", "CPU_REPACK copy"
    Bytes bytes;
    std::string note;   ///< the engine's printed line ("load_tensors: CPU_Mapped model buffer size = 4683.16 MiB") or how it was priced
};

/// The bill of each side of a plan: the GPU's terms (only when the layers are split) and the host's.
struct SplitBill {
    std::uint32_t gpuLayers = 0;     ///< layers on the GPU, llama.cpp's -ngl count (output layer included)
    std::uint32_t totalLayers = 0;   ///< n_layer + 1 (0 when the engine printed no layer split)
    bool layerSplit = false;         ///< the engine printed "offloaded N/M layers" with N < M
    bool hostWeightsMapped = false;  ///< the host weights are mapped file pages (llama.cpp mmap: CPU_Mapped), not a copy
    /// What the host's weights are, in one sentence for every face; empty when the host holds no
    /// weights. With mmap: "the host weights are the model file's pages mapped with mmap, not a
    /// copy: ..." (llama.cpp src/llama-model-loader.cpp, CPU_Mapped buffers).
    std::string hostWeightsNote;
    /// The context per sequence the engine placed the split for: llama.cpp's n_ctx_seq (the
    /// offload_context_tokens figure: the asked context, or --fit's minimum when none was asked),
    /// else the plan's context (Ollama's num_ctx). 0 without a layer split.
    std::uint64_t contextTokensPerSequence = 0;
    /// The sequences the split holds (the plan's users, at least 1); 0 without a layer split.
    std::uint64_t sequences = 0;
    /// The tokens the split's KV cache holds, all sequences together: contextTokensPerSequence x
    /// sequences (llama.cpp allocates n_ctx = n_ctx_seq x n_seq cells, src/llama-context.cpp);
    /// the plan's max resident tokens when the layers are split. 0 without a layer split.
    std::uint64_t residentTokens = 0;
    /// The GPU side of a layer split: weights of the GPU layers, the plan's overheads (CUDA context,
    /// compute buffer), the KV of the GPU layers. Empty without a layer split (the plan's own bill is the GPU's).
    std::vector<SplitBillItem> gpu;
    /// What stays in host memory, in the order the engine allocates it; empty when nothing does.
    std::vector<SplitBillItem> host;

    /// The sum of gpu.
    Bytes gpuBytes() const;
    /// The sum of host: what --host-ram is checked against.
    Bytes hostBytes() const;
};

/// The split bill of @p plan from its engine figures. A plan with neither a layer split nor host
/// memory (vLLM without --cpu-offload-gb, every plan that fits on the card) gives an empty bill.
SplitBill splitBill(const PlanResult& plan);

/// splitBill(plan).hostBytes(): the host memory the plan needs (0 when none).
Bytes hostMemoryBytes(const PlanResult& plan);

} // namespace headroom
