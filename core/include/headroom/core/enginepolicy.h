#pragma once
/// @file enginepolicy.h
/// How each serving engine sizes memory, as data (profiles/engines/*.json). The same card gives
/// different limits under each; capacity.h applies the rule of `kind` with these parameters.
/// Sources per engine: shared/reference/engines.md (vLLM gpu_worker.py / kv_cache_utils.py,
/// llama.cpp common/fit.cpp, SGLang server_args.py, TGI flash_causal_lm.py, TensorRT-LLM
/// _torch/pyexecutor/_util.py, Ollama ml/device.go and server/routes.go).

#include "headroom/core/units.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace headroom {

/// Which rule an engine policy follows.
enum class EngineKind {
    Vllm,        ///< requested = total * utilization; KV = requested - weights - peak activation - non-torch - graphs; 16-token blocks
    LlamaCpp,    ///< --fit: keep `fixedReserve` (1,024 MiB) free; cells padded to 256 (FA) / 32; min context 4,096
    SgLang,      ///< mem_fraction_static = (total - reserved) / total; reserved from chunked prefill and graph batch sizes
    Tgi,         ///< free * wiggle room (0.9) after the warmup prefill; 16-token blocks
    TensorRtLlm, ///< (total - peak) * free_gpu_memory_fraction (0.9)
    Ollama,      ///< 457 MiB per CUDA GPU; llama.cpp cells; default num_ctx by VRAM tier
    Flat,        ///< usable = total - reserve; nothing else subtracted
};

/// Parses "vllm", "llama.cpp", "sglang", "tgi", "tensorrt-llm", "ollama", "flat".
bool parseEngineKind(const std::string& text, EngineKind& out);
/// The inverse of parseEngineKind.
const char* engineKindName(EngineKind kind);

/// One engine's memory policy.
struct EnginePolicy {
    std::string id;                     ///< "vllm"
    std::string name;                   ///< "vLLM"
    EngineKind kind = EngineKind::Flat;
    std::string version;                ///< engine version/commit the rule was read from
    double memoryFraction = 1.0;        ///< vLLM gpu_memory_utilization, TGI wiggle room, TRT free fraction
    Bytes fixedReserve;                 ///< per-device bytes kept free (llama.cpp 1,024 MiB; Ollama 457 MiB; flat reserve)
    Bytes runtimeBytes;                 ///< CUDA context + non-torch memory the engine does not control (estimate)
    Bytes workspaceBytes;               ///< library workspaces (cuBLAS 4 MiB; 32 MiB on Hopper)
    Bytes cudaGraphBytes;               ///< CUDA graph pool estimate
    std::uint64_t blockTokens = 1;      ///< KV block size in tokens (vLLM/TGI 16)
    std::uint64_t cellPaddingFlash = 1; ///< total cells rounded up with flash attention (llama.cpp 256)
    std::uint64_t cellPaddingNoFlash = 1; ///< ... without (llama.cpp 32)
    std::uint64_t minContextTokens = 0; ///< smallest context the engine will plan (llama.cpp --fit 4,096)
    std::uint64_t ubatchTokens = 512;   ///< micro-batch of the prefill activation peak (llama.cpp ubatch; vLLM max_num_batched_tokens)
    bool flashAttention = true;         ///< default attention kernel
    bool logitsOnDevice = true;         ///< logits buffer counted on the GPU
    double fragmentationFraction = 0;   ///< allocator fragmentation, fraction of the KV pool
    std::string source;                 ///< file and commit the rule comes from

    // Versions (profiles/engines/*.json `versions`): the range of releases this profile covers.
    std::string versionFrom;            ///< first release covered ("0.6.0"); "" = open
    std::string versionUntil;           ///< first release no longer covered ("0.8.0"); "" = open (current)
    std::string requestedVersion;       ///< the version asked (`--engine vllm@0.6` gives "0.6"); "" = the profile's release
    /// Defaults of the engine's settings for this version range (profile `settings`), by the
    /// engine's own key; they override the unit's built-in defaults (engines/settings.h).
    std::map<std::string, std::string> settingDefaults;
    /// Where each rule of this version is read from (profile `rules`): rule name -> "file@version".
    std::map<std::string, std::string> ruleSources;
};

/// Compares two dotted release numbers ("0.6.4" < "0.10", a leading 'v' ignored, missing parts
/// are 0): negative, 0 or positive. Non-numeric parts compare as text.
int compareVersions(const std::string& a, const std::string& b);

/// True when @p version lies in [policy.versionFrom, policy.versionUntil).
bool coversVersion(const EnginePolicy& policy, const std::string& version);

/// The flat-reserve policy of `--reserve SIZE`: usable = card total - reserve.
EnginePolicy flatReservePolicy(Bytes reserve);

} // namespace headroom
