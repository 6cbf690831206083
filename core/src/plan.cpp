#include "headroom/core/plan.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/parameters.h"

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

bool shardedByTp(TensorRole role)
{
    return role == TensorRole::AttentionMatrix || role == TensorRole::MlpMatrix || role == TensorRole::ExpertMatrix
        || role == TensorRole::TokenEmbedding || role == TensorRole::Output;
}

// Splits the layers into pp stages of ceil(L/pp) (vLLM get_pp_indices gives the remainder to
// the last stages; the busiest stage holds ceil(L/pp) either way), embeddings on the first
// stage, final norm and lm_head on the last, and shards matrices by tp (column/row parallel
// linear layers and vocab-parallel embeddings; norms, biases and routers replicated).
DeviceWeights busiestDevice(const Architecture& arch, const WeightFormat& format, std::uint32_t tp, std::uint32_t pp)
{
    const std::uint32_t perStage = static_cast<std::uint32_t>(ceilDiv(arch.layers, pp));
    std::vector<Bytes> stage(pp);
    for (const TensorSpec& t : listTensors(arch)) {
        Bytes b = priceTensor(t, format, arch).bytes;
        if (tp > 1 && shardedByTp(t.role))
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

OverheadItem item(const char* name, Bytes bytes, std::string note)
{
    return OverheadItem{name, bytes, std::move(note)};
}

Bytes fraction(Bytes total, double f)
{
    return Bytes{static_cast<std::uint64_t>(std::floor(static_cast<double>(total.value) * f))};
}

std::string percent(double f)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g%%", f * 100);
    return buf;
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
        fillInputs();
        priceWeights();
        priceKv();
        applyEngine();
        computeCapacity();
        if (!m_r.measured.source.empty())
            m_out.notes.push_back(m_r.measured.source);
        return m_out;
    }

private:
    void fillInputs()
    {
        const EnginePolicy& e = m_r.engine;
        m_out.modelId = m_r.model.id;
        m_out.formatId = m_r.format.id;
        m_out.kvDtypeId = m_r.kvDtype.id;
        m_out.cardId = m_r.card.id;
        m_out.engineId = e.id;
        m_out.tensorParallel = m_r.tensorParallel;
        m_out.pipelineParallel = m_r.pipelineParallel;
        m_out.cardTotalBytes = m_r.card.totalBytes;
        m_out.flashAttention = m_r.flashAttention.value_or(e.flashAttention);
        m_out.ubatchTokens = m_r.ubatchTokens.value_or(e.ubatchTokens);
        m_out.paging.blockTokens = std::max<std::uint64_t>(e.blockTokens, 1);
        m_out.paging.cellPadding = std::max<std::uint64_t>(m_out.flashAttention ? e.cellPaddingFlash : e.cellPaddingNoFlash, 1);
        m_out.modelContextTokens = m_arch.contextLength;
        m_out.users = m_r.users.value_or(1);
        if (m_r.contextTokens)
            m_out.contextTokens = *m_r.contextTokens;
        else if (e.kind == EngineKind::Ollama)
            m_out.contextTokens = ollamaDefaultContextTokens(m_r.card.totalBytes);
        else
            m_out.contextTokens = m_arch.contextLength;
    }

    void priceWeights()
    {
        const std::uint32_t tp = m_r.tensorParallel;
        const std::uint32_t pp = m_r.pipelineParallel;
        const WeightBill bill = headroom::priceWeights(m_arch, m_r.format);
        m_out.weightsByRole = bill.bytesByRole;
        const DeviceWeights device = busiestDevice(m_arch, m_r.format, tp, pp);
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
        m_out.kv = kvLayout(m_arch, m_r.kvDtype, m_r.tensorParallel, m_firstLayer, m_layerCount);
        m_out.kvBytesPerToken = m_out.kv.bytesPerToken();
        if (m_arch.kvHeads > 0 && m_arch.kvHeads < m_r.tensorParallel && !m_arch.mla.enabled())
            m_out.notes.push_back("KV heads (" + std::to_string(m_arch.kvHeads) + ") fewer than --tp: each device keeps a replicated head");
    }

    // Items every GPU engine pays inside its usable memory.
    void addRuntimeItems(bool activations)
    {
        const EnginePolicy& e = m_r.engine;
        const Bytes runtime = m_r.measured.runtimeBytes.value_or(e.runtimeBytes);
        m_out.overheads.push_back(item("cuda_context", runtime,
                                       m_r.measured.runtimeBytes ? "measured" : "CUDA context and non-torch memory (engine profile)"));
        if (e.workspaceBytes.value > 0)
            m_out.overheads.push_back(item("workspace", e.workspaceBytes, "cuBLAS/cuBLASLt workspace"));
        if (activations) {
            const Bytes act = m_r.measured.activationPeakBytes.value_or(
                activationPeakBytes(m_arch, m_out.ubatchTokens, std::max(m_out.contextTokens, m_out.ubatchTokens), m_out.flashAttention));
            m_out.overheads.push_back(item("activation_peak", act,
                                           m_r.measured.activationPeakBytes
                                               ? std::string("measured")
                                               : "prefill chunk of " + std::to_string(m_out.ubatchTokens) + " tokens, "
                                                   + (m_out.flashAttention ? "flash attention" : "full fp32 scores")));
            if (e.logitsOnDevice && !m_r.measured.activationPeakBytes) { // a measured peak includes the logits
                const std::uint64_t outputs = std::min<std::uint64_t>(m_out.ubatchTokens, 256);
                m_out.overheads.push_back(item("logits", logitsBytes(m_arch, outputs),
                                               "vocab x " + std::to_string(outputs) + " outputs x 4 B"));
            }
        }
        const Bytes graphs = m_r.measured.cudaGraphBytes.value_or(e.cudaGraphBytes);
        if (graphs.value > 0)
            m_out.overheads.push_back(item("cuda_graphs", graphs, m_r.measured.cudaGraphBytes ? "measured" : "engine profile"));
    }

    void applyEngine()
    {
        const EnginePolicy& e = m_r.engine;
        const Bytes total = m_r.card.totalBytes;
        switch (e.kind) {
        case EngineKind::Flat:
            m_out.reserved.push_back(item("flat_reserve", e.fixedReserve, "--reserve: everything beyond weights and KV"));
            m_out.usableBytes = saturatingSub(total, e.fixedReserve);
            break;
        case EngineKind::Vllm:
        case EngineKind::Tgi:
            m_out.usableBytes = fraction(total, e.memoryFraction);
            m_out.reserved.push_back(item(e.kind == EngineKind::Vllm ? "utilization_headroom" : "wiggle_room",
                                          total - m_out.usableBytes,
                                          "1 - " + percent(e.memoryFraction) + " of the card total"));
            addRuntimeItems(true);
            break;
        case EngineKind::LlamaCpp:
        case EngineKind::Ollama:
            m_out.usableBytes = saturatingSub(total, e.fixedReserve);
            m_out.reserved.push_back(item(e.kind == EngineKind::LlamaCpp ? "fit_margin" : "minimum_memory", e.fixedReserve,
                                          e.kind == EngineKind::LlamaCpp ? "llama.cpp --fit target free per device"
                                                                         : "Ollama MinimumMemory per CUDA GPU"));
            addRuntimeItems(true);
            break;
        case EngineKind::SgLang: {
            const double mfs = e.memoryFraction > 0
                ? e.memoryFraction
                : sglangMemFractionStatic(total, m_r.tensorParallel, m_r.pipelineParallel);
            m_out.usableBytes = fraction(total, mfs);
            m_out.reserved.push_back(item("mem_fraction_static_headroom", total - m_out.usableBytes,
                                          "mem_fraction_static " + std::to_string(mfs).substr(0, 5)));
            addRuntimeItems(false);
            break;
        }
        case EngineKind::TensorRtLlm: {
            m_out.usableBytes = total;
            addRuntimeItems(true);
            const Bytes peak = m_out.weightsBytes + totalBytes(m_out.overheads);
            const Bytes freeAfter = saturatingSub(total, peak);
            const Bytes kept = saturatingSub(freeAfter, fraction(freeAfter, e.memoryFraction));
            m_out.reserved.push_back(item("free_fraction_headroom", kept,
                                          "1 - free_gpu_memory_fraction " + percent(e.memoryFraction) + " of free memory"));
            m_out.usableBytes = saturatingSub(total, kept);
            break;
        }
        }
        const Bytes spent = m_out.weightsBytes + totalBytes(m_out.overheads);
        Bytes budget = saturatingSub(m_out.usableBytes, spent);
        if (e.fragmentationFraction > 0 && budget.value > 0) {
            const Bytes frag = fraction(budget, e.fragmentationFraction);
            m_out.overheads.push_back(item("fragmentation", frag, percent(e.fragmentationFraction) + " of the KV pool"));
            budget = budget - frag;
        }
        m_out.kvBudgetBytes = budget;
        m_weightsFit = spent <= m_out.usableBytes;
    }

    void computeCapacity()
    {
        const EnginePolicy& e = m_r.engine;
        const KvPool pool = m_out.pool();
        const Bytes blockBytes = m_out.kvBytesPerToken * m_out.paging.blockTokens;
        if (e.kind == EngineKind::Vllm) {
            const Bytes nonTorch = m_r.measured.runtimeBytes.value_or(e.runtimeBytes);
            const Bytes graphs = m_r.measured.cudaGraphBytes.value_or(e.cudaGraphBytes);
            const Bytes torchPeak = m_out.weightsBytes + saturatingSub(totalBytes(m_out.overheads), nonTorch + graphs);
            m_out.kvBlocks = vllmGpuBlocks(m_out.cardTotalBytes, e.memoryFraction, torchPeak, nonTorch, graphs, blockBytes);
        } else if (blockBytes.value > 0) {
            m_out.kvBlocks = m_out.kvBudgetBytes.value / blockBytes.value;
        }
        m_out.maxResidentTokens = m_weightsFit ? maxResidentTokens(pool) : 0;
        // max_users answers "at the context you asked for" (and Ollama's default num_ctx).
        if ((m_r.contextTokens || m_r.users || e.kind == EngineKind::Ollama) && m_out.contextTokens > 0 && m_weightsFit)
            m_out.maxUsers = maxUsers(pool, m_out.contextTokens);
        if (m_r.users && m_weightsFit) {
            std::uint64_t c = maxContextTokens(pool, *m_r.users);
            if (m_out.modelContextTokens > 0 && c > m_out.modelContextTokens)
                c = m_out.modelContextTokens; // the verdict names the trained context when it binds
            m_out.maxContext = c;
        }
        if (e.kind == EngineKind::Vllm && m_out.contextTokens > 0) {
            m_out.maxConcurrency = vllmMaxConcurrency(m_out.kvBlocks, m_out.paging.blockTokens, m_out.contextTokens);
            // vLLM refuses to start when one max_model_len sequence exceeds the KV cache.
            if (*m_out.maxConcurrency < 1.0 && m_weightsFit)
                m_out.refusals.push_back({FitLimit::EngineRefusesToStart, "vLLM with max_model_len " + formatThousands(m_out.contextTokens)
                                      + " would refuse to start (" + formatConcurrency(*m_out.maxConcurrency)
                                      + "): lower --max-model-len to at most "
                                      + formatThousands(m_out.kvBlocks * m_out.paging.blockTokens)});
        }
        if (m_weightsFit)
            m_out.frontier = frontier(pool, m_out.modelContextTokens);
        m_out.verdict = decideVerdict(m_r, m_out);
        m_out.fits = m_out.verdict.fits();
        m_out.reason = m_out.verdict.reason;
        estimateSpeed();
    }

    void estimateSpeed()
    {
        const SpeedCalibration& cal = m_r.speedCalibration;
        const double bandwidth = cal.bandwidthGBps.value_or(m_r.card.bandwidthGBps);
        const double tflops = cal.peakTflops.value_or(m_r.card.fp16Tflops);
        if (bandwidth <= 0)
            return;
        SpeedInputs in = speedInputs(m_arch, m_out.weightsBytes, m_out.kvBytesPerToken, bandwidth, tflops);
        in.calibrated = cal.bandwidthGBps.has_value();
        const std::uint64_t ctx = m_out.contextTokens > 0 ? m_out.contextTokens : 1;
        m_out.speed = summarizeSpeed(in, m_out.users, ctx);
    }

    const PlanRequest& m_r;
    Architecture m_arch;
    PlanResult m_out;
    std::uint32_t m_firstLayer = 0;
    std::uint32_t m_layerCount = 0;
    bool m_weightsFit = false;
};

} // namespace

tl::expected<PlanResult, std::string> makePlan(const PlanRequest& request)
{
    try {
        return Planner(request).run();
    } catch (const OverflowError& e) {
        return tl::unexpected(std::string("arithmetic overflow (") + e.what() + ") planning "
                              + formatThousands(request.users.value_or(1)) + " users x "
                              + formatThousands(request.contextTokens.value_or(0)) + " tokens of '" + request.model.id
                              + "': lower --users or --context");
    }
}

} // namespace headroom
