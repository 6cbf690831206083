// Ollama: before v0.12.11 its own estimator (llm/memory.go, ollamamemory.h); v0.12.11 to v0.29 its
// own layout (llm/server.go createLayout, ollamalayout.h); from v0.30.0 llama-server's --fit
// (ollamalaunch.h), each split billed as llama.cpp allocates it (engines/llamacpp.cpp).
// MinimumMemory (457 MiB) per CUDA GPU plus OLLAMA_GPU_OVERHEAD before v0.30, default num_ctx by
// VRAM tier (server/routes.go), settings from envconfig/config.go and api/types.go (Options.NumCtx).

#include "common.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/engines/llamacppmemory.h"
#include "headroom/core/engines/ollamamemory.h"
#include "headroom/core/engines/llamacppfit.h"
#include "headroom/core/engines/ollamalaunch.h"
#include "headroom/core/engines/ollamalayout.h"
#include "units.h"

#include <cstdio>

namespace headroom::engines {

namespace {

const std::vector<SettingSpec>& ollamaSettings()
{
    static const std::vector<SettingSpec> specs = {
        makeSpec("num_ctx", SettingType::Integer, "", "context per sequence; default: --context, else Ollama's tier by VRAM",
                 1, kMaxTokens),
        makeSpec("OLLAMA_NUM_PARALLEL", SettingType::Integer, "", "sequences; default: --users, else 1", 1, kMaxSequences),
        makeSpec("OLLAMA_FLASH_ATTENTION", SettingType::Boolean, "", "flash attention; default: the profile's (off)"),
        makeSpec("OLLAMA_KV_CACHE_TYPE", SettingType::Choice, "", "KV cache type (needs flash attention); default: f16", 0, 0,
                 {"f16", "q8_0", "q4_0"}),
        makeSpec("OLLAMA_GPU_OVERHEAD", SettingType::Size, "0", "bytes reserved per GPU besides MinimumMemory"),
        makeSpec("num_gpu", SettingType::Integer, "", "layers on the GPU (output layer included); default: all that fit", 0,
                 1 << 20),
    };
    return specs;
}

std::string kvIdFromOllama(const std::string& v)
{
    return v == "f16" ? "" : v;
}

std::string ollamaFromKvId(const std::string& id)
{
    return id == "fp16" || id == "bf16" ? "f16" : id;
}

class OllamaEngine final : public Engine {
public:
    EngineKind kind() const override { return EngineKind::Ollama; }
    const std::vector<SettingSpec>& settings() const override { return ollamaSettings(); }
    bool offloadsLayers() const override { return true; }

    tl::expected<EngineSetup, std::string> configure(const PlanRequest& r, EngineSettings& s) const override
    {
        const Architecture& arch = *r.model.architecture;
        const std::string& name = r.engine.name;
        EngineSetup setup = baseSetup(r, arch);
        auto ctx = reconcileCount(r.contextTokens, "--context", s, "num_ctx", name, ollamaDefaultContextTokens(r.card.totalBytes));
        if (!ctx)
            return tl::unexpected(ctx.error());
        setup.contextTokens = ctx->value_or(0);
        setup.contextAsked = true; // Ollama always runs at num_ctx
        if (s.given("num_ctx"))
            setup.askedContextTokens = setup.contextTokens;
        auto np = reconcileCount(r.users, "--users", s, "OLLAMA_NUM_PARALLEL", name, std::uint64_t{1});
        if (!np)
            return tl::unexpected(np.error());
        setup.users = **np;
        setup.usersAsked = r.users.has_value() || s.given("OLLAMA_NUM_PARALLEL");
        if (s.given("OLLAMA_NUM_PARALLEL"))
            setup.askedUsers = setup.users;
        // From v0.30 an unset OLLAMA_FLASH_ATTENTION is llama-server's --flash-attn auto on GPUs that
        // support it (llm/llama_server.go LlamaServerFlashAttention; ml/device.go
        // FlashAttentionSupported: CUDA compute 6.0 and later but 7.2, ROCm, Metal, Vulkan), which
        // llama.cpp turns on there; the profile's default (off) is the earlier runners'.
        const bool flashDefault = llamaServerEra(r.engine) ? true : r.engine.flashAttention;
        auto fa = reconcileFlash(r.flashAttention, flashDefault, s, "OLLAMA_FLASH_ATTENTION", name);
        if (!fa)
            return tl::unexpected(fa.error());
        setup.flashAttention = *fa;
        setup.paging.cellPadding = std::max<std::uint64_t>(*fa ? r.engine.cellPaddingFlash : r.engine.cellPaddingNoFlash, 1);
        auto kv = reconcileKvDtype(r.kvDtype, s, "OLLAMA_KV_CACHE_TYPE", name, &kvIdFromOllama, &ollamaFromKvId);
        if (!kv)
            return tl::unexpected(kv.error());
        setup.kvDtypeId = *kv;
        std::optional<std::uint64_t> layers;
        if (r.gpuLayers)
            layers = *r.gpuLayers;
        auto numGpu = reconcileCount(layers, "--offload", s, "num_gpu", name);
        if (!numGpu)
            return tl::unexpected(numGpu.error());
        // Before the llama-server delegation (v0.30) Ollama drops a quantized cache without flash
        // attention ("quantized kv cache requested but flash attention disabled", llm/server.go
        // v0.5.7 and v0.12.11); llama-server is given it and refuses a quantized V cache then.
        if (!llamaServerEra(r.engine) && !setup.flashAttention && !isDefaultKvDtype(setup.kvDtypeId))
            setup.kvDtypeId = "fp16";
        // Since v0.30 Ollama starts llama-server with -c num_ctx x parallel -np parallel: each
        // sequence's stream padded to 256 cells on its own (llamacppmemory.h contextSizes).
        if (!legacy(r.engine)) {
            setup.paging.blockTokens = 256;
            setup.paging.cellPadding = 1;
        } else {
            // The estimator counts cells unpadded, and a sliding layer's batch cells once
            // (parallel x window + batch, fs/ggml/ggml.go GraphSize): the pool holds parallel x
            // window and the bill the rest (estimatorBudget).
            setup.paging.cellPadding = 1;
            setup.ubatchTokens = 0;
        }
        return setup;
    }

    /// Ollama runs GGUF files of GGML types only (fs/ggml/type.go FileType; a safetensors import is
    /// converted to F16/BF16 or quantized to a GGML type, docs/import.md); OLLAMA_KV_CACHE_TYPE
    /// takes f16, q8_0 and q4_0 (docs/faq.md, "K/V cache quantization types").
    std::vector<EngineRefusal> compatibility(const PlanRequest& r, const EngineSetup& setup) const override
    {
        std::vector<EngineRefusal> out = Engine::compatibility(r, setup);
        if (auto format = ggufFormatRefusal(r))
            out.push_back(std::move(*format));
        if (!kvDtypeAccepted(setup.kvDtypeId, {"q8_0", "q4_0"}))
            out.push_back({FitLimit::EngineKvDtype, r.engine.name + " has no " + setup.kvDtypeId
                                                        + " KV cache (OLLAMA_KV_CACHE_TYPE: f16, q8_0, q4_0)"});
        return out;
    }

    EngineBill bill(const EngineInputs& in) const override
    {
        const EnginePolicy& e = in.request.engine;
        EngineBill b;
        if (legacy(e)) {
            legacyGpus(in, b);
            legacyBill(in, b); // the estimator's own terms: MinimumMemory stands for the CUDA runtime
            return b;
        }
        if (llamaServerEra(e))
            return llamaServerPlan(in);
        return ownLayoutPlan(in);
    }

private:
    // Ollama's own estimator decided the bill before v0.12.11 (profile ollama-0.5).
    static bool legacy(const EnginePolicy& e) { return compareVersions(appliedEngineVersion(e), "0.12.11") < 0; }

    // Each GPU's memory.available in device order: the card's (--free/--used, else its total),
    // then the further cards' (PlanRequest::moreGpus).
    static std::vector<Bytes> gpuFreeBytes(const PlanRequest& r)
    {
        std::vector<Bytes> out{r.freeBytes ? std::min(*r.freeBytes, r.card.totalBytes) : r.card.totalBytes};
        for (const GpuDevice& d : r.moreGpus)
            out.push_back(d.freeBytes ? std::min(*d.freeBytes, d.card.totalBytes) : d.card.totalBytes);
        return out;
    }

    static std::vector<Bytes> gpuTotalBytes(const PlanRequest& r)
    {
        std::vector<Bytes> out{r.card.totalBytes};
        for (const GpuDevice& d : r.moreGpus)
            out.push_back(d.card.totalBytes);
        return out;
    }

    static ollama::Settings estimatorSettings(const EngineInputs& in)
    {
        ollama::Settings s;
        s.numCtx = in.setup.contextTokens;
        s.numParallel = static_cast<std::uint32_t>(std::min<std::uint64_t>(in.setup.users, 1u << 20));
        s.flashAttention = in.setup.flashAttention;
        s.kvCacheType = in.settings.text("OLLAMA_KV_CACHE_TYPE").value_or("f16");
        s.version = appliedEngineVersion(in.request.engine);
        s.gpuOverhead = Bytes{in.settings.integer("OLLAMA_GPU_OVERHEAD").value_or(0)};
        return s;
    }

    // num_gpu when asked (--offload or the setting), else -1: as many as fit.
    static std::int64_t numGpuOf(const EngineInputs& in)
    {
        const std::optional<std::uint64_t> asked = in.settings.given("num_gpu") || in.request.gpuLayers
            ? in.settings.integer("num_gpu")
            : std::nullopt;
        return asked ? static_cast<std::int64_t>(std::min<std::uint64_t>(*asked, 1u << 20)) : -1;
    }

    // The GPUs the scheduler gives the model (ollamamemory.h scheduleGpus), as indices in device
    // order of gpuFreeBytes.
    static std::vector<std::size_t> scheduledGpus(const EngineInputs& in)
    {
        return ollama::scheduleGpus(in.arch, in.request.format, estimatorSettings(in), gpuFreeBytes(in.request),
                                    in.request.engine.fixedReserve, numGpuOf(in));
    }

    // usable: every scheduled GPU's memory.available less MinimumMemory and OLLAMA_GPU_OVERHEAD
    // (the estimator keeps both on each GPU, llm/memory.go); what other processes hold is outside.
    static void legacyGpus(const EngineInputs& in, EngineBill& b)
    {
        const PlanRequest& r = in.request;
        const Bytes overhead{in.settings.integer("OLLAMA_GPU_OVERHEAD").value_or(0)};
        const std::vector<Bytes> free = gpuFreeBytes(r);
        const std::vector<Bytes> total = gpuTotalBytes(r);
        const std::vector<std::size_t> gpus = scheduledGpus(in);
        Bytes held;
        Bytes all;
        for (std::size_t g : gpus) {
            b.usableBytes += saturatingSub(free[g], r.engine.fixedReserve + overhead);
            held += total[g] - free[g];
            all += total[g];
        }
        if (free.size() > 1)
            b.devicesTotalBytes = all; // the scheduled GPUs' memory (one when the model fits on one)
        const std::uint64_t n = gpus.size();
        const std::string each = n > 1 ? " on each of " + std::to_string(n) + " GPUs" : std::string();
        if (held.value > 0)
            b.reserved.push_back(item("other_processes", held, "held by other processes (--free/--used)"));
        b.reserved.push_back(item("minimum_memory", Bytes{checkedMul(r.engine.fixedReserve.value, n, "minimum memory")},
                                  "Ollama MinimumMemory per CUDA GPU" + each));
        if (overhead.value > 0)
            b.reserved.push_back(item("gpu_overhead", Bytes{checkedMul(overhead.value, n, "gpu overhead")}, "OLLAMA_GPU_OVERHEAD" + each));
    }

    static std::string mib(Bytes b)
    {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b.value) / static_cast<double>(kMiB));
        return buf;
    }

    static void legacyBill(const EngineInputs& in, EngineBill& b)
    {
        const ollama::Settings s = estimatorSettings(in);
        const std::uint64_t gpus = std::max<std::size_t>(scheduledGpus(in).size(), 1);
        ollama::LegacyEstimate est = ollama::legacyEstimate(in.arch, s);
        if (gpus > 1) // "multigpu should always use the partial graph size" (llm/memory.go)
            est.graphFullBytes = est.graphPartialBytes;
        b.overheads.push_back(item("graph", Bytes{checkedMul(est.graphFullBytes.value, gpus, "graph")},
                                   "Ollama's memory.graph.full for --ctx-size " + std::to_string(est.contextTokens)
                                       + (gpus > 1 ? " on each of " + std::to_string(gpus) + " GPUs" : std::string())
                                       + " (llm/ggml.go GraphSize, " + s.version + ")"));
        const std::string src = "llm/memory.go EstimateGPULayers, llm/ggml.go GraphSize (" + s.version + ")";
        // The vision encoder's graph sits on GPU 0 (llm/memory.go: GPU 0's overhead v0.6.0 to
        // v0.7.0, memoryLastLayer = output + projector weights + projector graph v0.7.1 to v0.12).
        if (est.projectorGraphBytes.value > 0)
            b.overheads.push_back(item("projector_graph", est.projectorGraphBytes,
                                       "Ollama's projector.graph: one image through the vision encoder (fs/ggml/ggml.go VisionGraphSize)"));
        // VisionGraphSize counts the gemma3/mistral3 tower from v0.6.1 (ollamamemory.h).
        const Bytes projector = compareVersions(s.version, "0.6.1") >= 0 ? ollama::projectorWeightsBytes(in.arch, in.request.format) : Bytes{};
        if (projector.value > 0) {
            b.figures.push_back({"projector_weights_bytes", static_cast<double>(projector.value), "bytes",
                                 "projector.weights=\"" + mib(projector) + "\"", src});
            b.figures.push_back({"projector_graph_bytes", static_cast<double>(est.projectorGraphBytes.value), "bytes",
                                 "projector.graph=\"" + mib(est.projectorGraphBytes) + "\"", src});
        }
        b.figures.push_back({"kv_buffer_bytes", static_cast<double>(est.kvBytes.value), "bytes",
                             "memory.required.kv=\"" + mib(est.kvBytes) + "\"", src});
        b.figures.push_back({"compute_buffer_bytes", static_cast<double>(est.graphFullBytes.value), "bytes",
                             "memory.graph.full=\"" + mib(est.graphFullBytes) + "\"", src});
        b.figures.push_back({"graph_partial_bytes", static_cast<double>(est.graphPartialBytes.value), "bytes",
                             "memory.graph.partial=\"" + mib(est.graphPartialBytes) + "\"", src});
        placementFigures(in, s, b);
        estimatorBudget(in, s, est, gpus, b);
        if (est.kvCacheType != asciiLower(s.kvCacheType))
            b.notes.push_back("OLLAMA_KV_CACHE_TYPE=" + s.kvCacheType + " without flash attention: Ollama falls back to f16");
    }

    // The KV budget as the estimator leaves it, so that the verdict, the max users and the max
    // context agree with its layers.offload (llm/memory.go EstimateGPULayers): every layer and the
    // output layer go to the GPU while free > overhead + MinimumMemory + layer 0 (a buffer) +
    // the layers' weights and kv + max(graph partial, full) + the output layer (+ the projector's
    // weights and graph). So the bill holds, beside the graph and the projector graph above: the
    // larger graph's margin, the buffer layer, and the kv the estimator counts beyond the plan's
    // (gemma3's sliding layers: parallel x window + batch cells, the plan's parallel x window);
    // the weights are Ollama's (blk.* + output layer + v.*): a tied model's token_embd counted
    // once, an untied one's left on the host, the mm.* projector matrices not counted.
    static void estimatorBudget(const EngineInputs& in, const ollama::Settings& s, const ollama::LegacyEstimate& est,
                                std::uint64_t gpus, EngineBill& b)
    {
        const ollama::GpuLayerEstimate e = ollama::estimateGpuLayers(in.arch, in.request.format, s, Bytes{}, Bytes{});
        const Bytes graphMax{std::max(est.graphFullBytes.value, est.graphPartialBytes.value)};
        const std::string src = "llm/memory.go EstimateGPULayers (" + s.version + ")";
        const std::string each = gpus > 1 ? " on each of " + std::to_string(gpus) + " GPUs" : std::string();
        if (graphMax > est.graphFullBytes)
            b.overheads.push_back(item("graph_partial_margin", graphMax - est.graphFullBytes,
                                       "the estimator places a layer only where max(memory.graph.partial, full) also fits (" + src + ")"));
        b.overheads.push_back(item("layer_buffer", Bytes{checkedMul(e.layerBufferBytes.value, gpus, "layer buffer")},
                                   "layer 0's weights and kv, \"one layer worth of memory as a buffer\"" + each + " (" + src + ")"));
        const Bytes planned = kvBytes(in.kv, in.setup.users, in.setup.contextTokens, in.setup.paging, in.setup.ubatchTokens);
        if (est.kvBytes > planned)
            b.overheads.push_back(item("kv_estimate_excess", est.kvBytes - planned,
                                       "memory.required.kv beyond the plan's cells for this setup (fs/ggml/ggml.go GraphSize)"));
        const Bytes weights = e.gpuWeightsBytes;
        const Bytes held = weights + totalBytes(b.overheads);
        b.kvBudgetBytes = saturatingSub(b.usableBytes, held);
        if (weights < in.weightsBytes)
            b.notes.push_back("Ollama's estimator counts " + mib(weights) + " of the " + mib(in.weightsBytes)
                              + " of weights (blk.*, the output layer, the v.* tower; " + src + ")");
    }

    // The estimator's placement (llm/memory.go EstimateGPULayers, the rules of s.version,
    // ollamamemory.h): the "offload to cuda" figures; a split below n_layer + 1 is the verdict's partial offload (offload_gpu_layers).
    static void placementFigures(const EngineInputs& in, const ollama::Settings& s, EngineBill& b)
    {
        const PlanRequest& r = in.request;
        const std::vector<Bytes> all = gpuFreeBytes(r);
        const std::vector<std::size_t> gpus = scheduledGpus(in);
        std::vector<Bytes> free;
        for (std::size_t g : gpus)
            free.push_back(all[g]);
        const ollama::GpuLayerEstimate e = ollama::estimateGpuLayers(in.arch, r.format, s, free, r.engine.fixedReserve, numGpuOf(in));
        const std::string src = "llm/memory.go EstimateGPULayers (" + s.version + ")";
        const auto gib = [](Bytes x) {
            char buf[48];
            std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(x.value) / static_cast<double>(kGiB));
            return std::string(buf);
        };
        if (all.size() > 1) {
            // layers.split and memory.required.allocations, one figure a GPU in the order the
            // scheduler passed them (server/sched.go); the note names the cards.
            std::string split;
            std::string allocations;
            std::string cards;
            for (std::size_t k = 0; k < gpus.size(); ++k) {
                const std::string n = std::to_string(k);
                b.figures.push_back({"layers_split_" + n, static_cast<double>(e.gpuLayers[k]), "layers",
                                     "layers.split: GPU " + n + " " + std::to_string(e.gpuLayers[k]) + " layers", src});
                b.figures.push_back({"memory_required_allocation_" + n, static_cast<double>(e.gpuAllocationBytes[k].value),
                                     "bytes", "memory.required.allocations: GPU " + n + " " + gib(e.gpuAllocationBytes[k]), src});
                split += (k ? "," : "") + std::to_string(e.gpuLayers[k]);
                allocations += (k ? " " : "") + gib(e.gpuAllocationBytes[k]);
                cards += (k ? ", " : "") + (gpus[k] == 0 ? r.card.id : r.moreGpus[gpus[k] - 1].card.id) + " "
                         + gib(free[k]) + " free";
            }
            b.notes.push_back("Ollama over " + std::to_string(gpus.size()) + " of " + std::to_string(all.size())
                              + " GPUs (" + cards + "): layers.split=" + split + " memory.required.allocations=\"["
                              + allocations + "]\" (" + src + ", server/sched.go)");
        }
        b.figures.push_back({"layers_offload", static_cast<double>(e.layers), "layers",
                             "layers.offload=" + std::to_string(e.layers), src});
        b.figures.push_back({"memory_required_partial_bytes", static_cast<double>(e.requiredPartialBytes.value), "bytes",
                             "memory.required.partial=\"" + gib(e.requiredPartialBytes) + "\"", src});
        b.figures.push_back({"memory_required_full_bytes", static_cast<double>(e.requiredFullBytes.value), "bytes",
                             "memory.required.full=\"" + gib(e.requiredFullBytes) + "\"", src});
        b.figures.push_back({"memory_weights_total_bytes", static_cast<double>(e.weightsTotalBytes.value), "bytes",
                             "memory.weights.total=\"" + gib(e.weightsTotalBytes) + "\"", src});
        b.figures.push_back({"memory_weights_repeating_bytes", static_cast<double>(e.weightsRepeatingBytes.value), "bytes",
                             "memory.weights.repeating=\"" + gib(e.weightsRepeatingBytes) + "\"", src});
        b.figures.push_back({"memory_weights_nonrepeating_bytes", static_cast<double>(e.weightsNonRepeatingBytes.value), "bytes",
                             "memory.weights.nonrepeating=\"" + mib(e.weightsNonRepeatingBytes) + "\"", src});
        if (e.layers < e.modelLayers)
            b.figures.push_back({"offload_gpu_layers", static_cast<double>(e.layers), "layers",
                                 "offloaded " + std::to_string(e.layers) + "/" + std::to_string(e.modelLayers)
                                     + " layers to GPU (--n-gpu-layers " + std::to_string(e.layers) + ")",
                                 src});
        if (e.layers < e.modelLayers)
            b.figures.push_back({"host_weights_bytes",
                                 static_cast<double>(saturatingSub(e.requiredFullBytes, e.requiredPartialBytes).value), "bytes",
                                 "memory.required.full - partial: the layers left in host memory", src});
    }

    // From v0.30.0 (9db4bdbad, #16031) every GGML model runs in llama-server (ollamalaunch.h).
    static bool llamaServerEra(const EnginePolicy& e) { return compareVersions(appliedEngineVersion(e), "0.30.0") >= 0; }

    // Ollama from v0.30.0 (ollamalaunch.h): the scheduler's GPUs (server/sched.go
    // selectLlamaServerPlacement), then llama.cpp's plan of the command line startLlamaServer
    // builds (engines/llamacpp.cpp: --fit at its 1024 MiB target places the layers, -ngl num_gpu
    // when set), so the split, its per-device buffers and the host's bill are llama.cpp's figures.
    static EngineBill llamaServerPlan(const EngineInputs& in)
    {
        const PlanRequest& r = in.request;
        const std::int64_t numGpu = numGpuOf(in);
        const std::vector<Bytes> free = gpuFreeBytes(r);
        const std::uint64_t numCtx = servedContext(in);
        const Bytes predicted = ollama::predictServerVramBytes(in.arch, in.weightsBytes, numCtx, in.setup.users);
        const std::optional<std::size_t> single = ollama::singleGpuPlacement(predicted, free, numGpu);
        PlanRequest lr = servedRequest(in, numCtx, numGpu);
        if (single) {
            if (*single > 0) {
                lr.card = r.moreGpus[*single - 1].card;
                lr.freeBytes = r.moreGpus[*single - 1].freeBytes;
            }
            lr.moreGpus.clear();
        }
        Bytes available;
        Bytes smallest = free.front();
        for (std::size_t g = 0; g < free.size(); ++g)
            if (!single || g == *single) {
                available += free[g];
                smallest = std::min(smallest, free[g]);
            }
        ollama::LlamaServerLaunch launch = launchOf(in, numCtx, numGpu);
        launch.numBatch = r.ubatchTokens ? *r.ubatchTokens
                                         : ollama::automaticNumBatch(launch.flashAttention, numCtx * in.setup.users, predicted,
                                                                     available, single ? free[*single] : smallest);
        std::vector<EngineSetting> args = ollama::llamaServerSettings(launch);
        // Ollama sets no LLAMA_ARG_FIT_TARGET without a projector: llama.cpp's default target.
        args.push_back({"fit-target", std::to_string(llamacpp::FitDevice{}.marginBytes.value / kMiB)});
        EngineBill b = servedBill(in, lr, args, "Ollama's llama-server: ");
        std::string line = "Ollama " + appliedEngineVersion(r.engine) + " starts llama-server with -c "
                           + std::to_string(numCtx * in.setup.users) + " -np " + std::to_string(in.setup.users) + " -b "
                           + std::to_string(launch.numBatch) + " -ub " + std::to_string(launch.numBatch) + " --flash-attn "
                           + (in.settings.given("OLLAMA_FLASH_ATTENTION") || r.flashAttention
                                  ? std::string(launch.flashAttention ? "on" : "off")
                                  : std::string(launch.flashAttention ? "auto (on)" : "auto (off)"))
                           + (numGpu >= 0 ? " -ngl " + std::to_string(numGpu) : std::string(" (no -ngl: --fit places the layers)"))
                           + "; MinimumMemory and OLLAMA_GPU_OVERHEAD are only logged (llm/llama_server.go, server/sched.go)";
        b.notes.push_back(line);
        b.figures.push_back({"num_batch", static_cast<double>(launch.numBatch), "tokens", "-b " + std::to_string(launch.numBatch),
                             "server/sched.go automaticGenerationBatch"});
        if (free.size() > 1) {
            b.notes.push_back(single ? "Ollama's scheduler runs the model on " + cardName(r, *single) + " alone (PredictServerVRAM "
                                           + formatBytes(predicted) + " <= 80% of its " + formatBytes(free[*single])
                                           + " free; --split-mode none --main-gpu 0, server/sched.go bestSingleGPUFit)"
                                     : "Ollama's scheduler gives llama-server all " + std::to_string(free.size())
                                           + " GPUs (PredictServerVRAM " + formatBytes(predicted)
                                           + " over 80% of each one's free memory, or num_gpu 0; server/sched.go "
                                             "selectLlamaServerPlacement)");
        }
        return b;
    }

    // Ollama v0.12.11 to v0.29 (ollamalayout.h): its createLayout places the layers on the sizes
    // the llama runner estimates, keeping MinimumMemory + OLLAMA_GPU_OVERHEAD + the graph on each
    // GPU it uses; the runner then loads them (-c num_ctx x parallel, -b min(num_batch, num_ctx),
    // the layers each GPU took; no --fit), billed as llama.cpp allocates them.
    static EngineBill ownLayoutPlan(const EngineInputs& in)
    {
        const PlanRequest& r = in.request;
        const std::int64_t numGpu = numGpuOf(in);
        const std::vector<Bytes> free = gpuFreeBytes(r);
        const std::uint64_t numCtx = servedContext(in);
        const Bytes overhead{in.settings.integer("OLLAMA_GPU_OVERHEAD").value_or(0)};
        ollama::Settings s = estimatorSettings(in);
        s.numCtx = numCtx;
        const ollama::RunnerLayers sizes = ollama::runnerLayers(in.arch, r.format, s);
        std::vector<ollama::LayoutGpu> gpus;
        for (Bytes f : free)
            gpus.push_back({f, r.engine.fixedReserve + overhead});
        const std::vector<std::uint32_t> counts = ollama::createLayout(sizes, gpus, numGpu);
        std::uint32_t layers = 0;
        std::vector<std::size_t> used;
        for (std::size_t g = 0; g < counts.size(); ++g) {
            layers += counts[g];
            if (counts[g] > 0)
                used.push_back(g);
        }
        PlanRequest lr = servedRequest(in, numCtx, layers);
        // The llama runner loads NumGpuLayers = the layers listed, -ts their counts
        // (runner/llamarunner/runner.go, v0.12.11); its llama.cpp is b6840 at v0.12.11 (Makefile.sync
        // FETCH_HEAD 3cfa9c3f, #12791), which counts -ngl from the output end with the output layer
        // last, as Ollama's list is (a split leaves the output layer on the host: assignLayers'
        // second pass). Later syncs (b7108, ec98e2002 in December 2025) may predate or follow
        // llama.cpp's output-first offload (PR #18148): the list's placement is billed.
        lr.engine.requestedVersion = "b6840";
        std::string split;
        if (!used.empty()) {
            const auto device = [&](std::size_t g) { return GpuDevice{g == 0 ? r.card : r.moreGpus[g - 1].card, g == 0 ? r.freeBytes : r.moreGpus[g - 1].freeBytes}; };
            lr.card = device(used.front()).card;
            lr.freeBytes = device(used.front()).freeBytes;
            lr.moreGpus.clear();
            for (std::size_t k = 1; k < used.size(); ++k)
                lr.moreGpus.push_back(device(used[k]));
            for (std::size_t k = 0; k < used.size(); ++k)
                split += (k ? "," : "") + std::to_string(counts[used[k]]);
        } else {
            lr.moreGpus.clear();
        }
        ollama::LlamaServerLaunch launch = launchOf(in, numCtx, layers);
        launch.numBatch = std::min<std::uint64_t>(r.ubatchTokens.value_or(512), numCtx); // NewLlamaServer: min(num_batch, num_ctx)
        std::vector<EngineSetting> args = ollama::llamaServerSettings(launch);
        args.push_back({"fit", "off"});
        args.push_back({"fit-target", std::to_string(r.engine.fixedReserve.value / kMiB)});
        if (used.size() > 1)
            args.push_back({"tensor-split", split});
        EngineBill b = servedBill(in, lr, args, "Ollama's llama runner: ");
        // The runner keeps what Ollama's layout kept: MinimumMemory (+ OLLAMA_GPU_OVERHEAD) per GPU.
        const std::uint64_t n = std::max<std::size_t>(used.size(), 1);
        for (OverheadItem& i : b.reserved)
            if (i.name == "fit_margin")
                i = item("minimum_memory", Bytes{checkedMul(r.engine.fixedReserve.value, n, "minimum memory")},
                         "Ollama MinimumMemory per CUDA GPU" + (n > 1 ? " on each of " + std::to_string(n) + " GPUs" : std::string()));
        if (overhead.value > 0) {
            const Bytes all{checkedMul(overhead.value, n, "gpu overhead")};
            b.reserved.push_back(item("gpu_overhead", all, "OLLAMA_GPU_OVERHEAD"));
            b.usableBytes = saturatingSub(b.usableBytes, all);
            b.kvBudgetBytes = saturatingSub(b.kvBudgetBytes, all);
        }
        const std::string src = "llm/server.go createLayout (v0.12.11)";
        b.figures.push_back({"layers_offload", static_cast<double>(layers), "layers",
                             "offloaded " + std::to_string(layers) + "/" + std::to_string(in.arch.layers + 1) + " layers to GPU", src});
        std::string per;
        for (std::size_t g = 0; g < counts.size(); ++g)
            per += (g ? ", " : "") + cardName(r, g) + " " + std::to_string(counts[g]);
        b.notes.push_back("Ollama " + appliedEngineVersion(r.engine) + " lays the layers out itself (" + src + ": the llama runner's "
                          "sizes, one layer as a buffer, MinimumMemory + the graph " + formatBytes(sizes.graphBytes)
                          + " kept on each GPU used): " + std::to_string(layers) + " of " + std::to_string(in.arch.layers + 1)
                          + " layers on the GPU" + (counts.size() > 1 ? " (" + per + ")" : std::string())
                          + "; the Ollama engine's models measure their sizes instead, not modelled");
        return b;
    }

    // The context the runner gets: NewLlamaServer lowers num_ctx to the trained context
    // ("requested context size too large for model", llm/server.go v0.12.11 and fb30760).
    static std::uint64_t servedContext(const EngineInputs& in)
    {
        return in.arch.contextLength > 0 ? std::min(in.setup.contextTokens, in.arch.contextLength) : in.setup.contextTokens;
    }

    // The request llama.cpp's unit is asked about: the generic fields as the command line sets them.
    static PlanRequest servedRequest(const EngineInputs& in, std::uint64_t numCtx, std::int64_t numGpu)
    {
        PlanRequest lr = in.request;
        lr.engineSettings.clear();
        lr.contextTokens = numCtx;
        lr.users = in.setup.users;
        lr.ubatchTokens.reset();
        lr.flashAttention = in.setup.flashAttention;
        lr.kvDtype = *findKvDtype("fp16"); // the cache is the launch's cache-type-k/-v
        lr.gpuLayers = numGpu >= 0 ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(numGpu)) : std::nullopt;
        return lr;
    }

    static ollama::LlamaServerLaunch launchOf(const EngineInputs& in, std::uint64_t numCtx, std::int64_t numGpu)
    {
        ollama::LlamaServerLaunch launch;
        launch.numCtx = numCtx;
        launch.numParallel = in.setup.users;
        launch.flashAttention = in.setup.flashAttention;
        // A cache Ollama lacks is refused by compatibility(); the bill is then priced at f16.
        launch.kvCacheType = kvDtypeAccepted(in.setup.kvDtypeId, {"q8_0", "q4_0"}) && !in.setup.kvDtypeId.empty()
                                 ? ollamaFromKvId(in.setup.kvDtypeId)
                                 : "f16";
        launch.numGpu = numGpu;
        return launch;
    }

    // llama.cpp's bill (engines/llamacpp.cpp) of @p lr under the command line @p args.
    static EngineBill servedBill(const EngineInputs& in, const PlanRequest& lr, const std::vector<EngineSetting>& args,
                                 const std::string& who)
    {
        const Engine& server = llamaCppEngine();
        auto settings = parseEngineSettings(server.settings(), {}, args, in.request.engine.name);
        if (!settings)
            throw std::logic_error(who + settings.error());
        auto setup = server.configure(lr, *settings);
        if (!setup)
            throw std::logic_error(who + setup.error());
        const EngineInputs served{lr, in.arch, *settings, *setup, in.weightsBytes, in.kv, in.kvBytesPerToken};
        EngineBill b = server.bill(served);
        for (EngineRefusal& refusal : b.refusals)
            refusal.reason = who + refusal.reason;
        return b;
    }

    static std::string cardName(const PlanRequest& r, std::size_t g) { return g == 0 ? r.card.id : r.moreGpus[g - 1].card.id; }
};

} // namespace

const Engine& ollamaEngine()
{
    static const OllamaEngine engine;
    return engine;
}

} // namespace headroom::engines
