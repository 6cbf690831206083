#pragma once
/// @file safetensors.h
/// The safetensors header: an 8-byte little-endian length N, then N bytes of JSON mapping each
/// tensor name to {dtype, shape, data_offsets [begin, end)} relative to the data that follows,
/// plus an optional "__metadata__" object of strings. Only the header is read.
///
/// Spec: huggingface/safetensors README "Format" and `safetensors/src/tensor.rs`
/// (header at most 100,000,000 bytes; offsets must tile the data buffer without holes).

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/importerror.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// The safetensors crate's limit on the JSON header, bytes.
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// Bytes per element of a safetensors dtype ("BF16" -> 2, "F8_E4M3" -> 1); nullopt if unknown.
std::optional<std::uint32_t> safetensorsDtypeBytes(std::string_view dtype);

/// A parsed safetensors header.
struct SafetensorsHeader {
    std::vector<ImportedTensor> tensors;        ///< in the order of their data offsets
    std::map<std::string, std::string> metadata;///< "__metadata__" string entries
    std::uint64_t headerBytes = 0;              ///< 8 + N: where the data starts, bytes
    std::uint64_t dataBytes = 0;                ///< end of the last tensor's data, bytes after headerBytes
    std::uint64_t contentHash = 0;              ///< FNV-1a 64 of the 8 + N header bytes
};

/// Parses the JSON part of a header (the N bytes after the length). @p dataBytes, when given, is
/// the size of the data buffer that follows the header: tensors must end within it.
/// Errors: BadJson, MissingKey, BadValue (unknown dtype, shape/offset mismatch), Overflow,
/// DuplicateTensor, BadTensorOffset (overlap, hole or past the data).
tl::expected<SafetensorsHeader, ImportError> parseSafetensorsHeader(std::string_view json,
                                                                   const std::string& fileName = "<memory>",
                                                                   std::optional<std::uint64_t> dataBytes = std::nullopt);

/// Parses the whole header of a file held (at least partly) in memory: length prefix + JSON.
/// @p fileBytes is the size of the whole file (0 = bytes.size()). Errors also: Truncated, BadHeaderLength.
tl::expected<SafetensorsHeader, ImportError> parseSafetensorsBytes(std::span<const std::uint8_t> bytes,
                                                                  const std::string& fileName = "<memory>",
                                                                  std::uint64_t fileBytes = 0);

/// Reads the header of the .safetensors file at @p path (8 + N bytes; never the tensor data).
tl::expected<SafetensorsHeader, ImportError> readSafetensorsHeader(const std::filesystem::path& path);

/// True for non-parameter buffers that checkpoints store beside the weights
/// (`*.rotary_emb.inv_freq`, gpt2 `*.attn.bias` / `*.attn.masked_bias` causal masks).
bool isNonParameterBuffer(std::string_view tensorName);

} // namespace headroom
