#pragma once
/// @file launchflags.h
/// The serving engine's own launch flags for a plan: the context, the concurrency and the memory
/// settings that reproduce the plan's limits when the engine starts.
///
/// Flag names, as each engine documents them (checked in tests/core/tst_launchflags.cpp):
/// - vLLM `vllm serve` engine arguments (docs.vllm.ai, "Engine Arguments"): --max-model-len,
///   --max-num-seqs, --gpu-memory-utilization, --kv-cache-dtype {auto,fp8,fp8_e4m3,fp8_e5m2},
///   --tensor-parallel-size, --pipeline-parallel-size.
/// - llama.cpp `llama-server` (tools/server/README.md): -c/--ctx-size (total over all slots),
///   -np/--parallel, -ngl/--n-gpu-layers, -ctk/--cache-type-k, -ctv/--cache-type-v
///   (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1), -fa/--flash-attn [on|off|auto].
/// - SGLang `python -m sglang.launch_server` (docs.sglang.io, "Server Arguments"):
///   --context-length, --max-running-requests, --mem-fraction-static, --kv-cache-dtype
///   {auto,fp8_e5m2,fp8_e4m3}, --tp-size.
/// - Ollama (docs/faq.md, envconfig/config.go): OLLAMA_NUM_PARALLEL, OLLAMA_CONTEXT_LENGTH,
///   OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE {f16,q8_0,q4_0}, and the model parameter
///   num_ctx (Modelfile `PARAMETER num_ctx N`, API `"options": {"num_ctx": N}`).
/// - TGI `text-generation-launcher` (launcher/src/main.rs): --max-total-tokens, --max-input-tokens,
///   --max-batch-prefill-tokens, --cuda-memory-fraction, --num-shard, --max-concurrent-requests.
/// - TensorRT-LLM `trtllm-serve` (tensorrt_llm/commands/serve.py): --max_batch_size, --max_seq_len,
///   --max_num_tokens, --kv_cache_free_gpu_memory_fraction, --tp_size, --pp_size; KvCacheConfig's
///   max_tokens and tokens_per_block through --extra_llm_api_options (a YAML file).

#include "headroom/core/enginepolicy.h"
#include "headroom/core/plan.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// An engine Headroom writes launch flags for.
enum class LaunchEngine {
    Vllm,     ///< `vllm serve`
    LlamaCpp, ///< `llama-server`
    SgLang,   ///< `python -m sglang.launch_server`
    Ollama,   ///< `ollama serve` + the num_ctx model parameter
    Tgi,      ///< `text-generation-launcher`
    TensorRtLlm, ///< `trtllm-serve`
};

/// The launch engine of an engine policy kind; nullopt for the flat reserve.
std::optional<LaunchEngine> launchEngineFor(EngineKind kind);
/// "vllm", "llama.cpp", "sglang", "ollama", "tgi", "tensorrt-llm".
const char* launchEngineName(LaunchEngine engine);

/// How a setting reaches the engine.
enum class LaunchFlagKind {
    Argument,       ///< a command-line argument ("--max-model-len 8192")
    Environment,    ///< an environment variable of the server ("OLLAMA_NUM_PARALLEL=4")
    ModelParameter, ///< a per-model/per-request parameter (Ollama num_ctx)
};

/// "argument", "environment", "model_parameter".
const char* launchFlagKindName(LaunchFlagKind kind);

/// One setting.
struct LaunchFlag {
    std::string name;    ///< as the engine spells it: "--max-model-len", "-ctk", "OLLAMA_NUM_PARALLEL", "num_ctx"
    std::string value;   ///< "8192", "0.90", "q8_0"; empty for a bare switch
    LaunchFlagKind kind = LaunchFlagKind::Argument;
    std::string note;    ///< why this value ("context per user, from the plan")
};

/// The point of the frontier the flags launch: `users` sequences of `contextTokens` each.
struct LaunchPoint {
    std::uint64_t users = 1;         ///< concurrent sequences (the plan's users, default 1)
    std::uint64_t contextTokens = 0; ///< context per sequence: the plan's context, lowered to the max that fits for `users`
    bool lowered = false;            ///< the plan's context did not fit and was lowered
};

/// The launch point of @p plan: its users, at its context or, when that does not fit, at the plan's
/// own max context for them (PlanResult::maxContext; for one user its max resident tokens), capped
/// at the model's trained context. Never a default of its own: `flags` and `plan` print the same
/// users and context. Error when not even one block per user fits.
tl::expected<LaunchPoint, std::string> launchPoint(const PlanResult& plan);

/// The flags of one engine for one plan.
struct LaunchFlags {
    LaunchEngine engine = LaunchEngine::Vllm;
    LaunchPoint point;
    std::vector<LaunchFlag> flags;   ///< in the order they appear in `command`
    std::string command;             ///< a ready-to-run shell line ($MODEL stands for the checkpoint); Ollama: several lines
    std::vector<std::string> notes;  ///< what the flags do not cover (weight checkpoint, multi-GPU split)
};

/// The launch flags of @p plan (made from @p request) for the engine of the request's policy.
/// Errors: the policy's engine has no launch flags (TGI, TensorRT-LLM, flat), the KV dtype does
/// not exist in that engine (llama.cpp has no fp8 cache; vLLM and SGLang no q8_0), or nothing fits.
tl::expected<LaunchFlags, std::string> launchFlags(const PlanRequest& request, const PlanResult& plan);

/// @p word quoted for POSIX sh (the shell every `command` is printed for; also bash, zsh, ksh,
/// dash): returned as it is when it holds only characters sh never treats specially (letters,
/// digits, `_@%+=:,./-`); else printable characters and newlines go in single quotes (each `'`
/// written `'\''`; a newline stays a literal newline inside the quotes, which every POSIX shell
/// keeps and an interactive one reads on as a continued line), and each run of other bytes
/// (control characters, tabs, bytes that are not UTF-8) becomes `"$(printf '\ooo...')"`, octal
/// escapes that POSIX printf decodes, so the line holds no raw control byte, is valid UTF-8 (the
/// JSON output), and pastes back to the exact bytes. `$(...)`, backquotes, `;` and spaces in a
/// file name stay literal. The empty word is `''`. (`$'...'` is not used: dash, Debian's sh,
/// does not decode it.)
std::string shellQuote(std::string_view word);

} // namespace headroom
