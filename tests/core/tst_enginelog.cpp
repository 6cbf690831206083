// The engine start-up log parser (core/enginelog) on the corpus of real public logs
// (tests/data/engine-logs) and on the damage real logs carry: ANSI colours, Windows line ends,
// interleaved ranks, truncation, unknown engines and versions, oversized input.

#include "headroom/core/enginelog/enginelog.h"

#include "testconfig.h"

#include <map>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

using namespace headroom;
namespace fs = std::filesystem;

namespace {

struct CorpusLog {
    std::string id;
    std::string engine;
    std::string text;      ///< the verbatim lines, joined by '\n'
    nlohmann::json figures;
};

std::vector<CorpusLog> corpus()
{
    std::vector<CorpusLog> out;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(HEADROOM_ENGINE_LOGS_DIR))
        if (e.path().extension() == ".json")
            files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
        std::ifstream in(f);
        const nlohmann::json j = nlohmann::json::parse(in);
        CorpusLog c;
        c.id = j.at("id").get<std::string>();
        c.engine = j.at("engine").get<std::string>();
        for (const auto& line : j.at("log"))
            c.text += line.get<std::string>() + "\n";
        c.figures = j.at("figures");
        out.push_back(std::move(c));
    }
    return out;
}

/// The parser's term for a corpus figure (tests/data/engine-logs/README.md "Figure names"), in
/// the figure's unit; every value of that name is returned (a log may print a figure twice, as
/// the vLLM 0.2.5 PR text prints "current main" and "this PR").
std::vector<double> parsedValues(const EngineLog& log, const std::string& engine, const std::string& figure)
{
    constexpr double gib = 1073741824.0;
    constexpr double mib = 1048576.0;
    auto all = [&](const char* name, double scale) {
        std::vector<double> v;
        for (const LogTerm& t : log.terms)
            if (t.name == name)
                v.push_back(t.value / scale);
        return v;
    };
    auto one = [](std::optional<double> v, double scale) {
        return v ? std::vector<double>{*v / scale} : std::vector<double>{};
    };
    if (figure == "available_kv_cache_bytes")
        return all("available_kv_cache", gib);
    if (figure == "model_loading_bytes") // "Model loading took" / "Loading model weights took"
        return all("weights", gib);
    if (figure == "kv_cache_bytes" || figure == "free_after_load_bytes")
        return all(figure == "kv_cache_bytes" ? "kv_cache" : "free_after_load", gib);
    // An Ollama offload-line term in MiB, and in GiB when it printed GiB (format.HumanBytes2): a
    // case gives the figure as printed ("1.3" GiB) or in MiB ("19968" for "19.5 GiB").
    auto asPrinted = [&](const char* name) {
        std::vector<double> v;
        for (const LogTerm& t : log.terms)
            if (t.name == name) {
                v.push_back(t.value / mib);
                if (t.printed.find("GiB") != std::string::npos)
                    v.push_back(t.value / gib);
            }
        return v;
    };
    if (figure == "kv_buffer_mib")
        return engine == "ollama" && !log.find("kv_buffer") ? asPrinted("required.kv") : one(log.sumOverDevices("kv_buffer"), mib);
    if (figure == "compute_buffer_mib")
        return engine == "ollama" && !log.find("compute_buffer") ? asPrinted("graph.full")
                                                                  : one(log.sumOverDevices("compute_buffer"), mib);
    // A layer split: the buffers of the GPU(s) and of the host (CPU, CPU_Mapped, CUDA_Host).
    const auto side = [&](const char* name, bool host) {
        double sum = 0;
        bool any = false;
        for (const LogTerm& t : log.terms)
            if (t.name == name && (t.device.find("CPU") != std::string::npos || t.device.find("Host") != std::string::npos) == host) {
                sum += t.value / mib;
                any = true;
            }
        // A log without the load_tensors / llama_kv_cache lines: the memory breakdown's columns
        // (model, context) of the device's row.
        if (!any && (std::string(name) == "model_buffer" || std::string(name) == "kv_buffer"))
            for (const LogTerm& t : log.terms)
                if (t.name == (std::string(name) == "model_buffer" ? "breakdown_model" : "breakdown_context")
                    && (t.device.find("CPU") != std::string::npos || t.device.find("Host") != std::string::npos) == host) {
                    sum += t.value / mib;
                    any = true;
                }
        return any ? std::vector<double>{sum} : std::vector<double>{};
    };
    if (figure == "gpu_model_buffer_mib" || figure == "host_model_buffer_mib")
        return side("model_buffer", figure[0] == 'h');
    if (figure == "gpu_kv_buffer_mib" || figure == "host_kv_buffer_mib")
        return side("kv_buffer", figure[0] == 'h');
    if (figure == "host_split_compute_buffer_bytes") // CUDA_Host compute buffer of a split
        return side("compute_buffer", true);
    if (figure == "layers_offload")
        return all("layers.offload", 1.0);
    if (figure == "rs_buffer_mib")
        return one(log.sumOverDevices("rs_buffer"), mib);
    if (figure == "projector_weights_mib" || figure == "projector_graph_mib")
        return asPrinted(figure == "projector_weights_mib" ? "projector.weights" : "projector.graph");
    // One GPU's buffer of a tensor split: cudaN_{weights,kv_buffer,compute_buffer}_bytes.
    if (figure.rfind("cuda", 0) == 0 && figure.size() > 11 && figure.compare(figure.size() - 6, 6, "_bytes") == 0) {
        const std::string::size_type us = figure.find('_');
        const std::string device = "CUDA" + figure.substr(4, us - 4);
        std::string term = figure.substr(us + 1, figure.size() - 6 - us - 1);
        if (term == "weights")
            term = "model_buffer";
        std::vector<double> v;
        for (const LogTerm& t : log.terms)
            if (t.name == term && t.device == device)
                v.push_back(t.value / mib);
        return v;
    }
    // Ollama's "offload" line (format.HumanBytes2): the terms and the unit each case figure uses.
    static const std::map<std::string, std::pair<const char*, bool>> ollamaTerms = {
        {"memory_required_partial", {"required.partial", true}},   {"memory_required_full", {"required.full", true}},
        {"memory_weights_total", {"weights.total", true}},         {"memory_weights_repeating", {"weights.repeating", true}},
        {"memory_weights_nonrepeating", {"weights.nonrepeating", false}},
    };
    if (auto it = ollamaTerms.find(figure); it != ollamaTerms.end()) {
        std::vector<double> v = all(it->second.first, it->second.second ? gib : mib);
        for (double x : asPrinted(it->second.first)) // "1.0 GiB" of a nonrepeating layer that large
            v.push_back(x);
        return v;
    }
    // One GPU's entry of Ollama's layers.split / memory.required.allocations (layers_split_N,
    // memory_required_allocation_N: terms of device GPUN).
    for (const auto& [prefix, term] : {std::pair<std::string, std::string>{"layers_split_", "layers.split"},
                                       std::pair<std::string, std::string>{"memory_required_allocation_", "required.allocations"}})
        if (figure.rfind(prefix, 0) == 0) {
            std::vector<double> v;
            for (const LogTerm& t : log.terms)
                if (t.name == term && t.device == "GPU" + figure.substr(prefix.size()))
                    v.push_back(t.unit == LogUnit::Bytes ? t.value / gib : t.value);
            return v;
        }
    return all(figure.c_str(), 1.0);
}

} // namespace

TEST_CASE("engine-log corpus: every log parsed, every printed figure read back", "[enginelog]")
{
    const auto logs = corpus();
    REQUIRE(logs.size() >= 40);
    int figures = 0;
    for (const CorpusLog& c : logs) {
        INFO(c.id);
        auto log = parseEngineLog(c.text);
        REQUIRE(log);
        CHECK(log->engine == c.engine);
        CHECK(log->warnings.empty());
        CHECK_FALSE(log->understoodLines.empty());
        for (const auto& f : c.figures) {
            const std::string name = f.at("name").get<std::string>();
            const double printed = f.at("printed").get<double>();
            const auto values = parsedValues(*log, c.engine, name);
            INFO(name << " printed " << printed << " (" << f.value("log", "") << ")");
            // Exact to the printed digits: the parser scales by 2^30 and the test divides it back.
            const bool found = std::any_of(values.begin(), values.end(),
                                           [&](double v) { return std::fabs(v - printed) <= 1e-9 * std::max(1.0, printed); });
            CHECK(found);
            ++figures;
        }
    }
    CHECK(figures >= 100);
}

TEST_CASE("a vLLM 0.7 command line with VLLM_USE_V1=1 plans the V1 engine", "[enginelog]")
{
    // vllm PR 12569 (mgoin, 2025-01-30), the V1 engine of vLLM 0.7.
    auto log = parseEngineLog(
        "VLLM_USE_V1=1 vllm serve neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8 --max-model-len 2048 --gpu-memory-utilization 0.98\n"
        "INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 67.7229 GB\n"
        "INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 1381\n");
    REQUIRE(log);
    CHECK(log->engine == "vllm");
    CHECK(log->settings.at("VLLM_USE_V1") == "1");
    CHECK(log->settings.at("max-model-len") == "2048");
}

TEST_CASE("a vLLM V1 log: engine, card, settings and every measured term", "[enginelog]")
{
    // vllm-0.19-llama-3.1-8b-h100-tp2 (llm-d-planner accuracy sweep), ranks interleaved as printed.
    const std::string text =
        "(APIServer pid=1) INFO 04-22 01:35:30 [entrypoints/utils.py:233] non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', 'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 8192, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.95, 'enable_prefix_caching': False}\r\n"
        "(APIServer pid=1) INFO 04-22 01:35:31 [config/scheduler.py:238] Chunked prefill is enabled with max_num_batched_tokens=8192.\r\n"
        "(Worker pid=445) DEBUG 04-22 01:35:55 [v1/worker/gpu_worker.py:284] worker init memory snapshot: torch_peak=0.01GiB, free_memory=77.66GiB, total_memory=79.19GiB, cuda_memory=1.53GiB, torch_memory=0.02GiB, non_torch_memory=1.51GiB, timestamp=1776821755.3217318, auto_measure=True\r\n"
        "\x1b[1;36m(Worker_TP1 pid=445)\x1b[0m INFO 04-22 01:36:06 [v1/worker/gpu_model_runner.py:4820] Model loading took 7.52 GiB memory and 10.562171 seconds\r\n"
        "\x1b[1;36m(Worker_TP0 pid=444)\x1b[0m INFO 04-22 01:36:06 [v1/worker/gpu_model_runner.py:4820] Model loading took 7.51 GiB memory and 10.562171 seconds\r\n"
        "(Worker_TP1 pid=445) INFO 04-22 01:36:26 [v1/worker/gpu_model_runner.py:5955] Estimated CUDA graph memory: 1.69 GiB total\r\n"
        "(Worker_TP0 pid=444) INFO 04-22 01:36:26 [v1/worker/gpu_worker.py:436] Available KV cache memory: 63.76 GiB\r\n"
        "(EngineCore pid=245) INFO 04-22 01:36:26 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 1,044,688 tokens\r\n"
        "(EngineCore pid=245) INFO 04-22 01:36:26 [v1/core/kv_cache_utils.py:1324] Maximum concurrency for 8,192 tokens per request: 127.53x\r\n"
        "(Worker_TP0 pid=444) INFO 04-22 01:36:30 [v1/worker/gpu_model_runner.py:6046] Graph capturing finished in 4 secs, took 0.76 GiB\r\n"
        "(Worker_TP0 pid=444) INFO 04-22 01:36:30 [v1/worker/gpu_model_runner.py:6046] Graph capt"; // truncated mid-line
    auto log = parseEngineLog(text);
    REQUIRE(log);
    CHECK(log->engine == "vllm");
    CHECK(log->version.empty());
    CHECK(log->generation == "V1");
    CHECK(log->summary() == "This log is from vLLM (version not printed; the lines are V1's); 10 of 11 lines were understood.");
    REQUIRE(log->cardTotalBytes);
    CHECK(log->cardTotalBytes->value == static_cast<std::uint64_t>(79.19 * 1073741824.0));
    CHECK(log->cardFreeBytes->value == static_cast<std::uint64_t>(77.66 * 1073741824.0));
    CHECK(log->settings.at("max-model-len") == "8192");
    CHECK(log->settings.at("tensor-parallel-size") == "2");
    CHECK(log->settings.at("gpu-memory-utilization") == "0.95");
    CHECK(log->settings.at("max-num-batched-tokens") == "8192");
    CHECK(log->settings.at("enable-prefix-caching") == "False");
    // Rank 0's figure wins over the rank printed first.
    CHECK(log->find("weights")->rank == "Worker_TP0");
    CHECK(*log->value("weights") == Approx(7.51 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("cuda_graph_estimate") == Approx(1.69 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("cuda_graph_captured") == Approx(0.76 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("kv_cache_tokens") == 1'044'688);
    CHECK(*log->value("max_concurrency") == Approx(127.53));
    CHECK(*log->value("init_non_torch") == Approx(1.51 * 1073741824.0).epsilon(1e-12));
    CHECK(log->ranks == std::vector<std::string>{"APIServer", "Worker", "Worker_TP1", "Worker_TP0", "EngineCore"});
}

TEST_CASE("versions printed, and logs of no known engine", "[enginelog]")
{
    auto v = parseEngineLog("INFO 12-13 19:50:01 api_server.py:585] vLLM API server version 0.6.5\n"
                            "INFO 12-13 19:54:18 worker.py:243] Memory profiling results:\n");
    REQUIRE(v);
    CHECK(v->summary() == "This log is from vLLM 0.6.5; 2 of 2 lines were understood.");
    auto none = parseEngineLog("hello\nworld\n");
    REQUIRE(none);
    CHECK(none->engine.empty());
    CHECK(none->summary() == "This log is from an engine not recognised; 0 of 2 lines were understood.");
    CHECK(none->warnings == std::vector<std::string>{"no line of a known engine's start-up was understood"});
    auto sg = parseEngineLog("[2025-03-08 12:29:21 DP0 TP3] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB\n"
                             "[2025-03-08 12:29:21 DP0 TP0] KV Cache is allocated. #tokens: 46610, K size: 1.42 GB, V size: 1.42 GB\n");
    REQUIRE(sg);
    CHECK(sg->engine == "sglang");
    CHECK(*sg->value("max_total_num_tokens") == 46610); // rank 0
    CHECK(sg->ranks == std::vector<std::string>{"DP0 TP3", "DP0 TP0"});
}

TEST_CASE("a collector's timestamp before the engine's own prefix keeps the rank", "[enginelog]")
{
    // Docker Desktop's "2025-02-04 21:21:33 " before SGLang's "[2025-02-04 05:21:33 TP0] "
    // (https://github.com/jerryzsj/my-deepseek-r1/blob/main/README.md, SGLang 0.4.2 on WSL).
    auto log = parseEngineLog("2025-02-04 21:21:40 [2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.76 GB\n"
                              "2025-02-04 21:29:20 [2025-02-04 05:29:20 TP0] max_total_num_tokens=105531, chunked_prefill_size=2048, "
                              "max_prefill_tokens=16384, max_running_requests=2049, context_len=131072\n");
    REQUIRE(log);
    CHECK(log->engine == "sglang");
    CHECK(log->ranks == std::vector<std::string>{"TP0"});
    REQUIRE(log->find("max_total_num_tokens"));
    CHECK(log->find("max_total_num_tokens")->rank == "TP0");
    // kubectl logs --timestamps before vLLM's "(Worker_TP1 pid=445) " (the line of the llm-d-planner
    // v0.19.0 TP 2 log, tests/data/engine-logs/whole).
    auto vllm = parseEngineLog("2026-04-22T01:36:26.123456789Z (Worker_TP1 pid=445) INFO 04-22 01:36:26 "
                               "[v1/worker/gpu_worker.py:436] Available KV cache memory: 63.76 GiB\n");
    REQUIRE(vllm);
    CHECK(vllm->ranks == std::vector<std::string>{"Worker_TP1"});
}

TEST_CASE("llama-server's build line and its automatic n_parallel", "[enginelog]")
{
    // The first lines of llama-server b6945 (https://github.com/ggml-org/llama.cpp/issues/18546).
    auto log = parseEngineLog("main: setting n_parallel = 4 and kv_unified = true\n"
                              "build: 6945 (cc98f8d34) with MSVC 19.29.30154.0 for x64\n"
                              "system info: n_threads = 10, n_threads_batch = 10, total_threads = 12\n");
    REQUIRE(log);
    CHECK(log->engine == "llama.cpp");
    CHECK(log->version == "b6945");
    CHECK(log->settings.at("parallel") == "4");
    CHECK(log->settings.at("kv-unified") == "true");
    CHECK(log->summary() == "This log is from llama.cpp b6945; 2 of 3 lines were understood.");
}

TEST_CASE("llama.cpp and Ollama: buffers per device, context, the runner inside Ollama", "[enginelog]")
{
    const std::string text =
        "time=2024-12-15T01:34:58.907+09:00 level=INFO source=routes.go:1310 msg=\"Listening on 127.0.0.1:11434 (version 0.5.1)\"\n"
        "time=2024-12-15T01:34:58.907+09:00 level=INFO source=memory.go:356 msg=\"offload to cuda\" layers.requested=-1 layers.model=29 layers.offload=29 layers.split=\"\" memory.available=\"[78.6 GiB]\" memory.gpu_overhead=\"0 B\" memory.required.full=\"3.7 GiB\" memory.required.partial=\"3.7 GiB\" memory.required.kv=\"896.0 MiB\" memory.required.allocations=\"[3.7 GiB]\" memory.weights.total=\"2.4 GiB\" memory.weights.repeating=\"2.1 GiB\" memory.weights.nonrepeating=\"308.2 MiB\" memory.graph.full=\"424.0 MiB\" memory.graph.partial=\"570.7 MiB\"\n"
        "llama_new_context_with_model: n_ctx      = 8192\n"
        "llama_new_context_with_model: n_batch    = 2048\n"
        "llama_kv_cache_init:      CUDA0 KV buffer size =   896.00 MiB\n"
        "llama_new_context_with_model:      CUDA0 compute buffer size =   424.00 MiB\n"
        "llama_new_context_with_model:  CUDA_Host compute buffer size =    22.01 MiB\n"
        "llama_perf_context_print: | memory breakdown [MiB] | total   free    self   model   context   compute    unaccounted |\n"
        "llama_memory_breakdown_print: |   - CUDA0 (RTX 4090)   | 24080 = 20000 + ( 3548 =  2228 +     896 +     424) +         532 |\n";
    auto log = parseEngineLog(text);
    REQUIRE(log);
    CHECK(log->engine == "ollama");
    CHECK(log->version == "0.5.1");
    CHECK(log->settings.at("n_ctx") == "8192");
    CHECK(*log->value("kv_buffer", "CUDA0") == 896.0 * 1048576);
    CHECK(*log->sumOverDevices("compute_buffer") == Approx((424.0 + 22.01) * 1048576));
    CHECK(*log->value("required.kv") == 896.0 * 1048576);
    CHECK(*log->value("graph.full") == 424.0 * 1048576);
    CHECK(*log->value("unaccounted", "CUDA0 (RTX 4090)") == 532.0 * 1048576);
    CHECK(log->cardTotalBytes->value == 24080ull << 20);
    CHECK(log->cardFreeBytes->value == static_cast<std::uint64_t>(78.6 * 1073741824.0)); // Ollama's memory.available comes first
}

TEST_CASE("the log is untrusted: size, lines and line length are bounded", "[enginelog]")
{
    EngineLogLimits small;
    small.maxBytes = 1000;
    auto big = parseEngineLog(std::string(1001, 'x'), small);
    REQUIRE_FALSE(big);
    CHECK(big.error().message.find("1001 bytes, more than the 1000") != std::string::npos);

    EngineLogLimits lines;
    lines.maxLines = 2;
    lines.maxLineBytes = 64;
    const std::string longLine = "GPU KV cache size: 476,016 tokens" + std::string(100, ' ') + "\n";
    auto cut = parseEngineLog(longLine + "a\nb\nc\n", lines);
    REQUIRE(cut);
    CHECK(cut->lineCount == 2);
    CHECK(*cut->value("kv_cache_tokens") == 476016);
    CHECK(cut->warnings == std::vector<std::string>{"only the first 2 lines were read", "lines longer than 64 bytes were cut"});

    // Hostile numbers and binary noise: no crash, nothing absurd kept.
    auto noise = parseEngineLog("GPU KV cache size: 99999999999999999999999 tokens\nAvailable KV cache memory: -5 GiB\n" +
                                std::string("\0\x1b[\xff\x1b]", 6) + "\n");
    REQUIRE(noise);
    CHECK_FALSE(noise->find("kv_cache_tokens"));
    CHECK_FALSE(noise->find("available_kv_cache"));
    // A negative or absurd figure where a count belongs is not kept (was cast to 18446744073709543424).
    auto negative = parseEngineLog("Maximum concurrency for -8,192 tokens per request: 15.53x\n"
                                   "Memory profiling takes 1 seconds. Total GPU memory: -1e300 GiB\n");
    REQUIRE(negative);
    CHECK(negative->settings.count("max-model-len") == 0);
    CHECK_FALSE(negative->cardTotalBytes);
    CHECK(stripAnsi("\x1b[32mINFO\x1b[0m \x1b]0;title\x07ok\r") == "INFO ok");
}

TEST_CASE("review 14: vLLM V0 0.6.6+ one-line profile (worker.py) and '# cuda blocks', ranks interleaved", "[enginelog]")
{
    // https://github.com/vllm-project/vllm/pull/14447 (davidsyoung, turn 42, 2025-04-12): vLLM V0
    // workers of a TP run print worker.py's three-line message, each line with the rank's prefix.
    const std::string ranks =
        "(VllmWorkerProcess pid=521) INFO 04-12 08:21:19 [worker.py:267] model weights take 21.21GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory takes 0.37GiB; the rest of the memory reserved for KV Cache is 1.57GiB.\n"
        "(VllmWorkerProcess pid=507) INFO 04-12 08:21:19 [worker.py:267] Memory profiling takes 17.59 seconds\n"
        "(VllmWorkerProcess pid=507) INFO 04-12 08:21:19 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.99) = 23.35GiB\n"
        "(VllmWorkerProcess pid=507) INFO 04-12 08:21:19 [worker.py:267] model weights take 21.21GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory takes 0.37GiB; the rest of the memory reserved for KV Cache is 1.57GiB.\n";
    auto log = parseEngineLog(ranks);
    REQUIRE(log);
    CHECK(log->engine == "vllm"); // was: "an engine not recognised"
    CHECK(log->generation == "V0 (0.6.6+)");
    CHECK(log->impliedVersion == "0.7.3");
    REQUIRE(log->cardTotalBytes);
    CHECK(log->cardTotalBytes->value == static_cast<std::uint64_t>(23.58 * 1073741824.0));
    CHECK(log->settings.at("gpu-memory-utilization") == "0.99");
    CHECK(*log->value("requested_memory") == Approx(23.35 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("weights") == Approx(21.21 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("non_torch") == Approx(0.20 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("activation_peak") == Approx(0.37 * 1073741824.0).epsilon(1e-12));
    CHECK(*log->value("available_kv_cache") == Approx(1.57 * 1073741824.0).epsilon(1e-12));
    CHECK(log->summary() == "This log is from vLLM (version not printed; the lines are V0 (0.6.6+)'s); 4 of 4 lines were understood.");

    // https://github.com/generative-computing/mellea/pull/416 (planetf1, turn 4, 2025-02-11): V0's
    // executor_base.py names the platform's device: "# cuda blocks", not "# GPU blocks".
    auto blocks = parseEngineLog(
        "INFO 02-11 10:17:54 [worker.py:294] Memory profiling takes 0.44 seconds\n"
        "INFO 02-11 10:17:54 [worker.py:294] the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.80) = 63.35GiB\n"
        "INFO 02-11 10:17:54 [worker.py:294] model weights take 1.12GiB; non_torch_memory takes 0.16GiB; PyTorch activation peak memory takes 0.23GiB; the rest of the memory reserved for KV Cache is 61.84GiB.\n"
        "INFO 02-11 10:17:54 [executor_base.py:113] # cuda blocks: 36184, # CPU blocks: 2340\n"
        "INFO 02-11 10:17:54 [executor_base.py:118] Maximum concurrency for 8192 tokens per request: 70.67x\n");
    REQUIRE(blocks);
    CHECK(*blocks->value("num_gpu_blocks") == 36184);
    CHECK(*blocks->value("num_cpu_blocks") == 2340);
    CHECK(*blocks->value("available_kv_cache") == Approx(61.84 * 1073741824.0).epsilon(1e-12));

    // v0.9 on print "Memory profiling takes S seconds. Total non KV cache memory: ..." (gpu_worker.py):
    // a V1 line, which implies no 0.8 rules.
    auto v1 = parseEngineLog("(EngineCore pid=242) DEBUG 04-22 00:04:20 [v1/worker/gpu_worker.py:435] Memory profiling takes 17.96 seconds. "
                             "Total non KV cache memory: 17.12GiB; torch peak memory increase: 1.89GiB; non-torch forward increase memory: "
                             "0.25GiB; weights memory: 14.99GiB.\n");
    REQUIRE(v1);
    CHECK(v1->impliedVersion.empty());
    CHECK(*v1->value("activation_peak") == Approx(1.89 * 1073741824.0).epsilon(1e-12));
}

TEST_CASE("review 14: llama.cpp's kv_size and Ollama's estimator line imply the context and the rules", "[enginelog]")
{
    // llama.cpp b4462 (corpus case llama.cpp-b4462-qwen2.5-32b-q8_0-2x3090ti-ts10-6): kv_size is n_ctx.
    auto ggml = parseEngineLog("llama_kv_cache_init: kv_size = 32768, offload = 1, type_k = 'q8_0', type_v = 'q8_0', n_layer = 64, can_shift = 1\n"
                               "llama_new_context_with_model: KV self size  = 4352.00 MiB, K (q8_0): 2176.00 MiB, V (q8_0): 2176.00 MiB\n");
    REQUIRE(ggml);
    CHECK(ggml->settings.at("kv_size") == "32768");
    CHECK(ggml->settings.at("-ctk") == "q8_0");
    // Ollama 0.5's offload line (memory.required.*) is llm/memory.go's estimator: its last rules (ollama-0.5 profile, 0.12.10).
    auto ollama = parseEngineLog("time=2025-02-18T02:21:25.646Z level=INFO source=server.go:130 msg=offload library=cuda layers.requested=-1 "
                                 "layers.model=81 layers.offload=44 layers.split=11,11,11,11 memory.available=\"[22.0 GiB 22.0 GiB 22.0 GiB 22.0 GiB]\" "
                                 "memory.gpu_overhead=\"0 B\" memory.required.full=\"127.4 GiB\" memory.required.partial=\"87.1 GiB\" "
                                 "memory.required.kv=\"19.5 GiB\"\n");
    REQUIRE(ollama);
    CHECK(ollama->engine == "ollama");
    CHECK(ollama->impliedVersion == "0.12.10");
    // From 0.30 Ollama logs llama-server's command line (llm/llama_server.go startLlamaServer, the
    // flags it builds; a line of that shape, not a public log) and llama-server's own lines.
    auto server = parseEngineLog("time=2026-06-10T10:00:00.000Z level=INFO source=llama_server.go:419 msg=\"starting llama-server\" "
                                 "cmd=\"/usr/lib/ollama/llama-server --model /root/.ollama/models/blobs/sha256-0 --port 40123 --host 127.0.0.1 "
                                 "--no-webui --offline -c 16384 -np 4 --log-verbosity 4 --no-log-prefix --no-log-timestamps --flash-attn auto "
                                 "-b 512 -ub 512\"\n"
                                 "load_tensors: offloaded 43/65 layers to GPU\n");
    REQUIRE(server);
    CHECK(server->engine == "ollama");
    CHECK(server->impliedVersion == "0.30.0");
    CHECK(server->settings.at("-c") == "16384");
    CHECK(server->settings.at("-np") == "4");
    CHECK(server->settings.at("-ub") == "512"); // the closing quote of cmd="..." is not a value
    CHECK(server->settings.at("flash-attn") == "auto");
    CHECK(server->settings.at("n-gpu-layers-offloaded") == "43");
}
