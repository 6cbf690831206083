// vLLM's profile-run terms (engines/vllmmemory.h) against the figures vLLM printed: the torch
// peak increase and non-torch increase of the llm-d-planner v0.19.0 H100 sweep (DEBUG line
// "Memory profiling takes ... torch peak memory increase: X GiB; non-torch forward increase
// memory: Y GiB", logs at commit d3121e0 of llm-d-incubation/llm-d-planner, results_raw.csv)
// and the V0 peak_torch_memory of vLLM 0.6.4 (issue 10517).

#include "fixtures.h"
#include "tst_reportutil.h"

#include "headroom/core/engines/vllmmemory.h"
#include "headroom/core/importers/hfconfig.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/profiles.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace headroom;
using namespace headroom::vllm;

namespace {

Architecture model(const char* id)
{
    auto set = loadProfiles(test::sourcePath("profiles"));
    REQUIRE(set);
    const ModelProfile* m = set->findModel(id);
    REQUIRE(m);
    REQUIRE(m->architecture);
    return *m->architecture;
}

double gibOf(Bytes b)
{
    return static_cast<double>(b.value) / static_cast<double>(kGiB);
}

ProfileShape h100Shape(std::uint32_t tp = 1, std::uint32_t pp = 1, std::uint32_t act = 2)
{
    ProfileShape s;
    s.batchedTokens = 8192; // "Chunked prefill is enabled with max_num_batched_tokens=8192."
    s.samplerRows = 1024;   // min(max_num_seqs 1024, 8192)
    s.tensorParallel = tp;
    s.pipelineParallel = pp;
    s.activationBytes = act;
    return s;
}

} // namespace

TEST_CASE("vLLM batch defaults follow get_batch_defaults of the version and the device", "[vllm]")
{
    const Bytes h100{85'029'615'043ull}; // total_memory=79.19GiB
    BatchDefaults d = batchDefaults("0.19.0", h100, "NVIDIA H100 80GB HBM3", 8192, std::nullopt);
    CHECK(d.chunkedPrefill);
    CHECK(d.maxNumBatchedTokens == 8192);
    CHECK(d.maxNumSeqs == 1024);
    d = batchDefaults("0.19.0", h100, "NVIDIA A100-SXM4-80GB", 8192, std::nullopt); // PR 17885's exception
    CHECK(d.maxNumBatchedTokens == 2048);
    CHECK(d.maxNumSeqs == 256);
    d = batchDefaults("", Bytes{24 * kGiB}, "NVIDIA GeForce RTX 4090", 8192, std::nullopt);
    CHECK(d.maxNumBatchedTokens == 2048);
    CHECK(d.maxNumSeqs == 256);
    d = batchDefaults("0.19.0", h100, "H100", 8192, false); // no chunked prefill: the whole context at once
    CHECK(d.maxNumBatchedTokens == 8192);
    d = batchDefaults("0.19.0", h100, "H100", 1024, false);
    CHECK(d.maxNumBatchedTokens == 2048);
    // V0: chunked prefill only past 32K tokens.
    d = batchDefaults("0.6.4", Bytes{25'318'832'210ull}, "NVIDIA GeForce RTX 3090", 20000, std::nullopt);
    CHECK_FALSE(d.chunkedPrefill);
    CHECK(d.maxNumBatchedTokens == 20000);
    CHECK(d.maxNumSeqs == 256);
    d = batchDefaults("0.6.4", Bytes{25'318'832'210ull}, "NVIDIA GeForce RTX 3090", 40000, std::nullopt);
    CHECK(d.chunkedPrefill);
    CHECK(d.maxNumBatchedTokens == 512);
}

TEST_CASE("vLLM versions pick their profiler rule", "[vllm]")
{
    CHECK(profilerRule("0.19.0") == ProfilerRule::SnapshotDelta);
    CHECK(profilerRule("") == ProfilerRule::SnapshotDelta);
    CHECK(profilerRule("0.9.2") == ProfilerRule::SnapshotDelta);
    CHECK(profilerRule("0.8.5") == ProfilerRule::TotalPeak);
    CHECK(profilerRule("0.6.4") == ProfilerRule::TotalPeak);
    CHECK(isV0("0.7.1"));
    CHECK_FALSE(isV0("0.8.0"));
}

TEST_CASE("VLLM_USE_V1=1 takes the V1 engine of the 0.7 line: its batch defaults and a profile run without the sampler", "[vllm]")
{
    // envs.py: opt-in before v0.8 (the V1 alpha came with v0.7.0), the default from v0.8.0.
    CHECK_FALSE(runsV1("0.7.1", std::nullopt));
    CHECK(runsV1("0.7.1", true));
    CHECK_FALSE(runsV1("0.7.1", false));
    CHECK_FALSE(runsV1("0.6.5", true)); // before the V1 alpha: V0
    CHECK(runsV1("0.8.0", std::nullopt));
    CHECK(runsV1("0.19.0", false)); // V0 of 0.8-0.10 is not modelled
    CHECK_FALSE(v1ProfileSamples("0.7.3"));
    CHECK(v1ProfileSamples("0.8.0"));

    // arg_utils.py _override_v1_engine_args (v0.7.1), vllm serve: 2048 tokens, 1024 sequences.
    const Bytes h100{85'029'615'043ull};
    BatchDefaults d = batchDefaults("0.7.1", h100, "NVIDIA H100 80GB HBM3", 2048, std::nullopt, true);
    CHECK(d.chunkedPrefill);
    CHECK(d.maxNumBatchedTokens == 2048);
    CHECK(d.maxNumSeqs == 1024);
    d = batchDefaults("0.7.1", h100, "NVIDIA H100 80GB HBM3", 2048, std::nullopt); // V0: no chunking under 32K
    CHECK_FALSE(d.chunkedPrefill);
    CHECK(d.maxNumSeqs == 256);

    // v1/worker/gpu_model_runner.py profile_run (v0.7.1): Llama-3.1-70B, 2,048 tokens: the forward
    // pass (2,048 x (3 x 8,192 + 3 x 28,672) x 2 B = 0.42 GiB), then the bf16 logits of all 2,048
    // rows beside their hidden states: 2,048 x (8,192 + 128,256) x 2 B = 533 MiB, the peak.
    const Architecture llama70 = model("llama-3.1-70b");
    ProfileShape s;
    s.batchedTokens = 2048;
    s.samplerRows = 1024;
    s.samplerRun = false;
    const ProfilePeak p = profilePeak(llama70, s);
    CHECK(p.forwardBytes.value == 2048ull * (3 * 8192 + 3 * 28672) * 2);
    CHECK(p.samplerBytes.value == 2048ull * (8192 + 128'256) * 2);
    CHECK(p.peakBytes() == p.samplerBytes);
    // With the sampler (V0's 256 rows at 38 B an entry) the same run peaks at 1.20 GiB instead.
    s.samplerRun = true;
    s.samplerRows = 256;
    s.samplerExtraBytes = 36;
    CHECK(gibOf(profilePeak(llama70, s).peakBytes()) == Approx(1.20).margin(0.005));
}

TEST_CASE("vLLM 0.19's profile-run torch peak matches the printed increase", "[vllm]")
{
    // Printed torch peak memory increase (GiB), 0.01 GiB digits; tolerance 0.08 GiB (< 0.15 % of
    // the KV pools of these runs; gemma-2-9b, the largest vocab, comes out 0.07 GiB above).
    struct Row {
        const char* model;
        ProfileShape shape;
        double printedGib;
    };
    const Row rows[] = {
        {"llama-3.1-8b", h100Shape(), 1.89},
        {"llama-3.1-8b", h100Shape(2), 1.89},       // TP 2: the logits are gathered to the full vocab
        {"llama-3.1-8b", h100Shape(4), 1.89},
        {"llama-3.1-8b", h100Shape(1, 1, 4), 2.21}, // fp32 model
        {"llama-3.1-8b", h100Shape(1, 2), 2.01},    // the last PP stage (Worker_PP1)
        {"qwen2.5-7b", h100Shape(), 2.21},
        {"gemma-2-9b", h100Shape(), 3.65},
        // MoE: the fused-MoE workspace (0.50 GiB for Qwen3-30B-A3B, 0.16 GiB for Scout at TP 4)
        // stays allocated through the sampler run and adds to its peak.
        {"qwen3-30b-a3b", h100Shape(), 2.68},
        {"llama-4-scout", h100Shape(4), 3.19},
    };
    for (const Row& row : rows) {
        const ProfilePeak p = profilePeak(model(row.model), row.shape);
        INFO(row.model << " tp " << row.shape.tensorParallel << " pp " << row.shape.pipelineParallel << " act "
                       << row.shape.activationBytes << ": forward " << gibOf(p.forwardBytes) << " GiB, sampler "
                       << gibOf(p.samplerBytes) << " GiB");
        CHECK(gibOf(p.peakBytes()) == Approx(row.printedGib).margin(0.08));
        CHECK(p.samplerBytes.value >= p.forwardBytes.value); // the sampler binds for these vocabularies
    }
    // The first PP stage has no sampler: its peak is the forward pass (printed 1.10 GiB for
    // Worker_PP0; the compiled graph keeps more than the 3H + 3I of eager PyTorch, 0.84 GiB).
    const ProfilePeak first = profilePeak(model("llama-3.1-8b"), h100Shape());
    CHECK(gibOf(first.forwardBytes) == Approx(0.84).margin(0.01));
}

TEST_CASE("vLLM's fused-MoE workspace: TritonExperts workspace_shapes of the chunked batch", "[vllm]")
{
    // Qwen3-30B-A3B: M 8192, top-8, N = 2 x 768, K = 2048: workspace13 8192 x 8 x 2048 and
    // workspace2 8192 x 8 x 2048 elements of 2 B = 2 x 256 MiB.
    const Architecture qwen = model("qwen3-30b-a3b");
    CHECK(fusedMoeWorkspaceBytes(qwen, 8192, 1, 2).value == 2ull * 8192 * 8 * 2048 * 2);
    // Chunked at VLLM_FUSED_MOE_CHUNK_SIZE (16,384 tokens): a larger batch takes no more.
    CHECK(fusedMoeWorkspaceBytes(qwen, 65536, 1, 2) == fusedMoeWorkspaceBytes(qwen, 16384, 1, 2));
    // Mixtral at TP 2: N = 2 x 14336 / 2 = 14336, K = 4096, top-2: (7168 + 14336) x 8192 x 2 x 2 B.
    const Architecture mixtral = model("mixtral-8x7b");
    CHECK(fusedMoeWorkspaceBytes(mixtral, 8192, 2, 2).value == (7168ull + 14336) * 8192 * 2 * 2);
    CHECK(fusedMoeWorkspaceBytes(model("llama-3.1-8b"), 8192, 1, 2).value == 0);
    // Persistent from v0.13 (the workspace manager); before, the caches count in the forward pass.
    CHECK(persistentMoeWorkspace("0.19.0"));
    CHECK_FALSE(persistentMoeWorkspace("0.9.2"));
    ProfileShape old = h100Shape();
    old.persistentMoeWorkspace = false;
    const ProfilePeak transient = profilePeak(qwen, old);
    CHECK(transient.moeWorkspaceBytes.value == 0);
    CHECK(profilePeak(qwen, h100Shape()).moeWorkspaceBytes.value == 2ull * 8192 * 8 * 2048 * 2);
}

TEST_CASE("vLLM's hybrid KV cache groups and the blocks a request takes in each", "[vllm]")
{
    // Gemma 3 4B: 5 full + 29 sliding layers -> groups of 5: 1 full, 6 sliding (one padding layer).
    auto g = hybridKvGroups(5, 29);
    REQUIRE(g);
    CHECK(g->groupSize == 5);
    CHECK(g->fullGroups == 1);
    CHECK(g->localGroups == 6);
    // Gemma 3 27B: 10 + 52 -> 1 + 6 groups of 10 (8 padding layers).
    g = hybridKvGroups(10, 52);
    REQUIRE(g);
    CHECK(g->groupSize == 10);
    CHECK(g->groups() == 7);
    // gpt-oss-20b + eagle's 13 full + 12 sliding: under 1.5x, one group of 13 each.
    g = hybridKvGroups(13, 12);
    REQUIRE(g);
    CHECK(g->groupSize == 13);
    CHECK(g->groups() == 2);
    CHECK_FALSE(hybridKvGroups(32, 0));
    // A request of 8,192 tokens with max_num_batched_tokens 8,192: a full group 512 blocks, a
    // sliding group of window 1,024 min(1,023 + 8,192, 8,192) / 16 + 1 = 513, a chunked one 512.
    CHECK(requestBlocksPerGroup(8192, 16, 0, 8192, false) == 512);
    CHECK(requestBlocksPerGroup(8192, 16, 1024, 8192, false) == 513);
    CHECK(requestBlocksPerGroup(8192, 16, 8192, 8192, true) == 512);
    CHECK(requestBlocksPerGroup(32768, 16, 4096, 2048, false) == (4095 + 2048 + 15) / 16 + 1);
    // vLLM 0.19 printed 57.05x for Gemma 3 4B: 204,816 pages / (512 + 6 x 513).
    CHECK(204816.0 / (512 + 6 * 513) == Approx(57.05).margin(0.005));
    CHECK(hybridKvCacheManager("0.19.0"));
    CHECK_FALSE(hybridKvCacheManager("0.9.2"));
}

TEST_CASE("vLLM V0's profile peak is the forward pass of max_model_len tokens", "[vllm]")
{
    // vLLM 0.6.4, RTX 3090: peak_torch_memory 17.06 / 17.98 GiB with 14.9888 GiB of weights
    // (which include the 32 MiB rotary cache).
    const Architecture llama = model("llama-3.1-8b");
    const double weightsGib = 14.9888;
    for (const auto& [tokens, peakGib] : {std::pair{20000ull, 17.06}, std::pair{29000ull, 17.98}}) {
        ProfileShape s;
        s.batchedTokens = tokens;
        s.samplerRows = 256;
        const ProfilePeak p = profilePeak(llama, s);
        CHECK(p.forwardBytes.value > p.samplerBytes.value);
        CHECK(gibOf(p.peakBytes()) == Approx(peakGib - weightsGib).margin(0.03));
    }
    CHECK(rotaryCacheBytes(llama, 2).value == 131'072ull * 128 * 2);
}

TEST_CASE("vLLM's rotary caches follow rope_scaling, and Gemma 3 keeps two", "[vllm]")
{
    // Gemma 3 4B: the local table 131,072 x 256 and the global linear-x8 table 1,048,576 x 256, bf16.
    const Architecture gemma = model("gemma-3-4b");
    REQUIRE(gemma.ropeScaling.type == "linear");
    CHECK(rotaryCacheBytes(gemma, 2).value == (131'072ull + 1'048'576ull) * 256 * 2);
    // The printed model loading of vLLM 0.19 (8.58 GiB) is the weights plus both tables.
    // YaRN: original_max_position_embeddings x factor rows (DeepSeek-V2: 4,096 x 40 = 163,840).
    Architecture yarn = model("llama-3.1-8b");
    yarn.ropeScaling = RopeScaling{"yarn", 4.0, 32768};
    CHECK(rotaryCacheBytes(yarn, 2).value == 131'072ull * 128 * 2);
    // llama3 scaling keeps max_position_embeddings rows.
    yarn.ropeScaling = RopeScaling{"llama3", 8.0, 8192};
    CHECK(rotaryCacheBytes(yarn, 2).value == 131'072ull * 128 * 2);
    yarn.ropeScaling = RopeScaling{"dynamic", 2.0, 0};
    CHECK(rotaryCacheBytes(yarn, 2).value == 262'144ull * 128 * 2);
}

TEST_CASE("Kimi-Dev-72B's 131,072-row rotary cache is what its TP2 load prints above Qwen2.5-72B-Instruct's", "[vllm]")
{
    // The same Qwen2 shapes, max_position_embeddings 32,768 (Qwen2.5-72B-Instruct config.json)
    // against 131,072 (Kimi-Dev-72B: qwen2.context_length of its GGUF, ollama/ollama#11104). The
    // llm-d-planner v0.19.0 TP2 logs print "Model loading took 67.8 GiB" and "67.82 GiB"; the
    // cache is replicated on every rank, so the difference is the whole 24 MiB at any TP.
    Architecture qwen = model("llama-3.1-8b");
    qwen.headDim = 128;
    qwen.ropeScaling = RopeScaling{};
    qwen.contextLength = 32'768;
    Architecture kimi = qwen;
    kimi.contextLength = 131'072;
    const Bytes extra{rotaryCacheBytes(kimi, 2).value - rotaryCacheBytes(qwen, 2).value};
    CHECK(extra.value == (131'072ull - 32'768ull) * 128 * 2);
    // 67.82 - 67.80 GiB, each printed to 0.01 GiB: 0.01 to 0.03 GiB.
    CHECK(gibOf(extra) == Approx(0.02).margin(0.01));
}

TEST_CASE("vLLM non-torch memory per rank by version and parallelism", "[vllm]")
{
    const Bytes single{268'435'456};
    CHECK(nonTorchBytes("0.19.0", 1, 1, single) == single);
    CHECK(gibOf(nonTorchBytes("0.19.0", 2, 1, single)) == Approx(2.1).margin(0.005));
    CHECK(gibOf(nonTorchBytes("0.19.0", 4, 1, single)) == Approx(2.1).margin(0.005));
    CHECK(gibOf(nonTorchBytes("0.19.0", 1, 2, single)) == Approx(0.07).margin(0.005));
    CHECK(gibOf(nonTorchBytes("0.11.0", 2, 1, single)) == Approx(0.55).margin(0.005));
    CHECK(nonTorchBytes("0.11.0", 1, 2, single) == single);
    CHECK(nonTorchBytes("0.8.5", 4, 1, single) == single); // TotalPeak: the profile's figure
}

TEST_CASE("vLLM's sampler copies by version: the native sort path before v0.17", "[vllm]")
{
    CHECK(samplerExtraBytesPerEntry("0.19.0") == 13);
    CHECK(samplerExtraBytesPerEntry("0.17.0") == 13);
    CHECK(samplerExtraBytesPerEntry("0.16.0") == 36);
    CHECK(samplerExtraBytesPerEntry("0.6.5") == 36);
    // Printed torch peak increase on one H100, 8,192 tokens / 1,024 rows: Qwen3-14B 5.64 GiB
    // (v0.15, v0.16) and 2.23 GiB (v0.17, v0.18), llm-d-planner version sweep; Llama-3.1-8B
    // 4.76 GiB (v0.11, docs/empirical-vllm-memory-results.md of the same repository).
    ProfileShape s = h100Shape();
    s.samplerExtraBytes = 36;
    CHECK(gibOf(profilePeak(model("qwen3-14b"), s).peakBytes()) == Approx(5.64).margin(0.08));
    CHECK(gibOf(profilePeak(model("llama-3.1-8b"), s).peakBytes()) == Approx(4.76).margin(0.08));
    s.samplerExtraBytes = 13;
    CHECK(gibOf(profilePeak(model("qwen3-14b"), s).peakBytes()) == Approx(2.23).margin(0.08));
}

TEST_CASE("vLLM 0.11 and 0.15-0.18: the KV memory of public runs, from the card and the settings", "[vllm]")
{
    // Printed figures without a start-up log to put in the engine-log corpus (whose cases are
    // parsed as logs): the rows of docs/empirical-vllm-memory-results.md (llm-d-planner commit
    // e50305a; v0.11.0, --block-size 128 --enable-prefix-caching --gpu-memory-utilization 0.9
    // --max-model-len 16000, H100 79.18 GiB) and the runs of its vLLM version sweep
    // (accuracy/results/version-sweep/runs/qwen3-14b-vllm-v0-1X-0--h100-80gb--tp1pp1dp1--8192.json
    // at commit 3c876c8: Qwen3-14B, utilization 0.95, max_model_len 8192, total 79.19 GiB).
    // Available KV cache memory within 2 %, as the corpus asks.
    struct Run {
        const char* engine;
        const char* model;
        const char* weights;
        std::uint32_t tp;
        double utilization;
        std::uint64_t context;
        std::uint64_t block;
        double printedKvGib;
    };
    const Run runs[] = {
        {"vllm@0.11.0", "llama-3.1-8b", "bf16", 1, 0.9, 16000, 128, 51.38},
        {"vllm@0.11.0", "llama-3.3-70b", "fp8", 2, 0.9, 16000, 128, 32.00},
        {"vllm@0.11.0", "qwen3-0.6b", "bf16", 1, 0.9, 16000, 128, 64.45},
        {"vllm@0.11.0", "qwen3-32b", "bf16", 1, 0.9, 16000, 128, 4.45},
        {"vllm@0.11.0", "qwen3-32b", "bf16", 2, 0.9, 16000, 128, 34.49},
        {"vllm@0.15.0", "qwen3-14b", "bf16", 1, 0.95, 8192, 16, 41.94},
        {"vllm@0.16.0", "qwen3-14b", "bf16", 1, 0.95, 8192, 16, 41.94},
        {"vllm@0.17.0", "qwen3-14b", "bf16", 1, 0.95, 8192, 16, 45.34},
        {"vllm@0.18.0", "qwen3-14b", "bf16", 1, 0.95, 8192, 16, 45.23},
    };
    for (const Run& run : runs) {
        PlanRequest r = test::profileRequest(run.model, run.weights, "h100-sxm", run.engine, 1, run.context, "bf16");
        if (run.utilization == 0.95)
            r.card = anonymousCard("79.19GiB", Bytes{85'029'615'043ull}); // total_memory=79.19GiB of the same cluster
        r.engine.memoryFraction = run.utilization;
        r.tensorParallel = run.tp;
        r.engineSettings.push_back({"block-size", std::to_string(run.block)});
        const PlanResult p = test::planOf(r);
        const double kv = gibOf(p.kvBudgetBytes);
        INFO(run.engine << " " << run.model << " tp " << run.tp << ": predicted " << kv << " GiB, printed " << run.printedKvGib);
        CHECK(std::fabs(kv - run.printedKvGib) / run.printedKvGib <= 0.02);
    }
}

TEST_CASE("vLLM --kv-cache-memory-bytes bypasses the profile; --enforce-eager drops the graph term", "[vllm]")
{
    PlanRequest r = test::profileRequest("llama-3.1-8b", "bf16", "h100-sxm", "vllm", 1, 8192, "bf16");
    r.engineSettings.push_back({"kv-cache-memory-bytes", "10GiB"});
    PlanResult p = test::planOf(r);
    CHECK(p.kvBudgetBytes.value == 10 * kGiB);
    CHECK(p.kvBlocks == 10 * kGiB / (16 * 131'072)); // 5,120 blocks of 16 x 128 KiB

    r = test::profileRequest("llama-3.1-8b", "bf16", "h100-sxm", "vllm", 1, 8192, "bf16");
    r.measured.cudaGraphBytes = Bytes{kGiB};
    const Bytes withGraphs = test::planOf(r).kvBudgetBytes;
    r.engineSettings.push_back({"enforce-eager", "true"});
    const Bytes eager = test::planOf(r).kvBudgetBytes;
    CHECK(eager.value - withGraphs.value == kGiB);
}

TEST_CASE("vLLM's hybrid attention + Mamba pool: the attention block holds one layer's state", "[vllm][hybrid]")
{
    // nvidia/NVIDIA-Nemotron-Nano-9B-v2's shapes (56 layers and hidden 4480 as NVIDIA's
    // Megatron-Bridge documentation lists them; the other keys as a public test fixture quotes the
    // published config.json, second-hand): 4 attention layers of 8 KV heads x 128, 27 Mamba-2
    // layers of 128 heads x 80, state 128, 8 groups, conv kernel 4.
    auto cfg = parseHfConfig(R"({"model_type": "nemotron_h", "num_hidden_layers": 56, "hidden_size": 4480,
        "intermediate_size": 15680, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 131072, "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
        "ssm_state_size": 128, "conv_kernel": 4, "n_groups": 8, "mamba_num_heads": 128, "mamba_head_dim": 80,
        "expand": 2})",
                             "config.json");
    REQUIRE(cfg.has_value());
    const KvLayout kv = kvLayout(cfg->architecture, *findKvDtype("bf16"));
    REQUIRE(kv.fullLayers == 4);
    REQUIRE(kv.recurrentLayers == 27);
    const std::uint64_t attention = kv.fullBytesPerToken.value / kv.fullLayers; // 2 x 8 x 128 x 2 B
    const std::uint64_t state = kv.stateBytesPerSequence.value / kv.recurrentLayers;
    CHECK(attention == 4096);
    CHECK(state == (3ull * (10240 + 2 * 8 * 128) + 128ull * 80 * 128) * 2); // 2,695,168 B
    // vllm#24280 (a vLLM maintainer, 2025-09-04): "672 tokens for nvidia/NVIDIA-Nemotron-Nano-9B-v2".
    CHECK(hybridMambaBlockTokens(attention, state, 16) == 672);
    CHECK(hybridMambaBlockTokens(attention, state, 1024) == 1024); // --block-size at least that is kept
    CHECK(hybridMambaBlockTokens(0, state, 16) == 16);
    // Groups of 4 layers: 1 attention, 7 Mamba (one padding layer).
    const auto g = hybridKvGroups(kv.fullLayers, kv.recurrentLayers);
    REQUIRE(g);
    CHECK(g->groupSize == 4);
    CHECK(g->fullGroups == 1);
    CHECK(g->localGroups == 7);
}

TEST_CASE("a vLLM plan of a Mamba hybrid pages the state with the attention", "[vllm][hybrid]")
{
    // nemotron-h-8b: 4 attention layers of 8 KV heads x 128 (4,096 B a token a layer), 24 Mamba-2
    // layers of (3 x (8,192 + 2 x 8 x 128) + 128 x 64 x 128) x 2 B = 2,158,592 B: a block of
    // 16 x ceil(2,158,592 / 65,536) = 528 tokens, 4 + 24 layers in 1 + 6 groups of 4.
    PlanRequest r = test::profileRequest("nemotron-h-8b", "bf16", "h100-sxm", "vllm", 1, 8192, "bf16");
    const PlanResult p = test::planOf(r);
    CHECK(p.paging.blockTokens == 528);
    bool shown = false; // the settings line carries the block vLLM sets
    for (const SettingValue& v : p.engineSettings)
        shown = shown || (v.key == "block-size" && v.integer == 528);
    CHECK(shown);
    const auto figure = [&](const char* name) {
        for (const EngineFigure& f : p.engineFigures)
            if (f.name == name)
                return f.value;
        FAIL(name);
        return 0.0;
    };
    const double pages = figure("num_gpu_blocks");
    CHECK(pages == std::floor(static_cast<double>(p.kvBudgetBytes.value) / (528.0 * 4096) / 4));
    CHECK(figure("gpu_kv_cache_tokens") == std::floor(pages / 7) * 528);
    // One request of 8,192 tokens: ceil(8,192 / 528) = 16 attention pages and one page per Mamba group.
    CHECK(figure("maximum_concurrency") == Approx(pages / (16 + 6)));
    // The state is priced: the same budget without it (every block one attention page) holds more.
    CHECK(figure("gpu_kv_cache_tokens") < static_cast<double>(p.kvBudgetBytes.value) / 16384.0);
}

TEST_CASE("vLLM's environment: the CUDA-graph estimate from v0.21, the sampler path when chosen", "[vllm]")
{
    // VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: off by default in v0.19 (no graph term), on from
    // v0.21.0 (the vllm-0.21 profile's 0.84 GiB estimate); each way round when set.
    const auto budget = [](const char* engine, std::vector<std::pair<std::string, std::string>> settings) {
        PlanRequest r = test::profileRequest("llama-3.1-8b", "bf16", "h100-sxm", engine, 1, 8192, "bf16");
        for (auto& s : settings)
            r.engineSettings.push_back({s.first, s.second});
        return test::planOf(r).kvBudgetBytes.value;
    };
    const std::uint64_t estimate = 901943132; // 0.84 GiB
    CHECK(budget("vllm@0.19.0", {}) - budget("vllm@0.19.0", {{"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1"}}) == estimate);
    CHECK(budget("vllm@0.24.0", {{"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "0"}}) - budget("vllm@0.24.0", {}) == estimate);
    CHECK(budget("vllm@0.24.0", {{"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "0"}}) == budget("vllm@0.19.0", {}));
    CHECK(budget("vllm@0.24.0", {{"enforce-eager", "true"}}) == budget("vllm@0.19.0", {}));

    // VLLM_USE_FLASHINFER_SAMPLER: the version's default (FlashInfer from v0.17), else as set.
    CHECK_FALSE(flashInferSampler("0.10.1", std::nullopt));
    CHECK(flashInferSampler("0.10.1", true));
    CHECK(flashInferSampler("0.19.0", std::nullopt));
    CHECK_FALSE(flashInferSampler("0.19.0", false));
    CHECK(samplerExtraBytesForPath(true) == 13);
    CHECK(samplerExtraBytesForPath(false) == 36);
    // 1,024 rows x 128,256 vocab x (36 - 13) B = 2.81 GiB more torch peak on the native path.
    const std::uint64_t native = budget("vllm@0.19.0", {{"VLLM_USE_FLASHINFER_SAMPLER", "0"}});
    const std::uint64_t flashInfer = budget("vllm@0.19.0", {});
    CHECK(flashInfer - native == 1024ull * 128256ull * 23ull);
}
