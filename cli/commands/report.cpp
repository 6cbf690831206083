// headroom-cli report: a capacity report (JSON, Markdown, CSV here; HTML and PDF through the
// headroom-render helper built with the GUI), and `report --check` to validate and recompute one.

#include "commands.h"
#include "planoptions.h"

#include "headroom/core/atomicfile.h"
#include "headroom/core/boundedfile.h"
#include "headroom/core/report/report.h"
#include "headroom/core/report/reportdocument.h"
#include "headroom/core/version.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace headroom::cli {

namespace {

namespace fs = std::filesystem;

struct ReportOptions {
    PlanOptions plan;
    std::string format; ///< empty: from the extension of -o, else json
    std::string output;
    std::string check;
    std::string title;
    std::string probes;
    std::string speed;
    bool allowFetch = false; ///< --allow-fetch: report --check may read and fetch the models the report names
};

/// Exit code of `report --check` when the report is valid but this version computes other values.
constexpr int kDriftExitCode = 2;

// A report (or a probes/speed block) named on the command line: a regular file, bounded.
tl::expected<std::string, std::string> readText(const std::string& path)
{
    auto text = readBoundedFile(path, kMaxReportBytes);
    if (!text)
        return tl::unexpected("cannot read " + text.error());
    return text;
}

// headroom-render next to this executable ($HEADROOM_RENDER overrides).
fs::path rendererPath()
{
    if (const char* env = std::getenv("HEADROOM_RENDER"); env && *env)
        return env;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return (ec ? fs::path(".") : self.parent_path()) / "headroom-render";
}

// Runs headroom-render on the JSON; its own messages go to stderr. The JSON goes through a pipe
// to the renderer's stdin (no temporary file to leave behind), and the renderer dies with this
// process (it sets PR_SET_PDEATHSIG, checking HEADROOM_RENDER_PARENT_PID): a kill -9 of the CLI
// leaves neither a temporary report nor a renderer still writing the output.
tl::expected<void, std::string> renderWithQt(const std::string& json, const std::string& format, const std::string& output)
{
    const fs::path renderer = rendererPath();
    if (::access(renderer.c_str(), X_OK) != 0)
        return tl::unexpected("HTML/PDF need headroom-render, built with the GUI (HEADROOM_BUILD_GUI=ON); not found at "
                              + renderer.string());
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC) != 0)
        return tl::unexpected(std::string("cannot create a pipe for headroom-render: ") + std::strerror(errno));
    const std::string program = renderer.string();
    std::vector<std::string> args{program, "--format", format, "-o", output, "-"};
    std::vector<char*> argv;
    for (std::string& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> envStrings{"HEADROOM_RENDER_PARENT_PID=" + std::to_string(::getpid())};
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "HEADROOM_RENDER_PARENT_PID=", 27) != 0)
            envStrings.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& e : envStrings)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipeFds[0], STDIN_FILENO); // dup2 clears O_CLOEXEC
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipeFds[0]);
    if (spawned != 0) {
        ::close(pipeFds[1]);
        return tl::unexpected("cannot run " + program + ": " + std::strerror(spawned));
    }
    // A renderer that exits early closes the pipe: EPIPE, not a SIGPIPE that would kill the CLI.
    struct sigaction ignore {}, previous {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous);
    const char* data = json.data();
    std::size_t left = json.size();
    while (left > 0) {
        const ssize_t n = ::write(pipeFds[1], data, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; // the renderer reports the truncated input itself
        data += n;
        left -= static_cast<std::size_t>(n);
    }
    ::close(pipeFds[1]);
    ::sigaction(SIGPIPE, &previous, nullptr);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return tl::unexpected("headroom-render failed (" + (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                                                                : std::string("killed by a signal"))
                              + "); no " + format + " written");
    return {};
}

void runCheck(const ReportOptions& o, CliContext& ctx)
{
    auto text = readText(o.check);
    if (!text)
        return ctx.fail(text.error());
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    ReportCheckOptions options;
    options.allowFetch = o.allowFetch;
    auto check = checkReport(*text, *profiles, options);
    if (!check)
        return ctx.fail(o.check + ": " + check.error().message);
    if (!check->schemaErrors.empty()) {
        for (const std::string& e : check->schemaErrors)
            std::cerr << "headroom-cli: " << safeText(o.check + ": " + e) << '\n';
        ctx.fail(o.check + ": does not match the report schema (version " + std::to_string(kReportSchemaVersion) + ")");
        return;
    }
    std::string versions = "written by headroom " + check->reportedVersion + ", recomputed with " + check->currentVersion;
    if (!check->unchecked.empty()) {
        versions += " (" + std::to_string(check->checkedPlans) + " of " + std::to_string(check->checkedPlans + check->unchecked.size())
            + " plans recomputed)";
        std::cout << safeText(o.check) << ": " << check->unchecked.size() << " plan(s) not re-checked:\n";
        for (const std::string& u : check->unchecked)
            std::cout << "  " << safeText(u) << '\n';
    }
    if (!check->probeVerdictProblems.empty()) {
        std::cout << safeText(o.check) << ": " << check->probeVerdictProblems.size()
                  << " probe verdict(s) that their own values do not give:\n";
        for (const std::string& p : check->probeVerdictProblems)
            std::cout << "  probes." << p << '\n';
        ctx.exitCode = kDriftExitCode;
    }
    if (check->drifts.empty()) {
        std::cout << safeText(o.check) << ": valid (report schema " << kReportSchemaVersion << "); " << versions << ": no drift\n";
        return;
    }
    std::cout << safeText(o.check) << ": valid (report schema " << kReportSchemaVersion << "); " << versions << ": DRIFT in "
              << check->driftCount << " value(s)\n";
    std::size_t shown = 0;
    for (const ReportDrift& d : check->drifts) {
        if (++shown > 40) {
            std::cout << "  ... and " << check->driftCount - 40 << " more\n";
            break;
        }
        std::cout << "  " << d.path << ": " << d.reported << " -> " << d.now << '\n';
    }
    ctx.exitCode = kDriftExitCode;
}

// The format named by -o's extension ("a.pdf" -> pdf), or empty.
std::string formatOfPath(const std::string& path)
{
    const std::size_t dot = path.rfind('.');
    if (dot == std::string::npos || path.find('/', dot) != std::string::npos)
        return {};
    std::string ext = asciiLower(path.substr(dot + 1));
    if (ext == "markdown")
        ext = "md";
    if (ext == "htm")
        ext = "html";
    for (const char* known : {"json", "md", "csv", "html", "pdf"})
        if (ext == known)
            return ext;
    return {};
}

void run(const ReportOptions& given, CliContext& ctx)
{
    if (!given.check.empty())
        return runCheck(given, ctx);
    ReportOptions o = given;
    if (o.format.empty()) {
        o.format = formatOfPath(o.output);
        // An extension that names no format ("a.txt") is an error, not a JSON file under that name.
        const std::string ext = o.output == "-" ? std::string() : std::filesystem::path(o.output).extension().string();
        if (o.format.empty() && !ext.empty())
            return ctx.fail("-o " + o.output + ": '" + ext + "' names no report format; use -f json, md, csv, html or pdf");
        if (o.format.empty())
            o.format = "json";
    }
    // The title is text the report prints in every format: UTF-8 (its control characters are
    // escaped by buildReport, as every string from outside is).
    if (const auto at = invalidUtf8At(o.title)) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(o.title[*at]));
        return ctx.fail("--title: expected UTF-8 text; byte " + std::to_string(*at) + " (" + byte + ") is not UTF-8");
    }
    const bool viaQt = o.format == "html" || o.format == "pdf";
    if (viaQt && (o.output.empty() || o.output == "-"))
        return ctx.fail("--format " + o.format + " needs -o FILE");
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    PlanOptions opts = o.plan;
    applyMatrixDefaults(opts);
    auto requests = buildRequests(opts, *profiles, &ctx.calibrations());
    if (!requests)
        return ctx.fail(requests.error());
    auto plans = runPlans(*requests);
    if (!plans)
        return ctx.fail(plans.error());

    ReportInput input;
    input.requests = std::move(*requests);
    input.plans = std::move(*plans);
    input.title = o.title;
    if (!o.probes.empty()) {
        auto t = readText(o.probes);
        if (!t)
            return ctx.fail(t.error());
        input.probesJson = *t;
    }
    if (!o.speed.empty()) {
        auto t = readText(o.speed);
        if (!t)
            return ctx.fail(t.error());
        input.speedJson = *t;
    }
    auto json = buildReportJson(input);
    if (!json)
        return ctx.fail(json.error().message);

    if (viaQt) {
        if (auto r = renderWithQt(*json, o.format, o.output); !r)
            return ctx.fail(r.error());
        std::cerr << "wrote " << safeText(o.output) << '\n';
        return;
    }
    std::string text;
    if (o.format == "json") {
        text = *json;
    } else {
        auto rendered = o.format == "md" ? report::renderReportMarkdown(*json) : report::renderReportCsv(*json);
        if (!rendered)
            return ctx.fail(rendered.error().message);
        text = *rendered;
    }
    if (o.output.empty() || o.output == "-") {
        std::cout << text;
        return;
    }
    if (auto w = writeFileAtomically(o.output, text); !w)
        return ctx.fail(w.error());
    std::cerr << "wrote " << safeText(o.output) << '\n';
}

} // namespace

void registerReportCommand(CLI::App& app, CliContext& ctx)
{
    auto opts = std::make_shared<ReportOptions>();
    CLI::App* cmd = app.add_subcommand(
        "report", "A capacity report of models x formats on cards (json, md, csv; html and pdf need headroom-render), "
                  "or --check FILE: validate a JSON report and recompute it with this version (exit 2 on drift)");
    addPlanOptions(cmd, opts->plan, true);
    cmd->add_option("--format,-f", opts->format, "Output format (default: from the extension of -o, else json)")
        ->check(CLI::IsMember({"json", "md", "csv", "html", "pdf"}));
    cmd->add_option("--output,-o", opts->output, "Output file, written atomically (json/md/csv: default stdout)");
    cmd->add_option("--title", opts->title, "Title on top of the report");
    cmd->add_option("--probes", opts->probes, "JSON file of probe results (device facts, predicted against measured)");
    cmd->add_option("--speed", opts->speed, "JSON file of measured speed points");
    cmd->add_option("--check", opts->check, "Validate this JSON report against the schema and recompute it");
    cmd->add_flag("--allow-fetch", opts->allowFetch,
                  "With --check: also re-read the models the report names by path, hub-cache repo, Ollama name or URL "
                  "(opens those files and folders, fetches over HTTP); by default a report is untrusted and only profiles "
                  "are used, the other plans listed as not re-checked");
    cmd->callback([opts, &ctx] { run(*opts, ctx); });
}

} // namespace headroom::cli
