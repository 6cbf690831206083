// The engine modules: settings spelled as each engine spells them, their errors, the mapping of
// the generic options onto them, and versions (`--engine vllm@0.6`).

#include "archfixtures.h"
#include "fixtures.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/enginerules.h"
#include "headroom/core/launchflags.h"
#include "headroom/core/parameters.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>

using namespace headroom;

namespace {

ProfileSet builtin()
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    INFO((set ? std::string() : toString(set.error())));
    REQUIRE(set);
    return *set;
}

PlanRequest request(const ProfileSet& set, const char* engine, const Architecture& arch = test::llama31_8b())
{
    PlanRequest r;
    r.model.id = arch.family;
    r.model.architecture = arch;
    r.format = *findFormat("bf16");
    r.kvDtype = *findKvDtype("fp16");
    r.card = anonymousCard("test", Bytes{25'386'024'960ull}); // RTX 4090
    auto e = resolveEngine(engine, set);
    INFO((e ? std::string() : e.error()));
    REQUIRE(e);
    r.engine = *e;
    return r;
}

const SettingValue* setting(const PlanResult& p, const std::string& key)
{
    for (const SettingValue& v : p.engineSettings)
        if (v.key == key)
            return &v;
    return nullptr;
}

std::string planError(const PlanRequest& r)
{
    const auto p = makePlan(r);
    REQUIRE_FALSE(p);
    return p.error();
}

} // namespace

TEST_CASE("settings parse by type, with bounds, aliases and dashes", "[engines][settings]")
{
    const std::vector<SettingSpec>& specs = engineFor(EngineKind::LlamaCpp).settings();
    auto s = parseEngineSettings(specs, {}, {{"c", "8192"}, {"--np", "4"}, {"fa", "off"}, {"swa-full", "yes"}}, "llama.cpp");
    REQUIRE(s);
    CHECK(s->integer("ctx-size") == std::optional<std::uint64_t>{8192});
    CHECK(s->integer("parallel") == std::optional<std::uint64_t>{4});
    CHECK(s->text("flash-attn") == std::optional<std::string>{"off"});
    CHECK(s->boolean("swa-full") == std::optional<bool>{true});
    CHECK(s->given("ctx-size"));
    CHECK_FALSE(s->given("kv-unified"));
    CHECK(s->boolean("kv-unified") == std::optional<bool>{false}); // the built-in default

    auto bad = parseEngineSettings(specs, {}, {{"fa", "maybe"}}, "llama.cpp");
    REQUIRE_FALSE(bad);
    CHECK(bad.error() == "llama.cpp setting 'flash-attn': expected one of on, off, auto, found 'maybe'");
    auto unknown = parseEngineSettings(specs, {}, {{"ctx_size", "1"}}, "llama.cpp");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().find("unknown llama.cpp setting 'ctx_size': did you mean 'ctx-size'?") == 0);
    CHECK(unknown.error().find("known: ctx-size, parallel,") != std::string::npos);

    const std::vector<SettingSpec>& vllm = engineFor(EngineKind::Vllm).settings();
    auto frac = parseEngineSettings(vllm, {}, {{"gpu-memory-utilization", "1.5"}}, "vLLM");
    REQUIRE_FALSE(frac);
    CHECK(frac.error() == "vLLM setting 'gpu-memory-utilization': expected a number from 0 to 1, found '1.5'");
    auto whole = parseEngineSettings(vllm, {}, {{"max-model-len", "8k"}}, "vLLM");
    REQUIRE_FALSE(whole);
    CHECK(whole.error().find("expected a whole number from 1 to") != std::string::npos);
    auto size = parseEngineSettings(vllm, {}, {{"kv_cache_memory_bytes", "4GiB"}}, "vLLM");
    REQUIRE(size);
    CHECK(size->integer("kv-cache-memory-bytes") == std::optional<std::uint64_t>{4 * kGiB});

    CHECK(parseSettingArgument("enforce-eager")->value == "true");
    CHECK(parseSettingArgument("max-model-len=8192")->key == "max-model-len");
    CHECK_FALSE(parseSettingArgument("=3"));
}

TEST_CASE("every engine's profile defaults are keys its unit declares", "[engines][settings]")
{
    const ProfileSet set = builtin();
    for (const EnginePolicy& e : set.engines) {
        INFO(e.id);
        CHECK(parseEngineSettings(engineFor(e.kind).settings(), e.settingDefaults, {}, e.name));
    }
}

TEST_CASE("vLLM settings drive the plan and agree with the generic options", "[engines][vllm]")
{
    const ProfileSet set = builtin();
    PlanRequest r = request(set, "vllm");
    r.engineSettings = {{"max-model-len", "8192"}, {"gpu-memory-utilization", "0.8"}, {"block-size", "32"}};
    const auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->contextTokens == 8192);
    CHECK(p->maxUsers.has_value()); // max-model-len counts as a context asked
    CHECK(p->usableBytes.value == static_cast<std::uint64_t>(std::floor(25'386'024'960.0 * 0.8)));
    CHECK(p->paging.blockTokens == 32);
    CHECK(p->kvBlocks % 1 == 0);
    REQUIRE(setting(*p, "max-model-len"));
    CHECK(setting(*p, "max-model-len")->given);
    REQUIRE(setting(*p, "max-num-batched-tokens"));
    CHECK_FALSE(setting(*p, "max-num-batched-tokens")->given);
    CHECK(setting(*p, "max-num-batched-tokens")->integer == r.engine.ubatchTokens);
    // The figures vLLM prints, from the same blocks.
    REQUIRE(p->engineFigures.size() == 4);
    CHECK(p->engineFigures[0].printed.rfind("Model loading took ", 0) == 0); // weights + rotary cache
    CHECK(p->engineFigures[0].value == Approx(static_cast<double>(p->weightsBytes.value + p->overheads[0].bytes.value)));
    CHECK(p->engineFigures[1].printed == "# GPU blocks: " + std::to_string(p->kvBlocks));
    CHECK(p->engineFigures[2].value == Approx(p->kvBlocks * 32.0));
    CHECK(p->engineFigures[3].printed.find("Maximum concurrency for 8,192 tokens per request: ") == 0);

    // The generic option and the engine's spelling agree, or the plan says which two disagree.
    r.contextTokens = 8192;
    CHECK(makePlan(r));
    r.contextTokens = 4096;
    CHECK(planError(r) == "--context 4096 and vLLM setting max-model-len=8192 disagree: give one of them, or the same value");
    r.contextTokens.reset();
    r.engineSettings = {{"max-num-batched-tokens", "4096"}};
    r.ubatchTokens = 2048;
    CHECK(planError(r).find("--ubatch 2048 and vLLM setting max-num-batched-tokens=4096 disagree") == 0);
    r.ubatchTokens.reset();
    REQUIRE(makePlan(r));
    CHECK(makePlan(r)->ubatchTokens == 4096);

    // tensor-parallel-size alone sets TP; --tp and it must agree.
    r.engineSettings = {{"tensor-parallel-size", "2"}};
    const auto tp = makePlan(r);
    REQUIRE(tp);
    CHECK(tp->tensorParallel == 2);
    CHECK(tp->kvBytesPerToken.value == 65'536);
    r.tensorParallel = 4;
    CHECK(planError(r).find("--tp 4 and vLLM setting tensor-parallel-size=2 disagree") == 0);
    r.tensorParallel = 1;

    // kv-cache-dtype fp8 replaces the default 16-bit dtype; against --kv-dtype q8_0 it disagrees.
    r.engineSettings = {{"kv-cache-dtype", "fp8"}};
    const auto fp8 = makePlan(r);
    REQUIRE(fp8);
    CHECK(fp8->kvDtypeId == "fp8");
    CHECK(fp8->kvBytesPerToken.value == 65'536);
    r.kvDtype = *findKvDtype("q8_0");
    CHECK(planError(r).find("--kv-dtype q8_0 and vLLM setting kv-cache-dtype=fp8 disagree") == 0);
    r.kvDtype = *findKvDtype("fp16");

    // max-num-seqs caps max_users; more users than it is an error.
    r.engineSettings = {{"max-num-seqs", "3"}, {"max-model-len", "1024"}};
    const auto capped = makePlan(r);
    REQUIRE(capped);
    CHECK(capped->maxUsers == std::optional<std::uint64_t>{3});
    r.users = 4;
    const auto more = makePlan(r);
    REQUIRE(more);
    CHECK(more->verdict.state == FitState::FitsWithLess);
    CHECK(more->verdict.limit == FitLimit::EngineCap);
    REQUIRE(more->sequenceCap);
    CHECK(more->sequenceCap->setting == "--max-num-seqs");
    r.users.reset();
    // max-model-len alone asks the question "how many users at that context".
    CHECK(capped->verdict.headline.kind == HeadlineKind::MaxUsersAtContext);
    CHECK(capped->verdict.headline.value == 3);

    r.engineSettings = {{"no-such-key", "1"}};
    CHECK(planError(r).find("unknown vLLM v0.19.1 setting 'no-such-key'") == 0);
}

TEST_CASE("llama.cpp ctx-size is the total over the sequences", "[engines][llama.cpp]")
{
    const ProfileSet set = builtin();
    PlanRequest r = request(set, "llama.cpp");
    r.engineSettings = {{"c", "16384"}, {"np", "4"}};
    const auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->contextTokens == 4096);
    CHECK(p->users == 4);
    r.contextTokens = 8192;
    CHECK(planError(r).find("--context 8192 and llama.cpp") == 0);
    r.contextTokens = 4096;
    CHECK(makePlan(r));
    r.engineSettings = {{"fa", "off"}};
    r.flashAttention = true;
    CHECK(planError(r).find("--flash-attention") == 0);
    r.flashAttention.reset();
    const auto off = makePlan(r);
    REQUIRE(off);
    CHECK_FALSE(off->flashAttention);
    // Current llama.cpp pads each sequence's stream to 256 cells with or without flash attention.
    CHECK(off->paging.blockTokens == 256);
    CHECK(off->paging.cellPadding == 1);
    r.engineSettings = {{"ctk", "q8_0"}, {"ctv", "f16"}}; // separate K and V types are priced apart
    REQUIRE(makePlan(r));
    CHECK(makePlan(r)->kvBytesPerToken.value == 32u * (8 * 128 / 32 * 34 + 8 * 128 * 2));
    r.engineSettings = {{"ctk", "q8_0"}, {"ctv", "q8_0"}};
    REQUIRE(makePlan(r));
    CHECK(makePlan(r)->kvDtypeId == "q8_0");
    r.engineSettings = {{"fit-target", "2048"}};
    REQUIRE(makePlan(r));
    CHECK(makePlan(r)->usableBytes.value == 25'386'024'960ull - 2048 * kMiB);
}

TEST_CASE("Ollama, SGLang, TGI and TensorRT-LLM take their own spellings", "[engines]")
{
    const ProfileSet set = builtin();
    PlanRequest o = request(set, "ollama");
    o.engineSettings = {{"num_ctx", "8192"}, {"OLLAMA_NUM_PARALLEL", "2"}, {"OLLAMA_GPU_OVERHEAD", "1GiB"}};
    const auto op = makePlan(o);
    REQUIRE(op);
    CHECK(op->contextTokens == 8192);
    CHECK(op->users == 2);
    // From v0.30 llama-server's --fit keeps its 1024 MiB target free; MinimumMemory and
    // OLLAMA_GPU_OVERHEAD are only logged (server/sched.go load, fb30760).
    CHECK(op->usableBytes.value == 25'386'024'960ull - 1024 * kMiB);
    // Before v0.30 Ollama kept both free (llm/server.go buildLayout, v0.12.11).
    o.engine.requestedVersion = "0.20.0";
    const auto older = makePlan(o);
    REQUIRE(older);
    CHECK(older->usableBytes.value == 25'386'024'960ull - o.engine.fixedReserve.value - kGiB);

    PlanRequest s = request(set, "sglang");
    s.engineSettings = {{"mem-fraction-static", "0.8"}, {"max-total-tokens", "1000"}};
    const auto sp = makePlan(s);
    REQUIRE(sp);
    // SGLang keeps (1 - mem_fraction_static) of the memory free at start-up (after the CUDA context).
    const std::uint64_t freeAtStart = 25'386'024'960ull - s.engine.runtimeBytes.value;
    CHECK(sp->usableBytes.value
          == 25'386'024'960ull - (freeAtStart - static_cast<std::uint64_t>(std::floor(static_cast<double>(freeAtStart) * 0.8))));
    CHECK(sp->maxResidentTokens == 1000);

    PlanRequest t = request(set, "tensorrt-llm");
    t.engineSettings = {{"max_seq_len", "4096"}, {"tokens_per_block", "64"}, {"max_batch_size", "2"}};
    const auto tp = makePlan(t);
    REQUIRE(tp);
    CHECK(tp->contextTokens == 4096);
    CHECK(tp->paging.blockTokens == 64);
    CHECK(tp->maxUsers == std::optional<std::uint64_t>{2});

    PlanRequest g = request(set, "tgi");
    g.engineSettings = {{"max-batch-prefill-tokens", "1024"}, {"max-total-tokens", "2048"}};
    const auto gp = makePlan(g);
    REQUIRE(gp);
    CHECK(gp->ubatchTokens == 1024);
    CHECK(gp->contextTokens == 2048);
}

TEST_CASE("engine NAME@VERSION picks the profile covering that release and the plan names it", "[engines][versions]")
{
    CHECK(compareVersions("0.6.4", "0.10") < 0);
    CHECK(compareVersions("v0.8", "0.8.0") == 0);
    CHECK(compareVersions("0.19.1", "0.8.0") > 0);
    const ProfileSet set = builtin();
    const auto v0 = resolveEngine("vllm@0.6", set);
    REQUIRE(v0);
    CHECK(v0->id == "vllm-0.6");
    CHECK(v0->requestedVersion == "0.6");
    const auto v1 = resolveEngine("vllm@0.8.5", set);
    REQUIRE(v1);
    CHECK(v1->id == "vllm-0.9"); // V1 before v0.17's sampler change
    const auto v19 = resolveEngine("vllm@0.19.0", set);
    REQUIRE(v19);
    CHECK(v19->id == "vllm");
    const auto current = resolveEngine("vllm", set);
    REQUIRE(current);
    CHECK(current->requestedVersion.empty());
    const auto old = resolveEngine("vllm@0.2", set); // the V0 profile starts at 0.2.5 (PR 2031's profiler)
    REQUIRE_FALSE(old);
    CHECK(old.error().find("no vLLM profile covers version 0.2") == 0);
    CHECK_FALSE(resolveEngine("vllm@", set));
    // A version must be shaped like one (resolve.cpp versionShaped): a release, a llama.cpp build or
    // a commit; "abc" or "latest" used to plan as a version no profile has, with exit 0.
    for (const char* bad : {"tgi@abc", "vllm@latest", "llama.cpp@foo", "vllm@0.6..1", "ollama@v"}) {
        INFO(bad);
        const auto e = resolveEngine(bad, set);
        REQUIRE_FALSE(e);
        CHECK(e.error().find("expected NAME@VERSION") != std::string::npos);
    }
    for (const char* good : {"vllm@0.6.3.post1", "vllm@v0.10.1.1", "vllm@0.11.0rc2", "llama.cpp@b4000", "tgi@2.4.0",
                             "sglang@0.4.2"}) {
        INFO(good);
        CHECK(resolveEngine(good, set));
    }

    PlanRequest r = request(set, "vllm@0.6");
    const auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->engineVersion == "0.6");
    CHECK(makePlan(request(set, "vllm"))->engineVersion == current->version);
}

TEST_CASE("vLLM's newer KV caches from v0.20, refused by the engines that lack them", "[engines][kv]")
{
    const ProfileSet set = builtin();
    for (const char* kv : {"fp8_per_token_head", "int8_per_token_head", "nvfp4"}) {
        INFO(kv);
        PlanRequest r = request(set, "vllm@0.20");
        r.kvDtype = *findKvDtype(kv);
        r.contextTokens = 8192; // the full 131,072 would not fit the 4090 at all (0.67x at fp8_per_token_head)
        const auto p = makePlan(r);
        REQUIRE(p);
        std::string reasons;
        for (const EngineRefusal& refusal : p->refusals)
            reasons += refusal.reason + "; ";
        INFO(reasons);
        CHECK(p->refusals.empty());
        CHECK(p->kvBytesPerToken == kvLayout(*r.model.architecture, r.kvDtype).bytesPerToken());
        // v0.19's CacheDType has none of them.
        PlanRequest old = request(set, "vllm");
        old.kvDtype = r.kvDtype;
        const auto q = makePlan(old);
        REQUIRE(q);
        REQUIRE_FALSE(q->refusals.empty());
        CHECK(q->refusals[0].reason.find("vLLM v0.19.1 has no " + std::string(kv) + " KV cache") == 0);
        CHECK_FALSE(q->fits);
        for (const char* engine : {"llama.cpp", "ollama", "sglang", "tgi", "tensorrt-llm"}) {
            INFO(engine);
            PlanRequest o = request(set, engine);
            o.kvDtype = r.kvDtype;
            if (std::string(engine) == "llama.cpp" || std::string(engine) == "ollama")
                o.format = *findFormat("q4_k_m");
            const auto e = makePlan(o);
            REQUIRE(e);
            REQUIRE_FALSE(e->refusals.empty());
            CHECK(e->refusals[0].limit == FitLimit::EngineKvDtype);
            CHECK(e->refusals[0].reason.find(std::string("no ") + kv + " KV cache") != std::string::npos);
        }
    }
    // MLA: the latent cache has no per-token-head or nvfp4 layout in vLLM.
    const ModelProfile* lite = set.findModel("deepseek-v2-lite");
    REQUIRE(lite);
    REQUIRE(lite->architecture);
    PlanRequest mla = request(set, "vllm@0.20", *lite->architecture);
    mla.kvDtype = *findKvDtype("nvfp4");
    const auto m = makePlan(mla);
    REQUIRE(m);
    REQUIRE_FALSE(m->refusals.empty());
    CHECK(m->refusals[0].reason.find("MLAAttentionSpec") != std::string::npos);
}

TEST_CASE("a draft model (--draft): its weights and KV join the bill of an engine that runs one", "[engines][draft]")
{
    const ProfileSet set = builtin();
    const ModelProfile* draft = set.findModel("llama-3.2-1b");
    REQUIRE(draft);
    REQUIRE(draft->architecture);
    const WeightBill draftWeights = priceWeights(*draft->architecture, *findFormat("bf16"));
    // Llama-3.2-1B: 16 layers x 8 KV heads x (64 + 64) x 2 B = 32,768 B per token.
    CHECK(kvLayout(*draft->architecture, *findKvDtype("fp16")).bytesPerToken().value == 32'768);

    PlanRequest alone = request(set, "vllm");
    alone.contextTokens = 8192;
    const auto a = makePlan(alone);
    REQUIRE(a);
    PlanRequest r = alone;
    r.draft = DraftRequest{*draft, *findFormat("bf16")};
    const auto p = makePlan(r);
    REQUIRE(p);
    CHECK(p->refusals.empty());
    CHECK(p->draftModelId == "llama-3.2-1b");
    CHECK(p->draftWeightsBytes == draftWeights.totalBytes);
    CHECK(p->weightsBytes == a->weightsBytes + draftWeights.totalBytes);
    CHECK(p->weightsByRole.at("draft") == draftWeights.totalBytes);
    CHECK(p->draftKvBytesPerToken.value == 32'768);
    CHECK(p->kvBytesPerToken.value == 131'072 + 32'768);
    CHECK(p->kvBlocks < a->kvBlocks);
    const auto flags = launchFlags(r, *p);
    REQUIRE(flags);
    CHECK(flags->command.find("--speculative-config") != std::string::npos);
    CHECK(flags->command.find("\"num_speculative_tokens\": 4") != std::string::npos);
    // A draft with no path: $DRAFT_MODEL outside the single quotes, where sh expands it (review:
    // the whole JSON was single-quoted and vLLM got the text "$DRAFT_MODEL"); the flag's value stays the JSON.
    CHECK(flags->command.find(" --speculative-config '{\"model\": \"'\"$DRAFT_MODEL\"'\", \"num_speculative_tokens\": 4}'")
          != std::string::npos);
    CHECK(std::any_of(flags->flags.begin(), flags->flags.end(), [](const LaunchFlag& f) {
        return f.name == "--speculative-config" && f.value == "{\"model\": \"$DRAFT_MODEL\", \"num_speculative_tokens\": 4}";
    }));

    // llama.cpp: the draft context's cache is f16 (-ctkd/-ctvd) while the target's is q8_0.
    PlanRequest l = request(set, "llama.cpp");
    l.format = *findFormat("q4_k_m");
    l.kvDtype = *findKvDtype("q8_0");
    l.flashAttention = true;
    l.contextTokens = 8192;
    l.draft = DraftRequest{*draft, *findFormat("q8_0")};
    const auto lp = makePlan(l);
    REQUIRE(lp);
    CHECK(lp->refusals.empty());
    CHECK(lp->draftKvBytesPerToken.value == 32'768);
    CHECK(lp->kvBytesPerToken.value == 32ull * 2 * 1024 * 34 / 32 + 32'768);
    const auto lf = launchFlags(l, *lp);
    REQUIRE(lf);
    CHECK(lf->command.find(" -md ") != std::string::npos);

    // Engines without draft-model speculative decoding are refused it, saying why.
    for (const char* engine : {"tgi", "ollama", "sglang", "tensorrt-llm"}) {
        INFO(engine);
        PlanRequest o = request(set, engine);
        if (std::string(engine) == "ollama")
            o.format = *findFormat("q4_k_m");
        o.draft = r.draft;
        const auto op = makePlan(o);
        REQUIRE(op);
        REQUIRE_FALSE(op->refusals.empty());
        CHECK(op->refusals.back().limit == FitLimit::EngineRefusesToStart);
        CHECK(op->refusals.back().reason.find("(--draft llama-3.2-1b)") != std::string::npos);
        CHECK_FALSE(op->fits);
    }
}
