// --offload reaching an engine that keeps every layer on the GPU (Engine::offloadsLayers false,
// review issue 11): the plan says in a note that it is not applied, and names the engine's own
// offload where it has one (Engine::weightOffloadHint). The case of the issue: Qwen2.5-32B in
// int4-g128 (17.89 GiB of weights) on a 16 GB RTX 4060 Ti, where no engine fits the weights.

#include "tst_reportutil.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

PlanRequest qwenOn4060(const std::string& engine, std::optional<std::uint32_t> gpuLayers)
{
    PlanRequest r = test::profileRequest("qwen2.5-32b", "int4-g128", "rtx-4060-ti-16gb", engine, 4, 8192);
    r.layerOffloadAsked = true;
    r.gpuLayers = gpuLayers;
    return r;
}

/// The one note that mentions --offload, or empty.
std::string offloadNote(const PlanResult& p)
{
    std::string found;
    for (const std::string& n : p.notes)
        if (n.find("--offload") != std::string::npos) {
            REQUIRE(found.empty());
            found = n;
        }
    return found;
}

} // namespace

TEST_CASE("TGI and TensorRT-LLM say that --offload is not applied and name no offload of their own", "[offload][engines]")
{
    for (const char* engine : {"tgi", "tensorrt-llm"}) {
        CAPTURE(engine);
        const PlanResult autoPlan = test::planOf(qwenOn4060(engine, std::nullopt));
        CHECK_FALSE(autoPlan.fits);
        const std::string n = offloadNote(autoPlan);
        CHECK(n.find("keeps every layer on the GPU and has no layer offload: --offload auto is not applied") != std::string::npos);
        CHECK(n.find("cpu-offload-gb") == std::string::npos);

        const std::string twenty = offloadNote(test::planOf(qwenOn4060(engine, 20u)));
        CHECK(twenty.find("--offload 20 is not applied") != std::string::npos);
    }
    // Without --offload typed, no such note.
    PlanRequest plain = qwenOn4060("tgi", std::nullopt);
    plain.layerOffloadAsked = false;
    CHECK(offloadNote(test::planOf(plain)).empty());
}

TEST_CASE("vLLM points --offload at --cpu-offload-gb with the GiB that make the weights fit", "[offload][vllm]")
{
    const PlanResult p = test::planOf(qwenOn4060("vllm", std::nullopt));
    const std::string n = offloadNote(p);
    CHECK(n.find("vLLM keeps every layer on the GPU and has no layer offload: --offload auto is not applied") != std::string::npos);
    CHECK(n.find("vLLM's offload is --cpu-offload-gb") != std::string::npos);
    // The plan's shortfall: weights 17.89 GiB + overheads (rotary 32 MiB, activation peak 579 MiB,
    // non-torch 256 MiB) against the usable 14.01 GiB: 4.72 GiB short, so 5 whole GiB.
    const Bytes shortfall{p.weightsBytes.value + totalBytes(p.overheads).value - p.usableBytes.value};
    CHECK(shortfall.value > 4 * kGiB);
    CHECK(shortfall.value <= 5 * kGiB);
    CHECK(n.find("--set cpu-offload-gb=5 would make them fit") != std::string::npos);

    // The hint is the plan's own answer: with it the weights fit, with one GiB less they do not.
    PlanRequest five = qwenOn4060("vllm", std::nullopt);
    five.engineSettings.push_back({"cpu-offload-gb", "5"});
    const PlanResult withFive = test::planOf(five);
    CHECK(withFive.weightsBytes + totalBytes(withFive.overheads) <= withFive.usableBytes);
    PlanRequest four = qwenOn4060("vllm", std::nullopt);
    four.engineSettings.push_back({"cpu-offload-gb", "4"});
    const PlanResult withFour = test::planOf(four);
    CHECK(withFour.weightsBytes + totalBytes(withFour.overheads) > withFour.usableBytes);
    // Once --cpu-offload-gb is set, the note names the flag without a second figure.
    CHECK(offloadNote(withFive).find("would make them fit") == std::string::npos);
}

TEST_CASE("SGLang names its --cpu-offload-gb, which is not modelled", "[offload][sglang]")
{
    const std::string n = offloadNote(test::planOf(qwenOn4060("sglang", 20u)));
    CHECK(n.find("SGLang keeps every layer on the GPU and has no layer offload: --offload 20 is not applied") != std::string::npos);
    CHECK(n.find("--cpu-offload-gb") != std::string::npos);
    CHECK(n.find("does not model yet") != std::string::npos);
}
