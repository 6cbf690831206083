// Ollama's own layer layout of v0.12.11 to v0.29 (engines/ollamalayout.h, llm/server.go at
// v0.12.11): the buffer layer, the graph per GPU used, greedyFit from the last layer, findBestFit's
// balancing, assignLayers' second pass without the output layer; and the plan it gives.
#include "fixtures.h"

#include "headroom/core/engines/ollamalayout.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

// Four blocks of 100 B and an output layer of 40 B; the buffer is block 0.
ollama::RunnerLayers toyLayers(std::uint64_t graph)
{
    ollama::RunnerLayers l;
    l.layerBytes = {Bytes{100}, Bytes{100}, Bytes{100}, Bytes{100}, Bytes{40}};
    l.bufferBytes = Bytes{100};
    l.graphBytes = Bytes{graph};
    return l;
}

const EngineFigure* figure(const PlanResult& p, const std::string& name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name)
            return &f;
    return nullptr;
}

} // namespace

TEST_CASE("Ollama createLayout: greedy from the last layer, the output layer dropped for a split", "[ollama][offload]")
{
    using V = std::vector<std::uint32_t>;
    // 600 B free - 100 B buffer = 500: every layer (440 B) on the one GPU.
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{600}, Bytes{}}}, -1) == V{5});
    // 300 - 100 = 200: output + block 3 fit (140), not block 2; without the output layer (second
    // pass) blocks 3 and 2: 2 layers, the output layer on the host.
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{300}, Bytes{}}}, -1) == V{2});
    // MinimumMemory (reserved) comes off first: 300 - 100 - 60 = 140, block 3 alone.
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{300}, Bytes{60}}}, -1) == V{1});
    // num_gpu 2: the first pass stops at output + block 3, the second takes blocks 3 and 2.
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{600}, Bytes{}}}, 2) == V{2});
    // Two GPUs of 200 B after the buffer: one GPU holds 2 (with the output), both 4 of 5 with the
    // output, so the second pass places the 4 blocks, 2 each.
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{300}, Bytes{}}, {Bytes{300}, Bytes{}}}, -1) == V{2, 2});
    // A graph of 50 B on each GPU the first layout used: 150 B each, one block each.
    CHECK(ollama::createLayout(toyLayers(50), {{Bytes{300}, Bytes{}}, {Bytes{300}, Bytes{}}}, -1) == V{1, 1});
    // The whole model on the GPU with the most free (one GPU suffices: "as few GPUs as possible").
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{300}, Bytes{}}, {Bytes{700}, Bytes{}}}, -1) == V{0, 5});
    // Neither alone holds all 5 (200 and 400 B after the buffer): both, at the smallest capacity
    // factor that still places 5 (0.75: 150 B for output + block 3 on the smaller, 300 B for blocks
    // 0-2 on the larger; at 0.7 the larger holds only 2 blocks).
    CHECK(ollama::createLayout(toyLayers(0), {{Bytes{300}, Bytes{}}, {Bytes{500}, Bytes{}}}, -1) == V{2, 3});
}

TEST_CASE("Ollama v0.20 places Qwen2.5-32B q4_k on a 16 GB card by its own layout", "[ollama][engines][offload]")
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    const ModelProfile* m = set->findModel("qwen2.5-32b");
    REQUIRE(m);
    r.model = *m;
    r.format = *findFormat("q4_k");
    r.kvDtype = *findKvDtype("fp16");
    r.card = *set->findCard("rtx-4060-ti-16gb");
    auto e = resolveEngine("ollama@0.20.0", *set);
    REQUIRE(e);
    r.engine = *e;
    r.contextTokens = 4096;
    r.users = 4;
    const auto p = makePlan(r);
    REQUIRE(p);
    REQUIRE(p->verdict.state == FitState::PartialOffload);
    // The runner's sizes: 64 blocks of ~263 MiB + 64 MiB of f16 cache each (16,384 cells), the output
    // layer ~417 MiB; 15.57 GiB - one layer as a buffer - 457 MiB - the graph (1.61 GiB) leaves room
    // for 41 blocks; the split leaves the output layer on the host (assignLayers' second pass).
    REQUIRE(figure(*p, "offload_gpu_layers"));
    CHECK(figure(*p, "offload_gpu_layers")->value == 41);
    REQUIRE(figure(*p, "gpu_kv_buffer_bytes"));
    CHECK(figure(*p, "gpu_kv_buffer_bytes")->value == 41.0 * 64 * 1024 * 1024);
    REQUIRE(figure(*p, "layers_offload"));
    CHECK(figure(*p, "layers_offload")->printed == "offloaded 41/65 layers to GPU");
    CHECK(p->usableBytes == r.card.totalBytes - r.engine.fixedReserve); // MinimumMemory kept, no --fit target

    // num_gpu 30: 30 blocks.
    r.gpuLayers = 30;
    const auto q = makePlan(r);
    REQUIRE(q);
    REQUIRE(figure(*q, "offload_gpu_layers"));
    CHECK(figure(*q, "offload_gpu_layers")->value == 30);

    // Two 16 GB cards: everything fits, balanced over both (findBestFit).
    r.gpuLayers.reset();
    r.moreGpus.push_back({r.card, std::nullopt});
    const auto two = makePlan(r);
    REQUIRE(two);
    CHECK(two->verdict.state == FitState::Fits);
    REQUIRE(figure(*two, "cuda0_layers"));
    REQUIRE(figure(*two, "cuda1_layers"));
    CHECK(figure(*two, "cuda0_layers")->value + figure(*two, "cuda1_layers")->value == 65);
    CHECK(std::abs(figure(*two, "cuda0_layers")->value - figure(*two, "cuda1_layers")->value) <= 2);
}
