#pragma once
// A model loaded on a device for the probes (private to headroom_probes): every weight tensor in
// its packed layout, the paged KV cache, the decode scratch, and one decode step on the kernels.

#include "headroom/core/parameters.h"
#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/types.h"
#include "headroom/probes/device.h"
#include "headroom/probes/probes.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::probes::detail {

/// The kernel layout of @p format for a tensor of @p role, if the kernels run it
/// (fp16/bf16 as fp16 bits; int8/int4 tensor/row/group with fp16 scales; nf4-b64 with fp16 absmax).
std::optional<formats::QuantLayout> kernelLayout(const WeightFormat& format, TensorRole role);

/// The formula's weight bytes: sum over listTensors(arch) of tensorBytes(tensor, format).
Bytes formulaWeightBytes(const Architecture& arch, const WeightFormat& format);

/// The paged KV cells (tokens) of one layer for @p users x @p context with 16-token blocks,
/// as kvBytes() counts them (sliding layers hold min(context, window) cells per sequence).
std::uint64_t layerCells(const Architecture& arch, std::uint32_t layer, std::uint64_t users, std::uint64_t context);

/// Decode scratch of one step for batches up to kProbeMaxBatch and a block table of
/// @p blockTableEntries int32 entries, on @p backend. Exact bytes of each buffer.
struct ScratchSizes {
    std::uint64_t hidden = 0;     ///< fp16 [64][hidden]
    std::uint64_t q = 0;          ///< fp16 [64][H * D] (MLA: [64][H * (qk_nope + qk_rope)], at least H * v_head)
    std::uint64_t kNew = 0;       ///< fp16 [64][H_kv * D] (MLA: [64][kv_lora_rank + qk_rope], the new latent)
    std::uint64_t vNew = 0;       ///< fp16 [64][H_kv * D] (0 for MLA: the latent is key and value)
    std::uint64_t attnOut = 0;    ///< fp32 [64][H][D] (MLA: [64][H][kv_lora_rank + qk_rope])
    std::uint64_t ffnA = 0;       ///< fp16 [64][ffn], ffn the widest MLP (dense, expert or shared)
    std::uint64_t ffnB = 0;       ///< fp16 [64][ffn]
    std::uint64_t logits = 0;     ///< fp32 [64][vocab]
    std::uint64_t seqLens = 0;    ///< int32 [64]
    std::uint64_t blockTable = 0; ///< int32 [blockTableEntries]
    std::uint64_t attentionWorkspace = 0; ///< kernels::attentionWorkspaceBytes, max over batches 1..64
    // Mixture of experts (0 for dense models):
    std::uint64_t routerLogits = 0; ///< fp32 [64][2 x experts] (an f32 router runs as 2E fp16 rows)
    std::uint64_t expertIn = 0;     ///< fp16 [64][hidden]: the rows routed to one expert
    std::uint64_t expertOut = 0;    ///< fp16 [64][hidden]: that expert's output rows
    std::uint64_t moeOut = 0;       ///< fp16 [64][hidden]: the MoE block's output
    // Multi-head latent attention (0 otherwise):
    std::uint64_t mlaQa = 0;        ///< fp16 [64][q_lora_rank]: the compressed query
    std::uint64_t mlaQ = 0;         ///< fp16 [64][H][kv_lora_rank + qk_rope]: the absorbed queries
    std::uint64_t mlaHeadIn = 0;    ///< fp16 [64][max(qk_nope, kv_lora_rank)]: one head's gathered input
    std::uint64_t mlaHeadOut = 0;   ///< fp16 [64][max(kv_lora_rank, v_head)]: one head's output before scattering
    /// Sum of the above.
    std::uint64_t total() const;
};

/// The scratch sizes for @p arch on @p backend with @p blockTableEntries entries.
ScratchSizes scratchSizes(const Architecture& arch, DeviceKind backend, std::uint64_t blockTableEntries);

/// The sequences of one step: seqLens [count] and a block table [count][maxBlocksPerSeq].
struct StepSequences {
    std::vector<std::int32_t> seqLens;     ///< tokens in each sequence's cache
    std::vector<std::int32_t> blockTable;  ///< block ids, row-major [count][maxBlocksPerSeq]
    std::uint32_t maxBlocksPerSeq = 0;     ///< columns of blockTable
};

/// @p users sequences of @p tokens each, packed into consecutive blocks from block 0.
StepSequences packedSequences(std::uint64_t users, std::uint64_t tokens);
/// Prefill chunk: @p count query tokens at positions start..start+count-1 of one sequence whose
/// blocks are 0, 1, ...: every row of the block table is the same, seqLens are start+1..start+count.
StepSequences prefillChunk(std::uint64_t start, std::uint64_t count);

/// A model on a device. Buffers free themselves.
class ModelOnDevice {
public:
    ModelOnDevice(Device& device, const ModelInputs& inputs);

    /// Allocates every weight tensor (tensorBytes each) and fills it with a synthetic pattern
    /// (which commits the pages). Checks cancellation between tensors.
    DeviceStatus allocateWeights(ProbeProgress& progress, double from, double to);
    /// Bytes of the weights allocated (= formulaWeightBytes when complete).
    std::uint64_t weightBytes() const { return m_weightBytes; }

    /// Allocates the decode scratch for a block table of @p blockTableEntries entries.
    DeviceStatus allocateScratch(std::uint64_t blockTableEntries);
    /// Bytes of the scratch.
    std::uint64_t scratchBytes() const { return m_scratchBytes; }

    /// Allocates (and fills) the paged KV cache: each layer's K and V of layerCells(...) cells
    /// for @p users x @p context. Fails without keeping a partial cache.
    DeviceStatus allocateKvFor(std::uint64_t users, std::uint64_t context, ProbeProgress* progress = nullptr);
    /// Allocates (and fills) a pool of @p blocks blocks in every layer (decode-step models).
    DeviceStatus allocateKvBlocks(std::uint64_t blocks, ProbeProgress* progress = nullptr);
    /// Frees the KV cache.
    void releaseKv();
    /// Bytes of the KV cache allocated.
    std::uint64_t kvBytes() const { return m_kvBytes; }
    /// Blocks of the pool (allocateKvBlocks).
    std::uint64_t kvBlocks() const { return m_kvBlocks; }

    /// Uploads the sequences of the next steps (block ids must be < kvBlocks()).
    DeviceStatus setSequences(const StepSequences& sequences);
    /// One decode step over the uploaded sequences, layer by layer:
    /// - attention layers: the q/k/v GEMVs, the new token's K and V written at position seqLen - 1
    ///   of each sequence's paged cache, paged attention over every sequence's whole cache
    ///   (micro-batches of 64), the attention output to fp16, the o GEMV;
    /// - MLA layers (DeepSeek-V2/V3), absorbed as llama.cpp runs its latent cache (src/llama-model.cpp
    ///   build_deepseek2 with wk_b / wv_b, ggml-org/llama.cpp PR 12801; vLLM's MLACommonImpl
    ///   decode path, vllm/v1/attention/backends/mla/common.py): q (or q_a then q_b), kv_a into the
    ///   latent cache (kv_lora_rank + qk_rope_head_dim a token, one "KV head"), each head's q_nope
    ///   times its k_b [kv_lora_rank, qk_nope] (kv_b_proj's key half, stored transposed per head
    ///   as convert_hf_to_gguf.py writes attn_k_b), attention of the H absorbed queries over the
    ///   latent (MQA; the latent is the key, its first kv_lora_rank values the value), each head's
    ///   latent output times its v_b [v_head, kv_lora_rank], then o;
    /// - MLP-only layers (hybrid "-" blocks) skip the attention; attention-only blocks skip the MLP;
    /// - dense MLPs: gate/up/down (gated) or fc1/fc2 (plain);
    /// - MoE layers: the router GEMV, top-k per token (routeTopK; the logits are read back to the
    ///   host, which synchronizes a CUDA stream), each touched expert's gate/up/down on the rows
    ///   routed to it (gathered, then scattered back), the shared experts on every row (DeepSeek's
    ///   shared_experts; Qwen's shared_expert and its gate GEMV);
    /// then the logits GEMV. The GEMVs run at batch min(sequences, 64). Asynchronous on CUDA
    /// except for the routing read-back.
    /// @p layers: run only the first N layers (0 = all). @p distinctOnly: of those, only the first
    /// layer of each kind (distinctLayers), the lm_head as always.
    DeviceStatus step(const ProbeProgress* cancel = nullptr, std::uint32_t layers = 0, bool distinctOnly = false);
    /// The first layer of each kind: attention, MLA or none; sliding or not; its KV heads; MoE,
    /// dense or no MLP. Layers of one kind run the same kernels on the same shapes over their own
    /// pools, so a step over these is a step over every shape of the model (the limit probe's
    /// frontier points; the step at the limit runs every layer). Ascending.
    std::vector<std::uint32_t> distinctLayers() const;

    /// Bytes of every runnable matrix (all experts included): what a step reads when every
    /// expert is touched (SpeedInputs::weightsBytes).
    std::uint64_t stepWeightBytes() const { return m_stepWeightBytes; }
    /// Of which routed-expert bytes (SpeedInputs::expertBytes; 0 for dense models).
    std::uint64_t stepExpertBytes() const { return m_stepExpertBytes; }
    /// Bytes one batch-1 step reads from weights: the non-expert matrices and k of E routed experts.
    std::uint64_t stepTokenWeightBytes() const;
    /// Weights multiplied per token by the step (rows x cols of every runnable matrix, routed
    /// experts scaled by k / E).
    std::uint64_t stepWeightParameters() const { return m_stepWeightParameters; }

private:
    /// One MLP: gate/up/down (gated; plain MLPs leave gate empty and use up = fc1, down = fc2).
    struct Mlp {
        kernels::WeightMatrix gate, up, down;
        bool runnable(bool gated) const { return up.data && down.data && (!gated || gate.data); }
    };
    struct Layer {
        kernels::WeightMatrix q, k, v, o;
        kernels::WeightMatrix qA, qB, kvA;      ///< MLA: q_a_proj, q_b_proj, kv_a_proj_with_mqa
        std::vector<kernels::WeightMatrix> kB;  ///< MLA: per head k_b [kv_lora_rank, qk_nope] (views of kv_b_proj)
        std::vector<kernels::WeightMatrix> vB;  ///< MLA: per head v_b [v_head, kv_lora_rank] (views of kv_b_proj)
        Mlp mlp;                                ///< the dense MLP
        kernels::WeightMatrix router;           ///< MoE: mlp.gate [E, hidden]
        std::vector<Mlp> experts;               ///< MoE: the E routed experts
        Mlp shared;                             ///< MoE: shared_experts / shared_expert (empty when none)
        kernels::WeightMatrix sharedGate;       ///< MoE: Qwen's shared_expert_gate [1, hidden]
        void* kCache = nullptr;                 ///< K pool (MLA: the latent pool)
        void* vCache = nullptr;                 ///< V pool (MLA: the latent pool again)
    };

    DeviceStatus gemv(const kernels::WeightMatrix& w, const void* x, void* y, std::uint32_t batch, bool fp32Out);
    /// Places a view of tensor @p t (one copy of @p copyIndex) into the layer's slot its name says.
    void placeMatrix(const TensorSpec& t, std::uint32_t copyIndex, const kernels::WeightMatrix& w);
    /// Cuts kv_b_proj's bytes at @p data into the per-head k_b / v_b views of @p layer.
    bool splitKvB(Layer& layer, std::uint8_t* data, std::uint64_t bytes, const formats::QuantLayout& layout);
    /// A matrix view of @p rows x @p cols at @p data in @p layout, interleaved on the CPU when it can.
    kernels::WeightMatrix view(const formats::QuantLayout& layout, std::uint64_t rows, std::uint64_t cols, std::uint8_t* data);
    DeviceStatus attention(const Layer& l, std::uint32_t sequences, std::uint32_t batch);
    DeviceStatus mlaAttention(const Layer& l, std::uint32_t sequences, std::uint32_t batch);
    DeviceStatus pagedAttention(const Layer& l, std::uint32_t sequences, std::uint32_t numHeads, std::uint32_t numKvHeads,
                                std::uint32_t headDim, float scale, const void* q);
    DeviceStatus mlp(const Mlp& m, const void* x, void* y, std::uint32_t batch);
    DeviceStatus moe(const Layer& l, std::uint32_t layer, std::uint32_t batch);
    /// Copies @p rows rows of @p rowBytes from @p src (stride @p srcStride bytes) to @p dst (stride
    /// @p dstStride): host memcpy on the CPU, one device copy a row on CUDA.
    DeviceStatus copyRows(void* dst, std::uint64_t dstStride, const void* src, std::uint64_t srcStride, std::uint32_t rows,
                          std::uint64_t rowBytes);

    Device& m_device;
    ModelInputs m_inputs;
    Architecture m_arch;
    std::vector<DeviceBuffer> m_weights;
    std::vector<DeviceBuffer> m_kv;
    std::vector<DeviceBuffer> m_scratch;
    std::vector<Layer> m_layers;
    kernels::WeightMatrix m_lmHead{};
    std::uint64_t m_weightBytes = 0;
    std::uint64_t m_scratchBytes = 0;
    std::uint64_t m_kvBytes = 0;
    std::uint64_t m_kvBlocks = 0;
    std::uint64_t m_stepWeightBytes = 0;
    std::uint64_t m_stepWeightParameters = 0;
    std::uint64_t m_stepExpertBytes = 0;
    ScratchSizes m_sizes;
    void* m_routerLogits = nullptr;
    void* m_expertIn = nullptr;
    void* m_expertOut = nullptr;
    void* m_moeOut = nullptr;
    void* m_mlaQa = nullptr;
    void* m_mlaQ = nullptr;
    void* m_mlaHeadIn = nullptr;
    void* m_mlaHeadOut = nullptr;
    std::vector<float> m_hostLogits;
    void* m_hidden = nullptr;
    void* m_q = nullptr;
    void* m_kNew = nullptr;
    void* m_vNew = nullptr;
    void* m_attnOut = nullptr;
    void* m_ffnA = nullptr;
    void* m_ffnB = nullptr;
    void* m_logits = nullptr;
    void* m_seqLens = nullptr;
    void* m_blockTable = nullptr;
    void* m_attnWorkspace = nullptr;
    std::vector<std::int32_t> m_hostSeqLens;
    std::uint32_t m_maxBlocksPerSeq = 0;
};

} // namespace headroom::probes::detail
