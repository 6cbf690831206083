#include "archfixtures.h"

#include "headroom/core/parameters.h"
#include "headroom/core/weightformat.h"

#include <catch2/catch.hpp>

using namespace headroom;

TEST_CASE("bits per weight come from the block layout, as the reference tables give them", "[formats]")
{
    // BRIEF §1.2, shared/reference/quant-formats.md §5.2 and ggml-types.md.
    const std::pair<const char*, double> expected[] = {
        {"fp32", 32},       {"fp16", 16},      {"bf16", 16},       {"fp8", 8},
        {"int8", 8},        {"int8-row", 8},   {"int4", 4},        {"int4-row", 4},
        {"int4-g128", 4.125}, {"int4-g64", 4.25}, {"int4-g32", 4.5}, {"int4-g256", 4.0625},
        {"nf4-b64", 4.25},  {"nf4-bnb", 4.5},  {"nf4-bnb-dq", 4.0 + 8.0 / 64 + 32.0 / (64 * 256)},
        {"gptq-g128", 4.15625}, {"awq-g128", 4.15625},
        {"q4_0", 4.5},      {"q4_1", 5.0},     {"q5_0", 5.5},      {"q5_1", 6.0},
        {"q8_0", 8.5},      {"q8_1", 9.0},     {"q2_k", 2.625},    {"q3_k", 3.4375},
        {"q4_k", 4.5},      {"q5_k", 5.5},     {"q6_k", 6.5625},   {"q8_k", 9.125},
        {"iq2_xxs", 2.0625}, {"iq2_xs", 2.3125}, {"iq3_xxs", 3.0625}, {"iq1_s", 1.5625},
        {"iq4_nl", 4.5},    {"iq3_s", 3.4375}, {"iq2_s", 2.5625},  {"iq4_xs", 4.25},
        {"iq1_m", 1.75},    {"tq1_0", 1.6875}, {"tq2_0", 2.0625},  {"mxfp4", 4.25},
        {"nvfp4", 4.5},     {"q1_0", 1.125},   {"q2_0", 2.25},
    };
    for (const auto& [id, bpw] : expected) {
        INFO(id);
        const auto f = findFormat(id);
        REQUIRE(f);
        CHECK(f->bitsPerWeight() == Approx(bpw).epsilon(1e-12));
    }
    // QLoRA §3 rounds double quantization to 4.127.
    CHECK(findFormat("nf4-bnb-dq")->bitsPerWeight() == Approx(4.127).margin(0.0005));
    CHECK(findFormat("Q4_K")->id == "q4_k");
    CHECK(findFormat("int4-g1024")->bitsPerWeight() == Approx(4.015625));
    CHECK_FALSE(findFormat("int4-g100"));
    CHECK_FALSE(findFormat("int3"));
    CHECK_FALSE(findFormat("q4_2")); // removed GGML type
}

TEST_CASE("matrix bytes follow each layout exactly", "[formats]")
{
    // 4096 x 4096 at one fp16 scale per 128: 8,388,608 B of nibbles + 131,072 scales x 2 B.
    CHECK(matrixBytes(*findFormat("int4-g128"), 4096, 4096).value == 8'388'608 + 262'144);
    CHECK(matrixBytes(*findFormat("int8-row"), 4096, 4096).value == 16'777'216 + 4096 * 2);
    CHECK(matrixBytes(*findFormat("int4"), 3, 3).value == 5 + 2);
    CHECK(matrixBytes(*findFormat("nf4-b64"), 64, 64).value == 2048 + 64 * 2);
    CHECK(matrixBytes(*findFormat("nf4-bnb"), 64, 64).value == 2048 + 64 * 4);
    // double quantization: 64 blocks -> 64 one-byte absmax + one fp32 per 256 blocks
    CHECK(matrixBytes(*findFormat("nf4-bnb-dq"), 64, 64).value == 2048 + 64 + 4);
    // GPTQ: qweight K*N/2, scales (K/g)*N*2, qzeros (K/g)*N/2, g_idx 4K
    CHECK(matrixBytes(*findFormat("gptq-g128"), 4096, 4096).value == 8'388'608 + 32 * 4096 * 2 + 32 * 2048 + 4 * 4096);
    CHECK(matrixBytes(*findFormat("awq-g128"), 4096, 4096).value == 8'388'608 + 32 * 4096 * 2 + 32 * 2048);
    CHECK(matrixBytes(*findFormat("q4_k"), 4096, 14336).value == 4096ull * 14336 / 256 * 144);
    CHECK(matrixBytes(*findFormat("fp8"), 10, 10).value == 104);
    CHECK_THROWS_AS(matrixBytes(*findFormat("fp32"), 1ull << 40, 1ull << 40), OverflowError);
}

TEST_CASE("nominal bpw prices a bare parameter count", "[formats]")
{
    // BRIEF §1.4: 13e9 parameters at int4 4.125 bits -> 6.2 GiB.
    const Bytes w = nominalWeightBytes(13'000'000'000ull, *findFormat("int4-g128"));
    CHECK(w.value == 6'703'125'000ull);
    CHECK(static_cast<double>(w.value) / kGiB == Approx(6.24).margin(0.005));
    // BRIEF §1.2: 0.5B parameters: 1.98 GB fp32, 0.99 GB fp16, 0.49 GB at one byte.
    const std::uint64_t p = test::qwen05b().layers ? 494'032'768ull : 0;
    CHECK(nominalWeightBytes(p, *findFormat("fp32")).value / 1e9 == Approx(1.98).margin(0.005));
    CHECK(nominalWeightBytes(p, *findFormat("fp16")).value / 1e9 == Approx(0.99).margin(0.005));
    CHECK(nominalWeightBytes(p, *findFormat("int8")).value / 1e9 == Approx(0.49).margin(0.005));
    CHECK(findFormat("nf4-b64")->nominalBitsPerWeight() == 4.25);
}
