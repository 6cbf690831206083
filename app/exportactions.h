#pragma once
// Export of the current state through the shared implementations: the capacity report of core
// (report.h; Markdown and CSV from reportdocument.h), its HTML and PDF renderings
// (headroom_report_qt), and the engines' launch flags (core launchflags.h). The app composes
// nothing of its own, so a report or a command line is the same as headroom-cli's.

#include "catalog.h"

#include "headroom/core/launchflags.h"

#include <QString>
#include <QStringList>

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <vector>

namespace headroom::app {

/// What is exported: plans with the requests they were made from (the report rebuilds and checks
/// them from the requests' inputs).
struct ExportState {
    std::vector<PlanRequest> requests; ///< one per plan, in the same order
    std::vector<PlanResult> plans;     ///< the matrix's plans row by row, then the detail when not among them
    std::string title;                 ///< empty: core's "Capacity report"
};

/// The files a capacity report can be written as.
enum class ReportFormat { Json, Markdown, Csv, Html, Pdf };

/// The save dialog's filters, one per format in enum order ("JSON report (*.json)", ...).
QStringList reportFileFilters();
/// The format of one of reportFileFilters(), or nullopt.
std::optional<ReportFormat> reportFormatForFilter(const QString& filter);
/// The format of @p path's extension (.json, .md/.markdown, .csv, .html/.htm, .pdf), or nullopt.
std::optional<ReportFormat> reportFormatForPath(const QString& path);
/// "json", "md", "csv", "html", "pdf".
QString reportExtension(ReportFormat format);

/// The report JSON (core buildReportJson) of @p state; @p createdUtc empty: now.
tl::expected<std::string, QString> capacityReportJson(const ExportState& state, const std::string& createdUtc = {});

/// Writes the report of @p state to @p path in @p format (nullopt: by the extension, JSON when
/// unknown), atomically. False with @p error set when it cannot (no plans, schema, path).
bool exportCapacityReport(const QString& path, const ExportState& state, QString* error,
                          std::optional<ReportFormat> format = std::nullopt);

/// "vLLM", "llama.cpp", "SGLang", "Ollama".
QString launchEngineTitle(LaunchEngine engine);

/// The launch flags of (model, format, card) at the selection's point, planned under @p engine:
/// the selection's engine when it is that engine, else the first profile of that engine. The
/// error is core's (a KV dtype the engine lacks, nothing fits) or names a missing profile.
tl::expected<LaunchFlags, std::string> launchFlagsFor(const Catalog& catalog, const Selection& selection,
                                                      const std::string& modelId, const std::string& formatId,
                                                      const std::string& cardId, LaunchEngine engine);

} // namespace headroom::app
