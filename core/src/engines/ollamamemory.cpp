#include "headroom/core/engines/ollamamemory.h"

#include "headroom/core/enginepolicy.h"
#include "headroom/core/parameters.h"

#include <algorithm>
#include <cstddef>

namespace headroom::ollama {

namespace {

// kvCacheBytesPerElement (v0.5.7 llm/ggml.go): q8_0 1, q4_0 0.5, anything else 2.
double bytesPerElement(const std::string& type)
{
    if (type == "q8_0")
        return 1;
    if (type == "q4_0")
        return 0.5;
    return 2;
}

/// Whether Ollama @p version has the rule that first shipped in @p since.
bool since(const std::string& version, const char* first)
{
    return compareVersions(version, first) >= 0;
}

} // namespace

Bytes visionGraphBytes(const VisionConfig& v)
{
    if (v.kind != VisionKind::Siglip && v.kind != VisionKind::Pixtral)
        return {};
    const std::uint64_t image = v.imageSize;
    const std::uint64_t patches = v.patchesPerImage();
    const std::uint64_t elements = checkedAdd(checkedAdd(checkedMul(image * image, v.channels, "vision graph"),
                                                         checkedMul(v.hiddenSize, v.patchSize, "vision graph"), "vision graph"),
                                              checkedMul(checkedMul(patches, patches, "vision graph"), v.heads, "vision graph"),
                                              "vision graph");
    return Bytes{checkedMul(elements, 4, "vision graph")};
}

namespace {

bool isProjectorTower(const TensorSpec& t)
{
    return (t.role == TensorRole::VisionMatrix || t.role == TensorRole::VisionVector)
        && t.name.rfind("multi_modal_projector.", 0) != 0;
}

} // namespace

Bytes projectorWeightsBytes(const Architecture& arch, const WeightFormat& format)
{
    Bytes out;
    for (const TensorSpec& t : listTensors(arch))
        if (isProjectorTower(t))
            out += priceTensor(t, format, arch).bytes;
    return out;
}

std::string effectiveKvCacheType(const Settings& s)
{
    const std::string t = asciiLower(s.kvCacheType);
    if (!s.flashAttention || (t != "q8_0" && t != "q4_0"))
        return "f16";
    return t;
}

LegacyEstimate legacyEstimate(const Architecture& arch, const Settings& s)
{
    LegacyEstimate out;
    out.kvCacheType = effectiveKvCacheType(s);
    const std::uint64_t context = checkedMul(s.numCtx, std::max<std::uint32_t>(s.numParallel, 1), "num_ctx");
    out.contextTokens = context;
    const std::uint64_t batch = std::min(context, s.numBatch);
    const std::uint64_t embedding = arch.hiddenSize;
    const std::uint64_t heads = arch.attentionHeads;
    const std::uint64_t headsKV = arch.kvHeads;
    const std::uint64_t vocab = arch.vocabSize;
    const std::uint64_t headK = arch.headDim;
    const std::uint64_t headV = arch.valueDim();
    const std::uint64_t embeddingHeads = heads > 0 ? embedding / heads : 0;
    // kv = uint64(float64(context * blocks * (headK + headV) * headsKV) * bytesPerElement)
    const std::uint64_t elements = checkedMul(checkedMul(checkedMul(context, arch.layers, "kv"), headK + headV, "kv"), headsKV, "kv");
    out.kvBytes = Bytes{static_cast<std::uint64_t>(static_cast<double>(elements) * bytesPerElement(out.kvCacheType))};
    if (since(s.version, "0.6.3")) {
        // GraphSize's kv[i] (fs/ggml/ggml.go, v0.6.3): context x (headK + headV) x headsKV per layer;
        // gemma3's sliding layers (all but every 6th) hold parallel x window + batch cells.
        const double perCell = static_cast<double>((headK + headV) * headsKV) * bytesPerElement(out.kvCacheType);
        const bool gemma3Sliding = arch.family == "gemma3" && arch.sliding.enabled();
        const std::uint64_t window = checkedAdd(checkedMul(std::max<std::uint32_t>(s.numParallel, 1), arch.sliding.windowTokens, "kv"),
                                                batch, "kv");
        std::uint64_t total = 0;
        out.kvPerLayerBytes.reserve(arch.layers);
        for (std::uint32_t i = 0; i < arch.layers; ++i) {
            const std::uint64_t cells = gemma3Sliding && (i + 1) % 6 != 0 ? window : context;
            out.kvPerLayerBytes.push_back(Bytes{static_cast<std::uint64_t>(static_cast<double>(cells) * perCell)});
            total += out.kvPerLayerBytes.back().value;
        }
        out.kvBytes = Bytes{total};
    } else {
        // kv / BlockCount for every layer (llm/memory.go before v0.6.3).
        out.kvPerLayerBytes.assign(arch.layers, Bytes{out.kvBytes.value / std::max<std::uint32_t>(arch.layers, 1)});
    }
    // VisionGraphSize counts gemma3's and mistral3's towers from v0.6.1 (PR 9703; v0.6.0: mllama only).
    if (since(s.version, "0.6.1"))
        out.projectorGraphBytes = visionGraphBytes(arch.vision);
    const std::uint64_t kv = out.kvBytes.value;

    std::uint64_t full = 0;
    std::uint64_t partial = 0;
    const std::string& f = arch.family;
    if (f == "llama" || f == "mistral") {
        full = std::max(4 * batch * (1 + 4 * embedding + context * (1 + heads)), 4 * batch * (embedding + vocab));
        partial = 4 * batch * embedding
            + std::max(4 * batch * (1 + embedding + std::max(context, embedding)) + embedding * embedding * 9 / 16
                           + 4 * context * (batch * heads + embeddingHeads * headsKV),
                       4 * batch * (embedding + vocab) + embedding * vocab * 105 / 128);
    } else if (f == "gemma" || f == "gemma2" || f == "gemma3") {
        full = std::max(4 * batch * (embedding + vocab),
                        4 * batch * (2 + context + context * heads + 2 * embedding + 2 * headK * heads));
        partial = std::max(4 * embedding * batch + embedding * vocab * 105 / 128 + 4 * vocab * batch,
                           4 * batch * (2 * embedding + 1 + 2 * headK * heads + context + context * heads)
                               + 4 * headK * context * 8 + embedding * headK * heads * 9 / 16);
    } else if (f == "command-r" || f == "cohere") {
        full = std::max(4 * batch * (embedding + vocab), 4 * batch * (2 + 4 * embedding + context * (1 + heads)));
        partial = std::max(4 * batch * (embedding + vocab) + embedding * vocab * 105 / 128,
                           4 * batch * (1 + 2 * embedding + context * (1 + heads)) + 4 * embedding * context
                               + embedding * embedding * 9 / 16);
    } else if (f == "qwen2") {
        full = std::max(4 * batch * (embedding + vocab), 4 * batch * (1 + 2 * embedding + context + context * heads));
        partial = std::max(4 * batch * (embedding + vocab) + embedding * vocab * 105 / 128,
                           4 * (batch * (1 + 2 * embedding + context * (1 + heads)) + embedding * (1 + context)));
    } else if (f == "phi2") {
        full = std::max(4 * batch * (embedding + vocab), 4 * batch * (1 + 4 * embedding + context + context * heads));
        partial = std::max(4 * batch * (2 * embedding + vocab) + embedding * vocab * 105 / 128,
                           4 * batch * (2 + 3 * embedding + context + context * heads));
    } else if (f == "stablelm") {
        full = 4 * batch * (context * (1 + heads) + 3 * embedding + 2);
        partial = std::max(4 * batch * (vocab + 2 * embedding), full);
    }
    // llm/memory.go: a zero partial graph is GQA x kv / 6, a zero full graph the partial one.
    if (partial == 0 && headsKV > 0)
        partial = heads / headsKV * kv / 6;
    if (full == 0)
        full = partial;
    out.graphFullBytes = Bytes{full};
    out.graphPartialBytes = Bytes{partial};
    return out;
}

GpuLayerEstimate estimateGpuLayers(const Architecture& arch, const WeightFormat& format, const Settings& settings,
                                   Bytes freeBytes, Bytes minimumBytes, std::int64_t numGpu)
{
    return estimateGpuLayers(arch, format, settings, std::vector<Bytes>{freeBytes}, minimumBytes, numGpu);
}

GpuLayerEstimate estimateGpuLayers(const Architecture& arch, const WeightFormat& format, const Settings& settings,
                                   const std::vector<Bytes>& freeBytes, Bytes minimumBytes, std::int64_t numGpu)
{
    GpuLayerEstimate out;
    out.estimate = legacyEstimate(arch, settings);
    out.modelLayers = arch.layers + 1;
    const std::string& version = settings.version;
    const std::size_t gpus = std::max<std::size_t>(freeBytes.size(), 1);
    // "multigpu should always use the partial graph size" (llm/memory.go, v0.2 to v0.12).
    if (gpus > 1)
        out.estimate.graphFullBytes = out.estimate.graphPartialBytes;
    std::vector<std::uint64_t> blockBytes(arch.layers, 0);
    std::uint64_t outputNorm = 0;
    std::uint64_t output = 0;
    std::uint64_t embedding = 0;
    std::uint64_t projector = 0;
    for (const TensorSpec& t : listTensors(arch)) {
        const std::uint64_t b = priceTensor(t, format, arch).bytes.value;
        if (isProjectorTower(t))
            projector += b;
        else if (t.layer >= 0 && static_cast<std::uint32_t>(t.layer) < arch.layers)
            blockBytes[static_cast<std::size_t>(t.layer)] += b;
        else if (t.role == TensorRole::Output)
            output += b;
        else if (t.role == TensorRole::TokenEmbedding)
            embedding += b;
        else if (t.role == TensorRole::Norm || t.role == TensorRole::Bias)
            outputNorm += b;
    }
    // VisionGraphSize counts only mllama's tower in v0.6.0; gemma3's from v0.6.1 (PR 9703,
    // fs/ggml/ggml.go "count gemma3 vision tensors").
    if (!since(version, "0.6.1"))
        projector = 0;
    const std::vector<Bytes>& kv = out.estimate.kvPerLayerBytes;
    const auto layerCost = [&](std::uint32_t i) { return blockBytes[i] + (i < kv.size() ? kv[i].value : 0); };
    // llm/memory.go: output_norm + (output, else token_embd when the model ties them).
    const std::uint64_t outputLayer = outputNorm + (output > 0 ? output : embedding);
    out.weightsNonRepeatingBytes = Bytes{outputLayer};
    const std::uint64_t projectorBytes = projector + out.estimate.projectorGraphBytes.value;
    // v0.6.0 to v0.7.0: the projector (weights + graph) is GPU 0's overhead; from v0.7.1 the Ollama
    // engine's projector goes with the output layer (ollamaEngineProjectorWeights/Graph).
    const bool projectorWithOutput = since(version, "0.7.1");
    const std::uint64_t gpuZeroOverhead = projectorWithOutput ? 0 : projectorBytes;
    const std::uint64_t graphFull = out.estimate.graphFullBytes.value;
    const std::uint64_t graphPartial = out.estimate.graphPartialBytes.value;
    const std::uint64_t graph = std::max(graphFull, graphPartial);
    const std::uint64_t overhead = settings.gpuOverhead.value;
    std::vector<std::uint64_t> free(gpus, 0);
    for (std::size_t g = 0; g < freeBytes.size(); ++g)
        free[g] = freeBytes[g].value;
    std::uint64_t layerSize = arch.layers > 0 ? layerCost(0) : 0;
    out.layerBufferBytes = Bytes{layerSize};
    std::uint64_t blocks = 0;
    for (std::uint64_t b : blockBytes)
        blocks += b;
    out.gpuWeightsBytes = Bytes{blocks + outputLayer + projector};

    // gpusWithSpace: a GPU takes layers only when it holds the overhead, the larger graph,
    // MinimumMemory, the buffer layer and one more layer (+ the projector on the first such GPU);
    // each starts its allocation at MinimumMemory + the buffer layer.
    std::vector<std::uint64_t> allocation(gpus, 0);
    std::vector<std::uint32_t> counts(gpus, 0);
    std::vector<std::size_t> withSpace;
    for (std::size_t g = 0; g < gpus; ++g) {
        const std::uint64_t gzo = withSpace.empty() ? gpuZeroOverhead : 0;
        if (free[g] < overhead + gzo + graph + minimumBytes.value + 2 * layerSize)
            continue;
        withSpace.push_back(g);
        allocation[g] += minimumBytes.value + layerSize;
    }
    if (!withSpace.empty())
        allocation[withSpace.front()] += gpuZeroOverhead;
    // Try the layer on withSpace[i % j] for j = |withSpace| down to 1, removing each GPU it misses
    // (the round robin over the GPUs with space: layer i's index, not the count placed).
    const auto place = [&](std::uint64_t index, std::uint64_t size, bool dropMisses) {
        for (std::size_t j = withSpace.size(); j > 0; --j) {
            const std::size_t at = static_cast<std::size_t>(index % j);
            const std::size_t g = withSpace[at];
            if (free[g] > overhead + allocation[g] + graph + size) {
                allocation[g] += size;
                ++counts[g];
                return true;
            }
            if (dropMisses)
                withSpace.erase(withSpace.begin() + static_cast<std::ptrdiff_t>(at));
        }
        return false;
    };
    std::uint64_t overflow = 0;
    std::uint32_t count = 0;
    std::uint64_t repeating = 0;
    const bool fromLast = since(version, "0.7.0");
    for (std::uint32_t k = 0; k < arch.layers; ++k) {
        const std::uint32_t i = fromLast ? arch.layers - 1 - k : k;
        layerSize = layerCost(i);
        repeating += since(version, "0.6.1") ? blockBytes[i] : layerSize;
        if (numGpu >= 0 && count >= numGpu) {
            if (fromLast)
                overflow += layerSize;
            continue;
        }
        if (place(i, layerSize, true))
            ++count;
        if (fromLast && withSpace.empty())
            overflow += layerSize;
    }
    bool fullyLoaded = count >= arch.layers;
    if (!fullyLoaded && !fromLast)
        overflow += static_cast<std::uint64_t>(arch.layers - count) * layerSize; // the last layer's size, as Ollama sums it
    const std::uint64_t lastLayer = outputLayer + (projectorWithOutput ? projectorBytes : 0);
    // Before v0.7.1 the output layer is only counted as missing when it was tried (num_gpu not
    // reached); from v0.7.1 whenever it is not on the GPU. Its GPU is withSpace[count % j], none
    // dropped.
    const bool tried = numGpu < 0 || count < numGpu;
    if (lastLayer > 0 && tried && place(count, lastLayer, false))
        ++count;
    if (lastLayer > 0 && (tried || projectorWithOutput) && count < arch.layers + 1) {
        fullyLoaded = false;
        overflow += lastLayer;
    }
    std::uint64_t total = 0;
    for (std::size_t g = 0; g < gpus; ++g) {
        if (counts[g] > 0)
            allocation[g] += fullyLoaded ? graphFull : graphPartial;
        total += allocation[g];
        out.gpuLayers.push_back(counts[g]);
        out.gpuAllocationBytes.push_back(Bytes{allocation[g]});
    }
    out.layers = count;
    out.allocationBytes = Bytes{total};
    out.requiredPartialBytes = Bytes{total};
    out.requiredFullBytes = Bytes{total + overflow};
    out.weightsTotalBytes = Bytes{repeating + (since(version, "0.6.3") ? outputLayer : 0)};
    out.weightsRepeatingBytes = Bytes{since(version, "0.6.1") ? repeating : (repeating > outputLayer ? repeating - outputLayer : 0)};
    return out;
}

namespace {

/// PredictServerFit (llm/memory.go): every layer and the output layer placed (num_gpu < 0), or
/// at least num_gpu layers.
bool fitsFully(const GpuLayerEstimate& e, std::int64_t numGpu)
{
    if (e.layers == 0)
        return false;
    return numGpu < 0 ? e.layers >= e.modelLayers : static_cast<std::int64_t>(e.layers) >= numGpu;
}

} // namespace

std::vector<std::size_t> scheduleGpus(const Architecture& arch, const WeightFormat& format, const Settings& settings,
                                      const std::vector<Bytes>& freeBytes, Bytes minimumBytes, std::int64_t numGpu)
{
    std::vector<std::size_t> given(freeBytes.size());
    for (std::size_t g = 0; g < given.size(); ++g)
        given[g] = g;
    if (given.size() < 2)
        return given;
    // sort.Sort(sort.Reverse(ByFreeMemory)): Go's sort of so few elements is an insertion sort,
    // stable, so equal cards keep their order.
    std::vector<std::size_t> sorted = given;
    std::stable_sort(sorted.begin(), sorted.end(), [&](std::size_t a, std::size_t b) { return freeBytes[a] > freeBytes[b]; });
    const auto fits = [&](const std::vector<std::size_t>& subset) {
        std::vector<Bytes> free;
        for (std::size_t g : subset)
            free.push_back(freeBytes[g]);
        return fitsFully(estimateGpuLayers(arch, format, settings, free, minimumBytes, numGpu), numGpu);
    };
    if (since(settings.version, "0.12.0")) {
        for (std::size_t n = 1; n <= sorted.size(); ++n) {
            const std::vector<std::size_t> subset(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n));
            if (fits(subset))
                return subset;
        }
        return given;
    }
    for (std::size_t g : sorted)
        if (fits({g}))
            return {g};
    if (fits(sorted))
        return sorted;
    return given;
}

} // namespace headroom::ollama
