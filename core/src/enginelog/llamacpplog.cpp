// llama.cpp / llama-server start-up lines (src/llama-context.cpp, src/llama-kv-cache.cpp,
// src/llama-model.cpp, common/fit.cpp; older llama.cpp: llama_new_context_with_model,
// llama_kv_cache_init, llm_load_tensors), from b2400 to the current "llama_context:" spelling.
#include "enginelogshared.h"

#include <vector>

namespace headroom::enginelog {

namespace {

/// "   CUDA0 KV buffer size =  1536.00 MiB" -> ("CUDA0", bytes).
bool bufferLine(Parser& p, std::string_view l, std::string_view kind, const char* term)
{
    const std::string key = kind.empty() ? std::string(" buffer size") : std::string(" ") + std::string(kind) + " buffer size";
    const auto at = l.find(key);
    if (at == std::string_view::npos)
        return false;
    std::size_t e = at;
    while (e > 0 && l[e - 1] == ' ')
        --e;
    std::size_t b = e;
    while (b > 0 && l[b - 1] != ' ' && l[b - 1] != ':')
        --b;
    const std::string device(l.substr(b, e - b));
    p.bytes(term, sizeAfter(l.substr(at), "="), device);
    return true;
}

void contextNumber(Parser& p, std::string_view l, std::string_view key, const char* setting)
{
    const auto at = l.find(key);
    if (at == std::string_view::npos)
        return;
    std::size_t pos = at + key.size();
    while (pos < l.size() && l[pos] == ' ')
        ++pos;
    if (pos >= l.size() || l[pos] != '=')
        return;
    if (auto n = scanNumber(l, pos))
        p.setting(setting, n->printed);
}

} // namespace

void readLlamaCppLine(Parser& p, std::string_view l)
{
    const auto has = [&](std::string_view k) { return l.find(k) != std::string_view::npos; };
    const bool ctx = has("llama_new_context_with_model:") || has("llama_context:") || has("llama_init_from_model:");
    if (ctx || has("llama_kv_cache") || has("llama_memory_recurrent") || has("llm_load_tensors:") || has("load_tensors:")
        || has("llama_model_loader:"))
        p.vote("llama.cpp", 2);
    // "build: 6945 (cc98f8d34) with MSVC 19.29.30154.0 for x64" (llama-server, common/common.cpp
    // common_print_build_info's "build: %d (%s) with %s for %s"), older "main: build = 2400 (...)".
    if (const auto at = l.find("build: "); at != std::string_view::npos) {
        const std::string b = wordAfter(l.substr(at), "build: ");
        const bool digits = !b.empty() && b.find_first_not_of("0123456789") == std::string::npos;
        const bool buildInfo = digits && l.substr(at + 7 + b.size()).starts_with(" (") && has(" with ") && has(" for ");
        if (digits && (buildInfo || has("llama") || has("main:") || has("system_info"))) {
            p.vote("llama.cpp", buildInfo ? 2 : 1);
            p.version("b" + b, "llama.cpp");
        }
    }
    // llama-server: "main: setting n_parallel = 4 and kv_unified = true" (tools/server/server.cpp,
    // when -np is left to auto).
    if (const auto at = l.find("setting n_parallel = "); at != std::string_view::npos) {
        p.vote("llama.cpp", 2);
        if (auto n = scanNumber(l, at + 21))
            p.setting("parallel", n->printed);
        if (const auto u = l.find("kv_unified = "); u != std::string_view::npos)
            p.setting("kv-unified", wordAfter(l.substr(u), "kv_unified = "));
    }
    if (has("main: build = ")) {
        const std::string b = wordAfter(l, "main: build = ");
        if (!b.empty() && std::isdigit(static_cast<unsigned char>(b[0])))
            p.version("b" + b, "llama.cpp");
    }
    if (const auto at = l.find("Device "); at != std::string_view::npos && has(", compute capability")) {
        const auto colon = l.find(": ", at);
        const auto comma = l.find(", compute capability");
        if (colon != std::string_view::npos && colon < comma && p.log().devices.size() < 64) {
            p.log().devices.emplace_back(l.substr(colon + 2, comma - colon - 2));
            p.understood();
        }
    }
    if (const auto at = l.find("using device "); at != std::string_view::npos && has(" MiB free")) {
        const auto dash = l.rfind(" - ");
        if (dash != std::string_view::npos)
            if (const auto bytes = wholeNumber(sizeAt(l, dash + 3)); bytes && !p.log().cardFreeBytes)
                p.log().cardFreeBytes = Bytes{*bytes};
        p.understood();
    }
    if (ctx) {
        contextNumber(p, l, "n_ctx", "n_ctx");
        contextNumber(p, l, "n_ctx_per_seq", "n_ctx_seq");
        contextNumber(p, l, "n_ctx_seq", "n_ctx_seq");
        contextNumber(p, l, "n_batch", "n_batch");
        contextNumber(p, l, "n_ubatch", "n_ubatch");
        contextNumber(p, l, "n_seq_max", "n_seq_max");
        if (const auto at = l.find("flash_attn"); at != std::string_view::npos) {
            const std::string v = wordAfter(l.substr(at + 10), "=");
            if (!v.empty())
                p.setting("flash_attn", v);
        }
    }
    if (has("offloaded ") && has(" layers to GPU"))
        if (auto n = numberAfter(l, "offloaded ")) {
            p.count("offloaded_layers", n);
            p.setting("n-gpu-layers-offloaded", n->printed);
        }
    const bool matched = bufferLine(p, l, "model", "model_buffer") || bufferLine(p, l, "KV", "kv_buffer")
        || bufferLine(p, l, "compute", "compute_buffer") || bufferLine(p, l, "output", "output_buffer")
        || bufferLine(p, l, "RS", "rs_buffer");
    // Before the "model buffer" spelling (2024): "llm_load_tensors:      CUDA0 buffer size = X MiB".
    if (!matched && has("load_tensors:") && has(" buffer size"))
        bufferLine(p, l, "", "model_buffer");
    if (has("KV self size")) {
        p.bytes("kv_self", sizeAfter(l, "KV self size"));
        const std::string k = wordAfter(l, "K (");
        const std::string v = wordAfter(l, "V (");
        if (!k.empty())
            p.setting("-ctk", k.substr(0, k.find(')')));
        if (!v.empty())
            p.setting("-ctv", v.substr(0, v.find(')')));
    }
    if (has("llama_kv_cache") && has(": size = ") && has(" cells")) {
        const auto at = l.find(": size = ");
        p.bytes("kv_self", sizeAt(l, at + 9));
        if (const auto paren = l.find('(', at); paren != std::string_view::npos)
            p.count("kv_cells", scanNumber(l, paren + 1));
        const std::string k = wordAfter(l, "K (");
        const std::string v = wordAfter(l, "V (");
        if (!k.empty())
            p.setting("-ctk", k.substr(0, k.find(')')));
        if (!v.empty())
            p.setting("-ctv", v.substr(0, v.find(')')));
    }
    // "llama_kv_cache_init: kv_size = N, ..." (llama.cpp to b4800 and Ollama's runner): N is the
    // context over all sequences, n_ctx (llama.cpp src/llama.cpp llama_kv_cache_init, kv_size =
    // cparams.n_ctx), so a log cut before its "n_ctx = " lines still says the context it ran.
    if (has("kv_size = ") && has("llama_kv_cache")) {
        const auto cells = numberAfter(l, "kv_size = ");
        p.count("kv_cells", cells);
        if (const auto n = wholeNumber(cells))
            p.setting("kv_size", std::to_string(*n));
    }
    // --fit / exit table (llama-context.cpp llama_memory_breakdown_print):
    // "| - CUDA0 (RTX 4090) | 24080 = 20000 + (3548 = 2228 + 896 + 424) + 532 |"
    if (has("memory_breakdown") && has(" = ") && has(" + ")) {
        const auto bar1 = l.find('|');
        const auto bar2 = bar1 == std::string_view::npos ? bar1 : l.find('|', bar1 + 1);
        const auto bar3 = bar2 == std::string_view::npos ? bar2 : l.find('|', bar2 + 1);
        if (bar3 != std::string_view::npos) {
            std::string_view cell = l.substr(bar1 + 1, bar2 - bar1 - 1);
            while (!cell.empty() && (cell.front() == ' ' || cell.front() == '-'))
                cell.remove_prefix(1);
            while (!cell.empty() && cell.back() == ' ')
                cell.remove_suffix(1);
            const std::string device(cell);
            // total, free, self, model, context, compute, unaccounted: seven numbers in order.
            const std::string_view nums = l.substr(bar2 + 1, bar3 - bar2 - 1);
            std::vector<Scanned> v;
            for (std::size_t i = 0; i < nums.size() && v.size() < 8;) {
                if (std::isdigit(static_cast<unsigned char>(nums[i]))) {
                    auto n = scanNumber(nums, i);
                    if (!n)
                        break;
                    v.push_back(*n);
                    i = n->end;
                } else {
                    ++i;
                }
            }
            // The host's row: "| - Host | 58271 = 58259 + 0 + 12 |": self = model + context + compute.
            if (v.size() == 4 && (device.find("Host") != std::string::npos || device.find("CPU") != std::string::npos)) {
                p.vote("llama.cpp", 2);
                constexpr double mib = 1048576.0;
                const char* names[] = {"device_self", "breakdown_model", "breakdown_context", "breakdown_compute"};
                for (int i = 0; i < 4; ++i)
                    p.term(names[i], v[static_cast<std::size_t>(i)].value * mib, LogUnit::Bytes,
                           v[static_cast<std::size_t>(i)].printed + " MiB", device);
            }
            if (v.size() == 7) {
                p.vote("llama.cpp", 2);
                constexpr double mib = 1048576.0;
                const char* names[] = {"device_total", "device_free", "device_self", "breakdown_model", "breakdown_context",
                                       "breakdown_compute", "unaccounted"};
                for (int i = 0; i < 7; ++i)
                    p.term(names[i], v[static_cast<std::size_t>(i)].value * mib, LogUnit::Bytes,
                           v[static_cast<std::size_t>(i)].printed + " MiB", device);
                if (!p.log().cardTotalBytes && device.find("CPU") == std::string::npos && device.find("Host") == std::string::npos) {
                    const auto mibAsBytes = [](const Scanned& n) {
                        return wholeNumber(Scanned{n.value * mib, n.end, n.printed});
                    };
                    if (const auto total = mibAsBytes(v[0]))
                        p.log().cardTotalBytes = Bytes{*total};
                    if (const auto free = mibAsBytes(v[1]); free && !p.log().cardFreeBytes)
                        p.log().cardFreeBytes = Bytes{*free};
                }
            }
        }
    }
    // --fit (common/fit.cpp; llama_params_fit_impl before the move to common/): "context size reduced
    // from 40960 to 4096 -> ...", "  - CUDA0 (...): 48 layers (34 overflowing), ...", and the
    // arguments llama-fit-params prints: "-c 4096 -ngl 48 -ot ...".
    if (has("params_fit") || has("fit_params")) {
        p.vote("llama.cpp", 2);
        if (const auto at = l.find("context size reduced from "); at != std::string_view::npos)
            if (const auto to = l.find(" to ", at + 26); to != std::string_view::npos)
                p.count("fit_ctx_size", scanNumber(l, to + 4));
        if (const auto at = l.find(" overflowing)"); at != std::string_view::npos) {
            const auto open = l.rfind('(', at);
            if (open != std::string_view::npos) {
                std::size_t i = open + 1;
                while (i < at && l[i] == ' ')
                    ++i;
                p.count("fit_overflowing_layers", scanNumber(l, i));
            }
        }
    }
    if (l.starts_with("-c ") && l.find(" -ngl ") != std::string_view::npos) {
        p.count("fit_ctx_size", scanNumber(l, 3));
        p.count("fit_gpu_layers", numberAfter(l, " -ngl "));
    }
    // (Ollama's own "starting llama-server" line quotes the command: ollamalog.cpp reads it.)
    if (const auto at = l.find("llama-server "); at != std::string_view::npos && (has(" -m ") || has(" --model "))
        && !has("msg=\"starting llama-server\""))
        readCommandLineFlags(p, l, at + 13);
}

} // namespace headroom::enginelog
