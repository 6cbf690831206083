// Vision towers and projectors (architecture.h VisionConfig): read from config.json
// `vision_config`, listed per tensor, priced in weights. The configs below are copied from the
// published config.json files (URLs in each case); the parameter counts they must give are the
// publishers' safetensors totals, and the GGUF pricing is checked against Ollama's printed
// projector.weights.

#include "headroom/core/importers/hfconfig.h"
#include "headroom/core/parameters.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/weightformat.h"

#include "testconfig.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include <filesystem>

using namespace headroom;

namespace {

Architecture parsed(const char* json)
{
    auto cfg = parseHfConfig(json, "config.json");
    REQUIRE(cfg.has_value());
    return cfg->architecture;
}

std::uint64_t visionParameters(const Architecture& arch)
{
    std::uint64_t n = 0;
    for (const TensorSpec& t : listTensors(arch))
        if (t.role == TensorRole::VisionMatrix || t.role == TensorRole::VisionVector)
            n += t.elements();
    return n;
}

// https://huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct/blob/main/config.json (text keys at the top).
const char* kQwen25Vl7b = R"({
  "architectures": ["Qwen2_5_VLForConditionalGeneration"], "hidden_act": "silu", "hidden_size": 3584,
  "intermediate_size": 18944, "max_position_embeddings": 128000, "max_window_layers": 28,
  "model_type": "qwen2_5_vl", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_sliding_window": false, "vocab_size": 152064,
  "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
    "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2,
    "spatial_patch_size": 14, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31],
    "tokens_per_second": 2, "temporal_patch_size": 2}
})";

// https://huggingface.co/Qwen/Qwen2-VL-7B-Instruct/blob/main/config.json
const char* kQwen2Vl7b = R"({
  "architectures": ["Qwen2VLForConditionalGeneration"], "hidden_size": 3584, "intermediate_size": 18944,
  "max_position_embeddings": 32768, "model_type": "qwen2_vl", "num_attention_heads": 28,
  "num_hidden_layers": 28, "num_key_value_heads": 4, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_sliding_window": false, "vocab_size": 152064,
  "vision_config": {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3,
    "hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
})";

// https://huggingface.co/llava-hf/llava-1.5-7b-hf/blob/main/config.json. The published text_config
// gives only max_position_embeddings 4096, model_type llama and vocab_size 32064; the other text
// keys are LlamaConfig's defaults (4096 wide, 32 layers and heads, 11008), written out here.
const char* kLlava15 = R"({
  "architectures": ["LlavaForConditionalGeneration"], "ignore_index": -100, "image_token_index": 32000,
  "model_type": "llava", "pad_token_id": 32001, "projector_hidden_act": "gelu",
  "text_config": {"max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05,
    "torch_dtype": "float16", "vocab_size": 32064, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32},
  "torch_dtype": "float16", "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
  "vision_config": {"hidden_size": 1024, "image_size": 336, "intermediate_size": 4096,
    "model_type": "clip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 24, "patch_size": 14,
    "projection_dim": 768, "vocab_size": 32000}
})";

// https://huggingface.co/mistralai/Mistral-Small-3.1-24B-Instruct-2503/blob/main/config.json
const char* kMistralSmall31 = R"({
  "architectures": ["Mistral3ForConditionalGeneration"], "image_token_index": 10, "model_type": "mistral3",
  "multimodal_projector_bias": false, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
  "text_config": {"head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 32768,
    "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32,
    "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0,
    "sliding_window": null, "vocab_size": 131072},
  "torch_dtype": "bfloat16", "vision_config": {"head_dim": 64, "hidden_act": "silu", "hidden_size": 1024,
    "image_size": 1540, "intermediate_size": 4096, "model_type": "pixtral", "num_attention_heads": 16,
    "num_channels": 3, "num_hidden_layers": 24, "patch_size": 14, "rope_theta": 10000.0},
  "vision_feature_layer": -1
})";

// https://huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct/blob/main/config.json (the keys
// that shape the weights; the published file also carries token ids and dropout settings).
const char* kLlama4Scout = R"({
  "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "tie_word_embeddings": false,
  "text_config": {"attention_bias": false, "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 5120, "interleave_moe_layer_step": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
    "max_position_embeddings": 10485760, "model_type": "llama4_text", "num_attention_heads": 40,
    "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "torch_dtype": "bfloat16", "use_qk_norm": true,
    "vocab_size": 202048},
  "vision_config": {"attention_dropout": 0.0, "hidden_act": "gelu", "hidden_size": 1408, "image_size": 336,
    "intermediate_size": 5632, "model_type": "llama4_vision_model", "multi_modal_projector_bias": false,
    "norm_eps": 1e-05, "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 34, "patch_size": 14,
    "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096, "projector_output_dim": 4096, "rope_theta": 10000,
    "vision_output_dim": 4096}
})";

} // namespace

TEST_CASE("vision towers from config.json give the published parameter counts", "[vision]")
{
    // Safetensors totals on each model page (exact counts of the published checkpoints).
    SECTION("LLaVA-1.5-7B: CLIP ViT-L/14-336 + two-layer projector, 7,063,427,072")
    {
        const Architecture a = parsed(kLlava15);
        CHECK(a.vision.kind == VisionKind::Clip);
        CHECK(a.vision.patchesPerImage() == 576);
        CHECK(visionParameters(a) == 303'507'456ull + 20'979'712ull);
        CHECK(parameterCount(a) == 7'063'427'072ull);
    }
    SECTION("Mistral-Small-3.1-24B: Pixtral + patch merger, 24,011,361,280")
    {
        const Architecture a = parsed(kMistralSmall31);
        CHECK(a.vision.kind == VisionKind::Pixtral);
        CHECK(a.vision.mergeSize == 2);
        CHECK(parameterCount(a) == 24'011'361'280ull);
    }
    SECTION("Qwen2.5-VL-7B: gated RMSNorm blocks, merger to 3584, 8,292,166,656")
    {
        const Architecture a = parsed(kQwen25Vl7b);
        CHECK(a.family == "qwen2");
        CHECK(a.vision.kind == VisionKind::Qwen25Vl);
        CHECK(a.vision.outputSize == 3584);
        CHECK(visionParameters(a) == 676'550'144ull);
        CHECK(parameterCount(a) == 8'292'166'656ull);
    }
    SECTION("Llama-4-Scout: unfolded patch linear, 34 LayerNorm blocks, pixel-shuffle adapter, 871,932,416")
    {
        // modeling_llama4.py: class embedding 1,408 + position table 577 x 1,408 + patch linear
        // 1,408 x 588 + pre/post LayerNorms, 34 x 23,807,872 per block, adapter fc1 4,096 x 5,632
        // and fc2 4,096 x 4,096, projector 5,120 x 4,096 = 871,932,416 (vLLM mllama4.py shards the
        // same matrices over TP); with the text's 107,769,861,120 the published 108.6B (the
        // total is checked on the llama-4-scout profile, tst_catalog.cpp).
        const Architecture a = parsed(kLlama4Scout);
        CHECK(a.vision.kind == VisionKind::Llama4);
        CHECK(a.vision.adapterSize == 4096);
        CHECK(a.vision.outputSize == 5120);
        CHECK(visionParameters(a) == 871'932'416ull);
        // The text model as the llama-4-scout profile prices it: each MoE layer's shared expert
        // (Llama4TextMoe.shared_expert, intermediate_size 8192) beside the 16 routed ones, and
        // chunked attention (attention_chunk_size 8192) on all but every 4th layer. Without the
        // shared expert the import was 6,039,797,760 parameters short (48 x 3 x 5,120 x 8,192).
        CHECK(a.family == "llama4");
        CHECK(a.moe.sharedExperts == 1);
        CHECK(a.moe.expertFfnSize == 8192);
        CHECK(a.intermediateSize == 16384);
        CHECK(a.sliding.windowTokens == 8192);
        CHECK(std::count(a.sliding.slidingLayers.begin(), a.sliding.slidingLayers.end(), true) == 36);
        CHECK(parameterCount(a) == 107'769'861'120ull + 871'932'416ull);
    }
    SECTION("Qwen2-VL-7B: LayerNorm fc1/fc2 blocks, 8,291,375,616")
    {
        const Architecture a = parsed(kQwen2Vl7b);
        CHECK(a.vision.kind == VisionKind::Qwen2Vl);
        CHECK(a.vision.intermediateSize == 5120);
        CHECK(visionParameters(a) == 675'759'104ull);
        CHECK(parameterCount(a) == 8'291'375'616ull);
    }
}

TEST_CASE("a GGUF projector is f16 matrices and f32 vectors, as Ollama counts it", "[vision]")
{
    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles.has_value());
    auto model = resolveModel("gemma-3-12b", *profiles);
    REQUIRE(model.has_value());
    const Architecture& a = *model->architecture;
    REQUIRE(a.vision.kind == VisionKind::Siglip);
    auto q4km = resolveFormat("q4_k_m", *model);
    REQUIRE(q4km.has_value());
    // Ollama's VisionGraphSize sums the v.* tensors (the SigLIP tower, not the mm.* projector):
    // projector.weights="795.9 MiB" for gemma3 (ollama/ollama issue 9791 era logs and later).
    std::uint64_t tower = 0;
    for (const TensorSpec& t : listTensors(a))
        if (t.name.rfind("vision_tower.", 0) == 0)
            tower += priceTensor(t, *q4km, a).bytes.value;
    CHECK(tower == 834'531'264ull);
    CHECK(static_cast<double>(tower) / (1 << 20) == Approx(795.9).margin(0.05));
    const WeightBill bill = priceWeights(a, *q4km);
    REQUIRE(bill.bytesByRole.count("vision"));
    CHECK(bill.bytesByRole.at("vision").value == tower + 1152ull * 3840 * 2 + 1152 * 4);
    // In bf16 the whole tower and projector are 2 B per parameter.
    auto bf16 = resolveFormat("bf16", *model);
    REQUIRE(bf16.has_value());
    CHECK(priceWeights(a, *bf16).bytesByRole.at("vision").value == 2 * visionParameters(a));
}

TEST_CASE("vision_config of an unknown multimodal family is reported, not priced", "[vision]")
{
    auto cfg = parseHfConfig(R"({"model_type": "mllama", "text_config": {"model_type": "mllama_text_model",
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 40, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072},
        "vision_config": {"hidden_size": 1280, "num_hidden_layers": 32}})",
                             "config.json");
    REQUIRE(cfg.has_value());
    CHECK_FALSE(cfg->architecture.vision.enabled());
    bool warned = false;
    for (const std::string& w : cfg->warnings)
        warned = warned || w.find("vision tower is not priced") != std::string::npos;
    CHECK(warned);
}

TEST_CASE("rope_scaling of the text config is kept for the engines' rotary caches", "[vision]")
{
    // google/gemma-3-4b-it config.json text_config (abridged): rope_scaling linear factor 8.
    const Architecture a = parsed(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text",
        "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34, "num_attention_heads": 8,
        "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208, "max_position_embeddings": 131072,
        "sliding_window": 1024, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}})");
    CHECK(a.ropeScaling.type == "linear");
    CHECK(a.ropeScaling.factor == 8.0);
    CHECK(a.ropeScaling.originalContextLength == 0);
    // A factor out of 1..1024 or an odd type is not kept (the trained context is unchanged either way).
    const Architecture odd = parsed(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 4096,
        "rope_scaling": {"rope_type": "linear", "factor": 1e9}})");
    CHECK_FALSE(odd.ropeScaling.enabled());
}

TEST_CASE("vision_config values are bounded", "[vision]")
{
    auto cfg = parseHfConfig(R"({"model_type": "qwen2_vl", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
        "vision_config": {"depth": 2, "embed_dim": 64, "num_heads": 4, "patch_size": 99999}})",
                             "config.json");
    REQUIRE_FALSE(cfg.has_value());
    CHECK(cfg.error().message.find("patch_size") != std::string::npos);
}
