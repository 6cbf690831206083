// headroom-cli log FILE|- : an engine's start-up log in, predicted against measured per
// component and a calibrated plan out (core/enginelog: parser and calibration; printed here).

#include "commands.h"
#include "texttable.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/enginelog/calibration.h"
#include "headroom/core/enginelog/enginelog.h"
#include "headroom/core/enginerules.h"
#include "headroom/core/profiles.h"
#include "headroom/core/resolve.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

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

tl::expected<std::string, std::string> readLog(const std::string& file, std::uint64_t maxBytes)
{
    std::string text;
    auto readFrom = [&](std::istream& in) {
        char buf[65536];
        while (in && text.size() <= maxBytes) {
            in.read(buf, sizeof buf);
            text.append(buf, static_cast<std::size_t>(in.gcount()));
        }
    };
    if (file == "-") {
        readFrom(std::cin);
    } else {
        std::ifstream in(file, std::ios::binary);
        if (!in)
            return tl::unexpected("cannot read " + file + ": no such file or not readable");
        readFrom(in);
    }
    return text;
}

std::string gib(double bytes)
{
    char b[64];
    std::snprintf(b, sizeof b, "%.2f GiB", bytes / 1073741824.0);
    return b;
}

std::string signedDiff(const ComponentComparison& c)
{
    if (!c.predicted || !c.measured)
        return "";
    const double d = static_cast<double>(c.predicted->value) - static_cast<double>(c.measured->value);
    char b[64];
    std::snprintf(b, sizeof b, "%+.2f GiB", d / 1073741824.0);
    return b;
}

std::string figureLabel(const std::string& name)
{
    if (name == "kv_cache_tokens")
        return "GPU KV cache size (tokens)";
    if (name == "num_gpu_blocks")
        return "# GPU blocks";
    if (name == "max_total_num_tokens")
        return "max_total_num_tokens";
    if (name == "max_batch_total_tokens")
        return "max batch total tokens";
    if (name == "max_kv_tokens")
        return "tokens in paged KV cache";
    if (name == "kv_blocks")
        return "KV cache blocks";
    if (name == "available_kv_cache")
        return "available KV cache (bytes)";
    return name;
}

/// The engine's name for its memory fraction.
std::string fractionFlag(EngineKind k)
{
    switch (k) {
    case EngineKind::Vllm: return "--gpu-memory-utilization";
    case EngineKind::SgLang: return "--mem-fraction-static";
    case EngineKind::Tgi: return "--cuda-memory-fraction";
    case EngineKind::TensorRtLlm: return "free_gpu_memory_fraction";
    default: return "";
    }
}

tl::expected<PlanRequest, std::string> requestFor(const EngineLog& log, const LogOptions& o, const ProfileSet& profiles)
{
    PlanRequest r;
    const auto engine = resolveEngine(engineProfileId(log), profiles);
    if (!engine)
        return tl::unexpected(log.engine.empty() ? "the log is from no engine headroom knows: " + log.summary() : engine.error());
    r.engine = *engine;
    std::string modelArg = o.model;
    if (modelArg.empty()) {
        if (auto it = log.settings.find("model"); it != log.settings.end())
            modelArg = it->second;
        else
            return tl::unexpected(std::string("the log names no model: give it with -m (a profile id, a path, or ORG/NAME)"));
    }
    auto model = resolveModel(modelArg, profiles);
    if (!model)
        return tl::unexpected(model.error() + (o.model.empty() ? " (the model the log names; give another with -m)" : ""));
    r.model = *model;
    auto format = resolveFormat(o.weights, r.model);
    if (!format)
        return tl::unexpected(format.error());
    r.format = *format;
    std::string kv = o.kvDtype;
    if (kv.empty())
        if (auto it = log.settings.find("kv-cache-dtype"); it != log.settings.end() && it->second.starts_with("fp8"))
            kv = "fp8";
    auto kvDtype = resolveKvDtype(kv);
    if (!kvDtype)
        return tl::unexpected(kvDtype.error());
    r.kvDtype = *kvDtype;
    if (!o.card.empty()) {
        auto card = resolveCard(o.card, profiles);
        if (!card)
            return tl::unexpected(card.error());
        r.card = *card;
    } else if (log.cardTotalBytes) {
        r.card = anonymousCard(formatBytes(*log.cardTotalBytes), *log.cardTotalBytes);
    } else {
        return tl::unexpected(std::string("the log prints no card total: give the card with -c (a profile id or a size)"));
    }
    applyLogSettings(log, r);
    return r;
}

void printText(const EngineLog& log, const LogComparison& cmp, const LogOptions& o, const PlanRequest& request)
{
    std::cout << log.summary() << '\n';
    if (log.cardTotalBytes)
        std::cout << "Card      " << formatBytes(*log.cardTotalBytes) << " total"
                  << (log.cardFreeBytes ? ", " + formatBytes(*log.cardFreeBytes) + " free at start" : std::string()) << '\n';
    if (!log.settings.empty()) {
        std::cout << "Settings ";
        for (const auto& [k, v] : log.settings)
            std::cout << ' ' << k << '=' << v;
        std::cout << '\n';
    }
    std::cout << "\nMeasured terms (as printed)\n";
    TextTable terms;
    terms.addColumn("term");
    terms.addColumn("device");
    terms.addColumn("value", TextTable::Align::Right);
    terms.addColumn("line", TextTable::Align::Right);
    for (const LogTerm& t : log.terms)
        terms.addRow({t.name, t.device.empty() ? t.rank : t.device, t.printed, std::to_string(t.line)});
    terms.print(std::cout, "  ");

    std::cout << "\nPredicted against measured (the plan for these settings: " << request.model.name << ", "
              << request.format.id << " weights, " << request.kvDtype.id << " KV, " << request.engine.name << ")\n";
    TextTable t;
    t.addColumn("component");
    t.addColumn("predicted", TextTable::Align::Right);
    t.addColumn("measured", TextTable::Align::Right);
    t.addColumn("plan - log", TextTable::Align::Right);
    t.addColumn("how");
    for (const ComponentComparison& c : cmp.components)
        t.addRow({c.component, c.predicted ? gib(static_cast<double>(c.predicted->value)) : "-",
                  c.measured ? gib(static_cast<double>(c.measured->value)) : "-", signedDiff(c), c.how});
    t.print(std::cout, "  ");
    if (cmp.kvFigure) {
        const KvFigureComparison& f = *cmp.kvFigure;
        const double err = f.printed ? (static_cast<double>(f.predicted) - static_cast<double>(f.printed)) / static_cast<double>(f.printed) * 100.0 : 0;
        char e[32];
        std::snprintf(e, sizeof e, "%+.1f %%", err);
        std::cout << "  " << figureLabel(f.name) << ": the log " << formatThousands(f.printed) << ", the plan "
                  << formatThousands(f.predicted) << " (" << e << "), calibrated " << formatThousands(f.calibrated)
                  << (f.calibrated == f.printed ? " (exact)" : "") << '\n';
    }
    for (const std::string& n : cmp.notes)
        std::cout << "  note: " << n << '\n';

    const LogCalibration& cal = cmp.calibration;
    std::cout << "\nCalibration " << cal.name() << '\n';
    if (cal.measured.activationPeakBytes)
        std::cout << "  activation peak " << formatBytes(*cal.measured.activationPeakBytes) << " at a micro-batch of "
                  << formatThousands(cal.ubatchTokens) << " tokens\n";
    if (cal.measured.runtimeBytes)
        std::cout << "  runtime " << formatBytes(*cal.measured.runtimeBytes) << '\n';

    // Calibrated answers for other settings.
    const std::uint64_t ctx = o.context.value_or(std::max<std::uint64_t>(cmp.calibrated.contextTokens * 4, 4096));
    const std::uint64_t users = o.users.value_or(16);
    std::cout << "\nCalibrated what fits on this card\n";
    if (auto at = calibratedAt(request, cal, ctx, users)) {
        std::cout << "  at context " << formatThousands(ctx) << " and " << users << " users: ";
        if (at->kvBlocks > 0)
            std::cout << formatThousands(at->kvBlocks) << " blocks (" << formatThousands(at->kvBlocks * at->paging.blockTokens)
                      << " tokens), ";
        else
            std::cout << formatThousands(at->maxResidentTokens) << " tokens, ";
        std::cout << "room for " << (at->maxUsers ? formatThousands(*at->maxUsers) : std::string("-")) << " users of "
                  << formatThousands(ctx) << " tokens: " << at->verdict.reason << '\n';
    } else {
        std::cout << "  " << at.error() << '\n';
    }
    const std::string flag = fractionFlag(request.engine.kind);
    if (auto free = parseSize(o.leaveFree); free && !flag.empty()) {
        if (auto f = largestFractionLeaving(request, *free)) {
            PlanRequest r = request;
            r.engine.memoryFraction = *f;
            char b[16];
            std::snprintf(b, sizeof b, "%.2f", *f);
            std::cout << "  the largest " << flag << " that leaves " << formatBytes(*free) << " free: " << b;
            if (auto p = makeCalibratedPlan(r, cal); p)
                std::cout << " (" << formatThousands(p->kvBlocks ? p->kvBlocks * p->paging.blockTokens : p->maxResidentTokens)
                          << " tokens of KV)";
            std::cout << '\n';
        }
    }
    if (auto s = settingForUsers(request, cal, users, ctx); s && !flag.empty()) {
        std::cout << "  to hold " << users << " users of " << formatThousands(ctx) << " tokens: a KV pool of "
                  << formatThousands(s->kvCacheBytes.value) << " bytes (" << formatBytes(s->kvCacheBytes) << ")";
        if (request.engine.kind == EngineKind::Vllm)
            std::cout << ", --kv-cache-memory " << s->kvCacheBytes.value;
        if (s->possible) {
            char b[16];
            std::snprintf(b, sizeof b, "%.2f", s->memoryFraction);
            std::cout << ", or " << flag << ' ' << b << '\n';
        } else {
            std::cout << ": more than this card holds at any " << flag << '\n';
        }
    }
}

void runLog(CliContext& ctx, const LogOptions& o)
{
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    const EngineLogLimits limits;
    auto text = readLog(o.file, limits.maxBytes);
    if (!text) {
        ctx.fail(text.error());
        return;
    }
    auto log = parseEngineLog(*text, limits);
    if (!log) {
        ctx.fail(o.file + ": " + log.error().message);
        return;
    }
    for (const std::string& w : log->warnings)
        std::cerr << "headroom-cli: " << o.file << ": " << w << '\n';
    if (log->engine.empty()) {
        ctx.fail(o.file + ": " + log->summary() +
                 " Expected the start-up lines of vLLM, SGLang, TGI, TensorRT-LLM, llama.cpp or Ollama.");
        return;
    }
    auto request = requestFor(*log, o, *profiles);
    if (!request) {
        std::cout << log->summary() << '\n';
        ctx.fail(request.error());
        return;
    }
    const std::string name = o.file == "-" ? "stdin" : std::filesystem::path(o.file).filename().string();
    auto cmp = compareWithLog(*log, *request, name, *text);
    if (!cmp) {
        ctx.fail(cmp.error());
        return;
    }
    printText(*log, *cmp, o, *request);
    std::filesystem::path out;
    if (!o.output.empty())
        out = o.output;
    else if (o.save)
        out = calibrationPath(ctx.userProfilesOverride.empty() ? defaultUserProfilesDir() : std::filesystem::path(ctx.userProfilesOverride),
                              cmp->calibration);
    if (!out.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(out.parent_path(), ec);
        if (auto w = writeFileAtomically(out, calibrationToJson(cmp->calibration)); !w) {
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
