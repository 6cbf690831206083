#include "headroom/core/plan.h"

#include "headroom/core/engines/engine.h"
#include "headroom/core/enginerules.h"
#include "headroom/core/parameters.h"
#include "headroom/core/speed/hostbandwidth.h"
#include "headroom/core/splitbill.h"

#include "sharding.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace headroom {

namespace {

// The weights of the busiest device and the layers it holds.
struct DeviceWeights {
    Bytes bytes;
    std::uint32_t firstLayer = 0;
    std::uint32_t layerCount = 0;
};

// Splits the layers into pp stages of ceil(L/pp) (vLLM get_pp_indices gives the remainder to
// the last stages; the busiest stage holds ceil(L/pp) either way), embeddings on the first
// stage, final norm and lm_head on the last, and shards matrices by tp (column/row parallel
// linear layers and vocab-parallel embeddings; norms, biases and routers replicated).
DeviceWeights busiestDevice(const Architecture& arch, const PricedTensors& list, std::uint32_t tp, std::uint32_t pp)
{
    const std::uint32_t perStage = static_cast<std::uint32_t>(ceilDiv(arch.layers, pp));
    std::vector<Bytes> stage(pp);
    for (std::size_t i = 0; i < list.tensors.size(); ++i) {
        const TensorSpec& t = list.tensors[i];
        Bytes b = list.priced[i].bytes;
        if (tp > 1 && shardedByTensorParallel(t.role))
            b = Bytes{ceilDiv(b.value, tp)};
        std::uint32_t s = 0;
        if (t.layer >= 0)
            s = std::min<std::uint32_t>(static_cast<std::uint32_t>(t.layer) / perStage, pp - 1);
        else if (t.role == TensorRole::Output || (t.role == TensorRole::Norm && t.name.rfind("model.norm", 0) == 0))
            s = pp - 1;
        stage[s] += b;
    }
    DeviceWeights out;
    for (std::uint32_t s = 0; s < pp; ++s) {
        if (stage[s] > out.bytes || s == 0) {
            out.bytes = stage[s];
            out.firstLayer = s * perStage;
            out.layerCount = std::min(perStage, arch.layers - std::min(arch.layers, s * perStage));
        }
    }
    return out;
}

class Planner {
public:
    explicit Planner(const PlanRequest& r) : m_r(r) {}

    tl::expected<PlanResult, std::string> run()
    {
        if (!m_r.model.architecture)
            return tl::unexpected("model '" + m_r.model.id + "' has no architecture: the KV cache cannot be sized");
        m_arch = *m_r.model.architecture;
        if (const std::string problem = validateArchitecture(m_arch); !problem.empty())
            return tl::unexpected("model '" + m_r.model.id + "': " + problem);
        if (m_r.tensorParallel < 1 || m_r.pipelineParallel < 1)
            return tl::unexpected(std::string("tensor and pipeline parallel sizes must be at least 1"));
        if (m_arch.attentionHeads % m_r.tensorParallel != 0)
            return tl::unexpected("--tp " + std::to_string(m_r.tensorParallel) + " does not divide the "
                                  + std::to_string(m_arch.attentionHeads) + " attention heads");
        if (m_r.pipelineParallel > m_arch.layers)
            return tl::unexpected("--pp " + std::to_string(m_r.pipelineParallel) + " exceeds the "
                                  + std::to_string(m_arch.layers) + " layers");
        // One model's layers over several cards is a placement of Ollama's estimator and of
        // llama.cpp's layer split; the sharding engines take identical cards through --tp/--pp.
        if (!m_r.moreGpus.empty() && m_r.engine.kind != EngineKind::Ollama && m_r.engine.kind != EngineKind::LlamaCpp)
            return tl::unexpected(std::to_string(m_r.moreGpus.size() + 1) + " cards: " + m_r.engine.name
                                  + " shards a model over identical GPUs (--tp, --pp with one --card); only ollama and "
                                    "llama.cpp place its layers over several cards");
        const Engine& engine = engineFor(m_r.engine.kind);
        if (m_r.card.hostOnly && !m_r.moreGpus.empty())
            return tl::unexpected(std::string("--card cpu is the host alone (no GPU): it does not combine with GPU cards"));
        auto settings = parseEngineSettings(engine.settings(), m_r.engine.settingDefaults, m_r.engineSettings,
                                            m_r.engine.name + " " + appliedEngineVersion(m_r.engine));
        if (!settings)
            return tl::unexpected(settings.error());
        m_settings = std::move(*settings);
        auto setup = engine.configure(m_r, m_settings);
        if (!setup)
            return tl::unexpected(setup.error());
        m_setup = std::move(*setup);
        if (m_setup.tensorParallel != m_r.tensorParallel || m_setup.pipelineParallel != m_r.pipelineParallel) {
            if (m_arch.attentionHeads % m_setup.tensorParallel != 0)
                return tl::unexpected("tensor-parallel-size " + std::to_string(m_setup.tensorParallel) + " does not divide the "
                                      + std::to_string(m_arch.attentionHeads) + " attention heads");
            if (m_setup.pipelineParallel > m_arch.layers)
                return tl::unexpected("pipeline-parallel-size " + std::to_string(m_setup.pipelineParallel) + " exceeds the "
                                      + std::to_string(m_arch.layers) + " layers");
        }
        m_kvDtype = m_r.kvDtype;
        if (m_setup.kvDtypeId != m_r.kvDtype.id) {
            const std::optional<KvDtype> kv = findKvDtype(m_setup.kvDtypeId);
            if (!kv)
                return tl::unexpected(m_r.engine.name + ": unknown KV dtype '" + m_setup.kvDtypeId + "'");
            m_kvDtype = *kv;
        }
        fillInputs();
        priceWeights();
        priceKv();
        m_out.refusals = engine.compatibility(m_r, m_setup);
        if (auto draft = priceDraft(engine); !draft)
            return tl::unexpected(draft.error());
        // No GPU (the host-only card): only an engine with a CPU backend runs; the others stop here,
        // before a bill of a device that does not exist.
        if (m_r.card.hostOnly && !engine.runsOnHost()) {
            m_out.refusals.push_back({FitLimit::EngineNeedsGpu,
                                      engine.offloadsLayers()
                                          ? m_r.engine.name + " on the CPU alone (library=cpu) is not planned here yet: --card cpu "
                                                "has no GPU; plan llama.cpp (--engine llama.cpp), or a GPU card with --offload none"
                                          : m_r.engine.name + " needs a GPU: Headroom plans its GPU (CUDA/ROCm) build, and --card "
                                                "cpu has none; on the CPU alone plan llama.cpp (--engine llama.cpp)"});
            m_out.verdict = decideVerdict(verdictQuestion(), m_out);
            m_out.fits = m_out.verdict.fits();
            m_out.reason = m_out.verdict.reason;
            return m_out;
        }
        if (m_r.gpuLayers && *m_r.gpuLayers <= m_arch.layers && !engine.offloadsLayers())
            m_out.refusals.push_back({FitLimit::EngineRefusesToStart,
                                      m_r.engine.name + " keeps every layer on the GPU: it has no layer offload (--offload "
                                          + std::to_string(*m_r.gpuLayers) + " asks for "
                                          + std::to_string(m_arch.layers + 1 - *m_r.gpuLayers)
                                          + " layers in host memory); llama.cpp and Ollama can split the layers"});
        applyBill(engine);
        if (m_r.layerOffloadAsked && !engine.offloadsLayers())
            noteNoLayerOffload(engine);
        computeCapacity();
        if (!m_r.measured.source.empty())
            m_out.notes.push_back(m_r.measured.source);
        return m_out;
    }

private:
    void fillInputs()
    {
        m_out.modelId = m_r.model.id;
        m_out.formatId = m_r.format.id;
        m_out.kvDtypeId = m_kvDtype.id;
        m_out.cardId = m_r.card.id;
        m_out.engineId = m_r.engine.id;
        m_out.engineVersion = appliedEngineVersion(m_r.engine);
        m_out.tensorParallel = m_setup.tensorParallel;
        m_out.pipelineParallel = m_setup.pipelineParallel;
        m_out.cardTotalBytes = m_r.card.totalBytes;
        m_out.hostOnly = m_r.card.hostOnly;
        m_out.flashAttention = m_setup.flashAttention;
        m_out.ubatchTokens = m_setup.ubatchTokens;
        m_out.paging = m_setup.paging;
        m_out.modelContextTokens = m_arch.contextLength;
        m_out.users = m_setup.users;
        m_out.contextTokens = m_setup.contextTokens;
    }

    void priceWeights()
    {
        const std::uint32_t tp = m_setup.tensorParallel;
        const std::uint32_t pp = m_setup.pipelineParallel;
        // One list, priced once, for the bill, the busiest device and the speed inputs.
        m_tensors = sharedPricedTensors(m_arch, m_r.format);
        const WeightBill& bill = m_tensors->bill;
        m_out.weightsByRole = bill.bytesByRole;
        const DeviceWeights device = busiestDevice(m_arch, m_tensors->list, tp, pp);
        m_firstLayer = device.firstLayer;
        m_layerCount = device.layerCount;
        const std::optional<std::uint64_t> nominal =
            m_r.nominalParameters ? m_r.nominalParameters : m_r.model.nominalParameters;
        const auto& exact = m_r.model.exactWeights;
        if (nominal) {
            m_out.parameters = *nominal;
            m_out.parametersSource = "nominal";
            m_out.weightsBytes = Bytes{ceilDiv(nominalWeightBytes(*nominal, m_r.format).value, std::uint64_t{tp} * pp)};
            char bpw[32];
            std::snprintf(bpw, sizeof bpw, "%.6g", m_r.format.nominalBitsPerWeight());
            m_out.notes.push_back(std::string("weights from the nominal parameter count at ") + bpw + " bits per weight");
        } else if (exact && exact->formatId == m_r.format.id) {
            m_out.parameters = exact->parameters;
            m_out.parametersSource = "files";
            m_out.weightsExact = true;
            m_out.weightsBytes = Bytes{ceilDiv(exact->totalBytes.value, std::uint64_t{tp} * pp)};
            m_out.weightsByRole.clear();
            for (const auto& [type, bytes] : exact->bytesByType)
                m_out.weightsByRole[type] = bytes;
        } else {
            m_out.parameters = bill.parameters;
            m_out.parametersSource = "architecture";
            m_out.weightsBytes = device.bytes;
        }
    }

    void priceKv()
    {
        // Separate K and V cache types (llama.cpp -ctk/-ctv): K rows in one, V rows in the other.
        const std::optional<KvDtype> v =
            m_setup.kvDtypeVId.empty() ? std::optional<KvDtype>(m_kvDtype) : findKvDtype(m_setup.kvDtypeVId);
        m_out.kv = kvLayout(m_arch, m_kvDtype, v.value_or(m_kvDtype), m_setup.tensorParallel, m_firstLayer, m_layerCount,
                            m_setup.stateElementBytes);
        m_out.kvBytesPerToken = m_out.kv.bytesPerToken();
        if (m_out.kv.recurrentLayers > 0)
            m_out.notes.push_back(std::to_string(m_out.kv.recurrentLayers) + " recurrent layers keep "
                                  + formatBytes(m_out.kv.stateBytesPerSequence)
                                  + " of state per sequence, whatever its context (counted per user)");
        if (m_arch.kvHeads > 0 && m_arch.kvHeads < m_setup.tensorParallel && !m_arch.mla.enabled())
            m_out.notes.push_back("KV heads (" + std::to_string(m_arch.kvHeads) + ") fewer than --tp: each device keeps a replicated head");
    }

    // The draft model of speculative decoding (--draft): its weights on the busiest device, sharded
    // by tp like the target's (vLLM's draft_tensor_parallel_size defaults to the target's,
    // vllm/config/speculative.py), and its KV cache for the same cells: vLLM registers the draft's
    // attention layers in the one KV cache config (vllm/v1/worker/gpu_model_runner.py
    // get_kv_cache_spec walks every attention layer, the drafter's included), and llama.cpp's draft
    // context copies the target's n_ctx and n_seq_max (common/speculative.cpp
    // common_base_params_to_speculative, the llama.cpp bundled in node-llama-cpp 3.21.1) with its
    // own cache types, f16 unless -ctkd/-ctvd.
    tl::expected<void, std::string> priceDraft(const Engine& engine)
    {
        if (!m_r.draft)
            return {};
        const DraftRequest& d = *m_r.draft;
        if (!d.model.architecture)
            return tl::unexpected("draft model '" + d.model.id + "' has no architecture: its KV cache cannot be sized");
        const Architecture& da = *d.model.architecture;
        if (const std::string problem = validateArchitecture(da); !problem.empty())
            return tl::unexpected("draft model '" + d.model.id + "': " + problem);
        m_out.draftModelId = d.model.id;
        m_out.draftFormatId = d.format.id;
        const DraftSupport support = engine.draftSupport();
        if (support.setting.empty()) {
            m_out.refusals.push_back({FitLimit::EngineRefusesToStart,
                                      m_r.engine.name + " " + support.whyNot + " (--draft " + d.model.id + ")"});
            return {};
        }
        const std::uint32_t tp = m_setup.tensorParallel;
        const auto& exact = d.model.exactWeights;
        const Bytes whole = exact && exact->formatId == d.format.id ? exact->totalBytes : headroom::priceWeights(da, d.format).totalBytes;
        m_out.draftWeightsBytes = Bytes{ceilDiv(whole.value, tp)};
        m_out.weightsBytes += m_out.draftWeightsBytes;
        m_out.weightsByRole["draft"] += whole;
        const KvDtype k = support.sixteenBitKv ? *findKvDtype("fp16") : m_kvDtype;
        const std::optional<KvDtype> v = support.sixteenBitKv || m_setup.kvDtypeVId.empty()
            ? std::optional<KvDtype>(k) : findKvDtype(m_setup.kvDtypeVId);
        const KvLayout dk = kvLayout(da, k, v.value_or(k), tp, 0, 0, m_setup.stateElementBytes);
        m_draftKv = dk;
        addDraftLayout(m_out.kv, dk);
        m_out.draftKvBytesPerToken = dk.bytesPerToken();
        m_out.kvBytesPerToken = m_out.kv.bytesPerToken();
        m_out.notes.push_back("draft model " + d.model.id + " (" + d.format.id + ", " + support.setting + "): "
                              + formatBytes(m_out.draftWeightsBytes) + " of weights and "
                              + formatBytes(m_out.draftKvBytesPerToken) + " of KV per token (" + k.id
                              + ") join the bill, for the same context and users");
        return {};
    }

    // The draft model's layout @p dk joins the target's @p kv.
    static void addDraftLayout(KvLayout& kv, const KvLayout& dk)
    {
        kv.fullBytesPerToken += dk.fullBytesPerToken;
        kv.fullLayers += dk.fullLayers;
        if (dk.slidingLayers > 0 && (kv.slidingLayers == 0 || kv.windowTokens == dk.windowTokens)) {
            kv.slidingBytesPerToken += dk.slidingBytesPerToken;
            kv.slidingLayers += dk.slidingLayers;
            kv.windowTokens = dk.windowTokens;
        } else if (dk.slidingLayers > 0) {
            // Two windows: the draft's sliding layers are counted as full ones (an upper bound).
            kv.fullBytesPerToken += dk.slidingBytesPerToken;
            kv.fullLayers += dk.slidingLayers;
        }
        kv.stateBytesPerSequence += dk.stateBytesPerSequence;
        kv.recurrentLayers += dk.recurrentLayers;
    }

    // The engine's bill of the busiest device.
    void applyBill(const Engine& engine)
    {
        const EngineInputs in{m_r, m_arch, m_settings, m_setup, m_out.weightsBytes, m_out.kv, m_out.kvBytesPerToken};
        EngineBill bill = engine.bill(in);
        m_out.usableBytes = bill.usableBytes;
        if (bill.devicesTotalBytes)
            m_out.cardTotalBytes = *bill.devicesTotalBytes;
        m_out.overheads = std::move(bill.overheads);
        m_out.reserved = std::move(bill.reserved);
        m_out.kvBudgetBytes = bill.kvBudgetBytes;
        m_out.maxConcurrency = bill.maxConcurrency;
        m_out.engineFigures = std::move(bill.figures);
        m_out.engineSettings = m_settings.values();
        for (EngineRefusal& refusal : bill.refusals)
            m_out.refusals.push_back(std::move(refusal));
        for (std::string& note : bill.notes)
            m_out.notes.push_back(std::move(note));
        // The engine's own layout per token (bill.h kvLayout): the capacity below and the KV
        // figures of its bill then come from one number (llama.cpp's MLA cache by build).
        if (bill.kvLayout) {
            m_out.kv = *bill.kvLayout;
            if (m_draftKv)
                addDraftLayout(m_out.kv, *m_draftKv);
            m_out.kvBytesPerToken = m_out.kv.bytesPerToken();
        }
        const Bytes blockBytes = m_out.kvBytesPerToken * m_out.paging.blockTokens;
        if (bill.kvBlocks)
            m_out.kvBlocks = *bill.kvBlocks;
        else if (blockBytes.value > 0)
            m_out.kvBlocks = m_out.kvBudgetBytes.value / blockBytes.value;
        // vLLM --cpu-offload-gb: the offloaded weights leave the device (engines/vllmoffload.h).
        if (const EngineFigure* off = ownFigure("cpu_offloaded_bytes")) {
            m_offloadedBytes = Bytes{static_cast<std::uint64_t>(off->value)};
            m_out.weightsBytes = saturatingSub(m_out.weightsBytes, m_offloadedBytes);
        }
        m_weightsFit = m_out.weightsBytes + totalBytes(m_out.overheads) <= m_out.usableBytes;
    }

    // --offload typed for an engine that keeps every layer on the GPU: say that it is not applied,
    // and what the engine offers instead (Engine::weightOffloadHint) with the plan's own shortfall.
    void noteNoLayerOffload(const Engine& engine)
    {
        const std::string asked = !m_r.gpuLayers ? std::string("auto")
                                  : *m_r.gpuLayers == 0 ? std::string("none")
                                                        : std::to_string(*m_r.gpuLayers);
        std::string note = m_r.engine.name + " keeps every layer on the GPU and has no layer offload: --offload " + asked
                         + " is not applied";
        const Bytes shortfall = saturatingSub(m_out.weightsBytes + totalBytes(m_out.overheads), m_out.usableBytes);
        const EngineInputs in{m_r, m_arch, m_settings, m_setup, m_out.weightsBytes, m_out.kv, m_out.kvBytesPerToken};
        if (const std::string hint = engine.weightOffloadHint(in, shortfall); !hint.empty())
            note += "; " + hint;
        m_out.notes.push_back(std::move(note));
    }

    const EngineFigure* ownFigure(const char* name) const
    {
        for (const EngineFigure& f : m_out.engineFigures)
            if (f.name == name)
                return &f;
        return nullptr;
    }

    void computeCapacity()
    {
        const KvPool pool = m_out.pool();
        m_out.maxResidentTokens = m_weightsFit ? maxResidentTokens(pool) : 0;
        // max_users answers "at the context you asked for" (and Ollama's default num_ctx).
        if ((m_setup.contextAsked || m_setup.usersAsked) && m_out.contextTokens > 0 && m_weightsFit) {
            m_out.maxUsers = maxUsers(pool, m_out.contextTokens);
            if (m_setup.maxSequences && *m_out.maxUsers > *m_setup.maxSequences)
                m_out.maxUsers = *m_setup.maxSequences;
        }
        if (m_setup.maxSequences)
            m_out.sequenceCap = SequenceCap{*m_setup.maxSequences, m_setup.maxSequencesSetting};
        if (m_setup.usersAsked && m_weightsFit) {
            std::uint64_t c = maxContextTokens(pool, m_setup.users);
            if (m_out.modelContextTokens > 0 && c > m_out.modelContextTokens)
                c = m_out.modelContextTokens; // the verdict names the trained context when it binds
            m_out.maxContext = c;
        }
        if (m_weightsFit)
            m_out.frontier = frontier(pool, m_out.modelContextTokens);
        splitCapacity();
        m_out.verdict = decideVerdict(verdictQuestion(), m_out);
        m_out.fits = m_out.verdict.fits();
        m_out.reason = m_out.verdict.reason;
        estimateSpeed();
    }

    // A layer split (splitbill.h): the card's pool is not what holds the KV (the weights do not
    // fit it whole); the split's own cells are, the context per sequence the engine placed it for
    // in every sequence. Its max resident tokens and, users asked, its max context are those, so
    // that `plan`, `flags`, the reports and the app print the same figures as the verdict.
    void splitCapacity()
    {
        const SplitBill split = splitBill(m_out);
        if (!split.partial)
            return;
        m_out.maxResidentTokens = split.residentTokens;
        if (m_setup.usersAsked)
            m_out.maxContext = split.contextTokensPerSequence; // the verdict's headline (verdict.cpp)
    }

    // The request as the verdict reads it: the question asked in either spelling (--context or
    // the engine's max-model-len) and the engine's minimum context of this setup. A copy only
    // when the settings changed them.
    const PlanRequest& verdictQuestion()
    {
        if (m_setup.askedContextTokens == m_r.contextTokens && m_setup.askedUsers == m_r.users
            && m_setup.minContextTokens == m_r.engine.minContextTokens)
            return m_r;
        m_question = m_r;
        m_question->contextTokens = m_setup.askedContextTokens;
        m_question->users = m_setup.askedUsers;
        m_question->engine.minContextTokens = m_setup.minContextTokens;
        return *m_question;
    }

    void estimateSpeed()
    {
        const SpeedCalibration& cal = m_r.speedCalibration;
        const double bandwidth = cal.bandwidthGBps.value_or(m_r.card.bandwidthGBps);
        const double tflops = cal.peakTflops.value_or(m_r.card.fp16Tflops);
        if (bandwidth <= 0)
            return;
        SpeedInputs in = speedInputs(m_arch, m_tensors->list.tensors, m_out.weightsBytes, m_out.kvBytesPerToken, bandwidth, tflops);
        in.calibrated = cal.bandwidthGBps.has_value();
        const std::uint64_t ctx = m_out.contextTokens > 0 ? m_out.contextTokens : 1;
        m_out.speed = summarizeSpeed(in, m_out.users, ctx);
        estimateSplitSpeed(bandwidth);
        estimateOffloadSpeed();
    }

    // vLLM --cpu-offload-gb: every forward pass reads the offloaded parameters from pinned host
    // memory over the host link (UVA in V1, copies in V0), once per step for the whole batch.
    void estimateOffloadSpeed()
    {
        if (m_offloadedBytes.value == 0 || !m_out.speed || m_out.speed->decodeTokensPerSecond <= 0)
            return;
        const double deviceMs = 1000.0 / m_out.speed->decodeTokensPerSecond;
        const double linkMs = static_cast<double>(m_offloadedBytes.value) / (kPcie4x16GBps * 1e9) * 1000.0;
        SpeedSummary& sp = *m_out.speed;
        sp.decodeTokensPerSecond = 1000.0 / (deviceMs + linkMs);
        if (sp.tpotMs > 0) {
            sp.tpotMs += linkMs; // one read of the offloaded weights serves the whole batch
            sp.aggregateTokensPerSecond = static_cast<double>(std::max<std::uint64_t>(sp.users, 1)) * 1000.0 / sp.tpotMs;
        }
        char line[240];
        std::snprintf(line, sizeof line,
                      "offload speed: the %.2f GiB offloaded cross the host link every step (%.1f ms at PCIe 4.0 x16, "
                      "%.1f GB/s, assumed) beside %.1f ms on the GPU: about %.1f tokens/s",
                      static_cast<double>(m_offloadedBytes.value) / static_cast<double>(kGiB), linkMs, kPcie4x16GBps,
                      deviceMs, m_out.speed->decodeTokensPerSecond);
        m_out.notes.push_back(line);
    }

    // The batch figures of a split (issue 10: the speed shown is the speed of what loads, not the
    // all-on-GPU roofline of a model that does not fit). A decode step of b sequences reads every
    // resident weight once and each sequence's KV on its side (@p gpu and @p host hold one
    // sequence's), and sends b hidden states over the
    // link at each crossing (splitspeed.h, memory-bound: the host's compute is not modelled, so no
    // point is marked compute-bound and there is no knee). The prefill runs on the GPU: for a batch
    // of 32 tokens or more ggml's CUDA backend takes the matmuls of host-resident weights and the
    // scheduler copies those weights over the link for every micro-batch
    // (ggml/src/ggml-cuda/ggml-cuda.cu ggml_backend_cuda_device_offload_op, min_batch_size 32;
    // ggml-backend.cpp ggml_backend_sched_split_graph), so TTFT adds ceil(context / n_ubatch)
    // copies of the host weights at the link's bandwidth to the all-on-GPU compute roofline.
    void splitBatchFigures(const std::vector<SplitSide>& gpus, const SplitSide& host, std::uint32_t crossings, Bytes activation)
    {
        SpeedSummary& s = *m_out.speed;
        const auto scaled = [](const SplitSide& side, std::uint64_t batch) {
            return SplitSide{side.weightsBytes, side.expertBytes, Bytes{side.kvBytes.value * batch}, side.bandwidthGBps};
        };
        const auto stepOf = [&](std::uint64_t batch) {
            std::vector<SplitSide> g;
            for (const SplitSide& d : gpus)
                g.push_back(scaled(d, batch));
            return splitDecodeSpeed(g, scaled(host, batch), m_arch.moe.expertCount, m_arch.moe.expertsPerToken, crossings,
                                    Bytes{activation.value * batch}).stepMs;
        };
        for (SpeedPoint& pt : s.curve) {
            pt.stepMs = stepOf(pt.batch);
            pt.tokensPerSecond = pt.stepMs > 0 ? 1000.0 * static_cast<double>(pt.batch) / pt.stepMs : 0;
            pt.computeBound = false;
        }
        const std::uint64_t users = std::max<std::uint64_t>(s.users, 1);
        s.tpotMs = stepOf(users);
        s.aggregateTokensPerSecond = s.tpotMs > 0 ? 1000.0 * static_cast<double>(users) / s.tpotMs : 0;
        s.kneeBatch.reset();
        const std::uint64_t ubatch = m_out.ubatchTokens > 0 ? m_out.ubatchTokens : 512;
        const std::uint64_t microBatches = (s.contextTokens + ubatch - 1) / ubatch;
        s.ttftMs += static_cast<double>(microBatches) * static_cast<double>(host.weightsBytes.value)
                    / (kPcie4x16GBps * 1e9) * 1000.0;
    }

    // A layer split (the engine's split_* figures, llama.cpp/Ollama): one sequence's decode step
    // over the GPU(s) and the host at --host-bandwidth (speed/splitspeed.h). Over several cards
    // (-c A -c B, the engine's per-device figures cudaN_weights_bytes / cudaN_kv_buffer_bytes /
    // cudaN_expert_bytes) each device is priced at its own card's bandwidth and the devices add up,
    // one after the other (splitspeed.h: llama.cpp --split-mode layer runs them in sequence for a
    // token); a measured bandwidth (--calibration) is the first card's.
    void estimateSplitSpeed(double gpuBandwidth)
    {
        const auto figure = [&](const std::string& name) -> std::optional<double> {
            for (const EngineFigure& f : m_out.engineFigures)
                if (f.name == name)
                    return f.value;
            return std::nullopt;
        };
        const auto bytes = [&](const std::string& name) { return Bytes{static_cast<std::uint64_t>(figure(name).value_or(0))}; };
        const auto layers = figure("offload_gpu_layers");
        if (!figure("split_gpu_weights_bytes") || !layers)
            return;
        SplitDecode d;
        d.gpuLayers = static_cast<std::uint32_t>(*layers);
        d.totalLayers = m_arch.layers + 1;
        d.hostBandwidthAssumed = !m_r.hostBandwidthGBps.has_value();
        d.hostBandwidthGBps = m_r.hostBandwidthGBps.value_or(kDefaultHostBandwidthGBps);
        // The split_*_kv_bytes figures are each side's whole KV buffer (every user's cells); one
        // sequence's step attends over its own cells, a users-th of it.
        const std::uint64_t users = std::max<std::uint64_t>(m_out.speed->users, 1);
        std::vector<SplitSide> gpus;
        for (std::size_t n = 0; !m_r.moreGpus.empty() && n <= m_r.moreGpus.size(); ++n) {
            const std::string id = "cuda" + std::to_string(n);
            if (!figure(id + "_weights_bytes"))
                break;
            gpus.push_back({bytes(id + "_weights_bytes"), bytes(id + "_expert_bytes"),
                            Bytes{bytes(id + "_kv_buffer_bytes").value / users},
                            n == 0 ? gpuBandwidth : m_r.moreGpus[n - 1].card.bandwidthGBps});
        }
        if (gpus.size() < 2) {
            gpus.assign(1, SplitSide{bytes("split_gpu_weights_bytes"), bytes("split_gpu_expert_bytes"),
                                     Bytes{bytes("split_gpu_kv_bytes").value / users}, gpuBandwidth});
        }
        const SplitSide host{bytes("split_host_weights_bytes"), bytes("split_host_expert_bytes"),
                             Bytes{bytes("split_host_kv_bytes").value / users}, d.hostBandwidthGBps};
        const auto crossings = static_cast<std::uint32_t>(figure("split_crossings").value_or(0));
        const Bytes activation{std::uint64_t{m_arch.hiddenSize} * 4};
        d.speed = splitDecodeSpeed(gpus, host, m_arch.moe.expertCount, m_arch.moe.expertsPerToken, crossings, activation);
        for (const SplitSide& g : gpus)
            d.devicesBandwidthGBps.push_back(g.bandwidthGBps);
        m_out.speed->decodeTokensPerSecond = d.speed.tokensPerSecond;
        m_out.speed->split = d;
        splitBatchFigures(gpus, host, crossings, activation);
        std::string devices;
        if (gpus.size() > 1) {
            char one[64];
            for (std::size_t n = 0; n < gpus.size(); ++n) {
                std::snprintf(one, sizeof one, "%sCUDA%zu %.1f ms at %.0f GB/s", n ? ", " : ": ", n, d.speed.devicesMs[n],
                              gpus[n].bandwidthGBps);
                devices += one;
            }
        }
        char line[400];
        std::snprintf(line, sizeof line,
                      "split speed: %u of %u layers on the GPU%s: about %.1f tokens/s (GPU %.1f ms%s, host %.1f ms at %s%s, link %.2f ms a token)",
                      d.gpuLayers, d.totalLayers, gpus.size() > 1 ? "s" : "", d.speed.tokensPerSecond, d.speed.gpuMs,
                      devices.c_str(), d.speed.hostMs, hostBandwidthText(m_r.hostBandwidthGBps).c_str(),
                      d.hostBandwidthAssumed ? ", --host-bandwidth to set" : "", d.speed.linkMs);
        m_out.notes.push_back(line);
    }

    const PlanRequest& m_r;
    Architecture m_arch;
    EngineSettings m_settings;
    EngineSetup m_setup;
    KvDtype m_kvDtype;
    std::optional<PlanRequest> m_question;
    PlanResult m_out;
    /// listTensors(m_arch) priced in the request's format and its bill (priceWeights; shared
    /// between plans of the same model and format, parameters.h sharedPricedTensors)
    std::shared_ptr<const PricedTensorsEntry> m_tensors;
    std::uint32_t m_firstLayer = 0;
    std::optional<KvLayout> m_draftKv; // the draft model's KV layout (priceDraft), re-added to an engine's own
    std::uint32_t m_layerCount = 0;
    bool m_weightsFit = false;
    Bytes m_offloadedBytes; ///< vLLM --cpu-offload-gb: weights in host memory, not on the device
};

} // namespace

tl::expected<PlanResult, std::string> makePlan(const PlanRequest& request)
{
    try {
        return Planner(request).run();
    } catch (const OverflowError& e) {
        return tl::unexpected(std::string("arithmetic overflow (") + e.what() + ") planning "
                              + formatThousands(request.users.value_or(1)) + (request.users.value_or(1) == 1 ? " user x " : " users x ")
                              + formatThousands(request.contextTokens.value_or(0)) + " tokens of '" + request.model.id
                              + "': lower --users or --context");
    }
}

} // namespace headroom
