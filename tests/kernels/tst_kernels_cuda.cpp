// CUDA kernels against the CPU reference (STYLE §11). Own main: exits 77 (CTest "skipped",
// SKIP_RETURN_CODE) when no CUDA device is usable, since Catch2 v2 has no SKIP.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include "headroom/formats/quantblocks.h"
#include "headroom/kernels/kernels.h"
#include "headroom/kernels/quantize.h"
#include "headroom/kernels/reference.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gemv.cuh"
#include "kerneltestutil.h"

using namespace headroom;
using namespace headroom::test;

namespace {

// Tolerances, as in tst_kernels_ref.cpp: the CUDA kernels multiply the same fp32 values as the
// reference and sum them in another order with fused multiply-adds; normalised by
// m = sum_k |x_k w_k| the NMSE stays below K^2 * 2^-48 (2.3e-7 for K = 4096 in the worst case,
// ~1e-13 typically), so 1e-8 (1e-6 with fp16 output: one ulp 2^-10 flips) catches any wrong weight.
constexpr double kGemvFp32Nmse = 1e-8;
constexpr double kGemvFp16Nmse = 1e-6;
// Attention: exp2f of log2e-prescaled scores (<= 2 ulp) and split merging against the two-pass
// reference's expf: relative differences ~1e-6, NMSE ~1e-12.
constexpr double kAttentionNmse = 1e-9;

/// Device memory that frees itself; copies from and to host vectors.
template <class T>
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t count) : m_count(count) {
        REQUIRE(cudaMalloc(&m_data, std::max<std::size_t>(1, count) * sizeof(T)) == cudaSuccess);
    }
    explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
        REQUIRE(cudaMemcpy(m_data, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    }
    ~DeviceBuffer() { cudaFree(m_data); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    T* get() const { return static_cast<T*>(m_data); }
    std::vector<T> download() const {
        std::vector<T> host(m_count);
        REQUIRE(cudaMemcpy(host.data(), m_data, m_count * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
        return host;
    }

private:
    void* m_data = nullptr;
    std::size_t m_count = 0;
};

void checkGemv(fmt::QuantLayout layout, std::uint32_t n, std::uint32_t k, std::uint32_t batch, hk::OutputType yType,
               std::uint32_t seed) {
    const std::vector<float> w = normalFloats(std::uint64_t{n} * k, seed);
    const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout);
    const std::vector<std::uint16_t> x = normalHalves(std::uint64_t{batch} * k, seed + 1);
    const std::uint64_t outCount = std::uint64_t{batch} * n;
    const bool fp32 = yType == hk::OutputType::Fp32;

    std::vector<float> yRef(outCount);
    hk::GemvArgs args{m.view(), x.data(), batch, yRef.data(), hk::OutputType::Fp32};
    REQUIRE(hk::gemvRef(args) == hk::Status::Ok);
    std::vector<float> ref = yRef;
    if (!fp32)
        for (float& v : ref)
            v = fmt::roundToHalf(v);

    const DeviceBuffer<std::uint8_t> dData(m.data);
    const DeviceBuffer<std::uint16_t> dScales(m.scales);
    const DeviceBuffer<std::uint16_t> dX(x);
    const DeviceBuffer<float> dY(outCount); // fp16 output uses the first half of it
    hk::GemvArgs dArgs = args;
    dArgs.weights.data = dData.get();
    dArgs.weights.scales = m.scales.empty() ? nullptr : dScales.get();
    dArgs.x = dX.get();
    dArgs.y = dY.get();
    dArgs.yType = yType;
    INFO(layoutName(layout) << " N=" << n << " K=" << k << " B=" << batch << (fp32 ? " fp32" : " fp16")
                            << (hk::cuda::gemvUsesVectorPath(dArgs) ? " vector path" : " scalar path"));
    if (!hk::supports(hk::Backend::Cuda, dArgs)) {
        WARN("not supported: " << layoutName(layout) << " N=" << n << " K=" << k);
        return;
    }
    REQUIRE(hk::gemv(hk::Backend::Cuda, dArgs) == hk::Status::Ok);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const std::vector<float> raw = dY.download();
    const std::vector<float> cuda = outputAsFloats(raw.data(), yType, outCount);

    const std::vector<float> magnitude = gemvMagnitude(m, x, batch);
    const Comparison c = compare(ref, cuda, &magnitude);
    const double tolerance = fp32 ? kGemvFp32Nmse : kGemvFp16Nmse;
    if (c.nanFound || c.infMismatch || c.nmse > tolerance) {
        const std::string path = "tst_kernels_cuda-gemv-" + layoutName(layout) + "-" + std::to_string(n) + "x" +
                                 std::to_string(k) + "-b" + std::to_string(batch) + ".txt";
        dumpInputs(path, {{"w", std::vector<double>(w.begin(), w.end())},
                          {"x", halvesAsDoubles(x.data(), x.size())},
                          {"y_ref", std::vector<double>(ref.begin(), ref.end())},
                          {"y_cuda", std::vector<double>(cuda.begin(), cuda.end())}});
        UNSCOPED_INFO("inputs dumped to " << path);
    }
    INFO("nmse " << c.nmse << " worst index " << c.worstIndex);
    CHECK_FALSE(c.nanFound);
    CHECK_FALSE(c.infMismatch);
    CHECK(c.nmse <= tolerance);
}

void checkAttention(std::uint32_t batch, std::uint32_t kvHeads, std::uint32_t ratio, std::uint32_t headDim,
                    std::uint32_t tokens, std::uint32_t seed) {
    const AttentionProblem p(batch, kvHeads * ratio, kvHeads, headDim, tokens, hk::kDefaultKvBlockTokens, seed);
    std::vector<float> ref(p.outCount());
    REQUIRE(hk::decodeAttentionRef(p.contiguous(ref.data())) == hk::Status::Ok);
    const DeviceBuffer<std::uint16_t> dQ(p.q), dK(p.k), dV(p.v), dKPool(p.kPool), dVPool(p.vPool);
    const DeviceBuffer<std::int32_t> dLens(p.seqLens), dTable(p.blockTable);
    const DeviceBuffer<float> dOut(p.outCount());
    std::vector<std::vector<float>> results;
    for (const bool paged : {false, true}) {
        hk::DecodeAttentionArgs a = paged ? p.paged(dOut.get()) : p.contiguous(dOut.get());
        a.q = dQ.get();
        a.seqLens = dLens.get();
        a.k = paged ? dKPool.get() : dK.get();
        a.v = paged ? dVPool.get() : dV.get();
        if (paged)
            a.blockTable = dTable.get();
        INFO((paged ? "paged" : "contiguous") << " B=" << batch << " H_kv=" << kvHeads << " G=" << ratio
                                              << " D=" << headDim << " T=" << tokens);
        if (!hk::supports(hk::Backend::Cuda, a)) {
            WARN("not supported: D=" << headDim);
            return;
        }
        const DeviceBuffer<std::uint8_t> workspace(hk::attentionWorkspaceBytes(hk::Backend::Cuda, a));
        a.workspace = workspace.get();
        a.workspaceBytes = hk::attentionWorkspaceBytes(hk::Backend::Cuda, a);
        REQUIRE(hk::decodeAttention(hk::Backend::Cuda, a) == hk::Status::Ok);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const std::vector<float> out = dOut.download();
        const Comparison c = compare(ref, out);
        INFO("nmse " << c.nmse);
        if (c.nanFound || c.infMismatch || c.nmse > kAttentionNmse) {
            const std::string path = "tst_kernels_cuda-attention-g" + std::to_string(ratio) + "-t" + std::to_string(tokens) + ".txt";
            dumpInputs(path, {{"q", halvesAsDoubles(p.q.data(), p.q.size())},
                              {"k", halvesAsDoubles(p.k.data(), p.k.size())},
                              {"v", halvesAsDoubles(p.v.data(), p.v.size())}});
            UNSCOPED_INFO("inputs dumped to " << path);
        }
        CHECK_FALSE(c.nanFound);
        CHECK_FALSE(c.infMismatch);
        CHECK(c.nmse <= kAttentionNmse);
    }
}

} // namespace

TEST_CASE("CUDA GEMV equals the CPU reference", "[gpu][gemv]") {
    std::uint32_t seed = 1000;
    for (const fmt::QuantLayout layout : testedLayouts()) {
        for (const std::uint32_t n : {1u, 3u, 129u, 257u})
            for (const std::uint32_t k : {1u, 3u, 129u, 257u, 512u})
                for (const std::uint32_t batch : {1u, 3u})
                    checkGemv(layout, n, k, batch, hk::OutputType::Fp32, seed++);
        for (const std::uint32_t batch : {1u, 2u, 4u, 8u, 17u, 64u})
            checkGemv(layout, 257, 4096, batch, hk::OutputType::Fp32, seed++);
        checkGemv(layout, 129, 1024, 5, hk::OutputType::Fp16, seed++);
    }
}

TEST_CASE("CUDA GEMV of GGML blocks equals the CPU reference", "[gpu][gemv][ggml]") {
    std::uint32_t seed = 3000;
    for (const fmt::QuantType type : {fmt::QuantType::Q8_0, fmt::QuantType::Q4_0, fmt::QuantType::Q4_K, fmt::QuantType::Q6_K}) {
        const fmt::QuantLayout layout = fmt::ggmlLayout(type);
        const std::uint32_t per = fmt::ggmlBlockWeights(type);
        for (const std::uint32_t n : {1u, 3u, 129u})
            for (const std::uint32_t blocks : {1u, 3u, 7u})
                for (const std::uint32_t batch : {1u, 3u, 17u})
                    checkGemv(layout, n, blocks * per, batch, hk::OutputType::Fp32, seed++);
        checkGemv(layout, 257, 4096, 1, hk::OutputType::Fp32, seed++);
        checkGemv(layout, 129, 1024, 5, hk::OutputType::Fp16, seed++);
    }
}

TEST_CASE("CUDA decode attention equals the CPU reference, contiguous and paged", "[gpu][attention]") {
    std::uint32_t seed = 2000;
    for (const std::uint32_t ratio : {1u, 4u, 7u})
        for (const std::uint32_t tokens : {1u, 3u, 129u, 257u})
            checkAttention(2, 2, ratio, 64, tokens, seed++);
    checkAttention(1, 8, 4, 128, 3000, seed++);  // many splits
    checkAttention(3, 2, 16, 128, 300, seed++);  // two passes of 8 query heads
    checkAttention(2, 1, 3, 8, 100, seed++);     // one lane per token
    checkAttention(2, 1, 2, 256, 70, seed++);    // 32 lanes per token
}

TEST_CASE("CUDA KV cache write equals the CPU's, paged and contiguous", "[gpu][kvappend]") {
    for (const std::uint32_t blockTokens : {1u, 7u, 16u}) {
        const AttentionProblem p(4, 8, 2, 64, 50, blockTokens, 170 + blockTokens);
        const std::vector<std::uint16_t> kNew = p.lastRows(p.k), vNew = p.lastRows(p.v);
        for (const bool paged : {false, true}) {
            const std::vector<std::uint16_t>& kWant = paged ? p.kPool : p.k;
            const std::vector<std::uint16_t>& vWant = paged ? p.vPool : p.v;
            std::vector<std::uint16_t> blank(kWant.size(), 0x3c00);
            const DeviceBuffer<std::uint16_t> dK(blank), dV(blank), dKNew(kNew), dVNew(vNew);
            const DeviceBuffer<std::int32_t> dLens(p.seqLens), dTable(p.blockTable);
            hk::KvAppendArgs a = p.append(paged, dKNew.get(), dVNew.get(), dK.get(), dV.get());
            a.seqLens = dLens.get();
            if (paged)
                a.blockTable = dTable.get();
            REQUIRE(hk::appendKv(hk::Backend::Cuda, a) == hk::Status::Ok);
            REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            // The CPU write on the same blank cache gives the rows the CUDA one must give.
            std::vector<std::uint16_t> kCpu = blank, vCpu = blank;
            REQUIRE(hk::appendKv(hk::Backend::Cpu, p.append(paged, kNew.data(), vNew.data(), kCpu.data(), vCpu.data())) ==
                    hk::Status::Ok);
            CHECK(dK.download() == kCpu);
            CHECK(dV.download() == vCpu);
        }
    }
}

TEST_CASE("CUDA fp32 to fp16 conversion equals the CPU's", "[gpu][kvappend]") {
    const std::vector<float> in = normalFloats(10007, 3);
    const DeviceBuffer<float> dIn(in);
    const DeviceBuffer<std::uint16_t> dOut(in.size());
    REQUIRE(hk::floatToHalf(hk::Backend::Cuda, dIn.get(), dOut.get(), in.size()) == hk::Status::Ok);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<std::uint16_t> cpu(in.size());
    REQUIRE(hk::floatToHalf(hk::Backend::Cpu, in.data(), cpu.data(), in.size()) == hk::Status::Ok);
    CHECK(dOut.download() == cpu);
}

TEST_CASE("CUDA reports unsupported shapes apart from failures", "[gpu][facade]") {
    const AttentionProblem p(1, 2, 1, 3, 10, 16, 5);
    std::vector<float> out(p.outCount());
    hk::DecodeAttentionArgs a = p.contiguous(out.data());
    CHECK_FALSE(hk::supports(hk::Backend::Cuda, a));
    CHECK(hk::decodeAttention(hk::Backend::Cuda, a) == hk::Status::NotSupported);
    CHECK(hk::backendAvailable(hk::Backend::Cuda));
}

int main(int argc, char** argv) {
    bool listing = false;
    for (int i = 1; i < argc; ++i)
        listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
    int count = 0; // cudaGetDeviceCount leaves it unchanged without a driver (TOOLCHAIN §4)
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (!listing && (error != cudaSuccess || count == 0)) {
        std::printf("no usable CUDA device (%s): skipped\n",
                    error != cudaSuccess ? cudaGetErrorString(error) : "device count 0");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
