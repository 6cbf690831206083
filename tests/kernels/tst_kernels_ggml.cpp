// GGML block formats (q8_0, q4_0, q4_K, q6_K; formats/ggmlblocks.h): byte layouts decoded as ggml
// lays them out, ggml's reference quantizers, ggml's own quantization and dot-product error
// bounds, and the fast CPU block dots (AVX2 and the scalar fallback) against the CPU reference.

#include "headroom/formats/ggmlblocks.h"
#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/kernels.h"
#include "headroom/kernels/quantize.h"
#include "headroom/kernels/reference.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpugemvcheck.h"
#include "kerneltestutil.h"

using namespace headroom;
using namespace headroom::test;

namespace {

constexpr fmt::QuantType kGgmlTypes[] = {fmt::QuantType::Q8_0, fmt::QuantType::Q4_0, fmt::QuantType::Q4_K,
                                         fmt::QuantType::Q6_K};

// The block dots take x quantized to int8 (q8_0 per 32: d = max|x| / 127; q8_K per 256): each
// product then errs by at most |w| d / 2, and K independent such errors over m = sum |x w| give
// an NMSE of about 1e-4 / K for N(0,1) data (4e-7 at K = 256, 3e-6 at one block of 32); 1e-5
// still catches a wrong code, scale, minimum or nibble order (each moves it by > 1e-3).
constexpr double kBlockDotNmse = 1e-5;

/// 0.1 + 2 cos(i + offset), ggml tests/test-quantize-fns.cpp generate_data().
std::vector<float> ggmlTestData(float offset, std::uint32_t n) {
    std::vector<float> out(n);
    for (std::uint32_t i = 0; i < n; ++i)
        out[i] = 0.1f + 2.0f * std::cos(static_cast<float>(i) + offset);
    return out;
}

/// Columns for a test: @p blocks whole blocks of @p type.
std::uint32_t blockCols(fmt::QuantType type, std::uint32_t blocks) {
    return blocks * fmt::ggmlBlockWeights(type);
}

/// The fast CPU GEMV with quantized activations, AVX2 against the scalar fallback: the same integer
/// sums and block scales, summed in another order (NMSE over m = sum |x w| below 1e-10).
void checkAvx2AgainstPortable(fmt::QuantLayout layout, std::uint32_t n, std::uint32_t k, std::uint32_t batch,
                              std::uint32_t seed) {
    if (!hk::cpuUsesAvx2())
        return;
    const std::vector<float> w = normalFloats(std::uint64_t{n} * k, seed);
    const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout, 1);
    const std::vector<std::uint16_t> x = normalHalves(std::uint64_t{batch} * k, seed + 1);
    std::vector<float> portable(std::uint64_t{batch} * n), avx2(portable.size());
    hk::GemvArgs args{m.view(), x.data(), batch, portable.data(), hk::OutputType::Fp32};
    REQUIRE(hk::gemvCpu(args, hk::CpuOptions{2, true}) == hk::Status::Ok);
    args.y = avx2.data();
    REQUIRE(hk::gemvCpu(args, hk::CpuOptions{2, false}) == hk::Status::Ok);
    const std::vector<float> magnitude = gemvMagnitude(m, x, batch);
    const Comparison c = compare(portable, avx2, &magnitude);
    INFO(layoutName(layout) << " N=" << n << " K=" << k << " B=" << batch << " nmse=" << c.nmse);
    CHECK_FALSE(c.nanFound);
    CHECK(c.nmse <= 1e-10);
}

/// The fast CPU GEMV on a copy of the matrix packed by packRows8 against the reference on the
/// rows as stored (kBlockDotNmse with quantized activations, the fp32 bound without).
void checkPacked(fmt::QuantLayout layout, std::uint32_t n, std::uint32_t k, std::uint32_t batch, hk::OutputType yType,
                 std::uint32_t seed, hk::CpuOptions options) {
    const std::vector<float> w = normalFloats(std::uint64_t{n} * k, seed);
    const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout, 1);
    std::vector<std::uint8_t> packed = m.data;
    REQUIRE(hk::packRows8(layout, n, k, packed.data()) == hk::Status::Ok);
    const std::vector<std::uint16_t> x = normalHalves(std::uint64_t{batch} * k, seed + 1);
    const std::uint64_t outCount = std::uint64_t{batch} * n;
    const bool fp32 = yType == hk::OutputType::Fp32;
    std::vector<float> yRef(outCount), yCpu(outCount);
    std::vector<std::uint16_t> hRef(outCount), hCpu(outCount);
    hk::GemvArgs args{m.view(), x.data(), batch, fp32 ? static_cast<void*>(yRef.data()) : hRef.data(), yType};
    REQUIRE(hk::gemvRef(args) == hk::Status::Ok);
    args.weights.data = packed.data();
    args.weights.packing = hk::RowPacking::Interleaved8;
    CHECK(hk::gemvRef(args) == hk::Status::NotSupported); // the reference reads rows as stored
    args.y = fp32 ? static_cast<void*>(yCpu.data()) : hCpu.data();
    REQUIRE(hk::gemvCpu(args, options) == hk::Status::Ok);
    const std::vector<float> ref = fp32 ? yRef : outputAsFloats(hRef.data(), yType, outCount);
    const std::vector<float> cpu = fp32 ? yCpu : outputAsFloats(hCpu.data(), yType, outCount);
    const std::vector<float> magnitude = gemvMagnitude(m, x, batch);
    const Comparison c = compare(ref, cpu, &magnitude);
    const double tolerance = (options.quantizeActivations ? kBlockDotNmse : kGemvFp32Nmse) + (fp32 ? 0.0 : kGemvFp16Nmse);
    INFO(layoutName(layout) << " packed N=" << n << " K=" << k << " B=" << batch << " portable=" << options.portable
                            << " quantized=" << options.quantizeActivations << " nmse=" << c.nmse);
    CHECK_FALSE(c.nanFound);
    CHECK(c.nmse <= tolerance);
}

} // namespace

TEST_CASE("packRows8 lays q4_0 and q8_0 rows out as ggml's block_q4_0x8", "[kernels][ggml][panel]") {
    for (const fmt::QuantType type : {fmt::QuantType::Q4_0, fmt::QuantType::Q8_0}) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        constexpr std::uint32_t n = 19, k = 96; // two groups of 8 and 3 rows as stored
        const std::vector<float> w = normalFloats(std::uint64_t{n} * k, 41);
        const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout, 1);
        std::vector<std::uint8_t> packed = m.data;
        REQUIRE(hk::packRows8(layout, n, k, packed.data()) == hk::Status::Ok);
        const std::uint32_t blockBytes = fmt::ggmlBlockBytes(type), codes = blockBytes - 2;
        const std::uint64_t stride = fmt::rowBytes(layout, k);
        bool same = true;
        for (std::uint32_t g = 0; g < n / 8; ++g)
            for (std::uint32_t i = 0; i < k / 32; ++i) {
                // ggml make_block_q4_0x8: d[r] = in[r].d; qs[8 c' + j] = in[c' % 8].qs[(c' / 8) 8 + j] ^ 0x88.
                const std::uint8_t* out = packed.data() + g * 8 * stride + std::uint64_t{i} * 8 * blockBytes;
                for (std::uint32_t r = 0; r < 8; ++r) {
                    const std::uint8_t* in = m.data.data() + (g * 8 + r) * stride + std::uint64_t{i} * blockBytes;
                    same = same && out[2 * r] == in[0] && out[2 * r + 1] == in[1];
                }
                for (std::uint32_t c = 0; c < 8 * codes / 8; ++c)
                    for (std::uint32_t j = 0; j < 8; ++j) {
                        const std::uint8_t* in = m.data.data() + (g * 8 + c % 8) * stride + std::uint64_t{i} * blockBytes;
                        const std::uint8_t expected = in[2 + (c / 8) * 8 + j] ^ (type == fmt::QuantType::Q4_0 ? 0x88 : 0);
                        same = same && out[16 + 8 * c + j] == expected;
                    }
            }
        CHECK(same);
        CHECK(std::equal(packed.begin() + 16 * stride, packed.end(), m.data.begin() + 16 * stride)); // tail rows as stored
    }
    std::vector<std::uint8_t> bytes(8 * 144);
    CHECK(hk::packRows8(fmt::ggmlLayout(fmt::QuantType::Q4_K), 1, 128, bytes.data()) == hk::Status::InvalidArgument);
    CHECK(hk::packRows8(fmt::ggmlLayout(fmt::QuantType::Q6_K), 8, 0, bytes.data()) == hk::Status::InvalidArgument);
    CHECK(hk::packRows8(fmt::ggmlLayout(fmt::QuantType::Q4_0), 8, 0, bytes.data()) == hk::Status::InvalidArgument);
}

TEST_CASE("the panels quantize activations as ggml does, ties away from zero", "[kernels][ggml][gemv][panel]") {
    if (!hk::cpuUsesAvx2())
        return;
    // max |x| = 127 gives d = 1: x / d = 2.5, -3.5, 0.5, -0.5 are exact ties, which roundf (ggml's
    // quantize_row_q8_0) sends away from zero (3, -4, 1, -1) and round-to-even would not.
    constexpr std::uint32_t n = 8, k = 32, batch = 2;
    const std::vector<float> w = normalFloats(std::uint64_t{n} * k, 77);
    std::vector<std::uint16_t> x(std::uint64_t{batch} * k, fmt::floatToHalf(0.0f));
    const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 6.5f, -126.5f, 1.5f};
    for (std::uint32_t b = 0; b < batch; ++b)
        for (std::uint32_t j = 0; j < k; ++j)
            x[b * k + j] = fmt::floatToHalf(ties[(j + b) % 8] * (j < 8 ? 1.0f : -1.0f));
    for (const fmt::QuantType type : {fmt::QuantType::Q8_0, fmt::QuantType::Q4_0}) {
        const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, fmt::ggmlLayout(type), 1);
        std::vector<float> portable(std::uint64_t{batch} * n), panels(portable.size());
        hk::GemvArgs args{m.view(), x.data(), batch, portable.data(), hk::OutputType::Fp32};
        REQUIRE(hk::gemvCpu(args, hk::CpuOptions{1, true}) == hk::Status::Ok); // scalar roundf
        args.y = panels.data();
        REQUIRE(hk::gemvCpu(args, hk::CpuOptions{1, false}) == hk::Status::Ok);
        for (std::size_t i = 0; i < portable.size(); ++i)
            CHECK(panels[i] == Approx(portable[i]).epsilon(1e-6).margin(1e-5));
    }
}

TEST_CASE("q8_0 and q4_0 on 8-row panels equal the reference, packed or not, on odd sizes", "[kernels][ggml][gemv][panel]") {
    std::uint32_t seed = 3000, even = 5000;
    for (const fmt::QuantType type : {fmt::QuantType::Q8_0, fmt::QuantType::Q4_0}) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        for (const std::uint32_t n : {8u, 13u, 37u, 69u})
            for (const std::uint32_t blocks : {1u, 3u, 7u})
                for (const std::uint32_t batch : {1u, 2u, 4u, 5u, 16u, 17u}) {
                    checkPacked(layout, n, 32 * blocks, batch, hk::OutputType::Fp32, seed++, hk::CpuOptions{2});
                    hk::CpuOptions noVnni{2};
                    noVnni.vnni = false; // the AVX2 form on CPUs with AVX-VNNI too
                    checkPacked(layout, n, 32 * blocks, batch, hk::OutputType::Fp32, seed++, noVnni);
                    if (batch >= 2) // the panels built per call from the rows as stored (AVX2 on even seeds)
                        checkGemv(layout, n, 32 * blocks, batch, hk::OutputType::Fp32, even += 2, true, kBlockDotNmse);
                }
        checkPacked(layout, 27, 4864, 1, hk::OutputType::Fp16, seed++, hk::CpuOptions{2});
        checkPacked(layout, 27, 4864, 64, hk::OutputType::Fp32, seed++, hk::CpuOptions{1});
        hk::CpuOptions portable{2, true};
        checkPacked(layout, 21, 96, 3, hk::OutputType::Fp32, seed++, portable); // unpacked copy, scalar dots
        hk::CpuOptions exact{2};
        exact.quantizeActivations = false;
        checkPacked(layout, 21, 96, 3, hk::OutputType::Fp32, seed++, exact); // unpacked copy, fp32 dots
        checkPacked(layout, 5, 64, 2, hk::OutputType::Fp32, seed++, hk::CpuOptions{2}); // fewer than 8 rows
    }
}

TEST_CASE("the q4_K / q6_K panels quantize activations as ggml's q8_K does, ties away from zero", "[kernels][ggml][gemv][panel]") {
    // max |x| = 127 gives iscale = -127 / 127 = -1: x = 2.5, -3.5, 0.5, ... are exact ties, which
    // nearestInt (roundf) sends away from zero; the panels' AVX2 quantizer must agree with the
    // scalar one of the rows as stored (a code off by one moves y by ~1e-3 of its size).
    constexpr std::uint32_t n = 16, k = 512;
    const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 6.5f, -126.5f, 1.5f};
    std::vector<std::uint16_t> x(k);
    for (std::uint32_t j = 0; j < k; ++j)
        x[j] = fmt::floatToHalf(ties[j % 8] * (j % 16 < 8 ? 1.0f : -1.0f));
    for (const fmt::QuantType type : {fmt::QuantType::Q4_K, fmt::QuantType::Q6_K}) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        const std::vector<float> w = normalFloats(std::uint64_t{n} * k, 78);
        const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout, 1);
        std::vector<std::uint8_t> packed = m.data;
        REQUIRE(hk::packRows8(layout, n, k, packed.data()) == hk::Status::Ok);
        std::vector<float> portable(n), panels(n);
        hk::GemvArgs args{m.view(), x.data(), 1, portable.data(), hk::OutputType::Fp32};
        REQUIRE(hk::gemvCpu(args, hk::CpuOptions{1, true}) == hk::Status::Ok); // scalar nearestInt
        args.weights.data = packed.data();
        args.weights.packing = hk::RowPacking::Interleaved8;
        args.y = panels.data();
        REQUIRE(hk::gemvCpu(args, hk::CpuOptions{1, false}) == hk::Status::Ok);
        for (std::uint32_t i = 0; i < n; ++i)
            CHECK(panels[i] == Approx(portable[i]).epsilon(1e-5));
    }
}

TEST_CASE("q4_K and q6_K on 8-row panels equal the reference, and unpack bit for bit", "[kernels][ggml][gemv][panel]") {
    std::uint32_t seed = 9000;
    for (const fmt::QuantType type : {fmt::QuantType::Q4_K, fmt::QuantType::Q6_K}) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        // Rows not a multiple of 8 (the tail rows stay as stored), one to several superblocks.
        for (const std::uint32_t n : {8u, 13u, 37u, 69u})
            for (const std::uint32_t blocks : {1u, 3u})
                for (const std::uint32_t batch : {1u, 2u, 5u}) {
                    checkPacked(layout, n, 256 * blocks, batch, hk::OutputType::Fp32, seed++, hk::CpuOptions{2});
                    hk::CpuOptions noVnni{2};
                    noVnni.vnni = false; // the AVX2 form on CPUs with AVX-VNNI too
                    checkPacked(layout, n, 256 * blocks, batch, hk::OutputType::Fp32, seed++, noVnni);
                }
        checkPacked(layout, 27, 4864, 1, hk::OutputType::Fp16, seed++, hk::CpuOptions{2});
        checkPacked(layout, 19, 4864, 1, hk::OutputType::Fp32, seed++, hk::CpuOptions{1});
        hk::CpuOptions portable{2, true};
        checkPacked(layout, 21, 512, 3, hk::OutputType::Fp32, seed++, portable); // unpacked copy, scalar dots
        hk::CpuOptions exact{2};
        exact.quantizeActivations = false;
        checkPacked(layout, 21, 512, 3, hk::OutputType::Fp32, seed++, exact); // unpacked copy, fp32 dots
        checkPacked(layout, 5, 256, 2, hk::OutputType::Fp32, seed++, hk::CpuOptions{2}); // fewer than 8 rows
        // The scalar dots on the unpacked copy and on the rows as stored: the same bytes, so the
        // same floats (the panel layout, q4_K's re-encoded 6-bit scales included, loses nothing).
        constexpr std::uint32_t n = 29, k = 768, batch = 2;
        const std::vector<float> w = normalFloats(std::uint64_t{n} * k, seed++);
        const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout, 1);
        std::vector<std::uint8_t> packed = m.data;
        REQUIRE(hk::packRows8(layout, n, k, packed.data()) == hk::Status::Ok);
        CHECK_FALSE(std::equal(packed.begin(), packed.begin() + 24 * fmt::rowBytes(layout, k), m.data.begin()));
        const std::vector<std::uint16_t> x = normalHalves(std::uint64_t{batch} * k, seed++);
        std::vector<float> stored(std::uint64_t{batch} * n), unpacked(stored.size());
        hk::GemvArgs args{m.view(), x.data(), batch, stored.data(), hk::OutputType::Fp32};
        REQUIRE(hk::gemvCpu(args, portable) == hk::Status::Ok);
        args.weights.data = packed.data();
        args.weights.packing = hk::RowPacking::Interleaved8;
        args.y = unpacked.data();
        REQUIRE(hk::gemvCpu(args, portable) == hk::Status::Ok);
        CHECK(stored == unpacked);
    }
}

TEST_CASE("q8_0 and q4_0 GEMMs on AMX tiles give the panels' floats, packed or not", "[kernels][ggml][gemv][panel][amx]") {
    // Where the CPU has AMX-INT8 (else both runs are the panels): the same int32 block sums and
    // the same fp32 multiply-adds in the same block order, so the outputs are bit for bit equal;
    // rows not a multiple of 16 (and of 8), batches past one tile of 16, fp16 output.
    std::uint32_t seed = 7000;
    for (const fmt::QuantType type : {fmt::QuantType::Q8_0, fmt::QuantType::Q4_0})
        for (const bool packedRows : {false, true})
            for (const std::uint32_t n : {16u, 29u, 40u, 75u})
                for (const std::uint32_t batch : {4u, 5u, 16u, 17u, 64u})
                    for (const hk::OutputType yType : {hk::OutputType::Fp32, hk::OutputType::Fp16}) {
                        const std::uint32_t k = 32 * (1 + seed % 5);
                        const std::vector<float> w = normalFloats(std::uint64_t{n} * k, seed);
                        const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, fmt::ggmlLayout(type), 1);
                        std::vector<std::uint8_t> bytes = m.data;
                        if (packedRows)
                            REQUIRE(hk::packRows8(m.layout, n, k, bytes.data()) == hk::Status::Ok);
                        const std::vector<std::uint16_t> x = normalHalves(std::uint64_t{batch} * k, seed + 1);
                        std::vector<float> amx(std::uint64_t{batch} * n), panels(amx.size());
                        hk::GemvArgs args{m.view(), x.data(), batch, amx.data(), yType};
                        args.weights.data = bytes.data();
                        args.weights.packing = packedRows ? hk::RowPacking::Interleaved8 : hk::RowPacking::AsStored;
                        hk::CpuOptions options{seed % 2 ? 3u : 1u};
                        REQUIRE(hk::gemvCpu(args, options) == hk::Status::Ok);
                        options.amx = false;
                        args.y = panels.data();
                        REQUIRE(hk::gemvCpu(args, options) == hk::Status::Ok);
                        INFO(layoutName(m.layout) << " packed=" << packedRows << " N=" << n << " K=" << k << " B=" << batch);
                        // Rows in whole panels of 8: bit for bit; the N % 8 tail rows, which the panels leave to
                        // the row kernels (another summation order), within fp32 rounding of the sum.
                        const bool fp32 = yType == hk::OutputType::Fp32;
                        const std::vector<float> a = fp32 ? amx : outputAsFloats(amx.data(), yType, amx.size());
                        const std::vector<float> p = fp32 ? panels : outputAsFloats(panels.data(), yType, amx.size());
                        std::size_t exact = 0, close = 0;
                        for (std::uint32_t b = 0; b < batch; ++b)
                            for (std::uint32_t r = 0; r < n; ++r) {
                                const std::uint64_t at = std::uint64_t{b} * n + r;
                                if (r < n / 8 * 8)
                                    exact += std::memcmp(&a[at], &p[at], sizeof(float)) == 0;
                                else
                                    close += std::fabs(a[at] - p[at]) <= 1e-5f * (1.0f + std::fabs(p[at])) + (fp32 ? 0.0f : 1e-3f * std::fabs(p[at]));
                            }
                        CHECK(exact == std::uint64_t{batch} * (n / 8 * 8));
                        CHECK(close == std::uint64_t{batch} * (n % 8));
                        ++seed;
                    }
}

TEST_CASE("GGML blocks decode as ggml lays them out", "[kernels][ggml]") {
    SECTION("q8_0: fp16 d, then 32 int8") {
        std::uint8_t block[fmt::kQ8_0BlockBytes] = {0x00, 0x38}; // d = 0.5
        block[2] = 0x7f;
        block[2 + 31] = 0x80;
        CHECK(fmt::q8_0Weight(block, 0) == 63.5f);
        CHECK(fmt::q8_0Weight(block, 31) == -64.0f);
        CHECK(fmt::q8_0Weight(block, 5) == 0.0f);
    }
    SECTION("q4_0: low nibbles are weights 0..15, high nibbles 16..31, code - 8") {
        std::uint8_t block[fmt::kQ4_0BlockBytes] = {0x00, 0x38}; // d = 0.5
        block[2] = 0x1f;
        block[2 + 15] = 0x80;
        CHECK(fmt::q4_0Weight(block, 0) == 3.5f);   // 15 - 8
        CHECK(fmt::q4_0Weight(block, 16) == -3.5f); // 1 - 8
        CHECK(fmt::q4_0Weight(block, 15) == -4.0f); // 0 - 8
        CHECK(fmt::q4_0Weight(block, 31) == 0.0f);  // 8 - 8
    }
    SECTION("q4_K: 6-bit scales and minimums as get_scale_min_k4 unpacks them") {
        const std::uint8_t scales[12] = {0xc1, 0x02, 0x03, 0x04, 0x45, 0x06, 0x07, 0x08, 0x9a, 0xbc, 0xde, 0xf0};
        int sc = 0, m = 0;
        fmt::q4_KScaleMin(scales, 0, sc, m);
        CHECK((sc == 1 && m == 5)); // 0xc1 & 63, 0x45 & 63
        fmt::q4_KScaleMin(scales, 4, sc, m);
        CHECK((sc == 58 && m == 25)); // (0x9a & 15) | (0xc1 >> 6) << 4, (0x9a >> 4) | (0x45 >> 6) << 4
        fmt::q4_KScaleMin(scales, 7, sc, m);
        CHECK((sc == 0 && m == 15)); // (0xf0 & 15) | (0x04 >> 6) << 4, (0xf0 >> 4) | (0x08 >> 6) << 4
        std::uint8_t block[fmt::kQ4_KBlockBytes] = {0x00, 0x3c, 0x00, 0x38}; // d = 1, dmin = 0.5
        std::copy(scales, scales + 12, block + fmt::kQ4_KScalesOffset);
        block[fmt::kQ4_KQsOffset + 0] = 0x73;      // weight 0 (sub-block 0): 3; weight 32 (sub-block 1): 7
        block[fmt::kQ4_KQsOffset + 64 + 5] = 0x0b; // weight 128 + 5 (sub-block 4): 11
        CHECK(fmt::q4_KWeight(block, 0) == 1.0f * 1 * 3 - 0.5f * 5);
        fmt::q4_KScaleMin(scales, 1, sc, m);
        CHECK(fmt::q4_KWeight(block, 32) == static_cast<float>(sc * 7) - 0.5f * static_cast<float>(m));
        CHECK(fmt::q4_KWeight(block, 133) == 58.0f * 11 - 0.5f * 25);
    }
    SECTION("q6_K: ql nibbles, 2 bits of qh, int8 scale per 16, code - 32") {
        std::uint8_t block[fmt::kQ6_KBlockBytes] = {};
        block[fmt::kQ6_KDOffset] = 0x00;
        block[fmt::kQ6_KDOffset + 1] = 0x3c; // d = 1
        block[0] = 0x21;  // weight 0: low 1; weight 64: low 2
        block[32] = 0x43; // weight 32: low 3; weight 96: low 4
        block[fmt::kQ6_KQhOffset] = 0xe4; // high bits: weight 0: 0, 32: 1, 64: 2, 96: 3
        block[64] = 0x05;                  // second half, weight 128: low 5
        block[fmt::kQ6_KQhOffset + 32] = 0x02; // weight 128: high 2
        const std::int8_t scales[16] = {1, 0, 2, 0, 3, 0, -1, 0, 2};
        for (int g = 0; g < 16; ++g)
            block[fmt::kQ6_KScalesOffset + g] = static_cast<std::uint8_t>(scales[g]);
        CHECK(fmt::q6_KWeight(block, 0) == -31.0f);       // (1 | 0 << 4) - 32, scale 1
        CHECK(fmt::q6_KWeight(block, 32) == 2.0f * -13);  // (3 | 1 << 4) - 32, scale 2
        CHECK(fmt::q6_KWeight(block, 64) == 3.0f * 2);    // (2 | 2 << 4) - 32, scale 3
        CHECK(fmt::q6_KWeight(block, 96) == -1.0f * 20);  // (4 | 3 << 4) - 32, scale -1
        CHECK(fmt::q6_KWeight(block, 128) == 2.0f * 5);   // (5 | 2 << 4) - 32, scale 2
    }
}

TEST_CASE("q8_0 and q4_0 quantize as ggml's reference quantizers", "[kernels][ggml]") {
    // q4_0: the weight of largest magnitude sets d = max / -8 with its sign; codes truncate
    // w / d + 8.5 and clamp at 15.
    float w[32] = {-4.0f, 1.0f, 0.3f, 0.2f, 4.0f};
    std::uint8_t block[fmt::kQ4_0BlockBytes];
    fmt::quantizeQ4_0Block(w, block);
    CHECK(fmt::loadHalfAt(block) == 0.5f);
    CHECK(fmt::q4_0Code(block, 0) == 0);  // -4 * 2 + 8.5 = 0.5 -> 0
    CHECK(fmt::q4_0Code(block, 1) == 10); // 10.5 -> 10
    CHECK(fmt::q4_0Code(block, 2) == 9);  // 9.1 -> 9
    CHECK(fmt::q4_0Code(block, 3) == 8);  // 8.9 -> 8
    CHECK(fmt::q4_0Code(block, 4) == 15); // 16.5 -> 16, clamped to 15 (+4 is stored as 3.5)
    CHECK(fmt::q4_0Weight(block, 4) == 3.5f);
    w[0] = 4.0f;
    w[4] = -4.0f; // now +4 comes first: d = -0.5 and -4 is the clamped one
    fmt::quantizeQ4_0Block(w, block);
    CHECK(fmt::loadHalfAt(block) == -0.5f);
    CHECK(fmt::q4_0Weight(block, 0) == 4.0f);
    CHECK(fmt::q4_0Weight(block, 4) == -3.5f);
    // q8_0: d = max|w| / 127, q = roundf(w / d) (half away from zero).
    float v[32] = {127.0f, -63.5f, 0.5f, -0.5f};
    std::uint8_t b8[fmt::kQ8_0BlockBytes];
    fmt::quantizeQ8_0Block(v, b8);
    CHECK(fmt::loadHalfAt(b8) == 1.0f);
    CHECK(static_cast<std::int8_t>(b8[2]) == 127);
    CHECK(static_cast<std::int8_t>(b8[3]) == -64);
    CHECK(static_cast<std::int8_t>(b8[4]) == 1);
    CHECK(static_cast<std::int8_t>(b8[5]) == -1);
    // All-zero blocks store zero scales and decode to zeros in every type.
    const std::vector<float> zeros(256, 0.0f);
    for (const fmt::QuantType type : kGgmlTypes) {
        std::vector<std::uint8_t> z(fmt::ggmlBlockBytes(type), 0xff);
        fmt::quantizeGgmlBlock(type, zeros.data(), z.data());
        for (std::uint32_t i = 0; i < fmt::ggmlBlockWeights(type); ++i)
            REQUIRE(fmt::loadGgmlWeight(type, z.data(), i) == 0.0f);
    }
}

TEST_CASE("GGML types meet ggml's own quantization and dot-product error bounds", "[kernels][ggml]") {
    // tests/test-quantize-fns.cpp (ggml d99724f2): 4096 values 0.1 + 2 cos(i); the total error
    // sqrt(sum (w - w_hat)^2) / n below MAX_QUANTIZATION_TOTAL_ERROR = 0.002 for these four types,
    // and |dot(q(w), q8(x)) - dot(w, x)| / n below MAX_DOT_PRODUCT_ERROR = 0.02 with x from offset 1.
    constexpr std::uint32_t n = 32 * 128;
    const std::vector<float> w = ggmlTestData(0.0f, n), x = ggmlTestData(1.0f, n);
    double dotRef = 0.0;
    for (std::uint32_t i = 0; i < n; ++i)
        dotRef += double(w[i]) * x[i];
    std::vector<std::uint16_t> xHalf(n);
    for (std::uint32_t i = 0; i < n; ++i)
        xHalf[i] = fmt::floatToHalf(x[i]);
    for (const fmt::QuantType type : kGgmlTypes) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), 1, n, layout, 1);
        CHECK(m.storageBytes() == fmt::matrixStorageBytes(layout, 1, n));
        CHECK(m.scales.empty());
        std::vector<float> what(n);
        hk::dequantizeMatrix(m, what.data(), 1);
        double sq = 0.0;
        for (std::uint32_t i = 0; i < n; ++i)
            sq += (double(w[i]) - what[i]) * (double(w[i]) - what[i]);
        const double totalError = std::sqrt(sq) / n;
        float y = 0.0f;
        const hk::GemvArgs args{m.view(), xHalf.data(), 1, &y, hk::OutputType::Fp32};
        REQUIRE(hk::gemv(hk::Backend::Cpu, args) == hk::Status::Ok);
        const double dotError = std::fabs(double(y) - dotRef) / n;
        INFO(layoutName(layout) << " total error " << totalError << " dot error " << dotError);
        CHECK(totalError < 0.002);
        CHECK(dotError < 0.02);
    }
}

TEST_CASE("GGML rows are whole blocks and carry no separate scales", "[kernels][ggml]") {
    CHECK(fmt::layoutValid(fmt::ggmlLayout(fmt::QuantType::Q4_K)));
    CHECK_FALSE(fmt::layoutValid({fmt::QuantType::Q4_0, fmt::ScaleScope::Group, 32}));
    CHECK(fmt::rowBytes(fmt::ggmlLayout(fmt::QuantType::Q8_0), 4096) == 128 * 34);
    CHECK(fmt::matrixStorageBytes(fmt::ggmlLayout(fmt::QuantType::Q4_K), 896, 4864 / 256 * 256) ==
          896ull * 19 * 144);
    const std::vector<float> w = normalFloats(2 * 48, 3);
    const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), 2, 48, fmt::ggmlLayout(fmt::QuantType::Q4_0), 1);
    std::vector<std::uint16_t> x(48);
    float y[2];
    const hk::GemvArgs args{m.view(), x.data(), 1, y, hk::OutputType::Fp32};
    CHECK(hk::gemv(hk::Backend::CpuRef, args) == hk::Status::InvalidArgument); // 48 is not whole blocks of 32
    CHECK(hk::gemv(hk::Backend::Cpu, args) == hk::Status::InvalidArgument);
}

TEST_CASE("fast CPU GGML block dots equal the reference on odd sizes", "[kernels][ggml][gemv]") {
    std::uint32_t seed = 2000; // the portable scalar fallback on odd seeds, AVX2 on even ones
    for (const fmt::QuantType type : kGgmlTypes) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        for (const std::uint32_t n : {1u, 3u, 129u})
            for (const std::uint32_t blocks : {1u, 3u, 7u})
                for (const std::uint32_t batch : {1u, 3u}) {
                    const std::uint32_t k = blockCols(type, blocks);
                    checkGemv(layout, n, k, batch, hk::OutputType::Fp32, seed++, true, kBlockDotNmse);
                    checkGemv(layout, n, k, batch, hk::OutputType::Fp32, seed++, false); // exact fp32 path
                }
        // Many blocks, a batch past the register tiles, fp16 output.
        checkGemv(layout, 37, type == fmt::QuantType::Q8_0 || type == fmt::QuantType::Q4_0 ? 4864 : 4864 / 256 * 256, 1,
                  hk::OutputType::Fp32, seed++, true, kBlockDotNmse);
        checkGemv(layout, 19, blockCols(type, 5), 17, hk::OutputType::Fp16, seed++, true, kGemvFp16Nmse + kBlockDotNmse);
        checkGemv(layout, 19, blockCols(type, 5), 17, hk::OutputType::Fp16, seed++, true, kGemvFp16Nmse + kBlockDotNmse);
        checkAvx2AgainstPortable(layout, 33, blockCols(type, 9), 1, seed++);
        checkAvx2AgainstPortable(layout, 5, blockCols(type, 2), 5, seed++);
        checkAvx2AgainstPortable(layout, 19, blockCols(type, 4), 3, seed++); // q8_0 / q4_0: 8-row panels
    }
}
