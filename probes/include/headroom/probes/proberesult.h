#pragma once
/// @file proberesult.h
/// What every probe shares: progress and cancellation as plain data (STYLE §2), and a result with
/// predicted and measured values that serialises to JSON (keys end in their unit, STYLE §14).

#include "headroom/core/probeverdict.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace headroom::probes {

/// Progress and cancellation of a running probe. The probe calls report() between steps and
/// polls cancelled() at least every ~100 ms of work (cancellation is honoured within a second).
/// Implementations must be cheap; the app adapts this to signals and throttles (STYLE §2).
struct ProbeProgress {
    virtual ~ProbeProgress() = default;
    /// @p fraction in [0, 1] of the current probe; @p stage a short phrase ("allocating KV cache").
    virtual void report(double fraction, std::string_view stage) = 0;
    /// True once the caller wants the probe to stop.
    virtual bool cancelled() const = 0;
};

/// A ProbeProgress that ignores reports and never cancels.
struct NullProgress final : ProbeProgress {
    void report(double, std::string_view) override {}
    bool cancelled() const override { return false; }
};

/// JSON text kept as is (arrays, objects) inside a result.
struct RawJson {
    std::string text; ///< one valid JSON value
    friend bool operator==(const RawJson&, const RawJson&) = default;
};

/// One value of a result: a flag, an exact integer (bytes, tokens), a measured number, a text, or
/// a JSON value (tables).
using ProbeValue = std::variant<bool, std::uint64_t, std::int64_t, double, std::string, RawJson>;

/// The outcome of one probe.
struct ProbeResult {
    std::string probe;         ///< "device", "allocation", "limit", "timing", "quant-error"
    bool pass = false;         ///< the check held (predicted vs measured within its tolerance)
    bool cancelled = false;    ///< stopped by the caller; pass is false
    bool supported = true;     ///< false when the probe cannot run this input here (pass is false)
    bool judged = true;        ///< false when the probe measured without a stated criterion (no pass, no fail)
    std::string summary;       ///< one line for people
    std::vector<std::pair<std::string, ProbeValue>> values; ///< in insertion order; keys end in units
    std::vector<std::string> notes;  ///< how it was measured, simplifications, warnings

    /// The verdict (core/probeverdict.h): Cancelled, NotSupported, Measured (not judged), Pass or Fail.
    ProbeVerdict verdict() const;
    /// Sets pass, judged, supported and cancelled from @p verdict.
    void setVerdict(ProbeVerdict verdict);
    /// Sets (or replaces) @p key.
    void set(std::string key, ProbeValue value);
    /// The value of @p key, if present.
    const ProbeValue* find(std::string_view key) const;
    /// @p key as an unsigned integer (uint64, or a non-negative int64).
    std::optional<std::uint64_t> integer(std::string_view key) const;
    /// @p key as a number (any numeric alternative).
    std::optional<double> number(std::string_view key) const;
    /// @p key as text.
    std::optional<std::string> text(std::string_view key) const;
    /// @p key as a flag.
    std::optional<bool> flag(std::string_view key) const;
};

/// A failed result of @p probe with @p summary (pass false).
ProbeResult failedResult(std::string probe, std::string summary);
/// A cancelled result of @p probe.
ProbeResult cancelledResult(std::string probe);

/// What the device probe and the report header show about the device.
struct DeviceSummary {
    std::string spec;           ///< "cpu", "cuda:0"
    std::string name;           ///< device name
    std::uint64_t totalBytes = 0; ///< total memory the system reports
    std::uint64_t freeBytes = 0;  ///< free memory the system reports (CUDA: after the context)
    std::optional<std::uint64_t> budgetBytes; ///< the cap, when one is set
    std::map<std::string, std::string> facts; ///< Device::facts()
    std::string error;          ///< why the device could not be opened ("" when it was)
};

/// One result as a JSON object: {"probe", "verdict" (probeVerdictName), "pass", "summary",
/// [cancelled, supported when not default], each value under its key, "notes": [...]}. @p indent -1 for one line.
std::string probeResultToJson(const ProbeResult& result, int indent = 2);
/// The CLI's `--json` document: {"schema_version": 1, "device": {...}, "results": [...]}.
std::string probeResultsToJson(const DeviceSummary& device, const std::vector<ProbeResult>& results, int indent = 2);
/// Parses probeResultToJson's output (the child process's answer). nullopt on malformed text.
std::optional<ProbeResult> probeResultFromJson(std::string_view text);

/// Schema version of the probe JSON document (STYLE §8).
inline constexpr int kProbeSchemaVersion = 1;

} // namespace headroom::probes
