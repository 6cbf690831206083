#include "modelondevice.h"

#include "headroom/core/kvcache.h"
#include "headroom/kernels/cpukernels.h"
#include "headroom/kernels/kernels.h"

#include <algorithm>
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
    return hidden + q + kNew + vNew + attnOut + ffnA + ffnB + logits + seqLens + blockTable + attentionWorkspace;
}

ScratchSizes scratchSizes(const Architecture& arch, DeviceKind backend, std::uint64_t blockTableEntries)
{
    const std::uint64_t b = kProbeMaxBatch;
    const std::uint64_t qWidth = std::uint64_t{arch.attentionHeads} * arch.headDim;
    const std::uint64_t kvWidth = std::uint64_t{arch.kvHeads} * arch.headDim;
    ScratchSizes s;
    s.hidden = b * arch.hiddenSize * 2;
    s.q = b * qWidth * 2;
    s.kNew = b * kvWidth * 2;
    s.vNew = b * kvWidth * 2;
    s.attnOut = b * qWidth * 4;
    s.ffnA = b * arch.intermediateSize * 2;
    s.ffnB = b * arch.intermediateSize * 2;
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

        // A view for the kernels when the tensor is a matrix whose packed layout has exactly the
        // formula's bytes (true for every kernel-runnable format with even column counts).
        const auto layout = kernelLayout(m_inputs.format, t.role);
        if (t.isMatrix() && t.copies == 1 && layout
            && formats::matrixStorageBytes(*layout, t.rows, t.cols) == bytes.value) {
            kernels::WeightMatrix w;
            w.layout = *layout;
            w.rows = static_cast<std::uint32_t>(t.rows);
            w.cols = static_cast<std::uint32_t>(t.cols);
            w.data = buffer->as<std::uint8_t>();
            w.scales = !formats::hasSeparateScales(*layout)
                ? nullptr
                : reinterpret_cast<const std::uint16_t*>(w.data + t.rows * formats::rowBytes(*layout, t.cols));
            // On the CPU, q8_0 / q4_0 rows are interleaved 8 at a time once at load, as ggml's CPU
            // backend repacks Q4_0 for AVX2 (kernels::packRows8; the same bytes).
            if (m_device.kind() == DeviceKind::Cpu && kernels::cpuUsesAvx2() && kernels::packsRows8(*layout)
                && kernels::packRows8(*layout, w.rows, w.cols, buffer->as<std::uint8_t>()) == kernels::Status::Ok)
                w.packing = kernels::RowPacking::Interleaved8;
            if (t.role == TensorRole::TokenEmbedding)
                embedding = w;
            else if (t.role == TensorRole::Output) {
                m_lmHead = w;
                haveLmHead = true;
            } else if (t.layer >= 0 && static_cast<std::uint32_t>(t.layer) < m_layers.size()) {
                Layer& l = m_layers[static_cast<std::size_t>(t.layer)];
                if (endsWith(t.name, "self_attn.q_proj.weight")) l.q = w;
                else if (endsWith(t.name, "self_attn.k_proj.weight")) l.k = w;
                else if (endsWith(t.name, "self_attn.v_proj.weight")) l.v = w;
                else if (endsWith(t.name, "self_attn.o_proj.weight")) l.o = w;
                else if (endsWith(t.name, "mlp.gate_proj.weight")) l.gate = w;
                else if (endsWith(t.name, "mlp.up_proj.weight")) l.up = w;
                else if (endsWith(t.name, "mlp.down_proj.weight")) l.down = w;
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
    const auto count = [&](const kernels::WeightMatrix& w) {
        if (!w.data)
            return;
        m_stepWeightBytes += formats::matrixStorageBytes(w.layout, w.rows, w.cols);
        m_stepWeightParameters += std::uint64_t{w.rows} * w.cols;
    };
    for (const Layer& l : m_layers)
        for (const kernels::WeightMatrix* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
            count(*w);
    count(m_lmHead);
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
                                    std::tuple{m_sizes.attentionWorkspace, "attention workspace", &m_attnWorkspace}}) {
        if (auto status = make(bytes, what, *out); !status)
            return status;
    }
    return {};
}

DeviceStatus ModelOnDevice::allocateKvFor(std::uint64_t users, std::uint64_t context, ProbeProgress* progress)
{
    releaseKv();
    const bool mla = m_arch.mla.enabled();
    for (std::uint32_t l = 0; l < m_arch.layers; ++l) {
        if (progress && progress->cancelled()) {
            releaseKv();
            return tl::unexpected(DeviceError{DeviceError::Code::Cancelled, "cancelled"});
        }
        const std::uint64_t cells = layerCells(m_arch, l, users, context);
        std::vector<std::pair<std::uint64_t, std::string>> parts;
        if (mla) {
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
    // Non-MLA models allocate K then V per layer (see allocateKvFor).
    if (!m_arch.mla.enabled() && m_kv.size() == 2 * std::size_t{m_arch.layers}) {
        for (std::uint32_t l = 0; l < m_arch.layers; ++l) {
            m_layers[l].kCache = m_kv[2 * l].get();
            m_layers[l].vCache = m_kv[2 * l + 1].get();
        }
    }
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

DeviceStatus ModelOnDevice::step(const ProbeProgress* cancel, std::uint32_t layers)
{
    if (m_hostSeqLens.empty() || m_kvBlocks == 0 || !m_lmHead.data)
        return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "step without sequences, KV pool or weights"});
    const std::uint32_t sequences = static_cast<std::uint32_t>(m_hostSeqLens.size());
    const std::uint32_t batch = std::min(sequences, kProbeMaxBatch);
    const kernels::Backend backend = backendOf(m_device);
    const std::size_t runLayers = layers == 0 ? m_layers.size() : std::min<std::size_t>(layers, m_layers.size());
    for (std::size_t li = 0; li < runLayers; ++li) {
        const Layer& l = m_layers[li];
        if (cancel && cancel->cancelled())
            return tl::unexpected(DeviceError{DeviceError::Code::Cancelled, "cancelled"});
        if (!l.q.data || !l.k.data || !l.v.data || !l.o.data || !l.gate.data || !l.up.data || !l.down.data || !l.kCache)
            return tl::unexpected(DeviceError{DeviceError::Code::InvalidArgument, "a layer lacks a runnable matrix or its KV cache"});
        // The activations are synthetic: the step moves the model's bytes and does its arithmetic
        // without norms, RoPE or SiLU.
        for (auto [w, out] : {std::pair{&l.q, m_q}, std::pair{&l.k, m_kNew}, std::pair{&l.v, m_vNew}})
            if (auto s = gemv(*w, m_hidden, out, batch, false); !s)
                return s;
        for (std::uint32_t first = 0; first < sequences; first += kProbeMaxBatch) {
            const std::uint32_t count = std::min(kProbeMaxBatch, sequences - first);
            const std::int32_t* seqLens = static_cast<const std::int32_t*>(m_seqLens) + first;
            const std::int32_t* table = static_cast<const std::int32_t*>(m_blockTable) + std::uint64_t{first} * m_maxBlocksPerSeq;
            // The new token's K and V into the paged cache (sequences past 64 reuse the rows of the first 64).
            kernels::KvAppendArgs w;
            w.batch = count;
            w.numKvHeads = m_arch.kvHeads;
            w.headDim = m_arch.headDim;
            w.kNew = static_cast<const std::uint16_t*>(m_kNew);
            w.vNew = static_cast<const std::uint16_t*>(m_vNew);
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
            a.numHeads = m_arch.attentionHeads;
            a.numKvHeads = m_arch.kvHeads;
            a.headDim = m_arch.headDim;
            a.q = static_cast<const std::uint16_t*>(m_q);
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
            const kernels::Status s = kernels::decodeAttention(backend, a, m_device.stream());
            if (s != kernels::Status::Ok)
                return tl::unexpected(kernelError("decode attention", s));
        }
        // The attention output (fp32) becomes the o projection's fp16 input, in the queries' buffer.
        const std::size_t outCount = std::size_t{batch} * m_arch.attentionHeads * m_arch.headDim;
        if (const kernels::Status s = kernels::floatToHalf(backend, static_cast<const float*>(m_attnOut),
                                                           static_cast<std::uint16_t*>(m_q), outCount, m_device.stream());
            s != kernels::Status::Ok)
            return tl::unexpected(kernelError("attention output to fp16", s));
        if (auto s = gemv(l.o, m_q, m_hidden, batch, false); !s)
            return s;
        if (auto s = gemv(l.gate, m_hidden, m_ffnA, batch, false); !s)
            return s;
        if (auto s = gemv(l.up, m_hidden, m_ffnB, batch, false); !s)
            return s;
        if (auto s = gemv(l.down, m_ffnA, m_hidden, batch, false); !s)
            return s;
    }
    return gemv(m_lmHead, m_hidden, m_logits, batch, true);
}

} // namespace headroom::probes::detail
