// The what-fits grid of the app's default view, recomputed in one process (issue 9: under 2 ms
// for the 36 cells). The grid is the app's (app/catalog.cpp computeMatrix with
// Selection::defaults()): the default model (llama-3.1-8b), the twelve weight formats of
// matrixFormatIds(), the default cards (RTX 4060, 4060 Ti 16GB, 4090), fp16 KV, the default
// engine (vLLM), 4 users x 8,192 tokens, a micro-batch of 512. Each benchmark iteration plans
// all 36 cells from their requests (built once, as the app keeps its catalog); the requests are
// resolved from the profiles as the app's requestFor does.
//
//   BM_WhatFitsGrid         the 36 plans (the figure issue 9 asks for)
//   BM_WhatFitsGridEngine/N the same grid under each engine (0 vllm ... 5 ollama, see kEngines)
//   BM_OnePlan              one cell (int4-g128 on the RTX 4090)

#include "headroom/core/defaults.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/verdict.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace headroom;

// app/catalog.cpp matrixFormatIds(): the rows of the Formats matrix, in order.
const std::vector<std::string> kFormats = {"fp16", "fp8", "int8-row", "int4-g128", "nf4-b64", "awq-g128",
                                           "q8_0", "q6_k", "q5_k", "q4_k", "q3_k", "q2_k"};
const std::vector<std::string> kEngines = {"vllm", "sglang", "tgi", "tensorrt-llm", "llama.cpp", "ollama"};

const ProfileSet& profiles()
{
    static const ProfileSet set = [] {
        auto p = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
        if (!p) {
            std::fprintf(stderr, "bench_plan_grid: %s\n", toString(p.error()).c_str());
            std::exit(1);
        }
        return std::move(*p);
    }();
    return set;
}

// The 36 requests of the default view under @p engineId.
std::vector<PlanRequest> gridRequests(const std::string& engineId)
{
    const ProfileSet& set = profiles();
    auto model = resolveModel(kDefaultModelId, set);
    auto kv = resolveKvDtype(kDefaultKvDtype);
    auto engine = resolveEngine(engineId, set);
    if (!model || !kv || !engine) {
        std::fprintf(stderr, "bench_plan_grid: cannot resolve the default model, KV dtype or engine %s\n", engineId.c_str());
        std::exit(1);
    }
    std::vector<PlanRequest> out;
    for (const std::string& formatId : kFormats) {
        auto format = resolveFormat(formatId, *model);
        if (!format) {
            std::fprintf(stderr, "bench_plan_grid: %s\n", format.error().c_str());
            std::exit(1);
        }
        for (const std::string& cardId : kDefaultCardIds) {
            auto card = resolveCard(cardId, set);
            if (!card) {
                std::fprintf(stderr, "bench_plan_grid: %s\n", card.error().c_str());
                std::exit(1);
            }
            PlanRequest r;
            r.model = *model;
            r.format = *format;
            r.kvDtype = *kv;
            r.card = *card;
            r.engine = *engine;
            r.contextTokens = kDefaultContextTokens;
            r.users = kDefaultUsers;
            r.ubatchTokens = 512;
            out.push_back(std::move(r));
        }
    }
    return out;
}

void planAll(benchmark::State& state, const std::vector<PlanRequest>& requests)
{
    std::size_t answered = 0;
    for (auto _ : state) {
        for (const PlanRequest& r : requests) {
            auto plan = makePlan(r);
            answered += plan.has_value() ? 1 : 0;
            benchmark::DoNotOptimize(plan);
        }
    }
    state.counters["cells"] = static_cast<double>(requests.size());
    state.counters["plans_per_s"] = benchmark::Counter(static_cast<double>(state.iterations() * requests.size()),
                                                       benchmark::Counter::kIsRate);
    if (answered != state.iterations() * requests.size())
        state.SkipWithError("a plan of the grid failed");
}

void BM_WhatFitsGrid(benchmark::State& state)
{
    static const std::vector<PlanRequest> requests = gridRequests(kDefaultEngineId);
    planAll(state, requests);
}
BENCHMARK(BM_WhatFitsGrid)->Unit(benchmark::kMicrosecond);

void BM_WhatFitsGridEngine(benchmark::State& state)
{
    const std::string& engine = kEngines.at(static_cast<std::size_t>(state.range(0)));
    const std::vector<PlanRequest> requests = gridRequests(engine);
    state.SetLabel(engine);
    planAll(state, requests);
}
BENCHMARK(BM_WhatFitsGridEngine)->DenseRange(0, 5)->Unit(benchmark::kMicrosecond);

void BM_OnePlan(benchmark::State& state)
{
    static const std::vector<PlanRequest> one = [] {
        std::vector<PlanRequest> all = gridRequests(kDefaultEngineId);
        return std::vector<PlanRequest>{all.at(3 * 3 + 2)}; // int4-g128 (row 3) on the RTX 4090 (column 2)
    }();
    planAll(state, one);
}
BENCHMARK(BM_OnePlan)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
