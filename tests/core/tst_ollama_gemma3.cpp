// Issue 15's test: Gemma 3 12B (gemma3:12b, Q4_K_M with its SigLIP tower) on a 12 GB card with
// Ollama's own estimator. What the plan says (the verdict, the layers on the GPU, the max users and
// the max context) must be what Ollama does: the estimator's layers.offload decides whether the
// model runs all on the GPU.
//
// The estimator at v0.9.0 (github.com/ollama/ollama v0.9.0 llm/memory.go EstimateGPULayers,
// fs/ggml/ggml.go GraphSize and VisionGraphSize), with memory.available = 11.5 GiB as
// ollama/ollama#10341 printed it for an RTX 3060 12 GB, num_ctx 4096 (the default), f16 cache,
// flash attention off. Each sequence adds 4096 cells to the 8 global layers (256 MiB) and 1024
// cells to the 40 sliding ones (320 MiB); the sliding layers hold one batch of 512 cells more
// (160 MiB). The GPU must hold, for every layer and the output layer to go:
//   MinimumMemory 457 MiB + layer 0 again "as a buffer" + the 48 blk.* layers (6.02 GiB) + kv
//   + max(graph.partial, graph.full) + the output layer (token_embd tied, 787.7 MiB)
//   + the tower's weights (projector.weights 795.9 MiB) + its graph (projector.graph 1033.2 MiB)
// With 4 sequences (kv 2464 MiB, graph.partial 1307 MiB at --ctx-size 16384) that is 12.9 GiB
// (memory.required.full) against 11.5 GiB: the 48 layers fit (memory.required.partial 10.3 GiB),
// the output layer with the projector (2.56 GiB) does not, so Ollama runs 48/49 layers on the GPU
// and the rest on the CPU: not "fits, 4 users", as Headroom said before it priced the projector.
// One sequence (kv 736 MiB) fits whole (memory.required.full 10.4 GiB), as ollama#10341's own
// run at num_ctx 2048 did (layers.offload=49, memory.required.full="10.3 GiB": the corpus case
// ollama-0.6-gemma-3-12b-rtx3060-ctx2048).
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "testconfig.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace headroom;

namespace {

PlanRequest gemma3On3060(const char* engine, std::uint64_t users, std::uint64_t contextTokens)
{
    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles);
    auto model = resolveModel("gemma-3-12b", *profiles);
    REQUIRE(model);
    PlanRequest r;
    r.model = *model;
    auto format = resolveFormat("q4_k_m", *model);
    REQUIRE(format);
    r.format = *format;
    r.kvDtype = *findKvDtype("fp16");
    auto card = resolveCard("rtx-3060-12gb", *profiles);
    REQUIRE(card);
    r.card = *card;
    r.freeBytes = Bytes{static_cast<std::uint64_t>(11.5 * static_cast<double>(kGiB))}; // memory.available="[11.5 GiB]"
    auto e = resolveEngine(engine, *profiles);
    REQUIRE(e);
    r.engine = *e;
    r.users = users;
    r.contextTokens = contextTokens;
    return r;
}

double figure(const PlanResult& p, const std::string& name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name)
            return f.value;
    FAIL("no engine figure " << name);
    return 0;
}

double gib(double bytes) { return bytes / static_cast<double>(kGiB); }

} // namespace

TEST_CASE("Gemma 3 12B on a 12 GB card with Ollama: the plan says what the estimator does", "[ollama][vision]")
{
    SECTION("4 users at num_ctx 4096: 48/49 layers on the GPU, the output layer and the projector on the CPU")
    {
        auto p = makePlan(gemma3On3060("ollama@0.9.0", 4, 4096));
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::PartialOffload);
        CHECK(figure(*p, "layers_offload") == 48);
        CHECK(figure(*p, "offload_gpu_layers") == 48);
        // memory.required.kv="2464.0 MiB", projector.weights="795.9 MiB", projector.graph="1033.2 MiB"
        CHECK(figure(*p, "kv_buffer_bytes") == 2464.0 * kMiB);
        CHECK(figure(*p, "projector_weights_bytes") / kMiB == Approx(795.9).margin(0.05));
        CHECK(figure(*p, "projector_graph_bytes") == 1'083'440'128.0);
        CHECK(gib(figure(*p, "memory_required_full_bytes")) == Approx(12.9).margin(0.05));
        CHECK(gib(figure(*p, "memory_required_partial_bytes")) == Approx(10.3).margin(0.05));
        // What is left in host memory: the output layer (787.7 MiB) with the tower and its graph.
        CHECK(gib(figure(*p, "host_weights_bytes")) == Approx(2.56).margin(0.01));
        // Users: one sequence of 4096 runs all on the GPU, two do not (the section below).
        REQUIRE(p->maxUsers);
        CHECK(*p->maxUsers == 1);
    }
    SECTION("1 user: all on the GPU up to the context the estimator admits, a split past it")
    {
        auto p = makePlan(gemma3On3060("ollama@0.9.0", 1, 4096));
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::Fits);
        CHECK(figure(*p, "layers_offload") == 49);
        CHECK(gib(figure(*p, "memory_required_full_bytes")) == Approx(10.4).margin(0.05));
        REQUIRE(p->maxUsers);
        CHECK(*p->maxUsers == 1);
        auto two = makePlan(gemma3On3060("ollama@0.9.0", 2, 4096));
        REQUIRE(two);
        CHECK(two->verdict.state == FitState::PartialOffload);
        CHECK(figure(*two, "layers_offload") == 48);
        // The max context the plan answers for one user is the estimator's own boundary: at it
        // every layer goes to the GPU, 64 tokens past it the output layer and the projector do not
        // (9,560 and 9,624 at this commit).
        REQUIRE(p->maxContext);
        const std::uint64_t c = *p->maxContext;
        CHECK(c > 8192);
        CHECK(c < 12288);
        auto at = makePlan(gemma3On3060("ollama@0.9.0", 1, c));
        REQUIRE(at);
        CHECK(at->verdict.state == FitState::Fits);
        CHECK(figure(*at, "layers_offload") == 49);
        auto past = makePlan(gemma3On3060("ollama@0.9.0", 1, c + 64));
        REQUIRE(past);
        CHECK(past->verdict.state == FitState::PartialOffload);
        CHECK(figure(*past, "layers_offload") == 48);
    }
    SECTION("Ollama 0.6.6 (the projector is GPU 0's overhead, layers placed from the first): the same answer")
    {
        auto p = makePlan(gemma3On3060("ollama@0.6.6", 4, 4096));
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::PartialOffload);
        CHECK(figure(*p, "layers_offload") < 49);
        REQUIRE(p->maxUsers);
        CHECK(*p->maxUsers == 1);
        auto one = makePlan(gemma3On3060("ollama@0.6.6", 1, 2048)); // ollama#10341's own run
        REQUIRE(one);
        CHECK(one->verdict.state == FitState::Fits);
        CHECK(figure(*one, "layers_offload") == 49);
        CHECK(gib(figure(*one, "memory_required_full_bytes")) == Approx(10.3).margin(0.05));
    }
}
