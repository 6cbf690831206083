#pragma once
/// @file ggufreader.h
/// A header-only GGUF reader: versions 1-3, either byte order, every metadata value type,
/// general.alignment, and the tensor table sized from the GGML block layouts
/// (formats/ggmltypes.h). Tensor data is never read: a 40 GB file imports as fast as a 4 MB file
/// with the same header.
///
/// Spec: ggml `docs/gguf.md` (6af560d5) and the reference reader `src/gguf.cpp`; the checks
/// follow gguf.cpp (magic, version, counts bounded by the bytes remaining, duplicate keys and
/// tensor names, power-of-two alignment, <= 4 dims, ne[0] % block size, int64 overflow,
/// contiguous aligned tensor offsets). Unlike gguf.cpp, version 1 (32-bit counts) is accepted.

#include "headroom/core/architecture.h"
#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/importerror.h"
#include "headroom/core/importers/regularfile.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace headroom {

/// GGUF metadata value types (gguf.md `gguf_metadata_value_type`).
enum class GgufValueType : std::uint32_t {
    UInt8 = 0, Int8 = 1, UInt16 = 2, Int16 = 3, UInt32 = 4, Int32 = 5, Float32 = 6, Bool = 7,
    String = 8, Array = 9, UInt64 = 10, Int64 = 11, Float64 = 12,
};

/// Name of a value type ("u32", "string", "array").
const char* ggufValueTypeName(GgufValueType type);

/// One metadata value. Scalars fill one of the payload fields; arrays keep their element type and
/// count, and their items only when count <= kGgufMaxStoredArrayItems (per-layer arrays are kept;
/// tokenizer vocabularies are counted and validated but not stored).
struct GgufValue {
    GgufValueType type = GgufValueType::UInt8; ///< the value's type
    std::uint64_t byteOffset = 0;     ///< offset of the value (after its type id) in the file, bytes
    std::uint64_t u64 = 0;            ///< unsigned integers and bool (0/1)
    std::int64_t i64 = 0;             ///< signed integers
    double f64 = 0.0;                 ///< f32 and f64
    std::string str;                  ///< strings
    GgufValueType elementType = GgufValueType::UInt8; ///< arrays: element type
    std::uint64_t count = 0;          ///< arrays: number of items
    bool itemsStored = false;         ///< arrays: true when @ref items holds all `count` items
    std::vector<GgufValue> items;     ///< arrays: the items (when itemsStored)

    /// The value as an unsigned integer: any integer type >= 0, or bool. nullopt otherwise.
    std::optional<std::uint64_t> asUInt() const;
    /// The value as a double: any integer or float type.
    std::optional<double> asDouble() const;
    /// True for the integer types (u8..i64, not bool).
    bool isInteger() const;
};

/// Arrays longer than this keep only their count (bounded memory for vocabularies).
inline constexpr std::uint64_t kGgufMaxStoredArrayItems = 16384;
/// Array items kept per file, all arrays together (per-layer arrays need a few thousand); later
/// arrays keep only their count, with a warning. Bounds memory: ~120 bytes per kept item.
inline constexpr std::uint64_t kGgufMaxStoredItemsTotal = 65536;
/// Metadata pairs accepted per file (real files have 20 to 60; each costs ~250 bytes of memory
/// for as little as 14 bytes of file).
inline constexpr std::uint64_t kGgufMaxKeyValues = 65536;
/// Array nesting deeper than this is refused (real files nest at most 1 level).
inline constexpr std::uint32_t kGgufMaxNesting = 8;
/// Strings longer than this are refused (the longest real ones are chat templates, < 1 MiB).
inline constexpr std::uint64_t kGgufMaxStringBytes = 16ull << 20;

/// The parsed header of one GGUF file.
struct GgufFile {
    std::uint32_t version = 0;          ///< 1, 2 or 3
    bool bigEndian = false;             ///< byte-swapped file (detected as in gguf.cpp: (version & 0xFFFF) == 0)
    std::uint64_t alignment = 32;       ///< general.alignment, default GGUF_DEFAULT_ALIGNMENT
    std::map<std::string, GgufValue> metadata; ///< every KV pair, by key
    std::vector<std::string> keyOrder;  ///< keys in file order
    std::vector<ImportedTensor> tensors;///< tensor infos in file order, sized exactly
    std::vector<std::uint64_t> tensorOffsets; ///< each tensor's offset relative to the data section, bytes
    std::uint64_t headerBytes = 0;      ///< bytes up to the end of the tensor infos
    std::uint64_t dataOffset = 0;       ///< start of the data section (header padded to the alignment), bytes
    std::uint64_t dataBytes = 0;        ///< data section size implied by the tensor table (last offset + padded size)
    std::uint64_t fileBytes = 0;        ///< size of the file
    std::uint64_t contentHash = 0;      ///< FNV-1a 64 of the header bytes read
    std::vector<std::string> warnings;  ///< non-fatal findings

    /// The value of @p key, or nullptr.
    const GgufValue* find(const std::string& key) const;
};

/// Parses a GGUF header held in memory. @p fileBytes is the size of the whole file when
/// @p bytes holds only its beginning (0 = bytes.size()): tensor data extents are checked against it.
/// @p fileName is used in errors.
tl::expected<GgufFile, ImportError> readGgufBytes(std::span<const std::uint8_t> bytes,
                                                 const std::string& fileName = "<memory>",
                                                 std::uint64_t fileBytes = 0);

/// Reads the header of the GGUF file at @p path: only the bytes of the header are read (in
/// chunks, as the parser needs them); memory does not depend on the tensor data. The file is
/// opened once (RegularFile): a FIFO, a device or a socket is refused through that descriptor.
tl::expected<GgufFile, ImportError> readGguf(const std::filesystem::path& path);

/// The same, on a file already open: a caller that reads tensor data afterwards (the quant-error
/// probe) reads it through the descriptor whose header was parsed, not a re-opened path.
tl::expected<GgufFile, ImportError> readGguf(const RegularFile& file);

/// The architecture described by the `<arch>.*` keys (block_count, embedding_length,
/// attention.head_count[_kv] scalar or per-layer, key_length, value_length, sliding_window,
/// expert_count, expert_used_count, context_length, feed_forward_length, vocabulary from
/// tokenizer.ggml.tokens or <arch>.vocab_size). nullopt (with a reason in @p why) when the file
/// has no general.architecture or lacks block_count/embedding_length/head_count.
std::optional<Architecture> ggufArchitecture(const GgufFile& file, std::string* why = nullptr);

/// Imports one GGUF file or a split set (`name-00001-of-00003.gguf`: every shard is read and the
/// tensor tables are summed; a missing shard is FileNotFound).
tl::expected<ImportedModel, ImportError> importGguf(const std::filesystem::path& path);

} // namespace headroom
