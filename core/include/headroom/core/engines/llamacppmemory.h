#pragma once
/// @file llamacppmemory.h
/// llama.cpp's own memory arithmetic for one context: the sizes it derives from -c/-np/-b/-ub, the KV
/// cache it allocates (cells, streams, K and V rows per layer), the host output buffer, the compute
/// buffer its reserve graph needs, and the settings it refuses. Every rule is read from llama.cpp's
/// source as node-llama-cpp 3.21.1 ships it (release v0.4.0 of ggml-org/llama.cpp; the bundle is a
/// squashed tree, so files are cited without an upstream commit) and checked against that llama.cpp's
/// own printed figures in tests/core/tst_llamacpp.cpp (the oracle grid of tests/llamacpp/).

#include "headroom/core/architecture.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::llamacpp {

/// The MLA cache layout of a llama.cpp version (ggml-org/llama.cpp):
enum class MlaCache {
    /// Before PR #12801 (April 2025): full per-head K (n_head x (nope + rope)) and V (n_head x v_head).
    FullHeads,
    /// PR #12801 to PR #19067: K = kv_lora_rank + rope (576 for DeepSeek), V = kv_lora_rank (512).
    LatentKV,
    /// Since PR #19067 (January 2026, "kv-cache : support V-less cache"): K = kv_lora_rank + rope only.
    LatentKOnly,
};

/// The context settings, in llama.cpp's own terms (common/common.h defaults).
struct ContextSettings {
    std::uint64_t ctxSizeTokens = 4096;  ///< -c/--ctx-size as given (0 = the model's trained context)
    std::uint32_t parallel = 1;          ///< -np/--parallel: n_seq_max, 1..256 (LLAMA_MAX_SEQ)
    std::uint64_t batchTokens = 2048;    ///< -b/--batch-size: n_batch
    std::uint64_t ubatchTokens = 512;    ///< -ub/--ubatch-size: n_ubatch
    bool flashAttention = true;          ///< -fa on/off, resolved (auto is on where the device supports it)
    KvDtype typeK;                       ///< -ctk/--cache-type-k (fp16 = llama.cpp's f16)
    KvDtype typeV;                       ///< -ctv/--cache-type-v
    bool swaFull = false;                ///< --swa-full: sliding-window layers keep every cell
    bool kvUnified = false;              ///< --kv-unified: one stream shared by all sequences
    /// How an MLA layer (DeepSeek-V2/V3) is cached, by llama.cpp version.
    MlaCache mlaCache = MlaCache::LatentKOnly;
};

/// The sizes llama_context derives from the settings (src/llama-context.cpp, llama_context ctor):
///     n_batch   = min(n_ctx as given, -b)                       (causal attention)
///     n_ubatch  = min(n_batch, -ub)
///     n_ctx     = GGML_PAD(n_ctx, 256)
///     unified:  n_ctx_seq = n_ctx
///     else:     n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256); n_ctx = n_ctx_seq * n_seq_max
/// so each sequence's stream is padded on its own: -c 800 -np 8 gives 8 streams of 256 cells.
struct ContextSizes {
    std::uint64_t nCtx = 0;          ///< cells over all streams, as "llama_context: n_ctx" prints
    std::uint64_t nCtxSeq = 0;       ///< cells of one stream ("n_ctx_seq")
    std::uint32_t streams = 1;       ///< 1 when unified, else n_seq_max
    std::uint64_t nBatch = 0;        ///< "n_batch"
    std::uint64_t nUbatch = 0;       ///< "n_ubatch"
    /// Tokens of the reserve graph (sched_reserve): min(n_ctx, n_ubatch) rounded up to a multiple of
    /// n_seq_max (graph_reserve makes n_tokens a multiple of n_seqs).
    std::uint64_t reserveTokens = 0;
    /// Outputs of the reserve graph: min(n_ctx, n_ubatch, n_outputs_max = n_batch), before rounding.
    std::uint64_t reserveOutputs = 0;
};

/// Context sizes from the settings; n_ctx 0 takes @p arch's trained context.
ContextSizes contextSizes(const Architecture& arch, const ContextSettings& settings);

/// The KV cache as llama_kv_cache allocates it (src/llama-kv-cache.cpp): per layer one K tensor
/// [n_embd_k_gqa, cells, streams] of type_k and one V tensor [n_embd_v_gqa, cells, streams] of
/// type_v (without flash attention V is stored transposed, rows of n_embd_v_gqa_max); an MLA layer
/// after the MLA change stores K only. Sliding-window layers (src/llama-kv-cache-iswa.cpp) get
///     cells_swa = swa_full ? n_ctx_seq : min(n_ctx_seq, GGML_PAD(n_swa * (unified ? n_seq_max : 1) + n_ubatch, 256))
struct KvCacheBill {
    std::uint64_t cells = 0;          ///< cells per stream of the full-attention layers ("N cells")
    std::uint64_t slidingCells = 0;   ///< cells per stream of the sliding-window layers (0 without)
    std::uint32_t streams = 1;        ///< streams ("S/T seqs" prints n_seq_max/streams)
    std::uint32_t fullLayers = 0;     ///< layers of the first cache
    std::uint32_t slidingLayers = 0;  ///< layers of the sliding-window cache
    Bytes kBytes;                     ///< all K tensors ("K (f16): ... MiB", both caches)
    Bytes vBytes;                     ///< all V tensors
    Bytes fullBytes;                  ///< the full-attention cache ("llama_kv_cache: size = ...")
    Bytes slidingBytes;               ///< the sliding-window cache (the second "size =" line)
    /// Recurrent layers (Gated DeltaNet, Mamba) of a hybrid or recurrent model: llama_memory_recurrent
    /// (src/llama-memory-recurrent.cpp) gives each layer one R tensor [n_embd_r, mem_size] and one S
    /// tensor [n_embd_s, mem_size], f32 (src/llama-model.cpp create_memory: GGML_TYPE_F32 for both),
    /// mem_size = max(1, n_seq_max) cells whatever the context; n_embd_r / n_embd_s are
    /// architecture.h recurrentState(arch, layer, 1).
    std::uint32_t recurrentLayers = 0; ///< "(N cells, L layers, ...)" counts every layer; this counts the kept ones
    std::uint32_t recurrentCells = 0;  ///< mem_size
    Bytes rBytes;                      ///< "R (f32): ... MiB"
    Bytes sBytes;                      ///< "S (f32): ... MiB"
    /// K and V of the attention layers ("KV buffer size"); the RS buffer is recurrentBytes().
    Bytes totalBytes() const { return kBytes + vBytes; }
    Bytes recurrentBytes() const { return rBytes + sBytes; }
};

/// The KV cache of @p arch under @p settings on one device (all layers).
KvCacheBill kvCache(const Architecture& arch, const ContextSettings& settings);

/// The same per token (kvcache.h KvLayout, all layers): the K + V row bytes of each attention
/// layer as kvCache allocates them (the MLA rows of settings.mlaCache, V rows of n_embd_v_gqa_max
/// without flash attention), sliding-window layers apart unless --swa-full keeps every cell for
/// them, and the R + S state (f32) per sequence of the recurrent layers. kvCache(...).fullBytes =
/// fullBytesPerToken x cells x streams.
KvLayout kvLayoutPerToken(const Architecture& arch, const ContextSettings& settings);

/// The same, layer by layer (K + V bytes of layer i at index i, R + S bytes for a recurrent layer;
/// 0 for a layer without a cache):
/// where each layer's cache lives follows its layer (llamacppoffload.h).
std::vector<Bytes> kvBytesPerLayer(const Architecture& arch, const ContextSettings& settings);

/// The host output buffer ("CPU output buffer size", llama_context::output_reserve at construction):
/// n_vocab x n_seq_max x 4 B of logits (no embeddings for a generative model). It lives in host
/// memory, in the pinned host buffer of the device that runs the output layer when there is one.
Bytes outputBufferBytes(const Architecture& arch, const ContextSettings& settings);

/// The compute buffer of the reserve graph, as the sum over its largest stage. ggml-alloc reuses a
/// tensor's memory once its last consumer has run, so the buffer is the live set at the busiest
/// point of the graph (llm_graph_context builders in src/llama-graph.cpp, sizes in f32):
///  - output: the logits tensor n_vocab x n_outputs x 4 B (on the device that runs the output
///    layer) + the last hidden state and its norm 2 x n_embd x T x 4 B + positions T x 4 B;
///  - attention without flash attention: KQ n_head x n_kv x T x 4 B (soft_max runs in place) + the
///    f32 masks still live (n_kv x T x 4 B for each cache kind) + 5 x n_embd x T x 4 B (residual,
///    Q, KQV and the holes the freed K/V projections leave; the factor 5 is fitted to the oracle);
///    with flash attention the f16 masks + the same 5 x n_embd x T x 4 B;
///  - feed-forward: 2 x n_embd x T x 4 B + 3 x n_ff x T x 4 B (gate, up and their product).
/// T is ContextSizes::reserveTokens and n_kv the cells of one stream (all cells when unified).
/// Measured against real llama.cpp over the oracle grid: within 0.7 % except where ggml-alloc's
/// best-fit placement leaves a hole below the logits (docs in tests/core/tst_llamacpp.cpp).
struct ComputeBill {
    Bytes totalBytes;       ///< the largest stage: "CPU compute buffer size" on a single device
    Bytes logitsBytes;      ///< n_vocab x n_outputs x 4 B (part of the output stage)
    Bytes outputStageBytes; ///< the output stage
    Bytes attentionStageBytes; ///< the busiest attention layer
    Bytes ffnStageBytes;    ///< the feed-forward stage
    const char* binding = "output"; ///< "output", "attention" or "ffn"
    /// With every layer offloaded: the device part ("CUDA0 compute buffer"): the rest, totalBytes - n_embd x T x 4 B
    /// - T x 4 B. Checked on a public log (LLamaSharp#1099, llama.cpp b4701, Qwen2.5-3B Q8_0, -c 4096,
    /// flash attention off: CUDA0 300.75 MiB, CUDA_Host 12.01 MiB) in tests/core/tst_llamacpp.cpp.
    Bytes deviceBytes;
    /// With every layer offloaded: the host part ("CUDA_Host compute buffer"): the graph inputs the
    /// scheduler keeps on the CPU backend and the token-embedding rows get_rows produces there
    /// (token_embd stays in host memory): n_embd x T x 4 B + the masks + positions T x 4 B.
    Bytes hostPartBytes;
    /// The graph inputs the pipeline-parallel copies are made of (OffloadBill::pipelineCopies):
    /// one hidden state n_embd x T x 4 B (inp_embd, or the activation a device receives), the
    /// positions T x 4 B, the KQ masks as llama.cpp builds them (f32, n_kv x T x 4 B summed over the
    /// kinds of cache) and as the device reads them (cast to f16 with flash attention).
    Bytes embdBytes;
    Bytes positionsBytes;
    Bytes maskInputBytes;
    Bytes maskDeviceBytes;
};

/// The compute buffer of @p arch under @p settings.
ComputeBill computeBuffer(const Architecture& arch, const ContextSettings& settings);

/// The error llama.cpp stops with for these settings, or nothing (llama_init_from_model and the
/// llama_context constructor, src/llama-context.cpp):
///  - a quantized V cache with flash attention off ("quantized V cache requires flash_attn");
///  - with flash attention on, a quantized K (V) type whose block does not divide n_embd_head_k (v)
///    ("K cache type q4_0 with block size 32 does not divide n_embd_head_k=80");
///  - an MLA model with different K and V types;
///  - n_seq_max above 256 (LLAMA_MAX_SEQ).
/// The message names the setting (-ctk/-ctv/-fa/-np) and quotes llama.cpp's words.
std::optional<std::string> refusal(const Architecture& arch, const ContextSettings& settings);

/// Whether @p dtype is one of llama.cpp's block-quantized cache types (ggml_is_quantized).
bool isQuantized(const KvDtype& dtype);

} // namespace headroom::llamacpp
