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
    if (const auto at = l.find("trtllm-build"); at != std::string_view::npos) {
        p.vote("tensorrt-llm", 2);
        readCommandLineFlags(p, l, at + 12);
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
    if (has(" tokens in paged KV cache"))
        p.count("max_kv_tokens", numberAfter(l, "Using "), LogUnit::Tokens);
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
