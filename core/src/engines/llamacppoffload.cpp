#include "headroom/core/engines/llamacppoffload.h"

#include "headroom/core/parameters.h"

#include <algorithm>

namespace headroom::llamacpp {

namespace {

// The final norm belongs to the output layer (llama.cpp output_norm); every other tensor outside
// the blocks besides the token embedding does too (lm_head).
bool belongsToOutput(const TensorSpec& t)
{
    return t.layer < 0 && t.role != TensorRole::TokenEmbedding && t.role != TensorRole::PositionEmbedding;
}

// Routed experts (ffn_{up,down,gate}_exps); shared experts (ffn_*_shexp) are not matched by
// --n-cpu-moe's pattern.
bool isRoutedExpert(const TensorSpec& t)
{
    return t.role == TensorRole::ExpertMatrix && t.name.find("mlp.experts.") != std::string::npos;
}

// ggml_repack_get_optimal_repack_type on x86 with AVX2: Q4_0, Q4_K, IQ4_NL and MXFP4 weight
// matrices with ne[1] (rows) % 8 == 0; the embedding (GET_ROWS, not MUL_MAT) stays as mapped.
bool isRepacked(const TensorSpec& t, const std::string& type)
{
    if (!t.isMatrix() || t.role == TensorRole::TokenEmbedding || t.role == TensorRole::PositionEmbedding || t.rows % 8 != 0)
        return false;
    return type == "q4_0" || type == "q4_k" || type == "iq4_nl" || type == "mxfp4";
}

} // namespace

OffloadBill offload(const Architecture& arch, const WeightFormat& format, const ContextSettings& context,
                    const OffloadSettings& o)
{
    OffloadBill out;
    const std::int64_t layers = arch.layers;
    out.totalLayers = arch.layers + 1;
    const std::int64_t ngl = o.gpuLayers < 0 ? layers + 1 : std::min<std::int64_t>(o.gpuLayers, layers + 1);
    out.offloadedLayers = static_cast<std::uint32_t>(ngl);
    if (o.outputFirst) {
        out.firstGpuLayer = static_cast<std::uint32_t>(std::max<std::int64_t>(layers + 1 - ngl, 0));
        out.outputOnGpu = ngl >= 1;
    } else {
        out.firstGpuLayer = static_cast<std::uint32_t>(std::max<std::int64_t>(layers - ngl, 0));
        out.outputOnGpu = ngl > layers;
    }
    out.hostWeightsMapped = o.mmap;
    const auto onGpu = [&](std::int64_t il) { return il >= out.firstGpuLayer; };

    for (const TensorSpec& t : listTensors(arch)) {
        const PricedTensor priced = priceTensor(t, format, arch);
        const Bytes b = priced.bytes;
        if (t.role == TensorRole::TokenEmbedding) {
            out.tokenEmbeddingBytes += b;
            out.host.weightsBytes += b;
            // A tied lm_head is token_embd duplicated to the output layer's device (TENSOR_DUPLICATED).
            if (arch.tiedEmbeddings && out.outputOnGpu)
                out.gpu.weightsBytes += b;
            continue;
        }
        bool gpu = false;
        if (t.layer >= 0)
            gpu = onGpu(t.layer) && !(isRoutedExpert(t) && static_cast<std::uint32_t>(t.layer) < o.cpuMoeLayers);
        else if (belongsToOutput(t))
            gpu = out.outputOnGpu;
        (gpu ? out.gpu.weightsBytes : out.host.weightsBytes) += b;
        if (!gpu && o.cpuRepack && isRepacked(t, priced.type))
            out.hostRepackBytes += b;
    }

    const std::vector<Bytes> kv = kvBytesPerLayer(arch, context);
    for (std::uint32_t il = 0; il < arch.layers; ++il)
        (o.kvOffload && onGpu(il) ? out.gpu.kvBytes : out.host.kvBytes) += kv[il];

    const ComputeBill compute = computeBuffer(arch, context);
    out.hostOutputBytes = outputBufferBytes(arch, context);
    if (ngl == 0) {
        out.host.computeBytes = compute.totalBytes;
    } else if (out.firstGpuLayer == 0 && o.kvOffload) {
        out.gpu.computeBytes = compute.deviceBytes;
        out.host.computeBytes = compute.hostPartBytes;
    } else {
        // CPU layers run their attention and feed-forward on the host.
        out.gpu.computeBytes = compute.deviceBytes;
        out.host.computeBytes = compute.hostPartBytes + std::max(compute.attentionStageBytes, compute.ffnStageBytes);
    }
    return out;
}

bool offloadsOutputFirst(const std::string& version)
{
    if (version.size() < 2 || version.size() > 8 || version[0] != 'b'
        || version.find_first_not_of("0123456789", 1) != std::string::npos)
        return true;
    return std::stoul(version.substr(1)) >= 7400;
}

std::uint32_t maxGpuLayers(const Architecture& arch, const WeightFormat& format, const ContextSettings& context,
                           const OffloadSettings& o, Bytes gpuBudget)
{
    for (std::int64_t n = arch.layers + 1; n >= 1; --n) {
        OffloadSettings trial = o;
        trial.gpuLayers = n;
        if (offload(arch, format, context, trial).gpu.totalBytes() <= gpuBudget)
            return static_cast<std::uint32_t>(n);
    }
    return 0;
}

std::string offloadFlags(const OffloadBill& bill, const OffloadSettings& o)
{
    std::string out = "-ngl " + std::to_string(bill.offloadedLayers);
    if (o.cpuMoeLayers > 0)
        out += " --n-cpu-moe " + std::to_string(o.cpuMoeLayers);
    if (!o.kvOffload)
        out += " --no-kv-offload";
    return out;
}

} // namespace headroom::llamacpp
