#pragma once
/// @file importedprofile.h
/// A model read from its own files (importedmodel.h) as the profile every face plans with.

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/modelprofile.h"

namespace headroom {

/// The profile of @p imported: id = the path (re-resolvable by resolveModel), name = the model's
/// own name (GGUF general.name, config _name_or_path) else its file or folder name, source =
/// "FORMAT VERSION PATH", the architecture, and the exact weights when the files gave them.
ModelProfile modelProfileFromImport(const ImportedModel& imported);

} // namespace headroom
