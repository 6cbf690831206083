// The host-only card "cpu" (card.h hostCard, Card::hostOnly): llama.cpp on the CPU with no GPU at
// all, its bill the host's alone (CPU_Mapped model buffer, CPU_REPACK copy, CPU KV, CPU compute and
// output buffers), judged against --host-ram; the engines Headroom plans on a GPU only refuse it.
// Before (review of issue 11, S1), `-c cpu` was an unknown card.
#include "fixtures.h"
#include "planfigure.h"

#include "headroom/core/launchflags.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/splitbill.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

PlanRequest cpuRequest(const char* model, const char* format, const char* engine)
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    const ModelProfile* m = set->findModel(model);
    REQUIRE(m);
    r.model = *m;
    r.format = *findFormat(format);
    r.kvDtype = *findKvDtype("fp16");
    auto card = resolveCard("cpu", *set);
    REQUIRE(card);
    r.card = *card;
    auto e = resolveEngine(engine, *set);
    REQUIRE(e);
    r.engine = *e;
    r.users = 4;
    r.contextTokens = 8192;
    return r;
}

} // namespace

TEST_CASE("cpu only: the card cpu is the host alone", "[cpuonly]")
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    const auto card = resolveCard("cpu", *set);
    REQUIRE(card);
    CHECK(card->hostOnly);
    CHECK(card->totalBytes.value == 0);
    CHECK(card->bandwidthGBps == Approx(89.6)); // dual-channel DDR5-5600, speed/splitspeed.h
    CHECK_FALSE(resolveCard("cpu0", *set));
}

TEST_CASE("cpu only: llama.cpp Qwen2.5-7B Q4_K_M on the host, every buffer the CPU's", "[cpuonly]")
{
    const PlanRequest r = cpuRequest("qwen2.5-7b", "q4_k_m", "llama.cpp");
    const auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->hostOnly);
    // No device: no CUDA context, no --fit margin, no device compute buffer.
    CHECK(p->overheads.empty());
    CHECK(p->reserved.empty());
    CHECK(p->usableBytes.value == 0);
    for (const EngineFigure& f : p->engineFigures) {
        INFO(f.printed);
        CHECK(f.printed.find("CUDA") == std::string::npos);
    }
    const SplitBill b = splitBill(*p);
    CHECK(b.partial);
    CHECK(b.hostOnly);
    CHECK(b.gpuLayers == 0);
    CHECK(b.totalLayers == 29);
    CHECK(b.gpu.empty());
    // The whole file is mapped (every tensor on the CPU): the plan's 4,677,120,000 B of weights.
    CHECK(testfixtures::engineFigure(*p, "host_weights_bytes") == Approx(static_cast<double>(p->weightsBytes.value)).margin(0.5));
    CHECK(p->weightsBytes.value == 4677120000);
    // Every layer's KV on the CPU: 28 x 2 x 4 x 128 x 2 B x 32,768 cells = 1,792 MiB.
    CHECK(b.hostKvBytes.value == 28ull * 2 * 4 * 128 * 2 * 32768);
    CHECK(testfixtures::engineFigure(*p, "gpu_kv_buffer_bytes") == 0);
    CHECK(testfixtures::engineFigure(*p, "gpu_weights_bytes") == 0);
    // The Q4_K matrices get their AVX2 repack copy besides the mapped pages (less than the file).
    CHECK(testfixtures::engineFigure(*p, "host_repack_bytes") > 0);
    CHECK(testfixtures::engineFigure(*p, "host_repack_bytes") < static_cast<double>(p->weightsBytes.value));
    // The verdict: CPU only, the host's bill named; no limit binds.
    REQUIRE(p->verdict.state == FitState::PartialOffload);
    CHECK(placementOf(*p) == Placement::CpuOnly);
    CHECK(p->verdict.limit == FitLimit::None);
    CHECK(verdictLabel(*p) == "CPU only");
    CHECK(p->verdict.detail == "CPU only: " + formatBytes(b.hostBytes()) + " RAM");
    CHECK(p->verdict.reason.rfind("CPU only: no GPU, all 29 layers on the host, ", 0) == 0);
    CHECK(static_cast<double>(b.hostBytes().value) / static_cast<double>(kGiB) == Approx(9.32).margin(0.01));
    CHECK(p->verdict.headline.value == 8192);
    // Speed: the host's bandwidth reads every weight and the KV (no GPU part).
    REQUIRE(p->speed);
    REQUIRE(p->speed->split);
    CHECK(p->speed->split->speed.gpuMs == 0);
    CHECK(p->speed->split->speed.hostMs > 0);
    // flags: -ngl 0, no offload flag.
    const auto flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find(" -ngl 0 ") != std::string::npos);
}

TEST_CASE("cpu only: the host side is checked against --host-ram", "[cpuonly]")
{
    PlanRequest r = cpuRequest("qwen2.5-7b", "q4_k_m", "llama.cpp");
    r.hostMemoryBytes = Bytes{16 * kGiB};
    const auto fits = makePlan(r);
    REQUIRE(fits);
    CHECK(fits->verdict.state == FitState::PartialOffload);
    r.hostMemoryBytes = Bytes{8 * kGiB};
    const auto small = makePlan(r);
    REQUIRE(small);
    CHECK(small->verdict.state == FitState::DoesNotFit);
    CHECK(small->verdict.limit == FitLimit::HostMemory);
    CHECK(small->verdict.reason.find("more than the 8.00 GiB of host memory (--host-ram)") != std::string::npos);
}

TEST_CASE("cpu only: the engines planned on a GPU refuse the host-only card, saying why", "[cpuonly]")
{
    for (const char* engine : {"vllm", "sglang", "tgi", "tensorrt-llm"}) {
        INFO(engine);
        const auto p = makePlan(cpuRequest("qwen2.5-7b", "bf16", engine));
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::DoesNotFit);
        CHECK(p->verdict.limit == FitLimit::EngineNeedsGpu);
        CHECK(p->verdict.engineCannotRun());
        CHECK(p->verdict.reason.find("needs a GPU") != std::string::npos);
        CHECK(p->verdict.reason.find("--engine llama.cpp") != std::string::npos);
        CHECK(fitLimitFromId(fitLimitId(FitLimit::EngineNeedsGpu)) == FitLimit::EngineNeedsGpu);
    }
}

TEST_CASE("cpu only: --offload none on a GPU card keeps no model or KV buffer on CUDA0", "[cpuonly]")
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r = cpuRequest("qwen2.5-7b", "q4_k_m", "llama.cpp");
    r.card = *set->findCard("rtx-4060");
    r.gpuLayers = 0;
    const auto p = makePlan(r);
    REQUIRE(p);
    CHECK_FALSE(p->hostOnly);
    CHECK(testfixtures::engineFigure(*p, "gpu_weights_bytes") == 0);
    CHECK(testfixtures::engineFigure(*p, "gpu_kv_buffer_bytes") == 0);
    // llama.cpp prints no CUDA0 model or KV buffer line at -ngl 0 (it allocates none); its CUDA0
    // compute buffer stays (ggml-org/ci ggml-4-x86-cuda-v100, build 3854: -ngl 0, "CUDA0 compute
    // buffer size = 16.28 MiB").
    for (const EngineFigure& f : p->engineFigures) {
        INFO(f.printed);
        CHECK(f.printed.find("CUDA0 model buffer") == std::string::npos);
        CHECK(f.printed.find("CUDA0 KV buffer") == std::string::npos);
    }
    CHECK(placementOf(*p) == Placement::CpuOnly);
    // The verdict reads as the CPU-only state, and no limit binds: -ngl 0 was asked (issue 11
    // review, S2: "partial offload", the weights binding, before).
    CHECK(verdictLabel(*p) == "CPU only");
    CHECK(p->verdict.limit == FitLimit::None);
    CHECK(p->verdict.reason.rfind("CPU only (0/29 layers on the GPU), ", 0) == 0);
}
