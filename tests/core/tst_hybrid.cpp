// Hybrid models (architecture.h HybridConfig): Gated DeltaNet layers keep a fixed state per
// sequence instead of K and V per token, so the cache is users x state + tokens x (attention
// layers' bytes), and the context x users frontier bends by the state, not by the context.
// Shapes from Qwen/Qwen3-Next-80B-A3B-Instruct's config.json (the profile cites it).

#include "headroom/core/capacity.h"
#include "headroom/core/importers/hfconfig.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/parameters.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include "testconfig.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace headroom;

namespace {

Architecture qwen3Next()
{
    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles.has_value());
    auto model = resolveModel("qwen3-next-80b-a3b", *profiles);
    REQUIRE(model.has_value());
    return *model->architecture;
}

// https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json (the keys that
// size memory; the config gives no layer_types, only full_attention_interval).
const char* kQwen3NextConfig = R"({
  "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
  "intermediate_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
  "head_dim": 256, "vocab_size": 151936, "max_position_embeddings": 262144, "tie_word_embeddings": false,
  "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
  "shared_expert_intermediate_size": 512, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
  "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
  "torch_dtype": "bfloat16"
})";

} // namespace

TEST_CASE("Qwen3-Next: Gated DeltaNet layers, gated attention and a shared expert, counted per tensor", "[hybrid]")
{
    const Architecture a = qwen3Next();
    REQUIRE(a.hybrid.enabled());
    CHECK(a.hybrid.isRecurrent(0));
    CHECK_FALSE(a.hybrid.isRecurrent(3)); // every fourth layer attends
    // 79,674,391,296: the total of the published Qwen3-Next-architecture checkpoint without its MTP
    // layer (Qwen/Qwen3-Coder-Next, same shapes, as a public parser test quotes it).
    CHECK(parameterCount(a) == 79'674'391'296ull);

    auto cfg = parseHfConfig(kQwen3NextConfig, "config.json");
    REQUIRE(cfg.has_value());
    CHECK(cfg->architecture.family == "qwen3next");
    CHECK(cfg->architecture.hybrid.layerMixers == a.hybrid.layerMixers);
    CHECK(cfg->architecture.hybrid.attentionOutputGate);
    CHECK(parameterCount(cfg->architecture) == 79'674'391'296ull);
    for (const std::string& w : cfg->warnings)
        CHECK(w.find("shared_expert") == std::string::npos);
}

TEST_CASE("recurrent state per sequence does not grow with the context", "[hybrid]")
{
    const Architecture a = qwen3Next();
    const KvLayout kv = kvLayout(a, *findKvDtype("bf16"));
    CHECK(kv.fullLayers == 12);
    CHECK(kv.recurrentLayers == 36);
    // 12 attention layers x 2 KV heads x (256 + 256) x 2 B.
    CHECK(kv.bytesPerToken().value == 24'576);
    // 36 x ((4 - 1) x (2 x 16 x 128 + 32 x 128) conv + 32 x 128 x 128 recurrent) x 2 B.
    CHECK(kv.stateBytesPerSequence.value == 36ull * (3 * 8192 + 32 * 128 * 128) * 2);
    CHECK(kv.stateBytesPerSequence.value == 39'518'208);
    const Bytes one = kvBytes(kv, 1, 1'000);
    const Bytes longer = kvBytes(kv, 1, 101'000);
    CHECK((longer - one).value == 100'000ull * 24'576); // only the attention layers grow
    CHECK(kvBytes(kv, 8, 1'000).value == 8 * one.value);
    // Under tensor parallelism the heads of the state split with the ranks.
    CHECK(kvLayout(a, *findKvDtype("bf16"), 4).stateBytesPerSequence.value == kv.stateBytesPerSequence.value / 4);

    // The frontier: each user costs its state before its first token.
    KvPool pool{kv, Bytes{10ull << 30}, Paging{16, 1}, 0};
    const std::uint64_t ctx = 8'192;
    const std::uint64_t perUser = ctx * 24'576 + 39'518'208;
    CHECK(maxUsers(pool, ctx) == (10ull << 30) / perUser);
    const std::uint64_t users = 64;
    CHECK(maxContextTokens(pool, users) == ((10ull << 30) / users - 39'518'208) / 24'576 / 16 * 16);
    const std::vector<FrontierPoint> f = frontier(pool, 0);
    REQUIRE(f.size() >= 2);
    // 1,024 users need 37.7 GiB of state alone: the frontier stops before them.
    CHECK(f.back().users < 1024);
}

TEST_CASE("Mamba layers are said to be unmodelled, not silently priced", "[hybrid]")
{
    auto cfg = parseHfConfig(R"({"model_type": "granitemoehybrid", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "layer_types": ["mamba", "attention"], "mamba_d_state": 128})",
                             "config.json");
    REQUIRE(cfg.has_value());
    CHECK_FALSE(cfg->architecture.hybrid.enabled());
    bool warned = false;
    for (const std::string& w : cfg->warnings)
        warned = warned || w.find("not modelled") != std::string::npos;
    CHECK(warned);
}

TEST_CASE("linear-attention shapes are bounded", "[hybrid]")
{
    auto cfg = parseHfConfig(R"({"model_type": "qwen3_next", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "full_attention_interval": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 99999999,
        "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4})",
                             "config.json");
    REQUIRE_FALSE(cfg.has_value());
    CHECK(cfg.error().message.find("linear_num_value_heads") != std::string::npos);
}
