// headroom-cli plan | table | frontier: the memory bill and capacity of a model on a card.

#include "commands.h"
#include "planoptions.h"
#include "texttable.h"

#include "headroom/core/enginerules.h"
#include "headroom/core/planjson.h"
#include "headroom/core/speed/hostbandwidth.h"
#include "headroom/core/splitbill.h"

#include <algorithm>
#include <iostream>
#include <memory>

namespace headroom::cli {

namespace {

using Align = TextTable::Align;

std::string tokens(std::uint64_t n) { return formatThousands(n); }

std::string users(std::uint64_t n) { return formatThousands(n) + (n == 1 ? " user" : " users"); }

// The name people know a model by; the id (a path for an imported model) when it has none.
std::string modelName(const PlanRequest& r) { return r.model.name.empty() ? r.model.id : r.model.name; }

// The bill's table: a term's name, its bytes, the same in GiB/MiB, and how it is sized.
TextTable memoryTable()
{
    TextTable t;
    t.addColumn("memory");
    t.addColumn("bytes", Align::Right);
    t.addColumn("size", Align::Right);
    t.addColumn("how");
    return t;
}

// One term of memoryTable(): @p b in bytes (with thousands separators) and formatted.
void addMemoryRow(TextTable& t, const std::string& name, Bytes b, const std::string& how)
{
    t.addRow({name, formatThousands(b.value), formatBytes(b), how});
}

void printBill(const PlanResult& p, std::ostream& out)
{
    TextTable t = memoryTable();
    const auto row = [&](const std::string& name, Bytes b, const std::string& how) { addMemoryRow(t, name, b, how); };
    row("card total", p.cardTotalBytes, "driver-reported total");
    for (const OverheadItem& r : p.reserved)
        row("- " + r.name, r.bytes, r.note);
    row("= usable", p.usableBytes, "");
    row("  weights", p.weightsBytes, p.formatId + (p.weightsExact ? " (exact, from the files)" : ""));
    for (const OverheadItem& o : p.overheads)
        row("  " + o.name, o.bytes, o.note);
    row("  KV cache budget", p.kvBudgetBytes, formatThousands(p.kvBytesPerToken.value) + " B/token");
    t.print(out, "  ");
}

// A layer split (splitbill.h, core's one list of terms): the GPU's side, then the host's, each
// with its own total; the card's KV budget does not apply to it (the weights do not fit whole).
// Ollama prints no per-device buffers: its GPU side is the plan's own bill, printed before.
void printSplitBill(const PlanResult& p, const SplitBill& split, std::ostream& out)
{
    TextTable t = memoryTable();
    const auto row = [&](const std::string& name, Bytes b, const std::string& how) { addMemoryRow(t, name, b, how); };
    const std::string layers = formatThousands(split.gpuLayers) + " of " + formatThousands(split.totalLayers) + " layers";
    if (!split.gpu.empty()) {
        t.addRow({"GPU side", "", "", layers + " on the GPU (-ngl " + std::to_string(split.gpuLayers) + ")"});
        row("card total", p.cardTotalBytes, "driver-reported total");
        for (const OverheadItem& r : p.reserved)
            row("- " + r.name, r.bytes, r.note);
        row("= usable", p.usableBytes, "");
        for (const SplitBillItem& i : split.gpu)
            row("  " + i.label, i.bytes, i.note);
        row("= on the GPU", split.gpuBytes(), "of the usable " + formatBytes(p.usableBytes));
    }
    t.addRow({"host side", "", "",
              split.hostOnly ? "no GPU: all " + formatThousands(split.totalLayers) + " layers on the CPU, in host memory (RAM)"
                             : (split.gpu.empty() ? layers + " on the GPU, the rest in host memory" : "host memory (RAM)")});
    for (const SplitBillItem& i : split.host)
        row("  " + i.label, i.bytes, i.note);
    row("= in host memory", split.hostBytes(), "what --host-ram is checked against");
    t.print(out, "  ");
    for (const std::string& line : wrapText(split.hostWeightsNote, 96)) // at most 100 columns, as the plan
        out << "  " << line << '\n';
}

void printPlan(const PlanResult& p, const PlanRequest& r, std::ostream& out)
{
    out << "Model     " << r.model.id << (r.model.name.empty() || r.model.name == r.model.id ? "" : " (" + r.model.name + ")")
        << ", " << formatCount(p.parameters) << " parameters (" << p.parametersSource << ")\n";
    out << "Weights   " << p.formatId << ", " << formatBytes(p.weightsBytes)
        << (p.tensorParallel * p.pipelineParallel > 1 ? " per device" : "") << '\n';
    out << "KV cache  " << p.kvDtypeId << ", " << formatThousands(p.kvBytesPerToken.value) << " B/token (kv_bytes_per_token)";
    if (p.kv.slidingLayers > 0)
        out << ", " << p.kv.slidingLayers << " sliding layers capped at " << formatThousands(p.kv.windowTokens) << " tokens";
    out << '\n';
    if (p.hostOnly)
        out << "Card      " << p.cardId << " (" << r.card.name << "), " << hostBandwidthText(r.hostBandwidthGBps)
            << (r.hostMemoryBytes ? ", " + formatBytes(*r.hostMemoryBytes) + " RAM (--host-ram)" : ", RAM not checked (--host-ram)")
            << '\n';
    else
        out << "Card      " << p.cardId << (r.card.name.empty() || r.card.anonymous ? "" : " (" + r.card.name + ")") << ", "
            << formatBytes(p.cardTotalBytes) << " total\n";
    out << "Engine    " << r.engine.name << " " << p.engineVersion
        << (p.tensorParallel > 1 ? ", TP " + std::to_string(p.tensorParallel) : "")
        << (p.pipelineParallel > 1 ? ", PP " + std::to_string(p.pipelineParallel) : "") << '\n';
    if (!p.engineSettings.empty()) {
        std::string settings;
        for (std::size_t i = 0; i < p.engineSettings.size(); ++i)
            settings += (i ? " " : "") + p.engineSettings[i].key + '=' + p.engineSettings[i].text
                + (p.engineSettings[i].given ? "" : "*");
        // At most 100 columns a line, as the rest of the plan.
        const std::vector<std::string> lines = wrapText(settings, 90);
        for (std::size_t i = 0; i < lines.size(); ++i)
            out << (i ? "          " : "Settings  ") << lines[i] << '\n';
        out << "          (* the version's default or derived from the options)\n";
    }
    out << '\n';
    const Verdict& v = p.verdict;
    if (v.engineCannotRun()) {
        // The engine never starts on this request (verdict.h): no bill and no capacity of it exist.
        TextTable answer;
        answer.addColumn("answer");
        answer.addColumn("value", Align::Right);
        answer.addRow({"asked", users(p.users) + " x " + tokens(p.contextTokens) + " tokens"});
        answer.addRow({"verdict", fitStateLabel(v.state)});
        answer.addRow({"why", fitLimitLabel(v.limit)});
        answer.print(out, "  ");
        out << "  " << v.reason << '\n';
        if (v.limit == FitLimit::EngineNeedsGpu)
            out << "  " << r.engine.name << " is not planned without a GPU: no bill of it exists on --card " << p.cardId << '\n';
        else
            out << "  " << r.engine.name << " cannot load "
                << (v.limit == FitLimit::EngineFormat ? p.formatId + " weights" : "a " + p.kvDtypeId + " KV cache")
                << ": it stops at start-up, before printing its buffers\n";
        for (const std::string& w : r.model.warnings)
            out << "  warning: " << w << '\n';
        return;
    }
    const SplitBill split = splitBill(p);
    if ((!split.partial || split.gpu.empty()) && !split.hostOnly)
        printBill(p, out);
    if (split.partial)
        printSplitBill(p, split, out);
    out << '\n';
    TextTable cap;
    cap.addColumn("capacity");
    cap.addColumn("value", Align::Right);
    cap.addRow({"max resident tokens", tokens(p.maxResidentTokens)});
    if (p.kvBlocks > 0 && p.paging.blockTokens > 1)
        cap.addRow({"KV blocks of " + std::to_string(p.paging.blockTokens) + " tokens", tokens(p.kvBlocks)});
    if (p.maxContext)
        cap.addRow({"max context for " + users(p.users), tokens(*p.maxContext)});
    if (p.maxUsers)
        cap.addRow({"max users at " + tokens(p.contextTokens) + " tokens", tokens(*p.maxUsers)});
    if (p.maxConcurrency)
        cap.addRow({"vLLM maximum concurrency at " + tokens(p.contextTokens), formatConcurrency(*p.maxConcurrency)});
    if (p.modelContextTokens > 0)
        cap.addRow({"model's trained context", tokens(p.modelContextTokens)});
    cap.addRow({"asked", users(p.users) + " x " + tokens(p.contextTokens) + " tokens"});
    cap.addRow({"verdict", verdictLabel(p)});
    // A partial plan's placement, as the app's indicator shows it: partial, or the CPU alone.
    if (v.state == FitState::PartialOffload)
        cap.addRow({"placement", placementLabel(placementOf(p))});
    if (v.limit != FitLimit::None)
        cap.addRow({v.state == FitState::DoesNotFit ? "why" : "binding limit", fitLimitLabel(v.limit)});
    if (v.loads())
        cap.addRow({headlineCaption(v.headline), formatThousands(v.headline.value)});
    cap.print(out, "  ");
    out << "  " << v.reason << '\n';
    for (const EngineFigure& f : p.engineFigures)
        if (!f.printed.empty()) // the split's speed inputs are figures the engine does not print
            out << "  " << r.engine.name << " would print: " << f.printed << '\n';
    for (const std::string& n : p.notes)
        out << "  note: " << n << '\n';
    for (const std::string& w : r.model.warnings)
        out << "  warning: " << w << '\n';
}

// The caption from the question (the request), never from a cell.
std::string tableCaption(const std::vector<PlanRequest>& reqs, const std::vector<PlanResult>& plans)
{
    const PlanRequest& r = reqs.front();
    const Headline& h = plans.front().verdict.headline;
    std::string caption = headlineCaption(h);
    if (h.kind == HeadlineKind::MaxContextPerUser) {
        bool capped = false;
        for (const PlanResult& p : plans)
            capped = capped || p.contextTokens != h.contextTokens;
        caption += ", asked " + tokens(h.contextTokens) + " tokens each" + (capped ? " (or the model's trained context)" : "");
    }
    bool split = false;
    bool cpu = false;
    for (const PlanResult& p : plans) {
        split = split || (p.verdict.state == FitState::PartialOffload && !p.hostOnly);
        cpu = cpu || (p.verdict.state == FitState::PartialOffload && p.hostOnly);
    }
    return caption + ", " + plans.front().kvDtypeId + " KV, " + r.engine.name
        + ". A number alone fits as asked; \"N (limit)\" fits with less, the limit named; "
        + (split ? "\"N (partial: G/T layers, X RAM)\" loads with G of T layers on the GPU and X in host memory; " : "")
        + (cpu ? "\"N (CPU only: X RAM)\" runs on the host alone with X in host memory; " : "")
        + "\"no: why\" does not fit.";
}

/// A saved calibration changes the plans it applies to: each one is named once (the plan's notes
/// say the same; MeasuredOverheads::source is the sentence the core wrote).
void printCalibrationSources(const std::vector<PlanRequest>& reqs, std::ostream& out)
{
    std::vector<std::string> sources;
    for (const PlanRequest& r : reqs)
        if (!r.measured.source.empty() && std::find(sources.begin(), sources.end(), r.measured.source) == sources.end())
            sources.push_back(r.measured.source);
    for (const std::string& s : sources)
        out << "  " << s << '\n';
}

void printTable(const std::vector<PlanResult>& plans, const std::vector<PlanRequest>& reqs, std::ostream& out)
{
    std::vector<std::string> cards;
    for (const PlanResult& p : plans)
        if (std::find(cards.begin(), cards.end(), p.cardId) == cards.end())
            cards.push_back(p.cardId);
    TextTable t;
    t.addColumn("model");
    t.addColumn("weights");
    t.addColumn("weights size", Align::Right);
    for (const std::string& c : cards)
        t.addColumn(c, Align::Right);
    for (std::size_t i = 0; i < plans.size(); i += cards.size()) {
        std::vector<std::string> row{modelName(reqs[i]), plans[i].formatId, formatBytes(plans[i].weightsBytes)};
        for (std::size_t k = 0; k < cards.size() && i + k < plans.size(); ++k)
            row.push_back(verdictCellText(plans[i + k].verdict));
        t.addRow(row);
    }
    out << "What fits: " << tableCaption(reqs, plans) << "\n\n";
    t.print(out);
    out << '\n';
    for (const std::string& c : cards) {
        for (const PlanRequest& r : reqs)
            if (r.card.id == c) {
                if (r.card.hostOnly)
                    out << "  " << c << ": " << r.card.name << ", " << hostBandwidthText(r.hostBandwidthGBps)
                        << (r.hostMemoryBytes ? ", " + formatBytes(*r.hostMemoryBytes) + " RAM (--host-ram)" : "") << '\n';
                else
                    out << "  " << c << ": " << (r.card.anonymous ? "anonymous card" : r.card.name) << ", "
                        << formatBytes(r.card.totalBytes) << " driver total\n";
                break;
            }
    }
    printCalibrationSources(reqs, out);
}

void printFrontier(const std::vector<PlanResult>& plans, const std::vector<PlanRequest>& reqs, std::ostream& out)
{
    for (const PlanResult& p : plans) {
        out << p.modelId << " " << p.formatId << " on " << p.cardId << ": " << formatThousands(p.maxResidentTokens)
            << " resident tokens (" << fitStateLabel(p.verdict.state) << ")\n";
        // Recurrent layers (SSM, linear attention) keep a fixed state per sequence (KvLayout,
        // computed in core): the frontier says so and shows it growing with users, not context.
        const Bytes state = p.kv.stateBytesPerSequence;
        const bool recurrent = p.kv.recurrentLayers > 0 && state.value > 0;
        TextTable t;
        t.addColumn("users", Align::Right);
        t.addColumn("max context", Align::Right);
        t.addColumn("resident tokens", Align::Right);
        if (recurrent)
            t.addColumn("recurrent state", Align::Right);
        for (const FrontierPoint& f : p.frontier) {
            std::vector<std::string> row{tokens(f.users), tokens(f.contextTokens), tokens(f.users * f.contextTokens)};
            if (recurrent)
                row.push_back(formatBytes(Bytes{f.users * state.value}));
            t.addRow(row);
        }
        if (recurrent && p.verdict.loads())
            out << "  " << p.kv.recurrentLayers << " recurrent layers keep " << formatBytes(state)
                << " of state per user, whatever the context\n";
        if (p.frontier.empty() || !p.verdict.loads())
            out << "  " << p.verdict.reason << '\n';
        else
            t.print(out, "  ");
        out << '\n';
    }
    printCalibrationSources(reqs, out);
}

enum class Kind { Plan, Table, Frontier };

void run(Kind kind, const PlanOptions& o, CliContext& ctx)
{
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    PlanOptions opts = o;
    if (kind == Kind::Table)
        applyMatrixDefaults(opts);
    auto requests = buildRequests(opts, *profiles, &ctx.calibrations());
    if (!requests)
        return ctx.fail(requests.error());
    auto plans = runPlans(*requests);
    if (!plans)
        return ctx.fail(plans.error());
    bool allFit = true;
    for (const PlanResult& p : *plans)
        allFit = allFit && p.verdict.fits();
    ctx.answered(allFit);
    if (opts.json) {
        std::cout << (kind == Kind::Plan ? planToJson(plans->front()) : plansToJson(*plans)) << '\n';
        return;
    }
    switch (kind) {
    case Kind::Plan:
        printPlan(plans->front(), requests->front(), std::cout);
        break;
    case Kind::Table:
        printTable(*plans, *requests, std::cout);
        break;
    case Kind::Frontier:
        printFrontier(*plans, *requests, std::cout);
        break;
    }
}

void registerKind(CLI::App& app, CliContext& ctx, Kind kind, const std::string& name, const std::string& help, bool multi)
{
    auto opts = std::make_shared<PlanOptions>();
    CLI::App* cmd = app.add_subcommand(name, help);
    addPlanOptions(cmd, *opts, multi);
    addCheckFlag(cmd, ctx);
    cmd->callback([opts, &ctx, kind] { run(kind, *opts, ctx); });
}

} // namespace

void registerPlanCommand(CLI::App& app, CliContext& ctx)
{
    registerKind(app, ctx, Kind::Plan, "plan", "The memory bill and capacity of one model on one card", false);
}

void registerTableCommand(CLI::App& app, CliContext& ctx)
{
    registerKind(app, ctx, Kind::Table, "table",
                 "The what-fits matrix: models x formats against cards (default: " + std::string(kDefaultModel) + " "
                     + kDefaultFormat + " on the 8/16/24 GB cards)",
                 true);
}

void registerFrontierCommand(CLI::App& app, CliContext& ctx)
{
    registerKind(app, ctx, Kind::Frontier, "frontier", "The context x concurrency frontier per card", true);
}

} // namespace headroom::cli
