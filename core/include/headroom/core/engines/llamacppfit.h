#pragma once
/// @file llamacppfit.h
/// llama.cpp's --fit (issue 11): how llama-server, before it loads a model, fits the parameters
/// the user left unset to each device's free memory. Read from common/fit.cpp
/// (common_params_fit_impl), common/arg.cpp (-c, -fit, -fitt, -fitc) and common/common.h
/// (defaults) of ggml-org/llama.cpp release v0.4.0, the tree node-llama-cpp 3.21.1 bundles
/// (node_modules/node-llama-cpp/llama/gitRelease.bundle, a squashed tree: cited without an
/// upstream commit). The same steps are in common/fit.cpp of later upstream trees.
///
/// llama.cpp measures each trial by allocating nothing (no_alloc) and reading its own buffer sizes;
/// here each trial is the offload bill of llamacppoffload.h (model + KV + compute per device,
/// llama_memory_breakdown's model/context/compute), so the steps, their order and their integer
/// arithmetic are llama.cpp's and the bytes are Headroom's:
///
///  1. Resolve an unset context (n_ctx == 0: no -c, or -c 0) to n_ctx_train x n_streams (n_streams =
///     1 with --kv-unified, else -np), and measure. When every device keeps its target free
///     (free - used >= --fit-target, default 1024 MiB each) nothing changes.
///  2. Only an unset context is lowered ("context size set by user to N -> no change"): measure at
///     the minimum n_ctx_min x n_streams (--fit-ctx, default 4096; -c 0 sets it to UINT32_MAX, "user
///     has requested full context size", so the context stays), then interpolate linearly between
///     the minimum and the maximum to where the summed use meets sum(free - target) (with several
///     devices less (nd + 1) x model-per-layer / 2, / 6 for MoE), rounded down to 256 x n_streams and
///     not below the minimum. On one device that ends the fit ("entire model can be fit by reducing
///     context"); else the context stays at what was found (or at the minimum when even that does
///     not fit) and the layers are placed.
///  3. -ngl given, --tensor-split given, or tensor overrides given (-ot, --n-cpu-moe): the fit stops
///     there, context changed, layers as given ("n_gpu_layers already set by user to N, abort").
///  4. Layers from the back: for each device from the last to the first, the most of the unassigned
///     layers (the output layer counts as layer n_layer) whose use stays within free - target, found
///     by the method of false position on trial bills. A MoE model fills "dense-only" layers (its
///     routed experts in host memory); the last device's lowest layer stays whole. A dense model, or
///     a MoE whose dense part alone does not fit, ends here.
///  5. MoE whose dense part fits: from the first device on, convert dense-only layers to full ones
///     (experts on the device) while they fit, then try one more layer in part: its attention and
///     up projections (LAYER_FRACTION_UP), then also its gate (GATE), else only the attention (ATTN),
///     the rest overflowing to the next device or the host.
///
/// The result is what llama-fit-params prints: -c, -ngl, -ts (one share per device, its layer
/// count) and -ot (the overflowing FFN tensors of each layer).

#include "headroom/core/engines/llamacppoffload.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::llamacpp {

/// One device as --fit sees it.
struct FitDevice {
    /// What ggml_backend_dev_memory reports free (the card's free memory, its CUDA context already
    /// created: Headroom passes free - the runtime).
    Bytes freeBytes;
    Bytes marginBytes{1024ull << 20}; ///< --fit-target for this device (common/common.h: 1024 MiB)
};

/// The inputs of the fit besides the model and the context settings.
struct FitSettings {
    std::vector<FitDevice> devices;   ///< the GPUs in device order (at least one)
    bool contextAuto = true;          ///< n_ctx == 0: no -c given, or -c 0
    /// --fit-ctx (fit_params_min_ctx, default 4096); -c 0 sets it to kFullContext.
    std::uint64_t minContextTokens = 4096;
    bool gpuLayersSet = false;        ///< -ngl given (n_gpu_layers != -1)
    bool tensorSplitSet = false;      ///< --tensor-split given (several devices)
    bool tensorOverridesSet = false;  ///< -ot or --n-cpu-moe given (tensor_buft_overrides)
};

/// fit_params_min_ctx = UINT32_MAX: what -c 0 sets (common/arg.cpp).
constexpr std::uint64_t kFullContext = 0xFFFFFFFFull;

/// --fit's layers on one device (common/fit.cpp ngl_t).
struct FitLayers {
    std::uint32_t layers = 0;     ///< n_layer: layers on the device (the output layer counted on the last)
    std::uint32_t partial = 0;    ///< n_part: of them, layers whose FFN overflows ("overflowing")
    FfnOverflow overflow = FfnOverflow::Moe; ///< what the first partial layer sends away
    std::uint32_t full() const { return layers - partial; }
};

/// How the fit ended.
enum class FitOutcome {
    NoChange,       ///< "no changes needed"
    ContextReduced, ///< "entire model can be fit by reducing context" (one device)
    LayersPlaced,   ///< layers (and experts) moved to the host
    Failed,         ///< "failed to fit params to free device memory: ..., abort": context kept as the fit left it
};

/// What --fit leaves in llama_model_params / llama_context_params.
struct FitResult {
    FitOutcome outcome = FitOutcome::NoChange;
    std::string failure;                ///< the reason of Failed, in llama.cpp's words
    std::uint64_t ctxSizeTokens = 0;    ///< cparams.n_ctx after the fit (0 never: resolved)
    std::uint64_t contextFromTokens = 0;///< n_ctx_max the reduction started from (0 = none)
    std::vector<FitLayers> devices;     ///< per device; empty unless LayersPlaced
    OffloadSettings offload;            ///< -ngl, -ts and the overrides the model is loaded with
    std::vector<Bytes> usedBytes;       ///< the projected use of each device with the result
    std::vector<std::string> log;       ///< the fit's own lines (common_params_fit_impl), MiB as it prints them
    std::uint32_t trials = 0;           ///< bills priced (llama.cpp's test allocations)
};

/// --fit of @p arch (tensors @p list) under @p context (ctxSizeTokens: the -c given; read only
/// when !fit.contextAuto) and the base offload @p base (-ngl, --n-cpu-moe, --no-kv-offload, -ts,
/// the output-first order of the version), with the devices and options of @p fit. The steps and
/// their arithmetic: see the file comment. Throws std::invalid_argument without a device.
FitResult fitParams(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
                    const OffloadSettings& base, const FitSettings& fit);

/// "-c N -ngl N [-ts a,b] [-ot PATTERN=BUFT,...]" as llama-fit-params prints the result (the
/// overrides in llama.cpp's regex spelling; CUDA<i> for an overflow to device i).
std::string fitArguments(const FitResult& result);

} // namespace headroom::llamacpp
