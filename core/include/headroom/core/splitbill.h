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
    /// Routed experts in host memory while their layers are on the GPU (llama.cpp --n-cpu-moe N:
    /// common/arg.cpp adds the override blk\.i\.ffn_(up|down|gate)_exps=CPU for each i < N, the
    /// "buffer type overriden to CPU" lines of src/llama-model.cpp load_tensors; -ot patterns and
    /// --fit's own overrides likewise): the engine figure split_host_expert_bytes.
    Bytes hostExpertBytes;
    /// Other tensors of the repeating layers in host memory (a layer split's CPU layers, --fit's
    /// FFN overrides): split_host_weights_bytes, token_embd excluded (it is always there).
    Bytes hostLayerWeightsBytes;
    /// The KV cache in host memory (the CPU layers' rows, or every layer's with --no-kv-offload:
    /// src/llama-kv-cache.cpp puts a layer's K/V on the CPU unless offload_kqv and its layer is
    /// on a GPU): host_kv_buffer_bytes.
    Bytes hostKvBytes;
    /// The plan is split between the GPU and the host: a layer split, or every layer on the GPU
    /// with experts, other layer tensors or the KV cache in host memory. The one test every face
    /// and the verdict (FitState::PartialOffload) use; a CPU-only plan (gpuLayers 0) is one too.
    bool partial = false;
    /// Every layer on the GPU (no layer split), yet experts or KV in host memory.
    bool hostTensorsOnly() const { return partial && !layerSplit; }
    /// The plan runs with no GPU at all (the card "cpu", Card::hostOnly): the GPU side is empty.
    bool hostOnly = false;
    bool hostWeightsMapped = false;  ///< the host weights are mapped file pages (llama.cpp mmap: CPU_Mapped), not a copy
    /// What the host's weights are, in one sentence for every face; empty when the host holds no
    /// weights. With mmap: "the host weights are the model file's pages mapped with mmap, not a
    /// copy: ..." (llama.cpp src/llama-model-loader.cpp, CPU_Mapped buffers).
    std::string hostWeightsNote;
    /// The context per sequence the engine placed the split for: llama.cpp's n_ctx_seq (the
    /// offload_context_tokens figure: the asked context, or --fit's minimum when none was asked),
    /// else the plan's context (Ollama's num_ctx). 0 when not partial.
    std::uint64_t contextTokensPerSequence = 0;
    /// The sequences the split holds (the plan's users, at least 1); 0 when not partial.
    std::uint64_t sequences = 0;
    /// The tokens the split's KV cache holds, all sequences together: contextTokensPerSequence x
    /// sequences (llama.cpp allocates n_ctx = n_ctx_seq x n_seq cells, src/llama-context.cpp);
    /// the plan's max resident tokens when the plan is partial. 0 when not partial.
    std::uint64_t residentTokens = 0;
    /// The GPU side of a partial plan: weights of the GPU layers, the plan's overheads (CUDA context,
    /// compute buffer), the KV of the GPU layers. Empty when not partial (the plan's own bill is
    /// the GPU's) and for a CPU-only plan (no GPU).
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
