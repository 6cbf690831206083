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

/// Exact weights read from a model's files (GGUF tensor table, safetensors headers).
struct ExactWeights {
    Bytes totalBytes;                        ///< sum of every tensor's stored bytes
    std::uint64_t parameters = 0;            ///< sum of element counts
    std::map<std::string, Bytes> bytesByType;///< "q4_K" -> bytes
    std::string formatId;                    ///< the stored format, when uniform or named by the file ("q4_k", "bf16")
};

/// A model as the planner sees it.
struct ModelProfile {
    std::string id;                          ///< "llama-3.1-8b", or the path it was read from
    std::string name;                        ///< "Llama-3.1-8B"
    std::string source;                      ///< where the facts come from (HF repo @ revision, file path)
    std::optional<Architecture> architecture;///< absent when only a nominal count is known
    std::optional<std::uint64_t> nominalParameters; ///< e.g. 7e9 from `--params`: replaces the derived count
    std::optional<std::uint64_t> publishedParameters; ///< the count the model's publisher gives (a check, never used for pricing)
    std::optional<ExactWeights> exactWeights;///< present when the model's files were read
    std::string defaultFormat;               ///< the format a profile suggests ("bf16")
    std::string contentHash;                 ///< hash of the files read (reports)
    std::vector<std::string> warnings;       ///< from the importer
};

} // namespace headroom
