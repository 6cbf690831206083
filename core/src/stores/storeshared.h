#pragma once
// Helpers shared by the local-store scanners (not public API).

#include "headroom/core/stores/localstores.h"

#include <filesystem>
#include <string>
#include <vector>

namespace headroom::stores {

/// Adds the models of one folder to @p out: the folder itself when it is a model directory (named
/// @p name), else each model .gguf in it (named @p name + "/" + file, with the folder's mmproj
/// projector), imported. Returns how many were added.
std::size_t addFolderModels(LocalStoreKind store, const std::filesystem::path& dir, const std::string& name,
                            std::vector<LocalModel>& out);

/// Imports @p entry.path into entry.model (or entry.error), and the projector's bytes when
/// entry.projectorPath is set.
void importEntry(LocalModel& entry);

/// True for a folder that importModelDirectory reads: it has a config.json or a *.safetensors file.
bool isModelDirectory(const std::filesystem::path& dir);

/// The .gguf files directly in @p dir that start a model: split sets only by their first shard
/// ("-00001-of-"), projectors (mmproj*) left out. Sorted by name.
std::vector<std::filesystem::path> modelGgufFiles(const std::filesystem::path& dir);

/// The mmproj*.gguf projector directly in @p dir (the first by name), or an empty path.
std::filesystem::path projectorIn(const std::filesystem::path& dir);

/// The subfolders of @p dir, sorted by name (errors: none).
std::vector<std::filesystem::path> subfolders(const std::filesystem::path& dir);

} // namespace headroom::stores
