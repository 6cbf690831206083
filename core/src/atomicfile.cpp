#include "headroom/core/atomicfile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace headroom {

namespace {

std::string systemError(const std::string& what, const std::filesystem::path& path, int err)
{
    return what + " " + path.string() + ": " + std::strerror(err);
}

} // namespace

tl::expected<void, std::string> writeFileAtomically(const std::filesystem::path& path, std::string_view content)
{
    if (path.empty())
        return tl::unexpected(std::string("cannot write a file with an empty name"));
    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    std::string pattern = (folder / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = ::mkstemp(name.data());
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
    if (::fchmod(fd, 0644) != 0)
        return failWith(systemError("cannot set the mode of", tmp, errno));
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
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return {};
}

} // namespace headroom
