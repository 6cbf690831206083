#include "headroom/core/engines/llamacppoffload.h"

#include "headroom/core/parameters.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

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

// The sort key of a tensor in the writer's order: weight_name_comparer (llama-quantize: layer -1
// first, then by layer, then by name) or Ollama's WriteGGUF (blocks by number, the rest last).
std::string orderKey(const TensorSpec& t, GgufTensorOrder order)
{
    char layer[16];
    const std::int64_t l = t.layer;
    const bool outside = l < 0;
    const std::int64_t rank = outside ? (order == GgufTensorOrder::OllamaSorted ? 9999999 : -1) : l;
    std::snprintf(layer, sizeof layer, "%08lld", static_cast<long long>(rank + 1));
    return std::string(layer) + ggufTensorName(t);
}

// The file order of @p tensors as @p order writes them: indices into @p tensors, stably sorted
// by orderKey (Converted: the list's own order).
std::vector<std::uint32_t> sortedFileOrder(const std::vector<TensorSpec>& tensors, GgufTensorOrder order)
{
    std::vector<std::uint32_t> out(tensors.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint32_t>(i);
    if (order == GgufTensorOrder::Converted)
        return out;
    std::vector<std::string> keys;
    keys.reserve(tensors.size());
    for (const TensorSpec& t : tensors)
        keys.push_back(orderKey(t, order));
    std::stable_sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) { return keys[a] < keys[b]; });
    return out;
}

// The tensors' identity as far as the file order goes: orderKey reads name, role and layer.
bool sameOrderInputs(const std::vector<TensorSpec>& a, const std::vector<TensorSpec>& b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].layer != b[i].layer || a[i].role != b[i].role || a[i].name != b[i].name)
            return false;
    return true;
}

// The file orders made so far, one per tensor list and writer's order (a model has one list),
// so that a plan, and each -ngl trial of maxGpuLayers, reuses its model's order instead of
// naming and sorting every tensor again (issue 9 speed: that was 30 % of the llama.cpp grid).
// Bounded (kOrderCacheEntries, oldest dropped first); shared by threads under a mutex.
std::shared_ptr<const std::vector<std::uint32_t>> cachedFileOrder(const std::vector<TensorSpec>& tensors,
                                                                  GgufTensorOrder order)
{
    struct Entry {
        GgufTensorOrder order;
        std::vector<TensorSpec> tensors;
        std::shared_ptr<const std::vector<std::uint32_t>> fileOrder;
    };
    constexpr std::size_t kOrderCacheEntries = 16;
    static std::mutex mutex;
    static std::deque<Entry> cache;
    {
        const std::lock_guard<std::mutex> lock(mutex);
        for (const Entry& e : cache)
            if (e.order == order && sameOrderInputs(e.tensors, tensors))
                return e.fileOrder;
    }
    auto made = std::make_shared<const std::vector<std::uint32_t>>(sortedFileOrder(tensors, order));
    const std::lock_guard<std::mutex> lock(mutex);
    if (cache.size() >= kOrderCacheEntries)
        cache.pop_front();
    cache.push_back({order, tensors, made});
    return made;
}

// The span of get_mapping_range: the bytes from the first to the last tensor the CPU keeps, in
// the file's order (@p fileOrder indexes @p bytes and @p onCpu).
Bytes mappedSpan(const std::vector<std::uint32_t>& fileOrder, const std::vector<Bytes>& bytes,
                 const std::vector<bool>& onCpu)
{
    std::size_t first = fileOrder.size();
    std::size_t last = 0;
    for (std::size_t i = 0; i < fileOrder.size(); ++i)
        if (onCpu[fileOrder[i]]) {
            first = std::min(first, i);
            last = i;
        }
    Bytes out;
    for (std::size_t i = first; i < fileOrder.size() && i <= last; ++i)
        out += bytes[fileOrder[i]];
    return out;
}

} // namespace

std::string ggufTensorName(const TensorSpec& t)
{
    std::string suffix = t.name;
    const std::string::size_type dot = suffix.rfind('.');
    const std::string kind = dot == std::string::npos ? "weight" : suffix.substr(dot + 1);
    if (t.role == TensorRole::TokenEmbedding)
        return "token_embd." + kind;
    if (t.role == TensorRole::PositionEmbedding)
        return "position_embd." + kind;
    if (t.role == TensorRole::Output)
        return "output." + kind;
    if (t.layer < 0)
        return t.role == TensorRole::Norm ? "output_norm." + kind : t.name;
    // gguf-py tensor_mapping.py: the block tensors of the Llama/Qwen/Mixtral/DeepSeek families.
    static const std::pair<const char*, const char*> table[] = {
        {"mlp.shared_experts.gate_proj", "ffn_gate_shexp"}, {"mlp.shared_experts.up_proj", "ffn_up_shexp"},
        {"mlp.shared_experts.down_proj", "ffn_down_shexp"}, {"mlp.experts.gate_proj", "ffn_gate_exps"},
        {"mlp.experts.up_proj", "ffn_up_exps"},            {"mlp.experts.down_proj", "ffn_down_exps"},
        {"mlp.gate.", "ffn_gate_inp"},                     {"mlp.gate_proj", "ffn_gate"},
        {"mlp.up_proj", "ffn_up"},                         {"mlp.down_proj", "ffn_down"},
        {"mlp.fc1", "ffn_up"},                             {"mlp.fc2", "ffn_down"},
        {"self_attn.q_a_layernorm", "attn_q_a_norm"},      {"self_attn.kv_a_layernorm", "attn_kv_a_norm"},
        {"self_attn.q_a_proj", "attn_q_a"},                {"self_attn.q_b_proj", "attn_q_b"},
        {"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"}, {"self_attn.kv_b_proj", "attn_kv_b"},
        {"self_attn.q_proj", "attn_q"},                    {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},                    {"self_attn.o_proj", "attn_output"},
        {"self_attn.q_norm", "attn_q_norm"},               {"self_attn.k_norm", "attn_k_norm"},
        {"input_layernorm", "attn_norm"},                  {"post_attention_layernorm", "ffn_norm"},
        {"pre_feedforward_layernorm", "ffn_norm"},         {"post_feedforward_layernorm", "post_ffw_norm"},
    };
    const std::string block = "blk." + std::to_string(t.layer) + ".";
    for (const auto& [hf, gguf] : table)
        if (t.name.find(hf) != std::string::npos)
            return block + gguf + "." + kind;
    const std::string prefix = "model.layers." + std::to_string(t.layer) + ".";
    return block + (t.name.rfind(prefix, 0) == 0 ? t.name.substr(prefix.size()) : t.name);
}

namespace {

// Which device llama.cpp gives layer @p il (the output layer is il = n_layer): -1 = the CPU, else
// the GPU index (src/llama-model.cpp load_tensors get_layer_buft_list).
struct LayerPlacement {
    std::int64_t gpuStart = 0;       // i_gpu_start
    std::int64_t active = 0;         // act_gpu_layers
    std::vector<float> points;       // normalised cumulative split points (float, as llama.cpp)

    int deviceOf(std::int64_t il) const
    {
        if (il < gpuStart || il - gpuStart >= active)
            return -1;
        const float at = static_cast<float>(il - gpuStart) / static_cast<float>(active);
        const auto it = std::upper_bound(points.begin(), points.end(), at);
        return static_cast<int>(std::min<std::ptrdiff_t>(it - points.begin(), static_cast<std::ptrdiff_t>(points.size()) - 1));
    }
};

LayerPlacement placement(std::int64_t layers, std::int64_t ngl, bool outputFirst, const std::vector<double>& split)
{
    LayerPlacement p;
    p.gpuStart = std::max<std::int64_t>((outputFirst ? layers + 1 : layers) - ngl, 0);
    p.active = std::min<std::int64_t>(ngl, layers + 1);
    std::vector<double> shares = split;
    const bool allZero = std::all_of(shares.begin(), shares.end(), [](double x) { return !(x > 0); });
    if (shares.empty() || allZero)
        shares = {1.0};
    float sum = 0;
    for (double x : shares) {
        sum += static_cast<float>(std::max(x, 0.0));
        p.points.push_back(sum);
    }
    for (float& x : p.points)
        x /= sum;
    return p;
}

} // namespace

bool ffnOverflowMatches(const std::string& ggufName, FfnOverflow part)
{
    // The name after "blk.N." (llama.cpp's patterns start with "blk\\.N\\.").
    if (ggufName.rfind("blk.", 0) != 0)
        return false;
    const std::string::size_type dot = ggufName.find('.', 4);
    if (dot == std::string::npos)
        return false;
    const std::string rest = ggufName.substr(dot + 1);
    const auto starts = [&rest](const char* prefix) { return rest.rfind(prefix, 0) == 0; };
    switch (part) {
    case FfnOverflow::None:
        return false;
    case FfnOverflow::Attn:
        return starts("ffn_gate") || starts("ffn_up") || starts("ffn_down");
    case FfnOverflow::Up:
        return starts("ffn_gate") || starts("ffn_down");
    case FfnOverflow::Gate:
        return starts("ffn_down");
    case FfnOverflow::Moe:
        for (const char* p : {"ffn_up_", "ffn_down_", "ffn_gate_up_", "ffn_gate_"})
            if (starts(p)) {
                const std::string tail = rest.substr(std::string(p).size());
                if (tail.rfind("exps", 0) == 0 || tail.rfind("chexps", 0) == 0)
                    return true;
            }
        return false;
    }
    return false;
}

OffloadTensors offloadTensors(const Architecture& arch, const WeightFormat& format, GgufTensorOrder order)
{
    OffloadTensors out;
    out.orderAssumed = order == GgufTensorOrder::Unknown;
    out.order = out.orderAssumed ? GgufTensorOrder::LayerSorted : order;
    out.tensors = listTensors(arch);
    out.priced.reserve(out.tensors.size());
    for (const TensorSpec& t : out.tensors)
        out.priced.push_back(priceTensor(t, format, arch));
    out.fileOrder = cachedFileOrder(out.tensors, out.order);
    return out;
}

namespace {

constexpr std::uint32_t kSchedMaxCopies = 4; // GGML_SCHED_MAX_COPIES, ggml/src/ggml-backend.cpp

// The compute buffers with pipeline parallelism (OffloadBill::pipelineCopies): each device's own
// working memory (the largest stage of the reserve graph, the logits only on the output layer's
// GPU, the mask it reads left out where that mask is one of its input copies) plus n_copies x
// the inputs it receives; the host keeps n_copies x its graph inputs and token_embd's rows.
void pipelineCompute(const ComputeBill& c, bool flashAttention, OffloadBill& out)
{
    const std::uint64_t n = out.pipelineCopies;
    const Bytes moved = c.embdBytes + c.positionsBytes;
    bool first = true;
    for (std::size_t d = 0; d < out.devices.size(); ++d) {
        if (out.devicesLayers[d] == 0)
            continue;
        const bool output = static_cast<int>(d) == out.outputDevice;
        // The first GPU receives the f32 mask from the CPU (and casts it for flash attention);
        // without flash attention every GPU reads its own copy of the f32 mask.
        const bool maskIsCopy = !first || !flashAttention;
        const Bytes mask = first || !flashAttention ? c.maskInputBytes : c.maskDeviceBytes;
        const Bytes received = c.embdBytes + c.positionsBytes + mask;
        const Bytes outputStage = output ? c.outputStageBytes : saturatingSub(c.outputStageBytes, c.logitsBytes);
        const Bytes attention = maskIsCopy ? saturatingSub(c.attentionStageBytes, c.maskDeviceBytes) : c.attentionStageBytes;
        const Bytes working = saturatingSub(std::max({outputStage, attention, c.ffnStageBytes}), moved);
        out.devices[d].computeBytes = working + Bytes{checkedMul(received.value, n, "pipeline copies")};
        first = false;
    }
    // inp_tokens, inp_pos, inp_out_ids (T x 4 B each) and the f32 mask, n_copies times; the
    // embeddings get_rows produces once.
    const Bytes inputs = c.maskInputBytes + Bytes{checkedMul(c.positionsBytes.value, 3, "graph inputs")};
    out.host.computeBytes = c.embdBytes + Bytes{checkedMul(inputs.value, n, "pipeline copies")};
}

} // namespace

OffloadBill offload(const Architecture& arch, const WeightFormat& format, const ContextSettings& context,
                    const OffloadSettings& o)
{
    return offload(offloadTensors(arch, format, o.tensorOrder), arch, context, o);
}

OffloadBill offload(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
                    const OffloadSettings& o)
{
    OffloadBill out;
    const std::int64_t layers = arch.layers;
    out.totalLayers = arch.layers + 1;
    const std::int64_t ngl = o.gpuLayers < 0 ? layers + 1 : std::min<std::int64_t>(o.gpuLayers, layers + 1);
    out.offloadedLayers = static_cast<std::uint32_t>(ngl);
    const LayerPlacement where = placement(layers, ngl, o.outputFirst, o.tensorSplit);
    out.devices.assign(where.points.size(), SideBill{});
    out.devicesLayers.assign(where.points.size(), 0);
    out.firstGpuLayer = static_cast<std::uint32_t>(where.gpuStart);
    out.outputDevice = where.deviceOf(layers);
    out.outputOnGpu = out.outputDevice >= 0;
    int previous = -1; // token_embd's get_rows runs on the CPU
    for (std::int64_t il = 0; il <= layers; ++il) {
        const int d = where.deviceOf(il);
        if (d >= 0)
            ++out.devicesLayers[static_cast<std::size_t>(d)];
        out.deviceCrossings += d != previous ? 1 : 0;
        previous = d;
    }
    out.hostWeightsMapped = o.mmap;
    out.tensorOrderAssumed = list.orderAssumed;
    std::vector<Bytes> bytes(list.tensors.size());
    std::vector<bool> onCpu(list.tensors.size(), false);
    // --fit's overrides by layer (the last one written for a layer wins, as llama.cpp takes the
    // first matching pattern and --fit writes one a layer).
    std::vector<const FfnOverride*> overrideOf;
    if (!o.ffnOverrides.empty()) {
        overrideOf.assign(arch.layers, nullptr);
        for (const FfnOverride& ov : o.ffnOverrides)
            if (ov.layer < arch.layers && ov.part != FfnOverflow::None)
                overrideOf[ov.layer] = &ov;
    }

    for (std::size_t i = 0; i < list.tensors.size(); ++i) {
        const TensorSpec& t = list.tensors[i];
        const PricedTensor& priced = list.priced[i];
        const Bytes b = priced.bytes;
        bytes[i] = b;
        if (t.role == TensorRole::TokenEmbedding) {
            out.tokenEmbeddingBytes += b;
            out.host.weightsBytes += b;
            // A tied lm_head is token_embd duplicated to the output layer's device (TENSOR_DUPLICATED).
            if (arch.tiedEmbeddings && out.outputOnGpu)
                out.devices[static_cast<std::size_t>(out.outputDevice)].weightsBytes += b;
            onCpu[i] = true;
            continue;
        }
        int device = -1;
        if (t.layer >= 0)
            device = isRoutedExpert(t) && static_cast<std::uint32_t>(t.layer) < o.cpuMoeLayers ? -1 : where.deviceOf(t.layer);
        else if (belongsToOutput(t))
            device = out.outputDevice;
        if (t.layer >= 0 && static_cast<std::size_t>(t.layer) < overrideOf.size() && overrideOf[static_cast<std::size_t>(t.layer)]) {
            const FfnOverride& ov = *overrideOf[static_cast<std::size_t>(t.layer)];
            if (ffnOverflowMatches(ggufTensorName(t), ov.part))
                device = ov.device < static_cast<int>(out.devices.size()) ? ov.device : -1;
        }
        // -ot: the first pattern matching the tensor's GGUF name places it (tensor_buft_overrides).
        if (!o.tensorOverrides.empty() && t.layer >= 0) {
            const std::string name = ggufTensorName(t);
            for (const TensorOverride& ov : o.tensorOverrides)
                if (ov.regex && std::regex_search(name, *ov.regex)) {
                    device = ov.device < static_cast<int>(out.devices.size()) ? ov.device : -1;
                    break;
                }
        }
        SideBill& side = device >= 0 ? out.devices[static_cast<std::size_t>(device)] : out.host;
        side.weightsBytes += b;
        if (isRoutedExpert(t))
            side.expertBytes += b;
        if (device < 0 && o.cpuRepack && isRepacked(t, priced.type))
            out.hostRepackBytes += b;
        onCpu[i] = device < 0;
    }
    out.hostMappedBytes = o.mmap ? mappedSpan(*list.fileOrder, bytes, onCpu) : out.host.weightsBytes;

    const std::vector<Bytes> kv = kvBytesPerLayer(arch, context);
    for (std::uint32_t il = 0; il < arch.layers; ++il) {
        const int d = o.kvOffload ? where.deviceOf(il) : -1;
        (d >= 0 ? out.devices[static_cast<std::size_t>(d)].kvBytes : out.host.kvBytes) += kv[il];
    }

    const ComputeBill compute = computeBuffer(arch, context);
    out.hostOutputBytes = outputBufferBytes(arch, context);
    out.pipelineCopies = where.points.size() > 1 && ngl > layers && o.kvOffload && o.cpuMoeLayers == 0 && o.ffnOverrides.empty()
                                 && o.tensorOverrides.empty()
                             ? kSchedMaxCopies
                             : 1;
    if (out.pipelineCopies > 1) {
        pipelineCompute(compute, context.flashAttention, out);
    } else if (ngl == 0) {
        out.host.computeBytes = compute.totalBytes;
    } else {
        for (std::size_t d = 0; d < out.devices.size(); ++d)
            if (out.devicesLayers[d] > 0)
                out.devices[d].computeBytes = static_cast<int>(d) == out.outputDevice || out.devices.size() == 1
                                                  ? compute.deviceBytes
                                                  : saturatingSub(compute.deviceBytes, compute.logitsBytes);
        out.host.computeBytes = out.firstGpuLayer == 0 && o.kvOffload
                                    ? compute.hostPartBytes
                                    // CPU layers run their attention and feed-forward on the host.
                                    : compute.hostPartBytes + std::max(compute.attentionStageBytes, compute.ffnStageBytes);
    }
    for (const SideBill& d : out.devices) {
        out.gpu.weightsBytes += d.weightsBytes;
        out.gpu.kvBytes += d.kvBytes;
        out.gpu.computeBytes += d.computeBytes;
        out.gpu.expertBytes += d.expertBytes;
    }
    return out;
}

Bytes busiestDeviceBytes(const OffloadBill& bill)
{
    Bytes out;
    for (const SideBill& d : bill.devices)
        out = std::max(out, d.totalBytes());
    return bill.devices.empty() ? bill.gpu.totalBytes() : out;
}

tl::expected<std::vector<double>, std::string> parseTensorSplit(const std::string& text)
{
    std::vector<double> out;
    std::string item;
    const auto flush = [&]() -> std::optional<std::string> {
        char* end = nullptr;
        const double v = std::strtod(item.c_str(), &end);
        if (item.empty() || end != item.c_str() + item.size() || !(v >= 0) || !(v < 1e9))
            return "expected non-negative numbers separated by ',' or '/' (\"3,1\"), found \"" + item + "\"";
        out.push_back(v);
        item.clear();
        return std::nullopt;
    };
    if (text.size() > 256)
        return tl::unexpected(std::string("expected at most 256 characters, found ") + std::to_string(text.size()));
    for (char c : text) {
        if (c == ',' || c == '/') {
            if (auto why = flush())
                return tl::unexpected(*why);
        } else {
            item += c;
        }
    }
    if (auto why = flush())
        return tl::unexpected(*why);
    if (out.size() > 16)
        return tl::unexpected("expected at most 16 devices (llama_max_devices), found " + std::to_string(out.size()));
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
    return maxGpuLayers(offloadTensors(arch, format, o.tensorOrder), arch, context, o, gpuBudget);
}

std::uint32_t maxGpuLayers(const OffloadTensors& list, const Architecture& arch, const ContextSettings& context,
                           const OffloadSettings& o, Bytes gpuBudget)
{
    for (std::int64_t n = arch.layers + 1; n >= 1; --n) {
        OffloadSettings trial = o;
        trial.gpuLayers = n;
        if (busiestDeviceBytes(offload(list, arch, context, trial)) <= gpuBudget)
            return static_cast<std::uint32_t>(n);
    }
    return 0;
}

tl::expected<std::vector<TensorOverride>, std::string> parseTensorOverrides(const std::string& text, std::size_t gpus)
{
    std::vector<TensorOverride> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        const std::size_t eq = item.rfind('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            return tl::unexpected("expected PATTERN=BUFFER_TYPE items separated by ',' (exps=CPU), found \"" + item + "\"");
        TensorOverride ov;
        ov.pattern = item.substr(0, eq);
        const std::string buft = item.substr(eq + 1);
        if (buft == "CPU") {
            ov.device = -1;
        } else if (buft.rfind("CUDA", 0) == 0 && buft.size() > 4 && buft.size() < 8
                   && buft.find_first_not_of("0123456789", 4) == std::string::npos) {
            ov.device = std::stoi(buft.substr(4));
            if (static_cast<std::size_t>(ov.device) >= gpus)
                return tl::unexpected("buffer type " + buft + " of \"" + item + "\": the plan has " + std::to_string(gpus)
                                      + (gpus == 1 ? " GPU (CUDA0)" : " GPUs"));
        } else {
            return tl::unexpected("unknown buffer type \"" + buft + "\" in \"" + item + "\": expected CPU or CUDA<N>");
        }
        try {
            ov.regex = std::make_shared<const std::regex>(ov.pattern);
        } catch (const std::regex_error&) {
            return tl::unexpected("\"" + ov.pattern + "\" is not a regular expression (ECMAScript, as std::regex reads it)");
        }
        out.push_back(std::move(ov));
        if (out.size() > 64)
            return tl::unexpected(std::string("expected at most 64 PATTERN=BUFFER_TYPE items"));
        start = comma + 1;
    }
    return out;
}

std::string offloadFlags(const OffloadBill& bill, const OffloadSettings& o)
{
    std::string out = "-ngl " + std::to_string(bill.offloadedLayers);
    if (!o.tensorOverrides.empty()) {
        out += " -ot ";
        for (std::size_t i = 0; i < o.tensorOverrides.size(); ++i)
            out += (i ? "," : "") + o.tensorOverrides[i].pattern + "="
                   + (o.tensorOverrides[i].device < 0 ? std::string("CPU") : "CUDA" + std::to_string(o.tensorOverrides[i].device));
    }
    if (o.cpuMoeLayers > 0)
        out += " --n-cpu-moe " + std::to_string(o.cpuMoeLayers);
    if (!o.kvOffload)
        out += " --no-kv-offload";
    if (o.tensorSplit.size() > 1) {
        out += " --tensor-split ";
        for (std::size_t i = 0; i < o.tensorSplit.size(); ++i) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%g", o.tensorSplit[i]);
            out += (i ? "," : "") + std::string(buf);
        }
    }
    return out;
}

} // namespace headroom::llamacpp
