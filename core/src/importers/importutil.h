#pragma once
// Helpers shared by the importers (not public API).

#include "headroom/core/importers/importerror.h"
#include "headroom/core/safetext.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

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

/// llama.cpp's model containers before GGUF (2023): what a file starting with one of their magics
/// is, said for the user, or "" when @p head (the file's first 8 bytes or fewer) starts with none.
/// The magic is the little-endian u32 'ggml' 0x67676d6c (unversioned), 'ggmf' 0x67676d66 or
/// 'ggjt' 0x67676a74, each of the last two followed by a u32 version (llama.cpp
/// convert_llama_ggml_to_gguf.py GGMLFormat). Files before GGJT v3 store the blocks of before
/// llama.cpp PR 1508 (2023-05-19, f32 instead of f16 scales): q4_0 20 B, q4_1 24 B, q8_0 36 B per
/// 32 values (today 18, 20, 34); q5_0/q5_1 (22/24 B) were f16 from the start. GGUF, which came
/// after (PR 2398, 2023-08), never holds those layouts: the converter refuses quantized files older
/// than GGJT v3 (validate_conversion).
std::string legacyGgmlContainer(std::string_view head);

} // namespace headroom::importers
