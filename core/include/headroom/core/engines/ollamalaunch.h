#pragma once
/// @file ollamalaunch.h
/// How Ollama from v0.30.0 places a model (issue 11): its scheduler picks the GPUs, then it starts
/// llama-server with a command line of its own and llama.cpp's --fit places the layers. Ollama
/// itself assigns no layer since then; its plan is llama.cpp's plan for that command line.
///
/// Sources (github.com/ollama/ollama):
///  - 9db4bdbad (2026-05-29, #16031 "runner: Remove CGO engines, use llama-server exclusively for
///    GGML models"), first in the tag v0.30.0: llm/llama_server.go appears. Before it, from v0.12.11
///    to v0.29, Ollama placed the layers itself (llm/server.go createLayout/buildLayout/assignLayers,
///    greedyFit from the last layer per GPU, findBestFit's capacity factor: ollamalayout.h) and before v0.12.11 by
///    llm/memory.go EstimateGPULayers (ollamamemory.h).
///  - llm/llama_server.go startLlamaServer at fb30760996871fa9460115c753afd2c60d4ab0f7 (v0.33.0-rc2):
///    "-c" num_ctx x numParallel, "-np" numParallel, --cache-type-k/-v OLLAMA_KV_CACHE_TYPE,
///    --flash-attn on/off/auto, "-b"/"-ub" num_batch when > 0 (appendBatchArgs); "-ngl" only when
///    num_gpu was set ("NumGPU == -1 (default): don't pass -ngl, let llama-server auto-detect";
///    num_gpu 0 passes -ngl 0); LLAMA_ARG_FIT_TARGET is set only for a multimodal projector
///    (extraEnvsForStart: the projector's MiB + 1 GiB), else llama.cpp's own --fit-target (1024 MiB).
///  - server/sched.go load / selectLlamaServerPlacement at fb30760: with several GPUs and num_gpu
///    != 0 (and no main_gpu) the model goes to a single GPU when llm.PredictServerVRAM <= 80 % of
///    that GPU's free memory (bestSingleGPUFit: a discrete GPU first, then the most free, the first
///    of equals), launched with --split-mode none --main-gpu 0; else to every GPU of the library
///    group with the most free memory (bestGPUGroupByAvailableMemory), whose layers --fit places.
///    MinimumMemory (457 MiB) and OLLAMA_GPU_OVERHEAD are only logged there ("gpu memory ...
///    available"), no longer kept free.
///  - LLAMA_CPP_VERSION pins b9452 at v0.30.0 and b10488 at v0.32.15 and fb30760: builds after
///    every llama.cpp rule Headroom gates by build (--fit and the output layer first from b7400,
///    the latent-K-only MLA cache from b7800).

#include "headroom/core/architecture.h"
#include "headroom/core/engines/settings.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom::ollama {

/// What Ollama passes llama-server, in Ollama's spelling.
struct LlamaServerLaunch {
    std::uint64_t numCtx = 4096;       ///< num_ctx per sequence
    std::uint64_t numParallel = 1;     ///< OLLAMA_NUM_PARALLEL
    std::uint64_t numBatch = 512;      ///< num_batch (api/types.go DefaultOptions: 512)
    bool flashAttention = false;       ///< OLLAMA_FLASH_ATTENTION, resolved
    std::string kvCacheType = "f16";   ///< OLLAMA_KV_CACHE_TYPE
    std::int64_t numGpu = -1;          ///< num_gpu; -1 = not set
};

/// num_batch when the user set none (server/sched.go automaticGenerationBatch, fb30760; the
/// scheduler's numBatchAuto): with flash attention off on CUDA 512, or 256 when the context
/// (num_ctx x parallel) is over 4096 and a GPU has at most 8 GiB free
/// (constrainedCUDAWithoutFlashAttention); with flash attention 512 up to 4096 tokens of context,
/// 1024 up to 32768, 2048 beyond, lowered (2048 -> 1024 -> 512) while it does not fit: the prediction
/// over 80 % of @p availableBytes, over 60 % (2048) or 75 % (1024) of it, or the batch's surcharge
/// (2 GiB for 2048, 768 MiB for 1024) over 80 % of it less the prediction.
std::uint64_t automaticNumBatch(bool flashAttention, std::uint64_t contextTokens, Bytes predictedBytes, Bytes availableBytes,
                                Bytes smallestGpuFreeBytes);

/// Ollama's llama-server command line as llama.cpp settings (engines/llamacpp.cpp keys): ctx-size,
/// parallel, batch-size, ubatch-size, flash-attn, cache-type-k, cache-type-v, and n-gpu-layers only
/// when num_gpu was set (startLlamaServer). --fit stays on at its own target.
std::vector<EngineSetting> llamaServerSettings(const LlamaServerLaunch& launch);

/// llm.PredictServerVRAM (llm/llama_server.go, fb30760): the model file plus an f16 cache of
/// 2 x block_count x head_count_kv (the smallest) x (embedding_length / head_count) x ctx x 2 B,
/// ctx = min(num_ctx, the trained context) x parallel (server/sched.go effectiveLlamaServerContext).
/// @p fileBytes is the GGUF file (Headroom: its tensor bytes, the metadata left out).
Bytes predictServerVramBytes(const Architecture& arch, Bytes fileBytes, std::uint64_t numCtx, std::uint64_t numParallel);

/// The GPU the scheduler puts the model on alone (server/sched.go bestSingleGPUFit over every GPU,
/// all discrete here): the one with the most of @p freeBytes (the first of equals) among those with
/// @p predictedBytes <= free x 80 / 100; nullopt: none, the model goes to every GPU. One GPU or
/// num_gpu 0 (@p numGpu): nullopt (selectLlamaServerPlacement keeps the GPUs as they are).
std::optional<std::size_t> singleGpuPlacement(Bytes predictedBytes, const std::vector<Bytes>& freeBytes, std::int64_t numGpu);

} // namespace headroom::ollama
