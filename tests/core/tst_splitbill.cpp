// splitbill.h and offloadsweep.h: the two sides of a layer split named from the engine's printed
// figures, and the same request planned at every -ngl (what the app's GPU-layers slider and speed
// plot per split show).
#include "archfixtures.h"
#include "fixtures.h"
#include "planfigure.h"

#include "headroom/core/launchflags.h"
#include "headroom/core/offloadsweep.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/speed/hostbandwidth.h"
#include "headroom/core/speed/splitspeed.h"
#include "headroom/core/splitbill.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {

// Llama-3.1-8B in q4_0 under @p engine on an RTX 4060 (8 GB, 272 GB/s), 1 user x 4,096 tokens.
PlanRequest splitRequest(const char* engine)
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    r.model.id = "llama-3.1-8b";
    r.model.architecture = test::llama31_8b();
    r.format = *findFormat("q4_0");
    r.kvDtype = *findKvDtype("fp16");
    const Card* card = set->findCard("rtx-4060");
    REQUIRE(card);
    r.card = *card;
    auto e = resolveEngine(engine, *set);
    REQUIRE(e);
    r.engine = *e;
    r.users = 1;
    r.contextTokens = 4096;
    return r;
}

} // namespace

TEST_CASE("split bill: llama.cpp -ngl 20 of 33, each side from the printed buffers", "[splitbill][offload]")
{
    PlanRequest r = splitRequest("llama.cpp");
    r.gpuLayers = 20;
    const auto p = makePlan(r);
    REQUIRE(p);
    const SplitBill b = splitBill(*p);
    CHECK(b.layerSplit);
    CHECK(b.gpuLayers == 20);
    CHECK(b.totalLayers == 33);
    CHECK(b.hostWeightsMapped); // mmap is llama.cpp's default: CPU_Mapped
    REQUIRE(b.host.size() >= 4);
    CHECK(b.host[0].name == "host_weights_bytes");
    CHECK(b.host[0].label == "weights (mapped file pages, mmap)");
    CHECK(b.host[0].note.find("CPU_Mapped model buffer size") != std::string::npos);
    // The host side is exactly the printed host buffers, and the verdict names that sum.
    const double expected = testfixtures::engineFigure(*p, "host_weights_bytes") + testfixtures::engineFigure(*p, "host_kv_buffer_bytes")
        + testfixtures::engineFigure(*p, "host_split_compute_buffer_bytes") + testfixtures::engineFigure(*p, "output_buffer_bytes")
        + testfixtures::engineFigure(*p, "host_repack_bytes");
    CHECK(static_cast<double>(b.hostBytes().value) == Approx(expected).margin(0.5));
    CHECK(hostMemoryBytes(*p) == b.hostBytes());
    CHECK(p->verdict.detail == "partial: 20/33 layers, " + formatBytes(b.hostBytes()) + " RAM");
    CHECK(p->verdict.reason.find("20/33 layers on the GPU, " + formatBytes(b.hostBytes()) + " in host memory") != std::string::npos);
    // The GPU side: its model and KV buffers and the plan's overheads, within what the card allows.
    REQUIRE(b.gpu.size() >= 3);
    CHECK(b.gpu.front().name == "gpu_weights_bytes");
    CHECK(b.gpu.back().name == "gpu_kv_buffer_bytes");
    CHECK(b.gpu.front().bytes.value == static_cast<std::uint64_t>(testfixtures::engineFigure(*p, "gpu_weights_bytes")));
    CHECK(b.gpuBytes() <= p->usableBytes);
    // -ngl 20 counts the output layer: 19 of the 32 repeating layers, and their KV, on the GPU.
    CHECK(static_cast<double>(b.gpu.back().bytes.value)
          == Approx((testfixtures::engineFigure(*p, "gpu_kv_buffer_bytes") + testfixtures::engineFigure(*p, "host_kv_buffer_bytes")) * 19.0 / 32.0).epsilon(0.001));
}

TEST_CASE("split capacity: a split's resident tokens, max context and launch point are its own cells", "[splitbill][offload]")
{
    // 4 users x 2,048 tokens with -ngl 20: llama.cpp allocates n_ctx = 8,192 cells (n_ctx_seq 2,048
    // each), whatever the card's pool (empty: the weights do not fit it whole) would give. Before
    // (review of the faces), plan printed "max resident tokens 0", and flags and the report said
    // "nothing to launch" for a split that loads.
    PlanRequest r = splitRequest("llama.cpp");
    r.gpuLayers = 20;
    r.users = 4;
    r.contextTokens = 2048;
    const auto p = makePlan(r);
    REQUIRE(p);
    REQUIRE(p->verdict.state == FitState::PartialOffload);
    const SplitBill b = splitBill(*p);
    CHECK(b.contextTokensPerSequence == 2048);
    CHECK(b.contextTokensPerSequence == static_cast<std::uint64_t>(testfixtures::engineFigure(*p, "offload_context_tokens")));
    CHECK(b.sequences == 4);
    CHECK(b.residentTokens == 8192);
    CHECK(p->maxResidentTokens == 8192);
    REQUIRE(p->maxContext);
    CHECK(*p->maxContext == 2048);
    CHECK(p->verdict.headline.value == 2048); // max context per user for 4 users
    CHECK(b.hostWeightsNote.find("mapped with mmap, not a copy") != std::string::npos);
    // The launch point and flags: the split's users and context, -ngl 20 (what `flags` and the
    // report print, from this one function).
    const auto point = launchPoint(*p);
    REQUIRE(point);
    CHECK(point->users == 4);
    CHECK(point->contextTokens == 2048);
    CHECK_FALSE(point->lowered);
    const auto flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find(" -c 8192 -np 4 -ngl 20 ") != std::string::npos);

    // One user, no users asked: the resident tokens are the one sequence's context.
    PlanRequest one = splitRequest("llama.cpp");
    one.gpuLayers = 20;
    one.users.reset();
    const auto q = makePlan(one);
    REQUIRE(q);
    REQUIRE(q->verdict.state == FitState::PartialOffload);
    CHECK(q->maxResidentTokens == splitBill(*q).contextTokensPerSequence * splitBill(*q).sequences);
    CHECK(q->maxResidentTokens > 0);
    REQUIRE(launchPoint(*q));
    CHECK(launchPoint(*q)->contextTokens == splitBill(*q).contextTokensPerSequence);
}

TEST_CASE("split speed: the host bandwidth in words, as given or assumed", "[splitbill][speed]")
{
    CHECK(hostBandwidthText(std::nullopt) == "89.6 GB/s assumed: dual-channel DDR5-5600");
    CHECK(hostBandwidthText(*parseHostBandwidth("ddr4-3200x2")) == "51.2 GB/s, as given");
    // The plan's note names the same words.
    PlanRequest r = splitRequest("llama.cpp");
    r.gpuLayers = 20;
    r.hostBandwidthGBps = 51.2;
    const auto p = makePlan(r);
    REQUIRE(p);
    const bool named = std::any_of(p->notes.begin(), p->notes.end(), [](const std::string& n) {
        return n.rfind("split speed:", 0) == 0 && n.find("at 51.2 GB/s, as given,") != std::string::npos;
    });
    CHECK(named);
}

TEST_CASE("split bill: nothing in host memory gives an empty bill", "[splitbill][offload]")
{
    PlanRequest r = splitRequest("vllm");
    r.format = *findFormat("int4-g128");
    r.card = anonymousCard("test", Bytes{24 * kGiB});
    const auto p = makePlan(r);
    REQUIRE(p);
    const SplitBill b = splitBill(*p);
    CHECK_FALSE(b.layerSplit);
    CHECK(b.host.empty());
    CHECK(b.gpu.empty());
    CHECK(hostMemoryBytes(*p).value == 0);
}

TEST_CASE("offload sweep: every -ngl from 0 to 33, each the plan of --offload N", "[splitbill][offload]")
{
    const PlanRequest r = splitRequest("llama.cpp");
    CHECK(offloadLayerCount(r) == 33);
    const auto steps = offloadSweep(r);
    REQUIRE(steps);
    REQUIRE(steps->size() == 34);
    CHECK(steps->front().placement == Placement::CpuOnly);
    CHECK(steps->front().state == FitState::PartialOffload);
    // Each step is the plan of that --offload N.
    for (const std::uint32_t n : {0u, 16u, 33u}) {
        PlanRequest one = r;
        one.gpuLayers = n;
        const auto p = makePlan(one);
        REQUIRE(p);
        const OffloadStep& s = (*steps)[n];
        CHECK(s.gpuLayers == n);
        CHECK(s.state == p->verdict.state);
        CHECK(s.placement == placementOf(*p));
        CHECK(s.headline == p->verdict.headline.value);
        CHECK(s.hostBytes == hostMemoryBytes(*p));
        REQUIRE(p->speed);
        CHECK(s.decodeTokensPerSecond == Approx(p->speed->decodeTokensPerSecond));
    }
    // More layers on the GPU: less in host memory and a faster step, while it loads.
    for (std::size_t n = 1; n < steps->size(); ++n) {
        if ((*steps)[n].state == FitState::DoesNotFit)
            continue;
        CHECK((*steps)[n].hostBytes < (*steps)[n - 1].hostBytes);
        CHECK((*steps)[n].decodeTokensPerSecond > (*steps)[n - 1].decodeTokensPerSecond);
    }
    // 4.3 GiB of q4_0 weights and 0.5 GiB of KV fit the 8 GB card whole.
    CHECK(steps->back().placement == Placement::FullGpu);
}

TEST_CASE("offload sweep: an engine without layer offload has no steps", "[splitbill][offload]")
{
    const PlanRequest r = splitRequest("vllm");
    CHECK(offloadLayerCount(r) == 0);
    const auto steps = offloadSweep(r);
    REQUIRE(steps);
    CHECK(steps->empty());
}
