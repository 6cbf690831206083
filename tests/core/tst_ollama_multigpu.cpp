// Ollama's placement over several GPUs (issue 11): llm/memory.go EstimateGPULayers' per-GPU loop
// (v0.5.11, v0.6.0, v0.9.2) and server/sched.go's choice of GPUs, against what two public logs
// print (ollama#9181: four 24 GB cards, layers.split=11,11,11,11; ollama#9685: two uneven cards,
// layers.split=32,31), and the one-plan face of several cards (PlanRequest::moreGpus).
#include "headroom/core/engines/ollamamemory.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "testconfig.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace headroom;

namespace {

const ProfileSet& profiles()
{
    static const auto p = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(p);
    return *p;
}

Bytes gibBytes(double g) { return Bytes{static_cast<std::uint64_t>(g * static_cast<double>(kGiB))}; }
double gib(double bytes) { return bytes / static_cast<double>(kGiB); }

// One model on @p free.size() GPUs of @p card, each with its own free memory (memory.available).
PlanRequest onGpus(const char* model, const char* weights, const char* engine, const std::vector<double>& freeGib,
                   std::uint64_t contextTokens, bool flash)
{
    auto m = resolveModel(model, profiles());
    REQUIRE(m);
    PlanRequest r;
    r.model = *m;
    auto f = resolveFormat(weights, *m);
    REQUIRE(f);
    r.format = *f;
    r.kvDtype = *findKvDtype("fp16");
    auto card = resolveCard("rtx-4090", profiles());
    REQUIRE(card);
    r.card = *card;
    r.freeBytes = gibBytes(freeGib.front());
    for (std::size_t k = 1; k < freeGib.size(); ++k)
        r.moreGpus.push_back({*card, gibBytes(freeGib[k])});
    auto e = resolveEngine(engine, profiles());
    REQUIRE(e);
    r.engine = *e;
    r.users = 1;
    r.contextTokens = contextTokens;
    r.flashAttention = flash;
    return r;
}

const EngineFigure* find(const PlanResult& p, const std::string& name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name)
            return &f;
    return nullptr;
}

double figure(const PlanResult& p, const std::string& name)
{
    const EngineFigure* f = find(p, name);
    INFO("engine figure " << name);
    REQUIRE(f);
    return f->value;
}

} // namespace

TEST_CASE("Ollama 0.5.11 over four 24 GB cards: 11 layers each, round robin (ollama#9181)", "[ollama][multigpu]")
{
    // layers.offload=44 layers.split=11,11,11,11 memory.available="[22.0 GiB x4]"
    // memory.required.allocations="[21.8 GiB x4]" memory.required.partial="87.1 GiB"
    // memory.required.full="127.4 GiB" memory.graph.full="8.2 GiB" (the partial graph on several GPUs)
    auto p = makePlan(onGpus("llama-3.1-70b", "q8_0", "ollama@0.5.11", {22.0, 22.0, 22.0, 22.0}, 64'000, true));
    REQUIRE(p);
    CHECK(figure(*p, "layers_offload") == 44);
    for (int k = 0; k < 4; ++k) {
        CHECK(figure(*p, "layers_split_" + std::to_string(k)) == 11);
        CHECK(gib(figure(*p, "memory_required_allocation_" + std::to_string(k))) == Approx(21.8).margin(0.05));
    }
    CHECK(gib(figure(*p, "memory_required_partial_bytes")) == Approx(87.1).margin(0.05));
    CHECK(gib(figure(*p, "memory_required_full_bytes")) == Approx(127.4).margin(0.1));
    CHECK(gib(figure(*p, "compute_buffer_bytes")) == Approx(8.2).margin(0.05));
    // 44 of 81 layers on the GPUs: the verdict's partial offload.
    CHECK(p->verdict.state == FitState::PartialOffload);
    CHECK(figure(*p, "offload_gpu_layers") == 44);

    SECTION("one card of the four holds 11 of them, as one plan of one card said before")
    {
        auto one = makePlan(onGpus("llama-3.1-70b", "q8_0", "ollama@0.5.11", {22.0}, 64'000, true));
        REQUIRE(one);
        // One GPU keeps the full graph (8.2 GiB here too) and prints no split.
        CHECK(find(*one, "layers_split_0") == nullptr);
        CHECK(figure(*one, "layers_offload") == Approx(figure(*p, "layers_split_0")).margin(1));
    }
}

TEST_CASE("Ollama 0.6.0, gemma3:27b over 15.6 + 10.1 GiB: every layer, split 32,31 (ollama#9685)", "[ollama][multigpu]")
{
    // "new model will fit in available VRAM, loading" ... layers.offload=63 layers.split=32,31
    // memory.available="[15.6 GiB 10.1 GiB]" memory.required.allocations="[10.6 GiB 9.6 GiB]"
    // memory.required.full="20.2 GiB" memory.required.kv="248.0 MiB" memory.graph.full="1.6 GiB"
    auto p = makePlan(onGpus("gemma-3-27b", "q4_k_m", "ollama@0.6.0", {15.6, 10.1}, 512, false));
    REQUIRE(p);
    CHECK(figure(*p, "layers_offload") == 63);
    // Layers from the first (before v0.7.0), layer i on GPU i % 2: 31 + 31, the output layer on
    // GPU 62 % 2 = 0.
    CHECK(figure(*p, "layers_split_0") == 32);
    CHECK(figure(*p, "layers_split_1") == 31);
    CHECK(gib(figure(*p, "memory_required_allocation_0")) == Approx(10.6).margin(0.1));
    CHECK(gib(figure(*p, "memory_required_allocation_1")) == Approx(9.6).margin(0.1));
    CHECK(gib(figure(*p, "memory_required_full_bytes")) == Approx(20.2).margin(0.1));
    CHECK(figure(*p, "kv_buffer_bytes") / static_cast<double>(kMiB) == Approx(248.0).margin(0.05));
    // Every layer on the two GPUs: it fits, no split with the host.
    CHECK(find(*p, "offload_gpu_layers") == nullptr);
    CHECK(p->verdict.fits());

    SECTION("the scheduler gives it the bigger card alone when it fits there (server/sched.go)")
    {
        // The cards in the other order, the second with room for the whole model: Ollama takes
        // that one GPU ("new model will fit in available VRAM in single GPU"), and the split is one GPU's.
        auto single = makePlan(onGpus("gemma-3-27b", "q4_k_m", "ollama@0.6.0", {10.1, 23.0}, 512, false));
        REQUIRE(single);
        CHECK(figure(*single, "layers_offload") == 63);
        CHECK(figure(*single, "layers_split_0") == 63);
        CHECK(find(*single, "layers_split_1") == nullptr);
    }
}

TEST_CASE("Ollama's scheduler: one GPU, the fewest GPUs, or all of them in device order", "[ollama][multigpu]")
{
    auto m = resolveModel("llama-3.1-70b", profiles());
    REQUIRE(m);
    auto f = resolveFormat("q4_k_m", *m);
    REQUIRE(f);
    ollama::Settings s;
    s.numCtx = 8192;
    s.flashAttention = true;
    const Bytes minimum{457 * kMiB};
    // A 70B q4_k_m (about 40 GiB) fits on no 24 GB card alone but on two.
    const std::vector<Bytes> three{gibBytes(23.0), gibBytes(23.5), gibBytes(23.2)};
    SECTION("before v0.12.0: all the GPUs, by free memory descending, when it fits on them")
    {
        s.version = "0.9.2";
        CHECK(ollama::scheduleGpus(*m->architecture, *f, s, three, minimum) == std::vector<std::size_t>{1, 2, 0});
    }
    SECTION("from v0.12.0: the fewest GPUs, by free memory descending")
    {
        s.version = "0.12.0";
        CHECK(ollama::scheduleGpus(*m->architecture, *f, s, three, minimum) == std::vector<std::size_t>{1, 2});
    }
    SECTION("it fits on none: every GPU in device order (a partial offload)")
    {
        s.version = "0.9.2";
        s.numCtx = 131'072;
        const std::vector<Bytes> small{gibBytes(10.0), gibBytes(11.0)};
        CHECK(ollama::scheduleGpus(*m->architecture, *f, s, small, minimum) == std::vector<std::size_t>{0, 1});
    }
}

TEST_CASE("Several cards in one plan: placing engines take them, sharding engines refuse them", "[ollama][multigpu][llamacpp]")
{
    SECTION("vLLM shards over identical GPUs (--tp): several cards are an error that says so")
    {
        auto p = makePlan(onGpus("llama-3.1-8b", "bf16", "vllm", {24.0, 24.0}, 8192, true));
        REQUIRE_FALSE(p);
        CHECK_THAT(p.error(), Catch::Contains("--tp"));
    }
    SECTION("llama.cpp without -ts splits by each card's free memory (src/llama-model.cpp default split)")
    {
        auto r = onGpus("llama-3.1-8b", "q4_k_m", "llama.cpp", {20.0, 10.0}, 8192, true);
        r.gpuLayers = 99;
        auto p = makePlan(r);
        REQUIRE(p);
        bool found = false;
        for (const SettingValue& v : p->engineSettings)
            if (v.key == "tensor-split") {
                found = true;
                CHECK(v.text == "20480,10240"); // MiB free on each card
            }
        CHECK(found);
        // Layers in proportion 2:1 (32 blocks + the output layer over the two GPUs).
        CHECK(figure(*p, "cuda0_layers") == Approx(2 * figure(*p, "cuda1_layers")).margin(1.5));
    }
    SECTION("llama.cpp -ts names one share per card")
    {
        auto r = onGpus("llama-3.1-8b", "q4_k_m", "llama.cpp", {24.0, 12.0}, 8192, true);
        r.engineSettings.push_back({"tensor-split", "1,1,1"});
        auto p = makePlan(r);
        REQUIRE_FALSE(p);
        CHECK_THAT(p.error(), Catch::Contains("one share per card"));
    }
}
