#include "archfixtures.h"
#include "planfixtures.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/plan.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headroom;

namespace {

Bytes gib(double x) { return Bytes{static_cast<std::uint64_t>(std::llround(x * static_cast<double>(kGiB)))}; }

using testfixtures::request;
using testfixtures::vllmPolicy;

} // namespace

TEST_CASE("BRIEF §1.4: a 13B MHA model at int4 on an 8 GiB card holds only a few hundred tokens", "[plan]")
{
    PlanRequest r = request(test::llama2_13b(), "int4-g128", Bytes{8 * kGiB}, flatReservePolicy(gib(1.5)));
    r.nominalParameters = 13'000'000'000ull;
    const auto plan = makePlan(r);
    REQUIRE(plan);
    CHECK(plan->weightsBytes.value == 6'703'125'000ull);
    CHECK(plan->usableBytes.value == 8 * kGiB - gib(1.5).value);
    CHECK(plan->kvBytesPerToken.value == 819'200);
    // (6.5 GiB - 6,703,125,000 B) / 819,200 B per token
    CHECK(plan->maxResidentTokens == (6'979'321'856ull - 6'703'125'000ull) / 819'200);
    CHECK(plan->maxResidentTokens == 337);
    CHECK(plan->fits); // "it runs on an 8 GB card" ...
    r.contextTokens = 4096;
    const auto prompt = makePlan(r);
    REQUIRE(prompt);
    CHECK_FALSE(prompt->fits); // ... while holding less than one prompt
    CHECK(prompt->maxUsers == std::optional<std::uint64_t>{0});
    CHECK(prompt->reason.find("does not fit") == 0);
}

TEST_CASE("flat reserve: usable = total - reserve, nothing else subtracted", "[plan]")
{
    const auto plan = makePlan(request(test::qwen05b(), "fp16", Bytes{8 * kGiB}, flatReservePolicy(Bytes{kGiB})));
    REQUIRE(plan);
    CHECK(plan->overheads.empty());
    CHECK(plan->kvBudgetBytes.value == 7 * kGiB - 2 * 494'032'768ull);
    CHECK(plan->maxResidentTokens == plan->kvBudgetBytes.value / 12'288);
}

TEST_CASE("weights larger than the card do not fit, with the reason", "[plan]")
{
    const auto plan = makePlan(request(test::llama2_13b(), "fp16", Bytes{8 * kGiB}, flatReservePolicy(Bytes{})));
    REQUIRE(plan);
    CHECK_FALSE(plan->fits);
    CHECK(plan->maxResidentTokens == 0);
    CHECK(plan->reason.find("does not fit: weights 24.") == 0);
}

TEST_CASE("vLLM's rule reproduces its log: GPU blocks and Maximum concurrency", "[plan][vllm]")
{
    // vllm-project/vllm issue 10517 (v0.6.x, RTX 3090, Llama-3.1-8B-Instruct bf16):
    //   total_gpu_memory=23.58GiB peak_torch_memory=17.06GiB non_torch_memory=0.35GiB
    //   gpu_memory_utilization=0.90 -> "# GPU blocks: 1952", "Maximum concurrency for 20000
    //   tokens per request: 1.56x"; with peak 17.98GiB -> 1478 blocks, 0.82x for 29000 tokens,
    //   "maximum number of tokens that can be stored in KV cache (23648)".
    const Bytes block{16 * 131'072}; // 16 tokens x 32 layers x 8 KV heads x 256 x 2 B
    // The log prints each figure to 0.01 GiB, so each true value lies within +-0.005 GiB.
    const auto range = [&](double total, double peak, double nonTorch) {
        const std::uint64_t lo = vllmGpuBlocks(gib(total - 0.005), 0.9, gib(peak + 0.005), gib(nonTorch + 0.005), Bytes{}, block);
        const std::uint64_t hi = vllmGpuBlocks(gib(total + 0.005), 0.9, gib(peak - 0.005), gib(nonTorch - 0.005), Bytes{}, block);
        return std::pair{lo, hi};
    };
    const auto [lo20k, hi20k] = range(23.58, 17.06, 0.35);
    CHECK(lo20k <= 1952);
    CHECK(hi20k >= 1952);
    CHECK(hi20k - lo20k <= 16); // three figures rounded to 0.01 GiB span 0.029 GiB = 15 blocks
    const auto [lo29k, hi29k] = range(23.58, 17.98, 0.35);
    CHECK(lo29k <= 1478);
    CHECK(hi29k >= 1478);
    // Both runs share the card and the non-torch memory: the difference of the block counts
    // is set by the peaks alone, 0.92 +- 0.01 GiB = 471 +- 5.1 blocks of 2 MiB.
    CHECK(1952 - 1478 >= static_cast<int>(std::floor(0.91 * 512)));
    CHECK(1952 - 1478 <= static_cast<int>(std::ceil(0.93 * 512)));
    // The derived figures, to the block and to the printed digit.
    CHECK(formatConcurrency(vllmMaxConcurrency(1952, 16, 20000)) == "1.56x");
    CHECK(formatConcurrency(vllmMaxConcurrency(1478, 16, 29000)) == "0.82x");
    CHECK(1478 * 16 == 23648);
}

TEST_CASE("a vLLM plan fed the log's measured figures applies the same rule", "[plan][vllm]")
{
    PlanRequest r = request(test::llama31_8b(), "bf16", gib(23.58), vllmPolicy());
    r.contextTokens = 20000;
    r.measured.runtimeBytes = gib(0.35);
    const Bytes weights{2 * 8'030'261'248ull};
    // torch peak beyond what "Loading model weights took" counts: the checkpoint and the rotary
    // cos/sin cache (131,072 x 128 x 2 B), priced as its own item.
    const Bytes rotary{131'072ull * 128 * 2};
    r.measured.activationPeakBytes = gib(17.06) - weights - rotary;
    r.measured.cudaGraphBytes = Bytes{};
    const auto plan = makePlan(r);
    REQUIRE(plan);
    CHECK(plan->weightsBytes == weights);
    const std::uint64_t rule = vllmGpuBlocks(gib(23.58), 0.9, gib(17.06), gib(0.35), Bytes{}, Bytes{16 * 131'072});
    CHECK(plan->kvBlocks == rule);
    CHECK((rule >= 1947 && rule <= 1956));
    REQUIRE(plan->maxConcurrency);
    CHECK(*plan->maxConcurrency == Approx(rule * 16.0 / 20000));
    CHECK(plan->maxResidentTokens / 16 == Approx(rule).margin(1)); // the byte budget agrees with the block count
}

TEST_CASE("engines give different limits on the same card", "[plan]")
{
    const Architecture a = test::llama31_8b();
    EnginePolicy llama;
    llama.id = "llama.cpp";
    llama.name = "llama.cpp";
    llama.kind = EngineKind::LlamaCpp;
    llama.fixedReserve = Bytes{1024 * kMiB};
    llama.cellPaddingFlash = 256;
    llama.cellPaddingNoFlash = 32;
    llama.minContextTokens = 4096;
    const Bytes card{25'386'024'960ull}; // RTX 4090, Linux driver total
    const auto v = makePlan(request(a, "int4-g128", card, vllmPolicy()));
    const auto l = makePlan(request(a, "int4-g128", card, llama));
    REQUIRE(v);
    REQUIRE(l);
    CHECK(v->usableBytes.value == static_cast<std::uint64_t>(std::floor(card.value * 0.9)));
    CHECK(l->usableBytes.value == card.value - 1024 * kMiB);
    CHECK(l->maxResidentTokens % 256 == 0); // padded cells with flash attention
    CHECK(v->maxResidentTokens % 16 == 0);
    CHECK(v->maxResidentTokens != l->maxResidentTokens);
}

TEST_CASE("tensor parallel halves weights and KV per device", "[plan]")
{
    PlanRequest r = request(test::llama31_8b(), "fp16", Bytes{24 * kGiB}, flatReservePolicy(Bytes{}));
    const auto one = makePlan(r);
    r.tensorParallel = 2;
    const auto two = makePlan(r);
    REQUIRE(one);
    REQUIRE(two);
    CHECK(two->kvBytesPerToken.value == 65'536);
    // Matrices and embeddings split, norms replicated.
    CHECK(two->weightsBytes.value == (one->weightsBytes.value - 65ull * 4096 * 2) / 2 + 65ull * 4096 * 2);
    r.tensorParallel = 3;
    CHECK_FALSE(makePlan(r)); // 3 does not divide 32 heads
}

TEST_CASE("SGLang's mem_fraction_static and Ollama's context tiers follow their rules", "[plan][engines]")
{
    // engines.md §5 worked values: 24 GB card ~0.85, 16 GB ~0.77, 8 GB ~0.55 (reserved MB =
    // 512 + 2048 x 1.5 + graph bs x 2 + 128), rounded to 3 decimals as server_args.py does.
    CHECK(sglangMemFractionStatic(Bytes{24 * kGiB}, 1, 1) == Approx(0.847).epsilon(1e-12)); // (24576 - 3760) / 24576 = 0.84701
    // The user's chunk and graph batch enter the rule: 8192 x 1.5 + 160 x 2 instead of 2048 x 1.5 + 24 x 2.
    CHECK(sglangMemFractionStatic(Bytes{24 * kGiB}, 1, 1, 8192, 160) == Approx(0.461).epsilon(1e-12)); // (24576 - 13248) / 24576 = 0.46094
    // An 80 GiB H100 at tp 1: 8192 / 256 by default, 512 + 12288 + 512 + 128 = 13440 MiB reserved.
    CHECK(sglangMemFractionStatic(Bytes{80 * kGiB}, 1, 1) == Approx(0.836).epsilon(1e-12)); // (81920 - 13440) / 81920 = 0.83594
    CHECK(sglangMemFractionStatic(Bytes{24 * kGiB}, 1, 1) == Approx(0.85).margin(0.005));
    CHECK(sglangMemFractionStatic(Bytes{16 * kGiB}, 1, 1) == Approx(0.77).margin(0.005));
    CHECK(sglangMemFractionStatic(Bytes{8 * kGiB}, 1, 1) == Approx(0.55).margin(0.006));
    // > 60 GiB: at least 10 GiB reserved
    CHECK(sglangMemFractionStatic(Bytes{80 * kGiB}, 1, 1) <= 70.0 / 80);
    // Ollama server/routes.go: >= 47 GiB -> 262,144; >= 23 GiB -> 32,768; else 4,096.
    CHECK(ollamaDefaultContextTokens(Bytes{25'386'024'960ull}) == 32'768); // RTX 4090, 23.64 GiB
    CHECK(ollamaDefaultContextTokens(Bytes{16'718'495'744ull}) == 4'096);  // RTX 4060 Ti 16 GB
    CHECK(ollamaDefaultContextTokens(Bytes{150'109'880'320ull}) == 262'144); // H200
}

TEST_CASE("llama.cpp --fit refuses less than its minimum context", "[plan][engines]")
{
    EnginePolicy llama;
    llama.id = "llama.cpp";
    llama.name = "llama.cpp";
    llama.kind = EngineKind::LlamaCpp;
    llama.fixedReserve = Bytes{1024 * kMiB};
    llama.cellPaddingFlash = 256;
    llama.minContextTokens = 4096;
    // Llama-2-13B at q4_0 (6.8 GiB) on an 8 GiB card leaves room for a few hundred cells: --fit
    // then moves layers to the host (issue 11): a partial offload at the 4,096-token minimum.
    const auto p = makePlan(request(test::llama2_13b(), "q4_0", Bytes{8 * kGiB}, llama));
    REQUIRE(p);
    CHECK(p->kvBytesPerToken.value == 819'200);
    CHECK_FALSE(p->fits);
    CHECK(p->verdict.state == FitState::PartialOffload);
    CHECK(p->reason.find("partial offload: ") == 0);
    CHECK(p->reason.find("/41 layers on the GPU") != std::string::npos);
}
