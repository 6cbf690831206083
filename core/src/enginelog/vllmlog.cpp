// vLLM start-up lines (V1: v1/worker/gpu_worker.py, v1/worker/gpu_model_runner.py,
// v1/core/kv_cache_utils.py; V0: worker/worker.py "Memory profiling results", executor "# GPU
// blocks"), at the versions of tests/data/engine-logs (0.2.5 .. 0.19.0).
#include "enginelogshared.h"

#include <algorithm>
#include <cstdlib>

namespace headroom::enginelog {

namespace {

bool has(std::string_view s, std::string_view k)
{
    return s.find(k) != std::string_view::npos;
}

void cardFrom(Parser& p, const std::optional<Scanned>& total, const std::optional<Scanned>& free)
{
    if (const auto bytes = wholeNumber(total); bytes && !p.log().cardTotalBytes)
        p.log().cardTotalBytes = Bytes{*bytes};
    if (const auto bytes = wholeNumber(free); bytes && !p.log().cardFreeBytes)
        p.log().cardFreeBytes = Bytes{*bytes};
}

} // namespace

void readVllmLine(Parser& p, std::string_view l)
{
    if (auto v = l.find("vLLM API server version "); v != std::string_view::npos) {
        p.vote("vllm", 3);
        p.version(wordAfter(l, "vLLM API server version "), "vllm");
    }
    if (auto v = l.find("LLM engine (v"); v != std::string_view::npos) {
        p.vote("vllm", 3);
        std::string ver = wordAfter(l, "LLM engine (v");
        p.version(ver, "vllm");
        if (has(l, "V1 LLM engine"))
            p.generation("V1");
    }
    // "Initializing a V1 LLM engine (v0.19.0) with config: model='...', ..., max_seq_len=8192, ...,
    // tensor_parallel_size=1, pipeline_parallel_size=1, ..., kv_cache_dtype=auto, ..." (v1/engine/core.py):
    // the settings the engine runs with, whatever the command line left to defaults.
    if (const auto at = l.find(" with config: "); at != std::string_view::npos && has(l, "LLM engine (v")) {
        const std::string_view config = l.substr(at);
        const std::pair<const char*, const char*> keys[] = {
            {"model=", "model"}, {"max_seq_len=", "max-model-len"}, {"tensor_parallel_size=", "tensor-parallel-size"},
            {"pipeline_parallel_size=", "pipeline-parallel-size"}, {"kv_cache_dtype=", "kv-cache-dtype"},
            {"enforce_eager=", "enforce-eager"}, {"quantization=", "quantization"}, {"dtype=", "dtype"}};
        for (const auto& [key, setting] : keys) {
            // " dtype=" must not match "kv_cache_dtype=": the key starts after ' ' or ','.
            std::size_t k = config.find(std::string(" ") + key);
            if (k == std::string_view::npos)
                continue;
            std::string value = wordAfter(config.substr(k), key);
            if (!value.empty() && value.front() == '\'')
                value.erase(value.begin());
            if (value.starts_with("torch."))
                value.erase(0, 6);
            if (value == "False" || value == "True")
                value = value == "True" ? "true" : "false";
            if (!value.empty() && value != "None")
                p.setting(setting, value);
        }
    }
    if (const auto at = l.find("non-default args: {"); at != std::string_view::npos) {
        p.vote("vllm", 2);
        readKeyValues(p, l.substr(at + 18));
    }
    if (const auto at = l.find("vllm serve "); at != std::string_view::npos) {
        p.vote("vllm", 2);
        readCommandLineFlags(p, l, at + 11);
        // "VLLM_USE_V1=1 vllm serve ..." (vllm PR 12569): the environment picks the engine (vllm/envs.py).
        if (const auto env = l.substr(0, at).find("VLLM_USE_V1="); env != std::string_view::npos)
            p.setting("VLLM_USE_V1", wordAfter(l.substr(0, at), "VLLM_USE_V1="));
    }
    if (has(l, "max_num_batched_tokens=") && has(l, "Chunked prefill")) {
        p.vote("vllm");
        if (auto n = numberAfter(l, "max_num_batched_tokens="))
            p.setting("max-num-batched-tokens", n->printed);
    }
    if (has(l, "worker init memory snapshot:")) {
        p.vote("vllm", 2);
        p.generation("V1");
        cardFrom(p, sizeAfter(l, "total_memory="), sizeAfter(l, "free_memory="));
        p.bytes("init_non_torch", sizeAfter(l, "non_torch_memory="));
        p.bytes("init_cuda_memory", sizeAfter(l, "cuda_memory="));
    }
    if (has(l, "worker requested memory:")) {
        p.vote("vllm", 2);
        p.bytes("requested_memory", sizeAfter(l, "worker requested memory:"));
    }
    if (has(l, "Model loading took ")) {
        p.vote("vllm", 2);
        p.bytes("weights", sizeAfter(l, "Model loading took "));
    }
    if (has(l, "Loading model weights took ")) {
        p.vote("vllm", 2);
        p.bytes("weights", sizeAfter(l, "Loading model weights took "));
    }
    if (has(l, "Estimated CUDA graph memory:")) {
        p.vote("vllm", 2);
        p.bytes("cuda_graph_estimate", sizeAfter(l, "Estimated CUDA graph memory:"));
    }
    if (has(l, "Available KV cache memory:")) {
        p.vote("vllm", 2);
        p.generation("V1");
        p.bytes("available_kv_cache", sizeAfter(l, "Available KV cache memory:"));
    }
    if (has(l, "GPU KV cache size:")) {
        p.vote("vllm", 2);
        p.generation("V1");
        p.count("kv_cache_tokens", numberAfter(l, "GPU KV cache size:"), LogUnit::Tokens);
    }
    if (const auto at = l.find("Maximum concurrency for "); at != std::string_view::npos) {
        p.vote("vllm", 2);
        const auto len = scanNumber(l, at + 24);
        const auto x = numberAfter(l, "tokens per request:");
        if (const auto tokens = wholeNumber(len))
            p.setting("max-model-len", std::to_string(*tokens));
        p.count("max_concurrency", x, LogUnit::Ratio);
    }
    if (has(l, "Graph capturing finished in")) {
        p.vote("vllm", 2);
        p.bytes("cuda_graph_captured", sizeAfter(l, ", took "));
    }
    // v1/worker/gpu_worker.py determine_available_memory (v0.19.0): "Memory profiling takes S
    // seconds. Total non KV cache memory: X GiB; torch peak memory increase: A GiB; non-torch
    // forward increase memory: N GiB; weights memory: W GiB."
    if (has(l, "Total non KV cache memory:")) {
        p.vote("vllm", 2);
        p.bytes("non_kv_cache", sizeAfter(l, "Total non KV cache memory:"));
        p.bytes("activation_peak", sizeAfter(l, "torch peak memory increase:"));
        p.bytes("non_torch", sizeAfter(l, "non-torch forward increase memory:"));
    }
    // compile_or_warm_up_model (v0.19.0): "Free memory on device (F/T GiB) on startup. Desired GPU
    // memory utilization is (U, R GiB). Actual usage is W GiB for weight, A GiB for peak
    // activation, N GiB for non-torch memory, and G GiB for CUDAGraph memory. Replace
    // gpu_memory_utilization config with `--kv-cache-memory=B1` (...) to fit into requested memory,
    // or `--kv-cache-memory=B2` (...) to fully utilize gpu memory." (later versions print "GiB for
    // consumed memory (weights + non-torch)" instead of the weight and non-torch terms).
    if (const auto at = l.find("Free memory on device ("); at != std::string_view::npos) {
        p.vote("vllm", 2);
        // "78.68/79.19 GiB": the unit follows the total.
        const auto free = scanNumber(l, at + 23);
        const auto slash = free ? l.find('/', at + 23) : std::string_view::npos;
        const auto total = slash == std::string_view::npos ? std::nullopt : sizeAt(l, slash + 1);
        if (free && total) {
            const auto number = scanNumber(l, slash + 1);
            Scanned f = *free;
            f.value = number && number->value > 0 ? free->value * (total->value / number->value) : 0;
            f.printed = free->printed + " GiB";
            cardFrom(p, total, f);
            p.bytes("card_free_at_start", f);
        }
        if (const auto u = l.find("Desired GPU memory utilization is ("); u != std::string_view::npos)
            if (const auto v = scanNumber(l, u + 35))
                p.setting("gpu-memory-utilization", v->printed);
        if (const auto w = l.find("Actual usage is "); w != std::string_view::npos) {
            const std::string_view usage = l.substr(w);
            const auto before = [&](std::string_view what) -> std::optional<Scanned> {
                const auto e = usage.find(what);
                if (e == std::string_view::npos)
                    return std::nullopt;
                const auto b = usage.rfind(", ", e) == std::string_view::npos ? 0 : usage.rfind(", ", e);
                const auto start = usage.find_first_of("0123456789", b);
                return start == std::string_view::npos || start > e ? std::nullopt : sizeAt(usage, start);
            };
            if (!p.log().find("activation_peak"))
                p.bytes("activation_peak", before(" for peak activation"));
            if (!p.log().find("non_torch"))
                p.bytes("non_torch", before(" for non-torch memory"));
            if (!p.log().find("cuda_graph_captured"))
                p.bytes("cuda_graph_captured", before(" for CUDAGraph memory"));
        }
        if (const auto a = l.find("--kv-cache-memory="); a != std::string_view::npos) {
            p.count("kv_cache_memory_to_requested", scanNumber(l, a + 18), LogUnit::Bytes);
            if (const auto b = l.find("--kv-cache-memory=", a + 18); b != std::string_view::npos && has(l, "to fully utilize"))
                p.count("kv_cache_memory_to_gpu", scanNumber(l, b + 18), LogUnit::Bytes);
        }
    }
    if (has(l, "GPU blocks:")) {
        p.vote("vllm", 2);
        p.count("num_gpu_blocks", numberAfter(l, "GPU blocks:"), LogUnit::Blocks);
        p.count("num_cpu_blocks", numberAfter(l, "CPU blocks:"), LogUnit::Blocks);
    }
    // V0 worker/worker.py determine_num_available_blocks from v0.6.6 to the end of V0 (v0.7.3,
    // v0.8.5), and V1 v1/worker/gpu_worker.py in v0.8: one message of three lines, each with the
    // logger's prefix: "Memory profiling takes S seconds", "the current vLLM instance can use
    // total_gpu_memory (T GiB) x gpu_memory_utilization (U) = R GiB", "model weights take W GiB;
    // non_torch_memory takes N GiB; PyTorch activation peak memory takes A GiB; the rest of the
    // memory reserved for KV Cache is K GiB." (V0 then prints "# cuda blocks: N, # CPU blocks: M").
    // The file in the prefix says which engine: worker.py is V0 (the rules of vllm-0.6), gpu_worker.py
    // V1 at 0.8 (vllm-0.9's rules, which keep v0.8's non-torch accounting).
    // (v0.9 on print "Memory profiling takes S seconds. Total non KV cache memory: ..." instead: read below.)
    const bool oneLineProfile = (has(l, "Memory profiling takes ") && !has(l, "Total non KV cache memory")) ||
                                has(l, "the current vLLM instance can use total_gpu_memory (") ||
                                (has(l, "model weights take ") && has(l, "; non_torch_memory takes "));
    if (oneLineProfile) {
        p.vote("vllm", 3);
        if (has(l, "gpu_worker.py")) {
            p.generation("V1 (0.8)");
            if (p.log().impliedVersion.empty())
                p.log().impliedVersion = "0.8.5";
        } else if (has(l, "worker.py")) {
            p.generation("V0 (0.6.6+)");
            if (p.log().impliedVersion.empty())
                p.log().impliedVersion = "0.7.3";
        }
        p.understood();
        if (const auto at = l.find("the current vLLM instance can use total_gpu_memory ("); at != std::string_view::npos) {
            cardFrom(p, sizeAt(l, at + 52), std::nullopt);
            if (auto u = numberAfter(l, "gpu_memory_utilization ("))
                p.setting("gpu-memory-utilization", u->printed);
            p.bytes("requested_memory", sizeAfter(l, ") = "));
        }
        if (has(l, "; non_torch_memory takes ")) {
            p.bytes("weights", sizeAfter(l, "model weights take "));
            p.bytes("non_torch", sizeAfter(l, "non_torch_memory takes "));
            p.bytes("activation_peak", sizeAfter(l, "PyTorch activation peak memory takes "));
            p.bytes("available_kv_cache", sizeAfter(l, "the rest of the memory reserved for KV Cache is "));
        }
    }
    // V0 executor_base.py from v0.7: "# cuda blocks: N, # CPU blocks: M" (the platform's device
    // name in place of "GPU"; "# GPU blocks" before).
    if (!has(l, "GPU blocks:") && has(l, " blocks: ") && has(l, ", # CPU blocks:"))
        if (const auto hash = l.find("# "); hash != std::string_view::npos && hash < l.find(" blocks: ")) {
            p.vote("vllm", 2);
            p.count("num_gpu_blocks", numberAfter(l, " blocks: "), LogUnit::Blocks);
            p.count("num_cpu_blocks", numberAfter(l, "CPU blocks:"), LogUnit::Blocks);
        }
    // V0 0.6.x: one line of key=value.
    if (has(l, "Memory profiling results:") && has(l, "total_gpu_memory=")) {
        p.vote("vllm", 3);
        p.generation("V0 (0.6.x)");
        if (p.log().impliedVersion.empty())
            p.log().impliedVersion = "0.6.4";
        cardFrom(p, sizeAfter(l, "total_gpu_memory="), std::nullopt);
        p.bytes("initial_memory_usage", sizeAfter(l, "initial_memory_usage="));
        p.bytes("peak_torch", sizeAfter(l, "peak_torch_memory="));
        p.bytes("non_torch", sizeAfter(l, "non_torch_memory="));
        p.bytes("available_kv_cache", sizeAfter(l, "kv_cache_size="));
        if (auto u = numberAfter(l, "gpu_memory_utilization="))
            p.setting("gpu-memory-utilization", u->printed);
    } else if (has(l, "Memory profiling results:")) {
        p.vote("vllm", 3);
        p.generation("V0 (0.6.5+)");
        if (p.log().impliedVersion.empty())
            p.log().impliedVersion = "0.6.5";
        p.understood();
    }
    // V0 0.6.5: the same results as a table, one line each.
    if ((has(l, "worker.py") || has(l, "gpu_worker.py")) && !oneLineProfile) {
        if (const auto at = l.find("total_gpu_memory "); at != std::string_view::npos)
            cardFrom(p, sizeAt(l, at + 17), std::nullopt);
        if (const auto at = l.find("] gpu_memory_utilization "); at != std::string_view::npos)
            if (auto u = scanNumber(l, at + 25))
                p.setting("gpu-memory-utilization", u->printed);
        if (const auto at = l.find("the current vLLM instance can use "); at != std::string_view::npos)
            p.bytes("requested_memory", sizeAt(l, at + 34));
        if (const auto at = l.find("model weights take "); at != std::string_view::npos)
            p.bytes("weights", sizeAt(l, at + 19));
        if (const auto at = l.find("] non_torch_memory "); at != std::string_view::npos)
            p.bytes("non_torch", sizeAt(l, at + 19));
        if (const auto at = l.find("PyTorch activation peak memory "); at != std::string_view::npos)
            p.bytes("activation_peak", sizeAt(l, at + 31));
        if (const auto at = l.find("available_kv_cache_memory "); at != std::string_view::npos)
            p.bytes("available_kv_cache", sizeAt(l, at + 26));
    }
    if (has(l, "is larger than the maximum number of tokens that can be stored in KV cache (")) {
        p.vote("vllm", 2);
        p.count("kv_cache_tokens", numberAfter(l, "stored in KV cache ("), LogUnit::Tokens);
    }
}

} // namespace headroom::enginelog
