#pragma once
/// @file capacity.h
/// What a KV budget holds (BRIEF §1.4):
///     resident_tokens_max = floor((usable - weights - overheads) / kv_bytes_per_token)
/// with block rounding per sequence and cell padding, and from it the max context for N users,
/// the max users at context C, and the context x concurrency frontier (a hyperbola bent by
/// block rounding).

#include "headroom/core/kvcache.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <vector>

namespace headroom {

/// A KV pool: the layout, the bytes it may use, and how the engine pages it.
struct KvPool {
    KvLayout layout;
    Bytes budgetBytes;
    Paging paging;
    std::uint64_t ubatchTokens = 0;   ///< added to sliding windows (cells in flight)
};

/// Largest context per sequence (tokens) such that @p users sequences fit in the pool;
/// 0 when not even one block each fits. Exact: a binary search over kvBytes().
std::uint64_t maxContextTokens(const KvPool& pool, std::uint64_t users);

/// Largest number of sequences of @p contextTokens each that fit; 0 when none does.
std::uint64_t maxUsers(const KvPool& pool, std::uint64_t contextTokens);

/// Largest total of resident tokens (one sequence holding them all); for models without
/// sliding layers this is floor(budget / kv_bytes_per_token) rounded down to the block.
std::uint64_t maxResidentTokens(const KvPool& pool);

/// One point of the frontier.
struct FrontierPoint {
    std::uint64_t users = 0;          ///< concurrent sequences
    std::uint64_t contextTokens = 0;  ///< max context each, capped at @p contextCap
};

/// The context x concurrency frontier: users = 1, 2, 4, ... while each can hold at least one
/// block (at most 4,096 users), with each point's max context capped at @p contextCap (0 = none).
std::vector<FrontierPoint> frontier(const KvPool& pool, std::uint64_t contextCap);

} // namespace headroom
