// Hugging Face config.json: every fixture config parses to the shapes published elsewhere
// (SOURCES.md, peer-expectations.md §3, the BRIEF's KV facts), and synthetic configs cover the
// key variants (legacy names, nested text_config, quantization_config, sliding-window schemes)
// and the error classes.

#include "fixtures.h"

#include <headroom/core/importers/hfconfig.h>
#include <headroom/core/importers/importedmodel.h>
#include <headroom/core/kvcache.h>
#include <headroom/core/parameters.h>
#include <headroom/core/weightformat.h>

#include <catch2/catch.hpp>

using namespace headroom;
using headroom::test::fixture;

namespace {

std::uint64_t kvPerToken(const Architecture& a) { return kvLayout(a, *findKvDtype("fp16")).bytesPerToken().value; }

HfConfig parsed(const std::string& json)
{
    auto c = parseHfConfig(json, "test-config.json");
    if (!c)
        FAIL(toString(c.error()));
    return *c;
}

ImportError failed(const std::string& json)
{
    auto c = parseHfConfig(json, "bad-config.json");
    REQUIRE_FALSE(c.has_value());
    INFO(toString(c.error()));
    CHECK(c.error().file == "bad-config.json");
    return c.error();
}

const char* kLlamaLike = R"({"model_type":"llama","num_hidden_layers":2,"hidden_size":64,
  "num_attention_heads":4,"intermediate_size":128,"vocab_size":100,"max_position_embeddings":512)";

} // namespace

TEST_CASE("every fixture config.json parses", "[importers][hf]")
{
    const auto dir = fixture("hf");
    HEADROOM_REQUIRE_FIXTURE(dir);
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const auto config = entry.path() / "config.json";
        if (!std::filesystem::exists(config))
            continue;
        INFO(config.string());
        auto c = readHfConfig(config);
        if (!c)
            FAIL(toString(c.error()));
        CHECK(c->architecture.layers > 0);
        CHECK(validateArchitecture(c->architecture).empty());
        auto model = importModel(config);
        REQUIRE(model.has_value());
        CHECK(model->format == "hf-config");
        CHECK_FALSE(model->exactWeights);
        CHECK(model->parameters > 0);
        CHECK(model->weightsBytes.value > 0);
        ++count;
    }
    CHECK(count == 18);
}

TEST_CASE("fixture configs give the published shapes", "[importers][hf]")
{
    auto load = [](const char* rel) -> std::optional<HfConfig> {
        const auto p = fixture(rel);
        if (!std::filesystem::exists(p))
            return std::nullopt;
        auto c = readHfConfig(p);
        if (!c)
            FAIL(toString(c.error()));
        return *c;
    };
    HEADROOM_REQUIRE_FIXTURE(fixture("hf"));

    SECTION("Meta-Llama-3-8B: 32 blocks, 4096, ff 14336, 32/8 heads, vocab 128256, ctx 8192 (ollama testdata)")
    {
        auto c = load("hf/Meta-Llama-3-8B/config.json");
        REQUIRE(c);
        const auto& a = c->architecture;
        CHECK(a.layers == 32);
        CHECK(a.hiddenSize == 4096);
        CHECK(a.intermediateSize == 14336);
        CHECK(a.attentionHeads == 32);
        CHECK(a.kvHeads == 8);
        CHECK(a.vocabSize == 128256);
        CHECK(c->contextLength == 8192);
        CHECK(kvPerToken(a) == 131072); // BRIEF §1.1: 7B-class, 32 layers, 8 KV heads of 128: 128 KiB
    }
    SECTION("Mistral-7B-v0.1: GQA 32/8, sliding window 4096 on every layer")
    {
        auto c = load("hf/Mistral-7B-v0.1/config.json");
        REQUIRE(c);
        CHECK(c->architecture.kvHeads == 8);
        CHECK(c->architecture.sliding.windowTokens == 4096);
        CHECK(c->architecture.sliding.slidingLayers.empty());
        CHECK(kvPerToken(c->architecture) == 131072);
    }
    SECTION("Llama-2-13b: 40 layers of 40 heads of 128 (MHA): 800 KiB per token")
    {
        auto c = load("hf/Llama-2-13b-chat-hf/config.json");
        REQUIRE(c);
        CHECK(c->architecture.layers == 40);
        CHECK(c->architecture.kvHeads == 40);
        CHECK(kvPerToken(c->architecture) == 819200); // BRIEF §1.1
    }
    SECTION("llama-7b (LLaMA-1): no num_key_value_heads means MHA")
    {
        auto c = load("hf/llama-7b/config.json");
        REQUIRE(c);
        CHECK(c->architecture.kvHeads == c->architecture.attentionHeads);
        CHECK(c->architecture.kvHeads == 32);
        CHECK(c->contextLength == 2048); // max_sequence_length / max_position_embeddings
    }
    SECTION("Llama-2-70b: GQA 64/8")
    {
        auto c = load("hf/Llama-2-70b-chat-hf/config.json");
        REQUIRE(c);
        CHECK(c->architecture.attentionHeads == 64);
        CHECK(c->architecture.kvHeads == 8);
        CHECK(c->architecture.layers == 80);
    }
    SECTION("Llama-3.1-70B-Instruct: llama3 rope_scaling, 131072 context")
    {
        auto c = load("hf/Llama-3.1-70B-Instruct/config.json");
        REQUIRE(c);
        CHECK(c->contextLength == 131072);
    }
    SECTION("Llama-3.2-3B-Instruct: tied embeddings, explicit head_dim")
    {
        auto c = load("hf/Llama-3.2-3B-Instruct/config.json");
        REQUIRE(c);
        CHECK(c->architecture.tiedEmbeddings);
        CHECK(c->architecture.headDim == 128);
    }
    SECTION("Mixtral-8x7B: 8 experts, top-2, ctx 32768 (ollama testdata)")
    {
        auto c = load("hf/Mixtral-8x7B-v0.1/config.json");
        REQUIRE(c);
        CHECK(c->architecture.moe.expertCount == 8);
        CHECK(c->architecture.moe.expertsPerToken == 2);
        CHECK(c->architecture.kvHeads == 8);
        CHECK(c->contextLength == 32768);
    }
    SECTION("Qwen2.5-3B-Instruct: tied, GQA 16/2, use_sliding_window false")
    {
        auto c = load("hf/Qwen2.5-3B-Instruct/config.json");
        REQUIRE(c);
        CHECK(c->architecture.tiedEmbeddings);
        CHECK(c->architecture.attentionHeads == 16);
        CHECK(c->architecture.kvHeads == 2);
        CHECK_FALSE(c->architecture.sliding.enabled());
        CHECK(c->architecture.qkvBias);
    }
    SECTION("Phi-3-mini-128k: 131072 context, 32/32 heads, LongRoPE")
    {
        auto c = load("hf/Phi-3-mini-128k-instruct/config.json");
        REQUIRE(c);
        CHECK(c->contextLength == 131072);
        CHECK(c->architecture.attentionHeads == 32);
        CHECK(c->architecture.kvHeads == 32);
        CHECK(c->architecture.headDim == 96); // rope dims 96 (ollama testdata)
    }
    SECTION("Phi-3-mini-4k: sliding window 2047")
    {
        auto c = load("hf/Phi-3-mini-4k-instruct/config.json");
        REQUIRE(c);
        CHECK(c->architecture.sliding.windowTokens == 2047);
    }
    SECTION("gemma-2b-it: MQA, head_dim 256, tied by default (ollama testdata: 18 blocks, ff 16384)")
    {
        auto c = load("hf/gemma-2b-it/config.json");
        REQUIRE(c);
        CHECK(c->architecture.layers == 18);
        CHECK(c->architecture.kvHeads == 1);
        CHECK(c->architecture.headDim == 256);
        CHECK(c->architecture.intermediateSize == 16384);
        CHECK(c->architecture.tiedEmbeddings);
        CHECK(c->contextLength == 8192);
    }
    SECTION("DeepSeek-V2-Lite: MLA rank 512, 64 routed + 2 shared experts")
    {
        auto c = load("hf/DeepSeek-V2-Lite/config.json");
        REQUIRE(c);
        const auto& a = c->architecture;
        CHECK(a.mla.kvLoraRank == 512);
        CHECK(a.mla.qLoraRank == 0);
        CHECK(a.mla.qkRopeHeadDim == 64);
        CHECK(a.moe.expertCount == 64);
        CHECK(a.moe.sharedExperts == 2);
        CHECK(a.moe.expertsPerToken == 6);
        CHECK(a.moe.denseFirstLayers == 1);
        // MLA caches kv_lora_rank + rope dim per layer: 27 * (512 + 64) * 2 B
        CHECK(kvPerToken(a) == 27 * (512 + 64) * 2);
    }
    SECTION("falcon-7b (RefinedWebModel): n_head / n_layer / multi_query legacy names")
    {
        for (const char* rel : {"hf/falcon-7b/config.json", "hf/falcon-7b-instruct/config.json"}) {
            INFO(rel);
            auto c = load(rel);
            REQUIRE(c);
            const auto& a = c->architecture;
            CHECK(a.family == "falcon");
            CHECK(a.layers == 32);       // GGUF falcon vocab file: 32 blocks
            CHECK(a.hiddenSize == 4544);
            CHECK(a.attentionHeads == 71);
            CHECK(a.kvHeads == 1);
            CHECK(a.intermediateSize == 18176);
            CHECK(a.vocabSize == 65024);
            CHECK(a.normsPerLayer == 1);
        }
    }
    SECTION("gpt2-xl: n_embd / n_layer / n_head / n_positions")
    {
        auto c = load("hf/gpt2-xl/config.json");
        REQUIRE(c);
        CHECK(c->architecture.layers == 48);
        CHECK(c->architecture.hiddenSize == 1600);
        CHECK(c->architecture.attentionHeads == 25);
        CHECK(c->architecture.positionEmbeddingRows == 1024);
        CHECK(c->contextLength == 1024);
        CHECK(c->architecture.mlp == MlpKind::Plain);
        CHECK(c->architecture.intermediateSize == 6400);
    }
    SECTION("opt-125m: ffn_dim, learned positions with offset 2")
    {
        auto c = load("hf/opt-125m/config.json");
        REQUIRE(c);
        CHECK(c->architecture.intermediateSize == 3072);
        CHECK(c->architecture.positionEmbeddingRows == 2050);
        CHECK(c->architecture.tiedEmbeddings);
        CHECK(c->checkpointDtype == "fp16");
    }
}

TEST_CASE("config.json key variants", "[importers][hf]")
{
    SECTION("missing num_key_value_heads is MHA; head_dim from hidden / heads")
    {
        auto c = parsed(std::string(kLlamaLike) + "}");
        CHECK(c.architecture.kvHeads == 4);
        CHECK(c.architecture.headDim == 16);
        CHECK(c.checkpointDtype == "bf16");
        CHECK_FALSE(c.warnings.empty()); // no torch_dtype
    }
    SECTION("explicit head_dim wins")
    {
        auto c = parsed(std::string(kLlamaLike) + R"(,"head_dim":32,"num_key_value_heads":2})");
        CHECK(c.architecture.headDim == 32);
        CHECK(c.architecture.kvHeads == 2);
    }
    SECTION("nested text_config (multimodal)")
    {
        auto c = parsed(R"({"model_type":"llava","torch_dtype":"float16","text_config":)" + std::string(kLlamaLike) +
                        R"(,"num_key_value_heads":1},"vision_config":{"hidden_size":1024}})");
        CHECK(c.architecture.layers == 2);
        CHECK(c.architecture.kvHeads == 1);
        CHECK(c.checkpointDtype == "fp16");
    }
    SECTION("gemma2: every other layer slides, from layer 0")
    {
        auto c = parsed(R"({"model_type":"gemma2","num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,
          "num_key_value_heads":2,"head_dim":16,"intermediate_size":128,"vocab_size":100,"max_position_embeddings":8192,
          "sliding_window":4096})");
        CHECK(c.architecture.sliding.windowTokens == 4096);
        CHECK(c.architecture.sliding.slidingLayers == std::vector<bool>{true, false, true, false});
        CHECK(c.architecture.normsPerLayer == 4);
        CHECK(c.architecture.tiedEmbeddings);
    }
    SECTION("sliding_window_pattern 6 (gemma3): every sixth layer is global")
    {
        auto c = parsed(R"({"model_type":"gemma3_text","num_hidden_layers":6,"hidden_size":64,"num_attention_heads":4,
          "num_key_value_heads":2,"head_dim":16,"intermediate_size":128,"vocab_size":100,"sliding_window":512,
          "sliding_window_pattern":6})");
        CHECK(c.architecture.sliding.slidingLayers == std::vector<bool>{true, true, true, true, true, false});
    }
    SECTION("layer_types")
    {
        auto c = parsed(std::string(kLlamaLike) +
                        R"(,"sliding_window":128,"layer_types":["sliding_attention","full_attention"]})");
        CHECK(c.architecture.sliding.slidingLayers == std::vector<bool>{true, false});
    }
    SECTION("use_sliding_window false disables the window")
    {
        auto c = parsed(std::string(kLlamaLike) + R"(,"sliding_window":128,"use_sliding_window":false})");
        CHECK_FALSE(c.architecture.sliding.enabled());
    }
    SECTION("quantization_config maps to weight format ids")
    {
        struct Case {
            const char* q;
            const char* id;
        };
        const Case cases[] = {
            {R"({"quant_method":"gptq","bits":4,"group_size":128,"desc_act":false})", "gptq-g128"},
            {R"({"quant_method":"awq","bits":4,"group_size":128,"zero_point":true})", "awq-g128"},
            {R"({"quant_method":"bitsandbytes","load_in_4bit":true,"bnb_4bit_quant_type":"nf4"})", "nf4-bnb"},
            {R"({"quant_method":"bitsandbytes","load_in_4bit":true,"bnb_4bit_quant_type":"nf4","bnb_4bit_use_double_quant":true})", "nf4-bnb-dq"},
            {R"({"quant_method":"bitsandbytes","load_in_8bit":true})", "int8-row"},
            {R"({"quant_method":"fp8","activation_scheme":"dynamic"})", "fp8"},
        };
        for (const auto& k : cases) {
            INFO(k.q);
            auto c = parsed(std::string(kLlamaLike) + R"(,"quantization_config":)" + k.q + "}");
            REQUIRE(c.weightFormatId.has_value());
            CHECK(*c.weightFormatId == k.id);
            CHECK(findFormat(*c.weightFormatId).has_value());
        }
    }
    SECTION("rope_scaling linear is noted")
    {
        auto c = parsed(std::string(kLlamaLike) + R"(,"rope_scaling":{"type":"linear","factor":4.0},"torch_dtype":"bfloat16"})");
        CHECK(c.contextLength == 512);
        REQUIRE(c.warnings.size() == 1);
        CHECK(c.warnings[0].find("rope_scaling") != std::string::npos);
    }
}

TEST_CASE("config.json errors", "[importers][hf]")
{
    CHECK(failed("{not json").code == ImportErrorCode::BadJson);
    CHECK(failed("[1,2]").code == ImportErrorCode::BadJson);
    CHECK(failed(std::string(200, '[')).code == ImportErrorCode::NestingTooDeep);
    {
        auto e = failed(R"({"model_type":"llama","hidden_size":64,"num_attention_heads":4})");
        CHECK(e.code == ImportErrorCode::MissingKey);
        CHECK(e.key == "num_hidden_layers");
    }
    {
        auto e = failed(std::string(kLlamaLike) + R"(,"num_key_value_heads":"8"})");
        CHECK(e.code == ImportErrorCode::WrongKeyType);
        CHECK(e.key == "num_key_value_heads");
    }
    {
        auto e = failed(std::string(kLlamaLike) + R"(,"num_key_value_heads":3})");
        CHECK(e.code == ImportErrorCode::BadValue);
        CHECK(e.key == "num_key_value_heads");
    }
    {
        auto e = failed(R"({"model_type":"llama","num_hidden_layers":0,"hidden_size":64,"num_attention_heads":4,"intermediate_size":1,"vocab_size":1})");
        CHECK(e.code == ImportErrorCode::BadValue);
    }
    {
        auto e = failed(R"({"model_type":"bert","num_hidden_layers":12,"hidden_size":768,"num_attention_heads":12})");
        CHECK(e.code == ImportErrorCode::UnsupportedArchitecture);
        CHECK(e.key == "model_type");
    }
    {
        auto e = failed(std::string(kLlamaLike) + R"(,"num_hidden_layers":-3})");
        CHECK(e.code == ImportErrorCode::DuplicateKey);
    }
}

TEST_CASE("PhiForCausalLM (phi-2): plain MLP, LayerNorm, biases, one norm a layer", "[importers][hf]")
{
    // microsoft/phi-2 config.json (https://huggingface.co/microsoft/phi-2/blob/main/config.json).
    const HfConfig c = parsed(R"({"architectures": ["PhiForCausalLM"], "model_type": "phi", "hidden_act": "gelu_new",
        "hidden_size": 2560, "intermediate_size": 10240, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "partial_rotary_factor": 0.4,
        "qk_layernorm": false, "rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "float16",
        "vocab_size": 51200})");
    const Architecture& a = c.architecture;
    CHECK(a.family == "phi2");
    CHECK(a.mlp == MlpKind::Plain);
    CHECK(a.norm == NormKind::LayerNorm);
    CHECK(a.normsPerLayer == 1);
    CHECK(a.qkvBias);
    CHECK(a.mlpBias);
    CHECK(a.headDim == 80);
    CHECK(kvPerToken(a) == 32ull * 32 * 80 * 2 * 2);
    // Per layer: qkv 3 x (2560^2 + 2560), dense 2560^2 + 2560, fc1 2560 x 10240 + 10240,
    // fc2 10240 x 2560 + 2560, one LayerNorm 2 x 2560; embeddings and lm_head 51,200 x 2560 each,
    // the final LayerNorm 2 x 2560: 2,779,632,640 (phi-2's published 2.7B; its lm_head bias,
    // 51,200 more, is not counted). vLLM 0.19 loads it in 5.19 GiB (llm-d-planner sweep log).
    CHECK(parameterCount(a) == 2'779'632'640ull);
}
