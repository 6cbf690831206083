// The SGLang, TGI and TensorRT-LLM units: each rule as the engine's source has it, version by
// version (core/src/engines/{sglang,tgi,tensorrtllm}.cpp), their settings and their refusals.

#include "archfixtures.h"
#include "fixtures.h"
#include "planfigure.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headroom;

namespace {

constexpr std::uint64_t kCard = 25'386'024'960ull; // RTX 4090, driver-reported total

ProfileSet builtin()
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    INFO((set ? std::string() : toString(set.error())));
    REQUIRE(set);
    return *set;
}

PlanRequest request(const ProfileSet& set, const std::string& engine, std::vector<EngineSetting> settings = {},
                    const Architecture& arch = test::llama31_8b())
{
    PlanRequest r;
    r.model.id = arch.family;
    r.model.architecture = arch;
    r.format = *findFormat("bf16");
    r.kvDtype = *findKvDtype("fp16");
    r.card = anonymousCard("test", Bytes{kCard});
    auto e = resolveEngine(engine, set);
    INFO(engine << ": " << (e ? std::string() : e.error()));
    REQUIRE(e);
    r.engine = *e;
    r.engineSettings = std::move(settings);
    return r;
}

PlanResult plan(const PlanRequest& r)
{
    auto p = makePlan(r);
    INFO((p ? std::string() : p.error()));
    REQUIRE(p);
    return *p;
}

double setting(const PlanResult& p, const std::string& key)
{
    for (const SettingValue& v : p.engineSettings)
        if (v.key == key)
            return v.number;
    FAIL("no setting " << key);
    return 0;
}

std::uint64_t item(const std::vector<OverheadItem>& items, const std::string& name)
{
    for (const OverheadItem& i : items)
        if (i.name == name)
            return i.bytes.value;
    return 0;
}

bool refuses(const PlanResult& p, FitLimit limit)
{
    for (const EngineRefusal& r : p.refusals)
        if (r.limit == limit)
            return true;
    return false;
}

} // namespace

TEST_CASE("SGLang: mem_fraction_static of the memory free at start-up, by version", "[engines][sglang]")
{
    const ProfileSet set = builtin();
    // Up to 0.4.x the default follows the tensor-parallel size (server_args.py __post_init__).
    for (auto [tp, mfs] : {std::pair{1u, 0.88}, {2u, 0.87}, {4u, 0.85}, {8u, 0.81}, {16u, 0.79}}) {
        PlanRequest r = request(set, "sglang@0.4.3");
        r.tensorParallel = tp;
        CHECK(setting(plan(r), "mem-fraction-static") == Approx(mfs));
    }
    // From 0.5 the reserved-memory rule.
    const PlanResult now = plan(request(set, "sglang"));
    CHECK(setting(now, "mem-fraction-static") == Approx(sglangMemFractionStatic(Bytes{kCard}, 1, 1)));

    // The pool: mfs x (total - context) - weights - load overhead, in whole cells.
    PlanRequest r = request(set, "sglang", {{"mem-fraction-static", "0.8"}});
    const PlanResult p = plan(r);
    const std::uint64_t context = item(p.overheads, "cuda_context");
    CHECK(context == r.engine.runtimeBytes.value);
    CHECK(item(p.overheads, "distributed_init") == 0); // one rank
    const std::uint64_t freeAtStart = kCard - context;
    const auto rest = static_cast<std::uint64_t>(std::floor(static_cast<double>(freeAtStart) * 0.8)) - p.weightsBytes.value
        - item(p.overheads, "load_overhead");
    const std::uint64_t cell = p.kvBytesPerToken.value;
    CHECK(cell == 131'072);
    CHECK(testfixtures::engineFigure(p, "max_total_num_tokens") == static_cast<double>(rest / cell));
    CHECK(p.maxResidentTokens == rest / cell);

    // Memory other processes hold (--used 2 GiB) is not free at start-up: outside the pool and the slack.
    PlanRequest used = request(set, "sglang", {{"mem-fraction-static", "0.8"}});
    used.freeBytes = Bytes{kCard - (2ull << 30)};
    const PlanResult pu = plan(used);
    CHECK(item(pu.reserved, "other_processes") == 2ull << 30);
    const auto restUsed = static_cast<std::uint64_t>(std::floor(static_cast<double>(freeAtStart - (2ull << 30)) * 0.8))
        - pu.weightsBytes.value - item(pu.overheads, "load_overhead");
    CHECK(pu.maxResidentTokens == restUsed / cell);

    // What SGLang prints free at start-up ("Load weight begin. avail mem=22.76 GB", after its own
    // CUDA context; the RTX 3090 under WSL2 of the corpus) goes in as free = printed + the profile's
    // context: the slack is then (1 - mfs) of exactly the printed figure.
    PlanRequest wsl = request(set, "sglang@0.4.3", {{"mem-fraction-static", "0.88"}});
    const std::uint64_t printedFree = static_cast<std::uint64_t>(22.76 * 1073741824.0);
    wsl.freeBytes = Bytes{printedFree + wsl.engine.runtimeBytes.value};
    const PlanResult pw = plan(wsl);
    CHECK(item(pw.reserved, "other_processes") == kCard - printedFree - wsl.engine.runtimeBytes.value);
    CHECK(static_cast<double>(item(pw.reserved, "mem_fraction_static_slack"))
          == Approx(0.12 * static_cast<double>(printedFree)).margin(2.0));

    // TP 2: NCCL init on each rank, KV heads split.
    PlanRequest r2 = request(set, "sglang", {{"mem-fraction-static", "0.8"}, {"tp", "2"}});
    const PlanResult p2 = plan(r2);
    CHECK(item(p2.overheads, "distributed_init") > 0);
    CHECK(p2.kvBytesPerToken.value == 65'536);

    // page-size rounds the pool down to whole pages; max-total-tokens caps it.
    const PlanResult paged = plan(request(set, "sglang", {{"mem-fraction-static", "0.8"}, {"page-size", "64"}}));
    CHECK(static_cast<std::uint64_t>(testfixtures::engineFigure(paged, "max_total_num_tokens")) % 64 == 0);
    CHECK(plan(request(set, "sglang", {{"max-total-tokens", "1000"}})).maxResidentTokens == 1000);
}

TEST_CASE("TGI: the wiggle room of the free memory after warm-up (2.x), of the total (3.x)", "[engines][tgi]")
{
    const ProfileSet set = builtin();
    // The same warm-up prefill for both (2.x would default it to max-input-tokens + 50, below), and
    // paged attention's blocks of 16 for both (the launcher's default is flashinfer, below).
    const PlanResult v2 = plan(request(set, "tgi@2.4.1", {{"max-batch-prefill-tokens", "4096"}, {"ATTENTION", "paged"}}));
    const PlanResult v3 = plan(request(set, "tgi@3.3.7", {{"max-batch-prefill-tokens", "4096"}, {"ATTENTION", "paged"}}));
    CHECK(setting(v2, "TGI_WIGGLE_ROOM") == Approx(0.90));
    CHECK(setting(v3, "TGI_WIGGLE_ROOM") == Approx(0.90));
    CHECK(setting(plan(request(set, "tgi@2.0.4")), "TGI_WIGGLE_ROOM") == Approx(0.95));
    CHECK(setting(plan(request(set, "tgi@3.1.0")), "TGI_WIGGLE_ROOM") == Approx(0.93));
    // Same card, model and warm-up: only the rule differs.
    const std::uint64_t spent = v2.weightsBytes.value + totalBytes(v2.overheads).value;
    REQUIRE(spent == v3.weightsBytes.value + totalBytes(v3.overheads).value);
    const std::uint64_t freeAfter = kCard - spent;
    const std::uint64_t block = 16 * v2.kvBytesPerToken.value;
    // 2.x: the warm-up batch's blocks (2 requests of 4,095 + 1 tokens for a 4,096 prefill at
    // max-input-tokens 4,095: 2 x 256 blocks of 16) escape the wiggle room.
    const std::uint64_t warmup = 2 * 256 * block;
    const auto kv2 = static_cast<std::uint64_t>(std::floor(static_cast<double>(freeAfter - warmup) * 0.90)) + warmup;
    const std::uint64_t kv3 = freeAfter - (kCard - static_cast<std::uint64_t>(std::floor(static_cast<double>(kCard) * 0.90)));
    CHECK(v2.kvBlocks == kv2 / block);
    CHECK(v3.kvBlocks == kv3 / block);
    CHECK(testfixtures::engineFigure(v3, "max_batch_total_tokens") == static_cast<double>(v3.kvBlocks * 16));
    CHECK(v3.kvBlocks < v2.kvBlocks); // 10 % of the total is more than 10 % of what is left
    // The warm-up prefill prices its activations and its prefill_logprobs logits: from 2.4 the
    // log-softmax overwrites them (2 B a vocab entry), up to 2.3 it is a second copy (4 B); with
    // num-shard 2 the lm_head output is gathered whole next to the shard's own half.
    CHECK(item(v2.overheads, "warmup_logits") == 4096ull * 128'256 * 2);
    CHECK(item(plan(request(set, "tgi@2.3.1", {{"max-batch-prefill-tokens", "4096"}})).overheads, "warmup_logits")
          == 4096ull * 128'256 * 4);
    CHECK(item(plan(request(set, "tgi@2.4.1", {{"max-batch-prefill-tokens", "4096"}, {"num-shard", "2"}})).overheads,
               "warmup_logits")
          == 4096ull * (128'256 + 64'128) * 2);
    CHECK(item(plan(request(set, "tgi@2.0.4", {{"max-batch-prefill-tokens", "4096"}, {"num-shard", "2"}})).overheads,
               "warmup_logits")
          == 4096ull * (128'256 + 64'128 + 128'256) * 2);
    // and TGI's layer live set at the MLP: 7 x hidden + 4 x intermediate a token, 2 B each.
    CHECK(item(v2.overheads, "warmup_activations") == 4096ull * (7 * 4096 + 4 * 14'336) * 2);
    // 2.x launcher defaults (launcher/src/main.rs v2.0.4): positions min(131,072, 4,096) = 4,096,
    // max-input-tokens 4,095, the warm-up prefill 4,095 + 50 = 4,145 tokens; a given
    // max-input-tokens moves the prefill with it, and one at or above max-total-tokens is refused.
    const PlanResult d2 = plan(request(set, "tgi@2.4.1"));
    CHECK(setting(d2, "max-input-tokens") == 4095);
    CHECK(setting(d2, "max-batch-prefill-tokens") == 4145);
    CHECK(item(d2.overheads, "warmup_logits") == 4145ull * 128'256 * 2);
    CHECK(setting(plan(request(set, "tgi@2.4.1", {{"max-input-tokens", "1024"}})), "max-batch-prefill-tokens") == 1074);
    PlanRequest bad = request(set, "tgi@2.4.1", {{"max-input-tokens", "9000"}});
    CHECK_FALSE(makePlan(bad).has_value());
    // The attention backend sets the block size.
    CHECK(plan(request(set, "tgi", {{"ATTENTION", "flashinfer"}})).paging.blockTokens == 1);
    CHECK(plan(request(set, "tgi", {{"ATTENTION", "flashdecoding"}})).paging.blockTokens == 256);
}

TEST_CASE("TGI: the launcher's attention backend by version, model and card", "[engines][tgi]")
{
    const ProfileSet set = builtin();
    const auto blockOf = [&](const std::string& engine, const Architecture& arch, const std::string& cardId = "") {
        PlanRequest r = request(set, engine, {}, arch);
        if (!cardId.empty())
            r.card.id = cardId;
        return plan(r).paging.blockTokens;
    };
    const Architecture llama = test::llama31_8b(); // head dim 128
    // launcher/src/main.rs resolve_attention: none up to 2.2 (paged, blocks of 16), flashinfer
    // (BLOCK_SIZE 1, models/globals.py) from 2.3 for a head dim of 64, 128 or 256.
    CHECK(blockOf("tgi@2.2.0", llama) == 16);
    CHECK(blockOf("tgi@2.3.1", llama) == 1);
    CHECK(blockOf("tgi@2.4.1", llama) == 1);
    CHECK(blockOf("tgi@3.3.7", llama) == 1);
    // 2.3 forces flashdecoding (256) on gemma2, falcon and deepseek_v2; 2.4 on falcon and
    // deepseek_v2 only, and below compute capability 8.0 (a T4) the fallback is paged.
    Architecture gemma2 = llama;
    gemma2.family = "gemma2";
    gemma2.headDim = 256;
    CHECK(blockOf("tgi@2.3.1", gemma2) == 256);
    CHECK(blockOf("tgi@2.4.1", gemma2) == 1);
    Architecture falcon = llama;
    falcon.family = "falcon";
    CHECK(blockOf("tgi@2.4.1", falcon) == 256);
    CHECK(blockOf("tgi@2.4.1", falcon, "t4") == 16);
    // A head dim flashinfer does not take (96) falls back the same way.
    Architecture odd = llama;
    odd.headDim = 96;
    CHECK(blockOf("tgi@3.3.7", odd) == 256);
    CHECK(blockOf("tgi@2.3.1", odd) == 256);
    // A given ATTENTION wins.
    CHECK(plan(request(set, "tgi@2.4.1", {{"ATTENTION", "paged"}})).paging.blockTokens == 16);
}

TEST_CASE("TGI 1.x: the launcher's fixed defaults, no wiggle room up to 1.4.0, 0.95 from 1.4.1", "[engines][tgi]")
{
    const ProfileSet set = builtin();
    // launcher/src/main.rs v1.0.0-v1.4.5: max_input_length 1024, max_total_tokens 2048,
    // max_batch_prefill_tokens 4096, whatever the model's positions (131,072 here).
    const PlanResult v14 = plan(request(set, "tgi@1.4.5"));
    CHECK(setting(v14, "max-input-tokens") == 1024);
    CHECK(setting(v14, "max-batch-prefill-tokens") == 4096);
    CHECK(setting(v14, "max-total-tokens") == 2048);
    CHECK(setting(v14, "TGI_WIGGLE_ROOM") == Approx(0.95));
    CHECK(v14.paging.blockTokens == 16);
    CHECK(setting(plan(request(set, "tgi@1.4.0")), "TGI_WIGGLE_ROOM") == Approx(1.0));
    CHECK(setting(plan(request(set, "tgi@1.0.0")), "TGI_WIGGLE_ROOM") == Approx(1.0));
    // The warm-up prefill of 4,096 tokens at max-input-length 1,024 is four requests of 1,024
    // (router/client/src/client.rs warmup); from 1.2 each asks 2,048 - 1,024 new tokens and holds
    // ceil((1,024 + 1,024 - 1) / 16) = 128 blocks (from_pb), 512 in all, outside the 0.95.
    const std::uint64_t spent = v14.weightsBytes.value + totalBytes(v14.overheads).value;
    const std::uint64_t block = 16 * v14.kvBytesPerToken.value;
    const std::uint64_t warmup = 4 * 128 * block;
    const auto kv14 = static_cast<std::uint64_t>(std::floor(static_cast<double>(kCard - spent - warmup) * 0.95)) + warmup;
    CHECK(v14.kvBlocks == kv14 / block);
    // 1.x holds the prefill_logprobs log-softmax as a second copy (to 2.3): 4 B a vocab entry.
    CHECK(item(v14.overheads, "warmup_logits") == 4096ull * 128'256 * 4);
    // Up to 1.4.0 no wiggle room: every free byte is KV (the warm-up blocks are in it).
    const PlanResult v10 = plan(request(set, "tgi@1.0.0"));
    const std::uint64_t spent10 = v10.weightsBytes.value + totalBytes(v10.overheads).value;
    CHECK(v10.kvBlocks == (kCard - spent10) / block);
}

TEST_CASE("TGI 3.x: the launcher computes max-batch-prefill-tokens from the card and the model", "[engines][tgi]")
{
    const ProfileSet set = builtin();
    const auto onCard = [&](const std::string& engine, const char* cardName, std::uint64_t totalBytes,
                            std::vector<EngineSetting> settings = {}) {
        PlanRequest r = request(set, engine, std::move(settings));
        r.card.name = cardName;
        r.card.totalBytes = Bytes{totalBytes};
        return setting(plan(r), "max-batch-prefill-tokens");
    };
    // launcher/src/main.rs v3.0.0 Config::flop for Llama-3.1-8B, per token: 32 layers x
    // (2 x 4,096 x 128 x (3 x 32 + 2 x 8) + 2 x 3 x 4,096 x 14,336) = 15,032,385,536 FLOP;
    // compute_optimal = card f16 FLOP/s / that: H100 900e12 -> 59,870; A100 312e12 -> 20,755;
    // L4 121e12 -> 8,049 (below the 131,072 positions and the vram_maximum of each card).
    CHECK(onCard("tgi@3.3.7", "NVIDIA H100 80GB HBM3", 85'019'590'656ull) == 59870);
    CHECK(onCard("tgi@3.0.2", "NVIDIA A100-SXM4-80GB", 85'092'990'976ull) == 20755);
    CHECK(onCard("tgi@3.3.7", "NVIDIA L4", 23'649'583'104ull) == 8049);
    // Two shards double the card's FLOP/s: 2 x 900e12 / 15,032,385,536 = 119,741.
    CHECK(onCard("tgi@3.3.7", "NVIDIA H100 80GB HBM3", 85'019'590'656ull, {{"num-shard", "2"}}) == 119741);
    // The H200 entered the table in 3.1: 989e12 -> 65,791; 3.0 does not know it and keeps 4,096.
    CHECK(onCard("tgi@3.1.0", "NVIDIA H200", 150'109'880'320ull) == 65791);
    CHECK(onCard("tgi@3.0.2", "NVIDIA H200", 150'109'880'320ull) == 4096);
    // The table's "nvidia-4090" never matches nvidia-smi's "NVIDIA GeForce RTX 4090": 4,096.
    CHECK(onCard("tgi@3.3.7", "NVIDIA GeForce RTX 4090", kCard) == 4096);
    // vram_maximum caps it: 16 GiB x 0.95 (f32: 16,320,875,520 B) - model_vram 14,449,770,496 B
    // (2 B x (32 x 192,944,128 + 2 x 4,096 x 128,256)) leaves 1,871,105,024 B, over 260,096 B a
    // token (KV 131,072 + MLP (14,336 + 7,168) x 2 x 3) = 7,193 tokens < 8,049.
    CHECK(onCard("tgi@3.3.7", "NVIDIA L4", 16ull << 30) == 7193);
    // A given value and --ubatch win; 2.x keeps max-input-tokens + 50.
    CHECK(onCard("tgi@3.3.7", "NVIDIA H100 80GB HBM3", 85'019'590'656ull, {{"max-batch-prefill-tokens", "2048"}}) == 2048);
    CHECK(onCard("tgi@2.4.1", "NVIDIA H100 80GB HBM3", 85'019'590'656ull) == 4145);
}

TEST_CASE("TensorRT-LLM: the build limits size the engine, the KV cache takes a share of what is left", "[engines][tensorrt-llm]")
{
    const ProfileSet set = builtin();
    // Up to 0.10 max_num_tokens defaults to max_batch_size x max_input_len; from 0.11 to 8192.
    const PlanResult old = plan(request(set, "tensorrt-llm@0.5.0", {{"max_batch_size", "25"}, {"max_input_len", "2048"}}));
    CHECK(setting(old, "max_num_tokens") == 51200);
    const PlanResult v13 = plan(request(set, "tensorrt-llm@0.13.0", {{"max_batch_size", "25"}, {"max_input_len", "2048"}}));
    CHECK(setting(v13, "max_num_tokens") == 8192);
    CHECK(v13.paging.blockTokens == 64);
    CHECK(plan(request(set, "tensorrt-llm")).paging.blockTokens == 32);
    // KV = free_gpu_memory_fraction x (total - context - weights - activations - logits).
    const std::uint64_t spent = v13.weightsBytes.value + totalBytes(v13.overheads).value;
    const auto kv = static_cast<std::uint64_t>(std::floor(static_cast<double>(kCard - spent) * 0.9));
    const std::uint64_t perToken = v13.kvBytesPerToken.value;
    CHECK(v13.kvBlocks == kv / (perToken * 64));
    CHECK(testfixtures::engineFigure(v13, "max_kv_tokens") == static_cast<double>(v13.kvBlocks * 64)); // 0.9 on: block-rounded
    CHECK(testfixtures::engineFigure(old, "max_kv_tokens") > testfixtures::engineFigure(old, "kv_blocks") * 64 - 64);       // 0.8 and before: unrounded
    CHECK(item(v13.overheads, "logits_buffer") == 25ull * 128'256 * 4);
    // max_tokens caps the cache.
    CHECK(testfixtures::engineFigure(plan(request(set, "tensorrt-llm", {{"max_tokens", "4096"}})), "max_kv_tokens") == 4096);
    // A tied output layer is stored twice.
    Architecture tied = test::llama31_8b();
    tied.tiedEmbeddings = true;
    CHECK(item(plan(request(set, "tensorrt-llm", {}, tied)).overheads, "tied_output_copy") == 128'256ull * 4096 * 2);
}

TEST_CASE("SGLang, TGI and TensorRT-LLM refuse GGML weights and llama.cpp KV types", "[engines][compatibility]")
{
    const ProfileSet set = builtin();
    for (const char* engine : {"sglang", "tgi", "tensorrt-llm"}) {
        INFO(engine);
        PlanRequest ggml = request(set, engine);
        ggml.format = *findFormat("q4_k");
        const PlanResult p = plan(ggml);
        CHECK(refuses(p, FitLimit::EngineFormat));
        CHECK_FALSE(p.fits);
        PlanRequest q8 = request(set, engine);
        q8.kvDtype = *findKvDtype("q8_0");
        CHECK(refuses(plan(q8), FitLimit::EngineKvDtype));
        CHECK(plan(request(set, engine)).refusals.empty());
    }
}

TEST_CASE("llama.cpp and Ollama run GGML types and floats only: int4-g128, awq, nf4 and fp8 are refused", "[engines][compatibility]")
{
    const ProfileSet set = builtin();
    for (const char* engine : {"llama.cpp", "ollama"}) {
        for (const char* format : {"int4-g128", "awq-g128", "nf4-b64", "fp8"}) {
            INFO(engine << " " << format);
            PlanRequest r = request(set, engine);
            r.format = *findFormat(format);
            const PlanResult p = plan(r);
            CHECK(refuses(p, FitLimit::EngineFormat));
            CHECK_FALSE(p.fits);
            CHECK(p.verdict.limit == FitLimit::EngineFormat);
        }
        for (const char* format : {"q4_k", "q8_0", "bf16", "fp16"}) {
            INFO(engine << " " << format);
            PlanRequest r = request(set, engine);
            r.format = *findFormat(format);
            CHECK_FALSE(refuses(plan(r), FitLimit::EngineFormat));
        }
    }
}

TEST_CASE("TensorRT-LLM 0.x: the decoder's buffers are sized by the build limits", "[engines][tensorrt-llm]")
{
    const ProfileSet set = builtin();
    // 0.8: output ids, parent ids and log probs of [8, 1, 1024 + 1024]; the per-slot decoders
    // allocate their layers' buffers on the first step (engines/tensorrtllmdecoder.h).
    const PlanResult greedy = plan(request(set, "tensorrt-llm@0.8.0",
                                           {{"max_batch_size", "8"}, {"max_input_len", "1024"}, {"max_output_len", "1024"}}));
    CHECK(item(greedy.overheads, "decoder_output_ids") == 8ull * 2048 * 4);
    CHECK(item(greedy.overheads, "decoder_parent_ids") == 8ull * 2048 * 4);
    CHECK(item(greedy.overheads, "decoder_log_probs") == 8ull * 2048 * 4);
    CHECK(item(greedy.overheads, "penalty_workspace") == 0);
    // 0.19 with beam search: the gathered ids, the vocabulary-sized buffers of 8 x 4 rows.
    const PlanResult beams = plan(request(set, "tensorrt-llm@0.19.0",
                                          {{"max_batch_size", "8"}, {"max_seq_len", "4096"}, {"max_beam_width", "4"}}));
    CHECK(item(beams.overheads, "decoder_gathered_ids") == 8ull * 4 * 4096 * 4);
    CHECK(item(beams.overheads, "penalty_workspace") == 8ull * 4 * 128'256 * 4 * 2);
    CHECK(item(beams.overheads, "embedding_bias") == 8ull * 128'256 * 4);
    CHECK(item(beams.overheads, "decoder_logits_copy") == 8ull * 4 * 128'256 * 4);
    CHECK(item(beams.overheads, "draft_logits") == 0);
    // The PyTorch backend (1.x) samples on the fly.
    const PlanResult torch = plan(request(set, "tensorrt-llm", {{"max_batch_size", "8"}}));
    for (const char* name : {"decoder_output_ids", "embedding_bias", "penalty_workspace", "decoder_logits_copy"}) {
        INFO(name);
        CHECK(item(torch.overheads, name) == 0);
    }
}
