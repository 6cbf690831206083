// The decode speed of a layer split (speed/splitspeed.h): host layers at the host's bandwidth, GPU
// layers at the card's, the hidden state over PCIe where the split crosses; checked against a
// public llama.cpp measurement.
#include "fixtures.h"

#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"
#include "headroom/core/speed/splitspeed.h"

#include <catch2/catch.hpp>

using namespace headroom;

TEST_CASE("host bandwidth from a DIMM spec or a measured figure", "[speed][split]")
{
    CHECK(*parseHostBandwidth("ddr4-3200x2") == Approx(51.2));   // 2 x 8 B x 3.2e9
    CHECK(*parseHostBandwidth("DDR5-5600") == Approx(89.6));     // two channels by default
    CHECK(*parseHostBandwidth("ddr4-2933x4") == Approx(93.856)); // quad channel
    CHECK(*parseHostBandwidth("102") == Approx(102.0));          // a measured read bandwidth, GB/s
    for (const char* bad : {"", "ddr6-5600", "ddr5-50", "ddr5-5600x0", "ddr5", "fast", "-3", "1e9"}) {
        INFO(bad);
        const auto b = parseHostBandwidth(bad);
        REQUIRE_FALSE(b.has_value());
        CHECK(b.error().find("expected a DIMM spec") != std::string::npos);
    }
}

TEST_CASE("split decode step: bytes over each side's bandwidth, plus the link", "[speed][split]")
{
    // 6 GB on a 300 GB/s card (20 ms), 2 GB on a 50 GB/s host (40 ms), 2 crossings of 16 KiB over
    // PCIe 4.0 x16 (2 x 16,384 / 31.5e9 s = 1.04 us).
    const SplitSpeed s = splitDecodeSpeed({Bytes{6'000'000'000}, {}, {}, 300}, {Bytes{2'000'000'000}, {}, {}, 50}, 0, 0, 2,
                                          Bytes{16'384});
    CHECK(s.gpuMs == Approx(20.0));
    CHECK(s.hostMs == Approx(40.0));
    CHECK(s.linkMs == Approx(2 * 16'384 / 31.5e9 * 1e3));
    CHECK(s.tokensPerSecond == Approx(1000.0 / (60.0 + s.linkMs)));
    // A MoE host side reads only the experts a token routes to: 8 of 128.
    const SplitSpeed moe = splitDecodeSpeed(SplitSide{}, {Bytes{16'000'000'000}, Bytes{16'000'000'000}, {}, 50}, 128, 8, 1, Bytes{8192});
    CHECK(moe.hostMs == Approx(16e9 * 8.0 / 128.0 / 50e9 * 1e3));
    // Bytes with no bandwidth: no answer.
    CHECK(splitDecodeSpeed({Bytes{1}, {}, {}, 0}, {}, 0, 0, 0, {}).tokensPerSecond == 0);
}

TEST_CASE("split speed of a plan against a public llama.cpp measurement", "[speed][split][engines]")
{
    // AlexsJones/llmfit PR #778 (2026-07-21, community benchmark): Qwen2.5-14B Q4_K_M with -ngl 42
    // on an RTX 2080 8 GB (448 GB/s, NVIDIA's datasheet) + i9-10900X, context 4096, one slot,
    // llama.cpp, warmed: 20.8 tokens/s. The host's quad-channel DDR4 measured ~102 GB/s (llmfit PR #755, the same
    // machine). 42 of 49 layers on the GPU (the output layer first, current builds): 7 blocks on the CPU.
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    auto m = resolveModel("deepseek-r1-distill-qwen-14b", *set); // the Qwen2.5-14B shapes
    REQUIRE(m);
    r.model = *m;
    r.format = *resolveFormat("q4_k_m", r.model);
    r.kvDtype = *findKvDtype("fp16");
    r.card = anonymousCard("8GiB", Bytes{8 * kGiB});
    r.card.bandwidthGBps = 448;
    r.card.fp16Tflops = 40;
    r.engine = *resolveEngine("llama.cpp", *set);
    r.contextTokens = 4096;
    r.users = 1;
    r.gpuLayers = 42;
    r.hostBandwidthGBps = 102;
    const auto p = makePlan(r);
    REQUIRE(p);
    REQUIRE(p->speed);
    REQUIRE(p->speed->split);
    const SplitDecode& d = *p->speed->split;
    CHECK(d.gpuLayers == 42);
    CHECK(d.totalLayers == 49);
    CHECK_FALSE(d.hostBandwidthAssumed);
    CHECK(p->speed->decodeTokensPerSecond == Approx(d.speed.tokensPerSecond));
    // 7 blocks of ~172 MB and their 4,096-cell f16 KV (7 x 16.8 MB) at 102 GB/s on the host; 41
    // blocks, their KV and the Q6_K output (0.64 GB) at 448 GB/s on the GPU.
    CHECK(d.speed.hostMs == Approx(12.93).epsilon(0.01));
    CHECK(d.speed.gpuMs == Approx(17.92).epsilon(0.01));
    // The roofline is a ceiling: the measurement reaches 64 % of it (20.8 of about 32.4 tokens/s:
    // llama.cpp's CPU matmuls reach about half of a measured bandwidth, its GPU kernels ~80 % of the
    // datasheet, as the all-GPU runs of the same PR do: Qwen2.5-7B 77 of 96 tokens/s).
    const double measured = 20.8;
    INFO("predicted " << d.speed.tokensPerSecond << " tokens/s, measured " << measured);
    CHECK(d.speed.tokensPerSecond > measured);
    CHECK(measured / d.speed.tokensPerSecond > 0.5);
    bool noted = false;
    for (const std::string& n : p->notes)
        noted = noted || n.find("42 of 49 layers on the GPU: about") != std::string::npos;
    CHECK(noted);

    // The batch figures are the split's, not the all-on-GPU roofline of a model that does not fit
    // (issue 10): batch 1 is the one-sequence step; a batch adds each sequence's KV on its side and
    // never turns compute-bound; TPOT is the step at the users asked.
    const SpeedSummary& s = *p->speed;
    REQUIRE(s.curve.size() >= 2);
    CHECK(s.curve.front().batch == 1);
    CHECK(s.curve.front().stepMs == Approx(d.speed.stepMs).epsilon(1e-9));
    CHECK(s.tpotMs == Approx(d.speed.stepMs).epsilon(1e-9));
    for (std::size_t i = 1; i < s.curve.size(); ++i) {
        CHECK_FALSE(s.curve[i].computeBound);
        CHECK(s.curve[i].stepMs > s.curve[i - 1].stepMs);
        CHECK(s.curve[i].tokensPerSecond > s.curve[i - 1].tokensPerSecond);
    }
    CHECK_FALSE(s.kneeBatch);
    // The prefill copies the 7 host blocks over PCIe 4.0 x16 once per 512-token micro-batch: 8 x
    // ~1.2 GB / 31.5 GB/s = about 306 ms on top of the compute roofline.
    double hostWeights = 0;
    for (const EngineFigure& f : p->engineFigures)
        if (f.name == "split_host_weights_bytes")
            hostWeights = f.value;
    REQUIRE(hostWeights > 1.1e9);
    CHECK(s.ttftMs > 8 * hostWeights / (kPcie4x16GBps * 1e9) * 1000.0);
}

TEST_CASE("split decode step over several GPUs: each device's bytes at its own bandwidth, in sequence", "[speed][split]")
{
    // 12 GB at 900 GB/s (13.33 ms) then 6 GB at 360 GB/s (16.67 ms): llama.cpp's layer split runs
    // the devices one after the other for a token (splitspeed.h), so 30 ms, not 18 GB at 900 GB/s (20 ms).
    const SplitSpeed s = splitDecodeSpeed(std::vector<SplitSide>{{Bytes{12'000'000'000}, {}, {}, 900},
                                                                 {Bytes{6'000'000'000}, {}, {}, 360}},
                                          SplitSide{}, 0, 0, 2, Bytes{20'480});
    REQUIRE(s.devicesMs.size() == 2);
    CHECK(s.devicesMs[0] == Approx(13.333).epsilon(1e-3));
    CHECK(s.devicesMs[1] == Approx(16.667).epsilon(1e-3));
    CHECK(s.gpuMs == Approx(30.0).epsilon(1e-3));
    CHECK(s.hostMs == 0);
    CHECK(s.stepMs == Approx(30.0 + s.linkMs));
    // A device with bytes and no bandwidth: no answer.
    CHECK(splitDecodeSpeed(std::vector<SplitSide>{{Bytes{1}, {}, {}, 900}, {Bytes{1}, {}, {}, 0}}, SplitSide{}, 0, 0, 0, {})
              .tokensPerSecond == 0);
}

TEST_CASE("split speed of a plan over an RTX 3090 and an RTX 3060: each card at its own bandwidth", "[speed][split][engines]")
{
    // Issue 11 review (S1): qwen2.5-32b q4_k_m, -ts 24,12, one user at 4,096 tokens. The layers
    // split 2:1 between the cards (CUDA0 ~12.2 GB, CUDA1 ~6.3 GB with the output layer); the step
    // reads each card's share at its own bandwidth (936 and 360 GB/s, the profiles' datasheet
    // figures): about 13 + 17.5 ms, not the 18.5 GB at the 3090's 936 GB/s (~20 ms) it was.
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    PlanRequest r;
    auto m = resolveModel("qwen2.5-32b", *set);
    REQUIRE(m);
    r.model = *m;
    r.format = *resolveFormat("q4_k_m", r.model);
    r.kvDtype = *findKvDtype("fp16");
    auto a = resolveCard("rtx-3090", *set);
    auto b = resolveCard("rtx-3060-12gb", *set);
    REQUIRE(a);
    REQUIRE(b);
    r.card = *a;
    r.moreGpus.push_back({*b, std::nullopt});
    r.engine = *resolveEngine("llama.cpp", *set);
    r.engineSettings.push_back({"tensor-split", "24,12"});
    r.contextTokens = 4096;
    r.users = 1;
    const auto p = makePlan(r);
    REQUIRE(p);
    REQUIRE(p->speed);
    REQUIRE(p->speed->split);
    const SplitDecode& d = *p->speed->split;
    double w0 = 0, w1 = 0, kv0 = 0, kv1 = 0;
    for (const EngineFigure& f : p->engineFigures) {
        w0 = f.name == "cuda0_weights_bytes" ? f.value : w0;
        w1 = f.name == "cuda1_weights_bytes" ? f.value : w1;
        kv0 = f.name == "cuda0_kv_buffer_bytes" ? f.value : kv0;
        kv1 = f.name == "cuda1_kv_buffer_bytes" ? f.value : kv1;
    }
    // The engine's per-device lines: "CUDA0 model buffer size = 12233.55 MiB", "CUDA1 ... = 6274.80 MiB"
    // (44 and 21 layers, the output layer on CUDA1), KV 704 and 320 MiB.
    CHECK(w0 / kMiB == Approx(12233.55).epsilon(1e-4));
    CHECK(w1 / kMiB == Approx(6274.80).epsilon(1e-4));
    CHECK(kv0 / kMiB == Approx(704.0).epsilon(1e-4));
    CHECK(kv1 / kMiB == Approx(320.0).epsilon(1e-4));
    REQUIRE(d.speed.devicesMs.size() == 2);
    REQUIRE(d.devicesBandwidthGBps.size() == 2);
    CHECK(d.devicesBandwidthGBps[0] == Approx(936));
    CHECK(d.devicesBandwidthGBps[1] == Approx(360));
    // Each device: its weights and the one sequence's KV on it at its own bandwidth: 14.5 + 19.2 ms.
    CHECK(d.speed.devicesMs[0] == Approx((w0 + kv0) / 936e9 * 1e3).epsilon(1e-6));
    CHECK(d.speed.devicesMs[1] == Approx((w1 + kv1) / 360e9 * 1e3).epsilon(1e-6));
    CHECK(d.speed.devicesMs[0] == Approx(14.5).epsilon(0.01));
    CHECK(d.speed.devicesMs[1] == Approx(19.2).epsilon(0.01));
    CHECK(d.speed.gpuMs == Approx(d.speed.devicesMs[0] + d.speed.devicesMs[1]));
    // The link: two crossings (token_embd's row on the host -> CUDA0 -> CUDA1), microseconds beside 33.7 ms.
    CHECK(d.speed.stepMs == Approx(33.7).epsilon(0.01));
    CHECK(d.speed.tokensPerSecond == Approx(29.7).epsilon(0.01)); // 45.7 tokens/s before (all at 936 GB/s)
    // One answer: the headline, batch 1 of the curve and TPOT are that step; the note says it.
    CHECK(p->speed->decodeTokensPerSecond == Approx(d.speed.tokensPerSecond));
    REQUIRE_FALSE(p->speed->curve.empty());
    CHECK(p->speed->curve.front().stepMs == Approx(d.speed.stepMs).epsilon(1e-9));
    CHECK(p->speed->tpotMs == Approx(d.speed.stepMs).epsilon(1e-9));
    bool noted = false;
    for (const std::string& n : p->notes)
        noted = noted || (n.rfind("split speed:", 0) == 0 && n.find("CUDA1 ") != std::string::npos
                          && n.find("at 360 GB/s") != std::string::npos);
    CHECK(noted);
}
