// Absorbed MLA decode (the probes' decode step for DeepSeek-V2/V3, probes/src/modelondevice.cpp
// mlaAttention) against the decompressed attention of the paper, on the kernels the step calls:
// per-head k_b GEMVs, MQA decode attention over the latent cache with the latent as key and
// value (paged), per-head v_b GEMVs. The reference decompresses every cached latent into each
// head's key and value (DeepSeek-V2, arXiv 2405.04434 §2.1; modeling_deepseek.py
// DeepseekV2Attention) and attends in double precision.

#include "kerneltestutil.h"

#include "headroom/kernels/kernels.h"

#include <cmath>

using namespace headroom;
using namespace headroom::test;

namespace {

struct MlaShape {
    std::uint32_t heads, nope, rope, lora, vHead, tokens;
};

/// Runs the absorbed path on @p backend and the decompressed reference; returns the NMSE of the
/// per-head outputs [H][v_head].
double absorbedAgainstReference(hk::Backend backend, const MlaShape& s, std::uint32_t seed)
{
    const std::uint32_t H = s.heads, latent = s.lora + s.rope;
    // HF kv_b_proj rows of head h: W_UK [nope][lora] then W_UV [v][lora].
    const std::vector<float> wUk = normalFloats(std::uint64_t{H} * s.nope * s.lora, seed, 0.1f);
    const std::vector<float> wUv = normalFloats(std::uint64_t{H} * s.vHead * s.lora, seed + 1, 0.1f);
    const std::vector<std::uint16_t> cache = normalHalves(std::uint64_t{s.tokens} * latent, seed + 2); // [T][lora + rope]
    const std::vector<std::uint16_t> q = normalHalves(std::uint64_t{H} * (s.nope + s.rope), seed + 3); // [H][nope + rope]
    const auto h16 = [](float v) { return fmt::floatToHalf(v); };
    const auto f32 = [](std::uint16_t v) { return double(fmt::halfToFloat(v)); };

    // llama.cpp's attn_k_b: W_UK transposed per head, [lora][nope]; attn_v_b = W_UV [v][lora].
    std::vector<std::uint16_t> kB(std::uint64_t{H} * s.lora * s.nope), vB(wUv.size());
    for (std::uint32_t h = 0; h < H; ++h)
        for (std::uint32_t n = 0; n < s.nope; ++n)
            for (std::uint32_t c = 0; c < s.lora; ++c)
                kB[(std::uint64_t{h} * s.lora + c) * s.nope + n] = h16(wUk[(std::uint64_t{h} * s.nope + n) * s.lora + c]);
    for (std::size_t i = 0; i < wUv.size(); ++i)
        vB[i] = h16(wUv[i]);

    // 1. Absorbed queries [H][lora + rope].
    std::vector<std::uint16_t> qAbs(std::uint64_t{H} * latent);
    for (std::uint32_t h = 0; h < H; ++h) {
        hk::GemvArgs g;
        g.weights.layout = fmt::fp16Layout();
        g.weights.rows = s.lora;
        g.weights.cols = s.nope;
        g.weights.data = reinterpret_cast<const std::uint8_t*>(kB.data() + std::uint64_t{h} * s.lora * s.nope);
        g.x = q.data() + std::uint64_t{h} * (s.nope + s.rope);
        g.batch = 1;
        g.y = qAbs.data() + std::uint64_t{h} * latent;
        g.yType = hk::OutputType::Fp16;
        REQUIRE(hk::gemv(backend, g) == hk::Status::Ok);
        for (std::uint32_t r = 0; r < s.rope; ++r)
            qAbs[std::uint64_t{h} * latent + s.lora + r] = q[std::uint64_t{h} * (s.nope + s.rope) + s.nope + r];
    }
    // 2. MQA over the paged latent pool: 16-token blocks in reverse order.
    const std::uint32_t blocks = (s.tokens + 15) / 16;
    std::vector<std::uint16_t> pool(std::uint64_t{blocks} * 16 * latent);
    std::vector<std::int32_t> table(blocks);
    for (std::uint32_t b = 0; b < blocks; ++b)
        table[b] = static_cast<std::int32_t>(blocks - 1 - b);
    for (std::uint32_t t = 0; t < s.tokens; ++t)
        std::copy_n(cache.begin() + std::int64_t{t} * latent, latent,
                    pool.begin() + (std::int64_t{table[t / 16]} * 16 + t % 16) * latent);
    const std::int32_t seqLen = static_cast<std::int32_t>(s.tokens);
    std::vector<float> attn(std::uint64_t{H} * latent);
    hk::DecodeAttentionArgs a;
    a.batch = 1;
    a.numHeads = H;
    a.numKvHeads = 1;
    a.headDim = latent;
    a.scale = 1.0f / std::sqrt(float(s.nope + s.rope));
    a.q = qAbs.data();
    a.seqLens = &seqLen;
    a.layout = hk::KvLayout::Paged;
    a.k = pool.data();
    a.v = pool.data();
    a.blockTable = table.data();
    a.maxBlocksPerSeq = blocks;
    a.blockTokens = 16;
    a.numBlocks = blocks;
    a.out = attn.data();
    REQUIRE(hk::decodeAttention(backend, a) == hk::Status::Ok);
    std::vector<std::uint16_t> attn16(attn.size());
    REQUIRE(hk::floatToHalf(backend, attn.data(), attn16.data(), attn.size()) == hk::Status::Ok);
    // 3. Per-head v_b on the first lora values of each head's output.
    std::vector<float> out(std::uint64_t{H} * s.vHead);
    for (std::uint32_t h = 0; h < H; ++h) {
        hk::GemvArgs g;
        g.weights.layout = fmt::fp16Layout();
        g.weights.rows = s.vHead;
        g.weights.cols = s.lora;
        g.weights.data = reinterpret_cast<const std::uint8_t*>(vB.data() + std::uint64_t{h} * s.vHead * s.lora);
        g.x = attn16.data() + std::uint64_t{h} * latent;
        g.batch = 1;
        g.y = out.data() + std::uint64_t{h} * s.vHead;
        g.yType = hk::OutputType::Fp32;
        REQUIRE(hk::gemv(backend, g) == hk::Status::Ok);
    }

    // Reference: decompress K_h[t] = (W_UK_h c_t, k_rope_t), V_h[t] = W_UV_h c_t, softmax attention.
    std::vector<float> ref(out.size());
    const double scale = 1.0 / std::sqrt(double(s.nope + s.rope));
    for (std::uint32_t h = 0; h < H; ++h) {
        std::vector<double> score(s.tokens);
        double top = -INFINITY;
        for (std::uint32_t t = 0; t < s.tokens; ++t) {
            const std::uint16_t* c = cache.data() + std::uint64_t{t} * latent;
            const std::uint16_t* qh = q.data() + std::uint64_t{h} * (s.nope + s.rope);
            double dot = 0;
            for (std::uint32_t n = 0; n < s.nope; ++n) {
                double k = 0;
                for (std::uint32_t j = 0; j < s.lora; ++j)
                    k += double(fmt::halfToFloat(h16(wUk[(std::uint64_t{h} * s.nope + n) * s.lora + j]))) * f32(c[j]);
                dot += f32(qh[n]) * k;
            }
            for (std::uint32_t r = 0; r < s.rope; ++r)
                dot += f32(qh[s.nope + r]) * f32(c[s.lora + r]);
            score[t] = dot * scale;
            top = std::max(top, score[t]);
        }
        double sum = 0;
        for (double& v : score)
            sum += (v = std::exp(v - top));
        for (std::uint32_t d = 0; d < s.vHead; ++d) {
            double acc = 0;
            for (std::uint32_t t = 0; t < s.tokens; ++t) {
                const std::uint16_t* c = cache.data() + std::uint64_t{t} * latent;
                double v = 0;
                for (std::uint32_t j = 0; j < s.lora; ++j)
                    v += f32(vB[(std::uint64_t{h} * s.vHead + d) * s.lora + j]) * f32(c[j]);
                acc += score[t] / sum * v;
            }
            ref[std::uint64_t{h} * s.vHead + d] = static_cast<float>(acc);
        }
    }
    return compare(ref, out).nmse;
}

} // namespace

TEST_CASE("absorbed MLA decode equals the decompressed attention (odd sizes, MQA ratios 1..16)", "[kernels][mla]")
{
    // {heads, qk_nope, qk_rope, kv_lora_rank, v_head, tokens}: DeepSeek-V2-Lite's ratios scaled
    // down (16 heads, 128 nope, 64 rope, 512 latent, 128 v), and odd token counts across blocks.
    const MlaShape shapes[] = {{1, 32, 16, 64, 32, 1}, {5, 32, 16, 64, 48, 37}, {16, 64, 32, 128, 64, 130}, {3, 16, 8, 48, 24, 17}};
    for (hk::Backend backend : {hk::Backend::CpuRef, hk::Backend::Cpu})
        for (const MlaShape& s : shapes) {
            INFO(hk::backendName(backend) << " H " << s.heads << " nope " << s.nope << " rope " << s.rope << " lora " << s.lora
                                          << " v " << s.vHead << " T " << s.tokens);
            // fp16 rounding of the absorbed queries and of the attention output: NMSE below 1e-4.
            CHECK(absorbedAgainstReference(backend, s, 11 * s.heads + s.tokens) < 1e-4);
        }
}
