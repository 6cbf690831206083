#include "archfixtures.h"
#include "planfixtures.h"

#include "headroom/core/capacity.h"
#include "headroom/core/plan.h"
#include "headroom/core/verdict.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

using testfixtures::request;
using testfixtures::vllmPolicy;

PlanResult plan(const PlanRequest& r)
{
    auto p = makePlan(r);
    REQUIRE(p);
    return *p;
}

// qwen05b: 2 (K and V) x 24 layers x 2 KV heads x 64 x 2 B = 12,288 B per token at fp16.
constexpr std::uint64_t kQwenKvBytesPerToken = 12'288;

} // namespace

TEST_CASE("verdict: 4 users x 1,024 tokens of a 0.5B model fit, the headline is the max context per user", "[verdict]")
{
    PlanRequest r = request(test::qwen05b(), "fp16", Bytes{8 * kGiB}, flatReservePolicy(Bytes{kGiB}));
    r.users = 4;
    r.contextTokens = 1024;
    const PlanResult p = plan(r);
    REQUIRE(p.kvBytesPerToken.value == kQwenKvBytesPerToken);
    CHECK(p.verdict.state == FitState::Fits);
    CHECK(p.verdict.limit == FitLimit::None);
    CHECK(p.fits);
    CHECK(p.verdict.headline.kind == HeadlineKind::MaxContextPerUser);
    // Flat engine, no paging: floor(budget / 12,288 / 4), capped at the trained 32,768.
    const std::uint64_t perUser = p.kvBudgetBytes.value / kQwenKvBytesPerToken / 4;
    CHECK(perUser > 32768);
    CHECK(p.verdict.headline.value == 32768);
    CHECK(p.verdict.headline.value == p.maxContext.value_or(0));
    CHECK(p.reason.rfind("fits: 4 users x 1,024 tokens", 0) == 0);
    CHECK(headlineCaption(p.verdict.headline) == "max context per user for 4 users");
    CHECK(verdictCellText(p.verdict) == "32,768");
}

TEST_CASE("verdict: a context above the trained context is its own state, not a memory limit", "[verdict]")
{
    PlanRequest r = request(test::qwen05b(), "fp16", Bytes{8 * kGiB}, flatReservePolicy(Bytes{kGiB}));
    r.users = 4;
    r.contextTokens = 65536; // the model was trained for 32,768
    const PlanResult p = plan(r);
    CHECK(p.verdict.state == FitState::FitsWithLess);
    CHECK(p.verdict.limit == FitLimit::ModelContext);
    CHECK_FALSE(p.fits);
    CHECK(p.verdict.headline.value == 32768);
    CHECK(p.reason.find("exceed the model's trained context of 32,768") != std::string::npos);
    CHECK(verdictCellText(p.verdict) == "32,768 (trained context)");

    // A context alone: "how many users at 65,536" is answered at the trained context.
    r.users.reset();
    const PlanResult u = plan(r);
    CHECK(u.verdict.headline.kind == HeadlineKind::MaxUsersAtContext);
    CHECK(u.verdict.state == FitState::FitsWithLess);
    CHECK(u.verdict.limit == FitLimit::ModelContext);
    CHECK(u.verdict.headline.value == maxUsers(u.pool(), 32768));
    CHECK(u.verdict.headline.value == u.kvBudgetBytes.value / kQwenKvBytesPerToken / 32768);
}

TEST_CASE("verdict: memory holds less than asked: fits with less, memory binds", "[verdict]")
{
    // 1.5 GiB card, 0.25 GiB reserve: about 0.3 GiB of KV room after the 0.92 GiB of fp16 weights.
    PlanRequest r = request(test::qwen05b(), "fp16", Bytes{3 * kGiB / 2}, flatReservePolicy(Bytes{kGiB / 4}));
    r.users = 8;
    r.contextTokens = 8192;
    const PlanResult p = plan(r);
    const std::uint64_t perUser = p.kvBudgetBytes.value / kQwenKvBytesPerToken / 8;
    REQUIRE(perUser > 0);
    REQUIRE(perUser < 8192);
    CHECK(p.verdict.state == FitState::FitsWithLess);
    CHECK(p.verdict.limit == FitLimit::Memory);
    CHECK(p.verdict.headline.value == perUser);
    CHECK(verdictCellText(p.verdict) == formatThousands(perUser) + " (memory)");
    CHECK(p.verdict.loads());
    CHECK_FALSE(p.verdict.fits());
}

TEST_CASE("verdict: weights larger than the card do not fit, naming the weights", "[verdict]")
{
    PlanRequest r = request(test::llama2_13b(), "fp16", Bytes{8 * kGiB}, flatReservePolicy(Bytes{}));
    r.users = 1;
    r.contextTokens = 2048;
    const PlanResult p = plan(r);
    CHECK(p.verdict.state == FitState::DoesNotFit);
    CHECK(p.verdict.limit == FitLimit::Weights);
    CHECK(p.verdict.headline.value == 0);
    CHECK_FALSE(p.verdict.loads());
    CHECK(verdictCellText(p.verdict).rfind("no: weights ", 0) == 0);
}

TEST_CASE("verdict: vLLM that would refuse to start never fits", "[verdict][vllm]")
{
    // Llama-3.1-8B bf16 on a 24 GB card at its full 131,072 context: vLLM refuses (about 0.36x).
    PlanRequest r = request(test::llama31_8b(), "bf16", Bytes{24'146'608'128ull}, vllmPolicy());
    r.users = 1;
    r.contextTokens = 131072;
    const PlanResult p = plan(r);
    REQUIRE(p.maxConcurrency);
    REQUIRE(*p.maxConcurrency < 1.0);
    CHECK(p.verdict.state == FitState::DoesNotFit);
    CHECK(p.verdict.limit == FitLimit::EngineRefusesToStart);
    CHECK_FALSE(p.fits);
    CHECK(p.reason.find("would refuse to start") != std::string::npos);
    // Nothing is served: the headline is 0, as Headline::value says of every plan that does not
    // fit (review: the JSON's headline kept the memory figure); the memory figure stays in the
    // plan: the longest context one user could have.
    CHECK(p.verdict.headline.value == 0);
    REQUIRE(p.maxContext);
    CHECK(*p.maxContext > 0);
    CHECK(*p.maxContext < 131072);

    r.contextTokens = 8192; // --max-model-len 8192 starts
    CHECK(plan(r).verdict.state == FitState::Fits);
}

TEST_CASE("verdict: engine refusals and sequence caps set by the engine's rules slot in as states", "[verdict]")
{
    PlanRequest r = request(test::qwen05b(), "fp16", Bytes{8 * kGiB}, vllmPolicy());
    r.users = 300;
    r.contextTokens = 1024;
    PlanResult p = plan(r);
    REQUIRE(p.verdict.state == FitState::Fits);

    p.sequenceCap = SequenceCap{256, "--max-num-seqs"};
    Verdict capped = decideVerdict(r, p);
    CHECK(capped.state == FitState::FitsWithLess);
    CHECK(capped.limit == FitLimit::EngineCap);
    CHECK(capped.detail == "--max-num-seqs 256");

    p.refusals.push_back({FitLimit::EngineKvDtype, "vLLM has no 'q4_0' KV cache"});
    const Verdict refused = decideVerdict(r, p);
    CHECK(refused.state == FitState::DoesNotFit);
    CHECK(refused.limit == FitLimit::EngineKvDtype);
    CHECK(refused.reason == "does not fit: vLLM has no 'q4_0' KV cache");
    // The engine never starts: no bill of it exists (the faces print only the verdict and reason).
    CHECK(refused.engineCannotRun());
    CHECK_FALSE(capped.engineCannotRun());

    // A context alone asks "how many users": the cap, not memory, sets the number, and says so.
    PlanRequest atContext = request(test::qwen05b(), "fp16", Bytes{8 * kGiB}, vllmPolicy());
    atContext.contextTokens = 1024;
    PlanResult q = plan(atContext);
    REQUIRE(q.verdict.headline.kind == HeadlineKind::MaxUsersAtContext);
    const std::uint64_t memoryUsers = q.verdict.headline.value;
    REQUIRE(memoryUsers > 8);
    q.sequenceCap = SequenceCap{8, "--max-num-seqs"};
    const Verdict byCap = decideVerdict(atContext, q);
    CHECK(byCap.state == FitState::Fits);
    CHECK(byCap.headline.value == 8);
    CHECK(byCap.reason == "fits: 8 users at 1,024 tokens each (--max-num-seqs 8; memory holds " + formatThousands(memoryUsers) + ")");
}

TEST_CASE("verdict: only a format or KV dtype refusal means the engine cannot run; limit ids read back", "[verdict]")
{
    CHECK(engineCannotRun(FitLimit::EngineFormat));
    CHECK(engineCannotRun(FitLimit::EngineKvDtype));
    // Weights too large or a vLLM start-up refusal still have a bill that says why.
    CHECK_FALSE(engineCannotRun(FitLimit::Weights));
    CHECK_FALSE(engineCannotRun(FitLimit::EngineRefusesToStart));
    CHECK_FALSE(engineCannotRun(FitLimit::None));
    for (FitLimit l : {FitLimit::None, FitLimit::Memory, FitLimit::ModelContext, FitLimit::EngineCap, FitLimit::Weights,
                       FitLimit::Overheads, FitLimit::KvRoom, FitLimit::EngineRefusesToStart, FitLimit::EngineFormat,
                       FitLimit::EngineKvDtype, FitLimit::HostMemory})
        CHECK(fitLimitFromId(fitLimitId(l)) == l);
    CHECK_FALSE(fitLimitFromId("no_such_limit"));
}

TEST_CASE("verdict: the question defaults are the same in every face", "[verdict]")
{
    PlanRequest r = request(test::llama31_8b(), "int4-g128", Bytes{24 * kGiB}, vllmPolicy());
    const PlanRequest none = withQuestionDefaults(r);
    CHECK(none.users == kDefaultUsers);
    CHECK(none.contextTokens == kDefaultContextTokens);

    r.users = 16; // users alone: a sane context, not the trained 131,072
    CHECK(withQuestionDefaults(r).contextTokens == 8192);

    PlanRequest small = request(test::llama2_13b(), "int4-g128", Bytes{24 * kGiB}, vllmPolicy());
    CHECK(withQuestionDefaults(small).contextTokens == 4096); // capped at the trained 4,096

    PlanRequest ctxOnly = r;
    ctxOnly.users.reset();
    ctxOnly.contextTokens = 32768;
    const PlanRequest kept = withQuestionDefaults(ctxOnly);
    CHECK_FALSE(kept.users);
    CHECK(headlineKind(kept.users, kept.contextTokens) == HeadlineKind::MaxUsersAtContext);
    CHECK(headlineCaption(HeadlineKind::MaxUsersAtContext, 1, 32768) == "max users at 32,768 tokens each");
    CHECK(headlineCaption(HeadlineKind::MaxResidentTokens, 1, 0) == "max resident tokens (all users together)");
    CHECK(headlineCaption(HeadlineKind::MaxContextPerUser, 1, 0) == "max context per user for 1 user");
}

TEST_CASE("verdict: an engine setting keeps the question defaults unless it answers the question", "[verdict]")
{
    PlanRequest r = request(test::llama31_8b(), "int4-g128", Bytes{24 * kGiB}, vllmPolicy());
    r.engineSettings = {{"max-num-seqs", "64"}}; // a cap, not the question: 4 users x 8,192 as without it
    PlanRequest capped = withQuestionDefaults(r);
    CHECK(capped.users == kDefaultUsers);
    CHECK(capped.contextTokens == kDefaultContextTokens);

    r.engineSettings = {{"max-model-len", "16384"}}; // the context: it wins over the 8,192 default
    PlanRequest byLen = withQuestionDefaults(r);
    CHECK(byLen.users == kDefaultUsers);
    CHECK_FALSE(byLen.contextTokens);
    auto plan = makePlan(byLen);
    REQUIRE(plan);
    CHECK(plan->contextTokens == 16384);

    r.engineSettings = {{"max-model-len", "8192"}}; // agreeing with the default: kept
    CHECK(withQuestionDefaults(r).contextTokens == kDefaultContextTokens);

    r.engineSettings = {{"max-model-len", "abc"}}; // a bad value stays an error of the plan
    CHECK_FALSE(makePlan(withQuestionDefaults(r)));
}
