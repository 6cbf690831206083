#pragma once
/// @file card.h
/// A GPU card as the planner sees it: the total memory its driver reports (not the marketing
/// size: an RTX 4090 reports 24,210 MiB on Linux), bandwidth and peak compute
/// (shared/reference/gpus.md §3.1).

#include "headroom/core/interconnect.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// One card profile, or an anonymous card made from a size.
struct Card {
    std::string id;                 ///< "rtx-4090", or the size text for anonymous cards ("8GiB")
    std::string name;               ///< "NVIDIA GeForce RTX 4090"
    std::string memoryClass;        ///< "24 GB"
    Bytes totalBytes;               ///< driver-reported total (cudaMemGetInfo total), Linux
    double bandwidthGBps = 0;       ///< datasheet memory bandwidth, 10^9 B/s (0 = unknown)
    double fp16Tflops = 0;          ///< dense fp16 tensor TFLOP/s with fp32 accumulate (0 = unknown)
    Bytes l2Bytes;                  ///< L2 cache size (0 = unknown)
    std::string source;             ///< where the figures come from
    bool anonymous = false;         ///< made from a size, not a profile
    /// The total is an estimate (no public driver-reported total was found; the profile's
    /// total_note says how it was derived). Faces show it as "estimated".
    bool totalEstimated = false;
    /// The link between the GPUs of a multi-GPU node of this card (the profile's `interconnect`);
    /// nullopt when the profile gives none (anonymous cards): plans then assume
    /// kDefaultInterconnect. The `interconnect` engine setting overrides it.
    std::optional<Interconnect> interconnect;
    /// No GPU: the card "cpu" (hostCard()), a plan of the host's CPU and RAM alone. Its totalBytes
    /// is 0 (no device memory); what the plan needs is the host's bill (splitbill.h), checked
    /// against --host-ram, and its speed is the host's memory bandwidth (--host-bandwidth).
    bool hostOnly = false;
};

/// The id of the host-only card: `--card cpu`.
inline constexpr std::string_view kHostCardId = "cpu";

/// The host-only card (Card::hostOnly): no GPU, no device memory; @p bandwidthGBps is the host's
/// memory bandwidth (--host-bandwidth, else speed/splitspeed.h kDefaultHostBandwidthGBps).
Card hostCard(double bandwidthGBps);

/// The largest card total Headroom plans for: 1024 TiB (2^50 bytes), some thousand times the largest
/// GPU there is (288 GB), far below where byte sums of a plan (weights + KV of many users) or the
/// report's JSON integers (at most 2^63 - 1 signed, the schema validator's) would overflow.
inline constexpr std::uint64_t kMaxCardBytes = 1ull << 50;

/// Why @p totalBytes is not a card size: "a card has at least 1 byte" for 0, "more than the largest
/// card size, 1024TiB (1,125,899,906,842,624 bytes)" above kMaxCardBytes; empty when it is one.
/// The one rule for --card sizes, card profiles (built-in and user) and reports.
std::string cardSizeProblem(std::uint64_t totalBytes);

/// An anonymous card of @p size bytes total ("8GiB" -> 8,589,934,592 B).
Card anonymousCard(std::string_view sizeText, Bytes size);

} // namespace headroom
