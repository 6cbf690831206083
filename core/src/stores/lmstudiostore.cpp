// LM Studio's models folder: ~/.lmstudio/models/PUBLISHER/REPO/ holding *.gguf files (and
// mmproj*.gguf projectors), or an MLX/safetensors model directory. Layout: LM Studio docs
// https://lmstudio.ai/docs/basics/import-model ("~/.lmstudio/models/publisher/model/model-file.gguf").
#include "headroom/core/stores/localstores.h"

#include "storeshared.h"

namespace headroom {

namespace fs = std::filesystem;

std::vector<LocalModel> scanLmStudio(const fs::path& modelsDir)
{
    std::vector<LocalModel> out;
    for (const fs::path& publisher : stores::subfolders(modelsDir))
        for (const fs::path& repo : stores::subfolders(publisher)) {
            if (out.size() >= kLocalStoreMaxModels)
                return out;
            stores::addFolderModels(LocalStoreKind::LmStudio, repo,
                                    publisher.filename().string() + "/" + repo.filename().string(), out);
        }
    return out;
}

} // namespace headroom
