#include "headroom/core/importers/importedmodel.h"

#include "headroom/core/importers/ggufreader.h"
#include "headroom/core/importers/modeldirectory.h"

#include "importutil.h"

#include <cstring>
#include <fstream>

namespace headroom {

using importers::makeError;

tl::expected<ImportedModel, ImportError> importModel(const std::filesystem::path& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec))
        return tl::unexpected(makeError(ImportErrorCode::FileNotFound, path.string(), "no such file or directory"));
    if (fs::is_directory(path, ec))
        return importModelDirectory(path);
    const std::string name = path.filename().string();
    if (name.ends_with(".gguf"))
        return importGguf(path);
    if (name.ends_with(".safetensors"))
        return importSafetensorsFile(path);
    if (name.ends_with(".safetensors.index.json"))
        return importModelDirectory(path.parent_path().empty() ? fs::path(".") : path.parent_path());
    if (name.ends_with(".json"))
        return importHfConfig(path);
    // Sniff: "GGUF" magic, or a safetensors header ('{' after 8 bytes).
    std::ifstream in(path, std::ios::binary);
    char head[9] = {};
    in.read(head, 9);
    if (in.gcount() >= 4 && std::memcmp(head, "GGUF", 4) == 0)
        return importGguf(path);
    if (in.gcount() == 9 && head[8] == '{')
        return importSafetensorsFile(path);
    return tl::unexpected(makeError(ImportErrorCode::UnsupportedFormat, path.string(),
                                    "expected a model directory, a config.json, a .safetensors or a .gguf file"));
}

} // namespace headroom
