#include "archfixtures.h"

#include "headroom/core/speed/batching.h"
#include "headroom/core/speed/planspeed.h"
#include "headroom/core/speed/roofline.h"
#include "headroom/core/speed/speculative.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

using namespace headroom;

TEST_CASE("speculative decoding: BRIEF §2 anchors", "[speed]")
{
    // a = 0.9, g = 8, c = 0.1: (1 - 0.9^9) / 0.1 = 6.126 tokens per verification / 1.8 = 3.40x
    CHECK(speculativeTokensPerVerification(0.9, 8) == Approx(6.1258).epsilon(1e-4));
    CHECK(speculativeSpeedup(0.9, 8, 0.1) == Approx(3.40).margin(0.005));
    // a = 0.3: 0.79x, slower than no speculation
    CHECK(speculativeSpeedup(0.3, 8, 0.1) == Approx(0.79).margin(0.005));
    CHECK(speculativeTokensPerVerification(1.0, 4) == 5.0);
    CHECK(speculativeTokensPerVerification(0.0, 4) == 1.0);
}

TEST_CASE("static batching waits for the longest member, continuous refills slots", "[speed]")
{
    // Two slots, lengths 10, 1, 1, 1: static runs [10, 1] then [1, 1] = 11 steps; continuous
    // runs 10 on one slot and 1, 1, 1 back to back on the other = 10 steps.
    const std::vector<std::uint64_t> lengths{10, 1, 1, 1};
    const BatchingResult st = simulateStaticBatching(lengths, 2);
    const BatchingResult ct = simulateContinuousBatching(lengths, 2);
    CHECK(st.totalSteps == 11);
    CHECK(ct.totalSteps == 10);
    CHECK(st.meanLatencySteps == Approx((10 + 10 + 11 + 11) / 4.0));
    CHECK(ct.meanLatencySteps == Approx((10 + 1 + 2 + 3) / 4.0));
    CHECK(st.totalTokens == 13);
}

TEST_CASE("continuous batching wins on skewed output lengths (BRIEF §2 setting)", "[speed]")
{
    // 64 requests, 8 slots, a log-normal of median 18 whose longest is ~231 tokens.
    const auto lengths = skewedOutputLengths(64, 18, 1.06);
    std::vector<std::uint64_t> sorted = lengths;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted[31] == 18);
    CHECK(sorted.back() == Approx(231).margin(5));
    const std::uint64_t total = std::accumulate(sorted.begin(), sorted.end(), std::uint64_t{0});
    CHECK(total == Approx(1874).epsilon(0.06)); // BRIEF's run: 1,874 tokens
    const BatchingResult st = simulateStaticBatching(lengths, 8);
    const BatchingResult ct = simulateContinuousBatching(lengths, 8);
    // BRIEF measured 1.6x throughput and >10x lower mean latency on a real engine whose step time
    // grows with the batch; with constant steps the simulation gives the throughput gain of
    // refilled slots (> 1.5x) and a large latency gain.
    CHECK(ct.tokensPerStep / st.tokensPerStep > 1.5);
    CHECK(st.meanLatencySteps / ct.meanLatencySteps > 2.0);
    CHECK(ct.totalTokens == st.totalTokens);
}

TEST_CASE("roofline: decode is memory-bound until the knee", "[speed]")
{
    SpeedInputs in;
    in.weightsBytes = Bytes{1'000'000'000};  // 1 GB read per step
    in.activeParameters = 1'000'000'000;     // 2 GFLOP per token
    in.bandwidthGBps = 1000;                 // 1 ms per step for the weights
    in.peakTflops = 100;                     // 0.02 ms per token of compute
    const StepEstimate one = decodeStep(in, 1, 0);
    CHECK(one.memoryMs == Approx(1.0));
    CHECK(one.computeMs == Approx(0.02));
    CHECK(one.tokensPerSecond == Approx(1000));
    // compute = memory at batch 50: 50 x 2 GFLOP / 100 TFLOP/s = 1 ms
    CHECK(*kneeBatch(in, 0) == 51);
    CHECK(decodeStep(in, 64, 0).computeBound);
    // prefill of 1,000 tokens: 2 TFLOP / 100 TFLOP/s = 20 ms (TTFT)
    CHECK(prefill(in, 1000).stepMs == Approx(20.0));
    // MoE: 8 experts, top 2: one token touches a quarter of the experts
    CHECK(expertsTouchedFraction(8, 2, 1) == Approx(0.25));
    CHECK(expertsTouchedFraction(8, 2, 64) == Approx(1.0).margin(1e-6));
}

TEST_CASE("plan speed inputs: active parameters of dense and MoE models", "[speed]")
{
    const Architecture a = test::llama31_8b();
    const SpeedInputs in = speedInputs(a, Bytes{16'060'522'496ull}, Bytes{131'072}, 1008, 165.2);
    // every parameter but the input embedding lookup multiplies each token
    CHECK(in.activeParameters == 8'030'261'248ull - 128'256ull * 4096);
    CHECK(in.expertBytes.value == 0);
    Architecture moe = a;
    moe.moe = {8, 2, 0, 14336, 0};
    const SpeedInputs m = speedInputs(moe, Bytes{90'000'000'000ull}, Bytes{131'072}, 1008, 165.2);
    const std::uint64_t expertParams = 32ull * 8 * 3 * 14336 * 4096;
    CHECK(m.expertBytes.value > 0);
    CHECK(m.activeParameters < m.activeParameters + expertParams * 3 / 4);
}
