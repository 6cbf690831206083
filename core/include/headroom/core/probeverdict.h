#pragma once
/// @file probeverdict.h
/// The verdict of a probe, and the exact criteria that give it, defined once so that the probes,
/// the faces (CLI, app, reports) and `report --check` agree (issue 12 "verdicts are honest").
///
/// - allocation: pass iff the allocator's count equals the formula's bytes exactly;
/// - limit: pass iff verified <= predicted, verified >= 99 % of predicted or within one KV block
///   (shared/reference/gpus.md §6.4), and every checked frontier point ran;
/// - timing: a row is a measurement; it carries a verdict only against a stated tolerance
///   (kTimingTolerance, after calibration); calibration rows carry none;
/// - "not supported" (the probe cannot run this input here) and "cancelled" are states of their own.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// The outcome of a probe or of one timing row.
enum class ProbeVerdict {
    Pass,         ///< the stated criterion held
    Fail,         ///< the stated criterion did not hold (or the probe could not finish)
    NotSupported, ///< the probe cannot run this input on this device (neither pass nor fail)
    Cancelled,    ///< stopped by the user
    Measured,     ///< a measurement without a criterion (no tolerance stated: no pass, no fail)
};

/// "pass", "fail", "not-supported", "cancelled", "measured".
const char* probeVerdictName(ProbeVerdict verdict);
/// The inverse of probeVerdictName; nullopt for any other text.
std::optional<ProbeVerdict> parseProbeVerdict(std::string_view text);

/// Relative tolerance of a timing row against the calibrated speed model: |measured / predicted
/// - 1| <= 0.25 (issue 12: "say ±25 % after calibration").
inline constexpr double kTimingTolerance = 0.25;

/// Allocation: Pass iff @p measuredBytes == @p predictedBytes.
ProbeVerdict allocationVerdict(std::uint64_t measuredBytes, std::uint64_t predictedBytes);

/// Limit: Pass iff verified <= predicted, (verified >= 0.99 predicted or predicted - verified <=
/// @p blockTokens), and @p frontierRan == @p frontierChecked.
ProbeVerdict limitVerdict(std::uint64_t verifiedTokens, std::uint64_t predictedTokens, std::uint64_t blockTokens,
                          std::uint64_t frontierChecked, std::uint64_t frontierRan);

/// One timing row: Measured when @p predictedMs <= 0 or @p tolerance <= 0 (no criterion), else
/// Pass iff |measuredMs / predictedMs - 1| <= @p tolerance.
ProbeVerdict timingRowVerdict(double measuredMs, double predictedMs, double tolerance = kTimingTolerance);

/// The probe's verdict from its rows' verdicts: Fail if any failed, Pass if any passed and none
/// failed, Measured when none was judged.
ProbeVerdict combineVerdicts(const std::vector<ProbeVerdict>& rows);

/// Re-checks the verdicts recorded in a probe document (probeResultsToJson's text, or the
/// "probes" block of a report) against their own values with the rules above: each result's
/// "verdict" (or legacy "pass") for allocation and limit, and every timing row's "verdict" from
/// its measured and predicted times and the recorded "tolerance". Returns one line per
/// disagreement ("results[2] (limit): recorded pass, the values give fail"); empty when every
/// verdict holds. Malformed documents give one line naming what is missing.
std::vector<std::string> recheckProbeVerdicts(std::string_view probesJson);

} // namespace headroom
