#include "headroom/core/capacity.h"

#include <algorithm>

namespace headroom {

namespace {

// True when the pool holds users x context.
bool fits(const KvPool& pool, std::uint64_t users, std::uint64_t context)
{
    try {
        return kvBytes(pool.layout, users, context, pool.paging, pool.ubatchTokens) <= pool.budgetBytes;
    } catch (const OverflowError&) {
        return false;
    }
}

// Largest x in [0, hi] with pred(x) true, pred monotone decreasing and pred(0) assumed true.
template <typename Pred>
std::uint64_t largestTrue(std::uint64_t hi, Pred pred)
{
    std::uint64_t lo = 0;
    while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo + 1) / 2;
        if (pred(mid))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

// No pool holds more than 2^40 tokens (1,099,511,627,776); a bound for the searches.
constexpr std::uint64_t kMaxSearchTokens = 1ull << 40;

// Largest context each of @p users sequences may have, searched up to @p hi tokens.
std::uint64_t largestContext(const KvPool& pool, std::uint64_t users, std::uint64_t hi)
{
    const std::uint64_t block = std::max<std::uint64_t>(pool.paging.blockTokens, 1);
    const std::uint64_t c = largestTrue(hi, [&](std::uint64_t ctx) { return fits(pool, users, ctx); });
    // Report whole blocks: a partial block is allocated whole anyway.
    return c / block * block;
}

} // namespace

std::uint64_t maxContextTokens(const KvPool& pool, std::uint64_t users)
{
    if (users == 0)
        return 0;
    const std::uint64_t block = std::max<std::uint64_t>(pool.paging.blockTokens, 1);
    std::uint64_t hi = kMaxSearchTokens;
    // Only full-attention layers grow with the context: a model whose layers all slide (Mistral
    // 7B v0.1) holds at most its window per sequence, so memory bounds its users, not its context.
    const bool onlySliding = pool.layout.fullBytesPerToken.value == 0 && pool.layout.slidingLayers > 0;
    const Bytes perToken = pool.layout.fullBytesPerToken.value > 0 ? pool.layout.fullBytesPerToken
                                                                     : pool.layout.bytesPerToken();
    if (perToken.value > 0 && !onlySliding)
        hi = std::min(hi, pool.budgetBytes.value / perToken.value / users + block);
    return largestContext(pool, users, hi);
}

std::uint64_t maxUsers(const KvPool& pool, std::uint64_t contextTokens)
{
    if (contextTokens == 0)
        return 0;
    std::uint64_t hi = kMaxSearchTokens;
    const Bytes perToken = pool.layout.bytesPerToken();
    if (perToken.value > 0 && pool.layout.fullBytesPerToken.value > 0)
        hi = std::min(hi, pool.budgetBytes.value / pool.layout.fullBytesPerToken.value / contextTokens + 1);
    return largestTrue(hi, [&](std::uint64_t users) { return fits(pool, users, contextTokens); });
}

std::uint64_t maxResidentTokens(const KvPool& pool)
{
    // The cells the pool holds: for a model whose layers all slide, what one sequence would hold
    // without its window (the figure the engines print as their KV cache size in tokens).
    const Bytes perToken = pool.layout.fullBytesPerToken.value > 0 ? pool.layout.fullBytesPerToken
                                                                     : pool.layout.bytesPerToken();
    if (perToken.value == 0)
        return maxContextTokens(pool, 1);
    const std::uint64_t block = std::max<std::uint64_t>(pool.paging.blockTokens, 1);
    const std::uint64_t cells = pool.budgetBytes.value / perToken.value;
    if (pool.layout.fullBytesPerToken.value == 0 && pool.layout.slidingLayers > 0)
        return std::min(kMaxSearchTokens, cells) / block * block; // one windowed sequence always "fits": count the cells
    return largestContext(pool, 1, std::min(kMaxSearchTokens, cells + block));
}

std::vector<FrontierPoint> frontier(const KvPool& pool, std::uint64_t contextCap)
{
    std::vector<FrontierPoint> points;
    const std::uint64_t block = std::max<std::uint64_t>(pool.paging.blockTokens, 1);
    for (std::uint64_t users = 1; users <= 4096; users *= 2) {
        std::uint64_t ctx = maxContextTokens(pool, users);
        if (ctx < block)
            break;
        if (contextCap > 0)
            ctx = std::min(ctx, contextCap);
        points.push_back({users, ctx});
    }
    return points;
}

} // namespace headroom
