// Ollama's model store (ollama at fb307609): manifests/HOST/NAMESPACE/MODEL/TAG, each a Docker v2
// manifest whose layers name blobs/sha256-HEX files (manifest/manifest.go, manifest/paths.go,
// types/model/name.go).
#include "headroom/core/stores/localstores.h"

#include "storeshared.h"

#include "importers/importutil.h"
#include "importers/jsonutil.h"

#include <algorithm>

namespace headroom {

namespace fs = std::filesystem;

namespace {

constexpr const char* kModelMediaType = "application/vnd.ollama.image.model";
constexpr const char* kProjectorMediaType = "application/vnd.ollama.image.projector";

/// types/model/name.go DisplayShortest: MODEL:TAG for registry.ollama.ai/library, NAMESPACE/MODEL:TAG
/// for another namespace there, HOST/NAMESPACE/MODEL:TAG elsewhere.
std::string displayName(const std::string& host, const std::string& ns, const std::string& model, const std::string& tag)
{
    std::string s;
    if (host != "registry.ollama.ai")
        s = host + "/" + ns + "/";
    else if (ns != "library")
        s = ns + "/";
    return s + model + ":" + tag;
}

/// manifest/paths.go BlobsPath: only "sha256:" or "sha256-" followed by 64 hex digits.
bool isBlobDigest(const std::string& d)
{
    if (d.size() != 71 || !d.starts_with("sha256") || (d[6] != ':' && d[6] != '-'))
        return false;
    return std::all_of(d.begin() + 7, d.end(), [](unsigned char c) { return std::isxdigit(c); });
}

struct ManifestLayer {
    std::string mediaType;
    std::string digest;
    std::uint64_t sizeBytes = 0;
};

tl::expected<std::vector<ManifestLayer>, ImportError> readManifest(const fs::path& file)
{
    auto text = importers::readSmallFile(file, kOllamaMaxManifestBytes);
    if (!text)
        return tl::unexpected(text.error());
    auto json = importers::parseJson(*text, file.string());
    if (!json)
        return tl::unexpected(json.error());
    if (!json->is_object())
        return tl::unexpected(importers::makeError(ImportErrorCode::BadJson, file.string(), "expected a manifest object"));
    try {
        importers::JsonObject root(*json, file.string());
        if (auto v = root.uintOf("schemaVersion"); v && *v != 2)
            return tl::unexpected(importers::makeError(ImportErrorCode::UnsupportedVersion, file.string(),
                                                       "manifest schemaVersion " + std::to_string(*v) + ", expected 2",
                                                       std::nullopt, "schemaVersion"));
        const nlohmann::json* layers = root.arrayOf("layers");
        if (!layers)
            return tl::unexpected(importers::makeError(ImportErrorCode::MissingKey, file.string(), "manifest has no layers", std::nullopt, "layers"));
        std::vector<ManifestLayer> out;
        for (std::size_t i = 0; i < layers->size(); ++i) {
            const auto& l = (*layers)[i];
            if (!l.is_object())
                continue;
            importers::JsonObject o(l, file.string(), "layers[" + std::to_string(i) + "]");
            out.push_back({o.stringOf("mediaType").value_or(""), o.stringOf("digest").value_or(""), o.uintOf("size").value_or(0)});
        }
        return out;
    } catch (const importers::JsonFailure& f) {
        return tl::unexpected(f.error);
    }
}

fs::path blobPath(const fs::path& modelsDir, std::string digest)
{
    digest[6] = '-';
    return modelsDir / "blobs" / digest;
}

LocalModel entryFor(const fs::path& modelsDir, const fs::path& manifest, const std::string& name)
{
    LocalModel m;
    m.store = LocalStoreKind::Ollama;
    m.name = name;
    m.path = manifest;
    auto layers = readManifest(manifest);
    if (!layers) {
        m.error = layers.error();
        return m;
    }
    const ManifestLayer* model = nullptr;
    const ManifestLayer* projector = nullptr;
    for (const ManifestLayer& l : *layers) {
        if (l.mediaType == kModelMediaType && !model)
            model = &l;
        else if (l.mediaType == kProjectorMediaType && !projector)
            projector = &l;
    }
    if (!model) {
        m.error = importers::makeError(ImportErrorCode::MissingKey, manifest.string(),
                                       std::string("no layer of media type ") + kModelMediaType +
                                           " (a safetensors-based or cloud model)",
                                       std::nullopt, "layers");
        return m;
    }
    for (const ManifestLayer* l : {model, projector}) {
        if (l && !isBlobDigest(l->digest)) {
            m.error = importers::makeError(ImportErrorCode::BadValue, manifest.string(),
                                           "digest '" + l->digest.substr(0, 80) + "' is not sha256:<64 hex digits>",
                                           std::nullopt, "digest");
            return m;
        }
    }
    m.revision = model->digest.substr(7, 12);
    m.path = blobPath(modelsDir, model->digest);
    if (projector)
        m.projectorPath = blobPath(modelsDir, projector->digest);
    std::error_code ec;
    for (const ManifestLayer* l : {model, projector}) {
        if (!l)
            continue;
        const fs::path blob = blobPath(modelsDir, l->digest);
        const auto size = fs::file_size(blob, ec);
        if (!ec && size != l->sizeBytes)
            m.warnings.push_back(blob.filename().string() + " is " + std::to_string(size) + " bytes; the manifest says " +
                                 std::to_string(l->sizeBytes));
    }
    stores::importEntry(m);
    return m;
}

} // namespace

std::vector<LocalModel> scanOllamaStore(const fs::path& modelsDir)
{
    std::vector<LocalModel> out;
    const fs::path manifests = modelsDir / "manifests";
    for (const fs::path& host : stores::subfolders(manifests))
        for (const fs::path& ns : stores::subfolders(host))
            for (const fs::path& model : stores::subfolders(ns)) {
                std::vector<fs::path> tags;
                std::error_code ec;
                // Every tag but a folder: a FIFO, a device or a link to one is listed with the
                // error that refuses it (the manifest reader opens regular files only), not hidden.
                for (fs::directory_iterator it(model, ec), end; !ec && it != end; it.increment(ec))
                    if (!it->is_directory(ec))
                        tags.push_back(it->path());
                std::sort(tags.begin(), tags.end());
                for (const fs::path& tag : tags) {
                    if (out.size() >= kLocalStoreMaxModels)
                        return out;
                    out.push_back(entryFor(modelsDir, tag,
                                           displayName(host.filename().string(), ns.filename().string(),
                                                       model.filename().string(), tag.filename().string())));
                }
            }
    return out;
}

} // namespace headroom
