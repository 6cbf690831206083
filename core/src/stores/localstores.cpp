#include "headroom/core/stores/localstores.h"

#include "headroom/core/safetext.h"

#include "storeshared.h"

#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/importers/importedprofile.h"

#include <algorithm>
#include <cstdlib>

namespace headroom {

namespace fs = std::filesystem;

const char* localStoreKindName(LocalStoreKind kind)
{
    switch (kind) {
    case LocalStoreKind::HubCache: return "hf-cache";
    case LocalStoreKind::Ollama: return "ollama";
    case LocalStoreKind::LmStudio: return "lm-studio";
    case LocalStoreKind::Folder: return "folder";
    }
    return "folder";
}

std::string processEnv(const char* name)
{
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

namespace {

void addIfDir(std::vector<fs::path>& to, const fs::path& p)
{
    std::error_code ec;
    if (!p.empty() && fs::is_directory(p, ec) && std::find(to.begin(), to.end(), p) == to.end())
        to.push_back(p);
}

} // namespace

LocalStoreRoots defaultLocalStoreRoots(const EnvLookup& env)
{
    LocalStoreRoots r;
    const std::string home = env("HOME");
    const fs::path homeDir = home.empty() ? fs::path() : fs::path(home);
    // huggingface_hub constants.py: HF_HUB_CACHE, else HF_HOME/hub, else
    // $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; HUGGINGFACE_HUB_CACHE is the legacy name.
    if (const std::string v = env("HF_HUB_CACHE"); !v.empty())
        addIfDir(r.hubCaches, v);
    else if (const std::string legacy = env("HUGGINGFACE_HUB_CACHE"); !legacy.empty())
        addIfDir(r.hubCaches, legacy);
    else if (const std::string hfHome = env("HF_HOME"); !hfHome.empty())
        addIfDir(r.hubCaches, fs::path(hfHome) / "hub");
    else if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty())
        addIfDir(r.hubCaches, fs::path(xdg) / "huggingface" / "hub");
    else if (!homeDir.empty())
        addIfDir(r.hubCaches, homeDir / ".cache" / "huggingface" / "hub");
    // ollama envconfig.Models(): OLLAMA_MODELS, else ~/.ollama/models.
    if (const std::string v = env("OLLAMA_MODELS"); !v.empty())
        addIfDir(r.ollama, v);
    else if (!homeDir.empty())
        addIfDir(r.ollama, homeDir / ".ollama" / "models");
    if (!homeDir.empty()) {
        addIfDir(r.lmStudio, homeDir / ".lmstudio" / "models");
        addIfDir(r.lmStudio, homeDir / ".cache" / "lm-studio" / "models");
    }
    return r;
}

namespace {

void scanFolderInto(const fs::path& dir, int depth, std::vector<LocalModel>& out)
{
    if (out.size() >= kLocalStoreMaxModels || depth > kLocalStoreMaxDepth)
        return;
    stores::addFolderModels(LocalStoreKind::Folder, dir, dir.string(), out);
    if (stores::isModelDirectory(dir))
        return; // its subfolders (original/, onnx/) belong to it
    for (const fs::path& sub : stores::subfolders(dir))
        scanFolderInto(sub, depth + 1, out);
}

} // namespace

std::vector<LocalModel> scanFolder(const fs::path& folder)
{
    std::vector<LocalModel> out;
    std::error_code ec;
    if (fs::is_regular_file(folder, ec)) {
        LocalModel m;
        m.name = folder.string();
        m.path = folder;
        stores::importEntry(m);
        out.push_back(std::move(m));
    } else {
        scanFolderInto(folder, 0, out);
    }
    return out;
}

void addProjectorWeights(ModelProfile& p, const ImportedModel& model, const fs::path& projector, const std::string& how)
{
    if (projector.empty() || model.format != "gguf" || !p.exactWeights)
        return;
    for (const ImportedTensor& t : model.tensors)
        if (t.name.rfind("v.", 0) == 0)
            return;
    auto imported = importGguf(projector);
    if (!imported) {
        p.warnings.push_back("projector " + safeText(projector.filename().string()) + " is not counted: " + toString(imported.error()));
        return;
    }
    p.exactWeights->totalBytes += imported->weightsBytes;
    p.exactWeights->parameters += imported->parameters;
    p.exactWeights->bytesByType["mmproj"] += imported->weightsBytes;
    p.source += " + projector " + projector.string();
    p.warnings.push_back("vision projector " + safeText(projector.filename().string()) + " (" + formatBytes(imported->weightsBytes)
                         + ") is counted in the weights (" + how + ")");
}

std::optional<ModelProfile> localModelProfile(const LocalModel& m)
{
    if (!m.model || !m.model->architecture)
        return std::nullopt;
    ModelProfile p = modelProfileFromImport(*m.model);
    p.id = m.path.string();
    p.name = m.name;
    p.source = std::string(localStoreKindName(m.store)) + " " + m.name + (m.revision.empty() ? "" : "@" + m.revision) + " " +
               m.model->format + " " + m.model->formatVersion + " " + m.path.string();
    addProjectorWeights(p, *m.model, m.projectorPath,
                        m.store == LocalStoreKind::Ollama ? "the manifest's projector layer, loaded with the model"
                                                          : "llama.cpp --mmproj");
    return p;
}

std::vector<LocalModel> findLocalModels(const LocalStoreRoots& roots)
{
    std::vector<LocalModel> out;
    // Names come from folder and file names (and a manifest's tags): made safe to print and to
    // serialise here, once, for every face (a name that is not UTF-8 aborted the JSON listing).
    auto append = [&out](std::vector<LocalModel> more) {
        for (LocalModel& m : more) {
            m.name = safeText(m.name);
            m.revision = safeText(m.revision);
            for (std::string& r : m.refs)
                r = safeText(r);
            for (std::string& w : m.warnings)
                w = safeText(w);
            out.push_back(std::move(m));
        }
    };
    for (const fs::path& p : roots.hubCaches)
        append(scanHubCache(p));
    for (const fs::path& p : roots.ollama)
        append(scanOllamaStore(p));
    for (const fs::path& p : roots.lmStudio)
        append(scanLmStudio(p));
    for (const fs::path& p : roots.folders)
        append(scanFolder(p));
    return out;
}

namespace stores {

std::size_t addFolderModels(LocalStoreKind store, const fs::path& dir, const std::string& name, std::vector<LocalModel>& out)
{
    const std::size_t before = out.size();
    auto add = [&](std::string entryName, fs::path path, fs::path projector) {
        if (out.size() >= kLocalStoreMaxModels)
            return;
        LocalModel m;
        m.store = store;
        m.name = std::move(entryName);
        m.path = std::move(path);
        m.projectorPath = std::move(projector);
        importEntry(m);
        out.push_back(std::move(m));
    };
    if (isModelDirectory(dir)) {
        add(name, dir, {});
    } else {
        const fs::path projector = projectorIn(dir);
        for (const fs::path& f : modelGgufFiles(dir))
            add(store == LocalStoreKind::Folder ? f.string() : name + "/" + f.filename().string(), f, projector);
    }
    return out.size() - before;
}

void importEntry(LocalModel& entry)
{
    auto imported = importModel(entry.path);
    if (imported)
        entry.model = std::move(*imported);
    else
        entry.error = imported.error();
    if (!entry.projectorPath.empty()) {
        // A projector is a GGUF of its own (general.architecture "clip"): its tensor table gives its bytes.
        auto projector = importGguf(entry.projectorPath);
        if (projector)
            entry.projectorBytes = projector->weightsBytes;
        else
            entry.warnings.push_back("projector " + entry.projectorPath.filename().string() + ": " +
                                     toString(projector.error()));
    }
}

bool isModelDirectory(const fs::path& dir)
{
    std::error_code ec;
    if (fs::is_regular_file(dir / "config.json", ec))
        return true;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.ends_with(".safetensors") && it->is_regular_file(ec))
            return true;
    }
    return false;
}

namespace {

bool isProjectorName(const std::string& name)
{
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.starts_with("mmproj");
}

/// "-0000k-of-0000n.gguf" with k != 1: a later shard of a split set.
bool isLaterShard(const std::string& name)
{
    const auto of = name.rfind("-of-");
    if (of == std::string::npos || of < 6)
        return false;
    const auto dash = name.rfind('-', of - 1);
    if (dash == std::string::npos)
        return false;
    const std::string index = name.substr(dash + 1, of - dash - 1);
    if (index.empty() || !std::all_of(index.begin(), index.end(), [](unsigned char c) { return std::isdigit(c); }))
        return false;
    return std::stoull(index.substr(std::max<std::size_t>(index.size(), 9) - 9)) != 1;
}

} // namespace

std::vector<fs::path> modelGgufFiles(const fs::path& dir)
{
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        // Not only regular files: a FIFO, a device or a dangling link named *.gguf is listed with
        // the error that refuses it (importModel opens regular files only), not hidden.
        if (name.ends_with(".gguf") && !it->is_directory(ec) && !isProjectorName(name) && !isLaterShard(name))
            out.push_back(it->path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

fs::path projectorIn(const fs::path& dir)
{
    std::vector<fs::path> found;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.ends_with(".gguf") && isProjectorName(name) && it->is_regular_file(ec))
            found.push_back(it->path());
    }
    std::sort(found.begin(), found.end());
    return found.empty() ? fs::path() : found.front();
}

std::vector<fs::path> subfolders(const fs::path& dir)
{
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        // Symlinked folders are not followed (a loop would never end); the hub cache links files only.
        if (it->is_directory(ec) && !it->is_symlink(ec))
            out.push_back(it->path());
        if (out.size() >= kLocalStoreMaxModels)
            break;
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace stores

fs::path projectorBeside(const fs::path& modelFile)
{
    if (stores::isProjectorName(modelFile.filename().string()))
        return {};
    return stores::projectorIn(modelFile.parent_path().empty() ? fs::path(".") : modelFile.parent_path());
}

} // namespace headroom
