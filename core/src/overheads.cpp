#include "headroom/core/overheads.h"

#include <algorithm>

namespace headroom {

Bytes totalBytes(const std::vector<OverheadItem>& items)
{
    Bytes sum;
    for (const OverheadItem& i : items)
        sum += i.bytes;
    return sum;
}

Bytes activationPeakBytes(const Architecture& arch, std::uint64_t ubatchTokens, std::uint64_t contextTokens,
                          bool flashAttention)
{
    const std::uint64_t heads = arch.attentionHeads;
    std::uint64_t qkv = 0;
    if (arch.mla.enabled()) {
        const std::uint64_t qHead = std::uint64_t{arch.mla.qkNopeHeadDim} + arch.mla.qkRopeHeadDim;
        qkv = heads * qHead * 2 + heads * arch.mla.vHeadDim;
    } else {
        qkv = heads * arch.headDim + 2ull * arch.kvHeads * arch.headDim;
    }
    std::uint64_t ffn = arch.intermediateSize;
    if (arch.moe.enabled())
        ffn = std::max(ffn, (std::uint64_t{arch.moe.expertsPerToken} + arch.moe.sharedExperts) * arch.moe.expertFfnSize);
    const std::uint64_t perToken = checkedAdd(checkedAdd(2 * arch.hiddenSize, qkv), 2 * ffn);
    Bytes peak{checkedMul(checkedMul(ubatchTokens, perToken, "activation"), 2, "activation")};
    if (!flashAttention) {
        const std::uint64_t keys = std::max(contextTokens, ubatchTokens);
        peak += Bytes{checkedMul(checkedMul(checkedMul(heads, ubatchTokens), keys), 4, "attention scores")};
    }
    return peak;
}

Bytes logitsBytes(const Architecture& arch, std::uint64_t outputs)
{
    return Bytes{checkedMul(checkedMul(arch.vocabSize, outputs, "logits"), 4, "logits")};
}

} // namespace headroom
