// headroom-cli log FILE|- : an engine's start-up log in, predicted against measured per
// component and a calibrated plan out (core/enginelog: parser and calibration; printed here).

#include "commands.h"
#include "planoptions.h"
#include "texttable.h"

#include "headroom/core/engines/settings.h"
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
    std::string engineVersion;
    std::optional<std::uint32_t> tp;
    std::optional<std::uint32_t> pp;
    std::vector<std::string> settings;
    double readTimeoutS = 30;
    std::string leaveFree = "2GiB";
    bool save = false;
    std::string output;
};

/// The log of @p file (core's reader: a regular file or a pipe, bounded), or standard input for
/// "-" (read as a pipe: to its end, bounded in size and in idle time).
tl::expected<std::string, std::string> readLog(const std::string& file, const EngineLogLimits& limits)
{
    auto text = file == "-" ? readEngineLogPipe(0, "standard input", limits) : readEngineLogFile(file, limits);
    if (!text)
        return tl::unexpected(text.error().message);
    return std::move(*text);
}

/// The header lines and the measured-terms table: what the log says by itself.
void printLogFacts(const std::vector<std::string>& headerLines, const std::vector<LogTermRow>& rows)
{
    for (const std::string& line : headerLines)
        std::cout << line << '\n';
    if (rows.empty())
        return;
    std::cout << "\nMeasured terms (as printed)\n";
    TextTable terms;
    terms.addColumn("term");
    terms.addColumn("device");
    terms.addColumn("value", TextTable::Align::Right);
    terms.addColumn("line", TextTable::Align::Right);
    for (const LogTermRow& t : rows)
        terms.addRow({t.term, t.where, t.value, t.line});
    terms.print(std::cout, "  ");
}

void printReport(const LogReport& r)
{
    printLogFacts(r.headerLines, r.terms);

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
    if (!r.comparison.saveRefusal.empty())
        std::cout << "  not saved by --save: " << r.comparison.saveRefusal << '\n';
    std::cout << '\n' << r.whatFits.heading << '\n';
    for (const std::string& line : r.whatFits.lines)
        std::cout << "  " << line << '\n';
}

void runLog(CliContext& ctx, const LogOptions& o)
{
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    EngineLogLimits limits;
    if (!(o.readTimeoutS > 0 && o.readTimeoutS <= 86400)) {
        ctx.fail("--read-timeout: expected seconds in (0, 86400]");
        return;
    }
    limits.pipeIdleTimeoutMs = static_cast<std::uint64_t>(o.readTimeoutS * 1000.0);
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
    options.engineVersion = o.engineVersion;
    options.tensorParallel = o.tp;
    options.pipelineParallel = o.pp;
    for (const std::string& arg : o.settings) {
        auto setting = parseSettingArgument(arg);
        if (!setting) {
            ctx.fail(setting.error());
            return;
        }
        options.settings.push_back(std::move(*setting));
    }
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
        std::cerr << "headroom-cli: " << safeText(o.file + ": " + w) << '\n';
    if (!report) {
        const LogReportError& e = report.error();
        // A log that was parsed but cannot be planned (no model named, an unknown card) still
        // shows what it says: the engine, the card, the settings and every measured term.
        if (!e.terms.empty() || !e.headerLines.empty())
            printLogFacts(e.headerLines, e.terms);
        else if (e.stage == LogReportError::Stage::Request)
            std::cout << e.summary << '\n';
        const bool namesFile = e.stage == LogReportError::Stage::Read || e.stage == LogReportError::Stage::Engine;
        ctx.fail(namesFile ? o.file + ": " + e.message : e.message);
        return;
    }
    printReport(*report);
    if (o.output.empty() && !o.save)
        return;
    auto saved = saveCalibration(report->comparison, ctx.userProfilesDir(), o.output);
    if (!saved) {
        ctx.fail(saved.error());
        return;
    }
    std::cout << "\nSaved the calibration to " << saved->string()
              << (o.output.empty() ? " (later plans on this card, engine and model use it; other models its model-independent terms)"
                                   : " (plans use it with --calibration " + saved->string() + ")")
              << '\n';
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
    cmd->add_option("--context", o->context,
                    "Context per user for the calibrated what-fits (default: 4 x the log's, at most the model's trained "
                    "context; the trained context when the log prints none)");
    cmd->add_option("--users", o->users, "Users for the calibrated what-fits (default 16)");
    cmd->add_option("--engine-version", o->engineVersion,
                    "The engine's version, when the log does not print it (its rules apply: 0.2.5, b4600)");
    cmd->add_option("--tp", o->tp, "Tensor parallel size, when the log does not print it (wins over the log's)")
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--pp", o->pp, "Pipeline parallel size, when the log does not print it")->check(CLI::Range(1, 4096));
    cmd->add_option("--set", o->settings,
                    "A setting the log does not print, KEY=VALUE in the engine's own spelling (tokens_per_block=64, "
                    "max-num-seqs=128; `headroom-cli engines` lists them); wins over the log's");
    cmd->add_option("--read-timeout", o->readTimeoutS,
                    "Seconds a pipe (-, <(cmd), a FIFO) may stay silent before the read stops (default 30); a pipe is read "
                    "to its end, at most 64 MiB");
    cmd->add_option("--leave-free", o->leaveFree, "Memory to leave free when finding the largest memory fraction (default 2GiB)")
        ->check(sizeValidator());
    cmd->add_flag("--save", o->save,
                  "Save the calibration as a profile overlay in the user profiles folder (calibrations/CARD.ENGINE.MODEL.json); "
                  "refused, keeping the saved one, when the analysis calibrated nothing");
    cmd->add_option("-o,--output", o->output, "Save the calibration to this file");
    cmd->callback([&ctx, o] { runLog(ctx, *o); });
}

} // namespace headroom::cli
