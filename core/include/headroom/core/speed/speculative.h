#pragma once
/// @file speculative.h
/// Speculative decoding (Leviathan et al., arXiv 2211.17192, §3.1 and Theorem 3.8; BRIEF §2):
/// with acceptance rate a, draft length g and draft cost c (a draft step as a fraction of a target
/// step), each verification yields (1 - a^(g+1)) / (1 - a) tokens in expectation and costs
/// g * c + 1 target steps. At a = 0.9, g = 8, c = 0.1: 3.40x; at a = 0.3: 0.79x (slower).

#include <cstdint>

namespace headroom {

/// Expected tokens per verification step: (1 - a^(g+1)) / (1 - a); g + 1 when a = 1.
double speculativeTokensPerVerification(double acceptance, std::uint32_t draftTokens);

/// Expected speed-up over plain decoding: tokens per verification / (g * c + 1).
double speculativeSpeedup(double acceptance, std::uint32_t draftTokens, double draftCost);

} // namespace headroom
