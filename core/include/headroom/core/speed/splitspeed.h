#pragma once
/// @file splitspeed.h
/// Decode speed of a layer split (issue 11): the layers on the GPU stream their weights and KV at
/// the card's memory bandwidth, the layers in host memory at the host's, one after the other, and
/// the hidden state crosses the link (PCIe) where the split changes device. One sequence, batch 1,
/// memory-bound (BRIEF §2: a decode step reads every resident weight once):
///     step = (gpu weights + gpu KV) / B_gpu + (host weights + host KV) / B_host + crossings x activation / B_link
/// with routed-expert bytes scaled by the fraction of experts a token touches (k / E). The link
/// term counts bytes only; the per-crossing synchronisation latency (tens of microseconds) is not
/// modelled. A roofline: a ceiling the engine reaches a fraction of (the host side least: llama.cpp's
/// CPU matmuls reach about half of a STREAM-measured bandwidth), checked against a public
/// measurement in tests/core/tst_splitspeed.cpp.

#include "headroom/core/units.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

/// Dual-channel DDR5-5600 peak: 2 channels x 8 bytes x 5.6e9 transfers/s, in 10^9 B/s (JEDEC
/// JESD79-5 transfer rate): the host bandwidth a plan assumes when none is given (and says so).
inline constexpr double kDefaultHostBandwidthGBps = 89.6;
/// PCIe 4.0 x16, one direction: 16 lanes x 16 GT/s x 128/130, in 10^9 B/s (PCI-SIG base spec 4.0).
inline constexpr double kPcie4x16GBps = 31.5;

/// A host's peak memory bandwidth in 10^9 B/s from @p spec: "ddr4-3200x2" (channels x 8 B x MT/s:
/// 51.2), "ddr5-5600" (two channels: 89.6), or a figure in GB/s ("102", a measured read bandwidth
/// such as the CPU device probe's). DDR generations 3-5, 400-12,800 MT/s, 1-24 channels; an error
/// names what was found.
tl::expected<double, std::string> parseHostBandwidth(const std::string& spec);

/// What one side of the split reads per decode step.
struct SplitSide {
    Bytes weightsBytes;        ///< weights resident there (token_embd excluded: one row is read)
    Bytes expertBytes;         ///< of which routed experts
    Bytes kvBytes;             ///< its KV cache at the context of the step
    double bandwidthGBps = 0;  ///< its memory bandwidth, 10^9 B/s
};

/// The estimate.
struct SplitSpeed {
    double gpuMs = 0;          ///< the GPU layers' share of a step
    double hostMs = 0;         ///< the host layers' share
    double linkMs = 0;         ///< the hidden state over the link
    double stepMs = 0;         ///< the sum
    std::vector<double> devicesMs; ///< each GPU's share, in device order (CUDA0, CUDA1, ...): gpuMs is their sum
    double tokensPerSecond = 0;///< 1000 / stepMs (0 when a bandwidth is unknown)
};

/// One decode step of one sequence over @p gpu and @p host; @p crossings link crossings of
/// @p activationBytes each (n_embd x 4 B for llama.cpp's f32 hidden state) at @p linkGBps.
/// A side with no bytes costs nothing; a side with bytes and no bandwidth makes the result 0.
SplitSpeed splitDecodeSpeed(const SplitSide& gpu, const SplitSide& host, std::uint32_t expertCount,
                            std::uint32_t expertsPerToken, std::uint32_t crossings, Bytes activationBytes,
                            double linkGBps = kPcie4x16GBps);

/// The same over several GPUs in a layer split (llama.cpp --split-mode layer, the default): each
/// device holds a run of layers and, for one token, the devices run one after the other: the
/// scheduler computes the graph's splits in order, each split's inputs copied from the previous
/// device before it starts (ggml/src/ggml-backend.cpp ggml_backend_sched_compute_splits; pipeline
/// parallelism, n_copies > 1, overlaps only different micro-batches of a prefill, not one decode
/// token). So the GPU share is the sum over @p gpus of (that device's weights + KV) / its own
/// bandwidth, not the pooled bytes at the first card's; @p crossings counts every device change
/// (host -> CUDA0 -> CUDA1 -> ...), GPU to GPU included. @p gpus empty: the host side alone.
SplitSpeed splitDecodeSpeed(const std::vector<SplitSide>& gpus, const SplitSide& host, std::uint32_t expertCount,
                            std::uint32_t expertsPerToken, std::uint32_t crossings, Bytes activationBytes,
                            double linkGBps = kPcie4x16GBps);

/// The split of a plan and its decode speed: "28 of 33 layers on the GPU: about N tokens/s".
struct SplitDecode {
    std::uint32_t gpuLayers = 0;     ///< layers on the GPU(s), llama.cpp's count (output layer included)
    std::uint32_t totalLayers = 0;   ///< n_layer + 1
    double hostBandwidthGBps = 0;    ///< what the host side was priced at
    bool hostBandwidthAssumed = true;///< no --host-bandwidth: kDefaultHostBandwidthGBps
    std::vector<double> devicesBandwidthGBps; ///< each GPU's bandwidth as priced (speed.devicesMs's order)
    SplitSpeed speed;
};

} // namespace headroom
