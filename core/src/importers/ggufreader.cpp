#include "headroom/core/importers/ggufreader.h"

#include "importutil.h"

#include <headroom/formats/ggmltypes.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>

namespace headroom {

using importers::makeError;

const char* ggufValueTypeName(GgufValueType type)
{
    switch (type) {
    case GgufValueType::UInt8: return "u8";
    case GgufValueType::Int8: return "i8";
    case GgufValueType::UInt16: return "u16";
    case GgufValueType::Int16: return "i16";
    case GgufValueType::UInt32: return "u32";
    case GgufValueType::Int32: return "i32";
    case GgufValueType::Float32: return "f32";
    case GgufValueType::Bool: return "bool";
    case GgufValueType::String: return "string";
    case GgufValueType::Array: return "array";
    case GgufValueType::UInt64: return "u64";
    case GgufValueType::Int64: return "i64";
    case GgufValueType::Float64: return "f64";
    }
    return "?";
}

bool GgufValue::isInteger() const
{
    switch (type) {
    case GgufValueType::UInt8: case GgufValueType::Int8: case GgufValueType::UInt16:
    case GgufValueType::Int16: case GgufValueType::UInt32: case GgufValueType::Int32:
    case GgufValueType::UInt64: case GgufValueType::Int64:
        return true;
    default:
        return false;
    }
}

std::optional<std::uint64_t> GgufValue::asUInt() const
{
    switch (type) {
    case GgufValueType::UInt8: case GgufValueType::UInt16: case GgufValueType::UInt32:
    case GgufValueType::UInt64: case GgufValueType::Bool:
        return u64;
    case GgufValueType::Int8: case GgufValueType::Int16: case GgufValueType::Int32:
    case GgufValueType::Int64:
        if (i64 < 0)
            return std::nullopt;
        return static_cast<std::uint64_t>(i64);
    default:
        return std::nullopt;
    }
}

std::optional<double> GgufValue::asDouble() const
{
    if (type == GgufValueType::Float32 || type == GgufValueType::Float64)
        return f64;
    if (!isInteger())
        return std::nullopt;
    if (auto u = asUInt())
        return static_cast<double>(*u);
    return static_cast<double>(i64);
}

const GgufValue* GgufFile::find(const std::string& key) const
{
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
}

namespace {

constexpr std::uint64_t kChunkBytes = 1ull << 20;

/// Bytes of the file, made available on demand: either all in memory, or read from a stream in
/// chunks as the parser advances (only the header is ever read), through the descriptor that was
/// type-checked when it was opened (RegularFile).
class ByteSource {
public:
    ByteSource(std::span<const std::uint8_t> bytes, std::uint64_t fileBytes)
        : m_memory(bytes), m_fileBytes(fileBytes == 0 ? bytes.size() : fileBytes) {}
    explicit ByteSource(const RegularFile& file) : m_stream(&file), m_fileBytes(file.sizeBytes()) {}

    std::uint64_t fileBytes() const { return m_fileBytes; }
    std::uint64_t available() const { return m_stream ? m_buffer.size() : m_memory.size(); }
    const std::uint8_t* data() const { return m_stream ? m_buffer.data() : m_memory.data(); }

    /// Makes bytes [0, end) available; false when the input ends (or fails) before.
    bool ensure(std::uint64_t end)
    {
        if (end <= available())
            return true;
        if (!m_stream)
            return false;
        if (end > m_fileBytes)
            return false;
        const std::uint64_t want = std::min(m_fileBytes, std::max(end, available() + kChunkBytes));
        const std::uint64_t old = m_buffer.size();
        m_buffer.resize(static_cast<std::size_t>(want));
        auto got = m_stream->readAt(old, m_buffer.data() + old, static_cast<std::size_t>(want - old));
        m_buffer.resize(static_cast<std::size_t>(old + (got ? *got : 0))); // a read error reads as the end
        return end <= m_buffer.size();
    }

private:
    std::span<const std::uint8_t> m_memory;
    const RegularFile* m_stream = nullptr;
    std::vector<std::uint8_t> m_buffer;
    std::uint64_t m_fileBytes = 0;
};

/// Internal failure; converted to ImportError at the API boundary.
struct ParseFailure {
    ImportError error;
};

class GgufParser {
public:
    GgufParser(ByteSource& src, std::string file) : m_src(src), m_file(std::move(file)) {}

    GgufFile parse();

private:
    [[noreturn]] void fail(ImportErrorCode code, std::string message, std::uint64_t offset, std::string key = {})
    {
        throw ParseFailure{makeError(code, m_file, std::move(message), offset, std::move(key))};
    }

    std::uint64_t remaining() const { return m_pos <= m_src.fileBytes() ? m_src.fileBytes() - m_pos : 0; }

    void need(std::uint64_t n, const char* what)
    {
        // What remains: of the file's size, or, when a read came back short (the file shrank
        // while read), of what could be read.
        if (n > remaining())
            fail(ImportErrorCode::Truncated,
                 std::string("the file ends before ") + what + ": needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
                     " remain",
                 m_pos, m_key);
        if (!m_src.ensure(m_pos + n))
            fail(ImportErrorCode::Truncated,
                 std::string("the file ends before ") + what + ": needs " + std::to_string(n) + " bytes, " +
                     std::to_string(m_src.available() > m_pos ? m_src.available() - m_pos : 0) + " could be read",
                 m_pos, m_key);
    }

    template <typename T> T readRaw(const char* what)
    {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, m_src.data() + m_pos, sizeof(T));
        m_pos += sizeof(T);
        if (m_swap && sizeof(T) > 1) {
            if constexpr (sizeof(T) == 2)
                v = std::bit_cast<T>(__builtin_bswap16(std::bit_cast<std::uint16_t>(v)));
            else if constexpr (sizeof(T) == 4)
                v = std::bit_cast<T>(__builtin_bswap32(std::bit_cast<std::uint32_t>(v)));
            else if constexpr (sizeof(T) == 8)
                v = std::bit_cast<T>(__builtin_bswap64(std::bit_cast<std::uint64_t>(v)));
        }
        return v;
    }

    /// A count or length: u32 in v1, u64 from v2 on.
    std::uint64_t readCount(const char* what)
    {
        if (m_version == 1)
            return readRaw<std::uint32_t>(what);
        return readRaw<std::uint64_t>(what);
    }
    std::uint64_t countBytes() const { return m_version == 1 ? 4 : 8; }

    std::string readString(const char* what)
    {
        const std::uint64_t at = m_pos;
        const std::uint64_t len = readCount(what);
        if (len > kGgufMaxStringBytes)
            fail(ImportErrorCode::StringTooLong,
                 std::string(what) + " declares " + std::to_string(len) + " bytes, expected at most " +
                     std::to_string(kGgufMaxStringBytes),
                 at, m_key);
        if (len > remaining())
            fail(ImportErrorCode::StringTooLong,
                 std::string(what) + " declares " + std::to_string(len) + " bytes but only " +
                     std::to_string(remaining()) + " remain in the file",
                 at, m_key);
        need(len, what);
        std::string s(reinterpret_cast<const char*>(m_src.data() + m_pos), static_cast<std::size_t>(len));
        m_pos += len;
        return s;
    }

    static std::uint64_t fixedSize(GgufValueType t)
    {
        switch (t) {
        case GgufValueType::UInt8: case GgufValueType::Int8: case GgufValueType::Bool: return 1;
        case GgufValueType::UInt16: case GgufValueType::Int16: return 2;
        case GgufValueType::UInt32: case GgufValueType::Int32: case GgufValueType::Float32: return 4;
        case GgufValueType::UInt64: case GgufValueType::Int64: case GgufValueType::Float64: return 8;
        default: return 0;
        }
    }

    GgufValueType readType(const char* what)
    {
        const std::uint64_t at = m_pos;
        const std::uint32_t t = readRaw<std::uint32_t>(what);
        if (t > 12)
            fail(ImportErrorCode::BadValueType,
                 "value type " + std::to_string(t) + " is not a GGUF metadata type (expected 0..12)", at, m_key);
        return static_cast<GgufValueType>(t);
    }

    void readValue(GgufValue& v, GgufValueType type, std::uint32_t depth, bool store);

    ByteSource& m_src;
    std::string m_file;
    std::uint64_t m_pos = 0;
    std::uint32_t m_version = 0;
    bool m_swap = false;
    std::string m_key; // the key being read, for errors
    std::uint64_t m_storedItems = 0; // array items kept so far (<= kGgufMaxStoredItemsTotal)
    bool m_budgetWarned = false;
    std::vector<std::string> m_warnings; // appended to GgufFile::warnings
};

void GgufParser::readValue(GgufValue& v, GgufValueType type, std::uint32_t depth, bool store)
{
    v.type = type;
    v.byteOffset = m_pos;
    switch (type) {
    case GgufValueType::UInt8: v.u64 = readRaw<std::uint8_t>("a u8 value"); break;
    case GgufValueType::Int8: v.i64 = readRaw<std::int8_t>("an i8 value"); break;
    case GgufValueType::UInt16: v.u64 = readRaw<std::uint16_t>("a u16 value"); break;
    case GgufValueType::Int16: v.i64 = readRaw<std::int16_t>("an i16 value"); break;
    case GgufValueType::UInt32: v.u64 = readRaw<std::uint32_t>("a u32 value"); break;
    case GgufValueType::Int32: v.i64 = readRaw<std::int32_t>("an i32 value"); break;
    case GgufValueType::Float32: v.f64 = readRaw<float>("an f32 value"); break;
    case GgufValueType::Bool: v.u64 = readRaw<std::uint8_t>("a bool value") != 0; break;
    case GgufValueType::UInt64: v.u64 = readRaw<std::uint64_t>("a u64 value"); break;
    case GgufValueType::Int64: v.i64 = readRaw<std::int64_t>("an i64 value"); break;
    case GgufValueType::Float64: v.f64 = readRaw<double>("an f64 value"); break;
    case GgufValueType::String:
        if (store)
            v.str = readString("a string value");
        else {
            const std::uint64_t at = m_pos;
            const std::uint64_t len = readCount("a string length");
            if (len > kGgufMaxStringBytes || len > remaining())
                fail(ImportErrorCode::StringTooLong,
                     "a string value declares " + std::to_string(len) + " bytes but " +
                         std::to_string(remaining()) + " remain (limit " + std::to_string(kGgufMaxStringBytes) + ")",
                     at, m_key);
            need(len, "a string value");
            m_pos += len;
        }
        break;
    case GgufValueType::Array: {
        const std::uint64_t typeAt = m_pos;
        v.elementType = readType("an array element type");
        if (v.elementType == GgufValueType::Array && depth + 1 >= kGgufMaxNesting)
            fail(ImportErrorCode::NestingTooDeep,
                 "arrays nested " + std::to_string(depth + 2) + " deep, expected at most " +
                     std::to_string(kGgufMaxNesting),
                 typeAt, m_key);
        const std::uint64_t countAt = m_pos;
        v.count = readCount("an array length");
        std::uint64_t minItem = fixedSize(v.elementType);
        if (v.elementType == GgufValueType::String)
            minItem = countBytes();
        else if (v.elementType == GgufValueType::Array)
            minItem = 4 + countBytes();
        if (v.count > remaining() / minItem)
            fail(ImportErrorCode::CountTooLarge,
                 "array of " + std::to_string(v.count) + " " + ggufValueTypeName(v.elementType) +
                     " items needs at least " + (v.count > std::numeric_limits<std::uint64_t>::max() / minItem ? std::string("2^64") : std::to_string(v.count * minItem)) +
                     " bytes, only " + std::to_string(remaining()) + " remain",
                 countAt, m_key);
        // Items are kept only within a file-wide budget: one GgufValue is ~120 bytes of memory for
        // as little as one byte of file, so without it a 10 MB file of u8 arrays takes over 1 GB.
        v.itemsStored = store && v.count <= kGgufMaxStoredArrayItems && v.count <= kGgufMaxStoredItemsTotal - m_storedItems;
        if (v.itemsStored)
            m_storedItems += v.count;
        else if (store && v.count <= kGgufMaxStoredArrayItems && !m_budgetWarned) {
            m_budgetWarned = true;
            m_warnings.push_back("array \"" + m_key + "\" and later arrays are counted, not kept: past the " +
                                 std::to_string(kGgufMaxStoredItemsTotal) + " array items kept per file");
        }
        const std::uint64_t fixed = fixedSize(v.elementType);
        if (!v.itemsStored && fixed != 0) {
            need(v.count * fixed, "array items"); // validated above: count * fixed <= remaining
            m_pos += v.count * fixed;
            break;
        }
        if (v.itemsStored)
            v.items.resize(static_cast<std::size_t>(v.count));
        GgufValue scratch;
        for (std::uint64_t i = 0; i < v.count; ++i) {
            GgufValue& item = v.itemsStored ? v.items[static_cast<std::size_t>(i)] : scratch;
            readValue(item, v.elementType, depth + 1, v.itemsStored);
            if (!v.itemsStored)
                scratch = GgufValue{};
        }
        break;
    }
    }
}

bool isPowerOfTwo(std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/// Known keys whose type is fixed (gguf.md "Standardized key-value pairs"); a value of another
/// type is WrongKeyType. Returns the expectation text, or nullptr if the key is free-form.
const char* checkKnownKeyType(const std::string& key, const GgufValue& v, const std::string& arch)
{
    if (key == "general.alignment")
        return v.type == GgufValueType::UInt32 ? nullptr : "u32";
    if (key == "general.architecture" || key == "general.name")
        return v.type == GgufValueType::String ? nullptr : "string";
    if (key == "tokenizer.ggml.tokens")
        return v.type == GgufValueType::Array && v.elementType == GgufValueType::String ? nullptr : "array of strings";
    if (key == "split.count" || key == "split.no" || key == "general.file_type" ||
        key == "general.quantization_version")
        return v.isInteger() ? nullptr : "an integer";
    if (arch.empty() || key.size() <= arch.size() + 1 || key.compare(0, arch.size() + 1, arch + ".") != 0)
        return nullptr;
    const std::string rest = key.substr(arch.size() + 1);
    static const std::set<std::string> scalars = {
        "block_count", "embedding_length", "context_length", "attention.key_length",
        "attention.value_length", "attention.sliding_window", "expert_count", "expert_used_count",
        "expert_feed_forward_length", "expert_shared_count", "leading_dense_block_count",
        "attention.kv_lora_rank", "attention.q_lora_rank", "rope.dimension_count", "vocab_size",
        "attention.key_length_mla", "attention.value_length_mla"};
    static const std::set<std::string> perLayer = {"attention.head_count", "attention.head_count_kv",
                                                   "feed_forward_length"};
    if (scalars.count(rest))
        return v.isInteger() ? nullptr : "an integer";
    if (perLayer.count(rest)) {
        if (v.isInteger())
            return nullptr;
        if (v.type == GgufValueType::Array) {
            GgufValue probe;
            probe.type = v.elementType;
            if (probe.isInteger())
                return nullptr;
        }
        return "an integer or an array of integers (one per layer)";
    }
    return nullptr;
}

std::string typeText(const GgufValue& v)
{
    std::string s = ggufValueTypeName(v.type);
    if (v.type == GgufValueType::Array)
        s += std::string(" of ") + ggufValueTypeName(v.elementType);
    return s;
}

GgufFile GgufParser::parse()
{
    GgufFile out;
    out.fileBytes = m_src.fileBytes();
    // Magic: the bytes "GGUF" in either byte order of the file (gguf.cpp reads them as 4 chars).
    need(4, "the magic");
    if (std::memcmp(m_src.data(), "GGUF", 4) != 0) {
        std::string found;
        for (int i = 0; i < 4; ++i) {
            const unsigned char c = m_src.data()[i];
            found += (c >= 32 && c < 127) ? static_cast<char>(c) : '?';
        }
        fail(ImportErrorCode::BadMagic, "expected the magic \"GGUF\", found \"" + found + "\"", 0);
    }
    m_pos = 4;
    std::uint32_t version = readRaw<std::uint32_t>("the version");
    if ((version & 0xFFFFu) == 0 && version != 0) {
        // gguf.cpp: a byte-swapped file has its version in the high half.
        m_swap = true;
        version = __builtin_bswap32(version);
        out.bigEndian = true;
    }
    if (version < 1 || version > 3)
        fail(ImportErrorCode::UnsupportedVersion,
             "GGUF version " + std::to_string(version) + ", this reader supports versions 1 to 3", 4);
    m_version = version;
    out.version = version;

    const std::uint64_t tensorCountAt = m_pos;
    const std::uint64_t tensorCount = readCount("the tensor count");
    const std::uint64_t kvCountAt = m_pos;
    const std::uint64_t kvCount = readCount("the metadata count");
    // Each KV needs at least a key length, a type and a 1-byte value; each tensor info at least a
    // name length, n_dims, type and offset.
    const std::uint64_t minKv = countBytes() + 4 + 1;
    const std::uint64_t minTensor = countBytes() + 4 + 4 + 8;
    if (kvCount > kGgufMaxKeyValues)
        fail(ImportErrorCode::CountTooLarge,
             std::to_string(kvCount) + " metadata pairs, expected at most " + std::to_string(kGgufMaxKeyValues), kvCountAt);
    if (kvCount > remaining() / minKv)
        fail(ImportErrorCode::CountTooLarge,
             std::to_string(kvCount) + " metadata pairs cannot fit in the " + std::to_string(remaining()) +
                 " bytes remaining",
             kvCountAt);
    if (tensorCount > remaining() / minTensor)
        fail(ImportErrorCode::CountTooLarge,
             std::to_string(tensorCount) + " tensor infos cannot fit in the " + std::to_string(remaining()) +
                 " bytes remaining",
             tensorCountAt);

    std::string arch;
    for (std::uint64_t i = 0; i < kvCount; ++i) {
        m_key.clear();
        const std::uint64_t keyAt = m_pos;
        std::string key = readString("a metadata key");
        m_key = key;
        if (out.metadata.count(key))
            fail(ImportErrorCode::DuplicateKey, "metadata key \"" + key + "\" appears twice", keyAt, key);
        const GgufValueType type = readType("a metadata value type");
        GgufValue value;
        const std::uint64_t valueAt = m_pos;
        const bool store = key != "tokenizer.ggml.tokens" && key != "tokenizer.ggml.merges" &&
                           key != "tokenizer.ggml.scores" && key != "tokenizer.ggml.token_type";
        readValue(value, type, 0, store);
        if (key == "general.architecture" && value.type == GgufValueType::String)
            arch = value.str;
        if (const char* expected = checkKnownKeyType(key, value, arch))
            fail(ImportErrorCode::WrongKeyType,
                 "expected " + std::string(expected) + ", found " + typeText(value), valueAt, key);
        if (key == "general.alignment" && !isPowerOfTwo(value.u64))
            fail(ImportErrorCode::BadAlignment,
                 "alignment " + std::to_string(value.u64) + " is not a power of two", valueAt, key);
        out.keyOrder.push_back(key);
        out.metadata.emplace(std::move(key), std::move(value));
    }
    m_key.clear();
    // Keys of the architecture may precede general.architecture: check them again now.
    if (!arch.empty())
        for (const auto& [key, value] : out.metadata)
            if (const char* expected = checkKnownKeyType(key, value, arch))
                fail(ImportErrorCode::WrongKeyType, "expected " + std::string(expected) + ", found " + typeText(value),
                     value.byteOffset, key);
    if (const GgufValue* a = out.find("general.alignment"))
        out.alignment = a->u64;

    std::set<std::string> names;
    out.tensors.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(tensorCount, 1u << 16)));
    std::uint64_t expectedOffset = 0;
    for (std::uint64_t i = 0; i < tensorCount; ++i) {
        m_key.clear();
        const std::uint64_t infoAt = m_pos;
        ImportedTensor t;
        t.name = readString("a tensor name");
        m_key = t.name;
        if (!names.insert(t.name).second)
            fail(ImportErrorCode::DuplicateTensor, "tensor \"" + t.name + "\" appears twice", infoAt, t.name);
        const std::uint64_t dimsAt = m_pos;
        const std::uint32_t nDims = readRaw<std::uint32_t>("the tensor's n_dims");
        if (nDims > 4)
            fail(ImportErrorCode::TooManyDimensions,
                 "tensor has " + std::to_string(nDims) + " dimensions, expected at most 4 (GGML_MAX_DIMS)", dimsAt, t.name);
        std::uint64_t elements = 1;
        for (std::uint32_t d = 0; d < nDims; ++d) {
            const std::uint64_t dimAt = m_pos;
            const std::uint64_t ne = m_version == 1 ? readRaw<std::uint32_t>("a tensor dimension")
                                                    : readRaw<std::uint64_t>("a tensor dimension");
            if (ne > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                fail(ImportErrorCode::BadDimension,
                     "dimension " + std::to_string(d) + " is " + std::to_string(ne) +
                         " (negative as int64), expected 0..2^63-1",
                     dimAt, t.name);
            if (ne != 0 && elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / ne)
                fail(ImportErrorCode::Overflow, "the element count overflows int64 at dimension " + std::to_string(d),
                     dimAt, t.name);
            elements *= ne;
            t.shape.push_back(ne);
        }
        t.elements = elements;
        const std::uint64_t typeAt = m_pos;
        const std::uint32_t typeId = readRaw<std::uint32_t>("the tensor type");
        const formats::GgmlType* gt = formats::ggmlType(typeId);
        if (!formats::ggmlTypeSizable(typeId))
            fail(ImportErrorCode::UnknownTensorType,
                 "GGML type id " + std::to_string(typeId) +
                     (gt ? " was removed from ggml" : " is unknown (ggml knows 0.." + std::to_string(formats::kGgmlTypeCount - 1) + ")") +
                     ": cannot size the tensor",
                 typeAt, t.name);
        t.type = gt->name;
        const std::uint64_t ne0 = t.shape.empty() ? 1 : t.shape[0];
        if (ne0 % gt->blockSize != 0)
            fail(ImportErrorCode::BadDimension,
                 "ne[0] = " + std::to_string(ne0) + " is not a multiple of the " + gt->name + " block size " +
                     std::to_string(gt->blockSize),
                 dimsAt + 4, t.name);
        // ggml_nbytes: row bytes times the other dimensions.
        std::uint64_t bytes = ne0 / gt->blockSize * gt->typeSize;
        for (std::size_t d = 1; d < t.shape.size(); ++d) {
            if (t.shape[d] != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / t.shape[d])
                fail(ImportErrorCode::Overflow, "the byte size overflows 64 bits", dimsAt, t.name);
            bytes *= t.shape[d];
        }
        if (elements == 0)
            bytes = 0;
        t.bytes = Bytes{bytes};
        const std::uint64_t offsetAt = m_pos;
        const std::uint64_t offset = readRaw<std::uint64_t>("the tensor offset");
        if (offset != expectedOffset)
            fail(ImportErrorCode::BadTensorOffset,
                 "tensor data offset " + std::to_string(offset) + ", expected " + std::to_string(expectedOffset) +
                     " (tensors are stored in order, each padded to the alignment " + std::to_string(out.alignment) + ")",
                 offsetAt, t.name);
        const std::uint64_t padded = (bytes + out.alignment - 1) / out.alignment * out.alignment;
        if (padded < bytes || expectedOffset > std::numeric_limits<std::uint64_t>::max() - padded)
            fail(ImportErrorCode::Overflow, "the data section size overflows 64 bits", offsetAt, t.name);
        expectedOffset += padded;
        out.tensorOffsets.push_back(offset);
        out.tensors.push_back(std::move(t));
    }
    m_key.clear();
    out.headerBytes = m_pos;
    if (tensorCount > 0) {
        out.dataOffset = (m_pos + out.alignment - 1) / out.alignment * out.alignment;
        if (out.tensors.empty())
            out.dataBytes = 0;
        else
            out.dataBytes = out.tensorOffsets.back() + out.tensors.back().bytes.value;
        if (out.dataOffset > out.fileBytes || out.dataBytes > out.fileBytes - out.dataOffset) {
            const ImportedTensor& last = out.tensors.back();
            fail(ImportErrorCode::Truncated,
                 "the tensor data ends at byte " + std::to_string(out.dataOffset + out.dataBytes) +
                     " but the file has " + std::to_string(out.fileBytes) + " bytes",
                 out.dataOffset + out.tensorOffsets.back(), last.name);
        }
        if (out.dataOffset + out.dataBytes < out.fileBytes) {
            const std::uint64_t extra = out.fileBytes - out.dataOffset - out.dataBytes;
            if (extra >= out.alignment)
                out.warnings.push_back(std::to_string(extra) + " bytes after the last tensor's data");
        }
    } else {
        out.dataOffset = m_pos;
        out.dataBytes = 0;
    }
    out.contentHash = fnv1a64(m_src.data(), static_cast<std::size_t>(out.headerBytes));
    out.warnings.insert(out.warnings.begin(), m_warnings.begin(), m_warnings.end());
    return out;
}

} // namespace

tl::expected<GgufFile, ImportError> readGgufBytes(std::span<const std::uint8_t> bytes, const std::string& fileName,
                                                 std::uint64_t fileBytes)
{
    if (fileBytes != 0 && fileBytes < bytes.size())
        fileBytes = bytes.size();
    ByteSource src(bytes, fileBytes);
    try {
        GgufParser parser(src, fileName);
        return parser.parse();
    } catch (const ParseFailure& f) {
        return tl::unexpected(f.error);
    } catch (const std::bad_alloc&) {
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, fileName, "out of memory while reading the header"));
    }
}

tl::expected<GgufFile, ImportError> readGguf(const RegularFile& file)
{
    ByteSource src(file);
    const std::string name = file.path().string();
    try {
        GgufParser parser(src, name);
        return parser.parse();
    } catch (const ParseFailure& f) {
        return tl::unexpected(f.error);
    } catch (const std::bad_alloc&) {
        return tl::unexpected(makeError(ImportErrorCode::ReadFailed, name, "out of memory while reading the header"));
    }
}

tl::expected<GgufFile, ImportError> readGguf(const std::filesystem::path& path)
{
    auto file = RegularFile::open(path);
    if (!file)
        return tl::unexpected(file.error());
    return readGguf(*file);
}

namespace {

std::optional<std::uint64_t> uintKey(const GgufFile& f, const std::string& key)
{
    const GgufValue* v = f.find(key);
    if (!v)
        return std::nullopt;
    return v->asUInt();
}

/// A scalar or per-layer array: returns the per-layer values (one per layer) or the scalar.
struct LayerValues {
    std::optional<std::uint64_t> scalar;
    std::vector<std::uint64_t> perLayer;
    bool present = false;
};

LayerValues layerKey(const GgufFile& f, const std::string& key)
{
    LayerValues out;
    const GgufValue* v = f.find(key);
    if (!v)
        return out;
    if (v->type == GgufValueType::Array) {
        if (!v->itemsStored)
            return out;
        for (const auto& item : v->items)
            if (auto u = item.asUInt())
                out.perLayer.push_back(*u);
            else
                return out;
        out.present = true;
        return out;
    }
    out.scalar = v->asUInt();
    out.present = out.scalar.has_value();
    return out;
}

std::uint64_t firstNonZero(const LayerValues& v)
{
    if (v.scalar)
        return *v.scalar;
    for (auto x : v.perLayer)
        if (x != 0)
            return x;
    return 0;
}

std::uint32_t clamp32(std::uint64_t v)
{
    return v > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                         : static_cast<std::uint32_t>(v);
}

/// The problem with the size key @p p + @p name (1..@p max), or "" when it is in range; @p out gets it.
std::string boundedKey(const GgufFile& file, const std::string& p, const char* name, std::uint64_t max,
                       std::uint32_t& out)
{
    auto v = uintKey(file, p + name);
    if (!v || *v == 0 || *v > max)
        return p + name + (v ? " is " + std::to_string(*v) : std::string(" is missing")) + ", expected 1.."
            + std::to_string(max);
    out = static_cast<std::uint32_t>(*v);
    return "";
}

/// qwen3next: see readGgufHybrid.
std::string readGgufQwen3Next(const GgufFile& file, const std::string& p, Architecture& arch)
{
    constexpr std::uint64_t kDimMax = 1u << 14;
    std::uint32_t interval = 4;
    if (file.find(p + "full_attention_interval")) {
        if (std::string e = boundedKey(file, p, "full_attention_interval", arch.layers, interval); !e.empty())
            return e;
    }
    LinearAttentionConfig& l = arch.hybrid.linear;
    std::uint32_t headDim = 0;
    for (const auto& [name, out] : {std::pair<const char*, std::uint32_t*>{"ssm.conv_kernel", &l.convKernel},
                                    {"ssm.state_size", &headDim}, {"ssm.group_count", &l.keyHeads},
                                    {"ssm.time_step_rank", &l.valueHeads}})
        if (std::string e = boundedKey(file, p, name, kDimMax, *out); !e.empty())
            return e;
    l.keyHeadDim = headDim;
    l.valueHeadDim = headDim;
    arch.hybrid.attentionOutputGate = true;
    arch.hybrid.layerMixers.clear();
    for (std::uint32_t i = 0; i < arch.layers; ++i)
        arch.hybrid.layerMixers.push_back((i + 1) % interval == 0 ? MixerKind::Attention : MixerKind::GatedDeltaNet);
    return "";
}

/// Per-layer mixers and Mamba shapes of a hybrid GGUF, as llama.cpp reads them: src/llama-arch.cpp
/// LLM_KV names `{arch}.ssm.conv_kernel`, `.ssm.inner_size`, `.ssm.state_size`, `.ssm.time_step_rank`,
/// `.ssm.group_count`; src/llama-model.cpp llama_model::load_hparams, the cases LLM_ARCH_JAMBA,
/// LLM_ARCH_GRANITE_HYBRID (ggml-org/llama.cpp PR 13550 "Granite Four", merged 2025-07),
/// LLM_ARCH_NEMOTRON_H and LLM_ARCH_FALCON_H1 as they stand in builds since then:
///   granitehybrid, jamba: a layer is recurrent iff its `attention.head_count_kv` entry is 0
///     ("A layer is recurrent IFF the n_head_kv value is set to 0"); granitehybrid's are Mamba-2,
///     jamba's Mamba-1 (dt rank = ssm.time_step_rank);
///   nemotron_h: recurrent iff head_count_kv(i) == 0 and feed_forward_length(i) == 0; a block
///     with head_count_kv 0 and an FFN is an MLP alone; a block is a mixer or an MLP;
///   falcon-h1: every layer recurrent beside its attention (recurrent_layer_arr all true);
///   qwen3next: Gated DeltaNet except every `full_attention_interval`-th layer (default 4: layer i
///     recurrent when (i + 1) % interval != 0), head_k_dim = head_v_dim = ssm.state_size, key heads
///     ssm.group_count, value heads ssm.time_step_rank (load_tensors, LLM_ARCH_QWEN3NEXT), its attention
///     output gated.
/// Mamba-2 in llama.cpp: heads = ssm.time_step_rank, head_dim = ssm.inner_size / heads,
/// groups = ssm.group_count (llm_graph_context_mamba::build_mamba2_layer).
/// Returns an empty string, "" also for a family that is not hybrid, or the problem naming the key.
std::string readGgufHybrid(const GgufFile& file, const std::string& a, const std::string& p, Architecture& arch,
                           const LayerValues& kv, const LayerValues& ff)
{
    const bool granite = a == "granitehybrid", jamba = a == "jamba", nemotron = a == "nemotron_h", falcon = a == "falcon-h1";
    if (a == "qwen3next")
        return readGgufQwen3Next(file, p, arch);
    if (!granite && !jamba && !nemotron && !falcon)
        return "";
    std::vector<MixerKind> mixers;
    if (falcon) {
        mixers.assign(arch.layers, MixerKind::AttentionMamba2);
    } else {
        if (kv.perLayer.size() != arch.layers)
            return p + "attention.head_count_kv: expected an array of " + std::to_string(arch.layers)
                + " per-layer values (0 = a recurrent layer), found "
                + (kv.scalar ? "a scalar" : std::to_string(kv.perLayer.size()) + " entries");
        if (nemotron && !ff.perLayer.empty() && ff.perLayer.size() != arch.layers)
            return p + "feed_forward_length: " + std::to_string(ff.perLayer.size()) + " entries, expected "
                + std::to_string(arch.layers);
        for (std::uint32_t i = 0; i < arch.layers; ++i) {
            if (kv.perLayer[i] != 0)
                mixers.push_back(MixerKind::Attention);
            else if (nemotron && (ff.perLayer.empty() ? ff.scalar.value_or(0) : ff.perLayer[i]) != 0)
                mixers.push_back(MixerKind::MlpOnly);
            else
                mixers.push_back(jamba ? MixerKind::Mamba : MixerKind::Mamba2);
        }
    }
    auto dim = [&](const char* name, std::uint64_t max) -> std::optional<std::uint64_t> {
        auto v = uintKey(file, p + name);
        if (!v || *v == 0 || *v > max)
            return std::nullopt;
        return v;
    };
    auto bad = [&](const char* name, std::uint64_t max) {
        auto v = uintKey(file, p + name);
        return p + name + (v ? " is " + std::to_string(*v) : std::string(" is missing")) + ", expected 1.."
            + std::to_string(max);
    };
    constexpr std::uint64_t kDimMax = 1u << 14, kInnerMax = 1u << 20;
    SsmConfig& m = arch.hybrid.ssm;
    const auto conv = dim("ssm.conv_kernel", kDimMax), inner = dim("ssm.inner_size", kInnerMax),
               state = dim("ssm.state_size", kDimMax), rank = dim("ssm.time_step_rank", kDimMax);
    if (!conv)
        return bad("ssm.conv_kernel", kDimMax);
    if (!inner)
        return bad("ssm.inner_size", kInnerMax);
    if (!state)
        return bad("ssm.state_size", kDimMax);
    if (!rank)
        return bad("ssm.time_step_rank", kDimMax);
    m.convKernel = static_cast<std::uint32_t>(*conv);
    m.innerSize = *inner;
    m.stateSize = static_cast<std::uint32_t>(*state);
    if (jamba) {
        m.dtRank = static_cast<std::uint32_t>(*rank);
    } else {
        const auto groups = dim("ssm.group_count", kDimMax);
        if (!groups)
            return bad("ssm.group_count", kDimMax);
        if (*inner % *rank != 0)
            return p + "ssm.inner_size " + std::to_string(*inner) + " is not a multiple of " + p + "ssm.time_step_rank "
                + std::to_string(*rank) + " (the Mamba-2 heads)";
        m.heads = static_cast<std::uint32_t>(*rank);
        m.headDim = static_cast<std::uint32_t>(*inner / *rank);
        m.groups = static_cast<std::uint32_t>(*groups);
    }
    arch.hybrid.blockIsMixerOrMlp = nemotron;
    arch.hybrid.layerMixers = std::move(mixers);
    // The recurrent layers' 0 entries are what marks them: the attention layers' count is kvHeads.
    std::uint32_t attnKv = 0;
    bool uniform = true;
    for (std::uint32_t h : arch.kvHeadsPerLayer)
        if (h != 0) {
            uniform = uniform && (attnKv == 0 || h == attnKv);
            attnKv = h;
        }
    if (uniform)
        arch.kvHeadsPerLayer.clear();
    return "";
}

} // namespace

std::optional<Architecture> ggufArchitecture(const GgufFile& file, std::string* why)
{
    auto no = [&](std::string reason) -> std::optional<Architecture> {
        if (why)
            *why = std::move(reason);
        return std::nullopt;
    };
    const GgufValue* archValue = file.find("general.architecture");
    if (!archValue || archValue->type != GgufValueType::String)
        return no("no general.architecture key");
    const std::string& a = archValue->str;
    const std::string p = a + ".";
    Architecture arch;
    arch.family = a;
    auto blocks = uintKey(file, p + "block_count");
    auto embd = uintKey(file, p + "embedding_length");
    LayerValues heads = layerKey(file, p + "attention.head_count");
    if (!blocks || *blocks == 0)
        return no("no " + p + "block_count");
    if (!embd || *embd == 0)
        return no("no " + p + "embedding_length");
    if (!heads.present || firstNonZero(heads) == 0)
        return no("no " + p + "attention.head_count");
    if (*blocks > 100000)
        return no(p + "block_count " + std::to_string(*blocks) + " is absurd");
    arch.layers = clamp32(*blocks);
    arch.hiddenSize = *embd;
    arch.attentionHeads = clamp32(firstNonZero(heads));
    if (!heads.perLayer.empty()) {
        std::uint64_t mx = 0;
        for (auto h : heads.perLayer)
            mx = std::max(mx, h);
        arch.attentionHeads = clamp32(mx);
    }
    LayerValues kv = layerKey(file, p + "attention.head_count_kv");
    if (!kv.present) {
        arch.kvHeads = arch.attentionHeads;
    } else if (kv.scalar) {
        arch.kvHeads = clamp32(*kv.scalar);
    } else {
        std::uint64_t mx = 0;
        for (auto h : kv.perLayer)
            mx = std::max(mx, h);
        arch.kvHeads = clamp32(mx);
        if (kv.perLayer.size() == arch.layers) {
            bool uniform = std::all_of(kv.perLayer.begin(), kv.perLayer.end(),
                                       [&](std::uint64_t h) { return h == kv.perLayer.front(); });
            if (!uniform)
                for (auto h : kv.perLayer)
                    arch.kvHeadsPerLayer.push_back(clamp32(h));
        }
    }
    if (auto k = uintKey(file, p + "attention.key_length"))
        arch.headDim = clamp32(*k);
    else
        arch.headDim = clamp32(arch.hiddenSize / arch.attentionHeads);
    if (auto vl = uintKey(file, p + "attention.value_length"); vl && *vl != arch.headDim)
        arch.valueHeadDim = clamp32(*vl);
    LayerValues ff = layerKey(file, p + "feed_forward_length");
    if (ff.scalar)
        arch.intermediateSize = *ff.scalar;
    else
        for (auto x : ff.perLayer)
            arch.intermediateSize = std::max(arch.intermediateSize, x);
    if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->type == GgufValueType::Array)
        arch.vocabSize = tokens->count;
    else if (auto vs = uintKey(file, p + "vocab_size"))
        arch.vocabSize = *vs;
    if (auto ctx = uintKey(file, p + "context_length"))
        arch.contextLength = *ctx;
    if (file.find(p + "attention.layer_norm_epsilon") && !file.find(p + "attention.layer_norm_rms_epsilon"))
        arch.norm = NormKind::LayerNorm;
    if (a == "gpt2" || a == "falcon" || a == "starcoder" || a == "bloom" || a == "gptneox" || a == "phi2")
        arch.mlp = MlpKind::Plain;
    // Mixture of experts.
    if (auto ec = uintKey(file, p + "expert_count"); ec && *ec > 0) {
        arch.moe.expertCount = clamp32(*ec);
        arch.moe.expertsPerToken = clamp32(uintKey(file, p + "expert_used_count").value_or(0));
        arch.moe.sharedExperts = clamp32(uintKey(file, p + "expert_shared_count").value_or(0));
        arch.moe.expertFfnSize = uintKey(file, p + "expert_feed_forward_length").value_or(arch.intermediateSize);
        arch.moe.denseFirstLayers = clamp32(uintKey(file, p + "leading_dense_block_count").value_or(0));
    }
    // Multi-head latent attention (deepseek2).
    if (auto rank = uintKey(file, p + "attention.kv_lora_rank"); rank && *rank > 0) {
        arch.mla.kvLoraRank = clamp32(*rank);
        arch.mla.qLoraRank = clamp32(uintKey(file, p + "attention.q_lora_rank").value_or(0));
        const std::uint64_t rope = uintKey(file, p + "rope.dimension_count").value_or(0);
        arch.mla.qkRopeHeadDim = clamp32(rope);
        const std::uint64_t kLen = uintKey(file, p + "attention.key_length_mla").value_or(arch.headDim);
        arch.mla.qkNopeHeadDim = clamp32(kLen > rope ? kLen - rope : 0);
        arch.mla.vHeadDim = clamp32(uintKey(file, p + "attention.value_length_mla").value_or(arch.valueDim()));
        // Files converted before llama.cpp's MLA cache have no key_length_mla: their key_length /
        // value_length are the per-head 192 / 128 of all head_count_kv heads, and llama.cpp caches
        // exactly that (MlaConfig::fullKvCache).
        arch.mla.fullKvCache = file.find(p + "attention.key_length_mla") == nullptr;
    }
    // Sliding window: every layer unless a pattern says otherwise (llama.cpp llama-model.cpp:
    // gemma2 pattern 2, gemma3 pattern 6, cohere2 pattern 4; layer il slides when il % n < n - 1).
    if (auto sw = uintKey(file, p + "attention.sliding_window"); sw && *sw > 0) {
        arch.sliding.windowTokens = *sw;
        std::uint64_t pattern = 0;
        if (a == "gemma2")
            pattern = 2;
        else if (a == "gemma3")
            pattern = 6;
        else if (a == "cohere2")
            pattern = 4;
        if (const GgufValue* pat = file.find(p + "attention.sliding_window_pattern")) {
            if (pat->type == GgufValueType::Array && pat->itemsStored && pat->elementType == GgufValueType::Bool) {
                pattern = 0;
                for (const auto& item : pat->items)
                    arch.sliding.slidingLayers.push_back(item.u64 != 0);
            } else if (auto n = pat->asUInt()) {
                pattern = *n;
            }
        }
        if (pattern > 1 && arch.sliding.slidingLayers.empty())
            for (std::uint32_t il = 0; il < arch.layers; ++il)
                arch.sliding.slidingLayers.push_back(il % pattern < pattern - 1);
    }
    if (std::string problem = readGgufHybrid(file, a, p, arch, kv, ff); !problem.empty())
        return no(problem);
    bool hasOutput = false;
    for (const auto& t : file.tensors)
        if (t.name == "output.weight")
            hasOutput = true;
    arch.tiedEmbeddings = !file.tensors.empty() && !hasOutput;
    if (why)
        why->clear();
    return arch;
}

} // namespace headroom
