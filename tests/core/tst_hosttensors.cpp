// splitbill.h's partial plans with every layer on the GPU: llama.cpp --n-cpu-moe N keeps the routed
// experts of layers [0, N) in host memory (common/arg.cpp: one override
// blk\.i\.ffn_(up|down|gate)_exps=CPU per layer i < N), --no-kv-offload keeps every layer's KV
// there (src/llama-kv-cache.cpp: a layer's K/V on its layer's device only with offload_kqv). Before
// (review of issue 11, S1) such a plan was judged as a full-GPU one: "does not fit: weights 16.04 >
// 6.79 GiB" for Qwen3-30B-A3B with --n-cpu-moe on an RTX 4060, a GPU-only verdict with -nkvo.
#include "fixtures.h"
#include "planfigure.h"

#include "headroom/core/engines/llamacppoffload.h"
#include "headroom/core/launchflags.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/splitbill.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

// @p model in @p format under llama.cpp (current, --fit on) on an RTX 4060 (7.79 GiB), with the
// CLI's defaults: 4 users x 8,192 tokens.
PlanRequest hostTensorsRequest(const char* model, const char* format)
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    const ModelProfile* m = set->findModel(model);
    REQUIRE(m);
    r.model = *m;
    r.format = *findFormat(format);
    r.kvDtype = *findKvDtype("fp16");
    const Card* card = set->findCard("rtx-4060");
    REQUIRE(card);
    r.card = *card;
    auto e = resolveEngine("llama.cpp", *set);
    REQUIRE(e);
    r.engine = *e;
    r.users = 4;
    r.contextTokens = 8192;
    return r;
}

// Qwen3-30B-A3B's routed experts of one layer in q4_k: gate, up and down of 128 experts of
// 768 x 2048 (config.json moe_intermediate_size, hidden_size), 144 B per 256 weights (Q4_K's block).
constexpr std::uint64_t kQwen3ExpertsOfLayerBytes = 3ull * 128 * 768 * 2048 / 256 * 144; // 339,738,624 B = 324 MiB

} // namespace

TEST_CASE("host experts: --n-cpu-moe 48 with -ngl 99 is a partial plan, the experts on the host", "[splitbill][hostexperts]")
{
    PlanRequest r = hostTensorsRequest("qwen3-30b-a3b", "q4_k");
    r.gpuLayers = 99;
    r.engineSettings = {{"n-cpu-moe", "48"}};
    const auto p = makePlan(r);
    REQUIRE(p);
    const SplitBill b = splitBill(*p);
    CHECK_FALSE(b.layerSplit); // 49/49 layers on the GPU
    CHECK(b.partial);
    CHECK(b.hostTensorsOnly());
    CHECK(b.gpuLayers == 49);
    CHECK(b.totalLayers == 49);
    // The experts of all 48 layers in host memory: 48 x 324 MiB, exactly the rule's bytes.
    CHECK(b.hostExpertBytes.value == 48 * kQwen3ExpertsOfLayerBytes);
    CHECK(b.hostKvBytes.value == 0);
    // Verdict: partial, the GPU side within the card's usable bytes, the host side named.
    REQUIRE(p->verdict.state == FitState::PartialOffload);
    CHECK(p->verdict.detail == "partial: 49/49 layers, experts on CPU, " + formatBytes(b.hostBytes()) + " RAM");
    CHECK(p->verdict.reason.find("49/49 layers on the GPU with routed experts 15.19 GiB in host memory") != std::string::npos);
    REQUIRE_FALSE(b.gpu.empty());
    CHECK(b.gpuBytes() <= p->usableBytes);
    // The GPU keeps the dense part: everything but the experts and token_embd (151,936 x 2,048 in
    // q4_k: 166.92 MiB), i.e. 17,218,297,856 - 16,307,453,952 - 175,030,272 B.
    CHECK(static_cast<double>(testfixtures::engineFigure(*p, "gpu_weights_bytes")) == Approx(17218297856.0 - 16307453952.0 - 175030272.0).margin(1e6));
    CHECK(static_cast<double>(b.gpuBytes().value) / static_cast<double>(kGiB) == Approx(4.27).margin(0.01));
    // The host: the mapped pages, the AVX2 repack copy of the q4_k experts (the experts alone are
    // repacked: 15,552 MiB), KV none, compute and output.
    CHECK(static_cast<double>(testfixtures::engineFigure(*p, "host_repack_bytes")) == Approx(static_cast<double>(48 * kQwen3ExpertsOfLayerBytes)).margin(1e6));
    // The capacity is the split's own: 4 x 8,192 cells.
    CHECK(p->maxResidentTokens == 32768);
    CHECK(p->verdict.headline.value == 8192);
    // flags: -ngl and --n-cpu-moe from the plan.
    const auto flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find(" -c 32768 -np 4 -ngl 49 --n-cpu-moe 48 ") != std::string::npos);
}

TEST_CASE("host experts: --n-cpu-moe 20 leaves more on the GPU than it has: llama.cpp fails to allocate", "[splitbill][hostexperts]")
{
    PlanRequest r = hostTensorsRequest("qwen3-30b-a3b", "q4_k");
    r.gpuLayers = 99;
    r.engineSettings = {{"n-cpu-moe", "20"}};
    const auto p = makePlan(r);
    REQUIRE(p);
    const SplitBill b = splitBill(*p);
    CHECK(b.partial);
    CHECK(b.hostExpertBytes.value == 20 * kQwen3ExpertsOfLayerBytes); // 6,480 MiB
    // The GPU side (weights 9.54 GiB + KV 3 GiB + compute + CUDA context) is checked against the
    // GPU, not the whole weights against the card ("weights 16.04 > 6.79 GiB" before).
    CHECK(b.gpuBytes() > p->usableBytes);
    CHECK(p->verdict.state == FitState::DoesNotFit);
    CHECK(p->verdict.limit == FitLimit::EngineRefusesToStart);
    CHECK(p->verdict.reason.find("-ngl 49 --n-cpu-moe 20 puts 12.84 GiB on the GPU") != std::string::npos);
    CHECK(p->verdict.reason.find("raise --n-cpu-moe") != std::string::npos);
    CHECK_FALSE(p->verdict.loads()); // `flags` says "nothing to launch" (cli_flags_host_experts_gpu_over)
}

TEST_CASE("host KV: --no-kv-offload with every layer on the GPU is a partial plan, the KV on the host", "[splitbill][hostkv]")
{
    PlanRequest r = hostTensorsRequest("qwen2.5-7b", "q4_k_m");
    r.engineSettings = {{"no-kv-offload", "true"}};
    const auto p = makePlan(r);
    REQUIRE(p);
    const SplitBill b = splitBill(*p);
    CHECK_FALSE(b.layerSplit);
    CHECK(b.partial);
    // 28 layers x 2 x 4 KV heads x 128 x 2 B (f16) x 32,768 cells = 1,792 MiB, all of it on the host.
    CHECK(b.hostKvBytes.value == 28ull * 2 * 4 * 128 * 2 * 32768);
    CHECK(testfixtures::engineFigure(*p, "gpu_kv_buffer_bytes") == 0);
    REQUIRE(p->verdict.state == FitState::PartialOffload);
    CHECK(p->verdict.detail == "partial: 29/29 layers, KV on CPU, " + formatBytes(b.hostBytes()) + " RAM");
    CHECK(static_cast<double>(b.hostBytes().value) / static_cast<double>(kGiB) == Approx(2.17).margin(0.01));
    CHECK(b.gpuBytes() <= p->usableBytes);
    const auto flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find(" -ngl 29 --no-kv-offload ") != std::string::npos);

    // The host side is checked against --host-ram.
    r.hostMemoryBytes = Bytes{2 * kGiB};
    const auto small = makePlan(r);
    REQUIRE(small);
    CHECK(small->verdict.state == FitState::DoesNotFit);
    CHECK(small->verdict.limit == FitLimit::HostMemory);
}

TEST_CASE("host tensors: a plan with nothing on the host stays a full-GPU one", "[splitbill][hostkv]")
{
    const PlanRequest r = hostTensorsRequest("qwen2.5-7b", "q4_k_m");
    const auto p = makePlan(r);
    REQUIRE(p);
    const SplitBill b = splitBill(*p);
    CHECK_FALSE(b.partial);
    CHECK(b.hostKvBytes.value == 0);
    CHECK(b.hostExpertBytes.value == 0);
    CHECK(p->verdict.state == FitState::Fits);
    CHECK(placementOf(*p) == Placement::FullGpu);
}

TEST_CASE("host experts: -ot patterns place the tensors they match, as --n-cpu-moe's own patterns do", "[splitbill][hostexperts]")
{
    // -ot exps=CPU (every routed expert) is --n-cpu-moe 48; blk\.([0-9]|1[0-9])\.ffn_.*_exps=CPU
    // (layers 0-19) is --n-cpu-moe 20: the same bytes on each side.
    const auto sides = [](std::vector<EngineSetting> settings) {
        PlanRequest r = hostTensorsRequest("qwen3-30b-a3b", "q4_k");
        r.gpuLayers = 99;
        r.engineSettings = std::move(settings);
        auto p = makePlan(r);
        REQUIRE(p);
        return std::make_pair(testfixtures::engineFigure(*p, "gpu_weights_bytes"), splitBill(*p).hostExpertBytes.value);
    };
    const auto all = sides({{"override-tensor", "exps=CPU"}});
    CHECK(all.second == 48 * kQwen3ExpertsOfLayerBytes);
    CHECK(all == sides({{"n-cpu-moe", "48"}}));
    const auto first20 = sides({{"ot", "blk\\.([0-9]|1[0-9])\\.ffn_.*_exps=CPU"}});
    CHECK(first20.second == 20 * kQwen3ExpertsOfLayerBytes);
    CHECK(first20 == sides({{"n-cpu-moe", "20"}}));

    // Parsing: items PATTERN=CPU|CUDA<N>, the first match wins, bad items named.
    const auto parsed = llamacpp::parseTensorOverrides("ffn_up_exps=CUDA0,exps=CPU", 1);
    REQUIRE(parsed);
    REQUIRE(parsed->size() == 2);
    CHECK((*parsed)[0].device == 0);
    CHECK((*parsed)[1].device == -1);
    CHECK_FALSE(llamacpp::parseTensorOverrides("exps=CUDA1", 1));
    CHECK_FALSE(llamacpp::parseTensorOverrides("exps=GPU", 1));
    CHECK_FALSE(llamacpp::parseTensorOverrides("ex(ps=CPU", 1));
    CHECK_FALSE(llamacpp::parseTensorOverrides("exps", 1));
    PlanRequest bad = hostTensorsRequest("qwen3-30b-a3b", "q4_k");
    bad.engineSettings = {{"override-tensor", "exps=GPU"}};
    const auto refused = makePlan(bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == "override-tensor: unknown buffer type \"GPU\" in \"exps=GPU\": expected CPU or CUDA<N>");
}
