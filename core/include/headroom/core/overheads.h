#pragma once
/// @file overheads.h
/// Everything on the card besides weights and KV cache, as named, priced components
/// (BRIEF §1.3): driver/context reservation, library workspace, prefill activation peak,
/// logits buffer, CUDA graphs, fragmentation and the engine's safety margin.

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// One priced component of the bill.
struct OverheadItem {
    std::string name;    ///< "cuda_context", "activation_peak", "logits", "workspace", "cuda_graphs", "fragmentation", "safety_margin", "engine_reserve"
    Bytes bytes;         ///< its size
    std::string note;    ///< how it was priced ("ubatch 512 x ..., flash attention")
};

/// Sum of the items.
Bytes totalBytes(const std::vector<OverheadItem>& items);

/// Peak activation memory of one prefill chunk of @p ubatchTokens tokens attending over
/// @p contextTokens cached tokens, fp16 activations:
///   ubatch * (2 * hidden + q + k + v widths + 2 * ffn width) * 2 B   (hidden states, QKV, gate/up)
/// plus, without flash attention, the full fp32 score matrix
///   heads * ubatch * context * 4 B   (BRIEF §1.3: 67 MB of fp32 scores at 4,096 tokens per head).
/// MoE layers use experts_per_token (+ shared) x expert width as the FFN width.
/// An estimate in the spirit of llama.cpp's compute buffer (per-layer max of attention and FFN
/// increments, gguf-parser file_estimate__llamacpp.go); probes measure the real figure.
Bytes activationPeakBytes(const Architecture& arch, std::uint64_t ubatchTokens, std::uint64_t contextTokens,
                          bool flashAttention);

/// Logits buffer: vocab * outputs * 4 B (fp32), outputs = sequences sampled in one step.
Bytes logitsBytes(const Architecture& arch, std::uint64_t outputs);

} // namespace headroom
