#include "headroom/core/enginelog/calibration.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/card.h"
#include "headroom/core/engines/engine.h"
#include "headroom/core/engines/bill.h"
#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/regularfile.h"
#include "headroom/core/safetext.h"

#include "importers/jsonutil.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace headroom {

namespace {

std::optional<double> number(const std::string& s)
{
    if (s.empty() || s.size() > 32)
        return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    return end && *end == '\0' && std::isfinite(v) && v >= 0 && v <= 1e18 ? std::optional<double>(v) : std::nullopt;
}

// The engine's canonical spelling of a setting key ("--max_model_len" -> "max-model-len" for
// vLLM): leading dashes dropped, aliases resolved through the unit's declaration; else the key.
std::string canonicalKey(const std::vector<SettingSpec>& specs, std::string key)
{
    while (!key.empty() && key.front() == '-')
        key.erase(key.begin());
    for (const SettingSpec& spec : specs)
        if (spec.key == key || std::find(spec.aliases.begin(), spec.aliases.end(), key) != spec.aliases.end())
            return spec.key;
    return key;
}

// The context, users and memory-fraction twins of every engine unit: the canonical keys their
// configure() reconciles with --context, --users and EnginePolicy::memoryFraction.
constexpr std::initializer_list<const char*> kContextTwins = {"max-model-len", "context-length", "max-total-tokens",
                                                              "max_seq_len", "ctx-size", "num_ctx"};
constexpr std::initializer_list<const char*> kUsersTwins = {"parallel", "OLLAMA_NUM_PARALLEL"};
constexpr std::initializer_list<const char*> kFractionTwins = {"gpu-memory-utilization", "mem-fraction-static",
                                                               "cuda-memory-fraction", "TGI_WIGGLE_ROOM",
                                                               "free_gpu_memory_fraction"};

// True when @p s is one of @p keys in the engine's canonical spelling.
bool isOneOf(const std::vector<SettingSpec>& specs, const EngineSetting& s, std::initializer_list<const char*> keys)
{
    const std::string key = canonicalKey(specs, s.key);
    return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; });
}

// True when @p request gives one of @p keys as an engine setting.
bool givesSetting(const PlanRequest& request, std::initializer_list<const char*> keys)
{
    const std::vector<SettingSpec>& specs = engineFor(request.engine.kind).settings();
    return std::any_of(request.engineSettings.begin(), request.engineSettings.end(),
                       [&](const EngineSetting& s) { return isOneOf(specs, s, keys); });
}

// @p request without the engine settings that are the twins of a generic field the caller is
// about to set, so that the re-asked plan is not refused as a disagreement between, e.g.,
// --context 32768 and max-model-len=2048.
PlanRequest withoutSettings(PlanRequest request, std::initializer_list<const char*> keys)
{
    const std::vector<SettingSpec>& specs = engineFor(request.engine.kind).settings();
    auto& given = request.engineSettings;
    given.erase(std::remove_if(given.begin(), given.end(), [&](const EngineSetting& s) { return isOneOf(specs, s, keys); }),
                given.end());
    return request;
}

// The settings applyLogSettings reads into generic PlanRequest fields, by field: every spelling
// of the engines' logs and command lines (a group is one field).
const std::vector<std::vector<std::string>>& genericGroups()
{
    static const std::vector<std::vector<std::string>> groups = {
        {"max-model-len", "context-length", "context-len", "n_ctx_seq", "num_ctx", "-c", "ctx-size", "n_ctx", "max_seq_len", "max-total-tokens",
         "OLLAMA_CONTEXT_LENGTH"},
        {"n_seq_max", "OLLAMA_NUM_PARALLEL", "parallel", "np", "-np"}, // -np: Ollama's llama-server command line (0.30+)
        {"gpu-memory-utilization", "mem-fraction-static", "free_gpu_memory_fraction", "cuda-memory-fraction"},
        {"max-num-batched-tokens", "chunked-prefill-size", "n_ubatch", "-ub", "ubatch-size", "max_num_tokens",
         "max-batch-prefill-tokens"},
        {"tensor-parallel-size", "tp", "tp-size", "tp_size", "num-shard"},
        {"pipeline-parallel-size", "pp", "pp-size", "pp_size"},
        {"block-size", "tokens_per_block", "page-size"},
        {"kv-cache-dtype", "kv_cache_dtype"},
    };
    return groups;
}

// The generic group of @p key (any spelling, canonicalised through @p specs), or null.
const std::vector<std::string>* genericGroup(const std::vector<SettingSpec>& specs, const std::string& key)
{
    const std::string canonical = canonicalKey(specs, key);
    for (const auto& g : genericGroups())
        for (const std::string& k : g)
            if (canonicalKey(specs, k) == canonical)
                return &g;
    return nullptr;
}

// Adds @p key=@p value to the request's engine settings when the engine unit declares the key
// and the request gives no value for it; true when added.
bool declaredSetting(PlanRequest& r, const std::string& key, const std::string& value)
{
    // The keys applyLogSettings reads as generic fields (context, users, fraction, micro-batch,
    // parallelism, block) are never passed twice.
    const std::vector<SettingSpec>& specs = engineFor(r.engine.kind).settings();
    const std::string canonical = canonicalKey(specs, key);
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const SettingSpec& s) { return s.key == canonical; });
    if (spec == specs.end() || genericGroup(specs, canonical))
        return false;
    // Only a value the engine's parser accepts: a log is untrusted, and a bad value would sink the plan.
    const auto v = number(value);
    if (!v || (spec->type == SettingType::Integer && std::floor(*v) != *v) ||
        (spec->type != SettingType::Integer && spec->type != SettingType::Number) ||
        (spec->maximum > spec->minimum && (*v < spec->minimum || *v > spec->maximum)))
        return false;
    if (std::any_of(r.engineSettings.begin(), r.engineSettings.end(),
                    [&](const EngineSetting& s) { return canonicalKey(specs, s.key) == canonical; }))
        return false;
    r.engineSettings.push_back({canonical, value});
    return true;
}

Bytes toBytes(double v)
{
    return Bytes{v <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(v))};
}

std::optional<Bytes> logBytes(const EngineLog& log, std::string_view name)
{
    if (auto v = log.value(name))
        return toBytes(*v);
    return std::nullopt;
}

Bytes overhead(const PlanResult& p, std::initializer_list<const char*> names)
{
    Bytes sum{0};
    for (const OverheadItem& i : p.overheads)
        for (const char* n : names)
            if (i.name == n)
                sum += i.bytes;
    return sum;
}

/// The KV figure the log printed: its name, value, and the bytes one unit of it stands for.
struct KvTarget {
    std::string name;
    std::uint64_t printed = 0;
};

std::optional<KvTarget> kvTarget(const EngineLog& log)
{
    const char* names[] = {"kv_cache_tokens", "num_gpu_blocks", "max_total_num_tokens", "max_batch_total_tokens",
                           "max_kv_tokens", "kv_blocks", "available_kv_cache"};
    for (const char* n : names)
        if (auto v = log.value(n); v && *v > 0)
            return KvTarget{n, static_cast<std::uint64_t>(std::llround(*v))};
    return std::nullopt;
}

/// Bytes of KV budget one unit of the figure stands for.
double unitBytes(const PlanResult& p, const std::string& name)
{
    const double bpt = static_cast<double>(p.kvBytesPerToken.value);
    if (name == "available_kv_cache")
        return 1.0;
    const bool blocks = name == "num_gpu_blocks" || name == "kv_blocks";
    const double block = static_cast<double>(p.paging.blockTokens);
    const double unit = blocks ? bpt * block : bpt;
    // vLLM's hybrid KV cache groups (engines/vllm.cpp) price padding layers: a token then stands
    // for more budget than kv_bytes_per_token. Take the plan's own ratio when the budget exceeds
    // the figure's bytes by more than the flooring to whole blocks can leave (two blocks).
    const double figure = static_cast<double>(plannedKvFigure(p, name));
    const double budget = static_cast<double>(p.kvBudgetBytes.value);
    if (figure > 0 && budget - figure * unit > 2 * bpt * block)
        return budget / figure;
    return unit;
}

std::string hex(const std::string& text)
{
    return hashHex(fnv1a64(text.data(), text.size()));
}

std::string cardIdOf(const Card& card)
{
    return card.id.empty() ? formatBytes(card.totalBytes) : card.id;
}

/// The engine version a request's rules are for, when it names one (--engine vllm@0.19, or the
/// version a log printed); empty otherwise.
std::string requestVersion(const PlanRequest& r)
{
    return r.engine.requestedVersion;
}

/// @p s with every character but letters, digits, '-', '.' and '@' spelled '_' (a file name part).
std::string fileNamePart(const std::string& s)
{
    std::string out;
    for (char ch : s)
        out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' || ch == '@' ? ch : '_';
    return out.empty() ? std::string("_") : out;
}

/// True when two card totals are the same card's: equal to the 0.01 GiB engines print totals to
/// ("total_memory=79.19GiB", TensorRT-LLM "total: 31.84 GiB"), so a card given as a size
/// (-c 79.19GiB) or as its profile (h100-sxm, 79.18 GiB) matches the total a log printed.
bool sameCardTotal(Bytes a, Bytes b)
{
    constexpr std::uint64_t kPrintedGiBStep = (1ull << 30) / 100;
    return (a.value > b.value ? a.value - b.value : b.value - a.value) <= kPrintedGiBStep;
}

/// The engines that size from the card's free memory (llama.cpp --fit, Ollama's memory.available).
bool sizesFromFreeMemory(EngineKind k)
{
    return k == EngineKind::LlamaCpp || k == EngineKind::Ollama;
}

/// The CUDA graphs the plan expects, beside the log's figure: the in-budget charge where the
/// engine subtracts them from its KV budget, else what it holds for them beyond its memory fraction
/// (Engine::fractionHolding: vLLM V1 captures them after the pool is sized), so that a captured
/// figure is never set against a zero in-budget term (review 14).
std::optional<Bytes> plannedGraphs(const PlanRequest& request, const PlanResult& p, Bytes inBudget, std::string& how)
{
    if (inBudget.value > 0)
        return inBudget;
    if (const auto holding = engineFor(request.engine.kind).fractionHolding(request, p, MeasuredHolding{}))
        for (const OverheadItem& item : holding->held)
            if (item.name == "cuda_graphs") {
                how += "; predicted: " + item.note;
                return item.bytes;
            }
    return inBudget;
}

std::vector<ComponentComparison> compareComponents(const EngineLog& log, const PlanRequest& request, const PlanResult& p)
{
    std::vector<ComponentComparison> rows;
    auto row = [&](std::string c, std::optional<Bytes> predicted, std::optional<Bytes> measured, std::string how) {
        rows.push_back({std::move(c), predicted, measured, std::move(how)});
    };
    const auto line = [&](std::string_view name) {
        const LogTerm* t = log.find(name);
        return t ? "line " + std::to_string(t->line) + ": " + t->printed : std::string("not printed");
    };
    const bool ggml = log.engine == "llama.cpp" || log.engine == "ollama";
    if (!ggml) {
        // vLLM's "Model loading took" includes the rotary cos/sin cache the bill prices apart.
        // SGLang's "Load weight begin/end. avail mem=" lines: the weights are the free memory they took
        // (0.4.1-0.4.2 print no "mem usage" on the end line).
        std::optional<Bytes> weights = logBytes(log, "weights");
        std::string weightsHow = line("weights");
        const auto before = log.value("free_before_weights"), after = log.value("free_after_weights");
        if (!weights && before && after && *before > *after) {
            weights = toBytes(*before - *after);
            weightsHow = "avail mem before - after the weight load (lines " + std::to_string(log.find("free_before_weights")->line) +
                         ", " + std::to_string(log.find("free_after_weights")->line) + ")";
        }
        row("weights", p.weightsBytes + overhead(p, {"rotary_cache"}), weights, weightsHow);
        // The profile run's peak under each engine's own names (vLLM, TGI's warm-up, TensorRT-LLM's
        // build-time activations and its decoder's buffers sized by the build limits).
        const Bytes act = overhead(p, {"activation_peak", "logits", "warmup_activations", "warmup_logits", "engine_activations",
                                       "logits_buffer", "decoder_output_ids", "decoder_parent_ids", "decoder_log_probs",
                                       "decoder_log_probs_tiled", "decoder_gathered_ids", "decoder_logits_copy", "sampling_workspace",
                                       "penalty_workspace", "embedding_bias", "draft_logits"});
        std::optional<Bytes> measuredAct = logBytes(log, "activation_peak");
        std::string how = line("activation_peak");
        // vLLM V1 and SGLang print no peak: it is what the claimed memory leaves after weights and KV.
        if (!measuredAct && log.engine == "vllm")
            if (auto req = log.value("requested_memory"), w = log.value("weights"), kv = log.value("available_kv_cache"); req && w && kv) {
                measuredAct = toBytes(*req - *w - *kv);
                how = "requested - weights - available KV (lines " + std::to_string(log.find("requested_memory")->line) + ", " +
                      std::to_string(log.find("weights")->line) + ", " + std::to_string(log.find("available_kv_cache")->line) +
                      "): the profile run's peak, non-torch memory and graphs together";
            }
        row("activation_peak", act, measuredAct, how);
        row("non_torch", overhead(p, {"cuda_context", "non_torch"}), logBytes(log, "non_torch"), line("non_torch"));
        std::optional<Bytes> graphs = logBytes(log, "cuda_graph_captured");
        std::string graphsHow = graphs ? line("cuda_graph_captured") : line("cuda_graph_estimate");
        const std::optional<Bytes> predictedGraphs = plannedGraphs(request, p, overhead(p, {"cuda_graphs"}), graphsHow);
        row("cuda_graphs", predictedGraphs, graphs ? graphs : logBytes(log, "cuda_graph_estimate"), graphsHow);
        std::optional<Bytes> kv = logBytes(log, "available_kv_cache");
        std::string kvHow = line("available_kv_cache");
        if (!kv) {
            kv = logBytes(log, "kv_cache");
            kvHow = line("kv_cache");
        }
        row("kv_budget", p.kvBudgetBytes, kv, kvHow);
    } else {
        // The engine unit's own figures (llama.cpp llama-context.cpp / llama-kv-cache.cpp, Ollama
        // memory.go), as the corpus harness compares them; the generic terms when it has none.
        const auto figure = [&](const char* name) -> std::optional<Bytes> {
            for (const EngineFigure& f : p.engineFigures)
                if (f.name == name && f.unit == "bytes")
                    return toBytes(f.value);
            return std::nullopt;
        };
        // A layer split allocates a GPU copy of the offloaded layers and maps the host range of the
        // file (CPU_Mapped, which with mmap spans the file from its first to its last host tensor):
        // the model buffers of every device are the unit's GPU and host figures, not the weights once.
        const auto gpuWeights = figure("gpu_weights_bytes");
        const auto hostWeights = figure("host_weights_bytes");
        const bool split = gpuWeights && hostWeights && log.find("model_buffer");
        row("weights", split ? Bytes{gpuWeights->value + hostWeights->value} : p.weightsBytes,
            log.sumOverDevices("model_buffer") ? std::optional<Bytes>(toBytes(*log.sumOverDevices("model_buffer")))
                                               : logBytes(log, "weights.total"),
            log.find("model_buffer") ? (split ? "model buffers, all devices (GPU copy + the mapped host range)" : "model buffers, all devices")
                                     : line("weights.total"));
        const auto compute = log.value("compute_buffer", "CUDA0");
        row("compute_buffer", figure("compute_buffer_bytes").value_or(overhead(p, {"compute_buffer", "activation_peak"})),
            compute ? std::optional<Bytes>(toBytes(*compute)) : logBytes(log, "graph.full"),
            compute ? "CUDA0 compute buffer" : line("graph.full"));
        const auto kvSum = log.sumOverDevices("kv_buffer");
        const std::uint64_t cells = std::max<std::uint64_t>(p.contextTokens, 1);
        row("kv_buffer", figure("kv_buffer_bytes").value_or(Bytes{p.kvBytesPerToken.value * cells * std::max<std::uint64_t>(p.users, 1)}),
            kvSum ? std::optional<Bytes>(toBytes(*kvSum)) : logBytes(log, "required.kv"),
            kvSum ? "KV buffers, all devices" : line("required.kv"));
    }
    return rows;
}

/// True when @p p holds @p users sequences of its context: by the engine's own figure where it
/// prints one (vLLM's "Maximum concurrency", kv_cache_utils.py, from max_memory_usage_bytes per
/// request), else by the plan's max_users.
bool holdsUsers(const PlanResult& p, std::uint64_t users)
{
    if (p.maxConcurrency)
        return *p.maxConcurrency + 1e-9 >= static_cast<double>(users);
    return p.maxUsers && *p.maxUsers >= users;
}

/// The sequences a log ran with (n_seq_max, --parallel / -np, OLLAMA_NUM_PARALLEL), else 1.
std::uint64_t logSequences(const EngineLog& log)
{
    for (const char* key : {"n_seq_max", "parallel", "np", "-np", "OLLAMA_NUM_PARALLEL"})
        if (auto it = log.settings.find(key); it != log.settings.end())
            if (auto v = number(it->second); v && *v >= 1 && *v <= 1e6)
                return static_cast<std::uint64_t>(*v);
    return 1;
}

} // namespace

std::optional<std::pair<std::uint64_t, std::string>> contextFromLog(const EngineLog& log)
{
    const auto read = [&](const char* key) -> std::optional<std::uint64_t> {
        if (auto it = log.settings.find(key); it != log.settings.end())
            if (auto v = number(it->second); v && *v >= 1)
                return static_cast<std::uint64_t>(*v);
        return std::nullopt;
    };
    // Per sequence, as the engine printed it.
    // SGLang prints the context it runs at as "context_len=131072" on its max_total_num_tokens line.
    for (const char* key : {"n_ctx_seq", "max-model-len", "context-length", "context-len", "max_seq_len", "num_ctx"})
        if (auto v = read(key))
            return std::pair{*v, std::string(key)};
    // The runner's total over its slots: llama.cpp's n_ctx and -c (llama_context n_ctx_seq =
    // n_ctx / n_seq_max), and Ollama's --ctx-size, which server/sched.go sets to num_ctx x
    // OLLAMA_NUM_PARALLEL (pickBestFullFitByLibrary `req.opts.NumCtx = req.origNumCtx * p`, 0.5.x)
    // before llm/server.go passes it to the runner.
    const std::uint64_t seqs = logSequences(log);
    for (const char* key : {"n_ctx", "ctx-size", "-c", "c", "kv_size"})
        if (auto v = read(key))
            return std::pair{std::max<std::uint64_t>(*v / seqs, 1), std::string(key)};
    // Ollama's server config (OLLAMA_CONTEXT_LENGTH, the default num_ctx of a request), last: a
    // request's num_ctx overrides it, and the runner's --ctx-size says what ran.
    if (auto v = read("OLLAMA_CONTEXT_LENGTH"))
        return std::pair{*v, std::string("OLLAMA_CONTEXT_LENGTH")};
    return std::nullopt;
}

bool givesContextSetting(const PlanRequest& request)
{
    return givesSetting(request, kContextTwins);
}

std::uint64_t plannedKvFigure(const PlanResult& p, const std::string& name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name && f.value >= 0 && f.value < 1e18)
            return static_cast<std::uint64_t>(std::llround(f.value));
    if (name == "num_gpu_blocks" || name == "kv_blocks")
        return p.kvBlocks;
    if (name == "kv_cache_tokens")
        return p.kvBlocks * p.paging.blockTokens;
    if (name == "available_kv_cache")
        return p.kvBudgetBytes.value;
    return p.maxResidentTokens;
}

std::string LogCalibration::name() const
{
    return engine + (engineVersion.empty() ? "" : " " + engineVersion) + " on " + cardId + " from " + logName + " (" + logHash + ")";
}

std::string engineProfileId(const EngineLog& log)
{
    return log.engine;
}

std::vector<std::string> applyLogSettings(const EngineLog& log, PlanRequest& r)
{
    std::vector<std::string> applied;
    const bool contextGiven = givesSetting(r, kContextTwins);
    const bool usersGiven = givesSetting(r, kUsersTwins);
    // Flash attention as the log printed it (llama.cpp "flash_attn = 0", Ollama
    // OLLAMA_FLASH_ATTENTION / "enabling flash attention", llama-server -fa / --flash-attn): the plan
    // runs as the engine ran, unless the request says otherwise in any spelling.
    const bool flashGiven = r.flashAttention.has_value() ||
                            std::any_of(r.engineSettings.begin(), r.engineSettings.end(), [](const EngineSetting& s) {
                                return s.key == "flash-attn" || s.key == "fa" || s.key == "OLLAMA_FLASH_ATTENTION";
                            });
    for (const char* key : {"flash_attn", "OLLAMA_FLASH_ATTENTION", "flash-attn", "-fa", "fa"}) {
        const auto it = log.settings.find(key);
        if (it == log.settings.end() || flashGiven)
            continue;
        const std::string& v = it->second;
        const bool on = v == "1" || v == "true" || v == "on" || v == "enabled";
        const bool off = v == "0" || v == "false" || v == "off" || v == "disabled";
        if (on || off) {
            r.flashAttention = on;
            applied.push_back(std::string(key) + "=" + v);
            break;
        }
    }
    // The KV cache types llama.cpp printed ("KV self size = ..., K (q8_0): ..., V (q8_0): ..." and
    // "llama_kv_cache: size = ... K (q8_0) ...", read as -ctk / -ctv; llama.cpp common/arg.cpp spells
    // them --cache-type-k / -ctk): the plan runs the cache as the engine ran it, unless the request
    // names a KV dtype other than the 16-bit default or the cache types itself.
    if (r.kvDtype.id == "fp16" || r.kvDtype.id == "bf16") {
        const std::vector<SettingSpec>& specs = engineFor(r.engine.kind).settings();
        const std::pair<const char*, const char*> kvTypes[] = {{"-ctk", "cache-type-k"}, {"-ctv", "cache-type-v"}};
        for (const auto& kvType : kvTypes) {
            // Named copies, not structured bindings: clang before 16 (Debian's 14, the fuzz build)
            // cannot capture a binding in a lambda.
            const char* const logKey = kvType.first;
            const char* const engineKey = kvType.second;
            const auto it = log.settings.find(logKey);
            const auto spec = std::find_if(specs.begin(), specs.end(), [&](const SettingSpec& x) { return x.key == engineKey; });
            if (it == log.settings.end() || spec == specs.end() ||
                std::find(spec->choices.begin(), spec->choices.end(), it->second) == spec->choices.end() ||
                std::any_of(r.engineSettings.begin(), r.engineSettings.end(),
                            [&](const EngineSetting& e) { return canonicalKey(specs, e.key) == engineKey; }))
                continue;
            r.engineSettings.push_back({engineKey, it->second});
            applied.push_back(std::string(logKey) + "=" + it->second);
        }
    }
    for (const auto& [key, value] : log.settings) {
        const auto v = number(value);
        if (!v)
            continue;
        if (key == "flash_attn" || key == "OLLAMA_FLASH_ATTENTION" || key == "flash-attn" || key == "-fa" || key == "fa")
            continue; // read above
        bool used = true;
        if (key == "gpu-memory-utilization" || key == "mem-fraction-static" || key == "free_gpu_memory_fraction" ||
            key == "cuda-memory-fraction")
            r.engine.memoryFraction = *v;
        // The context is read once, below, from the best of its spellings.
        else if (key == "max-model-len" || key == "context-length" || key == "context-len" || key == "n_ctx_seq" || key == "num_ctx" ||
                 key == "max_seq_len" || key == "-c" || key == "ctx-size" || key == "n_ctx" || key == "kv_size" ||
                 key == "OLLAMA_CONTEXT_LENGTH")
            used = !contextGiven && contextFromLog(log).has_value() && contextFromLog(log)->second == key;
        else if (key == "max-num-batched-tokens" || key == "chunked-prefill-size" || key == "n_ubatch" || key == "-ub" ||
                 key == "max_num_tokens" || key == "max-batch-prefill-tokens")
            r.ubatchTokens = static_cast<std::uint64_t>(*v);
        else if (key == "tensor-parallel-size" || key == "tp" || key == "tp-size" || key == "tp_size" || key == "num-shard")
            r.tensorParallel = static_cast<std::uint32_t>(std::clamp(*v, 1.0, 4096.0));
        else if (key == "pipeline-parallel-size" || key == "pp" || key == "pp-size")
            r.pipelineParallel = static_cast<std::uint32_t>(std::clamp(*v, 1.0, 4096.0));
        else if ((key == "n_seq_max" || key == "OLLAMA_NUM_PARALLEL" || key == "parallel" || key == "np" || key == "-np") && !usersGiven)
            r.users = static_cast<std::uint64_t>(*v);
        else if (key == "block-size" || key == "tokens_per_block" || key == "page-size")
            r.engine.blockTokens = static_cast<std::uint64_t>(std::max(1.0, *v));
        else
            used = declaredSetting(r, key, value);
        if (used)
            applied.push_back(key + "=" + value);
    }
    // A context or users setting of the request (num_ctx, max-model-len, -np) says it in the
    // engine's own spelling and wins over the log's generic reading of it.
    if (const auto ctx = contextFromLog(log); ctx && !contextGiven)
        r.contextTokens = ctx->first;
    return applied;
}

std::vector<std::string> assumedSettings(const PlanResult& plan, const PlanRequest& request, const std::vector<std::string>& fromLog)
{
    const std::vector<SettingSpec>& specs = engineFor(request.engine.kind).settings();
    std::vector<std::string> taken; // canonical keys the log or the request gave
    for (const std::string& kv : fromLog)
        taken.push_back(canonicalKey(specs, kv.substr(0, kv.find('='))));
    for (const EngineSetting& s : request.engineSettings)
        taken.push_back(canonicalKey(specs, s.key));
    const auto isTaken = [&](const std::string& key) {
        const auto* group = genericGroup(specs, key);
        return std::any_of(taken.begin(), taken.end(), [&](const std::string& t) {
            return t == key || (group && genericGroup(specs, t) == group);
        });
    };
    std::vector<std::string> out;
    for (const SettingValue& v : plan.engineSettings)
        if (!v.given && !isTaken(v.key))
            out.push_back(v.key + "=" + v.text);
    return out;
}

tl::expected<LogComparison, std::string> compareWithLog(const EngineLog& log, const PlanRequest& request, const std::string& logName,
                                                        const std::string& logText)
{
    LogComparison out;
    out.request = request;
    auto predicted = makePlan(request);
    if (!predicted)
        return tl::unexpected(predicted.error());
    out.predicted = *predicted;
    out.components = compareComponents(log, request, out.predicted);

    // Every name here came from a path or a log's text (a file name that is not UTF-8, an escape
    // sequence in a version): made safe once, so the calibration prints and serialises as it is.
    LogCalibration& cal = out.calibration;
    cal.cardId = safeText(cardIdOf(request.card));
    cal.cardTotalBytes = request.card.totalBytes;
    cal.engine = safeText(log.engine);
    cal.engineVersion = safeText(log.version);
    cal.modelId = safeText(request.model.id);
    cal.logName = safeText(logName);
    cal.logHash = hex(logText);
    cal.ubatchTokens = out.predicted.ubatchTokens;
    cal.measured = request.measured;
    cal.nonTorchBytes = logBytes(log, "non_torch");
    cal.cardFreeBytes = log.cardFreeBytes;
    if (log.cardTotalBytes && log.cardFreeBytes && *log.cardFreeBytes < *log.cardTotalBytes)
        cal.cardUsedAtStartBytes = *log.cardTotalBytes - *log.cardFreeBytes;
    cal.capturedGraphBytes = logBytes(log, "cuda_graph_captured");

    const bool ggml = log.engine == "llama.cpp" || log.engine == "ollama";
    if (ggml) {
        // llama.cpp sizes its KV cache from n_ctx, not from a budget: the compute buffer is what it measured.
        const auto compute = log.value("compute_buffer", "CUDA0");
        const auto graph = log.value("graph.full");
        if (compute || graph)
            cal.measured.activationPeakBytes = toBytes(compute ? *compute : *graph);
        else
            out.saveRefusal = "the log prints no compute buffer (CUDA0 compute buffer size, memory.graph.full): nothing was measured";
        out.notes.push_back("llama.cpp sizes its KV cache from n_ctx, not from a free-memory budget: the calibration keeps the "
                            "measured compute buffer; the KV buffer is compared, not fitted");
        // The KV buffer follows from the context, the sequences and the cache type alone: a plan
        // for the log's settings that misses it read those settings wrong, and its calibration
        // would carry the misreading to every later plan.
        for (const ComponentComparison& c : out.components)
            if (c.component == "kv_buffer" && c.predicted && c.measured && c.measured->value > 0) {
                const double ratio = static_cast<double>(c.predicted->value) / static_cast<double>(c.measured->value);
                if (std::abs(ratio - 1.0) > 0.05 && out.saveRefusal.empty())
                    out.saveRefusal = "the plan for the log's settings gives a KV buffer of " + formatBytes(*c.predicted) +
                                      ", the log " + formatBytes(*c.measured) + " (" + c.how + "): " +
                                      (contextFromLog(log) ? std::string()
                                                           : "the log prints no context (n_ctx, --ctx-size, num_ctx) and the plan assumed " +
                                                                 formatThousands(out.predicted.contextTokens) + "; ") +
                                      "the context (" + formatThousands(out.predicted.contextTokens) + " per sequence), the sequences (" +
                                      std::to_string(out.predicted.users) + ") or the KV type (" + out.predicted.kvDtypeId +
                                      ") differ from what the engine ran; give them (--context, --users, --kv-dtype, --set)";
            }
    } else if (auto target = kvTarget(log)) {
        // Fit the profiled term so that the plan's pool gives the printed figure: the activation
        // peak where the engine's rule has one (vLLM, TGI, TensorRT-LLM), else the runtime term
        // (SGLang's mem_fraction_static rule keeps everything but weights and KV in it). When even
        // a zero peak leaves the plan's pool smaller than the log's, the plan's other fixed terms
        // are larger than the engine's: the non-torch term, then the CUDA-graph charge, are fitted
        // in turn (each only once the one before is at zero), as the log measured them.
        struct Term {
            const char* name;         ///< the plan's overhead item of the term
            const char* also;         ///< a second item it covers (the logits), or null
            std::optional<Bytes> MeasuredOverheads::*field;
        };
        const auto termBytes = [](const PlanResult& plan, const Term& t) {
            return t.also ? overhead(plan, {t.name, t.also}) : overhead(plan, {t.name});
        };
        const bool hasActivation = overhead(out.predicted, {"activation_peak"}).value > 0;
        std::vector<Term> terms;
        if (hasActivation) {
            terms.push_back({"activation_peak", "logits", &MeasuredOverheads::activationPeakBytes});
            if (overhead(out.predicted, {"non_torch"}).value > 0)
                terms.push_back({"non_torch", nullptr, &MeasuredOverheads::runtimeBytes});
            if (overhead(out.predicted, {"cuda_graphs"}).value > 0)
                terms.push_back({"cuda_graphs", nullptr, &MeasuredOverheads::cudaGraphBytes});
        } else {
            // SGLang's distributed init is held outside the pool like the context: one measured
            // runtime covers both (a measured runtime replaces the init's printed figure, sglang.cpp).
            terms.push_back({"cuda_context", "distributed_init", &MeasuredOverheads::runtimeBytes});
        }
        const double unit = unitBytes(out.predicted, target->name);
        PlanRequest fitted = request;
        PlanResult p = out.predicted;
        bool exact = false;
        bool nothingFits = false;
        for (std::size_t k = 0; k < terms.size() && !exact; ++k) {
            const Term& t = terms[k];
            double act = static_cast<double>(termBytes(p, t).value);
            bool negative = false;
            PlanRequest r = fitted;
            for (int i = 0; i < 16 && unit > 0; ++i) {
                const double want = (static_cast<double>(target->printed) + (unit > 1.0 ? 0.5 : 0.0)) * unit;
                const double have = static_cast<double>(p.kvBudgetBytes.value);
                act += have - want;
                if (act < 0) {
                    negative = true;
                    act = 0;
                }
                r = fitted;
                r.measured.*t.field = toBytes(act);
                auto again = makePlan(r);
                if (!again)
                    return tl::unexpected(again.error());
                p = *again;
                if (plannedKvFigure(p, target->name) == target->printed) {
                    exact = true;
                    break;
                }
                if (act == 0)
                    break;
            }
            fitted = r;
            cal.measured.*t.field = fitted.measured.*t.field;
            if (exact || !negative)
                break;
            if (k + 1 == terms.size()) {
                out.notes.push_back("the log's pool is larger than the plan's weights and runtime leave: the plan's weights "
                                    "are larger than the engine's on this card; no overhead fits");
                nothingFits = true;
            } else {
                out.notes.push_back("the log's pool is larger than a zero " + std::string(t.name) + " leaves: the plan's "
                                    + terms[k + 1].name + " is fitted too (the log measured it smaller than the engine profile)");
            }
        }
        out.kvFigure = KvFigureComparison{target->name, target->printed, plannedKvFigure(out.predicted, target->name), plannedKvFigure(p, target->name)};
        if (!exact) {
            const std::uint64_t got = plannedKvFigure(p, target->name);
            out.notes.push_back("the calibrated plan gives " + std::to_string(got) + " for " + target->name + ", the log " +
                                std::to_string(target->printed) + " (the plan counts whole blocks of " +
                                std::to_string(p.paging.blockTokens) + " tokens)");
            out.saveRefusal = "the calibrated plan gives " + std::to_string(got) + " for " + target->name + ", not the log's " +
                              std::to_string(target->printed) + ": the fit failed";
        }
        if (nothingFits)
            out.saveRefusal = "no overhead makes the plan's pool the log's: the plan's weights and fixed buffers are larger than "
                              "the engine's (check -m, -w, --tp, --engine-version and the settings the log does not print: --set)";
    } else {
        out.notes.push_back("the log prints no KV figure (GPU KV cache size, # GPU blocks, max_total_num_tokens, max batch total "
                            "tokens, tokens in paged KV cache): nothing to calibrate");
        out.saveRefusal = "the log prints no KV figure: nothing was calibrated";
    }
    auto calibrated = makeCalibratedPlan(request, cal);
    if (!calibrated)
        return tl::unexpected(calibrated.error());
    out.calibrated = *calibrated;
    return out;
}

std::pair<CalibrationScope, std::string> calibrationScope(const PlanRequest& request, const LogCalibration& c)
{
    // The log's engine ("tensorrt-llm") against the plan's kind: a versioned profile
    // ("tensorrt-llm-0") is the same engine.
    if (c.engine != engineKindName(request.engine.kind))
        return {CalibrationScope::None, "a calibration of " + c.engine + ", the plan's engine is " + engineKindName(request.engine.kind)};
    if (!sameCardTotal(c.cardTotalBytes, request.card.totalBytes))
        return {CalibrationScope::None, "measured on a card of " + formatBytes(c.cardTotalBytes) + " (" + c.cardId + "), this card has " +
                                            formatBytes(request.card.totalBytes)};
    const std::string version = requestVersion(request);
    if (!c.engineVersion.empty() && !version.empty() && compareVersions(c.engineVersion, version) != 0)
        return {CalibrationScope::ModelIndependent, "measured with " + c.engine + " " + c.engineVersion + ", this plan is for " + version};
    if (c.modelId != request.model.id)
        return {CalibrationScope::ModelIndependent, "measured with " + (c.modelId.empty() ? std::string("another model") : c.modelId) +
                                                        ", this plan is for " + request.model.id};
    return {CalibrationScope::Whole, ""};
}

PlanRequest withCalibration(PlanRequest request, const LogCalibration& calibration)
{
    const auto [scope, why] = calibrationScope(request, calibration);
    if (scope == CalibrationScope::None) {
        request.measured.source = "calibration " + calibration.name() + " not applied: " + why;
        return request;
    }
    if (scope == CalibrationScope::ModelIndependent) {
        std::string terms;
        if (calibration.nonTorchBytes) {
            request.measured.runtimeBytes = calibration.nonTorchBytes;
            terms = "non-torch memory " + formatBytes(*calibration.nonTorchBytes);
        }
        if (calibration.cardFreeBytes && !request.freeBytes && sizesFromFreeMemory(request.engine.kind)) {
            request.freeBytes = calibration.cardFreeBytes;
            terms += (terms.empty() ? "" : ", ") + std::string("card free memory ") + formatBytes(*calibration.cardFreeBytes);
        }
        request.measured.source = "calibrated by " + calibration.name() + " (" + why + "): only its model-independent terms apply" +
                                  (terms.empty() ? std::string(", and it measured none: nothing applied") : ": " + terms) +
                                  "; the activation peak measured for " + calibration.modelId + " is not used";
        return request;
    }
    if (calibration.measured.activationPeakBytes)
        request.measured.activationPeakBytes = calibration.measured.activationPeakBytes;
    if (calibration.measured.runtimeBytes)
        request.measured.runtimeBytes = calibration.measured.runtimeBytes;
    if (calibration.measured.cudaGraphBytes)
        request.measured.cudaGraphBytes = calibration.measured.cudaGraphBytes;
    if (!request.ubatchTokens && calibration.ubatchTokens > 0)
        request.ubatchTokens = calibration.ubatchTokens;
    request.measured.source = "calibrated by " + calibration.name() + ": " +
                              (calibration.measured.activationPeakBytes
                                   ? "activation peak " + formatBytes(*calibration.measured.activationPeakBytes)
                                   : "runtime " + formatBytes(calibration.measured.runtimeBytes.value_or(Bytes{0}))) +
                              " measured at a micro-batch of " + std::to_string(calibration.ubatchTokens) + " tokens";
    return request;
}

tl::expected<PlanResult, std::string> makeCalibratedPlan(const PlanRequest& request, const LogCalibration& calibration)
{
    // A measured peak holds at the micro-batch it was measured at only.
    const bool sameBatch = !request.ubatchTokens || *request.ubatchTokens == calibration.ubatchTokens || calibration.ubatchTokens == 0;
    if (sameBatch)
        return makePlan(withCalibration(request, calibration));
    auto plan = makePlan(request);
    if (plan)
        plan->notes.push_back("calibration " + calibration.name() + " not applied: it was measured at a micro-batch of " +
                              std::to_string(calibration.ubatchTokens) + " tokens, this plan asks for " +
                              std::to_string(*request.ubatchTokens));
    return plan;
}

tl::expected<PlanResult, std::string> calibratedAt(const PlanRequest& request, const LogCalibration& calibration,
                                                   std::uint64_t contextTokens, std::uint64_t users)
{
    PlanRequest r = withoutSettings(withoutSettings(request, kContextTwins), kUsersTwins);
    r.contextTokens = contextTokens;
    r.users = users;
    return makeCalibratedPlan(r, calibration);
}

PlanRequest atMemoryFraction(PlanRequest request, double fraction)
{
    request = withoutSettings(std::move(request), kFractionTwins);
    request.engine.memoryFraction = fraction;
    return request;
}

std::optional<FractionLeaving> largestFractionLeaving(const PlanRequest& request, const LogCalibration& calibration, Bytes freeBytes)
{
    auto plan = makeCalibratedPlan(request, calibration);
    if (!plan)
        return std::nullopt;
    const auto [scope, why] = calibrationScope(request, calibration);
    MeasuredHolding measured;
    if (scope != CalibrationScope::None)
        measured.cardUsedAtStartBytes = calibration.cardUsedAtStartBytes;
    if (scope == CalibrationScope::Whole)
        measured.cudaGraphBytes = calibration.capturedGraphBytes;
    const auto holding = engineFor(request.engine.kind).fractionHolding(request, *plan, measured);
    if (!holding || holding->baseBytes.value == 0)
        return std::nullopt;
    FractionLeaving out;
    out.baseBytes = holding->baseBytes;
    out.held = holding->held;
    const double room = static_cast<double>(request.card.totalBytes.value) - static_cast<double>(freeBytes.value) -
                        static_cast<double>(totalBytes(holding->held).value);
    const double f = room / static_cast<double>(holding->baseBytes.value);
    // Rounded down to 0.01, with a guard against 0.95 printing as 0.9499999; at most 1.
    out.fraction = f <= 0 ? 0.0 : std::min(1.0, std::floor(f * 100.0 + 1e-9) / 100.0);
    const double inside = static_cast<double>(plan->weightsBytes.value + totalBytes(plan->overheads).value);
    out.kvCacheBytes = toBytes(room - inside);
    return out;
}

tl::expected<SettingForUsers, std::string> settingForUsers(const PlanRequest& request, const LogCalibration& calibration,
                                                           std::uint64_t users, std::uint64_t contextTokens)
{
    auto base = calibratedAt(request, calibration, contextTokens, users);
    if (!base)
        return tl::unexpected(base.error());
    SettingForUsers s;
    // Each user's KV: every token in the full-attention layers, at most the window in the
    // sliding-window layers (kvcache.h KvLayout), in whole blocks.
    const std::uint64_t block = std::max<std::uint64_t>(base->paging.blockTokens, 1);
    const auto roundUp = [&](std::uint64_t t) { return (t + block - 1) / block * block; };
    const KvLayout& kv = base->kv;
    const std::uint64_t window = kv.slidingLayers > 0 && kv.windowTokens > 0 ? std::min(contextTokens, kv.windowTokens) : contextTokens;
    const std::uint64_t perUser = kv.fullBytesPerToken.value + kv.slidingBytesPerToken.value > 0
        ? roundUp(contextTokens) * kv.fullBytesPerToken.value + roundUp(window) * kv.slidingBytesPerToken.value +
              kv.stateBytesPerSequence.value
        : roundUp(contextTokens) * base->kvBytesPerToken.value;
    s.kvCacheBytes = Bytes{users * perUser};
    if (request.engine.kind == EngineKind::Vllm) {
        // vLLM's own per-request accounting decides (kv_cache_interface.py max_memory_usage_bytes:
        // a sliding-window group keeps window - 1 + max_num_batched_tokens tokens, the hybrid
        // manager's groups and pages): the smallest --kv-cache-memory-bytes whose plan holds them,
        // by bisection between nothing and twice every token of every layer.
        const auto holds = [&](std::uint64_t bytes) -> tl::expected<bool, std::string> {
            PlanRequest r = request;
            auto& given = r.engineSettings;
            given.erase(std::remove_if(given.begin(), given.end(),
                                       [](const EngineSetting& e) { return canonicalKey(engineFor(EngineKind::Vllm).settings(), e.key) == "kv-cache-memory-bytes"; }),
                        given.end());
            given.push_back({"kv-cache-memory-bytes", std::to_string(bytes)});
            auto p = calibratedAt(r, calibration, contextTokens, users);
            if (!p)
                return tl::unexpected(p.error());
            return holdsUsers(*p, users);
        };
        std::uint64_t lo = 0, hi = 2 * users * roundUp(contextTokens) * std::max<std::uint64_t>(base->kvBytesPerToken.value, 1) + (1ull << 30);
        auto top = holds(hi);
        if (!top)
            return tl::unexpected(top.error());
        for (int i = 0; *top && i < 64 && hi - lo > 1; ++i) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            auto ok = holds(mid);
            if (!ok)
                return tl::unexpected(ok.error());
            (*ok ? hi : lo) = mid;
        }
        if (*top)
            s.kvCacheBytes = Bytes{hi};
    }
    // The smallest fraction whose plan holds them: search 0.01 steps upward from the estimate.
    const double total = static_cast<double>(request.card.totalBytes.value);
    const double spent = static_cast<double>(base->weightsBytes.value + totalBytes(base->overheads).value);
    double f = total > 0 ? std::ceil((spent + static_cast<double>(s.kvCacheBytes.value)) / total * 100.0 - 1e-9) / 100.0 : 1.0;
    for (f = std::max(0.01, f - 0.02); f <= 1.0 + 1e-9; f += 0.01) {
        PlanRequest r = atMemoryFraction(request, std::round(f * 100.0) / 100.0);
        auto p = calibratedAt(r, calibration, contextTokens, users);
        if (!p)
            return tl::unexpected(p.error());
        if (holdsUsers(*p, users)) {
            s.memoryFraction = r.engine.memoryFraction;
            s.possible = true;
            break;
        }
    }
    return s;
}

std::string calibrationToJson(const LogCalibration& c)
{
    nlohmann::ordered_json j;
    j["schema_version"] = LogCalibration::kSchemaVersion;
    j["card"] = c.cardId;
    j["card_total_bytes"] = c.cardTotalBytes.value;
    j["engine"] = c.engine;
    j["engine_version"] = c.engineVersion;
    j["model"] = c.modelId;
    j["log"] = c.logName;
    j["log_hash"] = c.logHash;
    j["ubatch_tokens"] = c.ubatchTokens;
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    if (c.measured.activationPeakBytes)
        m["activation_peak_bytes"] = c.measured.activationPeakBytes->value;
    if (c.measured.runtimeBytes)
        m["runtime_bytes"] = c.measured.runtimeBytes->value;
    if (c.measured.cudaGraphBytes)
        m["cuda_graph_bytes"] = c.measured.cudaGraphBytes->value;
    if (c.capturedGraphBytes)
        m["cuda_graphs_captured_bytes"] = c.capturedGraphBytes->value;
    j["measured"] = m;
    nlohmann::ordered_json independent = nlohmann::ordered_json::object();
    if (c.nonTorchBytes)
        independent["non_torch_bytes"] = c.nonTorchBytes->value;
    if (c.cardFreeBytes)
        independent["card_free_bytes"] = c.cardFreeBytes->value;
    if (c.cardUsedAtStartBytes)
        independent["card_used_at_start_bytes"] = c.cardUsedAtStartBytes->value;
    j["model_independent"] = independent;
    return j.dump(2) + "\n";
}

namespace {

/// The most tokens a calibration's micro-batch may name: the CLI's --ubatch bound (2^24).
constexpr std::uint64_t kMaxCalibrationUbatchTokens = 1ull << 24;

/// Why @p c cannot be a measurement of a card, or empty: its card total is no card size
/// (cardSizeProblem: 1 byte to 1024 TiB), its micro-batch is over 2^24 tokens, or a term (an
/// overhead, the free or used memory) is larger than the card it was measured on. Such a file is
/// a misread or a hostile one: applied, it would overflow or empty the bill of every plan on a card
/// of that total (review 13: one calibration of 2^64 - 1 bytes broke every vLLM plan on the card).
std::string calibrationRangeProblem(const LogCalibration& c)
{
    if (const std::string why = cardSizeProblem(c.cardTotalBytes.value); !why.empty())
        return "key card_total_bytes: " + why;
    if (c.ubatchTokens > kMaxCalibrationUbatchTokens)
        return "key ubatch_tokens: " + std::to_string(c.ubatchTokens) + " tokens, expected at most " +
               std::to_string(kMaxCalibrationUbatchTokens);
    const std::pair<const char*, const std::optional<Bytes>*> terms[] = {
        {"measured.activation_peak_bytes", &c.measured.activationPeakBytes},
        {"measured.runtime_bytes", &c.measured.runtimeBytes},
        {"measured.cuda_graph_bytes", &c.measured.cudaGraphBytes},
        {"measured.cuda_graphs_captured_bytes", &c.capturedGraphBytes},
        {"model_independent.non_torch_bytes", &c.nonTorchBytes},
        {"model_independent.card_free_bytes", &c.cardFreeBytes},
        {"model_independent.card_used_at_start_bytes", &c.cardUsedAtStartBytes}};
    for (const auto& [key, value] : terms)
        if (*value && (*value)->value > c.cardTotalBytes.value)
            return std::string("key ") + key + ": " + std::to_string((*value)->value) + " bytes, more than the card_total_bytes " +
                   std::to_string(c.cardTotalBytes.value) + " it was measured on";
    return {};
}

/// "an array", "a string": a JSON type for a message.
std::string withArticle(const char* type)
{
    return (std::string("aeiou").find(type[0]) != std::string::npos ? "an " : "a ") + std::string(type);
}

} // namespace

tl::expected<LogCalibration, std::string> calibrationFromJson(const std::string& text, const std::string& fileName)
{
    if (text.size() > (1u << 20))
        return tl::unexpected(fileName + ": a calibration is at most 1 MiB");
    // Untrusted (a file of the user folder): nesting bounded before any recursive code (dump) sees
    // it, duplicate keys refused, values named by type, never dumped; strings made safe to print.
    auto parsed = importers::parseJson(text, fileName);
    if (!parsed)
        return tl::unexpected(toString(parsed.error()));
    const nlohmann::json& j = *parsed;
    if (!j.is_object())
        return tl::unexpected(fileName + ": not a JSON object");
    const auto version = j.find("schema_version");
    if (version == j.end() || !version->is_number_integer() || version->get<std::int64_t>() != LogCalibration::kSchemaVersion)
        return tl::unexpected(fileName + ": schema_version " +
                              (version == j.end() ? std::string("missing")
                               : version->is_number_integer() ? std::to_string(version->get<std::int64_t>())
                                                              : withArticle(importers::jsonTypeName(*version))) +
                              ", this build reads " + std::to_string(LogCalibration::kSchemaVersion));
    LogCalibration c;
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? safeText(j[k].get<std::string>()) : std::string(); };
    auto u64 = [&](const nlohmann::json& o, const char* k) -> std::optional<std::uint64_t> {
        if (!o.contains(k))
            return std::nullopt;
        if (!o[k].is_number_unsigned())
            return std::nullopt;
        return o[k].get<std::uint64_t>();
    };
    c.cardId = str("card");
    c.engine = str("engine");
    c.engineVersion = str("engine_version");
    c.modelId = str("model");
    c.logName = str("log");
    c.logHash = str("log_hash");
    c.cardTotalBytes = Bytes{u64(j, "card_total_bytes").value_or(0)};
    c.ubatchTokens = u64(j, "ubatch_tokens").value_or(0);
    if (c.engine.empty() || c.cardTotalBytes.value == 0)
        return tl::unexpected(fileName + ": key engine and card_total_bytes are required");
    if (j.contains("measured") && j["measured"].is_object()) {
        const auto& m = j["measured"];
        for (const char* k : {"activation_peak_bytes", "runtime_bytes", "cuda_graph_bytes", "cuda_graphs_captured_bytes"})
            if (m.contains(k) && !m[k].is_number_unsigned())
                return tl::unexpected(fileName + ": key measured." + k + ": expected bytes (an unsigned integer), found " +
                                      (m[k].is_number() ? m[k].dump() : withArticle(importers::jsonTypeName(m[k]))));
        if (auto v = u64(m, "activation_peak_bytes"))
            c.measured.activationPeakBytes = Bytes{*v};
        if (auto v = u64(m, "runtime_bytes"))
            c.measured.runtimeBytes = Bytes{*v};
        if (auto v = u64(m, "cuda_graph_bytes"))
            c.measured.cudaGraphBytes = Bytes{*v};
        if (auto v = u64(m, "cuda_graphs_captured_bytes"))
            c.capturedGraphBytes = Bytes{*v};
    }
    if (j.contains("model_independent") && j["model_independent"].is_object()) {
        const auto& m = j["model_independent"];
        for (const char* k : {"non_torch_bytes", "card_free_bytes", "card_used_at_start_bytes"})
            if (m.contains(k) && !m[k].is_number_unsigned())
                return tl::unexpected(fileName + ": key model_independent." + k + ": expected bytes (an unsigned integer), found " +
                                      m[k].dump());
        if (auto v = u64(m, "non_torch_bytes"))
            c.nonTorchBytes = Bytes{*v};
        if (auto v = u64(m, "card_free_bytes"))
            c.cardFreeBytes = Bytes{*v};
        if (auto v = u64(m, "card_used_at_start_bytes"))
            c.cardUsedAtStartBytes = Bytes{*v};
    }
    if (const std::string why = calibrationRangeProblem(c); !why.empty())
        return tl::unexpected(fileName + ": " + why);
    return c;
}

tl::expected<LogCalibration, std::string> readCalibration(const std::filesystem::path& file)
{
    // Opened once: the size and the type (a regular file, never a FIFO) come from its descriptor.
    auto in = RegularFile::open(file);
    if (!in)
        return tl::unexpected("cannot read " + file.string() + ": " + in.error().message);
    const std::uint64_t size = in->sizeBytes();
    if (size > (1u << 20))
        return tl::unexpected(file.string() + ": a calibration is at most 1 MiB, this file is " + std::to_string(size) + " bytes");
    auto text = in->readStringAt(0, size);
    if (!text)
        return tl::unexpected("cannot read " + file.string() + ": " + text.error().message);
    return calibrationFromJson(*text, file.string());
}

CalibrationFolder readCalibrationFolder(const std::filesystem::path& userProfilesDir)
{
    CalibrationFolder out;
    if (userProfilesDir.empty())
        return out;
    const std::filesystem::path dir = userProfilesDir / "calibrations";
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return out;
    std::vector<std::filesystem::path> files;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end && files.size() < kMaxSavedCalibrations;
         it.increment(ec))
        if (it->path().extension() == ".json" && !it->path().filename().string().starts_with("."))
            files.push_back(it->path());
    std::sort(files.begin(), files.end()); // the same pick on every run
    for (const std::filesystem::path& f : files) {
        // readCalibration opens the file once and refuses what is not a regular file (a FIFO, a
        // device, a symlink to one, a folder), bounds its size (1 MiB) and its nesting.
        if (auto c = readCalibration(f))
            out.calibrations.emplace_back(f, std::move(*c));
        else
            out.warnings.push_back("skipped calibration: " + safeText(c.error())); // the error names the file
    }
    return out;
}

SavedCalibration findSavedCalibration(const CalibrationFolder& folder, const PlanRequest& request)
{
    SavedCalibration out;
    const LogCalibration* whole = nullptr;
    const LogCalibration* other = nullptr;
    std::filesystem::path wholeFile, otherFile;
    std::vector<std::string> mismatches;
    for (const auto& [f, c] : folder.calibrations) {
        if (c.engine != engineKindName(request.engine.kind))
            continue;
        const auto [scope, why] = calibrationScope(request, c);
        if (scope == CalibrationScope::Whole) {
            // The card's own name wins over the same total under another name (a size, a profile).
            if (!whole || c.cardId == cardIdOf(request.card)) {
                whole = &c;
                wholeFile = f;
            }
            if (c.cardId == cardIdOf(request.card))
                break;
            continue;
        }
        if (scope == CalibrationScope::ModelIndependent && !other) {
            other = &c;
            otherFile = f;
        } else if (scope == CalibrationScope::None && mismatches.size() < 3) {
            mismatches.push_back(f.filename().string() + " was " + why);
        }
    }
    if (whole || other) {
        out.calibration = whole ? *whole : *other;
        out.file = whole ? wholeFile : otherFile;
        return out;
    }
    if (!mismatches.empty()) {
        out.why = "no saved " + std::string(engineKindName(request.engine.kind)) + " calibration matches this card (" +
                  formatBytes(request.card.totalBytes) + "): ";
        for (std::size_t i = 0; i < mismatches.size(); ++i)
            out.why += (i ? "; " : "") + mismatches[i];
    }
    return out;
}

PlanRequest applySavedCalibration(PlanRequest request, const CalibrationFolder& folder)
{
    if (request.engine.kind == EngineKind::Flat)
        return request;
    const SavedCalibration saved = findSavedCalibration(folder, request);
    if (!saved.calibration) {
        if (!saved.why.empty() && request.measured.source.empty())
            request.measured.source = saved.why;
        return request;
    }
    const LogCalibration& cal = *saved.calibration;
    const bool sameBatch = !request.ubatchTokens || *request.ubatchTokens == cal.ubatchTokens ||
                           calibrationScope(request, cal).first != CalibrationScope::Whole;
    if (!sameBatch) {
        request.measured.source = "calibration " + cal.name() + " (" + saved.file.filename().string() +
                                  ") not applied: it was measured at a micro-batch of " + std::to_string(cal.ubatchTokens) +
                                  " tokens, this plan asks for " + std::to_string(*request.ubatchTokens);
        return request;
    }
    return withCalibration(std::move(request), cal);
}

tl::expected<PlanRequest, std::string> applySavedCalibration(PlanRequest request, const std::filesystem::path& userProfilesDir)
{
    if (request.engine.kind == EngineKind::Flat || userProfilesDir.empty())
        return request;
    return applySavedCalibration(std::move(request), readCalibrationFolder(userProfilesDir));
}

tl::expected<std::filesystem::path, std::string> saveCalibration(const LogComparison& comparison,
                                                                 const std::filesystem::path& userProfilesDir,
                                                                 const std::filesystem::path& file)
{
    if (!comparison.saveRefusal.empty())
        return tl::unexpected("calibration not saved (any saved one is kept as it was): " + comparison.saveRefusal);
    if (const std::string why = calibrationRangeProblem(comparison.calibration); !why.empty())
        return tl::unexpected("calibration not saved (any saved one is kept as it was): " + why);
    if (file.empty() && userProfilesDir.empty())
        return tl::unexpected(std::string("calibration not saved: no user profiles folder (give --user-profiles DIR or -o FILE)"));
    const std::filesystem::path out = file.empty() ? calibrationPath(userProfilesDir, comparison.calibration) : file;
    std::error_code ec;
    if (out.has_parent_path())
        std::filesystem::create_directories(out.parent_path(), ec);
    if (auto w = writeFileAtomically(out, calibrationToJson(comparison.calibration)); !w)
        return tl::unexpected(w.error());
    return out;
}

std::filesystem::path calibrationPath(const std::filesystem::path& userProfilesDir, const LogCalibration& c)
{
    const std::string engine = c.engine + (c.engineVersion.empty() ? std::string() : "@" + c.engineVersion);
    // A model given as a path (-m /models/x/Qwen2.5-7B-Q4_K_M.gguf) is named by its file or
    // folder and 8 hex digits of the whole path, not by every folder above it.
    std::string model = c.modelId;
    const bool path = model.starts_with('/') || model.starts_with('.') || model.starts_with('~') ||
                      model.find('\\') != std::string::npos || std::count(model.begin(), model.end(), '/') >= 2;
    if (path) {
        std::filesystem::path p(model);
        while (!p.empty() && p.filename().empty())
            p = p.parent_path();
        model = p.filename().string() + "-" + hex(c.modelId).substr(0, 8);
    }
    return userProfilesDir / "calibrations" /
           (fileNamePart(c.cardId) + "." + fileNamePart(engine) + "." + fileNamePart(model) + ".json");
}

} // namespace headroom
