#include "headroom/core/launchflags.h"
#include "headroom/core/safetext.h"

#include "headroom/core/capacity.h"
#include "headroom/core/enginepolicy.h"
#include "headroom/core/enginerules.h"
#include "headroom/core/splitbill.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>

namespace headroom {

namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// The checkpoint argument: the path the model was read from, else $MODEL.
/// What `vllm serve` needs to load @p formatId weights of @p model (vllm/config/model.py
/// _verify_quantization, v0.19): a checkpoint with a quantization_config (GPTQ, AWQ, FP8,
/// compressed-tensors, bitsandbytes) is detected from it and needs no flag (a flag that
/// disagrees with the config is an error); of a 16-bit checkpoint vLLM quantizes at load only
/// to FP8 (--quantization fp8, dynamic per-tensor scales) and bitsandbytes 4-bit
/// (--quantization bitsandbytes, NF4 without double quantization). Returns the flag value
/// ("" = none) and the note to print.
std::pair<std::string, std::string> vllmQuantization(const ModelProfile& model, const std::string& formatId)
{
    const bool quantized = formatId != "fp16" && formatId != "bf16" && formatId != "fp32";
    if (!quantized)
        return {"", ""};
    const bool checkpointIs = model.defaultFormat == formatId;
    if (checkpointIs)
        return {"", "vLLM reads the " + formatId + " quantization from the checkpoint's quantization_config (no --quantization)"};
    if (formatId == "fp8")
        return {"fp8", "vLLM quantizes the 16-bit checkpoint to FP8 at load; drop it for a pre-quantized FP8 checkpoint, "
                       "whose quantization_config vLLM reads"};
    if (formatId == "nf4-bnb")
        return {"bitsandbytes", "vLLM quantizes the 16-bit checkpoint to bitsandbytes NF4 at load"};
    return {"", "vLLM cannot quantize to " + formatId
                    + " at load: MODEL must be a pre-quantized checkpoint, whose quantization_config vLLM reads"};
}

std::string modelArgument(const ModelProfile& model, bool wantGguf)
{
    // A model read from a path names it by its own bytes (the id is made safe to print, and a
    // file name need not be UTF-8): shellQuote writes any byte so that it pastes back exactly.
    const std::string& id = model.localPath.empty() ? model.id : model.localPath;
    const std::filesystem::path p(id);
    const std::string ext = lower(p.extension().string());
    if (ext == ".gguf")
        return id;
    if (!wantGguf && id.find('/') != std::string::npos) {
        if (ext == ".json" || ext == ".safetensors")
            return p.parent_path().string();
        return id;
    }
    return "$MODEL";
}

/// vLLM's --speculative-config of a draft with no path or Hub id: the JSON names the placeholder.
constexpr const char* kDraftPlaceholder = "$DRAFT_MODEL";

/// A word of the command line: $MODEL and $DRAFT_MODEL stay variables to expand, anything else is
/// quoted. A word that holds the placeholder inside it (vLLM's --speculative-config JSON, made
/// with draftArgument) is quoted around it and the variable left in double quotes, so that the
/// shell expands it: '{"model": "'"$DRAFT_MODEL"'", ...}' (before, the whole JSON went into single
/// quotes and vLLM got the text $DRAFT_MODEL). Only the placeholder draftArgument writes, at the
/// position it writes it (the JSON's first string), is left to expand: a path holding the same
/// characters is written by draftArgument as itself and quoted whole.
std::string shellWord(const std::string& s)
{
    if (s == "$MODEL" || s == kDraftPlaceholder)
        return s;
    const std::string head = std::string("{\"model\": \"") + kDraftPlaceholder + "\"";
    if (s.rfind(head, 0) == 0)
        return shellQuote("{\"model\": \"") + "\"" + kDraftPlaceholder + "\"" + shellQuote(s.substr(head.size() - 1));
    return shellQuote(s);
}

// The draft model's argument: its path or Hub id, else the placeholder $DRAFT_MODEL.
std::string draftArgument(const ModelProfile& model, bool wantGguf)
{
    const std::string a = modelArgument(model, wantGguf);
    return a == "$MODEL" ? std::string(kDraftPlaceholder) : a;
}

/// @p s as the body of a JSON string (no quotes around it): '"' and '\' backslashed, bytes below
/// 0x20 and 0x7f as \u00XX (RFC 8259 section 7). Bytes from 0x80 up pass as they are: a path
/// need not be UTF-8, and Python (vLLM's json.loads of its argv, decoded with surrogateescape)
/// gives the same bytes back to open(). Before (review 13, session 4), a draft path holding '"'
/// ended the string and let the file name add keys to --speculative-config.
std::string jsonStringBody(const std::string& s)
{
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || u == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\u%04x", u);
            out += hex;
        } else {
            out += c;
        }
    }
    return out;
}

std::string commandLine(const std::string& program, const std::vector<LaunchFlag>& flags)
{
    std::string env;
    std::string args;
    for (const LaunchFlag& f : flags) {
        if (f.kind == LaunchFlagKind::Environment)
            env += f.name + "=" + shellWord(f.value) + " ";
        else if (f.kind == LaunchFlagKind::Argument)
            args += " " + f.name + (f.value.empty() ? "" : " " + shellWord(f.value));
    }
    return env + program + args;
}

tl::expected<std::string, std::string> vllmKvDtype(const std::string& id)
{
    const std::string k = lower(id);
    if (k == "fp16" || k == "bf16")
        return std::string("auto");
    if (k == "fp8" || k == "fp8_e4m3" || k == "fp8_e5m2" || k == "fp8_per_token_head" || k == "int8_per_token_head"
        || k == "nvfp4")
        return k;
    return tl::unexpected("vLLM has no '" + id
                          + "' KV cache (--kv-cache-dtype takes auto, fp8, fp8_e4m3, fp8_e5m2, fp8_per_token_head, "
                            "int8_per_token_head, nvfp4)");
}

tl::expected<std::string, std::string> llamaCppKvDtype(const std::string& id)
{
    const std::string k = lower(id);
    if (k == "fp16")
        return std::string("f16");
    if (k == "fp32")
        return std::string("f32");
    if (k == "bf16" || k == "q8_0" || k == "q4_0" || k == "q4_1" || k == "iq4_nl" || k == "q5_0" || k == "q5_1")
        return k;
    return tl::unexpected("llama.cpp has no '" + id
                          + "' KV cache (-ctk/-ctv take f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)");
}

tl::expected<std::string, std::string> sglangKvDtype(const std::string& id)
{
    const std::string k = lower(id);
    if (k == "fp16" || k == "bf16")
        return std::string("auto");
    if (k == "fp8" || k == "fp8_e4m3")
        return std::string("fp8_e4m3");
    if (k == "fp8_e5m2")
        return k;
    return tl::unexpected("SGLang has no '" + id + "' KV cache (--kv-cache-dtype takes auto, fp8_e5m2, fp8_e4m3)");
}

tl::expected<std::string, std::string> ollamaKvDtype(const std::string& id)
{
    const std::string k = lower(id);
    if (k == "fp16")
        return std::string("f16");
    if (k == "q8_0" || k == "q4_0")
        return k;
    return tl::unexpected("Ollama has no '" + id + "' KV cache (OLLAMA_KV_CACHE_TYPE takes f16, q8_0, q4_0)");
}

tl::expected<std::string, std::string> tgiKvDtype(const std::string& id)
{
    const std::string k = lower(id);
    if (k == "fp16" || k == "bf16")
        return std::string(); // TGI's default: the model's dtype, no flag
    if (k == "fp8" || k == "fp8_e4m3")
        return std::string("fp8_e4m3fn");
    if (k == "fp8_e5m2")
        return k;
    return tl::unexpected("TGI has no '" + id + "' KV cache (--kv-cache-dtype takes fp8_e4m3fn, fp8_e5m2)");
}

// The value of @p key the plan applied (given, default or derived), or null.
const SettingValue* appliedSetting(const PlanResult& plan, const std::string& key)
{
    for (const SettingValue& v : plan.engineSettings)
        if (v.key == key)
            return &v;
    return nullptr;
}

// The value of @p key when the user set it (--set KEY=VALUE, or the generic option it stands for), or null.
const SettingValue* givenSetting(const PlanResult& plan, const std::string& key)
{
    const SettingValue* v = appliedSetting(plan, key);
    return v && v->given ? v : nullptr;
}

/// The refusal that leaves nothing to launch whatever the flags: the engine cannot load the
/// weight format (plan.refusals, FitLimit::EngineFormat, set by the engine's compatibility rules).
/// The plan's verdict names it when it is the first; the sentence is the verdict's then, so that
/// `flags` says what `plan` says (issue 9 review S1-1: before, flags printed a vllm serve command
/// for q4_k and llama-server for gptq-g128). A KV dtype the engine lacks is refused below, by the
/// engine's flag values (vllmKvDtype, ...), with the values the flag takes.
std::optional<std::string> cannotLoad(const PlanResult& plan)
{
    if (plan.verdict.state == FitState::DoesNotFit && plan.verdict.limit == FitLimit::EngineFormat)
        return plan.verdict.reason;
    for (const EngineRefusal& r : plan.refusals)
        if (r.limit == FitLimit::EngineFormat)
            return r.reason;
    return std::nullopt;
}

bool isQuantizedCache(const std::string& llamaType) { return llamaType != "f16" && llamaType != "f32" && llamaType != "bf16"; }

} // namespace

std::optional<LaunchEngine> launchEngineFor(EngineKind kind)
{
    switch (kind) {
    case EngineKind::Vllm:
        return LaunchEngine::Vllm;
    case EngineKind::LlamaCpp:
        return LaunchEngine::LlamaCpp;
    case EngineKind::SgLang:
        return LaunchEngine::SgLang;
    case EngineKind::Ollama:
        return LaunchEngine::Ollama;
    case EngineKind::Tgi:
        return LaunchEngine::Tgi;
    case EngineKind::TensorRtLlm:
        return LaunchEngine::TensorRtLlm;
    default:
        return std::nullopt;
    }
}

const char* launchEngineName(LaunchEngine engine)
{
    switch (engine) {
    case LaunchEngine::Vllm:
        return "vllm";
    case LaunchEngine::LlamaCpp:
        return "llama.cpp";
    case LaunchEngine::SgLang:
        return "sglang";
    case LaunchEngine::Ollama:
        return "ollama";
    case LaunchEngine::Tgi:
        return "tgi";
    case LaunchEngine::TensorRtLlm:
        return "tensorrt-llm";
    }
    return "?";
}

const char* launchFlagKindName(LaunchFlagKind kind)
{
    switch (kind) {
    case LaunchFlagKind::Argument:
        return "argument";
    case LaunchFlagKind::Environment:
        return "environment";
    case LaunchFlagKind::ModelParameter:
        return "model_parameter";
    }
    return "?";
}

namespace {

// The largest context per user the plan itself computed: its max context for its users (already
// capped at the trained context), or, for a context-only question (one user), its max resident
// tokens capped the same way. Only a plan that carries neither (users not asked, more than one
// sequence) is sized here, by the same capacity rule the planner uses.
std::uint64_t mostContextTokens(const PlanResult& plan, std::uint64_t users)
{
    if (plan.maxContext)
        return *plan.maxContext;
    // A layer split holds the context the engine placed it for in each sequence (splitbill.h), not
    // what the card's pool (empty: the weights do not fit it whole) would give.
    if (const SplitBill split = splitBill(plan); split.partial)
        return split.contextTokensPerSequence;
    std::uint64_t most = users == 1 ? plan.maxResidentTokens : maxContextTokens(plan.pool(), users);
    if (plan.modelContextTokens > 0)
        most = std::min(most, plan.modelContextTokens);
    return most;
}

} // namespace

tl::expected<LaunchPoint, std::string> launchPoint(const PlanResult& plan)
{
    LaunchPoint point;
    point.users = std::max<std::uint64_t>(plan.users, 1);
    std::uint64_t most = mostContextTokens(plan, point.users);
    if (most == 0)
        return tl::unexpected("nothing to launch: " + formatThousands(point.users) + (point.users == 1 ? " user does" : " users do") + " not fit on " + plan.cardId
                              + " (" + plan.reason + ")");
    point.contextTokens = plan.contextTokens > 0 ? std::min(plan.contextTokens, most) : most;
    point.lowered = plan.contextTokens > point.contextTokens;
    return point;
}

tl::expected<LaunchFlags, std::string> launchFlags(const PlanRequest& request, const PlanResult& plan)
{
    const std::optional<LaunchEngine> engine = launchEngineFor(request.engine.kind);
    if (!engine)
        return tl::unexpected("no launch flags for engine '" + request.engine.id
                              + "': Headroom writes them for vllm, llama.cpp, sglang, ollama, tgi and tensorrt-llm");
    if (const std::optional<std::string> why = cannotLoad(plan))
        return tl::unexpected("nothing to launch: " + plan.modelId + " (" + plan.formatId + ") on " + plan.cardId + " under "
                              + request.engine.name + ": " + *why);
    auto point = launchPoint(plan);
    if (!point)
        return tl::unexpected(point.error());

    LaunchFlags out;
    out.engine = *engine;
    out.point = *point;
    const std::string ctx = std::to_string(point->contextTokens);
    const std::string users = std::to_string(point->users);
    const std::string ctxNote = point->lowered
        ? "context per user, lowered from " + std::to_string(plan.contextTokens) + " to the most that fits for " + users
        : std::string("context per user, from the plan");
    const auto add = [&](std::string name, std::string value, LaunchFlagKind kind, std::string note) {
        out.flags.push_back({std::move(name), std::move(value), kind, std::move(note)});
    };
    const LaunchFlagKind arg = LaunchFlagKind::Argument;

    switch (*engine) {
    case LaunchEngine::Vllm: {
        auto kv = vllmKvDtype(plan.kvDtypeId);
        if (!kv)
            return tl::unexpected(kv.error());
        add("--max-model-len", ctx, arg, ctxNote);
        if (const SettingValue* v = givenSetting(plan, "max-num-seqs"))
            add("--max-num-seqs", v->text, arg, "concurrent sequences, as set");
        else
            add("--max-num-seqs", users, arg, "concurrent sequences");
        // The fraction the plan applied (--set gpu-memory-utilization, else the profile's).
        double fraction = request.engine.memoryFraction;
        if (const SettingValue* v = appliedSetting(plan, "gpu-memory-utilization"); v && v->number > 0)
            fraction = v->number;
        add("--gpu-memory-utilization", formatFixed(fraction, 2), arg, "fraction of the card total the plan gave vLLM");
        add("--kv-cache-dtype", *kv, arg, *kv == "auto" ? "auto = the model's dtype (" + plan.kvDtypeId + ")" : "fp8 cache");
        add("--tensor-parallel-size", std::to_string(plan.tensorParallel), arg, "GPUs per replica");
        if (plan.pipelineParallel > 1)
            add("--pipeline-parallel-size", std::to_string(plan.pipelineParallel), arg, "pipeline stages");
        // --cpu-offload-gb as the plan applied it (engines/vllmoffload.h); not when the version
        // ignores it (no offload figure), so the command says what the plan priced.
        for (const EngineFigure& f : plan.engineFigures)
            if (f.name == "cpu_offloaded_bytes")
                for (const SettingValue& v : plan.engineSettings)
                    if (v.key == "cpu-offload-gb")
                        add("--cpu-offload-gb", v.text, arg,
                            "GiB of weights per GPU in pinned host memory (" + formatBytes(Bytes{static_cast<std::uint64_t>(f.value)})
                                + " moved, whole parameters)");
        // The environment the plan priced, when the user chose it: the sampler path
        // (engines/vllmmemory.h flashInferSampler) and the CUDA-graph estimate.
        for (const SettingValue& v : plan.engineSettings) {
            if (!v.given)
                continue;
            if (v.key == "VLLM_USE_FLASHINFER_SAMPLER")
                add(v.key, v.integer != 0 ? "1" : "0", LaunchFlagKind::Environment,
                    "the sampler's top-k/top-p path the plan priced (FlashInfer 13 B, PyTorch-native 36 B per logits entry)");
            if (v.key == "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS")
                add(v.key, v.integer != 0 ? "1" : "0", LaunchFlagKind::Environment,
                    v.integer != 0 ? "the pool is charged for the CUDA-graph estimate, as planned"
                                   : "no CUDA-graph estimate charged to the pool, as planned");
        }
        // The other sizing settings the user set, in vLLM's spelling (vllm/engine/arg_utils.py
        // EngineArgs.add_cli_args: --max-num-batched-tokens, --block-size, --swap-space,
        // --kv-cache-memory-bytes, --enforce-eager, --enable-chunked-prefill / --no-enable-chunked-prefill).
        for (const SettingValue& v : plan.engineSettings) {
            if (!v.given)
                continue;
            if (v.key == "max-num-batched-tokens")
                add("--max-num-batched-tokens", v.text, arg, "tokens of one scheduler step, as planned (the profiling run)");
            else if (v.key == "block-size")
                add("--block-size", v.text, arg, "tokens per KV block, as planned");
            else if (v.key == "swap-space")
                add("--swap-space", v.text, arg, "GiB of host swap per GPU, as set");
            else if (v.key == "kv-cache-memory-bytes")
                add("--kv-cache-memory-bytes", std::to_string(v.integer), arg, "KV cache size in bytes, as planned");
            else if (v.key == "enforce-eager" && v.integer != 0)
                add("--enforce-eager", "", arg, "no CUDA graphs, as planned");
            else if (v.key == "enable-chunked-prefill" && v.integer != 0)
                add("--enable-chunked-prefill", "", arg, "chunked prefill, as planned");
            else if (v.key == "enable-chunked-prefill") {
                // Off: the dataclass-built parser (arg_utils.py get_kwargs, from the 0.9 line) makes a
                // bool field an argparse.BooleanOptionalAction (--no-enable-chunked-prefill); before, the
                // flag was a StoreBoolean with an optional value (--enable-chunked-prefill False).
                if (compareVersions(plan.engineVersion, "0.9") >= 0)
                    add("--no-enable-chunked-prefill", "", arg, "no chunked prefill, as planned");
                else
                    add("--enable-chunked-prefill", "False", arg, "no chunked prefill, as planned");
            }
        }
        const auto [quantization, quantNote] = vllmQuantization(request.model, plan.formatId);
        if (!quantization.empty())
            add("--quantization", quantization, arg, quantNote);
        else if (!quantNote.empty())
            out.notes.push_back(quantNote);
        if (request.draft)
            add("--speculative-config",
                "{\"model\": \"" + jsonStringBody(draftArgument(request.draft->model, false)) + "\", \"num_speculative_tokens\": 4}", arg,
                "draft model " + plan.draftModelId + ", priced in the plan; 4 draft tokens a step (set to taste)");
        out.command = commandLine("vllm serve " + shellWord(modelArgument(request.model, false)), out.flags);
        break;
    }
    case LaunchEngine::LlamaCpp: {
        auto kv = llamaCppKvDtype(plan.kvDtypeId);
        if (!kv)
            return tl::unexpected(kv.error());
        // llama-context.cpp refuses a quantized V cache without flash attention.
        if (isQuantizedCache(*kv) && !plan.flashAttention)
            return tl::unexpected("llama.cpp needs flash attention (-fa on) for a quantized V cache ('" + *kv
                                  + "'): plan with --flash-attention, or with an f16 cache");
        std::uint64_t total = 0;
        try {
            total = checkedMul(point->contextTokens, point->users, "total context");
        } catch (const OverflowError& e) {
            return tl::unexpected(std::string(e.what()));
        }
        add("-c", std::to_string(total), arg, "total context: " + users + " slots x " + ctx + " tokens (llama-server divides -c among -np slots)");
        add("-np", users, arg, "parallel slots (concurrent sequences)");
        std::string gpuLayers = "999";
        for (const EngineFigure& f : plan.engineFigures)
            if (f.name == "offload_gpu_layers")
                gpuLayers = std::to_string(static_cast<std::uint64_t>(f.value));
        add("-ngl", gpuLayers, arg,
            gpuLayers == "999" ? "every layer on the GPU, as planned"
                               : (gpuLayers == "0" ? "no layer on the GPU: llama.cpp on the CPU, as planned"
                                                   : "layers on the GPU, as the plan splits them (" + gpuLayers + ")"));
        for (const EngineFigure& f : plan.engineFigures)
            if (f.name == "fit_tensor_overrides" && f.printed.rfind("-ot ", 0) == 0)
                add("-ot", f.printed.substr(4), arg,
                    "the FFN tensors llama.cpp --fit sends to the host or the next GPU (llama-fit-params): with -ngl "
                    "given --fit places nothing itself");
        // -ot before --n-cpu-moe: llama.cpp appends the patterns of both in command-line order and the
        // first match wins (common/arg.cpp, src/llama-model.cpp), the order the plan priced.
        for (const SettingValue& sv : plan.engineSettings)
            if (sv.key == "override-tensor" && !sv.text.empty())
                add("-ot", sv.text, arg, "the tensors these patterns match go to the buffer named, as planned");
        for (const SettingValue& sv : plan.engineSettings) {
            if (sv.key == "n-cpu-moe" && sv.text != "0" && !sv.text.empty())
                add("--n-cpu-moe", sv.text, arg, "the routed experts of the first " + sv.text + " layers stay in host memory");
            if (sv.key == "no-kv-offload" && sv.text == "true")
                add("--no-kv-offload", "", arg, "every layer's KV cache in host memory, as planned");
            if (sv.key == "tensor-split" && !sv.text.empty())
                add("--tensor-split", sv.text, arg, "each GPU's share of the offloaded layers, as planned");
        }
        // The batch sizes and cache layout the plan priced, in llama.cpp's spelling (common/arg.cpp:
        // -b/--batch-size, -ub/--ubatch-size, --swa-full, -kvu/--kv-unified, -fit/--fit,
        // -fitt/--fit-target, -fitc/--fit-ctx, --no-repack): -b when set, -ub when set or planned
        // (the compute buffer is sized by it), the rest when set.
        if (const SettingValue* v = givenSetting(plan, "batch-size"))
            add("-b", v->text, arg, "logical batch, as planned");
        if (givenSetting(plan, "ubatch-size") || request.ubatchTokens)
            add("-ub", std::to_string(plan.ubatchTokens), arg, "physical batch: the compute buffer the plan priced");
        for (const SettingValue& sv : plan.engineSettings) {
            if (!sv.given)
                continue;
            if (sv.key == "swa-full" && sv.integer != 0)
                add("--swa-full", "", arg, "full-size cache for sliding-window layers, as planned");
            else if (sv.key == "kv-unified" && sv.integer != 0)
                add("--kv-unified", "", arg, "one KV buffer shared by all slots, as planned");
            else if (sv.key == "fit")
                add("--fit", sv.text, arg, "llama.cpp's own placement, as set");
            else if (sv.key == "fit-target")
                add("--fit-target", sv.text, arg, "MiB --fit leaves free on each GPU, as planned");
            else if (sv.key == "fit-ctx")
                add("--fit-ctx", sv.text, arg, "the least context --fit keeps, as planned");
            else if (sv.key == "no-repack" && sv.integer != 0)
                add("--no-repack", "", arg, "no repacked copy of the host weights, as planned");
        }
        add("-ctk", *kv, arg, "K cache type");
        // -ctv as the plan priced it (cache-type-v given apart from -ctk), else the K type.
        const SettingValue* v = appliedSetting(plan, "cache-type-v");
        add("-ctv", v && !v->text.empty() ? v->text : *kv, arg, "V cache type");
        if (request.draft)
            add("-md", draftArgument(request.draft->model, true), arg,
                "draft model " + plan.draftModelId + " for speculative decoding, priced in the plan (its cache f16)");
        add("-fa", plan.flashAttention ? "on" : "off", arg,
            plan.flashAttention ? "flash attention, as planned" : "no flash attention: full attention scores counted");
        if (plan.tensorParallel * plan.pipelineParallel > 1)
            out.notes.push_back("the plan splits the model over " + std::to_string(plan.tensorParallel * plan.pipelineParallel)
                                + " GPUs: add --split-mode and --tensor-split");
        out.command = commandLine("llama-server -m " + shellWord(modelArgument(request.model, true)), out.flags);
        break;
    }
    case LaunchEngine::SgLang: {
        auto kv = sglangKvDtype(plan.kvDtypeId);
        if (!kv)
            return tl::unexpected(kv.error());
        // The fraction the plan applied (given, or SGLang's rule of the version from the chunk and graph batch).
        double fraction = request.engine.memoryFraction > 0
            ? request.engine.memoryFraction
            : sglangMemFractionStatic(plan.cardTotalBytes, plan.tensorParallel, plan.pipelineParallel);
        if (const SettingValue* v = appliedSetting(plan, "mem-fraction-static"); v && v->number > 0)
            fraction = v->number;
        add("--context-length", ctx, arg, ctxNote);
        if (const SettingValue* v = givenSetting(plan, "max-running-requests"))
            add("--max-running-requests", v->text, arg, "concurrent requests, as set");
        else
            add("--max-running-requests", users, arg, "concurrent requests");
        add("--mem-fraction-static", formatFixed(fraction, 3), arg, "weights + KV pool share of the card, as planned");
        // The sizing settings the plan was asked with, so that the engine sizes its pool the same way.
        for (const SettingValue& v : plan.engineSettings) {
            if (!v.given)
                continue;
            if (v.key == "chunked-prefill-size")
                add("--chunked-prefill-size", v.text, arg, "prefill chunk, as planned (in SGLang's reserved-memory rule)");
            else if (v.key == "cuda-graph-max-bs")
                add("--cuda-graph-max-bs", v.text, arg, "largest CUDA-graph batch, as planned (in the reserved-memory rule)");
            else if (v.key == "max-total-tokens")
                add("--max-total-tokens", v.text, arg, "KV pool cap, as planned");
            else if (v.key == "page-size")
                add("--page-size", v.text, arg, "tokens per KV page, as planned");
        }
        if (*kv != "auto")
            add("--kv-cache-dtype", *kv, arg, "fp8 cache");
        if (plan.tensorParallel > 1)
            add("--tp-size", std::to_string(plan.tensorParallel), arg, "GPUs per replica");
        out.command = commandLine("python -m sglang.launch_server --model-path " + shellWord(modelArgument(request.model, false)), out.flags);
        break;
    }
    case LaunchEngine::Ollama: {
        auto kv = ollamaKvDtype(plan.kvDtypeId);
        if (!kv)
            return tl::unexpected(kv.error());
        const LaunchFlagKind env = LaunchFlagKind::Environment;
        add("OLLAMA_NUM_PARALLEL", users, env, "parallel requests per model; memory scales with num_ctx x this");
        add("OLLAMA_CONTEXT_LENGTH", ctx, env, "server default context when a request names none");
        add("OLLAMA_FLASH_ATTENTION", plan.flashAttention ? "1" : "0", env,
            plan.flashAttention ? "flash attention, as planned" : "no flash attention, as planned");
        add("OLLAMA_KV_CACHE_TYPE", *kv, env, "KV cache type");
        // OLLAMA_GPU_OVERHEAD: bytes kept free per GPU, read as a Uint64 of bytes (envconfig/config.go
        // GpuOverhead, ollama fb3076099).
        if (const SettingValue* v = givenSetting(plan, "OLLAMA_GPU_OVERHEAD"))
            add("OLLAMA_GPU_OVERHEAD", std::to_string(v->integer), env, "bytes kept free on each GPU, as planned");
        add("num_ctx", ctx, LaunchFlagKind::ModelParameter, ctxNote);
        if (const SettingValue* v = givenSetting(plan, "num_gpu"))
            add("num_gpu", v->text, LaunchFlagKind::ModelParameter, "layers on the GPU, as planned");
        if (*kv != "f16" && !plan.flashAttention)
            out.notes.push_back("Ollama applies OLLAMA_KV_CACHE_TYPE only with OLLAMA_FLASH_ATTENTION=1");
        std::string modelfile = "PARAMETER num_ctx " + ctx;
        std::string options = "\"num_ctx\": " + ctx;
        if (const SettingValue* v = givenSetting(plan, "num_gpu")) {
            modelfile += "\n# per model (Modelfile): PARAMETER num_gpu " + v->text;
            options += ", \"num_gpu\": " + v->text;
        }
        out.command = commandLine("ollama serve", out.flags) + "\n# per model (Modelfile): " + modelfile
            + "\n# per request (API): \"options\": {" + options + "}";
        break;
    }
    case LaunchEngine::Tgi: {
        auto kv = tgiKvDtype(plan.kvDtypeId);
        if (!kv)
            return tl::unexpected(kv.error());
        // The launcher refuses max-input-tokens >= max-total-tokens; the plan's prefill sized its warm-up.
        std::uint64_t input = point->contextTokens > 1 ? point->contextTokens - 1 : 1;
        if (const SettingValue* v = appliedSetting(plan, "max-input-tokens"); v && v->integer < point->contextTokens)
            input = v->integer;
        add("--max-total-tokens", ctx, arg, ctxNote);
        add("--max-input-tokens", std::to_string(input), arg, "prompt tokens per request (below --max-total-tokens)");
        add("--max-batch-prefill-tokens", std::to_string(plan.ubatchTokens), arg, "the warm-up prefill the plan priced");
        add("--max-concurrent-requests", users, arg, "concurrent requests");
        if (const SettingValue* v = appliedSetting(plan, "cuda-memory-fraction"); v && v->given)
            add("--cuda-memory-fraction", v->text, arg, "share of the card TGI may use, as planned");
        if (!kv->empty())
            add("--kv-cache-dtype", *kv, arg, "fp8 cache");
        if (plan.tensorParallel > 1)
            add("--num-shard", std::to_string(plan.tensorParallel), arg, "GPUs per replica");
        out.command = commandLine("text-generation-launcher --model-id " + shellWord(modelArgument(request.model, false)), out.flags);
        break;
    }
    case LaunchEngine::TensorRtLlm: {
        add("--max_seq_len", ctx, arg, ctxNote);
        if (const SettingValue* v = givenSetting(plan, "max_batch_size"))
            add("--max_batch_size", v->text, arg, "concurrent requests, as set (a build limit for a TensorRT engine)");
        else
            add("--max_batch_size", users, arg, "concurrent requests (a build limit for a TensorRT engine)");
        add("--max_num_tokens", std::to_string(plan.ubatchTokens), arg, "tokens of one forward pass, as planned");
        if (const SettingValue* v = givenSetting(plan, "max_beam_width"))
            add("--max_beam_width", v->text, arg, "beams per request, as planned");
        double fraction = request.engine.memoryFraction;
        if (const SettingValue* v = appliedSetting(plan, "free_gpu_memory_fraction"); v && v->number > 0)
            fraction = v->number;
        add("--kv_cache_free_gpu_memory_fraction", formatFixed(fraction, 2), arg, "share of the memory free after loading the KV cache takes");
        if (plan.tensorParallel > 1)
            add("--tp_size", std::to_string(plan.tensorParallel), arg, "GPUs per replica");
        if (plan.pipelineParallel > 1)
            add("--pp_size", std::to_string(plan.pipelineParallel), arg, "pipeline stages");
        out.command = commandLine("trtllm-serve " + shellWord(modelArgument(request.model, false)), out.flags);
        // KvCacheConfig fields have no trtllm-serve flag: they go in the --extra_llm_api_options YAML.
        std::string yaml;
        if (const SettingValue* v = appliedSetting(plan, "tokens_per_block"))
            yaml += " tokens_per_block: " + v->text + ",";
        if (const SettingValue* v = appliedSetting(plan, "max_tokens"); v && v->given)
            yaml += " max_tokens: " + v->text + ",";
        if (plan.kvDtypeId == "fp8" || plan.kvDtypeId == "fp8_e4m3")
            yaml += " dtype: fp8,";
        if (!yaml.empty()) {
            yaml.pop_back();
            out.notes.push_back("--extra_llm_api_options FILE with kv_cache_config: {" + yaml + " }");
        }
        break;
    }
    }
    const bool quantizesAtLoad = std::any_of(out.flags.begin(), out.flags.end(),
                                             [](const LaunchFlag& f) { return f.name == "--quantization"; });
    if (*engine != LaunchEngine::LlamaCpp && modelArgument(request.model, false) == "$MODEL")
        out.notes.push_back("set MODEL to the " + request.model.id + " checkpoint in "
                            + (quantizesAtLoad ? request.model.defaultFormat + " weights (vLLM quantizes it)" : plan.formatId + " weights"));
    if (*engine == LaunchEngine::LlamaCpp && modelArgument(request.model, true) == "$MODEL")
        out.notes.push_back("set MODEL to the " + request.model.id + " GGUF file in " + plan.formatId + " weights");
    return out;
}

std::string shellQuote(std::string_view word)
{
    // The characters POSIX sh never treats specially in a word (Python's shlex.quote keeps the same set).
    const auto plain = [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '@' || c == '%' || c == '+' || c == '=' || c == ':' || c == ','
               || c == '.' || c == '/' || c == '-';
    };
    if (!word.empty() && std::all_of(word.begin(), word.end(), [&](char c) { return plain(static_cast<unsigned char>(c)); }))
        return std::string(word);
    if (word.empty())
        return "''";
    // Runs of printable characters (and newlines) in single quotes; runs of other bytes as
    // "$(printf '\ooo')": POSIX printf decodes octal escapes in its format, and such a run holds
    // no newline, so the command substitution strips nothing.
    std::string out;
    bool inQuotes = false;
    for (std::size_t i = 0; i < word.size();) {
        const std::size_t len = word[i] == '\n' ? 1 : printableLength(word, i);
        if (len > 0) {
            if (!inQuotes)
                out += '\'';
            inQuotes = true;
            if (word[i] == '\'')
                out += "'\\''";
            else
                out.append(word, i, len);
            i += len;
            continue;
        }
        if (inQuotes)
            out += '\'';
        inQuotes = false;
        out += "\"$(printf '";
        for (; i < word.size() && word[i] != '\n' && printableLength(word, i) == 0; ++i) {
            char octal[8];
            std::snprintf(octal, sizeof octal, "\\%03o", static_cast<unsigned char>(word[i]));
            out += octal;
        }
        out += "')\"";
    }
    if (inQuotes)
        out += '\'';
    return out;
}

} // namespace headroom
