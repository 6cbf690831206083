#pragma once
/// @file roofline.h
/// The roofline speed model of decode and prefill (BRIEF §2):
///     step time >= max(bytes moved / memory bandwidth, FLOPs / peak compute)
/// Decode streams every resident weight once per step (shared by the batch) plus each sequence's
/// KV cache; prefill is compute-bound. Gives tokens/s against batch, TTFT, TPOT and the knee
/// (the batch where the step turns compute-bound). Calibrated by measured bandwidth and compute
/// (the timing probe) when there are any.

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace headroom {

/// What the model and the card bring to the roofline.
struct SpeedInputs {
    Bytes weightsBytes;                 ///< bytes of weights read per decode step (all of them for dense models)
    Bytes expertBytes;                  ///< of which routed-expert bytes (MoE), read in proportion to experts touched
    std::uint32_t expertCount = 0;      ///< routed experts per layer (0 = dense)
    std::uint32_t expertsPerToken = 0;  ///< top-k
    std::uint64_t activeParameters = 0; ///< parameters multiplied per token (MoE: top-k experts only)
    Bytes kvBytesPerToken;              ///< KV read per cached token per step
    std::uint32_t layers = 0;           ///< for the attention FLOPs of prefill
    std::uint64_t attentionWidth = 0;   ///< heads * head_dim (for attention FLOPs)
    double bandwidthGBps = 0;           ///< memory bandwidth, 10^9 B/s (datasheet or measured)
    double peakTflops = 0;              ///< dense fp16 tensor TFLOP/s (datasheet or measured)
    bool calibrated = false;            ///< true when bandwidth/compute come from a measurement
};

/// One step's estimate.
struct StepEstimate {
    double memoryMs = 0;          ///< bytes moved / bandwidth
    double computeMs = 0;         ///< FLOPs / peak
    double stepMs = 0;            ///< max of the two
    bool computeBound = false;
    double tokensPerSecond = 0;   ///< all sequences together
    double perSequenceTokensPerSecond = 0;
};

/// Expected fraction of routed experts touched by @p batch tokens each choosing k of E
/// uniformly: 1 - (1 - k/E)^batch.
double expertsTouchedFraction(std::uint32_t expertCount, std::uint32_t expertsPerToken, std::uint64_t batch);

/// Decode step of @p batch sequences with @p contextTokens cached each:
/// bytes = weights (experts scaled by the fraction touched) + batch * context * kv_bytes_per_token,
/// FLOPs = 2 * active parameters * batch + 4 * layers * attention width * context * batch.
StepEstimate decodeStep(const SpeedInputs& in, std::uint64_t batch, std::uint64_t contextTokens);

/// Prefill of one prompt of @p promptTokens: FLOPs = 2 * active * P + 2 * layers * width * P^2
/// (causal attention), bytes = weights + P * kv_bytes_per_token. Its stepMs is the TTFT.
StepEstimate prefill(const SpeedInputs& in, std::uint64_t promptTokens);

/// Smallest batch in 1..1024 at which the decode step turns compute-bound at @p contextTokens;
/// nullopt when it stays memory-bound.
std::optional<std::uint64_t> kneeBatch(const SpeedInputs& in, std::uint64_t contextTokens);

/// One point of the tokens/s curve.
struct SpeedPoint {
    std::uint64_t batch = 0;
    double stepMs = 0;
    double tokensPerSecond = 0;
    bool computeBound = false;
};

/// Decode tokens/s for batch = 1, 2, 4, ... 64 at @p contextTokens.
std::vector<SpeedPoint> speedCurve(const SpeedInputs& in, std::uint64_t contextTokens, std::uint64_t maxBatch = 64);

} // namespace headroom
