#pragma once
/// @file boundedfile.h
/// Reading a whole file that came from a user (a report, a probe or speed block): only a regular
/// file, only up to a size.

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace headroom {

/// The contents of the regular file at @p path, at most @p maxBytes long. A FIFO, a device
/// (/dev/zero), a socket or a folder is refused without blocking (opened O_NONBLOCK, checked with
/// fstat on the open descriptor), as is a larger file.
/// @return the bytes, or an error naming the path ("PATH: not a regular file [read-failed]").
tl::expected<std::string, std::string> readBoundedFile(const std::filesystem::path& path, std::uint64_t maxBytes);

} // namespace headroom
