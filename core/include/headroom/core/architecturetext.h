#pragma once
/// @file architecturetext.h
/// An architecture as JSON text, in the layout of the "architecture" object of
/// profiles/schemas/model.schema.json: for work orders between processes and for reports.

#include "headroom/core/architecture.h"

#include <tl/expected.hpp>

#include <string>
#include <string_view>

namespace headroom {

/// One-line JSON object of @p arch (model.schema.json "architecture").
std::string architectureToJsonText(const Architecture& arch);

/// Parses what architectureToJsonText writes (or a profile's "architecture" object); errors name
/// the JSON pointer of the bad key and the problem.
tl::expected<Architecture, std::string> architectureFromJsonText(std::string_view text);

} // namespace headroom
