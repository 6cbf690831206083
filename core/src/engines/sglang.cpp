// SGLang: the KV pool is what the weights leave of mem_fraction_static x the memory that was free
// at start-up (after the CUDA context and the torch.distributed/NCCL init), not of the card total:
//     rest   = free_after_weights - free_at_start x (1 - mem_fraction_static)        [GB = 2^30 B]
//     tokens = int(rest x 2^30 // cell_size)          cell_size = H_kv/tp x (d_k + d_v) x L x dtype
//                                                     (MLA: (kv_lora_rank + rope_dim) x L x dtype)
// The memory free at start-up is the card total less what other processes hold (--free/--used)
// and SGLang's own CUDA context and torch.distributed init.
// Rules read from the source:
//   - pool: python/sglang/srt/model_executor/model_runner.py profile_max_num_token (v0.3-v0.4.x;
//     e.g. v0.4.3: `rest_memory = available_gpu_memory - total_gpu_memory * (1 - self.mem_fraction_static)`,
//     total_gpu_memory = the free memory measured before the weights load), and today
//     model_runner_kv_cache_mixin.py _profile_available_bytes (`post_model_load_memory -
//     pre_model_load_memory * (1 - mem_fraction_static)`) with pool_configurator.py
//     DefaultPoolConfigurator (cell size; the pool rounded down to page_size);
//   - default mem_fraction_static: python/sglang/srt/server_args.py __post_init__ up to v0.4.x
//     (by tp size: 0.88 / 0.87 at tp 2 / 0.85 at tp 4 / 0.81 at tp 8 / 0.79 at tp 16), and
//     _handle_gpu_memory_settings today (reserved-memory formula, enginerules.h
//     sglangMemFractionStatic; server_args.py @ 469c63e5), which reads chunked-prefill-size and
//     cuda-graph-max-bs (the user's, else the defaults of the card-size tier, sglangMemoryDefaults):
//     each is priced there, 1.5 MiB a prefill token and 2 MiB a graph batch slot of the reserve;
//   - CUDA graphs are captured after the pool is allocated (model_runner.py init_cuda_graphs), so
//     they come out of the (1 - mem_fraction_static) slack, not out of the pool.

#include "common.h"

#include "headroom/core/enginerules.h"

#include <algorithm>
#include <cmath>

namespace headroom::engines {

namespace {

/// torch.distributed + NCCL init on each rank when tp x pp > 1, as SGLang prints it ("Init torch
/// distributed ends. mem usage=X GB", model_runner.py init_torch_distributed; SGLang's GB are
/// 2^30 B), by the link between the ranks (core/interconnect.h):
/// - on PCIe (and across nodes): 0.13 GB, the SGLang 0.4.3 QwQ-32B start-up log on 4 x L4, nccl
///   2.21.5 (tests/data/engine-logs/sglang-0.4.3-qwq-32b-4xl4-tp4.json): NCCL's buffers stay in host
///   memory there (shm.cc); no SGLang figure of a node with P2P over PCIe is published, so
///   pcie-p2p takes it too (NCCL's P2P buffers, tens of MiB, are below its rounding: vllmmemory.h);
/// - on NVLink through NVSwitch: 2.01 GB, printed per rank on 8 x H200 at TP 8 (sgl-project/sglang
///   PR 11716 "try to support sgl-kernel in piecewise-cuda-graph", log of 2025-10-16: six ranks print
///   2.01 GB, TP0 1.96, TP7 1.77; the 2.01 of most ranks is taken), where the init sets up the custom
///   all-reduce's IPC buffers and NCCL's NVLink channels; NVLink without a switch takes it too, an
///   upper bound (no public figure). The figure is not scaled by the number of ranks: SGLang turns
///   NVLink SHARP off unless --enable-nccl-nvls (python/sglang/srt/entrypoints/engine.py
///   _set_envs_and_config at 18bfdd16: NCCL_NVLS_ENABLE = int(enable_nccl_nvls), default False, as the
///   server_args of PR 12978's log print it), so NCCL allocates none of the NVLS buffers that grow
///   with the ranks of the node (NVIDIA/nccl 5067397c src/transport/nvls.cc ncclNvlsBufferSetup:
///   nvlsChannels x 2 x chunk x NCCL_STEPS per head, one head a local rank); its P2P buffers are
///   per channel and per connection to a ring or tree neighbour (src/transport/p2p.cc p2pSendSetup /
///   p2pRecvSetup: comm->buffSizes of each protocol, src/init.cc DEFAULT_*BUFFSIZE), the same two
///   neighbours at any number of ranks.
constexpr std::uint64_t kDistributedInitPcieBytes = 139586437;   // 0.13 GiB
constexpr std::uint64_t kDistributedInitNvSwitchBytes = 2158221066; // 2.01 GiB

Bytes distributedInitBytes(Interconnect link)
{
    return Bytes{link == Interconnect::NvSwitch || link == Interconnect::NvLink ? kDistributedInitNvSwitchBytes
                                                                                  : kDistributedInitPcieBytes};
}

// SGLang's argparse takes the dashed spelling; the Python API (ServerArgs) the underscored one.
SettingSpec spec(std::string key, SettingType type, std::string defaultValue, std::string help, double lo = 0, double hi = 0,
                 std::vector<std::string> choices = {}, std::vector<std::string> extraAliases = {})
{
    std::string underscored = key;
    for (char& c : underscored)
        if (c == '-')
            c = '_';
    extraAliases.push_back(underscored);
    return makeSpec(std::move(key), type, std::move(defaultValue), std::move(help), lo, hi, std::move(choices),
                    std::move(extraAliases));
}

const std::vector<SettingSpec>& sglangSettings()
{
    static const std::vector<SettingSpec> specs = {
        spec("mem-fraction-static", SettingType::Number, "",
             "fraction of the memory free at start-up for weights + KV pool; default: SGLang's rule of the version "
             "(server_args.py)",
             0, 1),
        spec("max-running-requests", SettingType::Integer, "", "most requests running at once: caps max_users", 1,
             kMaxSequences),
        spec("chunked-prefill-size", SettingType::Integer, "",
             "prefill chunk; default: --ubatch, else SGLang's by card size (server_args.py: 2048 under 35 GiB, 4096 "
             "under 60, 8192 under 160, else 16384); from v0.5 it sizes the default mem-fraction-static (1.5 MiB a token)",
             1, kMaxSequences),
        spec("cuda-graph-max-bs", SettingType::Integer, "",
             "largest batch captured in CUDA graphs; default by card size and tp (server_args.py); from v0.5 it sizes the "
             "default mem-fraction-static (2 MiB a batch slot)",
             1, kMaxSequences),
        spec("page-size", SettingType::Integer, "", "tokens per KV page; the pool is rounded down to it (default 1)", 1, 1024),
        spec("max-total-tokens", SettingType::Integer, "", "caps the KV pool at this many tokens", 1, kMaxTokens),
        spec("context-length", SettingType::Integer, "", "context per request; default: --context, else the model's", 1,
             kMaxTokens),
        spec("tp-size", SettingType::Integer, "", "tensor parallel size; default: --tp", 1, 1024, {},
             {"tp", "tensor-parallel-size", "tensor_parallel_size"}),
        spec("pp-size", SettingType::Integer, "", "pipeline parallel size; default: --pp", 1, 1024, {},
             {"pipeline-parallel-size", "pipeline_parallel_size"}),
        spec("kv-cache-dtype", SettingType::Choice, "", "KV cache dtype; auto = the model's 16-bit dtype", 0, 0,
             {"auto", "bf16", "fp8_e4m3", "fp8_e5m2"}),
        interconnectSpec(),
    };
    return specs;
}

std::string kvIdFromSglang(const std::string& v)
{
    if (v == "auto")
        return "";
    return v; // bf16, fp8_e4m3, fp8_e5m2 are kvcache.h ids
}

std::string sglangFromKvId(const std::string& id)
{
    return isDefaultKvDtype(id) ? "auto" : id;
}

/// SGLang up to v0.4.x: mem_fraction_static by tensor-parallel size (server_args.py __post_init__).
double mfsByTensorParallel(std::uint32_t tp)
{
    if (tp >= 16)
        return 0.79;
    if (tp >= 8)
        return 0.81;
    if (tp >= 4)
        return 0.85;
    if (tp >= 2)
        return 0.87;
    return 0.88;
}

/// The reserved-memory rule (v0.5 on) arrived with _handle_gpu_memory_settings.
bool usesReservedMemoryRule(const EnginePolicy& policy)
{
    return compareVersions(appliedEngineVersion(policy), "0.5") >= 0;
}

class SgLangEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::SgLang; }
    const std::vector<SettingSpec>& settings() const override { return sglangSettings(); }
    /// SGLang loads a draft through --speculative-draft-model-path into a KV pool of its own
    /// (python/sglang/srt/speculative/), sized by rules Headroom does not model yet.
    /// No layer split. SGLang's own weight offload is --cpu-offload-gb (python/sglang/srt/server_args.py
    /// ServerArgs.cpu_offload_gb, "How many GBs of RAM to reserve for CPU offloading.", default 0,
    /// in the Offloading section next to offload_group_size; sgl-project/sglang main, read
    /// 2026-12-02), which Headroom does not price yet.
    std::string weightOffloadHint(const EngineInputs& /*in*/, Bytes /*shortfall*/) const override
    {
        return "SGLang's own offload is --cpu-offload-gb (weights in host memory, python/sglang/srt/server_args.py), "
               "which Headroom does not model yet";
    }
    DraftSupport draftSupport() const override
    {
        return {{}, "runs a draft model (--speculative-draft-model-path) in a KV pool of its own, which is not modelled", false};
    }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "context-length", name, std::uint64_t{arch.contextLength});
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = r.contextTokens.has_value() || s.given("context-length");
        auto tp = reconcileParallel(r.tensorParallel, "--tp", s, "tp-size", name);
        if (!tp)
            return tl::unexpected(tp.error());
        setup.tensorParallel = *tp;
        // From the reserved-memory rule on, the chunk and the largest graph batch default by card size.
        const bool reservedRule = usesReservedMemoryRule(r.engine);
        const SglangMemoryDefaults tier = sglangMemoryDefaults(r.card.totalBytes, setup.tensorParallel);
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "chunked-prefill-size", name,
                                 reservedRule ? tier.chunkedPrefillTokens : r.engine.ubatchTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        if (reservedRule && !s.find("cuda-graph-max-bs"))
            s.setDerived(derivedInteger("cuda-graph-max-bs", tier.cudaGraphMaxBs));
        auto page = reconcileCount(std::nullopt, "", s, "page-size", name, std::max<std::uint64_t>(r.engine.blockTokens, 1));
        if (!page)
            return tl::unexpected(page.error());
        setup.paging.blockTokens = **page;
        auto pp = reconcileParallel(r.pipelineParallel, "--pp", s, "pp-size", name);
        if (!pp)
            return tl::unexpected(pp.error());
        setup.pipelineParallel = *pp;
        if (setup.tensorParallel * setup.pipelineParallel > 1)
            recordInterconnect(r, s);
        auto kv = reconcileKvDtype(r.kvDtype, s, "kv-cache-dtype", name, &kvIdFromSglang, &sglangFromKvId);
        if (!kv)
            return tl::unexpected(kv.error());
        setup.kvDtypeId = *kv;
        if (s.given("max-running-requests")) {
            setup.maxSequences = s.integer("max-running-requests");
            setup.maxSequencesSetting = "max-running-requests";
        }
        if (!s.find("mem-fraction-static")) {
            double mfs = 0;
            if (r.engine.memoryFraction > 0)
                mfs = r.engine.memoryFraction;
            else if (reservedRule)
                mfs = sglangMemFractionStatic(r.card.totalBytes, setup.tensorParallel, setup.pipelineParallel,
                                              s.integer("chunked-prefill-size"), s.integer("cuda-graph-max-bs"));
            else
                mfs = mfsByTensorParallel(setup.tensorParallel);
            s.setDerived(derivedNumber("mem-fraction-static", mfs));
        }
        return setup;
    }

    std::vector<EngineRefusal> compatibility(const PlanRequest& r, const EngineSetup& setup) const override
    {
        std::vector<EngineRefusal> out = Engine::compatibility(r, setup);
        if (r.format.kind == FormatKind::Ggml)
            out.push_back({FitLimit::EngineFormat,
                           "SGLang loads Hugging Face checkpoints (fp16/bf16, fp8, GPTQ/AWQ), not GGML type " + r.format.id + " (python/sglang/srt/configs/model_config.py)"});
        if (!kvDtypeAccepted(setup.kvDtypeId, {"fp8", "fp8_e4m3", "fp8_e5m2"}))
            out.push_back({FitLimit::EngineKvDtype,
                           "SGLang has no " + setup.kvDtypeId + " KV cache (kv-cache-dtype: auto, bf16, fp8_e4m3, fp8_e5m2)" + " (python/sglang/srt/server_args.py)"});
        return out;
    }

    /// SGLang claims mem_fraction_static x the memory free at start-up (after its CUDA context and
    /// torch.distributed init) for the weights and the KV pool; the rest of its process lives in the
    /// (1 - mem_fraction_static) slack: the CUDA graphs captured after the pool (model_runner.py
    /// init_cuda_graphs; "Capture cuda graph end. ... mem usage=X GB" when the log prints it) and the
    /// forward pass of a prefill chunk. Where not measured they are priced as SGLang's own reserve
    /// prices them (server_args.py _handle_gpu_memory_settings @ 469c63e5, enginerules.h
    /// sglangMemFractionStatic): cuda_graph_max_bs x 2 MiB and max(chunked_prefill_size, 2048) x
    /// 1.5 MiB. Held besides: the memory of other processes, the context and the distributed init.
    std::optional<FractionHolding> fractionHolding(const PlanRequest& r, const PlanResult& plan,
                                                   const MeasuredHolding& m) const override
    {
        FractionHolding h;
        const auto setting = [&](const char* key) -> std::optional<std::uint64_t> {
            for (const SettingValue& v : plan.engineSettings)
                if (v.key == key)
                    return v.integer;
            return std::nullopt;
        };
        for (const std::vector<OverheadItem>* list : {&plan.reserved, &plan.overheads})
            for (const OverheadItem& i : *list)
                if (i.name == "other_processes" || i.name == "cuda_context" || i.name == "distributed_init")
                    h.held.push_back(i);
        const Bytes before = totalBytes(h.held);
        h.baseBytes = saturatingSub(r.card.totalBytes, before);
        constexpr std::uint64_t kMiB = 1ull << 20;
        const std::uint64_t graphBs = setting("cuda-graph-max-bs").value_or(sglangMemoryDefaults(r.card.totalBytes, plan.tensorParallel).cudaGraphMaxBs);
        h.held.push_back(item("cuda_graphs", m.cudaGraphBytes.value_or(Bytes{graphBs * 2 * kMiB}),
                              m.cudaGraphBytes ? std::string("captured after the pool (measured), in the slack")
                                               : "cuda_graph_max_bs " + std::to_string(graphBs)
                                                     + " x 2 MiB (SGLang's reserve, server_args.py), in the slack"));
        const std::uint64_t chunk = std::max<std::uint64_t>(plan.ubatchTokens, 2048);
        h.held.push_back(item("activations", Bytes{chunk * 3 * kMiB / 2},
                              "max(chunked_prefill_size, 2048) = " + std::to_string(chunk)
                                  + " x 1.5 MiB (SGLang's reserve, server_args.py), in the slack"));
        return h;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const PlanRequest& r = in.request;
        const EnginePolicy& e = r.engine;
        const Bytes total = r.card.totalBytes;
        const double mfs = in.settings.number("mem-fraction-static").value_or(0.88);
        const bool distributed = in.setup.tensorParallel * in.setup.pipelineParallel > 1;
        EngineBill b;
        // Memory other processes hold (--free/--used: a desktop under WSL2, another server) is not
        // free at start-up, so it is outside the pool and outside the slack.
        const Bytes free = r.freeBytes ? std::min(*r.freeBytes, total) : total;
        if (free < total)
            b.reserved.push_back(item("other_processes", total - free,
                                      "held by other processes before SGLang starts (--free/--used)"));
        // A measured runtime (MeasuredOverheads: CUDA context + non-torch memory) is everything held
        // outside the pool before it is sized, the distributed init included: it replaces both.
        const Bytes context = r.measured.runtimeBytes.value_or(e.runtimeBytes);
        b.overheads.push_back(item("cuda_context", context,
                                   r.measured.runtimeBytes
                                       ? std::string(distributed ? "measured (with the distributed init)" : "measured")
                                       : std::string("CUDA context before the weights load (engine profile)")));
        if (distributed && !r.measured.runtimeBytes) {
            const PlanInterconnect link = planInterconnect(in.request, in.settings);
            const bool nvlink = link.link == Interconnect::NvSwitch || link.link == Interconnect::NvLink;
            b.overheads.push_back(item("distributed_init", distributedInitBytes(link.link),
                                       "torch.distributed + NCCL init per rank, " + link.note()
                                           + (nvlink ? ": printed on 8 x H200 NVSwitch (SGLang PR 11716 log)"
                                                     : ": printed on 4 x PCIe L4 (SGLang 0.4.3 log)")));
        }
        const Bytes freeAtStart = saturatingSub(free, totalBytes(b.overheads));
        if (e.workspaceBytes.value > 0)
            b.overheads.push_back(item("load_overhead", e.workspaceBytes,
                                       "memory the weight load takes beyond the tensors (engine profile)"));
        const Bytes slack = saturatingSub(freeAtStart, fraction(freeAtStart, mfs));
        b.reserved.push_back(item("mem_fraction_static_slack", slack,
                                  "(1 - mem_fraction_static " + percent(mfs) + ") of the " + formatBytes(freeAtStart)
                                      + " free at start-up; CUDA graphs and activations live here"));
        b.usableBytes = saturatingSub(free, slack);
        finishBudget(in, b);

        // max_total_num_tokens = int(rest // cell_size), rounded down to the page, capped by max-total-tokens.
        const std::uint64_t cell = std::max<std::uint64_t>(in.kvBytesPerToken.value, 1);
        const std::uint64_t page = std::max<std::uint64_t>(in.setup.paging.blockTokens, 1);
        std::uint64_t tokens = b.kvBudgetBytes.value / cell / page * page;
        if (const auto cap = in.settings.integer("max-total-tokens"); cap && *cap < tokens) {
            tokens = *cap / page * page;
            b.notes.push_back("KV pool capped by max-total-tokens=" + formatThousands(*cap));
        }
        b.kvBudgetBytes = Bytes{tokens * cell};
        b.kvBlocks = tokens / page;
        b.figures.push_back({"max_total_num_tokens", static_cast<double>(tokens), "tokens",
                             "max_total_num_tokens=" + std::to_string(tokens) + " (python/sglang/srt/model_executor/model_runner.py)"});
        b.notes.push_back("SGLang sizes the pool from the memory free at start-up (" + formatBytes(freeAtStart)
                          + "), not the card total; CUDA graphs are captured afterwards, in the slack");
        return b;
    }
};

} // namespace

const Engine& sglangEngine()
{
    static const SgLangEngine engine;
    return engine;
}

} // namespace headroom::engines
