// Launch flags against each engine's documented flag names.
//
// The names each engine documents (the only names these tests accept):
// - vLLM, `vllm serve` engine arguments: https://docs.vllm.ai/en/v0.5.3/models/engine_args.html
//   (--max-model-len, --max-num-seqs, --gpu-memory-utilization, --kv-cache-dtype
//   {auto,fp8,fp8_e5m2,fp8_e4m3}, --tensor-parallel-size, --pipeline-parallel-size); the same
//   names in https://docs.vllm.ai/en/v0.9.2/api/vllm/config.html (CacheDType); --quantization
//   {..., bitsandbytes, ..., fp8, ...} (the same engine-arguments page).
// - llama.cpp `llama-server`, tools/server/README.md (github.com/ggml-org/llama.cpp):
//   "-c, --ctx-size N", "-np, --parallel N", "-ngl, --gpu-layers, --n-gpu-layers N",
//   "-ctk, --cache-type-k TYPE", "-ctv, --cache-type-v TYPE" (f32, f16, bf16, q8_0, q4_0, q4_1,
//   iq4_nl, q5_0, q5_1), "-fa, --flash-attn [on|off|auto]".
// - SGLang, https://docs.sglang.io/advanced_features/server_arguments.html:
//   --context-length, --max-running-requests, --mem-fraction-static,
//   --kv-cache-dtype {auto,fp8_e5m2,fp8_e4m3}, --tp-size.
// - Ollama, docs/faq.md and envconfig/config.go (github.com/ollama/ollama): OLLAMA_NUM_PARALLEL,
//   OLLAMA_CONTEXT_LENGTH, OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE {f16,q8_0,q4_0}; the
//   Modelfile parameter num_ctx (docs/modelfile.md).
// - TGI, launcher/src/main.rs (huggingface/text-generation-inference v3.0.0): --max-total-tokens,
//   --max-input-tokens, --max-batch-prefill-tokens, --max-concurrent-requests, --cuda-memory-fraction,
//   --kv-cache-dtype {fp8_e4m3fn,fp8_e5m2}, --num-shard.
// - TensorRT-LLM, tensorrt_llm/commands/serve.py (trtllm-serve): --max_batch_size, --max_seq_len,
//   --max_num_tokens, --kv_cache_free_gpu_memory_fraction, --tp_size, --pp_size.
// The settings a user sets come back in the same spellings (issue 9 review S2-1): vLLM
// --max-num-batched-tokens, --block-size, --swap-space, --kv-cache-memory-bytes, --enforce-eager,
// --enable-chunked-prefill (vllm/engine/arg_utils.py); llama.cpp -b, -ub, --swa-full, --kv-unified
// (common/arg.cpp); OLLAMA_GPU_OVERHEAD in bytes (envconfig/config.go).

#include "tst_reportutil.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/launchflags.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

using namespace headroom;

namespace {

const std::map<LaunchEngine, std::set<std::string>> kDocumented = {
    {LaunchEngine::Vllm,
     {"--max-model-len", "--max-num-seqs", "--gpu-memory-utilization", "--kv-cache-dtype", "--tensor-parallel-size",
      "--pipeline-parallel-size", "--quantization"}},
    {LaunchEngine::LlamaCpp, {"-c", "-np", "-ngl", "-ctk", "-ctv", "-fa"}},
    {LaunchEngine::SgLang,
     {"--context-length", "--max-running-requests", "--mem-fraction-static", "--kv-cache-dtype", "--tp-size",
      "--chunked-prefill-size", "--cuda-graph-max-bs", "--max-total-tokens", "--page-size"}},
    {LaunchEngine::Tgi,
     {"--max-total-tokens", "--max-input-tokens", "--max-batch-prefill-tokens", "--max-concurrent-requests",
      "--cuda-memory-fraction", "--kv-cache-dtype", "--num-shard"}},
    {LaunchEngine::TensorRtLlm,
     {"--max_batch_size", "--max_seq_len", "--max_num_tokens", "--kv_cache_free_gpu_memory_fraction", "--tp_size", "--pp_size"}},
    {LaunchEngine::Ollama, {"OLLAMA_NUM_PARALLEL", "OLLAMA_CONTEXT_LENGTH", "OLLAMA_FLASH_ATTENTION", "OLLAMA_KV_CACHE_TYPE", "num_ctx"}},
};

const std::map<std::string, std::set<std::string>> kDocumentedValues = {
    {"--kv-cache-dtype", {"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}},
    {"--quantization", {"fp8", "bitsandbytes"}},
    {"-ctk", {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}},
    {"-ctv", {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}},
    {"-fa", {"on", "off", "auto"}},
    {"OLLAMA_KV_CACHE_TYPE", {"f16", "q8_0", "q4_0"}},
};

LaunchFlags flagsFor(const std::string& engine, std::optional<std::uint64_t> users, std::optional<std::uint64_t> context,
                     const std::string& card = "rtx-4090", const std::string& kv = "fp16")
{
    // llama.cpp and Ollama run GGUF files: their plans are of q4_k (an int4-g128 plan is refused).
    const std::string weights = engine == "llama.cpp" || engine == "ollama" ? "q4_k" : "int4-g128";
    const PlanRequest r = test::profileRequest("llama-3.1-8b", weights, card, engine, users, context, kv);
    auto f = launchFlags(r, test::planOf(r));
    REQUIRE(f);
    return *f;
}

std::string value(const LaunchFlags& f, const std::string& name)
{
    for (const LaunchFlag& flag : f.flags)
        if (flag.name == name)
            return flag.value;
    FAIL("no flag " << name << " in: " << f.command);
    return {};
}

void checkDocumented(const LaunchFlags& f)
{
    const std::set<std::string>& names = kDocumented.at(f.engine);
    for (const LaunchFlag& flag : f.flags) {
        INFO(launchEngineName(f.engine) << " " << flag.name << " " << flag.value);
        CHECK(names.count(flag.name) == 1);
        if (auto v = kDocumentedValues.find(flag.name); v != kDocumentedValues.end()
            && !(f.engine == LaunchEngine::SgLang && flag.name == "--kv-cache-dtype"))
            CHECK(v->second.count(flag.value) == 1);
        if (flag.kind == LaunchFlagKind::Argument)
            CHECK(f.command.find(" " + flag.name + " " + flag.value) != std::string::npos);
        if (flag.kind == LaunchFlagKind::Environment)
            CHECK(f.command.find(flag.name + "=" + flag.value) != std::string::npos);
    }
}

} // namespace

TEST_CASE("vLLM: --max-model-len, --max-num-seqs, --gpu-memory-utilization, --kv-cache-dtype, --tensor-parallel-size",
          "[launchflags]")
{
    const LaunchFlags f = flagsFor("vllm", 4, 8192);
    checkDocumented(f);
    CHECK(f.engine == LaunchEngine::Vllm);
    CHECK(value(f, "--max-model-len") == "8192");
    CHECK(value(f, "--max-num-seqs") == "4");
    CHECK(value(f, "--gpu-memory-utilization") == "0.90"); // the profile's 0.9
    CHECK(value(f, "--kv-cache-dtype") == "auto");         // fp16 cache = the model's dtype
    CHECK(value(f, "--tensor-parallel-size") == "1");
    CHECK(f.command.rfind("vllm serve $MODEL --max-model-len 8192", 0) == 0);
    CHECK(!f.point.lowered);

    CHECK(value(flagsFor("vllm", 4, 8192, "rtx-4090", "fp8"), "--kv-cache-dtype") == "fp8");
}

TEST_CASE("vLLM: --quantization only where vLLM quantizes a 16-bit checkpoint at load", "[launchflags]")
{
    const auto flags = [](const std::string& weights, const std::string& checkpoint) {
        PlanRequest r = test::profileRequest("llama-3.1-8b", weights, "rtx-4090", "vllm", 4, 8192);
        r.model.defaultFormat = checkpoint;
        auto f = launchFlags(r, test::planOf(r));
        REQUIRE(f);
        checkDocumented(*f);
        return *f;
    };
    const auto has = [](const LaunchFlags& f, const std::string& name) {
        return std::any_of(f.flags.begin(), f.flags.end(), [&](const LaunchFlag& x) { return x.name == name; });
    };
    const auto notes = [](const LaunchFlags& f) {
        std::string all;
        for (const std::string& n : f.notes)
            all += n + "\n";
        return all;
    };
    // fp8 of the bf16 checkpoint: vLLM's online FP8 quantization.
    LaunchFlags f = flags("fp8", "bf16");
    CHECK(value(f, "--quantization") == "fp8");
    CHECK_THAT(f.command, Catch::Contains("--quantization fp8"));
    CHECK_THAT(notes(f), Catch::Contains("checkpoint in bf16 weights (vLLM quantizes it)"));
    // bitsandbytes NF4 in flight.
    CHECK(value(flags("nf4-bnb", "bf16"), "--quantization") == "bitsandbytes");
    // GPTQ/AWQ/int4 cannot be made at load: no flag, the checkpoint must carry them.
    f = flags("int4-g128", "bf16");
    CHECK_FALSE(has(f, "--quantization"));
    CHECK_THAT(notes(f), Catch::Contains("pre-quantized checkpoint"));
    // A pre-quantized checkpoint: vLLM reads its quantization_config; a flag would only risk a mismatch.
    f = flags("gptq-g128", "gptq-g128");
    CHECK_FALSE(has(f, "--quantization"));
    CHECK_THAT(notes(f), Catch::Contains("quantization_config (no --quantization)"));
    f = flags("fp8", "fp8");
    CHECK_FALSE(has(f, "--quantization"));
    // 16-bit weights: nothing to say.
    f = flags("bf16", "bf16");
    CHECK_FALSE(has(f, "--quantization"));
    CHECK_THAT(notes(f), !Catch::Contains("quantiz"));
}

TEST_CASE("llama.cpp: -c is the total over -np slots; -ngl, -ctk/-ctv, -fa", "[launchflags]")
{
    const LaunchFlags f = flagsFor("llama.cpp", 4, 8192);
    checkDocumented(f);
    CHECK(value(f, "-c") == "32768"); // 4 slots x 8,192 tokens
    CHECK(value(f, "-np") == "4");
    CHECK(value(f, "-ngl") == "999");
    CHECK(value(f, "-ctk") == "f16");
    CHECK(value(f, "-ctv") == "f16");
    CHECK(value(f, "-fa") == "on"); // the llama.cpp profile plans with flash attention

    const LaunchFlags q = flagsFor("llama.cpp", 4, 8192, "rtx-4090", "q8_0");
    CHECK(value(q, "-ctk") == "q8_0");
    CHECK(value(q, "-ctv") == "q8_0");
}

TEST_CASE("SGLang: --context-length, --max-running-requests, --mem-fraction-static", "[launchflags]")
{
    const LaunchFlags f = flagsFor("sglang", 4, 8192);
    checkDocumented(f);
    CHECK(value(f, "--context-length") == "8192");
    CHECK(value(f, "--max-running-requests") == "4");
    char expected[16];
    std::snprintf(expected, sizeof expected, "%.3f", sglangMemFractionStatic(Bytes{25386024960ull}, 1, 1));
    CHECK(value(f, "--mem-fraction-static") == expected); // ~0.85 on a 24 GB card (engines.md §5)
    CHECK(f.command.rfind("python -m sglang.launch_server --model-path $MODEL", 0) == 0);
}

TEST_CASE("Ollama: num_ctx and OLLAMA_NUM_PARALLEL", "[launchflags]")
{
    const LaunchFlags f = flagsFor("ollama", 4, 8192);
    checkDocumented(f);
    CHECK(value(f, "num_ctx") == "8192");
    CHECK(value(f, "OLLAMA_NUM_PARALLEL") == "4");
    CHECK(value(f, "OLLAMA_KV_CACHE_TYPE") == "f16");
    // From v0.30 an unset OLLAMA_FLASH_ATTENTION is llama-server's --flash-attn auto, on for CUDA
    // (llm/llama_server.go LlamaServerFlashAttention): the plan is with flash attention.
    CHECK(value(f, "OLLAMA_FLASH_ATTENTION") == "1");
    CHECK_THAT(f.command, Catch::Contains("PARAMETER num_ctx 8192"));
    CHECK_THAT(f.command, Catch::Contains("ollama serve"));
}

TEST_CASE("a context that does not fit is lowered to the most that fits for the users", "[launchflags]")
{
    const PlanRequest r = test::profileRequest("llama-3.1-8b", "int4-g128", "rtx-4060", "vllm", 4, 131072);
    const PlanResult p = test::planOf(r);
    REQUIRE(!p.fits);
    REQUIRE(p.maxContext);
    auto f = launchFlags(r, p);
    REQUIRE(f);
    CHECK(f->point.lowered);
    CHECK(f->point.contextTokens == *p.maxContext);
    CHECK(value(*f, "--max-model-len") == std::to_string(*p.maxContext));

    // No context asked: the most that fits for one user, capped at the model's 131,072.
    const LaunchFlags one = flagsFor("vllm", std::nullopt, std::nullopt);
    CHECK(one.point.users == 1);
    CHECK(one.point.contextTokens > 0);
    CHECK(one.point.contextTokens <= 131072);
}

TEST_CASE("TGI and TensorRT-LLM launch flags carry the plan's sizing settings", "[launchflags]")
{
    // TGI 2.x: the launcher's defaults priced by the plan (max-input-tokens 4,095, prefill 4,145).
    const LaunchFlags tgi = flagsFor("tgi@2.4", 8, 4096);
    checkDocumented(tgi);
    CHECK(tgi.command.rfind("text-generation-launcher --model-id ", 0) == 0);
    CHECK(value(tgi, "--max-total-tokens") == "4096");
    CHECK(value(tgi, "--max-input-tokens") == "4095");
    CHECK(value(tgi, "--max-batch-prefill-tokens") == "4145");
    CHECK(value(tgi, "--max-concurrent-requests") == "8");
    // TensorRT-LLM: the build limits and the KV share; KvCacheConfig fields in the YAML note.
    PlanRequest r = test::profileRequest("llama-3.1-8b", "int4-g128", "rtx-4090", "tensorrt-llm", 8, 4096, "fp16");
    r.engineSettings = {{"max_tokens", "50000"}, {"tokens_per_block", "64"}};
    auto trt = launchFlags(r, test::planOf(r));
    REQUIRE(trt);
    checkDocumented(*trt);
    CHECK(value(*trt, "--max_seq_len") == "4096");
    CHECK(value(*trt, "--max_batch_size") == "8");
    CHECK(value(*trt, "--kv_cache_free_gpu_memory_fraction") == "0.90");
    CHECK(std::any_of(trt->notes.begin(), trt->notes.end(), [](const std::string& n) {
        return n.find("kv_cache_config: { tokens_per_block: 64, max_tokens: 50000 }") != std::string::npos;
    }));
}

TEST_CASE("launch flags refuse what the engine cannot do", "[launchflags]")
{
    const auto error = [](const std::string& engine, const std::string& kv, const std::string& model = "llama-3.1-8b",
                          const std::string& format = "", const std::string& card = "rtx-4090") {
        const std::string weights = !format.empty() ? format : (engine == "llama.cpp" || engine == "ollama" ? "q4_k" : "int4-g128");
        const PlanRequest r = test::profileRequest(model, weights, card, engine, 1, 4096, kv);
        auto f = launchFlags(r, test::planOf(r));
        REQUIRE(!f);
        return f.error();
    };
    CHECK_THAT(error("llama.cpp", "fp8"), Catch::Contains("llama.cpp has no 'fp8' KV cache"));
    CHECK_THAT(error("vllm", "q8_0"), Catch::Contains("vLLM has no 'q8_0'"));
    CHECK_THAT(error("sglang", "q4_0"), Catch::Contains("SGLang has no"));
    CHECK_THAT(error("ollama", "fp8"), Catch::Contains("Ollama has no"));
    CHECK_THAT(error("tgi", "q8_0"), Catch::Contains("TGI has no 'q8_0' KV cache"));
    CHECK_THAT(error("vllm", "fp16", "llama-2-70b", "fp16", "rtx-4060"), Catch::Contains("nothing to launch"));
}

namespace {

// A plan of llama-3.1-8b on an RTX 4090 with @p settings typed as `--set KEY=VALUE`.
PlanRequest setRequest(const std::string& engine, const std::string& weights, std::vector<EngineSetting> settings,
                       std::optional<std::uint64_t> users = 4, std::optional<std::uint64_t> context = 8192)
{
    PlanRequest r = test::profileRequest("llama-3.1-8b", weights, "rtx-4090", engine, users, context);
    r.engineSettings = std::move(settings);
    return r;
}

LaunchFlags setFlags(const std::string& engine, const std::string& weights, std::vector<EngineSetting> settings,
                     std::optional<std::uint64_t> users = 4)
{
    const PlanRequest r = setRequest(engine, weights, std::move(settings), users);
    auto f = launchFlags(r, test::planOf(r));
    if (!f)
        FAIL(f.error());
    return *f;
}

bool hasFlag(const LaunchFlags& f, const std::string& name)
{
    return std::any_of(f.flags.begin(), f.flags.end(), [&](const LaunchFlag& x) { return x.name == name; });
}

} // namespace

// Issue 9 review S1-1: a format the engine cannot load leaves nothing to launch, with the plan's
// own reason (the verdict), not a command.
TEST_CASE("flags refuse a weight format the engine cannot load, with the plan's reason", "[launchflags]")
{
    const auto refused = [](const std::string& engine, const std::string& weights) {
        const PlanRequest r = setRequest(engine, weights, {});
        const PlanResult p = test::planOf(r);
        INFO(engine << " " << weights << ": " << p.verdict.reason);
        REQUIRE(p.verdict.state == FitState::DoesNotFit);
        CHECK(p.verdict.limit == FitLimit::EngineFormat);
        auto f = launchFlags(r, p);
        REQUIRE_FALSE(f);
        CHECK_THAT(f.error(), Catch::StartsWith("nothing to launch: llama-3.1-8b (" + weights + ") on rtx-4090 under "));
        CHECK_THAT(f.error(), Catch::EndsWith(p.verdict.reason));
    };
    refused("vllm", "q4_k");
    refused("llama.cpp", "gptq-g128");
    refused("llama.cpp", "awq-g128");
    refused("ollama", "gptq-g128");
    // What the engine loads still launches.
    CHECK(setFlags("llama.cpp", "q4_k", {}).command.rfind("llama-server", 0) == 0);
    CHECK(setFlags("vllm", "gptq-g128", {}).command.rfind("vllm serve", 0) == 0);
}

// S1-2: the fraction is the one the plan applied, not the profile's.
TEST_CASE("vLLM --gpu-memory-utilization is the applied setting", "[launchflags]")
{
    CHECK(value(setFlags("vllm", "int4-g128", {{"gpu-memory-utilization", "0.85"}}), "--gpu-memory-utilization") == "0.85");
    CHECK(value(setFlags("vllm", "int4-g128", {{"gpu-memory-utilization", "0.5"}}), "--gpu-memory-utilization") == "0.50");
    CHECK(value(setFlags("vllm", "int4-g128", {}), "--gpu-memory-utilization") == "0.90");
    // SGLang and TensorRT-LLM already took theirs from the applied setting.
    CHECK(value(setFlags("sglang", "int4-g128", {{"mem-fraction-static", "0.7"}}), "--mem-fraction-static") == "0.700");
    CHECK(value(setFlags("tensorrt-llm", "int4-g128", {{"free_gpu_memory_fraction", "0.6"}}), "--kv_cache_free_gpu_memory_fraction")
          == "0.60");
}

// S2-1: every setting the user set comes back in the engine's own spelling.
TEST_CASE("flags emit the settings the user set, in the engine's spelling", "[launchflags]")
{
    SECTION("vLLM")
    {
        const LaunchFlags f = setFlags("vllm", "int4-g128",
                                       {{"max-num-batched-tokens", "4096"},
                                        {"block-size", "32"},
                                        {"enforce-eager", "true"},
                                        {"swap-space", "8"},
                                        {"enable-chunked-prefill", "true"},
                                        {"kv-cache-memory-bytes", "4GiB"}});
        CHECK(value(f, "--max-num-batched-tokens") == "4096");
        CHECK(value(f, "--block-size") == "32");
        CHECK(value(f, "--swap-space") == "8");
        CHECK(value(f, "--kv-cache-memory-bytes") == "4294967296");
        CHECK(value(f, "--enforce-eager").empty());
        CHECK(value(f, "--enable-chunked-prefill").empty());
        CHECK_THAT(f.command, Catch::Contains(" --enforce-eager") && Catch::Contains(" --block-size 32"));
        // Not set: not emitted (the defaults' output stays as it was).
        const LaunchFlags d = setFlags("vllm", "int4-g128", {});
        CHECK_FALSE(hasFlag(d, "--block-size"));
        CHECK_FALSE(hasFlag(d, "--enforce-eager"));
        CHECK_FALSE(hasFlag(d, "--max-num-batched-tokens"));
    }
    SECTION("llama.cpp")
    {
        const LaunchFlags f = setFlags("llama.cpp", "q4_k",
                                       {{"batch-size", "4096"}, {"ubatch-size", "2048"}, {"swa-full", "true"}, {"kv-unified", "true"}});
        CHECK(value(f, "-b") == "4096");
        CHECK(value(f, "-ub") == "2048");
        CHECK(hasFlag(f, "--swa-full"));
        CHECK(hasFlag(f, "--kv-unified"));
        CHECK_THAT(f.command, Catch::Contains(" -b 4096 -ub 2048 --swa-full --kv-unified "));
        const LaunchFlags d = setFlags("llama.cpp", "q4_k", {});
        CHECK_FALSE(hasFlag(d, "-b"));
        CHECK_FALSE(hasFlag(d, "-ub"));
        CHECK_FALSE(hasFlag(d, "--swa-full"));
    }
    SECTION("Ollama")
    {
        const LaunchFlags f = setFlags("ollama", "q4_k", {{"OLLAMA_GPU_OVERHEAD", "1GiB"}});
        CHECK(value(f, "OLLAMA_GPU_OVERHEAD") == "1073741824");
        CHECK_THAT(f.command, Catch::Contains("OLLAMA_GPU_OVERHEAD=1073741824 "));
        CHECK_FALSE(hasFlag(setFlags("ollama", "q4_k", {}), "OLLAMA_GPU_OVERHEAD"));
    }
    SECTION("SGLang and TensorRT-LLM: the sequence cap as set, not the users")
    {
        CHECK(value(setFlags("sglang", "int4-g128", {{"max-running-requests", "32"}}), "--max-running-requests") == "32");
        CHECK(value(setFlags("sglang", "int4-g128", {}), "--max-running-requests") == "4");
        const LaunchFlags t = setFlags("tensorrt-llm", "int4-g128", {{"max_batch_size", "64"}, {"max_tokens", "20000"}});
        CHECK(value(t, "--max_batch_size") == "64");
        std::string notes;
        for (const std::string& n : t.notes)
            notes += n + "\n";
        CHECK_THAT(notes, Catch::Contains("max_tokens: 20000"));
        CHECK(value(setFlags("tensorrt-llm", "int4-g128", {}), "--max_batch_size") == "4");
    }
}
