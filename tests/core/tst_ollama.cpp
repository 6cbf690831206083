// Ollama's own estimator against the figures its logs print (v0.5.x "offload to cuda" lines of the
// engine-log corpus) and its quantized-cache fallback.
#include "headroom/core/engines/ollamamemory.h"
#include "headroom/core/units.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

Architecture llama(std::uint32_t layers, std::uint64_t hidden, std::uint32_t heads, std::uint32_t kvHeads,
                   std::uint64_t vocab)
{
    Architecture a;
    a.family = "llama";
    a.layers = layers;
    a.hiddenSize = hidden;
    a.attentionHeads = heads;
    a.kvHeads = kvHeads;
    a.headDim = static_cast<std::uint32_t>(hidden / heads);
    a.vocabSize = vocab;
    return a;
}

// Ollama prints sizes with format.HumanBytes2: one decimal of GiB/MiB.
double gib(Bytes b) { return static_cast<double>(b.value) / static_cast<double>(kGiB); }
double mib(Bytes b) { return static_cast<double>(b.value) / static_cast<double>(kMiB); }

} // namespace

TEST_CASE("Ollama estimator: llama3.2:3b, num_ctx 2048 x 4 parallel (ollama#8098)", "[ollama]")
{
    // memory.required.kv="896.0 MiB" memory.graph.full="424.0 MiB" memory.graph.partial="570.7 MiB"
    ollama::Settings s;
    s.numCtx = 2048;
    s.numParallel = 4;
    const auto e = ollama::legacyEstimate(llama(28, 3072, 24, 8, 128'256), s);
    CHECK(e.contextTokens == 8192); // --ctx-size 8192
    CHECK(mib(e.kvBytes) == Approx(896.0).margin(0.05));
    CHECK(mib(e.graphFullBytes) == Approx(424.0).margin(0.05));
    CHECK(mib(e.graphPartialBytes) == Approx(570.7).margin(0.05));
}

TEST_CASE("Ollama estimator: 70B over 4 GPUs, num_ctx 64000, flash attention (ollama#9181)", "[ollama]")
{
    // memory.required.kv="19.5 GiB" memory.graph.full="8.2 GiB" memory.graph.partial="8.2 GiB"
    // (several GPUs: Ollama takes the partial graph for both)
    ollama::Settings s;
    s.numCtx = 64'000;
    s.flashAttention = true;
    const auto e = ollama::legacyEstimate(llama(80, 8192, 64, 8, 128'256), s);
    CHECK(gib(e.kvBytes) == Approx(19.5).margin(0.05));
    CHECK(gib(e.graphPartialBytes) == Approx(8.2).margin(0.05));
}

TEST_CASE("OLLAMA_KV_CACHE_TYPE falls back to f16 without flash attention", "[ollama]")
{
    ollama::Settings s;
    s.kvCacheType = "q8_0";
    CHECK(ollama::effectiveKvCacheType(s) == "f16");
    s.flashAttention = true;
    CHECK(ollama::effectiveKvCacheType(s) == "q8_0");
    s.kvCacheType = "Q4_0";
    CHECK(ollama::effectiveKvCacheType(s) == "q4_0");
    s.kvCacheType = "q5_1"; // not a type Ollama knows: f16
    CHECK(ollama::effectiveKvCacheType(s) == "f16");
    // q8_0 halves the estimate: 1 byte an element.
    s.kvCacheType = "q8_0";
    s.numCtx = 2048;
    s.numParallel = 4;
    const auto half = ollama::legacyEstimate(llama(28, 3072, 24, 8, 128'256), s);
    CHECK(mib(half.kvBytes) == Approx(448.0).margin(0.05));
}
