// Hybrid GGUF files (granitehybrid, nemotron_h, jamba, falcon-h1): the per-layer mixers and the
// Mamba shapes come from llama.cpp's own keys, so a hybrid file is priced with its recurrent
// state, not as all-attention; the figures equal those of the same shape's config.json.
#include "importers/ggufwriter.h"

#include <headroom/core/importers/ggufreader.h>
#include <headroom/core/importers/hfconfig.h>
#include <headroom/core/kvcache.h>
#include <headroom/core/profiles.h>
#include <headroom/core/resolve.h>

#include "testconfig.h"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace headroom;
using headroom::test::GgufWriter;

namespace {

/// ibm-granite/granite-4.0-h-tiny as convert_hf_to_gguf.py writes it (GraniteHybridModel): 40
/// blocks, head_count_kv 0 on the Mamba-2 layers and 4 on the attention layers 5, 15, 25, 35 (the
/// pattern the granite4:small-h file prints in ollama/ollama#12982: "granitehybrid.attention.head_count_kv
/// arr[i32,40] = [0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, ..."), ssm.inner_size 3072 (48 heads x 64),
/// ssm.time_step_rank 48 (the Mamba-2 heads), state 128, one group, conv kernel 4 (the values llama.cpp
/// reads for this file: ggml-org/llama.cpp PR 13550's gdb session, d_conv 4, d_state 128, n_head 48,
/// head_dim 64, n_group 1).
struct GraniteKeys {
    std::uint32_t blocks = 40, stateSize = 128, innerSize = 3072, timeStepRank = 48;
};

GgufWriter graniteTiny(const GraniteKeys& k = {})
{
    GgufWriter w;
    w.kvString("general.architecture", "granitehybrid");
    w.kvU32("granitehybrid.block_count", k.blocks);
    w.kvU32("granitehybrid.context_length", 1048576);
    w.kvU32("granitehybrid.embedding_length", 1536);
    w.kvU32("granitehybrid.feed_forward_length", 512);
    w.kvU32("granitehybrid.attention.head_count", 12);
    std::vector<std::uint32_t> kv(40, 0);
    for (std::uint32_t i : {5u, 15u, 25u, 35u})
        kv[i] = 4;
    w.kvU32Array("granitehybrid.attention.head_count_kv", kv);
    w.kvU32("granitehybrid.expert_count", 64);
    w.kvU32("granitehybrid.expert_used_count", 6);
    w.kvU32("granitehybrid.vocab_size", 100352);
    w.kvU32("granitehybrid.ssm.conv_kernel", 4);
    w.kvU32("granitehybrid.ssm.state_size", k.stateSize);
    w.kvU32("granitehybrid.ssm.group_count", 1);
    w.kvU32("granitehybrid.ssm.inner_size", k.innerSize);
    w.kvU32("granitehybrid.ssm.time_step_rank", k.timeStepRank);
    w.tensor("output_norm.weight", {1536}, 0);
    return w;
}

// The same model's config.json, the keys that size its cache
// (https://huggingface.co/ibm-granite/granite-4.0-h-tiny/blob/main/config.json).
const char* kGraniteTinyConfig = R"({
  "model_type": "granitemoehybrid", "hidden_size": 1536,
  "num_hidden_layers": 40, "num_attention_heads": 12, "num_key_value_heads": 4, "intermediate_size": 512,
  "shared_intermediate_size": 1024, "num_local_experts": 64, "num_experts_per_tok": 6, "vocab_size": 100352,
  "max_position_embeddings": 1048576, "tie_word_embeddings": true, "position_embedding_type": "nope",
  "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4,
  "mamba_expand": 2, "layer_types": ["mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba",
                  "mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "mamba"]
})";

std::optional<Architecture> importArch(const GgufWriter& w, std::string* why = nullptr)
{
    const auto bytes = w.bytes();
    auto file = readGgufBytes(bytes, "hybrid.gguf");
    REQUIRE(file.has_value());
    return ggufArchitecture(*file, why);
}

void checkSameCache(const Architecture& gguf, const Architecture& config)
{
    const KvDtype bf16 = *findKvDtype("bf16");
    const KvLayout a = kvLayout(gguf, bf16);
    const KvLayout b = kvLayout(config, bf16);
    CHECK(a.fullLayers == b.fullLayers);
    CHECK(a.recurrentLayers == b.recurrentLayers);
    CHECK(a.bytesPerToken() == b.bytesPerToken());
    CHECK(a.stateBytesPerSequence == b.stateBytesPerSequence);
}

} // namespace

TEST_CASE("a granitehybrid GGUF: head_count_kv 0 marks its Mamba-2 layers", "[importers][gguf][hybrid]")
{
    const auto a = importArch(graniteTiny());
    REQUIRE(a.has_value());
    REQUIRE(a->hybrid.enabled());
    REQUIRE(a->hybrid.layerMixers.size() == 40);
    for (std::uint32_t i = 0; i < 40; ++i)
        CHECK(a->hybrid.mixerOf(i) == (i % 10 == 5 ? MixerKind::Attention : MixerKind::Mamba2));
    CHECK(a->kvHeads == 4);
    CHECK(a->kvHeadsPerLayer.empty());
    CHECK(a->hybrid.ssm.heads == 48);
    CHECK(a->hybrid.ssm.headDim == 64);
    CHECK(a->hybrid.ssm.groups == 1);
    CHECK(a->hybrid.ssm.stateSize == 128);
    CHECK(a->hybrid.ssm.convKernel == 4);
    CHECK(validateArchitecture(*a).empty());

    // The cache: four attention layers of 4 x 128 K and V a token, 36 Mamba-2 states a sequence,
    // conv 3 x (3072 + 2 x 128) and ssm 48 x 64 x 128 elements.
    const KvLayout kv = kvLayout(*a, *findKvDtype("bf16"));
    CHECK(kv.fullLayers == 4);
    CHECK(kv.recurrentLayers == 36);
    CHECK(kv.bytesPerToken().value == 4ull * 4 * (128 + 128) * 2);
    CHECK(kv.stateBytesPerSequence.value == 36ull * (3 * (3072 + 2 * 128) + 48ull * 64 * 128) * 2);

    auto cfg = parseHfConfig(kGraniteTinyConfig, "config.json");
    REQUIRE(cfg.has_value());
    CHECK(cfg->architecture.hybrid.layerMixers == a->hybrid.layerMixers);
    checkSameCache(*a, cfg->architecture);
}

TEST_CASE("a nemotron_h GGUF: Mamba-2, attention and MLP-only blocks from head_count_kv and feed_forward_length",
          "[importers][gguf][hybrid]")
{
    // The "M-M*-M" shape of tst_hybrid's Nemotron-H config, as convert_hf_to_gguf.py writes it:
    // head_count_kv 0 except on the attention block, feed_forward_length 0 except on the MLP blocks.
    GgufWriter w;
    w.kvString("general.architecture", "nemotron_h");
    w.kvU32("nemotron_h.block_count", 6);
    w.kvU32("nemotron_h.embedding_length", 256);
    w.kvU32Array("nemotron_h.feed_forward_length", {0, 512, 0, 0, 512, 0});
    w.kvU32("nemotron_h.attention.head_count", 4);
    w.kvU32Array("nemotron_h.attention.head_count_kv", {0, 0, 0, 2, 0, 0});
    w.kvU32("nemotron_h.attention.key_length", 64);
    w.kvU32("nemotron_h.attention.value_length", 64);
    w.kvU32("nemotron_h.vocab_size", 1000);
    w.kvU32("nemotron_h.ssm.conv_kernel", 4);
    w.kvU32("nemotron_h.ssm.state_size", 128);
    w.kvU32("nemotron_h.ssm.group_count", 8);
    w.kvU32("nemotron_h.ssm.inner_size", 512);
    w.kvU32("nemotron_h.ssm.time_step_rank", 8);
    w.tensor("output_norm.weight", {256}, 0);
    const auto a = importArch(w);
    REQUIRE(a.has_value());
    const std::vector<MixerKind> expected{MixerKind::Mamba2, MixerKind::MlpOnly, MixerKind::Mamba2,
                                          MixerKind::Attention, MixerKind::MlpOnly, MixerKind::Mamba2};
    CHECK(a->hybrid.layerMixers == expected);
    CHECK(a->hybrid.blockIsMixerOrMlp);

    auto cfg = parseHfConfig(R"({"model_type": "nemotron_h", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2, "attention_head_dim": 64,
        "vocab_size": 1000, "hybrid_override_pattern": "M-M*-M", "mamba_num_heads": 8, "mamba_head_dim": 64,
        "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2})",
                             "config.json");
    REQUIRE(cfg.has_value());
    CHECK(cfg->architecture.hybrid.layerMixers == a->hybrid.layerMixers);
    checkSameCache(*a, cfg->architecture);
    CHECK(kvLayout(*a, *findKvDtype("bf16")).stateBytesPerSequence.value
          == 3ull * (3 * (512 + 2 * 8 * 128) + 8 * 64 * 128) * 2);
}

TEST_CASE("a hybrid GGUF with a bad SSM key or layer pattern is refused, naming the key", "[importers][gguf][hybrid]")
{
    std::string why;
    GraniteKeys noState;
    noState.stateSize = 0;
    CHECK_FALSE(importArch(graniteTiny(noState), &why).has_value());
    CHECK(why.find("granitehybrid.ssm.state_size is 0, expected 1..16384") != std::string::npos);

    GraniteKeys shortPattern;
    shortPattern.blocks = 41;
    CHECK_FALSE(importArch(graniteTiny(shortPattern), &why).has_value());
    CHECK(why.find("granitehybrid.attention.head_count_kv") != std::string::npos);
    CHECK(why.find("41 per-layer values") != std::string::npos);

    GraniteKeys huge;
    huge.innerSize = 1u << 30;
    CHECK_FALSE(importArch(graniteTiny(huge), &why).has_value());
    CHECK(why.find("granitehybrid.ssm.inner_size") != std::string::npos);

    GraniteKeys ragged;
    ragged.timeStepRank = 47;
    CHECK_FALSE(importArch(graniteTiny(ragged), &why).has_value());
    CHECK(why.find("not a multiple") != std::string::npos);
}

TEST_CASE("a qwen3next GGUF: Gated DeltaNet layers but every full_attention_interval-th", "[importers][gguf][hybrid]")
{
    // Qwen3-Next-80B-A3B's keys as convert_hf_to_gguf.py writes them (Qwen3NextModel): ssm.state_size =
    // linear key/value head dim 128, ssm.group_count = 16 key heads, ssm.time_step_rank = 32 value heads,
    // ssm.inner_size = 32 x 128.
    GgufWriter w;
    w.kvString("general.architecture", "qwen3next");
    w.kvU32("qwen3next.block_count", 48);
    w.kvU32("qwen3next.embedding_length", 2048);
    w.kvU32("qwen3next.feed_forward_length", 5120);
    w.kvU32("qwen3next.attention.head_count", 16);
    w.kvU32("qwen3next.attention.head_count_kv", 2);
    w.kvU32("qwen3next.attention.key_length", 256);
    w.kvU32("qwen3next.attention.value_length", 256);
    w.kvU32("qwen3next.full_attention_interval", 4);
    w.kvU32("qwen3next.ssm.conv_kernel", 4);
    w.kvU32("qwen3next.ssm.state_size", 128);
    w.kvU32("qwen3next.ssm.group_count", 16);
    w.kvU32("qwen3next.ssm.time_step_rank", 32);
    w.kvU32("qwen3next.ssm.inner_size", 4096);
    w.tensor("output_norm.weight", {2048}, 0);
    const auto a = importArch(w);
    REQUIRE(a.has_value());

    const auto profiles = loadProfiles(std::filesystem::path(HEADROOM_SOURCE_DIR) / "profiles");
    REQUIRE(profiles.has_value());
    auto model = resolveModel("qwen3-next-80b-a3b", *profiles);
    REQUIRE(model.has_value());
    const Architecture& profile = *model->architecture;
    CHECK(a->hybrid.layerMixers == profile.hybrid.layerMixers);
    CHECK(a->hybrid.mixerOf(3) == MixerKind::Attention);
    CHECK(a->hybrid.mixerOf(0) == MixerKind::GatedDeltaNet);
    CHECK(a->hybrid.linear.convChannels() == profile.hybrid.linear.convChannels());
    CHECK(a->hybrid.attentionOutputGate);
    checkSameCache(*a, profile);
    // 12 attention layers of 2 x 256 K and V; 36 states of conv 3 x 8192 and 32 x 128 x 128.
    const KvLayout kv = kvLayout(*a, *findKvDtype("bf16"));
    CHECK(kv.bytesPerToken().value == 12ull * 2 * (256 + 256) * 2);
    CHECK(kv.stateBytesPerSequence.value == 36ull * (3 * 8192 + 32ull * 128 * 128) * 2);
}
