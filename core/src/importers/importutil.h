#pragma once
// Helpers shared by the importers (not public API).

#include "headroom/core/importers/importerror.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace headroom::importers {

/// Builds an ImportError.
inline ImportError makeError(ImportErrorCode code, std::string file, std::string message,
                             std::optional<std::uint64_t> offset = std::nullopt, std::string key = {})
{
    return ImportError{code, std::move(message), std::move(file), offset, std::move(key)};
}

/// Reads a whole (small) file of at most @p maxBytes bytes: FileNotFound, ReadFailed, or
/// BadValue when the file is larger than the limit.
tl::expected<std::string, ImportError> readSmallFile(const std::filesystem::path& path, std::uint64_t maxBytes);

/// Size of a regular file, or an error (FileNotFound / ReadFailed).
tl::expected<std::uint64_t, ImportError> regularFileSize(const std::filesystem::path& path);

} // namespace headroom::importers
