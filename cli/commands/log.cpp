// headroom-cli log FILE|- : an engine's start-up log in, predicted against measured per
// component and a calibrated plan out (core/enginelog: parser and calibration; printed here).

#include "commands.h"
#include "texttable.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/enginelog/enginelog.h"
#include "headroom/core/enginelog/logreport.h"
#include "headroom/core/enginerules.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

namespace headroom::cli {

namespace {

struct LogOptions {
    std::string file;
    std::string model;
    std::string weights;
    std::string kvDtype;
    std::string card;
    std::optional<std::uint64_t> context;
    std::optional<std::uint64_t> users;
    std::string leaveFree = "2GiB";
    bool save = false;
    std::string output;
};

/// The log of @p file (core's reader: a regular file, bounded), or standard input for "-" (read
/// to one byte past the limit, so that the parser refuses an oversized log by its size).
tl::expected<std::string, std::string> readLog(const std::string& file, const EngineLogLimits& limits)
{
    if (file != "-") {
        auto text = readEngineLogFile(file, limits);
        if (!text)
            return tl::unexpected(text.error().message);
        return std::move(*text);
    }
    std::string text;
    char buf[65536];
    while (std::cin && text.size() <= limits.maxBytes) {
        std::cin.read(buf, sizeof buf);
        text.append(buf, static_cast<std::size_t>(std::cin.gcount()));
    }
    return text;
}

void printReport(const LogReport& r)
{
    for (const std::string& line : r.headerLines)
        std::cout << line << '\n';
    std::cout << "\nMeasured terms (as printed)\n";
    TextTable terms;
    terms.addColumn("term");
    terms.addColumn("device");
    terms.addColumn("value", TextTable::Align::Right);
    terms.addColumn("line", TextTable::Align::Right);
    for (const LogTermRow& t : r.terms)
        terms.addRow({t.term, t.where, t.value, t.line});
    terms.print(std::cout, "  ");

    std::cout << "\nPredicted against measured (" << r.comparisonTitle << ")\n";
    TextTable t;
    t.addColumn("component");
    t.addColumn("predicted", TextTable::Align::Right);
    t.addColumn("measured", TextTable::Align::Right);
    t.addColumn("plan - log", TextTable::Align::Right);
    t.addColumn("how");
    for (const LogComponentRow& c : r.components)
        t.addRow({c.component, c.predicted, c.measured, c.difference, c.how});
    t.print(std::cout, "  ");
    if (!r.kvFigureLine.empty())
        std::cout << "  " << r.kvFigureLine << '\n';
    for (const std::string& n : r.comparison.notes)
        std::cout << "  note: " << n << '\n';

    std::cout << '\n' << r.calibrationLines.front() << '\n';
    for (std::size_t i = 1; i < r.calibrationLines.size(); ++i)
        std::cout << "  " << r.calibrationLines[i] << '\n';
    std::cout << "\nCalibrated what fits on this card\n";
    for (const std::string& line : r.whatFits.lines)
        std::cout << "  " << line << '\n';
}

void runLog(CliContext& ctx, const LogOptions& o)
{
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    const EngineLogLimits limits;
    auto text = readLog(o.file, limits);
    if (!text) {
        ctx.fail(text.error());
        return;
    }
    LogReportOptions options;
    options.model = o.model;
    options.weights = o.weights;
    options.kvDtype = o.kvDtype;
    options.card = o.card;
    options.contextTokens = o.context;
    options.users = o.users;
    if (auto free = parseSize(o.leaveFree)) {
        options.leaveFreeBytes = *free;
    } else {
        ctx.fail("--leave-free " + o.leaveFree + ": expected a size (2GiB, 1500MiB)");
        return;
    }
    const std::string name = o.file == "-" ? "stdin" : std::filesystem::path(o.file).filename().string();
    auto report = analyzeEngineLog(*text, name, options, *profiles);
    const std::vector<std::string>& warnings = report ? report->log.warnings : report.error().warnings;
    for (const std::string& w : warnings)
        std::cerr << "headroom-cli: " << o.file << ": " << w << '\n';
    if (!report) {
        const LogReportError& e = report.error();
        if (e.stage == LogReportError::Stage::Request)
            std::cout << e.summary << '\n';
        const bool namesFile = e.stage == LogReportError::Stage::Read || e.stage == LogReportError::Stage::Engine;
        ctx.fail(namesFile ? o.file + ": " + e.message : e.message);
        return;
    }
    printReport(*report);
    std::filesystem::path out;
    if (!o.output.empty())
        out = o.output;
    else if (o.save)
        out = calibrationPath(ctx.userProfilesDir(), report->comparison.calibration);
    if (!out.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(out.parent_path(), ec);
        if (auto w = writeFileAtomically(out, calibrationToJson(report->comparison.calibration)); !w) {
            ctx.fail(w.error());
            return;
        }
        std::cout << "\nSaved the calibration to " << out.string() << " (plans on this card use it with --calibration "
                  << out.string() << ")\n";
    }
}

} // namespace

void registerLogCommand(CLI::App& app, CliContext& ctx)
{
    auto o = std::make_shared<LogOptions>();
    CLI::App* cmd = app.add_subcommand(
        "log", "Read an engine's start-up log (vLLM, SGLang, TGI, TensorRT-LLM, llama.cpp, Ollama): predicted against measured per "
               "component, and a calibration for the card");
    cmd->add_option("file", o->file, "The log file, or - for standard input")->required();
    cmd->add_option("-m,--model", o->model, "The model the log ran (default: the one it names)");
    cmd->add_option("-w,--weights", o->weights, "Weight format (default: the model's own)");
    cmd->add_option("--kv-dtype", o->kvDtype, "KV dtype (default: fp16, fp8 when the log says kv_cache_dtype fp8)");
    cmd->add_option("-c,--card", o->card, "The card (default: the total the log prints)");
    cmd->add_option("--context", o->context, "Context per user for the calibrated what-fits (default: 4 x the log's)");
    cmd->add_option("--users", o->users, "Users for the calibrated what-fits (default 16)");
    cmd->add_option("--leave-free", o->leaveFree, "Memory to leave free when finding the largest memory fraction (default 2GiB)");
    cmd->add_flag("--save", o->save, "Save the calibration as a profile overlay in the user profiles folder (calibrations/CARD.ENGINE.json)");
    cmd->add_option("-o,--output", o->output, "Save the calibration to this file");
    cmd->callback([&ctx, o] { runLog(ctx, *o); });
}

} // namespace headroom::cli
