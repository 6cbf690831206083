// SGLang start-up lines (srt/model_executor/model_runner.py, srt/managers/scheduler.py,
// srt/server_args.py) at 0.4.x. SGLang prints memory in "GB" computed as bytes / (1 << 30).
#include "enginelogshared.h"

namespace headroom::enginelog {

void readSglangLine(Parser& p, std::string_view l)
{
    const auto has = [&](std::string_view k) { return l.find(k) != std::string_view::npos; };
    if (const auto at = l.find("sglang.launch_server"); at != std::string_view::npos) {
        p.vote("sglang", 3);
        readCommandLineFlags(p, l, at + 20);
    }
    if (const auto at = l.find("server_args=ServerArgs("); at != std::string_view::npos) {
        p.vote("sglang", 3);
        readKeyValues(p, l.substr(at + 23));
    }
    if (has("Load weight begin.")) {
        p.vote("sglang", 2);
        if (auto free = sizeAfter(l, "avail mem=")) {
            if (const auto bytes = wholeNumber(free); bytes && !p.log().cardFreeBytes)
                p.log().cardFreeBytes = Bytes{*bytes};
            p.bytes("free_before_weights", free);
        }
    }
    if (has("Load weight end.")) {
        p.vote("sglang", 2);
        p.bytes("free_after_weights", sizeAfter(l, "avail mem="));
        p.bytes("weights", sizeAfter(l, "mem usage="));
        const std::string dtype = wordAfter(l, "dtype=");
        if (!dtype.empty())
            p.setting("dtype", dtype);
    }
    if (has("KV Cache is allocated.")) {
        p.vote("sglang", 2);
        p.count("max_total_num_tokens", numberAfter(l, "#tokens:"), LogUnit::Tokens);
        const auto k = sizeAfter(l, "K size:");
        const auto v = sizeAfter(l, "V size:");
        if (k && v)
            p.term("kv_cache", k->value + v->value, LogUnit::Bytes, k->printed + " + " + v->printed);
    }
    if (has("Memory pool end.")) {
        p.vote("sglang", 2);
        p.bytes("free_after_pool", sizeAfter(l, "avail mem="));
    }
    if (has("Capture cuda graph end.")) {
        p.vote("sglang", 2);
        p.bytes("free_after_graphs", sizeAfter(l, "avail mem="));
        p.bytes("cuda_graph_captured", sizeAfter(l, "mem usage="));
    }
    if (const auto at = l.find("max_total_num_tokens="); at != std::string_view::npos) {
        p.vote("sglang", 2);
        p.count("max_total_num_tokens", scanNumber(l, at + 21), LogUnit::Tokens);
        readKeyValues(p, l.substr(at + 21));
    }
}

} // namespace headroom::enginelog
