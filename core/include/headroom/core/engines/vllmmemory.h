#pragma once
/// @file vllmmemory.h
/// vLLM's start-up memory arithmetic, term by term, as its memory profiler measures it: the
/// batch defaults the profile run is sized by, the torch peak of that run (one forward pass of
/// max_num_batched_tokens tokens, then the sampler over max_num_seqs rows), the model-loading
/// extras beyond the checkpoint, and the non-torch memory per rank. Read from vLLM's source:
///   - vllm/v1/worker/gpu_worker.py determine_available_memory (v0.19.0): with
///     memory_profiling(init_snapshot, weights_memory): available = requested_memory
///     (= init total x gpu_memory_utilization) - non_kv_cache_memory, non_kv_cache_memory =
///     weights + torch_peak_increase + non_torch_increase (vllm/utils/mem_utils.py). The CUDA
///     context and the NCCL communicators already exist at the init snapshot and are not counted.
///     v0.8 (commit 0012cf6 of gpu_worker.py) instead subtracted torch's allocated peak (weights
///     included) and every non-torch byte in use after the profile run (the CUDA context too).
///   - vllm/worker/worker.py determine_num_available_blocks (V0, v0.6.4): available = total x
///     gpu_memory_utilization - torch peak (weights included) - non-torch memory.
///   - vllm/v1/worker/gpu_worker.py determine_available_memory (V1 at v0.7.1, VLLM_USE_V1=1): the
///     same arithmetic, total x gpu_memory_utilization - torch's allocated_bytes.all.peak of the
///     profile run (weights included) - (total - free - allocated_bytes.all.current after
///     empty_cache), i.e. every non-torch byte on the device, the CUDA context included.
///   - vllm/v1/worker/gpu_model_runner.py profile_run (v0.19.0): _dummy_run(max_num_tokens) then,
///     on the last pipeline stage, _dummy_sampler_run on the last token of each of
///     min(max_num_seqs, max_num_batched_tokens) dummy requests (compute_logits, then the Sampler
///     with temperature, top-k and top-p set, v1/sample/sampler.py); V0 (worker/model_runner.py
///     profile_run, v0.6.4) does the same over max_num_seqs sequences.
///   - vllm/engine/arg_utils.py get_batch_defaults (v0.19.0): vllm serve takes
///     max_num_batched_tokens 8192 and max_num_seqs 1024 on a device of >= 70 GiB whose name has
///     no "a100", else 2048 and 256; without chunked prefill max_num_batched_tokens is
///     max(max_model_len, 2048) (V0 v0.6.x: chunked prefill on by default only past 32K tokens).
/// Checked against the printed figures of tests/data/engine-logs/vllm-*.json ([engine-logs]).

#include "headroom/core/architecture.h"
#include "headroom/core/interconnect.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>

namespace headroom::vllm {

/// Which arithmetic a version applies (see the file comment).
enum class ProfilerRule {
    TotalPeak,     ///< V0 (worker.py, v0.2.5-v0.7) and V1 before v0.9 (v0.7 opt-in, v0.8): torch peak + all non-torch memory
    SnapshotDelta, ///< V1 from v0.9 (memory_profiling against the init snapshot): increases only
};

/// The rule of @p version ("0.19.0"; "" = current).
ProfilerRule profilerRule(const std::string& version);

/// True for the V0 engine (before v0.8, when V1 became the default).
bool isV0(const std::string& version);

/// Whether a run of @p version takes the V1 engine, from the environment variable VLLM_USE_V1 as
/// vllm/envs.py reads it (@p useV1 when given): V1 is the default from v0.8.0 and opt-in on the
/// 0.7 line (envs.py v0.7.1: VLLM_USE_V1 default "0"; the V1 alpha shipped with v0.7.0), so
/// VLLM_USE_V1=1 selects it from v0.7.0; before, and without the setting, the version's default.
/// VLLM_USE_V1=0 on v0.8 or later (the V0 engine those versions still carried) is not modelled:
/// those runs are planned with V1.
bool runsV1(const std::string& version, const std::optional<bool>& useV1);

/// Whether the V1 profile run of @p version ends with the sampler: from v0.8 (PR 13594,
/// _dummy_sampler_run, for issue 13507). Before, v1/worker/gpu_model_runner.py profile_run
/// (v0.7.1) runs _dummy_run(max_num_tokens), then compute_logits over every row of its output
/// ("TODO(woosuk): Consider the memory usage of the sampler."), and frees both.
bool v1ProfileSamples(const std::string& version);

/// What get_batch_defaults gives `vllm serve` (see the file comment); V1 on the 0.7 line takes
/// arg_utils.py _override_v1_engine_args (v0.7.1): for the OpenAI API server (vllm serve)
/// max_num_batched_tokens 2048 and max_num_seqs 1024 when max_num_batched_tokens is not given.
struct BatchDefaults {
    bool chunkedPrefill = true;            ///< enable_chunked_prefill
    std::uint64_t maxNumBatchedTokens = 0; ///< max_num_batched_tokens
    std::uint64_t maxNumSeqs = 0;          ///< max_num_seqs
};

/// The defaults for @p version on a device of @p deviceTotalBytes named @p deviceName (the name
/// matters only for the A100 exception), for @p maxModelLenTokens; @p chunkedPrefill is the
/// setting when given (else the version's default).
/// @p useV1 is VLLM_USE_V1 when given (runsV1).
BatchDefaults batchDefaults(const std::string& version, Bytes deviceTotalBytes, const std::string& deviceName,
                            std::uint64_t maxModelLenTokens, const std::optional<bool>& chunkedPrefill,
                            const std::optional<bool>& useV1 = std::nullopt);

/// The shape of one profile run on one rank.
struct ProfileShape {
    std::uint64_t batchedTokens = 0;  ///< max_num_batched_tokens of the dummy forward pass
    std::uint64_t samplerRows = 0;    ///< min(max_num_seqs, max_num_batched_tokens): logits rows
    std::uint32_t tensorParallel = 1; ///< shards the MLP intermediates (not the logits: gathered)
    std::uint32_t pipelineParallel = 1;
    std::uint32_t activationBytes = 2;///< the model dtype: 2 (bf16/fp16), 4 (fp32)
    /// Sampler bytes per logits entry beyond the model dtype (samplerExtraBytesPerEntry).
    std::uint32_t samplerExtraBytes = 13;
    /// The fused-MoE scratch lives in the persistent workspace manager (persistentMoeWorkspace).
    bool persistentMoeWorkspace = true;
    /// The run ends with the sampler over samplerRows rows (V0, V1 from v0.8); false: V1 before
    /// v0.8 (v1ProfileSamples), compute_logits over all batchedTokens rows of the forward output,
    /// in the model dtype, with no gathered copy of the hidden states and no sampler.
    bool samplerRun = true;
};

/// Whether @p version keeps the fused-MoE scratch in the persistent workspace manager
/// (vllm/v1/worker/workspace.py WorkspaceManager, used by the modular kernel's
/// _allocate_buffers since PR 27532, merged late November 2025: v0.13 on). Before, the modular
/// kernel took its workspaces with torch.empty on every call and freed them with the layer.
bool persistentMoeWorkspace(const std::string& version);

/// The fused-MoE workspace of one forward pass of @p batchedTokens tokens on one rank, in bytes
/// (0 for a dense model): vllm/model_executor/layers/fused_moe/modular_kernel.py
/// FusedMoEKernelModularImpl._allocate_buffers with the TritonExperts of fused_moe.py (the
/// unquantized and FP8 path on CUDA), v0.19. With M = min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE =
/// 16,384, envs.py), N = 2 x expert width / TP (the gate_up shard w1), K = hidden size, top-k
/// experts per token: workspace_shapes gives workspace13 (M, top_k, max(N / 2, K)) and
/// workspace2 (M, top_k, max(N, K)) in the activation dtype; the layer output (M, K) shares
/// workspace13's storage, and get_simultaneous takes both from one buffer, each rounded up to
/// 256 B. intermediate_cache1 (gate_up, N wide) and cache3 (down, K wide) are views of
/// workspace2, cache2 (the activation, N / 2 wide) of workspace13. The moe_align_block_size
/// index buffers (M x top_k int32 plus padding) are under 1 MiB and left out.
Bytes fusedMoeWorkspaceBytes(const Architecture& arch, std::uint64_t batchedTokens, std::uint32_t tensorParallel,
                             std::uint32_t activationBytes);

/// The sampler's bytes per row x vocab entry beyond the model-dtype logits, by version:
/// - v0.17 on: 13 B, the fp32 copy (4 B, sampler.py) and the top-k/top-p pass over it (9 B:
///   fp32 masked logits 4 B, probabilities 4 B, a bool mask 1 B; FlashInfer's top-k/top-p
///   sampler, on by default: v1/sample/ops/topk_topp_sampler.py flashinfer_sampler_supported).
/// - before (V0 and V1 to v0.16): 36 B, the PyTorch-native path (apply_top_k_top_p: a full sort
///   of the fp32 logits with int64 indices and its temporaries, the softmax and cumsum of the
///   sorted values, masks, the scatter back, then the softmax and the exponential noise of
///   random_sample). The constants are measured, not counted: the torch peak vLLM prints for
///   Qwen3-14B on one H100 falls from 5.64 GiB (v0.15, v0.16) to 2.23 GiB (v0.17, v0.18) with
///   nothing else changed (llm-d-planner version sweep), and 36 B fits v0.11's 4.76 GiB for
///   Llama-3.1-8B and v0.6.5's 1.26 GiB for Llama-3-8B too.
std::uint32_t samplerExtraBytesPerEntry(const std::string& version);

/// Whether the profile run's sampler takes FlashInfer's top-k/top-p kernel, from the
/// environment variable VLLM_USE_FLASHINFER_SAMPLER as vllm/v1/sample/ops/topk_topp_sampler.py
/// reads it: @p setting when given (1: FlashInfer, 0: the PyTorch-native path), else the
/// version's default. Until PR 26859 ("Disable FlashInfer sampler by default", merged
/// 2025-10-15) V1 took FlashInfer whenever flashinfer imported (PR 11394, Dec 2024): vLLM
/// 0.10.1.1 prints "Using FlashInfer for top-p & top-k sampling." (topk_topp_sampler.py:50) on
/// a machine with flashinfer-python, "FlashInfer is not available. Falling back to the
/// PyTorch-native implementation" (:61) on one without it, so the log says which; from PR 26859
/// it was opt-in, and PR 40376 ("Enable FlashInfer top-k/top-p sampler by default", v0.17) made
/// it the default again. The default here is FlashInfer from v0.17 and native before
/// (samplerExtraBytesPerEntry; the measured v0.11-v0.16 torch peaks fit the native path), and a
/// log that prints the FlashInfer line before v0.17 is planned with the setting at 1.
bool flashInferSampler(const std::string& version, const std::optional<bool>& setting);

/// The sampler's bytes per logits entry beyond the model dtype for the path @p flashInfer takes:
/// 13 (FlashInfer) or 36 (PyTorch-native), as samplerExtraBytesPerEntry documents.
std::uint32_t samplerExtraBytesForPath(bool flashInfer);

/// The torch peak increase of a profile run, by phase (bytes per rank).
struct ProfilePeak {
    /// One forward pass: per token 3 x hidden + 3 x intermediate / TP elements (the residual, the
    /// normed input the decoder layer keeps, the down-projection output, the gate_up output the
    /// MLP keeps while act_and_mul and down_proj run). For MoE layers with a transient workspace
    /// the fused-MoE caches of top_k experts: 2 I + I + H each, I = the expert width / TP; with
    /// the persistent workspace (moeWorkspaceBytes holds the caches) 4 H (residual, normed
    /// input, router input, the layer output) plus the shared experts' dense MLP (3 x shared
    /// width / TP), and the interleaved dense layers' 3 H + 3 I / TP where there are any.
    Bytes forwardBytes;
    /// After it, on the last stage: the hidden states of every token and of the sampled rows
    /// (kept by profile_run), the hidden + residual received from the previous stage (PP > 1),
    /// and the logits of samplerRows rows x vocab at (model dtype + samplerExtraBytes) B per
    /// entry: the lm_head output (model dtype, kept by _dummy_sampler_run) and the sampler's
    /// copies (samplerExtraBytesPerEntry). Without the sampler (ProfileShape::samplerRun false):
    /// the batchedTokens hidden states and their batchedTokens x vocab logits in the model dtype
    /// (0.52 GiB for Llama-3.1-70B at 2,048 tokens). With 13 B the peak agrees within
    /// 0.08 GiB with the torch peak increase vLLM 0.19 prints on H100 for Llama-3.1-8B (bf16,
    /// fp32, TP 1/2/4, PP 2), Qwen2.5-7B and gemma-2-9b (llm-d-planner sweep; tst_vllmmemory.cpp).
    Bytes samplerBytes;
    /// The fused-MoE workspace (fusedMoeWorkspaceBytes) when it persists (persistentMoeWorkspace):
    /// allocated by the first MoE layer of the dummy run, it stays allocated through the rest of
    /// the forward pass and the sampler run, so it adds to both; forwardBytes then counts only
    /// what the MoE layers keep outside it. 0 for dense models and transient workspaces (then
    /// forwardBytes includes the caches).
    Bytes moeWorkspaceBytes;
    /// The forward peak of the dense layers that run before the first MoE layer
    /// (first_k_dense_replace), before the workspace exists; 0 otherwise.
    Bytes leadingDenseBytes;
    /// What the profiler records: max(leading dense layers, workspace + max(forward, sampler)).
    Bytes peakBytes() const
    {
        const Bytes rest = forwardBytes.value > samplerBytes.value ? forwardBytes : samplerBytes;
        const Bytes withWorkspace{rest.value + moeWorkspaceBytes.value};
        return leadingDenseBytes.value > withWorkspace.value ? leadingDenseBytes : withWorkspace;
    }
};

/// The peak of one profile run of @p arch shaped by @p shape.
ProfilePeak profilePeak(const Architecture& arch, const ProfileShape& shape);

/// The rotary cos/sin cache vLLM builds while loading (rotary_embedding.py RotaryEmbedding:
/// rows x rotary_dim in the model dtype, one per distinct get_rope key; "Model loading took"
/// includes it): 32 MiB for Llama-3.1-8B (131,072 x 128 x 2 B). rows = max_position_embeddings,
/// times the factor for linear and dynamic rope_scaling (LinearScalingRotaryEmbedding,
/// DynamicNTKScalingRotaryEmbedding: max_position x scaling_factor) and YaRN (original_max_position
/// x factor, YaRNScalingRotaryEmbedding / DeepseekScalingRotaryEmbedding). Gemma 3 builds two:
/// the sliding layers' unscaled one and the global layers' scaled one (gemma3.py), 576 MiB for
/// Gemma 3 4B (131,072 x 256 x 2 B + 1,048,576 x 256 x 2 B with linear factor 8).
Bytes rotaryCacheBytes(const Architecture& arch, std::uint32_t activationBytes);

/// Non-torch memory the rule subtracts per rank of @p version, when no measured figure is given:
/// - SnapshotDelta: what the profile run adds outside torch (the init snapshot is taken before
///   init_worker_distributed_environment, so the communicators' buffers count). One GPU:
///   @p singleGpuBytes (the profile's runtime_bytes: 0.25 GiB from v0.17, the v0.19 sweep prints
///   0.24-0.27 GiB; 0.13 GiB before, printed by v0.11-v0.17). TP > 1, by @p link
///   (interconnect.h, nonTorchTensorParallelBytes). PP > 1 alone from v0.17: 0.07 GiB (printed);
///   before: @p singleGpuBytes.
/// - TotalPeak: every non-torch byte after the profile run, the CUDA context included:
///   @p singleGpuBytes (the profile's figure) on every rank.
Bytes nonTorchBytes(const std::string& version, std::uint32_t tensorParallel, std::uint32_t pipelineParallel,
                    Bytes singleGpuBytes, Interconnect link = kDefaultInterconnect);

/// The non-torch increase of a SnapshotDelta profile run per rank at TP > 1 over @p link:
/// - NvSwitch: NCCL's channels (up to 32 on NVLink) and NVLS buffers (nvls.cc) and vLLM's
///   all-reduce buffers, registered on the first collective of the profile run; priced from the
///   printed figures, not derived from the source: 2.1 GiB from v0.17 (the llm-d-planner v0.19.0
///   H100 sweep, 2.06-2.21 GiB at TP 2 and 4), 0.55 GiB before (v0.11 at TP 2 on H100,
///   0.54-0.55 GiB).
/// - NvLink (no switch): no public vLLM figure; the NvSwitch figure, an upper bound (it holds the
///   NVLS buffers only a third-generation NVSwitch has).
/// - PciePeer: @p singleGpuBytes + what P2P adds in device memory, read from the source: vLLM's
///   custom all-reduce at TP 2 (on more PCIe GPUs it is off: "not supported on more than two
///   PCIe-only GPUs"), its meta buffer and IPC buffer of max_size 8 MiB each, allocated outside
///   torch (custom_all_reduce.py create_shared_buffer; the 8 MiB rank_data is a torch tensor);
///   and NCCL's P2P receive buffers of two ring channels (the "Channel 00/02" NCCL prints on a
///   PCIe pair), each LL 512 KiB + LL128 4,800 KiB + Simple 4 MiB (src/init.cc DEFAULT_*_BUFFSIZE
///   with device.h NCCL_STEPS 8, NCCL_LL_* and NCCL_LL128_* at NVIDIA/nccl 5067397c).
/// - Pcie, Network: @p singleGpuBytes: NCCL's SHM and socket NET buffers are in host memory
///   (shm.cc, net.cc without GPUDirect RDMA) and vLLM's custom all-reduce is off; what the two
///   no-P2P v0.10.1.1 logs of dennislee22/vLLM-benchmarking leave for the term agrees (0.10 GiB on
///   two A100 80GB without P2P, 0.15 GiB on two nodes, against 0.13 GiB at TP 1).
Bytes nonTorchTensorParallelBytes(const std::string& version, std::uint32_t tensorParallel, Bytes singleGpuBytes,
                                  Interconnect link);

/// Whether @p version sizes the KV cache of hybrid models (full and sliding-window or chunked
/// local attention layers) with the hybrid KV cache manager's groups (HybridKvGroups): V1 from
/// v0.10 (PR 17996, the hybrid allocator). Before, and in V0, every layer keeps every token.
bool hybridKvCacheManager(const std::string& version);

/// The KV cache groups of vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size
/// (v0.19) for a model of @p fullLayers full-attention and @p localLayers sliding-window (or
/// chunked local) layers of one page size: group_size = the smaller count (the larger when it is
/// under 1.5 x the smaller), each type split into ceil(count / group_size) groups of group_size
/// layers, the last one padded. The pool is group_size tensors, each shared by one layer of
/// every group (get_kv_cache_config_from_groups): num_blocks = available // page_size //
/// group_size, and _report_kv_cache_config prints "GPU KV cache size: num_blocks // groups x
/// block_size tokens", so a padded layer costs as much as a real one (Gemma 3 27B: 10 full +
/// 52 sliding = 10 + 6 x 10 slots, 70 for 62 layers).
struct HybridKvGroups {
    std::uint32_t groupSize = 0;   ///< layers per group = KV cache tensors
    std::uint32_t fullGroups = 0;  ///< groups of full-attention layers
    std::uint32_t localGroups = 0; ///< groups of sliding-window / chunked local layers
    std::uint32_t groups() const { return fullGroups + localGroups; }
};

/// The groups of @p fullLayers + @p localLayers (both > 0), else nullopt (one group of all layers).
std::optional<HybridKvGroups> hybridKvGroups(std::uint32_t fullLayers, std::uint32_t localLayers);

/// The attention block size vLLM V1 gives a model of attention and Mamba (or Gated DeltaNet)
/// layers, so that one attention page holds one layer's recurrent state: @p alignTokens x
/// ceil(@p stateBytesPerLayer / (@p alignTokens x @p attentionBytesPerTokenPerLayer)), or
/// @p requestedTokens when --block-size asks for at least that; the state page is then padded to
/// the attention page (block x bytes per token). Source: vllm/model_executor/models/config.py
/// HybridAttentionMambaModelConfig.verify_and_update_config (v0.10: "Setting attention block size
/// to %d tokens to ensure that attention page size is >= mamba page size", align 16 for the
/// attention backends that take multiples of 16), moved to vllm/platforms/interface.py
/// _align_hybrid_block_size later (align = the backend's kernel block multiple, 16 on CUDA).
/// Bytes per layer and rank: K + V of one token (FullAttentionSpec page of block 1), and the conv
/// + SSM state of one sequence (MambaSpec page, the model dtype). 0 bytes per token returns
/// @p requestedTokens. vllm#24280 (a maintainer, 2025-09-04): 672 tokens for
/// NVIDIA-Nemotron-Nano-9B-v2.
std::uint64_t hybridMambaBlockTokens(std::uint64_t attentionBytesPerTokenPerLayer, std::uint64_t stateBytesPerLayer,
                                     std::uint64_t requestedTokens, std::uint64_t alignTokens = 16);

/// Blocks of @p blockTokens one request of @p maxModelLenTokens takes in one group of layers
/// (kv_cache_interface.py max_memory_usage_bytes, v0.19): a full-attention group
/// ceil(max_model_len / block); a sliding-window group ceil(min(window - 1 + max_num_batched_tokens,
/// max_model_len) / block) + 1 (the window may start mid-block); a chunked local group (Llama 4)
/// ceil(min(chunk + max_num_batched_tokens, max_model_len) / block).
std::uint64_t requestBlocksPerGroup(std::uint64_t maxModelLenTokens, std::uint64_t blockTokens, std::uint64_t windowTokens,
                                    std::uint64_t maxNumBatchedTokens, bool chunkedLocal);

} // namespace headroom::vllm
