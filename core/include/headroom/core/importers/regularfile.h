#pragma once
/// @file regularfile.h
/// An untrusted input file opened once and read through that one descriptor (issue 13): the type
/// check (a regular file, never a FIFO, a device or a socket) and the size come from fstat on the
/// open descriptor, so a path swapped between a check and the open cannot slip a FIFO (a reader
/// that blocks forever) or /dev/zero (a read without end) past the check.

#include "headroom/core/importers/importerror.h"

#include <tl/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace headroom {

/// What a path that is not a regular file is, for a warning or a refusal: "a FIFO", "a character
/// device", "a block device", "a socket", "a folder", "a symbolic link to a FIFO" (the link is
/// followed: lstat, then stat); "a dangling symbolic link", "a loop of symbolic links"; empty
/// for a regular file (or a link to one) and for a path that does not exist.
std::string specialFileKind(const std::filesystem::path& path);

/// A regular file open for reading. Move-only; closes its descriptor when destroyed.
class RegularFile {
public:
    /// Opens @p path with O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY (a FIFO without a writer does
    /// not block the open), then fstat()s the descriptor: a path that is not a regular file is
    /// refused through that same descriptor, never re-opened by name.
    /// @return the file, or FileNotFound (no such path), or ReadFailed ("not a regular file",
    ///         "cannot open for reading: <strerror>") naming @p path.
    static tl::expected<RegularFile, ImportError> open(const std::filesystem::path& path);

    RegularFile(RegularFile&& other) noexcept;
    RegularFile& operator=(RegularFile&& other) noexcept;
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;
    ~RegularFile();

    /// Size of the file when it was opened, bytes (st_size of the descriptor).
    std::uint64_t sizeBytes() const { return m_sizeBytes; }
    /// The path it was opened by, for messages.
    const std::filesystem::path& path() const { return m_path; }

    /// Reads up to @p n bytes at byte @p offset into @p out (pread, retrying short reads and EINTR).
    /// @return the bytes read: fewer than @p n only at the end of the file; ReadFailed on an I/O error.
    tl::expected<std::size_t, ImportError> readAt(std::uint64_t offset, void* out, std::size_t n) const;

    /// Up to @p n bytes from byte @p offset as a string (fewer at the end of the file).
    tl::expected<std::string, ImportError> readStringAt(std::uint64_t offset, std::uint64_t n) const;

private:
    RegularFile(int fd, std::uint64_t sizeBytes, std::filesystem::path path)
        : m_fd(fd), m_sizeBytes(sizeBytes), m_path(std::move(path)) {}

    int m_fd = -1;
    std::uint64_t m_sizeBytes = 0;
    std::filesystem::path m_path;
};

} // namespace headroom
