#include "exportactions.h"

#include "reportrender.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/report/report.h"
#include "headroom/core/report/reportdocument.h"

#include <QFileInfo>

#include <array>

namespace headroom::app {

namespace {

struct FormatInfo {
    ReportFormat format;
    const char* filter;
    const char* extension;
};

constexpr std::array<FormatInfo, 5> kFormats{{
    {ReportFormat::Json, "JSON report (*.json)", "json"},
    {ReportFormat::Markdown, "Markdown (*.md)", "md"},
    {ReportFormat::Csv, "CSV, one row per plan (*.csv)", "csv"},
    {ReportFormat::Html, "HTML page (*.html)", "html"},
    {ReportFormat::Pdf, "PDF document (*.pdf)", "pdf"},
}};

} // namespace

QStringList reportFileFilters()
{
    QStringList filters;
    for (const FormatInfo& f : kFormats)
        filters << QString::fromLatin1(f.filter);
    return filters;
}

std::optional<ReportFormat> reportFormatForFilter(const QString& filter)
{
    for (const FormatInfo& f : kFormats)
        if (filter == QLatin1String(f.filter))
            return f.format;
    return std::nullopt;
}

std::optional<ReportFormat> reportFormatForPath(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("markdown"))
        return ReportFormat::Markdown;
    if (suffix == QLatin1String("htm"))
        return ReportFormat::Html;
    for (const FormatInfo& f : kFormats)
        if (suffix == QLatin1String(f.extension))
            return f.format;
    return std::nullopt;
}

QString reportExtension(ReportFormat format)
{
    for (const FormatInfo& f : kFormats)
        if (f.format == format)
            return QString::fromLatin1(f.extension);
    return {};
}

tl::expected<std::string, QString> capacityReportJson(const ExportState& state, const std::string& createdUtc)
{
    if (state.plans.empty())
        return tl::unexpected(QStringLiteral("nothing to export: no plan could be made"));
    ReportInput input;
    input.requests = state.requests;
    input.plans = state.plans;
    input.title = state.title;
    input.createdUtc = createdUtc;
    auto json = buildReportJson(input);
    if (!json)
        return tl::unexpected(QString::fromStdString(json.error().message));
    return std::move(*json);
}

bool exportCapacityReport(const QString& path, const ExportState& state, QString* error, std::optional<ReportFormat> format)
{
    const auto fail = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    auto json = capacityReportJson(state);
    if (!json)
        return fail(json.error());
    const ReportFormat chosen = format.value_or(reportFormatForPath(path).value_or(ReportFormat::Json));
    switch (chosen) {
    case ReportFormat::Html:
        return report::renderReportHtml(*json, path, error);
    case ReportFormat::Pdf:
        return report::renderReportPdf(*json, path, error);
    case ReportFormat::Markdown:
    case ReportFormat::Csv: {
        auto text = chosen == ReportFormat::Markdown ? report::renderReportMarkdown(*json) : report::renderReportCsv(*json);
        if (!text)
            return fail(QString::fromStdString(text.error().message));
        json = std::move(*text);
        break;
    }
    case ReportFormat::Json:
        break;
    }
    if (auto written = writeFileAtomically(path.toStdString(), *json); !written)
        return fail(QString::fromStdString(written.error()));
    return true;
}

QString launchEngineTitle(LaunchEngine engine)
{
    switch (engine) {
    case LaunchEngine::Vllm:
        return QStringLiteral("vLLM");
    case LaunchEngine::LlamaCpp:
        return QStringLiteral("llama.cpp");
    case LaunchEngine::SgLang:
        return QStringLiteral("SGLang");
    case LaunchEngine::Ollama:
        return QStringLiteral("Ollama");
    case LaunchEngine::Tgi:
        return QStringLiteral("TGI");
    case LaunchEngine::TensorRtLlm:
        return QStringLiteral("TensorRT-LLM");
    }
    return {};
}

tl::expected<LaunchFlags, std::string> launchFlagsFor(const Catalog& catalog, const Selection& selection,
                                                      const std::string& modelId, const std::string& formatId,
                                                      const std::string& cardId, LaunchEngine engine)
{
    std::string engineId;
    const EnginePolicy* chosen = catalog.findEngine(selection.engineId);
    if (chosen && launchEngineFor(chosen->kind) == engine) {
        engineId = chosen->id;
    } else {
        // The engine's current release (its profile covers "to current"), as `--engine NAME` picks;
        // an older release's profile only when there is no current one.
        for (const EnginePolicy& e : catalog.profiles().engines)
            if (launchEngineFor(e.kind) == engine && (engineId.empty() || e.versionUntil.empty())) {
                const bool current = e.versionUntil.empty();
                engineId = e.id;
                if (current)
                    break;
            }
    }
    if (engineId.empty())
        return tl::unexpected(std::string("no engine profile for ") + launchEngineName(engine));
    auto request = requestFor(catalog, selection, modelId, formatId, cardId, engineId);
    if (!request)
        return tl::unexpected(request.error());
    auto plan = makePlan(*request);
    if (!plan)
        return tl::unexpected(plan.error());
    return launchFlags(*request, *plan);
}

} // namespace headroom::app
