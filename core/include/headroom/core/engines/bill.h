#pragma once
/// @file bill.h
/// What an engine unit returns to the planner: its bill of the card (usable memory, the
/// overheads as that engine sizes them, the KV budget and block count), the figures the engine
/// itself prints (vLLM "# GPU blocks", "GPU KV cache size", "Maximum concurrency"), and its
/// refusals (verdict.h EngineRefusal: a weight format or KV dtype it cannot run, a configuration
/// it would not start with), which the verdict turns into the answer.

#include "headroom/core/kvcache.h"
#include "headroom/core/overheads.h"
#include "headroom/core/units.h"
#include "headroom/core/verdict.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// One figure the engine prints in its own log, as the engine computes it.
struct EngineFigure {
    std::string name;     ///< snake_case id ("num_gpu_blocks", "gpu_kv_cache_tokens", "maximum_concurrency")
    double value = 0;     ///< in `unit`
    std::string unit;     ///< "blocks", "tokens", "x", "bytes"
    std::string printed;  ///< as the engine's log line prints it ("# GPU blocks: 1952", "1.56x")
    std::string source;   ///< engine file (and version) that prints it
};

/// An engine's bill of one device.
struct EngineBill {
    Bytes usableBytes;                      ///< what the engine allows for weights + overheads + KV
    /// The memory of every GPU the bill spans when the engine places one model over several cards
    /// (Ollama's scheduled GPUs, PlanRequest::moreGpus): the plan's card total, so that the total
    /// less the reserved items is the usable; absent: the card's total.
    std::optional<Bytes> devicesTotalBytes;
    std::vector<OverheadItem> overheads;    ///< priced inside usable
    std::vector<OverheadItem> reserved;     ///< kept outside usable
    Bytes kvBudgetBytes;                    ///< usable - weights - overheads (0 when negative)
    std::optional<std::uint64_t> kvBlocks;  ///< the engine's own block count; absent: budget / block bytes
    std::optional<double> maxConcurrency;   ///< vLLM's "Maximum concurrency" at max-model-len
    /// The KV layout per token as this engine build allocates it, when the engine knows it better
    /// than kvcache.h kvLayout (llama.cpp: an MLA layer cached per head before PR #12801, the
    /// latent K and V until PR #19067; V rows of n_embd_v_gqa_max without flash attention): the
    /// plan's capacity (max users, max context, resident tokens, the verdict) and its
    /// kv_bytes_per_token are then priced from it, the draft model's layout added, so that they
    /// and the engine's KV figure come from one number. Absent: the planner's layout stands.
    std::optional<KvLayout> kvLayout;
    std::vector<EngineFigure> figures;      ///< the engine's own printed figures
    std::vector<EngineRefusal> refusals;    ///< would not start (FitLimit::EngineRefusesToStart); format/KV refusals come from compatibility()
    std::vector<std::string> notes;
};

} // namespace headroom
