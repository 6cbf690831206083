#include "headroom/core/importers/importerror.h"
#include "headroom/core/importers/importedmodel.h"

#include "headroom/core/importers/regularfile.h"

#include "importutil.h"

#include <algorithm>
#include <cstdio>

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

tl::expected<std::string, ImportError> readFileHead(const std::filesystem::path& path, std::uint64_t maxBytes)
{
    auto file = RegularFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    return file->readStringAt(0, std::min(file->sizeBytes(), maxBytes));
}

tl::expected<std::string, ImportError> readSmallFile(const std::filesystem::path& path, std::uint64_t maxBytes)
{
    auto file = RegularFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    const std::uint64_t size = file->sizeBytes();
    if (size > maxBytes)
        return tl::unexpected(makeError(ImportErrorCode::BadValue, path.string(),
                                        "file is " + std::to_string(size) + " bytes, expected at most " +
                                            std::to_string(maxBytes)));
    // One byte more than the size: a file that grows while it is read is still bounded.
    auto text = file->readStringAt(0, size + 1);
    if (text && text->size() != size)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "the file changed while it was read"));
    return text;
}

std::string legacyGgmlContainer(std::string_view head)
{
    if (head.size() < 4)
        return {};
    std::string container;
    if (head.substr(0, 4) == "lmgg")
        container = "GGML";
    else if (head.substr(0, 4) == "fmgg")
        container = "GGMF";
    else if (head.substr(0, 4) == "tjgg")
        container = "GGJT";
    else
        return {};
    std::uint32_t version = 0;
    if (container != "GGML" && head.size() >= 8)
        for (int i = 3; i >= 0; --i)
            version = (version << 8) | static_cast<unsigned char>(head[4 + static_cast<std::size_t>(i)]);
    const bool versioned = container != "GGML" && head.size() >= 8;
    const std::string name = container + (versioned ? " v" + std::to_string(version) : std::string());
    const std::string what = "a " + name + " file, llama.cpp's model format before GGUF (2023), not GGUF: ";
    if (container == "GGJT" && version >= 3)
        return what + "its blocks are today's (GGJT v3 came with llama.cpp PR 1508), but no engine loads the format any "
                      "more: convert it with llama.cpp's convert_llama_ggml_to_gguf.py, then plan the .gguf";
    return what + "its q4_0, q4_1 and q8_0 blocks are those of before llama.cpp PR 1508 (2023-05-19), 20, 24 and 36 bytes "
                  "per 32 values against today's 18, 20 and 34 (q5_0/q5_1 are 22/24 as today), and no engine loads it: "
                  "convert_llama_ggml_to_gguf.py converts only unquantized files of this age, so re-quantize the "
                  "original weights";
}

} // namespace importers
} // namespace headroom
