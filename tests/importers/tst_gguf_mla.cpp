// DeepSeek GGUF files before and after llama.cpp's MLA cache: the metadata says which layout the
// engine allocates for that file.
#include "importers/ggufwriter.h"

#include <headroom/core/architecturetext.h>
#include <headroom/core/importers/ggufreader.h>
#include <headroom/core/kvcache.h>

#include <catch2/catch.hpp>

using namespace headroom;
using headroom::test::GgufWriter;

namespace {

/// DeepSeek-R1 / V3 metadata as convert_hf_to_gguf.py writes it (61 blocks, 128 heads,
/// kv_lora_rank 512, rope 64, nope 128, v_head 128). Before the MLA cache (ggml-org/llama.cpp
/// PR 12801) key_length / value_length are the per-head 192 / 128 and head_count_kv is 128;
/// after it, key_length is the latent row 576, head_count_kv 1, and the per-head widths move to
/// key_length_mla / value_length_mla.
GgufWriter deepseek(bool mlaCache)
{
    GgufWriter w;
    w.kvString("general.architecture", "deepseek2");
    w.kvU32("deepseek2.block_count", 61);
    w.kvU32("deepseek2.embedding_length", 7168);
    w.kvU32("deepseek2.feed_forward_length", 18432);
    w.kvU32("deepseek2.attention.head_count", 128);
    w.kvU32("deepseek2.attention.head_count_kv", mlaCache ? 1 : 128);
    w.kvU32("deepseek2.attention.key_length", mlaCache ? 576 : 192);
    w.kvU32("deepseek2.attention.value_length", mlaCache ? 512 : 128);
    if (mlaCache) {
        w.kvU32("deepseek2.attention.key_length_mla", 192);
        w.kvU32("deepseek2.attention.value_length_mla", 128);
    }
    w.kvU32("deepseek2.attention.kv_lora_rank", 512);
    w.kvU32("deepseek2.attention.q_lora_rank", 1536);
    w.kvU32("deepseek2.rope.dimension_count", 64);
    w.kvU32("deepseek2.context_length", 163840);
    w.kvU32("deepseek2.expert_count", 256);
    w.kvU32("deepseek2.expert_used_count", 8);
    w.kvU32("deepseek2.expert_shared_count", 1);
    w.kvU32("deepseek2.expert_feed_forward_length", 2048);
    w.kvU32("deepseek2.leading_dense_block_count", 3);
    w.kvU32("deepseek2.vocab_size", 129280);
    w.tensor("output_norm.weight", {7168}, 0);
    return w;
}

Architecture importArch(const GgufWriter& w)
{
    const auto bytes = w.bytes();
    auto file = readGgufBytes(bytes, "deepseek.gguf");
    REQUIRE(file.has_value());
    auto arch = ggufArchitecture(*file);
    REQUIRE(arch.has_value());
    return *arch;
}

} // namespace

TEST_CASE("a DeepSeek GGUF written before llama.cpp's MLA cache is priced with full per-head K and V",
          "[importers][gguf][mla]")
{
    const KvDtype f16 = *findKvDtype("fp16");
    const Architecture legacy = importArch(deepseek(false));
    CHECK(legacy.mla.enabled());
    CHECK(legacy.mla.fullKvCache);
    CHECK(legacy.mla.qkNopeHeadDim == 128);
    CHECK(legacy.mla.vHeadDim == 128);
    // llama.cpp printed, loading such a DeepSeek-R1 file (ggml-org/llama.cpp PR 11397, ubergarm):
    // "llama_kv_cache_init: layer N: n_embd_k_gqa = 24576, n_embd_v_gqa = 16384" for all 61 layers.
    const std::uint64_t perLayer = (24576ull + 16384) * 2;
    CHECK(kvLayout(legacy, f16).bytesPerToken().value == 61 * perLayer); // 4,997,120 B/token
    // At 2,048 cells that is K 5,856 MiB + V 3,904 MiB = 9,760 MiB, the "KV self size" llama.cpp
    // prints for these files.
    CHECK(kvLayout(legacy, f16).bytesPerToken().value * 2048 == 9760ull * 1048576);

    // The layout survives the JSON text that carries architectures to probes and reports.
    const auto back = architectureFromJsonText(architectureToJsonText(legacy));
    REQUIRE(back.has_value());
    CHECK(back->mla.fullKvCache);
    CHECK(kvLayout(*back, f16).bytesPerToken() == kvLayout(legacy, f16).bytesPerToken());

    const Architecture latent = importArch(deepseek(true));
    CHECK_FALSE(latent.mla.fullKvCache);
    CHECK(latent.mla.qkNopeHeadDim == 128);
    CHECK(kvLayout(latent, f16).bytesPerToken().value == 61ull * 576 * 2); // 70,272: 71x less
}
