// headroom-cli models | cards | formats | engines: list the profiles and built-in formats.

#include "commands.h"
#include "texttable.h"

#include "headroom/core/enginepolicy.h"
#include "headroom/core/engines/engine.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/parameters.h"
#include "headroom/core/weightformat.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

namespace headroom::cli {

namespace {

/// Lines of `engines`' setting list wrap at this many characters (the terminal's 100-column habit).
constexpr std::size_t kSettingLineChars = 100;

/// Prints @p text wrapped at spaces to lines of at most @p width characters (a word longer than
/// that stays whole on its own line), continuation lines starting with @p indent.
void printWrapped(std::ostream& out, const std::string& text, std::size_t width, const std::string& indent)
{
    const std::size_t lead = std::min(text.find_first_not_of(' '), text.size());
    std::string line = text.substr(0, lead);
    std::istringstream words(text.substr(lead));
    bool first = true;
    for (std::string word; words >> word; first = false) {
        if (!first && line.size() + 1 + word.size() > width) {
            out << line << '\n';
            line = indent + word;
        } else {
            line += (first ? "" : " ") + word;
        }
    }
    out << line << '\n';
}

/// The engines table wraps a policy's name at this many characters.
constexpr std::size_t kEngineNameChars = 30;

/// A release as people read it: a 40-digit commit (llama.cpp, Ollama pinned by commit) as
/// "commit " and its first 12 digits, anything else as it is.
std::string releaseText(const std::string& version)
{
    const bool commit = version.size() == 40 && version.find_first_not_of("0123456789abcdef") == std::string::npos;
    return commit ? "commit " + version.substr(0, 12) : version;
}

using Align = TextTable::Align;

void listModels(CliContext& ctx)
{
    const ProfileSet* p = ctx.profiles();
    if (!p)
        return;
    TextTable t;
    t.addColumn("id");
    t.addColumn("name");
    t.addColumn("family");
    t.addColumn("parameters", Align::Right);
    t.addColumn("layers", Align::Right);
    t.addColumn("heads/kv", Align::Right);
    t.addColumn("kv B/token fp16", Align::Right);
    t.addColumn("context", Align::Right);
    const KvDtype fp16 = *findKvDtype("fp16");
    for (const ModelProfile& m : p->models) {
        if (!m.architecture) {
            t.addRow({m.id, m.name});
            continue;
        }
        const Architecture& a = *m.architecture;
        t.addRow({m.id, m.name, a.family, formatCount(parameterCount(a)), std::to_string(a.layers),
                  std::to_string(a.attentionHeads) + "/" + (a.mla.enabled() ? "MLA" : std::to_string(a.kvHeads)),
                  formatThousands(kvLayout(a, fp16).bytesPerToken().value), formatThousands(a.contextLength)});
    }
    t.print(std::cout);
}

void listCards(CliContext& ctx)
{
    const ProfileSet* p = ctx.profiles();
    if (!p)
        return;
    TextTable t;
    t.addColumn("id");
    t.addColumn("name");
    t.addColumn("class");
    t.addColumn("driver total", Align::Right);
    t.addColumn("bytes", Align::Right);
    t.addColumn("GB/s", Align::Right);
    t.addColumn("fp16 TFLOP/s", Align::Right);
    for (const Card& c : p->cards)
        t.addRow({c.id, c.name, c.memoryClass,
                  formatBytes(c.totalBytes) + (c.totalEstimated ? " (estimated)" : ""),
                  formatThousands(c.totalBytes.value), formatFixed(c.bandwidthGBps, 0), formatFixed(c.fp16Tflops, 1)});
    t.print(std::cout);
    std::cout << "\n(estimated): no public driver-reported total was found; the profile's total_note says how it"
                 " was derived.\nAny size works as an anonymous card: --card 8GiB, --card 24GB.\n";
}

void listFormats()
{
    TextTable t;
    t.addColumn("id");
    t.addColumn("bpw", Align::Right);
    t.addColumn("description");
    for (const WeightFormat& f : builtinFormats())
        t.addRow({f.id, formatFixed(f.bitsPerWeight(), 4), f.description});
    t.print(std::cout);
    std::cout << "\nAlso int4-gN and int8-gN for any power-of-two group N from 8 to 4096.\nKV dtypes:";
    for (const KvDtype& d : builtinKvDtypes())
        std::cout << ' ' << d.id;
    std::cout << '\n';
}

void listEngines(CliContext& ctx)
{
    const ProfileSet* p = ctx.profiles();
    if (!p)
        return;
    // The table stays within kSettingLineChars: the id names the rule (vllm-0.9 is vLLM's), long
    // names wrap in their column and a release pinned by commit shows its short hash.
    TextTable t;
    t.addColumn("id");
    t.addColumn("name");
    t.addColumn("fraction", Align::Right);
    t.addColumn("reserve", Align::Right);
    t.addColumn("block", Align::Right);
    t.addColumn("versions");
    t.setWrap(1, kEngineNameChars);
    // The profiles' source notes (the engine files each rule is read from) are long citations
    // for maintainers; they stay in profiles/engines/*.json.
    for (const EnginePolicy& e : p->engines) {
        const std::string versions = e.versionFrom.empty() && e.versionUntil.empty()
            ? releaseText(e.version)
            : (e.versionFrom.empty() ? "..." : e.versionFrom) + " to " + (e.versionUntil.empty() ? "current" : "<" + e.versionUntil);
        t.addRow({e.id, e.name, e.memoryFraction > 0 ? formatFixed(e.memoryFraction, 2) : "computed", formatBytes(e.fixedReserve),
                  std::to_string(e.blockTokens), versions});
    }
    t.addRow({"--reserve SIZE", "Flat reserve", "-", "SIZE", "1", "-"});
    t.print(std::cout);
    std::cout << "\nEach rule's source (the engine's own files) is in profiles/engines/<id>.json.\n";
    // Each engine's own settings (--set KEY=VALUE), once per kind.
    std::vector<EngineKind> seen;
    for (const EnginePolicy& e : p->engines) {
        if (std::find(seen.begin(), seen.end(), e.kind) != seen.end())
            continue;
        seen.push_back(e.kind);
        std::cout << "\n" << engineKindName(e.kind) << " settings (--set KEY=VALUE):\n";
        for (const SettingSpec& spec : engineFor(e.kind).settings()) {
            std::string aliases;
            for (const std::string& a : spec.aliases)
                aliases += (aliases.empty() ? " (" : ", ") + a;
            if (!aliases.empty())
                aliases += ")";
            std::string line = "  " + spec.key + aliases + ": " + settingTypeDescription(spec.type);
            if (spec.type == SettingType::Choice) {
                for (std::size_t i = 0; i < spec.choices.size(); ++i)
                    line += (i ? "|" : " ") + spec.choices[i];
            }
            const auto profiled = e.settingDefaults.find(spec.key);
            const std::string def = profiled != e.settingDefaults.end() ? profiled->second : spec.defaultValue;
            line += (def.empty() ? "" : ", default " + def) + "; " + spec.help;
            printWrapped(std::cout, line, kSettingLineChars, "      ");
        }
    }
}

} // namespace

void registerListCommands(CLI::App& app, CliContext& ctx)
{
    struct LocalOptions {
        bool local = false;
        std::vector<std::string> dirs;
        bool json = false;
    };
    auto local = std::make_shared<LocalOptions>();
    CLI::App* models = app.add_subcommand("models", "List the model profiles, or (--local) the models on this machine");
    models->add_flag("--local", local->local,
                     "List the models already on this machine: the Hugging Face hub cache, Ollama's store, LM Studio's folder");
    models->add_option("--dir", local->dirs, "Also search these folders (model directories, .gguf files); implies --local");
    models->add_flag("--json", local->json, "With --local: print JSON (keys end in their unit)");
    models->callback([&ctx, local] {
        if (local->local || !local->dirs.empty())
            listLocalModels(ctx, local->dirs, local->json);
        else
            listModels(ctx);
    });
    app.add_subcommand("cards", "List the card profiles")->callback([&ctx] { listCards(ctx); });
    app.add_subcommand("formats", "List the weight formats and KV dtypes")->callback([] { listFormats(); });
    app.add_subcommand("engines", "List the engine policies")->callback([&ctx] { listEngines(ctx); });
}

} // namespace headroom::cli
