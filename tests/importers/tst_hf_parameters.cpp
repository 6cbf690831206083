// Foundation acceptance: for every fixture config.json that has a model.safetensors.index.json,
// parameterCount(architecture from config.json) x 2 bytes equals the index's metadata.total_size
// less the non-parameter buffers the index lists.
//
// Buffers are recognised from the index's weight_map names (isNonParameterBuffer). The index lists
// names but not sizes, so their sizes are computed from the architecture: a rotary
// `*.rotary_emb.inv_freq` buffer holds head_dim / 2 fp32 values (transformers LlamaRotaryEmbedding:
// inv_freq = 1 / base^(arange(0, dim, 2) / dim)), i.e. head_dim * 2 bytes. Llama-2-7b-hf and
// llama-7b list 32 of them (32 * 64 * 4 = 8,192 bytes, SOURCES.md), Llama-2-70b-chat-hf 80 (20,480 bytes).

#include "fixtures.h"

#include <headroom/core/importers/hfconfig.h>
#include <headroom/core/importers/importedmodel.h>
#include <headroom/core/importers/modeldirectory.h>
#include <headroom/core/importers/safetensors.h>
#include <headroom/core/parameters.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace headroom;
using headroom::test::fixture;

namespace {

std::string slurp(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Expectation {
    const char* dir;
    std::uint64_t totalSize;        ///< the index's metadata.total_size (SOURCES.md)
    std::uint64_t invFreqBuffers;   ///< rotary_emb.inv_freq entries in the weight_map
};

} // namespace

TEST_CASE("parameters x 2 bytes = index total_size - non-parameter buffers", "[importers][hf][parameters]")
{
    HEADROOM_REQUIRE_FIXTURE(fixture("hf"));
    const Expectation cases[] = {
        {"Llama-2-7b-hf", 13476839424ull, 32},
        {"llama-7b", 13476839424ull, 32},
        {"Llama-2-70b-chat-hf", 137953316864ull, 80},
        {"Mistral-7B-v0.1", 14483464192ull, 0},
        {"Meta-Llama-3-8B", 16060522496ull, 0},
        {"Llama-3.2-3B-Instruct", 6425499648ull, 0},
        {"Mixtral-8x7B-v0.1", 93405585408ull, 0},
        {"Phi-3-mini-4k-instruct", 7642159104ull, 0},
        {"Phi-3-mini-128k-instruct", 7642159104ull, 0},
        {"gemma-2b-it", 5012344832ull, 0},
        {"DeepSeek-V2-Lite", 31412968448ull, 0},
    };
    for (const auto& c : cases) {
        INFO(c.dir);
        const auto dir = fixture(std::string("hf/") + c.dir);
        REQUIRE(std::filesystem::exists(dir / "model.safetensors.index.json"));
        auto config = readHfConfig(dir / "config.json");
        REQUIRE(config.has_value());
        auto index = parseSafetensorsIndex(slurp(dir / "model.safetensors.index.json"));
        REQUIRE(index.has_value());
        REQUIRE(index->totalSizeBytes.has_value());
        CHECK(*index->totalSizeBytes == c.totalSize);

        std::uint64_t buffers = 0;
        std::uint64_t bufferBytes = 0;
        for (const auto& [name, shard] : index->weightMap)
            if (isNonParameterBuffer(name)) {
                ++buffers;
                CHECK(name.ends_with("rotary_emb.inv_freq"));
                bufferBytes += config->architecture.headDim / 2 * 4; // head_dim / 2 fp32 values
            }
        CHECK(buffers == c.invFreqBuffers);
        const std::uint64_t params = parameterCount(config->architecture);
        CHECK(config->checkpointDtype != "fp32");
        INFO("parameters " << params << ", tensors listed by the index " << index->weightMap.size()
                           << ", listTensors " << listTensors(config->architecture).size());
        CHECK(params * 2 + bufferBytes == *index->totalSizeBytes);
        // The tensor count agrees too (experts folded as copies are counted one by one), except
        // for phi3, whose checkpoints store fused qkv_proj and gate_up_proj (3 fewer per layer).
        if (config->architecture.family == "phi3")
            continue;
        std::uint64_t tensors = 0;
        for (const auto& t : listTensors(config->architecture))
            tensors += t.copies;
        CHECK(tensors + buffers == index->weightMap.size());
    }
}

TEST_CASE("Llama-2-7b: parameters agree with the GGUF peer count", "[importers][hf][parameters]")
{
    // @huggingface/gguf asserts parameterCount 6,738,415,616 for llama-2-7b-chat (same shapes);
    // total_size 13,476,839,424 = 2 * 6,738,415,616 + 8,192 (peer-expectations.md).
    const auto dir = fixture("hf/Llama-2-7b-hf");
    HEADROOM_REQUIRE_FIXTURE(dir);
    auto model = importModel(dir);
    REQUIRE(model.has_value());
    CHECK(model->parameters == 6738415616ull);
    CHECK(model->weightsBytes.value == 13476839424ull);
    CHECK(model->exactWeights);
    CHECK(model->tensorCount == 323);
}
