#pragma once
/// @file vllmoffload.h
/// vLLM's weight offload to host memory (`--cpu-offload-gb N`, per GPU): which parameters leave
/// the device and what they hold in host memory.
///
/// The rule (vllm/model_executor/models/utils.py maybe_offload_to_cpu and make_layers, PR 6496,
/// released in v0.5.3; the same walk in OffloaderV1.wrap_modules of later versions): make_layers
/// wraps each decoder layer of the rank's pipeline stage, in order; a layer's parameters are
/// moved to pinned host memory one at a time, in module order, while the bytes moved so far are
/// below the cap, so the last parameter moved may overshoot it (per-parameter offloading: "one
/// module might have some parameters offloaded and some not"). Embeddings, the final norm and
/// lm_head are built outside make_layers and never move. Each rank applies the cap to its own
/// shard.
///
/// Module order inside a layer (vLLM's model classes, e.g. llama.py LlamaDecoderLayer): the
/// attention block first (QKVParallelLinear fuses q/k/v into one qkv_proj parameter, biases
/// likewise; then o_proj; q/k norms), then the MLP (MergedColumnParallelLinear fuses gate and up
/// into gate_up_proj; down_proj) or the MoE block (the router, then FusedMoE's w13 and w2, each
/// one parameter over all experts; shared experts), then the layer norms.
///
/// Host memory: every offloaded parameter is pinned with Tensor.pin_memory(), whose
/// CachingHostAllocator rounds each block up to a power of two (pytorch/pytorch#150517; measured
/// in vllm#58185: a 4.5 GiB w13_weight holds 8 GiB, and vllm#56410 reports about 1.9x the
/// offloaded bytes).

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"
#include "headroom/core/weightformat.h"

#include <cstdint>

namespace headroom::vllm {

/// What --cpu-offload-gb moves off one rank.
struct CpuOffload {
    Bytes offloadedBytes;      ///< parameter bytes moved to host memory (leave the device)
    Bytes pinnedHostBytes;     ///< host memory they hold: each parameter rounded up to a power of two
    std::uint32_t parameters = 0;      ///< parameters moved
    std::uint32_t wholeLayers = 0;     ///< decoder layers moved entirely
    Bytes layerBytes;          ///< bytes of all the stage's decoder layers on this rank (the most that can move)
};

/// The offload of decoder layers [0, @p stageLayers) of @p arch in @p format on one rank of
/// @p tensorParallel, with a cap of @p capBytes (cpu_offload_gb x 2^30). Matrices are sharded by
/// tensor parallelism (ceil(bytes / tp)), norms, biases and routers replicated. A cap of 0 moves
/// nothing.
CpuOffload cpuOffload(const Architecture& arch, const WeightFormat& format, std::uint32_t tensorParallel,
                      std::uint32_t stageLayers, Bytes capBytes);

} // namespace headroom::vllm
