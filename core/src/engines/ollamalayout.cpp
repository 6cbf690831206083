// Ollama's own layer layout, v0.12.11 to v0.29 (ollamalayout.h; llm/server.go at v0.12.11:
// llamaServer.Load, createLayout, buildLayout, assignLayers, findBestFit, greedyFit).

#include "headroom/core/engines/ollamalayout.h"

#include "headroom/core/parameters.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace headroom::ollama {

namespace {

/// One entry of ml.GPULayersList: a GPU (index into the sorted free list) and its layers.
struct Entry {
    std::size_t gpu = 0;
    std::uint32_t layers = 0;
};
using Layout = std::vector<Entry>;

std::uint32_t sum(const Layout& l)
{
    std::uint32_t n = 0;
    for (const Entry& e : l)
        n += e.layers;
    return n;
}

// float32 as Go computes uint64(float32(free) * capacity).
std::uint64_t scaled(std::uint64_t free, float capacity)
{
    return static_cast<std::uint64_t>(static_cast<float>(free) * capacity);
}

// greedyFit: from the last layer down, on the last GPU of `free` first, moving to the one before
// when a layer does not fit; stops at `requested` layers when >= 0.
Layout greedyFit(const std::vector<std::uint64_t>& layers, const std::vector<std::uint64_t>& free, float capacity,
                 std::int64_t requested)
{
    std::size_t device = free.size() - 1;
    Layout out{{device, 0}};
    std::uint64_t space = scaled(free[device], capacity);
    const std::int64_t n = static_cast<std::int64_t>(layers.size());
    for (std::int64_t i = n - 1; i >= 0; --i) {
        if (requested >= 0 && n - 1 - i >= requested)
            break;
        for (;;) {
            if (layers[static_cast<std::size_t>(i)] <= space) {
                ++out.front().layers;
                space -= layers[static_cast<std::size_t>(i)];
                break;
            }
            if (device == 0)
                return out;
            --device;
            out.insert(out.begin(), Entry{device, 0});
            space = scaled(free[device], capacity);
        }
    }
    return out;
}

// findBestFit over one performance group (all GPUs here): the smallest capacity factor that keeps
// the most layers placed at factor 1 (1000 when num_gpu is forced).
Layout findBestFit(const std::vector<std::uint64_t>& layers, const std::vector<std::uint64_t>& free, std::int64_t requested,
                   bool forceRequest)
{
    float high = requested >= 0 && forceRequest ? 1000.0f : 1.0f;
    float low = 0.0f;
    Layout best = greedyFit(layers, free, high, requested);
    const std::uint32_t most = sum(best);
    while (high - low > 1e-6f) {
        const float mid = (low + high) / 2;
        Layout a = greedyFit(layers, free, mid, requested);
        if (sum(a) == most) {
            high = mid;
            best = std::move(a);
        } else {
            low = mid;
        }
    }
    return best;
}

// assignLayers (requireFull false: the model loads alone): the fewest GPUs from lastUsed on that
// take every layer (or num_gpu), the last forced to num_gpu; then once without the output layer.
Layout assignLayers(std::vector<std::uint64_t> layers, const std::vector<std::uint64_t>& free, std::int64_t requested,
                    std::size_t lastUsed)
{
    Layout out;
    for (int pass = 0; pass < 2; ++pass) {
        requested = std::min<std::int64_t>(static_cast<std::int64_t>(layers.size()), requested);
        for (std::size_t i = lastUsed; i < free.size(); ++i) {
            const bool force = i == free.size() - 1;
            out = findBestFit(layers, std::vector<std::uint64_t>(free.begin(), free.begin() + static_cast<std::ptrdiff_t>(i + 1)),
                              requested, force);
            if (sum(out) == layers.size() || static_cast<std::int64_t>(sum(out)) == requested)
                break;
        }
        if (sum(out) == layers.size() || layers.empty())
            return out;
        layers.pop_back();
    }
    return out;
}

} // namespace

RunnerLayers runnerLayers(const Architecture& arch, const WeightFormat& format, const Settings& settings)
{
    const LegacyEstimate est = legacyEstimate(arch, settings);
    std::vector<std::uint64_t> blocks(arch.layers, 0);
    std::uint64_t outputNorm = 0;
    std::uint64_t output = 0;
    std::uint64_t embedding = 0;
    for (const TensorSpec& t : listTensors(arch)) {
        const bool tower = (t.role == TensorRole::VisionMatrix || t.role == TensorRole::VisionVector);
        if (tower)
            continue; // the projector: loaded on the first GPU, apart from the layout
        const std::uint64_t b = priceTensor(t, format, arch).bytes.value;
        if (t.layer >= 0 && static_cast<std::uint32_t>(t.layer) < arch.layers)
            blocks[static_cast<std::size_t>(t.layer)] += b;
        else if (t.role == TensorRole::Output)
            output += b;
        else if (t.role == TensorRole::TokenEmbedding)
            embedding += b;
        else if (t.role == TensorRole::Norm || t.role == TensorRole::Bias)
            outputNorm += b;
    }
    RunnerLayers out;
    for (std::uint32_t i = 0; i < arch.layers; ++i)
        out.layerBytes.push_back(Bytes{blocks[i] + (i < est.kvPerLayerBytes.size() ? est.kvPerLayerBytes[i].value : 0)});
    // "We historically haven't included InputWeights in the model size": output_norm + output,
    // else token_embd.
    out.layerBytes.push_back(Bytes{outputNorm + (output > 0 ? output : embedding)});
    if (arch.layers > 0)
        out.bufferBytes = out.layerBytes.front();
    out.graphBytes = Bytes{std::max(est.graphPartialBytes.value, est.graphFullBytes.value)};
    return out;
}

std::vector<std::uint32_t> createLayout(const RunnerLayers& layers, const std::vector<LayoutGpu>& gpus, std::int64_t numGpu)
{
    const std::size_t n = gpus.size();
    std::vector<std::uint32_t> counts(n, 0);
    if (n == 0 || layers.layerBytes.empty())
        return counts;
    // The GPUs by free memory (after the buffer layer), most first; equal ones in device order.
    std::vector<std::uint64_t> freeAfterBuffer(n);
    for (std::size_t g = 0; g < n; ++g)
        freeAfterBuffer[g] = saturatingSub(gpus[g].freeBytes, layers.bufferBytes).value;
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return freeAfterBuffer[a] > freeAfterBuffer[b]; });
    std::vector<std::uint64_t> sizes;
    for (Bytes b : layers.layerBytes)
        sizes.push_back(b.value);
    std::vector<std::uint64_t> graph(n, 0); // per sorted position
    Layout previous;
    Layout layout;
    // Load: lay out, reserve the graph on the GPUs the layout uses, again while it uses more.
    for (std::size_t round = 0; round <= n + 1; ++round) {
        std::vector<std::uint64_t> free(n, 0);
        std::size_t lastUsed = 0;
        for (std::size_t k = 0; k < n; ++k) {
            if (graph[k] != 0)
                lastUsed = k;
            const std::uint64_t reserved = gpus[order[k]].reservedBytes.value + graph[k];
            free[k] = freeAfterBuffer[order[k]] > reserved ? freeAfterBuffer[order[k]] - reserved : 0;
        }
        layout = assignLayers(sizes, free, numGpu, lastUsed);
        if (layout.size() <= previous.size())
            break;
        for (const Entry& e : layout)
            graph[e.gpu] = layers.graphBytes.value;
        previous = layout;
    }
    for (const Entry& e : layout)
        counts[order[e.gpu]] += e.layers;
    return counts;
}

} // namespace headroom::ollama
