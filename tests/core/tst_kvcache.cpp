#include "archfixtures.h"

#include "headroom/core/capacity.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/parameters.h"

#include <catch2/catch.hpp>

using namespace headroom;
using headroom::test::qwen05b;

namespace {
KvDtype fp16() { return *findKvDtype("fp16"); }
} // namespace

TEST_CASE("kv_bytes_per_token reproduces BRIEF §1.1", "[kv]")
{
    Architecture a = qwen05b();
    // 24 layers x 2 KV heads x (64 + 64) x 2 B
    CHECK(kvLayout(a, fp16()).bytesPerToken().value == 12'288);
    // An allocator measured exactly 3,624,960 B for 295 tokens.
    CHECK(kvBytes(kvLayout(a, fp16()), 1, 295).value == 3'624'960);
    // Full MHA: 14 KV heads -> 86,016 B/token, 7x, the query/KV head ratio.
    a.kvHeads = 14;
    CHECK(kvLayout(a, fp16()).bytesPerToken().value == 86'016);

    CHECK(kvLayout(test::llama31_8b(), fp16()).bytesPerToken().value == 131'072);
    CHECK(kvLayout(test::llama2_13b(), fp16()).bytesPerToken().value == 819'200);
}

TEST_CASE("the cache depends only on the total of resident tokens", "[kv]")
{
    const KvLayout kv = kvLayout(qwen05b(), fp16());
    const Bytes expected{768ull * kMiB};
    CHECK(kvBytes(kv, 32, 2048) == expected);
    CHECK(kvBytes(kv, 64, 1024) == expected);
    CHECK(kvBytes(kv, 128, 512) == expected);
    CHECK(kvBytes(kv, 1, 65536) == expected);
}

TEST_CASE("KV dtypes are priced by their block layout", "[kv]")
{
    const Architecture a = test::llama31_8b();
    // q8_0: 34 B per 32 values = 1.0625 B/value; q4_0: 18 B per 32.
    CHECK(kvLayout(a, *findKvDtype("q8_0")).bytesPerToken().value == 131'072ull / 2 * 34 / 32);
    CHECK(kvLayout(a, *findKvDtype("q4_0")).bytesPerToken().value == 131'072ull / 2 * 18 / 32);
    CHECK(kvLayout(a, *findKvDtype("fp8")).bytesPerToken().value == 65'536);
    CHECK(kvLayout(a, *findKvDtype("fp32")).bytesPerToken().value == 262'144);
    CHECK(findKvDtype("Q8_0")->bytesPerValue() == Approx(1.0625));
    CHECK_FALSE(findKvDtype("q3_k"));
}

TEST_CASE("MLA caches the latent, not K and V", "[kv]")
{
    Architecture a; // DeepSeek-V2-Lite (deepseek-ai config.json)
    a.family = "deepseek2";
    a.layers = 27;
    a.hiddenSize = 2048;
    a.attentionHeads = 16;
    a.kvHeads = 16;
    a.headDim = 192;
    a.mla = {512, 64, 128, 128, 0};
    // (kv_lora_rank 512 + rope 64) x 2 B x 27 layers (vLLM MLAAttentionSpec)
    CHECK(kvLayout(a, fp16()).bytesPerToken().value == 576ull * 2 * 27);
    // Not split by tensor parallelism.
    CHECK(kvLayout(a, fp16(), 2).bytesPerToken().value == 576ull * 2 * 27);
}

TEST_CASE("sliding-window layers are capped at the window", "[kv]")
{
    Architecture a = test::llama31_8b();
    a.sliding.windowTokens = 4096;
    a.sliding.slidingLayers.assign(32, false);
    for (std::size_t i = 0; i < 32; i += 2)
        a.sliding.slidingLayers[i] = true; // gemma-2 style alternation
    const KvLayout kv = kvLayout(a, fp16());
    CHECK(kv.slidingLayers == 16);
    CHECK(kv.fullLayers == 16);
    CHECK(kv.bytesPerToken().value == 131'072);
    // Below the window every layer grows; above it only the full layers do.
    CHECK(kvBytes(kv, 1, 1000).value == 131'072ull * 1000);
    CHECK(kvBytes(kv, 1, 32768, {}, 0).value == 65'536ull * 32768 + 65'536ull * 4096);
    // The micro-batch in flight adds to the window (llama.cpp n_swa + n_ubatch).
    CHECK(kvBytes(kv, 1, 32768, {}, 512).value == 65'536ull * 32768 + 65'536ull * (4096 + 512));
}

TEST_CASE("per-layer KV heads and explicit head_dim", "[kv]")
{
    Architecture a = test::llama31_8b();
    a.kvHeadsPerLayer.assign(32, 8);
    a.kvHeadsPerLayer[0] = 4;
    CHECK(kvLayout(a, fp16()).bytesPerToken().value == 131'072 - 4 * (128 + 128) * 2);
    Architecture g = test::llama31_8b();
    g.headDim = 256; // gemma: head_dim is not hidden / heads
    CHECK(kvLayout(g, fp16()).bytesPerToken().value == 262'144);
}

TEST_CASE("tensor parallelism shards KV heads and replicates them when there are too few", "[kv]")
{
    const Architecture a = test::llama31_8b();
    CHECK(kvLayout(a, fp16(), 2).bytesPerToken().value == 65'536);
    CHECK(kvLayout(a, fp16(), 8).bytesPerToken().value == 16'384);
    // 16 GPUs, 8 KV heads: one replicated head each (vLLM max(1, H_kv // tp)).
    CHECK(kvLayout(a, fp16(), 16).bytesPerToken().value == 16'384);
    // Pipeline parallel: half the layers.
    CHECK(kvLayout(a, fp16(), 1, 16, 16).bytesPerToken().value == 65'536);
}

TEST_CASE("paging rounds each sequence up to whole blocks and pads cells", "[kv]")
{
    const KvLayout kv = kvLayout(qwen05b(), fp16());
    Paging vllm{16, 1};
    CHECK(kvBytes(kv, 1, 17, vllm).value == 12'288ull * 32);
    CHECK(kvBytes(kv, 3, 17, vllm).value == 12'288ull * 96);
    Paging llamacpp{1, 256};
    CHECK(kvBytes(kv, 1, 257, llamacpp).value == 12'288ull * 512);
}

TEST_CASE("capacity: max context, max users and the frontier hyperbola", "[capacity]")
{
    KvPool pool;
    pool.layout = kvLayout(qwen05b(), fp16());
    pool.budgetBytes = Bytes{768ull * kMiB};
    CHECK(maxResidentTokens(pool) == 65'536);
    CHECK(maxContextTokens(pool, 32) == 2048);
    CHECK(maxUsers(pool, 1024) == 64);
    CHECK(maxUsers(pool, 1025) == 63);
    CHECK(maxUsers(pool, 1) == 65'536);
    pool.paging.blockTokens = 16;
    CHECK(maxUsers(pool, 1) == 4096); // a one-token sequence still takes a block of 16
    const auto f = frontier(pool, 0);
    REQUIRE(f.size() >= 8);
    for (const FrontierPoint& p : f)
        CHECK(p.users * p.contextTokens <= 65'536);
    CHECK(f[0].contextTokens == 65'536);
    CHECK(f[5].users == 32);
    CHECK(f[5].contextTokens == 2048);
}

TEST_CASE("capacity: a model whose layers all slide holds its window per sequence, so its context is not memory-bound",
          "[capacity]")
{
    // Mistral-7B-v0.1: 32 layers, 8 KV heads of 128, every layer a 4,096-token window: 131,072 B/token.
    Architecture a = test::llama31_8b();
    a.sliding.windowTokens = 4096;
    KvPool pool;
    pool.layout = kvLayout(a, fp16());
    REQUIRE(pool.layout.fullBytesPerToken.value == 0);
    REQUIRE(pool.layout.slidingLayers == 32);
    pool.budgetBytes = Bytes{9ull << 30}; // 73,728 cells
    CHECK(maxResidentTokens(pool) == 73'728);
    // 4 users hold 4 x 4,096 cells at any context: no memory limit on the context (was 18,432).
    CHECK(maxContextTokens(pool, 4) >= (1ull << 39));
    CHECK(maxUsers(pool, 32'768) == 18);
    // 18 windows fit (73,728 cells), 19 do not: then each sequence gets 73,728 / 19 = 3,880 cells.
    CHECK(maxContextTokens(pool, 18) >= (1ull << 39));
    CHECK(maxContextTokens(pool, 19) == 3880);
    const auto f = frontier(pool, 32'768);
    REQUIRE(f.size() >= 6);
    CHECK(f[2].contextTokens == 32'768); // 4 users
    CHECK(f[5].contextTokens == 73'728 / 32); // 32 users: 2,304 each
}

TEST_CASE("vLLM's per-token-head and nvfp4 caches are priced by their layout", "[kv]")
{
    // vllm/v1/kv_cache_interface.py (commit 001cabc1): a per-token-head page is
    // 2 x block x H_kv x head_size x 1 B plus 2 x block x H_kv x 4 B of fp32 scales;
    // nvfp4 packs each head as head_size/2 + head_size/16 bytes (vllm/utils/torch_utils.py
    // nvfp4_kv_cache_full_dim). Llama-3.1-8B: 32 layers, 8 KV heads of 128.
    const Architecture a = test::llama31_8b();
    const KvDtype fp8Head = *findKvDtype("fp8_per_token_head");
    CHECK(fp8Head.headScaleBytes == 4);
    CHECK(kvLayout(a, fp8Head).bytesPerToken().value == 32ull * 2 * 8 * (128 + 4)); // 67,584
    CHECK(kvLayout(a, *findKvDtype("int8_per_token_head")).bytesPerToken().value == 67'584);
    CHECK(kvLayout(a, *findKvDtype("nvfp4")).bytesPerToken().value == 32ull * 2 * 8 * (64 + 8)); // 36,864
    // A vLLM page of 16 tokens for one layer: 16 x 8 x (2 x 128 + 2 x 4) B = 33,792 B.
    CHECK(kvLayout(a, fp8Head).bytesPerToken().value * 16 / 32 == 33'792);
    // Per TP rank: the scales follow the heads (8 heads over tp 2: 4 each).
    CHECK(kvLayout(a, fp8Head, 2).bytesPerToken().value == 67'584 / 2);
    // Plain fp8 has one scale per tensor: no per-token bytes.
    CHECK(kvLayout(a, *findKvDtype("fp8")).bytesPerToken().value == 65'536);
}
