#pragma once
/// @file report.h
/// Capacity reports: a reproducible, schema-versioned JSON record of what was planned (inputs with
/// the hash of the model files read), what fits (matrix, memory bills, frontiers, roofline speed
/// figures, launch flags) and, when given, what a device measured (probe results, speed).
///
/// The JSON is the interchange: every renderer (Markdown, CSV here; HTML and PDF in the Qt library
/// app/report) reads it, and `checkReport` re-validates and recomputes it. Serialisation is
/// deterministic: keys sorted, two-space indent, integers for every byte and token count.
/// Layout: resources/report.schema.json (embedded into core at build time).

#include "headroom/core/plan.h"
#include "headroom/core/profiles.h"

#include <tl/expected.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace headroom {

/// Schema version of the reports this build writes and checks (STYLE.md §8).
inline constexpr int kReportSchemaVersion = 1;

/// Largest report read (a report of 100 plans is about 1 MiB); larger input is refused.
inline constexpr std::size_t kMaxReportBytes = 64u << 20;
/// Deepest nesting read (a report nests 6 levels); deeper input is refused before parsing.
inline constexpr int kMaxReportDepth = 64;
/// Most plans a report holds (written or checked): a report of 4,096 plans is about 50 MB, near
/// kMaxReportBytes, and checkReport recomputes them all (about 1 ms a plan).
inline constexpr std::size_t kMaxReportPlans = 4096;
/// Drifts kept by checkReport; ReportCheck::driftCount counts them all.
inline constexpr std::size_t kMaxReportedDrifts = 1000;

/// What goes into a report.
struct ReportInput {
    std::vector<PlanRequest> requests;  ///< one per plan, in the same order
    std::vector<PlanResult> plans;      ///< makePlan(requests[i])
    std::string title;                  ///< shown on top; empty: "Capacity report"
    std::string createdUtc;             ///< ISO 8601 UTC ("2025-11-29T16:04:00Z"); empty: now
    /// Optional probe block (JSON text), the device facts and predicted-vs-measured results:
    /// {"device": {"name", "driver_version", "cuda_version", "total_bytes", "free_bytes",
    ///  "context_overhead_bytes", "copy_bandwidth_gbps"}, "results": [{"probe", "pass",
    ///  "predicted_<unit>", "measured_<unit>", "margin_<unit>", ...}]}. Empty: none.
    std::string probesJson;
    /// Optional measured-speed block (JSON text): {"source", "points": [{"users",
    /// "context_tokens", "decode_step_ms", "tokens_per_second", ...}], "knee_users"}. Empty: none.
    std::string speedJson;
};

/// A report that could not be made, read or checked.
struct ReportError {
    std::string message;  ///< what was wrong; names the JSON pointer for schema errors
};

/// Builds the report JSON text (schema_version 1). Errors: plans and requests differ in count,
/// a probes/speed block that is not valid JSON or does not match the schema.
tl::expected<std::string, ReportError> buildReportJson(const ReportInput& input);

/// The report's JSON Schema (draft 7), as embedded at build time from resources/report.schema.json.
const std::string& reportSchemaText();

/// Validates @p reportJson against the schema. Returns the problems, one line each
/// ("/plans/0/weights_bytes: ..."); empty when valid. A text that is not JSON gives one line.
std::vector<std::string> validateReport(const std::string& reportJson);

/// @p reportJson with the volatile fields (tool.version, created_utc) replaced by "<masked>",
/// serialised as buildReportJson does: the form golden files and drift checks compare.
tl::expected<std::string, ReportError> maskVolatileFields(const std::string& reportJson);

/// One difference between a report and its recomputation.
struct ReportDrift {
    std::string path;      ///< JSON pointer ("/plans/0/max_resident_tokens")
    std::string reported;  ///< value in the file (JSON text; "(absent)" when missing)
    std::string now;       ///< value computed by this version (JSON text; "(absent)" when removed)
};

/// The outcome of `checkReport`.
struct ReportCheck {
    std::vector<std::string> schemaErrors; ///< empty when the file matches the schema
    std::string reportedVersion;           ///< tool.version in the file
    std::string currentVersion;            ///< this build's toolVersion()
    std::vector<ReportDrift> drifts;       ///< empty: the plan recomputes to the same report; the first kMaxReportedDrifts
    std::size_t driftCount = 0;            ///< every drift found (drifts.size() when at most kMaxReportedDrifts)
    bool recomputed = false;               ///< false when the schema failed (no recomputation)
    /// Probe verdicts that their own recorded values do not give (recheckProbeVerdicts of
    /// core/probeverdict.h over the "probes" block); empty when every verdict holds.
    std::vector<std::string> probeVerdictProblems;
    /// The plans not recomputed, and why, one line each ("plan 3 (model 'org/name'): not
    /// re-checked: ..."): without ReportCheckOptions::allowFetch, those whose model is no profile.
    std::vector<std::string> unchecked;
    std::size_t checkedPlans = 0; ///< plans recomputed and compared
};

/// How checkReport re-resolves what a report names.
struct ReportCheckOptions {
    /// Resolve the models a report names as resolveModel does: by path (files and folders are
    /// opened and read), from the local hub cache and Ollama store, and over HTTP (hf://, ORG/NAME,
    /// URLs). Off by default: a report is untrusted input, and checking it must not read or fetch
    /// what it names; only profiles (built-in and user) are used, and a plan whose model is none
    /// is listed in ReportCheck::unchecked.
    bool allowFetch = false;
};

/// Validates @p reportJson against the schema, then rebuilds every request from the report's
/// inputs (profiles by id; model files by path, hub repos and URLs only with
/// ReportCheckOptions::allowFetch, the hash of the files read compared too), recomputes the plans
/// with this version one at a time and compares everything but the volatile fields and the
/// measured blocks (probes, speed). Errors: not JSON, schema_version not 1 (both versions named),
/// more than kMaxReportPlans plans, requests, plans and cells that differ in count, or an input
/// that no longer resolves (an unknown profile id, a model file gone, a model path that is not a
/// regular file). Bounded: kMaxReportBytes, kMaxReportDepth, kMaxReportPlans; memory is the
/// parsed report and one recomputed plan at a time; the diff is linear in the size of the report.
tl::expected<ReportCheck, ReportError> checkReport(const std::string& reportJson, const ProfileSet& profiles,
                                                   const ReportCheckOptions& options = {});

} // namespace headroom
