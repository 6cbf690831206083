#pragma once
/// @file hfconfig.h
/// Hugging Face config.json -> Architecture, for every family Headroom knows (llama 1/2/3,
/// mistral, mixtral, qwen2, qwen3, gemma, gemma2, phi3, deepseek_v2, falcon, gpt2, opt,
/// cohere/command-r), with the key variants real configs use: legacy names (n_head, n_layer,
/// n_embd, n_positions, multi_query), missing num_key_value_heads (= MHA), explicit head_dim,
/// rope_scaling, sliding_window / sliding_window_pattern / layer_types / use_sliding_window,
/// a nested text_config, and quantization_config (GPTQ, AWQ, bitsandbytes, fp8).
///
/// Sources: transformers `models/*/configuration_*.py` (defaults) and `modeling_*.py` (which
/// layers slide), the configs in shared/fixtures/hf.

#include "headroom/core/architecture.h"
#include "headroom/core/importers/importerror.h"

#include <tl/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

/// What a config.json says.
struct HfConfig {
    Architecture architecture;              ///< the model's shape
    std::string modelType;                  ///< model_type as written ("RefinedWebModel", "llama")
    std::string nameOrPath;                 ///< _name_or_path as written ("meta-llama/Llama-3.1-8B"), or empty
    std::optional<std::string> weightFormatId; ///< from quantization_config: "gptq-g128", "awq-g128", "nf4-bnb", "nf4-bnb-dq", "int8-row", "fp8"; nullopt when unquantized
    std::string checkpointDtype;            ///< Headroom format id of torch_dtype/dtype: "bf16", "fp16", "fp32" ("bf16" when absent)
    std::uint64_t contextLength = 0;        ///< trained context in tokens (max_position_embeddings, n_positions, ...)
    std::string transformersVersion;        ///< transformers_version, if present
    std::vector<std::string> warnings;      ///< defaults assumed, unknown families read llama-like, ...
};

/// The largest config.json read, bytes (4 MiB). Real ones hold a few KiB (a 21,843-class id2label
/// about 1 MiB); the parse keeps a DOM, about 11x the text for a file of small objects (measured:
/// tests/importers/tst_hostile.cpp "hostile 1: memory"), so the bound keeps it under ~50 MB.
inline constexpr std::uint64_t kHfConfigMaxBytes = 4u << 20;

/// Parses a config.json text. @p fileName is used in errors. Errors: BadValue (longer than
/// kHfConfigMaxBytes), BadJson (not JSON / not an
/// object), MissingKey (no layer count, width or head count), WrongKeyType (a number that is a
/// string, ...), BadValue (zero or absurd sizes, heads not divisible), UnsupportedArchitecture
/// (encoder-only or non-transformer families). Never throws.
tl::expected<HfConfig, ImportError> parseHfConfig(std::string_view json, std::string fileName = "config.json");

/// Reads and parses a config.json file (at most kHfConfigMaxBytes).
tl::expected<HfConfig, ImportError> readHfConfig(const std::filesystem::path& path);

} // namespace headroom
