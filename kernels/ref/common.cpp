// Status names and argument validation shared by every backend.

#include "headroom/kernels/types.h"

#include <cmath>

namespace headroom::kernels {

const char* statusName(Status status) {
    switch (status) {
    case Status::Ok: return "ok";
    case Status::NotSupported: return "not supported";
    case Status::InvalidArgument: return "invalid argument";
    case Status::NoDevice: return "no device";
    case Status::CudaError: return "CUDA error";
    }
    return "unknown";
}

float DecodeAttentionArgs::effectiveScale() const {
    return scale != 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(headDim));
}

Status validate(const GemvArgs& args) {
    const WeightMatrix& w = args.weights;
    if (!formats::layoutValid(w.layout) || w.rows == 0 || w.cols == 0 || !w.data)
        return Status::InvalidArgument;
    if (formats::hasSeparateScales(w.layout) && !w.scales)
        return Status::InvalidArgument;
    if (formats::isGgmlBlockType(w.layout.type) && w.cols % formats::ggmlBlockWeights(w.layout.type) != 0)
        return Status::InvalidArgument; // ggml rows are whole blocks
    if (w.packing != RowPacking::AsStored && w.layout.type != formats::QuantType::Q8_0 &&
        w.layout.type != formats::QuantType::Q4_0 && w.layout.type != formats::QuantType::Q4_K &&
        w.layout.type != formats::QuantType::Q6_K)
        return Status::InvalidArgument;
    if (!args.x || !args.y || args.batch == 0 || args.batch > kMaxGemvBatch)
        return Status::InvalidArgument;
    return Status::Ok;
}

Status validate(const KvAppendArgs& args) {
    if (args.batch == 0 || args.numKvHeads == 0 || args.headDim == 0)
        return Status::InvalidArgument;
    if (!args.kNew || !args.vNew || !args.seqLens || !args.k || !args.v)
        return Status::InvalidArgument;
    if (args.layout == KvLayout::Contiguous && args.maxTokens == 0)
        return Status::InvalidArgument;
    if (args.layout == KvLayout::Paged &&
        (!args.blockTable || args.maxBlocksPerSeq == 0 || args.blockTokens == 0 || args.numBlocks == 0))
        return Status::InvalidArgument;
    return Status::Ok;
}

Status validate(const DecodeAttentionArgs& args) {
    if (args.batch == 0 || args.numHeads == 0 || args.numKvHeads == 0 || args.headDim == 0)
        return Status::InvalidArgument;
    if (args.numHeads % args.numKvHeads != 0)
        return Status::InvalidArgument;
    if (!args.q || !args.seqLens || !args.k || !args.v || !args.out)
        return Status::InvalidArgument;
    if (args.layout == KvLayout::Contiguous && args.maxTokens == 0)
        return Status::InvalidArgument;
    if (args.layout == KvLayout::Paged &&
        (!args.blockTable || args.maxBlocksPerSeq == 0 || args.blockTokens == 0 || args.numBlocks == 0))
        return Status::InvalidArgument;
    return Status::Ok;
}

} // namespace headroom::kernels
