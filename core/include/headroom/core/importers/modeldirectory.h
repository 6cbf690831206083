#pragma once
/// @file modeldirectory.h
/// A Hugging Face model directory: config.json + model.safetensors.index.json (weight_map,
/// metadata.total_size) + whatever *.safetensors files are present. Shard headers give every
/// tensor's exact bytes; their sum is cross-checked against total_size (a difference is a warning).

#include "headroom/core/importers/importedmodel.h"
#include "headroom/core/importers/importerror.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// A parsed model.safetensors.index.json.
struct SafetensorsIndex {
    std::map<std::string, std::string> weightMap; ///< tensor name -> shard file name
    std::optional<std::uint64_t> totalSizeBytes;  ///< metadata.total_size: sum of tensor data bytes
    std::uint64_t contentHash = 0;                ///< FNV-1a 64 of the index text
};

/// The largest model.safetensors.index.json read, bytes (64 MiB). Real ones hold about 90 bytes
/// per tensor (DeepSeek-V2-Lite: 5,291 entries in 480 KB), so this is ~700,000 tensors; parsing
/// costs about 5x the text (measured: tst_hostile.cpp "hostile 1: ... memory").
inline constexpr std::uint64_t kSafetensorsIndexMaxBytes = 64u << 20;

/// Parses an index text. Errors: BadJson, MissingKey (weight_map), WrongKeyType, BadValue
/// (a shard name with a path separator or "..", a text longer than kSafetensorsIndexMaxBytes).
tl::expected<SafetensorsIndex, ImportError> parseSafetensorsIndex(std::string_view json,
                                                                 const std::string& fileName = "model.safetensors.index.json");

/// Imports a model directory (see the file comment). Needs config.json or at least one
/// .safetensors file; without shard files, weights come from the index's total_size.
tl::expected<ImportedModel, ImportError> importModelDirectory(const std::filesystem::path& dir);

/// Imports one .safetensors file (with the architecture of a config.json beside it, if any).
tl::expected<ImportedModel, ImportError> importSafetensorsFile(const std::filesystem::path& path);

/// Imports a config.json alone: parameters = parameterCount(arch), weights priced in the
/// checkpoint's dtype (or its quantization format), exactWeights = false.
tl::expected<ImportedModel, ImportError> importHfConfig(const std::filesystem::path& path);

} // namespace headroom
