#pragma once
/// @file modelprofile.h
/// A model to plan: an architecture (from a profile, a config.json or a GGUF file), a nominal
/// parameter count, and, when the model's own files were read, their exact tensor bytes.

#include "headroom/core/architecture.h"
#include "headroom/core/units.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

/// The order of the tensors in a model's GGUF file. llama.cpp maps the file and its CPU_Mapped
/// buffer spans from the first to the last tensor the CPU keeps (src/llama-model-loader.cpp
/// get_mapping_range), so the order decides the host's mapped bytes under a layer split.
enum class GgufTensorOrder {
    Unknown,     ///< not read from a file: llama.cpp plans assume LayerSorted and say "file order assumed"
    /// llama-quantize since ggml-org/llama.cpp PR #9935 (merged 2024-11): the tensors in the
    /// loader's weights_map order (src/llama-model-loader.h weight_name_comparer): the tensors
    /// outside the blocks first (output, output_norm, token_embd by name), then blk.0, blk.1, ...
    LayerSorted,
    /// convert_hf_to_gguf, and llama-quantize before PR #9935 (it kept its input's order): the
    /// checkpoint's order, token_embd first, the blocks, output_norm and output last (transformers
    /// saves the embedding in the first shard, the final norm and lm_head in the last).
    Converted,
    /// Ollama's GGUF writer (ollama fs/ggml/gguf.go WriteGGUF, `ollama create`): the blocks by
    /// number first, then the tensors outside them by name (output, output_norm, token_embd last).
    OllamaSorted,
};

/// Classifies a GGUF file's tensor names in file (offset) order: LayerSorted when every tensor
/// outside the blocks precedes blk.0, OllamaSorted when they all follow the last block, Converted
/// when token_embd precedes the blocks and output/output_norm follow them; Unknown otherwise or
/// without blocks.
GgufTensorOrder classifyGgufTensorOrder(const std::vector<std::string>& namesInFileOrder);

/// "sorted", "convert", "ollama", "unknown" (the spelling engine-log cases use).
const char* ggufTensorOrderId(GgufTensorOrder order);

/// The order named @p id (ggufTensorOrderId's spelling); nullopt for any other text.
std::optional<GgufTensorOrder> ggufTensorOrderFromId(const std::string& id);

/// Exact weights read from a model's files (GGUF tensor table, safetensors headers).
struct ExactWeights {
    Bytes totalBytes;                        ///< sum of every tensor's stored bytes
    std::uint64_t parameters = 0;            ///< sum of element counts
    std::map<std::string, Bytes> bytesByType;///< "q4_K" -> bytes
    std::string formatId;                    ///< the stored format, when uniform or named by the file ("q4_k", "bf16")
};

/// A model as the planner sees it.
struct ModelProfile {
    std::string id;                          ///< "llama-3.1-8b", or the path it was read from (made safe to print: safetext.h)
    std::string localPath;                   ///< the file or folder it was read from, its bytes as given (may be no UTF-8, hold
                                             ///< controls: never print it as it is; launchflags.h quotes it); empty for a profile
    std::string name;                        ///< "Llama-3.1-8B"
    std::string source;                      ///< where the facts come from (HF repo @ revision, file path)
    std::optional<Architecture> architecture;///< absent when only a nominal count is known
    std::optional<std::uint64_t> nominalParameters; ///< e.g. 7e9 from `--params`: replaces the derived count
    std::optional<std::uint64_t> publishedParameters; ///< the count the model's publisher gives (a check, never used for pricing)
    std::optional<ExactWeights> exactWeights;///< present when the model's files were read
    std::string defaultFormat;               ///< the format a profile suggests ("bf16")
    std::string contentHash;                 ///< hash of the files read (reports)
    std::vector<std::string> warnings;       ///< from the importer
    /// The tensor order of the model's GGUF file: read from the file's tensor table when it was
    /// imported, else Unknown (the llama.cpp unit then assumes llama-quantize's order and says so).
    GgufTensorOrder ggufTensorOrder = GgufTensorOrder::Unknown;
};

} // namespace headroom
