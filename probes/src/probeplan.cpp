#include "probeplan.h"

#include "modelondevice.h"

#include "headroom/core/card.h"
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
    if (a.moe.enabled())
        return "mixture-of-experts layers have no decode kernels here";
    if (a.mla.enabled())
        return "MLA (latent KV) has no decode attention kernel here";
    if (a.sliding.enabled())
        return "sliding-window layers are not modelled by the probe's paged pool";
    if (!a.kvHeadsPerLayer.empty())
        return "per-layer KV head counts are not supported by the decode step";
    if (a.valueDim() != a.headDim)
        return "value head dim differs from key head dim";
    if (a.mlp != MlpKind::Gated)
        return "the decode step runs llama-style gated MLPs (q/k/v/o, gate/up/down projections)";
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
    }
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
