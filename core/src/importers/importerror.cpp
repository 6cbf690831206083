#include "headroom/core/importers/importerror.h"
#include "headroom/core/importers/importedmodel.h"

#include "importutil.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace headroom {

const char* errorCodeName(ImportErrorCode code)
{
    switch (code) {
    case ImportErrorCode::FileNotFound: return "file-not-found";
    case ImportErrorCode::ReadFailed: return "read-failed";
    case ImportErrorCode::BadMagic: return "bad-magic";
    case ImportErrorCode::UnsupportedVersion: return "unsupported-version";
    case ImportErrorCode::Truncated: return "truncated";
    case ImportErrorCode::CountTooLarge: return "count-too-large";
    case ImportErrorCode::StringTooLong: return "string-too-long";
    case ImportErrorCode::BadValueType: return "bad-value-type";
    case ImportErrorCode::DuplicateKey: return "duplicate-key";
    case ImportErrorCode::WrongKeyType: return "wrong-key-type";
    case ImportErrorCode::BadAlignment: return "bad-alignment";
    case ImportErrorCode::TooManyDimensions: return "too-many-dimensions";
    case ImportErrorCode::BadDimension: return "bad-dimension";
    case ImportErrorCode::UnknownTensorType: return "unknown-tensor-type";
    case ImportErrorCode::Overflow: return "overflow";
    case ImportErrorCode::NestingTooDeep: return "nesting-too-deep";
    case ImportErrorCode::BadTensorOffset: return "bad-tensor-offset";
    case ImportErrorCode::DuplicateTensor: return "duplicate-tensor";
    case ImportErrorCode::BadHeaderLength: return "bad-header-length";
    case ImportErrorCode::BadJson: return "bad-json";
    case ImportErrorCode::MissingKey: return "missing-key";
    case ImportErrorCode::BadValue: return "bad-value";
    case ImportErrorCode::UnsupportedArchitecture: return "unsupported-architecture";
    case ImportErrorCode::UnsupportedFormat: return "unsupported-format";
    }
    return "unknown";
}

std::string toString(const ImportError& error)
{
    std::string out = error.file.empty() ? std::string("<input>") : error.file;
    if (error.byteOffset)
        out += ": at byte " + std::to_string(*error.byteOffset);
    if (!error.key.empty())
        out += " (key " + error.key + ")";
    out += ": ";
    out += error.message;
    out += " [";
    out += errorCodeName(error.code);
    out += "]";
    return out;
}

std::uint64_t fnv1a64(const void* data, std::size_t size, std::uint64_t seed)
{
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t h = seed;
    for (std::size_t i = 0; i < size; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

std::string hashHex(std::uint64_t hash)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
    return buf;
}

namespace importers {

tl::expected<std::uint64_t, ImportError> regularFileSize(const std::filesystem::path& path)
{
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(st))
        return tl::unexpected(makeError(ImportErrorCode::FileNotFound, path.string(), "no such file"));
    if (!std::filesystem::is_regular_file(st))
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "not a regular file"));
    auto size = std::filesystem::file_size(path, ec);
    if (ec)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "cannot stat: " + ec.message()));
    return static_cast<std::uint64_t>(size);
}

namespace {

/// A file descriptor closed on scope exit.
struct Fd {
    int fd = -1;
    ~Fd()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

/// Opens @p path for reading as a regular file: O_NONBLOCK so that a FIFO without a writer does
/// not block the open, then fstat on the descriptor (no race with a rename between check and open).
tl::expected<std::uint64_t, ImportError> openRegular(const std::filesystem::path& path, Fd& out)
{
    out.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (out.fd < 0) {
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            return tl::unexpected(makeError(ImportErrorCode::FileNotFound, path.string(), "no such file"));
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(),
                                        std::string("cannot open for reading: ") + std::strerror(err)));
    }
    struct stat st {};
    if (::fstat(out.fd, &st) != 0)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), std::string("cannot stat: ") + std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "not a regular file"));
    return static_cast<std::uint64_t>(st.st_size);
}

/// Reads up to @p n bytes from @p fd (retrying short reads); fewer only at the end of the file.
tl::expected<std::string, ImportError> readUpTo(int fd, std::uint64_t n, const std::filesystem::path& path)
{
    std::string text(static_cast<std::size_t>(n), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t r = ::read(fd, text.data() + got, text.size() - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), std::string("read failed: ") + std::strerror(errno)));
        if (r == 0)
            break;
        got += static_cast<std::size_t>(r);
    }
    text.resize(got);
    return text;
}

} // namespace

tl::expected<std::string, ImportError> readFileHead(const std::filesystem::path& path, std::uint64_t maxBytes)
{
    Fd fd;
    auto size = openRegular(path, fd);
    if (!size)
        return tl::unexpected(size.error());
    return readUpTo(fd.fd, std::min(*size, maxBytes), path);
}

tl::expected<std::string, ImportError> readSmallFile(const std::filesystem::path& path, std::uint64_t maxBytes)
{
    Fd fd;
    auto size = openRegular(path, fd);
    if (!size)
        return tl::unexpected(size.error());
    if (*size > maxBytes)
        return tl::unexpected(makeError(ImportErrorCode::BadValue, path.string(),
                                        "file is " + std::to_string(*size) + " bytes, expected at most " +
                                            std::to_string(maxBytes)));
    // One byte more than the size: a file that grows while it is read is still bounded.
    auto text = readUpTo(fd.fd, *size + 1, path);
    if (text && text->size() != *size)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "the file changed while it was read"));
    return text;
}

} // namespace importers
} // namespace headroom
