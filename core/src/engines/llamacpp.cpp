// llama.cpp (llama-server with --fit): keep --fit-target MiB free per device; the context, KV
// cache, compute and output buffers as llama.cpp sizes them (engines/llamacppmemory.h, checked
// against real llama.cpp over the oracle grid of tests/llamacpp/); token_embd in host memory.
// Rules: common/fit.cpp, src/llama-context.cpp, src/llama-kv-cache.cpp, src/llama-model.cpp;
// settings: common/arg.cpp (node-llama-cpp 3.21.1's llama.cpp, release v0.4.0).

#include "common.h"

#include "headroom/core/engines/llamacppfit.h"
#include "headroom/core/engines/llamacppmemory.h"
#include "headroom/core/engines/llamacppoffload.h"
#include "headroom/core/parameters.h"

namespace headroom::engines {

namespace {

const std::vector<std::string> kGgmlKvTypes = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"};

const std::vector<SettingSpec>& llamaSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("ctx-size", SettingType::Integer, "",
                 "total KV cells over all sequences; default: --context x --parallel", 0, kMaxTokens, {}, {"c"}),
        makeSpec("parallel", SettingType::Integer, "", "sequences (slots); default: --users, else 1", 1, kMaxSequences, {},
                 {"np"}),
        makeSpec("batch-size", SettingType::Integer, "2048", "logical batch", 1, kMaxSequences, {}, {"b"}),
        makeSpec("ubatch-size", SettingType::Integer, "", "physical batch of the compute buffer; default: --ubatch, else 512",
                 1, kMaxSequences, {}, {"ub"}),
        makeSpec("flash-attn", SettingType::Choice, "", "flash attention: on, off or auto", 0, 0, {"on", "off", "auto"},
                 {"fa"}),
        makeSpec("cache-type-k", SettingType::Choice, "", "K cache type; default: --kv-dtype (f16)", 0, 0, kGgmlKvTypes,
                 {"ctk"}),
        makeSpec("cache-type-v", SettingType::Choice, "", "V cache type; default: --kv-dtype (f16)", 0, 0, kGgmlKvTypes,
                 {"ctv"}),
        makeSpec("swa-full", SettingType::Boolean, "false", "full-size cache for sliding-window layers"),
        makeSpec("kv-unified", SettingType::Boolean, "false", "one KV buffer shared by all sequences"),
        makeSpec("n-gpu-layers", SettingType::Integer, "",
                 "layers on the GPU, counted from the output end (output layer included); default: all that fit", 0,
                 1 << 20, {}, {"ngl", "gpu-layers"}),
        makeSpec("n-cpu-moe", SettingType::Integer, "0", "layers [0, N) keep their routed experts in host memory", 0,
                 1 << 20, {}, {"ncmoe"}),
        makeSpec("override-tensor", SettingType::Text, "",
                 "-ot PATTERN=CPU|CUDA<N>,...: tensors whose GGUF name matches go there (\"exps=CPU\": every routed "
                 "expert in host memory)",
                 0, 0, {}, {"ot"}),
        makeSpec("no-kv-offload", SettingType::Boolean, "false", "every layer's KV cache in host memory", 0, 0, {},
                 {"nkvo"}),
        makeSpec("no-repack", SettingType::Boolean, "false",
                 "no AVX2 repack copy of Q4_0/Q4_K/IQ4_NL host weights (CPU_REPACK buffer)", 0, 0, {}, {"nr"}),
        makeSpec("tensor-split", SettingType::List, "",
                 "each GPU's share of the offloaded layers, in device order (\"3,1\"); default: one GPU", 0, 0, {},
                 {"ts"}),
        makeSpec("fit", SettingType::Choice, "",
                 "-fit on|off: fit the unset context and layers to free memory (common/fit.cpp); default: on (builds "
                 "before b7400: off, they have no --fit)",
                 0, 0, {"on", "off"}),
        makeSpec("fit-target", SettingType::List, "",
                 "MiB kept free per device by --fit, one value for all or one per device (\"1024,2048\"); default: the "
                 "profile's (1024)",
                 0, 0, {}, {"fitt"}),
        makeSpec("fit-ctx", SettingType::Integer, "",
                 "smallest context --fit lowers an unset context to; default: the profile's (4096); ctx-size=0 keeps "
                 "the trained context",
                 0, kMaxTokens, {}, {"fitc"}),
    };
    return specs;
}

std::string kvIdFromGgml(const std::string& v)
{
    if (v == "f16")
        return "";
    if (v == "f32")
        return "fp32";
    return v;
}

std::string ggmlFromKvId(const std::string& id)
{
    if (id == "fp16")
        return "f16";
    if (id == "bf16")
        return "bf16";
    if (id == "fp32")
        return "f32";
    return id;
}

class LlamaCppEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::LlamaCpp; }
    const std::vector<SettingSpec>& settings() const override { return llamaSettings(); }
    /// A draft model through -md / --model-draft (common/arg.cpp), its cache f16 unless -ctkd/-ctvd.
    DraftSupport draftSupport() const override { return {"-md", {}, true}; }
    bool offloadsLayers() const override { return true; }
    /// The CPU backend (ggml-cpu) runs every layer with no GPU device: -ngl 0, CPU buffers alone.
    bool runsOnHost() const override { return true; }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        setup.stateElementBytes = 4; // R and S caches are f32 (llamacppmemory.h RecurrentBill)
        auto np = reconcileCount(r.users, "--users", s, "parallel", name, std::uint64_t{1});
        if (!np)
            return tl::unexpected(np.error());
        setup.users = **np;
        setup.usersAsked = r.users.has_value() || s.given("parallel");
        if (s.given("parallel"))
            setup.askedUsers = setup.users;
        // ctx-size is the total over the sequences; --context is per sequence.
        // ctx-size=0 is the trained context, kept: with --fit (common/arg.cpp: -c 0 sets
        // fit_params_min_ctx = UINT32_MAX, "user has requested full context size") n_ctx_train for
        // every stream (n_ctx = n_ctx_train x n_streams, common/fit.cpp), without it n_ctx_train
        // over all sequences (src/llama-context.cpp: n_ctx 0 takes n_ctx_train).
        if (s.given("ctx-size")) {
            const std::uint64_t total = *s.integer("ctx-size");
            const bool unifiedKv = s.boolean("kv-unified").value_or(false);
            const bool fits = fitOn(r, s);
            const std::uint64_t perSeq = total > 0 ? total / setup.users
                                                   : (fits && !unifiedKv ? arch.contextLength : arch.contextLength / setup.users);
            if (r.contextTokens && *r.contextTokens != perSeq)
                return tl::unexpected("--context " + std::to_string(*r.contextTokens) + " and " + name + " setting ctx-size="
                                      + std::to_string(total) + " (" + std::to_string(perSeq) + " per sequence of "
                                      + std::to_string(setup.users) + ") disagree: give one of them, or agreeing values");
            setup.contextTokens = perSeq;
            setup.contextAsked = true;
            setup.askedContextTokens = perSeq;
        } else {
            s.setDerived(derivedInteger("ctx-size", checkedMul(setup.contextTokens, setup.users, "ctx-size")));
        }
        auto ub = reconcileCount(r.ubatchTokens, "--ubatch", s, "ubatch-size", name, r.engine.ubatchTokens);
        if (!ub)
            return tl::unexpected(ub.error());
        setup.ubatchTokens = ub->value_or(0);
        auto fa = reconcileFlash(r.flashAttention, r.engine.flashAttention, s, "flash-attn", name);
        if (!fa)
            return tl::unexpected(fa.error());
        setup.flashAttention = *fa;
        auto k = reconcileKvDtype(r.kvDtype, s, "cache-type-k", name, &kvIdFromGgml, &ggmlFromKvId);
        if (!k)
            return tl::unexpected(k.error());
        auto v = reconcileKvDtype(r.kvDtype, s, "cache-type-v", name, &kvIdFromGgml, &ggmlFromKvId);
        if (!v)
            return tl::unexpected(v.error());
        setup.kvDtypeId = *k;
        setup.kvDtypeVId = *v;
        // Cells: with the default non-unified cache each sequence's stream is padded to 256 on its
        // own (llama_context: n_ctx_seq = GGML_PAD(n_ctx / n_seq_max, 256)), i.e. 256-cell blocks per
        // sequence; a unified cache pads the total once.
        const bool unified = s.boolean("kv-unified").value_or(false);
        setup.paging.blockTokens = unified ? 1 : 256;
        setup.paging.cellPadding = unified ? 256 : 1;
        // --offload N is -ngl N (the same count: output layer included).
        std::optional<std::uint64_t> ngl;
        if (r.gpuLayers)
            ngl = *r.gpuLayers;
        auto layers = reconcileCount(ngl, "--offload", s, "n-gpu-layers", name);
        if (!layers)
            return tl::unexpected(layers.error());
        if (!s.find("fit"))
            s.setDerived(derivedChoice("fit", fitOn(r, s) ? "on" : "off"));
        if (!s.find("fit-target"))
            s.setDerived(derivedChoice("fit-target", std::to_string(r.engine.fixedReserve.value / kMiB)));
        else if (auto t = fitTargetsMiB(s, r.moreGpus.size() + 1); !t)
            return tl::unexpected(t.error());
        if (!s.find("fit-ctx"))
            s.setDerived(derivedInteger("fit-ctx", r.engine.minContextTokens));
        if (auto ot = s.text("override-tensor"); ot && !ot->empty())
            if (auto parsed = llamacpp::parseTensorOverrides(*ot, r.moreGpus.size() + 1); !parsed)
                return tl::unexpected("override-tensor: " + parsed.error());
        if (!r.moreGpus.empty()) {
            auto split = tensorSplitOfCards(r, s);
            if (!split)
                return tl::unexpected(split.error());
        }
        return setup;
    }

    std::vector<EngineRefusal> compatibility(const PlanRequest& r, const EngineSetup& setup) const override
    {
        std::vector<EngineRefusal> out;
        if (auto format = ggufFormatRefusal(r))
            out.push_back(std::move(*format));
        for (const std::string& id : {setup.kvDtypeId, setup.kvDtypeVId}) {
            if (!kvDtypeAccepted(id, {"fp32", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}))
                // common/arg.cpp kv_cache_types
                out.push_back({FitLimit::EngineKvDtype,
                               r.engine.name + " has no " + id + " KV cache (cache-type-k/v: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)"});
        }
        return out;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const PlanRequest& r = in.request;
        const std::vector<std::uint64_t> targets = fitTargetsMiB(in.settings, r.moreGpus.size() + 1)
                                                       .value_or(std::vector<std::uint64_t>(r.moreGpus.size() + 1,
                                                                                            r.engine.fixedReserve.value / kMiB));
        const Bytes reserve{checkedMul(targets.front(), kMiB, "fit-target")};
        llamacpp::ContextSettings ctx = contextSettings(in);
        EngineBill b;
        // --fit keeps its target free of what the device has free now (common/fit.cpp: free - target).
        // No GPU (the host-only card): no device, so no CUDA context, no --fit margin and no device
        // compute buffer; every buffer is the CPU's (offloadFigures).
        const bool host = r.card.hostOnly;
        const Bytes free = r.freeBytes ? std::min(*r.freeBytes, r.card.totalBytes) : r.card.totalBytes;
        b.usableBytes = saturatingSub(free, reserve);
        if (free < r.card.totalBytes)
            b.reserved.push_back(item("other_processes", r.card.totalBytes - free, "held by other processes (--free/--used)"));
        if (!host)
            b.reserved.push_back(item("fit_margin", reserve, "llama.cpp --fit target free per device"));
        const MeasuredOverheads& m = r.measured;
        const Bytes runtime = host ? Bytes{} : m.runtimeBytes.value_or(r.engine.runtimeBytes);
        if (!host)
            b.overheads.push_back(item("cuda_context", runtime, m.runtimeBytes ? "measured" : "CUDA context (engine profile)"));
        // --fit runs before the model loads: the context of every figure below is the one it leaves.
        const Placement placed = fitPlacement(in, ctx, runtime, targets);
        ctx.ctxSizeTokens = placed.ctxSizeTokens;
        fitFigures(placed, b);
        const llamacpp::ComputeBill compute = llamacpp::computeBuffer(in.arch, ctx);
        const llamacpp::ContextSizes sizes = llamacpp::contextSizes(in.arch, ctx);
        if (!host)
            b.overheads.push_back(item("compute_buffer", m.activationPeakBytes.value_or(compute.deviceBytes),
                                   m.activationPeakBytes
                                       ? std::string("measured")
                                       : "reserve graph of " + std::to_string(sizes.reserveTokens) + " tokens ("
                                           + compute.binding + " stage; logits " + formatBytes(compute.logitsBytes)
                                           + " on the output layer's device)"));
        // token_embd stays in host memory (llama_model::load_tensors: "the input layer is always on
        // the CPU"); a tied lm_head is a copy of it on the device.
        const Bytes hostEmbedding = in.arch.tiedEmbeddings ? Bytes{} : tokenEmbeddingBytes(in);
        const Bytes deviceWeights = saturatingSub(in.weightsBytes, hostEmbedding);
        b.kvBudgetBytes = saturatingSub(b.usableBytes, deviceWeights + totalBytes(b.overheads));
        if (hostEmbedding.value > 0 && !host)
            b.notes.push_back("token_embd (" + formatBytes(hostEmbedding) + ") stays in host memory; the device holds "
                              + formatBytes(deviceWeights) + " of weights");
        if (auto why = llamacpp::refusal(in.arch, ctx))
            b.refusals.push_back({FitLimit::EngineRefusesToStart, *why}); // src/llama-context.cpp llama_init_from_model
        offloadFigures(in, ctx, placed, b);
        if (!r.moreGpus.empty()) {
            poolDevices(r, targets, b);
            b.kvBudgetBytes = saturatingSub(b.usableBytes, deviceWeights + totalBytes(b.overheads));
        }
        const llamacpp::KvCacheBill kv = llamacpp::kvCache(in.arch, ctx);
        // The capacity is priced from the rows this build allocates (bill.h kvLayout), the KV
        // figures below from the same rows: an MLA model cached per head before PR #12801
        // (mlaCacheOf) costs 276,480 B/token for DeepSeek-V2-Lite in f16, not the 31,104 of the latent.
        b.kvLayout = llamacpp::kvLayoutPerToken(in.arch, ctx);
        if (in.arch.mla.cachesLatent() && ctx.mlaCache != llamacpp::MlaCache::LatentKOnly)
            b.notes.push_back("llama.cpp " + appliedEngineVersion(r.engine) + " caches each MLA layer "
                              + (ctx.mlaCache == llamacpp::MlaCache::FullHeads
                                     ? std::string("per head (before PR #12801)")
                                     : std::string("as the latent K and V (PR #12801 to PR #19067)"))
                              + ": " + formatThousands(b.kvLayout->bytesPerToken().value) + " B/token");
        const std::string src = "src/llama-context.cpp, src/llama-kv-cache.cpp";
        b.figures.push_back({"n_ctx", static_cast<double>(sizes.nCtx), "tokens",
                             "llama_context: n_ctx = " + std::to_string(sizes.nCtx), src});
        b.figures.push_back({"kv_cells", static_cast<double>(kv.cells), "tokens",
                             "llama_kv_cache: size = " + mib(kv.fullBytes) + " (" + std::to_string(kv.cells) + " cells, "
                                 + std::to_string(kv.fullLayers) + " layers, " + std::to_string(ctx.parallel) + "/"
                                 + std::to_string(kv.streams) + " seqs)", src});
        b.figures.push_back({"kv_buffer_bytes", static_cast<double>(kv.totalBytes().value), "bytes",
                             "llama_kv_cache: KV buffer size = " + mib(kv.totalBytes()) + " (all layers)", src});
        if (kv.recurrentLayers > 0)
            b.figures.push_back({"rs_buffer_bytes", static_cast<double>(kv.recurrentBytes().value), "bytes",
                                 "llama_memory_recurrent: size = " + mib(kv.recurrentBytes()) + " ("
                                     + std::to_string(kv.recurrentCells) + " cells, " + std::to_string(in.arch.layers)
                                     + " layers, " + std::to_string(ctx.parallel) + " seqs), R (f32): " + mib(kv.rBytes)
                                     + ", S (f32): " + mib(kv.sBytes),
                                 "src/llama-memory-recurrent.cpp"});
        if (!host) {
            b.figures.push_back({"compute_buffer_bytes", static_cast<double>(compute.deviceBytes.value), "bytes",
                                 "sched_reserve: CUDA0 compute buffer size = " + mib(compute.deviceBytes), "src/llama-context.cpp sched_reserve"});
            b.figures.push_back({"host_compute_buffer_bytes", static_cast<double>(compute.hostPartBytes.value), "bytes",
                                 "sched_reserve: CUDA_Host compute buffer size = " + mib(compute.hostPartBytes), "src/llama-context.cpp sched_reserve"});
        }
        // With no GPU backend the output buffer is the CPU's own (CUDA_Host is the pinned host
        // buffer type of the CUDA backend, src/llama-context.cpp output_reserve).
        const Bytes output = llamacpp::outputBufferBytes(in.arch, ctx);
        b.figures.push_back({"output_buffer_bytes", static_cast<double>(output.value), "bytes",
                             std::string("llama_context: ") + (host ? "CPU" : "CUDA_Host") + " output buffer size = " + mib(output),
                             "src/llama-context.cpp output_reserve"});
        return b;
    }

private:
    // Several cards: the layers spread over every device (-ts, or --fit's placement), so the bill
    // is theirs together, as Ollama's estimator pools its GPUs (ollama.cpp legacyGpus): each
    // device's free less its --fit target, a CUDA context and a reserve graph on each (the
    // per-device compute lines of devicesFigures where the layers are split), the cards' totals.
    // The KV room is then the pooled one, not split by the layers each device holds.
    static void poolDevices(const PlanRequest& r, const std::vector<std::uint64_t>& targetsMiB, EngineBill& b)
    {
        const std::size_t n = r.moreGpus.size() + 1;
        const auto freeOf = [](const Card& c, const std::optional<Bytes>& f) { return f ? std::min(*f, c.totalBytes) : c.totalBytes; };
        Bytes usable = b.usableBytes;
        Bytes total = r.card.totalBytes;
        Bytes held = r.card.totalBytes - freeOf(r.card, r.freeBytes);
        Bytes margins{checkedMul(targetsMiB.front(), kMiB, "fit-target")};
        for (std::size_t d = 0; d < r.moreGpus.size(); ++d) {
            const GpuDevice& g = r.moreGpus[d];
            const Bytes target{checkedMul(targetsMiB.at(std::min(d + 1, targetsMiB.size() - 1)), kMiB, "fit-target")};
            usable += saturatingSub(freeOf(g.card, g.freeBytes), target);
            total += g.card.totalBytes;
            held += g.card.totalBytes - freeOf(g.card, g.freeBytes);
            margins += target;
        }
        b.usableBytes = usable;
        b.devicesTotalBytes = total;
        const std::string each = " on each of " + std::to_string(n) + " GPUs";
        b.reserved.clear();
        if (held.value > 0)
            b.reserved.push_back(item("other_processes", held, "held by other processes (--free/--used)"));
        b.reserved.push_back(item("fit_margin", margins, "llama.cpp --fit target free" + each));
        Bytes computes; // the per-device compute lines of a tensor split (devicesFigures)
        for (const EngineFigure& f : b.figures)
            if (f.name.starts_with("cuda") && f.name.ends_with("_compute_buffer_bytes"))
                computes += Bytes{static_cast<std::uint64_t>(f.value)};
        for (OverheadItem& o : b.overheads) {
            if (o.name == "cuda_context") {
                o.bytes = Bytes{checkedMul(o.bytes.value, n, "cuda context")};
                o.note += each;
            } else if (o.name == "compute_buffer" && computes.value > 0 && o.note != "measured") {
                o.bytes = computes;
                o.note = "the reserve graphs of the " + std::to_string(n) + " GPUs (their compute buffer lines)";
            } else if (o.name == "compute_buffer") {
                o.bytes = Bytes{checkedMul(o.bytes.value, n, "compute buffer")};
                o.note += each;
            }
        }
    }

    // Several cards (`-c A -c B`, PlanRequest::moreGpus): -ts names one share per card; without
    // -ts llama.cpp splits the layers by each device's free memory ("default split, by free
    // memory", src/llama-model.cpp load_tensors, b4462 to b8200), recorded here as the derived
    // -ts of the cards' free MiB.
    static tl::expected<void, std::string> tensorSplitOfCards(const PlanRequest& r, EngineSettings& s)
    {
        const std::size_t cards = r.moreGpus.size() + 1;
        if (auto ts = s.text("tensor-split"); ts && !ts->empty()) {
            auto parsed = llamacpp::parseTensorSplit(*ts);
            if (!parsed)
                return tl::unexpected("tensor-split: " + parsed.error());
            if (parsed->size() != cards)
                return tl::unexpected("tensor-split=" + *ts + " names " + std::to_string(parsed->size()) + " GPUs, the plan has "
                                      + std::to_string(cards) + " cards (--card): give one share per card");
            return {};
        }
        const auto freeOf = [](const Card& c, const std::optional<Bytes>& f) {
            return (f ? std::min(*f, c.totalBytes) : c.totalBytes).value / kMiB;
        };
        std::string text = std::to_string(freeOf(r.card, r.freeBytes));
        for (const GpuDevice& d : r.moreGpus) {
            text += ',';
            text += std::to_string(freeOf(d.card, d.freeBytes));
        }
        s.setDerived(derivedChoice("tensor-split", text));
        return {};
    }

    // Whether this plan runs --fit: the setting, else on for every build that has it (common/arg.cpp
    // -fit, default on: common/common.h fit_params = true). --fit came with ggml-org/llama.cpp PR
    // #16653 (opened 2025-10-18; issue #18097 of 2025-12-16 runs it at b7437): builds numbered
    // below b7400 are taken as before it; a version that is not a build number is current.
    static bool fitOn(const PlanRequest& r, const EngineSettings& s)
    {
        if (r.card.hostOnly)
            return false; // no GPU device: nothing for --fit to place (it walks the GPU devices)
        if (auto t = s.text("fit"))
            return *t == "on";
        const std::string& v = r.engine.requestedVersion;
        if (v.size() < 2 || v.size() > 8 || v[0] != 'b' || v.find_first_not_of("0123456789", 1) != std::string::npos)
            return true;
        return std::stoul(v.substr(1)) >= 7400;
    }

    // --fit-target: one MiB value for every device or one per device (common/arg.cpp -fitt: "single
    // value is broadcast across all devices"); more values than devices is an error here.
    static tl::expected<std::vector<std::uint64_t>, std::string> fitTargetsMiB(const EngineSettings& s, std::size_t devices)
    {
        const std::optional<std::string> text = s.text("fit-target");
        if (!text || text->empty())
            return tl::unexpected(std::string("fit-target: no value"));
        auto parsed = llamacpp::parseTensorSplit(*text);
        if (!parsed)
            return tl::unexpected("fit-target: " + parsed.error());
        std::vector<std::uint64_t> out;
        for (double v : *parsed) {
            if (v != static_cast<double>(static_cast<std::uint64_t>(v)) || v > static_cast<double>(1u << 24))
                return tl::unexpected("fit-target=" + *text + ": expected whole MiB values up to 16777216, found "
                                      + std::to_string(v));
            out.push_back(static_cast<std::uint64_t>(v));
        }
        if (out.size() == 1)
            out.assign(devices, out.front());
        if (out.size() != devices)
            return tl::unexpected("fit-target=" + *text + " names " + std::to_string(parsed->size())
                                  + " devices, the plan has " + std::to_string(devices)
                                  + " (--card): give one value, or one per device");
        return out;
    }

    // What llama.cpp loads with: the context and the placement after --fit (llamacppfit.h), or as
    // given without it.
    struct Placement {
        llamacpp::OffloadTensors tensors;
        llamacpp::OffloadSettings offload;   // -ngl (-1 = all), --n-cpu-moe, -ts, --no-kv-offload, --fit's overrides
        std::uint64_t ctxSizeTokens = 0;     // cparams.n_ctx
        bool layersAsked = false;            // -ngl or --offload given
        bool fit = false;                    // --fit ran
        std::optional<llamacpp::FitResult> result;
        Bytes budget;                        // the busiest device's free - target - runtime
    };

    static Placement fitPlacement(const EngineInputs& in, const llamacpp::ContextSettings& ctx, Bytes runtime,
                                  const std::vector<std::uint64_t>& targetsMiB)
    {
        const EngineSettings& s = in.settings;
        const PlanRequest& r = in.request;
        Placement p;
        llamacpp::OffloadSettings& o = p.offload;
        o.cpuMoeLayers = static_cast<std::uint32_t>(std::min<std::uint64_t>(s.integer("n-cpu-moe").value_or(0), 1u << 20));
        o.kvOffload = !s.boolean("no-kv-offload").value_or(false);
        o.outputFirst = llamacpp::offloadsOutputFirst(r.engine.requestedVersion);
        o.cpuRepack = !s.boolean("no-repack").value_or(false);
        o.tensorOrder = r.model.ggufTensorOrder;
        if (auto ts = s.text("tensor-split"); ts && !ts->empty())
            if (auto parsed = llamacpp::parseTensorSplit(*ts))
                o.tensorSplit = *parsed;
        if (auto ot = s.text("override-tensor"); ot && !ot->empty())
            if (auto parsed = llamacpp::parseTensorOverrides(*ot, r.moreGpus.size() + 1))
                o.tensorOverrides = *parsed;
        p.layersAsked = s.given("n-gpu-layers") || r.gpuLayers.has_value() || r.card.hostOnly;
        if (const std::optional<std::uint64_t> ngl = s.integer("n-gpu-layers"); p.layersAsked)
            o.gpuLayers = static_cast<std::int64_t>(ngl ? *ngl : r.gpuLayers.value_or(0));
        // No GPU: every layer on the CPU, and nothing for --fit to fit (it walks the GPU devices).
        if (r.card.hostOnly)
            o.gpuLayers = 0;
        p.tensors = llamacpp::offloadTensors(in.arch, r.format, o.tensorOrder);
        // The context is unset when neither --context nor ctx-size > 0 was given (n_ctx == 0).
        const bool explicitZero = s.given("ctx-size") && s.integer("ctx-size").value_or(1) == 0;
        const bool contextAuto = !in.setup.contextAsked || explicitZero;
        p.fit = fitOn(r, s) && !r.card.hostOnly;
        p.ctxSizeTokens = contextAuto ? checkedMul(in.arch.contextLength, 1) : ctx.ctxSizeTokens;
        // Each device as ggml reports it: free (--free/--used, else the card) less its CUDA context.
        const auto freeOf = [](const Card& c, const std::optional<Bytes>& f) {
            return f ? std::min(*f, c.totalBytes) : c.totalBytes;
        };
        llamacpp::FitSettings fit;
        fit.devices.push_back({saturatingSub(freeOf(r.card, r.freeBytes), runtime), Bytes{targetsMiB.front() * kMiB}});
        for (std::size_t d = 0; d < r.moreGpus.size(); ++d)
            fit.devices.push_back({saturatingSub(freeOf(r.moreGpus[d].card, r.moreGpus[d].freeBytes), runtime),
                                   Bytes{targetsMiB.at(std::min(d + 1, targetsMiB.size() - 1)) * kMiB}});
        p.budget = saturatingSub(fit.devices.front().freeBytes, fit.devices.front().marginBytes);
        if (!p.fit)
            return p;
        fit.contextAuto = contextAuto;
        fit.minContextTokens = explicitZero ? llamacpp::kFullContext : s.integer("fit-ctx").value_or(r.engine.minContextTokens);
        fit.gpuLayersSet = p.layersAsked;
        fit.tensorSplitSet = s.given("tensor-split");
        fit.tensorOverridesSet = o.cpuMoeLayers > 0 || !o.tensorOverrides.empty();
        p.result = llamacpp::fitParams(p.tensors, in.arch, ctx, o, fit);
        p.ctxSizeTokens = p.result->ctxSizeTokens;
        if (p.result->outcome == llamacpp::FitOutcome::LayersPlaced)
            o = p.result->offload;
        return p;
    }

    // --fit's own figures: the context it left and, when it placed layers, what llama-fit-params
    // prints (-ngl, the layers whose FFN overflows).
    static void fitFigures(const Placement& p, EngineBill& b)
    {
        if (!p.result)
            return;
        const llamacpp::FitResult& f = *p.result;
        const std::string src = "common/fit.cpp common_params_fit_impl (llama.cpp v0.4.0)";
        b.figures.push_back({"fit_ctx_size", static_cast<double>(f.ctxSizeTokens), "tokens", "-c " + std::to_string(f.ctxSizeTokens), src});
        if (f.outcome == llamacpp::FitOutcome::LayersPlaced) {
            std::uint32_t partial = 0;
            for (const llamacpp::FitLayers& d : f.devices)
                partial += d.partial;
            b.figures.push_back({"fit_gpu_layers", static_cast<double>(f.offload.gpuLayers), "layers",
                                 "-ngl " + std::to_string(f.offload.gpuLayers), src});
            if (partial > 0)
                b.figures.push_back({"fit_overflowing_layers", static_cast<double>(partial), "layers",
                                     std::to_string(partial) + " layers overflowing (-ot)", src});
            // The overrides as llama-fit-params prints them ("-ot blk\.14\.ffn_...=CPU,..."): `flags`
            // passes them with -ngl, since an -ngl given stops --fit before it moves any tensor.
            const std::string args = llamacpp::fitArguments(f);
            if (const auto ot = args.find(" -ot "); ot != std::string::npos)
                b.figures.push_back({"fit_tensor_overrides", static_cast<double>(f.offload.ffnOverrides.size()), "count",
                                     args.substr(ot + 1), src});
        }
        std::string why;
        switch (f.outcome) {
        case llamacpp::FitOutcome::NoChange:
            why = "nothing to change";
            break;
        case llamacpp::FitOutcome::ContextReduced:
            why = "the context lowered from " + std::to_string(f.contextFromTokens) + " to " + std::to_string(f.ctxSizeTokens);
            break;
        case llamacpp::FitOutcome::LayersPlaced:
            why = "placed " + llamacpp::fitArguments(f).substr(0, 160);
            break;
        case llamacpp::FitOutcome::Failed:
            why = "stopped (" + f.failure + ")";
            break;
        }
        b.notes.push_back("llama.cpp --fit: " + why + "; n_ctx " + std::to_string(f.ctxSizeTokens) + " ("
                          + std::to_string(f.trials) + " trial bills, common/fit.cpp)");
    }

    // The layer split (issue 11): what --fit placed, or -ngl/--offload as given; figures
    // offload_gpu_layers/offload_total_layers/host_*_bytes, read by the verdict
    // (FitState::PartialOffload) and by `flags` (-ngl).
    static void offloadFigures(const EngineInputs& in, const llamacpp::ContextSettings& ctx, const Placement& p, EngineBill& b)
    {
        const llamacpp::OffloadSettings& o = p.offload;
        const bool split = o.tensorSplit.size() > 1;
        Bytes runtime; // the items besides the compute buffer, which the split prices per side
        for (const OverheadItem& i : b.overheads)
            if (i.name != "compute_buffer")
                runtime += i.bytes;
        const Bytes budget = saturatingSub(b.usableBytes, runtime);
        const llamacpp::ContextSettings& fitted = ctx;
        const bool asked = p.layersAsked;
        const llamacpp::OffloadBill bill = llamacpp::offload(p.tensors, in.arch, fitted, o);
        if (!asked && bill.offloadedLayers >= bill.totalLayers && o.cpuMoeLayers == 0 && o.kvOffload && !split
            && o.ffnOverrides.empty() && o.tensorOverrides.empty())
            return;
        // -ngl given: llama.cpp keeps it (--fit moves only what was not set, common/fit.cpp) and
        // allocates the GPU's model, KV and compute buffers at start; more than the device has
        // fails there ("unable to allocate CUDA0 buffer", src/llama-model.cpp load_tensors).
        // The same for a placement given as --n-cpu-moe / --no-kv-offload with every layer on the GPU:
        // --fit stops before it moves anything once a tensor override is set (common/fit.cpp, fit
        // tensorOverridesSet), so the GPU side is what the settings put there, checked here.
        const bool placedByFit = p.result && p.result->outcome == llamacpp::FitOutcome::LayersPlaced;
        const bool partial = bill.offloadedLayers < bill.totalLayers || bill.host.expertBytes.value > 0
                             || bill.host.kvBytes.value > 0 || bill.host.weightsBytes > bill.tokenEmbeddingBytes;
        const bool fixed = asked || (!placedByFit && (o.cpuMoeLayers > 0 || !o.tensorOverrides.empty() || !o.kvOffload));
        if (fixed && partial && llamacpp::busiestDeviceBytes(bill) > budget)
            b.refusals.push_back({FitLimit::EngineRefusesToStart,
                                  llamacpp::offloadFlags(bill, o) + " puts "
                                      + formatBytes(llamacpp::busiestDeviceBytes(bill)) + " on the GPU (weights "
                                      + formatBytes(bill.gpu.weightsBytes) + ", KV " + formatBytes(bill.gpu.kvBytes) + ", compute "
                                      + formatBytes(bill.gpu.computeBytes) + "), more than the " + formatBytes(budget)
                                      + " it has beside the runtime: llama.cpp fails to allocate its GPU buffers at start; "
                                      + (o.cpuMoeLayers > 0 ? "raise --n-cpu-moe, lower " : "lower ")
                                      + "--offload, the context or the users"});
        devicesFigures(bill, b);
        // The split's decode inputs (plan.cpp prices the step: speed/splitspeed.h): what each side
        // reads per token (token_embd excluded: one row), its routed experts, the link crossings.
        const std::string speedSrc = "speed/splitspeed.h";
        b.figures.push_back({"split_gpu_weights_bytes", static_cast<double>(bill.gpu.weightsBytes.value), "bytes", "", speedSrc});
        b.figures.push_back({"split_gpu_expert_bytes", static_cast<double>(bill.gpu.expertBytes.value), "bytes", "", speedSrc});
        b.figures.push_back({"split_host_weights_bytes",
                             static_cast<double>(saturatingSub(bill.host.weightsBytes, bill.tokenEmbeddingBytes).value), "bytes",
                             "", speedSrc});
        b.figures.push_back({"split_host_expert_bytes", static_cast<double>(bill.host.expertBytes.value), "bytes", "", speedSrc});
        b.figures.push_back({"split_gpu_kv_bytes", static_cast<double>(bill.gpu.kvBytes.value), "bytes", "", speedSrc});
        b.figures.push_back({"split_host_kv_bytes", static_cast<double>(bill.host.kvBytes.value), "bytes", "", speedSrc});
        b.figures.push_back({"split_crossings", static_cast<double>(bill.deviceCrossings), "count", "", speedSrc});
        const std::string src = "src/llama-model.cpp load_tensors, src/llama-kv-cache.cpp";
        const std::uint64_t perSeq = fitted.ctxSizeTokens / std::max<std::uint32_t>(fitted.parallel, 1);
        b.figures.push_back({"offload_context_tokens", static_cast<double>(perSeq), "tokens",
                             "llama_context: n_ctx_seq = " + std::to_string(perSeq), src});
        b.figures.push_back({"offload_gpu_layers", static_cast<double>(bill.offloadedLayers), "layers",
                             "load_tensors: offloaded " + std::to_string(bill.offloadedLayers) + "/"
                                 + std::to_string(bill.totalLayers) + " layers to GPU", src});
        // -ngl 0 allocates no CUDA0 model or KV buffer, so llama.cpp prints no line for them (the
        // figures stay, 0, for the GPU side of the bill); its CUDA0 compute buffer remains: the
        // CUDA backend still runs the large-batch matmuls of the host's weights (ggml-org/ci,
        // ggml-4-x86-cuda-v100 at build 3854 (1927378b): -ngl 0, "offloaded 0/13 layers to GPU",
        // "CUDA0 compute buffer size = 16.28 MiB").
        const bool gpuTensors = bill.offloadedLayers > 0 || bill.gpu.weightsBytes.value > 0;
        b.figures.push_back({"gpu_weights_bytes", static_cast<double>(bill.gpu.weightsBytes.value), "bytes",
                             gpuTensors ? "load_tensors: CUDA0 model buffer size = " + mib(bill.gpu.weightsBytes) : std::string(),
                             src});
        b.figures.push_back({"host_weights_bytes", static_cast<double>(bill.hostMappedBytes.value), "bytes",
                             std::string("load_tensors: ") + (o.mmap ? "CPU_Mapped" : "CPU") + " model buffer size = "
                                 + mib(bill.hostMappedBytes)
                                 + (o.mmap && bill.tensorOrderAssumed ? " (file order assumed: llama-quantize's)" : ""),
                             "src/llama-model-loader.cpp get_mapping_range"});
        b.figures.push_back({"gpu_kv_buffer_bytes", static_cast<double>(bill.gpu.kvBytes.value), "bytes",
                             bill.gpu.kvBytes.value > 0 ? "llama_kv_cache: CUDA0 KV buffer size = " + mib(bill.gpu.kvBytes)
                                                        : std::string(),
                             src});
        b.figures.push_back({"host_kv_buffer_bytes", static_cast<double>(bill.host.kvBytes.value), "bytes",
                             "llama_kv_cache: CPU KV buffer size = " + mib(bill.host.kvBytes), src});
        b.figures.push_back({"host_split_compute_buffer_bytes", static_cast<double>(bill.host.computeBytes.value), "bytes",
                             std::string("sched_reserve: ") + (in.request.card.hostOnly ? "CPU" : "CUDA_Host")
                                 + " compute buffer size = " + mib(bill.host.computeBytes),
                             src});
        if (bill.hostRepackBytes.value > 0)
            b.figures.push_back({"host_repack_bytes", static_cast<double>(bill.hostRepackBytes.value), "bytes",
                                 "load_tensors: CPU_REPACK model buffer size = " + mib(bill.hostRepackBytes),
                                 "ggml/src/ggml-cpu/repack.cpp (AVX2)"});
        const Bytes host = bill.host.totalBytes() + bill.hostOutputBytes + bill.hostRepackBytes;
        b.notes.push_back("layer split: " + std::to_string(bill.offloadedLayers) + "/" + std::to_string(bill.totalLayers)
                          + " layers on the GPU (" + llamacpp::offloadFlags(bill, o) + "), " + formatBytes(host)
                          + " in host memory: weights " + formatBytes(bill.host.weightsBytes)
                          + (bill.hostWeightsMapped
                                 ? " (mapped file pages with mmap, not a copy; the mapping spans "
                                     + formatBytes(bill.hostMappedBytes) + " of the file"
                                     + (bill.tensorOrderAssumed ? ", file order assumed: llama-quantize's (layer, name) order)"
                                                                 : std::string(", in the file's own tensor order (")
                                                                       + ggufTensorOrderId(o.tensorOrder) + "))")
                                 : std::string())
                          + (bill.hostRepackBytes.value > 0
                                 ? " + their AVX2 repack copy " + formatBytes(bill.hostRepackBytes) + " (CPU_REPACK; -nr to skip)"
                                 : std::string())
                          + ", KV " + formatBytes(bill.host.kvBytes) + ", compute " + formatBytes(bill.host.computeBytes));
    }

    // With --tensor-split: each GPU's load_tensors / llama_kv_cache line ("CUDA1 model buffer size",
    // "CUDA1 KV buffer size") and its layers, as figures cudaN_weights_bytes, cudaN_kv_buffer_bytes,
    // cudaN_layers, and its routed experts cudaN_expert_bytes (the split's speed, plan.cpp).
    static void devicesFigures(const llamacpp::OffloadBill& bill, EngineBill& b)
    {
        if (bill.devices.size() < 2)
            return;
        const std::string src = "src/llama-model.cpp load_tensors (tensor_split points)";
        for (std::size_t d = 0; d < bill.devices.size(); ++d) {
            const std::string dev = "CUDA" + std::to_string(d);
            const std::string id = "cuda" + std::to_string(d);
            const llamacpp::SideBill& side = bill.devices[d];
            b.figures.push_back({id + "_layers", static_cast<double>(bill.devicesLayers[d]), "layers",
                                 "", src}); // not a line llama.cpp prints: the note names the layers
            b.figures.push_back({id + "_weights_bytes", static_cast<double>(side.weightsBytes.value), "bytes",
                                 "load_tensors: " + dev + " model buffer size = " + mib(side.weightsBytes), src});
            b.figures.push_back({id + "_kv_buffer_bytes", static_cast<double>(side.kvBytes.value), "bytes",
                                 "llama_kv_cache: " + dev + " KV buffer size = " + mib(side.kvBytes), src});
            // not a printed line: its routed experts, for the split's decode step (speed/splitspeed.h)
            b.figures.push_back({id + "_expert_bytes", static_cast<double>(side.expertBytes.value), "bytes", "", src});
            b.figures.push_back({id + "_compute_buffer_bytes", static_cast<double>(side.computeBytes.value), "bytes",
                                 "sched_reserve: " + dev + " compute buffer size = " + mib(side.computeBytes)
                                     + (bill.pipelineCopies > 1 ? " (its reserve graph and " + std::to_string(bill.pipelineCopies) + " copies of the inputs it receives: pipeline parallelism)" : std::string(" (estimate: one device's reserve graph, logits on the output layer's GPU)")),
                                 src});
        }
        std::string per;
        for (std::size_t d = 0; d < bill.devices.size(); ++d)
            per += (d ? ", CUDA" : "CUDA") + std::to_string(d) + " " + std::to_string(bill.devicesLayers[d]) + " layers "
                   + formatBytes(bill.devices[d].totalBytes());
        b.notes.push_back("tensor split: " + per + (bill.outputDevice >= 0 ? "; the output layer on CUDA" + std::to_string(bill.outputDevice) : std::string()));
    }

    // The MLA cache of a build (llamacppmemory.h MlaCache): full per-head K and V before
    // ggml-org/llama.cpp PR #12801 "DeepSeek V2/V3 MLA implementation" (merged mid-April 2025: its
    // thread runs to 2025-04-12; builds below b5100), the latent K and V until PR #19067 (January 2026:
    // builds below b7800), the latent K only since. The build numbers bound the merge dates from
    // below; a version that is not a build number is the current release.
    static llamacpp::MlaCache mlaCacheOf(const std::string& version)
    {
        if (version.size() < 2 || version.size() > 8 || version[0] != 'b'
            || version.find_first_not_of("0123456789", 1) != std::string::npos)
            return llamacpp::MlaCache::LatentKOnly;
        const unsigned long build = std::stoul(version.substr(1));
        return build < 5100 ? llamacpp::MlaCache::FullHeads
                            : (build < 7800 ? llamacpp::MlaCache::LatentKV : llamacpp::MlaCache::LatentKOnly);
    }

    static std::string mib(Bytes b)
    {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b.value) / static_cast<double>(kMiB));
        return buf;
    }

    static Bytes tokenEmbeddingBytes(const EngineInputs& in)
    {
        Bytes out;
        for (const TensorSpec& t : listTensors(in.arch))
            if (t.role == TensorRole::TokenEmbedding)
                out += priceTensor(t, in.request.format, in.arch).bytes;
        return out;
    }

    // The llama_context_params of the plan: -c = context x sequences (ctx-size), -np, -b, -ub, -fa,
    // -ctk/-ctv, --swa-full, --kv-unified, and the MLA cache of the version.
    static llamacpp::ContextSettings contextSettings(const EngineInputs& in)
    {
        const EngineSettings& s = in.settings;
        const EngineSetup& setup = in.setup;
        llamacpp::ContextSettings c;
        c.parallel = static_cast<std::uint32_t>(std::min<std::uint64_t>(setup.users, 1u << 20));
        c.ctxSizeTokens = s.integer("ctx-size").value_or(checkedMul(setup.contextTokens, setup.users, "ctx-size"));
        if (c.ctxSizeTokens == 0)
            c.ctxSizeTokens = checkedMul(in.arch.contextLength, 1);
        c.batchTokens = s.integer("batch-size").value_or(2048);
        c.ubatchTokens = setup.ubatchTokens > 0 ? setup.ubatchTokens : 512;
        c.flashAttention = setup.flashAttention;
        const std::optional<KvDtype> k = findKvDtype(setup.kvDtypeId.empty() ? "fp16" : setup.kvDtypeId);
        const std::optional<KvDtype> v = findKvDtype(setup.kvDtypeVId.empty() ? setup.kvDtypeId : setup.kvDtypeVId);
        c.typeK = k.value_or(*findKvDtype("fp16"));
        c.typeV = v.value_or(c.typeK);
        c.swaFull = s.boolean("swa-full").value_or(false);
        c.kvUnified = s.boolean("kv-unified").value_or(false);
        c.mlaCache = mlaCacheOf(in.request.engine.requestedVersion);
        return c;
    }
};

} // namespace

const Engine& llamaCppEngine()
{
    static const LlamaCppEngine engine;
    return engine;
}

} // namespace headroom::engines
