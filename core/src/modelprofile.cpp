#include "headroom/core/modelprofile.h"

namespace headroom {

namespace {

bool inBlock(const std::string& name)
{
    return name.rfind("blk.", 0) == 0;
}

bool isOutputSide(const std::string& name)
{
    return name.rfind("output.", 0) == 0 || name.rfind("output_norm.", 0) == 0;
}

} // namespace

GgufTensorOrder classifyGgufTensorOrder(const std::vector<std::string>& names)
{
    std::size_t firstBlock = names.size();
    std::size_t lastBlock = 0;
    for (std::size_t i = 0; i < names.size(); ++i)
        if (inBlock(names[i])) {
            firstBlock = std::min(firstBlock, i);
            lastBlock = i;
        }
    if (firstBlock == names.size())
        return GgufTensorOrder::Unknown;
    bool allBefore = true;
    bool allAfter = true;
    bool embeddingBefore = false;
    bool outputAfter = true;
    bool anyOutside = false;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (inBlock(names[i]))
            continue;
        anyOutside = true;
        allBefore = allBefore && i < firstBlock;
        allAfter = allAfter && i > lastBlock;
        if (names[i].rfind("token_embd.", 0) == 0)
            embeddingBefore = i < firstBlock;
        if (isOutputSide(names[i]))
            outputAfter = outputAfter && i > lastBlock;
    }
    if (!anyOutside)
        return GgufTensorOrder::Unknown;
    if (allBefore)
        return GgufTensorOrder::LayerSorted;
    if (allAfter)
        return GgufTensorOrder::OllamaSorted;
    if (embeddingBefore && outputAfter)
        return GgufTensorOrder::Converted;
    return GgufTensorOrder::Unknown;
}

const char* ggufTensorOrderId(GgufTensorOrder order)
{
    switch (order) {
    case GgufTensorOrder::LayerSorted: return "sorted";
    case GgufTensorOrder::Converted: return "convert";
    case GgufTensorOrder::OllamaSorted: return "ollama";
    case GgufTensorOrder::Unknown: break;
    }
    return "unknown";
}

std::optional<GgufTensorOrder> ggufTensorOrderFromId(const std::string& id)
{
    for (GgufTensorOrder o : {GgufTensorOrder::Unknown, GgufTensorOrder::LayerSorted, GgufTensorOrder::Converted,
                              GgufTensorOrder::OllamaSorted})
        if (id == ggufTensorOrderId(o))
            return o;
    return std::nullopt;
}

} // namespace headroom
