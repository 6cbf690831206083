#pragma once
/// @file moerouting.h
/// The router of a mixture-of-experts layer in the probes' decode step: the top-k experts of
/// each token from the router GEMV's logits, as Mixtral's and Qwen3-MoE's softmax-then-top-k
/// and DeepSeek-V2's greedy top-k pick them (transformers modeling_mixtral.py
/// MixtralSparseMoeBlock, modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock, torch.topk over the
/// router scores; softmax is monotone, so the top-k of the logits is the top-k of the scores).

#include <cstdint>
#include <vector>

namespace headroom::probes {

/// The top @p k of @p experts logits for each of @p tokens tokens: logits fp32 [tokens][experts],
/// the result [tokens][k] expert ids, each token's k ids distinct, in decreasing logit order.
/// Equal logits (every logit of the probes' synthetic weights is equal) are ordered by a
/// pseudo-random priority of (@p seed, token, expert) (splitmix64), so each token draws k distinct
/// experts uniformly and a batch of B tokens touches 1 - (1 - k/E)^B of the experts on average:
/// the fraction core's speed model assumes (expertsTouchedFraction, core/speed/roofline.h).
/// Returns an empty vector when k is 0, k > experts or tokens is 0.
std::vector<std::uint32_t> routeTopK(const float* logits, std::uint32_t tokens, std::uint32_t experts, std::uint32_t k,
                                     std::uint64_t seed);

} // namespace headroom::probes
