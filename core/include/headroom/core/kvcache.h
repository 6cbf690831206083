#pragma once
/// @file kvcache.h
/// The KV cache: bytes per token for every architecture (GQA/MQA/MHA, MLA latent, sliding-window
/// layers, per-layer heads), its dtypes, and its paging (BRIEF §1.1).
///
///     kv_bytes_per_token = sum over layers of H_kv(layer) * (d_k + d_v) * bytes(dtype)
///
/// Sources: vLLM `kv_cache_interface.py` (page size = block_size * H_kv * (d_k + d_v) * dtype;
/// MLA: block_size * (kv_lora_rank + rope_dim) * dtype), llama.cpp `llama-kv-cache.cpp`
/// (ggml_row_size of the K and V rows; cells padded to 256 with flash attention, 32 without).

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// A KV cache element type: `blockElements` values stored in `blockBytes` bytes
/// (fp16 1/2, fp8 1/1, llama.cpp q8_0 32/34 = 1.0625 B/value, q4_0 32/18, vLLM nvfp4 16/9), plus
/// `headScaleBytes` of scale per token, head and side (K or V): vLLM's per-token-head caches keep one
/// fp32 scale for each (vllm/v1/kv_cache_interface.py AttentionSpec.page_size_bytes adds
/// 2 x block_size x num_kv_heads x 4 B when kv_quant_mode.is_per_token_head; vLLM commit 001cabc1).
struct KvDtype {
    std::string id;                ///< "fp16", "bf16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2", "q8_0", "q4_0", ...
    std::uint32_t blockElements = 1;
    std::uint32_t blockBytes = 2;
    std::uint32_t headScaleBytes = 0; ///< scale bytes per token, KV head and side (fp8/int8_per_token_head: 4)

    /// Bytes of one row of @p elements values: ceil(elements / block) * blockBytes.
    std::uint64_t rowBytes(std::uint64_t elements) const;
    /// Bytes of one token's row of @p heads heads of @p headDim values, scales included:
    /// rowBytes(heads x headDim) + heads x headScaleBytes.
    std::uint64_t headsRowBytes(std::uint64_t heads, std::uint64_t headDim) const;
    /// Bytes per value, for display (1.0625 for q8_0).
    double bytesPerValue() const { return static_cast<double>(blockBytes) / blockElements; }
};

/// Every built-in KV dtype.
const std::vector<KvDtype>& builtinKvDtypes();
/// Finds a KV dtype by id, case-insensitive ("f16" and "float16" alias "fp16"; "auto" = fp16).
std::optional<KvDtype> findKvDtype(std::string_view id);

/// Per-token KV bytes of one model on one device, split by layer kind.
struct KvLayout {
    Bytes fullBytesPerToken;       ///< layers that keep every token
    Bytes slidingBytesPerToken;    ///< layers capped at the window
    std::uint64_t windowTokens = 0;///< the window of the sliding layers
    std::uint32_t fullLayers = 0;
    std::uint32_t slidingLayers = 0;
    /// Recurrent layers (linear attention, SSM) keep a fixed state per sequence that does not grow
    /// with the context (vLLM MambaSpec: one page per request; llama.cpp llama_memory_recurrent:
    /// one cell per sequence).
    Bytes stateBytesPerSequence;
    std::uint32_t recurrentLayers = 0;

    /// kv_bytes_per_token: what one more token costs while the context is below the window.
    Bytes bytesPerToken() const { return fullBytesPerToken + slidingBytesPerToken; }
};

/// The KV layout of @p arch in @p dtype, for one device of a tensor-parallel group of @p tp
/// (KV heads are sharded; when H_kv < tp every device keeps one replicated head, as vLLM does)
/// holding @p layerCount layers starting at @p firstLayer (pipeline parallel; 0/0 = all).
/// MLA models store kvLoraRank + qkRopeHeadDim values per layer and token, not split by tp.
/// Recurrent layers (architecture.h HybridConfig: Gated DeltaNet, Mamba-1, Mamba-2) store no token;
/// each keeps, per sequence and per TP rank, the conv and temporal state of recurrentState(), in
/// the model's 16-bit dtype (vLLM's default mamba_cache_dtype / mamba_ssm_cache_dtype "auto" = the
/// model dtype, mamba_utils.py MambaStateDtypeCalculator). MLP-only blocks keep nothing.
KvLayout kvLayout(const Architecture& arch, const KvDtype& dtype, std::uint32_t tp = 1,
                  std::uint32_t firstLayer = 0, std::uint32_t layerCount = 0);

/// The same with separate K and V dtypes (llama.cpp -ctk / -ctv): K rows in @p dtypeK, V rows
/// in @p dtypeV. An MLA latent row is priced in @p dtypeK (llama.cpp refuses different types for MLA).
/// Recurrent state elements take @p stateElementBytes each: 2 for vLLM's default, 4 for llama.cpp,
/// whose R and S caches are f32 whatever -ctk/-ctv (src/llama-model.cpp create_memory:
/// recurrent_type_r / recurrent_type_s GGML_TYPE_F32).
KvLayout kvLayout(const Architecture& arch, const KvDtype& dtypeK, const KvDtype& dtypeV, std::uint32_t tp,
                  std::uint32_t firstLayer, std::uint32_t layerCount, std::uint32_t stateElementBytes = 2);

/// How an engine lays the cache out.
struct Paging {
    std::uint64_t blockTokens = 1;       ///< tokens per block (vLLM 16); a sequence takes ceil(tokens/block) blocks
    std::uint64_t cellPadding = 1;       ///< total cells rounded up to a multiple (llama.cpp: 256 FA / 32)
};

/// KV bytes for @p users sequences of @p contextTokens each, with paging: each sequence takes
/// ceil(context/block) blocks; sliding layers hold min(context, window + ubatch) cells per
/// sequence (llama.cpp `n_swa + n_ubatch`; vLLM `W - 1 + max_num_batched_tokens`); recurrent
/// layers add users x stateBytesPerSequence, whatever the context.
Bytes kvBytes(const KvLayout& layout, std::uint64_t users, std::uint64_t contextTokens,
              const Paging& paging = {}, std::uint64_t ubatchTokens = 0);

} // namespace headroom
