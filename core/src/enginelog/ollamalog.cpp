// Ollama server lines (llm/server.go, llm/memory.go at 0.5.x: the "offload" line with
// memory.* fields; "starting llama server" with the runner's command line; from 0.30
// llm/llama_server.go's "starting llama-server"; routes.go "Listening on ... (version V)").
// Its runner's (llama-server's) lines are read by llamacpplog.cpp.
#include "enginelogshared.h"

namespace headroom::enginelog {

namespace {

/// The value of key="..." or key=word in a logfmt line.
std::string logfmt(std::string_view l, std::string_view key)
{
    const std::string k = " " + std::string(key) + "=";
    auto at = l.find(k);
    if (at == std::string_view::npos)
        return {};
    at += k.size();
    if (at < l.size() && l[at] == '"') {
        const auto close = l.find('"', at + 1);
        return close == std::string_view::npos ? std::string() : std::string(l.substr(at + 1, close - at - 1));
    }
    const auto end = l.find(' ', at);
    return std::string(l.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
}

} // namespace

void readOllamaLine(Parser& p, std::string_view l)
{
    const auto has = [&](std::string_view k) { return l.find(k) != std::string_view::npos; };
    const bool logfmtLine = has("level=") && has("source=");
    if (logfmtLine && (has("msg=offload") || has("msg=\"offload to")) ) {
        p.vote("ollama", 4);
        // The memory.required.* fields are Ollama's own estimator's (llm/memory.go
        // EstimateGPULayers), which the Ollama engine replaced in 0.12.11: without a printed
        // version the plan takes the estimator's last rules (profiles/engines/ollama-0.5.json, 0.12.10),
        // which price what the older versions' lines print (the corpus's 0.2-0.9 logs) and the
        // sliding-window KV of gemma3 (0.6+) that 0.5's rules did not.
        if (has("memory.required.") && p.log().impliedVersion.empty()) {
            p.log().impliedVersion = "0.12.10";
            p.generation("the memory.go estimator (before 0.12.11)");
        }
        for (const char* key : {"memory.required.full", "memory.required.partial", "memory.required.kv",
                                "memory.weights.total", "memory.weights.repeating", "memory.weights.nonrepeating",
                                "memory.graph.full", "memory.graph.partial", "memory.gpu_overhead"}) {
            const std::string v = logfmt(l, key);
            if (auto s = sizeAt(v, 0))
                p.term(std::string(key).substr(7), s->value, LogUnit::Bytes, s->printed);
        }
        // The vision projector's own terms (llm/memory.go, v0.6 to v0.12): its weights and one
        // image through the encoder.
        for (const char* key : {"projector.weights", "projector.graph"})
            if (auto s = sizeAt(logfmt(l, key), 0))
                p.term(key, s->value, LogUnit::Bytes, s->printed);
        const std::string avail = logfmt(l, "memory.available");
        if (auto s = sizeAt(avail, avail.starts_with("[") ? 1 : 0)) {
            p.term("available", s->value, LogUnit::Bytes, s->printed);
            if (const auto bytes = wholeNumber(s); bytes && !p.log().cardFreeBytes)
                p.log().cardFreeBytes = Bytes{*bytes};
        }
        for (const char* key : {"layers.model", "layers.offload"})
            if (auto n = scanNumber(logfmt(l, key), 0))
                p.term(key, n->value, LogUnit::Count, n->printed);
        const std::string split = logfmt(l, "layers.split");
        if (!split.empty())
            p.setting("layers.split", split);
        // Several GPUs (llm/memory.go): each one's layers (layers.split=11,11,...) and allocation
        // (memory.required.allocations="[21.8 GiB 21.8 GiB ...]"), terms of device GPU0, GPU1, ...
        // in the order the scheduler passed the GPUs.
        const std::string allocations = logfmt(l, "memory.required.allocations");
        if (split.find(',') != std::string::npos) {
            std::size_t pos = 0;
            for (int gpu = 0; pos < split.size() && gpu < 64; ++gpu) {
                const std::size_t comma = split.find(',', pos);
                const std::string item = split.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
                if (auto n = scanNumber(item, 0))
                    p.term("layers.split", n->value, LogUnit::Count, n->printed, "GPU" + std::to_string(gpu));
                if (comma == std::string::npos)
                    break;
                pos = comma + 1;
            }
            std::size_t at = allocations.starts_with("[") ? 1 : 0;
            for (int gpu = 0; gpu < 64; ++gpu) {
                auto a = sizeAt(allocations, at);
                if (!a)
                    break;
                p.term("required.allocations", a->value, LogUnit::Bytes, a->printed, "GPU" + std::to_string(gpu));
                at = a->end;
                while (at < allocations.size() && allocations[at] == ' ')
                    ++at;
            }
        }
    }
    if (logfmtLine && has("msg=\"starting llama server\"")) {
        p.vote("ollama", 3);
        const std::string cmd = logfmt(l, "cmd");
        if (const auto runner = cmd.find(" runner "); runner != std::string::npos)
            readCommandLineFlags(p, cmd, runner + 8);
    }
    // From v0.30 (llm/llama_server.go startLlamaServer, fb30760): slog's "starting llama-server"
    // with cmd="<dir>/llama-server --model ... -c N -np P [-ngl N] ..."; llama-server's own lines
    // follow (--no-log-prefix) and are read by llamacpplog.cpp. Without a printed version the plan
    // takes the llama-server rules (ollamalaunch.h, first in 0.30.0).
    if (logfmtLine && has("msg=\"starting llama-server\"")) {
        p.vote("ollama", 4);
        if (p.log().impliedVersion.empty()) {
            p.log().impliedVersion = "0.30.0";
            p.generation("llama-server with --fit (0.30.0 and later)");
        }
        const std::string cmd = logfmt(l, "cmd");
        if (const auto exe = cmd.find("llama-server "); exe != std::string::npos)
            readCommandLineFlags(p, cmd, exe + 13);
    }
    if (logfmtLine && has("(version ")) {
        p.vote("ollama", 2);
        std::string v = wordAfter(l, "(version ");
        p.version(v, "ollama");
    }
    if (logfmtLine && has("msg=\"enabling flash attention\"")) {
        p.vote("ollama");
        p.setting("OLLAMA_FLASH_ATTENTION", "1");
    }
    // routes.go "server config env="map[... OLLAMA_CONTEXT_LENGTH:2048 ... OLLAMA_NUM_PARALLEL:0 ...]"":
    // the server's defaults (envconfig). OLLAMA_NUM_PARALLEL 0 means "chosen by the scheduler".
    if (const auto at = l.find("server config env=\"map["); at != std::string_view::npos) {
        p.vote("ollama", 3);
        const std::string_view env = l.substr(at + 23);
        for (const char* key : {"OLLAMA_CONTEXT_LENGTH", "OLLAMA_NUM_PARALLEL", "OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE"}) {
            const std::string k = std::string(key) + ":";
            std::size_t pos = env.find(k);
            while (pos != std::string_view::npos && pos > 0 && env[pos - 1] != ' ' && env[pos - 1] != '[')
                pos = env.find(k, pos + 1);
            if (pos == std::string_view::npos)
                continue;
            const std::size_t b = pos + k.size();
            const std::size_t e = env.find_first_of(" ]\">", b);
            std::string value(env.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
            if (value == "true" || value == "false")
                value = value == "true" ? "1" : "0";
            if (!value.empty() && !(std::string_view(key) == "OLLAMA_NUM_PARALLEL" && value == "0"))
                p.setting(key, value);
        }
    }
    if (has("ollama_llama_server") || has("/ollama runner"))
        p.vote("ollama", 2);
}

} // namespace headroom::enginelog
