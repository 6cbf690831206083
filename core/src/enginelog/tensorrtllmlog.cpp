// TensorRT-LLM runtime lines ([TensorRT-LLM][INFO] ..., cpp/tensorrt_llm/batch_manager
// kvCacheManager and the PyTorch executor's _util.py) at 0.5 .. 0.19.
#include "enginelogshared.h"

namespace headroom::enginelog {

void readTensorRtLlmLine(Parser& p, std::string_view l)
{
    const auto has = [&](std::string_view k) { return l.find(k) != std::string_view::npos; };
    if (has("[TensorRT-LLM]"))
        p.vote("tensorrt-llm", 2);
    if (has("TensorRT-LLM version: ")) {
        p.vote("tensorrt-llm", 2);
        p.version(wordAfter(l, "TensorRT-LLM version: "), "tensorrt-llm");
    }
    // A build command (trtllm-build from 0.8, examples/MODEL/build.py before) gives the engine's
    // build limits; its continuation lines ("  --max_batch_size 2048 \\") follow.
    const auto endsWithBackslash = [&] {
        const auto last = l.find_last_not_of(" \t");
        return last != std::string_view::npos && l[last] == '\\';
    };
    if (has("[TensorRT-LLM]"))
        p.commandContinues = false; // a runtime line ends any command
    if (p.commandContinues) {
        readCommandLineFlags(p, l, 0);
        p.commandContinues = endsWithBackslash();
    } else if (const auto at = l.find("trtllm-build"); at != std::string_view::npos) {
        p.vote("tensorrt-llm", 2);
        readCommandLineFlags(p, l, at + 12);
        p.commandContinues = endsWithBackslash();
    } else if (const auto py = l.find("/build.py "); py != std::string_view::npos && has("tensorrt_llm")) {
        p.vote("tensorrt-llm", 2);
        readCommandLineFlags(p, l, py + 10);
        p.commandContinues = endsWithBackslash();
    } else if (const auto q = l.find("/quantize.py "); q != std::string_view::npos && has("--qformat")) {
        readCommandLineFlags(p, l, q + 13); // the checkpoint's KV dtype (--kv_cache_dtype fp8)
    }
    // The Triton backend's and the examples' environment knob (kv_cache_free_gpu_mem_fraction).
    if (const auto at = l.find("KV_CACHE_FREE_GPU_MEM_FRACTION="); at != std::string_view::npos)
        if (auto f = numberAfter(l.substr(at), "KV_CACHE_FREE_GPU_MEM_FRACTION="))
            p.setting("free_gpu_memory_fraction", f->printed);
    if (has("Number of tokens per block:"))
        if (auto n = numberAfter(l, "Number of tokens per block:"))
            p.setting("tokens_per_block", n->printed);
    // The C++ runtime (0.x) prefixes its lines "[TensorRT-LLM][INFO]"; its KV line says which
    // release: up to 0.8 "Using N tokens in paged KV cache" (before block rounding), from 0.9
    // "Allocated X GiB for max tokens in paged KV cache (N)" (kvCacheManager.cpp).
    if (has("[TensorRT-LLM]") && p.log().impliedVersion.empty()) {
        p.log().impliedVersion = "0.13";
        p.generation("0.x C++ runtime");
    }
    if (has("Memory usage when calculating max tokens in paged kv cache:")) {
        const auto total = sizeAfter(l, "total:");
        const auto avail = sizeAfter(l, "available:");
        if (const auto bytes = wholeNumber(total); bytes && !p.log().cardTotalBytes)
            p.log().cardTotalBytes = Bytes{*bytes};
        p.bytes("free_after_load", avail);
    }
    if (has("Number of blocks in KV cache primary pool:"))
        p.count("kv_blocks", numberAfter(l, "primary pool:"), LogUnit::Blocks);
    if (has(" tokens in paged KV cache") && has("Using ")) {
        p.count("max_kv_tokens", numberAfter(l, "Using "), LogUnit::Tokens);
        p.log().impliedVersion = "0.8";
        p.log().generation = "0.5-0.8 C++ runtime";
    }
    // From 0.9: "[MemUsageChange] Allocated 16.05 GiB for max tokens in paged KV cache (263008)."
    // (kvCacheManager.cpp: the pool's bytes, then primary blocks x tokens per block).
    if (has("for max tokens in paged KV cache (")) {
        p.bytes("kv_cache", sizeAfter(l, "Allocated "));
        p.count("max_kv_tokens", numberAfter(l, "paged KV cache ("), LogUnit::Tokens);
    }
    if (has("bytes for k/v cache"))
        if (auto n = numberAfter(l, "Allocate "))
            p.term("kv_cache", n->value, LogUnit::Bytes, n->printed + " bytes");
    if (has("[MemUsageChange]") && has("now: CPU"))
        if (auto gpu = numberAfter(l.substr(l.find("now: CPU")), "GPU "))
            p.term("gpu_in_use", gpu->value * 1048576.0, LogUnit::Bytes, gpu->printed + " MiB");
}

} // namespace headroom::enginelog
