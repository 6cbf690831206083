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

namespace {

/// The JSON type of a SAX event, named as nlohmann's type_name() names it.
enum class JsonKind { Null, Boolean, Number, String, Array, Object };

const char* kindName(JsonKind k)
{
    static const char* const names[] = {"null", "boolean", "number", "string", "array", "object"};
    return names[static_cast<int>(k)];
}

/// One tensor object's keys as they arrive; checked at its end (SafetensorsSax::endTensor).
struct TensorFields {
    bool hasDtype = false, hasShape = false, hasOffsets = false;
    JsonKind dtypeKind = JsonKind::Null, shapeKind = JsonKind::Null, offsetsKind = JsonKind::Null;
    std::string dtype;
    std::vector<std::uint64_t> shape;        ///< the dimensions (at most 9 kept: more is refused)
    std::size_t shapeCount = 0;              ///< items of the shape array
    std::optional<std::string> badDimension; ///< the first item that is no non-negative integer, as written
    std::uint64_t offsets[2] = {0, 0};
    std::size_t offsetsCount = 0;
    bool offsetsUnsigned = true;
    std::string offsetsText;                 ///< data_offsets as written (compact, cut after ~64 bytes), for messages
};

/// SAX handler of a safetensors header (nlohmann::json::sax_parse): builds the tensors as the
/// text is read, with no DOM (a DOM costs about 10x the header: 650 MB for a 50 MB header).
/// Kept: the tensors (name, dtype, shape), one extent each, the metadata strings, and a key set
/// per open object only inside values that are skipped (unknown keys). The first semantic error
/// is recorded and the parse goes on, so that a syntax error anywhere still wins (BadJson, as
/// the DOM parse reported it); a duplicate key in any object stops the parse (DuplicateKey).
class SafetensorsSax {
public:
    using json = nlohmann::json;
    SafetensorsSax(std::string fileName, std::optional<std::uint64_t> dataBytes, std::size_t textBytes)
        : m_file(std::move(fileName)), m_dataBytes(dataBytes)
    {
        // A tensor entry takes at least ~45 bytes of text ({"dtype":"F16","shape":[],"data_offsets":[0,0]}
        // and its name): reserved once, so the vectors never reallocate (a reallocation holds the
        // old and the new block at once). Only the pages filled become resident.
        m_tensors.reserve(textBytes / 45 + 1);
        m_extents.reserve(textBytes / 45 + 1);
    }

    bool null() { return scalar(JsonKind::Null, "null"); }
    bool boolean(bool v) { return scalar(JsonKind::Boolean, v ? "true" : "false"); }
    bool number_integer(json::number_integer_t v) { return scalar(JsonKind::Number, std::to_string(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return scalar(JsonKind::Number, std::to_string(v), v); }
    bool number_float(json::number_float_t, const json::string_t& text) { return scalar(JsonKind::Number, text); }
    bool binary(json::binary_t&) { return scalar(JsonKind::String, "binary"); }
    bool string(json::string_t& v)
    {
        if (!skipping() && m_depth == 2 && m_level == Level::Metadata) {
            m_metadata.emplace(m_key, std::move(v));
            return true;
        }
        if (!skipping() && m_depth == 2 && m_level == Level::Tensor && m_field == Field::Dtype) {
            m_tensor.dtypeKind = JsonKind::String;
            m_tensor.dtype = std::move(v);
            return true;
        }
        return scalar(JsonKind::String, json(v).dump());
    }
    bool start_object(std::size_t) { return open(JsonKind::Object); }
    bool start_array(std::size_t) { return open(JsonKind::Array); }
    bool end_object() { return close(true); }
    bool end_array() { return close(false); }
    bool key(json::string_t& k);
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e)
    {
        m_syntaxError = makeError(ImportErrorCode::BadJson, m_file, std::string("invalid JSON: ") + e.what(),
                                  8 + (position > 0 ? position - 1 : 0));
        return false;
    }

    /// The header, or the first error: syntax, a duplicate key, then the first semantic error.
    tl::expected<SafetensorsHeader, ImportError> finish(bool parsed);

private:
    enum class Level { Root, Metadata, Tensor };
    enum class Field { None, Dtype, Shape, Offsets, Other };

    bool skipping() const { return m_skipBase >= 0; }
    bool fail(ImportErrorCode code, const std::string& key, std::string message)
    {
        if (!m_error)
            m_error = makeError(code, m_file, std::move(message), std::nullopt, key);
        return true;
    }
    bool duplicate(const std::string& key)
    {
        m_duplicate = key;
        return false;
    }
    /// Skips the container just opened (at m_depth) up to its close.
    bool skip(JsonKind kind)
    {
        m_skipBase = m_depth - 1;
        if (kind == JsonKind::Object)
            m_skippedKeys.emplace_back();
        return true;
    }
    /// "expected X, found KIND" for the value of m_name at depth 1.
    bool wrongTop(JsonKind kind)
    {
        return fail(ImportErrorCode::WrongKeyType, m_name,
                    std::string(m_name == "__metadata__" ? "expected an object" : "expected a tensor object") + ", found " + kindName(kind));
    }
    void appendOffset(const std::string& text)
    {
        if (m_tensor.offsetsText.size() > 64)
            return;
        m_tensor.offsetsText += (m_tensor.offsetsText.size() > 1 ? "," : "") + text;
        if (m_tensor.offsetsText.size() > 64)
            m_tensor.offsetsText += ",...";
    }
    /// The JSON type of the value of the tensor key being read (and data_offsets' text as written).
    void setFieldKind(JsonKind kind, const std::string& text)
    {
        if (m_field == Field::Dtype)
            m_tensor.dtypeKind = kind;
        else if (m_field == Field::Shape)
            m_tensor.shapeKind = kind;
        else if (m_field == Field::Offsets) {
            m_tensor.offsetsKind = kind;
            m_tensor.offsetsText = text;
        }
    }
    bool scalar(JsonKind kind, const std::string& text, std::optional<std::uint64_t> unsignedValue = std::nullopt);
    bool open(JsonKind kind);
    bool close(bool object);
    void endTensor();

    struct Extent {
        std::uint64_t begin, end;
    };

    std::string m_file;
    std::optional<std::uint64_t> m_dataBytes;
    int m_depth = 0;
    int m_skipBase = -1; ///< depth of the value's parent while a value is skipped, else -1
    Level m_level = Level::Root;
    Field m_field = Field::None;
    std::string m_name; ///< the key at depth 1
    std::string m_key;  ///< the key at depth 2 of the metadata
    bool m_sawMetadata = false;
    TensorFields m_tensor;
    std::set<std::string> m_otherKeys;                ///< unknown keys of the open tensor object
    std::vector<std::set<std::string>> m_skippedKeys; ///< one per object open inside a skipped value
    std::optional<ImportError> m_error;
    std::optional<ImportError> m_syntaxError;
    std::optional<std::string> m_duplicate;
    std::map<std::string, std::string> m_metadata;
    std::vector<ImportedTensor> m_tensors;
    std::vector<Extent> m_extents;
};

bool SafetensorsSax::key(json::string_t& k)
{
    if (skipping()) { // only duplicates matter in a skipped value
        if (!m_skippedKeys.empty() && !m_skippedKeys.back().insert(k).second)
            return duplicate(k);
        return true;
    }
    if (m_depth == 1) {
        m_name = std::move(k);
        return true;
    }
    if (m_level == Level::Metadata) {
        if (m_metadata.count(k))
            return duplicate(k);
        m_key = std::move(k);
        return true;
    }
    m_field = k == "dtype" ? Field::Dtype : k == "shape" ? Field::Shape : k == "data_offsets" ? Field::Offsets : Field::Other;
    bool* seen = m_field == Field::Dtype ? &m_tensor.hasDtype : m_field == Field::Shape ? &m_tensor.hasShape
                 : m_field == Field::Offsets ? &m_tensor.hasOffsets : nullptr;
    if (seen ? *seen : !m_otherKeys.insert(k).second)
        return duplicate(k);
    if (seen)
        *seen = true;
    return true;
}

bool SafetensorsSax::scalar(JsonKind kind, const std::string& text, std::optional<std::uint64_t> unsignedValue)
{
    if (skipping())
        return true;
    if (m_depth == 0)
        return fail(ImportErrorCode::BadJson, "", std::string("the header must be a JSON object, found ") + kindName(kind));
    if (m_depth == 1)
        return wrongTop(kind);
    if (m_level == Level::Metadata)
        return fail(ImportErrorCode::WrongKeyType, "__metadata__." + m_key,
                    std::string("metadata values must be strings, found ") + kindName(kind));
    if (m_depth == 2) {
        setFieldKind(kind, text);
        return true;
    }
    // depth 3: an item of shape or data_offsets (arrays; the others are skipped)
    if (m_field == Field::Shape) {
        ++m_tensor.shapeCount;
        if (!unsignedValue) {
            if (!m_tensor.badDimension)
                m_tensor.badDimension = text;
        } else if (m_tensor.shape.size() < 9) {
            m_tensor.shape.push_back(*unsignedValue);
        }
    } else if (m_field == Field::Offsets) {
        if (m_tensor.offsetsCount < 2 && unsignedValue)
            m_tensor.offsets[m_tensor.offsetsCount] = *unsignedValue;
        m_tensor.offsetsUnsigned = m_tensor.offsetsUnsigned && unsignedValue;
        ++m_tensor.offsetsCount;
        appendOffset(text);
    }
    return true;
}

bool SafetensorsSax::open(JsonKind kind)
{
    ++m_depth;
    if (skipping()) {
        if (kind == JsonKind::Object)
            m_skippedKeys.emplace_back();
        return true;
    }
    if (m_depth == 1) {
        if (kind == JsonKind::Object)
            return true;
        fail(ImportErrorCode::BadJson, "", "the header must be a JSON object, found array");
        return skip(kind);
    }
    if (m_depth == 2) {
        if (kind != JsonKind::Object) {
            wrongTop(kind);
            return skip(kind);
        }
        const bool metadata = m_name == "__metadata__";
        if (metadata && m_sawMetadata)
            return duplicate(m_name);
        m_sawMetadata = m_sawMetadata || metadata;
        m_level = metadata ? Level::Metadata : Level::Tensor;
        m_tensor = TensorFields{};
        m_otherKeys.clear();
        m_field = Field::None;
        return true;
    }
    if (m_level == Level::Metadata) {
        fail(ImportErrorCode::WrongKeyType, "__metadata__." + m_key, std::string("metadata values must be strings, found ") + kindName(kind));
        return skip(kind);
    }
    const char* const shown = kind == JsonKind::Object ? "{...}" : "[...]";
    if (m_depth == 3) {
        if (kind == JsonKind::Array && (m_field == Field::Shape || m_field == Field::Offsets)) {
            (m_field == Field::Shape ? m_tensor.shapeKind : m_tensor.offsetsKind) = JsonKind::Array;
            if (m_field == Field::Offsets)
                m_tensor.offsetsText = "[";
            return true;
        }
        setFieldKind(kind, shown);
        return skip(kind);
    }
    // depth 4: a container inside shape or data_offsets
    if (m_field == Field::Shape) {
        ++m_tensor.shapeCount;
        if (!m_tensor.badDimension)
            m_tensor.badDimension = shown;
    } else if (m_field == Field::Offsets) {
        m_tensor.offsetsUnsigned = false;
        ++m_tensor.offsetsCount;
        appendOffset(shown);
    }
    return skip(kind);
}

bool SafetensorsSax::close(bool object)
{
    if (skipping()) {
        if (object && !m_skippedKeys.empty())
            m_skippedKeys.pop_back();
        if (--m_depth == m_skipBase)
            m_skipBase = -1;
        return true;
    }
    if (m_depth == 3 && m_field == Field::Offsets && m_tensor.offsetsText.size() <= 64)
        m_tensor.offsetsText += "]";
    if (m_depth == 2) {
        if (m_level == Level::Tensor)
            endTensor();
        m_level = Level::Root;
    }
    --m_depth;
    return true;
}

void SafetensorsSax::endTensor()
{
    if (m_error)
        return; // one error is reported; the rest is only parsed
    const std::string& name = m_name;
    const TensorFields& f = m_tensor;
    if (!f.hasDtype)
        return (void)fail(ImportErrorCode::MissingKey, name + ".dtype", "tensor without dtype");
    if (!f.hasShape)
        return (void)fail(ImportErrorCode::MissingKey, name + ".shape", "tensor without shape");
    if (!f.hasOffsets)
        return (void)fail(ImportErrorCode::MissingKey, name + ".data_offsets", "tensor without data_offsets");
    if (f.dtypeKind != JsonKind::String)
        return (void)fail(ImportErrorCode::WrongKeyType, name + ".dtype", std::string("expected a string, found ") + kindName(f.dtypeKind));
    auto elemBytes = safetensorsDtypeBytes(f.dtype);
    if (!elemBytes)
        return (void)fail(ImportErrorCode::UnknownTensorType, name + ".dtype", "unknown dtype \"" + f.dtype + "\": cannot size");
    if (f.shapeKind != JsonKind::Array)
        return (void)fail(ImportErrorCode::WrongKeyType, name + ".shape", std::string("expected an array, found ") + kindName(f.shapeKind));
    if (f.shapeCount > 8)
        return (void)fail(ImportErrorCode::TooManyDimensions, name + ".shape", std::to_string(f.shapeCount) + " dimensions, expected at most 8");
    if (f.badDimension)
        return (void)fail(ImportErrorCode::BadDimension, name + ".shape", "dimension " + *f.badDimension + " is not a non-negative integer");
    ImportedTensor t;
    t.name = name;
    t.type = f.dtype;
    std::transform(t.type.begin(), t.type.end(), t.type.begin(), [](unsigned char ch) { return std::tolower(ch); });
    std::uint64_t elements = 1;
    for (const std::uint64_t n : f.shape) {
        if (n != 0 && elements > std::numeric_limits<std::uint64_t>::max() / n)
            return (void)fail(ImportErrorCode::Overflow, name + ".shape", "the element count overflows 64 bits");
        elements *= n;
    }
    if (elements > std::numeric_limits<std::uint64_t>::max() / *elemBytes)
        return (void)fail(ImportErrorCode::Overflow, name + ".shape", "the byte size overflows 64 bits");
    t.shape = f.shape;
    t.elements = elements;
    t.bytes = Bytes{elements * *elemBytes};
    if (f.offsetsKind != JsonKind::Array || f.offsetsCount != 2 || !f.offsetsUnsigned)
        return (void)fail(ImportErrorCode::WrongKeyType, name + ".data_offsets",
                          "expected [begin, end] of non-negative integers, found " + f.offsetsText);
    const std::uint64_t begin = f.offsets[0];
    const std::uint64_t end = f.offsets[1];
    if (end < begin || end - begin != t.bytes.value)
        return (void)fail(ImportErrorCode::BadTensorOffset, name + ".data_offsets",
                          "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + ") hold " +
                              (end < begin ? std::string("a negative extent") : std::to_string(end - begin) + " bytes") +
                              ", expected " + std::to_string(t.bytes.value) + " (" + f.dtype + " x " + std::to_string(elements) + ")");
    if (m_dataBytes && end > *m_dataBytes)
        return (void)fail(ImportErrorCode::BadTensorOffset, name + ".data_offsets",
                          "tensor data ends at " + std::to_string(end) + " but the data section has " + std::to_string(*m_dataBytes) + " bytes");
    m_extents.push_back({begin, end});
    m_tensors.push_back(std::move(t));
}

tl::expected<SafetensorsHeader, ImportError> SafetensorsSax::finish(bool parsed)
{
    if (m_duplicate)
        return tl::unexpected(makeError(ImportErrorCode::DuplicateKey, m_file,
                                        "key \"" + *m_duplicate + "\" appears twice in one object", std::nullopt, *m_duplicate));
    if (m_syntaxError)
        return tl::unexpected(*m_syntaxError);
    if (!parsed)
        return tl::unexpected(makeError(ImportErrorCode::BadJson, m_file, "invalid JSON", 8));
    if (m_error)
        return tl::unexpected(*m_error);
    // Tensor names are the root object's keys: a name twice is a duplicate key (found by sorting
    // indices, not by a set of copies of every name).
    std::vector<std::uint32_t> order(m_tensors.size());
    for (std::uint32_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return m_tensors[a].name < m_tensors[b].name; });
    for (std::size_t i = 1; i < order.size(); ++i)
        if (m_tensors[order[i]].name == m_tensors[order[i - 1]].name) {
            const std::string& dup = m_tensors[order[i]].name;
            return tl::unexpected(makeError(ImportErrorCode::DuplicateKey, m_file, "key \"" + dup + "\" appears twice in one object",
                                            std::nullopt, dup));
        }
    // The offsets must tile [0, dataBytes) without overlaps or holes (safetensors validate()).
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return m_extents[a].begin != m_extents[b].begin ? m_extents[a].begin < m_extents[b].begin : m_extents[a].end < m_extents[b].end;
    });
    std::uint64_t expected = 0;
    for (const std::uint32_t i : order) {
        if (m_extents[i].begin != expected)
            return tl::unexpected(makeError(ImportErrorCode::BadTensorOffset, m_file,
                                            "tensor data starts at " + std::to_string(m_extents[i].begin) + ", expected " +
                                                std::to_string(expected) +
                                                (m_extents[i].begin < expected ? " (overlaps the previous tensor)" : " (leaves a hole)"),
                                            std::nullopt, m_tensors[i].name + ".data_offsets"));
        expected = m_extents[i].end;
    }
    if (m_dataBytes && expected != *m_dataBytes)
        return tl::unexpected(makeError(ImportErrorCode::BadTensorOffset, m_file,
                                        "tensors end at " + std::to_string(expected) + " but the data section has " +
                                            std::to_string(*m_dataBytes) + " bytes"));
    // In the order of their data, permuted in place (no second vector of tensors).
    SafetensorsHeader out;
    std::vector<std::uint32_t> position(order.size()); // where the tensor now at k must go
    for (std::uint32_t k = 0; k < order.size(); ++k)
        position[order[k]] = k;
    for (std::uint32_t k = 0; k < position.size(); ++k)
        while (position[k] != k) {
            std::swap(m_tensors[k], m_tensors[position[k]]);
            std::swap(position[k], position[position[k]]);
        }
    out.tensors = std::move(m_tensors);
    out.metadata = std::move(m_metadata);
    out.dataBytes = expected;
    return out;
}

} // namespace

tl::expected<SafetensorsHeader, ImportError> parseSafetensorsHeader(std::string_view json, const std::string& fileName,
                                                                   std::optional<std::uint64_t> dataBytes)
{
    if (auto at = importers::excessiveNestingAt(json, importers::kMaxJsonDepth))
        return tl::unexpected(makeError(ImportErrorCode::NestingTooDeep, fileName,
                                        "JSON nested deeper than " + std::to_string(importers::kMaxJsonDepth) + " levels", 8 + *at));
    if (json.size() > std::numeric_limits<std::uint32_t>::max())
        return tl::unexpected(makeError(ImportErrorCode::BadHeaderLength, fileName, "header longer than 4 GiB", 0));
    SafetensorsSax sax(fileName, dataBytes, json.size());
    bool parsed = false;
    try {
        parsed = nlohmann::json::sax_parse(json.begin(), json.end(), &sax);
    } catch (const std::exception& e) {
        return tl::unexpected(makeError(ImportErrorCode::BadJson, fileName, std::string("invalid JSON: ") + e.what(), 8));
    }
    auto out = sax.finish(parsed);
    if (out)
        out->headerBytes = 8 + json.size();
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
