#pragma once
/// @file importedmodel.h
/// What Headroom knows about a model after reading its own files (header only, never tensor data):
/// a GGUF file (or its split set), a Hugging Face model directory (config.json,
/// model.safetensors.index.json and any *.safetensors present), one .safetensors file, or a
/// config.json alone.

#include "headroom/core/architecture.h"
#include "headroom/core/importers/importerror.h"
#include "headroom/core/units.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// One tensor of a tensor table (GGUF tensor info or safetensors header entry).
struct ImportedTensor {
    std::string name;                  ///< tensor name as stored ("blk.0.attn_q.weight")
    std::string type;                  ///< GGML type name ("q4_K") or safetensors dtype in lower case ("bf16")
    std::vector<std::uint64_t> shape;  ///< dimensions as stored (GGUF: ne[0] first; safetensors: row-major, outermost first)
    std::uint64_t elements = 0;        ///< product of the dimensions
    Bytes bytes;                       ///< exact bytes of the tensor's data (GGUF: ggml_nbytes, unpadded)
};

/// The result of importing a model's files.
struct ImportedModel {
    std::string format;                ///< "gguf", "safetensors" (directory or file) or "hf-config" (config.json alone)
    std::string formatVersion;         ///< GGUF "1".."3" (+ " big-endian"); safetensors "1"; hf-config: transformers_version or ""
    std::string path;                  ///< the path that was imported
    std::optional<Architecture> architecture; ///< absent when the file carries no usable architecture (vocab-less dummies)
    std::string modelName;             ///< the model's own name: GGUF general.name, config _name_or_path; empty when none
    std::string architectureName;      ///< GGUF general.architecture or config model_type, as written
    std::uint64_t tensorCount = 0;     ///< tensors listed (all shards; index weight_map entries when shards are absent)
    std::uint64_t parameters = 0;      ///< weight elements: sum of tensor element counts (non-parameter buffers such as rotary inv_freq excluded), or parameterCount(arch) when no tensor table was read
    Bytes weightsBytes;                ///< bytes of the weights: sum of tensor bytes, index total_size, or priced from the architecture
    bool exactWeights = false;         ///< true when weightsBytes comes from tensor tables/headers or the index total_size
    std::map<std::string, Bytes> bytesByType;          ///< weightsBytes split by tensor type ("q4_K", "f32", "bf16")
    std::map<std::string, std::uint64_t> tensorsByType;///< tensor count per type
    std::optional<std::string> weightFormatId;         ///< Headroom weight format id (weightformat.h) from quantization_config / torch_dtype / GGUF file type
    std::uint64_t contextLength = 0;   ///< trained context in tokens (context_length / max_position_embeddings); 0 if unknown
    std::vector<std::string> warnings; ///< non-fatal findings (size mismatches, missing shards, guessed defaults)
    std::vector<ImportedTensor> tensors; ///< every tensor read, in file order (empty for config-only imports)
    std::string contentHash;           ///< 64-bit FNV-1a (16 hex digits) over the header/config bytes read, for reports
};

/// Imports @p path: a directory (config.json + index + shards), a config.json, a
/// model.safetensors.index.json, a *.safetensors file, or a *.gguf file (a split shard
/// "-0000k-of-0000n.gguf" pulls in its siblings). Reads headers only: time and memory do not
/// depend on the size of the tensor data. Never throws; errors are values.
tl::expected<ImportedModel, ImportError> importModel(const std::filesystem::path& path);

/// 64-bit FNV-1a of @p data, continuing from @p seed (offset basis 0xcbf29ce484222325).
std::uint64_t fnv1a64(const void* data, std::size_t size, std::uint64_t seed = 0xcbf29ce484222325ull);

/// 16 lower-case hex digits of @p hash.
std::string hashHex(std::uint64_t hash);

} // namespace headroom
