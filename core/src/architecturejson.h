#pragma once
// Architecture <-> JSON in the layout of profiles/schemas/model.schema.json ("architecture"
// object). Private to core: nlohmann/json is a PRIVATE dependency of headroom_core, so this
// header must never be included from a public header.

#include "headroom/core/architecture.h"

#include <nlohmann/json.hpp>

#include <string>

namespace headroom {

/// Fills @p out from the "architecture" object @p j of a model profile (optional keys: qk_norm,
/// kv_heads_per_layer, value_head_dim, moe, mla, sliding_window). On failure returns false
/// and sets @p errorKey to the JSON pointer of the offending key relative to @p j
/// ("/kv_heads", "/sliding_window/pattern") and @p errorMessage to the problem. Checks types,
/// required keys and the consistency that a schema cannot express (sliding_window pattern vs
/// layers, list lengths); validateArchitecture() is left to the caller. Never throws.
/// `sliding_window.pattern` is expanded cyclically into one flag per layer.
bool architectureFromJson(const nlohmann::json& j, Architecture& out, std::string& errorKey,
                          std::string& errorMessage);

/// The inverse of architectureFromJson: optional objects (moe, mla, sliding_window) appear only
/// when enabled; per-layer sliding flags are written as the shortest cyclic `pattern` that
/// reproduces them, or as `layers` when none is shorter than the layer count.
nlohmann::json architectureToJson(const Architecture& arch);

} // namespace headroom
