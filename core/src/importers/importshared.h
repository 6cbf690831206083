#pragma once
// Bookkeeping shared by the import paths (not public API).

#include "headroom/core/importers/importedmodel.h"

namespace headroom::importers {

/// Fills tensorCount, parameters (non-parameter buffers excluded), weightsBytes, bytesByType and
/// tensorsByType from model.tensors. Throws OverflowError past 2^64 (callers catch it).
void summarizeTensors(ImportedModel& model);

/// The type holding the most bytes among 2-D tensors ("q4_K", "bf16"), or "" when none.
std::string dominantMatrixType(const ImportedModel& model);

} // namespace headroom::importers
