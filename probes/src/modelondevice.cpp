#include "modelondevice.h"

#include "headroom/core/kvcache.h"
#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/kernels.h"

#include "headroom/probes/moerouting.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <cstring>
#include <string_view>

namespace headroom::probes::detail {

namespace {

/// Fill byte of synthetic weights, KV and activations: 0x11 makes fp16 0x1111 (~6.5e-4), int8 17,
/// int4 codes 1, NF4 level 1 — finite values whose products stay in the normal fp16/fp32 range.
constexpr std::uint8_t kSyntheticByte = 0x11;

kernels::Backend backendOf(const Device& device)
{
    return device.kind() == DeviceKind::Cuda ? kernels::Backend::Cuda : kernels::Backend::Cpu;
}

bool endsWith(const std::string& s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

DeviceError kernelError(const char* what, kernels::Status status)
{
    return DeviceError{DeviceError::Code::KernelError, std::string(what) + ": " + kernels::statusName(status)};
}

std::uint64_t attentionWorkspaceMax(const Architecture& arch, DeviceKind kind, std::uint64_t maxSeqTokens)
{
    if (kind != DeviceKind::Cuda)
        return 0;
    // Non-null placeholders: attentionWorkspaceBytes validates the pointers it never reads.
    static const std::uint16_t dummy16[8] = {};
    static const std::int32_t dummy32[8] = {};
    static float dummyOut[8] = {};
    std::uint64_t best = 0;
    for (std::uint32_t b = 1; b <= kProbeMaxBatch; ++b) {
        kernels::DecodeAttentionArgs a;
        a.batch = b;
        a.numHeads = arch.attentionHeads;
        a.numKvHeads = arch.kvHeads;
        a.headDim = arch.headDim;
        a.q = dummy16;
        a.seqLens = dummy32;
        a.layout = kernels::KvLayout::Paged;
        a.k = dummy16;
        a.v = dummy16;
        a.blockTable = dummy32;
        a.blockTokens = static_cast<std::uint32_t>(kProbeBlockTokens);
        const std::uint64_t blocks = std::max<std::uint64_t>(1, (maxSeqTokens + kProbeBlockTokens - 1) / kProbeBlockTokens);
        a.maxBlocksPerSeq = static_cast<std::uint32_t>(std::min<std::uint64_t>(blocks, 1u << 30));
        a.numBlocks = a.maxBlocksPerSeq;
        a.out = dummyOut;
        best = std::max<std::uint64_t>(best, kernels::attentionWorkspaceBytes(kernels::Backend::Cuda, a));
    }
    return best;
}

} // namespace

std::optional<formats::QuantLayout> kernelLayout(const WeightFormat& format, TensorRole role)
{
    const bool embedding = role == TensorRole::TokenEmbedding || role == TensorRole::Output
        || role == TensorRole::PositionEmbedding;
    if (embedding && !format.quantizesEmbeddings)
        return formats::fp16Layout();
    switch (format.kind) {
    case FormatKind::Float:
        if (format.bits == 16) // fp16 and bf16 have the same bytes; the synthetic bits run as fp16
            return formats::fp16Layout();
        return std::nullopt;
    case FormatKind::SymmetricInt: {
        if (format.scaleBytes != 2 || (format.bits != 8 && format.bits != 4))
            return std::nullopt;
        const formats::ScaleScope scope = format.granularity == ScaleGranularity::Tensor ? formats::ScaleScope::Tensor
            : format.granularity == ScaleGranularity::Row                                ? formats::ScaleScope::Row
                                                                                         : formats::ScaleScope::Group;
        const formats::QuantLayout layout = formats::symmetricLayout(static_cast<int>(format.bits), scope, format.groupSize);
        return formats::layoutValid(layout) ? std::optional(layout) : std::nullopt;
    }
    case FormatKind::Nf4:
        if (format.scaleBytes == 2 && !format.doubleQuant && format.groupSize == formats::kNf4BlockWeights)
            return formats::nf4Layout();
        return std::nullopt;
    case FormatKind::Ggml: {
        // One GGML type for every matrix (llama-quantize --pure); the presets mix types per tensor.
        if (format.ggufFileType != 0)
            return std::nullopt;
        const formats::GgmlType* type = formats::ggmlType(format.ggmlType);
        const std::string_view name = type && type->name ? type->name : "";
        if (name == "q8_0") return formats::ggmlLayout(formats::QuantType::Q8_0);
        if (name == "q4_0") return formats::ggmlLayout(formats::QuantType::Q4_0);
        if (name == "q4_K") return formats::ggmlLayout(formats::QuantType::Q4_K);
        if (name == "q6_K") return formats::ggmlLayout(formats::QuantType::Q6_K);
        return std::nullopt;
    }
    default:
        return std::nullopt;
    }
}

Bytes formulaWeightBytes(const Architecture& arch, const WeightFormat& format)
{
    Bytes total;
    for (const TensorSpec& t : listTensors(arch))
        total += tensorBytes(t, format);
    return total;
}

std::uint64_t layerCells(const Architecture& arch, std::uint32_t layer, std::uint64_t users, std::uint64_t context)
{
    std::uint64_t perSequence = context;
    if (arch.sliding.isSliding(layer))
        perSequence = std::min(context, arch.sliding.windowTokens);
    return users * roundUp(perSequence, kProbeBlockTokens);
}

std::uint64_t ScratchSizes::total() const
{
    return hidden + q + kNew + vNew + attnOut + ffnA + ffnB + logits + seqLens + blockTable + attentionWorkspace + routerLogits
        + expertIn + expertOut + moeOut + mlaQa + mlaQ + mlaHeadIn + mlaHeadOut;
}

ScratchSizes scratchSizes(const Architecture& arch, DeviceKind backend, std::uint64_t blockTableEntries)
{
    const std::uint64_t b = kProbeMaxBatch;
    std::uint64_t qWidth = std::uint64_t{arch.attentionHeads} * arch.headDim;
    std::uint64_t kvWidth = std::uint64_t{arch.kvHeads} * arch.headDim;
    std::uint64_t vWidth = kvWidth;
    std::uint64_t outWidth = qWidth;
    const MoeConfig& moe = arch.moe;
    const std::uint64_t ffn = std::max({arch.intermediateSize, moe.expertFfnSize, std::uint64_t{moe.sharedExperts} * moe.expertFfnSize,
                                        moe.sharedExpertFfnSize});
    ScratchSizes s;
    if (arch.mla.cachesLatent()) {
        const MlaConfig& m = arch.mla;
        const std::uint64_t latent = std::uint64_t{m.kvLoraRank} + m.qkRopeHeadDim;
        qWidth = std::uint64_t{arch.attentionHeads} * std::max<std::uint64_t>(std::uint64_t{m.qkNopeHeadDim} + m.qkRopeHeadDim, m.vHeadDim);
        kvWidth = latent;
        vWidth = 0;
        outWidth = std::uint64_t{arch.attentionHeads} * latent;
        s.mlaQa = b * m.qLoraRank * 2;
        s.mlaQ = b * outWidth * 2;
        s.mlaHeadIn = b * std::max(m.qkNopeHeadDim, m.kvLoraRank) * 2;
        s.mlaHeadOut = b * std::max(m.kvLoraRank, m.vHeadDim) * 2;
    }
    if (moe.enabled()) {
        s.routerLogits = b * 2 * moe.expertCount * 4; // room for an f32 router read as twice the fp16 rows
        s.expertIn = b * arch.hiddenSize * 2;
        s.expertOut = b * arch.hiddenSize * 2;
        s.moeOut = b * arch.hiddenSize * 2;
    }
    s.hidden = b * arch.hiddenSize * 2;
    s.q = b * qWidth * 2;
    s.kNew = b * kvWidth * 2;
    s.vNew = b * vWidth * 2;
    s.attnOut = b * outWidth * 4;
    s.ffnA = b * ffn * 2;
    s.ffnB = b * ffn * 2;
    s.logits = b * arch.vocabSize * 4;
    s.seqLens = std::max<std::uint64_t>(b, blockTableEntries) * 4;
    s.blockTable = std::max<std::uint64_t>(1, blockTableEntries) * 4;
    s.attentionWorkspace = attentionWorkspaceMax(arch, backend, blockTableEntries * kProbeBlockTokens);
    return s;
}

StepSequences packedSequences(std::uint64_t users, std::uint64_t tokens)
{
    StepSequences s;
    const std::uint64_t blocks = std::max<std::uint64_t>(1, ceilDiv(tokens, kProbeBlockTokens));
    s.maxBlocksPerSeq = static_cast<std::uint32_t>(blocks);
    s.seqLens.assign(users, static_cast<std::int32_t>(tokens));
    s.blockTable.resize(users * blocks);
    for (std::uint64_t i = 0; i < s.blockTable.size(); ++i)
        s.blockTable[i] = static_cast<std::int32_t>(i);
    return s;
}

StepSequences prefillChunk(std::uint64_t start, std::uint64_t count)
{
    StepSequences s;
    const std::uint64_t blocks = ceilDiv(start + count, kProbeBlockTokens);
    s.maxBlocksPerSeq = static_cast<std::uint32_t>(blocks);
    for (std::uint64_t i = 0; i < count; ++i) {
        s.seqLens.push_back(static_cast<std::int32_t>(start + i + 1));
        for (std::uint64_t j = 0; j < blocks; ++j)
            s.blockTable.push_back(static_cast<std::int32_t>(j));
    }
    return s;
}

ModelOnDevice::ModelOnDevice(Device& device, const ModelInputs& inputs)
    : m_device(device), m_inputs(inputs), m_arch(inputs.model.architecture.value_or(Architecture{}))
{
}

DeviceStatus ModelOnDevice::allocateWeights(ProbeProgress& progress, double from, double to)
{
    const std::vector<TensorSpec> tensors = listTensors(m_arch);
    m_layers.assign(m_arch.layers, Layer{});
    m_weights.reserve(tensors.size());
    kernels::WeightMatrix embedding{};
    bool haveLmHead = false;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (progress.cancelled())
            return tl::unexpected(DeviceError{DeviceError::Code::Cancelled, "cancelled"});
        const TensorSpec& t = tensors[i];
        const Bytes bytes = tensorBytes(t, m_inputs.format);
        auto buffer = DeviceBuffer::make(m_device, bytes, t.name);
        if (!buffer)
            return tl::unexpected(buffer.error());
        if (auto filled = m_device.fill(buffer->get(), kSyntheticByte, bytes); !filled)
            return filled;
        m_weightBytes += bytes.value;

        // Views for the kernels when the tensor is a matrix whose packed layout has exactly the
        // formula's bytes (true for every kernel-runnable format with even column counts); a
        // tensor of E copies (the routed experts) gives E views. kv_b_proj of an MLA layer is cut
        // into its per-head k_b / v_b views instead.
        const auto layout = kernelLayout(m_inputs.format, t.role);
        std::uint8_t* base = buffer->as<std::uint8_t>();
        const bool inLayer = t.layer >= 0 && static_cast<std::uint32_t>(t.layer) < m_layers.size();
        if (t.role == TensorRole::Router && inLayer && bytes.value % (t.cols * 2) == 0) {
            // A router stays unquantized (f32 in a GGUF, convert_hf_to_gguf.py; 16-bit in a
            // checkpoint): it runs as an fp16 GEMV over all its bytes, an f32 row as two fp16
            // rows (the kernels have no fp32 weights), and the first E logits of a token route it.
            placeMatrix(t, 0, view(formats::fp16Layout(), bytes.value / (t.cols * 2), t.cols, base));
        } else if (t.isMatrix() && layout && inLayer && m_arch.mla.cachesLatent() && endsWith(t.name, ".self_attn.kv_b_proj.weight")) {
            splitKvB(m_layers[static_cast<std::size_t>(t.layer)], base, bytes.value, *layout);
        } else if (t.isMatrix() && layout && t.copies >= 1
                   && formats::matrixStorageBytes(*layout, t.rows, t.cols) * t.copies == bytes.value) {
            const std::uint64_t each = bytes.value / t.copies;
            for (std::uint32_t c = 0; c < t.copies; ++c) {
                const kernels::WeightMatrix w = view(*layout, t.rows, t.cols, base + c * each);
                if (t.role == TensorRole::TokenEmbedding)
                    embedding = w;
                else if (t.role == TensorRole::Output) {
                    m_lmHead = w;
                    haveLmHead = true;
                } else if (inLayer)
                    placeMatrix(t, c, w);
            }
        }
        m_weights.push_back(std::move(*buffer));
        progress.report(from + (to - from) * static_cast<double>(i + 1) / static_cast<double>(tensors.size()),
                        "allocating weights");
    }
    if (!haveLmHead)
        m_lmHead = embedding; // tied embeddings: the logits GEMV reads the token embedding
    m_stepWeightBytes = 0;
    m_stepWeightParameters = 0;
    m_stepExpertBytes = 0;
    std::uint64_t expertParameters = 0;
    const auto count = [&](const kernels::WeightMatrix& w, bool routed) {
        if (!w.data)
            return;
        const std::uint64_t b = formats::matrixStorageBytes(w.layout, w.rows, w.cols);
        m_stepWeightBytes += b;
        if (routed) {
            m_stepExpertBytes += b;
            expertParameters += std::uint64_t{w.rows} * w.cols;
        } else {
            m_stepWeightParameters += std::uint64_t{w.rows} * w.cols;
        }
    };
    const auto countMlp = [&](const Mlp& m, bool routed) {
        for (const kernels::WeightMatrix* w : {&m.gate, &m.up, &m.down})
            count(*w, routed);
    };
    for (const Layer& l : m_layers) {
        for (const kernels::WeightMatrix* w : {&l.q, &l.k, &l.v, &l.o, &l.qA, &l.qB, &l.kvA, &l.router, &l.sharedGate})
            count(*w, false);
        for (const auto* views : {&l.kB, &l.vB})
            for (const kernels::WeightMatrix& w : *views)
                count(w, false);
        countMlp(l.mlp, false);
        countMlp(l.shared, false);
        for (const Mlp& e : l.experts)
            countMlp(e, true);
    }
    count(m_lmHead, false);
    if (m_arch.moe.enabled())
        m_stepWeightParameters += expertParameters / m_arch.moe.expertCount * m_arch.moe.expertsPerToken;
    return {};
}

DeviceStatus ModelOnDevice::allocateScratch(std::uint64_t blockTableEntries)
{
    m_scratch.clear();
    m_scratchBytes = 0;
    m_sizes = scratchSizes(m_arch, m_device.kind(), blockTableEntries);
    const auto make = [&](std::uint64_t bytes, const char* what, void*& out) -> DeviceStatus {
        out = nullptr;
        if (bytes == 0)
            return {};
        auto buffer = DeviceBuffer::make(m_device, Bytes{bytes}, what);
        if (!buffer)
            return tl::unexpected(buffer.error());
        if (auto filled = m_device.fill(buffer->get(), kSyntheticByte, Bytes{bytes}); !filled)
            return filled;
        out = buffer->get();
        m_scratchBytes += bytes;
        m_scratch.push_back(std::move(*buffer));
        return {};
    };
    for (auto [bytes, what, out] : {std::tuple{m_sizes.hidden, "hidden states", &m_hidden},
                                    std::tuple{m_sizes.q, "queries", &m_q},
                                    std::tuple{m_sizes.kNew, "new keys", &m_kNew},
                                    std::tuple{m_sizes.vNew, "new values", &m_vNew},
                                    std::tuple{m_sizes.attnOut, "attention output", &m_attnOut},
                                    std::tuple{m_sizes.ffnA, "gate output", &m_ffnA},
                                    std::tuple{m_sizes.ffnB, "up output", &m_ffnB},
                                    std::tuple{m_sizes.logits, "logits", &m_logits},
                                    std::tuple{m_sizes.seqLens, "sequence lengths", &m_seqLens},
                                    std::tuple{m_sizes.blockTable, "block table", &m_blockTable},
                                    std::tuple{m_sizes.attentionWorkspace, "attention workspace", &m_attnWorkspace},
                                    std::tuple{m_sizes.routerLogits, "router logits", &m_routerLogits},
                                    std::tuple{m_sizes.expertIn, "expert input rows", &m_expertIn},
                                    std::tuple{m_sizes.expertOut, "expert output rows", &m_expertOut},
                                    std::tuple{m_sizes.moeOut, "MoE block output", &m_moeOut},
                                    std::tuple{m_sizes.mlaQa, "compressed queries", &m_mlaQa},
                                    std::tuple{m_sizes.mlaQ, "absorbed queries", &m_mlaQ},
                                    std::tuple{m_sizes.mlaHeadIn, "MLA head input", &m_mlaHeadIn},
                                    std::tuple{m_sizes.mlaHeadOut, "MLA head output", &m_mlaHeadOut}}) {
        if (auto status = make(bytes, what, *out); !status)
            return status;
    }
    return {};
}

DeviceStatus ModelOnDevice::allocateKvFor(std::uint64_t users, std::uint64_t context, ProbeProgress* progress)
{
    releaseKv();
    const bool mla = m_arch.mla.cachesLatent();
    for (std::uint32_t l = 0; l < m_arch.layers; ++l) {
        if (progress && progress->cancelled()) {
            releaseKv();
            return tl::unexpected(DeviceError{DeviceError::Code::Cancelled, "cancelled"});
        }
        const std::uint64_t cells = layerCells(m_arch, l, users, context);
        std::vector<std::pair<std::uint64_t, std::string>> parts;
        if (!m_arch.hybrid.isAttention(l)) {
            // recurrent and MLP-only layers keep no KV cache (core/kvcache.cpp)
        } else if (mla) {
            parts.emplace_back(cells * m_inputs.kvDtype.rowBytes(std::uint64_t{m_arch.mla.kvLoraRank} + m_arch.mla.qkRopeHeadDim),
                               "layer " + std::to_string(l) + " latent cache");
        } else if (m_arch.kvHeadsOf(l) > 0) {
            const std::uint64_t heads = m_arch.kvHeadsOf(l);
            parts.emplace_back(cells * m_inputs.kvDtype.rowBytes(heads * m_arch.headDim), "layer " + std::to_string(l) + " K cache");
            parts.emplace_back(cells * m_inputs.kvDtype.rowBytes(heads * m_arch.valueDim()), "layer " + std::to_string(l) + " V cache");
        }
        for (const auto& [bytes, what] : parts) {
            if (bytes == 0)
                continue;
            auto buffer = DeviceBuffer::make(m_device, Bytes{bytes}, what);
            if (!buffer) {
                releaseKv();
                return tl::unexpected(buffer.error());
            }
            if (auto filled = m_device.fill(buffer->get(), kSyntheticByte, Bytes{bytes}); !filled) {
                releaseKv();
                return filled;
            }
            m_kvBytes += bytes;
            m_kv.push_back(std::move(*buffer));
            // The decode step's pools: K then V (MLA: the latent pool is both).
            if (l < m_layers.size()) {
                Layer& layer = m_layers[l];
                if (!layer.kCache)
                    layer.kCache = layer.vCache = m_kv.back().get();
                else
                    layer.vCache = m_kv.back().get();
            }
        }
    }
    return {};
}

DeviceStatus ModelOnDevice::allocateKvBlocks(std::uint64_t blocks, ProbeProgress* progress)
{
    releaseKv();
    m_layers.resize(m_arch.layers);
    auto status = allocateKvFor(1, blocks * kProbeBlockTokens, progress);
    if (!status)
        return status;
    m_kvBlocks = blocks;
    return {};
}

void ModelOnDevice::releaseKv()
{
    m_kv.clear();
    m_kvBytes = 0;
    m_kvBlocks = 0;
    for (Layer& l : m_layers) {
        l.kCache = nullptr;
        l.vCache = nullptr;
    }
}

DeviceStatus ModelOnDevice::setSequences(const StepSequences& sequences)
{
    const std::uint64_t tableBytes = sequences.blockTable.size() * 4;
    const std::uint64_t lenBytes = sequences.seqLens.size() * 4;
    if (tableBytes > m_sizes.blockTable || lenBytes > m_sizes.seqLens || sequences.seqLens.empty())
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument,
                                          "the block table of " + std::to_string(sequences.blockTable.size())
                                              + " entries does not fit the scratch"});
    for (std::int32_t id : sequences.blockTable)
        if (id < 0 || static_cast<std::uint64_t>(id) >= m_kvBlocks)
            return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "block id past the pool"});
    if (auto s = m_device.upload(m_blockTable, sequences.blockTable.data(), Bytes{tableBytes}); !s)
        return s;
    if (auto s = m_device.upload(m_seqLens, sequences.seqLens.data(), Bytes{lenBytes}); !s)
        return s;
    m_hostSeqLens = sequences.seqLens;
    m_maxBlocksPerSeq = sequences.maxBlocksPerSeq;
    return {};
}

DeviceStatus ModelOnDevice::gemv(const kernels::WeightMatrix& w, const void* x, void* y, std::uint32_t batch, bool fp32Out)
{
    kernels::GemvArgs a;
    a.weights = w;
    a.x = static_cast<const std::uint16_t*>(x);
    a.batch = batch;
    a.y = y;
    a.yType = fp32Out ? kernels::OutputType::Fp32 : kernels::OutputType::Fp16;
    const kernels::Status s = kernels::gemv(backendOf(m_device), a, m_device.stream());
    if (s != kernels::Status::Ok)
        return tl::unexpected(kernelError("gemv", s));
    return {};
}

kernels::WeightMatrix ModelOnDevice::view(const formats::QuantLayout& layout, std::uint64_t rows, std::uint64_t cols,
                                          std::uint8_t* data)
{
    kernels::WeightMatrix w;
    w.layout = layout;
    w.rows = static_cast<std::uint32_t>(rows);
    w.cols = static_cast<std::uint32_t>(cols);
    w.data = data;
    w.scales = !formats::hasSeparateScales(layout)
        ? nullptr
        : reinterpret_cast<const std::uint16_t*>(data + rows * formats::rowBytes(layout, cols));
    // On the CPU, q8_0 / q4_0 / q4_K / q6_K rows are interleaved 8 at a time once at load, as
    // ggml's CPU backend repacks Q4_0 and Q4_K for AVX2 (kernels::packRows8; the same bytes).
    if (m_device.kind() == DeviceKind::Cpu && kernels::cpuUsesAvx2() && kernels::packsRows8(layout)
        && kernels::packRows8(layout, w.rows, w.cols, data) == kernels::Status::Ok)
        w.packing = kernels::RowPacking::Interleaved8;
    return w;
}

void ModelOnDevice::placeMatrix(const TensorSpec& t, std::uint32_t copyIndex, const kernels::WeightMatrix& w)
{
    Layer& l = m_layers[static_cast<std::size_t>(t.layer)];
    const std::string prefix = "model.layers." + std::to_string(t.layer) + ".";
    if (t.name.compare(0, prefix.size(), prefix) != 0)
        return;
    const std::string_view name = std::string_view(t.name).substr(prefix.size());
    const auto mlpSlot = [](Mlp& m, std::string_view leaf) -> kernels::WeightMatrix* {
        if (leaf == "gate_proj.weight") return &m.gate;
        if (leaf == "up_proj.weight" || leaf == "fc1.weight") return &m.up;
        if (leaf == "down_proj.weight" || leaf == "fc2.weight") return &m.down;
        return nullptr;
    };
    const auto under = [&](std::string_view head, std::string_view& leaf) {
        if (name.substr(0, head.size()) != head)
            return false;
        leaf = name.substr(head.size());
        return true;
    };
    std::string_view leaf;
    kernels::WeightMatrix* slot = nullptr;
    if (name == "self_attn.q_proj.weight") slot = &l.q;
    else if (name == "self_attn.k_proj.weight") slot = &l.k;
    else if (name == "self_attn.v_proj.weight") slot = &l.v;
    else if (name == "self_attn.o_proj.weight") slot = &l.o;
    else if (name == "self_attn.q_a_proj.weight") slot = &l.qA;
    else if (name == "self_attn.q_b_proj.weight") slot = &l.qB;
    else if (name == "self_attn.kv_a_proj_with_mqa.weight") slot = &l.kvA;
    else if (name == "mlp.gate.weight") slot = &l.router;
    else if (name == "mlp.shared_expert_gate.weight") slot = &l.sharedGate;
    else if (under("mlp.experts.", leaf)) {
        if (l.experts.size() < t.copies)
            l.experts.resize(t.copies);
        slot = mlpSlot(l.experts[copyIndex], leaf);
    } else if (under("mlp.shared_experts.", leaf) || under("mlp.shared_expert.", leaf))
        slot = mlpSlot(l.shared, leaf);
    else if (under("mlp.", leaf))
        slot = mlpSlot(l.mlp, leaf);
    if (slot)
        *slot = w;
}

bool ModelOnDevice::splitKvB(Layer& layer, std::uint8_t* data, std::uint64_t bytes, const formats::QuantLayout& layout)
{
    const MlaConfig& m = m_arch.mla;
    const std::uint64_t kBytes = formats::matrixStorageBytes(layout, m.kvLoraRank, m.qkNopeHeadDim);
    const std::uint64_t vBytes = formats::matrixStorageBytes(layout, m.vHeadDim, m.kvLoraRank);
    if ((kBytes + vBytes) * m_arch.attentionHeads != bytes)
        return false;
    layer.kB.clear();
    layer.vB.clear();
    for (std::uint32_t h = 0; h < m_arch.attentionHeads; ++h) {
        std::uint8_t* head = data + h * (kBytes + vBytes);
        layer.kB.push_back(view(layout, m.kvLoraRank, m.qkNopeHeadDim, head));
        layer.vB.push_back(view(layout, m.vHeadDim, m.kvLoraRank, head + kBytes));
    }
    return true;
}

std::uint64_t ModelOnDevice::stepTokenWeightBytes() const
{
    if (!m_arch.moe.enabled())
        return m_stepWeightBytes;
    return m_stepWeightBytes - m_stepExpertBytes + m_stepExpertBytes / m_arch.moe.expertCount * m_arch.moe.expertsPerToken;
}

DeviceStatus ModelOnDevice::copyRows(void* dst, std::uint64_t dstStride, const void* src, std::uint64_t srcStride,
                                     std::uint32_t rows, std::uint64_t rowBytes)
{
    auto* d = static_cast<std::uint8_t*>(dst);
    const auto* s = static_cast<const std::uint8_t*>(src);
    for (std::uint32_t r = 0; r < rows; ++r) {
        if (m_device.kind() == DeviceKind::Cpu)
            std::memcpy(d + r * dstStride, s + r * srcStride, rowBytes);
        else if (auto c = m_device.copy(d + r * dstStride, s + r * srcStride, Bytes{rowBytes}); !c)
            return c;
    }
    return {};
}

DeviceStatus ModelOnDevice::pagedAttention(const Layer& l, std::uint32_t sequences, std::uint32_t numHeads,
                                           std::uint32_t numKvHeads, std::uint32_t headDim, float scale, const void* q)
{
    const kernels::Backend backend = backendOf(m_device);
    for (std::uint32_t first = 0; first < sequences; first += kProbeMaxBatch) {
        const std::uint32_t count = std::min(kProbeMaxBatch, sequences - first);
        const std::int32_t* seqLens = static_cast<const std::int32_t*>(m_seqLens) + first;
        const std::int32_t* table = static_cast<const std::int32_t*>(m_blockTable) + std::uint64_t{first} * m_maxBlocksPerSeq;
        // The new token's K and V into the paged cache (sequences past 64 reuse the rows of the
        // first 64). MLA: k and v name the same latent pool, so the latent is written (twice, the
        // same bytes at the same place).
        kernels::KvAppendArgs w;
        w.batch = count;
        w.numKvHeads = numKvHeads;
        w.headDim = headDim;
        w.kNew = static_cast<const std::uint16_t*>(m_kNew);
        w.vNew = static_cast<const std::uint16_t*>(m_vNew ? m_vNew : m_kNew);
        w.seqLens = seqLens;
        w.layout = kernels::KvLayout::Paged;
        w.k = static_cast<std::uint16_t*>(l.kCache);
        w.v = static_cast<std::uint16_t*>(l.vCache);
        w.blockTable = table;
        w.maxBlocksPerSeq = m_maxBlocksPerSeq;
        w.blockTokens = static_cast<std::uint32_t>(kProbeBlockTokens);
        w.numBlocks = static_cast<std::uint32_t>(m_kvBlocks);
        if (const kernels::Status s = kernels::appendKv(backend, w, m_device.stream()); s != kernels::Status::Ok)
            return tl::unexpected(kernelError("KV cache write", s));
        kernels::DecodeAttentionArgs a;
        a.batch = count;
        a.numHeads = numHeads;
        a.numKvHeads = numKvHeads;
        a.headDim = headDim;
        a.scale = scale;
        a.q = static_cast<const std::uint16_t*>(q);
        a.seqLens = seqLens;
        a.layout = kernels::KvLayout::Paged;
        a.k = static_cast<const std::uint16_t*>(l.kCache);
        a.v = static_cast<const std::uint16_t*>(l.vCache);
        a.blockTable = table;
        a.maxBlocksPerSeq = m_maxBlocksPerSeq;
        a.blockTokens = static_cast<std::uint32_t>(kProbeBlockTokens);
        a.numBlocks = static_cast<std::uint32_t>(m_kvBlocks);
        a.out = static_cast<float*>(m_attnOut);
        a.workspace = m_attnWorkspace;
        a.workspaceBytes = m_sizes.attentionWorkspace;
        if (const kernels::Status s = kernels::decodeAttention(backend, a, m_device.stream()); s != kernels::Status::Ok)
            return tl::unexpected(kernelError("decode attention", s));
    }
    return {};
}

DeviceStatus ModelOnDevice::attention(const Layer& l, std::uint32_t sequences, std::uint32_t batch)
{
    if (!l.q.data || !l.k.data || !l.v.data || !l.o.data || !l.kCache)
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "an attention layer lacks a runnable matrix or its KV cache"});
    for (auto [w, out] : {std::pair{&l.q, m_q}, std::pair{&l.k, m_kNew}, std::pair{&l.v, m_vNew}})
        if (auto s = gemv(*w, m_hidden, out, batch, false); !s)
            return s;
    if (auto s = pagedAttention(l, sequences, m_arch.attentionHeads, m_arch.kvHeads, m_arch.headDim, 0.0f, m_q); !s)
        return s;
    // The attention output (fp32) becomes the o projection's fp16 input, in the queries' buffer.
    const std::size_t outCount = std::size_t{batch} * m_arch.attentionHeads * m_arch.headDim;
    if (const kernels::Status s = kernels::floatToHalf(backendOf(m_device), static_cast<const float*>(m_attnOut),
                                                       static_cast<std::uint16_t*>(m_q), outCount, m_device.stream());
        s != kernels::Status::Ok)
        return tl::unexpected(kernelError("attention output to fp16", s));
    return gemv(l.o, m_q, m_hidden, batch, false);
}

DeviceStatus ModelOnDevice::mlaAttention(const Layer& l, std::uint32_t sequences, std::uint32_t batch)
{
    const MlaConfig& m = m_arch.mla;
    const std::uint32_t H = m_arch.attentionHeads;
    const std::uint64_t qHead = std::uint64_t{m.qkNopeHeadDim} + m.qkRopeHeadDim;
    const std::uint32_t latent = m.kvLoraRank + m.qkRopeHeadDim;
    const bool qLora = m.qLoraRank > 0;
    if (!l.kvA.data || !l.o.data || !l.kCache || l.kB.size() != H || l.vB.size() != H
        || (qLora ? !l.qA.data || !l.qB.data : !l.q.data))
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "an MLA layer lacks a runnable matrix or its latent cache"});
    // Queries [B][H][qk_nope + qk_rope] and the new latent [B][kv_lora_rank + qk_rope].
    if (qLora) {
        if (auto s = gemv(l.qA, m_hidden, m_mlaQa, batch, false); !s)
            return s;
        if (auto s = gemv(l.qB, m_mlaQa, m_q, batch, false); !s)
            return s;
    } else if (auto s = gemv(l.q, m_hidden, m_q, batch, false); !s) {
        return s;
    }
    if (auto s = gemv(l.kvA, m_hidden, m_kNew, batch, false); !s)
        return s;
    // Absorb: q_latent[h] = k_b[h] q_nope[h]; the rope part of each head is copied beside it.
    auto* q = static_cast<std::uint8_t*>(m_q);
    auto* qLat = static_cast<std::uint8_t*>(m_mlaQ);
    const std::uint64_t qStride = H * qHead * 2, latStride = std::uint64_t{H} * latent * 2;
    for (std::uint32_t h = 0; h < H; ++h) {
        std::uint8_t* qNope = q + h * qHead * 2;
        std::uint8_t* out = qLat + std::uint64_t{h} * latent * 2;
        if (batch == 1) {
            if (auto s = gemv(l.kB[h], qNope, out, 1, false); !s)
                return s;
        } else {
            if (auto s = copyRows(m_mlaHeadIn, m.qkNopeHeadDim * 2, qNope, qStride, batch, m.qkNopeHeadDim * 2); !s)
                return s;
            if (auto s = gemv(l.kB[h], m_mlaHeadIn, m_mlaHeadOut, batch, false); !s)
                return s;
            if (auto s = copyRows(out, latStride, m_mlaHeadOut, std::uint64_t{m.kvLoraRank} * 2, batch, std::uint64_t{m.kvLoraRank} * 2); !s)
                return s;
        }
        if (auto s = copyRows(out + std::uint64_t{m.kvLoraRank} * 2, latStride, qNope + std::uint64_t{m.qkNopeHeadDim} * 2, qStride,
                              batch, std::uint64_t{m.qkRopeHeadDim} * 2);
            !s)
            return s;
    }
    // MQA over the latent: one KV "head" of kv_lora_rank + qk_rope; DeepSeek's softmax scale is
    // 1 / sqrt(qk_nope + qk_rope) (modeling_deepseek.py softmax_scale, before YaRN's mscale).
    const float scale = 1.0f / std::sqrt(static_cast<float>(qHead));
    if (auto s = pagedAttention(l, sequences, H, 1, latent, scale, m_mlaQ); !s)
        return s;
    const std::size_t outCount = std::size_t{batch} * H * latent;
    if (const kernels::Status s = kernels::floatToHalf(backendOf(m_device), static_cast<const float*>(m_attnOut),
                                                       static_cast<std::uint16_t*>(m_mlaQ), outCount, m_device.stream());
        s != kernels::Status::Ok)
        return tl::unexpected(kernelError("attention output to fp16", s));
    // Each head's latent output (its first kv_lora_rank values) times v_b [v_head, kv_lora_rank],
    // into the o projection's input [B][H * v_head] (the queries' buffer).
    const std::uint64_t vStride = std::uint64_t{H} * m.vHeadDim * 2;
    for (std::uint32_t h = 0; h < H; ++h) {
        const std::uint8_t* in = qLat + std::uint64_t{h} * latent * 2;
        std::uint8_t* out = q + std::uint64_t{h} * m.vHeadDim * 2;
        if (batch == 1) {
            if (auto s = gemv(l.vB[h], in, out, 1, false); !s)
                return s;
            continue;
        }
        if (auto s = copyRows(m_mlaHeadIn, std::uint64_t{m.kvLoraRank} * 2, in, latStride, batch, std::uint64_t{m.kvLoraRank} * 2); !s)
            return s;
        if (auto s = gemv(l.vB[h], m_mlaHeadIn, m_mlaHeadOut, batch, false); !s)
            return s;
        if (auto s = copyRows(out, vStride, m_mlaHeadOut, std::uint64_t{m.vHeadDim} * 2, batch, std::uint64_t{m.vHeadDim} * 2); !s)
            return s;
    }
    return gemv(l.o, m_q, m_hidden, batch, false);
}

DeviceStatus ModelOnDevice::mlp(const Mlp& m, const void* x, void* y, std::uint32_t batch)
{
    if (m.gate.data) {
        if (auto s = gemv(m.gate, x, m_ffnA, batch, false); !s)
            return s;
        if (auto s = gemv(m.up, x, m_ffnB, batch, false); !s)
            return s;
    } else if (auto s = gemv(m.up, x, m_ffnA, batch, false); !s) {
        return s;
    }
    return gemv(m.down, m_ffnA, y, batch, false);
}

DeviceStatus ModelOnDevice::moe(const Layer& l, std::uint32_t layer, std::uint32_t batch)
{
    const MoeConfig& cfg = m_arch.moe;
    const bool gated = m_arch.mlp == MlpKind::Gated;
    if (!l.router.data || l.router.rows < cfg.expertCount || std::uint64_t{l.router.rows} * kProbeMaxBatch * 4 > m_sizes.routerLogits
        || l.experts.size() != cfg.expertCount)
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "an MoE layer lacks its router or experts"});
    if (auto s = gemv(l.router, m_hidden, m_routerLogits, batch, true); !s)
        return s;
    // Read back [B][router rows] and keep each token's first E logits.
    const std::uint32_t rows = l.router.rows;
    m_hostLogits.resize(std::size_t{batch} * rows);
    if (auto s = m_device.synchronize(); !s)
        return s;
    if (auto s = m_device.download(m_hostLogits.data(), m_routerLogits, Bytes{m_hostLogits.size() * 4}); !s)
        return s;
    for (std::uint32_t t = 1; t < batch; ++t)
        std::copy_n(m_hostLogits.begin() + std::int64_t{t} * rows, cfg.expertCount, m_hostLogits.begin() + std::int64_t{t} * cfg.expertCount);
    const std::vector<std::uint32_t> picks = routeTopK(m_hostLogits.data(), batch, cfg.expertCount, cfg.expertsPerToken, layer);
    if (picks.empty())
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "top-k routing refused the layer's expert counts"});
    const std::uint64_t rowBytes = m_arch.hiddenSize * 2;
    // Every touched expert on the rows routed to it. The outputs are scattered to their rows of the
    // block's output without the router weights (synthetic activations: one more add a row).
    std::vector<std::uint32_t> routed;
    for (std::uint32_t e = 0; e < cfg.expertCount; ++e) {
        routed.clear();
        for (std::uint32_t t = 0; t < batch; ++t)
            for (std::uint32_t j = 0; j < cfg.expertsPerToken; ++j)
                if (picks[std::size_t{t} * cfg.expertsPerToken + j] == e)
                    routed.push_back(t);
        if (routed.empty())
            continue;
        const Mlp& expert = l.experts[e];
        if (!expert.runnable(gated))
            return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "an expert lacks a runnable matrix"});
        for (std::size_t i = 0; i < routed.size(); ++i)
            if (auto s = copyRows(static_cast<std::uint8_t*>(m_expertIn) + i * rowBytes, rowBytes,
                                  static_cast<const std::uint8_t*>(m_hidden) + routed[i] * rowBytes, rowBytes, 1, rowBytes);
                !s)
                return s;
        const auto n = static_cast<std::uint32_t>(routed.size());
        if (auto s = mlp(expert, m_expertIn, m_expertOut, n); !s)
            return s;
        for (std::size_t i = 0; i < routed.size(); ++i)
            if (auto s = copyRows(static_cast<std::uint8_t*>(m_moeOut) + routed[i] * rowBytes, rowBytes,
                                  static_cast<const std::uint8_t*>(m_expertOut) + i * rowBytes, rowBytes, 1, rowBytes);
                !s)
                return s;
    }
    // The shared experts on every row (their output written into the block's output).
    if (l.shared.up.data) {
        if (auto s = mlp(l.shared, m_hidden, m_expertOut, batch); !s)
            return s;
        if (l.sharedGate.data)
            if (auto s = gemv(l.sharedGate, m_hidden, m_routerLogits, batch, true); !s)
                return s;
    }
    return copyRows(m_hidden, rowBytes, m_moeOut, rowBytes, batch, rowBytes);
}

std::vector<std::uint32_t> ModelOnDevice::distinctLayers() const
{
    std::vector<std::uint32_t> out;
    std::set<std::tuple<int, bool, std::uint32_t, int>> kinds;
    for (std::uint32_t i = 0; i < m_arch.layers; ++i) {
        const int mixer = static_cast<int>(m_arch.hybrid.mixerOf(i));
        const int ffn = !m_arch.hybrid.hasMlp(i) ? 0 : m_arch.moe.isMoeLayer(i) ? 2 : 1;
        if (kinds.emplace(mixer, m_arch.sliding.isSliding(i), m_arch.kvHeadsOf(i), ffn).second)
            out.push_back(i);
    }
    return out;
}

DeviceStatus ModelOnDevice::step(const ProbeProgress* cancel, std::uint32_t layers, bool distinctOnly)
{
    if (m_hostSeqLens.empty() || m_kvBlocks == 0 || !m_lmHead.data)
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "step without sequences, KV pool or weights"});
    const std::uint32_t sequences = static_cast<std::uint32_t>(m_hostSeqLens.size());
    const std::uint32_t batch = std::min(sequences, kProbeMaxBatch);
    const bool gated = m_arch.mlp == MlpKind::Gated;
    const std::size_t runLayers = layers == 0 ? m_layers.size() : std::min<std::size_t>(layers, m_layers.size());
    std::vector<std::uint32_t> order;
    if (distinctOnly)
        order = distinctLayers();
    else
        for (std::uint32_t i = 0; i < runLayers; ++i)
            order.push_back(i);
    for (const std::uint32_t li : order) {
        if (li >= runLayers)
            break;
        const Layer& l = m_layers[li];
        const std::uint32_t index = li;
        if (cancel && cancel->cancelled())
            return tl::unexpected(DeviceError{DeviceError::Code::Cancelled, "cancelled"});
        // The activations are synthetic: the step moves the model's bytes and does its arithmetic
        // without norms, RoPE or activation functions.
        if (m_arch.hybrid.isAttention(index)) {
            auto s = m_arch.mla.cachesLatent() ? mlaAttention(l, sequences, batch) : attention(l, sequences, batch);
            if (!s)
                return s;
        }
        if (!m_arch.hybrid.hasMlp(index))
            continue;
        if (m_arch.moe.isMoeLayer(index)) {
            if (auto s = moe(l, index, batch); !s)
                return s;
        } else {
            if (!l.mlp.runnable(gated))
                return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "a layer lacks a runnable MLP matrix"});
            if (auto s = mlp(l.mlp, m_hidden, m_hidden, batch); !s)
                return s;
        }
    }
    return gemv(m_lmHead, m_hidden, m_logits, batch, true);
}

} // namespace headroom::probes::detail
