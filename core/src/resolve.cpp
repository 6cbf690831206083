#include "headroom/core/resolve.h"

#include "headroom/core/speed/splitspeed.h"
#include "headroom/core/safetext.h"

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/importedprofile.h"
#include "headroom/core/remote/remotemodel.h"
#include "headroom/core/stores/localstores.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <filesystem>
#include <regex>
#include <utility>

namespace headroom {

ModelProfile modelProfileFromImport(const ImportedModel& m)
{
    ModelProfile p;
    p.id = m.path;
    // The model's own name (GGUF general.name, config _name_or_path), else its file or folder name.
    std::filesystem::path path(m.path);
    while (!path.empty() && path.filename().empty())
        path = path.parent_path();
    // A general.name that only repeats the architecture ("llama", as llama.cpp's converters write
    // when the source gave none) names no model: the file's name says more.
    const bool placeholderName = !m.architectureName.empty() && m.modelName == m.architectureName;
    p.name = m.modelName.empty() || placeholderName ? path.filename().string() : m.modelName;
    if (p.name == "config.json" || p.name.empty())
        p.name = path.parent_path().filename().string();
    p.source = m.format + " " + m.formatVersion + " " + m.path;
    p.architecture = m.architecture;
    p.contentHash = m.contentHash;
    p.warnings = m.warnings;
    p.defaultFormat = m.weightFormatId.value_or("");
    if (m.format == "gguf") {
        std::vector<std::string> names;
        names.reserve(m.tensors.size());
        for (const ImportedTensor& t : m.tensors)
            names.push_back(t.name);
        p.ggufTensorOrder = classifyGgufTensorOrder(names);
    }
    if (m.exactWeights) {
        ExactWeights w;
        w.totalBytes = m.weightsBytes;
        w.parameters = m.parameters;
        w.bytesByType = m.bytesByType;
        w.formatId = m.weightFormatId.value_or("files");
        p.exactWeights = w;
        p.defaultFormat = w.formatId;
    }
    return p;
}

namespace {

/// "ORG/NAME[@REV]:TAG" split into the repo part and the GGUF preset after ':' (llama.cpp -hf's
/// spelling); the tag is empty when there is none.
std::pair<std::string, std::string> splitGgufTag(const std::string& arg)
{
    const auto slash = arg.rfind('/');
    const auto colon = arg.rfind(':');
    if (colon == std::string::npos || slash == std::string::npos || colon < slash || arg.starts_with("http"))
        return {arg, ""};
    return {arg.substr(0, colon), arg.substr(colon + 1)};
}

/// The GGUF of @p snapshot that llama.cpp -hf REPO:TAG would load (pickHubGguf over the
/// snapshot's .gguf files, repo-relative, sorted), imported; an error names the snapshot, the
/// tag and the files there are.
tl::expected<ModelProfile, std::string> hubCacheGguf(const RepoId& repo, const std::filesystem::path& snapshot, const std::string& tag)
{
    std::vector<std::string> paths;
    std::error_code ec;
    for (std::filesystem::recursive_directory_iterator it(snapshot, ec), end; !ec && it != end && paths.size() < kRemoteMaxListedFiles;
         it.increment(ec)) {
        if (it.depth() > 4)
            it.disable_recursion_pending();
        if (it->path().extension() == ".gguf")
            paths.push_back(std::filesystem::relative(it->path(), snapshot, ec).generic_string());
    }
    std::sort(paths.begin(), paths.end());
    const auto pick = pickHubGguf(paths, tag);
    if (!pick) {
        std::string files;
        for (std::size_t i = 0; i < paths.size() && i < 8; ++i)
            files += (i ? ", " : "") + paths[i];
        return tl::unexpected(snapshot.string() + " (" + repo.id + " in the hub cache) holds no GGUF for the preset " + tag +
                              (paths.empty() ? std::string(": no .gguf file") : ": it has " + files));
    }
    auto imported = importModel(snapshot / *pick);
    if (!imported)
        return tl::unexpected(toString(imported.error()));
    if (!imported->architecture)
        return tl::unexpected((snapshot / *pick).string() + ": the file describes no model architecture");
    ModelProfile p = modelProfileFromImport(*imported);
    p.id = repo.id + "@" + snapshot.filename().string() + ":" + tag; // re-resolvable
    p.name = repo.id + ":" + tag;
    p.source = "hf-cache " + repo.id + "@" + snapshot.filename().string() + " " + *pick + " " + imported->format + " " +
               imported->formatVersion + " " + (snapshot / *pick).string();
    // llama.cpp -hf REPO:TAG fetches the repo's mmproj with the model (common/arg.cpp) and loads it.
    addProjectorWeights(p, *imported, projectorBeside(snapshot / *pick), "llama.cpp -hf loads the repo's mmproj");
    return p;
}

/// Adds the vision projector a GGUF model runs with (projectorBeside: the mmproj*.gguf in its
/// folder) to @p p's exact weights (stores/localstores.h addProjectorWeights).
void addProjectorBeside(ModelProfile& p, const ImportedModel& m, const std::filesystem::path& modelFile)
{
    if (m.format == "gguf")
        addProjectorWeights(p, m, projectorBeside(modelFile), "llama.cpp --mmproj");
}

/// The hub-cache import of "ORG/NAME[@REV]" (or "hf://ORG/NAME[@REV]"); nullopt when @p arg is no
/// repo id or no hub cache of the environment holds it.
std::optional<tl::expected<ModelProfile, std::string>> resolveFromHubCache(const std::string& arg)
{
    // ORG/NAME:TAG (a GGUF pick, as llama.cpp -hf spells it) looks in the cache first too.
    const auto [repoArg, tag] = splitGgufTag(arg);
    const auto repo = parseRepoId(repoArg);
    if (!repo)
        return std::nullopt;
    for (const std::filesystem::path& cache : defaultLocalStoreRoots().hubCaches) {
        const auto snapshot = findInHubCache(cache, repo->id, repo->revision);
        if (!snapshot)
            continue;
        if (!tag.empty())
            return hubCacheGguf(*repo, *snapshot, tag);
        auto imported = importModel(*snapshot);
        if (!imported)
            return tl::unexpected(toString(imported.error()));
        if (!imported->architecture)
            return tl::unexpected(snapshot->string() + ": the snapshot describes no model architecture");
        ModelProfile p = modelProfileFromImport(*imported);
        p.id = repo->id + "@" + snapshot->filename().string(); // re-resolvable: reports name the exact snapshot
        p.name = repo->id;
        p.source = "hf-cache " + repo->id + "@" + snapshot->filename().string() + " " + imported->format + " " +
                   imported->formatVersion + " " + snapshot->string();
        return p;
    }
    return std::nullopt;
}

/// The folders Ollama keeps models in (envconfig.Models(): OLLAMA_MODELS, else ~/.ollama/models),
/// whether they exist or not: for the error that says where it looked.
std::vector<std::filesystem::path> ollamaStoreCandidates()
{
    if (const std::string v = processEnv("OLLAMA_MODELS"); !v.empty())
        return {v};
    if (const std::string home = processEnv("HOME"); !home.empty())
        return {std::filesystem::path(home) / ".ollama" / "models"};
    return {};
}

/// True when @p arg is spelled as an Ollama model name: [HOST/][NAMESPACE/]MODEL[:TAG], letters,
/// digits, '.', '-', '_' (types/model/name.go), with a tag or without a '/'.
bool looksLikeOllamaName(const std::string& arg)
{
    if (arg.empty() || arg.size() > 256 || arg.front() == '.' || arg.front() == '/' || arg.find("..") != std::string::npos)
        return false;
    const bool ok = std::all_of(arg.begin(), arg.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':' || c == '/';
    });
    return ok && std::count(arg.begin(), arg.end(), ':') <= 1;
}

/// The model named @p arg in the local Ollama store ("stories:260k"; "llama3.2" is
/// "llama3.2:latest", as `ollama run` reads it); nullopt when @p arg is no Ollama name or no store
/// holds it.
std::optional<tl::expected<ModelProfile, std::string>> resolveFromOllama(const std::string& arg)
{
    if (!looksLikeOllamaName(arg))
        return std::nullopt;
    const std::string name = arg.find(':') == std::string::npos ? arg + ":latest" : arg;
    for (const std::filesystem::path& store : defaultLocalStoreRoots().ollama)
        for (const LocalModel& m : scanOllamaStore(store)) {
            if (m.name != name && m.name != arg)
                continue;
            if (m.error)
                return tl::unexpected(toString(*m.error));
            if (auto p = localModelProfile(m))
                return *p;
            return tl::unexpected(m.path.string() + " (Ollama " + name + "): the model describes no architecture");
        }
    return std::nullopt;
}

/// "ORG/NAME[@REV]", "hf://..." or "https://.../FILE.gguf" read over HTTP (header only) by the
/// default client; nullopt when @p arg names nothing remote.
std::optional<tl::expected<ModelProfile, std::string>> resolveRemote(const std::string& arg)
{
    const auto source = parseRemoteSource(arg);
    if (!source)
        return std::nullopt;
    const auto client = defaultHttpClient();
    if (!client)
        return tl::unexpected("'" + arg + "' is not in a local Hugging Face hub cache, and this build has no HTTP client to read its headers over HTTP");
    auto imported = importRemoteModel(*source, *client, remoteOptionsFromEnvironment());
    if (!imported) {
        if (source->kind == RemoteSource::Kind::HubRepo)
            return tl::unexpected("'" + arg + "' is not in a local Hugging Face hub cache; over HTTP: " + imported.error().message);
        return tl::unexpected(imported.error().message);
    }
    if (!imported->architecture)
        return tl::unexpected(safeText(arg) + ": the files describe no model architecture, so the KV cache cannot be sized");
    ModelProfile p = modelProfileFromImport(*imported);
    if (source->kind == RemoteSource::Kind::HubRepo) {
        p.id = "hf://" + source->repoId + "@" + source->revision;
        p.name = source->repoId;
        p.source = "hf://" + source->repoId + "@" + source->revision + " (headers over HTTP) " + imported->format + " " +
                   imported->formatVersion;
    } else {
        p.id = source->url;
        p.source = source->url + " (header over HTTP) " + imported->format + " " + imported->formatVersion;
    }
    return p;
}

} // namespace

std::optional<RepoId> parseRepoId(const std::string& arg)
{
    std::string s = arg;
    if (s.starts_with("hf://"))
        s = s.substr(5);
    RepoId r;
    if (const auto at = s.find('@'); at != std::string::npos) {
        r.revision = s.substr(at + 1);
        s = s.substr(0, at);
        if (r.revision.empty())
            return std::nullopt;
    }
    const auto slash = s.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos)
        return std::nullopt;
    // Hub repo names: letters, digits, '-', '_', '.'; no "--" or ".." (huggingface_hub validate_repo_id).
    const auto ok = [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; };
    if (!std::all_of(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(slash), ok) ||
        !std::all_of(s.begin() + static_cast<std::ptrdiff_t>(slash) + 1, s.end(), ok) || s.find("..") != std::string::npos ||
        s.find("--") != std::string::npos || s.front() == '.' || s.front() == '-')
        return std::nullopt;
    const auto revOk = [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/'; };
    if (!std::all_of(r.revision.begin(), r.revision.end(), revOk) || r.revision.find("..") != std::string::npos)
        return std::nullopt;
    // A path to a model file that does not exist is not a repo id ("dir/model.gguf").
    for (const char* ext : {".gguf", ".json", ".safetensors", ".bin", ".pt", ".pth"})
        if (s.ends_with(ext))
            return std::nullopt;
    r.id = s;
    return r;
}

tl::expected<ModelProfile, std::string> resolveModel(const std::string& arg, const ProfileSet& profiles)
{
    if (const ModelProfile* p = profiles.findModel(arg))
        return *p;
    std::error_code ec;
    if (!std::filesystem::exists(arg, ec) && ec.value() == ELOOP)
        return tl::unexpected(safeText(arg) + ": too many levels of symbolic links");
    if (!std::filesystem::exists(arg, ec)) {
        if (auto cached = resolveFromHubCache(arg))
            return *cached;
        if (auto ollama = resolveFromOllama(arg))
            return *ollama;
        if (auto remote = resolveRemote(arg))
            return *remote;
        if (looksLikeOllamaName(arg) && arg.find(':') != std::string::npos) {
            std::string looked;
            for (const std::filesystem::path& p : ollamaStoreCandidates()) {
                std::error_code e;
                looked += (looked.empty() ? "" : ", ") + p.string() + (std::filesystem::is_directory(p, e) ? "" : " (absent)");
            }
            return tl::unexpected("unknown model '" + safeText(arg) + "': not a profile id, no such file, and no Ollama model of that "
                                  "name in " + (looked.empty() ? std::string("any Ollama store (HOME is not set)") : looked) +
                                  " (OLLAMA_MODELS, else ~/.ollama/models; list them with `headroom-cli models --local`)");
        }
        if (parseRepoId(arg))
            return tl::unexpected("unknown model '" + safeText(arg) + "': not a profile id, no such file, and not in a local Hugging Face hub cache "
                                  "(HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub; list them with `headroom-cli models --local`)");
        return tl::unexpected("unknown model '" + safeText(arg) + "': not a profile id (list them with `headroom-cli models`) and no such file");
    }
    auto imported = importModel(arg);
    if (!imported)
        return tl::unexpected(toString(imported.error()));
    if (!imported->architecture)
        return tl::unexpected(safeText(arg) + ": the file describes no model architecture ("
                              + (imported->architectureName.empty() ? std::string("no hyperparameters")
                                                                    : "no " + imported->architectureName + " hyperparameters")
                              + "), so its KV cache cannot be sized");
    if (imported->format == "gguf" && imported->tensors.empty())
        return tl::unexpected(safeText(arg) + ": no tensors: a tokenizer/vocabulary-only GGUF holds no weights to plan "
                              "(use the model's own GGUF)");
    ModelProfile profile = modelProfileFromImport(*imported);
    profile.localPath = arg;
    addProjectorBeside(profile, *imported, std::filesystem::path(arg));
    return profile;
}

std::string sizeProblem(std::string_view text)
{
    if (parseSize(text))
        return {};
    std::string_view body = text;
    const bool negative = !body.empty() && body.front() == '-';
    if (negative)
        body.remove_prefix(1);
    // Shaped like a size: digits (one '.', group separators), then a unit parseSize knows.
    const std::size_t unitAt = std::min(body.find_first_not_of("0123456789.,_"), body.size());
    const std::string_view number = body.substr(0, unitAt);
    const bool shaped = number.find_first_of("0123456789") != std::string_view::npos
        && std::count(number.begin(), number.end(), '.') <= 1 && parseSize("1" + std::string(body.substr(unitAt)));
    if (shaped && negative)
        return "a size cannot be negative";
    if (shaped)
        return "more than 2^64 bytes (16 EiB)";
    return "expected a size such as 8GiB, 24GB or 16384MiB";
}

tl::expected<Card, std::string> resolveCard(const std::string& arg, const ProfileSet& profiles)
{
    if (const Card* c = profiles.findCard(arg))
        return *c;
    // No GPU: the host's CPU (card.h hostCard); the bandwidth is the request's --host-bandwidth,
    // set by the face that knows it, else the default dual-channel DDR5-5600.
    if (arg == kHostCardId)
        return hostCard(kDefaultHostBandwidthGBps);
    if (const auto size = parseSize(arg); size && size->value > 0) {
        if (const std::string problem = cardSizeProblem(size->value); !problem.empty())
            return tl::unexpected("card size '" + safeText(arg) + "': " + problem);
        return anonymousCard(arg, *size);
    }
    if (!arg.empty() && arg.front() == '-' && parseSize(arg.substr(1)))
        return tl::unexpected("card size '" + arg + "': a size must be positive, such as 8GiB or 24GB");
    if (const auto size = parseSize(arg); size && size->value == 0)
        return tl::unexpected("card size '" + arg + "': a size must be positive, such as 8GiB or 24GB");
    if (sizeProblem(arg).rfind("more than", 0) == 0)
        return tl::unexpected("card size '" + arg + "': " + sizeProblem(arg));
    return tl::unexpected("unknown card '" + arg + "': not a profile id (list them with `headroom-cli cards`) nor a size such as 8GiB or 24GB");
}

namespace {

/// Whether @p version is shaped like an engine version: a release (0.6, v0.10.1.1, 0.6.3.post1,
/// 0.11.0rc2.dev17+g1234abc: PEP 440 as vLLM/SGLang/TGI/TensorRT-LLM tag their wheels), a llama.cpp
/// build (b4000, its release tags) or a commit (7 to 40 hex digits, as the profiles name current
/// llama.cpp and Ollama). Anything else ("abc", "latest") is refused rather than compared as a
/// version no profile has.
bool versionShaped(const std::string& version)
{
    static const std::regex release(R"(v?[0-9]+(\.[0-9]+)*([.-]?(rc|post|dev|a|b)[0-9]*)*(\+[0-9a-z.]+)?)");
    static const std::regex build(R"(b[0-9]+)");
    static const std::regex commit(R"([0-9a-f]{7,40})");
    return std::regex_match(version, release) || std::regex_match(version, build) || std::regex_match(version, commit);
}

} // namespace

tl::expected<EnginePolicy, std::string> resolveEngine(const std::string& arg, const ProfileSet& profiles)
{
    const std::size_t at = arg.find('@');
    const std::string name = arg.substr(0, at);
    const EnginePolicy* base = profiles.findEngine(name);
    if (!base)
        return tl::unexpected("unknown engine '" + name + "': list them with `headroom-cli engines`, or use --reserve SIZE");
    if (at == std::string::npos)
        return *base;
    const std::string version = arg.substr(at + 1);
    if (version.empty() || version.size() > 48 || !versionShaped(version))
        return tl::unexpected("--engine '" + safeText(arg.substr(0, 64)) + "': expected NAME@VERSION with a release (vllm@0.6, "
                              "tgi@2.4.0), a llama.cpp build (llama.cpp@b4000) or a commit, found version '"
                              + safeText(version.substr(0, 48)) + "'");
    // A profile with an explicit range covering the version, else the named one when it covers it.
    const EnginePolicy* chosen = nullptr;
    std::string ranges;
    for (const EnginePolicy& e : profiles.engines) {
        if (e.kind != base->kind || (e.versionFrom.empty() && e.versionUntil.empty()))
            continue;
        ranges += (ranges.empty() ? "" : ", ") + e.id + " [" + (e.versionFrom.empty() ? "..." : e.versionFrom) + ", "
            + (e.versionUntil.empty() ? "current" : e.versionUntil) + ")";
        if (!chosen && coversVersion(e, version))
            chosen = &e;
    }
    if (!chosen && coversVersion(*base, version))
        chosen = base;
    if (!chosen)
        return tl::unexpected("no " + base->name + " profile covers version " + version + " (profiles: "
                              + (ranges.empty() ? base->id + " " + base->version : ranges) + ")");
    EnginePolicy out = *chosen;
    out.requestedVersion = version;
    return out;
}

tl::expected<WeightFormat, std::string> resolveFormat(const std::string& arg, const ModelProfile& model)
{
    std::string id = arg;
    if (id.empty())
        id = model.exactWeights ? model.exactWeights->formatId : model.defaultFormat;
    if (id.empty())
        id = "fp16";
    if (auto f = findFormat(id))
        return *f;
    if (arg.empty() && model.exactWeights) {
        // A mix of tensor types read from files (e.g. a GGUF Q4_K_M): exact bytes, no single format.
        WeightFormat f;
        f.id = id;
        f.description = "as stored in the model's files";
        f.kind = FormatKind::Ggml;
        f.ggmlBlockSize = 1;
        f.ggmlTypeSize = 2;
        return f;
    }
    return tl::unexpected("unknown weight format '" + id + "': list them with `headroom-cli formats`");
}

tl::expected<KvDtype, std::string> resolveKvDtype(const std::string& arg)
{
    if (auto d = findKvDtype(arg.empty() ? "fp16" : arg))
        return *d;
    return tl::unexpected("unknown KV dtype '" + arg + "': use fp32, fp16, bf16, fp8, q8_0, q4_0, q4_1, q5_0, q5_1 or iq4_nl");
}

} // namespace headroom
