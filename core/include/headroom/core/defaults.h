#pragma once
/// @file defaults.h
/// The main job's defaults, shared by the CLI and the desktop app: a Llama-3.1-8B-class model
/// at int4-g128 with an fp16 KV cache on the 8, 16 and 24 GB cards.

#include <string>
#include <vector>

namespace headroom {

/// Default model profile id.
inline constexpr const char* kDefaultModelId = "llama-3.1-8b";
/// Default weight format of the what-fits view.
inline constexpr const char* kDefaultWeightFormat = "int4-g128";
/// Default KV dtype.
inline constexpr const char* kDefaultKvDtype = "fp16";
/// Default engine policy when none is named.
inline constexpr const char* kDefaultEngineId = "vllm";
/// The 8/16/24 GB card profiles selected at start (RTX 4060, RTX 4060 Ti 16GB, RTX 4090).
inline const std::vector<std::string> kDefaultCardIds = {"rtx-4060", "rtx-4060-ti-16gb", "rtx-4090"};

} // namespace headroom
