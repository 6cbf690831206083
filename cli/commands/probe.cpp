// headroom-cli probe: run the on-device probes (device, allocation, limit, timing, quant-error)
// for one model configuration; and the hidden probe-worker that runs the limit search of a CUDA
// device in a fresh process (a CUDA context does not survive fork()).

#include "commands.h"
#include "planoptions.h"
#include "texttable.h"

#include "headroom/core/resolve.h"

#ifdef HEADROOM_WITH_PROBES
#include "headroom/probes/probes.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <map>
#include <chrono>
#include <csignal>
#include <cstdio>
#endif

#include <iostream>
#include <memory>
#include <optional>

namespace headroom::cli {

#ifdef HEADROOM_WITH_PROBES

namespace {

using namespace headroom::probes;

struct ProbeOptions {
    std::string device = "cpu";
    std::string budget;
    std::string model;
    std::string weights;
    std::string kvDtype = "fp16";
    std::optional<std::uint64_t> context;
    std::optional<std::uint64_t> users;
    std::string probes = "all";
    std::size_t frontierPoints = 0;
    std::uint32_t stepLayers = 0;
    bool json = false;
};

std::atomic<bool> g_interrupted{false};

extern "C" void onInterrupt(int)
{
    g_interrupted.store(true);
}

/// Progress on stderr: on a terminal a bar redrawn at most every 100 ms; otherwise one line per
/// stage that changed, at most one a second (with the elapsed seconds), so that logs show where
/// the time went. Ctrl-C cancels the running probe (it stops within a second) and then the run.
class TerminalProgress final : public ProbeProgress {
public:
    TerminalProgress() : m_tty(::isatty(STDERR_FILENO) == 1), m_start(std::chrono::steady_clock::now()) {}
    ~TerminalProgress() override { finish(); }

    void report(double fraction, std::string_view stage) override
    {
        const auto now = std::chrono::steady_clock::now();
        if (!m_tty) {
            if (stage == m_lastStage || (now - m_last < std::chrono::seconds(1) && fraction < 1.0))
                return;
            m_last = now;
            m_lastStage = std::string(stage);
            std::fprintf(stderr, "probe: %5.1f s %3d%% %s\n", std::chrono::duration<double>(now - m_start).count(),
                         static_cast<int>(fraction * 100 + 0.5), m_lastStage.c_str());
            std::fflush(stderr);
            return;
        }
        if (now - m_last < std::chrono::milliseconds(100) && fraction < 1.0)
            return;
        m_last = now;
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(fraction * kWidth + 0.5);
        std::string bar(static_cast<std::size_t>(std::clamp(filled, 0, kWidth)), '#');
        bar.resize(kWidth, ' ');
        std::string text(stage.substr(0, 60));
        std::fprintf(stderr, "\r[%s] %3d%% %-60s", bar.c_str(), static_cast<int>(fraction * 100 + 0.5), text.c_str());
        std::fflush(stderr);
        m_drawn = true;
    }
    bool cancelled() const override { return g_interrupted.load(); }

    void finish()
    {
        if (m_drawn) {
            std::fprintf(stderr, "\r%*s\r", 100, "");
            std::fflush(stderr);
            m_drawn = false;
        }
    }

private:
    bool m_tty;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start;
    std::chrono::steady_clock::time_point m_last{};
    std::string m_lastStage;
};

/// A JSON value as one table cell.
std::string cell(const nlohmann::json& v)
{
    if (v.is_number_unsigned())
        return formatThousands(v.get<std::uint64_t>());
    if (v.is_number_float()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
        return buf;
    }
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_boolean())
        return v.get<bool>() ? "yes" : "no";
    return v.dump();
}

std::string valueText(const ProbeValue& value)
{
    if (const auto* u = std::get_if<std::uint64_t>(&value))
        return formatThousands(*u);
    if (const auto* i = std::get_if<std::int64_t>(&value))
        return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&value)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.4g", *d);
        return buf;
    }
    if (const auto* b = std::get_if<bool>(&value))
        return *b ? "yes" : "no";
    if (const auto* s = std::get_if<std::string>(&value))
        return *s;
    return std::get<RawJson>(value).text;
}

/// The verdict as the table shows it: PASS, FAIL, NOT SUPPORTED, CANCELLED, MEASURED.
std::string verdictText(ProbeVerdict verdict)
{
    std::string text = probeVerdictName(verdict);
    for (char& c : text)
        c = c == '-' ? ' ' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
}

void printReport(const ProbeReport& report, const ModelInputs& inputs, std::ostream& out)
{
    const DeviceSummary& d = report.device;
    out << "Device    " << d.spec << (d.name.empty() ? "" : ": " + d.name);
    if (d.error.empty())
        out << ", " << formatBytes(Bytes{d.totalBytes}) << " total, " << formatBytes(Bytes{d.freeBytes}) << " free";
    if (d.budgetBytes)
        out << ", budget " << formatBytes(Bytes{*d.budgetBytes});
    out << '\n';
    if (!d.error.empty())
        out << "          " << d.error << '\n';
    out << "Model     " << inputs.model.id << ", " << inputs.format.id << " weights, " << inputs.kvDtype.id << " KV\n\n";

    TextTable t;
    t.addColumn("probe");
    t.addColumn("result");
    t.addColumn("summary");
    for (const ProbeResult& r : report.results)
        t.addRow({r.probe, verdictText(r.verdict()), r.summary});
    t.print(out, "  ");

    for (const ProbeResult& r : report.results) {
        out << "\n" << r.probe << ":\n";
        TextTable values;
        values.addColumn("value");
        values.addColumn("", TextTable::Align::Right);
        std::vector<std::pair<std::string, nlohmann::json>> tables;
        for (const auto& [key, value] : r.values) {
            if (const auto* raw = std::get_if<RawJson>(&value)) {
                nlohmann::json j = nlohmann::json::parse(raw->text, nullptr, false);
                if (j.is_array() && !j.empty() && j[0].is_object()) {
                    tables.emplace_back(key, j);
                    continue;
                }
            }
            values.addRow({key, valueText(value)});
        }
        values.print(out, "  ");
        for (const auto& [key, rows] : tables) {
            out << "  " << key << ":\n";
            TextTable table;
            std::vector<std::string> columns;
            for (const nlohmann::json& row : rows)
                for (const auto& item : row.items())
                    if (std::find(columns.begin(), columns.end(), item.key()) == columns.end())
                        columns.push_back(item.key());
            for (const std::string& c : columns)
                table.addColumn(c, c == "error" || c == "format" ? TextTable::Align::Left : TextTable::Align::Right);
            for (const nlohmann::json& row : rows) {
                std::vector<std::string> cells;
                for (const std::string& c : columns)
                    cells.push_back(row.contains(c) ? cell(row[c]) : "");
                table.addRow(cells);
            }
            table.print(out, "    ");
        }
        for (const std::string& n : r.notes)
            out << "  note: " << n << '\n';
    }
    std::map<ProbeVerdict, int> counts;
    for (const ProbeResult& r : report.results)
        ++counts[r.verdict()];
    out << '\n';
    const char* sep = "";
    for (const auto& [verdict, n] : counts) {
        out << sep << n << ' ' << probeVerdictName(verdict);
        sep = ", ";
    }
    out << (report.allPassed() ? " (no probe failed)" : " (a probe failed)") << '\n';
}

void runProbeCommand(const ProbeOptions& o, CliContext& ctx)
{
    const auto device = parseDeviceSpec(o.device);
    if (!device) {
        ctx.fail("--device: expected cpu or cuda:N, got '" + o.device + "' (see headroom-cli probe --help)");
        return;
    }
    ProbeRequest request;
    request.device = *device;
    if (!o.budget.empty())
        request.budget = parseSize(o.budget);
    auto probes = parseProbeList(o.probes);
    if (!probes) {
        ctx.fail("--probes: " + probes.error() + " (see headroom-cli probe --help)");
        return;
    }
    request.probes = *probes;
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    // The same defaults as plan and the app: the default model, its files' format else
    // kDefaultWeightFormat, and the question defaults of verdict.h (4 users x 8,192 tokens).
    const std::string modelArg = o.model.empty() ? std::string(kDefaultModel) : o.model;
    auto model = resolveModel(modelArg, *profiles);
    if (!model) {
        ctx.fail(model.error());
        return;
    }
    auto format = resolveFormat(o.weights.empty() && !model->exactWeights ? std::string(kDefaultFormat) : o.weights, *model);
    if (!format) {
        ctx.fail(format.error());
        return;
    }
    auto kv = resolveKvDtype(o.kvDtype);
    if (!kv) {
        ctx.fail(kv.error());
        return;
    }
    request.model.model = *model;
    request.model.format = *format;
    request.model.kvDtype = *kv;
    PlanRequest question;
    question.model = *model;
    question.users = o.users;
    question.contextTokens = o.context;
    question = withQuestionDefaults(std::move(question));
    request.model.contextTokens = question.contextTokens.value_or(0);
    request.model.users = question.users.value_or(1);
    // A .gguf model with tensor data gives the quant-error probe real weights too.
    if (modelArg.size() > 5 && modelArg.ends_with(".gguf"))
        request.quantOptions.ggufPath = modelArg;

    // The limit search runs in a child: fork() on the CPU, a fresh headroom-cli probe-worker for
    // CUDA (and for the CUDA context overhead measured by the device probe).
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    Isolation isolation;
    if (device->kind == DeviceKind::Cuda && !ec) {
        isolation.mode = Isolation::Mode::Exec;
        isolation.workerCommand = {self.string(), "probe-worker"};
    }
    request.limitOptions.isolation = isolation;
    request.limitOptions.maxFrontierPoints = o.frontierPoints;
    request.limitOptions.stepLayers = o.stepLayers;
    request.deviceOptions.isolation = isolation;
    if (device->kind == DeviceKind::Cpu)
        request.timingOptions = cpuTimingDefaults();

    g_interrupted.store(false);
    auto previous = std::signal(SIGINT, onInterrupt);
    TerminalProgress progress;
    const ProbeReport report = runProbes(request, progress);
    progress.finish();
    std::signal(SIGINT, previous);

    if (o.json)
        std::cout << probeResultsToJson(report.device, report.results) << '\n';
    else
        printReport(report, request.model, std::cout);
    if (!report.device.error.empty())
        std::cerr << "headroom-cli: " << safeText(report.device.error) << '\n';
    ctx.exitCode = report.allPassed() ? 0 : 1;
}

} // namespace

void registerProbeCommand(CLI::App& app, CliContext& ctx)
{
    auto o = std::make_shared<ProbeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "probe", "Verify on the device: allocate the weights and the paged KV cache, find the largest resident tokens "
                 "that run a real decode step, time decode and prefill, measure quantization error");
    cmd->add_option("--device,-d", o->device, "cpu or cuda:N")->capture_default_str();
    cmd->add_option("--budget", o->budget, "Refuse to allocate past SIZE (emulates a smaller card: 8GiB, 16GiB, 24GiB); "
                                           "default 2GiB on the CPU, free memory minus 1 GiB on CUDA")
        ->check(sizeValidator());
    cmd->add_option("--model,-m", o->model, std::string("Model profile id or path (config.json, model dir, .gguf); default ") + kDefaultModel);
    cmd->add_option("--weights,-w", o->weights, std::string("Weight format (fp16, bf16, int8-row, int4-g128, nf4-b64, ...); default: the files' format, else ") + kDefaultFormat);
    cmd->add_option("--kv-dtype", o->kvDtype, "KV cache dtype (the decode step runs fp16/bf16)")->capture_default_str();
    cmd->add_option("--context", o->context, "Context per user for the allocation probe (default: 8,192, capped at the model's trained context)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 31));
    cmd->add_option("--users", o->users, "Concurrent users for the allocation probe (default: 4)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
    cmd->add_option("--probes", o->probes, "Comma-separated: device, allocation, limit, timing, quant-error; or all")
        ->capture_default_str();
    cmd->add_option("--frontier-points", o->frontierPoints, "Limit probe: check only the first N frontier points (0 = all)")
        ->capture_default_str();
    cmd->add_option("--step-layers", o->stepLayers,
                    "Limit probe: run the decode step on the first N layers only (0 = all; memory is still allocated for all)")
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "Print {\"device\": {...}, \"results\": [...]} on stdout");
    cmd->callback([o, &ctx] { runProbeCommand(*o, ctx); });

    // Hidden: the child process of the limit search (reads a work order on stdin).
    CLI::App* worker = app.add_subcommand("probe-worker", "");
    worker->group("");
    worker->callback([&ctx] { ctx.exitCode = runProbeWorker(STDIN_FILENO, STDOUT_FILENO); });
}

#else

void registerProbeCommand(CLI::App& app, CliContext& ctx)
{
    CLI::App* cmd = app.add_subcommand("probe", "On-device probes (not part of this build)");
    cmd->allow_extras();
    cmd->callback([&ctx] { ctx.fail("probe: headroom_probes is not part of this build"); });
}

#endif

} // namespace headroom::cli
