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
            const std::string prefix = publisher.filename().string() + "/" + repo.filename().string();
            if (stores::isModelDirectory(repo)) {
                LocalModel m;
                m.store = LocalStoreKind::LmStudio;
                m.name = prefix;
                m.path = repo;
                stores::importEntry(m);
                out.push_back(std::move(m));
                continue;
            }
            const fs::path projector = stores::projectorIn(repo);
            for (const fs::path& f : stores::modelGgufFiles(repo)) {
                LocalModel m;
                m.store = LocalStoreKind::LmStudio;
                m.name = prefix + "/" + f.filename().string();
                m.path = f;
                m.projectorPath = projector;
                stores::importEntry(m);
                out.push_back(std::move(m));
            }
        }
    return out;
}

} // namespace headroom
