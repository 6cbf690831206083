#pragma once
/// @file offloadsweep.h
/// The same request planned at every GPU-layer count an engine that splits layers accepts
/// (llama.cpp -ngl 0..n_layer+1, Ollama num_gpu; PlanRequest::gpuLayers): the state, placement,
/// host memory and decode speed of each split, as gguf-parser prints VRAM and RAM per offload
/// step and LM Studio's layers slider shows them. Each step is a whole makePlan() of the request
/// with --offload N (its verdict and speed/splitspeed.h's decode step), so a face that shows a
/// step shows the same numbers as `headroom-cli plan --offload N` with the same settings. When the
/// plan shown was placed by llama.cpp's --fit, the faces sweep keepFitPlacement()'s request: the
/// fit's -ot overrides kept at every N (an -ngl given stops --fit, common/fit.cpp), so the step at
/// the chosen count is the chosen plan.

#include "headroom/core/plan.h"
#include "headroom/core/verdict.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// One GPU-layer count of the sweep.
struct OffloadStep {
    std::uint32_t gpuLayers = 0;            ///< -ngl N, llama.cpp's count (output layer included)
    FitState state = FitState::DoesNotFit;  ///< the plan's verdict
    Placement placement = Placement::TooLarge;
    std::uint64_t headline = 0;             ///< the verdict's headline number
    Bytes hostBytes;                        ///< what stays in host memory (splitbill.h)
    double decodeTokensPerSecond = 0;       ///< one sequence (the split's decode step); 0 without a speed figure
};

/// The GPU-layer counts @p request's engine accepts: n_layer + 1 (llama.cpp and Ollama count the
/// output layer) when the engine splits layers (Engine::offloadsLayers) and the model has an
/// architecture; 0 when the engine keeps every layer on the GPU.
std::uint32_t offloadLayerCount(const PlanRequest& request);

/// @p request with the expert placement llama.cpp --fit chose in @p chosen kept for an -ngl the
/// user sets: --fit moves tensors only while -ngl, -ts and -ot are unset ("n_gpu_layers already set
/// by user to N, abort", common/fit.cpp common_params_fit_impl, llama.cpp v0.4.0; llamacppfit.h
/// step 3), so `-ngl N` alone loads every routed expert of the offloaded layers on the GPU. The
/// chosen plan launches as `-ngl N -ot <the fit's overrides>` (launchflags.cpp, the
/// fit_tensor_overrides figure), so each step keeps those overrides as the override-tensor setting
/// (-ot: the named FFN tensors stay in host memory or on the next GPU at any -ngl). @p request as
/// it is when --fit placed no override or the user gave -ot. offloadSweep of the result: its step at
/// the chosen plan's -ngl is the chosen plan's launch (the same state and decode speed).
PlanRequest keepFitPlacement(const PlanRequest& request, const PlanResult& chosen);

/// @p request planned with gpuLayers = 0, 1, ..., offloadLayerCount(request) (an empty list when
/// that is 0). Errors as makePlan's, naming the layer count.
tl::expected<std::vector<OffloadStep>, std::string> offloadSweep(const PlanRequest& request);

} // namespace headroom
