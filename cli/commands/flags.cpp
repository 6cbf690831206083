// headroom-cli flags: the serving engine's launch flags for one plan.

#include "commands.h"
#include "planoptions.h"
#include "texttable.h"

#include "headroom/core/launchflags.h"

#include <iostream>
#include <memory>

namespace headroom::cli {

namespace {

std::string jsonString(const std::string& s)
{
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

void printJson(const LaunchFlags& f, std::ostream& out)
{
    out << "{\n  \"engine\": " << jsonString(launchEngineName(f.engine)) << ",\n  \"users\": " << f.point.users
        << ",\n  \"context_tokens\": " << f.point.contextTokens << ",\n  \"context_lowered\": " << (f.point.lowered ? "true" : "false")
        << ",\n  \"command\": " << jsonString(f.command) << ",\n  \"flags\": [";
    for (std::size_t i = 0; i < f.flags.size(); ++i) {
        const LaunchFlag& flag = f.flags[i];
        out << (i ? "," : "") << "\n    {\"name\": " << jsonString(flag.name) << ", \"value\": " << jsonString(flag.value)
            << ", \"kind\": " << jsonString(launchFlagKindName(flag.kind)) << ", \"note\": " << jsonString(flag.note) << "}";
    }
    out << "\n  ],\n  \"notes\": [";
    for (std::size_t i = 0; i < f.notes.size(); ++i)
        out << (i ? ", " : "") << jsonString(f.notes[i]);
    out << "]\n}\n";
}

void run(const PlanOptions& o, CliContext& ctx)
{
    const ProfileSet* profiles = ctx.profiles();
    if (!profiles)
        return;
    auto requests = buildRequests(o, *profiles, &ctx.calibrations());
    if (!requests)
        return ctx.fail(requests.error());
    auto plans = runPlans(*requests);
    if (!plans)
        return ctx.fail(plans.error());
    const PlanRequest& r = requests->front();
    const PlanResult& p = plans->front();
    ctx.answered(p.verdict.fits());
    if (!p.verdict.loads() && p.verdict.limit != FitLimit::EngineFormat && p.verdict.limit != FitLimit::EngineKvDtype) {
        // "Does not fit" is an answer (exit 0; 3 with --check), not an error.
        std::cout << "# nothing to launch: " << p.modelId << " (" << p.formatId << ") on " << p.cardId << " under "
                  << r.engine.name << ": " << p.verdict.reason << '\n';
        return;
    }
    auto flags = launchFlags(r, p);
    if (!flags)
        return ctx.fail(flags.error());
    if (o.json) {
        printJson(*flags, std::cout);
        return;
    }
    std::cout << "# " << r.engine.name << " launch flags for " << p.modelId << " (" << p.formatId << ", " << p.kvDtypeId
              << " KV) on " << p.cardId << ": " << formatThousands(flags->point.users) << (flags->point.users == 1 ? " user x " : " users x ")
              << formatThousands(flags->point.contextTokens) << " tokens\n";
    std::cout << flags->command << "\n\n";
    TextTable t;
    t.addColumn("flag");
    t.addColumn("value", TextTable::Align::Right);
    t.addColumn("why");
    for (const LaunchFlag& f : flags->flags)
        t.addRow({f.name, f.value, f.note});
    t.print(std::cout, "  ");
    if (flags->point.lowered)
        std::cout << "  note: " << formatThousands(p.contextTokens) << " tokens for " << formatThousands(flags->point.users)
                  << (flags->point.users == 1 ? " user does" : " users do") << " not fit; the context is lowered to " << formatThousands(flags->point.contextTokens) << '\n';
    for (const std::string& n : flags->notes)
        std::cout << "  note: " << n << '\n';
}

} // namespace

void registerFlagsCommand(CLI::App& app, CliContext& ctx)
{
    auto opts = std::make_shared<PlanOptions>();
    CLI::App* cmd = app.add_subcommand("flags", "The serving engine's launch flags for a plan (vllm, llama.cpp, sglang, ollama)");
    addPlanOptions(cmd, *opts, false);
    cmd->get_option("--engine")->required();
    addCheckFlag(cmd, ctx);
    cmd->callback([opts, &ctx] { run(*opts, ctx); });
}

} // namespace headroom::cli
