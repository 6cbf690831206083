// Ollama from v0.30.0 (engines/ollamalaunch.h): the scheduler's GPU choice and num_batch, the
// llama-server command line, and the plan that llama.cpp's --fit places (a partial offload on a
// 16 GB card; -ngl num_gpu; --free; two cards).
#include "fixtures.h"

#include "headroom/core/engines/llamacppoffload.h"
#include "headroom/core/engines/ollamalaunch.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

const ProfileSet& profiles()
{
    static const ProfileSet set = [] {
        auto s = loadProfiles(test::sourcePath("profiles"));
        REQUIRE(s);
        return *s;
    }();
    return set;
}

// Qwen2.5-32B q4_k, 4 sequences of num_ctx 4096, on an RTX 4060 Ti 16GB.
PlanRequest qwen32bRequest(const char* engine, const char* card = "rtx-4060-ti-16gb")
{
    const ProfileSet& set = profiles();
    PlanRequest r;
    const ModelProfile* m = set.findModel("qwen2.5-32b");
    REQUIRE(m);
    r.model = *m;
    r.format = *findFormat("q4_k");
    r.kvDtype = *findKvDtype("fp16");
    const Card* c = set.findCard(card);
    REQUIRE(c);
    r.card = *c;
    auto e = resolveEngine(engine, set);
    REQUIRE(e);
    r.engine = *e;
    r.contextTokens = 4096;
    r.users = 4;
    return r;
}

const EngineFigure* figure(const PlanResult& p, const std::string& name)
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

} // namespace

TEST_CASE("Ollama's llama-server command line and scheduler rules", "[ollama][engines][offload]")
{
    ollama::LlamaServerLaunch l;
    l.numCtx = 4096;
    l.numParallel = 4;
    const std::vector<EngineSetting> args = ollama::llamaServerSettings(l);
    const auto value = [&](const std::string& key) -> std::string {
        for (const EngineSetting& s : args)
            if (s.key == key)
                return s.value;
        return "(none)";
    };
    CHECK(value("ctx-size") == "16384"); // -c num_ctx x parallel
    CHECK(value("parallel") == "4");
    CHECK(value("batch-size") == "512");
    CHECK(value("ubatch-size") == "512");
    CHECK(value("flash-attn") == "off");
    CHECK(value("cache-type-k") == "f16");
    CHECK(value("n-gpu-layers") == "(none)"); // num_gpu -1: no -ngl, --fit places the layers
    l.numGpu = 0;
    CHECK(ollama::llamaServerSettings(l).back().value == "0"); // num_gpu 0: -ngl 0

    // PredictServerVRAM: file + 2 x 64 layers x 8 KV heads x (5120 / 40) x 16,384 x 2 B = 4 GiB of f16 cache.
    const ModelProfile* m = profiles().findModel("qwen2.5-32b");
    REQUIRE(m);
    const Architecture& a = *m->architecture;
    CHECK(ollama::predictServerVramBytes(a, Bytes{1000}, 4096, 4).value == 1000 + 4ull * kGiB);
    // num_ctx beyond the trained context counts the trained one (effectiveModelContext).
    CHECK(ollama::predictServerVramBytes(a, Bytes{}, 1u << 20, 1).value == 2ull * 64 * 8 * 128 * a.contextLength * 2);

    // bestSingleGPUFit: 80 % of the GPU's free, the one with the most free among those that hold it.
    const std::vector<Bytes> free{Bytes{16 * kGiB}, Bytes{24 * kGiB}};
    CHECK(ollama::singleGpuPlacement(Bytes{12 * kGiB}, free, -1) == std::optional<std::size_t>(1));
    CHECK(ollama::singleGpuPlacement(Bytes{19 * kGiB}, free, -1) == std::optional<std::size_t>(1)); // 19.2 GiB is 80 % of 24
    CHECK_FALSE(ollama::singleGpuPlacement(Bytes{20 * kGiB}, free, -1));                            // over 80 % of both
    CHECK_FALSE(ollama::singleGpuPlacement(Bytes{kGiB}, free, 0));                                  // num_gpu 0: all GPUs
    CHECK_FALSE(ollama::singleGpuPlacement(Bytes{kGiB}, {Bytes{16 * kGiB}}, -1));                   // one GPU

    // automaticGenerationBatch: flash off on CUDA 512, 256 beyond 4096 tokens on an 8 GiB card;
    // with flash attention by context, lowered while it does not fit.
    CHECK(ollama::automaticNumBatch(false, 16384, Bytes{}, Bytes{}, Bytes{16 * kGiB}) == 512);
    CHECK(ollama::automaticNumBatch(false, 16384, Bytes{}, Bytes{}, Bytes{8 * kGiB}) == 256);
    CHECK(ollama::automaticNumBatch(false, 4096, Bytes{}, Bytes{}, Bytes{8 * kGiB}) == 512);
    CHECK(ollama::automaticNumBatch(true, 65536, Bytes{4 * kGiB}, Bytes{24 * kGiB}, Bytes{24 * kGiB}) == 2048);
    // 12 GiB of 24: over 60 % no (50 %), surcharge 2 GiB <= 19.2 - 12: 2048 fits.
    CHECK(ollama::automaticNumBatch(true, 65536, Bytes{12 * kGiB}, Bytes{24 * kGiB}, Bytes{24 * kGiB}) == 2048);
    // 16 GiB of 24 (66.7 %): over 60 % for 2048, within 75 % for 1024 and 768 MiB <= 3.2 GiB left.
    CHECK(ollama::automaticNumBatch(true, 65536, Bytes{16 * kGiB}, Bytes{24 * kGiB}, Bytes{24 * kGiB}) == 1024);
    CHECK(ollama::automaticNumBatch(true, 65536, Bytes{19 * kGiB}, Bytes{24 * kGiB}, Bytes{24 * kGiB}) == 512);
    CHECK(ollama::automaticNumBatch(true, 8192, Bytes{4 * kGiB}, Bytes{24 * kGiB}, Bytes{24 * kGiB}) == 1024);
}

TEST_CASE("Ollama places Qwen2.5-32B q4_k on a 16 GB card as llama-server's --fit does", "[ollama][engines][offload]")
{
    const PlanRequest r = qwen32bRequest("ollama");
    const auto p = makePlan(r);
    REQUIRE(p);
    REQUIRE(p->verdict.state == FitState::PartialOffload);
    const EngineFigure* gpu = figure(*p, "offload_gpu_layers");
    REQUIRE(gpu);
    CHECK(gpu->printed == "load_tensors: offloaded 43/65 layers to GPU");
    // OLLAMA_FLASH_ATTENTION unset: --flash-attn auto, on for CUDA (LlamaServerFlashAttention); num_batch
    // 512 since PredictServerVRAM (21.2 GiB) is over 80 % of the card (automaticGenerationBatch).
    CHECK(hasNote(*p, "-c 16384 -np 4 -b 512 -ub 512 --flash-attn auto (on) (no -ngl"));
    CHECK_FALSE(hasNote(*p, "first card only"));

    // The same placement as llama.cpp given Ollama's command line (ollamalaunch.h startLlamaServer).
    PlanRequest l = qwen32bRequest("llama.cpp");
    l.engineSettings = {{"batch-size", "512"}, {"ubatch-size", "512"}, {"flash-attn", "on"}, {"fit-target", "1024"}};
    const auto lp = makePlan(l);
    REQUIRE(lp);
    for (const char* name : {"offload_gpu_layers", "gpu_weights_bytes", "gpu_kv_buffer_bytes", "host_weights_bytes",
                             "host_kv_buffer_bytes", "compute_buffer_bytes"}) {
        INFO(name);
        REQUIRE(figure(*lp, name));
        REQUIRE(figure(*p, name));
        CHECK(figure(*p, name)->value == figure(*lp, name)->value);
    }

    // 43 is the most --fit can place: the GPU's bill (CUDA0 model + KV + compute) at 43 layers stays
    // within free - 1024 MiB - the CUDA context, at 44 it does not.
    llamacpp::ContextSettings c;
    c.parallel = 4;
    c.ctxSizeTokens = 16384;
    c.batchTokens = 512;
    c.ubatchTokens = 512;
    c.flashAttention = true;
    c.typeK = *findKvDtype("fp16");
    c.typeV = c.typeK;
    const Architecture& a = *r.model.architecture;
    const Bytes budget = r.card.totalBytes - Bytes{1024 * kMiB} - r.engine.runtimeBytes;
    llamacpp::OffloadSettings o;
    o.gpuLayers = 43;
    CHECK(llamacpp::busiestDeviceBytes(llamacpp::offload(a, r.format, c, o)) <= budget);
    o.gpuLayers = 44;
    CHECK(llamacpp::busiestDeviceBytes(llamacpp::offload(a, r.format, c, o)) > budget);

    // The host's share: 22 of 64 blocks' weights (mapped), their repack copy, their KV (22/64 of 4 GiB).
    const EngineFigure* hostKv = figure(*p, "host_kv_buffer_bytes");
    REQUIRE(hostKv);
    CHECK(hostKv->value == 22.0 * 64 * kMiB); // 16,384 cells x 8 KV heads x 128 x 2 (K, V) x 2 B = 64 MiB a layer
}

TEST_CASE("Ollama's num_gpu, --free and several cards under llama-server", "[ollama][engines][offload]")
{
    SECTION("num_gpu (--offload) is -ngl: --fit keeps it")
    {
        PlanRequest r = qwen32bRequest("ollama");
        r.gpuLayers = 30;
        const auto p = makePlan(r);
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::PartialOffload);
        REQUIRE(figure(*p, "offload_gpu_layers"));
        CHECK(figure(*p, "offload_gpu_layers")->value == 30);
        CHECK(hasNote(*p, "--flash-attn auto (on) -ngl 30;"));
    }
    SECTION("--free: llama.cpp fits to what the device has free")
    {
        PlanRequest r = qwen32bRequest("ollama");
        r.freeBytes = Bytes{10 * kGiB};
        const auto p = makePlan(r);
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::PartialOffload);
        REQUIRE(figure(*p, "offload_gpu_layers"));
        const double layers = figure(*p, "offload_gpu_layers")->value;
        CHECK(layers < 43);
        // At most (10 GiB - 1 GiB - 300 MiB - the compute buffer) of ~270 MiB layers (weights + 64 MiB KV).
        CHECK(layers >= 20);
        CHECK(p->usableBytes.value == 9 * kGiB); // free - the --fit target
    }
    SECTION("two 16 GB cards: llama-server over both, the model fits pooled")
    {
        PlanRequest r = qwen32bRequest("ollama");
        r.moreGpus.push_back({r.card, std::nullopt});
        const auto p = makePlan(r);
        REQUIRE(p);
        CHECK(p->verdict.state == FitState::Fits);
        CHECK(p->cardTotalBytes == r.card.totalBytes * 2);
        CHECK(p->usableBytes == (r.card.totalBytes - Bytes{1024 * kMiB}) * 2);
        REQUIRE(figure(*p, "cuda0_layers"));
        REQUIRE(figure(*p, "cuda1_layers"));
        CHECK(figure(*p, "cuda0_layers")->value + figure(*p, "cuda1_layers")->value == 65);
        CHECK(hasNote(*p, "gives llama-server all 2 GPUs"));
        CHECK_FALSE(hasNote(*p, "first card only"));
    }
    SECTION("a model within 80 % of one card's free memory runs on that card alone")
    {
        PlanRequest r = qwen32bRequest("ollama", "rtx-4060-ti-16gb");
        const Card* big = profiles().findCard("rtx-3090");
        REQUIRE(big);
        r.moreGpus.push_back({*big, std::nullopt});
        r.contextTokens = 1024;
        r.users = 1;
        // 17.17 GiB + 256 MiB of f16 cache: within 80 % of the 3090's 23.56 GiB (18.85), not of the 4060 Ti's.
        const auto p = makePlan(r);
        REQUIRE(p);
        CHECK(hasNote(*p, "on rtx-3090 alone"));
        CHECK(p->usableBytes == big->totalBytes - Bytes{1024 * kMiB});
        CHECK_FALSE(figure(*p, "cuda1_layers"));
    }
}
