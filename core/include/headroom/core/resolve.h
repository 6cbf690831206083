#pragma once
/// @file resolve.h
/// Turns what a person types (`--model`, `--card`, `--engine`, `--weights`, `--kv-dtype`) into
/// core values: a profile id or a path to the model's own files; a card profile or a size.
/// Shared by the CLI and the app so that both accept the same inputs.

#include "headroom/core/card.h"
#include "headroom/core/enginepolicy.h"
#include "headroom/core/kvcache.h"
#include "headroom/core/modelprofile.h"
#include "headroom/core/profiles.h"
#include "headroom/core/weightformat.h"

#include <tl/expected.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace headroom {

/// A Hugging Face repo id with an optional revision: "ORG/NAME", "ORG/NAME@REV", "hf://ORG/NAME@REV".
struct RepoId {
    std::string id;       ///< "ORG/NAME"
    std::string revision; ///< branch, tag or commit; empty = the default branch
};

/// @p arg read as a repo id (one '/', the hub's name characters), or nullopt.
std::optional<RepoId> parseRepoId(const std::string& arg);

/// A model: a profile id ("llama-3.1-8b"), or a path to a Hugging Face config.json, a model
/// directory, a .safetensors or a .gguf file (read header-only by the importers), or a Hugging
/// Face repo id "ORG/NAME[@REV]" held in a local hub cache (stores/localstores.h). Errors name
/// the argument, or the file with byte offset / key from the importer.
tl::expected<ModelProfile, std::string> resolveModel(const std::string& arg, const ProfileSet& profiles);

/// Why @p text is not a size (units.h parseSize): "a size cannot be negative", "more than 2^64
/// bytes (16 EiB)" for a size that overflows, else "expected a size such as 8GiB, 24GB or
/// 16384MiB". Empty when parseSize accepts it. The CLI's size options and --card say this.
std::string sizeProblem(std::string_view text);

/// A card: a profile id ("rtx-4090") or a size ("8GiB", "24GB", "16384MiB") as an anonymous card.
tl::expected<Card, std::string> resolveCard(const std::string& arg, const ProfileSet& profiles);

/// An engine policy by profile id ("vllm", "llama.cpp"; the current release) or NAME@VERSION
/// ("vllm@0.6": the profile of that engine's kind whose `versions` range covers 0.6, with
/// EnginePolicy::requestedVersion set). Errors name the engine or list the ranges there are.
tl::expected<EnginePolicy, std::string> resolveEngine(const std::string& arg, const ProfileSet& profiles);

/// A weight format for @p model: @p arg if given, else the format of the model's own files when
/// they were read, else the profile's default format, else fp16. Errors list how to see the ids.
tl::expected<WeightFormat, std::string> resolveFormat(const std::string& arg, const ModelProfile& model);

/// A KV dtype by id ("fp16", "q8_0", "fp8").
tl::expected<KvDtype, std::string> resolveKvDtype(const std::string& arg);

} // namespace headroom
