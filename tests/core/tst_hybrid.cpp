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

// Falcon-H1-1.5B: the shapes of the transformers FalconH1 documentation table (24 layers, hidden
// 2048, 8 attention heads, 2 KV heads, 48 Mamba heads, head dims 128 (attention) / 64 (Mamba),
// d_state 256; https://huggingface.co/docs/transformers/model_doc/falcon_h1), mamba_d_ssm = 48 x 64,
// and FalconH1Config's defaults for the keys the table leaves out (mamba_n_groups 1, mamba_d_conv 4;
// transformers configuration_falcon_h1.py).
const char* kFalconH1Config = R"({"model_type": "falcon_h1", "hidden_size": 2048, "intermediate_size": 4608,
    "num_hidden_layers": 24, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
    "vocab_size": 65537, "mamba_d_ssm": 3072, "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_d_state": 256,
    "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2, "max_position_embeddings": 131072})";

TEST_CASE("Falcon-H1: every layer keeps its KV cache and a Mamba-2 state", "[hybrid]")
{
    auto cfg = parseHfConfig(kFalconH1Config, "config.json");
    REQUIRE(cfg.has_value());
    const Architecture& a = cfg->architecture;
    REQUIRE(a.hybrid.enabled());
    for (std::uint32_t i = 0; i < a.layers; ++i) {
        CHECK(a.hybrid.isAttention(i));
        CHECK(a.hybrid.isRecurrent(i));
    }
    CHECK(a.hybrid.ssm.innerSize == 3072); // mamba_d_ssm, not mamba_expand x hidden_size (4096)
    for (const std::string& w : cfg->warnings)
        CHECK(w.find("not modelled") == std::string::npos);
    const KvLayout kv = kvLayout(a, *findKvDtype("fp16"));
    CHECK(kv.fullLayers == 24);
    CHECK(kv.recurrentLayers == 24);
    // 24 layers x 2 KV heads x (128 + 128) x 2 B: 32 MiB a layer at 32,768 tokens.
    CHECK(kv.bytesPerToken().value == 24ull * 2 * 256 * 2);
    // 24 x ((4 - 1) x (3,072 + 2 x 1 x 256) conv + 48 x 64 x 256 SSM) elements, 2 B each here.
    CHECK(kv.stateBytesPerSequence.value == 24ull * (3 * 3584 + 48 * 64 * 256) * 2);
    // The weights hold both mixers: q/k/v/o and the Mamba-2 projections in every layer.
    const std::uint64_t withMamba = parameterCount(a);
    Architecture attentionOnly = a;
    attentionOnly.hybrid = HybridConfig{};
    const std::uint64_t mambaPerLayer = (withMamba - parameterCount(attentionOnly)) / 24;
    // in_proj [2 x 3072 + 2 x 256 + 48, 2048], conv1d [3584, 4] + bias, dt_bias/A_log/D, norm [3072],
    // out_proj [2048, 3072].
    CHECK(mambaPerLayer == (2ull * 3072 + 2 * 256 + 48) * 2048 + 3584 * 4 + 3584 + 3 * 48 + 3072 + 2048ull * 3072);
}

TEST_CASE("Falcon-H1 without mamba_d_head: \"auto\" is d_ssm / heads", "[hybrid]")
{
    auto cfg = parseHfConfig(R"({"model_type": "falcon_h1", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "mamba_d_state": 16, "mamba_n_heads": 4, "mamba_d_head": "auto", "mamba_d_ssm": 96})",
                             "config.json");
    REQUIRE(cfg.has_value());
    CHECK(cfg->architecture.hybrid.ssm.headDim == 24);
    CHECK(cfg->architecture.hybrid.ssm.innerSize == 96);
}

namespace {

Architecture profileArchitecture(const char* id)
{
    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles.has_value());
    auto model = resolveModel(id, *profiles);
    REQUIRE(model.has_value());
    return *model->architecture;
}

// ibm-granite/granite-4.0-h-tiny config.json, the keys that size memory
// (https://huggingface.co/ibm-granite/granite-4.0-h-tiny/blob/main/config.json).
const char* kGraniteTinyConfig = R"({
  "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 1536,
  "num_hidden_layers": 40, "num_attention_heads": 12, "num_key_value_heads": 4, "intermediate_size": 512,
  "shared_intermediate_size": 1024, "num_local_experts": 64, "num_experts_per_tok": 6, "vocab_size": 100352,
  "max_position_embeddings": 1048576, "tie_word_embeddings": true, "position_embedding_type": "nope",
  "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4,
  "mamba_expand": 2, "mamba_conv_bias": true, "mamba_proj_bias": false, "torch_dtype": "bfloat16",
  "layer_types": ["mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba"]
})";

} // namespace

TEST_CASE("Granite 4: Mamba-2 layers and four attention layers, counted per tensor", "[hybrid]")
{
    const Architecture a = profileArchitecture("granite-4.0-h-tiny");
    CHECK(a.hybrid.mixerOf(0) == MixerKind::Mamba2);
    CHECK(a.hybrid.mixerOf(5) == MixerKind::Attention);
    CHECK(a.hybrid.mixerOf(35) == MixerKind::Attention);
    // llama.cpp prints "model params = 6.94 B" for the published GGUF (LostRuins/koboldcpp issue
    // 1781, llama.cpp's print_info): the tensor list within the print's rounding.
    CHECK(parameterCount(a) == Approx(6.94e9).epsilon(0.001));
    // granite-4.0-h-small: "32B" on its card; the sum of its tensors.
    CHECK(parameterCount(profileArchitecture("granite-4.0-h-small")) == Approx(32.2e9).epsilon(0.002));

    auto cfg = parseHfConfig(kGraniteTinyConfig, "config.json");
    REQUIRE(cfg.has_value());
    CHECK(cfg->architecture.family == "granitehybrid");
    CHECK(cfg->architecture.hybrid.layerMixers == a.hybrid.layerMixers);
    CHECK(cfg->architecture.hybrid.ssm.innerSize == 3072);
    CHECK(cfg->architecture.moe.sharedExpertFfnSize == 1024);
    CHECK_FALSE(cfg->architecture.moe.sharedExpertGate);
    CHECK(parameterCount(cfg->architecture) == parameterCount(a));
    for (const std::string& w : cfg->warnings)
        CHECK(w.find("not modelled") == std::string::npos);
}

TEST_CASE("Mamba-2 state per sequence as vLLM and llama.cpp size it", "[hybrid]")
{
    const Architecture a = profileArchitecture("granite-4.0-h-tiny");
    // mamba2_state_shape: conv (d_conv - 1) x (d_inner + 2 groups d_state), temporal heads x head_dim x d_state.
    const RecurrentState one = recurrentState(a, 0, 1);
    CHECK(one.convElements == 3 * (3072 + 2 * 128));
    CHECK(one.ssmElements == 48ull * 64 * 128);
    CHECK(recurrentState(a, 5, 1).convElements == 0); // an attention layer
    // TP 4: one group replicated to each rank (extra_groups_for_head_shards: 1 + 3 groups), heads split.
    const RecurrentState tp4 = recurrentState(a, 0, 4);
    CHECK(tp4.convElements == 3 * ((3072 + 2 * 4 * 128) / 4));
    CHECK(tp4.ssmElements == 12ull * 64 * 128);

    const KvLayout kv = kvLayout(a, *findKvDtype("bf16"));
    CHECK(kv.fullLayers == 4);
    CHECK(kv.recurrentLayers == 36);
    CHECK(kv.bytesPerToken().value == 4ull * 4 * (128 + 128) * 2); // 8 KiB a token
    CHECK(kv.stateBytesPerSequence.value == 36ull * (9'984 + 393'216) * 2);
    // llama.cpp keeps R and S in f32: twice the bytes.
    const KvLayout f32 = kvLayout(a, *findKvDtype("fp16"), *findKvDtype("fp16"), 1, 0, 0, 4);
    CHECK(f32.stateBytesPerSequence.value == 2 * kv.stateBytesPerSequence.value);
}

TEST_CASE("the frontier of a Mamba hybrid: each user costs its state, whatever the context", "[hybrid]")
{
    const Architecture a = profileArchitecture("granite-4.0-h-tiny");
    const KvLayout kv = kvLayout(a, *findKvDtype("bf16"));
    const std::uint64_t perToken = kv.bytesPerToken().value;
    const std::uint64_t state = kv.stateBytesPerSequence.value;
    const std::uint64_t budget = 4ull << 30;
    KvPool pool{kv, Bytes{budget}, Paging{16, 1}, 0};
    const std::vector<FrontierPoint> f = frontier(pool, 0);
    REQUIRE(f.size() >= 6);
    // Every point spends the budget on users x state plus users x context tokens, to within a block a user:
    //     context(users) = ((budget / users) - state) / per-token bytes, rounded down to the block.
    for (const FrontierPoint& p : f) {
        const std::uint64_t expected = (budget / p.users - state) / perToken / 16 * 16;
        CHECK(p.contextTokens == expected);
    }
    // So the tokens in flight fall as users grow (a pure-attention pool would hold them constant):
    // each user's state takes state / per-token = 3,544 tokens' worth off the pool.
    const auto tokens = [&](const FrontierPoint& p) { return p.users * p.contextTokens; };
    for (std::size_t i = 1; i < f.size(); ++i)
        CHECK(tokens(f[i]) < tokens(f[i - 1]));
    const FrontierPoint& last = f.back();
    const double lost = static_cast<double>(budget / perToken - tokens(last)) / static_cast<double>(last.users);
    CHECK(lost == Approx(static_cast<double>(state) / static_cast<double>(perToken)).epsilon(0.01));
    // The last user that fits holds at least one block beside its state.
    CHECK(last.users * (state + 16 * perToken) <= budget);
    CHECK((2 * last.users) * (state + 16 * perToken) > budget);
}

TEST_CASE("Nemotron-H and Jamba: the pattern keys of their configs", "[hybrid]")
{
    // configuration_nemotron_h.py key names: one character a block, a block a mixer or an MLP.
    auto nemo = parseHfConfig(R"({"model_type": "nemotron_h", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2, "attention_head_dim": 64,
        "vocab_size": 1000, "hybrid_override_pattern": "M-M*-M", "mamba_num_heads": 8, "mamba_head_dim": 64,
        "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2, "use_conv_bias": true,
        "use_bias": false, "mlp_bias": false})",
                              "config.json");
    REQUIRE(nemo.has_value());
    const Architecture& n = nemo->architecture;
    REQUIRE(n.hybrid.enabled());
    CHECK(n.hybrid.blockIsMixerOrMlp);
    CHECK(n.hybrid.mixerOf(1) == MixerKind::MlpOnly);
    CHECK(n.hybrid.mixerOf(3) == MixerKind::Attention);
    const KvLayout nkv = kvLayout(n, *findKvDtype("bf16"));
    CHECK(nkv.fullLayers == 1);
    CHECK(nkv.recurrentLayers == 3);
    CHECK(nkv.stateBytesPerSequence.value == 3ull * (3 * (512 + 2 * 8 * 128) + 8 * 64 * 128) * 2);
    // Blocks: M = norm + Mamba-2; - = norm + up/down (relu^2); * = norm + attention.
    const std::uint64_t mamba = (2 * 512 + 2 * 8 * 128 + 8) * 256 + (512 + 2048) * 4 + (512 + 2048) + 3 * 8 + 512 + 256 * 512;
    const std::uint64_t mlp = 2 * 512 * 256;
    const std::uint64_t attention = 256 * 256 + 2 * 128 * 256 + 256 * 256;
    CHECK(parameterCount(n) == 2 * 1000 * 256 + 256 + 6 * 256 + 3 * mamba + 2 * mlp + attention);

    // configuration_jamba.py: attention where i % attn_layer_period == attn_layer_offset, MoE where
    // i % expert_layer_period == expert_layer_offset; Mamba-1 elsewhere.
    auto jamba = parseHfConfig(R"({"model_type": "jamba", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536,
        "num_experts": 16, "num_experts_per_tok": 2, "expert_layer_period": 2, "expert_layer_offset": 1,
        "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
        "mamba_dt_rank": 256, "mamba_conv_bias": true, "mamba_proj_bias": false, "tie_word_embeddings": false,
        "max_position_embeddings": 262144})",
                               "config.json");
    REQUIRE(jamba.has_value());
    const Architecture& j = jamba->architecture;
    CHECK(j.hybrid.mixerOf(4) == MixerKind::Attention);
    CHECK(j.hybrid.mixerOf(0) == MixerKind::Mamba);
    CHECK(j.moe.isMoeLayer(1));
    CHECK_FALSE(j.moe.isMoeLayer(2));
    // ai21labs/Jamba-v0.1 (these are its config's values): "52B" total, 51.6 B as its card counts them.
    CHECK(parameterCount(j) == Approx(51.57e9).epsilon(0.002));
    const KvLayout jkv = kvLayout(j, *findKvDtype("bf16"));
    CHECK(jkv.fullLayers == 4);
    // mamba1_state_shape: conv d_inner x (d_conv - 1), temporal d_inner x d_state.
    CHECK(jkv.stateBytesPerSequence.value == 28ull * (8192 * 3 + 8192 * 16) * 2);
}

TEST_CASE("Mamba shapes are bounded", "[hybrid]")
{
    auto bad = parseHfConfig(R"({"model_type": "granitemoehybrid", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "layer_types": ["mamba", "attention"], "mamba_d_state": 128})",
                             "config.json");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("mamba_n_heads") != std::string::npos);
    auto groups = parseHfConfig(R"({"model_type": "granitemoehybrid", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
        "layer_types": ["mamba", "attention"], "mamba_d_state": 16, "mamba_n_heads": 2, "mamba_d_head": 64,
        "mamba_n_groups": 3})",
                                "config.json");
    REQUIRE_FALSE(groups.has_value());
    CHECK(groups.error().message.find("groups") != std::string::npos);
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

namespace {

/// A catalog profile against the published config.json it cites: the same parameters, KV per
/// token and state per sequence as the config imports to. Returns the profile's layout.
KvLayout checkProfileIsConfig(const char* id, const char* configJson, std::uint64_t parameters)
{
    auto parsed = parseHfConfig(configJson, "config.json");
    REQUIRE(parsed.has_value());
    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles.has_value());
    auto model = resolveModel(id, *profiles);
    REQUIRE(model.has_value());
    const Architecture& p = *model->architecture;
    CHECK(parameterCount(p) == parameterCount(parsed->architecture));
    CHECK(parameterCount(p) == parameters);
    const KvLayout pk = kvLayout(p, *findKvDtype("bf16"));
    const KvLayout ck = kvLayout(parsed->architecture, *findKvDtype("bf16"));
    CHECK(ck.stateBytesPerSequence == pk.stateBytesPerSequence);
    CHECK(ck.bytesPerToken() == pk.bytesPerToken());
    return pk;
}

} // namespace

TEST_CASE("nemotron-h-8b: the profile is its published config.json", "[hybrid][catalog]")
{
    // nvidia/Nemotron-H-8B-Base-8K config.json, the keys that shape it (as NVIDIA-NeMo
    // Megatron-Bridge's NemotronH test fixture quotes the published file); 8.10B, the card's 8B.
    const KvLayout pk = checkProfileIsConfig("nemotron-h-8b", R"({"architectures": ["NemotronHForCausalLM"], "attention_bias": false,
        "attention_head_dim": 128, "chunk_size": 128, "conv_kernel": 4, "expand": 2, "hidden_act": "relu2",
        "hidden_size": 4096, "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
        "intermediate_size": 21504, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64, "mamba_hidden_act": "silu",
        "mamba_num_heads": 128, "mamba_proj_bias": false, "max_position_embeddings": 8192, "mlp_bias": false,
        "mlp_hidden_act": "relu2", "model_type": "nemotron_h", "n_groups": 8, "num_attention_heads": 32,
        "num_hidden_layers": 52, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "ssm_state_size": 128,
        "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.48.0.dev0",
        "use_bias": false, "use_conv_bias": true, "vocab_size": 131072})",
                                                    8'100'852'736ull);
    // 4 attention layers of 8 KV heads x 128 x (K + V) x 2 B; 24 Mamba-2 layers of conv state
    // (conv_kernel - 1) x (8,192 + 2 x 8 x 128) and SSM state 128 heads x 64 x 128, bf16.
    CHECK(pk.fullLayers == 4);
    CHECK(pk.bytesPerToken().value == 4ull * 8 * 128 * 2 * 2);
    CHECK(pk.recurrentLayers == 24);
    CHECK(pk.stateBytesPerSequence.value == 24ull * (3 * (8192 + 2 * 8 * 128) + 128 * 64 * 128) * 2);
}

TEST_CASE("jamba-1.5-mini: the profile is its published config.json", "[hybrid][catalog]")
{
    // ai21labs/AI21-Jamba-1.5-Mini config.json, the keys that shape it (as sdpython/onnx-diagnostic's
    // get_ai21_jamba_15_mini quotes the published file); 51.57B, the card's 52B total.
    const KvLayout pk = checkProfileIsConfig("jamba-1.5-mini", R"({"architectures": ["JambaForCausalLM"], "attn_layer_offset": 4, "attn_layer_period": 8,
        "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 14336, "mamba_conv_bias": true, "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256,
        "mamba_expand": 2, "mamba_proj_bias": false, "max_position_embeddings": 262144, "model_type": "jamba",
        "num_attention_heads": 32, "num_experts": 16, "num_experts_per_tok": 2, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "sliding_window": null, "tie_word_embeddings": false,
        "torch_dtype": "bfloat16", "transformers_version": "4.40.2", "vocab_size": 65536})",
                                                    51'570'323'328ull);
    CHECK(pk.fullLayers == 4);
    CHECK(pk.recurrentLayers == 28);
}
