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
    std::uint64_t q = 0;          ///< fp16 [64][H * D]
    std::uint64_t kNew = 0;       ///< fp16 [64][H_kv * D]
    std::uint64_t vNew = 0;       ///< fp16 [64][H_kv * D]
    std::uint64_t attnOut = 0;    ///< fp32 [64][H][D]
    std::uint64_t ffnA = 0;       ///< fp16 [64][ffn]
    std::uint64_t ffnB = 0;       ///< fp16 [64][ffn]
    std::uint64_t logits = 0;     ///< fp32 [64][vocab]
    std::uint64_t seqLens = 0;    ///< int32 [64]
    std::uint64_t blockTable = 0; ///< int32 [blockTableEntries]
    std::uint64_t attentionWorkspace = 0; ///< kernels::attentionWorkspaceBytes, max over batches 1..64
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
    /// One decode step over the uploaded sequences: every layer's q/k/v GEMVs, the new token's K
    /// and V written at position seqLen - 1 of each sequence's paged cache, paged attention over
    /// every sequence's whole cache (micro-batches of 64), the attention output to fp16, the
    /// o/gate/up/down GEMVs, then the logits GEMV;
    /// the GEMVs run at batch min(sequences, 64). Asynchronous on CUDA (synchronize to finish).
    /// @p layers: run only the first N layers (0 = all).
    DeviceStatus step(const ProbeProgress* cancel = nullptr, std::uint32_t layers = 0);

    /// Bytes the step reads from weights (every runnable matrix once).
    std::uint64_t stepWeightBytes() const { return m_stepWeightBytes; }
    /// Weights multiplied per token by the step (rows x cols of every runnable matrix).
    std::uint64_t stepWeightParameters() const { return m_stepWeightParameters; }

private:
    struct Layer {
        kernels::WeightMatrix q, k, v, o, gate, up, down;
        void* kCache = nullptr;
        void* vCache = nullptr;
    };

    DeviceStatus gemv(const kernels::WeightMatrix& w, const void* x, void* y, std::uint32_t batch, bool fp32Out);

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
    ScratchSizes m_sizes;
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
