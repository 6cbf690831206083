#include "headroom/core/kvcache.h"

#include <algorithm>
#include <cctype>

namespace headroom {

namespace {

KvDtype dtype(const char* id, std::uint32_t elements, std::uint32_t bytes, std::uint32_t headScaleBytes = 0)
{
    KvDtype d;
    d.id = id;
    d.blockElements = elements;
    d.blockBytes = bytes;
    d.headScaleBytes = headScaleBytes;
    return d;
}

} // namespace

std::uint64_t KvDtype::rowBytes(std::uint64_t elements) const
{
    return checkedMul(ceilDiv(elements, blockElements), blockBytes, "KV row bytes");
}

std::uint64_t KvDtype::headsRowBytes(std::uint64_t heads, std::uint64_t headDim) const
{
    return checkedAdd(rowBytes(checkedMul(heads, headDim, "KV row")), checkedMul(heads, headScaleBytes, "KV scales"));
}

const std::vector<KvDtype>& builtinKvDtypes()
{
    // llama.cpp cache types share the GGML block table (shared/reference/ggml-types.md);
    // fp8 is vLLM's kv_cache_dtype fp8 / fp8_e4m3 / fp8_e5m2 (1 byte, per-tensor scale).
    // vLLM's newer caches (vllm/v1/kv_cache_interface.py and vllm/utils/torch_utils.py, commit
    // 001cabc1): fp8_per_token_head / int8_per_token_head store 1 byte a value plus one fp32 scale per
    // token, head and side (PR 38378); nvfp4 packs each head as head_size/2 bytes of E2M1 data plus
    // head_size/16 fp8 block scales (nvfp4_kv_cache_full_dim; PR 40177): 9 bytes per 16 values.
    static const std::vector<KvDtype> all = {
        dtype("fp32", 1, 4),     dtype("fp16", 1, 2),     dtype("bf16", 1, 2),
        dtype("fp8", 1, 1),      dtype("fp8_e4m3", 1, 1), dtype("fp8_e5m2", 1, 1),
        dtype("q8_0", 32, 34),   dtype("q4_0", 32, 18),   dtype("q4_1", 32, 20),
        dtype("q5_0", 32, 22),   dtype("q5_1", 32, 24),   dtype("iq4_nl", 32, 18),
        dtype("fp8_per_token_head", 1, 1, 4), dtype("int8_per_token_head", 1, 1, 4),
        dtype("nvfp4", 16, 9),
    };
    return all;
}

std::optional<KvDtype> findKvDtype(std::string_view idText)
{
    std::string id = asciiLower(idText);
    if (id == "f16" || id == "float16" || id == "half" || id == "auto")
        id = "fp16";
    else if (id == "f32" || id == "float32")
        id = "fp32";
    else if (id == "bfloat16")
        id = "bf16";
    for (const KvDtype& d : builtinKvDtypes())
        if (d.id == id)
            return d;
    return std::nullopt;
}

KvLayout kvLayout(const Architecture& arch, const KvDtype& dtype, std::uint32_t tp, std::uint32_t firstLayer,
                  std::uint32_t layerCount)
{
    return kvLayout(arch, dtype, dtype, tp, firstLayer, layerCount);
}

KvLayout kvLayout(const Architecture& arch, const KvDtype& dtype, const KvDtype& dtypeV, std::uint32_t tp,
                  std::uint32_t firstLayer, std::uint32_t layerCount, std::uint32_t stateElementBytes)
{
    KvLayout out;
    out.windowTokens = arch.sliding.windowTokens;
    tp = std::max<std::uint32_t>(tp, 1);
    const std::uint32_t end = layerCount == 0 ? arch.layers : std::min(arch.layers, firstLayer + layerCount);
    for (std::uint32_t i = firstLayer; i < end; ++i) {
        if (arch.hybrid.isRecurrent(i)) {
            const RecurrentState state = recurrentState(arch, i, tp);
            out.stateBytesPerSequence +=
                Bytes{checkedMul(checkedAdd(state.convElements, state.ssmElements, "state"), stateElementBytes, "state")};
            ++out.recurrentLayers;
        }
        if (!arch.hybrid.isAttention(i))
            continue; // a recurrent layer keeps no KV; an MLP-only block keeps nothing (a parallel
                      // attention + Mamba-2 layer keeps both)
        std::uint64_t bytes = 0;
        if (arch.mla.cachesLatent()) {
            // One latent row of kv_lora_rank + rope dim per token and layer, replicated on every
            // TP rank (vLLM MLAAttentionSpec; SGLang cell_size for MLA).
            bytes = dtype.rowBytes(std::uint64_t{arch.mla.kvLoraRank} + arch.mla.qkRopeHeadDim);
        } else {
            // vLLM: num_kv_heads per rank = max(1, total_kv_heads // tp): replicated when H_kv < tp.
            const std::uint64_t heads = std::max<std::uint64_t>(1, arch.kvHeadsOf(i) / tp);
            if (arch.kvHeadsOf(i) == 0)
                continue;
            bytes = checkedAdd(dtype.headsRowBytes(heads, arch.headDim), dtypeV.headsRowBytes(heads, arch.valueDim()));
        }
        if (arch.sliding.isSliding(i)) {
            out.slidingBytesPerToken += Bytes{bytes};
            ++out.slidingLayers;
        } else {
            out.fullBytesPerToken += Bytes{bytes};
            ++out.fullLayers;
        }
    }
    return out;
}

Bytes kvBytes(const KvLayout& layout, std::uint64_t users, std::uint64_t contextTokens, const Paging& paging,
              std::uint64_t ubatchTokens)
{
    const std::uint64_t block = std::max<std::uint64_t>(paging.blockTokens, 1);
    const std::uint64_t pad = std::max<std::uint64_t>(paging.cellPadding, 1);
    const std::uint64_t perSequence = roundUp(contextTokens, block);
    const std::uint64_t fullCells = roundUp(checkedMul(users, perSequence, "KV cells"), pad);
    Bytes total = layout.fullBytesPerToken * fullCells;
    if (layout.slidingLayers > 0) {
        const std::uint64_t window = checkedAdd(layout.windowTokens, ubatchTokens);
        const std::uint64_t slidingPerSequence = roundUp(std::min(contextTokens, window), block);
        const std::uint64_t slidingCells = roundUp(checkedMul(users, slidingPerSequence, "KV cells"), pad);
        total += layout.slidingBytesPerToken * slidingCells;
    }
    if (layout.recurrentLayers > 0)
        total += layout.stateBytesPerSequence * users;
    return total;
}

} // namespace headroom
