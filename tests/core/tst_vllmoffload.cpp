// vLLM --cpu-offload-gb (engines/vllmoffload.h): which parameters leave the device, what they
// pin in host memory, and the plan that follows. The exact walk is checked against the figure
// vLLM printed in PR 6496's test (Meta-Llama-3-70B-Instruct, --cpu-offload-gb 70: "Loading model
// weights took 61.2922 GB"), which is also the corpus case
// vllm-0.5.2-llama-3-70b-gh200-cpu-offload-70.

#include "tst_reportutil.h"

#include "headroom/core/engines/vllmoffload.h"
#include "headroom/core/launchflags.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

Architecture profileArch(const char* id)
{
    const ModelProfile* m = test::sourceProfiles().findModel(id);
    REQUIRE(m);
    REQUIRE(m->architecture);
    return *m->architecture;
}

const EngineFigure* figure(const PlanResult& p, const char* name)
{
    for (const EngineFigure& f : p.engineFigures)
        if (f.name == name)
            return &f;
    return nullptr;
}

bool hasNote(const PlanResult& p, const std::string& part)
{
    for (const std::string& n : p.notes)
        if (n.find(part) != std::string::npos)
            return true;
    return false;
}

PlanRequest offloadRequest(const std::string& model, const std::string& engine, const char* gib)
{
    PlanRequest r = test::profileRequest(model, "bf16", "h100-sxm", engine, 1, 8192, "bf16");
    r.engineSettings.push_back({"cpu-offload-gb", gib});
    return r;
}

} // namespace

TEST_CASE("vLLM --cpu-offload-gb moves whole parameters of the first layers, in module order", "[vllm][offload]")
{
    const Architecture a = profileArch("llama-3.1-70b");
    const WeightFormat bf16 = *findFormat("bf16");
    // A layer on one rank: qkv_proj 167,772,160 B, o_proj 134,217,728, gate_up_proj 939,524,096,
    // down_proj 469,762,048, two norms of 16,384.
    const std::uint64_t layer = 1'711'308'800;
    const vllm::CpuOffload off = vllm::cpuOffload(a, bf16, 1, a.layers, Bytes{70 * kGiB});
    // 43 layers (73,586,278,400 B) are below the cap; layer 44 moves qkv, o, gate_up and down,
    // which crosses it, and keeps its norms.
    CHECK(off.wholeLayers == 43);
    CHECK(off.parameters == 43 * 6 + 4);
    CHECK(off.offloadedBytes.value == 43 * layer + layer - 32'768);
    CHECK(off.layerBytes.value == 80 * layer);
    // Pinned: 2^28 + 2^27 + 2^30 + 2^29 (+ 2 x 2^14 for whole layers).
    CHECK(off.pinnedHostBytes.value == 43 * 2'013'298'688ull + 2'013'265'920ull);
    // The device keeps 131.42 - 70.13 GiB; with the 2 MiB rotary cache of 8,192 positions that
    // is the 61.2922 GiB vLLM printed.
    const double left = static_cast<double>(priceWeights(a, bf16).totalBytes.value - off.offloadedBytes.value) / kGiB;
    CHECK(left + 8192.0 * 128 * 2 / kGiB == Approx(61.2922).epsilon(0.0001));

    SECTION("each rank caps its own shard: at TP 2 all 80 layers fit under 70 GiB")
    {
        const vllm::CpuOffload tp2 = vllm::cpuOffload(a, bf16, 2, a.layers, Bytes{70 * kGiB});
        CHECK(tp2.wholeLayers == 80);
        CHECK(tp2.offloadedBytes.value == 80 * (layer - 32'768) / 2 + 80 * 32'768);
        CHECK(tp2.offloadedBytes == tp2.layerBytes);
    }
    SECTION("a cap of 0 moves nothing")
    {
        CHECK(vllm::cpuOffload(a, bf16, 1, a.layers, Bytes{}).offloadedBytes.value == 0);
    }
}

TEST_CASE("a vLLM plan with --cpu-offload-gb: device weights, KV budget, host memory, speed", "[vllm][offload]")
{
    const PlanResult base = test::planOf(offloadRequest("llama-3.1-8b", "vllm", "0"));
    const PlanResult off = test::planOf(offloadRequest("llama-3.1-8b", "vllm", "4"));
    const EngineFigure* moved = figure(off, "cpu_offloaded_bytes");
    REQUIRE(moved);
    const auto movedBytes = static_cast<std::uint64_t>(moved->value);
    CHECK(movedBytes >= 4 * kGiB);
    CHECK(movedBytes < 4 * kGiB + kGiB / 2); // at most one parameter past the cap
    CHECK(base.weightsBytes.value - off.weightsBytes.value == movedBytes);
    CHECK(off.kvBudgetBytes.value - base.kvBudgetBytes.value == movedBytes);
    REQUIRE(figure(off, "model_loading_bytes"));
    CHECK(figure(off, "model_loading_bytes")->printed.rfind("Model loading took ", 0) == 0); // V1 spelling
    CHECK(figure(off, "host_weights_bytes")->printed.empty());                             // not a vLLM line
    CHECK(hasNote(off, "pinned host memory"));
    REQUIRE(off.speed);
    REQUIRE(base.speed);
    CHECK(off.speed->decodeTokensPerSecond < base.speed->decodeTokensPerSecond / 2); // PCIe, not HBM
    CHECK(hasNote(off, "offload speed"));

    SECTION("flags emits --cpu-offload-gb as the plan applied it")
    {
        const PlanRequest r = offloadRequest("llama-3.1-8b", "vllm", "4");
        const auto flags = launchFlags(r, test::planOf(r));
        REQUIRE(flags);
        CHECK(flags->command.find("--cpu-offload-gb 4") != std::string::npos);
        const PlanRequest ignored = offloadRequest("llama-3.1-8b", "vllm@0.25.1", "4");
        const auto none = launchFlags(ignored, test::planOf(ignored));
        REQUIRE(none);
        CHECK(none->command.find("--cpu-offload-gb") == std::string::npos);
    }
    SECTION("more pinned memory than --host-ram does not fit")
    {
        PlanRequest r = offloadRequest("llama-3.1-8b", "vllm", "4");
        r.hostMemoryBytes = Bytes{3 * kGiB};
        const PlanResult p = test::planOf(r);
        CHECK(p.verdict.state == FitState::DoesNotFit);
        CHECK(p.verdict.limit == FitLimit::HostMemory);
    }
}

TEST_CASE("vLLM --cpu-offload-gb by version", "[vllm][offload]")
{
    // Before PR 6496 the option does not exist.
    const PlanResult old = test::planOf(offloadRequest("llama-3.1-8b", "vllm@0.4.3", "4"));
    CHECK(old.verdict.state == FitState::DoesNotFit);
    CHECK(old.verdict.limit == FitLimit::EngineRefusesToStart);
    // Model Runner V2 ignores it: dense models from 0.25, every model from 0.29 (vllm#51396).
    const PlanResult dense = test::planOf(offloadRequest("llama-3.1-8b", "vllm@0.25.1", "4"));
    CHECK_FALSE(figure(dense, "cpu_offloaded_bytes"));
    CHECK(hasNote(dense, "Model Runner V2"));
    const PlanResult moe = test::planOf(offloadRequest("mixtral-8x7b", "vllm@0.25.1", "20"));
    CHECK(figure(moe, "cpu_offloaded_bytes"));
    const PlanResult later = test::planOf(offloadRequest("mixtral-8x7b", "vllm@0.29.0", "20"));
    CHECK_FALSE(figure(later, "cpu_offloaded_bytes"));
}
