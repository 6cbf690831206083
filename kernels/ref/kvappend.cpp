// The decode step's cache write and the fp32 -> fp16 conversion on the host (both CPU backends).

#include "headroom/kernels/cpukernels.h"

#include <cstring>

namespace headroom::kernels {

namespace {

/// Element offset of token @p t of KV head @p h of sequence @p b; false when outside the cache.
bool rowOffset(const KvAppendArgs& a, std::uint32_t b, std::uint32_t h, std::uint32_t t, std::uint64_t& offset) {
    const std::uint64_t D = a.headDim;
    if (a.layout == KvLayout::Contiguous) {
        offset = ((std::uint64_t{b} * a.numKvHeads + h) * a.maxTokens + t) * D;
        return true;
    }
    const std::int32_t block = a.blockTable[std::uint64_t{b} * a.maxBlocksPerSeq + t / a.blockTokens];
    if (block < 0 || static_cast<std::uint32_t>(block) >= a.numBlocks)
        return false;
    offset = ((static_cast<std::uint64_t>(block) * a.numKvHeads + h) * a.blockTokens + t % a.blockTokens) * D;
    return true;
}

} // namespace

Status appendKvCpu(const KvAppendArgs& args) {
    if (Status s = validate(args); s != Status::Ok)
        return s;
    std::uint64_t offset = 0;
    for (std::uint32_t b = 0; b < args.batch; ++b) { // check everything before writing anything
        const std::int32_t tokens = args.seqLens[b];
        if (tokens < 1 || static_cast<std::uint32_t>(tokens) > args.maxSeqTokens() ||
            !rowOffset(args, b, 0, static_cast<std::uint32_t>(tokens - 1), offset))
            return Status::InvalidArgument;
    }
    const std::size_t rowBytes = std::size_t{args.headDim} * 2;
    for (std::uint32_t b = 0; b < args.batch; ++b) {
        const auto t = static_cast<std::uint32_t>(args.seqLens[b] - 1);
        for (std::uint32_t h = 0; h < args.numKvHeads; ++h) {
            (void)rowOffset(args, b, h, t, offset);
            const std::uint64_t src = (std::uint64_t{b} * args.numKvHeads + h) * args.headDim;
            std::memcpy(args.k + offset, args.kNew + src, rowBytes);
            std::memcpy(args.v + offset, args.vNew + src, rowBytes);
        }
    }
    return Status::Ok;
}

Status floatToHalfCpu(const float* in, std::uint16_t* out, std::size_t count) {
    if (!in || !out || count == 0)
        return Status::InvalidArgument;
    for (std::size_t i = 0; i < count; ++i)
        out[i] = formats::floatToHalf(in[i]);
    return Status::Ok;
}

} // namespace headroom::kernels
