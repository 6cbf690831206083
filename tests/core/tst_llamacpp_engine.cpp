// The llama.cpp and Ollama engine units through makePlan: what they bill, print and refuse.
#include "archfixtures.h"
#include "fixtures.h"

#include "headroom/core/engines/llamacppmemory.h"
#include "headroom/core/launchflags.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

PlanRequest llamaRequest(const char* engine, const char* format = "q4_k")
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    r.model.id = "llama-3.1-8b";
    r.model.architecture = test::llama31_8b();
    const auto f = findFormat(format);
    REQUIRE(f);
    r.format = *f;
    r.kvDtype = *findKvDtype("fp16");
    r.card = anonymousCard("test", Bytes{25'386'024'960ull}); // RTX 4090
    auto e = resolveEngine(engine, *set);
    REQUIRE(e);
    r.engine = *e;
    return r;
}

const EngineFigure* figure(const PlanResult& p, const std::string& name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name)
            return &f;
    return nullptr;
}

const OverheadItem* overhead(const PlanResult& p, const std::string& name)
{
    for (const OverheadItem& i : p.overheads)
        if (i.name == name)
            return &i;
    return nullptr;
}

} // namespace

TEST_CASE("llama.cpp engine: its own compute buffer, KV at -c/-np, host output buffer", "[llamacpp][engines]")
{
    PlanRequest r = llamaRequest("llama.cpp");
    r.engineSettings = {{"c", "800"}, {"np", "8"}}; // 100 tokens x 8 sequences
    const auto p = makePlan(r);
    REQUIRE(p);
    // 8 streams of 256 cells: 2,048 cells x 128 KiB, not 1,024.
    REQUIRE(figure(*p, "kv_cells"));
    CHECK(figure(*p, "kv_cells")->value == 256);
    CHECK(figure(*p, "kv_buffer_bytes")->value == 2048.0 * 131'072);
    // Printed as llama-server prints them.
    CHECK(figure(*p, "kv_buffer_bytes")->printed == "llama_kv_cache: KV buffer size = 256.00 MiB (all layers)");
    CHECK(figure(*p, "kv_cells")->printed.starts_with("llama_kv_cache: size = "));
    CHECK(figure(*p, "compute_buffer_bytes")->printed.starts_with("sched_reserve: CUDA0 compute buffer size = "));
    CHECK(figure(*p, "n_ctx")->value == 2048);
    // The compute buffer holds the reserve graph's logits: 128,256 x 512 x 4 B.
    const OverheadItem* compute = overhead(*p, "compute_buffer");
    REQUIRE(compute);
    CHECK(compute->bytes.value >= 128'256ull * 512 * 4);
    CHECK(overhead(*p, "activation_peak") == nullptr);
    CHECK(figure(*p, "output_buffer_bytes")->value == 128'256.0 * 8 * 4);
    // Each sequence padded on its own: 256-cell blocks per sequence.
    CHECK(p->paging.blockTokens == 256);
    // token_embd (untied) stays in host memory.
    bool noted = false;
    for (const std::string& n : p->notes)
        noted = noted || n.find("token_embd") != std::string::npos;
    CHECK(noted);
}

TEST_CASE("llama.cpp engine refuses GPTQ/AWQ weights and a quantized V cache without flash attention", "[llamacpp][engines]")
{
    PlanRequest r = llamaRequest("llama.cpp", "gptq-g128");
    auto p = makePlan(r);
    REQUIRE(p);
    CHECK_FALSE(p->fits);
    CHECK(p->verdict.limit == FitLimit::EngineFormat);

    r = llamaRequest("llama.cpp");
    r.engineSettings = {{"fa", "off"}, {"ctk", "q8_0"}, {"ctv", "q8_0"}};
    p = makePlan(r);
    REQUIRE(p);
    CHECK_FALSE(p->fits);
    CHECK(p->verdict.limit == FitLimit::EngineRefusesToStart);
    CHECK(p->reason.find("quantized V cache requires flash_attn") != std::string::npos);

    r.engineSettings = {{"fa", "off"}, {"ctk", "q8_0"}, {"ctv", "f16"}}; // a quantized K alone runs
    p = makePlan(r);
    REQUIRE(p);
    CHECK(p->fits);
}

TEST_CASE("Ollama v0.5 prints its own estimate; the current Ollama runs llama-server", "[ollama][engines]")
{
    PlanRequest r = llamaRequest("ollama@0.5.1");
    r.engineSettings = {{"num_ctx", "2048"}, {"OLLAMA_NUM_PARALLEL", "4"}, {"OLLAMA_KV_CACHE_TYPE", "q8_0"}};
    auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->kvDtypeId == "fp16"); // no flash attention: Ollama falls back to f16
    REQUIRE(figure(*p, "compute_buffer_bytes"));
    REQUIRE(overhead(*p, "graph"));

    r = llamaRequest("ollama");
    r.engineSettings = {{"num_ctx", "100"}, {"OLLAMA_NUM_PARALLEL", "8"}};
    p = makePlan(r);
    REQUIRE(p);
    // llama-server -c 800 -np 8: 8 streams of 256 cells.
    REQUIRE(figure(*p, "kv_cells"));
    CHECK(figure(*p, "kv_cells")->value == 256);
    CHECK(figure(*p, "kv_buffer_bytes")->value == 2048.0 * 131'072);
    // Printed as llama-server's own lines (%.2f MiB, src/llama-kv-cache.cpp), not a bare "256.0 MiB".
    CHECK(figure(*p, "kv_buffer_bytes")->printed == "llama_kv_cache: KV buffer size = 256.00 MiB (all layers)");
    CHECK(figure(*p, "kv_cells")->printed.starts_with("llama_kv_cache: size = "));
    CHECK(figure(*p, "compute_buffer_bytes")->printed.starts_with("sched_reserve: CUDA0 compute buffer size = "));
}

TEST_CASE("llama.cpp partial offload: Llama-2-13B q4_0 on an 8 GiB card", "[llamacpp][engines][offload]")
{
    PlanRequest r = llamaRequest("llama.cpp", "q4_0");
    r.model.id = "llama-2-13b";
    r.model.architecture = test::llama2_13b();
    r.card = anonymousCard("8GiB", Bytes{8 * kGiB});
    auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->verdict.state == FitState::PartialOffload);
    const EngineFigure* n = figure(*p, "offload_gpu_layers");
    REQUIRE(n);
    CHECK(n->value > 0);
    CHECK(n->value < 41);
    CHECK(n->printed.find("/41 layers to GPU") != std::string::npos);
    // The GPU side fits what --fit keeps: usable - context - compute at the 4,096-token minimum.
    REQUIRE(figure(*p, "host_weights_bytes"));
    CHECK(figure(*p, "host_weights_bytes")->value > 0);
    // -ngl given: that split, and flags emit it.
    r.engineSettings = {{"ngl", "10"}};
    p = makePlan(r);
    REQUIRE(p);
    CHECK(figure(*p, "offload_gpu_layers")->value == 10);
    CHECK(p->reason.find("10/41 layers on the GPU") != std::string::npos);
    // On a 24 GB card everything is on the GPU: no split figures.
    r.engineSettings.clear();
    r.card = anonymousCard("24GiB", Bytes{24 * kGiB});
    p = makePlan(r);
    REQUIRE(p);
    CHECK(figure(*p, "offload_gpu_layers") == nullptr);
}

TEST_CASE("llama.cpp: the offload option is -ngl, and the free memory lowers what --fit has", "[llamacpp][engines][offload]")
{
    PlanRequest r = llamaRequest("llama.cpp", "q4_0");
    r.model.id = "llama-2-13b";
    r.model.architecture = test::llama2_13b();
    r.card = anonymousCard("24GiB", Bytes{24 * kGiB});
    r.gpuLayers = 12;
    auto p = makePlan(r);
    REQUIRE(p);
    REQUIRE(figure(*p, "offload_gpu_layers"));
    CHECK(figure(*p, "offload_gpu_layers")->value == 12);
    CHECK(p->verdict.state == FitState::PartialOffload);
    // --offload and the engine's own -ngl must agree.
    r.engineSettings = {{"ngl", "10"}};
    CHECK_FALSE(makePlan(r));
    r.engineSettings.clear();
    r.gpuLayers.reset();
    // 24 GiB total but only 6 GiB free now: usable is free - the 1 GiB fit target, and the model splits.
    r.freeBytes = Bytes{6 * kGiB};
    p = makePlan(r);
    REQUIRE(p);
    CHECK(p->usableBytes.value == 5 * kGiB);
    CHECK(p->verdict.state == FitState::PartialOffload);
    REQUIRE(figure(*p, "offload_gpu_layers"));
    CHECK(figure(*p, "offload_gpu_layers")->value < 41);
}

TEST_CASE("llama.cpp: an -ngl split whose GPU side exceeds the card does not load", "[llamacpp][engines][offload][verdict]")
{
    // README: plan -m llama-2-13b -w q4_k -c rtx-4060 --engine llama.cpp --offload 20 at 4 users x
    // 4,096 tokens: 20 layers put 3.24 GiB of weights and 5.94 GiB of KV on a 7.79 GiB card (it
    // said "partial offload").
    PlanRequest r = llamaRequest("llama.cpp", "q4_k");
    r.model.id = "llama-2-13b";
    r.model.architecture = test::llama2_13b();
    r.card = anonymousCard("rtx-4060", Bytes{8'360'296'448ull});
    r.users = 4;
    r.contextTokens = 4096;
    r.gpuLayers = 20;
    auto p = makePlan(r);
    REQUIRE(p);
    INFO(p->verdict.reason);
    CHECK(p->verdict.state == FitState::DoesNotFit);
    CHECK(p->verdict.limit == FitLimit::EngineRefusesToStart);
    CHECK(p->verdict.reason.find("-ngl 20 puts") != std::string::npos);
    CHECK_FALSE(p->verdict.loads());
    // 5 layers fit beside their KV: a split that loads.
    r.gpuLayers = 5;
    p = makePlan(r);
    REQUIRE(p);
    CHECK(p->verdict.state == FitState::PartialOffload);
    // Unasked, --fit picks the layers that fit: a split that loads too.
    r.gpuLayers.reset();
    p = makePlan(r);
    REQUIRE(p);
    CHECK(p->verdict.state == FitState::PartialOffload);
    // A split llama.cpp refuses for another reason (-np over 256) does not load either.
    r.users = 300;
    r.contextTokens = 256;
    r.gpuLayers = 2;
    p = makePlan(r);
    REQUIRE(p);
    CHECK(p->verdict.state == FitState::DoesNotFit);
    CHECK(p->verdict.limit == FitLimit::EngineRefusesToStart);
}

TEST_CASE("An engine without layer offload refuses --offload, saying so", "[engines][offload]")
{
    PlanRequest r = llamaRequest("vllm", "int4-g128");
    r.gpuLayers = 20;
    auto p = makePlan(r);
    REQUIRE(p);
    CHECK_FALSE(p->fits);
    CHECK(p->reason.find("keeps every layer on the GPU") != std::string::npos);
    r.gpuLayers = 33; // all layers: nothing asked of the host
    p = makePlan(r);
    REQUIRE(p);
    CHECK(p->reason.find("keeps every layer on the GPU") == std::string::npos);
}

TEST_CASE("llama.cpp CPU-only plan: placement, host RAM check and flags", "[llamacpp][engines][offload]")
{
    PlanRequest r = llamaRequest("llama.cpp", "q4_0");
    r.gpuLayers = 0;
    r.users = 1;
    r.contextTokens = 4096;
    auto p = makePlan(r);
    REQUIRE(p);
    CHECK(placementOf(*p) == Placement::CpuOnly);
    CHECK(p->reason.find("CPU only (0/33 layers on the GPU)") != std::string::npos);
    CHECK(p->verdict.headline.value == 4096); // the context the split holds, never 0
    REQUIRE(figure(*p, "host_repack_bytes"));
    auto flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find("-ngl 0") != std::string::npos);
    // More than the host has: does not fit, the host memory binds.
    r.hostMemoryBytes = Bytes{4 * kGiB};
    p = makePlan(r);
    REQUIRE(p);
    CHECK(placementOf(*p) == Placement::TooLarge);
    CHECK(p->verdict.limit == FitLimit::HostMemory);
    // A split with --n-cpu-moe and --no-kv-offload: the flags carry both.
    r.hostMemoryBytes.reset();
    r.gpuLayers = 20;
    r.engineSettings = {{"n-cpu-moe", "2"}, {"no-kv-offload", "true"}};
    p = makePlan(r);
    REQUIRE(p);
    CHECK(placementOf(*p) == Placement::Partial);
    flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find("-ngl 20") != std::string::npos);
    CHECK(flags->command.find("--n-cpu-moe 2") != std::string::npos);
    CHECK(flags->command.find("--no-kv-offload") != std::string::npos);
}
