#pragma once
// Helpers shared by the importers (not public API).

#include "headroom/core/importers/importerror.h"
#include "headroom/core/safetext.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace headroom::importers {

/// Builds an ImportError.
/// Builds an ImportError. Its text fields are made safe (safetext.h): they quote names read from
/// untrusted files and paths, and are printed and serialised as they are.
inline ImportError makeError(ImportErrorCode code, std::string file, std::string message,
                             std::optional<std::uint64_t> offset = std::nullopt, std::string key = {})
{
    return ImportError{code, safeText(message), safeText(file), offset, safeText(key)};
}

/// Reads a whole (small) file of at most @p maxBytes bytes: FileNotFound, ReadFailed, or
/// BadValue when the file is larger than the limit. A path that is not a regular file is refused
/// without blocking (RegularFile: opened once, checked with fstat on that descriptor): ReadFailed.
tl::expected<std::string, ImportError> readSmallFile(const std::filesystem::path& path, std::uint64_t maxBytes);

/// The first @p maxBytes bytes of a regular file (fewer when it is shorter). A path that is not a
/// regular file (a FIFO, a device, a socket) is refused without blocking: ReadFailed.
tl::expected<std::string, ImportError> readFileHead(const std::filesystem::path& path, std::uint64_t maxBytes);

} // namespace headroom::importers
