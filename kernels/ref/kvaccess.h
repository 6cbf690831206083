#pragma once
// Internal: address of one token's K or V row in a contiguous or paged cache (host side).

#include "headroom/kernels/types.h"

#include <algorithm>
#include <cstdint>

namespace headroom::kernels::detail {

/// Row [D] of token @p t of KV head @p kvHead of sequence @p b in @p base (args.k or args.v).
inline const std::uint16_t* kvRow(const DecodeAttentionArgs& args, const std::uint16_t* base, std::uint32_t b,
                                  std::uint32_t kvHead, std::uint32_t t) {
    const std::uint64_t D = args.headDim;
    if (args.layout == KvLayout::Contiguous)
        return base + ((std::uint64_t{b} * args.numKvHeads + kvHead) * args.maxTokens + t) * D;
    const std::int32_t block = args.blockTable[std::uint64_t{b} * args.maxBlocksPerSeq + t / args.blockTokens];
    return base + ((static_cast<std::uint64_t>(block) * args.numKvHeads + kvHead) * args.blockTokens + t % args.blockTokens) * D;
}

/// Calls fn(first, rows, count) for the tokens [t0, t0 + n) of KV head @p kvHead of sequence
/// @p b in runs that lie back to back in @p base: one run for the contiguous layout, one per
/// block of the paged layout (the block table is read once per block, not once per token);
/// @p rows points at token @p first's row [count][D].
template <class Fn>
inline void forKvRuns(const DecodeAttentionArgs& args, const std::uint16_t* base, std::uint32_t b, std::uint32_t kvHead,
                      std::uint32_t t0, std::uint32_t n, Fn&& fn) {
    if (args.layout == KvLayout::Contiguous) {
        fn(t0, kvRow(args, base, b, kvHead, t0), n);
        return;
    }
    for (std::uint32_t t = t0; t < t0 + n;) {
        const std::uint32_t count = std::min(t0 + n - t, args.blockTokens - t % args.blockTokens);
        fn(t, kvRow(args, base, b, kvHead, t), count);
        t += count;
    }
}

/// InvalidArgument when a sequence length is outside 1..maxSeqTokens() or a used block id is
/// outside the pool.
inline Status checkKvIndices(const DecodeAttentionArgs& args) {
    for (std::uint32_t b = 0; b < args.batch; ++b) {
        const std::int32_t tokens = args.seqLens[b];
        if (tokens < 1 || static_cast<std::uint32_t>(tokens) > args.maxSeqTokens())
            return Status::InvalidArgument;
        if (args.layout == KvLayout::Paged) {
            const std::uint32_t blocks = (static_cast<std::uint32_t>(tokens) + args.blockTokens - 1) / args.blockTokens;
            for (std::uint32_t i = 0; i < blocks; ++i) {
                const std::int32_t id = args.blockTable[std::uint64_t{b} * args.maxBlocksPerSeq + i];
                if (id < 0 || static_cast<std::uint32_t>(id) >= args.numBlocks)
                    return Status::InvalidArgument;
            }
        }
    }
    return Status::Ok;
}

} // namespace headroom::kernels::detail
