#include "headroom/core/atomicfile.h"

#include "headroom/core/importers/regularfile.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace headroom {

namespace {

std::string systemError(const std::string& what, const std::filesystem::path& path, int err)
{
    return what + " " + path.string() + ": " + std::strerror(err);
}

/// The process's umask, read without changing it (umask(2) would race with other threads).
mode_t currentUmask()
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("Umask:", 0) == 0)
            return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8) & 0777);
    return 022;
}

/// Removes temporary files left beside @p name in @p folder by writers that died (kill -9, power
/// loss): ".NAME.tmp-PID-XXXXXX" whose PID no longer runs. A file of a live writer is kept.
void removeStaleTemporaries(const std::filesystem::path& folder, const std::string& prefix)
{
    DIR* dir = ::opendir(folder.c_str());
    if (!dir)
        return;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name.rfind(prefix, 0) != 0)
            continue;
        char* end = nullptr;
        const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
        if (pid <= 0 || !end || *end != '-' || pid == ::getpid())
            continue;
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            ::unlinkat(::dirfd(dir), name.c_str(), 0);
    }
    ::closedir(dir);
}

} // namespace

tl::expected<void, std::string> writeFileAtomically(const std::filesystem::path& requested, std::string_view content)
{
    if (requested.empty())
        return tl::unexpected(std::string("cannot write a file with an empty name"));
    // A symbolic link is followed: its target is replaced, the link is kept.
    std::filesystem::path path = requested;
    struct stat st {};
    bool exists = ::lstat(path.c_str(), &st) == 0;
    if (exists && S_ISLNK(st.st_mode)) {
        // canonical, not weakly_canonical: a dangling link would resolve to itself.
        std::error_code ec;
        const std::filesystem::path target = std::filesystem::canonical(path, ec);
        if (ec) {
            std::error_code readEc;
            const std::filesystem::path to = std::filesystem::read_symlink(path, readEc);
            if (ec.value() == ENOENT && !readEc)
                return tl::unexpected(requested.string() + " is a symbolic link to " + to.string() + ", which does not exist: not written");
            return tl::unexpected(systemError("cannot resolve the link", path, ec.value()));
        }
        path = target;
        exists = ::lstat(path.c_str(), &st) == 0;
    }
    // Only a regular file is replaced: renaming over /dev/null (as root), a FIFO or a socket
    // would swap a system object for a plain file.
    if (exists && !S_ISREG(st.st_mode))
        return tl::unexpected(requested.string() + " is " + specialFileKind(path) + ", not a regular file: not replaced");
    const mode_t mode = exists ? (st.st_mode & 07777) : (0666 & ~currentUmask());

    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::string prefix = "."; // appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "." + string
    prefix += path.filename().string();
    prefix += ".tmp-";
    removeStaleTemporaries(folder, prefix);
    std::string pattern = (folder / (prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0)
        return tl::unexpected(systemError("cannot create a temporary file in", folder, errno));
    const std::filesystem::path tmp(name.data());
    const auto failWith = [&](const std::string& message) -> tl::expected<void, std::string> {
        ::close(fd);
        ::unlink(tmp.c_str());
        return tl::unexpected(message);
    };

    const char* data = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, data, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return failWith(systemError("cannot write", tmp, errno));
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fchmod(fd, mode) != 0)
        return failWith(systemError("cannot set the mode of", tmp, errno));
    if (exists && (st.st_uid != ::geteuid() || st.st_gid != ::getegid()))
        (void)::fchown(fd, st.st_uid, st.st_gid); // keeps the owner where allowed (root); else ours
    if (::fsync(fd) != 0)
        return failWith(systemError("cannot flush", tmp, errno));
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return tl::unexpected(systemError("cannot close", tmp, err));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return tl::unexpected(systemError("cannot write", path, err));
    }
    // Make the rename itself durable; a failure here leaves a complete file, so it is not an error.
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return {};
}

} // namespace headroom
