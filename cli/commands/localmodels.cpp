// headroom-cli models --local [--dir DIR]... [--json]: the models already on this machine (the
// Hugging Face hub cache, Ollama's store, LM Studio's folder, any folder given), each with the
// exact bytes of its own files. Found by core (stores/localstores.h); printed here.

#include "commands.h"
#include "texttable.h"

#include "headroom/core/kvcache.h"
#include "headroom/core/safetext.h"
#include "headroom/core/stores/localstores.h"

#include <nlohmann/json.hpp>

#include <iostream>

namespace headroom::cli {

namespace {

std::string weightsCell(const LocalModel& m)
{
    if (!m.model)
        return "-";
    return formatBytes(m.model->weightsBytes) + (m.model->exactWeights ? "" : " (priced)");
}

std::string kvCell(const LocalModel& m)
{
    if (!m.model || !m.model->architecture)
        return "-";
    return formatThousands(kvLayout(*m.model->architecture, *findKvDtype("fp16")).bytesPerToken().value);
}

nlohmann::ordered_json toJson(const LocalModel& m)
{
    nlohmann::ordered_json j;
    j["store"] = localStoreKindName(m.store);
    j["name"] = m.name;
    j["revision"] = m.revision;
    j["refs"] = m.refs;
    j["path"] = safeText(m.path.string());
    if (m.model) {
        j["format"] = m.model->format;
        j["architecture"] = m.model->architectureName;
        j["weights_bytes"] = m.model->weightsBytes.value;
        j["exact_weights"] = m.model->exactWeights;
        j["parameters"] = m.model->parameters;
        j["context_length_tokens"] = m.model->contextLength;
        if (m.model->architecture)
            j["kv_bytes_per_token_fp16"] = kvLayout(*m.model->architecture, *findKvDtype("fp16")).bytesPerToken().value;
    }
    if (!m.projectorPath.empty()) {
        j["projector_path"] = safeText(m.projectorPath.string());
        j["projector_bytes"] = m.projectorBytes.value;
    }
    if (m.error)
        j["error"] = toString(*m.error);
    j["warnings"] = m.warnings;
    return j;
}

} // namespace

void listLocalModels(CliContext& ctx, const std::vector<std::string>& dirs, bool json)
{
    LocalStoreRoots roots = defaultLocalStoreRoots();
    for (const std::string& d : dirs) {
        std::error_code ec;
        if (!std::filesystem::exists(d, ec)) {
            ctx.fail("--dir " + d + ": no such file or folder");
            return;
        }
        roots.folders.emplace_back(d);
    }
    const std::vector<LocalModel> models = findLocalModels(roots);
    if (json) {
        nlohmann::ordered_json j;
        j["schema_version"] = 1;
        nlohmann::ordered_json searched = nlohmann::ordered_json::object();
        auto paths = [](const std::vector<std::filesystem::path>& v) {
            std::vector<std::string> s;
            for (const auto& p : v)
                s.push_back(safeText(p.string()));
            return s;
        };
        searched["hf-cache"] = paths(roots.hubCaches);
        searched["ollama"] = paths(roots.ollama);
        searched["lm-studio"] = paths(roots.lmStudio);
        searched["folder"] = paths(roots.folders);
        j["searched"] = searched;
        j["models"] = nlohmann::ordered_json::array();
        for (const LocalModel& m : models)
            j["models"].push_back(toJson(m));
        std::cout << j.dump(2) << '\n';
        return;
    }
    using Align = TextTable::Align;
    TextTable t;
    t.addColumn("store");
    t.addColumn("name");
    t.addColumn("revision");
    t.addColumn("format");
    t.addColumn("weights", Align::Right);
    t.addColumn("bytes", Align::Right);
    t.addColumn("kv B/token fp16", Align::Right);
    t.addColumn("projector", Align::Right);
    for (const LocalModel& m : models) {
        std::string rev = m.revision.substr(0, 12);
        for (const std::string& r : m.refs)
            rev += " (" + r + ")";
        t.addRow({localStoreKindName(m.store), m.name, rev, m.model ? m.model->format : "error", weightsCell(m),
                  m.model ? formatThousands(m.model->weightsBytes.value) : "-", kvCell(m),
                  m.projectorPath.empty() ? "" : formatBytes(m.projectorBytes)});
    }
    t.print(std::cout);
    for (const LocalModel& m : models) {
        if (m.error)
            std::cout << "  " << m.name << ": " << toString(*m.error) << '\n';
        for (const std::string& w : m.warnings)
            std::cout << "  " << m.name << ": " << w << '\n';
    }
    std::cout << '\n' << models.size() << " model(s). Searched:";
    auto list = [](const char* what, const std::vector<std::filesystem::path>& v) {
        for (const auto& p : v)
            std::cout << "\n  " << what << "  " << safeText(p.string());
    };
    list("hf-cache ", roots.hubCaches);
    list("ollama   ", roots.ollama);
    list("lm-studio", roots.lmStudio);
    list("folder   ", roots.folders);
    if (roots.hubCaches.empty() && roots.ollama.empty() && roots.lmStudio.empty() && roots.folders.empty())
        std::cout << " no store found (HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub, OLLAMA_MODELS, ~/.ollama/models, "
                     "~/.lmstudio/models); add folders with --dir";
    std::cout << "\nUse a hub model by its id: -m ORG/NAME[@REVISION].\n";
}

} // namespace headroom::cli
