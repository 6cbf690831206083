#include "headroom/core/importers/safetensors.h"

#include "headroom/core/importers/regularfile.h"

#include "importutil.h"
#include "jsonutil.h"

#include <algorithm>
#include <limits>
#include <set>

namespace headroom {

using importers::makeError;

std::optional<std::uint32_t> safetensorsDtypeBytes(std::string_view dtype)
{
    // safetensors `Dtype` (tensor.rs): sizes in bytes. F4/F6 sub-byte types are not supported.
    static const std::pair<std::string_view, std::uint32_t> table[] = {
        {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},
        {"F64", 8}, {"I64", 8}, {"U64", 8},
    };
    for (const auto& [name, bytes] : table)
        if (name == dtype)
            return bytes;
    return std::nullopt;
}

bool isNonParameterBuffer(std::string_view name)
{
    auto endsWith = [&](std::string_view suffix) {
        return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
    };
    return endsWith("rotary_emb.inv_freq") || endsWith(".attn.masked_bias") ||
           (endsWith(".attn.bias") && (name.starts_with("h.") || name.find(".h.") != std::string_view::npos));
}

tl::expected<SafetensorsHeader, ImportError> parseSafetensorsHeader(std::string_view json, const std::string& fileName,
                                                                   std::optional<std::uint64_t> dataBytes)
{
    auto root = importers::parseJson(json, fileName, 8);
    if (!root)
        return tl::unexpected(root.error());
    if (!root->is_object())
        return tl::unexpected(makeError(ImportErrorCode::BadJson, fileName,
                                        std::string("the header must be a JSON object, found ") + root->type_name(), 8));
    SafetensorsHeader out;
    struct Extent {
        std::uint64_t begin, end;
        std::size_t index;
    };
    std::vector<Extent> extents;
    auto fail = [&](ImportErrorCode code, const std::string& key, std::string message) {
        return tl::unexpected(makeError(code, fileName, std::move(message), std::nullopt, key));
    };
    for (auto it = root->begin(); it != root->end(); ++it) {
        const std::string& name = it.key();
        const nlohmann::json& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object())
                return fail(ImportErrorCode::WrongKeyType, name, std::string("expected an object, found ") + v.type_name());
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string())
                    return fail(ImportErrorCode::WrongKeyType, name + "." + m.key(),
                                std::string("metadata values must be strings, found ") + m.value().type_name());
                out.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object())
            return fail(ImportErrorCode::WrongKeyType, name, std::string("expected a tensor object, found ") + v.type_name());
        auto dt = v.find("dtype");
        auto sh = v.find("shape");
        auto off = v.find("data_offsets");
        if (dt == v.end())
            return fail(ImportErrorCode::MissingKey, name + ".dtype", "tensor without dtype");
        if (sh == v.end())
            return fail(ImportErrorCode::MissingKey, name + ".shape", "tensor without shape");
        if (off == v.end())
            return fail(ImportErrorCode::MissingKey, name + ".data_offsets", "tensor without data_offsets");
        if (!dt->is_string())
            return fail(ImportErrorCode::WrongKeyType, name + ".dtype", std::string("expected a string, found ") + dt->type_name());
        const std::string dtype = dt->get<std::string>();
        auto elemBytes = safetensorsDtypeBytes(dtype);
        if (!elemBytes)
            return fail(ImportErrorCode::UnknownTensorType, name + ".dtype", "unknown dtype \"" + dtype + "\": cannot size");
        if (!sh->is_array())
            return fail(ImportErrorCode::WrongKeyType, name + ".shape", std::string("expected an array, found ") + sh->type_name());
        if (sh->size() > 8)
            return fail(ImportErrorCode::TooManyDimensions, name + ".shape",
                        std::to_string(sh->size()) + " dimensions, expected at most 8");
        ImportedTensor t;
        t.name = name;
        t.type = dtype;
        std::transform(t.type.begin(), t.type.end(), t.type.begin(), [](unsigned char ch) { return std::tolower(ch); });
        std::uint64_t elements = 1;
        for (const auto& d : *sh) {
            if (!d.is_number_unsigned())
                return fail(ImportErrorCode::BadDimension, name + ".shape", "dimension " + d.dump() + " is not a non-negative integer");
            const std::uint64_t n = d.get<std::uint64_t>();
            if (n != 0 && elements > std::numeric_limits<std::uint64_t>::max() / n)
                return fail(ImportErrorCode::Overflow, name + ".shape", "the element count overflows 64 bits");
            elements *= n;
            t.shape.push_back(n);
        }
        if (elements > std::numeric_limits<std::uint64_t>::max() / *elemBytes)
            return fail(ImportErrorCode::Overflow, name + ".shape", "the byte size overflows 64 bits");
        t.elements = elements;
        t.bytes = Bytes{elements * *elemBytes};
        if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
            return fail(ImportErrorCode::WrongKeyType, name + ".data_offsets", "expected [begin, end] of non-negative integers, found " + off->dump());
        const std::uint64_t begin = (*off)[0].get<std::uint64_t>();
        const std::uint64_t end = (*off)[1].get<std::uint64_t>();
        if (end < begin || end - begin != t.bytes.value)
            return fail(ImportErrorCode::BadTensorOffset, name + ".data_offsets",
                        "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") hold " +
                            (end < begin ? std::string("a negative extent") : std::to_string(end - begin) + " bytes") +
                            ", expected " + std::to_string(t.bytes.value) + " (" + dtype + " x " + std::to_string(elements) + ")");
        if (dataBytes && end > *dataBytes)
            return fail(ImportErrorCode::BadTensorOffset, name + ".data_offsets",
                        "tensor data ends at " + std::to_string(end) + " but the data section has " + std::to_string(*dataBytes) + " bytes");
        extents.push_back({begin, end, out.tensors.size()});
        out.tensors.push_back(std::move(t));
    }
    // The offsets must tile [0, dataBytes) without overlaps or holes (safetensors validate()).
    std::sort(extents.begin(), extents.end(), [](const Extent& x, const Extent& y) {
        return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
    });
    std::uint64_t expected = 0;
    std::vector<ImportedTensor> ordered;
    ordered.reserve(out.tensors.size());
    for (const auto& e : extents) {
        const ImportedTensor& t = out.tensors[e.index];
        if (e.begin != expected)
            return fail(ImportErrorCode::BadTensorOffset, t.name + ".data_offsets",
                        "tensor data starts at " + std::to_string(e.begin) + ", expected " + std::to_string(expected) +
                            (e.begin < expected ? " (overlaps the previous tensor)" : " (leaves a hole)"));
        expected = e.end;
        ordered.push_back(std::move(out.tensors[e.index]));
    }
    out.tensors = std::move(ordered);
    out.dataBytes = expected;
    if (dataBytes && expected != *dataBytes)
        return fail(ImportErrorCode::BadTensorOffset, "",
                    "tensors end at " + std::to_string(expected) + " but the data section has " + std::to_string(*dataBytes) + " bytes");
    out.headerBytes = 8 + json.size();
    return out;
}

tl::expected<SafetensorsHeader, ImportError> parseSafetensorsBytes(std::span<const std::uint8_t> bytes,
                                                                  const std::string& fileName, std::uint64_t fileBytes)
{
    if (fileBytes < bytes.size())
        fileBytes = bytes.size();
    if (bytes.size() < 8)
        return tl::unexpected(makeError(ImportErrorCode::Truncated, fileName,
                                        "the file ends before the 8-byte header length (" + std::to_string(bytes.size()) + " bytes)", 0));
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | bytes[static_cast<std::size_t>(i)];
    if (n == 0 || n > kSafetensorsMaxHeaderBytes || n > fileBytes - 8)
        return tl::unexpected(makeError(ImportErrorCode::BadHeaderLength, fileName,
                                        "header length " + std::to_string(n) + ", expected 1.." +
                                            std::to_string(std::min(kSafetensorsMaxHeaderBytes, fileBytes - 8)) +
                                            " (limit 100,000,000 and the file's " + std::to_string(fileBytes) + " bytes)",
                                        0));
    if (n > bytes.size() - 8)
        return tl::unexpected(makeError(ImportErrorCode::Truncated, fileName, "the header needs " + std::to_string(n) +
                                                                                  " bytes, only " + std::to_string(bytes.size() - 8) + " were read", 8));
    if (bytes[8] != '{')
        return tl::unexpected(makeError(ImportErrorCode::BadMagic, fileName,
                                        "a safetensors header starts with '{' after the length", 8));
    std::string_view json(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(n));
    auto header = parseSafetensorsHeader(json, fileName, fileBytes - 8 - n);
    if (header)
        header->contentHash = fnv1a64(bytes.data(), static_cast<std::size_t>(8 + n));
    return header;
}

tl::expected<SafetensorsHeader, ImportError> readSafetensorsHeader(const std::filesystem::path& path)
{
    // One descriptor for the type check, the size and both reads (no stat-then-open race).
    auto file = RegularFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    const std::uint64_t size = file->sizeBytes();
    std::vector<std::uint8_t> buf(8);
    auto got = file->readAt(0, buf.data(), 8);
    if (!got)
        return tl::unexpected(got.error());
    if (*got != 8)
        return parseSafetensorsBytes(std::span(buf.data(), *got), path.string(), size);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | buf[static_cast<std::size_t>(i)];
    if (n == 0 || n > kSafetensorsMaxHeaderBytes || n > size - 8)
        return parseSafetensorsBytes(buf, path.string(), size); // reports BadHeaderLength
    buf.resize(static_cast<std::size_t>(8 + n));
    got = file->readAt(8, buf.data() + 8, static_cast<std::size_t>(n));
    if (!got)
        return tl::unexpected(got.error());
    if (*got != n)
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, path.string(), "short read of the header", 8));
    return parseSafetensorsBytes(buf, path.string(), size);
}

} // namespace headroom
