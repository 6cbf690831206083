// llama.cpp --fit (common/fit.cpp common_params_fit_impl, llama.cpp release v0.4.0): one test a
// step of the algorithm (llamacppfit.h): the unset context resolved and lowered to its minimum,
// the layers filled back to front, a MoE's experts moved first, each device's free-memory target.
#include "archfixtures.h"

#include "headroom/core/engines/llamacppfit.h"
#include "headroom/core/parameters.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace headroom;

namespace {


llamacpp::ContextSettings contextOf(std::uint64_t ctx, std::uint32_t parallel = 1)
{
    llamacpp::ContextSettings s;
    s.ctxSizeTokens = ctx;
    s.parallel = parallel;
    s.typeK = *findKvDtype("f16");
    s.typeV = s.typeK;
    return s;
}

// The use of GPU 0 with @p o at context @p ctx: one of --fit's test allocations.
std::int64_t used(const llamacpp::OffloadTensors& t, const Architecture& a, std::uint64_t ctx, const llamacpp::OffloadSettings& o,
                  std::uint32_t parallel = 1)
{
    return static_cast<std::int64_t>(llamacpp::offload(t, a, contextOf(ctx, parallel), o).devices.at(0).totalBytes().value);
}

llamacpp::FitSettings oneDevice(std::uint64_t freeBytes, std::uint64_t marginMiB = 1024)
{
    llamacpp::FitSettings f;
    f.devices.push_back({Bytes{freeBytes}, Bytes{marginMiB * kMiB}});
    return f;
}

Architecture mixtralLike()
{
    Architecture a = test::llama31_8b();
    a.family = "mixtral";
    a.moe.expertCount = 8;
    a.moe.expertsPerToken = 2;
    a.moe.expertFfnSize = 14'336;
    return a;
}

} // namespace

TEST_CASE("llama.cpp --fit step 1: an unset context is n_ctx_train per stream; no change when every target holds",
          "[llamacpp][fit]")
{
    const Architecture a = test::llama31_8b(); // 131,072 trained
    const WeightFormat f = *findFormat("q4_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    // -np 2 without --kv-unified: n_ctx = n_ctx_train x 2 streams (common/fit.cpp n_ctx_max)
    const llamacpp::FitResult r = llamacpp::fitParams(t, a, contextOf(0, 2), {}, oneDevice(200 * kGiB));
    CHECK(r.outcome == llamacpp::FitOutcome::NoChange);
    CHECK(r.ctxSizeTokens == 2 * 131'072);
    CHECK(r.offload.gpuLayers == -1);
    CHECK(std::any_of(r.log.begin(), r.log.end(), [](const std::string& l) { return l.find("no changes needed") != std::string::npos; }));
    // --kv-unified: one stream, n_ctx_train in all
    llamacpp::ContextSettings unified = contextOf(0, 2);
    unified.kvUnified = true;
    CHECK(llamacpp::fitParams(t, a, unified, {}, oneDevice(200 * kGiB)).ctxSizeTokens == 131'072);
}

TEST_CASE("llama.cpp --fit step 2: an unset context is interpolated between the minimum and the trained one",
          "[llamacpp][fit]")
{
    const Architecture a = test::llama31_8b();
    const WeightFormat f = *findFormat("q4_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    const std::uint64_t freeBytes = 12 * kGiB;
    const llamacpp::FitResult r = llamacpp::fitParams(t, a, contextOf(0), {}, oneDevice(freeBytes));
    REQUIRE(r.outcome == llamacpp::FitOutcome::ContextReduced);
    // n_ctx = min + (max - min) x (target - used(min)) / (used(max) - used(min)), down to a multiple of 256
    const std::int64_t target = static_cast<std::int64_t>(freeBytes - 1024 * kMiB);
    const std::int64_t atMin = used(t, a, 4096, {});
    const std::int64_t atMax = used(t, a, 131'072, {});
    std::uint64_t expected = 4096 + static_cast<std::uint64_t>((131'072 - 4096) * (target - atMin) / (atMax - atMin));
    expected -= expected % 256;
    CHECK(r.ctxSizeTokens == expected);
    CHECK(r.ctxSizeTokens > 4096);
    CHECK(r.ctxSizeTokens < 131'072);
    CHECK(r.contextFromTokens == 131'072);
    CHECK(r.offload.gpuLayers == -1); // one device: the fit ends with the context
    CHECK(r.usedBytes.at(0).value <= static_cast<std::uint64_t>(target) + 256 * kMiB);

    // --fit-ctx raises the floor; a context the user set stays ("context size set by user").
    llamacpp::FitSettings high = oneDevice(freeBytes);
    high.minContextTokens = 65'536;
    CHECK(llamacpp::fitParams(t, a, contextOf(0), {}, high).ctxSizeTokens == 65'536);
    llamacpp::FitSettings set = oneDevice(freeBytes);
    set.contextAuto = false;
    const llamacpp::FitResult kept = llamacpp::fitParams(t, a, contextOf(131'072), {}, set);
    CHECK(kept.ctxSizeTokens == 131'072);
    CHECK(kept.outcome == llamacpp::FitOutcome::LayersPlaced); // the layers move instead
    CHECK(kept.offload.gpuLayers < 33);
}

TEST_CASE("llama.cpp --fit: -c 0 keeps the trained context (fit_params_min_ctx = UINT32_MAX)", "[llamacpp][fit]")
{
    const Architecture a = test::llama31_8b();
    const WeightFormat f = *findFormat("q4_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    llamacpp::FitSettings s = oneDevice(12 * kGiB);
    s.minContextTokens = llamacpp::kFullContext;
    const llamacpp::FitResult r = llamacpp::fitParams(t, a, contextOf(0), {}, s);
    CHECK(r.ctxSizeTokens == 131'072);
    CHECK(r.outcome == llamacpp::FitOutcome::LayersPlaced);
    CHECK(std::any_of(r.log.begin(), r.log.end(),
                      [](const std::string& l) { return l.find("user has requested full context size of 131072") != std::string::npos; }));
}

TEST_CASE("llama.cpp --fit step 4: a dense model's layers, back to front, the most that keep the target", "[llamacpp][fit]")
{
    const Architecture a = test::llama2_13b(); // 40 layers, 4,096 trained = the minimum: no context change
    const WeightFormat f = *findFormat("q4_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    const std::uint64_t freeBytes = 6 * kGiB;
    const llamacpp::FitResult r = llamacpp::fitParams(t, a, contextOf(0), {}, oneDevice(freeBytes));
    REQUIRE(r.outcome == llamacpp::FitOutcome::LayersPlaced);
    CHECK(r.ctxSizeTokens == 4096);
    const std::int64_t target = static_cast<std::int64_t>(freeBytes - 1024 * kMiB);
    const std::int64_t ngl = r.offload.gpuLayers;
    CHECK(ngl > 0);
    CHECK(ngl < 41);
    llamacpp::OffloadSettings at;
    at.gpuLayers = ngl;
    CHECK(used(t, a, 4096, at) <= target);
    at.gpuLayers = ngl + 1;
    CHECK(used(t, a, 4096, at) > target);
    // the same count as the plain search over -ngl (the method of false position finds the boundary)
    CHECK(ngl == llamacpp::maxGpuLayers(t, a, contextOf(4096), {}, Bytes{static_cast<std::uint64_t>(target)}));
    CHECK(r.offload.ffnOverrides.empty());
    CHECK(r.devices.at(0).layers == ngl);
    CHECK(r.devices.at(0).partial == 0);
    CHECK(llamacpp::fitArguments(r) == "-c 4096 -ngl " + std::to_string(ngl));
}

TEST_CASE("llama.cpp --fit step 3: -ngl given stops the fit after the context", "[llamacpp][fit]")
{
    const Architecture a = test::llama31_8b();
    const WeightFormat f = *findFormat("q4_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    llamacpp::OffloadSettings o;
    o.gpuLayers = 20;
    llamacpp::FitSettings s = oneDevice(2 * kGiB); // not even the minimum context fits: on to the layers
    s.gpuLayersSet = true;
    const llamacpp::FitResult r = llamacpp::fitParams(t, a, contextOf(0), o, s);
    CHECK(r.outcome == llamacpp::FitOutcome::Failed);
    CHECK(r.failure == "n_gpu_layers already set by user to 20, abort");
    CHECK(r.ctxSizeTokens == 4096); // lowered to the minimum before it stopped
    CHECK(r.offload.gpuLayers == 20);
    // --n-cpu-moe is a tensor override: the same stop
    llamacpp::FitSettings m = oneDevice(2 * kGiB);
    m.tensorOverridesSet = true;
    CHECK(llamacpp::fitParams(t, a, contextOf(0), {}, m).failure == "model_params::tensor_buft_overrides already set by user, abort");
}

TEST_CASE("llama.cpp --fit step 5: a MoE keeps its dense part on the GPU and moves experts first", "[llamacpp][fit]")
{
    const Architecture a = mixtralLike(); // 32 layers of 8 experts
    const WeightFormat f = *findFormat("q4_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    llamacpp::OffloadSettings allOnHost; // every routed expert in host memory: the dense part
    for (std::uint32_t il = 0; il < a.layers; ++il)
        allOnHost.ffnOverrides.push_back({il, llamacpp::FfnOverflow::Moe, -1});
    const std::int64_t dense = used(t, a, 4096, allOnHost);
    const std::int64_t whole = used(t, a, 4096, {});
    REQUIRE(whole > dense + static_cast<std::int64_t>(4 * kGiB));
    // free for the dense part and about half the experts
    const std::uint64_t freeBytes = static_cast<std::uint64_t>(dense + (whole - dense) / 2) + 1024 * kMiB;
    const llamacpp::FitResult r = llamacpp::fitParams(t, a, contextOf(0), {}, oneDevice(freeBytes));
    REQUIRE(r.outcome == llamacpp::FitOutcome::LayersPlaced);
    CHECK(r.ctxSizeTokens == 4096);
    CHECK(r.offload.gpuLayers == 33); // every layer stays: only experts move
    const llamacpp::FitLayers& d = r.devices.at(0);
    CHECK(d.layers == 33);
    CHECK(d.partial > 8);
    CHECK(d.partial < 24);
    CHECK(r.usedBytes.at(0).value <= freeBytes - 1024 * kMiB);
    // the full layers come first (lowest indices), the overflowing ones after them: the experts of
    // layers [33 - partial, 32) in host memory, the first partial layer by its fraction
    const std::uint32_t first = 33 - d.partial;
    REQUIRE(!r.offload.ffnOverrides.empty());
    CHECK(r.offload.ffnOverrides.front().layer == first);
    CHECK(r.offload.ffnOverrides.front().part == d.overflow);
    CHECK(r.offload.ffnOverrides.back().layer == 31);
    CHECK(r.offload.ffnOverrides.back().part == llamacpp::FfnOverflow::Moe);
    // one more full layer would not fit
    llamacpp::OffloadSettings more = r.offload;
    more.ffnOverrides.erase(more.ffnOverrides.begin());
    more.ffnOverrides.front().part = llamacpp::FfnOverflow::Moe;
    CHECK(used(t, a, 4096, more) > static_cast<std::int64_t>(freeBytes - 1024 * kMiB));
    CHECK(llamacpp::fitArguments(r).find("-ot blk\\." + std::to_string(first) + "\\.") != std::string::npos);

    // the dense part alone does not fit: dense-only layers, back to front (the lowest one whole)
    const llamacpp::FitResult tight = llamacpp::fitParams(t, a, contextOf(0), {}, oneDevice(static_cast<std::uint64_t>(dense) + 768 * kMiB));
    REQUIRE(tight.outcome == llamacpp::FitOutcome::LayersPlaced);
    CHECK(tight.devices.at(0).layers < 33);
    CHECK(tight.devices.at(0).layers > 1);
    CHECK(tight.devices.at(0).partial + 1 == tight.devices.at(0).layers);
}

TEST_CASE("llama.cpp --fit: each device keeps its own --fit-target free", "[llamacpp][fit]")
{
    const Architecture a = test::llama2_13b();
    const WeightFormat f = *findFormat("q8_0");
    const auto t = llamacpp::offloadTensors(a, f, GgufTensorOrder::Unknown);
    llamacpp::OffloadSettings base;
    base.tensorSplit = {6144, 6144}; // llama.cpp's default split: by free memory
    llamacpp::FitSettings even;
    even.devices = {{Bytes{6 * kGiB}, Bytes{1024 * kMiB}}, {Bytes{6 * kGiB}, Bytes{1024 * kMiB}}};
    llamacpp::FitSettings uneven = even;
    uneven.devices[1].marginBytes = Bytes{3072 * kMiB};
    const llamacpp::FitResult e = llamacpp::fitParams(t, a, contextOf(0), base, even);
    const llamacpp::FitResult u = llamacpp::fitParams(t, a, contextOf(0), base, uneven);
    REQUIRE(e.outcome == llamacpp::FitOutcome::LayersPlaced);
    REQUIRE(u.outcome == llamacpp::FitOutcome::LayersPlaced);
    for (const llamacpp::FitResult* r : {&e, &u})
        for (std::size_t d = 0; d < 2; ++d) {
            const llamacpp::FitSettings& s = r == &e ? even : uneven;
            CHECK(r->usedBytes.at(d).value <= s.devices[d].freeBytes.value - s.devices[d].marginBytes.value);
        }
    CHECK(u.devices.at(1).layers < e.devices.at(1).layers); // 2 GiB more kept free on the last device
    CHECK(u.offload.tensorSplit.size() == 2);
    CHECK(u.offload.tensorSplit[1] == u.devices[1].layers);
    CHECK(llamacpp::fitArguments(u).find(" -ts ") != std::string::npos);
}

TEST_CASE("llama.cpp --fit overflow patterns match the GGUF names as llama.cpp's regexes do", "[llamacpp][fit]")
{
    using llamacpp::FfnOverflow;
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_up_exps.weight", FfnOverflow::Moe));
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_gate_up_exps.weight", FfnOverflow::Moe));
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_down_chexps.weight", FfnOverflow::Moe));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("blk.3.ffn_up_shexp.weight", FfnOverflow::Moe));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("blk.3.ffn_gate_inp.weight", FfnOverflow::Moe));
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_gate_inp.weight", FfnOverflow::Attn));
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_up_shexp.weight", FfnOverflow::Attn));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("blk.3.ffn_norm.weight", FfnOverflow::Attn));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("blk.3.attn_q.weight", FfnOverflow::Attn));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("blk.3.ffn_up_exps.weight", FfnOverflow::Up));
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_gate_exps.weight", FfnOverflow::Up));
    CHECK(llamacpp::ffnOverflowMatches("blk.3.ffn_down_exps.weight", FfnOverflow::Gate));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("blk.3.ffn_gate_exps.weight", FfnOverflow::Gate));
    CHECK_FALSE(llamacpp::ffnOverflowMatches("output.weight", FfnOverflow::Attn));
}
