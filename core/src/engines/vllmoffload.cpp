#include "headroom/core/engines/vllmoffload.h"

#include "headroom/core/parameters.h"

#include "../sharding.h"

#include <algorithm>
#include <string>
#include <vector>

namespace headroom::vllm {

namespace {

// One vLLM parameter of a layer: its fused name and bytes on one rank.
struct Parameter {
    std::string key;
    std::uint64_t bytes = 0;
    int group = 0; // 0 attention, 1 MLP / MoE, 2 layer norms: the module order
};

// The fused parameter a Hugging Face tensor belongs to in vLLM: q/k/v into qkv_proj
// (QKVParallelLinear), gate/up into gate_up_proj (MergedColumnParallelLinear; for FusedMoE the
// w13 parameter of all experts), the rest as they are.
std::string fusedKey(std::string name)
{
    const auto swap = [&name](const char* from, const char* to) {
        if (const auto at = name.find(from); at != std::string::npos) {
            name.replace(at, std::char_traits<char>::length(from), to);
            return true;
        }
        return false;
    };
    swap(".q_proj.", ".qkv_proj.") || swap(".k_proj.", ".qkv_proj.") || swap(".v_proj.", ".qkv_proj.")
        || swap(".gate_proj.", ".gate_up_proj.") || swap(".up_proj.", ".gate_up_proj.");
    return name;
}

int moduleGroup(const std::string& name)
{
    if (name.find(".self_attn.") != std::string::npos || name.find(".linear_attn.") != std::string::npos)
        return 0;
    if (name.find(".mlp.") != std::string::npos || name.find(".block_sparse_moe.") != std::string::npos
        || name.find(".feed_forward.") != std::string::npos)
        return 1;
    return 2;
}

std::uint64_t nextPowerOfTwo(std::uint64_t n)
{
    std::uint64_t p = 1;
    while (p < n && p < (std::uint64_t{1} << 63))
        p <<= 1;
    return p;
}

// The parameters of each layer in vLLM's module order, bytes per rank.
std::vector<std::vector<Parameter>> layerParameters(const Architecture& arch, const WeightFormat& format,
                                                    std::uint32_t tp, std::uint32_t stageLayers)
{
    std::vector<std::vector<Parameter>> layers(stageLayers);
    const std::shared_ptr<const PricedTensorsEntry> shared = sharedPricedTensors(arch, format);
    const PricedTensors& list = shared->list;
    for (std::size_t i = 0; i < list.tensors.size(); ++i) {
        const TensorSpec& t = list.tensors[i];
        if (t.layer < 0 || static_cast<std::uint32_t>(t.layer) >= stageLayers)
            continue;
        std::uint64_t bytes = list.priced[i].bytes.value;
        if (tp > 1 && shardedByTensorParallel(t.role))
            bytes = ceilDiv(bytes, tp);
        std::vector<Parameter>& layer = layers[static_cast<std::size_t>(t.layer)];
        const std::string key = fusedKey(t.name);
        const auto same = std::find_if(layer.begin(), layer.end(), [&](const Parameter& p) { return p.key == key; });
        if (same != layer.end())
            same->bytes += bytes;
        else
            layer.push_back({key, bytes, moduleGroup(t.name)});
    }
    for (std::vector<Parameter>& layer : layers)
        std::stable_sort(layer.begin(), layer.end(), [](const Parameter& a, const Parameter& b) { return a.group < b.group; });
    return layers;
}

} // namespace

CpuOffload cpuOffload(const Architecture& arch, const WeightFormat& format, std::uint32_t tensorParallel,
                      std::uint32_t stageLayers, Bytes capBytes)
{
    CpuOffload out;
    const std::uint32_t tp = std::max<std::uint32_t>(tensorParallel, 1);
    const auto layers = layerParameters(arch, format, tp, std::min(stageLayers, arch.layers));
    for (const auto& layer : layers)
        for (const Parameter& p : layer)
            out.layerBytes += Bytes{p.bytes};
    if (capBytes.value == 0)
        return out;
    for (const auto& layer : layers) {
        // maybe_offload_to_cpu returns the module untouched once the cap is reached.
        if (out.offloadedBytes >= capBytes)
            break;
        std::size_t moved = 0;
        for (const Parameter& p : layer) {
            if (out.offloadedBytes >= capBytes)
                break;
            out.offloadedBytes += Bytes{p.bytes};
            out.pinnedHostBytes += Bytes{nextPowerOfTwo(p.bytes)};
            ++out.parameters;
            ++moved;
        }
        if (moved == layer.size())
            ++out.wholeLayers;
    }
    return out;
}

} // namespace headroom::vllm
