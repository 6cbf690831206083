#include "headroom/core/importers/importedmodel.h"

#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/importers/modeldirectory.h"

#include "headroom/core/safetext.h"

#include "importutil.h"

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace headroom {

using importers::makeError;

namespace {

/// Every string of @p model that came from a file or a path, made safe to print and serialise
/// (safetext.h): a GGUF architecture or tensor name, a file name, need not be UTF-8.
ImportedModel safeModel(ImportedModel model)
{
    for (std::string* s : {&model.format, &model.formatVersion, &model.path, &model.architectureName, &model.contentHash,
                           &model.modelName})
        *s = safeText(*s);
    if (model.weightFormatId)
        model.weightFormatId = safeText(*model.weightFormatId);
    for (std::string& w : model.warnings)
        w = safeText(w);
    for (ImportedTensor& t : model.tensors) {
        t.name = safeText(t.name);
        t.type = safeText(t.type);
    }
    if (model.architecture)
        model.architecture->family = safeText(model.architecture->family);
    auto safeKeys = [](auto& map) {
        bool unsafe = false;
        for (const auto& [key, value] : map)
            unsafe = unsafe || !isSafeText(key);
        if (!unsafe)
            return;
        std::remove_reference_t<decltype(map)> safe;
        for (auto& [key, value] : map)
            safe[safeText(key)] += value;
        map = std::move(safe);
    };
    safeKeys(model.bytesByType);
    safeKeys(model.tensorsByType);
    return model;
}

tl::expected<ImportedModel, ImportError> importByKind(const std::filesystem::path& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        // exists() sets ec for what is neither there nor absent: a loop of symbolic links (ELOOP).
        if (ec && ec.value() == ELOOP)
            return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "too many levels of symbolic links"));
        if (ec && ec.value() != ENOENT && ec.value() != ENOTDIR)
            return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), ec.message()));
        return tl::unexpected(makeError(ImportErrorCode::FileNotFound, path.string(), "no such file or directory"));
    }
    if (fs::is_directory(path, ec))
        return importModelDirectory(path);
    const std::string name = path.filename().string();
    // A container of before GGUF says what it is, whatever its name (.bin, or renamed .gguf).
    if (fs::is_regular_file(path, ec)) {
        auto head = importers::readFileHead(path, 8);
        if (!head)
            return tl::unexpected(head.error());
        if (const std::string legacy = importers::legacyGgmlContainer(*head); !legacy.empty())
            return tl::unexpected(makeError(ImportErrorCode::UnsupportedFormat, path.string(), legacy));
    }
    if (name.ends_with(".gguf"))
        return importGguf(path);
    if (name.ends_with(".safetensors"))
        return importSafetensorsFile(path);
    if (name.ends_with(".safetensors.index.json"))
        return importModelDirectory(path.parent_path().empty() ? fs::path(".") : path.parent_path());
    if (name.ends_with(".json"))
        return importHfConfig(path);
    // Sniff: "GGUF" magic, or a safetensors header ('{' after 8 bytes). Only a regular file is
    // opened: a FIFO would block the open, a device would never end.
    auto head = importers::readFileHead(path, 9);
    if (!head)
        return tl::unexpected(head.error());
    if (head->size() >= 4 && std::memcmp(head->data(), "GGUF", 4) == 0)
        return importGguf(path);
    if (head->size() == 9 && (*head)[8] == '{')
        return importSafetensorsFile(path);
    return tl::unexpected(makeError(ImportErrorCode::UnsupportedFormat, path.string(),
                                    "expected a model directory, a config.json, a .safetensors or a .gguf file"));
}

} // namespace

tl::expected<ImportedModel, ImportError> importModel(const std::filesystem::path& path)
{
    auto model = importByKind(path);
    if (!model)
        return model;
    return safeModel(std::move(*model));
}

} // namespace headroom
