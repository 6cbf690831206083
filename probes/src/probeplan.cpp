#include "probeplan.h"

#include "modelondevice.h"

#include "headroom/core/card.h"
#include "headroom/kernels/kernels.h"
#include "headroom/core/enginepolicy.h"

#include <set>

namespace headroom::probes {

const char* probeKindName(ProbeKind kind)
{
    switch (kind) {
    case ProbeKind::Device: return "device";
    case ProbeKind::Allocation: return "allocation";
    case ProbeKind::Limit: return "limit";
    case ProbeKind::Timing: return "timing";
    case ProbeKind::QuantError: return "quant-error";
    }
    return "unknown";
}

tl::expected<std::vector<ProbeKind>, std::string> parseProbeList(std::string_view text)
{
    const std::vector<ProbeKind> all{ProbeKind::Device, ProbeKind::Allocation, ProbeKind::Limit, ProbeKind::Timing,
                                     ProbeKind::QuantError};
    if (text == "all")
        return all;
    std::vector<ProbeKind> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view name = text.substr(start, comma - start);
        bool found = false;
        for (ProbeKind k : all) {
            if (name == probeKindName(k)) {
                if (std::find(out.begin(), out.end(), k) == out.end())
                    out.push_back(k);
                found = true;
            }
        }
        if (!found)
            return tl::unexpected("unknown probe '" + std::string(name)
                                  + "' (known: device, allocation, limit, timing, quant-error, or all)");
        start = comma + 1;
    }
    return out;
}

std::string decodeUnsupportedReason(const ModelInputs& inputs)
{
    if (!inputs.model.architecture)
        return "the model has no architecture (only a parameter count)";
    const Architecture& a = *inputs.model.architecture;
    for (std::uint32_t i = 0; i < a.layers; ++i)
        if (a.hybrid.isRecurrent(i))
            return std::string("layer ") + std::to_string(i) + " is a " + mixerKindName(a.hybrid.mixerOf(i))
                + " layer: recurrent mixers have no decode kernels here (attention, MLA and MLP-only layers run)";
    if (a.hybrid.attentionOutputGate)
        return "gated attention outputs (a q_proj of twice the query width, Qwen3-Next) are not run by the decode step";
    if (a.moe.enabled() && (a.moe.expertsPerToken == 0 || a.moe.expertsPerToken > a.moe.expertCount))
        return "the MoE layers route " + std::to_string(a.moe.expertsPerToken) + " of " + std::to_string(a.moe.expertCount)
            + " experts a token";
    if (a.mla.enabled() && !a.mla.cachesLatent())
        return "MLA with the full per-head K/V cache (DeepSeek GGUF files from before llama.cpp PR 12801) is not run by "
               "the decode step, which reads the latent cache";
    if (a.sliding.enabled())
        return "sliding-window layers are not modelled by the probe's paged pool";
    if (!a.kvHeadsPerLayer.empty())
        return "per-layer KV head counts are not supported by the decode step";
    if (!a.mla.enabled() && a.valueDim() != a.headDim)
        return "value head dim differs from key head dim";
    if (inputs.kvDtype.blockElements != 1 || inputs.kvDtype.blockBytes != 2)
        return "KV dtype " + inputs.kvDtype.id + ": the decode attention kernels read fp16/bf16 caches";
    if (!detail::kernelLayout(inputs.format, TensorRole::MlpMatrix))
        return "weight format " + inputs.format.id
            + " has no GEMV kernel (runnable: fp16, bf16, int8/int4 per tensor, row or group, nf4-b64,"
              " GGML q8_0, q4_0, q4_k, q6_k)";
    for (const TensorSpec& t : listTensors(a)) {
        if (!t.isMatrix())
            continue;
        const auto layout = detail::kernelLayout(inputs.format, t.role);
        if (!layout || formats::matrixStorageBytes(*layout, t.rows, t.cols) * t.copies != tensorBytes(t, inputs.format).value)
            return "tensor " + t.name + " in " + inputs.format.id + " has no packed kernel layout of the formula's size";
        if (t.rows > UINT32_MAX || t.cols > UINT32_MAX)
            return "tensor " + t.name + " is too large for the kernels";
        if (t.cols % formats::ggmlBlockWeights(layout->type) != 0)
            return "tensor " + t.name + ": " + std::to_string(t.cols) + " columns are not whole " + inputs.format.id
                + " blocks of " + std::to_string(formats::ggmlBlockWeights(layout->type))
                + " (ggml requires them; llama-quantize would pick another type for it)";
        // MLA absorbed: kv_b_proj runs as per-head k_b [kv_lora_rank, qk_nope] and v_b [v_head,
        // kv_lora_rank] (llama.cpp's attn_k_b / attn_v_b), which must hold the tensor's own bytes.
        if (a.mla.cachesLatent() && t.name.ends_with("self_attn.kv_b_proj.weight")) {
            const MlaConfig& m = a.mla;
            const std::uint64_t block = formats::ggmlBlockWeights(layout->type);
            const std::uint64_t split = (formats::matrixStorageBytes(*layout, m.kvLoraRank, m.qkNopeHeadDim)
                                         + formats::matrixStorageBytes(*layout, m.vHeadDim, m.kvLoraRank))
                * a.attentionHeads;
            if (m.qkNopeHeadDim % block != 0 || m.kvLoraRank % block != 0 || split != tensorBytes(t, inputs.format).value)
                return "tensor " + t.name + " in " + inputs.format.id
                    + " cannot be cut into per-head k_b / v_b matrices of its own bytes (the absorbed MLA decode needs"
                      " a block or group format whose blocks divide qk_nope_head_dim and kv_lora_rank)";
        }
    }
    return {};
}

std::string decodeUnsupportedReasonOn(DeviceKind device, const ModelInputs& inputs)
{
    if (std::string why = decodeUnsupportedReason(inputs); !why.empty())
        return why;
    const Architecture& a = *inputs.model.architecture;
    const bool mla = a.mla.cachesLatent();
    // The step's attention call with placeholder pointers (supports() reads only sizes).
    static const std::uint16_t dummy16[8] = {};
    static const std::int32_t dummy32[8] = {};
    static float dummyOut[8] = {};
    kernels::DecodeAttentionArgs args;
    args.batch = 1;
    args.numHeads = a.attentionHeads;
    args.numKvHeads = mla ? 1 : a.kvHeads;
    args.headDim = mla ? a.mla.kvLoraRank + a.mla.qkRopeHeadDim : a.headDim;
    args.q = dummy16;
    args.seqLens = dummy32;
    args.layout = kernels::KvLayout::Paged;
    args.k = dummy16;
    args.v = dummy16;
    args.blockTable = dummy32;
    args.maxBlocksPerSeq = 1;
    args.blockTokens = static_cast<std::uint32_t>(kProbeBlockTokens);
    args.numBlocks = 1;
    args.out = dummyOut;
    const kernels::Backend backend = device == DeviceKind::Cuda ? kernels::Backend::Cuda : kernels::Backend::Cpu;
    if (!kernels::supports(backend, args))
        return std::string("the ") + kernels::backendName(backend) + " decode attention kernel does not run " + std::to_string(args.numHeads)
            + " query heads on " + std::to_string(args.numKvHeads) + " KV heads of " + std::to_string(args.headDim)
            + (mla ? " (absorbed MLA: every head reads the one latent)" : "");
    return {};
}

namespace detail {

std::uint64_t contextOf(const ModelInputs& inputs)
{
    if (inputs.contextTokens > 0)
        return inputs.contextTokens;
    if (inputs.model.architecture && inputs.model.architecture->contextLength > 0)
        return inputs.model.architecture->contextLength;
    return 4096;
}

std::string bytesText(std::uint64_t bytes)
{
    return formatBytes(Bytes{bytes}) + " (" + formatThousands(bytes) + " B)";
}

tl::expected<PlanResult, std::string> probePlan(const ModelInputs& inputs, Bytes budget, Bytes reserve)
{
    PlanRequest r;
    r.model = inputs.model;
    r.model.exactWeights.reset();
    r.model.nominalParameters.reset();
    r.format = inputs.format;
    r.kvDtype = inputs.kvDtype;
    r.card = anonymousCard(formatThousands(budget.value) + "B", budget);
    r.engine = flatReservePolicy(reserve);
    r.engine.blockTokens = kProbeBlockTokens;
    r.contextTokens = contextOf(inputs);
    r.users = std::max<std::uint64_t>(1, inputs.users);
    return makePlan(r);
}

} // namespace detail

} // namespace headroom::probes
