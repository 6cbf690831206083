#include "archfixtures.h"

#include "headroom/core/parameters.h"

#include <catch2/catch.hpp>

using namespace headroom;

TEST_CASE("parameters are counted per tensor", "[parameters]")
{
    // Qwen2.5-0.5B: general.parameter_count 494,032,768 (ollama convert testdata).
    CHECK(parameterCount(test::qwen05b()) == 494'032'768ull);
    // Llama-3.1-8B: 8,030,261,248 (unsloth bnb-4bit safetensors total, peer-expectations §4).
    CHECK(parameterCount(test::llama31_8b()) == 8'030'261'248ull);
}

TEST_CASE("families differ in biases, norms and MLP shape", "[parameters]")
{
    Architecture gpt2; // gpt2-xl config.json: n_embd 1600, n_layer 48, n_head 25, vocab 50257, n_positions 1024
    gpt2.family = "gpt2";
    gpt2.layers = 48;
    gpt2.hiddenSize = 1600;
    gpt2.attentionHeads = 25;
    gpt2.kvHeads = 25;
    gpt2.headDim = 64;
    gpt2.intermediateSize = 6400;
    gpt2.vocabSize = 50257;
    gpt2.tiedEmbeddings = true;
    gpt2.qkvBias = gpt2.outputProjBias = gpt2.mlpBias = true;
    gpt2.norm = NormKind::LayerNorm;
    gpt2.mlp = MlpKind::Plain;
    gpt2.positionEmbeddingRows = 1024;
    // 1,557,611,200 parameters (HF model card of gpt2-xl: "1.5B"; count of the published checkpoint).
    CHECK(parameterCount(gpt2) == 1'557'611'200ull);

    Architecture falcon; // tiiuae/falcon-7b: 6.92B, multi-query, parallel attention, one LayerNorm
    falcon.family = "falcon";
    falcon.layers = 32;
    falcon.hiddenSize = 4544;
    falcon.attentionHeads = 71;
    falcon.kvHeads = 1;
    falcon.headDim = 64;
    falcon.intermediateSize = 4 * 4544;
    falcon.vocabSize = 65024;
    falcon.tiedEmbeddings = true;
    falcon.norm = NormKind::LayerNorm;
    falcon.mlp = MlpKind::Plain;
    falcon.normsPerLayer = 1;
    CHECK(parameterCount(falcon) == 6'921'720'704ull);
}

TEST_CASE("weights are priced per tensor; small tensors keep their own dtype", "[parameters]")
{
    const Architecture a = test::llama31_8b();
    const WeightBill fp16 = priceWeights(a, *findFormat("fp16"));
    CHECK(fp16.totalBytes.value == 2 * 8'030'261'248ull);
    const WeightBill q4 = priceWeights(a, *findFormat("int4-g128"));
    // embeddings and lm_head stay fp16; norms fp16; matrices at 4.125 bits
    const std::uint64_t embed = 128256ull * 4096 * 2;
    CHECK(q4.bytesByRole.at("embeddings").value == embed);
    CHECK(q4.bytesByRole.at("output").value == embed);
    CHECK(q4.bytesByRole.at("norms").value == (32ull * 2 + 1) * 4096 * 2);
    const std::uint64_t perLayer = 4096ull * 4096 * 2 + 1024ull * 4096 * 2 + 14336ull * 4096 * 3;
    CHECK(q4.bytesByRole.at("attention").value + q4.bytesByRole.at("mlp").value == 32 * perLayer * 33 / 64);
    const WeightBill gg = priceWeights(a, *findFormat("q4_0"));
    CHECK(gg.bytesByType.at("fp32").value == (32ull * 2 + 1) * 4096 * 4); // GGUF norms in f32
}
