#pragma once
// Report helpers shared by the report sources, private to core (nlohmann is PRIVATE).

#include "headroom/core/report/report.h"

#include <nlohmann/json.hpp>

#include <string>

namespace headroom::reportdetail {

/// Parses @p text; an error message instead of an exception.
tl::expected<nlohmann::json, ReportError> parse(const std::string& text, const char* what);

/// Schema problems of @p doc, one line each ("/plans/0/fits: wrong type ...").
std::vector<std::string> schemaErrors(const nlohmann::json& doc);

/// Serialises a report the one way every writer does (sorted keys, indent 2, final newline).
std::string serialise(const nlohmann::json& doc);

} // namespace headroom::reportdetail
