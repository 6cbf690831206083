#pragma once
/// @file atomicfile.h
/// Writes a file so that readers see either the old file or the complete new one, never a
/// half-written one: every report, CSV and flags file Headroom writes goes through here.

#include <tl/expected.hpp>

#include <filesystem>
#include <string>
#include <string_view>

namespace headroom {

/// Writes @p content to @p path atomically: a temporary file ".NAME.tmp-PID-XXXXXX" created next
/// to @p path (same folder, so the same file system) is written in full, flushed to disk with
/// fsync, given the mode of the file it replaces (a new file: 0666 less the umask) and, where
/// allowed, its owner, then renamed over @p path (rename(2) replaces the target atomically on
/// POSIX), and the folder is fsync'd so that the rename survives a crash. A symbolic link is
/// followed (its target is replaced, the link kept). Only a regular file is replaced: a device
/// (`-o /dev/null`), a FIFO, a socket or a folder is refused and left as it is. Temporary files
/// of earlier writers of the same name that died (their PID no longer runs: kill -9, a crash) are
/// removed first. On any failure the temporary file is removed and @p path is left as it was.
/// @return nothing, or an error naming the path and the system's reason ("cannot create ...:
///         Permission denied", "/dev/null is a character device, not a regular file: not replaced").
tl::expected<void, std::string> writeFileAtomically(const std::filesystem::path& path, std::string_view content);

} // namespace headroom
