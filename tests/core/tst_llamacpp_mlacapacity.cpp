// The capacity of a llama.cpp plan of an MLA model comes from the bytes per token its build
// allocates (bill.h EngineBill::kvLayout): before ggml-org/llama.cpp PR #12801 (builds below b5100,
// engines/llamacpp.cpp mlaCacheOf) every MLA layer is cached per head, K n_head x (nope + rope) and
// V n_head x v_head; since PR #19067 only the latent K (kv_lora_rank + rope) is kept.
#include "fixtures.h"
#include "planfigure.h"

#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

using namespace headroom;

namespace {

PlanRequest liteOn4090(const ProfileSet& set, const char* engine)
{
    const ModelProfile* lite = set.findModel("deepseek-v2-lite");
    REQUIRE(lite);
    REQUIRE(lite->architecture);
    const Card* card = set.findCard("rtx-4090");
    REQUIRE(card);
    PlanRequest r;
    r.model = *lite;
    r.format = *findFormat("q4_k");
    r.kvDtype = *findKvDtype("fp16");
    r.card = *card;
    auto e = resolveEngine(engine, set);
    REQUIRE(e);
    r.engine = *e;
    r.contextTokens = 8192;
    r.users = 20;
    return r;
}

} // namespace

TEST_CASE("llama.cpp MLA capacity: b4000 caches per head (before PR #12801), a current build the latent K",
          "[llamacpp][engines][mla]")
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    // DeepSeek-V2-Lite: 27 layers, 16 heads, nope 128, rope 64, v_head 128, kv_lora_rank 512; f16.
    //   b4000:   (16 x (128 + 64) + 16 x 128) x 2 B x 27 = 276,480 B/token
    //   current: (512 + 64) x 2 B x 27                   =  31,104 B/token
    const auto old = makePlan(liteOn4090(*set, "llama.cpp@b4000"));
    REQUIRE(old);
    CHECK(old->kvBytesPerToken.value == 276'480);
    // The KV figure (-c 163,840 = 20 x 8,192 cells) is the same bytes per token: 43,200 MiB.
    CHECK(testfixtures::engineFigure(*old, "kv_buffer_bytes") == 276'480.0 * 163'840);
    const std::uint64_t budget = old->kvBudgetBytes.value;
    REQUIRE(budget > 0);
    // Max users at 8,192 tokens: floor(budget / (8,192 x 276,480)); the 11.78 GiB budget holds 5.
    REQUIRE(old->maxUsers);
    CHECK(*old->maxUsers == budget / (8192ull * 276'480));
    CHECK(*old->maxUsers == 5);
    CHECK_FALSE(old->fits); // 20 users x 8,192 tokens need 43,200 MiB of KV
    REQUIRE(old->maxContext);
    CHECK(*old->maxContext < 8192);
    CHECK(old->maxResidentTokens <= budget / 276'480);
    CHECK(old->maxResidentTokens + 256 > budget / 276'480); // within one 256-cell block

    const auto now = makePlan(liteOn4090(*set, "llama.cpp"));
    REQUIRE(now);
    CHECK(now->kvBytesPerToken.value == 31'104);
    CHECK(testfixtures::engineFigure(*now, "kv_buffer_bytes") == 31'104.0 * 163'840);
    REQUIRE(now->maxUsers);
    CHECK(*now->maxUsers == now->kvBudgetBytes.value / (8192ull * 31'104));
    CHECK(*now->maxUsers >= 40);
    CHECK(now->fits);

    // Between PR #12801 and PR #19067 (b5100 to b7800): latent K 576 and V 512: 58,752 B/token.
    const auto mid = makePlan(liteOn4090(*set, "llama.cpp@b6000"));
    REQUIRE(mid);
    CHECK(mid->kvBytesPerToken.value == 58'752);
    CHECK(testfixtures::engineFigure(*mid, "kv_buffer_bytes") == 58'752.0 * 163'840);

    // Ollama v0.12.11 to v0.29 bills its llama runner as llama.cpp b6840 (engines/ollama.cpp
    // ownLayoutPlan): the latent K and V, the same 58,752 B/token in the capacity and the KV figure.
    const auto runner = makePlan(liteOn4090(*set, "ollama@0.12.11"));
    REQUIRE(runner);
    CHECK(runner->kvBytesPerToken.value == 58'752);
    CHECK(testfixtures::engineFigure(*runner, "kv_buffer_bytes") == 58'752.0 * 163'840);
}
