#include "headroom/core/importers/importerror.h"
#include "headroom/core/importers/importedmodel.h"

#include "importutil.h"

#include <cstdio>
#include <fstream>
#include <system_error>

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

tl::expected<std::string, ImportError> readSmallFile(const std::filesystem::path& path, std::uint64_t maxBytes)
{
    auto size = regularFileSize(path);
    if (!size)
        return tl::unexpected(size.error());
    if (*size > maxBytes)
        return tl::unexpected(makeError(ImportErrorCode::BadValue, path.string(),
                                        "file is " + std::to_string(*size) + " bytes, expected at most " +
                                            std::to_string(maxBytes)));
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "cannot open for reading"));
    std::string text(static_cast<std::size_t>(*size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (static_cast<std::uint64_t>(in.gcount()) != *size)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "short read"));
    return text;
}

} // namespace importers
} // namespace headroom
