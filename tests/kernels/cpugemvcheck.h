#pragma once
// checkGemv of the CPU kernel tests: one GEMV case on the CPU reference and the fast CPU kernels,
// compared with the NMSE of compare() (kerneltestutil.h), inputs dumped on failure.

#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/reference.h"

#include "kerneltestutil.h"

namespace headroom::test {

// Tolerances. The fast CPU kernels multiply the same fp32 values as the reference (x as float
// times the same dequantized weight) but sum them in another order and with fused multiply-adds
// (the AVX2/FMA build). Every partial sum is bounded by m = sum_k |x_k w_k|, so each output
// differs by at most ~K * 2^-24 * m: normalised by m (see compare()), NMSE <= K^2 * 2^-48 =
// 2.4e-10 for K = 257 in the worst case and ~1e-14 typically. 1e-9 still catches any wrong
// weight (one wrong 4-bit code in 257 moves this NMSE by ~1e-4).
inline constexpr double kGemvFp32Nmse = 1e-9;
// With fp16 output both sides round the fp32 sum to fp16; a sum near a rounding boundary may
// round the other way: at most 1 ulp <= 2^-10 |y| <= 2^-10 m per element, NMSE < 2^-20 ~ 1e-6.
inline constexpr double kGemvFp16Nmse = 1e-6;
/// Runs one GEMV case on both CPU backends and checks the outputs.
inline void checkGemv(fmt::QuantLayout layout, std::uint32_t n, std::uint32_t k, std::uint32_t batch, hk::OutputType yType,
               std::uint32_t seed, bool quantizedActivations = false, double tolerance = -1, bool vnni = true) {
    const std::vector<float> w = normalFloats(std::uint64_t{n} * k, seed);
    const hk::QuantizedMatrix m = hk::quantizeMatrix(w.data(), n, k, layout, 1);
    const std::vector<std::uint16_t> x = normalHalves(std::uint64_t{batch} * k, seed + 1);
    const std::uint64_t outCount = std::uint64_t{batch} * n;
    std::vector<float> yRef(outCount), yCpu(outCount);
    std::vector<std::uint16_t> hRef(outCount), hCpu(outCount);
    const bool fp32 = yType == hk::OutputType::Fp32;
    hk::GemvArgs args{m.view(), x.data(), batch, fp32 ? static_cast<void*>(yRef.data()) : hRef.data(), yType};
    REQUIRE(hk::gemvRef(args) == hk::Status::Ok);
    args.y = fp32 ? static_cast<void*>(yCpu.data()) : hCpu.data();
    REQUIRE(hk::supportsGemvCpu(args));
    // The portable loops on odd seeds, the AVX2 ones (where the CPU has them) on even seeds.
    hk::CpuOptions options{2, seed % 2 == 1};
    options.quantizeActivations = quantizedActivations;
    options.vnni = vnni;
    REQUIRE(hk::gemvCpu(args, options) == hk::Status::Ok);
    const std::vector<float> ref = fp32 ? yRef : outputAsFloats(hRef.data(), yType, outCount);
    const std::vector<float> cpu = fp32 ? yCpu : outputAsFloats(hCpu.data(), yType, outCount);
    const std::vector<float> magnitude = gemvMagnitude(m, x, batch);
    const Comparison c = compare(ref, cpu, &magnitude);
    if (tolerance < 0)
        tolerance = fp32 ? kGemvFp32Nmse : kGemvFp16Nmse;
    const bool ok = !c.nanFound && !c.infMismatch && c.nmse <= tolerance;
    if (!ok) {
        const std::string path = "tst_kernels_ref-gemv-" + layoutName(layout) + "-" + std::to_string(n) + "x" +
                                 std::to_string(k) + "-b" + std::to_string(batch) + ".txt";
        dumpInputs(path, {{"w", std::vector<double>(w.begin(), w.end())},
                          {"x", halvesAsDoubles(x.data(), x.size())},
                          {"y_ref", std::vector<double>(ref.begin(), ref.end())},
                          {"y_cpu", std::vector<double>(cpu.begin(), cpu.end())}});
        UNSCOPED_INFO("inputs dumped to " << path);
    }
    INFO(layoutName(layout) << " N=" << n << " K=" << k << " B=" << batch << (fp32 ? " fp32" : " fp16") << " nmse="
                            << c.nmse << " worst index " << c.worstIndex);
    CHECK_FALSE(c.nanFound);
    CHECK_FALSE(c.infMismatch);
    CHECK(c.nmse <= tolerance);
}

} // namespace headroom::test
