#include "headroom/core/importers/regularfile.h"

#include "importutil.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headroom {

using importers::makeError;

namespace {

/// "a FIFO", "a character device": what a file of @p mode is; empty for a regular file.
std::string kindOfMode(mode_t mode)
{
    if (S_ISREG(mode))
        return {};
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

} // namespace

std::string specialFileKind(const std::filesystem::path& path)
{
    struct stat link {};
    if (::lstat(path.c_str(), &link) != 0)
        return {};
    if (!S_ISLNK(link.st_mode))
        return kindOfMode(link.st_mode);
    struct stat target {};
    if (::stat(path.c_str(), &target) != 0)
        return errno == ELOOP ? "a loop of symbolic links" : "a dangling symbolic link";
    const std::string kind = kindOfMode(target.st_mode);
    return kind.empty() ? kind : "a symbolic link to " + kind;
}

tl::expected<RegularFile, ImportError> RegularFile::open(const std::filesystem::path& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            return tl::unexpected(makeError(ImportErrorCode::FileNotFound, path.string(), "no such file"));
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(),
                                        std::string("cannot open for reading: ") + std::strerror(err)));
    }
    RegularFile file(fd, 0, path); // closes fd on every return below
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), std::string("cannot stat: ") + std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "not a regular file"));
    file.m_sizeBytes = static_cast<std::uint64_t>(st.st_size);
    return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_sizeBytes(other.m_sizeBytes), m_path(std::move(other.m_path)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = std::exchange(other.m_fd, -1);
        m_sizeBytes = other.m_sizeBytes;
        m_path = std::move(other.m_path);
    }
    return *this;
}

RegularFile::~RegularFile()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

tl::expected<std::size_t, ImportError> RegularFile::readAt(std::uint64_t offset, void* out, std::size_t n) const
{
    auto* dst = static_cast<char*>(out);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(m_fd, dst + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return tl::unexpected(makeError(ImportErrorCode::ReadFailed, m_path.string(),
                                            std::string("read failed: ") + std::strerror(errno), offset + got));
        if (r == 0)
            break;
        got += static_cast<std::size_t>(r);
    }
    return got;
}

tl::expected<std::string, ImportError> RegularFile::readStringAt(std::uint64_t offset, std::uint64_t n) const
{
    std::string text(static_cast<std::size_t>(n), '\0');
    auto got = readAt(offset, text.data(), text.size());
    if (!got)
        return tl::unexpected(got.error());
    text.resize(*got);
    return text;
}

} // namespace headroom
